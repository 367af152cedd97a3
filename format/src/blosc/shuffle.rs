//! Blosc's two shuffle filters, per block, for any element size, exactly as c-blosc 1.x applies them.
//!
//! A block of `len` bytes holds `n = len / typesize` whole elements; element `i`'s byte `j` is
//! `block[i * typesize + j]`.
//!
//! - Byte shuffle writes byte `j` of element `i` to [`byte_shuffled_index`]`(i, j, n) = j * n + i`:
//!   a transpose of the `n x typesize` byte matrix. Bytes past the last whole element stay put.
//! - Bit shuffle transposes the `n x 8·typesize` bit matrix (bits numbered from the least
//!   significant of each byte): bit `b` of byte `j` of element `i` goes to bit `(8j + b) * n + i`.
//!   c-blosc does it only when `n` is a multiple of 8; otherwise the whole block stays as it is.
//!   Bytes past the last whole element stay put. For eight elements `8g..8g + 8` and a byte `j`,
//!   the eight bytes `block[(8g + m) * typesize + j]` and the eight bit-plane bytes
//!   `shuffled[`[`bit_plane_index`]`(g, j, b, n)]` are each other's 8x8 bit transpose
//!   ([`transpose_bits`]).
//!
//! Each of these units (one element for bytes, eight elements for bits) is independent, so GPU
//! lanes can take disjoint element ranges ([`unshuffle_elements`], [`bitunshuffle_groups`]); the
//! whole-block functions run them over every unit and copy the leftover bytes.

use crate::Status;
use core::ops::Range;

/// Where byte `byte` of element `element` lies in a byte-shuffled block of `elements` whole elements.
#[inline(always)]
pub const fn byte_shuffled_index(element: usize, byte: usize, elements: usize) -> usize {
    byte * elements + element
}

/// Where the bit-plane byte for bit `bit` of byte `byte` of elements `8 * group..8 * group + 8`
/// lies in a bit-shuffled block of `elements` whole elements (a multiple of 8).
#[inline(always)]
pub const fn bit_plane_index(group: usize, byte: usize, bit: usize, elements: usize) -> usize {
    (8 * byte + bit) * (elements / 8) + group
}

/// The transpose of an 8x8 bit matrix held in a `u64` (row `r` is byte `r`, column `c` is bit
/// `c`): bit `c` of byte `r` becomes bit `r` of byte `c`. It is its own inverse.
#[inline(always)]
pub const fn transpose_bits(x: u64) -> u64 {
    // Swap the off-diagonal halves of every 2x2, then 4x4, then the 8x8 tile.
    let x = swap_bits(x, 0x00AA_00AA_00AA_00AA, 7);
    let x = swap_bits(x, 0x0000_CCCC_0000_CCCC, 14);
    swap_bits(x, 0x0000_0000_F0F0_F0F0, 28)
}

/// Exchanges the bits selected by `mask` with the bits `shift` places above them.
#[inline(always)]
const fn swap_bits(x: u64, mask: u64, shift: u32) -> u64 {
    let t = (x ^ (x >> shift)) & mask;
    x ^ t ^ (t << shift)
}

/// Byte-shuffles the block `src` into `dst` (the encoder's direction).
pub fn shuffle(src: &[u8], dst: &mut [u8], typesize: usize) -> Result<(), Status> {
    let n = check(src, dst, typesize)?;
    transpose_elements(src, dst, typesize, 0..n, Direction::Shuffle);
    copy_leftover(src, dst, n * typesize);
    Ok(())
}

/// Undoes [`shuffle`]: the byte-shuffled block `src` into `dst`, eight elements at a time where
/// it can (the CPU's way; GPU lanes take [`unshuffle_elements`]).
pub fn unshuffle(src: &[u8], dst: &mut [u8], typesize: usize) -> Result<(), Status> {
    let n = check(src, dst, typesize)?;
    let tiled = n / 8 * 8;
    unshuffle_octets(src, dst, typesize, n, tiled);
    transpose_elements(src, dst, typesize, tiled..n, Direction::Unshuffle);
    copy_leftover(src, dst, n * typesize);
    Ok(())
}

/// Unshuffles only elements `elements` of the byte-shuffled block `src`: writes
/// `dst[elements.start * typesize..elements.end * typesize]` and nothing else.
pub fn unshuffle_elements(src: &[u8], dst: &mut [u8], typesize: usize, elements: Range<usize>) -> Result<(), Status> {
    let n = check(src, dst, typesize)?;
    if elements.start > elements.end || elements.end > n {
        return Err(Status::OutputTooSmall);
    }
    transpose_elements(src, dst, typesize, elements, Direction::Unshuffle);
    Ok(())
}

/// Bit-shuffles the block `src` into `dst` (the encoder's direction).
pub fn bitshuffle(src: &[u8], dst: &mut [u8], typesize: usize) -> Result<(), Status> {
    let n = check(src, dst, typesize)?;
    if !n.is_multiple_of(8) {
        copy_leftover(src, dst, 0);
        return Ok(());
    }
    transpose_groups(src, dst, typesize, n, 0..n / 8, Direction::Shuffle);
    copy_leftover(src, dst, n * typesize);
    Ok(())
}

/// Undoes [`bitshuffle`]: the bit-shuffled block `src` into `dst`, 64 elements at a time where it
/// can (the CPU's way; GPU lanes take [`bitunshuffle_groups`]).
pub fn bitunshuffle(src: &[u8], dst: &mut [u8], typesize: usize) -> Result<(), Status> {
    let n = check(src, dst, typesize)?;
    if !n.is_multiple_of(8) {
        copy_leftover(src, dst, 0);
        return Ok(());
    }
    // SAFETY: SSE2 is part of x86-64.
    #[cfg(target_arch = "x86_64")]
    let tiled = unsafe { sse2::bitunshuffle_tiles(src, dst, typesize, n) };
    #[cfg(not(target_arch = "x86_64"))]
    let tiled = bitunshuffle_tiles(src, dst, typesize, n);
    transpose_groups(src, dst, typesize, n, tiled..n / 8, Direction::Unshuffle);
    copy_leftover(src, dst, n * typesize);
    Ok(())
}

/// Bit-unshuffles only the elements of groups `groups` (eight elements each) of the bit-shuffled
/// block `src`: writes `dst[8 * groups.start * typesize..8 * groups.end * typesize]` and nothing
/// else. The block's element count must be a multiple of 8 (else it is not shuffled at all).
pub fn bitunshuffle_groups(src: &[u8], dst: &mut [u8], typesize: usize, groups: Range<usize>) -> Result<(), Status> {
    let n = check(src, dst, typesize)?;
    if !n.is_multiple_of(8) || groups.start > groups.end || groups.end > n / 8 {
        return Err(Status::OutputTooSmall);
    }
    transpose_groups(src, dst, typesize, n, groups, Direction::Unshuffle);
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Shuffle,
    Unshuffle,
}

/// The number of whole elements in `src`, once `dst` is known to hold it and `typesize` to be
/// positive (else `OutputTooSmall` / `Malformed`).
fn check(src: &[u8], dst: &[u8], typesize: usize) -> Result<usize, Status> {
    if typesize == 0 {
        return Err(Status::Malformed);
    }
    if dst.len() < src.len() {
        return Err(Status::OutputTooSmall);
    }
    Ok(src.len() / typesize)
}

fn copy_leftover(src: &[u8], dst: &mut [u8], from: usize) {
    dst[from..src.len()].copy_from_slice(&src[from..]);
}

/// Moves each byte of `elements` between its place in the block and its byte-shuffled place.
fn transpose_elements(src: &[u8], dst: &mut [u8], typesize: usize, elements: Range<usize>, direction: Direction) {
    let n = src.len() / typesize;
    for i in elements {
        for j in 0..typesize {
            let (plain, shuffled) = (i * typesize + j, byte_shuffled_index(i, j, n));
            match direction {
                Direction::Shuffle => dst[shuffled] = src[plain],
                Direction::Unshuffle => dst[plain] = src[shuffled],
            }
        }
    }
}

/// Moves the bits of each group of eight elements in `groups` between the block and its bit
/// planes: per byte of the element, eight bytes gathered, transposed, scattered.
fn transpose_groups(src: &[u8], dst: &mut [u8], typesize: usize, n: usize, groups: Range<usize>, direction: Direction) {
    for g in groups {
        for j in 0..typesize {
            let plain = |m: usize| (8 * g + m) * typesize + j;
            let plane = |b: usize| bit_plane_index(g, j, b, n);
            match direction {
                Direction::Shuffle => transpose_eight(src, dst, plain, plane),
                Direction::Unshuffle => transpose_eight(src, dst, plane, plain),
            }
        }
    }
}

/// Byte-unshuffles elements `0..tiled` (a multiple of 8) of a block of `n`: for each eight
/// elements and eight (or the last fewer) of their bytes, one word from each byte's plane,
/// transposed into a word of each element's bytes.
fn unshuffle_octets(src: &[u8], dst: &mut [u8], typesize: usize, n: usize, tiled: usize) {
    for i in (0..tiled).step_by(8) {
        for j in (0..typesize).step_by(8) {
            let bytes = (typesize - j).min(8);
            let mut words = [0u64; 8];
            for (r, word) in words.iter_mut().take(bytes).enumerate() {
                *word = word_at(src, byte_shuffled_index(i, j + r, n));
            }
            transpose_bytes(&mut words);
            for (e, &word) in words.iter().enumerate() {
                put_low_bytes(dst, (i + e) * typesize + j, word, bytes);
            }
        }
    }
}

/// Bit-unshuffles the first groups of a block of `n` elements (a multiple of 8), eight groups at
/// a time; returns how many groups it did. For each of eight (or the last fewer) bytes of the
/// elements, the eight bit planes' words are byte-transposed into a word per group and
/// bit-transposed ([`transpose_bits`]); the words of those bytes are then byte-transposed into
/// each element's bytes. (x86-64 CPUs take [`sse2::bitunshuffle_tiles`].)
#[cfg(any(not(target_arch = "x86_64"), test))]
fn bitunshuffle_tiles(src: &[u8], dst: &mut [u8], typesize: usize, n: usize) -> usize {
    let tiled = n / 64 * 8;
    for g in (0..tiled).step_by(8) {
        for j in (0..typesize).step_by(8) {
            let bytes = (typesize - j).min(8);
            // by_group[k][r]: byte j + r of the eight elements of group g + k.
            let mut by_group = [[0u64; 8]; 8];
            for r in 0..bytes {
                let mut planes: [u64; 8] = core::array::from_fn(|b| word_at(src, bit_plane_index(g, j + r, b, n)));
                transpose_bytes(&mut planes);
                for (group, plane) in by_group.iter_mut().zip(planes) {
                    group[r] = transpose_bits(plane);
                }
            }
            for (k, mut elements) in by_group.into_iter().enumerate() {
                transpose_bytes(&mut elements);
                for (m, &word) in elements.iter().enumerate() {
                    put_low_bytes(dst, (8 * (g + k) + m) * typesize + j, word, bytes);
                }
            }
        }
    }
    tiled
}

/// The eight bytes of `src` from `at`, as a little-endian word.
#[inline(always)]
fn word_at(src: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(src[at..at + 8].try_into().expect("eight bytes"))
}

/// Writes the low `bytes` (1 to 8) bytes of `word` to `dst` at `at`; the usual widths are
/// single stores.
#[inline(always)]
fn put_low_bytes(dst: &mut [u8], at: usize, word: u64, bytes: usize) {
    let word = word.to_le_bytes();
    match bytes {
        8 => dst[at..at + 8].copy_from_slice(&word),
        4 => dst[at..at + 4].copy_from_slice(&word[..4]),
        2 => dst[at..at + 2].copy_from_slice(&word[..2]),
        _ => dst[at..at + bytes].copy_from_slice(&word[..bytes]),
    }
}

/// Transposes the 8x8 byte matrix held in eight words (row `r` is `words[r]`, column `c` its
/// byte `c`): byte `c` of word `r` becomes byte `r` of word `c`.
#[inline(always)]
fn transpose_bytes(words: &mut [u64; 8]) {
    // Swap the off-diagonal 4x4 blocks, then the 2x2 blocks within them, then single bytes.
    swap_byte_blocks(words, [0, 1, 2, 3], 4, 0x0000_0000_FFFF_FFFF);
    swap_byte_blocks(words, [0, 1, 4, 5], 2, 0x0000_FFFF_0000_FFFF);
    swap_byte_blocks(words, [0, 2, 4, 6], 1, 0x00FF_00FF_00FF_00FF);
}

/// For each row `r` of `rows`: exchanges the bytes of row `r` at columns `distance` above those
/// `mask` selects with the masked bytes of row `r + distance`.
#[inline(always)]
fn swap_byte_blocks(words: &mut [u64; 8], rows: [usize; 4], distance: usize, mask: u64) {
    for r in rows {
        let t = ((words[r] >> (8 * distance)) ^ words[r + distance]) & mask;
        words[r + distance] ^= t;
        words[r] ^= t << (8 * distance);
    }
}

/// Gathers the eight bytes `src[from(k)]`, transposes their bits and scatters them to `dst[to(k)]`.
#[inline(always)]
fn transpose_eight(src: &[u8], dst: &mut [u8], from: impl Fn(usize) -> usize, to: impl Fn(usize) -> usize) {
    let x = transpose_bits(u64::from_le_bytes(core::array::from_fn(|k| src[from(k)])));
    for (k, byte) in x.to_le_bytes().into_iter().enumerate() {
        dst[to(k)] = byte;
    }
}

/// Bit-unshuffling with SSE2, which every x86-64 CPU has.
#[cfg(target_arch = "x86_64")]
mod sse2 {
    use super::bit_plane_index;
    use core::arch::x86_64::{
        __m128i, _mm_add_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_unpackhi_epi8, _mm_unpackhi_epi16,
        _mm_unpackhi_epi32, _mm_unpacklo_epi8, _mm_unpacklo_epi16, _mm_unpacklo_epi32,
    };

    /// Groups of eight elements taken at a time: a vector of each bit plane.
    const GROUPS: usize = 16;
    /// The largest element a tile holds (Blosc's typesize is a byte).
    const MAX_TYPESIZE: usize = 255;

    /// Bit-unshuffles the first groups of a block of `n` elements (a multiple of 8), 16 groups
    /// at a time; returns how many groups it did. For each byte of the elements, a vector of
    /// each of its eight bit planes, byte-transposed into vectors of two groups' eight plane
    /// bytes; then each element's byte is one `movemask` of those (the top bit of each plane
    /// byte), shifted a bit at a time. The elements are gathered in a tile, copied out whole.
    #[target_feature(enable = "sse2")]
    pub(super) fn bitunshuffle_tiles(src: &[u8], dst: &mut [u8], typesize: usize, n: usize) -> usize {
        if typesize > MAX_TYPESIZE {
            return 0;
        }
        let tiled = n / 8 / GROUPS * GROUPS;
        let mut tile = [0u8; 8 * GROUPS * MAX_TYPESIZE];
        let tile_len = 8 * GROUPS * typesize;
        for g in (0..tiled).step_by(GROUPS) {
            for j in 0..typesize {
                let planes = core::array::from_fn(|b| load(src, bit_plane_index(g, j, b, n)));
                for (k, mut pair) in by_group_pairs(planes).into_iter().enumerate() {
                    // Bit m of every plane byte is at the top after 7 - m doublings.
                    for m in (0..8).rev() {
                        let bits = _mm_movemask_epi8(pair) as u16;
                        tile[(16 * k + m) * typesize + j] = bits as u8;
                        tile[(16 * k + 8 + m) * typesize + j] = (bits >> 8) as u8;
                        pair = _mm_add_epi8(pair, pair);
                    }
                }
            }
            let at = 8 * g * typesize;
            dst[at..at + tile_len].copy_from_slice(&tile[..tile_len]);
        }
        tiled
    }

    /// The 16 bytes of `src` from `at`.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn load(src: &[u8], at: usize) -> __m128i {
        let bytes: &[u8; 16] = src[at..at + 16].try_into().expect("16 bytes");
        // SAFETY: `bytes` is 16 readable bytes; the load takes any alignment.
        unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
    }

    /// Eight vectors of 16 groups' bytes (one per bit plane) as eight vectors of two groups'
    /// eight plane bytes each: pair `k` holds groups `2k` and `2k + 1`.
    #[target_feature(enable = "sse2")]
    #[inline]
    fn by_group_pairs(p: [__m128i; 8]) -> [__m128i; 8] {
        let (a01, b01) = (_mm_unpacklo_epi8(p[0], p[1]), _mm_unpackhi_epi8(p[0], p[1]));
        let (a23, b23) = (_mm_unpacklo_epi8(p[2], p[3]), _mm_unpackhi_epi8(p[2], p[3]));
        let (a45, b45) = (_mm_unpacklo_epi8(p[4], p[5]), _mm_unpackhi_epi8(p[4], p[5]));
        let (a67, b67) = (_mm_unpacklo_epi8(p[6], p[7]), _mm_unpackhi_epi8(p[6], p[7]));
        // Planes 0..4 and 4..8 of groups 0..4, 4..8, 8..12 and 12..16.
        let low = [
            _mm_unpacklo_epi16(a01, a23),
            _mm_unpackhi_epi16(a01, a23),
            _mm_unpacklo_epi16(b01, b23),
            _mm_unpackhi_epi16(b01, b23),
        ];
        let high = [
            _mm_unpacklo_epi16(a45, a67),
            _mm_unpackhi_epi16(a45, a67),
            _mm_unpacklo_epi16(b45, b67),
            _mm_unpackhi_epi16(b45, b67),
        ];
        core::array::from_fn(|k| {
            let (l, h) = (low[k / 2], high[k / 2]);
            if k % 2 == 0 { _mm_unpacklo_epi32(l, h) } else { _mm_unpackhi_epi32(l, h) }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_bits_moves_bit_c_of_byte_r_to_bit_r_of_byte_c() {
        for r in 0..8 {
            for c in 0..8 {
                assert_eq!(transpose_bits(1 << (8 * r + c)), 1 << (8 * c + r));
            }
        }
    }

    #[test]
    fn bitshuffle_matches_the_bit_matrix_transpose() {
        let typesize = 3;
        let src: [u8; 16 * 3 + 2] = core::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0x5A);
        let mut dst = [0u8; 50];
        bitshuffle(&src, &mut dst, typesize).unwrap();
        let bit = |data: &[u8], k: usize| (data[k / 8] >> (k % 8)) & 1;
        for i in 0..16 {
            for c in 0..8 * typesize {
                assert_eq!(bit(&dst, c * 16 + i), bit(&src, i * 8 * typesize + c));
            }
        }
        assert_eq!(dst[48..], src[48..]);
        let mut back = [0u8; 50];
        bitunshuffle(&dst, &mut back, typesize).unwrap();
        assert_eq!(back, src);
    }

    #[test]
    fn whole_blocks_unshuffle_as_unit_by_unit() {
        extern crate std;
        use std::vec::Vec;
        for typesize in [1, 2, 3, 4, 7, 8, 9, 16, 17, 24] {
            for elements in [0, 7, 8, 63, 64, 65, 128, 200, 1000, 1024, 2048 + 64] {
                let len = elements * typesize + typesize - 1; // and bytes short of an element
                let src: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(151) ^ (i >> 8) as u8).collect();
                let (mut whole, mut units) = (std::vec![0u8; len], std::vec![0u8; len]);
                unshuffle(&src, &mut whole, typesize).unwrap();
                unshuffle_elements(&src, &mut units, typesize, 0..elements).unwrap();
                units[elements * typesize..].copy_from_slice(&src[elements * typesize..]);
                assert_eq!(whole, units, "bytes: typesize {typesize}, {elements} elements");
                if elements % 8 == 0 {
                    bitunshuffle(&src, &mut whole, typesize).unwrap();
                    bitunshuffle_groups(&src, &mut units, typesize, 0..elements / 8).unwrap();
                    assert_eq!(whole, units, "bits: typesize {typesize}, {elements} elements");
                    // The portable tiles too, where the CPU takes others.
                    let mut portable = units.clone();
                    portable[..elements * typesize].fill(0);
                    let tiled = bitunshuffle_tiles(&src, &mut portable, typesize, elements);
                    assert_eq!(portable[..8 * tiled * typesize], units[..8 * tiled * typesize], "portable tiles");
                }
            }
        }
    }
}

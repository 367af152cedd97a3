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

/// Undoes [`shuffle`]: the byte-shuffled block `src` into `dst`.
pub fn unshuffle(src: &[u8], dst: &mut [u8], typesize: usize) -> Result<(), Status> {
    let n = check(src, dst, typesize)?;
    transpose_elements(src, dst, typesize, 0..n, Direction::Unshuffle);
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
    bit_transpose_block(src, dst, typesize, Direction::Shuffle)
}

/// Undoes [`bitshuffle`]: the bit-shuffled block `src` into `dst`.
pub fn bitunshuffle(src: &[u8], dst: &mut [u8], typesize: usize) -> Result<(), Status> {
    bit_transpose_block(src, dst, typesize, Direction::Unshuffle)
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

fn bit_transpose_block(src: &[u8], dst: &mut [u8], typesize: usize, direction: Direction) -> Result<(), Status> {
    let n = check(src, dst, typesize)?;
    if !n.is_multiple_of(8) {
        copy_leftover(src, dst, 0);
        return Ok(());
    }
    transpose_groups(src, dst, typesize, n, 0..n / 8, direction);
    copy_leftover(src, dst, n * typesize);
    Ok(())
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

/// Gathers the eight bytes `src[from(k)]`, transposes their bits and scatters them to `dst[to(k)]`.
#[inline(always)]
fn transpose_eight(src: &[u8], dst: &mut [u8], from: impl Fn(usize) -> usize, to: impl Fn(usize) -> usize) {
    let x = transpose_bits(u64::from_le_bytes(core::array::from_fn(|k| src[from(k)])));
    for (k, byte) in x.to_le_bytes().into_iter().enumerate() {
        dst[to(k)] = byte;
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
}

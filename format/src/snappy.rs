//! Snappy's raw format (google/snappy's `format_description.txt`): the uncompressed length as a
//! little-endian base-128 varint, then elements, each starting with a tag byte whose low two bits
//! give its kind:
//!
//! - `00` literal: `length - 1` in the upper six bits, or 60..=63 there meaning that 1..=4
//!   little-endian bytes holding `length - 1` follow; then the literal bytes.
//! - `01` copy with a 1-byte offset: length 4..=11 in bits 2..=4, offset bits 8..=10 in bits 5..=7,
//!   then the offset's low byte.
//! - `10` copy with a 2-byte offset: `length - 1` (0..=63) in the upper six bits, then the offset
//!   as u16 LE.
//! - `11` copy with a 4-byte offset: as `10`, with the offset as u32 LE.
//!
//! [`compress`] encodes the LZ4 parse ([`lz4::parse`], the one the GPU compressor shares) as
//! Snappy elements: per sequence a literal element, then the match as copies of at most 64 bytes.
//! [`decompress`] and [`decompressed_size`] check every read, write and offset, and never panic.

use crate::lz4::{self, HASH_ENTRIES, SequenceSink};
use crate::{DataType, Status};

/// Largest chunk [`compress`] accepts (16 MiB, as LZ4's).
pub const MAX_CHUNK_SIZE: usize = 1 << 24;
/// Longest copy one element can express.
pub const MAX_COPY_LEN: usize = 64;
/// Largest offset of a copy with a 1-byte offset element.
pub const MAX_COPY1_OFFSET: usize = 2047;
/// Longest varint preamble: a u32.
pub const MAX_PREAMBLE_LEN: usize = 5;

const TAG_LITERAL: u8 = 0;
const TAG_COPY1: u8 = 1;
const TAG_COPY2: u8 = 2;
const TAG_COPY4: u8 = 3;

/// Largest compressed size of a `len`-byte chunk (snappy's own bound).
pub const fn max_compressed_size(len: usize) -> usize {
    32 + len + len / 6
}

/// Largest size `compressed_len` bytes of Snappy can decode to: a guard against lying preambles.
/// After a preamble of at least one byte, no element yields more than a 64-byte copy from three
/// bytes; and the preamble cannot say more than `u32::MAX`.
pub const fn max_decompressed_size(compressed_len: usize) -> usize {
    let body = compressed_len.saturating_sub(1);
    // Two bytes left over hold at most an 11-byte copy with a 1-byte offset.
    let bound = (body / 3).saturating_mul(MAX_COPY_LEN).saturating_add(if body % 3 == 2 { 11 } else { 0 });
    if bound > u32::MAX as usize { u32::MAX as usize } else { bound }
}

/// Bytes of the varint preamble for an `n`-byte chunk.
#[inline(always)]
pub const fn preamble_len(n: usize) -> usize {
    let mut len = 1;
    let mut rest = n >> 7;
    while rest != 0 {
        len += 1;
        rest >>= 7;
    }
    len
}

/// Writes the preamble for an `n`-byte chunk at `out[0..]` (which must hold
/// [`preamble_len`]`(n)` bytes); returns the bytes written.
#[inline(always)]
pub fn write_preamble(out: &mut [u8], n: usize) -> usize {
    let mut rest = n;
    let mut i = 0;
    while rest >= 0x80 {
        out[i] = rest as u8 | 0x80;
        rest >>= 7;
        i += 1;
    }
    out[i] = rest as u8;
    i + 1
}

/// Reads the preamble of `input`: the uncompressed length and the preamble's size in bytes.
/// `Truncated` if `input` ends inside it, `Malformed` if it is longer than five bytes or says
/// more than `u32::MAX`.
#[inline(always)]
pub fn read_preamble(input: &[u8]) -> Result<(usize, usize), Status> {
    let mut value: u64 = 0;
    let mut i = 0;
    while i < MAX_PREAMBLE_LEN {
        let b = *input.get(i).ok_or(Status::Truncated)?;
        value |= ((b & 0x7F) as u64) << (7 * i);
        i += 1;
        if b & 0x80 == 0 {
            return if value > u32::MAX as u64 { Err(Status::Malformed) } else { Ok((value as usize, i)) };
        }
    }
    Err(Status::Malformed)
}

/// Bytes of the header of a literal element of `count` (at least 1) bytes.
#[inline(always)]
pub const fn literal_header_len(count: usize) -> usize {
    let code = count - 1;
    if code < 60 {
        1
    } else if code < 1 << 8 {
        2
    } else if code < 1 << 16 {
        3
    } else if code < 1 << 24 {
        4
    } else {
        5
    }
}

/// Writes the header of a literal element of `count` (1..=2^32) bytes at `out[0..]` (which must
/// hold [`literal_header_len`]`(count)` bytes); returns the bytes written.
#[inline(always)]
pub fn write_literal_header(out: &mut [u8], count: usize) -> usize {
    let code = count - 1;
    let len = literal_header_len(count);
    if len == 1 {
        out[0] = (code as u8) << 2 | TAG_LITERAL;
    } else {
        let extra = len - 1;
        out[0] = ((59 + extra) as u8) << 2 | TAG_LITERAL;
        let mut i = 0;
        while i < extra {
            out[1 + i] = (code >> (8 * i)) as u8;
            i += 1;
        }
    }
    len
}

/// Bytes of one copy element of `len` (1..=64) bytes at distance `offset`.
#[inline(always)]
const fn copy_element_len(offset: usize, len: usize) -> usize {
    if len >= 4 && len <= 11 && offset <= MAX_COPY1_OFFSET {
        2
    } else if offset <= 0xFFFF {
        3
    } else {
        5
    }
}

/// Writes one copy element of `len` (1..=64) bytes at distance `offset` (below 2^32); returns
/// the bytes written.
#[inline(always)]
fn write_copy_element(out: &mut [u8], offset: usize, len: usize) -> usize {
    match copy_element_len(offset, len) {
        2 => {
            out[0] = ((offset >> 8) as u8) << 5 | ((len - 4) as u8) << 2 | TAG_COPY1;
            out[1] = offset as u8;
            2
        }
        3 => {
            out[0] = ((len - 1) as u8) << 2 | TAG_COPY2;
            out[1..3].copy_from_slice(&(offset as u16).to_le_bytes());
            3
        }
        _ => {
            out[0] = ((len - 1) as u8) << 2 | TAG_COPY4;
            out[1..5].copy_from_slice(&(offset as u32).to_le_bytes());
            5
        }
    }
}

/// Splits a match of `len` (at least 1) bytes into copy lengths as the reference encoder does:
/// 64s while at least 68 remain, then a 60 if more than 64 remain, then the rest, so no piece
/// but a short whole match is below 4 bytes. Returns the next piece and what remains.
#[inline(always)]
const fn next_copy(len: usize) -> (usize, usize) {
    let piece = if len >= MAX_COPY_LEN + 4 {
        MAX_COPY_LEN
    } else if len > MAX_COPY_LEN {
        MAX_COPY_LEN - 4
    } else {
        len
    };
    (piece, len - piece)
}

/// Bytes of the copy elements that [`write_copies`] writes for a match of `len` bytes at
/// distance `offset`.
#[inline(always)]
pub const fn copy_elements_len(offset: usize, len: usize) -> usize {
    let mut total = 0;
    let mut rest = len;
    while rest > 0 {
        let (piece, after) = next_copy(rest);
        total += copy_element_len(offset, piece);
        rest = after;
    }
    total
}

/// Writes a match of `len` bytes at distance `offset` (1..2^32) as copy elements at `out[0..]`
/// (which must hold [`copy_elements_len`]`(offset, len)` bytes); returns the bytes written.
#[inline(always)]
pub fn write_copies(out: &mut [u8], offset: usize, len: usize) -> usize {
    let mut at = 0;
    let mut rest = len;
    while rest > 0 {
        let (piece, after) = next_copy(rest);
        at += write_copy_element(&mut out[at..], offset, piece);
        rest = after;
    }
    at
}

/// Compresses `input` into Snappy's raw format in `out`; returns the compressed size, or
/// `Status::OutputTooSmall` if `out` is shorter than what is needed (it never is at
/// [`max_compressed_size`]). The matches are [`lz4::parse`]'s, for `data_type`.
pub fn compress(
    input: &[u8],
    data_type: DataType,
    table: &mut [u16; HASH_ENTRIES],
    out: &mut [u8],
) -> Result<usize, Status> {
    if input.len() > MAX_CHUNK_SIZE {
        return Err(Status::ChunkTooLarge);
    }
    let need = preamble_len(input.len());
    let preamble = out.get_mut(..need).ok_or(Status::OutputTooSmall)?;
    write_preamble(preamble, input.len());
    let mut writer = Writer { out, len: need };
    lz4::parse(input, lz4::MatchRules::new(data_type), table, &mut writer)?;
    Ok(writer.len)
}

/// Appends elements to an output slice, checking its end.
struct Writer<'a> {
    out: &'a mut [u8],
    len: usize,
}

impl SequenceSink for Writer<'_> {
    fn sequence(&mut self, literals: &[u8], offset: usize, match_len: usize) -> Result<(), Status> {
        self.last_literals(literals)?;
        let need = copy_elements_len(offset, match_len);
        let out = self.out.get_mut(self.len..self.len + need).ok_or(Status::OutputTooSmall)?;
        write_copies(out, offset, match_len);
        self.len += need;
        Ok(())
    }

    fn last_literals(&mut self, literals: &[u8]) -> Result<(), Status> {
        if literals.is_empty() {
            return Ok(());
        }
        let header = literal_header_len(literals.len());
        let need = header + literals.len();
        let out = self.out.get_mut(self.len..self.len + need).ok_or(Status::OutputTooSmall)?;
        write_literal_header(out, literals.len());
        out[header..].copy_from_slice(literals);
        self.len += need;
        Ok(())
    }
}

/// Decompresses one Snappy stream into `out`; returns the decompressed size, which is the
/// preamble's. `OutputTooSmall` if `out` is shorter than the preamble says, `Truncated` if the
/// stream ends inside an element, `BadOffset` for a copy reaching before the start (or with
/// offset 0), `Malformed` if the elements decode to more or fewer bytes than the preamble says.
pub fn decompress(input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
    let (n, mut at) = read_preamble(input)?;
    let out = out.get_mut(..n).ok_or(Status::OutputTooSmall)?;
    let mut written = 0;
    while let Some(&tag) = input.get(at) {
        at += 1;
        let kind = tag & 3;
        let code = (tag >> 2) as usize;
        if kind == TAG_LITERAL {
            let mut len = code + 1;
            if code >= 60 {
                let extra = code - 59;
                let bytes = input.get(at..at + extra).ok_or(Status::Truncated)?;
                at += extra;
                let mut value = 0usize;
                for (i, &b) in bytes.iter().enumerate() {
                    value |= (b as usize) << (8 * i);
                }
                // `value + 1` bytes must follow; comparing first keeps the sum from overflowing.
                if value >= input.len() - at {
                    return Err(Status::Truncated);
                }
                len = value + 1;
            }
            if len <= WIDE
                && let (Some(src), Some(dst)) = (input.get(at..at + WIDE), out.get_mut(written..written + WIDE))
            {
                dst.copy_from_slice(src);
            } else {
                let src = input.get(at..at + len).ok_or(Status::Truncated)?;
                let dst = out.get_mut(written..written + len).ok_or(Status::Malformed)?;
                dst.copy_from_slice(src);
            }
            at += len;
            written += len;
            continue;
        }
        let (len, offset) = match kind {
            TAG_COPY1 => {
                let low = *input.get(at).ok_or(Status::Truncated)? as usize;
                at += 1;
                (4 + (code & 7), (code >> 3) << 8 | low)
            }
            TAG_COPY2 => {
                let b = input.get(at..at + 2).ok_or(Status::Truncated)?;
                at += 2;
                (code + 1, u16::from_le_bytes([b[0], b[1]]) as usize)
            }
            _ => {
                let b = input.get(at..at + 4).ok_or(Status::Truncated)?;
                at += 4;
                (code + 1, u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            }
        };
        if offset == 0 || offset > written {
            return Err(Status::BadOffset);
        }
        if len > n - written {
            return Err(Status::Malformed);
        }
        copy_match(out, written, offset, len);
        written += len;
    }
    if written == n { Ok(n) } else { Err(Status::Malformed) }
}

/// Bytes the decoder moves at once where the output has room: copying a fixed width is cheaper
/// than copying an exact length, and what lands past the element is overwritten by the next.
const WIDE: usize = 16;

/// Copies `len` bytes from `offset` back to `out[at..]`. A source overlapping the destination
/// (`offset < len`) is copied in steps of everything written since the source start, so the
/// repeated pattern doubles. The caller has checked `offset <= at` and `at + len <= out.len()`.
#[inline(always)]
fn copy_match(out: &mut [u8], at: usize, offset: usize, len: usize) {
    let src = at - offset;
    let mut done = 0;
    if offset >= WIDE && out.len() - at >= len + WIDE {
        while done < len {
            out.copy_within(src + done..src + done + WIDE, at + done);
            done += WIDE;
        }
        return;
    }
    while done < len {
        let step = (len - done).min(offset + done);
        out.copy_within(src..src + step, at + done);
        done += step;
    }
}

/// The size `input` decompresses to, from its preamble alone, if its bytes can hold it.
pub fn decompressed_size(input: &[u8]) -> Result<usize, Status> {
    crate::declared_size(read_preamble(input)?.0, max_decompressed_size(input.len()))
}

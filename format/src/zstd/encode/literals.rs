//! The literals section (RFC 8878 §3.1.1.3.1): raw, RLE, or Huffman-coded in one stream (fewer
//! than 256 literals) or four. The Huffman path is split in the steps a GPU warp shares out:
//! [`plan_huffman`] (code and description, one lane), [`stream_range`] bit counts (all lanes),
//! [`HuffmanLiterals::settle`], then [`HuffmanLiterals::write_header`] and one
//! `HuffmanCode::encode_stream` per stream (four lanes). [`write_literals`] runs them in order.

use super::huffman::{HuffmanCode, stream_len};
use crate::Status;
use core::ops::Range;

/// Fewest literals worth a Huffman code (below this, tree descriptions outweigh the gain).
pub const MIN_HUFFMAN_LITERALS: usize = 32;
/// Fewest literals coded as four streams.
pub const MIN_FOUR_STREAMS: usize = 256;
/// Bytes of the jump table before four streams.
const JUMP_TABLE: usize = 6;

const RAW: u32 = 0;
const RLE: u32 = 1;
const COMPRESSED: u32 = 2;

/// Counts each byte value of `literals` into `counts` (cleared first).
pub fn histogram(literals: &[u8], counts: &mut [u32; 256]) {
    counts.fill(0);
    for &b in literals {
        counts[b as usize] += 1;
    }
}

/// Writes the literals section for `literals`, whose byte histogram is `counts`, at the start of
/// `out`; returns its size. `code` is work space.
pub fn write_literals(
    literals: &[u8],
    counts: &[u32; 256],
    code: &mut HuffmanCode,
    out: &mut [u8],
) -> Result<usize, Status> {
    let n = literals.len();
    if let Some(mut plan) = plan_huffman(n, counts, code, out) {
        let mut bits = [0; 4];
        for (stream, bits) in bits.iter_mut().enumerate().take(plan.streams as usize) {
            *bits = code.stream_bits(&literals[stream_range(n, plan.streams, stream)]);
        }
        if plan.settle(&bits) {
            plan.write_header(out)?;
            for stream in 0..plan.streams as usize {
                let at = plan.stream_start(stream);
                let range = stream_range(n, plan.streams, stream);
                let end = at + plan.stream_lens[stream] as usize;
                code.encode_stream(&literals[range], out.get_mut(at..end).ok_or(Status::OutputTooSmall)?)?;
            }
            return Ok(plan.size());
        }
    }
    write_uncompressed(literals, counts, out)
}

/// Writes `literals` raw, or as one repeated byte when they are (and there are several), at
/// the start of `out`; returns the size.
pub fn write_uncompressed(literals: &[u8], counts: &[u32; 256], out: &mut [u8]) -> Result<usize, Status> {
    let (header, header_len, body_len) = uncompressed_header(literals, counts);
    let out = out.get_mut(..header_len + body_len).ok_or(Status::OutputTooSmall)?;
    out[..header_len].copy_from_slice(&header[..header_len]);
    out[header_len..].copy_from_slice(&literals[..body_len]);
    Ok(header_len + body_len)
}

/// The section header that stores `literals` (of histogram `counts`) uncompressed, its length,
/// and how many of the literals follow it: all of them (raw), or the first alone when they
/// all repeat it (RLE, for two or more).
pub fn uncompressed_header(literals: &[u8], counts: &[u32; 256]) -> ([u8; 3], usize, usize) {
    let n = literals.len();
    let repeated = n > 1 && counts[literals[0] as usize] == n as u32;
    let kind = if repeated { RLE } else { RAW };
    let (value, len) = match n {
        0..32 => (kind | (n as u32) << 3, 1),
        32..4096 => (kind | 1 << 2 | (n as u32) << 4, 2),
        _ => (kind | 3 << 2 | (n as u32) << 4, 3),
    };
    let bytes = value.to_le_bytes();
    ([bytes[0], bytes[1], bytes[2]], len, if repeated { 1 } else { n })
}

/// Bytes of a raw literals section of `n` literals.
pub const fn raw_len(n: usize) -> usize {
    n + if n < 32 {
        1
    } else if n < 4096 {
        2
    } else {
        3
    }
}

/// The literals of stream `stream` of `streams` (1 or 4) among `n` literals: the first three
/// of four streams hold `(n + 3) / 4` each, the last the rest.
#[inline(always)]
pub fn stream_range(n: usize, streams: u32, stream: usize) -> Range<usize> {
    if streams == 1 {
        return 0..n;
    }
    let quarter = n.div_ceil(4);
    (stream * quarter).min(n)..if stream == 3 { n } else { ((stream + 1) * quarter).min(n) }
}

/// A Huffman-coded literals section being laid out.
#[derive(Clone, Copy, Debug)]
pub struct HuffmanLiterals {
    /// Literals coded.
    pub regenerated: u32,
    /// Streams: 1 or 4.
    pub streams: u32,
    /// Bytes of the section header.
    pub header_len: u32,
    /// Bytes of the tree description after it.
    pub description_len: u32,
    /// Bytes of each stream (set by [`HuffmanLiterals::settle`]).
    pub stream_lens: [u32; 4],
}

/// Builds the Huffman code for `n` literals of histogram `counts` into `code` and writes its
/// tree description at its place in `out`; `None` when the literals are better left raw or RLE
/// (too few, a single byte value, or weights no description can hold).
pub fn plan_huffman(n: usize, counts: &[u32; 256], code: &mut HuffmanCode, out: &mut [u8]) -> Option<HuffmanLiterals> {
    if n < MIN_HUFFMAN_LITERALS || !code.build(counts) {
        return None;
    }
    let streams = if n < MIN_FOUR_STREAMS { 1 } else { 4 };
    let header_len = match n {
        _ if streams == 1 => 3,
        0..1024 => 3,
        1024..16384 => 4,
        _ => 5,
    };
    let description_len = code.write_description(out.get_mut(header_len..)?)?;
    Some(HuffmanLiterals {
        regenerated: n as u32,
        streams,
        header_len: header_len as u32,
        description_len: description_len as u32,
        stream_lens: [0; 4],
    })
}

impl HuffmanLiterals {
    /// Sets the streams' sizes from their bit counts; `false` if the section would not be
    /// smaller than raw literals (it is then dropped).
    pub fn settle(&mut self, bits: &[u32; 4]) -> bool {
        for stream in 0..self.streams as usize {
            self.stream_lens[stream] = stream_len(bits[stream]) as u32;
        }
        self.size() < raw_len(self.regenerated as usize)
    }

    /// Where stream `stream` starts in the section.
    pub fn stream_start(&self, stream: usize) -> usize {
        let jump = if self.streams == 4 { JUMP_TABLE } else { 0 };
        let before: u32 = self.stream_lens[..stream].iter().sum();
        (self.header_len + self.description_len) as usize + jump + before as usize
    }

    /// Bytes of the whole section.
    pub fn size(&self) -> usize {
        self.stream_start(self.streams as usize)
    }

    /// Writes the section header and, for four streams, the jump table (the tree description
    /// is already in place).
    pub fn write_header(&self, out: &mut [u8]) -> Result<(), Status> {
        let compressed = (self.size() - self.header_len as usize) as u64;
        let (format, size_bits) = match self.header_len {
            _ if self.streams == 1 => (0, 10),
            3 => (1, 10),
            4 => (2, 14),
            _ => (3, 18),
        };
        let value = COMPRESSED as u64 | format << 2 | (self.regenerated as u64) << 4 | compressed << (4 + size_bits);
        let len = self.header_len as usize;
        out.get_mut(..len).ok_or(Status::OutputTooSmall)?.copy_from_slice(&value.to_le_bytes()[..len]);
        if self.streams == 4 {
            let at = len + self.description_len as usize;
            let jump = out.get_mut(at..at + JUMP_TABLE).ok_or(Status::OutputTooSmall)?;
            for stream in 0..3 {
                jump[2 * stream..2 * stream + 2].copy_from_slice(&(self.stream_lens[stream] as u16).to_le_bytes());
            }
        }
        Ok(())
    }
}

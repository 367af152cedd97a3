//! Zstandard compression: one standard frame (RFC 8878) of blocks of at most 64 KiB, each
//! compressed (Huffman literals, FSE sequences), RLE, or raw when compressing does not shrink it.
//!
//! Level 1 takes the sequences of LZ4's parse (`crate::lz4::parse`, restarted for each block),
//! which the GPU's warp parse reproduces exactly, so `ferrocomp-kernels-gpu` writes the same
//! frames. The entropy stages are functions over slices in the submodules, in the pieces a warp
//! shares out: [`literals`] and [`huffman`] (four streams, one lane each), [`sequences`] and
//! [`fse`] (one lane), [`block`] (what a parse gathers).
//!
//! The frame is single-segment with its content size when that is at most 8 MiB (RFC 8878
//! advises decoders to accept 8 MiB windows); a larger input gets a 64 KiB window descriptor,
//! enough for every match (they stay inside their block), and its content size. No checksum.

pub mod bits;
pub mod block;
pub mod fse;
pub mod huffman;
pub mod lazy;
pub mod literals;
pub mod sequences;

pub use block::{MAX_BLOCK_SIZE, MAX_SEQUENCES};

use crate::lz4::{self, HASH_ENTRIES};
use crate::{DataType, Status};
use block::{BlockScratch, Collector, EntropyScratch, write_compressed_body};
use lazy::ChainTables;
use sequences::{INITIAL_REPEATS, RepeatOffsets};

/// Highest compression level: 1 is LZ4's parse, 2 and 3 search hash chains lazily, 3 deeper
/// (see [`lazy::chain_depth`]).
pub const MAX_LEVEL: u8 = 3;
/// The default level: LZ4's parse, the one the GPU reproduces.
pub const DEFAULT_LEVEL: u8 = 1;
/// Largest input written as a single-segment frame (its window is the whole input).
pub const MAX_SINGLE_SEGMENT: usize = 1 << 23;
/// The window descriptor of larger frames: 64 KiB (exponent 6, mantissa 0).
const WINDOW_64K: u8 = 6 << 3;

/// Bytes of a block header.
pub const BLOCK_HEADER: usize = 3;
/// A block stored as is.
pub const RAW_BLOCK: u32 = 0;
/// A block of one byte repeated.
pub const RLE_BLOCK: u32 = 1;
/// A compressed block.
pub const COMPRESSED_BLOCK: u32 = 2;

/// Largest frame [`compress`] writes for `len` input bytes: the frame header (at most 14
/// bytes), then every block raw.
pub const fn max_compressed_size(len: usize) -> usize {
    14 + len + BLOCK_HEADER * (len / MAX_BLOCK_SIZE + 1)
}

/// Working memory of [`compress`], 353,804 bytes: one block's literals and sequences, the
/// parses' hash tables and the entropy coders' tables. Any bytes are a valid starting state
/// (every field is written before it is read), so it may be allocated zeroed
/// (`Box::<CompressScratch>::new_zeroed()`) and reused as is. On the GPU each warp has a slot of
/// global memory for what precedes `entropy` (level 1 for what precedes `chains`), keeping in
/// `chains`' place the same candidates in rows by hash; level 1's hash table and the entropy
/// tables are in its shared memory.
#[repr(C)]
pub struct CompressScratch {
    /// The block being compressed.
    pub block: BlockScratch,
    /// The hash chains of levels 2 and 3.
    pub chains: ChainTables,
    /// The entropy coders' work space.
    pub entropy: EntropyScratch,
    /// LZ4's hash table, for level 1's parse.
    pub table: [u16; HASH_ENTRIES],
}

/// Compresses `input` at `level` (1..=[`MAX_LEVEL`]; 0 reads as 1, higher as [`MAX_LEVEL`]) into
/// one Zstandard frame in `out`; returns its size. Never more than [`max_compressed_size`];
/// `OutputTooSmall` if `out` is shorter than needed.
pub fn compress(input: &[u8], level: u8, scratch: &mut CompressScratch, out: &mut [u8]) -> Result<usize, Status> {
    let level = level.clamp(1, MAX_LEVEL);
    let mut at = write_frame_header(input.len(), out)?;
    if input.is_empty() {
        return Ok(at + write_block_header(out.get_mut(at..).unwrap_or(&mut []), true, RAW_BLOCK, 0)?);
    }
    let mut repeats = INITIAL_REPEATS;
    let mut start = 0;
    while start < input.len() {
        let end = input.len().min(start + MAX_BLOCK_SIZE);
        let out = out.get_mut(at..).unwrap_or(&mut []);
        at += write_block(&input[start..end], end == input.len(), level, &mut repeats, scratch, out)?;
        start = end;
    }
    Ok(at)
}

/// Writes the magic number and frame header for `len` bytes of content; returns their size.
pub fn write_frame_header(len: usize, out: &mut [u8]) -> Result<usize, Status> {
    let (header, header_len) = frame_header(len);
    out.get_mut(..header_len).ok_or(Status::OutputTooSmall)?.copy_from_slice(&header[..header_len]);
    Ok(header_len)
}

/// The magic number and frame header for `len` bytes of content, and their length.
pub fn frame_header(len: usize) -> ([u8; 14], usize) {
    let mut header = [0u8; 14];
    header[..4].copy_from_slice(&super::MAGIC.to_le_bytes());
    let single = len <= MAX_SINGLE_SEGMENT;
    let (flag, size_bytes) = match len {
        _ if !single && len > u32::MAX as usize => (3, 8),
        _ if !single => (2, 4),
        0..256 => (0, 1),
        256..65792 => (1, 2),
        _ => (2, 4),
    };
    header[4] = flag << 6 | (single as u8) << 5;
    let mut at = 5;
    if !single {
        header[at] = WINDOW_64K;
        at += 1;
    }
    let stored = if size_bytes == 2 { len as u64 - 256 } else { len as u64 };
    header[at..at + size_bytes].copy_from_slice(&stored.to_le_bytes()[..size_bytes]);
    (header, at + size_bytes)
}

/// Writes a block header at the start of `out`; returns its size.
pub fn write_block_header(out: &mut [u8], last: bool, kind: u32, size: usize) -> Result<usize, Status> {
    let value = last as u32 | kind << 1 | (size as u32) << 3;
    out.get_mut(..BLOCK_HEADER).ok_or(Status::OutputTooSmall)?.copy_from_slice(&value.to_le_bytes()[..3]);
    Ok(BLOCK_HEADER)
}

/// Where a compressed block's content must end in a block written at the start of `available`
/// bytes for `data_len` bytes of data: before the raw block's end, or it is not worth writing.
#[inline(always)]
pub fn compressed_end(available: usize, data_len: usize) -> usize {
    available.min(BLOCK_HEADER + data_len - 1)
}

/// Writes one block of `data` (at most [`MAX_BLOCK_SIZE`] bytes) at the start of `out`: RLE when
/// it repeats one byte, compressed when that is smaller than raw, else raw; returns its size.
/// `repeats` moves on only when the block is compressed.
fn write_block(
    data: &[u8],
    last: bool,
    level: u8,
    repeats: &mut RepeatOffsets,
    scratch: &mut CompressScratch,
    out: &mut [u8],
) -> Result<usize, Status> {
    if data.len() > 1 && data.iter().all(|&b| b == data[0]) {
        write_block_header(out, last, RLE_BLOCK, data.len())?;
        *out.get_mut(BLOCK_HEADER).ok_or(Status::OutputTooSmall)? = data[0];
        return Ok(BLOCK_HEADER + 1);
    }
    let mut collector = Collector::new(&mut scratch.block, *repeats);
    let parsed = match level {
        1 => lz4::parse(data, lz4::MatchRules::new(DataType::Char), &mut scratch.table, &mut collector),
        _ => lazy::parse(data, level, &mut scratch.chains, *repeats, &mut collector),
    };
    let (literal_count, sequence_count, after) = (collector.literal_count, collector.sequence_count, collector.repeats);
    if parsed.is_ok() {
        let body = out.get_mut(BLOCK_HEADER..compressed_end(out.len(), data.len())).unwrap_or(&mut []);
        if let Ok(len) =
            write_compressed_body(&scratch.block, literal_count, sequence_count, &mut scratch.entropy, body)
        {
            *repeats = after;
            return Ok(write_block_header(out, last, COMPRESSED_BLOCK, len)? + len);
        }
    }
    write_block_header(out, last, RAW_BLOCK, data.len())?;
    out.get_mut(BLOCK_HEADER..BLOCK_HEADER + data.len()).ok_or(Status::OutputTooSmall)?.copy_from_slice(data);
    Ok(BLOCK_HEADER + data.len())
}

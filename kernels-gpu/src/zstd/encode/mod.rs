//! Zstandard compression on the GPU, a warp per chunk, writing the frames
//! `ferrocomp_format::zstd::encode::compress` writes, byte for byte.
//!
//! Per block: the lanes check for a run together; the parse is LZ4's warp parse
//! ([`crate::lz4::parse_chunk`], level 1) or the chain search of levels 2 and 3 with a lane per
//! position (`chain_parse`: the chains kept as `Row`s, each batch's matches recorded by the
//! lanes together in `record_batch`), recording sequences and literals in the warp's scratch
//! slot; the literal histogram and the sequence codes' are counted with `match_any` (one lane
//! adds each distinct value); the first lane builds the Huffman code; the lanes add up the four
//! streams' bits, then eight lanes code each stream (`encode_streams_split`; a lane per stream
//! below 1024 literals); the first lane builds the sequences' FSE tables, then the lanes code
//! the sequences 32 at a time (`encode_stream`). Once the parse is done, level 1's hash
//! table's shared memory holds the literals' tables (`LiteralStage`), and once the literals
//! are written the sequences' (`SequenceStage`). Every choice is made by the format crate's
//! functions, so the two sides cannot drift apart.

mod chain;
mod literals;
mod sequences;

use crate::lz4::{SequenceEncoder, parse_chunk};
use crate::lz77::copy;
use crate::raw::bytes_mut;
use crate::warp::{WARP_SIZE, Warp, first_lane};
use chain::chain_parse;
use core::mem::offset_of;
use core::ptr::addr_of_mut;
use ferrocomp_format::lz4::{HASH_ENTRIES, MatchRules};
use ferrocomp_format::zstd::encode::block::BlockScratch;
use ferrocomp_format::zstd::encode::huffman::HuffmanCode;
use ferrocomp_format::zstd::encode::lazy;
use ferrocomp_format::zstd::encode::sequences::{
    INITIAL_REPEATS, RepeatOffsets, Sequence, SequenceTables, sequence, write_sequences_header,
};
use ferrocomp_format::zstd::encode::{
    BLOCK_HEADER, COMPRESSED_BLOCK, CompressScratch, MAX_BLOCK_SIZE, MAX_LEVEL, MAX_SEQUENCES, RAW_BLOCK, RLE_BLOCK,
    compressed_end, frame_header, write_block_header,
};
use ferrocomp_format::{DataType, Status};
use literals::{histogram, write_literals};
use sequences::{count_sequence_codes, encode_stream};

/// Bytes of shared memory each warp of the compress kernel needs at any level.
pub const COMPRESS_SHARED_BYTES_PER_WARP: usize = compress_shared_bytes_per_warp(1);

/// Bytes of shared memory each warp of the compress kernel needs at `level`: the entropy
/// stages' tables (their every step reads them), and at level 1 the parse's hash table, whose
/// place they take once the parse is done. Levels 2 and 3 need less, which leaves the SM more L1
/// cache for their search.
pub const fn compress_shared_bytes_per_warp(level: u8) -> usize {
    let (literals, sequences) = (size_of::<LiteralStage>(), size_of::<SequenceStage>());
    let stages = if literals > sequences { literals } else { sequences };
    let table = if level <= 1 { HASH_ENTRIES * 2 } else { 0 };
    (if table > stages { table } else { stages }).next_multiple_of(16)
}

/// The literals' tables, in shared memory from the parse's end until the literals are written.
#[repr(C)]
struct LiteralStage {
    /// Histogram of the block's literals.
    counts: [u32; 256],
    /// Their Huffman code.
    huffman: HuffmanCode,
}

/// The sequences' tables, in the literals' place once those are written.
#[repr(C)]
struct SequenceStage {
    /// The three code tables.
    tables: SequenceTables,
    /// The FSE steps of a window of 32 units, three words a unit (`encode_stream`).
    steps: [u32; 3 * WARP_SIZE as usize],
}
/// Bytes of global scratch each warp of the compress kernel needs at any level.
pub const COMPRESS_SCRATCH_BYTES_PER_WARP: usize = compress_scratch_bytes_per_warp(MAX_LEVEL);

/// Bytes of global scratch each warp needs at `level`: the `CompressScratch` up to its chains
/// at level 1 (the block's literals and sequences, 192 KiB), up to its entropy tables at
/// levels 2 and 3 (the search's `Row`s too); the rest is in shared memory.
pub const fn compress_scratch_bytes_per_warp(level: u8) -> usize {
    if level <= 1 { offset_of!(CompressScratch, chains) } else { offset_of!(CompressScratch, entropy) }
}
/// Every warp's slot starts 16-byte aligned, as its `Row`s need.
const _: () = {
    let (level_1, deeper) = (compress_scratch_bytes_per_warp(1), compress_scratch_bytes_per_warp(MAX_LEVEL));
    assert!(level_1.is_multiple_of(16) && deeper.is_multiple_of(16));
};

/// Where a warp works: its shared memory (level 1's hash table during the parse, then the
/// literals' tables, then the sequences') and its scratch slot.
struct Work {
    table: *mut u16,
    literal_stage: *mut LiteralStage,
    sequence_stage: *mut SequenceStage,
    scratch: *mut CompressScratch,
}

/// Compresses the `n` bytes at `input` into one Zstandard frame in `out` (room for `capacity`
/// bytes) at `level`; returns its size (every lane returns the same), or the status
/// `ferrocomp_format::zstd::encode::compress` gives.
///
/// # Safety
/// `input` must be readable for `n` bytes, `out` writable for `capacity` bytes, `shared` for
/// [`compress_shared_bytes_per_warp`] of `level` bytes (4-byte aligned) and `scratch` for
/// [`compress_scratch_bytes_per_warp`] of `level` bytes (16-byte aligned), none written by anyone
/// else meanwhile.
#[allow(clippy::too_many_arguments)]
pub unsafe fn compress_chunk<W: Warp>(
    warp: &W,
    input: *const u8,
    n: usize,
    out: *mut u8,
    capacity: usize,
    level: u8,
    shared: *mut u8,
    scratch: *mut u8,
) -> Result<usize, Status> {
    let level = level.clamp(1, MAX_LEVEL);
    let work = Work {
        table: shared as *mut u16,
        literal_stage: shared as *mut LiteralStage,
        sequence_stage: shared as *mut SequenceStage,
        scratch: scratch as *mut CompressScratch,
    };
    let (header, mut at) = frame_header(n);
    if at > capacity {
        return Err(Status::OutputTooSmall);
    }
    if warp.lane() == 0 {
        unsafe { out.copy_from_nonoverlapping(header.as_ptr(), at) };
    }
    if n == 0 {
        let written = first_lane(warp, || {
            write_block_header(unsafe { bytes_mut(out.add(at), capacity - at) }, true, RAW_BLOCK, 0)
        });
        return Ok(at + written?);
    }
    let mut repeats = INITIAL_REPEATS;
    let mut start = 0;
    while start < n {
        let end = n.min(start + MAX_BLOCK_SIZE);
        let block = Block { data: unsafe { input.add(start) }, len: end - start, last: end == n };
        at += unsafe { write_block(warp, &work, &block, level, &mut repeats, out.add(at), capacity - at)? };
        start = end;
    }
    warp.sync();
    Ok(at)
}

/// One block of the input.
struct Block {
    data: *const u8,
    len: usize,
    last: bool,
}

/// Writes one block at `out` (room for `available` bytes) as the format crate's `write_block`
/// does: RLE, compressed when smaller than raw, else raw; returns its size.
unsafe fn write_block<W: Warp>(
    warp: &W,
    work: &Work,
    block: &Block,
    level: u8,
    repeats: &mut RepeatOffsets,
    out: *mut u8,
    available: usize,
) -> Result<usize, Status> {
    let (data, len) = (block.data, block.len);
    if len > 1 && unsafe { is_run(warp, data, len) } {
        if available < BLOCK_HEADER + 1 {
            return Err(Status::OutputTooSmall);
        }
        if warp.lane() == 0 {
            let out = unsafe { bytes_mut(out, BLOCK_HEADER + 1) };
            let _ = write_block_header(out, block.last, RLE_BLOCK, len);
            out[BLOCK_HEADER] = unsafe { *data };
        }
        return Ok(BLOCK_HEADER + 1);
    }
    let mut recorder = Recorder {
        warp,
        block: unsafe { addr_of_mut!((*work.scratch).block) },
        repeats: *repeats,
        literal_count: 0,
        sequence_count: 0,
    };
    let parsed = match level {
        1 => unsafe { parse_chunk(warp, data, len, work.table, MatchRules::new(DataType::Char), &mut recorder) },
        2 => unsafe { chain_parse::<_, { lazy::chain_depth(2) as usize }>(warp, work, data, len, &mut recorder) },
        _ => unsafe { chain_parse::<_, { lazy::chain_depth(3) as usize }>(warp, work, data, len, &mut recorder) },
    };
    if parsed.is_ok() {
        warp.sync(); // the literals and sequences are visible to every lane
        let room = compressed_end(available, len).saturating_sub(BLOCK_HEADER);
        let (literals, sequences) = (recorder.literal_count, recorder.sequence_count);
        let body = unsafe { write_compressed_body(warp, work, literals, sequences, out.add(BLOCK_HEADER), room) };
        if let Ok(size) = body {
            *repeats = recorder.repeats;
            if warp.lane() == 0 {
                let _ = write_block_header(unsafe { bytes_mut(out, BLOCK_HEADER) }, block.last, COMPRESSED_BLOCK, size);
            }
            return Ok(BLOCK_HEADER + size);
        }
    }
    if available < BLOCK_HEADER + len {
        return Err(Status::OutputTooSmall);
    }
    if warp.lane() == 0 {
        let _ = write_block_header(unsafe { bytes_mut(out, BLOCK_HEADER) }, block.last, RAW_BLOCK, len);
    }
    unsafe { copy(warp, data, out.add(BLOCK_HEADER), len as u32) };
    Ok(BLOCK_HEADER + len)
}

/// Whether the `len` bytes at `data` all equal the first (4 bytes a lane, 128 a step).
unsafe fn is_run<W: Warp>(warp: &W, data: *const u8, len: usize) -> bool {
    let first = unsafe { *data };
    let mut base = 0;
    while base < len {
        let i = base + 4 * warp.lane() as usize;
        let differs = (i..len.min(i + 4)).any(|i| unsafe { *data.add(i) } != first);
        if warp.ballot(differs) != 0 {
            return false;
        }
        base += 4 * WARP_SIZE as usize;
    }
    true
}

/// Records a parse's sequences in the scratch slot's block, as the format crate's `Collector`
/// does: all lanes copy the literals, the first lane stores each sequence (levels 2 and 3
/// record a batch at a time instead, `record_batch`).
struct Recorder<'w, W> {
    warp: &'w W,
    block: *mut BlockScratch,
    repeats: RepeatOffsets,
    literal_count: usize,
    sequence_count: usize,
}

impl<W: Warp> Recorder<'_, W> {
    unsafe fn push_literals(&mut self, literals: *const u8, count: usize) -> Result<(), Status> {
        if self.literal_count + count > MAX_BLOCK_SIZE {
            return Err(Status::ChunkTooLarge);
        }
        let dst = unsafe { (addr_of_mut!((*self.block).literals) as *mut u8).add(self.literal_count) };
        unsafe { copy(self.warp, literals, dst, count as u32) };
        self.literal_count += count;
        Ok(())
    }
}

impl<W: Warp> SequenceEncoder for Recorder<'_, W> {
    unsafe fn sequence(
        &mut self,
        literals: *const u8,
        count: usize,
        offset: usize,
        match_len: usize,
    ) -> Result<(), Status> {
        unsafe { self.push_literals(literals, count)? };
        if self.sequence_count >= MAX_SEQUENCES {
            return Err(Status::ChunkTooLarge);
        }
        let seq = sequence(&mut self.repeats, count, offset as u32, match_len);
        if self.warp.lane() == 0 {
            unsafe { *(addr_of_mut!((*self.block).sequences) as *mut Sequence).add(self.sequence_count) = seq };
        }
        self.sequence_count += 1;
        Ok(())
    }

    unsafe fn last_literals(&mut self, literals: *const u8, count: usize) -> Result<(), Status> {
        unsafe { self.push_literals(literals, count) }
    }
}

/// Writes a compressed block's content for the recorded literals and sequences at `out` (room
/// for `available` bytes), as the format crate's `write_compressed_body` does.
unsafe fn write_compressed_body<W: Warp>(
    warp: &W,
    work: &Work,
    literal_count: usize,
    sequence_count: usize,
    out: *mut u8,
    available: usize,
) -> Result<usize, Status> {
    let block = unsafe { &*addr_of_mut!((*work.scratch).block) };
    let literals = &block.literals[..literal_count];
    unsafe { histogram(warp, literals, work.literal_stage) };
    let literals_len = unsafe { write_literals(warp, literals, work.literal_stage, out, available)? };
    // The literals are written (and every lane is past them): their tables' place is free.
    let stage = work.sequence_stage;
    let sequences = &block.sequences[..sequence_count];
    unsafe { count_sequence_codes(warp, sequences, stage) };
    let header_len = first_lane(warp, || {
        let tables = unsafe { &mut (*stage).tables };
        write_sequences_header(sequences, tables, unsafe { bytes_mut(out.add(literals_len), available - literals_len) })
    })?;
    warp.sync(); // the tables lane 0 built are visible to every lane
    let at = literals_len + header_len;
    if sequences.is_empty() {
        return Ok(at);
    }
    let tables = unsafe { &(*stage).tables };
    let steps = unsafe { addr_of_mut!((*stage).steps) } as *mut u32;
    let stream_len = unsafe { encode_stream(warp, sequences, tables, out.add(at), available - at, steps)? };
    Ok(at + stream_len)
}

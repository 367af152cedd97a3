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

use crate::entropy::{BitStream, count, unrolled};
use crate::lz4::{SequenceEncoder, common_backward, common_forward, parse_chunk};
use crate::lz77::{aligned, copy, funnel, scan_add, word_at};
use crate::raw::{bytes, bytes_mut};
use crate::warp::{WARP_SIZE, Warp, first_lane};
use core::mem::offset_of;
use core::ptr::addr_of_mut;
use ferrocomp_format::lz4::{HASH_ENTRIES, MatchRules};
use ferrocomp_format::zstd::encode::block::BlockScratch;
use ferrocomp_format::zstd::encode::fse::SymbolCoding;
use ferrocomp_format::zstd::encode::huffman::HuffmanCode;
use ferrocomp_format::zstd::encode::lazy::{
    self, CHAIN_HASH_BITS, Candidate, ChainTables, LANES, MEASURE_CAP, MIN_MATCH, choose_lane_by_masks, prefers_next,
};
use ferrocomp_format::zstd::encode::literals::{HuffmanLiterals, plan_huffman, stream_range, uncompressed_header};
use ferrocomp_format::zstd::encode::sequences::{
    Field, INITIAL_REPEATS, RepeatOffsets, Sequence, SequenceTables, codes, extra_fields, sequence, state_field,
    write_sequences_header,
};
use ferrocomp_format::zstd::encode::{
    BLOCK_HEADER, COMPRESSED_BLOCK, CompressScratch, MAX_BLOCK_SIZE, MAX_LEVEL, MAX_SEQUENCES, RAW_BLOCK, RLE_BLOCK,
    compressed_end, frame_header, write_block_header,
};
use ferrocomp_format::zstd::tables::{LITERAL_LENGTH_CODES, MATCH_LENGTH_CODES, OFFSET_CODES};
use ferrocomp_format::{DataType, Status};

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

/// The chain parse of levels 2 and up (`ferrocomp_format::zstd::encode::lazy::parse`) with a
/// lane per position: each lane finds its position's best match among the candidates of its
/// hash's [`Row`], the lanes then join the rows in position order (lanes of one hash through
/// `match_any`), and the matches are chosen as the scalar parse chooses them.
///
/// # Safety
/// As [`compress_chunk`], for the `n` bytes at `data`.
unsafe fn chain_parse<W: Warp, const DEPTH: usize>(
    warp: &W,
    work: &Work,
    data: *const u8,
    n: usize,
    recorder: &mut Recorder<W>,
) -> Result<(), Status> {
    let lane = warp.lane();
    let rows = unsafe { addr_of_mut!((*work.scratch).chains) } as *mut u8;
    let input = unsafe { bytes(data, n) };
    warp.for_each_strided(1 << CHAIN_HASH_BITS, |slot| unsafe { Row::<DEPTH>::EMPTY.store(rows, slot) });
    warp.sync();
    // Positions as 32-bit numbers (a block is at most 64 KiB): fewer registers in the loop.
    let (mut anchor, mut pos, end) = (0u32, 0u32, n as u32);
    // The rows of the batch starting at `ahead`, read while the batch before was recorded.
    let (mut ahead, mut ahead_slot, mut ahead_row) = (u32::MAX, 0, Row::<DEPTH>::EMPTY);
    while pos + MIN_MATCH as u32 <= end {
        let (lanes, repeats) = ((end + 1 - MIN_MATCH as u32 - pos).min(LANES as u32), recorder.repeats);
        let (p, active) = ((pos + lane) as usize, lane < lanes);
        // This lane's row (as the batch found it) and its own entry, to join it.
        let (slot, row, entry, found) = if active && p + WINDOW <= n {
            let here = unsafe { Window::at(data.add(p)) };
            let (slot, row) = if pos == ahead {
                (ahead_slot, ahead_row)
            } else {
                let slot = lazy::hash_word(here.word(0));
                (slot, unsafe { Row::load(rows, slot) })
            };
            let found = unsafe { find_match(data, p, &here, &row, repeats) };
            (slot as u32, row, Row::<DEPTH>::entry(p, here.word(0)), found)
        } else if active {
            let word = u32::from_le_bytes([input[p], input[p + 1], input[p + 2], input[p + 3]]);
            let slot = lazy::hash_word(word);
            let row = unsafe { Row::<DEPTH>::load(rows, slot) };
            let found = lazy::best_match(input, p, row.first(), |c| row.after(c), &repeats, DEPTH as u32);
            (slot as u32, row, Row::<DEPTH>::entry(p, word), found)
        } else {
            (u32::MAX - lane, Row::EMPTY, 0, Candidate::default()) // a slot no other lane holds
        };
        unsafe { join_rows(warp, rows, slot, row, entry) };
        // The next batch's rows, guessing that it follows this one (it starts later where a match
        // ends past this batch, and reads its rows itself): their loads wait on no one while this
        // batch is recorded, which does not change the rows. Every lane loads a row (slot 0's past
        // the window's end), so that the loads write the registers they are read from, with no
        // move waiting on them.
        ahead = pos + LANES as u32;
        let next = (ahead + lane) as usize;
        ahead_slot = if next + WINDOW <= n { lazy::hash_word(unsafe { word_at(data.add(next)) }) } else { 0 };
        ahead_row = unsafe { Row::load(rows, ahead_slot) };
        let cursor = unsafe { record_batch(warp, recorder, data, end, pos, lanes, anchor, found)? };
        if cursor != pos {
            anchor = cursor;
        }
        pos = cursor.max(pos + LANES as u32);
    }
    unsafe { recorder.last_literals(data.add(anchor as usize), n - anchor as usize) }
}

/// Takes a batch's matches (lane `i`'s `found` for position `pos + i`, the first `lanes` lanes
/// searched) as the scalar parse's lazy choice takes them, and records them with their literals
/// (from `anchor` on). The lanes work out which lanes are chosen (each lane the one chosen after
/// its own match, then a walk from the first); each chosen lane finds its match's backward
/// extension; the warp copies the first chosen lane's literals (which may be many), and the
/// others', which lie among the batch's positions, a byte a lane; then the repeat offsets go
/// through the sequences in order. Returns where the last match ends, or
/// `pos` without one.
///
/// # Safety
/// As [`compress_chunk`], for the `n` bytes at `data`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn record_batch<W: Warp>(
    warp: &W,
    recorder: &mut Recorder<W>,
    data: *const u8,
    n: u32,
    pos: u32,
    lanes: u32,
    anchor: u32,
    found: Candidate,
) -> Result<u32, Status> {
    let lane = warp.lane();
    let gain = found.gain(&recorder.repeats);
    let matched = warp.ballot(found.len != 0);
    let next_gain = warp.shuffle(gain as u32, (lane + 1).min(WARP_SIZE - 1)) as i32;
    let passed = warp.ballot(matched >> 1 >> lane & 1 == 1 && prefers_next(gain, next_gain));
    let after = lane + found.len; // where this lane's match ends, in lanes from `pos`
    let next = match found.len != 0 && after < lanes {
        true => choose_lane_by_masks(after, matched, passed).unwrap_or(WARP_SIZE),
        false => WARP_SIZE,
    };
    let mut chosen = 0u32;
    let mut at = choose_lane_by_masks(0, matched, passed).unwrap_or(WARP_SIZE);
    while at < WARP_SIZE {
        chosen |= 1 << at;
        at = warp.shuffle(next, at);
    }
    if chosen == 0 {
        return Ok(pos);
    }
    let (first, last) = (chosen.trailing_zeros(), 31 - chosen.leading_zeros());
    let (p, is_chosen, below) = (pos + lane, chosen >> lane & 1 == 1, chosen & ((1 << lane) - 1));
    let c = p - found.offset;
    // The search measured each match up to MEASURE_CAP bytes: only the last can be longer.
    let (last_p, last_c) = (pos + last, warp.shuffle(c, last));
    let extra = match warp.shuffle(found.len, last) as usize {
        MEASURE_CAP => {
            let cap = MEASURE_CAP as u32;
            common_forward(warp, data, last_p + cap, last_c + cap, n)
        }
        _ => 0,
    };
    // Each chosen lane's literals start where the match before it ends (the first's at `anchor`).
    let prev_end = pos + warp.shuffle(after, if below == 0 { lane } else { 31 - below.leading_zeros() });
    let start = if below == 0 { anchor } else { prev_end };
    let (first_p, first_c) = (pos + first, warp.shuffle(c, first));
    let first_back = common_backward(warp, data, first_p, first_c, anchor);
    let back = match is_chosen {
        true if lane == first => first_back,
        true => {
            let (limit, mut back) = ((p - start).min(c), 0);
            while back < limit && unsafe { *data.add((p - 1 - back) as usize) == *data.add((c - 1 - back) as usize) } {
                back += 1;
            }
            back
        }
        false => 0,
    };
    let literals = if is_chosen { p - back - start } else { 0 };
    let match_len = found.len + back + if lane == last { extra } else { 0 };
    // The literals, back to back: the first chosen lane's (which may be many) by the warp; the
    // others' lie among the batch's positions, each a lane's byte, placed by a mask of them all.
    let first_literals = warp.shuffle(literals, first);
    let span = |from: u32, to: u32| ((1u32 << (to - pos)) - 1) & !((1u32 << (from - pos)) - 1);
    let own_span = if is_chosen && lane != first { span(start, p - back) } else { 0 };
    let later_literals = warp.reduce_xor(own_span); // the spans are disjoint: their XOR is their union
    let total = (first_literals + later_literals.count_ones()) as usize;
    let count = chosen.count_ones() as usize;
    if recorder.literal_count + total > MAX_BLOCK_SIZE || recorder.sequence_count + count > MAX_SEQUENCES {
        return Err(Status::ChunkTooLarge);
    }
    let out = unsafe { (addr_of_mut!((*recorder.block).literals) as *mut u8).add(recorder.literal_count) };
    unsafe { copy(warp, data.add(anchor as usize), out, first_literals) };
    if later_literals >> lane & 1 == 1 {
        let at = first_literals + (later_literals & ((1 << lane) - 1)).count_ones();
        unsafe { *out.add(at as usize) = *data.add(p as usize) };
    }
    // The repeat offsets move on sequence by sequence.
    let mut mine = Sequence { offset_value: 0, literal_len: 0, match_len_minus3: 0 };
    let mut left = chosen;
    while left != 0 {
        let l = left.trailing_zeros();
        left &= left - 1;
        let (literal_len, offset) = (warp.shuffle(literals, l) as usize, warp.shuffle(found.offset, l));
        let seq = sequence(&mut recorder.repeats, literal_len, offset, warp.shuffle(match_len, l) as usize);
        if lane == l {
            mine = seq;
        }
    }
    if is_chosen {
        let sequences = unsafe { addr_of_mut!((*recorder.block).sequences) } as *mut Sequence;
        unsafe { *sequences.add(recorder.sequence_count + below.count_ones() as usize) = mine };
    }
    recorder.literal_count += total;
    recorder.sequence_count += count;
    warp.sync(); // the lanes' literals and sequences are visible to every lane
    Ok(pos + last + warp.shuffle(found.len, last) + extra)
}

/// Bytes a position needs after it for [`find_match`]: the compared bytes and the aligned words'
/// slack.
const WINDOW: usize = MEASURE_CAP + 4;

/// The [`MEASURE_CAP`] bytes at some position, as the aligned words that hold them: loads that
/// never wait on one another, at any alignment.
struct Window {
    words: [u32; MEASURE_CAP / 4 + 1],
    shift: u32,
}

impl Window {
    /// The window at `at`.
    ///
    /// # Safety
    /// The [`WINDOW`] bytes at `at` must be readable (the aligned words begin at most 3 bytes
    /// before `at`, in the same word as it).
    #[inline(always)]
    unsafe fn at(at: *const u8) -> Self {
        let (base, shift) = aligned(at);
        Self { words: core::array::from_fn(|k| unsafe { *base.add(k) }), shift }
    }

    /// Bytes `4 * k..4 * k + 4` of the window, little-endian.
    #[inline(always)]
    fn word(&self, k: usize) -> u32 {
        funnel(self.words[k], self.words[k + 1], self.shift)
    }

    /// Bytes this window has in common with the bytes at `at`, whose first `equal` words agree
    /// with it: the rest loaded a word at a time while they agree.
    ///
    /// # Safety
    /// As [`Window::at`].
    #[inline(always)]
    unsafe fn common_at(&self, at: *const u8, equal: usize) -> u32 {
        let (base, shift) = aligned(at);
        let mut low = unsafe { *base.add(equal) };
        for k in equal..MEASURE_CAP / 4 {
            let high = unsafe { *base.add(k + 1) };
            let diff = funnel(low, high, shift) ^ self.word(k);
            if diff != 0 {
                return 4 * k as u32 + diff.trailing_zeros() / 8;
            }
            low = high;
        }
        MEASURE_CAP as u32
    }
}

/// `lazy::best_match` for a position `p` with [`WINDOW`] bytes after it whose window is `here`,
/// among the candidates of its hash's `row`: the same match, found by aligned words. A
/// candidate is loaded only when its first word may equal `here`'s (the repeat candidates', the
/// same distance back in every lane, in coalesced loads; a row entry's, whose tag agrees, in a
/// transaction per lane), and then only while its words agree. It needs no check that a row
/// candidate differs at the best length so far: such a one never gains more than the best.
///
/// # Safety
/// `data` must be readable for `p +` [`WINDOW`] bytes, and `row` hold positions before `p`.
#[inline(always)]
unsafe fn find_match<const DEPTH: usize>(
    data: *const u8,
    p: usize,
    here: &Window,
    row: &Row<DEPTH>,
    repeats: RepeatOffsets,
) -> Candidate {
    // The first words of the repeat candidates and of the row's entries whose tags agree, loaded
    // at once; the rest of each only while they agree.
    let repeat_firsts = repeats.map(|r| unsafe { word_at(data.add(p.saturating_sub(r as usize))) });
    let tag = Row::<DEPTH>::tag(here.word(0));
    let tagged = |i: usize| row.entries[i] != 0 && row.entries[i] >> 16 == tag;
    let candidate = |i: usize| (row.entries[i] & 0xFFFF) as usize - 1;
    let mut row_firsts = [0; DEPTH];
    unrolled::<DEPTH>(|i| {
        if tagged(i) {
            row_firsts[i] = unsafe { word_at(data.add(candidate(i))) };
        }
    });
    let mut best = (Candidate::default(), 0);
    unrolled::<3>(|i| {
        if repeats[i] as usize <= p && repeat_firsts[i] == here.word(0) {
            let len = unsafe { here.common_at(data.add(p - repeats[i] as usize), 1) };
            consider(&mut best, Candidate { len, offset: repeats[i] }, &repeats);
        }
    });
    let mut searching = true;
    unrolled::<DEPTH>(|i| {
        searching &= row.entries[i] != 0 && best.0.len as usize != MEASURE_CAP;
        if searching && tagged(i) && row_firsts[i] == here.word(0) {
            let c = candidate(i);
            let len = unsafe { here.common_at(data.add(c), 1) };
            consider(&mut best, Candidate { len, offset: (p - c) as u32 }, &repeats);
        }
    });
    best.0
}

/// The chains of `lazy::parse` as the search reads them: for each hash, its latest `DEPTH` (at
/// most 8) positions, latest first, each entry its position plus 1 (0: none) and a tag of its
/// first word, so that the candidates come in one load and only those that may match are read.
/// The rows lie where the scalar parse keeps its chains, in the warp's scratch slot: rows of up
/// to 3 entries packed in 8 bytes (the positions' 16 bits each, and 5-bit tags), so that a
/// warp's rows take 32 KiB of the L2 rather than 64; deeper rows as their entries.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Row<const DEPTH: usize> {
    entries: [u32; DEPTH],
}

impl<const DEPTH: usize> Row<DEPTH> {
    const EMPTY: Self = Self { entries: [0; DEPTH] };
    /// Whether the row is stored packed in a word pair.
    const PACKED: bool = DEPTH <= 3;
    /// Bits of an entry's tag.
    const TAG_BITS: u32 = if Self::PACKED { 5 } else { 16 };
    /// Bytes a row takes in the scratch slot.
    const STORED: usize = if Self::PACKED { 8 } else { size_of::<Self>() };

    /// The entry of position `p`, whose first word is `word`.
    fn entry(p: usize, word: u32) -> u32 {
        (p as u32 + 1) | Self::tag(word) << 16
    }

    /// Some bits of `word`: candidates whose tags differ from a position's cannot match it.
    fn tag(word: u32) -> u32 {
        (word ^ word >> 16) & ((1 << Self::TAG_BITS) - 1)
    }

    /// The latest position plus 1 (0: none), the chains' head.
    fn first(&self) -> u16 {
        self.entries[0] as u16
    }

    /// The position plus 1 after position `c` in this row (0: none), the chains' link.
    fn after(&self, c: usize) -> u16 {
        let at = self.entries.iter().position(|&e| (e & 0xFFFF) as usize == c + 1);
        at.and_then(|k| self.entries.get(k + 1)).map_or(0, |&e| e as u16)
    }

    /// The row of `slot` among `rows`, in one load.
    ///
    /// # Safety
    /// `rows` must be readable for `slot + 1` rows.
    #[inline(always)]
    unsafe fn load(rows: *const u8, slot: usize) -> Self {
        if !Self::PACKED {
            return unsafe { *(rows as *const Self).add(slot) };
        }
        let packed = unsafe { *(rows as *const u64).add(slot) };
        let mut row = Self::EMPTY;
        unrolled::<DEPTH>(|k| {
            let tag = (packed >> (48 + Self::TAG_BITS as usize * k)) as u32 & ((1 << Self::TAG_BITS) - 1);
            row.entries[k] = (packed >> (16 * k)) as u32 & 0xFFFF | tag << 16;
        });
        row
    }

    /// Stores the row as `slot`'s among `rows`, in one store.
    ///
    /// # Safety
    /// `rows` must be writable for `slot + 1` rows.
    #[inline(always)]
    unsafe fn store(self, rows: *mut u8, slot: usize) {
        if !Self::PACKED {
            return unsafe { *(rows as *mut Self).add(slot) = self };
        }
        let mut packed = 0u64;
        unrolled::<DEPTH>(|k| {
            let (position, tag) = (self.entries[k] as u64 & 0xFFFF, self.entries[k] as u64 >> 16);
            packed |= position << (16 * k) | tag << (48 + Self::TAG_BITS as usize * k);
        });
        unsafe { *(rows as *mut u64).add(slot) = packed };
    }
}

/// The deepest level's rows fit where the scalar parse keeps its chains.
const _: () = assert!(Row::<DEEPEST>::STORED << CHAIN_HASH_BITS <= size_of::<ChainTables>());
const DEEPEST: usize = lazy::chain_depth(MAX_LEVEL) as usize;

/// Joins each active lane's position to its slot's row, in position order: the last lane of each
/// slot writes the row, its own entry first, then those of the lanes before it with the same
/// slot, then the row's older entries. Every lane's `row` is the row it read for the slot.
///
/// # Safety
/// `rows` must be writable for the rows of every active lane's slot.
#[inline(always)]
unsafe fn join_rows<W: Warp, const DEPTH: usize>(warp: &W, rows: *mut u8, slot: u32, row: Row<DEPTH>, entry: u32) {
    let lane = warp.lane();
    let peers = warp.match_any(slot);
    let mut new = Row::<DEPTH>::EMPTY;
    new.entries[0] = entry;
    // Entry k comes from the peer k lanes below this one, or from the old row once they run out.
    let mut below = peers & ((1 << lane) - 1);
    let mut taken = 1;
    unrolled::<DEPTH>(|k| {
        if k > 0 {
            let source = if below == 0 { lane } else { 31 - below.leading_zeros() };
            let theirs = warp.shuffle(entry, source);
            if below != 0 {
                new.entries[k] = theirs;
                below &= !(1 << source);
                taken += 1;
            }
        }
    });
    unrolled::<DEPTH>(|k| {
        unrolled::<DEPTH>(|j| {
            if k == taken + j {
                new.entries[k] = row.entries[j];
            }
        })
    });
    if slot < 1 << CHAIN_HASH_BITS && 31 - peers.leading_zeros() == lane {
        unsafe { new.store(rows, slot as usize) };
    }
    warp.sync(); // the rows are written before any lane reads them
}

/// Makes `found` the best match (with its gain) if it is one and gains more, as
/// `lazy::best_match` does.
#[inline(always)]
fn consider(best: &mut (Candidate, i32), found: Candidate, repeats: &RepeatOffsets) {
    if found.len as usize >= MIN_MATCH {
        let gain = found.gain(repeats);
        if best.0.len == 0 || gain > best.1 {
            *best = (found, gain);
        }
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

/// Encodes the sequences' bitstream at `out` (room for `capacity` bytes), as the format
/// crate's `write_sequences` does after the header; returns its size. Its units (the last
/// sequence's extra bits; each sequence before it, last to first, with the state field moving
/// the FSE states to it; the final states and end marker) go 32 at a time, a lane each. Each
/// lane puts its unit's three symbol codings into `steps` (shared, 96 words); the three FSE
/// states are stepped through the window's codings (the serial part) by lanes 0, 1 and 2
/// together, one table each, each step's field replacing its coding; then each lane gathers its
/// unit's state field, places its unit's fields by a prefix sum of their bits and the lanes
/// write the window's words together.
unsafe fn encode_stream<W: Warp>(
    warp: &W,
    sequences: &[Sequence],
    tables: &SequenceTables,
    out: *mut u8,
    capacity: usize,
    steps: *mut u32,
) -> Result<usize, Status> {
    let lane = warp.lane() as usize;
    let n = sequences.len();
    let units = n + 1;
    let steppers = tables.steppers();
    let mut state = 0;
    // Safety: the caller's `out` is writable for `capacity` bytes.
    let mut stream = unsafe { BitStream::new(out, capacity) };
    for base in (0..units).step_by(WARP_SIZE as usize) {
        let unit = base + lane;
        let seq = (unit < n).then(|| sequences[n - 1 - unit]);
        // Each lane's unit's codings, one table after another, where its steps will go: the
        // stepping lanes load them ahead of their states.
        let symbols = seq.map(|seq| codes(&seq));
        for (table, stepper) in steppers.iter().enumerate() {
            let coding = symbols.map_or(0, |(ll, of, ml)| stepper.coding([ll, of, ml][table]).0);
            unsafe { *steps.add(3 * lane + table) = coding };
        }
        warp.sync(); // the codings are visible to the stepping lanes
        if lane < 3 {
            // This window's sequences, each coding loaded a step ahead of its use.
            let (stepper, stepped) = (steppers[lane], n.saturating_sub(base).min(WARP_SIZE as usize) as u32);
            let mut coding = unsafe { *steps.add(lane) };
            for k in 0..stepped {
                let slot = unsafe { steps.add(3 * k as usize + lane) };
                let next = if k + 1 < stepped { unsafe { *slot.add(3) } } else { 0 };
                let (value, bits) = if base == 0 && k == 0 {
                    state = stepper.first_state_coded(SymbolCoding(coding));
                    (0, 0)
                } else {
                    stepper.step_coded(&mut state, SymbolCoding(coding))
                };
                unsafe { *slot = value | bits << 16 };
                coding = next;
            }
        }
        let finals = [0, 1, 2].map(|table| warp.shuffle(state, table));
        warp.sync(); // the steps are visible to every lane
        let unit_fields: [Field; 4] = match seq {
            Some(seq) => {
                let step = |table: usize| {
                    let packed = unsafe { *steps.add(3 * lane + table) };
                    (packed & 0xFFFF, packed >> 16)
                };
                let [lengths, offset] = extra_fields(&seq);
                [state_field([step(0), step(1), step(2)]), lengths, offset, (0, 0)]
            }
            None if unit == n => tables.final_fields(finals),
            None => [(0, 0); 4],
        };
        warp.sync(); // every lane has read its steps before the next window's are written
        stream.write(warp, unit_fields);
    }
    stream.finish(warp)
}

/// Counts the literals' byte values into the histogram in shared memory.
unsafe fn histogram<W: Warp>(warp: &W, literals: &[u8], stage: *mut LiteralStage) {
    let counts = unsafe { addr_of_mut!((*stage).counts) } as *mut u32;
    warp.for_each_strided(256, |b| unsafe { *counts.add(b) = 0 });
    warp.sync();
    unsafe { count(warp, literals.len(), |i| [literals[i] as u32], counts) };
}

/// Counts the sequences' literal-length, offset and match-length codes into their code tables
/// in shared memory, as `count_codes` does.
unsafe fn count_sequence_codes<W: Warp>(warp: &W, sequences: &[Sequence], stage: *mut SequenceStage) {
    // Where each kind's counts are, in words from the tables' start.
    const LITERAL_LENGTHS: usize = offset_of!(SequenceTables, literal_lengths.counts) / 4;
    const OFFSETS: usize = offset_of!(SequenceTables, offsets.counts) / 4;
    const MATCH_LENGTHS: usize = offset_of!(SequenceTables, match_lengths.counts) / 4;
    let tables = unsafe { addr_of_mut!((*stage).tables) } as *mut u32;
    for (at, codes) in
        [(LITERAL_LENGTHS, LITERAL_LENGTH_CODES), (OFFSETS, OFFSET_CODES), (MATCH_LENGTHS, MATCH_LENGTH_CODES)]
    {
        warp.for_each_strided(codes, |b| unsafe { *tables.add(at + b) = 0 });
    }
    warp.sync();
    let bins = |i: usize| {
        let (ll, of, ml) = codes(&sequences[i]);
        [LITERAL_LENGTHS + ll as usize, OFFSETS + of as usize, MATCH_LENGTHS + ml as usize].map(|bin| bin as u32)
    };
    unsafe { count(warp, sequences.len(), bins, tables) };
}

/// Writes the literals section at `out` as the format crate's `write_literals` does: the first
/// lane plans the Huffman code, all lanes count each stream's bits, then eight lanes (below
/// 1024 literals one) code each stream; raw or RLE literals when Huffman does not pay.
unsafe fn write_literals<W: Warp>(
    warp: &W,
    literals: &[u8],
    stage: *mut LiteralStage,
    out: *mut u8,
    available: usize,
) -> Result<usize, Status> {
    let (n, lane) = (literals.len(), warp.lane() as usize);
    let planned = if lane == 0 {
        let (counts, huffman) = unsafe { (&(*stage).counts, &mut (*stage).huffman) };
        plan_huffman(n, counts, huffman, unsafe { bytes_mut(out, available) })
    } else {
        None
    };
    if let Some(mut plan) = broadcast_plan(warp, planned, n) {
        warp.sync(); // the code is visible to every lane
        let huffman = unsafe { &(*stage).huffman };
        let quarter = n.div_ceil(4).max(1);
        let mut bits = [0u32; 4];
        let stream = |i: usize| match plan.streams {
            1 => 0,
            _ => (i >= quarter) as usize + (i >= 2 * quarter) as usize + (i >= 3 * quarter) as usize,
        };
        // Four strides' literals loaded at a time, so that their loads overlap.
        let mut base = lane;
        while base < n {
            let at = |s: usize| base + s * WARP_SIZE as usize;
            let quad: [u8; 4] = core::array::from_fn(|s| if at(s) < n { literals[at(s)] } else { 0 });
            unrolled::<4>(|s| {
                let (k, len) = (stream(at(s)), huffman.lens[quad[s] as usize] as u32);
                unrolled::<4>(|j| bits[j] += if j == k && at(s) < n { len } else { 0 });
            });
            base += 4 * WARP_SIZE as usize;
        }
        for bits in &mut bits {
            *bits = warp.shuffle(scan_add(warp, *bits), WARP_SIZE - 1);
        }
        if plan.settle(&bits) {
            if plan.size() > available {
                return Err(Status::OutputTooSmall);
            }
            if lane == 0 {
                let _ = plan.write_header(unsafe { bytes_mut(out, plan.stream_start(0)) });
            }
            if n >= SPLIT_STREAMS {
                unsafe { encode_streams_split(warp, huffman, literals, &plan, out) };
            } else if lane < plan.streams as usize {
                let at = plan.stream_start(lane);
                let stream = unsafe { bytes_mut(out.add(at), plan.stream_lens[lane] as usize) };
                let _ = huffman.encode_stream(&literals[stream_range(n, plan.streams, lane)], stream);
            }
            warp.sync();
            return Ok(plan.size());
        }
    }
    let (header, header_len, body_len) = uncompressed_header(literals, unsafe { &(*stage).counts });
    if header_len + body_len > available {
        return Err(Status::OutputTooSmall);
    }
    if lane == 0 {
        unsafe { out.copy_from_nonoverlapping(header.as_ptr(), header_len) };
    }
    unsafe { copy(warp, literals.as_ptr(), out.add(header_len), body_len as u32) };
    warp.sync();
    Ok(header_len + body_len)
}

/// Fewest literals whose four streams are split among all lanes (eight per stream, each with
/// at least 32 literals, so at least 32 bits: two lanes at most share a byte).
const SPLIT_STREAMS: usize = 1024;
/// Lanes sharing one stream.
const LANES_PER_STREAM: u32 = WARP_SIZE / 4;

/// Encodes the four Huffman streams of `literals` at their places in `out` with eight lanes
/// per stream, the bits `HuffmanCode::encode_stream` writes: each lane codes a run of the
/// stream's literals at the bit where the later runs' codes end (a stream is written last
/// literal first), and a byte two lanes' bits share is completed by the lane coding the
/// earlier literals, with the other lane's bits passed over.
unsafe fn encode_streams_split<W: Warp>(
    warp: &W,
    huffman: &HuffmanCode,
    literals: &[u8],
    plan: &HuffmanLiterals,
    out: *mut u8,
) {
    let lane = warp.lane();
    let (stream, rank) = ((lane / LANES_PER_STREAM) as usize, lane % LANES_PER_STREAM);
    let range = stream_range(literals.len(), 4, stream);
    let cut = |r: u32| range.start + range.len() * r as usize / LANES_PER_STREAM as usize;
    let run = &literals[cut(rank)..cut(rank + 1)];
    let bits: u32 = run.iter().map(|&b| huffman.lens[b as usize] as u32).sum();
    // The bits of the runs after this one (lanes of higher rank in the same stream).
    let mut start = 0;
    for distance in 1..LANES_PER_STREAM {
        let later = warp.shuffle(bits, lane + distance);
        if rank + distance < LANES_PER_STREAM {
            start += later;
        }
    }
    let dst = unsafe { out.add(plan.stream_start(stream)) };
    let mut bits = RunBits { dst, at: start as usize / 8, acc: 0, filled: start % 8, head: None };
    let mut put = |b: u8| unsafe { bits.put(huffman.codes[b as usize] as u32, huffman.lens[b as usize] as u32) };
    // Four literals loaded at a time, so that their loads overlap.
    let mut left = run.len();
    while left >= 4 {
        let quad = [run[left - 1], run[left - 2], run[left - 3], run[left - 4]];
        quad.into_iter().for_each(&mut put);
        left -= 4;
    }
    run[..left].iter().rev().for_each(|&b| put(b));
    if rank == 0 {
        unsafe { bits.put(1, 1) }; // the end marker after the stream's first literal
    }
    unsafe { bits.drain() };
    let RunBits { at, acc, filled, head, .. } = bits;
    // A partial last byte goes to the lane coding the run before this one, which shares it;
    // the stream's first run ends the stream and writes it.
    let tail = if filled > 0 { acc as u32 } else { 0 };
    let (head_index, head_byte) = (start as usize / 8, head.unwrap_or(acc as u8));
    if rank == 0 && filled > 0 && head.is_some() {
        unsafe { *dst.add(at) = acc as u8 };
    }
    let later_tail = warp.shuffle(tail, lane + 1);
    let shared = if rank + 1 < LANES_PER_STREAM { later_tail as u8 } else { 0 };
    unsafe { *dst.add(head_index) = head_byte | shared };
}

/// A lane's run of a Huffman stream as it is written: the bits not yet written (`filled` of
/// them in `acc`, from the byte at `at` in `dst`) and the run's first byte, which the lane coding
/// the run before shares, kept rather than written.
struct RunBits {
    dst: *mut u8,
    at: usize,
    acc: u64,
    filled: u32,
    head: Option<u8>,
}

impl RunBits {
    /// Adds the `n` (at most 11) bits of `value`; writes four bytes once 32 bits are held, so
    /// that a literal takes one branch rather than a loop a byte.
    ///
    /// # Safety
    /// As [`RunBits::emit`].
    #[inline(always)]
    unsafe fn put(&mut self, value: u32, n: u32) {
        self.acc |= (value as u64) << self.filled;
        self.filled += n;
        if self.filled >= 32 {
            for k in 0..4 {
                unsafe { self.emit((self.acc >> (8 * k)) as u8) };
            }
            self.acc >>= 32;
            self.filled -= 32;
        }
    }

    /// Writes the complete bytes held, leaving fewer than 8 bits.
    ///
    /// # Safety
    /// As [`RunBits::emit`].
    #[inline(always)]
    unsafe fn drain(&mut self) {
        while self.filled >= 8 {
            unsafe { self.emit(self.acc as u8) };
            self.acc >>= 8;
            self.filled -= 8;
        }
    }

    /// The run's next byte: kept if it is its first, else written.
    ///
    /// # Safety
    /// The stream's bytes at `dst` must be writable up to this run's end.
    #[inline(always)]
    unsafe fn emit(&mut self, byte: u8) {
        if self.head.is_none() {
            self.head = Some(byte);
        } else {
            unsafe { *self.dst.add(self.at) = byte };
        }
        self.at += 1;
    }
}

/// The first lane's Huffman plan for `n` literals, in every lane.
fn broadcast_plan<W: Warp>(warp: &W, plan: Option<HuffmanLiterals>, n: usize) -> Option<HuffmanLiterals> {
    let fields = plan.map_or([0; 3], |p| [p.streams, p.header_len, p.description_len]);
    let [streams, header_len, description_len] = fields.map(|field| warp.shuffle(field, 0));
    (streams != 0).then_some(HuffmanLiterals {
        regenerated: n as u32,
        streams,
        header_len,
        description_len,
        stream_lens: [0; 4],
    })
}

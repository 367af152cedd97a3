//! Compressing a chunk with a block of [`BLOCK_WARPS`](super::BLOCK_WARPS) warps: the symbols counted and scaled to
//! the table's frequencies, then each warp codes its own sub-blocks twice, once to count their
//! words and, the chunk's layout known, once to write them.

use super::{BITMAP_LEN, Tables, byte_perm, set_symbols};
use crate::block::{Block, parts_len};
use crate::copy::{Memory, Source, spread};
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::ans::{
    HEADER_LEN, LANES, LOWER, MAX_CHUNK_SIZE, Options, ROUND, RUN, STORED, Symbol, TOTAL, VERSION, encode,
    max_compressed_size, raw_byte_source, raw_bytes, steps, sub_block, sub_blocks, symbol_index, symbols,
};

/// Where a chunk's symbols are: the last byte of each `width`-byte value from `input` on;
/// `aligned`: `input` is aligned to 16, and symbols are loaded in words of several.
#[derive(Clone, Copy)]
struct Symbols {
    input: *const u8,
    width: usize,
    aligned: bool,
}

impl Symbols {
    /// Symbol `i`, of values `WIDTH` bytes wide.
    #[inline(always)]
    unsafe fn at<const WIDTH: usize>(self, i: usize) -> u32 {
        unsafe { *self.input.add(i * WIDTH + WIDTH - 1) as u32 }
    }

    /// Symbols `i .. i + 4` (`i` a multiple of 4), the first in the low byte: one load where
    /// aligned.
    #[inline(always)]
    unsafe fn four<const WIDTH: usize>(self, i: usize) -> u32 {
        if !self.aligned {
            return (0..4).fold(0, |word, j| word | unsafe { self.at::<WIDTH>(i + j) } << (8 * j));
        }
        let at = unsafe { self.input.add(i * WIDTH) };
        match WIDTH {
            1 => unsafe { (at as *const u32).read() },
            2 => {
                let values = unsafe { (at as *const u64).read() };
                byte_perm(values as u32, (values >> 32) as u32, 0x7531)
            }
            _ => {
                let [a, b, c, d] = unsafe { crate::raw::global_u32x4(at) };
                byte_perm(byte_perm(a, b, 0x73), byte_perm(c, d, 0x73), 0x5410)
            }
        }
    }

    /// Counts the first `count` symbols into `tables`, thread `thread` of `threads` its share.
    #[inline(always)]
    unsafe fn count(self, tables: &Tables, thread: usize, threads: usize, count: usize) {
        match self.width {
            1 => unsafe { self.count_values::<1>(tables, thread, threads, count) },
            2 => unsafe { self.count_values::<2>(tables, thread, threads, count) },
            _ => unsafe { self.count_values::<4>(tables, thread, threads, count) },
        }
    }

    /// [`count`](Self::count) for values `WIDTH` bytes wide: 16 bytes a load where aligned, two
    /// loads in flight.
    #[inline(always)]
    unsafe fn count_values<const WIDTH: usize>(self, tables: &Tables, thread: usize, threads: usize, count: usize) {
        let units = if self.aligned { count * WIDTH / 16 } else { 0 };
        let load = |unit: usize| unsafe { crate::raw::global_u32x4(self.input.add(16 * unit)) };
        let add = |words: [u32; 4]| {
            for k in 0..16 / WIDTH {
                let byte = WIDTH * k + WIDTH - 1;
                unsafe { tables.add(words[byte / 4] >> (8 * (byte % 4)) & 0xFF) };
            }
        };
        for unit in (thread..units).step_by(2 * threads) {
            let more = unit + threads < units;
            let (first, second) = (load(unit), if more { load(unit + threads) } else { [0; 4] });
            add(first);
            if more {
                add(second);
            }
        }
        for i in (units * 16 / WIDTH + thread..count).step_by(threads) {
            unsafe { tables.add(self.at::<WIDTH>(i)) };
        }
    }
}

/// Scales lane `l`'s counts of symbols `8l .. 8l + 8` (of `total` symbols) to frequencies summing
/// to [`TOTAL`], as `ferrocomp_format::ans::Table::of_counts`.
#[inline(always)]
fn normalize<W: Warp>(warp: &W, counts: [u32; 8], total: usize) -> [u32; 8] {
    let lane = warp.lane();
    let mut freqs = [0u32; 8];
    for (freq, &count) in freqs.iter_mut().zip(&counts) {
        if count > 0 {
            *freq = ((count as u64 * TOTAL as u64 / total.max(1) as u64) as u32).max(1);
        }
    }
    let mut sum = warp.reduce_add(freqs.iter().sum());
    while sum != TOTAL {
        // The most frequent symbol, the lowest on a tie: the largest of `freq << 8 | 255 - s`.
        let key = (0..8).fold(0, |key, j| key.max(freqs[j] << 8 | (255 - (8 * lane + j as u32))));
        let largest = 255 - (warp.reduce_max(key) & 0xFF);
        let (owner, j) = (largest / 8, (largest % 8) as usize);
        let freq = warp.shuffle(freqs.iter().enumerate().fold(0, |f, (k, &v)| if k == j { v } else { f }), owner);
        let change = if sum < TOTAL { TOTAL - sum } else { (freq - 1).min(sum - TOTAL) };
        if lane == owner {
            for (k, f) in freqs.iter_mut().enumerate() {
                if k == j {
                    *f = if sum < TOTAL { *f + change } else { *f - change };
                }
            }
        }
        sum = if sum < TOTAL { TOTAL } else { sum - change };
    }
    freqs
}

/// Compresses `input` with `options` into `out` (room for `capacity` bytes), as
/// `ferrocomp_format::ans::compress`; returns the compressed size (in every thread of the block).
///
/// # Safety
/// `out` must be writable for `capacity` bytes and `shared` for
/// [`COMPRESS_SHARED_BYTES`](super::COMPRESS_SHARED_BYTES) (the block's alone, aligned to 4); every
/// thread of the block, [`BLOCK_WARPS`](super::BLOCK_WARPS) warps, calls this with the same chunk.
pub unsafe fn compress_chunk<B: Block, W: Warp>(
    block: &B,
    warp: &W,
    input: &[u8],
    options: &Options,
    shared: *mut u32,
    out: *mut u8,
    capacity: usize,
) -> Result<usize, Status> {
    let (input, n) = (input.as_ptr(), input.len());
    if n > MAX_CHUNK_SIZE {
        return Err(Status::ChunkTooLarge);
    }
    if capacity < max_compressed_size(n) {
        return Err(Status::OutputTooSmall);
    }
    let (data_type, lane) = (options.data_type, warp.lane() as usize);
    let (thread, threads) = (block.thread() as usize, block.threads() as usize);
    let (warp_index, warps) = (thread / WARP_SIZE as usize, threads / WARP_SIZE as usize);
    let copy = |from: *const u8, to: *mut u8, count: usize| unsafe {
        crate::copy::copy_spread(thread, threads, from, to, count)
    };
    let tables = Tables::new(shared);
    let count = symbols(n, data_type);
    // The symbols' counts, then (the first warp) the table.
    block.sync_threads(); // the block is done with the chunk before
    for s in (thread..256).step_by(threads) {
        unsafe { *tables.symbols.add(s) = 0 };
    }
    block.sync_threads();
    let symbols_in = Symbols { input, width: data_type.width(), aligned: (input as usize).is_multiple_of(16) };
    unsafe { symbols_in.count(&tables, thread, threads, count) };
    block.sync_threads();
    let counts: [u32; 8] = core::array::from_fn(|j| unsafe { tables.count((8 * lane + j) as u32) });
    block.sync_threads(); // counted before the table overwrites them
    let freqs = normalize(warp, counts, count);
    let (before, present) = if warp_index == 0 {
        unsafe { set_symbols(warp, tables.symbols, freqs) }
    } else {
        // The same counts in every warp, so the same frequencies: only the first writes them.
        let present = freqs.iter().filter(|&&f| f > 0).count() as u32;
        (crate::lz77::scan_add(warp, present) - present, present)
    };
    let table_len = BITMAP_LEN as u32 + 2 * warp.shuffle(before + present, WARP_SIZE - 1);
    if warp_index == 0 {
        for j in 0..8 {
            unsafe { tables.set_entry(8 * lane as u32 + j) };
        }
    }
    block.sync_threads();
    // Each sub-block's words, counted by a first coding; the chunk is stored if no smaller.
    let blocks = sub_blocks(VERSION, data_type, count);
    let word_counts = tables.word_counts;
    for b in (warp_index..blocks).step_by(warps) {
        let mut encoder = SubBlockEncoder::new(sub_block(VERSION, data_type, b, count));
        unsafe { encoder.code(warp, &tables, symbols_in, |encoder, word| encoder.words += word.is_some() as u32) };
        let words = warp.reduce_add(encoder.words);
        if lane == 0 {
            unsafe { *word_counts.add(b) = words as u16 };
        }
    }
    block.sync_threads();
    let word_count = |b: usize| unsafe { *word_counts.add(b) } as usize;
    // Bytes of sub-blocks `from .. to`, their states and words.
    let span = |from: usize, to: usize| parts_len(warp, from..to, |b| 4 * LANES + 2 * word_count(b));
    let sizes_at = HEADER_LEN + table_len as usize;
    let first_at = sizes_at + 2 * blocks;
    let size = first_at + span(0, blocks) + (n - count);
    let header = |flags: u8, k: usize| match k {
        0 => VERSION,
        1 => data_type as u8,
        2 => flags,
        3 => 0,
        _ => (n >> (8 * (k - 4))) as u8,
    };
    if size >= max_compressed_size(n) {
        if thread < HEADER_LEN {
            unsafe { *out.add(thread) = header(STORED, thread) };
        }
        copy(input, unsafe { out.add(HEADER_LEN) }, n);
        return Ok(max_compressed_size(n));
    }
    if thread < HEADER_LEN {
        unsafe { *out.add(thread) = header(0, thread) };
    }
    if warp_index == 0 {
        // The table: lane `l` has byte `l` of the bitmap and its symbols' frequencies.
        let bitmap = freqs.iter().enumerate().fold(0u8, |bits, (j, &f)| bits | ((f > 0) as u8) << j);
        unsafe { *out.add(HEADER_LEN + lane) = bitmap };
        let mut at = HEADER_LEN + BITMAP_LEN + 2 * before as usize;
        for &freq in freqs.iter().filter(|&&f| f > 0) {
            unsafe { (*out.add(at), *out.add(at + 1)) = (freq as u8, (freq >> 8) as u8) };
            at += 2;
        }
    }
    copy(word_counts as *const u8, unsafe { out.add(sizes_at) }, 2 * blocks);
    // Each sub-block coded again, each word written where decoding reads it: the e-th emitted
    // (the lanes after this one emitting before it in a step) the (words - 1 - e)-th read.
    let above = !0u32 << lane << 1;
    let mut at = first_at + span(0, warp_index.min(blocks));
    for b in (warp_index..blocks).step_by(warps) {
        let mut encoder = SubBlockEncoder::new(sub_block(VERSION, data_type, b, count));
        (encoder.word_count, encoder.into) = (word_count(b) as u32, at as u32);
        let emit = |encoder: &mut SubBlockEncoder, word: Option<u16>| {
            let emitting = warp.ballot(word.is_some());
            if let Some(word) = word {
                let read = encoder.word_count - 1 - (encoder.words + (emitting & above).count_ones());
                let word_at = unsafe { out.add((encoder.into + 4 * LANES as u32 + 2 * read) as usize) };
                unsafe { (*word_at, *word_at.add(1)) = (word as u8, (word >> 8) as u8) };
            }
            encoder.words += emitting.count_ones();
        };
        unsafe { encoder.code(warp, &tables, symbols_in, emit) };
        let states = unsafe { out.add(at + 4 * lane) };
        for k in 0..4 {
            unsafe { *states.add(k) = (encoder.state >> (8 * k)) as u8 };
        }
        at += span(b, (b + warps).min(blocks));
    }
    let end = size - (n - count);
    let width = data_type.width();
    let lows_out = Memory(unsafe { out.add(end) });
    match width {
        2 => unsafe { spread::<1>(thread, threads, &Lows::<2>(input), &lows_out, raw_bytes(count, 2)) },
        4 => unsafe { spread::<1>(thread, threads, &Lows::<4>(input), &lows_out, raw_bytes(count, 4)) },
        _ => {}
    }
    let raw = count * width;
    copy(unsafe { input.add(raw) }, unsafe { out.add(size - (n - raw)) }, n - raw);
    Ok(size)
}

/// The low bytes of values `WIDTH` bytes wide from the pointer on, one after another as the
/// chunk stores them, a [`Source`]: built from the values' words where they are aligned to 4.
struct Lows<const WIDTH: usize>(*const u8);

impl<const WIDTH: usize> Source for Lows<WIDTH> {
    #[inline(always)]
    fn skew(&self) -> usize {
        0
    }

    #[inline(always)]
    unsafe fn byte(&self, i: usize) -> u8 {
        unsafe { *self.0.add(raw_byte_source(i, WIDTH)) }
    }

    #[inline(always)]
    unsafe fn word(&self, k: usize) -> u32 {
        if !(self.0 as usize).is_multiple_of(4) {
            return (0..4).fold(0, |word, j| word | (unsafe { self.byte(4 * k + j) } as u32) << (8 * j));
        }
        let values = |at: usize| unsafe { (self.0.add(4 * at) as *const u32).read() };
        if WIDTH == 2 {
            // The low bytes of values `4k .. 4k + 4`, two a word.
            byte_perm(values(2 * k), values(2 * k + 1), 0x6420)
        } else {
            // Bytes `4k .. 4k + 4` are those of value `v` from byte `r` on, then value `v + 1`'s.
            let (v, r) = (4 * k / 3, 4 * k % 3);
            byte_perm(values(v), values(v + 1), 0x654210 >> (4 * r) & 0xFFFF)
        }
    }
}

/// A lane's share of coding one sub-block, last symbol first: lane `l` codes the symbols
/// `symbol_index` gives it into its state.
struct SubBlockEncoder {
    /// Symbols in the sub-block, and the chunk's index of its first.
    len: u32,
    first: u32,
    state: u32,
    /// Words emitted so far: counting, this lane's; writing, the sub-block's.
    words: u32,
    /// Writing: where the sub-block goes in the output, and its words.
    into: u32,
    word_count: u32,
}

impl SubBlockEncoder {
    /// Ready to code the sub-block of the chunk's `symbols`.
    #[inline(always)]
    fn new(symbols: core::ops::Range<usize>) -> Self {
        let (first, len) = (symbols.start as u32, symbols.len() as u32);
        Self { len, first, state: LOWER, words: 0, into: 0, word_count: 0 }
    }

    /// Codes the sub-block, last step first, giving `emit` each step's word (if this lane emits
    /// one).
    #[inline(always)]
    unsafe fn code<W: Warp>(
        &mut self,
        warp: &W,
        tables: &Tables,
        symbols: Symbols,
        emit: impl FnMut(&mut Self, Option<u16>),
    ) {
        match symbols.width {
            1 => unsafe { self.code_values::<1, W>(warp, tables, symbols, emit) },
            2 => unsafe { self.code_values::<2, W>(warp, tables, symbols, emit) },
            _ => unsafe { self.code_values::<4, W>(warp, tables, symbols, emit) },
        }
    }

    /// [`code`](Self::code) for values `WIDTH` bytes wide. A round's four symbols are loaded two
    /// rounds before it (in one load where aligned) and their table entries before its steps, so
    /// that the latencies overlap rather than each step waiting on its own.
    #[inline(always)]
    unsafe fn code_values<const WIDTH: usize, W: Warp>(
        &mut self,
        warp: &W,
        tables: &Tables,
        symbols: Symbols,
        mut emit: impl FnMut(&mut Self, Option<u16>),
    ) {
        let lane = warp.lane() as usize;
        let (first, len) = (self.first as usize, self.len as usize);
        let at = |round: usize| first + round * ROUND + lane * RUN;
        let rounds = steps(VERSION, len) / RUN;
        // Only the last round may be cut short (its symbols past the sub-block 0): read first.
        let last = |round: usize| {
            let i = round * ROUND + lane * RUN;
            (0..RUN)
                .filter(|j| i + j < len)
                .fold(0, |word, j| word | unsafe { symbols.at::<WIDTH>(first + i + j) } << (8 * j))
        };
        let full = |round: usize| unsafe { symbols.four::<WIDTH>(at(round)) };
        let mut ahead = [rounds.checked_sub(1).map_or(0, last), rounds.checked_sub(2).map_or(0, full)];
        for round in (0..rounds).rev() {
            let word = ahead[0];
            ahead = [ahead[1], round.checked_sub(2).map_or(0, full)];
            // Looked up before the steps; a symbol past the sub-block (only in the last round)
            // looks up symbol 0 and is not coded.
            let entries: [(Symbol, u32); RUN] =
                core::array::from_fn(|j| unsafe { tables.entry(word >> (8 * j) & 0xFF) });
            let valid = |j: usize| symbol_index(VERSION, round * RUN + j, lane) < len;
            // Written out, not looped, so that the entries stay in registers.
            let [a, b, c, d] = entries;
            let mut step = |(symbol, reciprocal), j| {
                let (word, state) = if valid(j) { encode(self.state, symbol, reciprocal) } else { (None, self.state) };
                self.state = state;
                emit(self, word);
            };
            step(d, 3);
            step(c, 2);
            step(b, 1);
            step(a, 0);
        }
    }
}

//! Compressing a chunk with a block of warps: the symbols counted and scaled to the table's
//! frequencies, then the sub-blocks a round of one a warp at a time, each coded once
//! into its warp's stage in shared memory and copied out once the round's sizes place it.

use super::{BITMAP_LEN, STAGE_BYTES, STAGE_WORDS, Tables, byte_perm, set_symbols};
use crate::block::{Block, parts_len, strided};
use crate::copy::{Memory, Source, spread};
use crate::raw::SharedBytes;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::ans::{
    HEADER_LEN, LANES, LOWER, MAX_CHUNK_SIZE, Options, ROUND, RUN, STORED, Symbol, TOTAL, VERSION, code, emits,
    max_compressed_size, raw_byte_source, raw_bytes, steps, sub_block, sub_blocks, symbol_index, symbols,
};

/// Rounds of symbols a lane has in flight while it codes one (on an H200, two and four compressed
/// within 1% of each other, eight 2-3% slower).
const AHEAD: usize = 4;

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
        for unit in strided(thread..units, 2 * threads) {
            let more = unit + threads < units;
            let (first, second) = (load(unit), if more { load(unit + threads) } else { [0; 4] });
            add(first);
            if more {
                add(second);
            }
        }
        for i in strided(units * 16 / WIDTH + thread..count, threads) {
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
/// [`compress_shared_bytes`](super::compress_shared_bytes) of the block's warps (the block's
/// alone, aligned to 4); every thread of the block calls this with the same chunk.
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
    for s in strided(thread..256, threads) {
        unsafe { tables.shared.set_u32(4 * s as u32, 0) };
    }
    if thread == 0 {
        unsafe { tables.clear_overflowed() };
    }
    block.sync_threads();
    let symbols_in = Symbols { input, width: data_type.width(), aligned: (input as usize).is_multiple_of(16) };
    unsafe { symbols_in.count(&tables, thread, threads, count) };
    block.sync_threads();
    let counts: [u32; 8] = core::array::from_fn(|j| unsafe { tables.count((8 * lane + j) as u32) });
    block.sync_threads(); // counted before the table overwrites them
    let freqs = normalize(warp, counts, count);
    let (before, present) = if warp_index == 0 {
        unsafe { set_symbols(warp, tables.shared, freqs) }
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
    // The sub-blocks a round of one a warp at a time: each coded once into its warp's stage, then,
    // the round's sizes known, copied out where it goes; the chunk is stored if the coding would
    // not be smaller (known as soon as the sub-blocks so far and the raw bytes reach its size).
    let blocks = sub_blocks(VERSION, data_type, count);
    let word_counts = tables.word_counts;
    let word_count = |b: usize| unsafe { *word_counts.add(b) } as usize;
    // Bytes of sub-blocks `from .. to`, their states and words.
    let span = |from: usize, to: usize| parts_len(warp, from..to, |b| 4 * LANES + 2 * word_count(b));
    let sizes_at = HEADER_LEN + table_len as usize;
    let first_at = sizes_at + 2 * blocks;
    let max_size = max_compressed_size(n);
    let (stage, mut at) = (tables.stage(warp_index), first_at);
    let mut size = first_at + (n - count);
    let mut stored = size >= max_size;
    for round in strided(0..blocks, warps) {
        if round > 0 {
            block.sync_threads(); // the stages copied out
        }
        let b = round + warp_index;
        if b < blocks {
            unsafe { code_into_stage(warp, &tables, symbols_in, stage, sub_block(VERSION, data_type, b, count), b) };
        }
        block.sync_threads();
        let end = at + span(round, (round + warps).min(blocks));
        size = end + (n - count);
        stored |= size >= max_size || unsafe { tables.overflowed() };
        if !stored && b < blocks {
            let len = 4 * LANES + 2 * word_count(b);
            let from = Stage { shared: stage, at: STAGE_BYTES - len };
            let to = Memory(unsafe { out.add(at + span(round, b)) });
            unsafe { spread::<1>(lane, WARP_SIZE as usize, &from, &to, len) };
        }
        at = end;
    }
    let header = |flags: u8, k: usize| match k {
        0 => VERSION,
        1 => data_type as u8,
        2 => flags,
        3 => 0,
        _ => (n >> (8 * (k - 4))) as u8,
    };
    if stored {
        if thread < HEADER_LEN {
            unsafe { *out.add(thread) = header(STORED, thread) };
        }
        copy(input, unsafe { out.add(HEADER_LEN) }, n);
        return Ok(max_size);
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

/// Codes the sub-block of the chunk's `symbols` (sub-block `b`) into the warp's `stage`: its
/// words end at the stage's end in the order decoding reads them, its lanes' states before them;
/// its word count into `tables`. Words past the stage (none: see [`STAGE_WORDS`]) are not written,
/// and the tables then say so.
#[inline(always)]
unsafe fn code_into_stage<W: Warp>(
    warp: &W,
    tables: &Tables,
    symbols_in: Symbols,
    stage: SharedBytes,
    symbols: core::ops::Range<usize>,
    b: usize,
) {
    let (lane, first, len) = (warp.lane(), symbols.start, symbols.len());
    let (words, state) = match symbols_in.width {
        1 => unsafe { code_values::<1, W>(warp, tables, symbols_in, stage, first, len) },
        2 => unsafe { code_values::<2, W>(warp, tables, symbols_in, stage, first, len) },
        _ => unsafe { code_values::<4, W>(warp, tables, symbols_in, stage, first, len) },
    };
    if words <= STAGE_WORDS as u32 {
        let at = STAGE_BYTES as u32 - 2 * words - 4 * (LANES as u32 - lane);
        unsafe { (stage.set_u16(at, state as u16), stage.set_u16(at + 2, (state >> 16) as u16)) };
    } else if lane == 0 {
        unsafe { tables.set_overflowed() };
    }
    if lane == 0 {
        unsafe { *tables.word_counts.add(b) = words.min(STAGE_WORDS as u32) as u16 };
    }
}

/// [`code_into_stage`]'s coding of the `len` symbols from the chunk's `first` on, values `WIDTH`
/// bytes wide, last symbol first: lane `l` codes those `symbol_index` gives it into its state; the
/// sub-block's words emitted and the lane's state. A round's four symbols are loaded [`AHEAD`]
/// rounds before it (in one load where aligned) and their table entries before its steps, so that the
/// latencies overlap rather than each step waiting on its own. The last round, the only one that
/// may be cut short, is coded first and alone, so that the others check no symbol's place.
#[inline(always)]
unsafe fn code_values<const WIDTH: usize, W: Warp>(
    warp: &W,
    tables: &Tables,
    symbols: Symbols,
    stage: SharedBytes,
    first: usize,
    len: usize,
) -> (u32, u32) {
    let lane = warp.lane() as usize;
    let above = !0u32 << lane << 1;
    let (mut state, mut words) = (LOWER, 0u32);
    let rounds = steps(VERSION, len) / RUN;
    if rounds == 0 {
        return (words, state);
    }
    // The last round's symbols past the sub-block are 0, and read first.
    let last = |round: usize| {
        let i = round * ROUND + lane * RUN;
        (0..RUN)
            .filter(|j| i + j < len)
            .fold(0, |word, j| word | unsafe { symbols.at::<WIDTH>(first + i + j) } << (8 * j))
    };
    let full = |round: usize| unsafe { symbols.four::<WIDTH>(first + round * ROUND + lane * RUN) };
    // Codes round `round`'s four symbols (`word`, the first in the low byte), last first; in a
    // round `cut` short, those past the sub-block are not coded (but take part in the ballots).
    let mut code_round = |round: usize, word: u32, cut: bool| {
        let entries: [(Symbol, u32); RUN] = core::array::from_fn(|j| unsafe { tables.entry(word >> (8 * j) & 0xFF) });
        // Written out, not looped, so that the entries stay in registers.
        let [a, b, c, d] = entries;
        let mut step = |(symbol, reciprocal): (Symbol, u32), j: usize| {
            let coded = !cut || symbol_index(VERSION, round * RUN + j, lane) < len;
            let emit = coded && emits(state, symbol.freq);
            // The e-th word emitted (the lanes above this one emitting before it in a step) is
            // the (words - 1 - e)-th read: it goes e + 1 words before the stage's end.
            let emitting = warp.ballot(emit);
            let e = words + (emitting & above).count_ones();
            if emit && e < STAGE_WORDS as u32 {
                unsafe { stage.set_u16(STAGE_BYTES as u32 - 2 - 2 * e, state as u16) };
            }
            words += emitting.count_ones();
            if coded {
                state = code(if emit { state >> 16 } else { state }, symbol, reciprocal);
            }
        };
        step(d, 3);
        step(c, 2);
        step(b, 1);
        step(a, 0);
    };
    // Rounds `round - 1 .. round - 1 - AHEAD`'s symbols, in flight while round `round` is coded.
    let mut ahead: [u32; AHEAD] = core::array::from_fn(|k| (rounds - 1).checked_sub(k + 1).map_or(0, full));
    code_round(rounds - 1, last(rounds - 1), true);
    for round in (0..rounds - 1).rev() {
        let word = ahead[0];
        ahead =
            core::array::from_fn(
                |k| if k + 1 < AHEAD { ahead[k + 1] } else { round.checked_sub(AHEAD).map_or(0, full) },
            );
        code_round(round, word, false);
    }
    (words, state)
}

/// A sub-block in its warp's stage from byte `at` on, a [`Source`] to copy out.
struct Stage {
    shared: SharedBytes,
    at: usize,
}

impl Source for Stage {
    #[inline(always)]
    fn skew(&self) -> usize {
        self.at % 4
    }

    #[inline(always)]
    unsafe fn byte(&self, i: usize) -> u8 {
        unsafe { self.shared.u8((self.at + i) as u32) }
    }

    #[inline(always)]
    unsafe fn word(&self, k: usize) -> u32 {
        unsafe { self.shared.u32((self.at - self.skew() + 4 * k) as u32) }
    }
}

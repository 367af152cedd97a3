//! Compressing a chunk with a block of [`BLOCK_WARPS`](super::BLOCK_WARPS) warps: the symbols counted and scaled to
//! the table's frequencies, then each warp codes its own sub-blocks twice, once to count their
//! words and, the chunk's layout known, once to write them.

use super::{BITMAP_LEN, Tables, set_symbols};
use crate::block::{Block, parts_len};
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::ans::{
    DataType, HEADER_LEN, LANES, LOWER, MAX_CHUNK_SIZE, Options, RUN, STORED, TOTAL, VERSION, encode,
    max_compressed_size, raw_byte_source, raw_bytes, reciprocal, steps, sub_block, sub_blocks, symbol_index, symbols,
};

/// The `width`-th byte of each value: value `i`'s symbol.
#[inline(always)]
unsafe fn symbol_at(input: *const u8, i: usize, data_type: DataType) -> u8 {
    unsafe { *input.add(i * data_type.width() + data_type.width() - 1) }
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
    for i in (thread..count).step_by(threads) {
        unsafe { crate::raw::shared_add(tables.symbols.add(symbol_at(input, i, data_type) as usize), 1) };
    }
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
        for (j, &freq) in freqs.iter().enumerate() {
            let reciprocal = if freq > 0 { reciprocal(freq) } else { 0 };
            unsafe { *tables.reciprocals.add(8 * lane + j) = reciprocal };
        }
    }
    block.sync_threads();
    // Each sub-block's words, counted by a first coding; the chunk is stored if no smaller.
    let blocks = sub_blocks(VERSION, data_type, count);
    let word_counts = tables.word_counts;
    let width = data_type.width() as u32;
    for b in (warp_index..blocks).step_by(warps) {
        let mut encoder = SubBlockEncoder::new(sub_block(VERSION, data_type, b, count));
        unsafe { encoder.code(warp, &tables, input, width, |encoder, word| encoder.words += word.is_some() as u32) };
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
        unsafe { encoder.code(warp, &tables, input, width, emit) };
        let states = unsafe { out.add(at + 4 * lane) };
        for k in 0..4 {
            unsafe { *states.add(k) = (encoder.state >> (8 * k)) as u8 };
        }
        at += span(b, (b + warps).min(blocks));
    }
    let end = size - (n - count);
    let width = data_type.width();
    if width > 1 {
        for i in (thread..raw_bytes(count, width)).step_by(threads) {
            unsafe { *out.add(end + i) = *input.add(raw_byte_source(i, width)) };
        }
    }
    let raw = count * width;
    copy(unsafe { input.add(raw) }, unsafe { out.add(size - (n - raw)) }, n - raw);
    Ok(size)
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
    /// one). A round's four symbols and their table entries are loaded before its steps, so that
    /// their latencies overlap rather than each step waiting on its own.
    #[inline(always)]
    unsafe fn code<W: Warp>(
        &mut self,
        warp: &W,
        tables: &Tables,
        input: *const u8,
        width: u32,
        mut emit: impl FnMut(&mut Self, Option<u16>),
    ) {
        let lane = warp.lane() as usize;
        for round in (0..steps(VERSION, self.len as usize) / RUN).rev() {
            let entries: [Option<_>; RUN] = core::array::from_fn(|j| {
                let i = symbol_index(VERSION, round * RUN + j, lane) as u32;
                (i < self.len).then(|| unsafe {
                    let s = *input.add(((self.first + i) * width + width - 1) as usize) as u32;
                    (tables.symbol(s), tables.reciprocal(s))
                })
            });
            // Written out, not looped, so that the entries stay in registers.
            let [a, b, c, d] = entries;
            let mut step = |entry: Option<_>| {
                let (word, state) = match entry {
                    Some((symbol, reciprocal)) => encode(self.state, symbol, reciprocal),
                    None => (None, self.state),
                };
                self.state = state;
                emit(self, word);
            };
            step(d);
            step(c);
            step(b);
            step(a);
        }
    }
}

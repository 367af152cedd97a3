//! ANS on the GPU: a warp per chunk, its 32 lanes the format's 32 interleaved rANS states; the
//! format crate's bytes written and read (`ferrocomp_format::ans`).
//!
//! Decoding, each step decodes 32 symbols at once: every lane finds its symbol in the table (in the
//! warp's shared memory) and the lanes whose state falls low take the next words in lane order, a
//! ballot's prefix giving each its word. Compressing, the lanes count the symbols (shared-memory
//! atomics, equal symbols of a step merged first), scale the counts to the table with warp
//! reductions, then code each sub-block twice, last symbol first: once to count its words (the
//! chunk is stored if the coding would not be smaller), once to write them where decoding reads
//! them (the ballot of the lanes that emit, counted from the end).

use crate::warp::{WARP_SIZE, Warp};
use core::sync::atomic::{AtomicU32, Ordering};
use ferrocomp_format::Status;
use ferrocomp_format::ans::{
    DataType, HEADER_LEN, LANES, LOWER, MAX_CHUNK_SIZE, Options, PROB_BITS, STORED, SUB_BLOCK, Symbol, TOTAL, VERSION,
    encode, max_compressed_size, read_header, sub_blocks, symbols,
};

/// Warps per block of both kernels.
pub const WARPS: u32 = 4;
/// Shared memory of each warp: each symbol's frequency and cumulative frequency (u32), then, to
/// decode, each slot's symbol (u8), or, to compress, each sub-block's word count (u16).
pub const SHARED_BYTES_PER_WARP: usize = 4 * 256 + 2 * (MAX_CHUNK_SIZE / SUB_BLOCK);
const _: () = assert!(SHARED_BYTES_PER_WARP >= 4 * 256 + TOTAL as usize && SHARED_BYTES_PER_WARP.is_multiple_of(8));
/// Blocks of either kernel an SM holds at once: 32 warps (96 KiB of shared memory).
pub const BLOCKS_PER_SM: u32 = 32 / WARPS;
/// Bytes of the symbol bitmap.
const BITMAP_LEN: usize = 32;

/// The warp's tables in shared memory.
struct Tables {
    /// Symbol `s`'s frequency (low 16 bits) and cumulative frequency (high 16).
    symbols: *mut u32,
    /// After `symbols`: each slot's symbol (decoding) or each sub-block's word count (coding).
    rest: *mut u8,
}

impl Tables {
    fn new(shared: *mut u32) -> Self {
        Self { symbols: shared, rest: shared.wrapping_add(256) as *mut u8 }
    }

    #[inline(always)]
    unsafe fn symbol(&self, s: usize) -> Symbol {
        let entry = unsafe { crate::raw::shared_u32(self.symbols.add(s)) };
        Symbol { freq: entry & 0xFFFF, cum: entry >> 16 }
    }
}

/// The `width`-th byte of each value: value `i`'s symbol.
#[inline(always)]
unsafe fn symbol_at(input: *const u8, i: usize, data_type: DataType) -> u8 {
    unsafe { *input.add(i * data_type.width() + data_type.width() - 1) }
}

/// Copies `len` bytes from `from` to `to`, a byte a lane a step.
#[inline(always)]
fn copy<W: Warp>(warp: &W, from: *const u8, to: *mut u8, len: usize) {
    warp.for_each_strided(len, |i| unsafe { *to.add(i) = *from.add(i) });
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

/// Writes lane `l`'s symbols' frequencies and cumulative frequencies (symbols `8l .. 8l + 8`)
/// into the shared table; returns how many symbols have a frequency before and in this lane.
#[inline(always)]
unsafe fn set_symbols<W: Warp>(warp: &W, tables: &Tables, freqs: [u32; 8]) -> (u32, u32) {
    let lane = warp.lane() as usize;
    let own: u32 = freqs.iter().sum();
    let mut cum = crate::lz77::scan_add(warp, own) - own;
    for (j, &freq) in freqs.iter().enumerate() {
        unsafe { *tables.symbols.add(8 * lane + j) = freq | cum << 16 };
        cum += freq;
    }
    let present = freqs.iter().filter(|&&f| f > 0).count() as u32;
    (crate::lz77::scan_add(warp, present) - present, present)
}

/// Compresses the `n` bytes at `input` with `options` into `out` (room for `capacity` bytes), as
/// `ferrocomp_format::ans::compress`; returns the compressed size (in every lane).
///
/// # Safety
/// `input` must be readable for `n` bytes, `out` writable for `capacity` bytes and `shared` for
/// [`SHARED_BYTES_PER_WARP`] (this warp's alone, aligned to 4).
pub unsafe fn compress_chunk<W: Warp>(
    warp: &W,
    input: *const u8,
    n: usize,
    options: &Options,
    shared: *mut u32,
    out: *mut u8,
    capacity: usize,
) -> Result<usize, Status> {
    if n > MAX_CHUNK_SIZE {
        return Err(Status::ChunkTooLarge);
    }
    if capacity < max_compressed_size(n) {
        return Err(Status::OutputTooSmall);
    }
    let (data_type, lane) = (options.data_type, warp.lane() as usize);
    let tables = Tables::new(shared);
    let count = symbols(n, data_type);
    // The symbols' counts, equal symbols of a step added once.
    warp.for_each_strided(256, |s| unsafe { *tables.symbols.add(s) = 0 });
    warp.sync();
    let mut step = 0;
    while step < count {
        let i = step + lane;
        let s = if i < count { unsafe { symbol_at(input, i, data_type) as u32 } } else { 256 + lane as u32 };
        let same = warp.match_any(s);
        if i < count && same.trailing_zeros() as usize == lane {
            unsafe {
                AtomicU32::from_ptr(tables.symbols.add(s as usize)).fetch_add(same.count_ones(), Ordering::Relaxed)
            };
        }
        step += WARP_SIZE as usize;
    }
    warp.sync();
    let counts: [u32; 8] =
        core::array::from_fn(|j| unsafe { crate::raw::shared_u32(tables.symbols.add(8 * lane + j)) });
    warp.sync(); // counted before the table overwrites them
    let freqs = normalize(warp, counts, count);
    let (before, present) = unsafe { set_symbols(warp, &tables, freqs) };
    let table_len = BITMAP_LEN as u32 + 2 * warp.shuffle(before + present, WARP_SIZE - 1);
    warp.sync();
    // Each sub-block's words, counted by a first coding; the chunk is stored if no smaller.
    let blocks = sub_blocks(count);
    let word_counts = tables.rest as *mut u16;
    let sizes_at = HEADER_LEN + table_len as usize;
    let mut size = sizes_at + 2 * blocks + (n - count);
    for b in 0..blocks {
        let words = unsafe { code_sub_block(warp, &tables, input, b, count, data_type, None) };
        if lane == 0 {
            unsafe { *word_counts.add(b) = words as u16 };
        }
        size += 4 * LANES + 2 * words;
    }
    warp.sync();
    let header = |flags: u8, k: usize| match k {
        0 => VERSION,
        1 => data_type as u8,
        2 => flags,
        3 => 0,
        _ => (n >> (8 * (k - 4))) as u8,
    };
    if size >= max_compressed_size(n) {
        if lane < HEADER_LEN {
            unsafe { *out.add(lane) = header(STORED, lane) };
        }
        copy(warp, input, unsafe { out.add(HEADER_LEN) }, n);
        return Ok(max_compressed_size(n));
    }
    if lane < HEADER_LEN {
        unsafe { *out.add(lane) = header(0, lane) };
    }
    // The table: lane `l` has byte `l` of the bitmap and its symbols' frequencies.
    let bitmap = freqs.iter().enumerate().fold(0u8, |bits, (j, &f)| bits | ((f > 0) as u8) << j);
    unsafe { *out.add(HEADER_LEN + lane) = bitmap };
    let mut at = HEADER_LEN + BITMAP_LEN + 2 * before as usize;
    for &freq in freqs.iter().filter(|&&f| f > 0) {
        unsafe { (*out.add(at), *out.add(at + 1)) = (freq as u8, (freq >> 8) as u8) };
        at += 2;
    }
    let mut at = sizes_at + 2 * blocks;
    for b in 0..blocks {
        let words = unsafe { *word_counts.add(b) } as usize;
        if lane == 0 {
            unsafe { (*out.add(sizes_at + 2 * b), *out.add(sizes_at + 2 * b + 1)) = (words as u8, (words >> 8) as u8) };
        }
        unsafe { code_sub_block(warp, &tables, input, b, count, data_type, Some((out.add(at), words))) };
        at += 4 * LANES + 2 * words;
    }
    if data_type == DataType::Float16 {
        warp.for_each_strided(count, |i| unsafe { *out.add(at + i) = *input.add(2 * i) });
        at += count;
    }
    copy(warp, unsafe { input.add(count * data_type.width()) }, unsafe { out.add(at) }, n - count * data_type.width());
    Ok(size)
}

/// Codes sub-block `b` (of a chunk of `count` symbols), lane `l` its symbols `l` apart by 32,
/// last first; returns its word count. With `into` (where its states and `words` words go),
/// writes them, each word where decoding reads it.
#[inline(always)]
unsafe fn code_sub_block<W: Warp>(
    warp: &W,
    tables: &Tables,
    input: *const u8,
    b: usize,
    count: usize,
    data_type: DataType,
    into: Option<(*mut u8, usize)>,
) -> usize {
    let lane = warp.lane() as usize;
    let (start, len) = (b * SUB_BLOCK, SUB_BLOCK.min(count - b * SUB_BLOCK));
    let mut state = LOWER;
    let mut emitted = 0;
    let above = !0u32 << lane << 1; // the lanes after this one (emitting before it)
    let mut step = len.div_ceil(LANES);
    while step > 0 {
        step -= 1;
        let i = step * LANES + lane;
        let (word, next) = if i < len {
            encode(state, unsafe { tables.symbol(symbol_at(input, start + i, data_type) as usize) })
        } else {
            (None, state)
        };
        state = next;
        let emitting = warp.ballot(word.is_some());
        if let (Some((block, words)), Some(word)) = (into, word) {
            let at = words - 1 - (emitted + (emitting & above).count_ones() as usize);
            let word_at = unsafe { block.add(4 * LANES + 2 * at) };
            unsafe { (*word_at, *word_at.add(1)) = (word as u8, (word >> 8) as u8) };
        }
        emitted += emitting.count_ones() as usize;
    }
    if let Some((block, _)) = into {
        for k in 0..4 {
            unsafe { *block.add(4 * lane + k) = (state >> (8 * k)) as u8 };
        }
    }
    emitted
}

/// Decompresses the chunk of `len` bytes at `input` into `out` (room for `capacity` bytes), as
/// `ferrocomp_format::ans::decompress`: the same size or status, in every lane.
///
/// # Safety
/// `input` must be readable for `len` bytes, `out` writable for `capacity` bytes and `shared` for
/// [`SHARED_BYTES_PER_WARP`] (this warp's alone, aligned to 4), neither written by anyone else
/// meanwhile.
pub unsafe fn decompress_chunk<W: Warp>(
    warp: &W,
    input: *const u8,
    len: usize,
    out: *mut u8,
    capacity: usize,
    shared: *mut u32,
) -> Result<usize, Status> {
    let bytes = unsafe { crate::raw::bytes(input, len) };
    let (data_type, stored, n) = read_header(bytes)?;
    if n > capacity {
        return Err(Status::OutputTooSmall);
    }
    if stored {
        if len != HEADER_LEN + n {
            return Err(if len < HEADER_LEN + n { Status::Truncated } else { Status::Malformed });
        }
        copy(warp, unsafe { input.add(HEADER_LEN) }, out, n);
        return Ok(n);
    }
    let tables = Tables::new(shared);
    let table_len = unsafe { read_table(warp, &tables, &bytes[HEADER_LEN..])? };
    let count = symbols(n, data_type);
    let blocks = sub_blocks(count);
    let sizes_at = HEADER_LEN + table_len;
    if sizes_at + 2 * blocks > len {
        return Err(Status::Truncated);
    }
    let mut at = sizes_at + 2 * blocks;
    for b in 0..blocks {
        let words = u16::from_le_bytes([bytes[sizes_at + 2 * b], bytes[sizes_at + 2 * b + 1]]) as usize;
        let block = bytes.get(at..at + 4 * LANES + 2 * words).ok_or(Status::Truncated)?;
        unsafe { decode_sub_block(warp, &tables, block, words, b, count, data_type, out)? };
        at += block.len();
    }
    let raw = n - count;
    if len != at + raw {
        return Err(if len < at + raw { Status::Truncated } else { Status::Malformed });
    }
    if data_type == DataType::Float16 {
        warp.for_each_strided(count, |i| unsafe { *out.add(2 * i) = bytes[at + i] });
    }
    let tail = n - count * data_type.width();
    copy(warp, unsafe { input.add(len - tail) }, unsafe { out.add(n - tail) }, tail);
    Ok(n)
}

/// Reads the table at the start of `bytes` into the warp's tables, checked as
/// `ferrocomp_format::ans::Table::read`; returns its length. Lane `l` takes byte `l` of the
/// bitmap, symbols `8l .. 8l + 8`.
#[inline(always)]
unsafe fn read_table<W: Warp>(warp: &W, tables: &Tables, bytes: &[u8]) -> Result<usize, Status> {
    let lane = warp.lane() as usize;
    if bytes.len() < BITMAP_LEN {
        return Err(Status::Truncated);
    }
    let bitmap = bytes[lane];
    let set = bitmap.count_ones();
    let before = crate::lz77::scan_add(warp, set) - set;
    // This lane's symbols' frequencies; the first of its that is missing or 0, if any.
    let mut freqs = [0u32; 8];
    let mut status = Status::Success;
    let mut k = before as usize;
    for (j, freq) in freqs.iter_mut().enumerate() {
        if bitmap >> j & 1 == 1 {
            let at = BITMAP_LEN + 2 * k;
            match bytes.get(at..at + 2) {
                Some(pair) => *freq = u16::from_le_bytes([pair[0], pair[1]]) as u32,
                None if status == Status::Success => status = Status::Truncated,
                None => {}
            }
            if *freq == 0 && status == Status::Success {
                status = Status::Malformed;
            }
            k += 1;
        }
    }
    let failing = warp.ballot(status != Status::Success);
    if failing != 0 {
        return Err(Status::from_code(warp.shuffle(status as u32, failing.trailing_zeros())));
    }
    if warp.reduce_add(freqs.iter().sum()) != TOTAL {
        return Err(Status::Malformed);
    }
    unsafe { set_symbols(warp, tables, freqs) };
    // Each symbol's slots.
    let slots = tables.rest;
    let mut cum = unsafe { tables.symbol(8 * lane).cum };
    for (j, &freq) in freqs.iter().enumerate() {
        for slot in cum..cum + freq {
            unsafe { *slots.add(slot as usize) = (8 * lane + j) as u8 };
        }
        cum += freq;
    }
    warp.sync();
    Ok(BITMAP_LEN + 2 * warp.shuffle(before + set, WARP_SIZE - 1) as usize)
}

/// Decodes sub-block `b` (`block`: its states, then its `words` words) into its symbols' places
/// in `out`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn decode_sub_block<W: Warp>(
    warp: &W,
    tables: &Tables,
    block: &[u8],
    words: usize,
    b: usize,
    count: usize,
    data_type: DataType,
    out: *mut u8,
) -> Result<(), Status> {
    let lane = warp.lane() as usize;
    let (start, len) = (b * SUB_BLOCK, SUB_BLOCK.min(count - b * SUB_BLOCK));
    let mut state =
        u32::from_le_bytes([block[4 * lane], block[4 * lane + 1], block[4 * lane + 2], block[4 * lane + 3]]);
    if warp.ballot(state < LOWER) != 0 {
        return Err(Status::Malformed);
    }
    // The next 64 words, two a lane, loaded 32 words ahead of their use; past the last, 0 (a
    // refill there leaves the words miscounted, caught at the end).
    let (word_bytes, words32) = (block[4 * LANES..].as_ptr(), words as u32);
    let word = |k: u32| {
        if k < words32 {
            unsafe { *word_bytes.add(2 * k as usize) as u32 | (*word_bytes.add(2 * k as usize + 1) as u32) << 8 }
        } else {
            0
        }
    };
    let lane = lane as u32;
    let (mut base, mut low, mut high) = (0u32, word(lane), word(LANES as u32 + lane));
    let below = (1u32 << lane) - 1;
    let (width, len) = (data_type.width(), len as u32);
    let symbols_out = unsafe { out.add(start * width + width - 1) };
    let (mut next, mut step) = (0u32, 0u32);
    while step < len {
        let i = step + lane;
        let active = i < len;
        let (symbol, mut x) = if active {
            let slot = state & (TOTAL - 1);
            let slots = tables.rest as *const u32;
            let symbol = (unsafe { crate::raw::shared_u32(slots.add(slot as usize / 4)) } >> (8 * (slot % 4))) as u8;
            let Symbol { freq, cum } = unsafe { tables.symbol(symbol as usize) };
            (symbol, freq * (state >> PROB_BITS) + slot - cum)
        } else {
            (0, state)
        };
        let refilling = warp.ballot(active && x < LOWER);
        // Word k is in the window: fewer than 32 were taken since it was last moved.
        let within = next + (refilling & below).count_ones() - base;
        let (from_low, from_high) = (warp.shuffle(low, within & 31), warp.shuffle(high, within & 31));
        if refilling >> lane & 1 == 1 {
            x = x << 16 | if within < 32 { from_low } else { from_high };
        }
        next += refilling.count_ones();
        if next - base >= LANES as u32 {
            (base, low, high) = (base + LANES as u32, high, word(base + 2 * LANES as u32 + lane));
        }
        if active {
            state = x;
            unsafe { *symbols_out.add(i as usize * width) = symbol };
        }
        step += WARP_SIZE;
    }
    let next = next as usize;
    if next != words || warp.ballot(state != LOWER) != 0 {
        return Err(Status::Malformed);
    }
    Ok(())
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use crate::batch::{Chunk, ChunkKernels, Lanes, warp_shared};
    use crate::gpu::HardwareWarp;
    use ferrocomp_format::BatchArgs;
    use ferrocomp_format::ans;

    /// ANS's kernels: a warp per chunk both ways, a thread per chunk for the sizes.
    pub struct Ans;

    impl ChunkKernels for Ans {
        const COMPRESS: Lanes = Lanes::Warp;
        const DECOMPRESS: Lanes = Lanes::Warp;
        const SIZES: Lanes = Lanes::Thread;

        unsafe fn compress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let data_type = ans::DataType::from_id(args.options as u8).ok_or(Status::Unsupported)?;
            let shared = warp_shared::<u32>(SHARED_BYTES_PER_WARP / 4);
            let options = Options { data_type };
            unsafe {
                compress_chunk(warp, chunk.input, chunk.input_len, &options, shared, chunk.output, chunk.capacity)
            }
        }

        unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            let shared = warp_shared::<u32>(SHARED_BYTES_PER_WARP / 4);
            unsafe { decompress_chunk(warp, chunk.input, chunk.input_len, chunk.output, chunk.capacity, shared) }
        }

        unsafe fn decompressed_size(_: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            ans::decompressed_size(unsafe { chunk.input() })
        }
    }

    crate::batch_kernels!(Ans: ans_compress, ans_decompress, ans_decompressed_sizes);
}

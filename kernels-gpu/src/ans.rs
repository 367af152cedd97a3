//! ANS on the GPU: a warp per chunk, its 32 lanes the format's 32 interleaved rANS states; the
//! format crate's bytes written and read (`ferrocomp_format::ans`).
//!
//! Decoding, each step decodes 32 symbols at once: every lane finds its symbol in the table (in the
//! warp's shared memory) and the lanes whose state falls low take the next words in lane order, a
//! ballot's prefix giving each its word. Compressing, the lanes count the symbols (shared-memory
//! atomics), scale the counts to the table with warp reductions, then code each sub-block twice,
//! last symbol first: once to count its words (the chunk is stored if the coding would not be
//! smaller), once to write them where decoding reads them (the ballot of the lanes that emit,
//! counted from the end); dividing by a frequency is a multiply by its reciprocal.
//!
//! Both ways a warp works on four sub-blocks at once, each step stage by stage across the four, so
//! that one's table lookups and shuffles are in flight while the others' issue: a warp's step is a
//! chain of dependent latencies, and one chain a warp left the SM waiting (measured on an H200,
//! text: decoding at 270 GB/s a sub-block at a time, 262 four a step each in turn with branches
//! between them, 324 stage by stage).

use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::ans::{
    DataType, HEADER_LEN, LANES, LOWER, MAX_CHUNK_SIZE, Options, PROB_BITS, STORED, SUB_BLOCK, Symbol, TOTAL, VERSION,
    encode, max_compressed_size, read_header, reciprocal, sub_blocks, symbols,
};

/// Warps per block of both kernels.
pub const WARPS: u32 = 4;
/// Shared memory of each warp: each symbol's frequency and cumulative frequency (u32) and its
/// frequency's reciprocal (u32), then, to decode, each slot's symbol (u8), or, to compress, each
/// sub-block's word count (u16).
pub const SHARED_BYTES_PER_WARP: usize = 2 * 4 * 256 + 2 * (MAX_CHUNK_SIZE / SUB_BLOCK);
const _: () = assert!(SHARED_BYTES_PER_WARP >= 2 * 4 * 256 + TOTAL as usize && SHARED_BYTES_PER_WARP.is_multiple_of(8));
/// Blocks of either kernel an SM holds at once: 32 warps (128 KiB of shared memory). Fewer, with
/// the registers to hold the four sub-blocks unspilled, decoded no faster (measured on an H200).
pub const BLOCKS_PER_SM: u32 = 32 / WARPS;
/// Bytes of the symbol bitmap.
const BITMAP_LEN: usize = 32;

/// The warp's tables in shared memory.
struct Tables {
    /// Symbol `s`'s frequency (low 16 bits) and cumulative frequency (high 16).
    symbols: *mut u32,
    /// Coding: the [`reciprocal`] of each symbol's frequency.
    reciprocals: *mut u32,
    /// Each slot's symbol (decoding) or each sub-block's word count (coding).
    rest: *mut u8,
    /// The three, to read.
    read: crate::raw::SharedBytes,
}

/// Where [`Tables`]' parts start, in bytes.
const RECIPROCALS_AT: u32 = 4 * 256;
const REST_AT: u32 = 2 * 4 * 256;

impl Tables {
    fn new(shared: *mut u32) -> Self {
        Self {
            symbols: shared,
            reciprocals: shared.wrapping_byte_add(RECIPROCALS_AT as usize),
            rest: shared.wrapping_byte_add(REST_AT as usize) as *mut u8,
            read: unsafe { crate::raw::SharedBytes::new(shared as *const u8) },
        }
    }

    #[inline(always)]
    unsafe fn symbol(&self, s: u32) -> Symbol {
        let entry = unsafe { self.read.u32(4 * s) };
        Symbol { freq: entry & 0xFFFF, cum: entry >> 16 }
    }

    #[inline(always)]
    unsafe fn reciprocal(&self, s: u32) -> u32 {
        unsafe { self.read.u32(RECIPROCALS_AT + 4 * s) }
    }

    /// Decoding: slot `slot`'s symbol.
    #[inline(always)]
    unsafe fn slot(&self, slot: u32) -> u32 {
        unsafe { self.read.u8(REST_AT + slot) as u32 }
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
    // The symbols' counts.
    warp.for_each_strided(256, |s| unsafe { *tables.symbols.add(s) = 0 });
    warp.sync();
    warp.for_each_strided(count, |i| unsafe {
        crate::raw::shared_add(tables.symbols.add(symbol_at(input, i, data_type) as usize), 1)
    });
    warp.sync();
    let counts: [u32; 8] =
        core::array::from_fn(|j| unsafe { crate::raw::shared_u32(tables.symbols.add(8 * lane + j)) });
    warp.sync(); // counted before the table overwrites them
    let freqs = normalize(warp, counts, count);
    let (before, present) = unsafe { set_symbols(warp, &tables, freqs) };
    let table_len = BITMAP_LEN as u32 + 2 * warp.shuffle(before + present, WARP_SIZE - 1);
    warp.sync();
    for (j, &freq) in freqs.iter().enumerate() {
        let reciprocal = if freq > 0 { reciprocal(freq) } else { 0 };
        unsafe { *tables.reciprocals.add(8 * lane + j) = reciprocal };
    }
    warp.sync();
    // Each sub-block's words, counted by a first coding; the chunk is stored if no smaller.
    let blocks = sub_blocks(count);
    let word_counts = tables.rest as *mut u16;
    let sizes_at = HEADER_LEN + table_len as usize;
    let mut size = sizes_at + 2 * blocks + (n - count);
    let width = data_type.width() as u32;
    for first in (0..blocks).step_by(INTERLEAVED) {
        let mut group = group_of(|k| SubBlockEncoder::new(first + k, count));
        unsafe {
            code_group(warp, &tables, input, width, &mut group, |encoder, word| encoder.words += word.is_some() as u32)
        };
        let mut count_words = |k: usize, encoder: &SubBlockEncoder| {
            let words = warp.reduce_add(encoder.words) as usize;
            if first + k < blocks {
                if lane == 0 {
                    unsafe { *word_counts.add(first + k) = words as u16 };
                }
                size += 4 * LANES + 2 * words;
            }
        };
        let [a, b, c, d] = &group;
        count_words(0, a);
        count_words(1, b);
        count_words(2, c);
        count_words(3, d);
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
    // Each sub-block coded again, each word written where decoding reads it: the e-th emitted
    // (the lanes after this one emitting before it in a step) the (words - 1 - e)-th read.
    warp.for_each_strided(2 * blocks, |k| unsafe { *out.add(sizes_at + k) = *(word_counts as *const u8).add(k) });
    let mut at = sizes_at + 2 * blocks;
    let above = !0u32 << lane << 1;
    for first in (0..blocks).step_by(INTERLEAVED) {
        let mut group = group_of(|k| {
            let mut encoder = SubBlockEncoder::new(first + k, count);
            if first + k < blocks {
                encoder.word_count = unsafe { *word_counts.add(first + k) } as u32;
                encoder.into = at as u32;
                at += 4 * LANES + 2 * encoder.word_count as usize;
            }
            encoder
        });
        let emit = |encoder: &mut SubBlockEncoder, word: Option<u16>| {
            let emitting = warp.ballot(word.is_some());
            if let Some(word) = word {
                let read = encoder.word_count - 1 - (encoder.words + (emitting & above).count_ones());
                let word_at = unsafe { out.add((encoder.into + 4 * LANES as u32 + 2 * read) as usize) };
                unsafe { (*word_at, *word_at.add(1)) = (word as u8, (word >> 8) as u8) };
            }
            encoder.words += emitting.count_ones();
        };
        unsafe { code_group(warp, &tables, input, width, &mut group, emit) };
        let write_states = |encoder: &SubBlockEncoder| {
            if encoder.len > 0 {
                let states = unsafe { out.add(encoder.into as usize + 4 * lane) };
                for k in 0..4 {
                    unsafe { *states.add(k) = (encoder.state >> (8 * k)) as u8 };
                }
            }
        };
        let [a, b, c, d] = &group;
        write_states(a);
        write_states(b);
        write_states(c);
        write_states(d);
    }
    if data_type == DataType::Float16 {
        warp.for_each_strided(count, |i| unsafe { *out.add(at + i) = *input.add(2 * i) });
        at += count;
    }
    copy(warp, unsafe { input.add(count * data_type.width()) }, unsafe { out.add(at) }, n - count * data_type.width());
    Ok(size)
}

/// A lane's share of coding one sub-block, last symbol first: lane `l` codes its symbols `l`
/// apart by 32 into its state.
struct SubBlockEncoder {
    /// Symbols in the sub-block (0 past the chunk's last), and the chunk's index of its first.
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
    /// Ready to code sub-block `b` of a chunk of `count` symbols.
    #[inline(always)]
    fn new(b: usize, count: usize) -> Self {
        let (first, len) = (b * SUB_BLOCK, SUB_BLOCK.min(count.saturating_sub(b * SUB_BLOCK)));
        Self { len: len as u32, first: first as u32, state: LOWER, words: 0, into: 0, word_count: 0 }
    }
}

/// Codes the sub-blocks of `group`, last step first, giving `emit` each member's word of each
/// step (if it emits one), member by member. Each step goes stage by stage across the members: a
/// warp issues in order, waiting at a load's first use, so one member's step after another's
/// would wait out each latency in turn.
#[inline(always)]
unsafe fn code_group<W: Warp>(
    warp: &W,
    tables: &Tables,
    input: *const u8,
    width: u32,
    group: &mut [SubBlockEncoder; INTERLEAVED],
    mut emit: impl FnMut(&mut SubBlockEncoder, Option<u16>),
) {
    let lane = warp.lane();
    for step in (0..group[0].len.div_ceil(WARP_SIZE)).rev().map(|k| k * WARP_SIZE) {
        let [a, b, c, d] = &mut *group;
        let symbols = each([&*a, &*b, &*c, &*d], |encoder| {
            let i = step + lane;
            let at = (encoder.first + i) * width + width - 1;
            (i < encoder.len).then(|| unsafe { *input.add(at as usize) as u32 })
        });
        let entries = each(symbols, |s| s.map(|s| unsafe { (tables.symbol(s), tables.reciprocal(s)) }));
        let states = [a.state, b.state, c.state, d.state];
        let [ca, cb, cc, cd] = each([0, 1, 2, 3], |k| match entries[k] {
            Some((symbol, reciprocal)) => encode(states[k], symbol, reciprocal),
            None => (None, states[k]),
        });
        let mut finish = |encoder: &mut SubBlockEncoder, (word, state)| {
            encoder.state = state;
            emit(encoder, word);
        };
        finish(a, ca);
        finish(b, cb);
        finish(c, cc);
        finish(d, cd);
    }
}

/// `f` of each of the four `values`, called in turn (written out, not looped, so that what it
/// reads and writes stays in registers).
#[inline(always)]
fn each<T, U>(values: [T; INTERLEAVED], mut f: impl FnMut(T) -> U) -> [U; INTERLEAVED] {
    let [a, b, c, d] = values;
    [f(a), f(b), f(c), f(d)]
}

/// A group of sub-blocks' coders, `make(k)` the `k`-th: built member by member (an array
/// literal, not a loop), so that they stay in registers.
#[inline(always)]
fn group_of<T>(mut make: impl FnMut(usize) -> T) -> [T; INTERLEAVED] {
    [make(0), make(1), make(2), make(3)]
}

/// Decodes symbols `step .. step + 32` (those there are) of each sub-block of `group`, lane `l`
/// symbol `step + l`, into `out`, the chunk's symbols `width` bytes apart: stage by stage across
/// the members, as [`code_group`] codes. `WHOLE`: the step is whole in every member with symbols,
/// so no lane tests its symbol, and members without symbols compute unheeded (their states and
/// words are never checked); testing instead cost 4% of decoding's speed.
#[inline(always)]
unsafe fn decode_step<W: Warp, const WHOLE: bool>(
    warp: &W,
    tables: &Tables,
    chunk: &[u8],
    out: *mut u8,
    width: u32,
    group: &mut [SubBlockDecoder; INTERLEAVED],
    step: u32,
) {
    let lane = warp.lane();
    let [a, b, c, d] = group;
    let decoders = [a, b, c, d];
    let active = each([0, 1, 2, 3], |k| WHOLE || step + lane < decoders[k].len);
    let slots = each([0, 1, 2, 3], |k| decoders[k].state & (TOTAL - 1));
    let symbols = each(slots, |slot| unsafe { tables.slot(slot) });
    let entries = each(symbols, |symbol| unsafe { tables.symbol(symbol) });
    let mut xs = each([0, 1, 2, 3], |k| entries[k].freq * (decoders[k].state >> PROB_BITS) + slots[k] - entries[k].cum);
    let refilling = each([0, 1, 2, 3], |k| warp.ballot(active[k] && xs[k] < LOWER));
    let below = (1u32 << lane) - 1;
    let within = each([0, 1, 2, 3], |k| decoders[k].taken + (refilling[k] & below).count_ones());
    let lows = each([0, 1, 2, 3], |k| warp.shuffle(decoders[k].low, within[k] & 31));
    let highs = each([0, 1, 2, 3], |k| warp.shuffle(decoders[k].high, within[k] & 31));
    for k in 0..INTERLEAVED {
        if refilling[k] >> lane & 1 == 1 {
            xs[k] = xs[k] << 16 | if within[k] < 32 { lows[k] } else { highs[k] };
        }
    }
    let finish = |k: usize, decoder: &mut SubBlockDecoder| {
        if active[k] {
            decoder.state = xs[k];
            if decoder.len > 0 {
                unsafe { *out.add(((decoder.first + step + lane) * width) as usize) = symbols[k] as u8 };
            }
        }
        decoder.take(chunk, lane, refilling[k].count_ones());
    };
    let [a, b, c, d] = decoders;
    finish(0, a);
    finish(1, b);
    finish(2, c);
    finish(3, d);
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
    let sizes = bytes.get(sizes_at..sizes_at + 2 * blocks).ok_or(Status::Truncated)?;
    let mut at = sizes_at + 2 * blocks;
    let width = data_type.width();
    let symbols_out = unsafe { out.add(width - 1) };
    for first in (0..blocks).step_by(INTERLEAVED) {
        // The group's sub-blocks, each checked as the scalar decoder reaches it: the first that
        // fails, and those after it, decode nothing.
        let mut failure = None;
        let mut decoders = group_of(|k| {
            let b = first + k;
            if failure.is_some() || b >= blocks {
                return SubBlockDecoder::idle();
            }
            let words = u16::from_le_bytes([sizes[2 * b], sizes[2 * b + 1]]) as usize;
            let end = at + 4 * LANES + 2 * words;
            let decoder = if end > len {
                Err(Status::Truncated)
            } else {
                SubBlockDecoder::new(warp, bytes, at, words, b * SUB_BLOCK, SUB_BLOCK.min(count - b * SUB_BLOCK))
            };
            at = end;
            decoder.unwrap_or_else(|status| {
                failure = Some(status);
                SubBlockDecoder::idle()
            })
        });
        // The steps whole in every sub-block with symbols, then the rest of the first, the longest.
        let [a, b, c, d] = &decoders;
        let live = |decoder: &SubBlockDecoder| if decoder.len > 0 { decoder.len } else { u32::MAX };
        let whole = match live(a).min(live(b)).min(live(c)).min(live(d)) {
            u32::MAX => 0,
            len => len / WARP_SIZE,
        };
        let (width, group) = (width as u32, &mut decoders);
        for step in (0..whole).map(|k| k * WARP_SIZE) {
            unsafe { decode_step::<W, true>(warp, &tables, bytes, symbols_out, width, group, step) };
        }
        for step in (whole..group[0].len.div_ceil(WARP_SIZE)).map(|k| k * WARP_SIZE) {
            unsafe { decode_step::<W, false>(warp, &tables, bytes, symbols_out, width, group, step) };
        }
        // Those before a failure first, as the scalar decoder meets them.
        let [a, b, c, d] = &decoders;
        a.finish(warp)?;
        b.finish(warp)?;
        c.finish(warp)?;
        d.finish(warp)?;
        if let Some(status) = failure {
            return Err(status);
        }
    }
    let raw = n - count;
    if len != at + raw {
        return Err(if len < at + raw { Status::Truncated } else { Status::Malformed });
    }
    if data_type == DataType::Float16 {
        warp.for_each_strided(count, |i| unsafe { *out.add(2 * i) = bytes[at + i] });
    }
    let tail = n - count * width;
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
    let mut cum = unsafe { tables.symbol(8 * lane as u32).cum };
    for (j, &freq) in freqs.iter().enumerate() {
        for slot in cum..cum + freq {
            unsafe { *slots.add(slot as usize) = (8 * lane + j) as u8 };
        }
        cum += freq;
    }
    warp.sync();
    Ok(BITMAP_LEN + 2 * warp.shuffle(before + set, WARP_SIZE - 1) as usize)
}

/// Sub-blocks a warp codes at once, a step of each in turn: while one's lookups and shuffles
/// wait, the others' run.
const INTERLEAVED: usize = 4;

/// A lane's share of decoding one sub-block: its state, and a window on the sub-block's words,
/// the next 64 two a lane, loaded 32 words ahead of their use (past the last, 0: a refill there
/// leaves the words miscounted, caught by [`finish`](Self::finish)). Offsets are the chunk's,
/// and the fields few, so that four decoders stay in registers.
struct SubBlockDecoder {
    /// Symbols in the sub-block (0 in one that decodes nothing), and the chunk's index of its first.
    len: u32,
    first: u32,
    state: u32,
    /// Where the sub-block's words start in the chunk, and how many there are.
    words_at: u32,
    word_count: u32,
    /// The index of the window's first word, and the words taken from the window.
    base: u32,
    taken: u32,
    /// Words `base + lane` and `base + 32 + lane`.
    low: u32,
    high: u32,
}

impl SubBlockDecoder {
    /// Ready to decode the sub-block at `at` in `chunk` (its states, then its `word_count` words),
    /// which holds the chunk's symbols `first .. first + len`.
    #[inline(always)]
    fn new<W: Warp>(
        warp: &W,
        chunk: &[u8],
        at: usize,
        word_count: usize,
        first: usize,
        len: usize,
    ) -> Result<Self, Status> {
        let lane = warp.lane() as usize;
        let state = u32::from_le_bytes(core::array::from_fn(|k| chunk[at + 4 * lane + k]));
        if warp.ballot(state < LOWER) != 0 {
            return Err(Status::Malformed);
        }
        let mut decoder = Self {
            len: len as u32,
            first: first as u32,
            state,
            words_at: (at + 4 * LANES) as u32,
            word_count: word_count as u32,
            ..Self::idle()
        };
        (decoder.low, decoder.high) = (decoder.word(chunk, lane as u32), decoder.word(chunk, (LANES + lane) as u32));
        Ok(decoder)
    }

    /// A decoder of nothing that ends well.
    #[inline(always)]
    fn idle() -> Self {
        Self { len: 0, first: 0, state: LOWER, words_at: 0, word_count: 0, base: 0, taken: 0, low: 0, high: 0 }
    }

    /// Word `k`, or 0 past the last.
    #[inline(always)]
    fn word(&self, chunk: &[u8], k: u32) -> u32 {
        if k < self.word_count {
            let at = (self.words_at + 2 * k) as usize;
            unsafe { *chunk.get_unchecked(at) as u32 | (*chunk.get_unchecked(at + 1) as u32) << 8 }
        } else {
            0
        }
    }

    /// Takes `words` from the window, moving it on by 32 once that many are taken.
    #[inline(always)]
    fn take(&mut self, chunk: &[u8], lane: u32, words: u32) {
        self.taken += words;
        if self.taken >= LANES as u32 {
            (self.base, self.taken) = (self.base + LANES as u32, self.taken - LANES as u32);
            (self.low, self.high) = (self.high, self.word(chunk, self.base + LANES as u32 + lane));
        }
    }

    /// The sub-block's status once decoded: every word taken and every state back at [`LOWER`]
    /// (an idle decoder's, success).
    #[inline(always)]
    fn finish<W: Warp>(&self, warp: &W) -> Result<(), Status> {
        if self.len == 0 {
            return Ok(());
        }
        if self.base + self.taken != self.word_count || warp.ballot(self.state != LOWER) != 0 {
            return Err(Status::Malformed);
        }
        Ok(())
    }
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

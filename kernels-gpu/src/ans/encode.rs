//! Compressing a chunk: the symbols counted and scaled to the table's frequencies, then each
//! sub-block coded twice, once to count its words and once to write them.

use super::{BITMAP_LEN, INTERLEAVED, Tables, copy, each, group_of, set_symbols};
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::ans::{
    DataType, HEADER_LEN, LANES, LOWER, MAX_CHUNK_SIZE, Options, STORED, SUB_BLOCK, TOTAL, VERSION, encode,
    max_compressed_size, reciprocal, sub_blocks, symbols,
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

/// Compresses the `n` bytes at `input` with `options` into `out` (room for `capacity` bytes), as
/// `ferrocomp_format::ans::compress`; returns the compressed size (in every lane).
///
/// # Safety
/// `input` must be readable for `n` bytes, `out` writable for `capacity` bytes and `shared` for
/// [`SHARED_BYTES_PER_WARP`](super::SHARED_BYTES_PER_WARP) (this warp's alone, aligned to 4).
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
    let counts: [u32; 8] = core::array::from_fn(|j| unsafe { tables.count((8 * lane + j) as u32) });
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

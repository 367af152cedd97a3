//! Decompressing a chunk with a block of [`BLOCK_WARPS`] warps: the block writes one table of a
//! word a slot (the slot's symbol, its frequency and the slot's offset in the symbol's range, so
//! that a step looks up once), then each warp decodes its own sub-blocks, 32 symbols a step, and
//! from version 2 on stores a lane's four symbols of a round as one word.

use super::{BITMAP_LEN, BLOCK_WARPS, set_symbols};
use crate::block::{Block, decode_parts};
use crate::raw::SharedBytes;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::ans::{
    HEADER_LEN, Header, LANES, LOWER, PROB_BITS, ROUND, RUN, TOTAL, VERSION_1, raw_byte_source, raw_bytes, read_header,
    steps, sub_block, sub_blocks, symbol_index, symbols,
};

/// Slots of the table each thread of the block writes.
const SLOTS_PER_THREAD: u32 = TOTAL / (BLOCK_WARPS * WARP_SIZE);
/// Where the decoding block's shared memory holds each slot's entry (u32), each symbol's
/// frequency and cumulative frequency (u32), and each warp's first failure (u32, for
/// [`decode_parts`]).
const ENTRIES_AT: u32 = 0;
const SYMBOLS_AT: u32 = ENTRIES_AT + 4 * TOTAL;
const FAILURES_AT: u32 = SYMBOLS_AT + 4 * 256;
/// Shared memory of the decoding block.
pub const DECODE_SHARED_BYTES: usize = (FAILURES_AT + 4 * BLOCK_WARPS) as usize;
/// A slot's entry: its symbol in bits 0-7, its offset from the symbol's first slot from bit 8,
/// the symbol's frequency (up to [`TOTAL`], 12 bits) from bit 20.
const OFFSET_SHIFT: u32 = 8;
const FREQ_SHIFT: u32 = 20;

/// Decompresses the chunk of `len` bytes at `input` into `out` (room for `capacity` bytes), as
/// `ferrocomp_format::ans::decompress`: the same size or status, in every thread of the block.
///
/// # Safety
/// `input` must be readable for `len` bytes, `out` writable for `capacity` bytes and `shared` for
/// [`DECODE_SHARED_BYTES`] (the block's alone, aligned to 4), none of them written by anyone else
/// meanwhile; every thread of the block, [`BLOCK_WARPS`] warps, calls this with the same chunk.
pub unsafe fn decompress_chunk<B: Block, W: Warp>(
    block: &B,
    warp: &W,
    input: *const u8,
    len: usize,
    out: *mut u8,
    capacity: usize,
    shared: *mut u8,
) -> Result<usize, Status> {
    let bytes = unsafe { crate::raw::bytes(input, len) };
    let Header { version, data_type, stored, n } = read_header(bytes)?;
    if n > capacity {
        return Err(Status::OutputTooSmall);
    }
    let (thread, threads) = (block.thread() as usize, block.threads() as usize);
    let copy = |from: usize, to: usize, count: usize| {
        for i in (thread..count).step_by(threads) {
            unsafe { *out.add(to + i) = bytes[from + i] };
        }
    };
    if stored {
        if len != HEADER_LEN + n {
            return Err(if len < HEADER_LEN + n { Status::Truncated } else { Status::Malformed });
        }
        copy(HEADER_LEN, 0, n);
        return Ok(n);
    }
    // Every warp reads the frequencies (the same loads), so the checks agree without a barrier.
    let (freqs, table_len) = read_freqs(warp, &bytes[HEADER_LEN..])?;
    let count = symbols(n, data_type);
    let blocks = sub_blocks(version, data_type, count);
    let sizes_at = HEADER_LEN + table_len;
    let sizes = bytes.get(sizes_at..sizes_at + 2 * blocks).ok_or(Status::Truncated)?;
    let word_count = |b: usize| u16::from_le_bytes([sizes[2 * b], sizes[2 * b + 1]]) as usize;

    let table = unsafe { SharedBytes::new(shared) };
    if thread < WARP_SIZE as usize {
        unsafe { set_symbols(warp, shared.add(SYMBOLS_AT as usize) as *mut u32, freqs) };
    }
    block.sync_threads();
    unsafe { write_slots(table, thread as u32) };
    block.sync_threads();

    let width = data_type.width();
    let words_out = width == 1 && (out as usize).is_multiple_of(4);
    let failures = unsafe { shared.add(FAILURES_AT as usize) } as *mut u32;
    let size = |b: usize| 4 * LANES + 2 * word_count(b);
    let end = unsafe {
        decode_parts(block, warp, blocks, sizes_at + 2 * blocks, size, failures, |b, at| {
            if at + size(b) > len {
                return Err(Status::Truncated);
            }
            let symbols = sub_block(version, data_type, b, count);
            let sub_block = SubBlock { first: symbols.start, len: symbols.len(), version, width, words_out };
            sub_block.decode(warp, table, bytes, at, word_count(b), out.add(width - 1))
        })?
    };
    let raw = n - count;
    if len != end + raw {
        return Err(if len < end + raw { Status::Truncated } else { Status::Malformed });
    }
    if width > 1 {
        for i in (thread..raw_bytes(count, width)).step_by(threads) {
            unsafe { *out.add(raw_byte_source(i, width)) = bytes[end + i] };
        }
    }
    let tail = n - count * width;
    copy(len - tail, n - tail, tail);
    Ok(n)
}

/// Reads the frequencies at the start of `bytes`, checked as `ferrocomp_format::ans::Table::read`:
/// lane `l` takes byte `l` of the bitmap, symbols `8l .. 8l + 8`; returns its frequencies and the
/// table's length.
#[inline(always)]
fn read_freqs<W: Warp>(warp: &W, bytes: &[u8]) -> Result<([u32; 8], usize), Status> {
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
    Ok((freqs, BITMAP_LEN + 2 * warp.shuffle(before + set, WARP_SIZE - 1) as usize))
}

/// Writes the entries of this thread's [`SLOTS_PER_THREAD`] slots, from the symbols' table: the
/// first slot's symbol by a binary search (the last symbol whose range starts at or before it
/// has a frequency, as a symbol without one starts where the next begins), the rest walking on.
#[inline(always)]
unsafe fn write_slots(table: SharedBytes, thread: u32) {
    let symbol = |s: u32| unsafe { table.u32(SYMBOLS_AT + 4 * s) };
    let first = thread * SLOTS_PER_THREAD;
    let (mut low, mut high) = (0, 256);
    while high - low > 1 {
        let middle = (low + high) / 2;
        if symbol(middle) >> 16 <= first {
            low = middle;
        } else {
            high = middle;
        }
    }
    let (mut s, mut entry) = (low, symbol(low));
    for slot in first..first + SLOTS_PER_THREAD {
        while slot >= (entry >> 16) + (entry & 0xFFFF) {
            s += 1;
            entry = symbol(s);
        }
        let (freq, cum) = (entry & 0xFFFF, entry >> 16);
        unsafe { table.set_u32(ENTRIES_AT + 4 * slot, freq << FREQ_SHIFT | (slot - cum) << OFFSET_SHIFT | s) };
    }
}

/// One sub-block as a warp decodes it: its symbols `first .. first + len` of the chunk, in
/// `version`'s order, each the last byte of a `width`-byte value; `words_out`: a lane stores its
/// four symbols of a round as one word (bytes, and an output aligned to 4).
struct SubBlock {
    first: usize,
    len: usize,
    version: u8,
    width: usize,
    words_out: bool,
}

impl SubBlock {
    /// Decodes the sub-block whose states start at `at` in `chunk`, followed by `word_count`
    /// words, into `symbols_out`, the chunk's output from the first symbol's byte on.
    #[inline(always)]
    unsafe fn decode<W: Warp>(
        &self,
        warp: &W,
        table: SharedBytes,
        chunk: &[u8],
        at: usize,
        word_count: usize,
        symbols_out: *mut u8,
    ) -> Result<(), Status> {
        let lane = warp.lane() as usize;
        let mut lane_state = LaneState::new(warp, chunk, at, word_count)?;
        let store = |i: usize, symbol: u32| unsafe { *symbols_out.add((self.first + i) * self.width) = symbol as u8 };
        // The steps in which every lane has a symbol, then the last, where some may not.
        let whole = if self.version == VERSION_1 { self.len / LANES } else { self.len / ROUND * RUN };
        if self.version == VERSION_1 {
            for k in 0..whole {
                let symbol = unsafe { lane_state.step(warp, table, chunk, true) };
                store(k * LANES + lane, symbol);
            }
        } else {
            for round in 0..whole / RUN {
                let word = (0..RUN as u32)
                    .fold(0, |word, j| word | unsafe { lane_state.step(warp, table, chunk, true) } << (8 * j));
                let i = round * ROUND + lane * RUN;
                if self.words_out {
                    unsafe { (symbols_out.add(self.first + i) as *mut u32).write(word) };
                } else {
                    (0..RUN).for_each(|j| store(i + j, word >> (8 * j)));
                }
            }
        }
        for k in whole..steps(self.version, self.len) {
            let i = symbol_index(self.version, k, lane);
            let symbol = unsafe { lane_state.step(warp, table, chunk, i < self.len) };
            if i < self.len {
                store(i, symbol);
            }
        }
        lane_state.finish(warp)
    }
}

/// A lane's state, and a window on the sub-block's words: the next 64, two a lane, and the 32
/// after them in flight, so that a word's load has two moves of the window (a few steps) to
/// arrive before a refill may take it: loaded one move ahead, its latency was most of a step's
/// time at 16 MiB (measured on an H200). Past the last word, 0: a refill there leaves the words
/// miscounted, caught by [`finish`](Self::finish).
struct LaneState {
    state: u32,
    /// Where the sub-block's words start in the chunk, and how many there are.
    words_at: u32,
    word_count: u32,
    /// The index of the window's first word, and the words taken from the window.
    base: u32,
    taken: u32,
    /// Words `base + lane`, `base + 32 + lane` and `base + 64 + lane`.
    low: u32,
    high: u32,
    ahead: u32,
}

impl LaneState {
    /// Ready to decode the sub-block at `at` in `chunk`: its states, then its `word_count` words.
    #[inline(always)]
    fn new<W: Warp>(warp: &W, chunk: &[u8], at: usize, word_count: usize) -> Result<Self, Status> {
        let lane = warp.lane() as usize;
        let state = u32::from_le_bytes(core::array::from_fn(|k| chunk[at + 4 * lane + k]));
        if warp.ballot(state < LOWER) != 0 {
            return Err(Status::Malformed);
        }
        let mut lane_state = Self {
            state,
            words_at: (at + 4 * LANES) as u32,
            word_count: word_count as u32,
            base: 0,
            taken: 0,
            low: 0,
            high: 0,
            ahead: 0,
        };
        let word = |k: usize| lane_state.word(chunk, (k * LANES + lane) as u32);
        (lane_state.low, lane_state.high, lane_state.ahead) = (word(0), word(1), word(2));
        Ok(lane_state)
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

    /// Decodes this lane's next symbol where `active` (its state left as it is elsewhere); the
    /// lanes whose states fall low take the window's next words in lane order. Returns the symbol.
    #[inline(always)]
    unsafe fn step<W: Warp>(&mut self, warp: &W, table: SharedBytes, chunk: &[u8], active: bool) -> u32 {
        let lane = warp.lane();
        // The word lane `l` gives: window word `l` if it is not taken yet, else word `32 + l`.
        let offer = if lane >= self.taken { self.low } else { self.high };
        let entry = unsafe { table.u32(ENTRIES_AT + 4 * (self.state & (TOTAL - 1))) };
        let x = (entry >> FREQ_SHIFT) * (self.state >> PROB_BITS) + (entry >> OFFSET_SHIFT & (TOTAL - 1));
        let refill = active && x < LOWER;
        let refilling = warp.ballot(refill);
        let within = self.taken + (refilling & ((1u32 << lane) - 1)).count_ones();
        let word = warp.shuffle(offer, within % WARP_SIZE);
        if active {
            self.state = if refill { x << 16 | word } else { x };
        }
        self.taken += refilling.count_ones();
        if self.taken >= WARP_SIZE {
            (self.base, self.taken) = (self.base + WARP_SIZE, self.taken - WARP_SIZE);
            let next = self.word(chunk, self.base + 2 * WARP_SIZE + lane);
            (self.low, self.high, self.ahead) = (self.high, self.ahead, next);
        }
        entry & 0xFF
    }

    /// The sub-block's status once decoded: every word taken and every state back at [`LOWER`].
    #[inline(always)]
    fn finish<W: Warp>(&self, warp: &W) -> Result<(), Status> {
        if self.base + self.taken != self.word_count || warp.ballot(self.state != LOWER) != 0 {
            return Err(Status::Malformed);
        }
        Ok(())
    }
}

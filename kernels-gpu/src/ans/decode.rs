//! Decompressing a chunk with a block of warps: the block writes one table of two
//! words a slot (the slot's symbol, its frequency and the slot's offset in the symbol's range, so
//! that a step looks up once), then each warp decodes its own sub-blocks, 32 symbols a step with
//! no branch (a lane whose state falls low takes its word itself, from the warp's words staged in
//! shared memory), and from version 2 on stores a lane's four symbols of a round as one word, or
//! for float16 and float32 its four values whole (their low bytes loaded as the round begins and
//! put beside the high bytes decoded): one store of 8 or 16 bytes.

use super::{BITMAP_LEN, byte_perm, set_symbols};
use crate::block::{Block, decode_parts, decode_parts_words};
use crate::copy::{Memory, copy_spread, spread, store_aligned, store_words};
use crate::lz77::funnel;
use crate::raw::SharedBytes;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::ans::{
    HEADER_LEN, Header, LANES, LOWER, PROB_BITS, ROUND, RUN, TOTAL, VERSION_1, read_header, steps, sub_block,
    sub_blocks, symbol_index, symbols,
};

/// Where the decoding block's shared memory holds each slot's entry (a u32), each symbol's
/// frequency and cumulative frequency (u32), [`decode_parts`]'s words (to 16 bytes) and each
/// warp's [`RING_BYTES`] of words; before the warps decode, the chunk's first [`HEAD_BYTES`]
/// in the rings' place.
const ENTRIES_AT: u32 = 0;
const SYMBOLS_AT: u32 = ENTRIES_AT + 4 * TOTAL;
const PARTS_AT: u32 = SYMBOLS_AT + 4 * 256;
/// Where the rings (and the head before them) start in a block of `warps` warps.
const fn rings_at(warps: u32) -> u32 {
    PARTS_AT + (4 * decode_parts_words(warps * WARP_SIZE) as u32).next_multiple_of(16)
}
/// Bytes of a chunk staged in shared memory before it is parsed: its header, table (at most 552
/// bytes) and sub-blocks' word counts where they fit. Counts past them, or those of a chunk of
/// more sub-blocks than the block has threads (read after the rings have taken the head's
/// place), are read from the chunk.
pub const HEAD_BYTES: usize = 1024;
const _: () = assert!(HEAD_BYTES <= RING_BYTES as usize); // within the rings of any block
/// Shared memory of a decoding block of `warps` warps.
pub const fn decode_shared_bytes(warps: u32) -> usize {
    (rings_at(warps) + RING_BYTES * warps) as usize
}
/// A slot's entry is one word: the slot's offset from its symbol's first slot in the low
/// [`PROB_BITS`] bits (under [`TOTAL`]), the symbol from bit [`SYMBOL_SHIFT`] and its frequency
/// (at most [`TOTAL`], 12 bits) from bit [`FREQ_SHIFT`]. One word a lane: a step's lookup loads
/// half the bytes of two words, and the table is half the size (bytes decoded 0-4.5% faster on an
/// H100).
const SYMBOL_SHIFT: u32 = PROB_BITS;
const FREQ_SHIFT: u32 = 20;
const _: () = assert!(SYMBOL_SHIFT + 8 <= FREQ_SHIFT && TOTAL < 1 << (32 - FREQ_SHIFT));

/// Decompresses the chunk of `len` bytes at `input` into `out` (room for `capacity` bytes), as
/// `ferrocomp_format::ans::decompress`: the same size or status, in every thread of the block.
///
/// # Safety
/// `input` must be readable for `len` bytes, `out` writable for `capacity` bytes and `shared` for
/// [`decode_shared_bytes`] of the block's warps (the block's alone, aligned to 4), none of them
/// written by anyone else meanwhile; every thread of the block calls this with the same chunk.
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
    let (thread, threads) = (block.thread() as usize, block.threads() as usize);
    let rings_at = rings_at(threads as u32 / WARP_SIZE);
    // The head staged in one go, a unit a thread, and parsed in shared memory: in global memory,
    // its header, table and counts were a chain of loads, each waiting on the one before.
    let (head, staged) = unsafe { (SharedBytes::new(shared.add(rings_at as usize)), len.min(HEAD_BYTES)) };
    block.sync_threads(); // every warp is done with the last chunk's, which may have failed early
    unsafe { spread::<1>(thread, threads, &Memory(input as *mut u8), &head, staged) };
    block.sync_threads();
    // The header as two words (read byte by byte, its fields were a chain of loads); of a chunk
    // shorter than it, only the bytes staged are read as its.
    let header = unsafe { (head.u32(0) as u64 | (head.u32(4) as u64) << 32).to_le_bytes() };
    let Header { version, data_type, stored, n } = read_header(&header[..staged.min(HEADER_LEN)])?;
    if n > capacity {
        return Err(Status::OutputTooSmall);
    }
    if stored {
        if len != HEADER_LEN + n {
            return Err(if len < HEADER_LEN + n { Status::Truncated } else { Status::Malformed });
        }
        unsafe { copy_spread(thread, threads, bytes[HEADER_LEN..].as_ptr(), out, n) };
        return Ok(n);
    }
    // Every warp reads the frequencies (the same loads), so the checks agree without a barrier.
    let (freqs, table_len) = unsafe { read_freqs(warp, head.at(HEADER_LEN as u32), staged - HEADER_LEN) }?;
    let count = symbols(n, data_type);
    let blocks = sub_blocks(version, data_type, count);
    let sizes_at = HEADER_LEN + table_len;
    if sizes_at + 2 * blocks > len {
        return Err(Status::Truncated);
    }
    // Staged, the counts are read in the first round's scan, before the rings take their place
    // (at an even offset: aligned).
    let staged_sizes = sizes_at + 2 * blocks <= staged && blocks <= threads;
    let word_count = |b: u32| {
        let at = sizes_at + 2 * b as usize;
        (if staged_sizes { unsafe { head.u16(at as u32) } } else { u16::from_le_bytes([bytes[at], bytes[at + 1]]) })
            as u32
    };

    let table = unsafe { SharedBytes::new(shared) };
    if thread < WARP_SIZE as usize {
        unsafe { set_symbols(warp, table.at(SYMBOLS_AT), freqs) };
    }
    block.sync_threads();
    unsafe { write_slots(table, thread as u32, threads as u32) };
    block.sync_threads();

    let width = data_type.width();
    let words_even = (input as usize).is_multiple_of(2);
    let parts_scratch = unsafe { shared.add(PARTS_AT as usize) } as *mut u32;
    let ring = table.at(rings_at + thread as u32 / WARP_SIZE * RING_BYTES);
    // Positions in the chunk counted in 32 bits: its sub-blocks (at most 2,048 of at most 128 + 2 *
    // 65,535 bytes) end within them, and a chunk longer than 32 bits can count is read no further.
    let size = |b: u32| 4 * LANES as u32 + 2 * word_count(b);
    let (first_at, len32) = ((sizes_at + 2 * blocks) as u32, len.min(u32::MAX as usize) as u32);
    // The values' low bytes end the chunk, with its tail (where the chunk is too short for them,
    // they are read from its start: the check of its size below fails it).
    let lows_at = len.saturating_sub(n - count);
    let end = unsafe {
        decode_parts(block, warp, blocks as u32, first_at, size, parts_scratch, |b, at, size| {
            if at + size > len32 {
                return Err(Status::Truncated);
            }
            let symbols = sub_block(version, data_type, b as usize, count);
            let sub_block = SubBlock { first: symbols.start, len: symbols.len() };
            let (chunk, words, lows) = (bytes, (size - 4 * LANES as u32) / 2, &bytes[lows_at..]);
            match width {
                1 => sub_block.decode_into::<W, 1>(warp, version, table, ring, chunk, at, words, words_even, out, lows),
                2 => sub_block.decode_into::<W, 2>(warp, version, table, ring, chunk, at, words, words_even, out, lows),
                _ => sub_block.decode_into::<W, 4>(warp, version, table, ring, chunk, at, words, words_even, out, lows),
            }
        })?
    };
    let (raw, end) = (n - count, end as usize);
    if len != end + raw {
        return Err(if len < end + raw { Status::Truncated } else { Status::Malformed });
    }
    let tail = n - count * width;
    unsafe { copy_spread(thread, threads, bytes[len - tail..].as_ptr(), out.add(n - tail), tail) };
    Ok(n)
}

/// Where a sub-block's symbols go: each the high byte of a `WIDTH`-byte value (the byte itself
/// for bytes), written with the value's low bytes from `lows` (the chunk's raw part: the low
/// bytes of its values in order, then its tail), so that each value is written whole, once.
struct Values<'a, const WIDTH: usize> {
    out: *mut u8,
    lows: &'a [u8],
}

impl<const WIDTH: usize> Values<'_, WIDTH> {
    /// The values from value `i` on.
    #[inline(always)]
    fn from(&self, i: usize) -> Self {
        let lows = self.lows.get((WIDTH - 1) * i..).unwrap_or(&[]);
        Self { out: self.out.wrapping_add(i * WIDTH), lows }
    }

    /// Writes value `i`, its high byte `symbol`, byte by byte (low bytes past `lows` 0).
    #[inline(always)]
    unsafe fn put(&self, i: usize, symbol: u8) {
        let value = unsafe { self.out.add(i * WIDTH) };
        for j in 0..WIDTH - 1 {
            let low = self.lows.get((WIDTH - 1) * i + j).copied().unwrap_or(0);
            unsafe { *value.add(j) = low };
        }
        unsafe { *value.add(WIDTH - 1) = symbol };
    }

    /// The low bytes of values `i .. i + 4`, as the aligned words that hold them (read through
    /// the read-only path) where those lie in `lows` or just before it (in the chunk, its
    /// sub-blocks'), else byte by byte; [`LowWords::join`] takes them out once the loads have
    /// arrived. Named words, not an array indexed in a loop (which lives in local memory: storing
    /// the loads there made each round wait for them as it began).
    #[inline(always)]
    fn lows(&self, i: usize) -> LowWords {
        let (p, len) = ((WIDTH - 1) * i, 4 * (WIDTH - 1));
        if WIDTH == 1 {
            return LowWords { words: [0; 4], shift: 0 };
        }
        let at = self.lows.as_ptr().wrapping_add(p);
        let skew = at as usize % 4;
        // Words `0 ..= len / 4`: those `len` bytes and the skew's.
        if p + len + 4 <= self.lows.len() + skew {
            let from = at.wrapping_sub(skew) as *const u32;
            let word = |k: usize| if k <= len / 4 { unsafe { crate::raw::global_u32(from.add(k)) } } else { 0 };
            LowWords { words: [word(0), word(1), word(2), word(3)], shift: 8 * skew as u32 }
        } else {
            let byte = |j: usize| if j < len { self.lows.get(p + j).copied().unwrap_or(0) as u32 } else { 0 };
            let word = |k: usize| (0..4).fold(0, |word, j| word | byte(4 * k + j) << (8 * j));
            LowWords { words: [word(0), word(1), word(2), 0], shift: 0 }
        }
    }

    /// Writes values `i .. i + 4` whole: their high bytes `highs` (the first's in the low byte),
    /// their low bytes as [`lows`](Self::lows) gave them; in one store where `ALIGNED` (they are
    /// aligned to their size).
    #[inline(always)]
    unsafe fn put_four<const ALIGNED: bool>(&self, i: usize, highs: u32, lows: LowWords) {
        let [l0, l1, l2] = lows.join();
        let at = unsafe { self.out.add(i * WIDTH) };
        let words = match WIDTH {
            1 => [highs, 0, 0, 0],
            // Low, high, low, high.
            2 => [byte_perm(l0, highs, 0x5140), byte_perm(l0, highs, 0x7362), 0, 0],
            // Each value's three low bytes and its high byte.
            _ => [
                byte_perm(l0, highs, 0x4210),
                byte_perm(byte_perm(l0, l1, 0x0543), highs, 0x5210),
                byte_perm(byte_perm(l1, l2, 0x0432), highs, 0x6210),
                byte_perm(l2, highs, 0x7321),
            ],
        };
        let words: [u32; WIDTH] = core::array::from_fn(|k| words[k]);
        unsafe { if ALIGNED { store_aligned(at, words) } else { store_words(at, words) } }
    }
}

/// Four values' low bytes as loaded: the bytes from bit `shift` of the little-endian `words` on.
#[derive(Clone, Copy)]
struct LowWords {
    words: [u32; 4],
    shift: u32,
}

impl LowWords {
    /// The low bytes, in order from the first word's low byte.
    #[inline(always)]
    fn join(self) -> [u32; 3] {
        let [w0, w1, w2, w3] = self.words;
        [funnel(w0, w1, self.shift), funnel(w1, w2, self.shift), funnel(w2, w3, self.shift)]
    }
}

/// Reads the frequencies at the start of the `len` bytes of `bytes` (shared memory, aligned to
/// 2), checked as `ferrocomp_format::ans::Table::read`: lane `l` takes byte `l` of the bitmap,
/// symbols `8l .. 8l + 8`; returns its frequencies and the table's length.
///
/// # Safety
/// The `len` bytes must be readable shared memory.
#[inline(always)]
unsafe fn read_freqs<W: Warp>(warp: &W, bytes: SharedBytes, len: usize) -> Result<([u32; 8], usize), Status> {
    let lane = warp.lane();
    if len < BITMAP_LEN {
        return Err(Status::Truncated);
    }
    let bitmap = unsafe { bytes.u8(lane) };
    let set = bitmap.count_ones();
    let before = crate::lz77::scan_add(warp, set) - set;
    // This lane's symbols' frequencies; the first of its that is missing or 0, if any.
    let mut freqs = [0u32; 8];
    let mut status = Status::Success;
    let mut k = before as usize;
    for (j, freq) in freqs.iter_mut().enumerate() {
        if bitmap >> j & 1 == 1 {
            let at = BITMAP_LEN + 2 * k;
            if at + 2 <= len {
                *freq = unsafe { bytes.u16(at as u32) } as u32;
            } else if status == Status::Success {
                status = Status::Truncated;
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

/// Writes the entries of thread `thread`'s run of slots (of the block's `threads`, a share as
/// even as they allow), from the symbols' table: the first slot's symbol by a binary search (the
/// last symbol whose range starts at or before it has a frequency, as a symbol without one starts
/// where the next begins), the rest walking on.
#[inline(always)]
unsafe fn write_slots(table: SharedBytes, thread: u32, threads: u32) {
    let symbol = |s: u32| unsafe { table.u32(SYMBOLS_AT + 4 * s) };
    let share = TOTAL.div_ceil(threads);
    let (first, end) = ((thread * share).min(TOTAL), (thread * share + share).min(TOTAL));
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
    for slot in first..end {
        while slot >= (entry >> 16) + (entry & 0xFFFF) {
            s += 1;
            entry = symbol(s);
        }
        let (freq, cum) = (entry & 0xFFFF, entry >> 16);
        unsafe { table.set_u32(ENTRIES_AT + 4 * slot, freq << FREQ_SHIFT | s << SYMBOL_SHIFT | (slot - cum)) };
    }
}

/// One sub-block as a warp decodes it: its symbols `first .. first + len` of the chunk.
#[derive(Clone, Copy)]
struct SubBlock {
    first: usize,
    len: usize,
}

impl SubBlock {
    /// Decodes the sub-block of `version` whose states start at `at` in `chunk`, followed by
    /// `word_count` words (at an even address where `words_even`), into the [`Values`] `out` and
    /// `lows`, its words staged in `ring` (the warp's [`RING_BYTES`]). A function of its own,
    /// whose registers ptxas allocates apart from the chunk's: inlined beside the floats' loops,
    /// the bytes' round loop spilled its word position and decoded 18-22% slower on an H200. Its
    /// arguments are scalars and pairs, which go in registers (a larger struct goes through the
    /// caller's stack).
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn decode_into<W: Warp, const WIDTH: usize>(
        self,
        warp: &W,
        version: u8,
        table: SharedBytes,
        ring: SharedBytes,
        chunk: &[u8],
        at: u32,
        word_count: u32,
        words_even: bool,
        out: *mut u8,
        lows: &[u8],
    ) -> Result<(), Status> {
        let (at, word_count) = (at as usize, word_count as usize);
        let values = &Values::<WIDTH> { out, lows };
        // The sub-block's low bytes asked into L2, for its rounds.
        let lows = values.lows.get((WIDTH - 1) * self.first..(WIDTH - 1) * (self.first + self.len)).unwrap_or(&[]);
        for line in (128 * warp.lane() as usize..lows.len()).step_by(128 * WARP_SIZE as usize) {
            unsafe { crate::raw::prefetch_global(lows.as_ptr().add(line)) };
        }
        // Every sub-block's words start at an even offset in the chunk.
        match words_even {
            true => unsafe { self.decode::<true, W, WIDTH>(warp, version, table, ring, chunk, at, word_count, values) },
            false => unsafe {
                self.decode::<false, W, WIDTH>(warp, version, table, ring, chunk, at, word_count, values)
            },
        }
    }

    /// [`decode_into`](Self::decode_into), the words' address known to be even (`EVEN`) or not.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn decode<const EVEN: bool, W: Warp, const WIDTH: usize>(
        &self,
        warp: &W,
        version: u8,
        table: SharedBytes,
        ring: SharedBytes,
        chunk: &[u8],
        at: usize,
        word_count: usize,
        values: &Values<WIDTH>,
    ) -> Result<(), Status> {
        let lane = warp.lane() as usize;
        let mut lane_state = unsafe { LaneState::<EVEN>::new(warp, ring, chunk, at, word_count)? };
        let put = |i: usize, symbol: u32| unsafe { values.put(self.first + i, symbol as u8) };
        // The steps in which every lane has a symbol, then the last, where some may not.
        let whole = if version == VERSION_1 { self.len / LANES } else { self.len / ROUND * RUN };
        if version == VERSION_1 {
            for k in 0..whole {
                unsafe { lane_state.stage(warp) };
                let symbol = unsafe { lane_state.step(warp, table, true) };
                put(k * LANES + lane, symbol);
            }
        } else {
            // A lane's four values of a round.
            let own = values.from(self.first + lane * RUN);
            let lows = |round: usize| own.lows(round * ROUND);
            let rounds = whole / RUN;
            if (own.out as usize).is_multiple_of(4 * WIDTH) {
                let put_four =
                    |round: usize, highs: u32, lows| unsafe { own.put_four::<true>(round * ROUND, highs, lows) };
                unsafe { lane_state.rounds(warp, table, rounds, lows, put_four) };
            } else {
                let put_four =
                    |round: usize, highs: u32, lows| unsafe { own.put_four::<false>(round * ROUND, highs, lows) };
                unsafe { lane_state.rounds(warp, table, rounds, lows, put_four) };
            }
        }
        for k in whole..steps(version, self.len) {
            let i = symbol_index(version, k, lane);
            unsafe { lane_state.stage(warp) };
            let symbol = unsafe { lane_state.step(warp, table, i < self.len) };
            if i < self.len {
                put(i, symbol);
            }
        }
        lane_state.finish(warp)
    }
}

/// Bytes of a warp's words in shared memory: two spans of [`SPAN`], the one the lanes read and
/// the next, while the one after waits in the lanes' registers.
const RING_BYTES: u32 = 2 * SPAN;
/// The words a warp stages in one go: 16 bytes a lane, at least two rounds' worth (a round takes
/// up to 128 words), so that a span's loads have the next span's rounds to arrive in.
const SPAN: u32 = 16 * WARP_SIZE;

/// A lane's state, and where the sub-block's words are: a lane whose state falls low takes its
/// word itself, the next not yet taken by the lanes before it (a ballot's prefix), from the
/// warp's ring in shared memory, which [`stage`](Self::stage) keeps a span ahead of the words
/// taken. Positions count bytes from `from`, the 16-byte boundary at or before the first word.
struct LaneState<const EVEN: bool> {
    state: u32,
    /// The position of the next word to take, and the position past the last.
    at: u32,
    end: u32,
    /// The lanes below this one, as a ballot's bits.
    below: u32,
    ring: SharedBytes,
    from: *const u8,
    /// Bytes of the chunk from `from` on.
    readable: u32,
    /// The span the ring was last staged for: it holds this one and the next.
    span: u32,
    /// This lane's 16 bytes of the span after those.
    staged: [u32; 4],
}

impl<const EVEN: bool> LaneState<EVEN> {
    /// Ready to decode the sub-block at `at` in `chunk`: its states, then its `word_count` words,
    /// of which the first two spans are staged in `ring` (the rest asked into L2).
    ///
    /// # Safety
    /// `ring` must be the warp's [`RING_BYTES`] of shared memory, aligned to 16.
    #[inline(always)]
    unsafe fn new<W: Warp>(
        warp: &W,
        ring: SharedBytes,
        chunk: &[u8],
        at: usize,
        word_count: usize,
    ) -> Result<Self, Status> {
        let lane = warp.lane();
        let words = &chunk[at + 4 * LANES..];
        // The bytes before the words, down to `from`, are the states': in the chunk too.
        let first = (words.as_ptr() as usize % 16) as u32;
        let from = words.as_ptr().wrapping_sub(first as usize);
        let (end, readable) = (first + 2 * word_count as u32, first + words.len() as u32);
        // All the words asked into L2 now, for the spans staged later.
        for line in (128 * lane..end).step_by(128 * WARP_SIZE as usize) {
            unsafe { crate::raw::prefetch_global(from.add(line as usize)) };
        }
        let below = (1 << lane) - 1;
        let mut lane_state = Self { state: 0, at: first, end, below, ring, from, readable, span: 0, staged: [0; 4] };
        // The first spans loaded before the states are checked, so that both arrive in one wait.
        let (first, second) = (lane_state.load(lane, 0), lane_state.load(lane, 1));
        lane_state.staged = lane_state.load(lane, 2);
        let state = &chunk[at + 4 * lane as usize..][..4];
        lane_state.state = if EVEN {
            // Two aligned halves (states start at even offsets in the chunk).
            let half = |k: usize| unsafe { (state.as_ptr().add(2 * k) as *const u16).read() } as u32;
            half(0) | half(1) << 16
        } else {
            u32::from_le_bytes(core::array::from_fn(|k| state[k]))
        };
        if warp.ballot(lane_state.state < LOWER) != 0 {
            return Err(Status::Malformed);
        }
        unsafe { lane_state.put(lane, 0, first) };
        unsafe { lane_state.put(lane, 1, second) };
        warp.sync();
        Ok(lane_state)
    }

    /// Lane `lane`'s 16 bytes of span `span`, where the chunk has all 16 (else
    /// [`put`](Self::put) copies what it has).
    #[inline(always)]
    fn load(&self, lane: u32, span: u32) -> [u32; 4] {
        let offset = span * SPAN + 16 * lane;
        if offset + 16 <= self.readable {
            unsafe { crate::raw::global_u32x4(self.from.add(offset as usize)) }
        } else {
            [0; 4]
        }
    }

    /// Puts lane `lane`'s `bytes` of span `span`, [`load`](Self::load)ed, into the ring; where
    /// the chunk ends inside them, its last bytes one by one.
    #[inline(always)]
    unsafe fn put(&self, lane: u32, span: u32, bytes: [u32; 4]) {
        let (offset, at) = (span * SPAN + 16 * lane, span % 2 * SPAN + 16 * lane);
        unsafe { self.ring.set_u32x4(at, bytes) };
        if offset < self.readable && self.readable < offset + 16 {
            for k in 0..self.readable - offset {
                unsafe { self.ring.set_u8(at + k, *self.from.add((offset + k) as usize)) };
            }
        }
    }

    /// Before a round (or a step): once the words taken have passed into the next span, the
    /// staged one goes into the ring in place of the span left behind and the one after is
    /// loaded into the lanes' registers; the ring then holds the span of the next word and the
    /// one after, more than a round's words.
    #[inline(always)]
    unsafe fn stage<W: Warp>(&mut self, warp: &W) {
        // A round moves `at` by 256 bytes at most: a span at a time.
        if self.at / SPAN != self.span {
            warp.sync(); // every lane has read the span left behind
            let lane = warp.lane();
            unsafe { self.put(lane, self.span + 2, self.staged) };
            self.span += 1;
            self.staged = self.load(lane, self.span + 2);
            warp.sync();
        }
    }

    /// The word at `at + 2 * prefix` where `refill`, else 0; no branch, as the ring holds words
    /// at every position (past the last, whatever it held before: a refill there leaves the
    /// words miscounted, caught by [`finish`](Self::finish)).
    #[inline(always)]
    fn word(&self, prefix: u32, refill: bool) -> u32 {
        let position = (self.at + 2 * prefix) % RING_BYTES;
        let word = if EVEN {
            unsafe { self.ring.u16(position) as u32 }
        } else {
            let byte = |p: u32| unsafe { self.ring.u8(p % RING_BYTES) as u32 };
            byte(position) | byte(position + 1) << 8
        };
        if refill { word } else { 0 }
    }

    /// Decodes `rounds` rounds of [`RUN`] steps, every lane active, giving `put` each round's
    /// index, this lane's symbols of it (the first in the low byte) and what `fetch` returned for
    /// the round before its steps (loads that arrive meanwhile).
    #[inline(always)]
    unsafe fn rounds<W: Warp, T>(
        &mut self,
        warp: &W,
        table: SharedBytes,
        rounds: usize,
        fetch: impl Fn(usize) -> T,
        put: impl Fn(usize, u32, T),
    ) {
        // 32-bit counting: one add a round.
        for round in 0..rounds as u32 {
            unsafe { self.stage(warp) };
            let fetched = fetch(round as usize);
            let mut step = || unsafe { self.step(warp, table, true) };
            let (a, b) = (step(), step());
            let (c, d) = (step(), step());
            put(round as usize, byte_perm(byte_perm(a, b, 0x40), byte_perm(c, d, 0x40), 0x5410), fetched);
        }
    }

    /// Decodes this lane's next symbol where `active` (its state left as it is elsewhere); the
    /// lanes whose states fall low take the next words in lane order. Returns the symbol in the
    /// low byte (the bits above are the entry's rest). At most 32 words are taken: [`stage`](Self::stage) before.
    #[inline(always)]
    unsafe fn step<W: Warp>(&mut self, warp: &W, table: SharedBytes, active: bool) -> u32 {
        let entry = unsafe { table.at(ENTRIES_AT).word(self.state & (TOTAL - 1)) };
        let x = (entry >> FREQ_SHIFT) * (self.state >> PROB_BITS) + (entry & (TOTAL - 1));
        let refill = active && x < LOWER;
        let refilling = warp.ballot(refill);
        if active {
            // Branch-free: a lane not refilling reads a word it drops, and multiplies by 1.
            let word = self.word((refilling & self.below).count_ones(), refill);
            self.state = x * if refill { 1 << 16 } else { 1 } + word;
        }
        self.at += 2 * refilling.count_ones();
        entry >> SYMBOL_SHIFT
    }

    /// The sub-block's status once decoded: every word taken and every state back at [`LOWER`].
    #[inline(always)]
    fn finish<W: Warp>(&self, warp: &W) -> Result<(), Status> {
        if self.at != self.end || warp.ballot(self.state != LOWER) != 0 {
            return Err(Status::Malformed);
        }
        Ok(())
    }
}

//! Deflate decoding, a warp per chunk.
//!
//! Every lane runs the same scalar symbol decoder in step: the same loads and branches, so the
//! warp pays for one, and lane j keeps the j-th symbol of a round of 32 (its output position, a
//! literal's byte or a match's length and distance), with the status the format crate's decoder
//! gives (reading past the input's end checked once a round). Literals, and matches whose codes
//! are in the root tables, take a path of their own (`Sink::literals`, `Sink::a_match`) that
//! issues each lookup from the bits after the symbol before, before that symbol's kind is known:
//! at one chunk a scheduler the loop's time is its chain of dependent instructions, and this one
//! is short (H200: 20-40% faster at 16 and 64 MiB). The warp then writes the round
//! together: the literals at once, the matches 32 bytes a step ([`copy_matches`]), so no lane
//! waits on a byte at a time. The first
//! lane reads a block's header and code lengths; the warp builds its tables in shared memory
//! ([`build_block_tables`]) and pairs up short literal codes in the root table, so a lookup gives
//! two literals where their codes fit its 10 bits. Stored blocks are copied warp-wide; the zlib
//! and gzip wrappers are the format crate's, their checksums computed warp-wide. The sizes kernel
//! runs the same decoder without writing.
//!
//! Measured on an H200 and dropped: decoding the symbols that would start at each of the next
//! 32 (or 64) bits in every lane at once and chaining the real ones with shuffles (faster on
//! int32 offsets, slower on text and floats; the 64-bit window slower everywhere); rounds
//! without bounds checks where the input holds them (slower: the second copy of the loop); two
//! chunks a warp, 16 lanes each (slower on five of eight sets and levels); and every byte of a
//! round written window by window with the last 64 in the lanes (slower but on int32 offsets);
//! literals and matches in one such loop (slower than main on binary and int32: the literals'
//! path grew), two literal codes a turn (no faster, text slower at 64 and 256 MiB), and the
//! codes of the next 32 bits in every lane at once in long literal runs (20-30% slower).

use super::rounds::{HANDOFF_SHARED_BYTES, Handoff, HandoffSlots, Match, Rounds, copy_handed_matches};
use crate::adler32::adler32_chunk;
use crate::block::Block as ThreadBlock;
use crate::crc32::crc32_chunk;
use crate::deflate::{build_block_tables, lookup_shared, low_bits};
use crate::lz77::{self, aligned, funnel, last_starting_by, scan_add, scan_max, source};
use crate::raw::SharedBytes;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::deflate::huffman::{
    DIST_ROOT, KIND_BASE, KIND_END, KIND_LITERAL, KIND_PAIR, LITLEN_ROOT, entry_extra, entry_kind, entry_len,
    entry_value, pair_entry,
};
use ferrocomp_format::deflate::inflate::{BitReader, BitSource, Block, Decoded, Lengths, Load, read_block_lengths};
use ferrocomp_format::deflate::{DecodeTables, MAX_DECOMPRESSED_CHUNK_SIZE, Wrapper, wrapper};

/// Where a chunk's (or page's) bytes go: an output of `capacity` bytes, or nowhere (the sizes
/// kernels count them, up to [`MAX_DECOMPRESSED_CHUNK_SIZE`]).
#[derive(Clone, Copy)]
pub struct Output {
    pub(crate) out: *mut u8,
    pub(crate) capacity: u32,
    /// The status of a chunk larger than `capacity`.
    pub(crate) full: Status,
}

impl Output {
    /// Bytes the decoders address at most: a chunk larger is refused as too large for its output.
    const MAX_CAPACITY: usize = 1 << 31;

    /// Decoding into `out`, writable for `capacity` bytes.
    pub fn to(out: *mut u8, capacity: usize) -> Self {
        Self { out, capacity: capacity.min(Self::MAX_CAPACITY) as u32, full: Status::OutputTooSmall }
    }

    /// Counting only.
    pub fn counting() -> Self {
        Self { out: core::ptr::null_mut(), capacity: MAX_DECOMPRESSED_CHUNK_SIZE as u32, full: Status::ChunkTooLarge }
    }

    pub(crate) fn writes(&self) -> bool {
        !self.out.is_null()
    }

    /// `Ok` when `size` bytes fit at `at`.
    pub(crate) fn fits(&self, at: u32, size: u32) -> bool {
        at <= self.capacity && size <= self.capacity - at
    }
}

/// Decodes the chunk `input[..len]` in `wrapper` into `output`, its matches copied by `rounds`;
/// returns its decoded size, in every lane: the format crate's `deflate::decompress` (or
/// `decompressed_size`, counting), warp-wide, with its statuses and bytes.
///
/// # Safety
/// `input` must be readable for `len` bytes, `output` as its constructor says, and `tables` (in
/// memory the warp shares) writable, none of them used by anyone else meanwhile.
pub unsafe fn decompress_chunk<W: Warp>(
    warp: &W,
    input: *const u8,
    len: usize,
    wrapper: Wrapper,
    output: Output,
    tables: *mut DecodeTables,
    rounds: &mut impl Rounds,
) -> Result<usize, Status> {
    let input = unsafe { core::slice::from_raw_parts(input, len) };
    let mut sink = Sink { warp, output, len: 0, rounds };
    wrapper::decode_with(input, wrapper, &mut sink, |stream, sink| unsafe { sink.inflate(stream, tables) })?;
    Ok(sink.len as usize)
}

/// Bytes of shared memory the decode tables take before the handoff's slots (16-aligned).
const PAIR_TABLES: usize = size_of::<DecodeTables>().next_multiple_of(16);
/// Shared memory of [`decompress_in_pair`]'s block where it writes to the output directly: the
/// tables and the handoff's slots.
pub const PAIR_SHARED_BYTES: usize = PAIR_TABLES + HANDOFF_SHARED_BYTES;
/// The largest output [`decompress_in_pair`] keeps in shared memory: a GDeflate page, a 64 KiB
/// chunk.
pub const STAGED_OUTPUT: usize = 64 << 10;
/// Shared memory of [`decompress_in_pair`]'s block where it stages the output: the tables, the
/// slots and the largest output staged.
pub const STAGED_SHARED_BYTES: usize = PAIR_SHARED_BYTES + STAGED_OUTPUT;
/// Warps of a pair a block.
pub const PAIR_WARPS: u32 = 2;
/// Pairs an SM holds at once with their outputs staged.
pub const STAGED_BLOCKS_PER_SM: u32 = crate::blocks_per_sm(PAIR_WARPS, STAGED_SHARED_BYTES / PAIR_WARPS as usize);
const _: () = assert!(STAGED_BLOCKS_PER_SM >= 3);
/// Pairs an SM holds at once, which the launch bounds hold ptxas to (128 registers): the host
/// gives [`decompress_in_pair`] batches of at most this many chunks an SM.
pub const PAIR_BLOCKS_PER_SM: u32 = 8;

/// Runs `decode` (Deflate's or GDeflate's decoder, given an output, the tables and who copies
/// its matches) into `out`, writable for `capacity` bytes, by a block of two warps: the first
/// decodes, the second copies the matches of each round the first hands it ([`Handoff`]), so
/// that the two overlap where few warps share an SM. With `stage` and room for at most
/// [`STAGED_OUTPUT`], the output is kept in shared memory until it is whole, then copied out: the
/// matches read their sources there instead of in output just written to global memory, and
/// nothing reaches `out` from a chunk that fails. The size is the first warp's (the second's
/// result means nothing).
///
/// # Safety
/// As `decode`'s; `out` writable for `capacity` bytes; `shared` (16-aligned) holding
/// [`PAIR_SHARED_BYTES`], [`STAGED_SHARED_BYTES`] with `stage`, this block's alone; both warps
/// call this.
pub unsafe fn decompress_in_pair<'b, B: ThreadBlock, W: Warp>(
    block: &'b B,
    warp: &W,
    out: *mut u8,
    capacity: usize,
    shared: *mut u8,
    stage: bool,
    decode: impl FnOnce(Output, *mut DecodeTables, &mut Handoff<'b, B>) -> Result<usize, Status>,
) -> Result<usize, Status> {
    let (tables, slots) = (shared as *mut DecodeTables, unsafe { shared.add(PAIR_TABLES) } as *mut HandoffSlots);
    let staged = stage && capacity <= STAGED_OUTPUT;
    let output = Output::to(if staged { unsafe { shared.add(PAIR_SHARED_BYTES) } } else { out }, capacity);
    if block.thread() >= WARP_SIZE {
        unsafe { copy_handed_matches(block, warp, &output, slots) };
        return Ok(0);
    }
    let mut handoff = Handoff::new(block, slots);
    let result = decode(output, tables, &mut handoff);
    if result.is_ok() {
        handoff.settle(warp);
    }
    handoff.finish(warp);
    let size = result?;
    if staged {
        unsafe { lz77::copy(warp, output.out, out, size as u32) };
    }
    Ok(size)
}

/// The output of a chunk being decoded, as the wrappers see it.
struct Sink<'w, W, R> {
    warp: &'w W,
    output: Output,
    /// Bytes decoded so far (the same in every lane).
    len: u32,
    /// Who copies the matches.
    rounds: &'w mut R,
}

impl<W: Warp, R: Rounds> Decoded for Sink<'_, W, R> {
    fn size(&self) -> usize {
        self.len as usize
    }

    fn adler32(&self, from: usize) -> Option<u32> {
        let (out, n) = (self.output.out, self.len as usize - from);
        self.output.writes().then(|| unsafe { adler32_chunk(self.warp, out.add(from), n) })
    }

    fn crc32(&self, from: usize) -> Option<u32> {
        let (out, n) = (self.output.out, self.len as usize - from);
        self.output.writes().then(|| unsafe { crc32_chunk(self.warp, out.add(from), n) })
    }
}

/// A block header's result handed between lanes: the status code, or `HEADER_READ` with the
/// block's kind (bit 0: Huffman), BFINAL (bit 1), whether its code is dynamic (bit 2), and a
/// dynamic code's HLIT and HDIST (from bits 10 and 20).
const HEADER_READ: u32 = 1 << 8;

impl<W: Warp, R: Rounds> Sink<'_, W, R> {
    /// Decodes the raw deflate stream at the start of `stream` after the bytes so far; returns
    /// the input bytes it spans. Ends with the output visible to every lane.
    unsafe fn inflate(&mut self, stream: &[u8], tables: *mut DecodeTables) -> Result<usize, Status> {
        let mut src = Bits::new(stream);
        loop {
            let (block, last) = unsafe { self.block_header(&mut src, tables)? };
            match block {
                Block::Stored => unsafe { self.stored(src.stored()?)? },
                Block::Huffman => unsafe { self.huffman_block(&mut src, &*tables)? },
            }
            if last {
                self.rounds.settle(self.warp); // the checksums read the output
                return Ok(src.consumed_bytes());
            }
        }
    }

    /// Reads a block header in the first lane (a dynamic block's code lengths with it); the
    /// other lanes take its reader, and the warp builds a Huffman block's tables.
    unsafe fn block_header(&self, src: &mut Bits, tables: *mut DecodeTables) -> Result<(Block, bool), Status> {
        let warp = self.warp;
        let mut code = 0;
        if warp.lane() == 0 {
            code = match read_block_lengths(src, unsafe { &mut *tables }) {
                Ok((block, last, lengths)) => {
                    let dynamic = match lengths {
                        Lengths::Fixed => 0,
                        Lengths::Dynamic { hlit, hdist } => 4 | (hlit as u32) << 10 | (hdist as u32) << 20,
                    };
                    HEADER_READ | (block == Block::Huffman) as u32 | (last as u32) << 1 | dynamic
                }
                Err(status) => status as u32,
            };
        }
        warp.sync(); // the code lengths are visible to every lane
        let code = warp.shuffle(code, 0);
        if code & HEADER_READ == 0 {
            return Err(Status::from_code(code));
        }
        *src = src.map_state(|word| warp.shuffle(word, 0));
        let last = code & 2 != 0;
        if code & 1 == 0 {
            return Ok((Block::Stored, last));
        }
        let lengths = match code & 4 {
            0 => Lengths::Fixed,
            _ => Lengths::Dynamic { hlit: (code >> 10 & 1023) as usize, hdist: (code >> 20 & 1023) as usize },
        };
        unsafe {
            build_block_tables(warp, tables, lengths, false)?;
            pair_literals(warp, (*tables).litlen.as_mut_ptr());
        }
        Ok((Block::Huffman, last))
    }

    /// A stored block's bytes, copied warp-wide.
    unsafe fn stored(&mut self, bytes: &[u8]) -> Result<(), Status> {
        let n = bytes.len() as u32;
        if n > self.output.capacity - self.len {
            return Err(self.output.full);
        }
        if self.output.writes() {
            unsafe { lz77::copy(self.warp, bytes.as_ptr(), self.output.out.add(self.len as usize), n) };
            self.warp.sync(); // the bytes are visible to every lane
        }
        self.len += n;
        Ok(())
    }

    /// A Huffman block's symbols through its end-of-block symbol, a round of up to 32 at a time.
    unsafe fn huffman_block(&mut self, src: &mut Bits, t: &DecodeTables) -> Result<(), Status> {
        loop {
            let mut round = Round::default();
            unsafe { self.round(src, t, &mut round)? };
            if self.output.writes() {
                unsafe { self.write(&round.token) };
            }
            self.len += round.size;
            if round.end {
                self.warp.sync(); // the bytes this warp wrote are visible to every lane
                return Ok(());
            }
        }
    }

    /// Up to 32 symbols, one after another as the format crate's decoder reads them (every
    /// lane alike), through the end-of-block symbol; lane j keeps the j-th. A pair entry gives
    /// two literals at once, as one symbol of the round. Reading past the input's end is
    /// checked where the round ends or fails, not at each code: once past it, it stays past, so
    /// the first failure is still the scalar decoder's `Truncated` where that came first. (A
    /// pair whose second code runs past the end is such a failure: the scalar decoder reads
    /// that code next and finds it truncated.) Two refills a match: a code and its extra bits
    /// take at most 20 and 28 of the 32 bits a peek leaves.
    unsafe fn round(&self, src: &mut Bits, t: &DecodeTables, round: &mut Round) -> Result<(), Status> {
        let lane = self.warp.lane();
        let (capacity, full) = (self.output.capacity, self.output.full);
        let op = |round: &Round| self.len + round.size;
        let failed = |src: &Bits, status| if src.overran() { Status::Truncated } else { status };
        let tables = unsafe { Tables::new(t) };
        let mut next = tables.litlen_root(src.peek());
        while round.tokens < WARP_SIZE {
            next = unsafe { self.literals(src, &tables, round, next) };
            if let Some(entry) = unsafe { self.a_match(src, &tables, round, next) } {
                next = entry;
                continue;
            }
            if round.tokens == WARP_SIZE {
                break;
            }
            let entry = unsafe { lookup_shared(t.litlen.as_ptr(), LITLEN_ROOT, src.peek()) };
            let kind = entry_kind(entry);
            let token = match kind {
                KIND_LITERAL | KIND_PAIR => {
                    let size = 1 + (kind == KIND_PAIR) as u32;
                    let room = capacity - op(round);
                    if room < size {
                        // Where not even a pair's first literal fits, the scalar decoder fails
                        // having read its code alone: the second may run past the input's end.
                        // (Decided here, off the path every literal takes: it cost 5 to 8%.)
                        src.skip(if kind == KIND_PAIR && room == 0 { entry_extra(entry) } else { entry_len(entry) });
                        return Err(failed(src, full));
                    }
                    src.skip(entry_len(entry));
                    Token { at: op(round), size, len: 0, value: entry_value(entry) }
                }
                _ => {
                    src.skip(entry_len(entry));
                    match kind {
                        KIND_BASE => {
                            let len = entry_value(entry) + src.take_held(entry_extra(entry));
                            let entry = unsafe { lookup_shared(t.dist.as_ptr(), DIST_ROOT, src.peek()) };
                            src.skip(entry_len(entry));
                            if entry_kind(entry) != KIND_BASE {
                                return Err(failed(src, Status::Malformed));
                            }
                            let dist = entry_value(entry) + src.take_held(entry_extra(entry));
                            let at = op(round);
                            if len > capacity - at {
                                return Err(failed(src, full));
                            }
                            if dist == 0 || dist > at {
                                return Err(failed(src, Status::BadOffset));
                            }
                            Token { at, size: len, len, value: dist }
                        }
                        KIND_END if !src.overran() => {
                            round.end = true;
                            return Ok(());
                        }
                        _ => return Err(failed(src, Status::Malformed)),
                    }
                }
            };
            if lane == round.tokens {
                round.token = token;
            }
            round.tokens += 1;
            round.size += token.size;
            next = tables.litlen_root(src.peek());
        }
        if src.overran() { Err(Status::Truncated) } else { Ok(()) }
    }

    /// The round's next literals (and pairs), as [`Sink::round`]'s loop decodes them, while
    /// their codes are in the root table and two more bytes fit, from `entry`, the root entry of
    /// the code at the reader (a peek's bits on); returns that of the symbol it stopped before,
    /// the same. Each code's lookup is issued from the bits after the code before, taken as a
    /// literal's before its kind is known (a peek leaves 32 bits, a root code takes at most 10,
    /// so those bits are held): the chain from one lookup to the next is the length, a shift and
    /// the address, and the kind's test, the refill and the token's bookkeeping overlap it.
    ///
    /// # Safety
    /// As [`Sink::round`].
    #[inline(always)]
    unsafe fn literals(&self, src: &mut Bits, t: &Tables, round: &mut Round, mut entry: u32) -> u32 {
        // Two more bytes fit below `limit`; a lane's token is the default (`len` 0) until it
        // takes one, so a literal's sets the rest.
        let (lane, limit) = (self.warp.lane(), self.output.capacity.saturating_sub(1));
        let (mut at, mut tokens) = (self.len + round.size, round.tokens);
        loop {
            let len = entry_len(entry);
            let next = t.litlen_root(src.held() >> len);
            let kind = entry_kind(entry);
            if !((kind == KIND_LITERAL || kind == KIND_PAIR) && at < limit && tokens < WARP_SIZE) {
                (round.size, round.tokens) = (at - self.len, tokens);
                return entry;
            }
            src.skip(len);
            src.peek();
            let size = 1 + (kind == KIND_PAIR) as u32;
            if lane == tokens {
                (round.token.at, round.token.size, round.token.value) = (at, size, entry_value(entry));
            }
            (at, tokens) = (at + size, tokens + 1);
            entry = next;
        }
    }

    /// The match whose length code's root entry is `entry` (a peek's bits on from here), as
    /// [`Sink::round`]'s loop decodes it, where its codes are in the root tables and it passes
    /// the loop's checks: returns the root entry of the code after it (a peek's bits on from
    /// there), or `None` having consumed nothing. The distance's lookup is issued from the bits
    /// held after the length's extra bits (at least 17), before the refill its own extra bits
    /// need, and the next code's from those after it (at least 11).
    ///
    /// # Safety
    /// As [`Sink::round`].
    #[inline(always)]
    unsafe fn a_match(&self, src: &mut Bits, t: &Tables, round: &mut Round, entry: u32) -> Option<u32> {
        if entry_kind(entry) != KIND_BASE || round.tokens >= WARP_SIZE {
            return None;
        }
        let (code, extra) = (entry_len(entry), entry_extra(entry));
        let after_code = src.held() >> code;
        let len = entry_value(entry) + low_bits(after_code, extra);
        let d = t.dist_root(after_code >> extra);
        let mut after = *src;
        after.skip(code + extra);
        let bits = after.peek();
        let (code, extra) = (entry_len(d), entry_extra(d));
        let distance = entry_value(d) + low_bits(bits >> code, extra);
        let at = self.len + round.size;
        if entry_kind(d) != KIND_BASE || len > self.output.capacity - at || distance == 0 || distance > at {
            return None;
        }
        after.skip(code + extra);
        let next = t.litlen_root(after.held());
        after.peek();
        *src = after;
        if self.warp.lane() == round.tokens {
            round.token = Token { at, size: len, len, value: distance };
        }
        round.tokens += 1;
        round.size += len;
        Some(next)
    }

    /// Writes a round's tokens: the literals at once, then the matches (by `rounds`).
    unsafe fn write(&mut self, token: &Token) {
        let out = self.output.out;
        if token.size != 0 && token.len == 0 {
            unsafe { *out.add(token.at as usize) = token.value as u8 };
            if token.size == 2 {
                unsafe { *out.add(token.at as usize + 1) = (token.value >> 8) as u8 };
            }
        }
        let mine = Match { at: token.at, dist: token.value, len: token.len };
        unsafe { self.rounds.copy(self.warp, &self.output, mine, 0) };
    }
}

/// A round of symbols, as a lane holds it: its token, how many tokens the round has and their
/// bytes, and whether the round ends the block.
#[derive(Clone, Copy, Default)]
struct Round {
    token: Token,
    tokens: u32,
    size: u32,
    end: bool,
}

/// One symbol's output (a pair entry's two literals counting as one): one or two literals
/// (`len` 0, the bytes in `value`, the first in its low byte) or a match of `len` bytes from
/// `value` back; `size` bytes at `at` (0: none).
#[derive(Clone, Copy, Default)]
struct Token {
    at: u32,
    size: u32,
    len: u32,
    value: u32,
}

/// A Huffman block's decode tables in shared memory, as [`Sink::literals`] and [`Sink::a_match`]
/// read their roots: at 32-bit shared addresses.
struct Tables {
    litlen: SharedBytes,
    dist: SharedBytes,
}

impl Tables {
    /// # Safety
    /// `t` must be in shared memory.
    unsafe fn new(t: &DecodeTables) -> Self {
        unsafe {
            Self { litlen: SharedBytes::new(t.litlen.as_ptr().cast()), dist: SharedBytes::new(t.dist.as_ptr().cast()) }
        }
    }

    /// The literal/length root entry `bits` index.
    #[inline(always)]
    fn litlen_root(&self, bits: u64) -> u32 {
        unsafe { self.litlen.u32(4 * (bits as u32 & ((1 << LITLEN_ROOT) - 1))) }
    }

    /// The distance root entry `bits` index.
    #[inline(always)]
    fn dist_root(&self, bits: u64) -> u32 {
        unsafe { self.dist.u32(4 * (bits as u32 & ((1 << DIST_ROOT) - 1))) }
    }
}

/// A byte's source in [`copy_matches`] given as the lane of the step writing it (bit 31: no
/// output position reaches it).
const IN_LANE: u32 = 1 << 31;

/// Turns the literal/length table's root entries whose bits hold two literal codes into pair
/// entries (`KIND_PAIR`), so that a literal-heavy block takes half the lookups: an entry's second
/// literal is the root entry that its bits after the first code index, where that code is no
/// longer than the bits left. Ends with the table visible to every lane.
///
/// # Safety
/// `table` must hold a built literal/length table, writable by this warp alone.
unsafe fn pair_literals<W: Warp>(warp: &W, table: *mut u32) {
    // Highest indices first: an entry's second literal lies at half its index or below, which
    // the steps before have not changed; only the last step (indices below 32) reads entries
    // that it writes.
    let mut step = (1 << LITLEN_ROOT) / WARP_SIZE;
    while step > 0 {
        step -= 1;
        let i = (step * WARP_SIZE + warp.lane()) as usize;
        let first = unsafe { *table.add(i) };
        let l1 = entry_len(first);
        let mut entry = first;
        if entry_kind(first) == KIND_LITERAL && l1 < LITLEN_ROOT {
            let second = unsafe { *table.add(i >> l1) };
            if entry_kind(second) == KIND_LITERAL && entry_len(second) <= LITLEN_ROOT - l1 {
                entry = pair_entry(first, second);
            }
        }
        if step == 0 {
            warp.sync();
        }
        unsafe { *table.add(i) = entry };
    }
    warp.sync();
}

/// The bit reader of the format crate, its 8 bytes loaded from the three aligned words holding
/// them (where bytes would take eight loads).
type Bits<'a> = BitReader<'a, AlignedWords>;

/// A [`Load`] from aligned words.
struct AlignedWords;

impl Load for AlignedWords {
    /// The third word may end 4 bytes past the 8.
    const SPAN: usize = 12;

    #[inline(always)]
    unsafe fn load(input: &[u8], pos: usize) -> u64 {
        let (base, shift) = aligned(unsafe { input.as_ptr().add(pos) });
        let words = unsafe { [*base, *base.add(1), *base.add(2)] };
        funnel(words[0], words[1], shift) as u64 | (funnel(words[1], words[2], shift) as u64) << 32
    }
}

/// Copies the matches of the lanes in `lanes` (each `len` bytes at `at` from `dist` back, in
/// lane order, which is output order), all their bytes together, 32 a step: a byte whose
/// source is a byte of the set that the same step writes takes that byte's source instead,
/// and so on back to a byte written before (the steps before wrote theirs). The search for
/// that byte's lane is made only in the steps that need it (none where every match's
/// sources precede the set, as a lone match's do). Ends with them visible to every lane.
///
/// # Safety
/// The matches must fit `output` and reach no further back than its start; the bytes before
/// the set's that they read must be written and visible to every lane.
#[inline(always)]
pub unsafe fn copy_matches<W: Warp>(warp: &W, output: &Output, lanes: u32, at: u32, dist: u32, len: u32) {
    if lanes == 0 || !output.writes() {
        return;
    }
    let lane = warp.lane();
    let mine = lanes >> lane & 1 != 0;
    let size = if mine { len } else { 0 };
    let end = scan_add(warp, size);
    let (start, total) = (end - size, warp.shuffle(end, WARP_SIZE - 1));
    // A match's sources lie in the `dist.min(len)` bytes `dist` before it; those ending after
    // the set's first byte may be bytes of the set.
    let set_at = warp.shuffle(at, lanes.trailing_zeros());
    let chases = warp.ballot(mine && at - dist + dist.min(len) > set_at) != 0;
    // For finding the match holding an output position: each lane's last match at or
    // before it (its lane plus 1, 0 before the first), and that match's position.
    let (match_at, match_lane) = match chases {
        true => (scan_max(warp, if mine { at } else { 0 }), scan_max(warp, if mine { lane + 1 } else { 0 })),
        false => (0, 0),
    };
    warp.sync(); // the bytes written before are visible to every lane
    let mut step = 0;
    while step < total {
        let t = step + lane;
        let owner = last_starting_by(warp, start, t);
        let (to, back) = (warp.shuffle(at, owner), warp.shuffle(dist, owner));
        let i = t - warp.shuffle(start, owner);
        let copying = t < total;
        // The bytes before this step's first are final.
        let fresh = warp.shuffle(to + i, 0);
        let mut from = if copying { source(to, back, i, fresh) } else { 0 };
        if chases && warp.ballot(copying && from >= fresh) != 0 {
            // A source that the step writes is a lane's byte: this lane takes that lane's
            // source, pointer jumping (each turn halves the chains: five turns at most).
            let holder = warp.shuffle(match_lane, last_starting_by(warp, match_at, from));
            let m = holder.saturating_sub(1);
            let (m_to, m_n, m_start) = (warp.shuffle(at, m), warp.shuffle(len, m), warp.shuffle(start, m));
            if copying && from >= fresh && holder != 0 && from >= m_to && from - m_to < m_n {
                from = IN_LANE | (m_start + (from - m_to) - step);
            }
            while warp.ballot(from & IN_LANE != 0) != 0 {
                let theirs = warp.shuffle(from, from & !IN_LANE);
                if from & IN_LANE != 0 {
                    from = theirs;
                }
            }
        }
        if copying {
            let out = output.out;
            unsafe { *out.add((to + i) as usize) = *out.add(from as usize) };
        }
        warp.sync(); // the step's bytes are final for the steps after it, and every lane
        step += WARP_SIZE;
    }
}

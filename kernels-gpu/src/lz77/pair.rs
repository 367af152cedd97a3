//! The warp decoder split over a block of two warps a chunk, so that reading the stream and
//! writing the output overlap (nvCOMP's Snappy decoder also gives parsing and writing warps of
//! their own). The first warp parses batches of up to 32 short sequences: its lanes size the
//! sequences that would start at each byte of the next 128 input bytes into a table, the
//! warp walks the real ones through it, a hop a sequence, and lane k parses and checks the k-th
//! ([`Syntax::short_sequence`]; anything else goes to [`Walk::check_one`]). The second warp
//! writes the batch the first parsed before, while the first parses the next. They meet at a
//! block barrier a batch and hand batches over through two slots of shared memory: a slot lists
//! its batch's sequences in output order and marks where each starts, 32 bytes a word, so that a
//! lane finds the sequence of its byte with a popcount.

use super::{
    Parsed, SHORT_SEQUENCE, Stream, Syntax, aligned, byte_source, copy, copy_match, input_word, scan_add, word_at,
};
use crate::block::Block;
use crate::raw::SharedBytes;
use crate::warp::{WARP_SIZE, Warp};
use core::ptr::null;
use ferrocomp_format::Status;

/// A syntax whose short sequences the pair's parser can size from their first two bytes, and
/// whose other sequences it can check without writing them.
pub trait Walk: Syntax {
    /// The one sequence at input `ip` (output `op`), of any shape, read with every check of the
    /// scalar decoder and its statuses, and whether the chunk is complete once its bytes are
    /// written. Nothing is written: a sequence refused writes none of its bytes.
    fn check_one(&self, stream: &Stream, ip: u32, op: u32) -> Result<(Parsed, bool), Status>;

    /// Input bytes (at most 255) of the sequence whose first two bytes are `head` (the first in
    /// the low byte; a byte past the input reads as 0), with `left` input bytes from its start
    /// on (at least 1), if [`Syntax::short_sequence`] takes it (its `next` is then its start plus
    /// these); else 0.
    fn short_size(&self, head: u32, left: u32) -> u32;
}

/// Input bytes a batch's sequences start in.
const WINDOW: u32 = 4 * WARP_SIZE;
/// Output bytes of a writer's step: two a lane.
const STEP: u32 = 2 * WARP_SIZE;
/// Most mark words a batch takes, one a 32 bytes of output: 32 sequences of at most
/// [`SHORT_SEQUENCE`] bytes.
const MARK_WORDS: u32 = SHORT_SEQUENCE;

/// What the writer does with a slot (its word at [`COMMAND`]).
const BATCH: u32 = 0;
/// Write the slot's first sequence alone ([`write_one`]).
const ONE: u32 = 1;
/// The chunk is done (or failed): return.
const DONE: u32 = 2;

// A slot's layout (byte offsets): the command, the output position of its bytes, their count,
// whether a match may read bytes its own step of the writer writes; the sequences in output
// order, each (output start, literal count, literals' input position, match offset: the match
// runs up to the next sequence's start); then a word a 32 bytes of output, bit `i` set where a
// sequence starts at its byte `i`.
const COMMAND: u32 = 0;
const OP: u32 = 4;
const TOTAL: u32 = 8;
const CHASES: u32 = 12;
const SEQUENCES: u32 = 16;
const STARTS: u32 = SEQUENCES + 16 * WARP_SIZE;
const SLOT_BYTES: u32 = STARTS + 4 * MARK_WORDS;
/// The parser's table (after the two slots): a byte a window position, then as many zeros, where
/// a walk past the window stops.
const SIZES: u32 = 2 * SLOT_BYTES;

/// Shared memory of a pair.
pub const SHARED_BYTES: usize = (SIZES + 2 * WINDOW) as usize;
/// Warps of a pair's block.
pub const WARPS: u32 = 2;
/// Pairs an SM must hold at once (ptxas keeps them to 64 registers): 4,096 chunks of 64 KiB in
/// two waves on an H200.
pub const BLOCKS_PER_SM: u32 = 16;

/// Decodes `stream` from input `ip` (output 0) with a block of two warps; the size in the first
/// warp (the second returns `Ok(0)`).
///
/// # Safety
/// As [`super::decode`]; `shared` must be [`SHARED_BYTES`] of the block's shared memory,
/// 16-aligned, and the block these two warps, both calling this.
pub unsafe fn decode<B: Block, W: Warp, S: Walk>(
    block: &B,
    warp: &W,
    syntax: &S,
    stream: &Stream,
    mut ip: u32,
    shared: *mut u8,
) -> Result<u32, Status> {
    let shared = unsafe { SharedBytes::new(shared) };
    let slot = |n: u32| shared.at(n % 2 * SLOT_BYTES);
    if block.thread() >= WARP_SIZE {
        unsafe { write_handed_batches(block, warp, stream, slot) };
        return Ok(0);
    }
    let lane = warp.lane();
    unsafe { shared.set_u32(SIZES + WINDOW + 4 * lane, 0) }; // the zeros past the window
    let mut window = unsafe { Window::new(shared.at(SIZES), stream, ip, lane) };
    let (mut op, mut posted) = (0, 0);
    let result = loop {
        let (next_ip, total, complete) = match unsafe {
            parse_batch(warp, syntax, stream, ip, op, slot(posted), &mut window)
        } {
            Some((next_ip, total)) => (next_ip, total, false),
            None => match syntax.check_one(stream, ip, op) {
                Err(status) => break Err(status),
                Ok((one, complete)) => {
                    let total = one.literals + one.len;
                    if lane == 0 {
                        let Parsed { literals_at, literals, offset, .. } = one;
                        unsafe { post(slot(posted), ONE, op, total, false, [op, literals, literals_at, offset], 0) };
                    }
                    (one.next, total, complete)
                }
            },
        };
        if total > 0 {
            block.sync_threads(); // the writer takes the slot
            posted += 1;
        }
        (ip, op) = (next_ip, op + total);
        if complete {
            break Ok(op);
        }
    };
    if lane == 0 {
        unsafe { slot(posted).set_u32(COMMAND, DONE) };
    }
    block.sync_threads(); // the writer has written every batch and goes home
    result
}

/// Writes a slot's header and sequence `index`.
///
/// # Safety
/// `slot` must be the parser's to fill.
#[inline(always)]
unsafe fn post(slot: SharedBytes, command: u32, op: u32, total: u32, chases: bool, sequence: [u32; 4], index: u32) {
    unsafe {
        if index == 0 {
            slot.set_u32(COMMAND, command);
            slot.set_u32(OP, op);
            slot.set_u32(TOTAL, total);
            slot.set_u32(CHASES, chases as u32);
        }
        slot.set_u32x4(SEQUENCES + 16 * index, sequence);
    }
}

/// Parses into `slot` the run of up to 32 short sequences from input `ip` (output `op`) that
/// start in the next [`WINDOW`] bytes and pass the scalar decoder's checks, their starts marked:
/// the input after them and their output bytes, or `None` (the slot untouched) where the first
/// is not such. Its input comes from `window` where that was loaded at `ip`; the window after
/// the run is loaded as soon as the run is known, so that its loads are in flight while the
/// run is posted and the writer catches up.
///
/// # Safety
/// As [`decode`]; `slot` the parser's to fill (the writer does not read it before the next
/// barrier).
#[inline(always)]
unsafe fn parse_batch<W: Warp, S: Walk>(
    warp: &W,
    syntax: &S,
    stream: &Stream,
    ip: u32,
    op: u32,
    slot: SharedBytes,
    window: &mut Window,
) -> Option<(u32, u32)> {
    let lane = warp.lane();
    if window.ip != ip {
        unsafe { window.load(stream, ip, lane) };
    }
    // Lane l sizes the sequences that would start at window bytes 4l to 4l + 3.
    let word = window.word;
    let next_word = warp.shuffle(word, lane + 1);
    let next_word = if lane == WARP_SIZE - 1 { window.last } else { next_word };
    let bytes = ((next_word as u64) << 32 | word as u64) >> aligned(unsafe { stream.block.add(ip as usize) }).1;
    let mut four = 0;
    for i in 0..4 {
        let left = stream.end.saturating_sub(ip + 4 * lane + i);
        let size = if left == 0 { 0 } else { syntax.short_size((bytes >> (8 * i)) as u32 & 0xffff, left) };
        four |= size << (8 * i);
    }
    unsafe { window.sizes.set_u32(4 * lane, four) };
    warp.sync(); // the table is whole
    let (mut at, mut walked, mut mine) = (0, 0, 0);
    loop {
        let size = unsafe { window.sizes.u8(at) } as u32;
        if size == 0 {
            break;
        }
        if lane == walked {
            mine = ip + at;
        }
        (at, walked) = (at + size, walked + 1);
        if walked == WARP_SIZE {
            break;
        }
    }
    warp.sync(); // the table is read before the next batch's is written
    let parsed =
        if lane < walked { syntax.short_sequence(stream, mine, unsafe { head_at(stream, mine) }) } else { None };
    let Parsed { literals_at, literals, offset, len, next } =
        parsed.unwrap_or(Parsed { literals_at: 0, literals: 0, offset: 0, len: 0, next: 0 });

    // Place them, and keep those before the first the scalar decoder refuses.
    let bytes = literals + len;
    let end_of_mine = op + scan_add(warp, bytes);
    let start = end_of_mine - bytes;
    let match_start = start + literals;
    let capacity = stream.capacity;
    let bad = lane < walked
        && (literals > capacity.saturating_sub(start)
            || (len > 0 && (offset == 0 || offset > match_start || len > capacity.saturating_sub(match_start))));
    let count = walked.min(warp.ballot(bad).trailing_zeros());
    if count == 0 {
        return None;
    }
    let last = count - 1;
    let (total, next_ip) = (warp.shuffle(end_of_mine, last) - op, warp.shuffle(next, last));
    unsafe { window.load(stream, next_ip, lane) };
    let mine = lane < count;
    let chases = warp.ballot(mine && len > 0 && offset < STEP && match_start + len > op + offset) != 0;

    // The mark words of the writer's steps, two a step. Two words a lane, each written on its
    // own: a loop over them went through local memory.
    let words = 2 * total.div_ceil(STEP);
    if lane < words {
        unsafe { slot.set_u32(STARTS + 4 * lane, 0) };
    }
    if lane + WARP_SIZE < words {
        unsafe { slot.set_u32(STARTS + 4 * (lane + WARP_SIZE), 0) };
    }
    warp.sync(); // the marks are cleared before any is set
    if mine {
        unsafe { post(slot, BATCH, op, total, chases, [start, literals, literals_at, offset], lane) };
        let at = start - op;
        unsafe { slot.or_u32(STARTS + 4 * (at / WARP_SIZE), 1 << (at % WARP_SIZE)) };
    }
    Some((next_ip, total))
}

/// The parser's window of input: its words, lane `l`'s the `l`-th aligned word from the one
/// holding input byte `ip` and the last lane's `last` the 32nd, and its table of sizes in shared
/// memory ([`SIZES`]).
struct Window {
    sizes: SharedBytes,
    ip: u32,
    word: u32,
    last: u32,
}

impl Window {
    /// The window at `ip`, its table at `sizes`.
    ///
    /// # Safety
    /// As [`decode`].
    #[inline(always)]
    unsafe fn new(sizes: SharedBytes, stream: &Stream, ip: u32, lane: u32) -> Self {
        let mut window = Self { sizes, ip, word: 0, last: 0 };
        unsafe { window.load(stream, ip, lane) };
        window
    }

    /// Loads the words of the window at `ip` (as [`input_word`] reads them).
    ///
    /// # Safety
    /// As [`decode`].
    #[inline(always)]
    unsafe fn load(&mut self, stream: &Stream, ip: u32, lane: u32) {
        self.word = unsafe { input_word(stream, ip, lane) };
        self.last = if lane == WARP_SIZE - 1 { unsafe { input_word(stream, ip, WARP_SIZE) } } else { 0 };
        self.ip = ip;
    }
}

/// The 8 input bytes from `p` on, little-endian; those at or past the input's end read as 0
/// (and are not read).
///
/// # Safety
/// As [`decode`]; `p` below `stream.end`.
#[inline(always)]
unsafe fn head_at(stream: &Stream, p: u32) -> u64 {
    let at = unsafe { stream.block.add(p as usize) };
    if stream.end - p >= 8 {
        return unsafe { word_at(at) as u64 | (word_at(at.add(4)) as u64) << 32 };
    }
    let mut head = 0;
    for i in 0..stream.end - p {
        head |= (unsafe { *at.add(i as usize) } as u64) << (8 * i);
    }
    head
}

/// The writing warp's part: writes each batch handed over through the slots until told it is
/// done.
///
/// # Safety
/// As [`decode`].
unsafe fn write_handed_batches<B: Block, W: Warp>(
    block: &B,
    warp: &W,
    stream: &Stream,
    slot: impl Fn(u32) -> SharedBytes,
) {
    let mut taken = 0;
    loop {
        block.sync_threads(); // the parser handed a slot over
        let slot = slot(taken);
        taken += 1;
        match unsafe { slot.u32(COMMAND) } {
            BATCH => unsafe { write_batch(warp, stream, slot) },
            ONE => {
                let [op, literals, literals_at, offset] = unsafe { slot.u32x4(SEQUENCES) };
                let len = unsafe { slot.u32(TOTAL) } - literals;
                unsafe { write_one(warp, stream, &Parsed { literals_at, literals, offset, len, next: 0 }, op) };
            }
            _ => return,
        }
    }
}

/// Writes a slot's batch [`STEP`] bytes a step, lane `l` the step's bytes `l` and `l + 32`, each
/// lane finding its bytes' sequences by their ranks among the step's marked starts. Both bytes
/// load before either is stored, and the next step's sequences are looked up while they load,
/// so that a step waits on one round trip (a store before the shared loads would order them
/// after it): half as many round trips a chunk as 32 bytes a step.
///
/// # Safety
/// As [`decode`]; `slot` handed over.
#[inline(always)]
unsafe fn write_batch<W: Warp>(warp: &W, stream: &Stream, slot: SharedBytes) {
    let lane = warp.lane();
    let (op, total, chases) = unsafe { (slot.u32(OP), slot.u32(TOTAL), slot.u32(CHASES) != 0) };
    let end = op + total;
    let mut step = unsafe { Step::first(slot, op) };
    let (mut low, mut high) = (step.sequence_of(lane), step.sequence_of(lane + WARP_SIZE));
    while step.fresh < end {
        let mut low_byte = unsafe { Byte::new(stream, &step, lane, low, end) };
        let mut high_byte = unsafe { Byte::new(stream, &step, lane + WARP_SIZE, high, end) };
        if chases && warp.ballot(low_byte.unwritten || high_byte.unwritten) != 0 {
            follow(warp, &mut low_byte, &mut high_byte);
        }
        let (low_value, high_value) = unsafe { (low_byte.load(), high_byte.load()) };
        let next = unsafe { step.next(end) };
        if next.fresh < end {
            (low, high) = (next.sequence_of(lane), next.sequence_of(lane + WARP_SIZE));
        }
        unsafe {
            low_byte.store(stream, low_value);
            high_byte.store(stream, high_value);
        }
        warp.sync(); // the step's bytes are visible to every lane
        step = next;
    }
}

/// A lane's byte of a step: its output position, whether the batch has it, where it comes from
/// and, where its own step writes that (`unwritten`), that byte's index in the step (`link`;
/// its own index otherwise).
struct Byte {
    at: u32,
    writing: bool,
    unwritten: bool,
    link: u32,
    source: *const u8,
}

impl Byte {
    /// The step's byte `i`, of `sequence`, in a batch ending at `end`.
    ///
    /// # Safety
    /// As [`write_batch`].
    #[inline(always)]
    unsafe fn new(stream: &Stream, step: &Step, i: u32, sequence: [u32; 4], end: u32) -> Self {
        let [start, literals, literals_at, offset] = sequence;
        let at = step.fresh + i;
        let writing = at < end;
        let unwritten = writing && at - start >= literals && at - offset >= step.fresh;
        let link = if unwritten { at - offset - step.fresh } else { i };
        let sequence = (literals, literals_at, offset);
        let source = if writing { unsafe { byte_source(stream, at, at - start, sequence, None) } } else { null() };
        Self { at, writing, unwritten, link, source }
    }

    /// The byte's value (0 where the batch has no such byte).
    ///
    /// # Safety
    /// As [`write_batch`], the byte followed.
    #[inline(always)]
    unsafe fn load(&self) -> u8 {
        if self.writing { unsafe { *self.source } } else { 0 }
    }

    /// Writes `value` as the byte, where the batch has it.
    ///
    /// # Safety
    /// As [`write_batch`].
    #[inline(always)]
    unsafe fn store(&self, stream: &Stream, value: u8) {
        if self.writing {
            unsafe { *stream.out.add(self.at as usize) = value };
        }
    }
}

/// Gives the step's unwritten bytes (lane `l` holding bytes `l` and `l + 32`) the sources of the
/// bytes they repeat, by pointer jumping: each round a byte links to its link's link, halving
/// every chain (at most six rounds for 64 bytes), until each links to a byte whose source is
/// final, then takes that source. Every lane calls this.
#[inline(always)]
fn follow<W: Warp>(warp: &W, low: &mut Byte, high: &mut Byte) {
    // The value `low_value` / `high_value` has at the step's byte `k`.
    let at = |low_value: u32, high_value: u32, k: u32| {
        let (from_low, from_high) = (warp.shuffle(low_value, k % WARP_SIZE), warp.shuffle(high_value, k % WARP_SIZE));
        if k < WARP_SIZE { from_low } else { from_high }
    };
    loop {
        let (low_next, high_next) = (at(low.link, high.link, low.link), at(low.link, high.link, high.link));
        if warp.ballot(low_next != low.link || high_next != high.link) == 0 {
            break;
        }
        (low.link, high.link) = (low_next, high_next);
    }
    let [low_source, high_source] = [low.source as u64, high.source as u64];
    let source_at = |k: u32| {
        let word = |shift: u32| at((low_source >> shift) as u32, (high_source >> shift) as u32, k) as u64;
        (word(0) | word(32) << 32) as *const u8
    };
    let (low_followed, high_followed) = (source_at(low.link), source_at(high.link));
    if low.unwritten {
        low.source = low_followed;
    }
    if high.unwritten {
        high.source = high_followed;
    }
}

/// One [`STEP`]-byte step of a slot's batch.
struct Step {
    slot: SharedBytes,
    /// The batch's output position.
    op: u32,
    /// Output position of the step's first byte.
    fresh: u32,
    /// Sequences starting before the step.
    before: u32,
    /// Where sequences start in the step (bit `i`: at its byte `i`).
    starts: u64,
}

impl Step {
    /// The batch's first step.
    ///
    /// # Safety
    /// `slot` must be handed over, its batch at output `op`.
    #[inline(always)]
    unsafe fn first(slot: SharedBytes, op: u32) -> Self {
        Self { slot, op, fresh: op, before: 0, starts: unsafe { Self::starts_at(slot, 0) } }
    }

    /// The step after this one, in a batch ending at `end` (past it: no starts, as its mark
    /// words are not the batch's).
    ///
    /// # Safety
    /// As [`Step::first`].
    #[inline(always)]
    unsafe fn next(&self, end: u32) -> Self {
        let fresh = self.fresh + STEP;
        let starts = if fresh < end { unsafe { Self::starts_at(self.slot, fresh - self.op) } } else { 0 };
        Self { slot: self.slot, op: self.op, fresh, before: self.before + self.starts.count_ones(), starts }
    }

    /// The two mark words of the step at `offset` bytes into the batch (a multiple of [`STEP`]).
    ///
    /// # Safety
    /// As [`Step::first`].
    #[inline(always)]
    unsafe fn starts_at(slot: SharedBytes, offset: u32) -> u64 {
        let word = STARTS + offset / WARP_SIZE * 4;
        unsafe { slot.u32(word) as u64 | (slot.u32(word + 4) as u64) << 32 }
    }

    /// The sequence holding the step's byte `i`, the last starting at or before it: (output
    /// start, literal count, literals' input position, match offset).
    #[inline(always)]
    fn sequence_of(&self, i: u32) -> [u32; 4] {
        let at_or_before = self.starts & (u64::MAX >> (STEP - 1 - i));
        unsafe { self.slot.u32x4(SEQUENCES + 16 * (self.before + at_or_before.count_ones() - 1)) }
    }
}

/// Writes one sequence that [`Walk::check_one`] read, at output `op`, with the whole warp
/// (its literals by [`copy_long`]); its bytes visible to every lane after.
///
/// # Safety
/// As [`decode`], and the sequence must have passed its checks at `op`.
#[inline(always)]
unsafe fn write_one<W: Warp>(warp: &W, stream: &Stream, one: &Parsed, op: u32) {
    let Parsed { literals_at, literals, offset, len, .. } = *one;
    unsafe { copy_long(warp, stream.block.add(literals_at as usize), stream.out.add(op as usize), literals) };
    warp.sync(); // the literals are visible to every lane
    if len > 0 {
        unsafe { copy_match(warp, stream.out, op + literals, offset, len) };
    }
}

/// [`copy`] for copies of any length: 512 bytes a step, 16 a lane in four groups of 4, all
/// loaded before any is stored, so that a long copy has them in flight together (where a pair
/// of warps decodes, half as many warps an SM as a warp a chunk: Snappy's incompressible chunks
/// decoded 28% slower at 128 bytes a step, H200), then as [`copy`].
///
/// # Safety
/// As [`copy`].
#[inline(always)]
unsafe fn copy_long<W: Warp>(warp: &W, src: *const u8, dst: *mut u8, n: u32) {
    const GROUP: u32 = 4 * WARP_SIZE;
    const GROUPS: u32 = 4;
    let lane = warp.lane();
    let mut base = 0;
    while base + GROUPS * GROUP <= n {
        let at = |k: u32| (base + k * GROUP + 4 * lane) as usize;
        let held: [[u8; 4]; GROUPS as usize] =
            core::array::from_fn(|k| unsafe { core::array::from_fn(|i| *src.add(at(k as u32) + i)) });
        for (k, bytes) in held.iter().enumerate() {
            unsafe { dst.add(at(k as u32)).copy_from_nonoverlapping(bytes.as_ptr(), 4) };
        }
        base += GROUPS * GROUP;
    }
    unsafe { copy(warp, src.add(base as usize), dst.add(base as usize), n - base) };
}

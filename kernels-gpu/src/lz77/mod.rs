//! The warp decoder LZ4 and Snappy share: both are runs of literals and matches (offset, length)
//! into the output written so far, differing only in how a sequence is spelled ([`Syntax`]).
//!
//! Runs of short sequences (at most [`SHORT_SEQUENCE`] bytes) are decoded together: each lane
//! parses the sequence that would start at its position of the next 32 input bytes (the warp
//! loads those bytes once), the real ones are found by pointer jumping, a prefix sum places
//! them, and the output is written 32 bytes a step, a match byte whose source the same step
//! writes following that byte back to its own source. Any other sequence goes through
//! [`Syntax::decode_one`], which checks everything as the format crate's scalar decoder does.
//!
//! Where a batch has too few chunks to fill the GPU a warp each, a block of threads decodes each
//! chunk instead ([`block`]).

pub mod block;
pub mod pair;

use crate::raw::{shared_u8, shared_u32};
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;

/// Output bytes of the longest sequence decoded in a batch; longer ones are copied alone.
pub const SHORT_SEQUENCE: u32 = 2 * WARP_SIZE;

/// Warps in a block of LZ4's and Snappy's decompress kernels.
pub const DECOMPRESS_WARPS: u32 = 8;
/// Blocks of those an SM must hold at once: 32 warps, which 64-KiB chunks fill in one wave
/// (4096 of them on 132 SMs). ptxas keeps the kernels to 64 registers, where it took up to 63
/// unbounded and more as the decoder grows (measured on an H200: LZ4 2-3% faster, Snappy level).
pub const DECOMPRESS_BLOCKS_PER_SM: u32 = 4;

/// A compressed chunk being decoded into its output; `STAGED` where its bytes are a copy in
/// shared memory, read as such (`ld.shared`, not a generic load).
pub struct Stream<const STAGED: bool = false> {
    /// The compressed bytes.
    pub block: *const u8,
    /// Their count.
    pub end: u32,
    /// The output.
    pub out: *mut u8,
    /// Bytes the output may hold.
    pub capacity: u32,
}

impl<const STAGED: bool> Stream<STAGED> {
    /// The compressed byte at `at` (which must be below `end`).
    #[inline(always)]
    pub fn byte(&self, at: u32) -> u32 {
        let at = unsafe { self.block.add(at as usize) };
        if STAGED { unsafe { shared_u8(at) as u32 } } else { unsafe { *at as u32 } }
    }

    /// The word at `at`, 4-byte aligned in memory (its 4 bytes below `end`).
    #[inline(always)]
    pub fn word(&self, at: u32) -> u32 {
        let at = unsafe { self.block.add(at as usize) as *const u32 };
        if STAGED { unsafe { shared_u32(at) } } else { unsafe { *at } }
    }
}

impl Stream {
    /// The same chunk, its bytes copied to `block` in shared memory.
    #[inline(always)]
    pub fn staged(&self, block: *const u8) -> Stream<true> {
        Stream { block, end: self.end, out: self.out, capacity: self.capacity }
    }
}

/// One short sequence as parsed: `literals` bytes at input `literals_at`, then `len` bytes
/// copied from `offset` back (none when `len` is 0); the next sequence starts at input `next`.
#[derive(Clone, Copy)]
pub struct Parsed {
    /// Input offset of the literals.
    pub literals_at: u32,
    /// Number of literal bytes.
    pub literals: u32,
    /// How far back the match copies from.
    pub offset: u32,
    /// Bytes the match copies (0: none).
    pub len: u32,
    /// Input offset of the next sequence.
    pub next: u32,
}

/// How a codec spells its sequences.
pub trait Syntax {
    /// Whether [`Syntax::short_sequence`] reads its `head` (when not, the warp skips loading it).
    const READS_HEAD: bool;
    /// Whether a stream decodes to exactly its capacity (Snappy's preamble states the size), not
    /// to at most that.
    const FILLS_CAPACITY: bool;

    /// The sequence starting at input `p` (below `stream.end`), of any length, if the scalar
    /// decoder reads it without error and it is not the block's end where the format needs one
    /// more; `next` is `stream.end` only for a sequence the stream may end with. `None` also for
    /// a length spelled in more than [`block::MAX_LENGTH_BYTES`] bytes, more than any output the
    /// block decoder takes; the warp decoder then gives the stream's result.
    fn sequence_at<const STAGED: bool>(&self, stream: &Stream<STAGED>, p: u32) -> Option<Parsed>;

    /// The sequence that would start at input `p`, if it is short (at most [`SHORT_SEQUENCE`]
    /// output bytes, all its input before `stream.end`) and may be batched. `head` holds the
    /// input bytes from `p` on, little-endian; those at or past `stream.end` are unspecified.
    fn short_sequence(&self, stream: &Stream, p: u32, head: u64) -> Option<Parsed>;

    /// Decodes the one sequence at `ip` (output `op`), of any shape, with every check of the
    /// scalar decoder and its statuses; returns whether the chunk is complete. Ends with the
    /// output it wrote visible to every lane.
    ///
    /// # Safety
    /// The stream's memory must be valid as for [`decode`].
    unsafe fn decode_one<W: Warp>(&self, warp: &W, stream: &Stream, ip: &mut u32, op: &mut u32)
    -> Result<bool, Status>;
}

/// Decodes `stream` from input `ip` and output `op` to its end; returns the output size.
///
/// # Safety
/// `stream.block` must be readable for `stream.end` bytes and `stream.out` writable for
/// `stream.capacity` bytes, and not written by anyone else meanwhile.
#[inline(always)]
pub unsafe fn decode<W: Warp, S: Syntax>(
    warp: &W,
    syntax: &S,
    stream: &Stream,
    mut ip: u32,
    mut op: u32,
) -> Result<u32, Status> {
    loop {
        let batch = unsafe { short_sequences(warp, syntax, stream, ip, op) };
        if batch.sequences == 0 {
            if unsafe { syntax.decode_one(warp, stream, &mut ip, &mut op)? } {
                return Ok(op);
            }
        } else {
            unsafe { write_batch(warp, stream, &batch, op) };
            (ip, op) = (batch.next_ip, op + batch.total);
        }
    }
}

/// Short sequences found together. Lane k describes the sequence that would start k bytes into
/// the batch's input (a real one where the chain of sequences passed through k).
struct Batch {
    /// How many sequences; 0 when the next one must be decoded alone.
    sequences: u32,
    /// Input position after the batch.
    next_ip: u32,
    /// Output bytes of the batch.
    total: u32,
    /// Whether a match may read bytes of its own 32-byte step (a source within 32 bytes back,
    /// reaching into the batch), which then need following back to final ones.
    chases: bool,
    /// The last real sequence's lane at or before this lane.
    owner: u32,
    /// Output position of the owner's literals (grows with the lane).
    owner_start: u32,
    /// Input position of this lane's literals.
    literals_at: u32,
    /// Literal bytes of this lane's sequence.
    literals: u32,
    /// Match offset of this lane's sequence.
    offset: u32,
}

impl Batch {
    /// Lane `j`'s sequence, as every lane sees it: its owner's output start, literal count,
    /// literals' input position and offset.
    #[inline(always)]
    fn owned_by<W: Warp>(&self, warp: &W, j: u32) -> (u32, u32, u32, u32) {
        let owner = warp.shuffle(self.owner, j);
        let start = warp.shuffle(self.owner_start, j);
        (
            start,
            warp.shuffle(self.literals, owner),
            warp.shuffle(self.literals_at, owner),
            warp.shuffle(self.offset, owner),
        )
    }
}

/// The run of short sequences starting at input `ip` (output `op`) that can be written
/// together; `sequences` is 0 when the next one is not such.
#[inline(always)]
unsafe fn short_sequences<W: Warp, S: Syntax>(warp: &W, syntax: &S, stream: &Stream, ip: u32, op: u32) -> Batch {
    let lane = warp.lane();
    let head = if S::READS_HEAD { unsafe { heads(warp, stream, ip) } } else { 0 };
    let parsed = syntax.short_sequence(stream, ip + lane, head);
    let Parsed { literals_at, literals, offset, len, next } =
        parsed.unwrap_or(Parsed { literals_at: 0, literals: 0, offset: 0, len: 0, next: 0 });

    // Follow the sequences from `ip` by pointer jumping: after r rounds, `jump` is where the
    // 2^r sequences from this lane's lead (WARP_SIZE once past the window or an unparsed one)
    // and `visited` the lanes they start at.
    let mut jump = if parsed.is_some() { (next - ip).min(WARP_SIZE) } else { WARP_SIZE };
    let mut visited = if parsed.is_some() { 1 << lane } else { 0 };
    let mut round = 0;
    while round < 5 {
        let from = jump % WARP_SIZE;
        let (their_visited, their_jump) = (warp.shuffle(visited, from), warp.shuffle(jump, from));
        if jump < WARP_SIZE {
            (visited, jump) = (visited | their_visited, their_jump);
        }
        round += 1;
    }
    let real = warp.shuffle(visited, 0);

    // Place them, and keep the valid prefix.
    let mine = real >> lane & 1 != 0;
    let bytes = if mine { literals + len } else { 0 };
    let end_of_mine = op + scan_add(warp, bytes);
    let start = end_of_mine - bytes;
    let match_start = start + literals;
    let capacity = stream.capacity;
    let bad = mine
        && (literals > capacity.saturating_sub(start)
            || (len > 0 && (offset == 0 || offset > match_start || len > capacity.saturating_sub(match_start))));
    let first_bad = warp.ballot(bad).trailing_zeros();
    let real = if first_bad == WARP_SIZE { real } else { real & ((1 << first_bad) - 1) };
    if real == 0 {
        return Batch {
            sequences: 0,
            next_ip: ip,
            total: 0,
            chases: false,
            owner: 0,
            owner_start: 0,
            literals_at,
            literals,
            offset,
        };
    }
    let last = 31 - real.leading_zeros();
    let total = warp.shuffle(end_of_mine, last) - op;
    let next_ip = warp.shuffle(next, last);
    let owner = scan_max(warp, if real >> lane & 1 != 0 { lane } else { 0 });
    let owner_start = warp.shuffle(start, owner);
    let chases = warp.ballot(real >> lane & 1 != 0 && len > 0 && offset < WARP_SIZE && match_start + len > op + offset);
    let (sequences, chases) = (real.count_ones(), chases != 0);
    Batch { sequences, next_ip, total, chases, owner, owner_start, literals_at, literals, offset }
}

/// The 8 input bytes from `ip + lane`, little-endian, for each lane: the warp loads the aligned
/// words under the 40 bytes from `ip` once ([`input_word`]: bytes outside the input read as 0),
/// and each lane funnels its own out of three of them.
///
/// # Safety
/// As [`decode`].
#[inline(always)]
unsafe fn heads<W: Warp>(warp: &W, stream: &Stream, ip: u32) -> u64 {
    let lane = warp.lane();
    let word = if lane > 10 { 0 } else { unsafe { input_word(stream, ip, lane) } };
    let shift = aligned(unsafe { stream.block.add(ip as usize) }).1;
    let lead = shift / 8;
    let first = (lead + lane) / 4;
    let bits = (shift + 8 * lane) % 32;
    let (low, middle, high) = (warp.shuffle(word, first), warp.shuffle(word, first + 1), warp.shuffle(word, first + 2));
    (funnel(middle, high, bits) as u64) << 32 | funnel(low, middle, bits) as u64
}

/// Aligned word `k` counted from the one holding input byte `ip`, little-endian. Only the
/// input's bytes are read: a word reaching past either end of the input is read byte by byte,
/// and bytes outside it read as 0.
///
/// # Safety
/// As [`decode`].
#[inline(always)]
unsafe fn input_word(stream: &Stream, ip: u32, k: u32) -> u32 {
    let (base, shift) = aligned(unsafe { stream.block.add(ip as usize) });
    // The input's bytes lie at offsets `first_byte..end` from `base`.
    let lead = shift / 8;
    let (first_byte, end) = (lead.saturating_sub(ip), stream.end.saturating_sub(ip) + lead);
    let at = 4 * k;
    if at >= end || ip >= stream.end {
        0
    } else if at >= first_byte && at + 4 <= end {
        unsafe { *base.add(k as usize) }
    } else {
        let bytes = base as *const u8;
        let mut word = 0;
        for i in 0..4 {
            if at + i >= first_byte && at + i < end {
                word |= (unsafe { *bytes.add((at + i) as usize) } as u32) << (8 * i);
            }
        }
        word
    }
}

/// Writes a batch's `total` bytes at `op`, 32 a step: lane i writes byte `op + step + i`, from
/// its sequence's literals or the output it repeats. In a batch that [`Batch::chases`], a match
/// byte whose source the same step writes is [`follow`]ed back to a final one.
///
/// Finding the owners by rank in shared memory instead (a popcount, not these shuffles), four
/// steps' loads in flight, cut Snappy's instructions 3.3x on an H200 yet ran 1-9% slower at 256
/// MiB: that batch is one wave, its time the slowest chunks' dependent loads (bench/RESULTS.md,
/// issue 48's third step).
#[inline(always)]
unsafe fn write_batch<W: Warp>(warp: &W, stream: &Stream, batch: &Batch, op: u32) {
    let lane = warp.lane();
    let mut step = 0;
    while step < batch.total {
        let fresh = op + step;
        let (at, writing) = (fresh + lane, step + lane < batch.total);
        let (start, literals, literals_at, offset) =
            batch.owned_by(warp, last_starting_by(warp, batch.owner_start, at));
        let i = at - start;
        let unwritten = writing && i >= literals && at - offset >= fresh;
        let followed = if batch.chases && warp.ballot(unwritten) != 0 {
            unsafe { follow(warp, stream, batch, unwritten, at, fresh) }
        } else {
            core::ptr::null()
        };
        if writing {
            unsafe { write_byte(stream, at, i, (literals, literals_at, offset), unwritten.then_some(followed)) };
        }
        warp.sync(); // the step's bytes are visible to every lane
        step += WARP_SIZE;
    }
}

/// Writes output byte `at`, byte `i` of its sequence, from its [`byte_source`].
///
/// # Safety
/// As [`decode`]; the source final.
#[inline(always)]
unsafe fn write_byte(stream: &Stream, at: u32, i: u32, sequence: (u32, u32, u32), followed: Option<*const u8>) {
    unsafe { *stream.out.add(at as usize) = *byte_source(stream, at, i, sequence, followed) };
}

/// Where output byte `at`, byte `i` of its sequence (`literals` of them at input `literals_at`,
/// then a match from `offset` back), comes from: its literal, `followed` where its source was
/// followed back ([`follow`]), else the output `offset` back.
///
/// # Safety
/// As [`decode`].
#[inline(always)]
unsafe fn byte_source(
    stream: &Stream,
    at: u32,
    i: u32,
    sequence: (u32, u32, u32),
    followed: Option<*const u8>,
) -> *const u8 {
    let (literals, literals_at, offset) = sequence;
    match followed {
        _ if i < literals => unsafe { stream.block.add((literals_at + i) as usize) },
        Some(followed) => followed,
        None => unsafe { stream.out.add((at - offset) as usize) },
    }
}

/// Where the byte at output `from` is final, for the lanes `pending` (bytes of the step starting
/// at `fresh`): its sequence's literal in the input, or its match's source, followed back until
/// it lies before the step; each hop lands in an earlier sequence or its literals.
#[inline(always)]
unsafe fn follow<W: Warp>(
    warp: &W,
    stream: &Stream,
    batch: &Batch,
    mut pending: bool,
    mut from: u32,
    fresh: u32,
) -> *const u8 {
    let mut src = core::ptr::null();
    while warp.ballot(pending) != 0 {
        let (start, literals, literals_at, offset) =
            batch.owned_by(warp, last_starting_by(warp, batch.owner_start, from));
        if pending {
            let i = from - start;
            if i < literals {
                src = unsafe { stream.block.add((literals_at + i) as usize) };
                pending = false;
            } else {
                from = source(start + literals, offset, i - literals, fresh);
                if from < fresh {
                    src = unsafe { stream.out.add(from as usize) };
                    pending = false;
                }
            }
        }
    }
    src
}

/// Where byte `i` of a match at output `to` comes from, `offset` back, while the bytes from
/// `fresh` on are not final: the byte `offset` before it, or, where that one is a byte of the
/// same match not final yet, the byte before the match that it repeats (a match longer than its
/// offset repeats its first `offset` bytes).
#[inline(always)]
pub fn source(to: u32, offset: u32, i: u32, fresh: u32) -> u32 {
    let direct = to + i - offset;
    if direct >= fresh && i >= offset { to - offset + i % offset } else { direct }
}

/// The last lane whose `start` is at most `at`, where `start` grows with the lane: the lane
/// owning output byte `at` of sequences laid out one per lane.
#[inline(always)]
pub fn last_starting_by<W: Warp>(warp: &W, start: u32, at: u32) -> u32 {
    let (mut lane, mut half) = (0, WARP_SIZE / 2);
    while half > 0 {
        if warp.shuffle(start, lane + half) <= at {
            lane += half;
        }
        half /= 2;
    }
    lane
}

/// Sum of `value` over lanes `0..=lane`.
#[inline(always)]
pub fn scan_add<W: Warp>(warp: &W, value: u32) -> u32 {
    scan(warp, value, |value, lane| warp.shuffle(value, lane), |sum, below| sum + below)
}

/// `value` summed by `add` over lanes `0..=lane`, for values of any width: `shuffle(v, l)` is
/// lane `l`'s `v`.
#[inline(always)]
pub fn scan<W: Warp, T: Copy>(warp: &W, mut value: T, shuffle: impl Fn(T, u32) -> T, add: impl Fn(T, T) -> T) -> T {
    let lane = warp.lane();
    let mut distance = 1;
    while distance < WARP_SIZE {
        let below = shuffle(value, lane.saturating_sub(distance));
        if lane >= distance {
            value = add(value, below);
        }
        distance *= 2;
    }
    value
}

/// Maximum of `value` over lanes `0..=lane`.
#[inline(always)]
pub fn scan_max<W: Warp>(warp: &W, mut value: u32) -> u32 {
    let lane = warp.lane();
    let mut distance = 1;
    while distance < WARP_SIZE {
        value = value.max(warp.shuffle(value, lane.saturating_sub(distance)));
        distance *= 2;
    }
    value
}

/// Copies `n` bytes from `src` to `dst` (not overlapping): 128 a step, 4 per lane, then the
/// rest 32 a step.
///
/// # Safety
/// `src` must be readable and `dst` writable for `n` bytes.
#[inline(always)]
pub unsafe fn copy<W: Warp>(warp: &W, src: *const u8, dst: *mut u8, n: u32) {
    const STEP: u32 = 4 * WARP_SIZE;
    let mut base = 0;
    while base + STEP <= n {
        let i = (base + 4 * warp.lane()) as usize;
        unsafe {
            let bytes = [*src.add(i), *src.add(i + 1), *src.add(i + 2), *src.add(i + 3)];
            dst.add(i).copy_from_nonoverlapping(bytes.as_ptr(), 4);
        }
        base += STEP;
    }
    let (src, dst) = unsafe { (src.add(base as usize), dst.add(base as usize)) };
    warp.for_each_strided((n - base) as usize, |i| unsafe { *dst.add(i) = *src.add(i) });
}

/// [`copy`] where `dst` may also lie below `src` within `n` bytes (a memmove down, as Zstd's
/// literals move from the end of a block's room to their place): where they overlap so, each
/// step's bytes are all read before any is written.
///
/// # Safety
/// As [`copy`], but for that overlap.
pub unsafe fn copy_down<W: Warp>(warp: &W, src: *const u8, dst: *mut u8, n: u32) {
    const STEP: u32 = 4 * WARP_SIZE;
    let (from, to) = (src as usize, dst as usize);
    if from == to {
        return;
    }
    if from < to || from - to >= n as usize {
        return unsafe { copy(warp, src, dst, n) }; // no overlap (raw literals are in the input)
    }
    let mut base = 0;
    while base < n {
        let i = base + 4 * warp.lane();
        let take = n.saturating_sub(i).min(4) as usize;
        let mut bytes = [0u8; 4];
        for (k, byte) in bytes.iter_mut().enumerate().take(take) {
            *byte = unsafe { *src.add(i as usize + k) };
        }
        warp.sync(); // the step's bytes are read before any is overwritten
        for (k, &byte) in bytes.iter().enumerate().take(take) {
            unsafe { *dst.add(i as usize + k) = byte };
        }
        base += STEP;
    }
}

/// The 4 bytes at `at`, little-endian, from the two aligned words that hold them: two loads
/// instead of four, at any alignment.
///
/// # Safety
/// The 4 bytes at `at` and the rest of the aligned word after them must be readable (the first
/// word begins at most 3 bytes before `at`, in the same word, which any allocation holding `at`
/// holds: allocations are word-aligned).
#[inline(always)]
pub unsafe fn word_at(at: *const u8) -> u32 {
    let (base, shift) = aligned(at);
    unsafe { funnel(*base, *base.add(1), shift) }
}

/// The aligned word holding the byte at `at`, and that byte's bit offset in it.
#[inline(always)]
pub fn aligned(at: *const u8) -> (*const u32, u32) {
    ((at as usize & !3) as *const u32, (at as usize & 3) as u32 * 8)
}

/// The 4 bytes starting `shift` bits into the little-endian words `low` then `high`.
#[inline(always)]
pub fn funnel(low: u32, high: u32, shift: u32) -> u32 {
    (((high as u64) << 32 | low as u64) >> shift) as u32
}

/// Writes the match of `len` bytes at `out[op..]` repeating those `offset` back (all written
/// and visible), then makes it visible to every lane.
///
/// # Safety
/// `out` must be writable for `op + len` bytes, and `0 < offset <= op`.
#[inline(always)]
pub unsafe fn copy_match<W: Warp>(warp: &W, out: *mut u8, op: u32, offset: u32, len: u32) {
    let (src, dst) = unsafe { (out.add((op - offset) as usize), out.add(op as usize)) };
    if offset >= len {
        unsafe { copy(warp, src, dst, len) };
    } else {
        // The match overlaps itself: byte i repeats byte (i mod offset) of the `offset` bytes
        // before it, which are all written already.
        let step = WARP_SIZE % offset;
        let mut phase = warp.lane() % offset;
        warp.for_each_strided(len as usize, |i| {
            unsafe { *dst.add(i) = *src.add(phase as usize) };
            phase += step;
            if phase >= offset {
                phase -= offset;
            }
        });
    }
    warp.sync(); // the match is visible to every lane
}

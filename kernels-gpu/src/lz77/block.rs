//! The block decoder: a block of threads decodes one chunk of at most [`MAX_OUTPUT`] bytes in
//! shared memory, for batches with too few chunks to fill the GPU a warp each. Nothing in it is
//! serial over the chunk:
//!
//! 1. **Parse.** The input is cut into segments, one per thread (32 bytes or more). Each thread
//!    walks the sequences from its segment's first byte as if one started there, marking where
//!    they start, then on past its segment's end until it lands on a start another segment
//!    marked (from there on the two walks agree) or the input ends. Walks from a wrong start
//!    fall into step with the right ones within a few sequences.
//! 2. **Which walks are real.** Each segment's walk leads to the segment it lands in: pointer
//!    jumping over those links (binary lifting) tells every segment whether the walk from the
//!    input's start passes through it, and where it enters.
//! 3. **Place.** Each real walk is followed again to find where it enters the segments beyond
//!    its own; then every segment sums the output of the sequences starting in it, a prefix sum
//!    places them, and a third walk writes the literals into shared memory and, for every output
//!    byte, the output position it copies (itself for a literal, before its match for a match);
//!    runs longer than 64 bytes go in pieces to a list the warps share.
//! 4. **Resolve.** The output is written in order, a byte per thread a step: a byte whose source
//!    lies in an earlier step reads it from the shared output, where each step leaves its
//!    bytes; within the step, sources are followed back to a literal.
//!
//! A chunk that is mostly literals (incompressible data: a long first run, or an input nearly as
//! long as its output) and has few sequences is decoded one sequence after another instead, from
//! the input staged in shared memory, all threads copying each.
//!
//! Anything out of the ordinary (a malformed sequence on the real walk, a bad offset, an output
//! too large or too small, an input too long) makes the first warp decode the chunk with the
//! warp decoder instead, whose result and status are the scalar decoder's: nothing reaches the
//! output before the block decoder has checked the whole chunk.

use super::{Parsed, Stream, Syntax, decode as warp_decode};
use crate::block::Block;
use crate::raw::{SharedBytes, shared_fetch_add};
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;

/// Threads of a block that decodes one chunk.
pub const BLOCK_THREADS: u32 = 1024;
/// Most output the block decoder takes (positions fit in `u16`); larger chunks go to the warp
/// decoder.
pub const MAX_OUTPUT: u32 = 1 << 16;
/// Most input it takes.
pub const MAX_INPUT: u32 = 80 << 10;
/// Most bytes a length may be spelled in: LZ4's 255-runs of more describe more than
/// [`MAX_OUTPUT`] bytes.
pub const MAX_LENGTH_BYTES: u32 = MAX_OUTPUT / 255 + 2;
/// Most matches of a chunk of mostly literals decoded in turn (each waits on a block barrier),
/// and most sequences (what its list holds; a Snappy literal is a sequence of its own).
const FEW_MATCHES: u32 = 64;
const FEW_SEQUENCES: u32 = 3 * FEW_MATCHES;
/// Sequences back that the in-turn list looks for the literals a match repeats.
const LOOK_BACK: u32 = 8;
/// Literal runs and matches longer than this are written by a whole warp, not their thread.
const LONG_RUN: u32 = 64;
/// Bytes of the output each thread resolves a step (step 4). 2 and 4, half or a quarter of the
/// barriers, were up to 16% slower (H200, 16 MiB of binary): a step's chains grow longer.
const RESOLVE_BYTES: u32 = 1;
/// Long runs are shared out in pieces of at most this many bytes.
const PIECE: u32 = 512;
/// Room for those pieces.
const MAX_LONG_RUNS: u32 = MAX_OUTPUT / (LONG_RUN + 1) + MAX_OUTPUT / PIECE + 1;
/// A segment no real walk enters.
const NONE: u32 = u32::MAX;
/// Marks a long run of literals (its input position) from a match (its offset).
const LITERALS: u32 = 1 << 31;
/// Levels of jump tables: 2^(LEVELS - 1) links reach past any chain of segments.
const LEVELS: u32 = 12;
const _: () = assert!(1 << (LEVELS - 1) > BLOCK_THREADS + 2);

/// The shared memory's layout, in bytes. During the parse the positions' room holds the marks,
/// the jump tables and the prefix sum's scratch.
const OUTPUT_AT: usize = 0;
const ORIGINS_AT: usize = OUTPUT_AT + MAX_OUTPUT as usize;
const MARKS_AT: usize = ORIGINS_AT;
const JUMPS_AT: usize = MARKS_AT + MAX_INPUT as usize / 8;
const SCAN_AT: usize = JUMPS_AT + (LEVELS * (BLOCK_THREADS + 2)) as usize * 2;
const INPUT_AT: usize = SCAN_AT + 4 * 65;
const ENTRIES_AT: usize = ORIGINS_AT + 2 * MAX_OUTPUT as usize;
const RUNS_AT: usize = ENTRIES_AT + 4 * BLOCK_THREADS as usize;
const RUN_COUNT_AT: usize = RUNS_AT + 16 * MAX_LONG_RUNS as usize;
const FAILED_AT: usize = RUN_COUNT_AT + 4;
/// The in-turn copy's list of sequences, where the parse keeps its entries (its count where the
/// parse counts long runs).
const LISTED_AT: usize = ENTRIES_AT;
const _: () = assert!(20 * FEW_SEQUENCES as usize <= RUNS_AT - ENTRIES_AT);
/// Shared memory a block needs: within the 227 KiB a block of an H100 or H200 may have.
pub const SHARED_BYTES: usize = FAILED_AT + 4;
const _: () = assert!(SHARED_BYTES <= crate::MAX_SHARED_BYTES_PER_BLOCK);
const _: () = assert!(INPUT_AT.is_multiple_of(4) && INPUT_AT + MAX_INPUT as usize + 3 <= ENTRIES_AT);

/// Where a segment's walk leads: past the input's end, or to a malformed sequence.
const fn end_node(threads: u32) -> u32 {
    threads
}
const fn broken_node(threads: u32) -> u32 {
    threads + 1
}

/// Decodes `stream` from input `ip`: the output size (or status), in thread 0. Where the block
/// decodes the chunk every thread returns its size; where it leaves the chunk to the warp
/// decoder ([`super::decode`], in the first warp), the other warps return `Ok(0)`.
///
/// # Safety
/// As [`super::decode`]; `shared` must be the block's [`SHARED_BYTES`] of shared memory, and
/// the block [`BLOCK_THREADS`] threads or fewer.
pub unsafe fn decode<B: Block, W: Warp, S: Syntax>(
    block: &B,
    warp: &W,
    syntax: &S,
    stream: &Stream,
    ip: u32,
    shared: *mut u8,
) -> Result<u32, Status> {
    let len = stream.end.saturating_sub(ip);
    let first = if len == 0 || stream.end > MAX_INPUT { None } else { syntax.sequence_at(stream, ip) };
    let decoded = first.and_then(|first| {
        // Mostly literals (a long first run, or an input nearly as long as its output, as of
        // incompressible data): perhaps a few sequences, each copied by all.
        let mostly_literals = first.literals >= len / 2 || len >= stream.capacity - stream.capacity / 8;
        // The input in shared memory, where both read it: their walks are chains of dependent
        // loads. Words aligned as the input's.
        let staged = stream.staged(unsafe { shared.add(INPUT_AT + stream.block as usize % 4) });
        unsafe { stage(block, stream, staged.block as *mut u8) };
        let in_turn =
            if mostly_literals { unsafe { decode_in_turn(block, syntax, &staged, ip, shared) } } else { None };
        in_turn.or_else(|| unsafe { decode_here(block, warp, syntax, stream, &staged, ip, shared) })
    });
    match decoded {
        Some(total) => Ok(total),
        None if block.thread() < WARP_SIZE => unsafe { warp_decode(warp, syntax, stream, ip, 0) },
        None => Ok(0),
    }
}

/// Decodes a stream of at most [`FEW_MATCHES`] matches and [`FEW_SEQUENCES`] sequences one
/// after the other, every thread copying a share of each: `None` (nothing written) where it has
/// more, or is not valid. The first thread walks and checks the sequences alone and lists them
/// in shared memory for the others: a walk is a chain of dependent loads, which every thread of
/// the block repeating would only crowd the SM's issue slots with. A match that repeats bytes of
/// one literal run is copied from the staged input with the literals; only one that repeats
/// another match's bytes waits on a barrier for them.
///
/// # Safety
/// As [`decode`], with `stream`'s input [`stage`]d in `shared`.
#[inline(always)]
unsafe fn decode_in_turn<B: Block, S: Syntax>(
    block: &B,
    syntax: &S,
    stream: &Stream<true>,
    ip: u32,
    shared: *mut u8,
) -> Option<u32> {
    let (me, threads) = (block.thread(), block.threads());
    // Each sequence: its literals' input position and length, its match's offset and length, and
    // where the bytes the match repeats are in the input (LITERALS marks one), if they are.
    let listed = unsafe { shared.add(LISTED_AT) as *mut [u32; 5] };
    let count = unsafe { shared.add(RUN_COUNT_AT) as *mut u32 };
    let list = || {
        let (mut p, mut op, mut sequences, mut matches) = (ip, 0u32, 0, 0);
        while p < stream.end {
            let Parsed { literals_at, literals, offset, len, next } = syntax.sequence_at(stream, p)?;
            (sequences, matches) = (sequences + 1, matches + (len > 0) as u32);
            op = op.checked_add(literals)?;
            if sequences > FEW_SEQUENCES || matches > FEW_MATCHES || (len > 0 && (offset == 0 || offset > op)) {
                return None;
            }
            let k = sequences - 1;
            let run = [literals_at, literals];
            let source = if len > 0 { unsafe { literal_source(listed, k, run, op, offset, len) } } else { 0 };
            unsafe { *listed.add(k as usize) = [literals_at, literals, offset, len, source] };
            (op, p) = (op.checked_add(len)?, next);
        }
        let fits = if S::FILLS_CAPACITY { op == stream.capacity } else { op <= stream.capacity };
        fits.then_some(sequences)
    };
    if me == 0 {
        unsafe { *count = list().unwrap_or(NONE) };
    }
    block.sync_threads(); // the list is complete
    let sequences = unsafe { *count };
    if sequences == NONE {
        block.sync_threads(); // all have read the count before the parse writes over it
        return None;
    }
    let mut op = 0;
    for k in 0..sequences {
        let [literals_at, literals, offset, len, source] = unsafe { *listed.add(k as usize) };
        let (src, dst) = unsafe { (stream.block.add(literals_at as usize), stream.out.add(op as usize)) };
        let mut i = me;
        // Four bytes a thread in flight at once, then the rest.
        while i + 3 * threads < literals {
            let (a, b, c, d) =
                (i as usize, (i + threads) as usize, (i + 2 * threads) as usize, (i + 3 * threads) as usize);
            unsafe {
                let bytes = (*src.add(a), *src.add(b), *src.add(c), *src.add(d));
                (*dst.add(a), *dst.add(b), *dst.add(c), *dst.add(d)) = bytes;
            }
            i += 4 * threads;
        }
        while i < literals {
            unsafe { *dst.add(i as usize) = *src.add(i as usize) };
            i += threads;
        }
        op += literals;
        if len > 0 {
            // Byte i repeats byte i % offset of the `offset` bytes before the match: from the
            // input where they are literals, else from the output once the block has written it.
            let from = if source != 0 {
                unsafe { stream.block.add((source & !LITERALS) as usize) }
            } else {
                block.sync_threads(); // the output before the match is written
                unsafe { stream.out.add((op - offset) as usize) }
            };
            let mut i = me;
            while i < len {
                let k = if i < offset { i } else { i % offset };
                unsafe { *stream.out.add((op + i) as usize) = *from.add(k as usize) };
                i += threads;
            }
            op += len;
        }
    }
    block.sync_threads(); // all have read the staged input and the list before the next chunk
    Some(op)
}

/// Where in the input the bytes lie that the match of sequence `k` repeats (the `offset` bytes
/// before it, or its `len` if fewer), marked with [`LITERALS`], if they all lie in one literal
/// run of the last [`LOOK_BACK`] sequences (`k`'s own, `literals` bytes from input `literals_at`
/// ending at output `op`, or one of those before it in `listed`); 0 where they are (in part) a
/// match's bytes or further back.
///
/// # Safety
/// `listed` must hold the sequences before `k`, as [`decode_in_turn`] lists them, with `op` and
/// `offset` checked (`offset <= op`).
#[inline(always)]
unsafe fn literal_source(listed: *const [u32; 5], k: u32, run: [u32; 2], op: u32, offset: u32, len: u32) -> u32 {
    let (from, need) = (op - offset, len.min(offset));
    let ([mut run_at, mut run_literals], mut run_end, mut j) = (run, op, k);
    for _ in 0..LOOK_BACK {
        let run_start = run_end - run_literals;
        if from >= run_start {
            return if from + need <= run_end { LITERALS | (run_at + from - run_start) } else { 0 };
        }
        if j == 0 {
            return 0;
        }
        j -= 1;
        let [literals_at, literals, _, len, _] = unsafe { *listed.add(j as usize) };
        // Sequence j's match ends where the run after it starts (a source in it fails the test
        // above next time round).
        ([run_at, run_literals], run_end) = ([literals_at, literals], run_start - len);
    }
    0
}

/// The block decoder proper, the walks reading `parsed`, the stream [`stage`]d where the
/// positions go later: `None` where it leaves the chunk to the warp decoder.
#[inline(always)]
unsafe fn decode_here<B: Block, W: Warp, S: Syntax>(
    block: &B,
    warp: &W,
    syntax: &S,
    stream: &Stream,
    parsed: &Stream<true>,
    ip: u32,
    shared: *mut u8,
) -> Option<u32> {
    let (me, threads) = (block.thread(), block.threads());
    let at = |offset: usize| unsafe { shared.add(offset) };
    // The hot regions addressed as shared memory (32-bit offsets, LDS and STS), the rest plainly.
    let region = |offset: usize| unsafe { SharedBytes::new(at(offset)) };
    let (marks, jumps, out, positions) = (region(MARKS_AT), region(JUMPS_AT), region(OUTPUT_AT), region(ORIGINS_AT));
    let (scan, entries, runs) = (at(SCAN_AT) as *mut u32, at(ENTRIES_AT) as *mut u32, at(RUNS_AT) as *mut [u32; 4]);
    let (run_count, failed) = (at(RUN_COUNT_AT) as *mut u32, at(FAILED_AT) as *mut u32);
    let set_origin = |at: u32, origin: u32| unsafe { positions.set_u16(2 * at, origin as u16) };
    // Origins `from..from + n` of the bytes `at..at + n`, two a store where aligned: a thread's
    // literals (their own origins) and its matches no longer than their offset.
    let set_origins = |at: u32, from: u32, n: u32| {
        let mut i = 0;
        if at % 2 == 1 && n > 0 {
            set_origin(at, from);
            i = 1;
        }
        while i + 2 <= n {
            // Origins are below 2^16: `from + i` in the low half, the next one in the high.
            unsafe { positions.set_u32(2 * (at + i), (from + i) * 0x1_0001 + 0x1_0000) };
            i += 2;
        }
        if i < n {
            set_origin(at + i, from + i);
        }
    };

    // 1. Each segment's walk, marking the starts in its own words of the marks.
    let len = stream.end - ip;
    let span = len.div_ceil(threads).next_multiple_of(32);
    let segments = len.div_ceil(span);
    let (start, end) = (ip + me * span, (ip + (me + 1) * span).min(stream.end));
    let mut p = start;
    if me < segments {
        for word in (me * span / 32)..((me + 1) * span).min(len).div_ceil(32) {
            unsafe { marks.set_u32(4 * word, 0) };
        }
        while p < end {
            let bit = p - ip;
            let word = 4 * (bit / 32);
            unsafe { marks.set_u32(word, marks.u32(word) | 1 << (bit % 32)) };
            match syntax.sequence_at(parsed, p) {
                Some(sequence) => p = sequence.next,
                None => {
                    p = u32::MAX;
                    break;
                }
            }
        }
    }
    let exit = p;
    unsafe { *entries.add(me as usize) = NONE };
    if me == 0 {
        unsafe { (*run_count, *failed) = (0, 0) };
    }
    block.sync_threads();

    // ... and on until it lands on another segment's start, or the end.
    let marked = |p: u32| {
        let bit = p - ip;
        unsafe { marks.u32(4 * (bit / 32)) >> (bit % 32) & 1 != 0 }
    };
    let link = if me >= segments {
        end_node(threads)
    } else {
        loop {
            if p == u32::MAX {
                break broken_node(threads);
            }
            if p == stream.end {
                break end_node(threads);
            }
            if marked(p) {
                break (p - ip) / span;
            }
            p = syntax.sequence_at(parsed, p).map_or(u32::MAX, |sequence| sequence.next);
        }
    };

    // 2. Binary lifting over the links: jumps[k][v] is where 2^k links from segment v lead.
    let nodes = threads + 2;
    let jump = |level: u32, node: u32| unsafe { jumps.u16(2 * (level * nodes + node)) } as u32;
    let set_jump = |level: u32, node: u32, to: u32| unsafe { jumps.set_u16(2 * (level * nodes + node), to as u16) };
    set_jump(0, me, link);
    if me == 0 {
        set_jump(0, end_node(threads), end_node(threads));
        set_jump(0, broken_node(threads), broken_node(threads));
    }
    block.sync_threads();
    for level in 1..LEVELS {
        let mut node = me;
        while node < nodes {
            set_jump(level, node, jump(level - 1, jump(level - 1, node)));
            node += threads;
        }
        block.sync_threads();
    }
    if jump(LEVELS - 1, 0) == broken_node(threads) {
        return None; // the walk from the start meets a malformed sequence
    }
    let mut reached = 0;
    for level in (0..LEVELS).rev() {
        let next = jump(level, reached);
        if next <= me {
            reached = next;
        }
    }
    // Each real segment's walk from where it is entered up to its end, and the segments it
    // passes through beyond, entered where it first reaches them: the sequences starting in each
    // segment are then that segment's to write, wherever the walk that found them began.
    if me < segments && reached == me {
        let mut q = exit;
        let mut last = me;
        while q < stream.end {
            let segment = (q - ip) / span;
            if segment != last {
                unsafe { *entries.add(segment as usize) = q };
                last = segment;
            }
            if q == p {
                break;
            }
            q = syntax.sequence_at(parsed, q).map_or(stream.end, |sequence| sequence.next);
        }
    }
    if me == 0 {
        unsafe { *entries = ip };
    }
    block.sync_threads();

    // 3. Place each segment's sequences.
    let (entry, stop) = if me < segments { (unsafe { *entries.add(me as usize) }, end) } else { (NONE, 0) };
    let bytes = walk(syntax, parsed, entry, stop, |_| {}).min(MAX_OUTPUT + 1);
    let (first, total) = unsafe { block.scan_add(warp, bytes, scan) };
    let fits = if S::FILLS_CAPACITY { total == stream.capacity } else { total <= stream.capacity };
    if !fits || total > MAX_OUTPUT {
        return None;
    }

    // The literals in shared memory, and each byte's source: a match's byte k copies byte
    // `k % offset` of the `offset` bytes before the match, which precede it. Long runs go to the
    // shared list in pieces of at most PIECE bytes: (output position, the literals' input or the
    // match's offset, length, bytes of the run before the piece).
    let share = |to: u32, from: u32, len: u32| {
        let first = unsafe { shared_fetch_add(run_count, len.div_ceil(PIECE)) };
        let mut done = 0;
        while done < len {
            let from = if from & LITERALS != 0 { from + done } else { from };
            let piece = first + done / PIECE;
            unsafe { *runs.add(piece as usize) = [to + done, from, (len - done).min(PIECE), done] };
            done += PIECE;
        }
    };
    let mut op = first;
    let mut bad = false;
    walk(syntax, stream, entry, stop, |sequence| {
        let Parsed { literals_at, literals, offset, len, .. } = sequence;
        if literals > LONG_RUN {
            share(op, literals_at | LITERALS, literals);
        } else {
            // Eight loads issued before their stores: a shared store after each load would
            // wait on it (the compiler cannot tell the input from the shared memory).
            let src = unsafe { stream.block.add(literals_at as usize) };
            let mut i = 0;
            while i < literals {
                let mut held = 0u64;
                for k in 0..8 {
                    if i + k < literals {
                        held |= (unsafe { *src.add((i + k) as usize) } as u64) << (8 * k);
                    }
                }
                for k in 0..8 {
                    if i + k < literals {
                        unsafe { out.set_u8(op + i + k, (held >> (8 * k)) as u8) };
                    }
                }
                i += 8;
            }
            set_origins(op, op, literals);
        }
        op += literals;
        bad |= len > 0 && (offset == 0 || offset > op);
        if bad || len == 0 {
            return;
        }
        if len > LONG_RUN {
            share(op, offset, len);
        } else if len <= offset {
            set_origins(op, op - offset, len);
        } else {
            let mut k = 0;
            for i in 0..len {
                set_origin(op + i, op - offset + k);
                k = if k + 1 == offset { 0 } else { k + 1 };
            }
        }
        op += len;
    });
    if bad {
        unsafe { *failed = 1 };
    }
    block.sync_threads();
    if unsafe { *failed } != 0 {
        return None;
    }
    let (lane, warps, shared_runs) = (me % WARP_SIZE, threads / WARP_SIZE, unsafe { *run_count });
    let mut run = me / WARP_SIZE;
    while run < shared_runs {
        let [to, from, len, done] = unsafe { *runs.add(run as usize) };
        if from & LITERALS != 0 {
            let mut i = lane;
            while i < len {
                unsafe { out.set_u8(to + i, *stream.block.add(((from & !LITERALS) + i) as usize)) };
                set_origin(to + i, to + i);
                i += WARP_SIZE;
            }
        } else {
            let (source, offset) = (to - done - from, from);
            let (mut i, mut k, step) = (lane, (done + lane) % offset, WARP_SIZE % offset);
            while i < len {
                set_origin(to + i, source + k);
                k += step;
                if k >= offset {
                    k -= offset;
                }
                i += WARP_SIZE;
            }
        }
        run += warps;
    }
    block.sync_threads();

    // 4. The output in order, a byte per thread a step: a match's byte is followed back, each
    // hop to an earlier sequence, to a literal or to a byte before the step, whose value the
    // shared output holds by then; the step's match bytes join it there for the steps after.
    // Within a step nothing a thread reads is written (origins never are, and the bytes read
    // are literals or before the step), so one barrier a step orders it.
    let mut base = 0;
    while base < total {
        for k in 0..RESOLVE_BYTES {
            let b = base + k * threads + me;
            if b < total {
                let origin = |at: u32| unsafe { positions.u16(2 * at) } as u32;
                let mut root = origin(b);
                while root >= base {
                    let next = origin(root);
                    if next == root {
                        break;
                    }
                    root = next;
                }
                let byte = unsafe { out.u8(root) };
                if root != b {
                    unsafe { out.set_u8(b, byte) };
                }
                unsafe { *stream.out.add(b as usize) = byte };
            }
        }
        block.sync_threads();
        base += RESOLVE_BYTES * threads;
    }
    Some(total)
}

/// Copies the input into `staged` (shared memory, at the input's alignment modulo 4): whole
/// aligned words where the input covers them, the bytes at either end alone; then waits for the
/// block.
///
/// # Safety
/// As [`decode`]; `staged` must have room for the input.
#[inline(always)]
unsafe fn stage<B: Block>(block: &B, stream: &Stream, staged: *mut u8) {
    let (me, threads, n) = (block.thread() as usize, block.threads() as usize, stream.end as usize);
    let lead = (stream.block as usize).wrapping_neg() % 4; // bytes before the first whole word
    let (lead, words) = (lead.min(n), n.saturating_sub(lead) / 4);
    let tail = lead + 4 * words;
    if me < lead {
        unsafe { *staged.add(me) = *stream.block.add(me) };
    }
    if me < n - tail {
        unsafe { *staged.add(tail + me) = *stream.block.add(tail + me) };
    }
    let (from, to) = unsafe { (stream.block.add(lead) as *const u32, staged.add(lead) as *mut u32) };
    let mut word = me;
    // Four words a thread in flight at once, then the rest.
    while word + 3 * threads < words {
        let (a, b, c, d) = (word, word + threads, word + 2 * threads, word + 3 * threads);
        unsafe {
            let values = (*from.add(a), *from.add(b), *from.add(c), *from.add(d));
            (*to.add(a), *to.add(b), *to.add(c), *to.add(d)) = values;
        }
        word += 4 * threads;
    }
    while word < words {
        unsafe { *to.add(word) = *from.add(word) };
        word += threads;
    }
    block.sync_threads();
}

/// Walks the sequences from input `entry` to `stop`, handing each to `each`; returns the output
/// bytes they describe (saturating).
#[inline(always)]
fn walk<S: Syntax, const STAGED: bool>(
    syntax: &S,
    stream: &Stream<STAGED>,
    entry: u32,
    stop: u32,
    mut each: impl FnMut(Parsed),
) -> u32 {
    let (mut p, mut bytes) = (entry, 0u32);
    while p < stop {
        let Some(sequence) = syntax.sequence_at(stream, p) else { break };
        bytes = bytes.saturating_add(sequence.literals).saturating_add(sequence.len);
        each(sequence);
        p = sequence.next;
    }
    bytes
}

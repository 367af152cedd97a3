//! A batch of a block's sequences checked and written, 32 at a time, lane i's the i-th.

use super::handoff::SequenceForm;
use super::{BATCH, Job};
use crate::lz77::{SHORT_SEQUENCE, copy_down, copy_match, last_starting_by, scan_add};
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::zstd::sequences::{Cursor, RepeatOffsets, Sequence};

/// Checks the `len` sequences of `batch` (in shared memory, in the form `F`; `reps` the repeat
/// offsets where the form resolves them in the warp) at `cursor` and writes them with their
/// literals from `literals`, moving the cursor on; returns how many literals they took.
///
/// # Safety
/// The output must be writable up to the cursor's limit, the literals readable as far as the
/// cursor says are left.
#[inline(always)] // one function with its caller's loop, as before two callers shared it: 2-6% faster
pub(super) unsafe fn write_batch_checked<W: Warp, F: SequenceForm>(
    warp: &W,
    chunk: &Job,
    batch: &[F::Item; BATCH],
    len: u32,
    reps: &mut RepeatOffsets,
    literals: *const u8,
    cursor: &mut Cursor,
) -> Result<usize, Status> {
    let me = place::<W, F>(warp, batch, len, reps);
    check(warp, cursor, &me, len)?;
    let (bytes, taken) = unsafe { write_batch(warp, chunk, literals, cursor.op, len, &me) };
    cursor.op += bytes;
    cursor.literals_left -= taken;
    Ok(taken)
}

/// One sequence of a batch as its lane holds it: output position and literals position
/// (relative to the batch's), literal and match lengths, and offset.
#[derive(Clone, Copy)]
struct Placed {
    start: u32,
    literal_at: u32,
    literals: u32,
    match_len: u32,
    offset: u32,
}

/// Lane i's sequence of the `len` in `batch` (none past them), placed by prefix sums.
fn place<W: Warp, F: SequenceForm>(warp: &W, batch: &[F::Item; BATCH], len: u32, reps: &mut RepeatOffsets) -> Placed {
    let [literals, match_len, offset] = F::sequence(warp, batch, len, reps);
    let bytes = literals + match_len;
    let start = scan_add(warp, bytes) - bytes;
    let literal_at = scan_add(warp, literals) - literals;
    Placed { start, literal_at, literals, match_len, offset }
}

/// Checks the batch's `len` sequences at `cursor` as the format crate's `Cursor::advance` does
/// one after another: each lane its own, from where the sequences before it leave the cursor.
/// The status is the first failing sequence's.
fn check<W: Warp>(warp: &W, cursor: &Cursor, me: &Placed, len: u32) -> Result<(), Status> {
    let status = if warp.lane() < len {
        let mut at = *cursor;
        at.op += me.start as usize;
        // Past the literals left, a sequence before this one fails first.
        at.literals_left = at.literals_left.saturating_sub(me.literal_at as usize);
        let sequence = Sequence { literals: me.literals, match_len: me.match_len, offset_value: 0 };
        at.advance(&sequence, me.offset).err().map_or(0, |status| status as u32)
    } else {
        0
    };
    match warp.ballot(status != 0) {
        0 => Ok(()),
        failing => Err(Status::from_code(warp.shuffle(status, failing.trailing_zeros()))),
    }
}

/// Writes the `len` sequences of the batch (lane i holding sequence i as `me`) at output
/// position `op`, their literals from `literals`; returns the bytes written and the literals
/// taken. Runs of short sequences go 32 bytes a step (see [`write_run`]); a long one alone.
#[inline(always)]
unsafe fn write_batch<W: Warp>(
    warp: &W,
    chunk: &Job,
    literals: *const u8,
    op: usize,
    len: u32,
    me: &Placed,
) -> (usize, usize) {
    let lane = warp.lane();
    let alone = warp.ballot(lane < len && me.literals + me.match_len > SHORT_SEQUENCE);
    let mut first = 0;
    while first < len {
        let next_alone = (alone >> first << first).trailing_zeros().min(len);
        if next_alone > first {
            unsafe { write_run(warp, chunk.out, op, literals, me, first, next_alone) };
        }
        if next_alone < len {
            let one = shuffle_placed(warp, me, next_alone);
            let match_at = op + (one.start + one.literals) as usize;
            unsafe {
                let literal = literals.add(one.literal_at as usize);
                copy_down(warp, literal, chunk.out.add(op + one.start as usize), one.literals);
                warp.sync(); // the literals may be the match's source
                // Addressed from the match's source, which the checks keep within the frame.
                let source = chunk.out.add(match_at - one.offset as usize);
                copy_match(warp, source, one.offset, one.offset, one.match_len);
            }
        }
        first = next_alone + 1;
    }
    let last = shuffle_placed(warp, me, 31);
    ((last.start + last.literals + last.match_len) as usize, (last.literal_at + last.literals) as usize)
}

/// Lane `from`'s sequence, in every lane.
fn shuffle_placed<W: Warp>(warp: &W, placed: &Placed, from: u32) -> Placed {
    Placed {
        start: warp.shuffle(placed.start, from),
        literal_at: warp.shuffle(placed.literal_at, from),
        literals: warp.shuffle(placed.literals, from),
        match_len: warp.shuffle(placed.match_len, from),
        offset: warp.shuffle(placed.offset, from),
    }
}

/// Writes sequences `first..end` of the batch at output position `op` (lanes `first..end`), 32
/// output bytes a step: lane i writes byte `step + i` of the run, from its sequence's literals or
/// the bytes it repeats. Where no match of the run reads within [`DEEP_STEPS`] steps back, the
/// steps go that many at a time, all their bytes read before any is written (the loads in
/// flight together, not one memory latency a step); otherwise a step at a time, a match's source
/// taken from the lanes where it lies within this step or the one before.
unsafe fn write_run<W: Warp>(
    warp: &W,
    out: *mut u8,
    op: usize,
    literals: *const u8,
    me: &Placed,
    first: u32,
    end: u32,
) {
    let lane = warp.lane();
    let run_start = warp.shuffle(me.start, first);
    let last = shuffle_placed(warp, me, end - 1);
    let run = Run { out, op, literals, run_start, total: last.start + last.literals + last.match_len - run_start };
    // Lanes before the run start where it does, lanes after it never: starts only grow.
    let owner_start = match lane {
        l if l < first => 0,
        l if l < end => me.start - run_start,
        _ => u32::MAX,
    };
    let source_in_batch = (me.start + me.literals + me.match_len) as usize > me.offset as usize;
    let near = lane >= first && lane < end && me.match_len > 0 && source_in_batch;
    if warp.ballot(near && me.offset < DEEP_STEPS as u32 * WARP_SIZE) == 0 {
        unsafe { run.write_far(warp, me, owner_start) }
    } else {
        unsafe { run.write_near(warp, me, owner_start) }
    }
}

/// Steps of a run written together where its matches allow.
const DEEP_STEPS: usize = 4;

/// A run of short sequences: where its bytes go and come from.
struct Run {
    out: *mut u8,
    op: usize,
    literals: *const u8,
    /// The run's first byte, relative to the batch's.
    run_start: u32,
    /// Its bytes.
    total: u32,
}

impl Run {
    /// Writes the run [`DEEP_STEPS`] steps at a time: each lane reads its byte of every step,
    /// then writes them (no match of the run may read less than that many steps back within it).
    #[inline(always)]
    unsafe fn write_far<W: Warp>(&self, warp: &W, me: &Placed, owner_start: u32) {
        const STEPS: usize = DEEP_STEPS;
        let lane = warp.lane();
        let mut step = 0;
        while step < self.total {
            let mut bytes = [0u8; STEPS];
            for (i, byte) in bytes.iter_mut().enumerate() {
                let at = step + i as u32 * WARP_SIZE + lane;
                let owner = shuffle_placed(warp, me, last_starting_by(warp, owner_start, at));
                if at < self.total {
                    let into = at + self.run_start - owner.start;
                    let to = self.op + (self.run_start + at) as usize;
                    *byte = if into < owner.literals {
                        unsafe { *self.literals.add((owner.literal_at + into) as usize) }
                    } else {
                        unsafe { *self.out.add(to - owner.offset as usize) }
                    };
                }
            }
            warp.sync(); // every literal read before its place (which may hold a later one) is written
            for (i, &byte) in bytes.iter().enumerate() {
                let at = step + i as u32 * WARP_SIZE + lane;
                if at < self.total {
                    unsafe { *self.out.add(self.op + (self.run_start + at) as usize) = byte };
                }
            }
            warp.sync(); // the steps' bytes are visible to every lane
            step += STEPS as u32 * WARP_SIZE;
        }
    }

    /// Writes the run a step at a time. A match byte whose source lies in this step is another
    /// lane's byte, followed back lane to lane (by pointer jumping) to one that is resolved; in
    /// the step before, a lane's byte kept from it; further back, in memory. Short offsets (a
    /// run of 4-byte floats repeating the one before) cost shuffles, not memory round trips.
    #[inline(always)]
    unsafe fn write_near<W: Warp>(&self, warp: &W, me: &Placed, owner_start: u32) {
        let lane = warp.lane();
        let (mut step, mut before) = (0, 0);
        while step < self.total {
            let at = step + lane;
            let owner = shuffle_placed(warp, me, last_starting_by(warp, owner_start, at));
            let into = at + self.run_start - owner.start;
            let to = self.op + (self.run_start + at) as usize;
            let in_step = into >= owner.literals && owner.offset <= lane;
            let in_before = into >= owner.literals && step > 0 && owner.offset <= lane + WARP_SIZE;
            let (mut source, mut pending) = (lane.wrapping_sub(owner.offset), in_step && at < self.total);
            let from_before = warp.shuffle(before, source.wrapping_add(WARP_SIZE) % WARP_SIZE);
            let mut byte = match () {
                _ if at >= self.total || in_step => 0,
                _ if into < owner.literals => unsafe { *self.literals.add((owner.literal_at + into) as usize) as u32 },
                _ if in_before => from_before,
                _ => unsafe { *self.out.add(to - owner.offset as usize) as u32 },
            };
            // Sources lie in lower lanes, so each round a pending lane's source moves down.
            while warp.ballot(pending) != 0 {
                let source_byte = warp.shuffle(byte, source % WARP_SIZE);
                let source_pending = warp.shuffle(pending as u32, source % WARP_SIZE) != 0;
                let source_source = warp.shuffle(source, source % WARP_SIZE);
                if pending {
                    if source_pending {
                        source = source_source;
                    } else {
                        (byte, pending) = (source_byte, false);
                    }
                }
            }
            if at < self.total {
                unsafe { *self.out.add(to) = byte as u8 };
            }
            before = byte;
            warp.sync(); // the step's bytes are visible to every lane
            step += WARP_SIZE;
        }
    }
}

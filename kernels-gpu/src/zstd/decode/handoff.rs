//! How a batch of sequences passes from the lane that decodes them (FSE is serial) to the warp
//! that writes them, in one of two forms:
//!
//! - [`FullSequences`]: the lane decodes each sequence in full and resolves its offset through
//!   the repeat offsets; the warp takes (literals, match length, offset) as they are.
//! - [`WalkedStates`]: the lane only walks the FSE states and reads each sequence's extra bits as
//!   one field; the warp takes the fields apart, a lane a sequence, and resolves the batch's
//!   offsets at once by an inclusive scan of what each sequence does to the repeat offsets.
//!
//! The walk's serial loop is about a quarter shorter (118 SASS instructions a sequence where
//! the full decode takes 156, sm_90) and the writer's work per batch half again as long: the
//! walk wins where the SM's issue slots bound the time (pairs of warps, many an SM), the full
//! decode where a chunk's latency does (few pairs an SM, the writer then its critical path) and
//! where the writing warp also reads (one warp a chunk). bench/RESULTS.md, issue 48, step 16.

use super::BATCH;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::zstd::SequenceTables;
use ferrocomp_format::zstd::sequences::{RepeatOffsets, Sequence, SequenceDecoder, Walked};

/// One of the two forms (see the module's documentation).
pub trait SequenceForm {
    /// What the serial lane stores for each sequence.
    type Item: Copy;

    /// Decodes `out.len()` sequences, the last of them the block's last if `ends_block` (one
    /// lane); `reps` are the repeat offsets where this form resolves them here.
    fn read(
        decoder: &mut SequenceDecoder,
        tables: &SequenceTables,
        reps: &mut RepeatOffsets,
        out: &mut [Self::Item],
        ends_block: bool,
    );

    /// Lane i's sequence of a batch of `len` (the i-th of `batch`; none past them) as literals,
    /// match length and offset, every lane together; `reps` are the repeat offsets where this
    /// form resolves them here, moved on past the batch.
    fn sequence<W: Warp>(warp: &W, batch: &[Self::Item; BATCH], len: u32, reps: &mut RepeatOffsets) -> [u32; 3];

    /// Half `half` (0 or 1) of the double buffer of batches.
    ///
    /// # Safety
    /// `batches` must point to one.
    unsafe fn batch(batches: *mut Batches, half: usize) -> *mut [Self::Item; BATCH];
}

/// The double buffer of batches in a warp's shared memory, in either form.
#[repr(C)]
pub union Batches {
    full: [[[u32; 3]; BATCH]; 2],
    walked: [[Walked; BATCH]; 2],
}

/// Sequences decoded in full by the serial lane, their offsets resolved.
pub struct FullSequences;

impl SequenceForm for FullSequences {
    type Item = [u32; 3];

    #[inline(always)]
    fn read(
        decoder: &mut SequenceDecoder,
        tables: &SequenceTables,
        reps: &mut RepeatOffsets,
        out: &mut [[u32; 3]],
        ends_block: bool,
    ) {
        decoder.decode_resolved(tables, reps, out, ends_block);
    }

    #[inline(always)]
    fn sequence<W: Warp>(warp: &W, batch: &[[u32; 3]; BATCH], len: u32, _: &mut RepeatOffsets) -> [u32; 3] {
        if warp.lane() < len { batch[warp.lane() as usize] } else { [0; 3] }
    }

    unsafe fn batch(batches: *mut Batches, half: usize) -> *mut [[u32; 3]; BATCH] {
        unsafe { &raw mut (*batches).full[half] }
    }
}

/// Sequences walked by the serial lane, taken apart and resolved by the writing warp.
pub struct WalkedStates;

impl SequenceForm for WalkedStates {
    type Item = Walked;

    #[inline(always)]
    fn read(
        decoder: &mut SequenceDecoder,
        tables: &SequenceTables,
        _: &mut RepeatOffsets,
        out: &mut [Walked],
        ends_block: bool,
    ) {
        decoder.walk(tables, out, ends_block);
    }

    #[inline(always)]
    fn sequence<W: Warp>(warp: &W, batch: &[Walked; BATCH], len: u32, reps: &mut RepeatOffsets) -> [u32; 3] {
        let mine = warp.lane() < len;
        let Sequence { literals, match_len, offset_value } =
            if mine { batch[warp.lane() as usize].sequence() } else { Sequence::default() };
        [literals, match_len, resolve_offsets(warp, mine, offset_value, literals, reps)]
    }

    unsafe fn batch(batches: *mut Batches, half: usize) -> *mut [Walked; BATCH] {
        unsafe { &raw mut (*batches).walked[half] }
    }
}

/// How a sequence changes the three repeat offsets: each becomes one of those before it plus an
/// addend (`from` below 3), or a new offset (`from` 3, the addend the offset).
#[derive(Clone, Copy)]
struct OffsetsMap {
    /// The three `from`s, two bits each.
    from: u32,
    add: [u32; 3],
}

impl OffsetsMap {
    /// The map leaving the offsets as they are.
    const IDENTITY: Self = Self { from: 0b10_01_00, add: [0; 3] };

    /// The map of a sequence with `offset_value` and `literals`, as `RepeatOffsets::resolve`
    /// moves the offsets on: the sequence's offset is the first after it.
    #[inline(always)]
    fn of_sequence(offset_value: u32, literals: u32) -> Self {
        if offset_value > 3 {
            return Self { from: 0b01_00_11, add: [offset_value - 3, 0, 0] };
        }
        match offset_value - 1 + (literals == 0) as u32 {
            0 => Self::IDENTITY,
            1 => Self { from: 0b10_00_01, add: [0; 3] },
            2 => Self { from: 0b01_00_10, add: [0; 3] },
            _ => Self { from: 0b01_00_00, add: [u32::MAX, 0, 0] }, // the first minus one
        }
    }

    /// This map after `before`. (Each slot's source picked by a match, not an index: an
    /// indexed array of registers would go to local memory.)
    #[inline(always)]
    fn after(&self, before: &Self) -> Self {
        let mut composed = Self { from: 0, add: [0; 3] };
        for slot in 0..3 {
            let (from_before, add_before) = match self.from >> (2 * slot) & 3 {
                0 => (before.from & 3, before.add[0]),
                1 => (before.from >> 2 & 3, before.add[1]),
                2 => (before.from >> 4 & 3, before.add[2]),
                _ => (3, 0),
            };
            composed.from |= from_before << (2 * slot);
            composed.add[slot] = add_before.wrapping_add(self.add[slot]);
        }
        composed
    }

    /// The offsets `reps` become.
    #[inline(always)]
    fn apply(&self, reps: &RepeatOffsets) -> RepeatOffsets {
        let slot = |slot: usize| {
            let base = match self.from >> (2 * slot) & 3 {
                0 => reps.0[0],
                1 => reps.0[1],
                2 => reps.0[2],
                _ => 0,
            };
            base.wrapping_add(self.add[slot])
        };
        RepeatOffsets([slot(0), slot(1), slot(2)])
    }
}

/// The offset of lane i's sequence (`offset_value`, `literals`; none where not `mine`): the
/// repeat offsets `reps` moved on by the sequences of lanes `0..i` and then its own, as
/// `RepeatOffsets::resolve` one after another would, by an inclusive scan of the maps each
/// sequence makes of the offsets. `reps` is moved on past the warp's sequences.
#[inline(always)]
fn resolve_offsets<W: Warp>(warp: &W, mine: bool, offset_value: u32, literals: u32, reps: &mut RepeatOffsets) -> u32 {
    let lane = warp.lane();
    let mut map = if mine { OffsetsMap::of_sequence(offset_value, literals) } else { OffsetsMap::IDENTITY };
    let mut distance = 1;
    while distance < WARP_SIZE {
        let from = lane.wrapping_sub(distance) % WARP_SIZE;
        let before = OffsetsMap { from: warp.shuffle(map.from, from), add: map.add.map(|add| warp.shuffle(add, from)) };
        if lane >= distance {
            map = map.after(&before);
        }
        distance *= 2;
    }
    let after = map.apply(reps);
    *reps = RepeatOffsets(after.0.map(|offset| warp.shuffle(offset, WARP_SIZE - 1)));
    after.0[0]
}

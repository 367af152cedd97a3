//! Who copies the matches of the rounds of symbols Deflate's and GDeflate's decoders decode: the
//! decoding warp itself, after each round ([`InWarp`]), or a second warp of its block, a round
//! behind ([`Handoff`] and [`copy_handed_matches`]), so that decoding the next round, one long
//! chain of dependent lookups, overlaps copying this one's (nvCOMP's inflate runs two warps a
//! chunk). Literals, a store each, the decoding warp writes itself.
//!
//! The handoff's protocol: the decoding warp stores its lanes' matches and a command in one of two
//! slots, then meets the writer at a block barrier; the writer carries out the command until the
//! next barrier, while the decoder fills the other slot. Rounds without matches meet no barrier.
//! `DONE`, which the decoder always posts last (even after a failure), sends the writer home, so
//! the two warps meet the same barriers.

use super::decode::{Output, copy_matches};
use crate::block::Block;
use crate::warp::{WARP_SIZE, Warp};

/// One lane's match of a round: `len` bytes at `at` from `dist` back (`len` 0: none).
#[derive(Clone, Copy)]
#[repr(C)]
pub struct Match {
    /// Where its bytes go.
    pub at: u32,
    /// How far back its source starts.
    pub dist: u32,
    /// Its length; 0 where the lane has no match this round.
    pub len: u32,
}

/// Who copies the matches of the rounds a decoding warp decodes (it writes their literals itself).
pub trait Rounds {
    /// Copies the lanes' matches, or has them copied, after every byte written before: lane
    /// `first`'s (below 32) and those after it, then those below it, each set in lane order.
    ///
    /// # Safety
    /// As [`copy_matches`]; the bytes before the matches' that they read must be written.
    unsafe fn copy<W: Warp>(&mut self, warp: &W, output: &Output, mine: Match, first: u32);

    /// Returns once every match handed on is copied, the output visible to every lane.
    fn settle<W: Warp>(&mut self, warp: &W);
}

/// The decoding warp copies each round's matches itself.
pub struct InWarp;

impl Rounds for InWarp {
    #[inline(always)]
    unsafe fn copy<W: Warp>(&mut self, warp: &W, output: &Output, mine: Match, first: u32) {
        unsafe { copy_round(warp, output, mine, first) }
    }

    #[inline(always)]
    fn settle<W: Warp>(&mut self, warp: &W) {
        warp.sync();
    }
}

/// Copies the lanes' matches ([`copy_matches`]), lane `first`'s and those after it first.
#[inline(always)]
unsafe fn copy_round<W: Warp>(warp: &W, output: &Output, mine: Match, first: u32) {
    let (lanes, Match { at, dist, len }) = (warp.ballot(mine.len != 0), mine);
    let before_first = (1u32 << first) - 1;
    unsafe { copy_matches(warp, output, lanes & !before_first, at, dist, len) };
    if first != 0 {
        unsafe { copy_matches(warp, output, lanes & before_first, at, dist, len) };
    }
}

/// A handoff command: no matches, only the barrier (see [`Handoff::settle`]).
const WAIT: u32 = WARP_SIZE;
/// A handoff command: the chunk is done; the writer returns.
const DONE: u32 = WARP_SIZE + 1;

/// The two slots a decoding warp hands matches to its writer through, in shared memory. A slot's
/// command is a round's first lane (below 32), `WAIT` or `DONE`.
#[repr(C)]
pub struct HandoffSlots {
    commands: [u32; 2],
    matches: [[Match; WARP_SIZE as usize]; 2],
}

/// Bytes of shared memory [`HandoffSlots`] take (a multiple of 16).
pub const HANDOFF_SHARED_BYTES: usize = size_of::<HandoffSlots>().next_multiple_of(16);

/// The decoding warp's side of a handoff to the second warp of its block: rounds with matches go
/// to the writer, which copies them while the decoder goes on; the decoder writes literals itself
/// (bytes past every match handed on, which no copy reads before a barrier orders them).
pub struct Handoff<'b, B: Block> {
    block: &'b B,
    slots: *mut HandoffSlots,
    /// Commands posted so far: the next goes to slot `posted % 2`.
    posted: u32,
    /// Whether matches were posted since the last [`settle`](Rounds::settle).
    unsettled: bool,
}

impl<'b, B: Block> Handoff<'b, B> {
    /// A handoff through `slots`, which the block's writer serves ([`copy_handed_matches`]).
    pub fn new(block: &'b B, slots: *mut HandoffSlots) -> Self {
        Self { block, slots, posted: 0, unsettled: false }
    }

    /// Posts `command` (the lanes' matches stored before, for a round) and meets the writer,
    /// which then has copied every round but the last one posted before this.
    fn post<W: Warp>(&mut self, warp: &W, command: u32) {
        if warp.lane() == 0 {
            unsafe { (*self.slots).commands[self.posted as usize % 2] = command };
        }
        self.posted += 1;
        self.block.sync_threads();
    }

    /// Sends the writer home: every handoff ends with this, whatever the decoder's result.
    pub fn finish<W: Warp>(&mut self, warp: &W) {
        self.post(warp, DONE);
    }
}

impl<B: Block> Rounds for Handoff<'_, B> {
    #[inline(always)]
    unsafe fn copy<W: Warp>(&mut self, warp: &W, output: &Output, mine: Match, first: u32) {
        if !output.writes() || warp.ballot(mine.len != 0) == 0 {
            return;
        }
        unsafe { (*self.slots).matches[self.posted as usize % 2][warp.lane() as usize] = mine };
        self.post(warp, first);
        self.unsettled = true;
    }

    fn settle<W: Warp>(&mut self, warp: &W) {
        if self.unsettled {
            // The writer is done with the last round once it is back at a barrier.
            self.post(warp, WAIT);
            self.unsettled = false;
        }
        warp.sync(); // this warp's own bytes are visible to every lane
    }
}

/// The writing warp's part of a handoff: copies each round's matches posted through `slots` into
/// `output` until `DONE`.
///
/// # Safety
/// `slots` must be the block's shared memory the decoding warp posts through, `output` the one it
/// decodes into; the block is the two warps.
pub unsafe fn copy_handed_matches<B: Block, W: Warp>(block: &B, warp: &W, output: &Output, slots: *mut HandoffSlots) {
    let mut taken = 0;
    loop {
        block.sync_threads(); // the decoder posted a command
        let slot = taken % 2;
        taken += 1;
        let command = unsafe { (*slots).commands[slot] };
        if command == DONE {
            return;
        }
        if command < WARP_SIZE {
            let mine = unsafe { (*slots).matches[slot][warp.lane() as usize] };
            unsafe { copy_round(warp, output, mine, command) };
        }
    }
}

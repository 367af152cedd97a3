//! Levels 2 to 5 on the warp: the format crate's parse ([`lazy_parse`]), every lane running
//! it the same, its searches shared by the lanes.
//!
//! The lanes first sort the chunk's positions by chain slot ([`sort`], the format's `Matcher`),
//! so that a position's chain lies in one piece just before it. A search then takes one of two
//! forms ([`WarpSearch`]). Where the 32 positions from it all have short chains, each lane walks
//! one position's chain, and the searches in that window take their answers from those lanes.
//! Otherwise the warp reads the position's chain 32 candidates at a time, nearest first, a lane
//! each: a lane measures its candidate's match where it could beat the longest so far, and the
//! warp takes the longest, nearest of them up to the first that ends the walk (as long as the
//! position allows, or `nice`), as the scalar walk down the chain would.

use crate::lz4::SequenceEncoder;
use crate::lz77::{scan_add, scan_max};
use crate::raw::bytes;
use crate::warp::{WARP_SIZE, Warp};
use core::ops::Range;
use ferrocomp_format::Status;
use ferrocomp_format::deflate::compress::{
    Effort, HASH_SLOTS, Match, Matcher, Searcher, TokenSink, chain_slot, chained, lazy_parse, longer_match,
};
use ferrocomp_format::deflate::tables::{MAX_MATCH, MIN_MATCH, WINDOW};

/// Parses the `n` bytes at `input` at `level` (2 to 5) as the format crate's compressor does,
/// handing the literals and matches to `encoder`, every lane the same.
///
/// # Safety
/// `input` must be readable for `n` bytes (at most a chunk), and `matcher` writable, by this
/// warp alone.
// Inlined into each compressor (the batch kernels' and the parts kernels'), as when it had one
// caller: called, the batch kernels spilled twice as much.
#[inline(always)]
pub unsafe fn parse_chains<W: Warp, E: SequenceEncoder>(
    warp: &W,
    input: *const u8,
    n: usize,
    level: u8,
    matcher: *mut Matcher,
    encoder: &mut E,
) -> Result<(), Status> {
    let input = unsafe { bytes(input, n) };
    unsafe { sort(warp, input, matcher) };
    let effort = Effort::of(level);
    let (matcher, window) = (unsafe { &*matcher }, 0..0);
    let mut search = WarpSearch { warp, input, matcher, effort: &effort, window, found: [0; 2], long: None };
    let mut runs = LiteralRuns { input, encoder, start: 0, count: 0, status: Ok(()) };
    lazy_parse(n, &effort, &mut search, &mut runs);
    runs.finish()
}

/// The format's `Matcher::sort`, 32 positions a step: each lane's rank in its slot counts the
/// earlier lanes of its slot ([`Warp::match_any`]), the last of which moves the slot's count;
/// the counts become starts by a warp-wide scan of each lane's run of slots.
///
/// # Safety
/// `matcher` must be writable, by this warp alone.
unsafe fn sort<W: Warp>(warp: &W, input: &[u8], matcher: *mut Matcher) {
    let starts = unsafe { &raw mut (*matcher).starts } as *mut u16;
    let index = unsafe { &raw mut (*matcher).index } as *mut u16;
    let sorted = unsafe { &raw mut (*matcher).sorted } as *mut u16;
    let lane = warp.lane() as usize;
    let positions = chained(input.len());
    warp.for_each_strided(HASH_SLOTS, |i| unsafe { *starts.add(i) = 0 });
    warp.sync(); // the empty counts are visible to every lane
    let mut step = 0;
    while step < positions {
        let pos = step + lane;
        let slot = if pos < positions { chain_slot(input, pos) as u32 } else { u32::MAX };
        let same = warp.match_any(slot);
        let mut rank = 0;
        if pos < positions {
            rank = unsafe { *starts.add(slot as usize) } + (same & ((1 << lane) - 1)).count_ones() as u16;
            unsafe { *index.add(pos) = rank };
        }
        warp.sync(); // every count is read before it moves
        if pos < positions && same >> lane >> 1 == 0 {
            unsafe { *starts.add(slot as usize) = rank + 1 };
        }
        warp.sync(); // the moved counts are visible to every lane
        step += WARP_SIZE as usize;
    }
    // Each lane's run of slots: their sum, the runs' sums scanned, the run's starts written.
    let run = unsafe { starts.add(lane * SLOTS_A_LANE) };
    let sum = (0..SLOTS_A_LANE).map(|i| unsafe { *run.add(i) } as u32).sum::<u32>();
    let mut start = scan_add(warp, sum) - sum;
    for i in 0..SLOTS_A_LANE {
        let count = unsafe { *run.add(i) } as u32;
        unsafe { *run.add(i) = start as u16 };
        start += count;
    }
    warp.sync(); // the starts are visible to every lane
    warp.for_each_strided(positions, |pos| unsafe {
        let at = *index.add(pos) + *starts.add(chain_slot(input, pos));
        *index.add(pos) = at;
        *sorted.add(at as usize) = pos as u16;
    });
    warp.sync(); // the sorted positions are visible to every lane
}

/// Slots whose starts a lane sums: a run of them each.
const SLOTS_A_LANE: usize = HASH_SLOTS / WARP_SIZE as usize;

/// Chains at most this long make a walk a lane cheaper than walks by the whole warp.
const SHORT_CHAIN: usize = 32;

/// The parse's searches. Where the 32 positions from a search all have short chains, each
/// lane walks its own ([`Matcher::longest`]), and the searches in that window take their
/// answers from there; otherwise the 32 lanes walk the position's chain together, 32
/// candidates a step ([`WarpSearch::together`]).
struct WarpSearch<'a, W> {
    warp: &'a W,
    input: &'a [u8],
    matcher: &'a Matcher,
    effort: &'a Effort,
    /// The positions walked a lane each, and this lane's answers, shallow and deep, packed.
    window: Range<usize>,
    found: [u32; 2],
    /// A position with a long chain: windows from up to it are not all short.
    long: Option<usize>,
}

impl<W: Warp> Searcher for WarpSearch<'_, W> {
    fn longest(&mut self, pos: usize, shallow: bool) -> Match {
        let (warp, input, matcher, effort) = (self.warp, self.input, self.matcher, self.effort);
        if !self.window.contains(&pos) {
            if self.long.is_some_and(|long| pos <= long) {
                return self.together(pos, shallow);
            }
            let mine = pos + warp.lane() as usize;
            let walks = mine + MIN_MATCH <= input.len();
            let short = !walks || matcher.chain(input, mine, effort.depth).len() <= SHORT_CHAIN;
            let long = warp.ballot(!short);
            if long != 0 {
                self.long = Some(pos + long.trailing_zeros() as usize);
                return self.together(pos, shallow);
            }
            self.found = if walks { matcher.longest(input, mine, effort.depth, effort.nice).map(pack) } else { [0; 2] };
            self.window = pos..pos + WARP_SIZE as usize;
        }
        let [shallow_found, deep_found] = self.found;
        let found = if shallow { shallow_found } else { deep_found };
        let packed = warp.shuffle(found, (pos - self.window.start) as u32);
        Match { len: packed & 0xFFFF, dist: packed >> 16 }
    }
}

fn pack(found: Match) -> u32 {
    found.len | found.dist << 16
}

impl<W: Warp> WarpSearch<'_, W> {
    /// The search at `pos` by the whole warp: 32 candidates a step, nearest first, a lane
    /// each; the lanes measure the matches that could beat the longest so far, and the warp
    /// takes the longest, nearest of them up to the first that ends the walk.
    fn together(&self, pos: usize, shallow: bool) -> Match {
        let (warp, input, lane) = (self.warp, self.input, self.warp.lane());
        let depth = if shallow { self.effort.depth / 4 } else { self.effort.depth };
        let chain = self.matcher.chain(input, pos, depth);
        let max = (input.len() - pos).min(MAX_MATCH);
        let enough = self.effort.nice.min(max);
        let mut best = Match::default();
        // Candidates nearest first: the chain's end first.
        let mut seen = 0;
        while seen < chain.len() {
            let i = seen + lane as usize;
            let cand = if i < chain.len() { chain[chain.len() - 1 - i] as usize } else { pos };
            let near = i < chain.len() && pos - cand <= WINDOW;
            // The walk ends before the first candidate out of the window...
            let far = warp.ballot(i < chain.len() && !near);
            let within = far.trailing_zeros(); // 32 where none
            let len = if near && lane < within { longer_match(input, cand, pos, max, best.len as usize) } else { 0 };
            // ...and at the first match long enough.
            let ends = warp.ballot(len >= enough);
            let last = if ends != 0 { ends.trailing_zeros() } else { WARP_SIZE - 1 };
            // The longest up to there, the nearest of that length (the lowest lane).
            let key = if lane <= last && len > 0 { (len as u32) << 16 | (WARP_SIZE - 1 - lane) } else { 0 };
            let top = warp.shuffle(scan_max(warp, key), WARP_SIZE - 1);
            let dist = warp.shuffle((pos - cand) as u32, WARP_SIZE - 1 - (top & 0xFFFF));
            if top != 0 {
                best = Match { len: top >> 16, dist };
            }
            if ends != 0 || far != 0 {
                break;
            }
            seen += WARP_SIZE as usize;
        }
        best
    }
}

/// The parse's tokens as LZ4-style sequences: each run of literals goes out with the match
/// after it.
struct LiteralRuns<'a, E> {
    input: &'a [u8],
    encoder: &'a mut E,
    /// The run of literals since the last match.
    start: usize,
    count: usize,
    /// The first status the encoder gave, if not `Ok`.
    status: Result<(), Status>,
}

impl<E: SequenceEncoder> TokenSink for LiteralRuns<'_, E> {
    fn literal(&mut self, pos: usize) {
        if self.count == 0 {
            self.start = pos;
        }
        self.count += 1;
    }

    fn matched(&mut self, _pos: usize, len: usize, dist: usize) {
        if self.status.is_ok() {
            let literals = self.input.as_ptr().wrapping_add(self.start);
            self.status = unsafe { self.encoder.sequence(literals, self.count, dist, len) };
        }
        self.count = 0;
    }
}

impl<E: SequenceEncoder> LiteralRuns<'_, E> {
    /// Hands over the last run of literals.
    fn finish(self) -> Result<(), Status> {
        self.status?;
        unsafe { self.encoder.last_literals(self.input.as_ptr().wrapping_add(self.start), self.count) }
    }
}

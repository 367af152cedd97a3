//! Levels 2 to 5 on the warp: the format crate's parse ([`lazy_parse`]), its chain walks made
//! 32 at a time.
//!
//! The lanes first link every position into its hash chain ([`link`]). A walk from any
//! position then reads what the scalar compressor's walk from it reads, which links positions
//! as its parse reaches them (a chain only points backwards). Every lane runs the parse, the
//! same in each. A search outside the window of positions walked last walks the 32 chains
//! from it, one a lane ([`WindowSearch`]); searches inside the window take their answers from
//! the lanes that walked them. A window holds the parse until it passes the window's end.

use crate::lz4::SequenceEncoder;
use crate::raw::bytes;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::deflate::compress::{
    Effort, HASH_SLOTS, Match, Matcher, Searcher, TokenSink, chain_slot, lazy_parse,
};
use ferrocomp_format::deflate::tables::MIN_MATCH;

/// Parses the `n` bytes at `input` at `level` (2 to 5) as the format crate's compressor does,
/// handing the literals and matches to `encoder`, every lane the same.
///
/// # Safety
/// `input` must be readable for `n` bytes (at most a chunk), and `matcher` writable, by this
/// warp alone.
pub unsafe fn parse_chains<W: Warp, E: SequenceEncoder>(
    warp: &W,
    input: *const u8,
    n: usize,
    level: u8,
    matcher: *mut Matcher,
    encoder: &mut E,
) -> Result<(), Status> {
    unsafe { link(warp, input, n, matcher) };
    let effort = Effort::of(level);
    let input = unsafe { bytes(input, n) };
    let mut search =
        WindowSearch { warp, input, matcher: unsafe { &*matcher }, effort: &effort, start: 0, found: [0; 2] };
    search.walk(0);
    let mut runs = LiteralRuns { input, encoder, start: 0, count: 0, status: Ok(()) };
    lazy_parse(n, &effort, &mut search, &mut runs);
    runs.finish()
}

/// Links the chunk's positions into their chains in input order, as the format's
/// `Matcher::link`, 32 a step: a lane's position follows the nearest earlier lane with its slot
/// ([`Warp::match_any`]), or the slot's head, and the last lane of each slot moves its head.
unsafe fn link<W: Warp>(warp: &W, input: *const u8, n: usize, matcher: *mut Matcher) {
    let head = unsafe { &raw mut (*matcher).head } as *mut u16;
    let prev = unsafe { &raw mut (*matcher).prev } as *mut u16;
    warp.for_each_strided(HASH_SLOTS, |i| unsafe { *head.add(i) = 0 });
    warp.sync(); // the empty heads are visible to every lane
    let input = unsafe { bytes(input, n) };
    let lane = warp.lane() as usize;
    let links = n.saturating_sub(MIN_MATCH - 1);
    let mut start = 0;
    while start < links {
        let pos = start + lane;
        let slot = if pos < links { chain_slot(input, pos) as u32 } else { u32::MAX };
        let same = warp.match_any(slot);
        let earlier = same & ((1 << lane) - 1);
        if pos < links {
            let before = match earlier {
                0 => unsafe { *head.add(slot as usize) },
                _ => (start + WARP_SIZE as usize - 1 - earlier.leading_zeros() as usize) as u16,
            };
            unsafe { *prev.add(pos) = before };
        }
        warp.sync(); // every head is read before it moves
        if pos < links && same >> lane >> 1 == 0 {
            unsafe { *head.add(slot as usize) = pos as u16 };
        }
        warp.sync(); // the moved heads and the links are visible to every lane
        start += WARP_SIZE as usize;
    }
}

/// The parse's searches, answered from the window of the 32 positions from `start`.
struct WindowSearch<'a, W> {
    warp: &'a W,
    input: &'a [u8],
    matcher: &'a Matcher,
    effort: &'a Effort,
    start: usize,
    /// This lane's position's longest matches, shallow and deep ([`Matcher::longest`]), packed.
    found: [u32; 2],
}

impl<W: Warp> WindowSearch<'_, W> {
    /// Walks the chains of the 32 positions from `start`, one a lane.
    fn walk(&mut self, start: usize) {
        let pos = start + self.warp.lane() as usize;
        self.start = start;
        self.found = match pos + MIN_MATCH <= self.input.len() {
            true => self.matcher.longest(self.input, pos, self.effort.depth, self.effort.nice).map(pack),
            false => [0; 2],
        };
    }
}

impl<W: Warp> Searcher for WindowSearch<'_, W> {
    fn longest(&mut self, pos: usize, shallow: bool) -> Match {
        if pos.wrapping_sub(self.start) >= WARP_SIZE as usize {
            self.walk(pos);
        }
        let [shallow_found, deep_found] = self.found;
        let found = if shallow { shallow_found } else { deep_found };
        let packed = self.warp.shuffle(found, (pos - self.start) as u32);
        Match { len: packed & 0xFFFF, dist: packed >> 16 }
    }
}

fn pack(found: Match) -> u32 {
    found.len | found.dist << 16
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

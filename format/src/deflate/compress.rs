//! The compressor's front end: LZ77 parsing into tokens (one parser per level) and cutting the
//! token stream into blocks, which [`block`](super::block) writes through any [`BitSink`].

use super::PART_SIZE;
use super::block::{BitSink, BlockPlan, Freqs, StreamKind, token, write_block};
use super::estimate::Estimate;
use super::tables::{MAX_MATCH, MIN_MATCH, WINDOW};
use crate::lz4::{self, MatchRules, SequenceSink};
use crate::{DataType, Status};

/// Tokens are gathered in segments; after each, the segment either joins the current block or,
/// when two blocks with their own codes would be smaller, starts a new one.
pub const SEGMENT: usize = 4096;
/// Most tokens in one block.
pub const MAX_BLOCK_TOKENS: usize = 4 * SEGMENT;
const HASH_BITS: u32 = 15;

/// Working memory of [`compress`](fn@super::compress). Any contents are a valid starting state
/// (every array is initialised before it is read), so it may be reused as is, or allocated
/// zeroed (e.g. `Box::<CompressScratch>::new_zeroed()`), never needing a constructor.
#[repr(C)]
pub struct CompressScratch {
    /// The hash chains of levels 2 to 5 (the GPU's compressor builds and searches them in a warp).
    pub matcher: Matcher,
    /// The token stream being cut into blocks (the GPU's level-1 compressor uses it alone).
    pub blocks: Blocks,
}

/// Hash chains over a part's positions (parts are at most 64 KiB, so a u16 names any): the
/// positions with at least 3 bytes from them sorted by [`chain_slot`], each slot's in input
/// order, so that a position's chain (the earlier positions of its slot, nearest first) lies in
/// one piece just before it, which 32 lanes read at once.
#[repr(C)]
pub struct Matcher {
    /// Where each slot's positions start in `sorted` (level 1's hash table on the CPU).
    pub starts: [u16; HASH_SLOTS],
    /// Where each position is in `sorted`.
    pub index: [u16; PART_SIZE],
    /// The chained positions, by slot, each slot's in input order.
    pub sorted: [u16; PART_SIZE],
}

/// Hash chains' slots.
pub const HASH_SLOTS: usize = 1 << HASH_BITS;

/// The current block and the segment being gathered, and the work space to cost and write them.
/// The segment's tokens go in after the block's; after [`SEGMENT`] of them, or at the end,
/// [`Blocks::close_segment`] decides whether the segment joins the block.
#[repr(C)]
pub struct Blocks {
    /// The block's tokens, then the segment's.
    pub tokens: [u32; MAX_BLOCK_TOKENS + SEGMENT],
    /// Counts of the block's symbols.
    pub block: Freqs,
    /// Counts of the segment's symbols.
    pub seg: Freqs,
    /// The codes of the block being written.
    pub plan: BlockPlan,
    /// Tokens of the block, at the front of `tokens`.
    pub block_tokens: usize,
    /// Tokens of the segment, after the block's in `tokens`.
    pub seg_tokens: usize,
    /// Input offset where the block starts.
    pub block_start: usize,
    /// Input offset where the segment starts (where the block ends).
    pub seg_start: usize,
    block_cost: u64,
    /// The segment's cost while the block before it is written.
    seg_cost: u64,
}

impl Blocks {
    /// Empties the block and the segment, for a new chunk.
    pub fn clear(&mut self) {
        self.block.clear();
        self.seg.clear();
        (self.block_tokens, self.seg_tokens, self.block_start, self.seg_start, self.block_cost) = (0, 0, 0, 0, 0);
    }

    /// Closes the segment ending at input offset `end` (its tokens and counts in): merges it into
    /// the block, or, when two blocks with their own codes would be smaller, returns true: the
    /// block is to be written ([`write_block`] of [`Blocks::block_tokens`]' tokens), its
    /// segment's tokens moved to the front of `tokens`, and [`Blocks::start_block`] called.
    pub fn close_segment<S: StreamKind>(&mut self, sink: &S, end: usize) -> bool {
        let (seg, merged) = (Estimate::of_sum(&[&self.seg]), Estimate::of_sum(&[&self.block, &self.seg]));
        self.close_estimated_segment(sink, end, seg, merged)
    }

    /// [`Blocks::close_segment`], given the estimates of the segment and of the block and the
    /// segment together (which a warp sums in parts). Blocks are cut where estimates say, so
    /// that only the blocks written need codes built.
    pub fn close_estimated_segment<S: StreamKind>(
        &mut self,
        sink: &S,
        end: usize,
        seg: Estimate,
        merged: Estimate,
    ) -> bool {
        self.seg_cost = seg.bits().min(sink.stored_cost(end - self.seg_start));
        if self.block_tokens == 0 {
            self.block_cost = self.seg_cost;
            core::mem::swap(&mut self.block, &mut self.seg);
            self.take_segment(end);
            return false;
        }
        let merged_cost = merged.bits().min(sink.stored_cost(end - self.block_start));
        if self.block_tokens + self.seg_tokens > MAX_BLOCK_TOKENS || merged_cost > self.block_cost + self.seg_cost {
            return true;
        }
        self.block_cost = merged_cost;
        self.block.add(&self.seg);
        self.take_segment(end);
        false
    }

    /// After the block was written and the segment's tokens moved to the front: the segment,
    /// ending at `end`, is the block.
    pub fn start_block(&mut self, end: usize) {
        self.block_tokens = 0;
        self.block_start = self.seg_start;
        self.block_cost = self.seg_cost;
        core::mem::swap(&mut self.block, &mut self.seg);
        self.take_segment(end);
    }

    /// Where the segment's tokens are, which must move to the front once the block is written.
    fn segment_span(&self) -> core::ops::Range<usize> {
        self.block_tokens..self.block_tokens + self.seg_tokens
    }

    fn take_segment(&mut self, end: usize) {
        self.block_tokens += self.seg_tokens;
        self.seg_tokens = 0;
        self.seg.clear();
        self.seg_start = end;
    }
}

/// Where the parser's tokens go.
struct Emit<'a, S: BitSink> {
    input: &'a [u8],
    blocks: &'a mut Blocks,
    sink: &'a mut S,
}

impl<S: BitSink> TokenSink for Emit<'_, S> {
    #[inline(always)]
    fn literal(&mut self, pos: usize) {
        self.push(token(0, self.input[pos] as usize), pos + 1);
    }

    #[inline(always)]
    fn matched(&mut self, pos: usize, len: usize, dist: usize) {
        self.push(token(dist, len), pos + len);
    }
}

impl<S: BitSink> Emit<'_, S> {
    #[inline(always)]
    fn push(&mut self, tok: u32, end: usize) {
        let b = &mut *self.blocks;
        b.tokens[b.block_tokens + b.seg_tokens] = tok;
        b.seg.count(tok, S::DEFLATE64);
        b.seg_tokens += 1;
        if b.seg_tokens == SEGMENT {
            self.end_segment(end);
        }
    }

    /// Closes the segment ending at input offset `end`: merge it into the block or start anew.
    fn end_segment(&mut self, end: usize) {
        let b = &mut *self.blocks;
        if b.close_segment(self.sink, end) {
            let data = &self.input[b.block_start..b.seg_start];
            write_block(self.sink, &mut b.plan, &b.block, &b.tokens[..b.block_tokens], data, false);
            let segment = b.segment_span();
            b.tokens.copy_within(segment, 0);
            b.start_block(end);
        }
    }

    /// Writes the part's last block, final if `last`.
    fn finish(mut self, last: bool) {
        if self.blocks.seg_tokens > 0 {
            self.end_segment(self.input.len());
        }
        let b = &mut *self.blocks;
        let data = &self.input[b.block_start..];
        write_block(self.sink, &mut b.plan, &b.block, &b.tokens[..b.block_tokens], data, last);
    }
}

/// How hard a level of 2 to 5 looks for matches.
pub struct Effort {
    /// Candidates examined per position.
    pub depth: u32,
    /// A match this long is taken without looking further.
    pub nice: usize,
    /// Lazy matching: try the next position before taking a match.
    pub lazy: bool,
    /// With a pending match this long, look only a quarter as deep.
    pub good: usize,
}

impl Effort {
    /// The effort of `level` (2 to 5; higher levels are 5's).
    pub const fn of(level: u8) -> Self {
        match level {
            ..=2 => Effort { depth: 8, nice: 32, lazy: false, good: MAX_MATCH },
            3 => Effort { depth: 32, nice: 128, lazy: true, good: 16 },
            4 => Effort { depth: 256, nice: MAX_MATCH, lazy: true, good: 32 },
            _ => Effort { depth: 4096, nice: MAX_MATCH, lazy: true, good: MAX_MATCH },
        }
    }
}

/// Compresses `input` at `level` (0..=5) into blocks in `sink`, [`PART_SIZE`] bytes at a time,
/// the last block final.
pub(crate) fn compress_blocks<S: BitSink>(input: &[u8], level: u8, scratch: &mut CompressScratch, sink: &mut S) {
    let mut start = 0;
    loop {
        let end = input.len().min(start + PART_SIZE);
        compress_part(&input[start..end], level, scratch, sink, end == input.len());
        if end == input.len() {
            return;
        }
        start = end;
    }
}

/// Compresses one part (at most [`PART_SIZE`] bytes) into blocks in `sink`, its matches within
/// it; its last block is final if `last`.
fn compress_part<S: BitSink>(input: &[u8], level: u8, scratch: &mut CompressScratch, sink: &mut S, last: bool) {
    let blocks = &mut scratch.blocks;
    blocks.clear();
    let mut emit = Emit { input, blocks, sink };
    let m = &mut scratch.matcher;
    match level {
        0 => (0..input.len()).for_each(|pos| emit.literal(pos)),
        1 => fast(input, m, &mut emit),
        _ => {
            m.sort(input);
            let effort = Effort::of(level);
            lazy_parse(input.len(), &effort, &mut ChainSearch { input, matcher: m, effort: &effort }, &mut emit);
        }
    }
    emit.finish(last);
}

#[inline(always)]
fn read_u32(data: &[u8], at: usize) -> u32 {
    match data.get(at..at + 4) {
        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

/// Length of the common prefix of `data[a..]` and `data[b..]` (a < b), at most `max`.
#[inline(always)]
fn common(data: &[u8], a: usize, b: usize, max: usize) -> usize {
    let mut len = 0;
    while len + 8 <= max {
        let (Some(x), Some(y)) = (data.get(a + len..a + len + 8), data.get(b + len..b + len + 8)) else { break };
        let diff =
            u64::from_le_bytes(x.try_into().unwrap_or([0; 8])) ^ u64::from_le_bytes(y.try_into().unwrap_or([0; 8]));
        if diff != 0 {
            return len + (diff.trailing_zeros() / 8) as usize;
        }
        len += 8;
    }
    while len < max && data.get(a + len) == data.get(b + len) {
        len += 1;
    }
    len
}

/// Level 1: LZ4's parse (`lz4::parse`, the GPU's warp parse), its matches within the window and
/// cut to at most [`MAX_MATCH`] bytes.
fn fast<S: BitSink>(input: &[u8], m: &mut Matcher, emit: &mut Emit<S>) {
    let mut tokens = Tokens { emit, pos: 0 };
    // The sink never fails, so neither does the parse.
    let _ = lz4::parse(input, FAST_RULES, &mut m.starts, &mut tokens);
}

/// The match rules of level 1's parse: bytes, within deflate's window (GDeflate's too, whose
/// farther distances would need codes plain deflate lacks), with a table twice LZ4's (float32
/// data lost 8% of its ratio with LZ4's).
pub const FAST_RULES: MatchRules = MatchRules::new(DataType::Char).within(WINDOW).table_bits(13);

/// Turns LZ4 sequences into tokens.
struct Tokens<'e, 'a, S: BitSink> {
    emit: &'e mut Emit<'a, S>,
    /// Input offset of the next token.
    pos: usize,
}

impl<S: BitSink> SequenceSink for Tokens<'_, '_, S> {
    fn sequence(&mut self, literals: &[u8], offset: usize, match_len: usize) -> Result<(), Status> {
        self.last_literals(literals)?;
        for piece in match_pieces(match_len) {
            self.emit.matched(self.pos, piece, offset);
            self.pos += piece;
        }
        Ok(())
    }

    fn last_literals(&mut self, literals: &[u8]) -> Result<(), Status> {
        for _ in literals {
            self.emit.literal(self.pos);
            self.pos += 1;
        }
        Ok(())
    }
}

/// The lengths a match of `len` (at least [`MIN_MATCH`]) bytes is cut into: [`MAX_MATCH`] at a
/// time, the last two pieces shortened so that neither is below [`MIN_MATCH`].
pub fn match_pieces(len: usize) -> impl Iterator<Item = usize> {
    let mut rest = len;
    core::iter::from_fn(move || {
        let piece = match rest {
            0 => return None,
            r if r <= MAX_MATCH => r,
            r if r - MAX_MATCH < MIN_MATCH => r - MIN_MATCH,
            _ => MAX_MATCH,
        };
        rest -= piece;
        Some(piece)
    })
}

/// A match of `len` bytes `dist` back; `len` 0 where there is none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Match {
    /// Bytes matched; 0 for no match.
    pub len: u32,
    /// How many bytes back the match's source starts.
    pub dist: u32,
}

/// Where [`lazy_parse`] looks for matches.
pub trait Searcher {
    /// The longest match at `pos` (with at least [`MIN_MATCH`] bytes from it) among the first
    /// [`Effort::depth`] earlier positions of its chain, or a quarter of them where `shallow`:
    /// the nearest of that length, and none below [`MIN_MATCH`] bytes.
    fn longest(&mut self, pos: usize, shallow: bool) -> Match;
}

/// Where [`lazy_parse`] puts its tokens, in input order.
pub trait TokenSink {
    /// The byte at `pos` as a literal.
    fn literal(&mut self, pos: usize);
    /// A match at `pos` of `len` bytes `dist` back.
    fn matched(&mut self, pos: usize, len: usize, dist: usize);
}

/// The parse of levels 2 to 5 over `n` bytes: greedy, or lazy (a match waits to see whether
/// the next position has a longer one). The searches are all it needs of the bytes. Inlined
/// (the GPU's two compressors of each format, the batch kernels' and the parts kernels', call
/// it: called, the batch kernels spilled twice as much).
#[inline(always)]
pub fn lazy_parse(n: usize, effort: &Effort, search: &mut impl Searcher, sink: &mut impl TokenSink) {
    let mut pos = 0;
    // A match found at `pos - 1`, waiting to see whether `pos` has a longer one.
    let (mut pending, mut pending_dist) = (0, 0);
    while pos < n {
        let (mut len, mut dist) = (0, 0);
        if pos + MIN_MATCH <= n && pending < effort.nice {
            let found = search.longest(pos, pending >= effort.good);
            let (found_len, found_dist) = (found.len as usize, found.dist as usize);
            // A 3-byte match far back costs about as much as its literals.
            if found_len > pending.max(MIN_MATCH - 1) && !(found_len == MIN_MATCH && found_dist > 4096) {
                (len, dist) = (found_len, found_dist);
            }
        }
        if pending >= MIN_MATCH {
            if len > pending {
                sink.literal(pos - 1);
                (pending, pending_dist) = (len, dist);
                pos += 1;
            } else {
                sink.matched(pos - 1, pending, pending_dist);
                pos += pending - 1;
                pending = 0;
            }
        } else if len >= MIN_MATCH && effort.lazy {
            (pending, pending_dist) = (len, dist);
            pos += 1;
        } else if len >= MIN_MATCH {
            sink.matched(pos, len, dist);
            pos += len;
        } else {
            sink.literal(pos);
            pos += 1;
        }
    }
    if pending >= MIN_MATCH {
        sink.matched(pos - 1, pending, pending_dist);
    }
}

/// The CPU's searches: one chain walk each.
struct ChainSearch<'a> {
    input: &'a [u8],
    matcher: &'a Matcher,
    effort: &'a Effort,
}

impl Searcher for ChainSearch<'_> {
    fn longest(&mut self, pos: usize, shallow: bool) -> Match {
        let depth = if shallow { self.effort.depth / 4 } else { self.effort.depth };
        self.matcher.longest(self.input, pos, depth, self.effort.nice)[1]
    }
}

/// The length of the match at `pos` from the earlier `cand`, where it is longer than `beat`
/// bytes and than [`MIN_MATCH`]` - 1` (at most `max`); 0 where not.
#[inline(always)]
pub fn longer_match(input: &[u8], cand: usize, pos: usize, max: usize, beat: usize) -> usize {
    let at_least = beat.max(MIN_MATCH - 1);
    // The byte that would make it longer first: most candidates differ there or at the start.
    if input.get(cand + at_least) != input.get(pos + at_least) || input.get(cand) != input.get(pos) {
        return 0;
    }
    let len = common(input, cand, pos, max);
    if len > at_least { len } else { 0 }
}

/// The chain slot of the 3 bytes at `pos`.
#[inline(always)]
pub fn chain_slot(input: &[u8], pos: usize) -> usize {
    let v = read_u32(input, pos) & 0xFF_FFFF;
    (v.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
}

/// Positions of the chunk of `n` bytes that have chains: those with at least 3 bytes from them.
pub fn chained(n: usize) -> usize {
    n.saturating_sub(MIN_MATCH - 1)
}

impl Matcher {
    /// Sorts the positions by slot (a counting sort, stable).
    fn sort(&mut self, input: &[u8]) {
        self.starts.fill(0);
        for pos in 0..chained(input.len()) {
            let slot = chain_slot(input, pos);
            self.index[pos] = self.starts[slot];
            self.starts[slot] += 1;
        }
        let mut start = 0;
        for slot_start in &mut self.starts {
            (*slot_start, start) = (start, start + *slot_start);
        }
        for pos in 0..chained(input.len()) {
            self.index[pos] += self.starts[chain_slot(input, pos)];
            self.sorted[self.index[pos] as usize] = pos as u16;
        }
    }

    /// The longest matches at `pos` (as [`Searcher::longest`]) among the first `depth / 4` and
    /// the first `depth` candidates of its chain, nearest first, the walk ending at a match of
    /// `nice` bytes or as long as the position allows.
    pub fn longest(&self, input: &[u8], pos: usize, depth: u32, nice: usize) -> [Match; 2] {
        let (max, quarter) = ((input.len() - pos).min(MAX_MATCH), depth as usize / 4);
        let (mut best, mut shallow) = (Match::default(), None);
        for (i, &cand) in self.chain(input, pos, depth).iter().rev().enumerate() {
            let cand = cand as usize;
            if pos - cand > WINDOW {
                break;
            }
            if i == quarter {
                shallow = Some(best);
            }
            let len = longer_match(input, cand, pos, max, best.len as usize);
            if len > 0 {
                best = Match { len: len as u32, dist: (pos - cand) as u32 };
                if len >= nice.min(max) {
                    break;
                }
            }
        }
        [shallow.unwrap_or(best), best]
    }

    /// The nearest `depth` of the earlier positions of `pos`'s slot, in input order (its chain,
    /// backwards, to that depth).
    #[inline(always)]
    pub fn chain(&self, input: &[u8], pos: usize, depth: u32) -> &[u16] {
        let (start, at) = (self.starts[chain_slot(input, pos)] as usize, self.index[pos] as usize);
        self.sorted.get(start.max(at.saturating_sub(depth as usize))..at).unwrap_or(&[])
    }
}

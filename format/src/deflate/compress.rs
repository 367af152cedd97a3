//! The compressor's front end: LZ77 parsing into tokens (one parser per level) and cutting the
//! token stream into blocks, which [`block`](super::block) writes through any [`BitSink`].

use super::MAX_CHUNK_SIZE;
use super::block::{BitSink, BlockPlan, Freqs, best_cost, token, write_block};
use super::tables::{MAX_MATCH, MIN_MATCH, WINDOW};

/// Tokens are gathered in segments; after each, the segment either joins the current block or,
/// when two blocks with their own codes would be smaller, starts a new one.
const SEGMENT: usize = 4096;
/// Most tokens in one block.
const MAX_BLOCK_TOKENS: usize = 4 * SEGMENT;
const HASH_BITS: u32 = 15;
/// Level 1's single-probe table is smaller, so it is quicker to clear.
const FAST_HASH_BITS: u32 = 13;

/// Working memory of [`compress`](super::compress). Any contents are a valid starting state
/// (every array is initialised before it is read), so it may be reused as is, or allocated
/// zeroed (e.g. `Box::<CompressScratch>::new_zeroed()`), never needing a constructor.
#[repr(C)]
pub struct CompressScratch {
    matcher: Matcher,
    blocks: Blocks,
}

/// Hash chains over positions in the chunk (chunks are at most 64 KiB, so a u16 names any).
#[repr(C)]
struct Matcher {
    head: [u16; 1 << HASH_BITS],
    prev: [u16; MAX_CHUNK_SIZE],
}

/// The current block and the segment being gathered, and the work space to cost and write them.
#[repr(C)]
struct Blocks {
    tokens: [u32; MAX_BLOCK_TOKENS + SEGMENT],
    block: Freqs,
    seg: Freqs,
    merged: Freqs,
    plan: BlockPlan,
    block_tokens: usize,
    seg_tokens: usize,
    /// Input offsets where the block and the segment start.
    block_start: usize,
    seg_start: usize,
    block_cost: u64,
}

/// Where the parser's tokens go.
struct Emit<'a, S: BitSink> {
    input: &'a [u8],
    blocks: &'a mut Blocks,
    sink: &'a mut S,
}

impl<S: BitSink> Emit<'_, S> {
    #[inline(always)]
    fn literal(&mut self, pos: usize) {
        self.push(token(0, self.input[pos] as usize), pos + 1);
    }

    #[inline(always)]
    fn matched(&mut self, pos: usize, len: usize, dist: usize) {
        self.push(token(dist, len), pos + len);
    }

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
        let seg_cost = best_cost(self.sink, &mut b.plan, &b.seg, end - b.seg_start);
        if b.block_tokens == 0 {
            b.block_cost = seg_cost;
            core::mem::swap(&mut b.block, &mut b.seg);
        } else {
            b.merged.lit = b.block.lit;
            b.merged.dist = b.block.dist;
            b.merged.add(&b.seg);
            let merged_cost = best_cost(self.sink, &mut b.plan, &b.merged, end - b.block_start);
            if b.block_tokens + b.seg_tokens > MAX_BLOCK_TOKENS || merged_cost > b.block_cost + seg_cost {
                let data = &self.input[b.block_start..b.seg_start];
                write_block(self.sink, &mut b.plan, &b.block, &b.tokens[..b.block_tokens], data, false);
                b.tokens.copy_within(b.block_tokens..b.block_tokens + b.seg_tokens, 0);
                b.block_tokens = 0;
                b.block_start = b.seg_start;
                b.block_cost = seg_cost;
                core::mem::swap(&mut b.block, &mut b.seg);
            } else {
                b.block_cost = merged_cost;
                core::mem::swap(&mut b.block, &mut b.merged);
            }
        }
        b.block_tokens += b.seg_tokens;
        b.seg_tokens = 0;
        b.seg.clear();
        b.seg_start = end;
    }

    /// Writes the last block.
    fn finish(mut self) {
        if self.blocks.seg_tokens > 0 {
            self.end_segment(self.input.len());
        }
        let b = &mut *self.blocks;
        let data = &self.input[b.block_start..];
        write_block(self.sink, &mut b.plan, &b.block, &b.tokens[..b.block_tokens], data, true);
    }
}

/// How hard a level looks for matches.
struct Effort {
    /// Candidates examined per position.
    depth: u32,
    /// A match this long is taken without looking further.
    nice: usize,
    /// Lazy matching: try the next position before taking a match.
    lazy: bool,
    /// With a pending match this long, look only a quarter as deep.
    good: usize,
}

/// Compresses `input` (at most [`MAX_CHUNK_SIZE`] bytes) at `level` (0..=5) into blocks in `sink`.
pub(crate) fn compress_blocks<S: BitSink>(input: &[u8], level: u8, scratch: &mut CompressScratch, sink: &mut S) {
    let blocks = &mut scratch.blocks;
    blocks.block.clear();
    blocks.seg.clear();
    (blocks.block_tokens, blocks.seg_tokens, blocks.block_start, blocks.seg_start, blocks.block_cost) = (0, 0, 0, 0, 0);
    let mut emit = Emit { input, blocks, sink };
    let m = &mut scratch.matcher;
    match level {
        0 => (0..input.len()).for_each(|pos| emit.literal(pos)),
        1 => greedy_single_probe(input, m, &mut emit),
        2 => chains(input, m, &mut emit, &Effort { depth: 8, nice: 32, lazy: false, good: MAX_MATCH }),
        3 => chains(input, m, &mut emit, &Effort { depth: 32, nice: 128, lazy: true, good: 16 }),
        4 => chains(input, m, &mut emit, &Effort { depth: 256, nice: MAX_MATCH, lazy: true, good: 32 }),
        _ => chains(input, m, &mut emit, &Effort { depth: 4096, nice: MAX_MATCH, lazy: true, good: MAX_MATCH }),
    }
    emit.finish();
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

/// Level 1: greedy, one probe of a hash table of 4-byte sequences, no insertion inside matches.
fn greedy_single_probe<S: BitSink>(input: &[u8], m: &mut Matcher, e: &mut Emit<S>) {
    let head = &mut m.head[..1 << FAST_HASH_BITS];
    head.fill(0);
    let n = input.len();
    let mut pos = 0;
    while pos + 4 <= n {
        let v = read_u32(input, pos);
        let slot = (v.wrapping_mul(0x9E37_79B1) >> (32 - FAST_HASH_BITS)) as usize;
        let cand = head[slot] as usize;
        head[slot] = pos as u16;
        if cand < pos && pos - cand <= WINDOW && read_u32(input, cand) == v {
            let len = 4 + common(input, cand + 4, pos + 4, (n - pos).min(MAX_MATCH) - 4);
            e.matched(pos, len, pos - cand);
            pos += len;
        } else {
            e.literal(pos);
            pos += 1;
        }
    }
    while pos < n {
        e.literal(pos);
        pos += 1;
    }
}

/// Levels 2–5: hash chains of 3-byte sequences, greedy or lazy.
fn chains<S: BitSink>(input: &[u8], m: &mut Matcher, e: &mut Emit<S>, effort: &Effort) {
    m.head.fill(0);
    let n = input.len();
    let mut pos = 0;
    // A match found at `pos - 1`, waiting to see whether `pos` has a longer one.
    let (mut pending, mut pending_dist) = (0, 0);
    while pos < n {
        let (mut len, mut dist) = (0, 0);
        if pos + MIN_MATCH <= n {
            m.insert(input, pos);
            if pending < effort.nice {
                let depth = if pending >= effort.good { effort.depth / 4 } else { effort.depth };
                (len, dist) = m.find(input, pos, pending.max(MIN_MATCH - 1), depth, effort.nice);
            }
        }
        if pending >= MIN_MATCH {
            if len > pending {
                e.literal(pos - 1);
                (pending, pending_dist) = (len, dist);
                pos += 1;
            } else {
                e.matched(pos - 1, pending, pending_dist);
                let end = pos - 1 + pending;
                for p in pos + 1..end.min(n.saturating_sub(MIN_MATCH - 1)) {
                    m.insert(input, p);
                }
                pos = end;
                pending = 0;
            }
        } else if len >= MIN_MATCH && effort.lazy {
            (pending, pending_dist) = (len, dist);
            pos += 1;
        } else if len >= MIN_MATCH {
            e.matched(pos, len, dist);
            for p in pos + 1..(pos + len).min(n.saturating_sub(MIN_MATCH - 1)) {
                m.insert(input, p);
            }
            pos += len;
        } else {
            e.literal(pos);
            pos += 1;
        }
    }
    if pending >= MIN_MATCH {
        e.matched(pos - 1, pending, pending_dist);
    }
}

impl Matcher {
    /// Links `pos` (with at least 3 bytes after it) into its hash chain.
    #[inline(always)]
    fn insert(&mut self, input: &[u8], pos: usize) {
        let v = read_u32(input, pos) & 0xFF_FFFF;
        let slot = (v.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize;
        self.prev[pos & (MAX_CHUNK_SIZE - 1)] = self.head[slot];
        self.head[slot] = pos as u16;
    }

    /// The longest match at `pos` longer than `beat`, walking at most `depth` earlier positions
    /// of its chain; `(0, 0)` if none. Chain links only ever point backwards, so a link that does
    /// not is where the chain (or stale data before it) ends.
    fn find(&self, input: &[u8], pos: usize, beat: usize, depth: u32, nice: usize) -> (usize, usize) {
        let max = (input.len() - pos).min(MAX_MATCH);
        let (mut best, mut best_dist) = (beat, 0);
        if best >= max {
            return (0, 0);
        }
        let mut cand = self.prev[pos & (MAX_CHUNK_SIZE - 1)] as usize;
        let mut left = depth;
        while cand < pos && pos - cand <= WINDOW && left > 0 {
            if input.get(cand + best) == input.get(pos + best) && input.get(cand) == input.get(pos) {
                let len = common(input, cand, pos, max);
                if len > best {
                    (best, best_dist) = (len, pos - cand);
                    if len >= nice || len == max {
                        break;
                    }
                }
            }
            left -= 1;
            let next = self.prev[cand & (MAX_CHUNK_SIZE - 1)] as usize;
            if next >= cand {
                break;
            }
            cand = next;
        }
        // A 3-byte match far back costs about as much as its literals.
        if best_dist == 0 || (best == MIN_MATCH && best_dist > 4096) { (0, 0) } else { (best, best_dist) }
    }
}

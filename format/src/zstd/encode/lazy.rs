//! The parse of levels 2 and up: hash chains searched 32 positions at a time, as a GPU warp's
//! lanes search them (one position each), then a lazy choice among the lanes' matches.
//!
//! For each batch of [`LANES`] positions, every position looks for its best match among the
//! repeat offsets the batch started with and the first [`chain_depth`] earlier positions of its
//! hash chain (the chains as they stood before the batch), measuring at most [`MEASURE_CAP`]
//! bytes per candidate; then the positions join their chains in order. The matches are then
//! taken in position order as LZ4's parse takes them, except that a match is passed over for
//! the next position's when that one gains more (longer, or cheaper to code). The match taken
//! is then extended forward and backward in full.

use super::block::MAX_BLOCK_SIZE;
use super::sequences::{RepeatOffsets, sequence};
use crate::Status;
use crate::lz4::SequenceSink;

/// Positions searched together: one per lane of a warp.
pub const LANES: usize = 32;
/// Shortest match taken.
pub const MIN_MATCH: usize = 4;
/// Bits of the chain heads' hash.
pub const CHAIN_HASH_BITS: u32 = 12;
/// Chain entries examined per position at `level` (2 or more). Level 2's 3 is the fewest that
/// reach nvCOMP's ratio on text and float32 (4.05 and 2.59, against 3.88 and 2.56); level 3's 8
/// gain 3-5% more ratio at more than twice the search.
pub const fn chain_depth(level: u8) -> u32 {
    if level <= 2 { 3 } else { 8 }
}
/// Bytes compared per candidate while choosing (the chosen match is then measured in full).
pub const MEASURE_CAP: usize = 32;
/// How much more (in quarter bytes) the next position's match must gain to be preferred.
const LAZY_MARGIN: i32 = 4;
/// The least a match must gain (in quarter bytes) to be taken at all: a 4-byte match more than
/// about 256 bytes back, or a 5-byte one more than 4 KiB, costs about what its literals do, and
/// each sequence costs the decoder more than a literal. On the bench sets' first 16 MiB at
/// level 2 (64 KiB blocks) it cut the sequences by 15% on both texts and by 25% on float32, the
/// ratio 0.6% lower on Python's sources, 1.5% on Linux's, and higher on float32 (2.466 → 2.497);
/// 12 cut 27-35% of the sequences and 1.4-4% of the ratio.
pub const MIN_GAIN: i32 = 8;

/// The chains: for each hash the latest position plus 1 (0: none), and for each position the
/// previous one with its hash, plus 1. Any bytes are a valid starting state (the heads are
/// cleared before use and a link is read only after it is written).
#[repr(C)]
pub struct ChainTables {
    /// Latest position of each hash, plus 1.
    pub head: [u16; 1 << CHAIN_HASH_BITS],
    /// Previous position of the same hash, plus 1, by position.
    pub prev: [u16; MAX_BLOCK_SIZE],
}

/// A match found for one position: its length (capped at [`MEASURE_CAP`]) and offset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Candidate {
    /// Bytes matched (0: none).
    pub len: u32,
    /// Distance back.
    pub offset: u32,
}

impl Candidate {
    /// What taking the match saves, in quarter bytes: its length less its offset's cost.
    #[inline(always)]
    pub fn gain(&self, repeats: &RepeatOffsets) -> i32 {
        let offset_bits = if repeats.contains(&self.offset) { 1 } else { 32 - (self.offset + 3).leading_zeros() };
        4 * self.len as i32 - offset_bits as i32
    }

    /// The best match found, gaining `gain`, if it gains at least [`MIN_GAIN`]; else none.
    #[inline(always)]
    pub fn if_worth(self, gain: i32) -> Self {
        if gain >= MIN_GAIN { self } else { Self::default() }
    }
}

/// Chain hash of the 4 bytes at `p` (`p + 4 <= input.len()`).
#[inline(always)]
pub fn hash(input: &[u8], p: usize) -> usize {
    hash_word(u32::from_le_bytes([input[p], input[p + 1], input[p + 2], input[p + 3]]))
}

/// Chain hash of 4 bytes read as a little-endian word.
#[inline(always)]
pub fn hash_word(v: u32) -> usize {
    (v.wrapping_mul(2_654_435_761) >> (32 - CHAIN_HASH_BITS)) as usize
}

/// Bytes `input[c..]` and `input[p..]` (c < p) have in common, up to `cap`.
#[inline(always)]
pub fn measure(input: &[u8], c: usize, p: usize, cap: usize) -> usize {
    let limit = cap.min(input.len() - p);
    let mut len = 0;
    while len + 8 <= limit {
        let word = |at: usize| u64::from_le_bytes(input[at..at + 8].try_into().unwrap_or([0; 8]));
        let diff = word(c + len) ^ word(p + len);
        if diff != 0 {
            return len + (diff.trailing_zeros() / 8) as usize;
        }
        len += 8;
    }
    while len < limit && input[c + len] == input[p + len] {
        len += 1;
    }
    len
}

/// The best match for position `p` (`p + MIN_MATCH <= input.len()`): among the repeat offsets
/// `repeats` and the chain from `first` (a position plus 1, or 0), whose links `link` reads,
/// the one with the largest [`Candidate::gain`], the first found on ties, if it gains at least
/// [`MIN_GAIN`]. A chain candidate
/// lies further back than the ones before it, so it can win only by being longer: one that
/// differs at the best length so far is passed over unmeasured, and a best length of
/// [`MEASURE_CAP`] ends the search.
#[inline(always)]
pub fn best_match(
    input: &[u8],
    p: usize,
    first: u16,
    link: impl Fn(usize) -> u16,
    repeats: &RepeatOffsets,
    depth: u32,
) -> Candidate {
    let mut best = Candidate::default();
    let mut best_gain = 0;
    for &r in repeats {
        if r as usize <= p {
            consider(input, p, p - r as usize, repeats, &mut best, &mut best_gain);
        }
    }
    let mut entry = first;
    for _ in 0..depth {
        let c = entry as usize;
        if c == 0 || best.len as usize == MEASURE_CAP {
            break;
        }
        let c = c - 1;
        let at = best.len as usize;
        if best.len == 0 || (p + at < input.len() && input[c + at] == input[p + at]) {
            consider(input, p, c, repeats, &mut best, &mut best_gain);
        }
        entry = link(c);
    }
    best.if_worth(best_gain)
}

/// Measures the match of `p` at `c` and makes it `best` if it gains more.
#[inline(always)]
fn consider(input: &[u8], p: usize, c: usize, repeats: &RepeatOffsets, best: &mut Candidate, best_gain: &mut i32) {
    let word = |at: usize| u32::from_le_bytes([input[at], input[at + 1], input[at + 2], input[at + 3]]);
    if word(c) != word(p) {
        return;
    }
    let len = MIN_MATCH + measure(input, c + MIN_MATCH, p + MIN_MATCH, MEASURE_CAP - MIN_MATCH);
    let found = Candidate { len: len as u32, offset: (p - c) as u32 };
    let gain = found.gain(repeats);
    if best.len == 0 || gain > *best_gain {
        (*best, *best_gain) = (found, gain);
    }
}

/// Which lane's match to take first from lane `from` on, among `lanes` lanes whose gains
/// `gain_of` gives (`None`: no match): the first lane with a match, or a later one while the
/// next lane gains more by `LAZY_MARGIN`.
#[inline(always)]
pub fn choose_lane(from: u32, lanes: u32, mut gain_of: impl FnMut(u32) -> Option<i32>) -> Option<u32> {
    let mut lane = from;
    let mut gain = loop {
        if lane >= lanes {
            return None;
        }
        if let Some(gain) = gain_of(lane) {
            break gain;
        }
        lane += 1;
    };
    while lane + 1 < lanes {
        match gain_of(lane + 1) {
            Some(next) if prefers_next(gain, next) => (lane, gain) = (lane + 1, next),
            _ => break,
        }
    }
    Some(lane)
}

/// Whether the lazy choice passes over a match gaining `gain` for the next position's, gaining
/// `next`.
#[inline(always)]
pub fn prefers_next(gain: i32, next: i32) -> bool {
    next > gain + LAZY_MARGIN
}

/// [`choose_lane`] from masks a warp's lanes make at once: `matched` has a bit for each lane
/// with a match, `passed` one for each lane whose next lane has a match it [`prefers_next`]
/// (the lanes past the batch have neither).
#[inline(always)]
pub fn choose_lane_by_masks(from: u32, matched: u32, passed: u32) -> Option<u32> {
    let eligible = if from < 32 { matched & (u32::MAX << from) } else { 0 };
    let lane = eligible.trailing_zeros();
    (eligible != 0).then(|| lane + (!(passed >> lane)).trailing_zeros())
}

/// Finds the sequences of `input` (at most [`MAX_BLOCK_SIZE`] bytes) at `level` (2 or more)
/// and hands them to `sink`, offsets as distances; `repeats` are the repeat offsets the block
/// starts with.
pub fn parse<S: SequenceSink>(
    input: &[u8],
    level: u8,
    tables: &mut ChainTables,
    mut repeats: RepeatOffsets,
    sink: &mut S,
) -> Result<(), Status> {
    let (n, depth) = (input.len(), chain_depth(level));
    if n > MAX_BLOCK_SIZE {
        return Err(Status::ChunkTooLarge);
    }
    tables.head.fill(0);
    let mut anchor = 0;
    let mut pos = 0;
    while pos + MIN_MATCH <= n {
        let lanes = (n + 1 - MIN_MATCH - pos).min(LANES);
        // Each lane's match, found from the tables as they stood before the batch: worked out
        // only for the lanes the choice looks at (a warp works them all out at once).
        let mut found = [None::<Candidate>; LANES];
        let batch_repeats = repeats;
        let mut cursor = pos;
        loop {
            let mut gain_of = |lane: u32| {
                let p = pos + lane as usize;
                let c = *found[lane as usize].get_or_insert_with(|| {
                    best_match(input, p, tables.head[hash(input, p)], |c| tables.prev[c], &batch_repeats, depth)
                });
                (c.len != 0).then(|| c.gain(&batch_repeats))
            };
            let Some(lane) = choose_lane((cursor - pos) as u32, lanes as u32, &mut gain_of) else { break };
            let p = pos + lane as usize;
            let offset = found[lane as usize].unwrap_or_default().offset as usize;
            let len = measure(input, p - offset, p, n);
            let back = common_backward(input, p, p - offset, anchor);
            sink.sequence(&input[anchor..p - back], offset, len + back)?;
            sequence(&mut repeats, p - back - anchor, offset as u32, len + back);
            cursor = p + len;
            anchor = cursor;
            if cursor - pos >= lanes {
                break;
            }
        }
        // Then the batch's positions join their chains, in order.
        for p in pos..pos + lanes {
            let slot = hash(input, p);
            tables.prev[p] = tables.head[slot];
            tables.head[slot] = p as u16 + 1;
        }
        pos = cursor.max(pos + LANES);
    }
    sink.last_literals(&input[anchor..])
}

/// Length of the common run ending before `p` and `c` (c < p), not reaching before `anchor`.
#[inline(always)]
fn common_backward(input: &[u8], p: usize, c: usize, anchor: usize) -> usize {
    let limit = (p - anchor).min(c);
    let mut len = 0;
    while len < limit && input[p - 1 - len] == input[c - 1 - len] {
        len += 1;
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choosing_by_masks_chooses_as_choose_lane() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let lanes = 1 + (next() % 32) as u32;
            let gains: [Option<i32>; 32] = core::array::from_fn(|l| {
                let r = next();
                (l < lanes as usize && r % 3 != 0).then_some((r >> 8) as i32 % 40 - 8)
            });
            let matched = (0..32).filter(|&l| gains[l].is_some()).fold(0u32, |m, l| m | 1 << l);
            let passed = (0..31).fold(0u32, |m, l| match (gains[l], gains[l + 1]) {
                (Some(gain), Some(next)) if prefers_next(gain, next) => m | 1 << l,
                _ => m,
            });
            for from in 0..=33 {
                let scalar = if from < lanes { choose_lane(from, lanes, |l| gains[l as usize]) } else { None };
                assert_eq!(choose_lane_by_masks(from, matched, passed), scalar, "from {from} gains {gains:?}");
            }
        }
    }
}

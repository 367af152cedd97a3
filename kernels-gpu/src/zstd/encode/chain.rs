//! Match finding for levels 2 and up: the format crate's chain parse with a lane per position,
//! the chains kept as [`Row`]s in the warp's scratch slot and each batch's matches recorded by
//! the lanes together ([`record_batch`]).

use super::{Recorder, Work};
use crate::entropy::unrolled;
use crate::lz4::{SequenceEncoder, common_backward, common_forward};
use crate::lz77::{aligned, copy, funnel, word_at};
use crate::raw::bytes;
use crate::warp::{WARP_SIZE, Warp};
use core::ptr::addr_of_mut;
use ferrocomp_format::Status;
use ferrocomp_format::zstd::encode::lazy::{
    self, CHAIN_HASH_BITS, Candidate, ChainTables, LANES, MEASURE_CAP, MIN_MATCH, choose_lane_by_masks, prefers_next,
};
use ferrocomp_format::zstd::encode::sequences::{RepeatOffsets, Sequence, sequence};
use ferrocomp_format::zstd::encode::{MAX_BLOCK_SIZE, MAX_LEVEL, MAX_SEQUENCES};

/// The chain parse of levels 2 and up (`ferrocomp_format::zstd::encode::lazy::parse`) with a
/// lane per position: each lane finds its position's best match among the candidates of its
/// hash's [`Row`], the lanes then join the rows in position order (lanes of one hash through
/// `match_any`), and the matches are chosen as the scalar parse chooses them.
///
/// # Safety
/// As [`compress_chunk`](super::compress_chunk), for the `n` bytes at `data`.
pub(super) unsafe fn chain_parse<W: Warp, const DEPTH: usize>(
    warp: &W,
    work: &Work,
    data: *const u8,
    n: usize,
    recorder: &mut Recorder<W>,
) -> Result<(), Status> {
    let lane = warp.lane();
    let rows = unsafe { addr_of_mut!((*work.scratch).chains) } as *mut u8;
    let input = unsafe { bytes(data, n) };
    warp.for_each_strided(1 << CHAIN_HASH_BITS, |slot| unsafe { Row::<DEPTH>::EMPTY.store(rows, slot) });
    warp.sync();
    // Positions as 32-bit numbers (a block is at most 64 KiB): fewer registers in the loop.
    let (mut anchor, mut pos, end) = (0u32, 0u32, n as u32);
    // The rows of the batch starting at `ahead`, read while the batch before was recorded.
    let (mut ahead, mut ahead_slot, mut ahead_row) = (u32::MAX, 0, Row::<DEPTH>::EMPTY);
    while pos + MIN_MATCH as u32 <= end {
        let (lanes, repeats) = ((end + 1 - MIN_MATCH as u32 - pos).min(LANES as u32), recorder.repeats);
        let (p, active) = ((pos + lane) as usize, lane < lanes);
        // This lane's row (as the batch found it) and its own entry, to join it.
        let (slot, row, entry, found) = if active && p + WINDOW <= n {
            let here = unsafe { Window::at(data.add(p)) };
            let (slot, row) = if pos == ahead {
                (ahead_slot, ahead_row)
            } else {
                let slot = lazy::hash_word(here.word(0));
                (slot, unsafe { Row::load(rows, slot) })
            };
            let found = unsafe { find_match(data, p, &here, &row, repeats) };
            (slot as u32, row, Row::<DEPTH>::entry(p, here.word(0)), found)
        } else if active {
            let word = u32::from_le_bytes([input[p], input[p + 1], input[p + 2], input[p + 3]]);
            let slot = lazy::hash_word(word);
            let row = unsafe { Row::<DEPTH>::load(rows, slot) };
            let found = lazy::best_match(input, p, row.first(), |c| row.after(c), &repeats, DEPTH as u32);
            (slot as u32, row, Row::<DEPTH>::entry(p, word), found)
        } else {
            (u32::MAX - lane, Row::EMPTY, 0, Candidate::default()) // a slot no other lane holds
        };
        unsafe { join_rows(warp, rows, slot, row, entry) };
        // The next batch's rows, guessing that it follows this one (it starts later where a match
        // ends past this batch, and reads its rows itself): their loads wait on no one while this
        // batch is recorded, which does not change the rows. Every lane loads a row (slot 0's past
        // the window's end), so that the loads write the registers they are read from, with no
        // move waiting on them.
        ahead = pos + LANES as u32;
        let next = (ahead + lane) as usize;
        ahead_slot = if next + WINDOW <= n { lazy::hash_word(unsafe { word_at(data.add(next)) }) } else { 0 };
        ahead_row = unsafe { Row::load(rows, ahead_slot) };
        let cursor = unsafe { record_batch(warp, recorder, data, end, pos, lanes, anchor, found)? };
        if cursor != pos {
            anchor = cursor;
        }
        pos = cursor.max(pos + LANES as u32);
    }
    unsafe { recorder.last_literals(data.add(anchor as usize), n - anchor as usize) }
}

/// Takes a batch's matches (lane `i`'s `found` for position `pos + i`, the first `lanes` lanes
/// searched) as the scalar parse's lazy choice takes them, and records them with their literals
/// (from `anchor` on). The lanes work out which lanes are chosen (each lane the one chosen after
/// its own match, then a walk from the first); each chosen lane finds its match's backward
/// extension; the warp copies the first chosen lane's literals (which may be many), and the
/// others', which lie among the batch's positions, a byte a lane; then the repeat offsets go
/// through the sequences in order. Returns where the last match ends, or
/// `pos` without one.
///
/// # Safety
/// As [`compress_chunk`](super::compress_chunk), for the `n` bytes at `data`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn record_batch<W: Warp>(
    warp: &W,
    recorder: &mut Recorder<W>,
    data: *const u8,
    n: u32,
    pos: u32,
    lanes: u32,
    anchor: u32,
    found: Candidate,
) -> Result<u32, Status> {
    let lane = warp.lane();
    let gain = found.gain(&recorder.repeats);
    let matched = warp.ballot(found.len != 0);
    let next_gain = warp.shuffle(gain as u32, (lane + 1).min(WARP_SIZE - 1)) as i32;
    let passed = warp.ballot(matched >> 1 >> lane & 1 == 1 && prefers_next(gain, next_gain));
    let after = lane + found.len; // where this lane's match ends, in lanes from `pos`
    let next = match found.len != 0 && after < lanes {
        true => choose_lane_by_masks(after, matched, passed).unwrap_or(WARP_SIZE),
        false => WARP_SIZE,
    };
    let mut chosen = 0u32;
    let mut at = choose_lane_by_masks(0, matched, passed).unwrap_or(WARP_SIZE);
    while at < WARP_SIZE {
        chosen |= 1 << at;
        at = warp.shuffle(next, at);
    }
    if chosen == 0 {
        return Ok(pos);
    }
    let (first, last) = (chosen.trailing_zeros(), 31 - chosen.leading_zeros());
    let (p, is_chosen, below) = (pos + lane, chosen >> lane & 1 == 1, chosen & ((1 << lane) - 1));
    let c = p - found.offset;
    // The search measured each match up to MEASURE_CAP bytes: only the last can be longer.
    let (last_p, last_c) = (pos + last, warp.shuffle(c, last));
    let extra = match warp.shuffle(found.len, last) as usize {
        MEASURE_CAP => {
            let cap = MEASURE_CAP as u32;
            common_forward(warp, data, last_p + cap, last_c + cap, n)
        }
        _ => 0,
    };
    // Each chosen lane's literals start where the match before it ends (the first's at `anchor`).
    let prev_end = pos + warp.shuffle(after, if below == 0 { lane } else { 31 - below.leading_zeros() });
    let start = if below == 0 { anchor } else { prev_end };
    let (first_p, first_c) = (pos + first, warp.shuffle(c, first));
    let first_back = common_backward(warp, data, first_p, first_c, anchor);
    let back = match is_chosen {
        true if lane == first => first_back,
        true => {
            let (limit, mut back) = ((p - start).min(c), 0);
            while back < limit && unsafe { *data.add((p - 1 - back) as usize) == *data.add((c - 1 - back) as usize) } {
                back += 1;
            }
            back
        }
        false => 0,
    };
    let literals = if is_chosen { p - back - start } else { 0 };
    let match_len = found.len + back + if lane == last { extra } else { 0 };
    // The literals, back to back: the first chosen lane's (which may be many) by the warp; the
    // others' lie among the batch's positions, each a lane's byte, placed by a mask of them all.
    let first_literals = warp.shuffle(literals, first);
    let span = |from: u32, to: u32| ((1u32 << (to - pos)) - 1) & !((1u32 << (from - pos)) - 1);
    let own_span = if is_chosen && lane != first { span(start, p - back) } else { 0 };
    let later_literals = warp.reduce_xor(own_span); // the spans are disjoint: their XOR is their union
    let total = (first_literals + later_literals.count_ones()) as usize;
    let count = chosen.count_ones() as usize;
    if recorder.literal_count + total > MAX_BLOCK_SIZE || recorder.sequence_count + count > MAX_SEQUENCES {
        return Err(Status::ChunkTooLarge);
    }
    let out = unsafe { (addr_of_mut!((*recorder.block).literals) as *mut u8).add(recorder.literal_count) };
    unsafe { copy(warp, data.add(anchor as usize), out, first_literals) };
    if later_literals >> lane & 1 == 1 {
        let at = first_literals + (later_literals & ((1 << lane) - 1)).count_ones();
        unsafe { *out.add(at as usize) = *data.add(p as usize) };
    }
    // The repeat offsets move on sequence by sequence.
    let mut mine = Sequence { offset_value: 0, literal_len: 0, match_len_minus3: 0 };
    let mut left = chosen;
    while left != 0 {
        let l = left.trailing_zeros();
        left &= left - 1;
        let (literal_len, offset) = (warp.shuffle(literals, l) as usize, warp.shuffle(found.offset, l));
        let seq = sequence(&mut recorder.repeats, literal_len, offset, warp.shuffle(match_len, l) as usize);
        if lane == l {
            mine = seq;
        }
    }
    if is_chosen {
        let sequences = unsafe { addr_of_mut!((*recorder.block).sequences) } as *mut Sequence;
        unsafe { *sequences.add(recorder.sequence_count + below.count_ones() as usize) = mine };
    }
    recorder.literal_count += total;
    recorder.sequence_count += count;
    warp.sync(); // the lanes' literals and sequences are visible to every lane
    Ok(pos + last + warp.shuffle(found.len, last) + extra)
}

/// Bytes a position needs after it for [`find_match`]: the compared bytes and the aligned words'
/// slack.
const WINDOW: usize = MEASURE_CAP + 4;

/// The [`MEASURE_CAP`] bytes at some position, as the aligned words that hold them: loads that
/// never wait on one another, at any alignment.
struct Window {
    words: [u32; MEASURE_CAP / 4 + 1],
    shift: u32,
}

impl Window {
    /// The window at `at`.
    ///
    /// # Safety
    /// The [`WINDOW`] bytes at `at` must be readable (the aligned words begin at most 3 bytes
    /// before `at`, in the same word as it).
    #[inline(always)]
    unsafe fn at(at: *const u8) -> Self {
        let (base, shift) = aligned(at);
        Self { words: core::array::from_fn(|k| unsafe { *base.add(k) }), shift }
    }

    /// Bytes `4 * k..4 * k + 4` of the window, little-endian.
    #[inline(always)]
    fn word(&self, k: usize) -> u32 {
        funnel(self.words[k], self.words[k + 1], self.shift)
    }

    /// Bytes this window has in common with the bytes at `at`, whose first `equal` words agree
    /// with it: the rest loaded a word at a time while they agree.
    ///
    /// # Safety
    /// As [`Window::at`].
    #[inline(always)]
    unsafe fn common_at(&self, at: *const u8, equal: usize) -> u32 {
        let (base, shift) = aligned(at);
        let mut low = unsafe { *base.add(equal) };
        for k in equal..MEASURE_CAP / 4 {
            let high = unsafe { *base.add(k + 1) };
            let diff = funnel(low, high, shift) ^ self.word(k);
            if diff != 0 {
                return 4 * k as u32 + diff.trailing_zeros() / 8;
            }
            low = high;
        }
        MEASURE_CAP as u32
    }
}

/// `lazy::best_match` for a position `p` with [`WINDOW`] bytes after it whose window is `here`,
/// among the candidates of its hash's `row`: the same match (or none), found by aligned words. A
/// candidate is loaded only when its first word may equal `here`'s (the repeat candidates', the
/// same distance back in every lane, in coalesced loads; a row entry's, whose tag agrees, in a
/// transaction per lane), and then only while its words agree. It needs no check that a row
/// candidate differs at the best length so far: such a one never gains more than the best.
///
/// # Safety
/// `data` must be readable for `p +` [`WINDOW`] bytes, and `row` hold positions before `p`.
#[inline(always)]
unsafe fn find_match<const DEPTH: usize>(
    data: *const u8,
    p: usize,
    here: &Window,
    row: &Row<DEPTH>,
    repeats: RepeatOffsets,
) -> Candidate {
    // The first words of the repeat candidates and of the row's entries whose tags agree, loaded
    // at once; the rest of each only while they agree.
    let repeat_firsts = repeats.map(|r| unsafe { word_at(data.add(p.saturating_sub(r as usize))) });
    let tag = Row::<DEPTH>::tag(here.word(0));
    let tagged = |i: usize| row.entries[i] != 0 && row.entries[i] >> 16 == tag;
    let candidate = |i: usize| (row.entries[i] & 0xFFFF) as usize - 1;
    let mut row_firsts = [0; DEPTH];
    unrolled::<DEPTH>(|i| {
        if tagged(i) {
            row_firsts[i] = unsafe { word_at(data.add(candidate(i))) };
        }
    });
    let mut best = (Candidate::default(), 0);
    unrolled::<3>(|i| {
        if repeats[i] as usize <= p && repeat_firsts[i] == here.word(0) {
            let len = unsafe { here.common_at(data.add(p - repeats[i] as usize), 1) };
            consider(&mut best, Candidate { len, offset: repeats[i] }, &repeats);
        }
    });
    let mut searching = true;
    unrolled::<DEPTH>(|i| {
        searching &= row.entries[i] != 0 && best.0.len as usize != MEASURE_CAP;
        if searching && tagged(i) && row_firsts[i] == here.word(0) {
            let c = candidate(i);
            let len = unsafe { here.common_at(data.add(c), 1) };
            consider(&mut best, Candidate { len, offset: (p - c) as u32 }, &repeats);
        }
    });
    best.0.if_worth(best.1)
}

/// The chains of `lazy::parse` as the search reads them: for each hash, its latest `DEPTH` (at
/// most 8) positions, latest first, each entry its position plus 1 (0: none) and a tag of its
/// first word, so that the candidates come in one load and only those that may match are read.
/// The rows lie where the scalar parse keeps its chains, in the warp's scratch slot: rows of up
/// to 3 entries packed in 8 bytes (the positions' 16 bits each, and 5-bit tags), so that a
/// warp's rows take 32 KiB of the L2 rather than 64; deeper rows as their entries.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Row<const DEPTH: usize> {
    entries: [u32; DEPTH],
}

impl<const DEPTH: usize> Row<DEPTH> {
    const EMPTY: Self = Self { entries: [0; DEPTH] };
    /// Whether the row is stored packed in a word pair.
    const PACKED: bool = DEPTH <= 3;
    /// Bits of an entry's tag.
    const TAG_BITS: u32 = if Self::PACKED { 5 } else { 16 };
    /// Bytes a row takes in the scratch slot.
    const STORED: usize = if Self::PACKED { 8 } else { size_of::<Self>() };

    /// The entry of position `p`, whose first word is `word`.
    fn entry(p: usize, word: u32) -> u32 {
        (p as u32 + 1) | Self::tag(word) << 16
    }

    /// Some bits of `word`: candidates whose tags differ from a position's cannot match it.
    fn tag(word: u32) -> u32 {
        (word ^ word >> 16) & ((1 << Self::TAG_BITS) - 1)
    }

    /// The latest position plus 1 (0: none), the chains' head.
    fn first(&self) -> u16 {
        self.entries[0] as u16
    }

    /// The position plus 1 after position `c` in this row (0: none), the chains' link.
    fn after(&self, c: usize) -> u16 {
        let at = self.entries.iter().position(|&e| (e & 0xFFFF) as usize == c + 1);
        at.and_then(|k| self.entries.get(k + 1)).map_or(0, |&e| e as u16)
    }

    /// The row of `slot` among `rows`, in one load.
    ///
    /// # Safety
    /// `rows` must be readable for `slot + 1` rows.
    #[inline(always)]
    unsafe fn load(rows: *const u8, slot: usize) -> Self {
        if !Self::PACKED {
            return unsafe { *(rows as *const Self).add(slot) };
        }
        let packed = unsafe { *(rows as *const u64).add(slot) };
        let mut row = Self::EMPTY;
        unrolled::<DEPTH>(|k| {
            let tag = (packed >> (48 + Self::TAG_BITS as usize * k)) as u32 & ((1 << Self::TAG_BITS) - 1);
            row.entries[k] = (packed >> (16 * k)) as u32 & 0xFFFF | tag << 16;
        });
        row
    }

    /// Stores the row as `slot`'s among `rows`, in one store.
    ///
    /// # Safety
    /// `rows` must be writable for `slot + 1` rows.
    #[inline(always)]
    unsafe fn store(self, rows: *mut u8, slot: usize) {
        if !Self::PACKED {
            return unsafe { *(rows as *mut Self).add(slot) = self };
        }
        let mut packed = 0u64;
        unrolled::<DEPTH>(|k| {
            let (position, tag) = (self.entries[k] as u64 & 0xFFFF, self.entries[k] as u64 >> 16);
            packed |= position << (16 * k) | tag << (48 + Self::TAG_BITS as usize * k);
        });
        unsafe { *(rows as *mut u64).add(slot) = packed };
    }
}

/// The deepest level's rows fit where the scalar parse keeps its chains.
const _: () = assert!(Row::<DEEPEST>::STORED << CHAIN_HASH_BITS <= size_of::<ChainTables>());
const DEEPEST: usize = lazy::chain_depth(MAX_LEVEL) as usize;

/// Joins each active lane's position to its slot's row, in position order: the last lane of each
/// slot writes the row, its own entry first, then those of the lanes before it with the same
/// slot, then the row's older entries. Every lane's `row` is the row it read for the slot.
///
/// # Safety
/// `rows` must be writable for the rows of every active lane's slot.
#[inline(always)]
unsafe fn join_rows<W: Warp, const DEPTH: usize>(warp: &W, rows: *mut u8, slot: u32, row: Row<DEPTH>, entry: u32) {
    let lane = warp.lane();
    let peers = warp.match_any(slot);
    let mut new = Row::<DEPTH>::EMPTY;
    new.entries[0] = entry;
    // Entry k comes from the peer k lanes below this one, or from the old row once they run out.
    let mut below = peers & ((1 << lane) - 1);
    let mut taken = 1;
    unrolled::<DEPTH>(|k| {
        if k > 0 {
            let source = if below == 0 { lane } else { 31 - below.leading_zeros() };
            let theirs = warp.shuffle(entry, source);
            if below != 0 {
                new.entries[k] = theirs;
                below &= !(1 << source);
                taken += 1;
            }
        }
    });
    unrolled::<DEPTH>(|k| {
        unrolled::<DEPTH>(|j| {
            if k == taken + j {
                new.entries[k] = row.entries[j];
            }
        })
    });
    if slot < 1 << CHAIN_HASH_BITS && 31 - peers.leading_zeros() == lane {
        unsafe { new.store(rows, slot as usize) };
    }
    warp.sync(); // the rows are written before any lane reads them
}

/// Makes `found` the best match (with its gain) if it is one and gains more, as
/// `lazy::best_match` does.
#[inline(always)]
fn consider(best: &mut (Candidate, i32), found: Candidate, repeats: &RepeatOffsets) {
    if found.len as usize >= MIN_MATCH {
        let gain = found.gain(repeats);
        if best.0.len == 0 || gain > best.1 {
            *best = (found, gain);
        }
    }
}

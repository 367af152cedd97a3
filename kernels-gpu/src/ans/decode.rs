//! Decompressing a chunk: the table read into shared memory, then the sub-blocks decoded four at
//! a time, 32 symbols of each a step.

use super::{BITMAP_LEN, INTERLEAVED, Tables, copy, each, group_of, set_symbols};
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::ans::{
    DataType, HEADER_LEN, LANES, LOWER, PROB_BITS, SUB_BLOCK, TOTAL, read_header, sub_blocks, symbols,
};

/// Decodes symbols `step .. step + 32` (those there are) of each sub-block of `group`, lane `l`
/// symbol `step + l`, into `out`, the chunk's symbols `width` bytes apart: stage by stage across
/// the members, as [`code_group`](super::encode::code_group) codes. `WHOLE`: the step is whole in every member with symbols,
/// so no lane tests its symbol, and members without symbols compute unheeded (their states and
/// words are never checked); testing instead cost 4% of decoding's speed.
#[inline(always)]
unsafe fn decode_step<W: Warp, const WHOLE: bool>(
    warp: &W,
    tables: &Tables,
    chunk: &[u8],
    out: *mut u8,
    width: u32,
    group: &mut [SubBlockDecoder; INTERLEAVED],
    step: u32,
) {
    let lane = warp.lane();
    let [a, b, c, d] = group;
    let decoders = [a, b, c, d];
    let active = each([0, 1, 2, 3], |k| WHOLE || step + lane < decoders[k].len);
    let slots = each([0, 1, 2, 3], |k| decoders[k].state & (TOTAL - 1));
    let symbols = each(slots, |slot| unsafe { tables.slot(slot) });
    let entries = each(symbols, |symbol| unsafe { tables.symbol(symbol) });
    let mut xs = each([0, 1, 2, 3], |k| entries[k].freq * (decoders[k].state >> PROB_BITS) + slots[k] - entries[k].cum);
    let refilling = each([0, 1, 2, 3], |k| warp.ballot(active[k] && xs[k] < LOWER));
    let below = (1u32 << lane) - 1;
    let within = each([0, 1, 2, 3], |k| decoders[k].taken + (refilling[k] & below).count_ones());
    let lows = each([0, 1, 2, 3], |k| warp.shuffle(decoders[k].low, within[k] & 31));
    let highs = each([0, 1, 2, 3], |k| warp.shuffle(decoders[k].high, within[k] & 31));
    for k in 0..INTERLEAVED {
        if refilling[k] >> lane & 1 == 1 {
            xs[k] = xs[k] << 16 | if within[k] < 32 { lows[k] } else { highs[k] };
        }
    }
    let finish = |k: usize, decoder: &mut SubBlockDecoder| {
        if active[k] {
            decoder.state = xs[k];
            if decoder.len > 0 {
                unsafe { *out.add(((decoder.first + step + lane) * width) as usize) = symbols[k] as u8 };
            }
        }
        decoder.take(chunk, lane, refilling[k].count_ones());
    };
    let [a, b, c, d] = decoders;
    finish(0, a);
    finish(1, b);
    finish(2, c);
    finish(3, d);
}

/// Decompresses the chunk of `len` bytes at `input` into `out` (room for `capacity` bytes), as
/// `ferrocomp_format::ans::decompress`: the same size or status, in every lane.
///
/// # Safety
/// `input` must be readable for `len` bytes, `out` writable for `capacity` bytes and `shared` for
/// [`SHARED_BYTES_PER_WARP`](super::SHARED_BYTES_PER_WARP) (this warp's alone, aligned to 4), neither written by anyone else
/// meanwhile.
pub unsafe fn decompress_chunk<W: Warp>(
    warp: &W,
    input: *const u8,
    len: usize,
    out: *mut u8,
    capacity: usize,
    shared: *mut u32,
) -> Result<usize, Status> {
    let bytes = unsafe { crate::raw::bytes(input, len) };
    let (data_type, stored, n) = read_header(bytes)?;
    if n > capacity {
        return Err(Status::OutputTooSmall);
    }
    if stored {
        if len != HEADER_LEN + n {
            return Err(if len < HEADER_LEN + n { Status::Truncated } else { Status::Malformed });
        }
        copy(warp, unsafe { input.add(HEADER_LEN) }, out, n);
        return Ok(n);
    }
    let tables = Tables::new(shared);
    let table_len = unsafe { read_table(warp, &tables, &bytes[HEADER_LEN..])? };
    let count = symbols(n, data_type);
    let blocks = sub_blocks(count);
    let sizes_at = HEADER_LEN + table_len;
    let sizes = bytes.get(sizes_at..sizes_at + 2 * blocks).ok_or(Status::Truncated)?;
    let mut at = sizes_at + 2 * blocks;
    let width = data_type.width();
    let symbols_out = unsafe { out.add(width - 1) };
    for first in (0..blocks).step_by(INTERLEAVED) {
        // The group's sub-blocks, each checked as the scalar decoder reaches it: the first that
        // fails, and those after it, decode nothing.
        let mut failure = None;
        let mut decoders = group_of(|k| {
            let b = first + k;
            if failure.is_some() || b >= blocks {
                return SubBlockDecoder::idle();
            }
            let words = u16::from_le_bytes([sizes[2 * b], sizes[2 * b + 1]]) as usize;
            let end = at + 4 * LANES + 2 * words;
            let decoder = if end > len {
                Err(Status::Truncated)
            } else {
                SubBlockDecoder::new(warp, bytes, at, words, b * SUB_BLOCK, SUB_BLOCK.min(count - b * SUB_BLOCK))
            };
            at = end;
            decoder.unwrap_or_else(|status| {
                failure = Some(status);
                SubBlockDecoder::idle()
            })
        });
        // The steps whole in every sub-block with symbols, then the rest of the first, the longest.
        let [a, b, c, d] = &decoders;
        let live = |decoder: &SubBlockDecoder| if decoder.len > 0 { decoder.len } else { u32::MAX };
        let whole = match live(a).min(live(b)).min(live(c)).min(live(d)) {
            u32::MAX => 0,
            len => len / WARP_SIZE,
        };
        let (width, group) = (width as u32, &mut decoders);
        for step in (0..whole).map(|k| k * WARP_SIZE) {
            unsafe { decode_step::<W, true>(warp, &tables, bytes, symbols_out, width, group, step) };
        }
        for step in (whole..group[0].len.div_ceil(WARP_SIZE)).map(|k| k * WARP_SIZE) {
            unsafe { decode_step::<W, false>(warp, &tables, bytes, symbols_out, width, group, step) };
        }
        // Those before a failure first, as the scalar decoder meets them.
        let [a, b, c, d] = &decoders;
        a.finish(warp)?;
        b.finish(warp)?;
        c.finish(warp)?;
        d.finish(warp)?;
        if let Some(status) = failure {
            return Err(status);
        }
    }
    let raw = n - count;
    if len != at + raw {
        return Err(if len < at + raw { Status::Truncated } else { Status::Malformed });
    }
    if data_type == DataType::Float16 {
        warp.for_each_strided(count, |i| unsafe { *out.add(2 * i) = bytes[at + i] });
    }
    let tail = n - count * width;
    copy(warp, unsafe { input.add(len - tail) }, unsafe { out.add(n - tail) }, tail);
    Ok(n)
}

/// Reads the table at the start of `bytes` into the warp's tables, checked as
/// `ferrocomp_format::ans::Table::read`; returns its length. Lane `l` takes byte `l` of the
/// bitmap, symbols `8l .. 8l + 8`.
#[inline(always)]
unsafe fn read_table<W: Warp>(warp: &W, tables: &Tables, bytes: &[u8]) -> Result<usize, Status> {
    let lane = warp.lane() as usize;
    if bytes.len() < BITMAP_LEN {
        return Err(Status::Truncated);
    }
    let bitmap = bytes[lane];
    let set = bitmap.count_ones();
    let before = crate::lz77::scan_add(warp, set) - set;
    // This lane's symbols' frequencies; the first of its that is missing or 0, if any.
    let mut freqs = [0u32; 8];
    let mut status = Status::Success;
    let mut k = before as usize;
    for (j, freq) in freqs.iter_mut().enumerate() {
        if bitmap >> j & 1 == 1 {
            let at = BITMAP_LEN + 2 * k;
            match bytes.get(at..at + 2) {
                Some(pair) => *freq = u16::from_le_bytes([pair[0], pair[1]]) as u32,
                None if status == Status::Success => status = Status::Truncated,
                None => {}
            }
            if *freq == 0 && status == Status::Success {
                status = Status::Malformed;
            }
            k += 1;
        }
    }
    let failing = warp.ballot(status != Status::Success);
    if failing != 0 {
        return Err(Status::from_code(warp.shuffle(status as u32, failing.trailing_zeros())));
    }
    if warp.reduce_add(freqs.iter().sum()) != TOTAL {
        return Err(Status::Malformed);
    }
    unsafe { set_symbols(warp, tables, freqs) };
    // Each symbol's slots.
    let slots = tables.rest;
    let mut cum = unsafe { tables.symbol(8 * lane as u32).cum };
    for (j, &freq) in freqs.iter().enumerate() {
        for slot in cum..cum + freq {
            unsafe { *slots.add(slot as usize) = (8 * lane + j) as u8 };
        }
        cum += freq;
    }
    warp.sync();
    Ok(BITMAP_LEN + 2 * warp.shuffle(before + set, WARP_SIZE - 1) as usize)
}

/// A lane's share of decoding one sub-block: its state, and a window on the sub-block's words,
/// the next 64 two a lane, loaded 32 words ahead of their use (past the last, 0: a refill there
/// leaves the words miscounted, caught by [`finish`](Self::finish)). Offsets are the chunk's,
/// and the fields few, so that four decoders stay in registers.
struct SubBlockDecoder {
    /// Symbols in the sub-block (0 in one that decodes nothing), and the chunk's index of its first.
    len: u32,
    first: u32,
    state: u32,
    /// Where the sub-block's words start in the chunk, and how many there are.
    words_at: u32,
    word_count: u32,
    /// The index of the window's first word, and the words taken from the window.
    base: u32,
    taken: u32,
    /// Words `base + lane` and `base + 32 + lane`.
    low: u32,
    high: u32,
}

impl SubBlockDecoder {
    /// Ready to decode the sub-block at `at` in `chunk` (its states, then its `word_count` words),
    /// which holds the chunk's symbols `first .. first + len`.
    #[inline(always)]
    fn new<W: Warp>(
        warp: &W,
        chunk: &[u8],
        at: usize,
        word_count: usize,
        first: usize,
        len: usize,
    ) -> Result<Self, Status> {
        let lane = warp.lane() as usize;
        let state = u32::from_le_bytes(core::array::from_fn(|k| chunk[at + 4 * lane + k]));
        if warp.ballot(state < LOWER) != 0 {
            return Err(Status::Malformed);
        }
        let mut decoder = Self {
            len: len as u32,
            first: first as u32,
            state,
            words_at: (at + 4 * LANES) as u32,
            word_count: word_count as u32,
            ..Self::idle()
        };
        (decoder.low, decoder.high) = (decoder.word(chunk, lane as u32), decoder.word(chunk, (LANES + lane) as u32));
        Ok(decoder)
    }

    /// A decoder of nothing that ends well.
    #[inline(always)]
    fn idle() -> Self {
        Self { len: 0, first: 0, state: LOWER, words_at: 0, word_count: 0, base: 0, taken: 0, low: 0, high: 0 }
    }

    /// Word `k`, or 0 past the last.
    #[inline(always)]
    fn word(&self, chunk: &[u8], k: u32) -> u32 {
        if k < self.word_count {
            let at = (self.words_at + 2 * k) as usize;
            unsafe { *chunk.get_unchecked(at) as u32 | (*chunk.get_unchecked(at + 1) as u32) << 8 }
        } else {
            0
        }
    }

    /// Takes `words` from the window, moving it on by 32 once that many are taken.
    #[inline(always)]
    fn take(&mut self, chunk: &[u8], lane: u32, words: u32) {
        self.taken += words;
        if self.taken >= LANES as u32 {
            (self.base, self.taken) = (self.base + LANES as u32, self.taken - LANES as u32);
            (self.low, self.high) = (self.high, self.word(chunk, self.base + LANES as u32 + lane));
        }
    }

    /// The sub-block's status once decoded: every word taken and every state back at [`LOWER`]
    /// (an idle decoder's, success).
    #[inline(always)]
    fn finish<W: Warp>(&self, warp: &W) -> Result<(), Status> {
        if self.len == 0 {
            return Ok(());
        }
        if self.base + self.taken != self.word_count || warp.ballot(self.state != LOWER) != 0 {
            return Err(Status::Malformed);
        }
        Ok(())
    }
}

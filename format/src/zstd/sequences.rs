//! The sequences section (RFC 8878 §3.1.1.3.2): its header, the three FSE tables (predefined,
//! RLE, described, or repeated from the previous block), the decoding of sequences from the
//! backward bitstream, the repeat offsets, and the checks each sequence passes before it runs.

use super::SequenceTables;
use super::bits::ReverseBits;
use super::frame::FrameHeader;
use super::fse::{self, cell_baseline, cell_bits, cell_symbol};
use super::tables::*;
use crate::Status;

/// Cells of the largest literal-length and match-length tables.
pub const LENGTH_CELLS: usize = 1 << MAX_LENGTH_LOG;
/// Cells of the largest offset table.
pub const OFFSET_CELLS: usize = 1 << MAX_OFFSET_LOG;

/// The three FSE tables, in the order the section lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    /// Literal-length codes.
    LiteralLengths = 0,
    /// Offset codes.
    Offsets = 1,
    /// Match-length codes.
    MatchLengths = 2,
}

impl Table {
    /// All three, in the section's order.
    pub const ALL: [Self; 3] = [Self::LiteralLengths, Self::Offsets, Self::MatchLengths];

    /// The largest code and accuracy log a described table may have.
    pub const fn limits(self) -> (usize, u32) {
        match self {
            Self::LiteralLengths => (LITERAL_LENGTH_CODES - 1, MAX_LENGTH_LOG),
            Self::Offsets => (OFFSET_CODES - 1, MAX_OFFSET_LOG),
            Self::MatchLengths => (MATCH_LENGTH_CODES - 1, MAX_LENGTH_LOG),
        }
    }

    /// The predefined distribution and its accuracy log.
    pub const fn predefined(self) -> (&'static [i16], u32) {
        match self {
            Self::LiteralLengths => (&LITERAL_LENGTH_DEFAULT, LITERAL_LENGTH_DEFAULT_LOG),
            Self::Offsets => (&OFFSET_DEFAULT, OFFSET_DEFAULT_LOG),
            Self::MatchLengths => (&MATCH_LENGTH_DEFAULT, MATCH_LENGTH_DEFAULT_LOG),
        }
    }

    /// The extra bits and baseline of code `symbol` (clamped to the table's codes).
    pub const fn code(self, symbol: u8) -> (u32, u32) {
        let (max_symbol, _) = self.limits();
        let symbol = if symbol as usize > max_symbol { max_symbol } else { symbol as usize };
        match self {
            Self::LiteralLengths => (LITERAL_LENGTH_EXTRA_BITS[symbol] as u32, LITERAL_LENGTH_BASELINE[symbol]),
            Self::Offsets => (symbol as u32, 1 << symbol),
            Self::MatchLengths => (MATCH_LENGTH_EXTRA_BITS[symbol] as u32, MATCH_LENGTH_BASELINE[symbol]),
        }
    }

    /// This table's cells in `tables`, to build, and the scratch the build needs.
    pub fn cells_mut(self, tables: &mut SequenceTables) -> (&mut [u32], &mut [i16], &mut [u16]) {
        let cells: &mut [u32] = match self {
            Self::LiteralLengths => &mut tables.literal_lengths,
            Self::Offsets => &mut tables.offsets,
            Self::MatchLengths => &mut tables.match_lengths,
        };
        (cells, &mut tables.normalized, &mut tables.next)
    }
}

/// How a table is given: the two bits of the modes byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The default distribution RFC 8878 gives.
    Predefined = 0,
    /// One symbol for every sequence, stored as a byte.
    Rle = 1,
    /// An FSE table description in the section.
    Compressed = 2,
    /// The table of the frame's last block with sequences.
    Repeat = 3,
}

/// The mode of `table` in the modes byte `modes`.
pub const fn mode(modes: u8, table: Table) -> Mode {
    match (modes >> (6 - 2 * table as u32)) & 3 {
        0 => Mode::Predefined,
        1 => Mode::Rle,
        2 => Mode::Compressed,
        _ => Mode::Repeat,
    }
}

/// The sequences section's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SequencesHeader {
    /// Number of sequences.
    pub count: u32,
    /// The modes byte (0 without sequences).
    pub modes: u8,
    /// Bytes of the header.
    pub len: usize,
}

/// Reads the header at the start of the sequences section. A section without sequences must
/// end right after it.
pub fn read_header(section: &[u8]) -> Result<SequencesHeader, Status> {
    let byte = |i: usize| section.get(i).map(|&b| b as u32).ok_or(Status::Malformed);
    let first = byte(0)?;
    let (count, len) = match first {
        0..128 => (first, 1),
        128..255 => (((first - 128) << 8) + byte(1)?, 2),
        _ => (byte(1)? + (byte(2)? << 8) + 0x7F00, 3),
    };
    if count == 0 {
        return if section.len() == len {
            Ok(SequencesHeader { count, modes: 0, len })
        } else {
            Err(Status::Malformed)
        };
    }
    let modes = byte(len)? as u8;
    if modes & 3 != 0 {
        return Err(Status::Malformed);
    }
    Ok(SequencesHeader { count, modes, len: len + 1 })
}

/// Sets up `table` in `tables` for mode `mode` from the description at the start of `input`;
/// returns the bytes it took.
pub fn read_table(table: Table, mode: Mode, input: &[u8], tables: &mut SequenceTables) -> Result<usize, Status> {
    let (max_symbol, max_log) = table.limits();
    let (log, bytes) = match mode {
        Mode::Predefined => {
            let (normalized, log) = table.predefined();
            let (cells, _, next) = table.cells_mut(tables);
            fse::build_decode_table(normalized, log, cells, next)?;
            (log, 0)
        }
        Mode::Rle => {
            let symbol = *input.first().ok_or(Status::Malformed)?;
            if symbol as usize > max_symbol {
                return Err(Status::Malformed);
            }
            fse::rle_table(symbol, table.cells_mut(tables).0);
            (0, 1)
        }
        Mode::Compressed => {
            let (cells, normalized, next) = table.cells_mut(tables);
            let dist = fse::read_distribution(input, max_log, max_symbol, normalized)?;
            fse::build_decode_table(normalized.get(..dist.symbols).unwrap_or(&[]), dist.log, cells, next)?;
            (dist.log, dist.bytes)
        }
        Mode::Repeat if tables.repeatable != 0 => return Ok(0),
        Mode::Repeat => return Err(Status::Malformed),
    };
    for cell in table.cells_mut(tables).0.iter_mut().take(1 << log) {
        *cell = sequence_cell(table, *cell);
    }
    tables.logs[table as usize] = log as u8;
    Ok(bytes)
}

/// Sets up the three tables for the modes byte `modes` from the descriptions at the start of
/// `input`; returns the bytes they took. The tables then stay for later blocks' repeat mode.
pub fn read_tables(modes: u8, input: &[u8], tables: &mut SequenceTables) -> Result<usize, Status> {
    let mut at = 0;
    for table in Table::ALL {
        at += read_table(table, mode(modes, table), input.get(at..).unwrap_or(&[]), tables)?;
    }
    tables.repeatable = 1;
    Ok(at)
}

/// One decoded sequence: `literals` bytes, then `match_len` bytes from the offset that
/// `offset_value` names (above 3: that minus 3; 1..=3: a repeat offset).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Sequence {
    /// Literal bytes copied before the match.
    pub literals: u32,
    /// Bytes the match copies.
    pub match_len: u32,
    /// The offset as coded: above 3 the offset plus 3, else a repeat offset's number.
    pub offset_value: u32,
}

/// A sequence table's cell, rewritten from the FSE cell `cell` once the table is built, so that
/// one load gives all a sequence needs of it: the next state's baseline (bits 0–8) and bits to
/// read (9–12), the code's extra bits (13–17), and the code's baseline as [`code_value`] makes
/// it from bits 18–24 (every baseline of the format is below 128, a power of two, or one plus 3).
const fn sequence_cell(table: Table, cell: u32) -> u32 {
    let (extra, baseline) = table.code(cell_symbol(cell));
    cell_baseline(cell) | cell_bits(cell) << 9 | extra << 13 | (baseline - high_baseline(extra)) << 18
}

/// The part of a code's baseline above 127, by its extra bits: `1 << extra` from 7 on.
#[inline(always)]
const fn high_baseline(extra: u32) -> u32 {
    (1 << extra) & !127
}

/// The next state's baseline in a sequence cell.
#[inline(always)]
const fn state_baseline(cell: u32) -> u32 {
    cell & 511
}

/// The bits a sequence cell reads for the next state.
#[inline(always)]
const fn state_bits(cell: u32) -> u32 {
    (cell >> 9) & 15
}

/// The extra bits of a sequence cell's code.
#[inline(always)]
const fn extra_bits(cell: u32) -> u32 {
    (cell >> 13) & 31
}

/// The value of a sequence cell's code with `extra` (its extra bits' value).
#[inline(always)]
const fn code_value(cell: u32, extra: u32) -> u32 {
    (cell >> 18) + high_baseline(extra_bits(cell)) + extra
}

/// The low `n` (below 32) bits set.
#[inline(always)]
const fn low_bits(n: u32) -> u32 {
    (1 << (n & 31)) - 1
}

/// Decodes sequences from the backward bitstream with the three tables' states.
///
/// Written for one GPU lane as much as for a CPU: the states live in registers, every index is
/// masked or clamped into its table (no bounds-check branches), and a length code's baseline
/// and extra bits come from one packed entry.
pub struct SequenceDecoder<'a> {
    bits: ReverseBits<'a>,
    literal_length_state: u32,
    offset_state: u32,
    match_length_state: u32,
}

impl<'a> SequenceDecoder<'a> {
    /// Starts on `stream` (the rest of the block): reads the three initial states.
    pub fn new(stream: &'a [u8], tables: &SequenceTables) -> Result<Self, Status> {
        let mut bits = ReverseBits::new(stream)?;
        let [ll_log, of_log, ml_log] = tables.logs.map(u32::from);
        let literal_length_state = bits.read(ll_log);
        let offset_state = bits.read(of_log);
        let match_length_state = bits.read(ml_log);
        Ok(Self { bits, literal_length_state, offset_state, match_length_state })
    }

    /// Decodes the next sequence; unless it is the `last`, moves the states on. Its six fields
    /// (the offset's, match length's and literal length's extra bits, the three state updates)
    /// are read at once where the window holds them all, as three: the offset (at most 31 bits),
    /// the two lengths (at most 16 each) and the states (at most 9, 9 and 8, as every table this
    /// crate builds keeps them).
    #[inline(always)]
    pub fn next(&mut self, tables: &SequenceTables, last: bool) -> Sequence {
        self.next_from(self.cells(tables), last)
    }

    /// The cells of the current states, one table load each: what the next sequence decodes from.
    #[inline(always)]
    pub fn cells(&self, tables: &SequenceTables) -> [u32; 3] {
        [
            tables.literal_lengths[self.literal_length_state as usize & (LENGTH_CELLS - 1)],
            tables.offsets[self.offset_state as usize & (OFFSET_CELLS - 1)],
            tables.match_lengths[self.match_length_state as usize & (LENGTH_CELLS - 1)],
        ]
    }

    /// [`next`](Self::next), from the [`cells`](Self::cells) of the current states.
    #[inline(always)]
    pub fn next_from(&mut self, [ll, of, ml]: [u32; 3], last: bool) -> Sequence {
        let (ll_extra, ml_extra) = (extra_bits(ll), extra_bits(ml));
        let [ll_bits, ml_bits, of_bits] = if last { [0; 3] } else { [ll, ml, of].map(state_bits) };
        let of_extra = extra_bits(of);
        let [offset, extras, states] =
            self.bits.read_fields([of_extra, ml_extra + ll_extra, ll_bits + ml_bits + of_bits]);
        self.literal_length_state = state_baseline(ll) + states.wrapping_shr(ml_bits + of_bits);
        self.match_length_state = state_baseline(ml) + (states.wrapping_shr(of_bits) & low_bits(ml_bits));
        self.offset_state = state_baseline(of) + (states & low_bits(of_bits));
        Sequence {
            literals: code_value(ll, extras & low_bits(ll_extra)),
            match_len: code_value(ml, extras.wrapping_shr(ll_extra)),
            // An offset code's baseline is 1 << its extra bits.
            offset_value: (1 << of_extra) + offset,
        }
    }

    /// Whether the bitstream was read exactly to its start.
    pub fn finished(&self) -> bool {
        self.bits.finished()
    }

    /// Decodes `out.len()` sequences as (literal length, match length, offset), their offsets
    /// resolved through `reps`; the last of them is the block's last if `ends_block`. Each is
    /// stored while the next one's cells load: a GPU lane issues in order, and the store's work
    /// (the repeat offsets) fills the loads' latency.
    #[inline(always)]
    pub fn decode_resolved(
        &mut self,
        tables: &SequenceTables,
        reps: &mut RepeatOffsets,
        out: &mut [[u32; 3]],
        ends_block: bool,
    ) {
        let Some((last, body)) = out.split_last_mut() else { return };
        let mut store = |slot: &mut [u32; 3], sequence: Sequence| {
            let offset = reps.resolve(sequence.offset_value, sequence.literals);
            *slot = [sequence.literals, sequence.match_len, offset];
        };
        if let Some((first, rest)) = body.split_first_mut() {
            let (mut pending, mut pending_slot) = (self.next(tables, false), first);
            for slot in rest {
                let cells = self.cells(tables);
                store(pending_slot, pending);
                (pending, pending_slot) = (self.next_from(cells, false), slot);
            }
            store(pending_slot, pending);
        }
        store(last, self.next(tables, ends_block));
    }

    /// Walks `out.len()` sequences (see [`walk_from`](Self::walk_from)); the last of them is the
    /// block's last if `ends_block`. Each is stored while the next one's cells load, as
    /// [`decode_resolved`](Self::decode_resolved) stores its sequences. (One generic loop for the
    /// two changed the full decode's SASS on sm_90 and made it 3-5% slower.)
    #[inline(always)]
    pub fn walk(&mut self, tables: &SequenceTables, out: &mut [Walked], ends_block: bool) {
        let Some((last, body)) = out.split_last_mut() else { return };
        if let Some((first, rest)) = body.split_first_mut() {
            let (mut pending, mut pending_slot) = (self.walk_from(self.cells(tables), false), first);
            for slot in rest {
                let cells = self.cells(tables);
                *pending_slot = pending;
                (pending, pending_slot) = (self.walk_from(cells, false), slot);
            }
            *pending_slot = pending;
        }
        *last = self.walk_from(self.cells(tables), ends_block);
    }

    /// The next sequence walked: its states moved on (unless it is the `last`) and its extra
    /// bits read as one field, not taken apart: the serial part of
    /// [`next_from`](Self::next_from), which the sequence's [`Walked::sequence`] completes.
    #[inline(always)]
    pub fn walk_from(&mut self, [ll, of, ml]: [u32; 3], last: bool) -> Walked {
        let [ll_bits, ml_bits, of_bits] = if last { [0; 3] } else { [ll, ml, of].map(state_bits) };
        let extras = extra_bits(of) + extra_bits(ml) + extra_bits(ll);
        let (extra, states) = self.bits.read_wide_then(extras, ll_bits + ml_bits + of_bits);
        self.literal_length_state = state_baseline(ll) + states.wrapping_shr(ml_bits + of_bits);
        self.match_length_state = state_baseline(ml) + (states.wrapping_shr(of_bits) & low_bits(ml_bits));
        self.offset_state = state_baseline(of) + (states & low_bits(of_bits));
        // Each cell's code (its extra bits and baseline) is in bits 13 to 24.
        let codes = ll >> 13 | ml >> 13 << 12 | (of >> 13 & 31) << 24;
        Walked { extra, codes }
    }
}

/// A sequence walked ([`SequenceDecoder::walk`]): its extra bits, read as one field, and its
/// literal-length, match-length and offset codes. Taking the field apart and resolving the
/// offset is left to [`Walked::sequence`] and the repeat offsets, so that the serial loop stays
/// short and a GPU warp's lanes do the rest for a batch at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(16))]
pub struct Walked {
    /// The offset's, match length's and literal length's extra bits, the offset's highest.
    pub extra: u64,
    /// The literal-length and match-length codes' extra bits and baselines (bits 13 to 24 of
    /// their cells) in bits 0-11 and 12-23, the offset code's extra bits in bits 24-28.
    pub codes: u32,
}

impl Walked {
    /// The sequence: what [`SequenceDecoder::next_from`] would have decoded.
    #[inline(always)]
    pub fn sequence(&self) -> Sequence {
        let (ll, ml, of_extra) = ((self.codes & 0xFFF) << 13, (self.codes >> 12 & 0xFFF) << 13, self.codes >> 24);
        let (ll_extra, ml_extra) = (extra_bits(ll), extra_bits(ml));
        // From the lowest: the literal length's bits, the match length's, the offset's.
        let bits = self.extra;
        Sequence {
            literals: code_value(ll, (bits & low_bits_64(ll_extra)) as u32),
            match_len: code_value(ml, (bits >> ll_extra & low_bits_64(ml_extra)) as u32),
            offset_value: (1 << of_extra) + (bits >> (ll_extra + ml_extra)) as u32,
        }
    }
}

/// The low `n` (below 64) bits set.
#[inline(always)]
const fn low_bits_64(n: u32) -> u64 {
    (1 << n) - 1
}

/// The three most recent offsets, most recent first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepeatOffsets(pub [u32; 3]);

impl RepeatOffsets {
    /// A frame's starting offsets.
    pub const START: Self = Self([1, 4, 8]);

    /// The offset of a sequence with `offset_value` and `literals` literals, updating the
    /// history (RFC 8878 §3.2.2.1). 0 (from repeat offset 1 minus one) is never valid. Written
    /// as selects between values, not a match, so that a GPU lane (which resolves every
    /// sequence's offset here) takes one path without branches.
    #[inline(always)]
    pub fn resolve(&mut self, offset_value: u32, literals: u32) -> u32 {
        let [first, second, third] = self.0;
        let repeat = offset_value <= 3;
        // Which repeat offset (3: the first minus one), for offset values 1 to 3.
        let which = offset_value.wrapping_sub(1) + (literals == 0) as u32;
        let odd = which & 1 != 0;
        let low = if odd { second } else { first };
        let high = if odd { first.wrapping_sub(1) } else { third };
        let offset = if !repeat {
            offset_value.wrapping_sub(3)
        } else if which & 2 != 0 {
            high
        } else {
            low
        };
        let unchanged = repeat && which == 0;
        let third_after = if repeat && which == 1 { third } else { second };
        self.0 = if unchanged { self.0 } else { [offset, first, third_after] };
        offset
    }
}

/// Where a block's sequences go: positions in the output, and the limits they must keep to.
#[derive(Clone, Copy, Debug)]
pub struct Cursor {
    /// Output position of the frame's first byte (matches may not reach before it).
    pub frame_start: usize,
    /// Output position of the block's first byte.
    pub block_start: usize,
    /// Output position of the next sequence.
    pub op: usize,
    /// The block's literals not yet copied.
    pub literals_left: usize,
    /// Where the frame's output must end by (the output's size, or the frame's content size).
    pub limit: usize,
    /// The status for passing `limit`: `OutputTooSmall`, `Malformed` for a frame's content
    /// size, `ChunkTooLarge` when only counting.
    pub limit_status: Status,
    /// Farthest a match may reach back.
    pub window: u64,
    /// Most bytes a block may decode to.
    pub block_max: usize,
}

impl Cursor {
    /// The cursor at the start of a frame with `header` at output position `op`, with room up
    /// to `room` (passing it is `room_status`); a stated content size beyond the room fails with
    /// `room_status`, and becomes the limit (passing it: `Malformed`).
    pub fn for_frame(header: &FrameHeader, op: usize, room: usize, room_status: Status) -> Result<Self, Status> {
        let (limit, limit_status) = match header.content_size {
            Some(size) if size > (room - op) as u64 => return Err(room_status),
            Some(size) => (op + size as usize, Status::Malformed),
            None => (room, room_status),
        };
        Ok(Self {
            frame_start: op,
            block_start: op,
            op,
            literals_left: 0,
            limit,
            limit_status,
            window: header.window,
            block_max: header.block_max(),
        })
    }

    /// Checks the next sequence, whose offset resolved to `offset`, before it runs: its literals
    /// exist, the block (counting its literals still to come) stays within its maximum size and
    /// the output's limit, and the match reaches back neither before the frame nor beyond the
    /// window. Then advances past it.
    #[inline(always)]
    pub fn advance(&mut self, sequence: &Sequence, offset: u32) -> Result<(), Status> {
        let (literals, match_len) = (sequence.literals as usize, sequence.match_len as usize);
        if literals > self.literals_left {
            return Err(Status::Malformed);
        }
        let match_at = self.op + literals;
        let end = match_at + match_len;
        let bound = end + (self.literals_left - literals);
        if bound - self.block_start > self.block_max {
            return Err(Status::Malformed);
        }
        if bound > self.limit {
            return Err(self.limit_status);
        }
        if offset == 0 || offset as usize > match_at - self.frame_start || offset as u64 > self.window {
            return Err(Status::BadOffset);
        }
        self.op = end;
        self.literals_left -= literals;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::boxed::Box;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn repeat_offsets_follow_rfc_8878s_table() {
        let mut reps = RepeatOffsets::START;
        let steps = [
            (1114, 11, 1111, [1111, 1, 4]),
            (1, 22, 1111, [1111, 1, 4]),
            (2225, 22, 2222, [2222, 1111, 1]),
            (1114, 111, 1111, [1111, 2222, 1111]),
            (3336, 33, 3333, [3333, 1111, 2222]),
            (2, 22, 1111, [1111, 3333, 2222]),
            (3, 33, 2222, [2222, 1111, 3333]),
            (3, 0, 2221, [2221, 2222, 1111]),
            (1, 0, 2222, [2222, 2221, 1111]),
            (2, 0, 1111, [1111, 2222, 2221]),
        ];
        for (offset_value, literals, offset, after) in steps {
            assert_eq!(reps.resolve(offset_value, literals), offset, "{offset_value} {literals}");
            assert_eq!(reps.0, after);
        }
        let mut reps = RepeatOffsets([1, 5, 9]);
        assert_eq!(reps.resolve(3, 0), 0, "repeat offset 1 minus one");
    }

    #[test]
    fn sequence_cells_hold_each_codes_extra_bits_and_baseline() {
        for table in Table::ALL {
            for symbol in 0..=table.limits().0 as u8 {
                let (extra, baseline) = table.code(symbol);
                let cell = sequence_cell(table, fse::cell(symbol, 9, 511));
                assert_eq!([state_baseline(cell), state_bits(cell), extra_bits(cell)], [511, 9, extra]);
                assert_eq!((code_value(cell, 0), cell >> 25), (baseline, 0), "{table:?} code {symbol}");
            }
        }
        assert_eq!(Table::Offsets.code(40), (31, 1 << 31), "codes beyond the table's clamped");
    }

    /// Walking and then taking each sequence's extra bits apart decodes what decoding at once
    /// does, and reads the bitstream as far, past its start too (random bytes, predefined tables).
    #[test]
    fn walked_sequences_read_as_decoded_ones() {
        // Any bytes are a valid start: the tables are built before they are read.
        let mut tables: Box<SequenceTables> = unsafe { Box::new_zeroed().assume_init() };
        read_tables(0, &[], &mut tables).unwrap();
        let mut seed = 0x9E37_79B9_7F4A_7C15_u64;
        for len in [1, 2, 3, 5, 8, 13, 40, 300] {
            for _ in 0..20 {
                let mut stream: Vec<u8> = (0..len)
                    .map(|_| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        (seed >> 56) as u8
                    })
                    .collect();
                *stream.last_mut().unwrap() |= 1;
                let count = 1 + (seed >> 20) as usize % 120;
                let mut decoder = SequenceDecoder::new(&stream, &tables).unwrap();
                let decoded: Vec<Sequence> = (0..count).map(|i| decoder.next(&tables, i + 1 == count)).collect();
                let mut walker = SequenceDecoder::new(&stream, &tables).unwrap();
                let mut walked = vec![Walked::default(); count];
                for (from, to) in [(0, count / 2), (count / 2, count)] {
                    walker.walk(&tables, &mut walked[from..to], to == count);
                }
                let walked: Vec<Sequence> = walked.iter().map(Walked::sequence).collect();
                assert_eq!(walked, decoded, "{len} bytes");
                assert_eq!(
                    (walker.bits.overflowed(), walker.finished()),
                    (decoder.bits.overflowed(), decoder.finished())
                );
            }
        }
    }

    #[test]
    fn headers_count_sequences() {
        let header = |bytes: &[u8]| read_header(bytes);
        assert_eq!(header(&[0]), Ok(SequencesHeader { count: 0, modes: 0, len: 1 }));
        assert_eq!(header(&[0, 0]), Err(Status::Malformed), "bytes after an empty section");
        assert_eq!(header(&[5, 0b1010_1000]), Ok(SequencesHeader { count: 5, modes: 0b1010_1000, len: 2 }));
        assert_eq!(header(&[0x81, 0x02, 0]), Ok(SequencesHeader { count: 258, modes: 0, len: 3 }));
        assert_eq!(header(&[255, 1, 2, 0]), Ok(SequencesHeader { count: 0x7F00 + 0x201, modes: 0, len: 4 }));
        assert_eq!(header(&[5, 1]), Err(Status::Malformed), "reserved bits");
        assert_eq!(header(&[255, 1]), Err(Status::Malformed));
        assert_eq!(header(&[]), Err(Status::Malformed));
        assert_eq!(
            [Table::LiteralLengths, Table::Offsets, Table::MatchLengths].map(|t| mode(0b0001_1100, t)),
            [Mode::Predefined, Mode::Rle, Mode::Repeat]
        );
    }
}

//! The sequences section (RFC 8878 §3.1.1.3.2): a block's sequences as literal-length,
//! match-length and offset codes, each kind coded with the predefined table, one repeated
//! symbol (RLE) or its own FSE table, whichever costs the fewest bits, then the interleaved
//! bitstream, written last sequence first.

use super::bits::BitWriter;
use super::fse::{COST_SHIFT, FseTable, State, Stepper, normalize, symbol_cost, table_log, write_description};
use crate::Status;
use crate::zstd::tables::{
    LITERAL_LENGTH_BASELINE, LITERAL_LENGTH_CODES, LITERAL_LENGTH_DEFAULT, LITERAL_LENGTH_DEFAULT_LOG,
    LITERAL_LENGTH_EXTRA_BITS, MATCH_LENGTH_BASELINE, MATCH_LENGTH_CODES, MATCH_LENGTH_DEFAULT,
    MATCH_LENGTH_DEFAULT_LOG, MATCH_LENGTH_EXTRA_BITS, MAX_LENGTH_LOG, MAX_OFFSET_LOG, OFFSET_CODES, OFFSET_DEFAULT,
    OFFSET_DEFAULT_LOG, literal_length_code, match_length_code, offset_code,
};

/// One sequence of a block: literals, then a match.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sequence {
    /// The offset value: a repeat code 1..=3, or the match offset plus 3.
    pub offset_value: u32,
    /// Literals before the match.
    pub literal_len: u16,
    /// Match length minus 3 (zstd's shortest match).
    pub match_len_minus3: u16,
}

/// The offsets the last sequences used, most recent first; a frame starts with 1, 4, 8.
pub type RepeatOffsets = [u32; 3];

/// The repeat offsets a frame starts with.
pub const INITIAL_REPEATS: RepeatOffsets = [1, 4, 8];

/// The sequence of `literal_len` literals then `match_len` bytes (at least 3) `offset` back:
/// its offset value uses a repeat code where one names `offset`, and `repeats` is updated as
/// the decoder will update it.
#[inline(always)]
pub fn sequence(repeats: &mut RepeatOffsets, literal_len: usize, offset: u32, match_len: usize) -> Sequence {
    let [r0, r1, r2] = *repeats;
    let (offset_value, next) = if literal_len > 0 && offset == r0 {
        (1, [r0, r1, r2])
    } else if offset == r1 {
        (if literal_len > 0 { 2 } else { 1 }, [r1, r0, r2])
    } else if offset == r2 {
        (if literal_len > 0 { 3 } else { 2 }, [r2, r0, r1])
    } else if literal_len == 0 && offset == r0.wrapping_sub(1) {
        (3, [offset, r0, r1])
    } else {
        (offset + 3, [offset, r0, r1])
    };
    *repeats = next;
    Sequence { offset_value, literal_len: literal_len as u16, match_len_minus3: (match_len - 3) as u16 }
}

/// How one kind of code (literal lengths, offsets, match lengths) is coded in a block.
#[repr(C)]
pub struct CodeTable<const CELLS: usize, const SYMBOLS: usize> {
    /// How many times each code occurs.
    pub counts: [u32; SYMBOLS],
    normalized: [i16; SYMBOLS],
    table: FseTable<CELLS, SYMBOLS>,
}

/// The three code tables of a block's sequences. Any bytes are a valid starting state.
#[repr(C)]
pub struct SequenceTables {
    /// Literal-length codes.
    pub literal_lengths: CodeTable<512, LITERAL_LENGTH_CODES>,
    /// Offset codes.
    pub offsets: CodeTable<256, OFFSET_CODES>,
    /// Match-length codes.
    pub match_lengths: CodeTable<512, MATCH_LENGTH_CODES>,
}

/// The three codes of `seq`: literal length, offset, match length.
#[inline(always)]
pub fn codes(seq: &Sequence) -> (u8, u8, u8) {
    (
        literal_length_code(seq.literal_len as u32),
        offset_code(seq.offset_value),
        match_length_code(seq.match_len_minus3 as u32 + 3),
    )
}

/// Counts the codes of `sequences` into `tables` (cleared first).
pub fn count_codes(sequences: &[Sequence], tables: &mut SequenceTables) {
    tables.literal_lengths.counts.fill(0);
    tables.offsets.counts.fill(0);
    tables.match_lengths.counts.fill(0);
    for seq in sequences {
        let (ll, of, ml) = codes(seq);
        tables.literal_lengths.counts[ll as usize] += 1;
        tables.offsets.counts[of as usize] += 1;
        tables.match_lengths.counts[ml as usize] += 1;
    }
}

/// Writes the sequences section for `sequences`, whose codes [`count_codes`] counted into
/// `tables`, at the start of `out`; returns its size.
pub fn write_sequences(sequences: &[Sequence], tables: &mut SequenceTables, out: &mut [u8]) -> Result<usize, Status> {
    let at = write_sequences_header(sequences, tables, out)?;
    if sequences.is_empty() {
        return Ok(at);
    }
    let stream = encode(sequences, tables, out.get_mut(at..).ok_or(Status::OutputTooSmall)?)?;
    Ok(at + stream)
}

/// Writes the sequences section's header (the count, the modes and the tables' descriptions)
/// for `sequences`, whose codes [`count_codes`] counted into `tables`, and builds the tables;
/// returns where the bitstream starts (the section's end if there are no sequences).
pub fn write_sequences_header(
    sequences: &[Sequence],
    tables: &mut SequenceTables,
    out: &mut [u8],
) -> Result<usize, Status> {
    let n = sequences.len();
    let mut at = match n {
        0..0x80 => put(out, 0, &[n as u8])?,
        0x80..0x7F00 => put(out, 0, &[(n >> 8) as u8 + 0x80, n as u8])?,
        _ => put(out, 0, &[0xFF, (n - 0x7F00) as u8, ((n - 0x7F00) >> 8) as u8])?,
    };
    if n == 0 {
        return Ok(at);
    }
    let modes_at = at;
    at += 1;
    let total = n as u32;
    let ll = choose(
        &mut tables.literal_lengths,
        total,
        &LITERAL_LENGTH_DEFAULT,
        LITERAL_LENGTH_DEFAULT_LOG,
        MAX_LENGTH_LOG,
        out,
        &mut at,
    )?;
    let of = choose(&mut tables.offsets, total, &OFFSET_DEFAULT, OFFSET_DEFAULT_LOG, MAX_OFFSET_LOG, out, &mut at)?;
    let ml = choose(
        &mut tables.match_lengths,
        total,
        &MATCH_LENGTH_DEFAULT,
        MATCH_LENGTH_DEFAULT_LOG,
        MAX_LENGTH_LOG,
        out,
        &mut at,
    )?;
    *out.get_mut(modes_at).ok_or(Status::OutputTooSmall)? = ll << 6 | of << 4 | ml << 2;
    Ok(at)
}

/// Writes `bytes` at `out[at..]`; returns where they end.
fn put(out: &mut [u8], at: usize, bytes: &[u8]) -> Result<usize, Status> {
    let end = at + bytes.len();
    out.get_mut(at..end).ok_or(Status::OutputTooSmall)?.copy_from_slice(bytes);
    Ok(end)
}

/// Compression modes of a code table.
const PREDEFINED: u8 = 0;
const RLE_MODE: u8 = 1;
const FSE_MODE: u8 = 2;

/// Picks the cheapest mode for one code table, builds its encoding table and writes its
/// description (if any) at `out[*at..]`, advancing `*at`; returns the mode.
fn choose<const CELLS: usize, const SYMBOLS: usize>(
    code: &mut CodeTable<CELLS, SYMBOLS>,
    total: u32,
    default: &[i16],
    default_log: u32,
    max_log: u32,
    out: &mut [u8],
    at: &mut usize,
) -> Result<u8, Status> {
    let counts = &code.counts;
    let max_symbol = counts.iter().rposition(|&c| c != 0).unwrap_or(0);
    if counts[max_symbol] == total {
        // One symbol: RLE, a one-cell table that codes it in no bits.
        code.normalized.fill(0);
        code.normalized[max_symbol] = 1;
        code.table.build(&code.normalized[..=max_symbol], 0);
        *at = put(out, *at, &[max_symbol as u8])?;
        return Ok(RLE_MODE);
    }
    let cost = |normalized: &[i16], log: u32| -> u64 {
        counts.iter().zip(normalized).map(|(&c, &p)| c as u64 * symbol_cost(p, log) as u64).sum()
    };
    let predefined = if max_symbol < default.len() { cost(&default[..=max_symbol], default_log) } else { u64::MAX };
    let log = table_log(total, max_symbol as u32, max_log);
    normalize(&counts[..=max_symbol], total, log, &mut code.normalized[..=max_symbol]);
    let description = write_description(&code.normalized[..=max_symbol], log, out.get_mut(*at..).unwrap_or(&mut []));
    let fse = match description {
        Ok(len) => ((len as u64 * 8) << COST_SHIFT) + cost(&code.normalized[..=max_symbol], log),
        Err(_) => u64::MAX,
    };
    if predefined <= fse {
        code.table.build(default, default_log);
        return Ok(PREDEFINED);
    }
    code.table.build(&code.normalized[..=max_symbol], log);
    *at += description?;
    Ok(FSE_MODE)
}

/// A bit field of the sequences' bitstream: a value in its low `.1` bits.
pub type Field = (u32, u32);

/// Encodes the sequences' bitstream at the start of `out` (the tables built); returns its size.
/// The stream is, in the order written: the last sequence's extra-bit fields; for each sequence
/// before it, last to first, its state field and extra-bit fields; the final fields.
fn encode(sequences: &[Sequence], tables: &SequenceTables, out: &mut [u8]) -> Result<usize, Status> {
    let mut w = BitWriter::new(out);
    let last = sequences.len() - 1;
    let mut states = tables.first_states(codes(&sequences[last]));
    let mut add = |fields: &[Field]| fields.iter().for_each(|&(value, bits)| w.add(value, bits));
    add(&extra_fields(&sequences[last]));
    for seq in sequences[..last].iter().rev() {
        add(&[tables.state_field(&mut states, codes(seq))]);
        add(&extra_fields(seq));
    }
    add(&tables.final_fields(states));
    w.finish()
}

impl SequenceTables {
    /// The states (literal length, offset, match length) the stream starts from: the first
    /// for the last sequence's [`codes`].
    #[inline(always)]
    pub fn first_states(&self, (ll, of, ml): (u8, u8, u8)) -> [State; 3] {
        [
            self.literal_lengths.table.first_state(ll),
            self.offsets.table.first_state(of),
            self.match_lengths.table.first_state(ml),
        ]
    }

    /// The field that moves `states` on to code a sequence (one before the last) of [`codes`]
    /// `(ll, of, ml)`: the three state updates in one ([`state_field`]).
    #[inline(always)]
    pub fn state_field(&self, states: &mut [State; 3], (ll, of, ml): (u8, u8, u8)) -> Field {
        let [ll_state, of_state, ml_state] = states;
        let of = self.offsets.table.step(of_state, of);
        let ml = self.match_lengths.table.step(ml_state, ml);
        let ll = self.literal_lengths.table.step(ll_state, ll);
        state_field([ll, of, ml])
    }

    /// The three tables' steppers: literal lengths, offsets, match lengths.
    #[inline(always)]
    pub fn steppers(&self) -> [Stepper<'_>; 3] {
        [self.literal_lengths.table.stepper(), self.offsets.table.stepper(), self.match_lengths.table.stepper()]
    }

    /// The fields that end the stream: the final states (match length, offset, literal
    /// length) for the decoder to start from, then the 1-bit end marker.
    #[inline(always)]
    pub fn final_fields(&self, [ll_state, of_state, ml_state]: [State; 3]) -> [Field; 4] {
        [
            self.match_lengths.table.flush_field(ml_state),
            self.offsets.table.flush_field(of_state),
            self.literal_lengths.table.flush_field(ll_state),
            (1, 1),
        ]
    }
}

/// The field of a sequence's three state updates (literal length, offset, match length) in
/// one, at most 8 + 9 + 9 bits, as the decoder reads them.
#[inline(always)]
pub fn state_field([(ll_value, ll_bits), (of_value, of_bits), (ml_value, ml_bits)]: [Field; 3]) -> Field {
    (of_value | (ml_value | ll_value << ml_bits) << of_bits, of_bits + ml_bits + ll_bits)
}

/// The extra-bit fields of `seq`, in the order the decoder reads them backward: the two
/// lengths' in one (at most 16 + 16 bits), then the offset's.
#[inline(always)]
pub fn extra_fields(seq: &Sequence) -> [Field; 2] {
    let (ll, of, ml) = codes(seq);
    let ll_bits = LITERAL_LENGTH_EXTRA_BITS[ll as usize] as u32;
    let ll_value = seq.literal_len as u32 - LITERAL_LENGTH_BASELINE[ll as usize];
    let ml_bits = MATCH_LENGTH_EXTRA_BITS[ml as usize] as u32;
    let ml_value = seq.match_len_minus3 as u32 + 3 - MATCH_LENGTH_BASELINE[ml as usize];
    [(ll_value | ml_value << ll_bits, ll_bits + ml_bits), (seq.offset_value - (1 << of), of as u32)]
}

//! FSE encoding (RFC 8878 §4.1): normalizing a histogram to a table size, writing the table
//! description, and encoding symbols with a table built from the same spread the decoder uses
//! (`crate::zstd::fse::spread_symbols`). Everything is integer arithmetic, so the CPU and a GPU
//! lane choose the same tables and write the same bits.

use super::bits::BitWriter;
use crate::Status;
use crate::zstd::fse::spread_symbols;
use crate::zstd::tables::MIN_FSE_LOG;

/// Symbols of the alphabet of Huffman weights (0..=11).
pub const MAX_WEIGHT_SYMBOLS: usize = 12;
/// Fractional bits of the fixed-point costs (1/256 bit).
pub const COST_SHIFT: u32 = 8;

/// `floor(log2(x))` for `x` > 0.
#[inline(always)]
pub const fn highbit(x: u32) -> u32 {
    31 - x.leading_zeros()
}

/// `log2(x)` in 1/256 bits, for `x` > 0 (exact to the last fractional bit, by squaring).
pub fn log2_fixed(x: u32) -> u32 {
    let whole = highbit(x);
    // The mantissa in [1, 2) as a Q30 number.
    let mut m = ((x as u64) << 30) >> whole;
    let mut result = whole << COST_SHIFT;
    for bit in (0..COST_SHIFT).rev() {
        m = (m * m) >> 30;
        if m >= 2 << 30 {
            m >>= 1;
            result |= 1 << bit;
        }
    }
    result
}

/// Cost in 1/256 bits of one occurrence of a symbol of normalized probability `p` (-1 counts
/// as 1) in a table of `1 << log` cells.
#[inline(always)]
pub fn symbol_cost(p: i16, log: u32) -> u32 {
    (log << COST_SHIFT) - log2_fixed(p.max(1) as u32)
}

/// Accuracy log for a table coding `total` symbols whose largest is `max_symbol`: about a
/// quarter as many cells as symbols coded, within [`MIN_FSE_LOG`]..=`max_log`, and never
/// fewer cells than symbols.
pub fn table_log(total: u32, max_symbol: u32, max_log: u32) -> u32 {
    let total_bits = highbit(total.max(2) - 1);
    let wanted = max_log.min(total_bits.saturating_sub(2));
    let needed = (total_bits + 1).min(highbit(max_symbol.max(1)) + 2);
    wanted.max(needed).clamp(MIN_FSE_LOG, max_log)
}

/// Scales `counts` (summing to `total`, at most as many used symbols as the table has cells)
/// to probabilities summing to `1 << log` in `normalized`: each used symbol gets at least 1,
/// the rest rounded, and any surplus or shortfall is settled one unit at a time where it costs
/// the fewest bits. Deterministic.
pub fn normalize(counts: &[u32], total: u32, log: u32, normalized: &mut [i16]) {
    let size = 1i32 << log;
    let mut sum = 0;
    for (p, &count) in normalized.iter_mut().zip(counts) {
        *p = 0;
        if count != 0 {
            let scaled = ((count as u64) << (log + 1)) / total as u64;
            *p = scaled.div_ceil(2).max(1) as i16;
            sum += *p as i32;
        }
    }
    while sum != size {
        let grow = sum < size;
        // The symbol whose unit changes the coded size the least (or helps it the most).
        let mut best = (usize::MAX, 0u64);
        for (symbol, (&p, &count)) in normalized.iter().zip(counts).enumerate() {
            if count == 0 || (!grow && p <= 1) {
                continue;
            }
            let (low, high) = if grow { (p, p + 1) } else { (p - 1, p) };
            let change = count as u64 * (log2_fixed(high as u32) - log2_fixed(low as u32)) as u64;
            let better = if grow { change > best.1 } else { change < best.1 };
            if best.0 == usize::MAX || better {
                best = (symbol, change);
            }
        }
        normalized[best.0] += if grow { 1 } else { -1 };
        sum += if grow { 1 } else { -1 };
    }
}

/// Writes the table description of `normalized` (RFC 8878 §4.1.1) at the start of `out`;
/// returns its size in bytes.
pub fn write_description(normalized: &[i16], log: u32, out: &mut [u8]) -> Result<usize, Status> {
    let mut w = BitWriter::new(out);
    w.add(log - MIN_FSE_LOG, 4);
    let mut remaining = 1u32 << log; // probability points not yet given out
    let mut symbol = 0;
    while remaining > 0 {
        let p = normalized[symbol];
        let value = (p + 1) as u32;
        // Values 0..=remaining+1 fit `width` bits; the smallest `short` values take one fewer.
        let max = remaining + 1;
        let width = highbit(max) + 1;
        let short = (1 << width) - 1 - max;
        if value < short {
            w.add(value, width - 1);
        } else if value < 1 << (width - 1) {
            w.add(value, width);
        } else {
            w.add(value + short, width);
        }
        remaining -= p.unsigned_abs() as u32;
        symbol += 1;
        if p == 0 {
            let mut zeros = normalized[symbol..].iter().take_while(|&&p| p == 0).count();
            symbol += zeros;
            while zeros >= 3 {
                w.add(3, 2);
                zeros -= 3;
            }
            w.add(zeros as u32, 2);
        }
    }
    w.finish()
}

/// An FSE encoding table of up to `CELLS` cells over `SYMBOLS` symbols. Any bytes are a valid
/// starting state: [`FseTable::build`] sets what the encoder reads.
#[repr(C)]
pub struct FseTable<const CELLS: usize, const SYMBOLS: usize> {
    log: u32,
    /// Each symbol's cells in state order, as encoder states (`cells + cell`), grouped by symbol.
    next: [u16; CELLS],
    /// Where each symbol's group starts in `next`.
    start: [u16; SYMBOLS],
    /// Each symbol's probability (-1 taken as 1).
    count: [u16; SYMBOLS],
    /// The symbol of each cell, from the spread.
    cells: [u8; CELLS],
}

/// An encoder's state: `cells + cell`, where `cell` is the decoder's state.
pub type State = u32;

/// What coding a symbol reads of an [`FseTable`], one type for every table size: a GPU lane
/// picks one of several tables to step with.
#[derive(Clone, Copy)]
pub struct Stepper<'a> {
    log: u32,
    next: &'a [u16],
    start: &'a [u16],
    count: &'a [u16],
}

/// What coding one symbol reads of its table, in one word: the state from which it takes its
/// most bits (`count << most`, 11 bits), that most (4 bits), and where its group starts in
/// `next` less its count, plus 1024 (11 bits). A GPU lane stepping a state loads it ahead of the
/// state, so that only the state's own arithmetic and one table load lie between two steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SymbolCoding(pub u32);

impl SymbolCoding {
    /// The state from which the symbol takes its most bits.
    #[inline(always)]
    fn threshold(self) -> u32 {
        self.0 & 0x7FF
    }

    /// The most bits the symbol takes.
    #[inline(always)]
    fn most(self) -> u32 {
        (self.0 >> 11) & 15
    }

    /// Where the symbol's group starts in `next`, less its count, plus 1024.
    #[inline(always)]
    fn group(self) -> u32 {
        self.0 >> 15
    }
}

impl Stepper<'_> {
    /// How `symbol` is coded (a symbol the table does not have gives a coding no valid state
    /// reaches, and no arithmetic fault).
    #[inline(always)]
    pub fn coding(&self, symbol: u8) -> SymbolCoding {
        let count = self.count[symbol as usize] as u32;
        let most = self.log.wrapping_sub(highbit(count.max(1))) & 15;
        let group = (self.start[symbol as usize] as u32 + 1024).wrapping_sub(count) & 0x7FF;
        SymbolCoding((count << most) & 0x7FF | most << 11 | group << 15)
    }

    /// The state to start from when `symbol` is the last one coded (the first one decoded at
    /// the end): its first cell, which reads at least one bit when the decoder leaves it.
    #[inline(always)]
    pub fn first_state(&self, symbol: u8) -> State {
        self.first_state_coded(self.coding(symbol))
    }

    /// [`first_state`](Self::first_state) for the symbol coded as `coding`.
    #[inline(always)]
    pub fn first_state_coded(&self, coding: SymbolCoding) -> State {
        let start = coding.group() + (coding.threshold() >> coding.most()) - 1024;
        self.next.get(start as usize).copied().unwrap_or(0) as State
    }

    /// Codes `symbol` from `state` without writing: returns the bits the decoder reads to return
    /// to `state` (at most the table's log) and their count.
    #[inline(always)]
    pub fn step(&self, state: &mut State, symbol: u8) -> (u32, u32) {
        self.step_coded(state, self.coding(symbol))
    }

    /// [`step`](Self::step) for the symbol coded as `coding`.
    #[inline(always)]
    pub fn step_coded(&self, state: &mut State, coding: SymbolCoding) -> (u32, u32) {
        let bits = coding.most() - (*state < coding.threshold()) as u32;
        let value = *state & ((1 << bits) - 1);
        let at = (coding.group() + (*state >> bits)).wrapping_sub(1024);
        *state = self.next.get(at as usize).copied().unwrap_or(0) as State;
        (value, bits)
    }
}

impl<const CELLS: usize, const SYMBOLS: usize> FseTable<CELLS, SYMBOLS> {
    /// Builds the table for `normalized` (a valid distribution of `1 << log` <= `CELLS` cells).
    pub fn build(&mut self, normalized: &[i16], log: u32) {
        let size = 1usize << log;
        self.log = log;
        // A valid distribution always spreads; the table stays as it was if not.
        let _ = spread_symbols(normalized, log, &mut self.cells[..size]);
        let mut at = 0;
        for (symbol, &p) in normalized.iter().enumerate().take(SYMBOLS) {
            let count = if p == -1 { 1 } else { p as u16 };
            self.start[symbol] = at;
            self.count[symbol] = count;
            at += count;
        }
        // `start` doubles as each group's fill cursor, then is restored.
        for cell in 0..size {
            let symbol = self.cells[cell] as usize;
            self.next[self.start[symbol] as usize] = (size + cell) as u16;
            self.start[symbol] += 1;
        }
        for symbol in 0..normalized.len().min(SYMBOLS) {
            self.start[symbol] -= self.count[symbol];
        }
    }

    /// What coding a symbol reads.
    #[inline(always)]
    pub fn stepper(&self) -> Stepper<'_> {
        Stepper { log: self.log, next: &self.next, start: &self.start, count: &self.count }
    }

    /// The state to start from when `symbol` is the last one coded ([`Stepper::first_state`]).
    #[inline(always)]
    pub fn first_state(&self, symbol: u8) -> State {
        self.stepper().first_state(symbol)
    }

    /// Codes `symbol` from `state`: writes the bits the decoder reads to return to `state`.
    #[inline(always)]
    pub fn encode(&self, w: &mut BitWriter, state: &mut State, symbol: u8) {
        let (value, bits) = self.step(state, symbol);
        w.add(value, bits);
    }

    /// Codes `symbol` from `state` without writing ([`Stepper::step`]).
    #[inline(always)]
    pub fn step(&self, state: &mut State, symbol: u8) -> (u32, u32) {
        self.stepper().step(state, symbol)
    }

    /// The field that gives the decoder `state` to start from.
    #[inline(always)]
    pub fn flush_field(&self, state: State) -> (u32, u32) {
        (state - (1 << self.log), self.log)
    }

    /// Encodes `symbols` (at least two) with two interleaved states, even positions in the
    /// first, as Huffman weight descriptions are; returns the stream's size.
    pub fn encode_interleaved(&self, symbols: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        let n = symbols.len();
        let mut w = BitWriter::new(out);
        let mut states = [0; 2];
        states[(n - 1) % 2] = self.first_state(symbols[n - 1]);
        states[(n - 2) % 2] = self.first_state(symbols[n - 2]);
        for i in (0..n - 2).rev() {
            self.encode(&mut w, &mut states[i % 2], symbols[i]);
        }
        for state in [states[1], states[0]] {
            let (value, bits) = self.flush_field(state);
            w.add(value, bits);
        }
        w.finish_backward()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zstd::fse::read_distribution;
    use crate::zstd::tables::{MATCH_LENGTH_DEFAULT, OFFSET_DEFAULT};

    #[test]
    fn log2_is_exact_on_powers_and_close_between() {
        assert_eq!([1, 2, 4, 1024, 1 << 31].map(log2_fixed), [0, 256, 512, 2560, 31 << 8]);
        assert_eq!(log2_fixed(3), 405); // 1.58496 * 256 = 405.75
        assert_eq!(log2_fixed(5), 594); // 2.32193 * 256 = 594.41
    }

    #[test]
    fn normalized_counts_sum_to_the_table_and_keep_rare_symbols() {
        let counts = [1000, 0, 1, 1, 30, 0, 7, 2];
        let mut normalized = [0i16; 8];
        normalize(&counts, counts.iter().sum(), 6, &mut normalized);
        assert_eq!(normalized, [58, 0, 1, 1, 2, 0, 1, 1]);
        assert_eq!(normalized.iter().map(|&p| p as i32).sum::<i32>(), 64);
        let mut many = [0i16; 53];
        normalize(&[1; 53], 53, 6, &mut many);
        assert_eq!(many.iter().map(|&p| p as i32).sum::<i32>(), 64);
        assert!(many.iter().all(|&p| p >= 1));
    }

    #[test]
    fn descriptions_read_back() {
        let mut out = [0u8; 96];
        let mut read = [0i16; 64];
        let mut skewed = [0i16; 30];
        (skewed[8], skewed[26], skewed[29]) = (250, 4, 2);
        for (normalized, log, max_symbol) in
            [(&MATCH_LENGTH_DEFAULT[..], 6, 52), (&OFFSET_DEFAULT[..], 5, 31), (&skewed[..], 8, 31)]
        {
            let len = write_description(normalized, log, &mut out).unwrap();
            let got = read_distribution(&out[..len], 9, max_symbol, &mut read).unwrap();
            assert_eq!((got.log, got.symbols, got.bytes), (log, normalized.len(), len));
            assert_eq!(&read[..normalized.len()], normalized);
        }
    }

    #[test]
    fn coded_steps_are_the_table_steps() {
        // Every state of every symbol, through one-word codings and straight from the table.
        let mut skewed = [1i16; 32];
        (skewed[0], skewed[5], skewed[31]) = (200, -1, 2);
        skewed[1..5].fill(0);
        for (normalized, log) in [(&MATCH_LENGTH_DEFAULT[..], 6), (&OFFSET_DEFAULT[..], 5), (&skewed[..], 8)] {
            let mut table =
                FseTable::<512, 53> { log: 0, next: [0; 512], start: [0; 53], count: [0; 53], cells: [0; 512] };
            table.build(normalized, log);
            let stepper = table.stepper();
            for symbol in (0..normalized.len()).filter(|&s| normalized[s] != 0) {
                let (count, start) = (table.count[symbol] as u32, table.start[symbol] as u32);
                assert_eq!(stepper.first_state(symbol as u8), table.next[start as usize] as u32);
                for from in 1 << log..2 << log {
                    let most = log - highbit(count);
                    let bits = most - (from < count << most) as u32;
                    let to = table.next[(start + (from >> bits) - count) as usize] as u32;
                    let mut state = from;
                    assert_eq!(stepper.step(&mut state, symbol as u8), (from & ((1 << bits) - 1), bits));
                    assert_eq!(state, to, "symbol {symbol} from {from}");
                }
            }
        }
    }
}

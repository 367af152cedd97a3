//! Finite State Entropy tables (RFC 8878 §4.1): reading a table description (the normalized
//! distribution), spreading its symbols over the table's cells, and building the decode table.
//!
//! A decode table cell is a `u32`: the symbol in bits 0–7, the bits to read for the next state in
//! bits 8–15, and the next state's baseline in bits 16–31.

use crate::Status;

/// Largest number of symbols of any FSE alphabet zstd uses (match-length codes).
pub const MAX_SYMBOLS: usize = 53;

/// The distance between consecutive cells a symbol is spread to, in a table of `size` cells.
#[inline(always)]
pub const fn spread_step(size: usize) -> usize {
    (size >> 1) + (size >> 3) + 3
}

/// A decode table cell: `symbol`, and the next state's bits and baseline.
#[inline(always)]
pub const fn cell(symbol: u8, bits: u32, baseline: u32) -> u32 {
    symbol as u32 | (bits << 8) | (baseline << 16)
}

/// The symbol of a decode table cell.
#[inline(always)]
pub const fn cell_symbol(cell: u32) -> u8 {
    cell as u8
}

/// The bits a decode table cell reads for the next state.
#[inline(always)]
pub const fn cell_bits(cell: u32) -> u32 {
    (cell >> 8) & 0xFF
}

/// The next state's baseline in a decode table cell.
#[inline(always)]
pub const fn cell_baseline(cell: u32) -> u32 {
    cell >> 16
}

/// The decode table cell of `symbol`'s occurrence whose state counter is `next` (the symbol's
/// probability plus the occurrence's rank among the symbol's cells in state order; 1 for a
/// "less than 1" symbol) in a table of `1 << log` cells.
#[inline(always)]
pub const fn cell_for(symbol: u8, next: u32, log: u32) -> u32 {
    let bits = log - (31 - next.leading_zeros());
    cell(symbol, bits, (next << bits) - (1 << log))
}

/// Checks that `normalized` (probabilities, -1 meaning "less than 1") sums to `1 << log`;
/// returns how many cells the "less than 1" symbols take at the table's end.
pub fn check_distribution(normalized: &[i16], log: u32) -> Result<usize, Status> {
    let (mut sum, mut low) = (0usize, 0usize);
    for &p in normalized {
        match p {
            -1 => low += 1,
            0.. => sum += p as usize,
            _ => return Err(Status::Malformed),
        }
    }
    if log > 15 || sum + low != 1 << log { Err(Status::Malformed) } else { Ok(low) }
}

/// Calls `put(cell, symbol)` for every cell of the table of `1 << log` cells for `normalized`,
/// in RFC 8878's spread order: "less than 1" symbols from the end down, then each symbol's cells
/// `spread_step` apart, skipping those.
fn spread(normalized: &[i16], log: u32, mut put: impl FnMut(usize, u8)) -> Result<(), Status> {
    let low = check_distribution(normalized, log)?;
    let size = 1usize << log;
    let high = size - low; // cells at or above `high` hold "less than 1" symbols
    let mut end = size;
    for (symbol, &p) in normalized.iter().enumerate() {
        if p == -1 {
            end -= 1;
            put(end, symbol as u8);
        }
    }
    let (step, mask) = (spread_step(size), size - 1);
    let mut position = 0;
    for (symbol, &p) in normalized.iter().enumerate() {
        for _ in 0..p.max(0) {
            put(position, symbol as u8);
            position = (position + step) & mask;
            while position >= high {
                position = (position + step) & mask;
            }
        }
    }
    if position != 0 { Err(Status::Malformed) } else { Ok(()) }
}

/// Writes the symbol of each of the `1 << table_log` cells of the FSE table for `normalized`
/// (-1 for "less than 1") into `out`, in RFC 8878's spread order; what the encoder and decoder
/// both build their tables from. `Malformed` unless the distribution sums to the table size and
/// `out` holds the table.
pub fn spread_symbols(normalized: &[i16], table_log: u32, out: &mut [u8]) -> Result<(), Status> {
    if out.len() < 1usize << table_log.min(15) {
        return Err(Status::Malformed);
    }
    spread(normalized, table_log, |at, symbol| {
        if let Some(cell) = out.get_mut(at) {
            *cell = symbol;
        }
    })
}

/// Builds the decode table of `1 << log` cells for `normalized` in `table`; `next` (at least one
/// entry per symbol) is scratch for the symbols' state counters.
pub fn build_decode_table(normalized: &[i16], log: u32, table: &mut [u32], next: &mut [u16]) -> Result<(), Status> {
    let size = 1usize << log.min(15);
    if table.len() < size || next.len() < normalized.len() {
        return Err(Status::Malformed);
    }
    spread(normalized, log, |at, symbol| {
        if let Some(cell) = table.get_mut(at) {
            *cell = symbol as u32;
        }
    })?;
    for (counter, &p) in next.iter_mut().zip(normalized) {
        *counter = if p == -1 { 1 } else { p as u16 };
    }
    for entry in &mut table[..size] {
        let symbol = cell_symbol(*entry);
        let counter = next.get_mut(symbol as usize).ok_or(Status::Malformed)?;
        *entry = cell_for(symbol, *counter as u32, log);
        *counter += 1;
    }
    Ok(())
}

/// The one-cell table of RLE mode: `symbol` every time, reading no bits.
pub fn rle_table(symbol: u8, table: &mut [u32]) {
    if let Some(first) = table.first_mut() {
        *first = cell(symbol, 0, 0);
    }
}

/// A table description read by [`read_distribution`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Distribution {
    /// The accuracy log: the table has `1 << log` cells.
    pub log: u32,
    /// Symbols listed (the last one with a nonzero probability is `symbols - 1`).
    pub symbols: usize,
    /// Bytes of input the description took.
    pub bytes: usize,
}

/// Reads an FSE table description (RFC 8878 §4.1.1) from the start of `input` into
/// `normalized` (zeroed past the symbols listed). `Malformed` if its accuracy log exceeds
/// `max_log`, it lists a symbol above `max_symbol`, its probabilities do not sum to the table
/// size, or it runs past `input`.
pub fn read_distribution(
    input: &[u8],
    max_log: u32,
    max_symbol: usize,
    normalized: &mut [i16],
) -> Result<Distribution, Status> {
    let first = *input.first().ok_or(Status::Malformed)?;
    let log = (first & 15) as u32 + super::tables::MIN_FSE_LOG;
    if log > max_log || normalized.len() <= max_symbol {
        return Err(Status::Malformed);
    }
    normalized.fill(0);
    let mut bit = 4usize; // position in `input`, in bits
    let mut remaining = (1i32 << log) + 1;
    let mut threshold = 1i32 << log;
    let mut width = log + 1; // bits of the widest value possible now
    let mut symbol = 0usize;
    let mut previous_zero = false;
    while remaining > 1 && symbol <= max_symbol {
        if previous_zero {
            // Two-bit repeat flags, each adding up to 3 more zero probabilities.
            loop {
                let repeat = forward_bits(input, bit, 2) as usize;
                bit += 2;
                symbol += repeat;
                if symbol > max_symbol + 1 {
                    return Err(Status::Malformed);
                }
                if repeat != 3 {
                    break;
                }
            }
            if symbol > max_symbol {
                break;
            }
        }
        let value = forward_bits(input, bit, width) as i32;
        let max = 2 * threshold - 1 - remaining;
        let count = if value & (threshold - 1) < max {
            bit += width as usize - 1;
            value & (threshold - 1)
        } else {
            bit += width as usize;
            let wide = value & (2 * threshold - 1);
            if wide >= threshold { wide - max } else { wide }
        };
        let probability = count - 1;
        remaining -= probability.abs();
        if let Some(slot) = normalized.get_mut(symbol) {
            *slot = probability as i16;
        }
        symbol += 1;
        previous_zero = probability == 0;
        while remaining < threshold {
            width -= 1;
            threshold >>= 1;
        }
    }
    let bytes = bit.div_ceil(8);
    if remaining != 1 || bytes > input.len() {
        return Err(Status::Malformed);
    }
    Ok(Distribution { log, symbols: symbol, bytes })
}

/// `count` (at most 25) bits of `input` from bit `bit` on, least significant first; zeros past
/// its end.
#[inline(always)]
fn forward_bits(input: &[u8], bit: usize, count: u32) -> u32 {
    let at = bit / 8;
    let mut word = 0u32;
    for i in 0..4 {
        word |= (*input.get(at + i).unwrap_or(&0) as u32) << (8 * i);
    }
    (word >> (bit % 8)) & ((1 << count) - 1)
}

#[cfg(test)]
mod tests {
    use super::super::tables::*;
    use super::*;

    fn table_of(normalized: &[i16], log: u32) -> [u32; 512] {
        let mut table = [0u32; 512];
        let mut next = [0u16; MAX_SYMBOLS];
        build_decode_table(normalized, log, &mut table, &mut next).unwrap();
        table
    }

    /// (symbol, bits, baseline) of each state, as RFC 8878's Appendix A lists them.
    fn rows(table: &[u32]) -> impl Iterator<Item = (u8, u32, u32)> + '_ {
        table.iter().map(|&c| (cell_symbol(c), cell_bits(c), cell_baseline(c)))
    }

    #[test]
    fn predefined_tables_match_appendix_a() {
        let ll = table_of(&LITERAL_LENGTH_DEFAULT, LITERAL_LENGTH_DEFAULT_LOG);
        let ll: [(u8, u32, u32); 64] = core::array::from_fn(|i| rows(&ll).nth(i).unwrap());
        assert_eq!(&ll[..4], &[(0, 4, 0), (0, 4, 16), (1, 5, 32), (3, 5, 0)]);
        assert_eq!(&ll[17..23], &[(25, 5, 32), (26, 5, 0), (27, 6, 0), (29, 6, 0), (31, 6, 0), (0, 4, 32)]);
        assert_eq!(&ll[38..44], &[(25, 4, 0), (25, 4, 16), (26, 5, 32), (28, 6, 0), (30, 6, 0), (0, 4, 48)]);
        assert_eq!(&ll[59..], &[(24, 5, 32), (35, 6, 0), (34, 6, 0), (33, 6, 0), (32, 6, 0)]);

        let ml = table_of(&MATCH_LENGTH_DEFAULT, MATCH_LENGTH_DEFAULT_LOG);
        let ml: [(u8, u32, u32); 64] = core::array::from_fn(|i| rows(&ml).nth(i).unwrap());
        assert_eq!(&ml[..4], &[(0, 6, 0), (1, 4, 0), (2, 5, 32), (3, 5, 0)]);
        assert_eq!(&ml[21..25], &[(45, 6, 0), (1, 4, 16), (2, 4, 0), (3, 5, 32)]);
        assert_eq!(&ml[42..47], &[(44, 6, 0), (1, 4, 32), (1, 4, 48), (2, 4, 16), (4, 5, 32)]);
        assert_eq!(
            &ml[56..],
            &[(29, 6, 0), (52, 6, 0), (51, 6, 0), (50, 6, 0), (49, 6, 0), (48, 6, 0), (47, 6, 0), (46, 6, 0)]
        );

        let of = table_of(&OFFSET_DEFAULT, OFFSET_DEFAULT_LOG);
        let of: [(u8, u32, u32); 32] = core::array::from_fn(|i| rows(&of).nth(i).unwrap());
        let symbols = [
            0, 6, 9, 15, 21, 3, 7, 12, 18, 23, 5, 8, 14, 20, 2, 7, 11, 17, 22, 4, 8, 13, 19, 1, 6, 10, 16, 28, 27, 26,
            25, 24,
        ];
        assert_eq!(of.map(|r| r.0), symbols);
        let bits = [5, 4, 5, 5, 5, 5, 4, 5, 5, 5, 5, 4, 5, 5, 5, 4, 5, 5, 5, 5, 4, 5, 5, 5, 4, 5, 5, 5, 5, 5, 5, 5];
        assert_eq!(of.map(|r| r.1), bits);
        assert_eq!((of[15].2, of[20].2, of[24].2, of[1].2), (16, 16, 16, 0));
    }

    #[test]
    fn spread_matches_the_decode_table_and_rejects_bad_sums() {
        let mut symbols = [0u8; 64];
        spread_symbols(&MATCH_LENGTH_DEFAULT, 6, &mut symbols).unwrap();
        let table = table_of(&MATCH_LENGTH_DEFAULT, 6);
        assert!(symbols.iter().zip(&table).all(|(&s, &c)| s == cell_symbol(c)));
        assert_eq!(spread_symbols(&[3, 2, 2], 3, &mut symbols), Err(Status::Malformed));
        assert_eq!(spread_symbols(&[3, -2, 2], 2, &mut symbols), Err(Status::Malformed));
        assert_eq!(spread_symbols(&[16, 16], 5, &mut symbols[..16]), Err(Status::Malformed));
        spread_symbols(&[32], 5, &mut symbols).unwrap();
        assert!(symbols[..32].iter().all(|&s| s == 0));
    }

    /// Writes a table description the way RFC 8878 §4.1.1 reads it (test-only encoder).
    fn describe(normalized: &[i16], log: u32) -> [u8; 64] {
        let mut out = [0u8; 64];
        let mut bit = 0;
        let mut put = |value: u32, count: u32| {
            for i in 0..count {
                out[(bit + i as usize) / 8] |= (((value >> i) & 1) as u8) << ((bit + i as usize) % 8);
            }
            bit += count as usize;
        };
        put(log - 5, 4);
        let mut remaining = (1i32 << log) + 1;
        let mut threshold = 1i32 << log;
        let mut width = log + 1;
        let mut symbol = 0;
        while remaining > 1 {
            let count = normalized[symbol] as i32 + 1;
            let max = 2 * threshold - 1 - remaining;
            if count < max {
                put(count as u32, width - 1);
            } else if count < threshold {
                put(count as u32, width);
            } else {
                put((count + max) as u32, width);
            }
            remaining -= (count - 1).abs();
            symbol += 1;
            if count == 1 {
                let mut zeros = normalized[symbol..].iter().take_while(|&&p| p == 0).count();
                symbol += zeros;
                while zeros >= 3 {
                    put(3, 2);
                    zeros -= 3;
                }
                put(zeros as u32, 2);
            }
            while remaining < threshold {
                width -= 1;
                threshold >>= 1;
            }
        }
        out
    }

    #[test]
    fn descriptions_round_trip() {
        let mut normalized = [0i16; 64];
        for (dist, log, max_symbol) in [
            (&LITERAL_LENGTH_DEFAULT[..], 6, 35),
            (&MATCH_LENGTH_DEFAULT[..], 6, 52),
            (&OFFSET_DEFAULT[..], 5, 31),
            (&[0, 0, 0, 0, 0, 0, 0, 0, 250, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 2][..], 8, 31),
            (&[-1, 0, 0, 0, 0, 0, 0, 500, 10, -1][..], 9, 35),
        ] {
            let bytes = describe(dist, log);
            let read = read_distribution(&bytes, 9, max_symbol, &mut normalized).unwrap();
            assert_eq!((read.log, read.symbols), (log, dist.len()));
            assert_eq!(&normalized[..dist.len()], dist);
            assert!(normalized[dist.len()..].iter().all(|&p| p == 0));
            // Cut short: the description runs past its input.
            assert_eq!(
                read_distribution(&bytes[..read.bytes - 1], 9, max_symbol, &mut normalized),
                Err(Status::Malformed)
            );
        }
        let bytes = describe(&MATCH_LENGTH_DEFAULT, 6);
        assert_eq!(read_distribution(&bytes, 5, 52, &mut normalized), Err(Status::Malformed), "log too large");
        assert_eq!(read_distribution(&bytes, 9, 40, &mut normalized), Err(Status::Malformed), "symbol too large");
        assert_eq!(read_distribution(&[], 9, 40, &mut normalized), Err(Status::Malformed));
        // Symbols beyond the alphabet before the probabilities reach the table size.
        assert_eq!(read_distribution(&[0; 8], 9, 20, &mut normalized), Err(Status::Malformed));
    }
}

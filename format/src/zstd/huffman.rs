//! Huffman-coded literals (RFC 8878 §4.2): the tree description (weights, direct or
//! FSE-compressed), the decode table built from the weights, and the decoding of one stream.
//!
//! A decode table cell is a `u16`: the symbol in the low byte, the code length in the high byte.
//! A table of log `L` has `1 << L` cells, indexed by the next `L` bits of the stream.

use super::HuffmanTables;
use super::bits::ReverseBits;
use super::fse::{self, cell_baseline, cell_bits, cell_symbol};
use super::tables::{MAX_HUFFMAN_BITS, MAX_HUFFMAN_WEIGHT, MAX_WEIGHT_LOG};
use crate::Status;

/// Cells of the largest Huffman decode table.
pub const HUFFMAN_CELLS: usize = 1 << MAX_HUFFMAN_BITS;
/// Cells of the largest FSE table for Huffman weights.
pub const WEIGHT_CELLS: usize = 1 << MAX_WEIGHT_LOG;
/// Most weights a description lists (the last symbol's weight is implied).
const MAX_LISTED_WEIGHTS: usize = 255;

/// Reads the Huffman tree description at the start of `input` into `tables.weights` (every
/// symbol's weight, the implied last one included); returns (symbols, bytes read).
pub fn read_weights(input: &[u8], tables: &mut HuffmanTables) -> Result<(usize, usize), Status> {
    let header = *input.first().ok_or(Status::Malformed)? as usize;
    let (listed, bytes) = if header >= 128 {
        let listed = header - 127;
        let bytes = listed.div_ceil(2);
        let packed = input.get(1..1 + bytes).ok_or(Status::Malformed)?;
        for (i, weight) in tables.weights.iter_mut().take(listed).enumerate() {
            let byte = packed.get(i / 2).copied().unwrap_or(0);
            *weight = if i % 2 == 0 { byte >> 4 } else { byte & 15 };
        }
        (listed, bytes)
    } else {
        let compressed = input.get(1..1 + header).ok_or(Status::Malformed)?;
        (fse_weights(compressed, tables)?, header)
    };
    let last = last_weight(tables.weights.get(..listed).ok_or(Status::Malformed)?)?;
    *tables.weights.get_mut(listed).ok_or(Status::Malformed)? = last;
    Ok((listed + 1, 1 + bytes))
}

/// Decodes FSE-compressed weights (a table description, then one bitstream read by two
/// interleaved states) into `tables.weights`; returns how many.
fn fse_weights(input: &[u8], tables: &mut HuffmanTables) -> Result<usize, Status> {
    let dist = fse::read_distribution(input, MAX_WEIGHT_LOG, MAX_HUFFMAN_WEIGHT as usize, &mut tables.normalized)?;
    let normalized = tables.normalized.get(..dist.symbols).ok_or(Status::Malformed)?;
    fse::build_decode_table(normalized, dist.log, &mut tables.weight_table, &mut tables.next)?;
    let mut bits = ReverseBits::new(input.get(dist.bytes..).ok_or(Status::Malformed)?)?;
    let mask = WEIGHT_CELLS - 1;
    let mut states = [bits.read(dist.log) as usize, bits.read(dist.log) as usize];
    let mut count = 0;
    // The states take turns; once a state's update reads past the stream's start, the other
    // state's symbol is the last.
    loop {
        for turn in 0..2 {
            if count > MAX_LISTED_WEIGHTS - 2 {
                return Err(Status::Malformed);
            }
            let cell = tables.weight_table[states[turn] & mask];
            tables.weights[count] = cell_symbol(cell);
            count += 1;
            states[turn] = (cell_baseline(cell) + bits.read(cell_bits(cell))) as usize;
            if bits.overflowed() {
                tables.weights[count] = cell_symbol(tables.weight_table[states[1 - turn] & mask]);
                return Ok(count + 1);
            }
        }
    }
}

/// The implied weight of the symbol after the `listed` ones: the one that completes the sum of
/// `2^(weight-1)` to a power of two. `Malformed` unless it exists and the code is at most
/// 11 bits long.
fn last_weight(listed: &[u8]) -> Result<u8, Status> {
    let mut total = 0u32;
    for &weight in listed {
        if weight > MAX_HUFFMAN_WEIGHT {
            return Err(Status::Malformed);
        }
        total += (1 << weight) >> 1;
    }
    if total == 0 {
        return Err(Status::Malformed);
    }
    let log = 32 - total.leading_zeros(); // the power of two above `total`
    let rest = (1u32 << log) - total;
    if log > MAX_HUFFMAN_BITS || !rest.is_power_of_two() {
        return Err(Status::Malformed);
    }
    Ok(rest.trailing_zeros() as u8 + 1)
}

/// The table log of the code with weights `weights` (all present symbols, as [`read_weights`]
/// leaves them): the power of two their `2^(weight-1)` sum to. `Malformed` if fewer than two
/// symbols have weight 1 (or an odd number do).
pub fn table_log(weights: &[u8]) -> Result<u32, Status> {
    let mut total = 0u32;
    let mut ones = 0;
    for &weight in weights {
        total += (1 << weight.min(MAX_HUFFMAN_WEIGHT)) >> 1;
        ones += (weight == 1) as u32;
    }
    if ones < 2 || ones % 2 != 0 || !total.is_power_of_two() {
        return Err(Status::Malformed);
    }
    Ok(total.trailing_zeros())
}

/// The cell of symbol `symbol` with weight `weight` (nonzero) in a table of log `log`.
#[inline(always)]
pub fn huffman_cell(symbol: usize, weight: u8, log: u32) -> u16 {
    symbol as u16 | (((log + 1).saturating_sub(weight as u32) as u16) << 8)
}

/// Builds the decode table for `weights` in `table`; returns its log. Codes go to symbols by
/// weight, lowest (longest code) first, then by symbol: each takes `2^(weight-1)` cells.
pub fn build_table(weights: &[u8], table: &mut [u16; HUFFMAN_CELLS]) -> Result<u32, Status> {
    let log = table_log(weights)?;
    let mut at = 0usize;
    for weight in 1..=MAX_HUFFMAN_WEIGHT {
        for (symbol, _) in weights.iter().enumerate().filter(|&(_, &w)| w == weight) {
            let cells = 1usize << (weight - 1);
            table.get_mut(at..at + cells).ok_or(Status::Malformed)?.fill(huffman_cell(symbol, weight, log));
            at += cells;
        }
    }
    Ok(log)
}

/// Reads a tree description from the start of `input` and builds `tables.cells` from it;
/// returns the bytes read.
pub fn read_table(input: &[u8], tables: &mut HuffmanTables) -> Result<usize, Status> {
    let (symbols, bytes) = read_weights(input, tables)?;
    let weights = tables.weights.get(..symbols).ok_or(Status::Malformed)?;
    tables.log = build_table(weights, &mut tables.cells)? as u8;
    Ok(bytes)
}

/// Decodes one Huffman stream into exactly `out.len()` symbols with the table of log `log`.
/// `Malformed` unless the stream holds exactly those symbols' bits.
pub fn decode_stream(table: &[u16; HUFFMAN_CELLS], log: u32, stream: &[u8], out: &mut [u8]) -> Result<(), Status> {
    let log = log.clamp(1, MAX_HUFFMAN_BITS);
    let mut bits = ReverseBits::new(stream)?;
    // A refill holds at least 32 bits: three codes of up to 10 bits, or two of 11.
    if 3 * log <= 32 {
        decode_symbols::<3>(table, log, &mut bits, out);
    } else {
        decode_symbols::<2>(table, log, &mut bits, out);
    }
    if bits.finished() { Ok(()) } else { Err(Status::Malformed) }
}

/// Decodes `out.len()` symbols, `N` to a refill (as many as 32 bits hold): groups of a fixed
/// size, which a compiler unrolls, then the few left.
#[inline(always)]
fn decode_symbols<const N: usize>(table: &[u16; HUFFMAN_CELLS], log: u32, bits: &mut ReverseBits, out: &mut [u8]) {
    let (groups, rest) = out.as_chunks_mut::<N>();
    for group in groups {
        bits.refill();
        for byte in group {
            *byte = decode_symbol(table, log, bits);
        }
    }
    bits.refill();
    for byte in rest {
        *byte = decode_symbol(table, log, bits);
    }
}

/// The next symbol (its code's bits must be held).
#[inline(always)]
fn decode_symbol(table: &[u16; HUFFMAN_CELLS], log: u32, bits: &mut ReverseBits) -> u8 {
    let cell = table[bits.peek_some(log) as usize & (HUFFMAN_CELLS - 1)];
    bits.consume((cell >> 8) as u32);
    cell as u8
}

/// The four streams' sizes from a 4-stream section's jump table, and the regenerated size of
/// each of the first three (the fourth takes the rest).
pub fn split_streams(streams: &[u8], regenerated: usize) -> Result<([usize; 4], usize), Status> {
    let jump = streams.get(..6).ok_or(Status::Malformed)?;
    let size = |i: usize| u16::from_le_bytes([jump[2 * i], jump[2 * i + 1]]) as usize;
    let first_three = size(0) + size(1) + size(2);
    let fourth = (streams.len() - 6).checked_sub(first_three).ok_or(Status::Malformed)?;
    let segment = regenerated.div_ceil(4);
    if regenerated < 3 * segment {
        return Err(Status::Malformed);
    }
    Ok(([size(0), size(1), size(2), fourth], segment))
}

/// Decodes the literals of a Huffman-coded section (1 or 4 `streams`, jump table included)
/// into `out` with the table in `tables`.
pub fn decode_literals(streams: &[u8], four: bool, tables: &HuffmanTables, out: &mut [u8]) -> Result<(), Status> {
    let log = tables.log as u32;
    if !four {
        return decode_stream(&tables.cells, log, streams, out);
    }
    let (sizes, segment) = split_streams(streams, out.len())?;
    let (mut input, mut output) = (streams.get(6..).unwrap_or(&[]), out);
    for (i, &size) in sizes.iter().enumerate() {
        let (stream, rest_in) = input.split_at_checked(size).ok_or(Status::Malformed)?;
        let take = if i == 3 { output.len() } else { segment };
        let (part, rest_out) = output.split_at_mut_checked(take).ok_or(Status::Malformed)?;
        decode_stream(&tables.cells, log, stream, part)?;
        (input, output) = (rest_in, rest_out);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_give_rfc_8878s_example_codes() {
        // Weights 4, 3, 2, 0, 1 listed, 1 implied: codes 1, 01, 001, -, 0000, 0001.
        let mut table = [0u16; HUFFMAN_CELLS];
        let weights = [4, 3, 2, 0, 1, last_weight(&[4, 3, 2, 0, 1]).unwrap()];
        assert_eq!(weights[5], 1);
        assert_eq!(build_table(&weights, &mut table), Ok(4));
        let expected: [(u8, u8); 16] = core::array::from_fn(|i| match i {
            0 => (4, 4),
            1 => (5, 4),
            2..4 => (2, 3),
            4..8 => (1, 2),
            _ => (0, 1),
        });
        let cells: [(u8, u8); 16] = core::array::from_fn(|i| (table[i] as u8, (table[i] >> 8) as u8));
        assert_eq!(cells, expected);
        // The RFC's example stream 0001_0000 00001_1_01 (bytes 0x10, 0x0D), read from its end:
        // 1, 01, then 0001 and 0000, which the codes above give to 5 and 4.
        let mut out = [0u8; 4];
        decode_stream(&table, 4, &[0x10, 0x0D], &mut out).unwrap();
        assert_eq!(out, [0, 1, 5, 4]);
        assert_eq!(decode_stream(&table, 4, &[0x10, 0x0D], &mut [0u8; 3]), Err(Status::Malformed));
        assert_eq!(decode_stream(&table, 4, &[0x10, 0x0D], &mut [0u8; 5]), Err(Status::Malformed));
    }

    #[test]
    fn streams_of_eleven_bit_codes_decode() {
        // Weights 11 down to 1, then 1 again: a table of log 11 whose last two symbols (10 and
        // 11) have 11-bit codes, cells 0 and 1. Streams of only those, of every length around a
        // few refills and at every alignment, read as written.
        let mut table = [0u16; HUFFMAN_CELLS];
        let weights = [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 1];
        assert_eq!(build_table(&weights, &mut table), Ok(11));
        for count in 1..40 {
            let symbols: [u8; 40] = core::array::from_fn(|i| 10 + (i * 7 % 3 == 1) as u8);
            let symbols = &symbols[..count];
            // Fields LSB-first, the first symbol decoded written last, then the end marker.
            let mut bytes = [0u8; 64];
            let mut at = 0;
            for &symbol in symbols.iter().rev() {
                for b in 0..11 {
                    bytes[(at + b) / 8] |= (((symbol as usize - 10) >> b & 1) as u8) << ((at + b) % 8);
                }
                at += 11;
            }
            bytes[at / 8] |= 1 << (at % 8);
            let len = at / 8 + 1;
            let mut words = [0u32; 18];
            for offset in 0..4 {
                let aligned: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
                aligned[offset..offset + len].copy_from_slice(&bytes[..len]);
                let mut out = [0u8; 40];
                let decoded = decode_stream(&table, 11, &aligned[offset..offset + len], &mut out[..count]);
                assert_eq!((decoded, &out[..count]), (Ok(()), symbols), "{count} codes at offset {offset}");
            }
        }
    }

    #[test]
    fn bad_weights_are_malformed() {
        assert_eq!(last_weight(&[0, 0]), Err(Status::Malformed));
        assert_eq!(last_weight(&[12, 1]), Err(Status::Malformed));
        assert_eq!(last_weight(&[2, 2, 1]), Err(Status::Malformed), "rest 3 is no power of two");
        assert_eq!(last_weight(&[11, 11]), Err(Status::Malformed), "a 12-bit code");
        assert_eq!(table_log(&[2, 2]), Err(Status::Malformed), "no weight 1");
        assert_eq!(table_log(&[1, 1, 2]), Ok(2));
    }
}

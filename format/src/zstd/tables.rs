//! The constant tables of RFC 8878: what each literal-length, match-length and offset code means,
//! the predefined FSE distributions, and the limits on table sizes. Shared by the decoder and the
//! encoder.

/// Literal-length codes 0..=35.
pub const LITERAL_LENGTH_CODES: usize = 36;
/// Match-length codes 0..=52.
pub const MATCH_LENGTH_CODES: usize = 53;
/// Offset codes 0..=31 (the reference decoder's limit; RFC 8878 asks for at least 0..=22).
pub const OFFSET_CODES: usize = 32;

/// Baseline of each literal-length code (§3.1.1.3.2.1.1).
pub const LITERAL_LENGTH_BASELINE: [u32; LITERAL_LENGTH_CODES] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024,
    2048, 4096, 8192, 16384, 32768, 65536,
];
/// Extra bits read after each literal-length code.
pub const LITERAL_LENGTH_EXTRA_BITS: [u8; LITERAL_LENGTH_CODES] =
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];

/// Baseline of each match-length code (§3.1.1.3.2.1.1): lengths start at 3.
pub const MATCH_LENGTH_BASELINE: [u32; MATCH_LENGTH_CODES] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
    33, 34, 35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027, 2051, 4099, 8195, 16387, 32771, 65539,
];
/// Extra bits read after each match-length code.
pub const MATCH_LENGTH_EXTRA_BITS: [u8; MATCH_LENGTH_CODES] = [
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2,
    3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
];

/// Largest accuracy log of a literal-length or match-length table.
pub const MAX_LENGTH_LOG: u32 = 9;
/// Largest accuracy log of an offset table.
pub const MAX_OFFSET_LOG: u32 = 8;
/// Largest accuracy log of the FSE table compressing Huffman weights.
pub const MAX_WEIGHT_LOG: u32 = 6;
/// Smallest accuracy log a table description can state (its low 4 bits plus 5).
pub const MIN_FSE_LOG: u32 = 5;
/// Longest Huffman code for literals (the Huffman table's log).
pub const MAX_HUFFMAN_BITS: u32 = 11;
/// Largest Huffman weight (a code of one bit under an 11-bit table).
pub const MAX_HUFFMAN_WEIGHT: u8 = 11;

/// Accuracy log of the predefined literal-length distribution.
pub const LITERAL_LENGTH_DEFAULT_LOG: u32 = 6;
/// The predefined literal-length distribution (§3.1.1.3.2.2.1).
pub const LITERAL_LENGTH_DEFAULT: [i16; LITERAL_LENGTH_CODES] =
    [4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1, -1, -1, -1, -1];

/// Accuracy log of the predefined match-length distribution.
pub const MATCH_LENGTH_DEFAULT_LOG: u32 = 6;
/// The predefined match-length distribution.
pub const MATCH_LENGTH_DEFAULT: [i16; MATCH_LENGTH_CODES] = [
    1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1,
];

/// Accuracy log of the predefined offset distribution.
pub const OFFSET_DEFAULT_LOG: u32 = 5;
/// The predefined offset distribution (codes 0..=28).
pub const OFFSET_DEFAULT: [i16; 29] =
    [1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1];

/// The literal-length code for length `len` (the encoder's direction of the tables above).
pub fn literal_length_code(len: u32) -> u8 {
    code_for(len, &LITERAL_LENGTH_BASELINE)
}

/// The match-length code for match length `len` (at least 3).
pub fn match_length_code(len: u32) -> u8 {
    code_for(len, &MATCH_LENGTH_BASELINE)
}

/// The offset code for `offset_value` (the offset plus 3, or a repeat code 1..=3): its top bit.
pub fn offset_code(offset_value: u32) -> u8 {
    (31 - offset_value.max(1).leading_zeros()) as u8
}

/// The last code whose baseline is at most `value` (the first code for smaller values).
fn code_for(value: u32, baselines: &[u32]) -> u8 {
    let below = baselines.partition_point(|&base| base <= value);
    below.saturating_sub(1) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baselines_and_extra_bits_tile_the_lengths() {
        for (baselines, extra, last_end) in [
            (&LITERAL_LENGTH_BASELINE[..], &LITERAL_LENGTH_EXTRA_BITS[..], 131_072u32),
            (&MATCH_LENGTH_BASELINE[..], &MATCH_LENGTH_EXTRA_BITS[..], 131_075),
        ] {
            for code in 0..baselines.len() {
                let end = baselines.get(code + 1).copied().unwrap_or(last_end);
                assert_eq!(baselines[code] + (1 << extra[code]), end, "code {code}");
            }
        }
    }

    #[test]
    fn codes_for_lengths_and_offsets() {
        assert_eq!(
            [0, 15, 16, 17, 18, 19, 23, 24, 63, 64, 65535, 65536, 131071].map(literal_length_code),
            [0, 15, 16, 16, 17, 17, 19, 20, 24, 25, 34, 35, 35]
        );
        assert_eq!(
            [3, 34, 35, 36, 37, 130, 131, 65539, 131074].map(match_length_code),
            [0, 31, 32, 32, 33, 42, 43, 52, 52]
        );
        assert_eq!([1, 2, 3, 4, 7, 8, u32::MAX].map(offset_code), [0, 1, 1, 2, 2, 3, 31]);
    }

    #[test]
    fn predefined_distributions_sum_to_their_table_size() {
        for (normalized, log) in [
            (&LITERAL_LENGTH_DEFAULT[..], LITERAL_LENGTH_DEFAULT_LOG),
            (&MATCH_LENGTH_DEFAULT[..], MATCH_LENGTH_DEFAULT_LOG),
            (&OFFSET_DEFAULT[..], OFFSET_DEFAULT_LOG),
        ] {
            let sum: i32 = normalized.iter().map(|&p| (p as i32).abs()).sum();
            assert_eq!(sum, 1 << log);
        }
    }
}

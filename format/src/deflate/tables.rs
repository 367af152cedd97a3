//! The constant tables of RFC 1951: length and distance codes, the precode order, the fixed code.

/// Base length of each length symbol 257..=285.
pub const LENGTH_BASE: [u16; 29] =
    [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
/// Extra bits of each length symbol.
pub const LENGTH_EXTRA: [u8; 29] =
    [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
/// Base distance of each distance symbol 0..=29.
pub const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
    8193, 12289, 16385, 24577,
];
/// Extra bits of each distance symbol.
pub const DIST_EXTRA: [u8; 30] =
    [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];
/// Deflate64 (GDeflate) gives distance symbols 30 and 31 bases 32769 and 49153 with 14 extra bits,
/// for a 64 KiB window, and symbol 285 length 3 plus 16 extra bits.
pub const DIST64_BASE: [u16; 2] = [32769, 49153];
/// Extra bits of Deflate64's distance symbols 30 and 31.
pub const DIST64_EXTRA: u8 = 14;
/// Extra bits of Deflate64's length symbol 285, whose base is 3.
pub const LENGTH64_EXTRA: u8 = 16;
/// The order in which a dynamic block lists the precode's code lengths.
pub const PRECODE_ORDER: [u8; 19] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
/// Extra bits after each precode symbol.
pub const PRECODE_EXTRA: [u8; 19] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3, 7];

/// Literal/length symbols a block may use (286 and 287 exist only in the fixed code, unused).
pub const NUM_LITLEN: usize = 286;
/// Distance symbols a block may use (30 and 31 likewise).
pub const NUM_DIST: usize = 30;
/// The end-of-block symbol.
pub const END_OF_BLOCK: usize = 256;

/// Shortest match, in bytes.
pub const MIN_MATCH: usize = 3;
/// Longest match, in bytes.
pub const MAX_MATCH: usize = 258;
/// Farthest match distance, in bytes (32 KiB).
pub const WINDOW: usize = 32768;

/// Code length of literal/length symbol `sym` in the fixed code.
pub const fn fixed_litlen_len(sym: usize) -> u8 {
    match sym {
        0..=143 => 8,
        144..=255 => 9,
        256..=279 => 7,
        _ => 8,
    }
}

/// The fixed code's literal/length code lengths, all 288 symbols.
pub const FIXED_LITLEN_LENS: [u8; 288] = {
    let mut lens = [0u8; 288];
    let mut i = 0;
    while i < 288 {
        lens[i] = fixed_litlen_len(i);
        i += 1;
    }
    lens
};
/// The fixed code's distance code lengths, all 32 symbols.
pub const FIXED_DIST_LENS: [u8; 32] = [5; 32];

/// Length symbol slot (symbol − 257) of a match length in 3..=258.
#[inline(always)]
pub fn length_slot(len: usize) -> usize {
    let l = len - MIN_MATCH;
    if l < 8 {
        l
    } else if len == MAX_MATCH {
        28
    } else {
        let log = 31 - (l as u32).leading_zeros() as usize;
        4 * (log - 1) + ((l >> (log - 2)) & 3)
    }
}

/// Length symbol slot of a match length in 3..=258 for a stream that is plain deflate or, with
/// `deflate64`, Deflate64, whose symbol 285 means something else: there 258 is slot 27 with all
/// five extra bits set (a valid deflate code too).
#[inline(always)]
pub fn length_slot_in(len: usize, deflate64: bool) -> usize {
    if deflate64 && len == MAX_MATCH { 27 } else { length_slot(len) }
}

/// Distance symbol of a distance in 1..=32768.
#[inline(always)]
pub fn dist_slot(dist: usize) -> usize {
    let d = dist - 1;
    if d < 4 {
        d
    } else {
        let log = 31 - (d as u32).leading_zeros() as usize;
        2 * log + ((d >> (log - 1)) & 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_the_base_tables() {
        for len in MIN_MATCH..=MAX_MATCH {
            let s = length_slot(len);
            let base = LENGTH_BASE[s] as usize;
            assert!(len >= base && len - base < 1 << LENGTH_EXTRA[s], "len {len}");
            assert!(s == 27 || s == 28 || len < LENGTH_BASE[s + 1] as usize, "len {len}");
        }
        for dist in 1..=WINDOW {
            let s = dist_slot(dist);
            let base = DIST_BASE[s] as usize;
            assert!(dist >= base && dist - base < 1 << DIST_EXTRA[s], "dist {dist}");
        }
    }
}

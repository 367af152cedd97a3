//! Huffman codes: length-limited code lengths from frequencies (compressor), canonical codewords,
//! and table-driven decoding (decompressor).

use super::tables::{
    DIST_BASE, DIST_EXTRA, DIST64_BASE, DIST64_EXTRA, END_OF_BLOCK, LENGTH_BASE, LENGTH_EXTRA, LENGTH64_EXTRA,
};
use crate::Status;

/// Longest code length in a literal/length or distance code.
pub const MAX_CODE_LEN: u32 = 15;
/// Longest code length in the precode (its lengths are sent in 3 bits).
pub const MAX_PRECODE_LEN: u32 = 7;

/// Work space for [`build_lengths`], sized for the largest alphabet.
#[repr(C)]
pub struct LengthWork {
    /// Used symbols' [`sort_key`]s, sorted.
    pub keys: [u32; 288],
    /// Moffat–Katajainen's in-place tree, then code lengths: a power of two long, so that its
    /// indices are masked rather than bounds-checked (the GPU's first lane runs it).
    tree: [u32; TREE],
}

/// Entries of [`LengthWork`]'s tree: the largest alphabet (288), rounded up to a power of two.
const TREE: usize = 512;

/// Fills `lens` with code lengths of at most `limit` bits for `freqs` (same length): shorter codes
/// for more frequent symbols, ties broken by symbol, so the result is deterministic. The code is
/// always complete: an alphabet with fewer than two used symbols gets two codes of length 1.
pub fn build_lengths(freqs: &[u32], limit: u32, lens: &mut [u8], work: &mut LengthWork) {
    let syms = freqs.len().min(lens.len()).min(work.keys.len());
    let mut n = 0;
    for sym in 0..syms {
        lens[sym] = 0;
        let key = sort_key(sym, freqs[sym]);
        if key != 0 {
            work.keys[n] = key;
            n += 1;
        }
    }
    heap_sort(&mut work.keys[..n]);
    lengths_of_sorted(n, limit, lens, work);
}

/// What [`build_lengths`] sorts symbol `sym` used `freq` times by: the frequency (capped) above
/// the symbol, so that no two are equal; 0 for an unused symbol.
#[inline(always)]
pub fn sort_key(sym: usize, freq: u32) -> u32 {
    if freq == 0 { 0 } else { (freq.min(1 << 22) << 9) | sym as u32 }
}

/// The rest of [`build_lengths`], once the `n` used symbols' keys are sorted in `work.keys`
/// and `lens` is zeroed.
pub fn lengths_of_sorted(n: usize, limit: u32, lens: &mut [u8], work: &mut LengthWork) {
    if n < 2 {
        let used = if n == 1 { (work.keys[0] & 511) as usize } else { 0 };
        lens[used] = 1;
        lens[if used == 0 { 1 } else { 0 }] = 1;
        return;
    }
    let keys = &work.keys[..n];
    for (t, k) in work.tree.iter_mut().zip(keys.iter()) {
        *t = k >> 9;
    }
    minimum_redundancy(&mut work.tree, n as u32);
    let tree = &work.tree[..n];
    // Clamp to `limit`, then trade codes until the lengths satisfy Kraft's equality again.
    let mut count = [0u32; MAX_CODE_LEN as usize + 1];
    for &depth in tree.iter() {
        count[depth.min(limit) as usize] += 1;
    }
    let limit = limit as usize;
    let mut kraft: u32 = (1..=limit).map(|len| count[len] << (limit - len)).sum();
    while kraft > 1 << limit {
        count[limit] -= 1;
        for len in (1..limit).rev() {
            if count[len] != 0 {
                count[len] -= 1;
                count[len + 1] += 2;
                break;
            }
        }
        kraft -= 1;
    }
    // The most frequent symbols (at the end of `keys`) take the shortest codes.
    let mut next = n;
    for (len, &c) in count.iter().enumerate().take(limit + 1).skip(1) {
        for _ in 0..c {
            next -= 1;
            lens[(keys[next] & 511) as usize] = len as u8;
        }
    }
}

/// Sorts ascending without recursion or allocation.
fn heap_sort(a: &mut [u32]) {
    let n = a.len();
    for start in (0..n / 2).rev() {
        sift_down(a, start, n);
    }
    for end in (1..n).rev() {
        a.swap(0, end);
        sift_down(a, 0, end);
    }
}

fn sift_down(a: &mut [u32], mut root: usize, end: usize) {
    loop {
        let mut child = 2 * root + 1;
        if child >= end {
            return;
        }
        if child + 1 < end && a[child + 1] > a[child] {
            child += 1;
        }
        if a[root] >= a[child] {
            return;
        }
        a.swap(root, child);
        root = child;
    }
}

/// Moffat and Katajainen's in-place minimum-redundancy code: `a[..n]` holds ascending
/// frequencies (at least two) and receives each symbol's code length (unbounded). Indices are
/// 32-bit and masked to the tree, which is longer than any alphabet.
fn minimum_redundancy(a: &mut [u32; TREE], n: u32) {
    let at = |i: u32| i as usize & (TREE - 1);
    // Phase 1: build the tree, internal nodes holding their weight, then their parent's index.
    a[at(0)] += a[at(1)];
    let (mut root, mut leaf) = (0, 2);
    for next in 1..n - 1 {
        if leaf >= n || a[at(root)] < a[at(leaf)] {
            a[at(next)] = a[at(root)];
            a[at(root)] = next;
            root += 1;
        } else {
            a[at(next)] = a[at(leaf)];
            leaf += 1;
        }
        if leaf >= n || (root < next && a[at(root)] < a[at(leaf)]) {
            a[at(next)] += a[at(root)];
            a[at(root)] = next;
            root += 1;
        } else {
            a[at(next)] += a[at(leaf)];
            leaf += 1;
        }
    }
    // Phase 2: internal node depths.
    a[at(n - 2)] = 0;
    for next in (0..n - 2).rev() {
        a[at(next)] = a[at(a[at(next)])] + 1;
    }
    // Phase 3: leaf depths, from the root's level down (`root` and `next` count down past 0).
    let (mut available, mut depth) = (1u32, 0u32);
    let (mut root, mut next) = (n - 1, n);
    while available > 0 {
        let mut used = 0;
        while root > 0 && a[at(root - 1)] == depth {
            used += 1;
            root -= 1;
        }
        while available > used {
            a[at(next - 1)] = depth;
            next -= 1;
            available -= 1;
        }
        available = 2 * used;
        depth += 1;
    }
}

/// Canonical codewords for `lens`, bit-reversed for LSB-first output (RFC 1951 §3.2.2).
pub fn canonical_codes(lens: &[u8], codes: &mut [u16]) {
    let mut count = [0u16; MAX_CODE_LEN as usize + 1];
    for &len in lens {
        count[(len as usize).min(MAX_CODE_LEN as usize)] += 1;
    }
    count[0] = 0;
    let mut next = [0u16; MAX_CODE_LEN as usize + 1];
    for len in 1..next.len() {
        next[len] = (next[len - 1] + count[len - 1]) << 1;
    }
    for (&len, code) in lens.iter().zip(codes.iter_mut()) {
        let len = (len as usize).min(MAX_CODE_LEN as usize);
        *code = if len == 0 { 0 } else { reverse(next[len] as u32, len as u32) as u16 };
        next[len] = next[len].wrapping_add(1);
    }
}

/// The low `len` bits of `code`, reversed.
#[inline(always)]
pub fn reverse(code: u32, len: u32) -> u32 {
    code.reverse_bits() >> (32 - len)
}

// Decode table entries (u32): bits 0–3 the code length to consume (for a sub-table pointer, the
// sub-table's index width), bits 4–6 the kind, bits 8–12 extra bits, bits 16–31 the value.
const KIND_SHIFT: u32 = 4;
/// A literal byte, or a precode symbol: the value.
pub const KIND_LITERAL: u32 = 0;
/// A length or distance: base value plus extra bits.
pub const KIND_BASE: u32 = 1;
/// The end-of-block symbol.
pub const KIND_END: u32 = 2;
/// A pointer into a sub-table for codes longer than the root.
const KIND_SUBTABLE: u32 = 3;
/// No symbol: an unused codeword or a symbol no stream may use.
pub const KIND_INVALID: u32 = 4;
/// The entry of an unused codeword.
pub const INVALID: u32 = KIND_INVALID << KIND_SHIFT;
/// Two literals in one root entry (the GPU's Deflate decoder adds these to a built table): both
/// codes' length to consume, the first code's length in the extra-bits field, the two bytes in
/// the value (the first in its low byte).
pub const KIND_PAIR: u32 = 5;

/// The pair entry of the literal entries `first` then `second`, whose codes' lengths add up to
/// at most 15.
#[inline(always)]
pub fn pair_entry(first: u32, second: u32) -> u32 {
    let (l1, l2) = (entry_len(first), entry_len(second));
    (entry_value(first) | entry_value(second) << 8) << 16 | l1 << 8 | KIND_PAIR << KIND_SHIFT | (l1 + l2)
}

/// Index bits of the literal/length decode table's root.
pub const LITLEN_ROOT: u32 = 10;
/// Index bits of the distance decode table's root.
pub const DIST_ROOT: u32 = 8;
/// Index bits of the precode's decode table, which its codes (at most 7 bits) never leave.
pub const PRECODE_ROOT: u32 = 7;
/// Entries of a literal/length decode table, root and sub-tables: enough for any valid code of
/// 288 symbols (zlib's `enough 288 10 15`).
pub const LITLEN_TABLE: usize = 1334;
/// Entries of a distance decode table, root and sub-tables: enough for any valid code of 32
/// symbols (zlib's `enough 32 8 15`).
pub const DIST_TABLE: usize = 402;
/// Entries of the precode's decode table: its root alone.
pub const PRECODE_TABLE: usize = 128;

/// Code length of an entry (bits to consume).
#[inline(always)]
pub fn entry_len(entry: u32) -> u32 {
    entry & 15
}
/// Kind of an entry.
#[inline(always)]
pub fn entry_kind(entry: u32) -> u32 {
    (entry >> KIND_SHIFT) & 7
}
/// Extra bits following the code.
#[inline(always)]
pub fn entry_extra(entry: u32) -> u32 {
    (entry >> 8) & 31
}
/// The entry's value: literal, base, or precode symbol.
#[inline(always)]
pub fn entry_value(entry: u32) -> u32 {
    entry >> 16
}

/// The leaf entry for the next bits `bits` (first bit in bit 0).
#[inline(always)]
pub fn lookup(table: &[u32], root: u32, bits: u64) -> u32 {
    lookup_with(|i| *table.get(i).unwrap_or(&INVALID), root, bits)
}

/// [`lookup`] reading the table's entries through `entry_at` (the GPU's decoders read them from
/// shared memory).
#[inline(always)]
pub fn lookup_with(entry_at: impl Fn(usize) -> u32, root: u32, bits: u64) -> u32 {
    let entry = entry_at(bits as usize & ((1 << root) - 1));
    if entry_kind(entry) != KIND_SUBTABLE {
        return entry;
    }
    entry_at(entry_value(entry) as usize + ((bits >> root) as usize & ((1 << entry_len(entry)) - 1)))
}

/// Which alphabet a table decodes, for the symbols' entries and the incomplete codes allowed.
/// `deflate64` gives length symbol 285 and distance symbols 30 and 31 their Deflate64 meanings.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Alphabet {
    /// The precode: the 19 code-length symbols.
    Precode,
    /// Literal/length symbols.
    LitLen {
        /// Whether symbol 285 is Deflate64's (3 plus 16 extra bits) rather than length 258.
        deflate64: bool,
    },
    /// Distance symbols.
    Dist {
        /// Whether symbols 30 and 31 are Deflate64's (a 64 KiB window) rather than invalid.
        deflate64: bool,
    },
}

impl Alphabet {
    /// The table entry of symbol `sym`, without its code length.
    #[inline(always)]
    pub fn entry(self, sym: usize) -> u32 {
        let base = |value: u16, extra: u8| ((value as u32) << 16) | ((extra as u32) << 8) | (KIND_BASE << KIND_SHIFT);
        match self {
            Self::Precode => (sym as u32) << 16,
            Self::LitLen { deflate64 } => match sym {
                0..=255 => (sym as u32) << 16,
                END_OF_BLOCK => KIND_END << KIND_SHIFT,
                285 if deflate64 => base(3, LENGTH64_EXTRA),
                257..=285 => base(LENGTH_BASE[sym - 257], LENGTH_EXTRA[sym - 257]),
                _ => INVALID,
            },
            Self::Dist { deflate64 } => match (DIST_BASE.get(sym), DIST_EXTRA.get(sym)) {
                (Some(&b), Some(&e)) => base(b, e),
                _ if deflate64 && sym < 32 => base(DIST64_BASE[sym & 1], DIST64_EXTRA),
                _ => INVALID,
            },
        }
    }
}

/// Codewords of each length (index 0: unused symbols).
pub type LengthCounts = [i32; MAX_CODE_LEN as usize + 1];

/// Checks the code whose length counts are `count`, over `symbols` symbols: over-subscribed
/// codes are `Malformed`, and so are incomplete ones except as zlib allows: a literal/length or
/// distance code with a single code of length 1, or a distance code with no codes at all.
/// Returns whether the code is incomplete (its unused root entries must read [`INVALID`]).
pub fn check_counts(count: &LengthCounts, symbols: usize, alphabet: Alphabet) -> Result<bool, Status> {
    let mut left: i32 = 1;
    for &c in &count[1..] {
        left = 2 * left - c;
        if left < 0 {
            return Err(Status::Malformed);
        }
    }
    if left == 0 {
        return Ok(false);
    }
    let used = symbols as i32 - count[0];
    let allowed = match alphabet {
        Alphabet::Precode => false,
        Alphabet::LitLen { .. } => used == 1 && count[1] == 1,
        Alphabet::Dist { .. } => used == 0 || (used == 1 && count[1] == 1),
    };
    if allowed { Ok(true) } else { Err(Status::Malformed) }
}

/// Index bits of the sub-table that opens with a codeword of `len` > `root` bits: as wide as
/// the codewords sharing its root prefix need (as zlib does), where `remaining(l)` codewords of
/// length `l` are not in a table yet (this one included).
#[inline(always)]
pub fn subtable_bits(root: u32, len: u32, remaining: impl Fn(u32) -> i32) -> u32 {
    let mut bits = len - root;
    let mut room: i32 = 1 << bits;
    while root + bits < MAX_CODE_LEN {
        room -= remaining(root + bits);
        if room <= 0 {
            break;
        }
        bits += 1;
        room <<= 1;
    }
    bits
}

/// The root entry pointing to a sub-table of `bits` index bits at `start`.
#[inline(always)]
pub fn subtable_pointer(start: usize, bits: u32) -> u32 {
    ((start as u32) << 16) | (KIND_SUBTABLE << KIND_SHIFT) | bits
}

/// Builds the decode table for code lengths `lens` (each ≤ 15) with a `root`-bit primary table
/// and sub-tables after it; codes [`check_counts`] refuses are `Malformed`, unused codewords of
/// the incomplete ones it accepts decode as invalid.
pub fn build_table(table: &mut [u32], root: u32, lens: &[u8], alphabet: Alphabet) -> Result<(), Status> {
    let mut count: LengthCounts = [0; MAX_CODE_LEN as usize + 1];
    for &len in lens {
        count[(len as usize).min(MAX_CODE_LEN as usize)] += 1;
    }
    let root_size = 1usize << root;
    if check_counts(&count, lens.len(), alphabet)? {
        table.get_mut(..root_size).ok_or(Status::Malformed)?.fill(INVALID);
    }
    // Canonical order: by length, then symbol. Codes longer than `root` go to sub-tables, one per
    // distinct root prefix.
    let mut code: u32 = 0;
    let mut next_free = root_size;
    let (mut sub_prefix, mut sub_start, mut sub_bits) = (usize::MAX, 0usize, 0u32);
    for len in 1..=MAX_CODE_LEN {
        for (sym, &l) in lens.iter().enumerate() {
            if l as u32 != len {
                continue;
            }
            let entry = alphabet.entry(sym) | len;
            let rev = reverse(code, len) as usize;
            if len <= root {
                let mut i = rev;
                while i < root_size {
                    *table.get_mut(i).ok_or(Status::Malformed)? = entry;
                    i += 1 << len;
                }
            } else {
                let prefix = rev & (root_size - 1);
                if prefix != sub_prefix {
                    sub_bits = subtable_bits(root, len, |l| count[l as usize]);
                    sub_prefix = prefix;
                    sub_start = next_free;
                    next_free += 1 << sub_bits;
                    if next_free > table.len() {
                        return Err(Status::Malformed);
                    }
                    table[prefix] = subtable_pointer(sub_start, sub_bits);
                }
                let mut i = rev >> root;
                while i < 1 << sub_bits {
                    *table.get_mut(sub_start + i).ok_or(Status::Malformed)? = entry;
                    i += 1 << (len - root);
                }
            }
            count[len as usize] -= 1;
            code += 1;
        }
        code <<= 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kraft(lens: &[u8]) -> u64 {
        lens.iter().filter(|&&l| l > 0).map(|&l| 1u64 << (15 - l)).sum()
    }

    #[test]
    fn lengths_are_complete_and_limited() {
        let mut work = LengthWork { keys: [0; 288], tree: [0; TREE] };
        // Fibonacci frequencies make an unbounded Huffman code very deep.
        let mut freqs = [0u32; 286];
        let (mut a, mut b) = (1u32, 1u32);
        for f in freqs.iter_mut().take(30) {
            *f = a;
            (a, b) = (b, a + b);
        }
        let mut lens = [0u8; 286];
        build_lengths(&freqs, 15, &mut lens, &mut work);
        assert_eq!(kraft(&lens), 1 << 15);
        assert!(lens.iter().all(|&l| l <= 15));
        assert!(lens[29] <= lens[0]);
        build_lengths(&freqs[..19], 7, &mut lens[..19], &mut work);
        assert_eq!(kraft(&lens[..19]), 1 << 15);
        assert!(lens[..19].iter().all(|&l| l <= 7));
        let mut one = [0u32; 30];
        one[7] = 5;
        build_lengths(&one, 15, &mut lens[..30], &mut work);
        assert_eq!((lens[7], lens[0], kraft(&lens[..30])), (1, 1, 1 << 15));
    }

    #[test]
    fn tables_decode_every_code_of_random_codes() {
        let mut work = LengthWork { keys: [0; 288], tree: [0; TREE] };
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..2000 {
            let n = [19, 30, 286][round % 3];
            let limit = [7, 15, 15, 14, 12, 11][round % 6].max(if n > 19 { 9 } else { 5 });
            let shift = next() % 24;
            let freqs: [u32; 286] =
                core::array::from_fn(|i| if i < n && next() % 3 != 0 { (next() >> shift) as u32 % 100_000 } else { 0 });
            let mut lens = [0u8; 286];
            build_lengths(&freqs[..n], limit, &mut lens[..n], &mut work);
            let mut codes = [0u16; 286];
            canonical_codes(&lens[..n], &mut codes[..n]);
            let (alphabet, root) = match n {
                19 => (Alphabet::Precode, PRECODE_ROOT),
                30 => (Alphabet::Dist { deflate64: false }, DIST_ROOT),
                _ => (Alphabet::LitLen { deflate64: round % 2 == 0 }, LITLEN_ROOT),
            };
            let mut table = [0u32; LITLEN_TABLE];
            build_table(&mut table, root, &lens[..n], alphabet).unwrap();
            for sym in 0..n {
                if lens[sym] == 0 {
                    continue;
                }
                let bits = codes[sym] as u64 | (next() << lens[sym]);
                let e = lookup(&table, root, bits);
                assert_eq!(entry_len(e), lens[sym] as u32, "round {round} sym {sym} lens {:?}", &lens[..n]);
                assert_eq!(e & !15, alphabet.entry(sym), "round {round} sym {sym}");
            }
        }
    }

    #[test]
    fn tables_decode_canonical_codes() {
        let lens: [u8; 288] = core::array::from_fn(|i| if i < 280 { 12 + (i % 4) as u8 } else { 0 });
        let mut lens = lens;
        // Make it complete: 280 codes of lengths 12..15 do not fill the space; use the fixed code.
        lens.copy_from_slice(&super::super::tables::FIXED_LITLEN_LENS);
        let mut codes = [0u16; 288];
        canonical_codes(&lens, &mut codes);
        let mut table = [0u32; LITLEN_TABLE];
        build_table(&mut table, 9, &lens, Alphabet::LitLen { deflate64: false }).unwrap();
        for sym in 0..286 {
            let e = lookup(&table, 9, codes[sym] as u64);
            assert_eq!(entry_len(e), lens[sym] as u32, "sym {sym}");
        }
        assert_eq!(entry_value(lookup(&table, 9, codes[65] as u64)), 65);
        assert_eq!(entry_kind(lookup(&table, 9, codes[286] as u64)), KIND_INVALID);
    }
}

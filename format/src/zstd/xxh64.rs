//! XXH64 (seed 0), the hash of Zstandard's content checksum: the frame stores its low 32 bits.
//!
//! [`Xxh64`] hashes a stream given in pieces. The parts are public for a GPU warp, whose lanes
//! 0..4 each keep one of the four accumulators over the 32-byte stripes ([`round`] on the stripe's
//! 8-byte word for that lane), then [`converge`] and [`finish`] in one lane.

const PRIME_1: u64 = 0x9E37_79B1_85EB_CA87;
const PRIME_2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const PRIME_3: u64 = 0x1656_67B1_9E37_79F9;
const PRIME_4: u64 = 0x85EB_CA77_C2B2_AE63;
const PRIME_5: u64 = 0x27D4_EB2F_1656_67C5;

/// Bytes of one stripe: a 64-bit word for each of the four accumulators.
pub const STRIPE: usize = 32;

/// The starting value of accumulator `lane` (0..4).
#[inline(always)]
pub const fn initial(lane: usize) -> u64 {
    match lane {
        0 => PRIME_1.wrapping_add(PRIME_2),
        1 => PRIME_2,
        2 => 0,
        _ => PRIME_1.wrapping_neg(),
    }
}

/// One accumulator's step over one 8-byte word of a stripe.
#[inline(always)]
pub const fn round(acc: u64, word: u64) -> u64 {
    acc.wrapping_add(word.wrapping_mul(PRIME_2)).rotate_left(31).wrapping_mul(PRIME_1)
}

/// The hash state after the stripes, from the four accumulators (for inputs of at least one
/// stripe).
pub const fn converge(acc: [u64; 4]) -> u64 {
    let mut h = acc[0]
        .rotate_left(1)
        .wrapping_add(acc[1].rotate_left(7))
        .wrapping_add(acc[2].rotate_left(12))
        .wrapping_add(acc[3].rotate_left(18));
    let mut i = 0;
    while i < 4 {
        h = (h ^ round(0, acc[i])).wrapping_mul(PRIME_1).wrapping_add(PRIME_4);
        i += 1;
    }
    h
}

/// The hash of `total` bytes: `h` is [`converge`]'s result (or unused for fewer than 32 bytes)
/// and `tail` the `total % 32` bytes after the last stripe.
pub fn finish(h: u64, tail: &[u8], total: u64) -> u64 {
    let mut h = if total >= STRIPE as u64 { h } else { PRIME_5 }.wrapping_add(total);
    let (words, rest) = tail.as_chunks::<8>();
    for &word in words {
        h ^= round(0, u64::from_le_bytes(word));
        h = h.rotate_left(27).wrapping_mul(PRIME_1).wrapping_add(PRIME_4);
    }
    let (halves, rest) = rest.as_chunks::<4>();
    for &half in halves {
        h ^= (u32::from_le_bytes(half) as u64).wrapping_mul(PRIME_1);
        h = h.rotate_left(23).wrapping_mul(PRIME_2).wrapping_add(PRIME_3);
    }
    for &byte in rest {
        h ^= (byte as u64).wrapping_mul(PRIME_5);
        h = h.rotate_left(11).wrapping_mul(PRIME_1);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(PRIME_2);
    h ^= h >> 29;
    h = h.wrapping_mul(PRIME_3);
    h ^ (h >> 32)
}

/// XXH64 of a stream fed in pieces of any size.
#[derive(Clone)]
pub struct Xxh64 {
    acc: [u64; 4],
    buffer: [u8; STRIPE],
    buffered: usize,
    total: u64,
}

impl Default for Xxh64 {
    fn default() -> Self {
        Self::new()
    }
}

impl Xxh64 {
    /// The state before any byte.
    pub const fn new() -> Self {
        Self { acc: [initial(0), initial(1), initial(2), initial(3)], buffer: [0; STRIPE], buffered: 0, total: 0 }
    }

    /// Hashes `data` after the bytes so far.
    pub fn update(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.buffered > 0 {
            let take = (STRIPE - self.buffered).min(data.len());
            let (head, rest) = data.split_at(take);
            if let Some(room) = self.buffer.get_mut(self.buffered..self.buffered + take) {
                room.copy_from_slice(head);
            }
            self.buffered += take;
            data = rest;
            if self.buffered < STRIPE {
                return;
            }
            let stripe = self.buffer;
            self.stripe(&stripe);
            self.buffered = 0;
        }
        let (stripes, rest) = data.as_chunks::<STRIPE>();
        for stripe in stripes {
            self.stripe(stripe);
        }
        self.buffer[..rest.len()].copy_from_slice(rest);
        self.buffered = rest.len();
    }

    /// One 32-byte stripe.
    #[inline(always)]
    fn stripe(&mut self, stripe: &[u8; STRIPE]) {
        for (acc, &word) in self.acc.iter_mut().zip(stripe.as_chunks::<8>().0) {
            *acc = round(*acc, u64::from_le_bytes(word));
        }
    }

    /// The hash of every byte given.
    pub fn finish(&self) -> u64 {
        finish(converge(self.acc), self.buffer.get(..self.buffered).unwrap_or(&[]), self.total)
    }
}

/// XXH64 of `data` with seed 0.
pub fn xxh64(data: &[u8]) -> u64 {
    let mut hasher = Xxh64::new();
    hasher.update(data);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_known_hashes() {
        assert_eq!(xxh64(b""), 0xEF46_DB37_51D8_E999);
        assert_eq!(xxh64(b"a"), 0xD24E_C4F1_A98C_6E5B);
        assert_eq!(xxh64(b"abc"), 0x44BC_2CF5_AD77_0999);
    }

    #[test]
    fn pieces_hash_as_the_whole() {
        let data: [u8; 300] = core::array::from_fn(|i| (i * 7 + i / 13) as u8);
        for len in [0, 1, 4, 7, 8, 31, 32, 33, 63, 64, 100, 300] {
            let whole = xxh64(&data[..len]);
            for piece in [1, 3, 5, 32, 40] {
                let mut hasher = Xxh64::new();
                for chunk in data[..len].chunks(piece) {
                    hasher.update(chunk);
                }
                assert_eq!(hasher.finish(), whole, "len {len} piece {piece}");
            }
        }
    }
}

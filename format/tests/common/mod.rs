//! Deterministic test data shared by the format crate's integration tests (each test file is its
//! own crate and uses part of it).
#![allow(dead_code)]

/// A xorshift64 generator.
pub struct XorShift(pub u64);

impl XorShift {
    /// The next 64 bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// `len` bytes, the low byte of each step.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// `n` pseudo-random bytes from `seed` (xorshift, bits 24..32 of each state).
pub fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    (0..n).map(|_| (rng.next() >> 24) as u8).collect()
}

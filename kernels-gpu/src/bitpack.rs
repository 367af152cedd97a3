//! Bit packing across a warp, shared by the integer codecs (Cascaded, Bitcomp): 64-bit shuffles
//! and scans, frames of reference reduced over the lanes, bits ORed into shared words, and an
//! input read as the aligned words that hold it.

use crate::lz77::scan;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::bitpack::Extremes;

/// `value` as held by lane `lane`.
#[inline(always)]
pub fn shuffle64<W: Warp>(warp: &W, value: u64, lane: u32) -> u64 {
    warp.shuffle(value as u32, lane) as u64 | (warp.shuffle((value >> 32) as u32, lane) as u64) << 32
}

/// `value` as held by lane `lane`, only its low 32 bits where `narrow` (one shuffle).
#[inline(always)]
pub fn shuffle_value<W: Warp>(warp: &W, value: u64, lane: u32, narrow: bool) -> u64 {
    if narrow { warp.shuffle(value as u32, lane) as u64 } else { shuffle64(warp, value, lane) }
}

/// Sum (wrapping) of `value` over lanes `0..=lane`; right in its low 32 bits only where
/// `narrow`.
#[inline(always)]
pub fn scan_add64<W: Warp>(warp: &W, value: u64, narrow: bool) -> u64 {
    scan(warp, value, |value, lane| shuffle_value(warp, value, lane, narrow), u64::wrapping_add)
}

/// Every lane's extremes merged, in every lane; `narrow` where every value (read signed too)
/// fits 32 bits, which halves the shuffles.
#[inline(always)]
pub fn reduce_extremes<W: Warp>(warp: &W, mut extremes: Extremes, narrow: bool) -> Extremes {
    if narrow {
        let clamp = |value: i64| value.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
        let (mut min, mut max) = (extremes.min.min(u32::MAX as u64) as u32, extremes.max as u32);
        let (mut min_signed, mut max_signed) = (clamp(extremes.min_signed), clamp(extremes.max_signed));
        let mut distance = WARP_SIZE / 2;
        while distance > 0 {
            let other = |value: u32| warp.shuffle(value, warp.lane() ^ distance);
            min = min.min(other(min));
            max = max.max(other(max));
            min_signed = min_signed.min(other(min_signed as u32) as i32);
            max_signed = max_signed.max(other(max_signed as u32) as i32);
            distance /= 2;
        }
        let min = if min == u32::MAX && max == 0 { u64::MAX } else { min as u64 }; // none
        return Extremes { min, max: max as u64, min_signed: min_signed as i64, max_signed: max_signed as i64 };
    }
    let mut distance = WARP_SIZE / 2;
    while distance > 0 {
        let other = |value: u64| shuffle64(warp, value, warp.lane() ^ distance);
        let theirs = Extremes {
            min: other(extremes.min),
            max: other(extremes.max),
            min_signed: other(extremes.min_signed as u64) as i64,
            max_signed: other(extremes.max_signed as u64) as i64,
        };
        extremes = extremes.merge(theirs);
        distance /= 2;
    }
    extremes
}

/// ORs the `bits` low bits of `value` into the words at `words` (in shared memory) at bit `bit`,
/// atomically (lanes share words).
///
/// # Safety
/// The words the bits reach must be shared memory, writable, and written by others only
/// atomically meanwhile.
#[inline(always)]
pub unsafe fn or_bits(words: *mut u32, bit: usize, bits: u32, value: u64) {
    let (word, shift) = (bit / 32, (bit % 32) as u32);
    let wide = (value as u128) << shift;
    for k in 0..(shift + bits).div_ceil(32) as usize {
        let part = (wide >> (32 * k)) as u32;
        if part != 0 {
            unsafe { crate::raw::shared_or(words.add(word + k), part) };
        }
    }
}

/// A chunk's input read as the aligned words that hold it: every load is an aligned `u32` inside
/// the input, or, for the words it only partly covers, its bytes (the others read as 0).
pub struct Words {
    base: *const u32,
    /// The input's bytes, as offsets from `base`.
    start: usize,
    end: usize,
}

impl Words {
    /// The words of the `len` bytes at `input`, which the reads below require to be readable.
    pub fn new(input: *const u8, len: usize) -> Self {
        let start = input as usize % 4;
        Self { base: input.wrapping_sub(start) as *const u32, start, end: start + len }
    }

    /// Word `k` from `base`.
    #[inline(always)]
    unsafe fn word(&self, k: usize) -> u32 {
        let at = 4 * k;
        if at >= self.start && at + 4 <= self.end {
            return unsafe { *self.base.add(k) };
        }
        let bytes = self.base as *const u8;
        (0..4)
            .filter(|b| (self.start..self.end).contains(&(at + b)))
            .fold(0, |word, b| word | (unsafe { *bytes.add(at + b) } as u32) << (8 * b))
    }

    /// The `bits` (at most 32) bits at bit `bit` of the input, least significant first; bits
    /// past its end read as 0. Two loads, where [`Words::bits`] takes three.
    ///
    /// # Safety
    /// The input given to [`Words::new`] must be readable, and not written meanwhile.
    #[inline(always)]
    pub unsafe fn bits32(&self, bit: usize, bits: u32) -> u32 {
        let bit = bit + 8 * self.start;
        let (word, shift) = (bit / 32, (bit % 32) as u32);
        let pair = unsafe { self.word(word) as u64 | (self.word(word + 1) as u64) << 32 };
        (pair >> shift) as u32 & if bits >= 32 { u32::MAX } else { (1 << bits) - 1 }
    }

    /// The `bits` (at most 64) bits at bit `bit` of the input, least significant first; bits
    /// past its end read as 0.
    ///
    /// # Safety
    /// The input given to [`Words::new`] must be readable, and not written meanwhile.
    #[inline(always)]
    pub unsafe fn bits(&self, bit: usize, bits: u32) -> u64 {
        if bits == 0 {
            return 0;
        }
        let bit = bit + 8 * self.start;
        let (word, shift) = (bit / 32, (bit % 32) as u32);
        let (low, high) =
            unsafe { (self.word(word) as u64 | (self.word(word + 1) as u64) << 32, self.word(word + 2) as u64) };
        let value = if shift == 0 { low } else { low >> shift | high << (64 - shift) };
        value & if bits == 64 { u64::MAX } else { (1 << bits) - 1 }
    }
}

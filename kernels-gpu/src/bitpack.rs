//! Bit packing across a warp, shared by the integer codecs (Cascaded, Bitcomp): 64-bit shuffles
//! and scans, frames of reference reduced over the lanes, and bits ORed into shared words.

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

/// Moves bits to and from the set bits of a mask (x86's `pdep` and `pext`, which the GPU lacks)
/// in `log2(bits)` steps of a shift and two masks each, the steps' masks computed once per mask
/// (the "compress" and "expand" networks of Warren's Hacker's Delight, 7-4 and 7-5). Over `u32`
/// and `u64`.
macro_rules! scatter {
    ($name:ident, $word:ty, $steps:literal) => {
        /// Scatters and gathers bits at the set bits of one mask: `pdep` and `pext` by a network of
        /// shifts and masks.
        #[derive(Clone, Copy)]
        pub struct $name {
            mask: $word,
            /// Step `i`'s bits, which move `2^i` places.
            moves: [$word; $steps],
        }

        impl $name {
            /// The network of `mask`.
            #[inline(always)]
            pub fn new(mask: $word) -> Self {
                let (mut rest, mut zeros_below) = (mask, !mask << 1);
                let mut moves = [0; $steps];
                // (Indexed by constants once unrolled: an iterated array would go to local memory.)
                for i in 0..$steps {
                    // Bit k of `parity`: whether an odd number of zeros of the mask lie below k
                    // (counted in the steps' units so far).
                    let mut parity = zeros_below;
                    for s in 0..$steps {
                        parity ^= parity << (1 << s);
                    }
                    moves[i] = parity & rest;
                    rest = (rest ^ moves[i]) | (moves[i] >> (1 << i));
                    zeros_below &= !parity;
                }
                Self { mask, moves }
            }

            /// The low bits of `value` at the mask's set bits, in order (`pdep`).
            #[inline(always)]
            pub fn scatter(&self, mut value: $word) -> $word {
                for i in (0..$steps).rev() {
                    let moving = self.moves[i];
                    value = (value & !moving) | ((value << (1 << i)) & moving);
                }
                value & self.mask
            }

            /// The bits of `value` at the mask's set bits, gathered in order into its low bits
            /// (`pext`).
            #[inline(always)]
            pub fn gather(&self, value: $word) -> $word {
                let mut value = value & self.mask;
                for i in 0..$steps {
                    let moved = value & self.moves[i];
                    value = (value ^ moved) | (moved >> (1 << i));
                }
                value
            }
        }
    };
}

scatter!(Scatter32, u32, 5);
scatter!(Scatter64, u64, 6);

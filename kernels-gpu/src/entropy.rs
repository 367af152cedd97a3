//! What the entropy coders share: counting symbols warp-wide ([`count`]) and writing an LSB-first
//! bit stream warp-wide ([`BitStream`]), each lane's bits after the lane before's.

use crate::lz77::scan_add;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;

/// Bits of a value (in the low bits) and their count.
pub type Field = (u32, u32);

/// A bin [`count`] skips.
pub const NO_BIN: u32 = u32::MAX;

/// Adds up, in `counts`, the `K` bins `bins(i)` names for each `i` in `0..n` ([`NO_BIN`]: none).
/// Each step the lanes naming the same bin agree (`match_any`), and the lowest of them adds
/// their number, so no two lanes add to one bin at once.
///
/// # Safety
/// `counts` must be writable for every bin named, by this warp alone.
pub unsafe fn count<W: Warp, const K: usize>(warp: &W, n: usize, bins: impl Fn(usize) -> [u32; K], counts: *mut u32) {
    const STRIDES: usize = 4;
    let lane = warp.lane();
    let mut base = 0;
    while base < n {
        // Several strides' bins first, so that their loads overlap; past the end, a bin no
        // other lane names.
        let at = |s: usize| base + s * WARP_SIZE as usize + lane as usize;
        let named: [[u32; K]; STRIDES] =
            core::array::from_fn(|s| if at(s) < n { bins(at(s)) } else { [u32::MAX - lane; K] });
        unrolled::<STRIDES>(|s| {
            for bin in named[s] {
                let peers = warp.match_any(bin);
                if at(s) < n && bin != NO_BIN && peers.trailing_zeros() == lane {
                    unsafe { *counts.add(bin as usize) += peers.count_ones() };
                }
                warp.sync();
            }
        });
        base += STRIDES * WARP_SIZE as usize;
    }
}

/// Calls `f` with 0, 1, .. `N - 1` (`N` at most 16), each call with an index the compiler sees
/// as a constant: arrays it indexes stay in registers, where a loop the compiler does not
/// unroll keeps them in local memory.
#[inline(always)]
pub fn unrolled<const N: usize>(mut f: impl FnMut(usize)) {
    const { assert!(N <= 16) };
    let mut call = |i: usize| {
        if i < N {
            f(i)
        }
    };
    call(0);
    call(1);
    call(2);
    call(3);
    call(4);
    call(5);
    call(6);
    call(7);
    call(8);
    call(9);
    call(10);
    call(11);
    call(12);
    call(13);
    call(14);
    call(15);
}

/// An LSB-first bit stream a warp writes: its output, the word (4 bytes of the stream) the
/// next bits go to, and the bits of that word already written (held in `carry` until the word
/// is whole). Every lane holds the same state.
pub struct BitStream {
    out: *mut u8,
    capacity: usize,
    word_base: usize,
    carry: u32,
    carry_bits: u32,
}

impl BitStream {
    /// An empty stream at `out`, which has room for `capacity` bytes; nothing is written past them.
    ///
    /// # Safety
    /// `out` must be writable for `capacity` bytes, by this warp alone, while the stream lives.
    pub unsafe fn new(out: *mut u8, capacity: usize) -> Self {
        Self { out, capacity, word_base: 0, carry: 0, carry_bits: 0 }
    }

    /// Bits written so far.
    pub fn bit_len(&self) -> usize {
        self.word_base * 32 + self.carry_bits as usize
    }

    /// Appends `n` (at most 32) bits in one lane, which then [`BitStream::share`]s the stream.
    pub fn put(&mut self, bits: u32, n: u32) {
        let all = self.carry as u64 | (bits as u64) << self.carry_bits;
        let total = self.carry_bits + n;
        if total >= 32 {
            self.put_word(0, all as u32);
            self.word_base += 1;
            (self.carry, self.carry_bits) = ((all >> 32) as u32, total - 32);
        } else {
            (self.carry, self.carry_bits) = (all as u32, total);
        }
    }

    /// Gives every lane the state of the stream in lane `from`.
    pub fn share<W: Warp>(&mut self, warp: &W, from: u32) {
        self.word_base = warp.shuffle(self.word_base as u32, from) as usize;
        self.carry = warp.shuffle(self.carry, from);
        self.carry_bits = warp.shuffle(self.carry_bits, from);
    }

    /// Appends the `len` bytes at `data` to a stream at a byte boundary, 32 bytes a step.
    ///
    /// # Safety
    /// `data` must be readable for `len` bytes.
    pub unsafe fn bytes<W: Warp>(&mut self, warp: &W, data: *const u8, len: usize) {
        let start = self.word_base * 4 + (self.carry_bits / 8) as usize;
        let (partial, out, capacity) = (self.carry.to_le_bytes(), self.out, self.capacity);
        warp.for_each_strided(start % 4 + len, |i| {
            let at = start - start % 4 + i;
            let byte = if i < start % 4 { partial[i] } else { unsafe { *data.add(i - start % 4) } };
            if at < capacity {
                unsafe { *out.add(at) = byte };
            }
        });
        warp.sync(); // the last word's bytes are visible to every lane
        let end = start + len;
        self.word_base = end / 4;
        self.carry_bits = (end % 4) as u32 * 8;
        self.carry = 0;
        for i in 0..end % 4 {
            let at = end - end % 4 + i;
            if at < self.capacity {
                self.carry |= (unsafe { *self.out.add(at) } as u32) << (8 * i);
            }
        }
    }

    /// Writes the lanes' fields (each lane's in order, lane after lane) after the stream so far.
    /// A word is written by one lane: by the last of the lanes whose bits start in it (the OR
    /// of theirs and the part of the lane before them that spills into it, by a segmented scan),
    /// or by the lane whose bits cover it alone. The last word, if partial, is carried.
    pub fn write<W: Warp, const N: usize>(&mut self, warp: &W, fields: [Field; N]) {
        let lane = warp.lane();
        let mut bits = 0u128;
        let mut total = 0;
        for (value, n) in fields {
            bits |= (value as u128) << total;
            total += n;
        }
        let at = self.carry_bits + scan_add(warp, total) - total;
        let end = warp.shuffle(at + total, WARP_SIZE - 1);
        let words = bits << (at % 32);
        let word = |k: u32| (words >> (32 * k)) as u32;
        let (first, last) = (at / 32, if total > 0 { (at + total - 1) / 32 } else { at / 32 });
        let before = lane.saturating_sub(1);
        let (first_before, last_before) = (warp.shuffle(first, before), warp.shuffle(last, before));
        let spill_before = warp.shuffle(word(last - first), before);
        let first_after = warp.shuffle(first, (lane + 1).min(WARP_SIZE - 1));
        let starts_group = lane == 0 || first_before != first;
        let mut value = word(0);
        if lane == 0 {
            value |= self.carry;
        } else if starts_group && last_before == first {
            value |= spill_before;
        }
        let mut distance = 1;
        while distance < WARP_SIZE {
            let (other, other_first) =
                (warp.shuffle(value, before_by(lane, distance)), warp.shuffle(first, before_by(lane, distance)));
            if lane >= distance && other_first == first {
                value |= other;
            }
            distance *= 2;
        }
        let ends_group = lane == WARP_SIZE - 1 || first_after != first;
        // The window's last word, if partial, is the next window's first.
        let partial = if end.is_multiple_of(32) { u32::MAX } else { end / 32 };
        let mut carried = 0;
        let mut put = |index: u32, value: u32| {
            if index == partial {
                carried = value;
            } else {
                self.put_word(index, value);
            }
        };
        if ends_group {
            put(first, value);
        }
        for k in 1..=last - first {
            if k < last - first || lane == WARP_SIZE - 1 || first_after != last {
                put(first + k, word(k));
            }
        }
        let holder = warp.ballot(carried != 0);
        self.carry = if holder == 0 { 0 } else { warp.shuffle(carried, holder.trailing_zeros()) };
        self.word_base += (end / 32) as usize;
        self.carry_bits = end % 32;
    }

    /// Writes word `index` of the window, what of it fits.
    fn put_word(&self, index: u32, value: u32) {
        let at = (self.word_base + index as usize) * 4;
        for (i, byte) in value.to_le_bytes().into_iter().enumerate() {
            if at + i < self.capacity {
                unsafe { *self.out.add(at + i) = byte };
            }
        }
    }

    /// Writes the carried bytes; returns the stream's size in bytes.
    pub fn finish<W: Warp>(&self, warp: &W) -> Result<usize, Status> {
        let len = self.word_base * 4 + self.carry_bits.div_ceil(8) as usize;
        if warp.lane() == 0 {
            for (i, byte) in self.carry.to_le_bytes().into_iter().enumerate().take(self.carry_bits.div_ceil(8) as usize)
            {
                let at = self.word_base * 4 + i;
                if at < self.capacity {
                    unsafe { *self.out.add(at) = byte };
                }
            }
        }
        if len > self.capacity { Err(Status::OutputTooSmall) } else { Ok(len) }
    }
}

/// The lane `distance` before `lane` (itself if there is none).
fn before_by(lane: u32, distance: u32) -> u32 {
    lane.checked_sub(distance).unwrap_or(lane)
}

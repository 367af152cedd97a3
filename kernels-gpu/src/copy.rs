//! Batched copies: packing compressed chunks into one container, and scattering decoded chunks
//! to their places in an array ([`StridedCopy`] boxes, a block's threads sharing each box).

use crate::raw::SharedBytes;
use crate::warp::Warp;
use ferrocomp_format::strided::StridedCopy;

/// Threads per block of the scatter kernel.
pub const SCATTER_THREADS: u32 = 256;

/// A 16-byte unit, loaded and stored whole.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Unit16([u32; 4]);

/// Moves unit `index` of `copy` (`unit` bytes: 1, 2, 4, 8 or 16) from `src` to `dst`.
///
/// # Safety
/// The box must lie inside both buffers (as `ferrocomp_format::strided::Plan` checks), its
/// offsets aligned to `unit`, and no other thread may write the unit's destination bytes.
#[inline(always)]
pub unsafe fn copy_unit(copy: &StridedCopy, unit: u64, src: *const u8, dst: *mut u8, index: u64) {
    let (from, to) = copy.offsets_of(index);
    let (from, to) = unsafe { (src.add(from as usize), dst.add(to as usize)) };
    unsafe {
        match unit {
            16 => *(to as *mut Unit16) = *(from as *const Unit16),
            8 => *(to as *mut u64) = *(from as *const u64),
            4 => *(to as *mut u32) = *(from as *const u32),
            2 => *(to as *mut u16) = *(from as *const u16),
            _ => *to = *from,
        }
    }
}

/// Writes `words` (`N` of 1, 2 or 4) at `at`, aligned to their size, in one store.
///
/// # Safety
/// The `4 * N` bytes at `at` must be writable.
#[inline(always)]
pub unsafe fn store_aligned<const N: usize>(at: *mut u8, words: [u32; N]) {
    unsafe {
        match N {
            1 => (at as *mut u32).write(words[0]),
            2 => (at as *mut u64).write((words[1] as u64) << 32 | words[0] as u64),
            _ => (at as *mut Unit16).write(Unit16(core::array::from_fn(|k| words[k]))),
        }
    }
}

/// Writes `words` (`N` of 1, 2 or 4) at `at`, little-endian: as [`store_aligned`] where `at` is
/// aligned to their size, else a word at a time where it is aligned to 4, else a byte at a time.
///
/// # Safety
/// The `4 * N` bytes at `at` must be writable.
#[inline(always)]
pub unsafe fn store_words<const N: usize>(at: *mut u8, words: [u32; N]) {
    let skew = at as usize % (4 * N);
    unsafe {
        if skew == 0 {
            store_aligned(at, words);
        } else if skew.is_multiple_of(4) {
            words.iter().enumerate().for_each(|(k, &word)| (at as *mut u32).add(k).write(word));
        } else {
            words.iter().flat_map(|word| word.to_le_bytes()).enumerate().for_each(|(k, byte)| at.add(k).write(byte));
        }
    }
}

/// Copies `n` bytes from `src` to `dst`, across the warp (as [`copy_spread`]).
///
/// # Safety
/// `src` must be readable and `dst` writable for `n` bytes, and not overlap.
pub unsafe fn copy_chunk<W: Warp>(warp: &W, src: *const u8, dst: *mut u8, n: usize) {
    unsafe { copy_spread(warp.lane() as usize, crate::warp::WARP_SIZE as usize, src, dst, n) };
}

/// Copies `n` bytes from `src` to `dst`, thread `thread` of `threads` its share, as [`spread`]
/// does: 16 bytes a thread a step, stored whole where `dst` is aligned to 16, built from the
/// aligned words of `src` they span; the first and last few bytes one at a time. Every read is
/// inside the `n` bytes.
///
/// # Safety
/// `src` must be readable and `dst` writable for `n` bytes, and not overlap; the threads' shares
/// are theirs alone.
#[inline(always)]
pub unsafe fn copy_spread(thread: usize, threads: usize, src: *const u8, dst: *mut u8, n: usize) {
    unsafe { spread::<1>(thread, threads, &Memory(src as *mut u8), &Memory(dst), n) };
}

/// Bytes a [`spread`] copy reads: one at a time, or as the aligned words that hold them.
pub trait Source {
    /// Where byte 0 lies in word 0 (0 to 3).
    fn skew(&self) -> usize;
    /// Byte `i`.
    ///
    /// # Safety
    /// It must be readable.
    unsafe fn byte(&self, i: usize) -> u8;
    /// Aligned word `k`: bytes `4k - skew .. 4k - skew + 4`.
    ///
    /// # Safety
    /// All of its bytes must be readable.
    unsafe fn word(&self, k: usize) -> u32;
}

/// Bytes a [`spread`] copy writes: one at a time, or 16 at once where aligned to 16.
pub trait Sink {
    /// Where byte 0 lies in a 16-byte unit (0 to 15).
    fn unit_skew(&self) -> usize;
    /// Writes byte `i`.
    ///
    /// # Safety
    /// It must be writable.
    unsafe fn set_byte(&self, i: usize, value: u8);
    /// Writes bytes `at .. at + 16` (`at + unit_skew` a multiple of 16) as four little-endian words.
    ///
    /// # Safety
    /// They must be writable.
    unsafe fn set_unit(&self, at: usize, words: [u32; 4]);
}

/// Memory at a pointer, as a [`Source`] and a [`Sink`].
pub struct Memory(pub *mut u8);

impl Source for Memory {
    #[inline(always)]
    fn skew(&self) -> usize {
        self.0 as usize % 4
    }

    #[inline(always)]
    unsafe fn byte(&self, i: usize) -> u8 {
        unsafe { *self.0.add(i) }
    }

    #[inline(always)]
    unsafe fn word(&self, k: usize) -> u32 {
        unsafe { (self.0.wrapping_sub(self.skew()) as *const u32).add(k).read() }
    }
}

impl Sink for Memory {
    #[inline(always)]
    fn unit_skew(&self) -> usize {
        self.0 as usize % 16
    }

    #[inline(always)]
    unsafe fn set_byte(&self, i: usize, value: u8) {
        unsafe { *self.0.add(i) = value };
    }

    #[inline(always)]
    unsafe fn set_unit(&self, at: usize, words: [u32; 4]) {
        unsafe { (self.0.add(at) as *mut Unit16).write(Unit16(words)) };
    }
}

/// Shared memory from an address aligned to 16, as a [`Source`] and a [`Sink`].
impl Source for SharedBytes {
    #[inline(always)]
    fn skew(&self) -> usize {
        0
    }

    #[inline(always)]
    unsafe fn byte(&self, i: usize) -> u8 {
        unsafe { self.u8(i as u32) }
    }

    #[inline(always)]
    unsafe fn word(&self, k: usize) -> u32 {
        unsafe { self.u32(4 * k as u32) }
    }
}

impl Sink for SharedBytes {
    #[inline(always)]
    fn unit_skew(&self) -> usize {
        0
    }

    #[inline(always)]
    unsafe fn set_byte(&self, i: usize, value: u8) {
        unsafe { self.set_u8(i as u32, value) };
    }

    #[inline(always)]
    unsafe fn set_unit(&self, at: usize, words: [u32; 4]) {
        unsafe { self.set_u32x4(at as u32, words) };
    }
}

/// Copies `n` bytes from `src` to `dst`, thread `thread` of `threads` its share: 16 bytes a
/// thread a step, each stored whole where `dst` is aligned to 16 and built from the aligned
/// words of `src` they span (shifted together, whatever the two alignments); the first and last
/// few bytes one at a time. Every read is inside the `n` bytes. A thread reads `IN_FLIGHT` units
/// (1, 2 or 4) before it writes them: as far as the compiler knows a store may alias the next
/// unit's loads, so that a step waits out its loads once (more in flight cost registers).
///
/// # Safety
/// `src` must be readable and `dst` writable for `n` bytes; the threads' shares are theirs alone.
#[inline(always)]
pub unsafe fn spread<const IN_FLIGHT: usize>(
    thread: usize,
    threads: usize,
    src: &impl Source,
    dst: &impl Sink,
    n: usize,
) {
    const { assert!(matches!(IN_FLIGHT, 1 | 2 | 4)) };
    // The units start past `src`'s first aligned word and end before its last: `start` is
    // where `dst` is aligned to 16, at least 4 in; they end at least 3 before the end.
    let start = 4 + (16 - (dst.unit_skew() + 4) % 16) % 16;
    let units = n.saturating_sub(start + 3) / 16;
    let end = start + 16 * units;
    let bytes = |from: usize, to: usize| {
        for i in crate::block::strided(from + thread..to, threads) {
            unsafe { dst.set_byte(i, src.byte(i)) };
        }
    };
    if units == 0 {
        return bytes(0, n);
    }
    bytes(0, start);
    // Byte `shift` of word `first` is the first unit's first.
    let (first, shift) = ((src.skew() + start) / 4, (src.skew() + start) % 4);
    let unit_words = |unit: usize| {
        let word = |k: usize| unsafe { src.word(first + 4 * unit + k) };
        if shift == 0 {
            [word(0), word(1), word(2), word(3)]
        } else {
            let funnel = |k: usize| ((word(k + 1) as u64) << 32 | word(k) as u64) >> (8 * shift);
            [funnel(0) as u32, funnel(1) as u32, funnel(2) as u32, funnel(3) as u32]
        }
    };
    // Units `unit + k * threads`, past the last the step's first again (read, not written).
    let load = |unit: usize, k: usize| unit_words(if unit + k * threads < units { unit + k * threads } else { unit });
    let store = |unit: usize, k: usize, words| {
        if unit + k * threads < units {
            unsafe { dst.set_unit(start + 16 * (unit + k * threads), words) };
        }
    };
    // The units in flight named, not an array iterated (which ptxas may leave in local memory,
    // where storing the loads waits for them).
    for unit in crate::block::strided(thread..units, IN_FLIGHT * threads) {
        match IN_FLIGHT {
            1 => store(unit, 0, load(unit, 0)),
            2 => {
                let (a, b) = (load(unit, 0), load(unit, 1));
                store(unit, 0, a);
                store(unit, 1, b);
            }
            _ => {
                let (a, b, c, d) = (load(unit, 0), load(unit, 1), load(unit, 2), load(unit, 3));
                store(unit, 0, a);
                store(unit, 1, b);
                store(unit, 2, c);
                store(unit, 3, d);
            }
        }
    }
    bytes(end, n);
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use crate::gpu::HardwareWarp;

    /// Copies chunk `i` of `count`: `sizes[i]` bytes from `srcs[i]` to `dsts[i]`. One warp per chunk.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn gather(
        srcs: *const *const u8,
        dsts: *const *mut u8,
        sizes: *const usize,
        count: usize,
    ) {
        let chunk = HardwareWarp::index_in_grid() as usize;
        if chunk < count {
            unsafe { copy_chunk(&HardwareWarp, *srcs.add(chunk), *dsts.add(chunk), *sizes.add(chunk)) };
        }
    }

    /// Copies box `b` of `count` with `blocks_per_copy` blocks of [`SCATTER_THREADS`] (block `i`
    /// takes box `i / blocks_per_copy`), each thread a unit of `unit` bytes at a time.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn scatter(
        src: *const u8,
        dst: *mut u8,
        copies: *const StridedCopy,
        count: usize,
        unit: u64,
        blocks_per_copy: u32,
    ) {
        use crate::gpu::thread::{block_dim_x, block_idx_x, thread_idx_x};
        let block = block_idx_x();
        let box_index = (block / blocks_per_copy) as usize;
        if box_index >= count {
            return;
        }
        let copy = unsafe { &*copies.add(box_index) };
        let units = copy.units();
        let step = (blocks_per_copy * block_dim_x()) as u64;
        let mut index = ((block % blocks_per_copy) * block_dim_x() + thread_idx_x()) as u64;
        while index < units {
            unsafe { copy_unit(copy, unit, src, dst, index) };
            index += step;
        }
    }
}

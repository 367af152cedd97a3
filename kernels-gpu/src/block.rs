//! The block (CTA) operations kernel bodies that spread one chunk over many warps are written
//! against: the block-wide counterpart of [`crate::warp::Warp`].

use crate::lz77::scan_add;
use crate::raw::SharedBytes;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;

/// The threads of one block executing a kernel together. Every thread must reach each barrier.
pub trait Block {
    /// This thread's index in the block.
    fn thread(&self) -> u32;
    /// Threads in the block (a multiple of 32).
    fn threads(&self) -> u32;
    /// Waits for every thread (`__syncthreads`); shared memory written before it is visible to
    /// every thread after it.
    fn sync_threads(&self);
    /// Lets the block's other warps run while this thread waits on a value another warp
    /// stores (a spin-wait's step between two polls).
    fn pause(&self);
    /// Loads the word at `at` in shared memory, acquiring what the thread that stored it with
    /// [`Block::store_release`] wrote before.
    ///
    /// # Safety
    /// `at` must be valid shared memory of the block.
    unsafe fn load_acquire(&self, at: *const u32) -> u32;
    /// Stores `value` at `at` in shared memory, releasing what this thread wrote before to
    /// whichever thread loads it with [`Block::load_acquire`].
    ///
    /// # Safety
    /// As [`Block::load_acquire`].
    unsafe fn store_release(&self, at: *mut u32, value: u32);
    /// Adds `value` to the word at `at` in shared memory atomically; the word before.
    ///
    /// # Safety
    /// As [`Block::load_acquire`].
    unsafe fn fetch_add(&self, at: *mut u32, value: u32) -> u32;

    /// Waits until `ready()` holds in every lane of `warp` (on values other warps store with
    /// [`Block::store_release`]), polling with [`Block::load_acquire`] in `ready`.
    #[inline(always)]
    fn wait_until<W: Warp>(&self, warp: &W, ready: impl Fn() -> bool) {
        while warp.ballot(!ready()) != 0 {
            self.pause();
        }
    }

    /// Exclusive prefix sum of `value` over the threads in index order, and the total: each
    /// warp's by shuffles (`warp` is this thread's), then the warps' totals by the first warp,
    /// through `scratch` (shared memory for 65 `u32`s, free before and after).
    ///
    /// # Safety
    /// `scratch` must be that shared memory.
    #[inline(always)]
    unsafe fn scan_add<W: Warp>(&self, warp: &W, value: u32, scratch: *mut u32) -> (u32, u32) {
        let (lane, index, warps) = (warp.lane(), self.thread() / WARP_SIZE, self.threads() / WARP_SIZE);
        let words = unsafe { SharedBytes::new(scratch as *const u8) };
        let sum = scan_add(warp, value);
        if lane == WARP_SIZE - 1 {
            unsafe { words.set_u32(4 * index, sum) };
        }
        self.sync_threads();
        if index == 0 {
            let total = if lane < warps { unsafe { words.u32(4 * lane) } } else { 0 };
            let running = scan_add(warp, total);
            unsafe { words.set_u32(4 * (WARP_SIZE + lane), running - total) };
            if lane == WARP_SIZE - 1 {
                unsafe { words.set_u32(8 * WARP_SIZE, running) };
            }
        }
        self.sync_threads();
        let (below, total) = unsafe { (words.u32(4 * (WARP_SIZE + index)), words.u32(8 * WARP_SIZE)) };
        self.sync_threads();
        (below + sum - value, total)
    }
}

/// `range.start`, then every `step` on, below `range.end`: a loop over a thread's share of a range
/// without the division by `step` with which `step_by` counts its items up front (a step known
/// only at run time, such as the block's threads, made that a dozen instructions, or a call). A
/// warp's lanes over `0..n` have [`Warp::for_each_strided`], which counts in 32 bits.
#[inline(always)]
pub fn strided(range: core::ops::Range<usize>, step: usize) -> impl Iterator<Item = usize> {
    let mut next = range.start;
    core::iter::from_fn(move || {
        let item = next;
        next += step;
        (item < range.end).then_some(item)
    })
}

/// Bytes of the parts `parts`, part `p` taking `size(p)`, summed by the warp's lanes; in every lane.
#[inline(always)]
pub fn parts_len<W: Warp>(warp: &W, parts: core::ops::Range<usize>, size: impl Fn(usize) -> usize) -> usize {
    let mut total = 0;
    for p in (parts.start + warp.lane() as usize..parts.end).step_by(WARP_SIZE as usize) {
        total += size(p);
    }
    warp.reduce_add(total as u32) as usize
}

/// Shared words [`decode_parts`] works in for a block of `threads` threads: the block scan's
/// scratch, where each of a round's parts starts and where the last ends, the next part to hand
/// out, and a failure a warp.
pub const fn decode_parts_words(threads: u32) -> usize {
    SCAN_WORDS + threads as usize + 1 + 1 + (threads / WARP_SIZE) as usize
}

/// Shared words of [`Block::scan_add`]'s scratch.
const SCAN_WORDS: usize = 2 * WARP_SIZE as usize + 1;

/// Decodes a chunk's `parts` (coded one after another from byte `first_at`, part `p` taking
/// `size(p)` bytes, all of them within 32 bits: counted in 32 bits, half the registers) with the
/// warps of `block`, by `decode(p, at, size)` with `at` where part `p`
/// starts. The parts are placed a round of one a thread at a time (a size a thread and a block
/// scan) and handed out in order to whichever warp is free, so that a warp held up by a slow part
/// does not leave the others waiting at the round's end. A warp stops at its first failure.
/// Returns where the last part ends, or the failure of the first part that failed (the one a
/// decoder taking the parts in turn meets: the parts are handed out in order), in every thread.
/// `scratch` is shared memory for [`decode_parts_words`] words; the block is done with it, and
/// with whatever `decode` read, when this returns.
///
/// # Safety
/// `scratch` must be that shared memory, the block's alone; every thread of the block calls this.
#[inline(always)]
pub unsafe fn decode_parts<B: Block, W: Warp>(
    block: &B,
    warp: &W,
    parts: u32,
    first_at: u32,
    size: impl Fn(u32) -> u32,
    scratch: *mut u32,
    mut decode: impl FnMut(u32, u32, u32) -> Result<(), Status>,
) -> Result<u32, Status> {
    let (thread, threads) = (block.thread(), block.threads());
    let (lane, warp_index, warps) = (warp.lane(), thread / WARP_SIZE, threads / WARP_SIZE);
    // Byte offsets in `scratch`, read and written as shared memory.
    let words = unsafe { SharedBytes::new(scratch as *const u8) };
    let places = 4 * SCAN_WORDS as u32;
    let next = places + 4 * (threads + 1);
    let failures = next + 4;
    let (mut round, mut round_at, mut failure) = (0, first_at, u32::MAX);
    while round < parts {
        let own = if round + thread < parts { size(round + thread) } else { 0 };
        let (before, total) = unsafe { block.scan_add(warp, own, scratch) };
        unsafe {
            words.set_u32(places + 4 * thread, before);
            if thread == 0 {
                words.set_u32(places + 4 * threads, total);
                words.set_u32(next, 0);
            }
        }
        block.sync_threads();
        let in_round = (parts - round).min(threads);
        while failure == u32::MAX {
            let claimed = if lane == 0 { unsafe { block.fetch_add(scratch.add(next as usize / 4), 1) } } else { 0 };
            let k = warp.shuffle(claimed, 0);
            if k >= in_round {
                break;
            }
            let [start, end] = unsafe { [words.u32(places + 4 * k), words.u32(places + 4 * k + 4)] };
            if let Err(status) = decode(round + k, round_at + start, end - start) {
                failure = (round + k) << 8 | status as u32;
            }
        }
        round_at += total;
        if lane == 0 {
            unsafe { words.set_u32(failures + 4 * warp_index, failure) };
        }
        block.sync_threads();
        let first = (0..warps).fold(u32::MAX, |first, w| first.min(unsafe { words.u32(failures + 4 * w) }));
        if first != u32::MAX {
            block.sync_threads(); // every warp has read the failures before the next chunk's
            return Err(Status::from_code(first & 0xFF));
        }
        round += threads;
    }
    block.sync_threads(); // every warp is done with the places before the next chunk's
    Ok(round_at)
}

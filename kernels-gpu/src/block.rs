//! The block (CTA) operations kernel bodies that spread one chunk over many warps are written
//! against: the block-wide counterpart of [`crate::warp::Warp`].

use crate::lz77::scan_add;
use crate::warp::{WARP_SIZE, Warp};

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
        let sum = scan_add(warp, value);
        if lane == WARP_SIZE - 1 {
            unsafe { *scratch.add(index as usize) = sum };
        }
        self.sync_threads();
        if index == 0 {
            let total = if lane < warps { unsafe { *scratch.add(lane as usize) } } else { 0 };
            let running = scan_add(warp, total);
            unsafe { *scratch.add((WARP_SIZE + lane) as usize) = running - total };
            if lane == WARP_SIZE - 1 {
                unsafe { *scratch.add(2 * WARP_SIZE as usize) = running };
            }
        }
        self.sync_threads();
        let (below, total) =
            unsafe { (*scratch.add((WARP_SIZE + index) as usize), *scratch.add(2 * WARP_SIZE as usize)) };
        self.sync_threads();
        (below + sum - value, total)
    }
}

//! Device primitives, named after cuda_std's: thread and block indices, barriers, dynamic
//! shared memory, warp votes and shuffles, and gpu-scope atomics. A small cuda_std on rustc's
//! own NVPTX backend.

use crate::block::Block;
use crate::warp::{WARP_SIZE, Warp};
use core::arch::{asm, global_asm, nvptx};

/// Thread, block and grid indices (`thread::thread_idx_x()` and friends in cuda_std).
pub mod thread {
    use super::nvptx;

    /// Index of this thread in its block (x).
    #[inline(always)]
    pub fn thread_idx_x() -> u32 {
        unsafe { nvptx::_thread_idx_x() as u32 }
    }

    /// Index of this block in the grid (x).
    #[inline(always)]
    pub fn block_idx_x() -> u32 {
        unsafe { nvptx::_block_idx_x() as u32 }
    }

    /// Threads per block (x).
    #[inline(always)]
    pub fn block_dim_x() -> u32 {
        unsafe { nvptx::_block_dim_x() as u32 }
    }

    /// Blocks in the grid (x).
    #[inline(always)]
    pub fn grid_dim_x() -> u32 {
        unsafe { nvptx::_grid_dim_x() as u32 }
    }

    /// Index of this thread in the whole grid (x).
    #[inline(always)]
    pub fn index_1d() -> u32 {
        block_idx_x() * block_dim_x() + thread_idx_x()
    }

    /// Waits for every thread of the block (`__syncthreads`).
    #[inline(always)]
    pub fn sync_threads() {
        unsafe { nvptx::_syncthreads() }
    }
}

/// Aborts the kernel (`trap`): the launch fails with an error the host sees.
pub fn trap() -> ! {
    unsafe { nvptx::trap() }
}

global_asm!(".extern .shared .align 16 .b8 DYNAMIC_SMEM[];");

/// Generic pointer to the block's dynamic shared memory (sized at launch).
#[inline(always)]
pub fn dynamic_shared_memory<T>() -> *mut T {
    let ptr: u64;
    unsafe { asm!("cvta.shared.u64 {ptr}, DYNAMIC_SMEM;", ptr = out(reg64) ptr) };
    ptr as *mut T
}

/// Bytes of dynamic shared memory the block was launched with.
#[inline(always)]
pub fn dynamic_shared_bytes() -> usize {
    let bytes: u32;
    unsafe { asm!("mov.u32 {bytes}, %dynamic_smem_size;", bytes = out(reg32) bytes, options(pure, nomem, nostack)) };
    bytes as usize
}

/// Gpu-scope atomic minimum on a global `u32` (`atomicMin`); returns the old value.
///
/// # Safety
/// `address` must point to a `u32` in global memory.
#[inline(always)]
pub unsafe fn atomic_min_u32(address: *mut u32, value: u32) -> u32 {
    let old: u32;
    unsafe {
        asm!("atom.global.gpu.min.u32 {old}, [{address}], {value};",
             old = out(reg32) old, address = in(reg64) address, value = in(reg32) value)
    };
    old
}

/// The hardware warp this thread belongs to.
pub struct HardwareWarp;

impl HardwareWarp {
    /// Index of this thread's warp within its block.
    #[inline(always)]
    pub fn index_in_block() -> u32 {
        thread::thread_idx_x() / WARP_SIZE
    }

    /// Warps in this block.
    #[inline(always)]
    pub fn per_block() -> u32 {
        thread::block_dim_x() / WARP_SIZE
    }

    /// Index of this thread's warp in the whole grid.
    #[inline(always)]
    pub fn index_in_grid() -> u32 {
        thread::block_idx_x() * Self::per_block() + Self::index_in_block()
    }
}

impl Warp for HardwareWarp {
    #[inline(always)]
    fn lane(&self) -> u32 {
        let lane: u32;
        // Pure: the compiler may read it once and keep it.
        unsafe { asm!("mov.u32 {lane}, %laneid;", lane = out(reg32) lane, options(pure, nomem, nostack)) };
        lane
    }

    #[inline(always)]
    fn sync(&self) {
        unsafe { asm!("bar.warp.sync 0xffffffff;") };
    }

    #[inline(always)]
    fn ballot(&self, predicate: bool) -> u32 {
        let mask: u32;
        unsafe {
            asm!("{{ .reg .pred p; setp.ne.u32 p, {pred}, 0; vote.sync.ballot.b32 {mask}, p, 0xffffffff; }}",
                 pred = in(reg32) predicate as u32, mask = out(reg32) mask, options(nomem, nostack))
        };
        mask
    }

    #[inline(always)]
    fn shuffle(&self, value: u32, src_lane: u32) -> u32 {
        let out: u32;
        unsafe {
            asm!("shfl.sync.idx.b32 {out}, {value}, {src}, 0x1f, 0xffffffff;",
                 out = out(reg32) out, value = in(reg32) value, src = in(reg32) src_lane, options(nomem, nostack))
        };
        out
    }

    #[inline(always)]
    fn match_any(&self, value: u32) -> u32 {
        let mask: u32;
        unsafe {
            asm!("match.any.sync.b32 {mask}, {value}, 0xffffffff;",
                 mask = out(reg32) mask, value = in(reg32) value, options(nomem, nostack))
        };
        mask
    }
}

/// The block (CTA) this thread belongs to.
pub struct HardwareBlock;

impl Block for HardwareBlock {
    #[inline(always)]
    fn thread(&self) -> u32 {
        thread::thread_idx_x()
    }

    #[inline(always)]
    fn threads(&self) -> u32 {
        thread::block_dim_x()
    }

    #[inline(always)]
    fn sync_threads(&self) {
        thread::sync_threads()
    }

    /// A sleep of about a hundred nanoseconds: a poll's issue slots go to the warps at work.
    #[inline(always)]
    fn pause(&self) {
        unsafe { asm!("nanosleep.u32 100;") };
    }

    #[inline(always)]
    unsafe fn load_acquire(&self, at: *const u32) -> u32 {
        let value;
        unsafe { asm!("ld.acquire.cta.u32 {value}, [{at}];", value = out(reg32) value, at = in(reg64) at) };
        value
    }

    #[inline(always)]
    unsafe fn store_release(&self, at: *mut u32, value: u32) {
        unsafe { asm!("st.release.cta.u32 [{at}], {value};", at = in(reg64) at, value = in(reg32) value) };
    }

    /// `atom.shared`: on a generic address, an atomic is a GPU-scope one through the memory
    /// system.
    #[inline(always)]
    unsafe fn fetch_add(&self, at: *mut u32, value: u32) -> u32 {
        unsafe { crate::raw::shared_fetch_add(at, value) }
    }
}

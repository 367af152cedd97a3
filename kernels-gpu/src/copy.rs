//! Batched copies: packing compressed chunks into one container, and scattering decoded chunks
//! to their places in an array ([`StridedCopy`] boxes, a block's threads sharing each box).

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

/// Copies `n` bytes from `src` to `dst`, 32 bytes a step across the warp.
///
/// # Safety
/// `src` must be readable and `dst` writable for `n` bytes, and not overlap.
pub unsafe fn copy_chunk<W: Warp>(warp: &W, src: *const u8, dst: *mut u8, n: usize) {
    warp.for_each_strided(n, |i| unsafe { *dst.add(i) = *src.add(i) });
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

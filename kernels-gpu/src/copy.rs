//! Batched copies: packing compressed chunks into one container.

use crate::warp::Warp;

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
}

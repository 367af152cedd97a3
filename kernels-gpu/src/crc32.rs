//! CRC-32 on the GPU: one warp per chunk, each lane a stripe, the stripes' CRCs combined.

use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::crc32::{finish_combined, multiply_mod_p, shift_factor, update_raw};

/// CRC-32 of the `n` bytes at `data`, in every lane.
///
/// # Safety
/// `data` must be readable for `n` bytes.
pub unsafe fn crc32_chunk<W: Warp>(warp: &W, data: *const u8, n: usize) -> u32 {
    let stripe = n.div_ceil(WARP_SIZE as usize);
    let start = (warp.lane() as usize * stripe).min(n);
    let end = (start + stripe).min(n);
    let raw = update_raw(0, unsafe { core::slice::from_raw_parts(data.add(start), end - start) });
    let shifted = multiply_mod_p(raw, shift_factor((n - end) as u64));
    finish_combined(warp.reduce_xor(shifted), n as u64)
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use crate::gpu::HardwareWarp;

    /// Writes the CRC-32 of chunk `i` of `count` to `crcs[i]`. One warp per chunk.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn crc32(
        inputs: *const *const u8,
        sizes: *const usize,
        crcs: *mut u32,
        count: usize,
    ) {
        let chunk = HardwareWarp::index_in_grid() as usize;
        if chunk >= count {
            return;
        }
        let warp = HardwareWarp;
        let crc = unsafe { crc32_chunk(&warp, *inputs.add(chunk), *sizes.add(chunk)) };
        if warp.lane() == 0 {
            unsafe { *crcs.add(chunk) = crc };
        }
    }
}

//! What the batched kernels share: walking a batch with one warp per chunk, and recording each
//! chunk's outcome. The kernels take the same arguments across codecs (see `host::codec`), with
//! the codec's options packed into one `u32`.

use crate::gpu::{HardwareWarp, atomic_min_u32, thread};
use crate::warp::Warp;
use ferrocomp_format::Status;

/// Calls `body(chunk, slot)` for the chunks this warp takes: `slot`, `slot + warps`, … below
/// `count`, where `slot` is the warp's index in the grid (it owns scratch slot `slot`). Codecs
/// whose chunks are coded by one thread run `body` in lane 0 only (`first_lane_only`).
#[inline(always)]
pub fn for_each_chunk(count: usize, first_lane_only: bool, mut body: impl FnMut(usize, usize)) {
    if first_lane_only && HardwareWarp.lane() != 0 {
        return;
    }
    let slot = HardwareWarp::index_in_grid() as usize;
    let warps = (HardwareWarp::per_block() * thread::grid_dim_x()) as usize;
    let mut chunk = slot;
    while chunk < count {
        body(chunk, slot);
        chunk += warps;
    }
}

/// Records one chunk's outcome (size 0 on failure); `first_failure`, if not null, is lowered
/// to the chunk's index when it failed.
///
/// # Safety
/// `sizes` must be writable at `chunk`, and `statuses` and `first_failure` too unless null.
#[inline(always)]
pub unsafe fn finish(
    chunk: usize,
    result: Result<usize, Status>,
    sizes: *mut usize,
    statuses: *mut u32,
    first_failure: *mut u32,
) {
    let (size, status) = match result {
        Ok(size) => (size, Status::Success),
        Err(status) => (0, status),
    };
    unsafe {
        *sizes.add(chunk) = size;
        if !statuses.is_null() {
            *statuses.add(chunk) = status as u32;
        }
        if status != Status::Success && !first_failure.is_null() {
            atomic_min_u32(first_failure, chunk as u32);
        }
    }
}

/// The `len` bytes at `at` (which may be null when `len` is 0).
///
/// # Safety
/// `at` must be readable for `len` bytes, not written meanwhile.
#[inline(always)]
pub unsafe fn bytes<'a>(at: *const u8, len: usize) -> &'a [u8] {
    if len == 0 { &[] } else { unsafe { core::slice::from_raw_parts(at, len) } }
}

/// The `len` bytes at `at`, to write (`at` may be null when `len` is 0).
///
/// # Safety
/// `at` must be writable for `len` bytes, used by no one else meanwhile.
#[inline(always)]
pub unsafe fn bytes_mut<'a>(at: *mut u8, len: usize) -> &'a mut [u8] {
    if len == 0 { &mut [] } else { unsafe { core::slice::from_raw_parts_mut(at, len) } }
}

/// Scratch slot `slot` of a device array of `T`s.
///
/// # Safety
/// `scratch` must hold at least `slot + 1` `T`s, slot `slot` used by this thread alone.
#[inline(always)]
pub unsafe fn scratch_slot<'a, T>(scratch: *mut u8, slot: usize) -> &'a mut T {
    unsafe { &mut *(scratch as *mut T).add(slot) }
}

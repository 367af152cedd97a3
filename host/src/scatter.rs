//! Scattering decoded chunks to their places in an array: a batch of strided boxes
//! (`ferrocomp_format::strided`) copied in one kernel launch on the GPU, or on all cores.

use crate::alloc::{DeviceView, DeviceViewMut};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Stream};
use ferrocomp_format::strided::{MAX_DIMS, StridedCopy};
use ferrocomp_kernels_gpu::copy::SCATTER_THREADS;
use rayon::prelude::*;
use std::ffi::c_void;

pub use ferrocomp_format::strided::{Plan, PlanError};

/// Most blocks one box gets: enough for a few MiB each to spread over the SMs.
const MAX_BLOCKS_PER_COPY: u64 = 64;
/// Units each thread of the scatter kernel copies, at least, before a box gets another block.
const UNITS_PER_THREAD: u64 = 8;

/// Copies every box from `src` to `dst` (`unit` bytes at a time, as [`Plan::widen`] chose) on
/// all cores, the boxes in parallel.
///
/// # Safety
/// No two boxes may write the same bytes of `dst`.
pub unsafe fn scatter_cpu(src: &[u8], dst: &mut [u8], copies: &[StridedCopy], unit: u64) -> Result<()> {
    check_bounds(src.len(), dst.len(), copies, unit)?;
    let (src, dst) = (src.as_ptr() as usize, dst.as_mut_ptr() as usize);
    copies.par_iter().for_each(|copy| {
        let run = (copy.shape[MAX_DIMS - 1] * unit) as usize;
        let rows = copy.units() / copy.shape[MAX_DIMS - 1].max(1);
        for row in 0..rows {
            let (from, to) = copy.offsets_of(row * copy.shape[MAX_DIMS - 1]);
            // Bounds were checked above; boxes do not overlap in `dst` (the caller's promise).
            unsafe {
                std::ptr::copy_nonoverlapping((src + from as usize) as *const u8, (dst + to as usize) as *mut u8, run)
            };
        }
    });
    Ok(())
}

/// Copies every box from `src` to `dst` in one launch on `stream`, and waits for it (the boxes'
/// table, copied to the device first, lives until then).
///
/// # Safety
/// `src` and `dst` must be valid device memory until this returns, and no two boxes may write
/// the same bytes of `dst`.
pub unsafe fn scatter_gpu(
    gpu: &Gpu,
    src: DeviceView<'_, u8>,
    dst: DeviceViewMut<'_, u8>,
    copies: &[StridedCopy],
    unit: u64,
    stream: &Stream,
) -> Result<()> {
    check_bounds(src.len(), dst.len(), copies, unit)?;
    if copies.is_empty() {
        return Ok(());
    }
    let mut on_device = gpu.upload(copies)?;
    let most = copies.iter().map(StridedCopy::units).max().unwrap_or(0);
    let per_copy = most.div_ceil(SCATTER_THREADS as u64 * UNITS_PER_THREAD).clamp(1, MAX_BLOCKS_PER_COPY) as u32;
    let blocks = u32::try_from(copies.len() as u64 * per_copy as u64)
        .map_err(|_| Error::InvalidArgument(format!("{} boxes are more than one launch takes", copies.len())))?;
    let (src, dst, table_at, count) = (src.address(), dst.address(), on_device.view_mut().address(), copies.len());
    let args = [
        &src as *const _ as *mut c_void,
        &dst as *const _ as *mut _,
        &table_at as *const _ as *mut _,
        &count as *const _ as *mut _,
        &unit as *const _ as *mut _,
        &per_copy as *const _ as *mut _,
    ];
    unsafe { gpu.launch(gpu.kernels().scatter, blocks, SCATTER_THREADS, 0, stream, &args)? };
    stream.synchronize()
}

/// Refuses a unit other than a power of two up to 16, or a box reaching past either buffer.
fn check_bounds(src_len: usize, dst_len: usize, copies: &[StridedCopy], unit: u64) -> Result<()> {
    if !unit.is_power_of_two() || unit > ferrocomp_format::strided::MAX_UNIT as u64 {
        return Err(Error::InvalidArgument(format!("a unit of {unit} bytes")));
    }
    for (i, copy) in copies.iter().enumerate() {
        let (src_end, dst_end) = copy.extents(unit);
        let aligned = (copy.src | copy.dst) % unit == 0;
        if src_end > src_len as u64 || dst_end > dst_len as u64 || !aligned {
            return Err(Error::InvalidArgument(format!(
                "box {i} reaches byte {src_end} of a {src_len}-byte source and {dst_end} of a {dst_len}-byte destination"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 6x10 array of u16 filled from four chunks of 3x5 (the last two cut to 3x5 from 4x6 chunks).
    #[test]
    fn boxes_land_where_the_plan_says() {
        let plan = Plan { itemsize: 2, src_len: 4 * 48, dst_len: 120 };
        let chunks: Vec<u16> = (0..4 * 24).collect();
        let src: Vec<u8> = chunks.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut copies: Vec<StridedCopy> = (0..4u64)
            .map(|c| {
                let (row, col) = (c / 2 * 3, c % 2 * 5);
                plan.copy(c * 48, (row * 10 + col) * 2, &[3, 5], &[12, 2], &[20, 2]).unwrap()
            })
            .collect();
        let unit = Plan::widen(&mut copies, 0, 0);
        assert_eq!(unit, 2);
        let mut dst = vec![0u8; 120];
        unsafe { scatter_cpu(&src, &mut dst, &copies, unit).unwrap() };
        let out: Vec<u16> = dst.chunks(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
        for r in 0..6u16 {
            for c in 0..10u16 {
                let chunk = r / 3 * 2 + c / 5;
                assert_eq!(out[(r * 10 + c) as usize], chunk * 24 + (r % 3) * 6 + c % 5);
            }
        }
    }

    #[test]
    fn boxes_past_the_buffers_are_refused() {
        let plan = Plan { itemsize: 1, src_len: 1 << 10, dst_len: 1 << 10 };
        let copies = [plan.copy(0, 0, &[4, 4], &[4, 1], &[8, 1]).unwrap()];
        let mut dst = vec![0u8; 16];
        assert!(unsafe { scatter_cpu(&[0; 64], &mut dst, &copies, 1) }.is_err());
        assert!(unsafe { scatter_cpu(&[0; 64], &mut [0; 64], &copies, 3) }.is_err());
    }
}

//! Batched copies, as the kernels' `copy` module makes them: gathering device chunks to
//! addresses of their own (packing compressed chunks, moving size prefixes), and scattering
//! decoded chunks to their places in an array, a batch of strided boxes
//! (`ferrocomp_format::strided`) copied in one kernel launch on the GPU, or on all cores.

use crate::alloc::{DeviceView, DeviceViewMut};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Stream, blocks};
use ferrocomp_format::strided::MAX_DIMS;
use ferrocomp_kernels_gpu::copy::SCATTER_THREADS;
use rayon::prelude::*;
use std::ffi::c_void;
use std::ops::Range;

pub use ferrocomp_format::strided::{Plan, PlanError, StridedCopy};

/// Most blocks one box gets: enough for a few MiB each to spread over the SMs.
const MAX_BLOCKS_PER_COPY: u64 = 64;
/// Bytes each core copies at a time when a slab is set aside on the CPU.
const COPY_PIECE: usize = 1 << 20;
/// Units each thread of the scatter kernel copies, at least, before a box gets another block.
const UNITS_PER_THREAD: u64 = 8;
/// Warps per block of the gather kernel (one warp per chunk).
const GATHER_WARPS_PER_BLOCK: u32 = 8;

/// Copies every box from `src` to `dst` (`unit` bytes at a time, as [`Plan::widen`] chose) on
/// all cores, the boxes in parallel.
///
/// # Safety
/// No two boxes may write the same bytes of `dst`.
pub unsafe fn scatter_cpu(src: &[u8], dst: &mut [u8], copies: &[StridedCopy], unit: u64) -> Result<()> {
    check_bounds(src.len(), dst.len(), copies, unit)?;
    let (src, dst) = (src.as_ptr() as usize, dst.as_mut_ptr() as usize);
    // Bounds were checked above; boxes do not overlap in `dst` (the caller's promise).
    copies.par_iter().for_each(|copy| unsafe { copy_box(src as *const u8, dst as *mut u8, copy, unit) });
    Ok(())
}

/// Copies one box from `src` to `dst`, a row at a time.
///
/// # Safety
/// The box must lie inside both (as [`check_box`] checks), and no one else may be writing where
/// it goes.
pub(crate) unsafe fn copy_box(src: *const u8, dst: *mut u8, copy: &StridedCopy, unit: u64) {
    let run = (copy.shape[MAX_DIMS - 1] * unit) as usize;
    let rows = copy.units() / copy.shape[MAX_DIMS - 1].max(1);
    for row in 0..rows {
        let (from, to) = copy.offsets_of(row * copy.shape[MAX_DIMS - 1]);
        unsafe { std::ptr::copy_nonoverlapping(src.add(from as usize), dst.add(to as usize), run) };
    }
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
    let table = gpu.upload(copies)?;
    unsafe { launch(gpu, src.address(), dst.address(), table.view().address(), copies, unit, stream)? };
    stream.synchronize()
}

/// Part of an array whose chunks were decoded in place: its bytes `bytes` hold them one after
/// another, and the boxes `boxes` of a batch (source offsets counted from the slab's start) move
/// them to their places within the same bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slab {
    /// Where the slab lies in the array's bytes.
    pub bytes: Range<usize>,
    /// Its boxes among the batch's.
    pub boxes: Range<usize>,
}

/// Rearranges each slab of `data` in place on all cores: its bytes copied to `staging` (as long
/// as the longest slab), then its boxes copied back from there, both on all cores.
///
/// # Safety
/// No two boxes of a slab may write the same bytes, nor any outside their slab.
pub unsafe fn rearrange_slabs_cpu(
    data: &mut [u8],
    staging: &mut [u8],
    slabs: &[Slab],
    copies: &[StridedCopy],
    unit: u64,
) -> Result<()> {
    check_slabs(data.len(), staging.len(), slabs, copies, unit)?;
    for slab in slabs {
        let staged = &mut staging[..slab.bytes.len()];
        let pieces = staged.par_chunks_mut(COPY_PIECE).zip(data[slab.bytes.clone()].par_chunks(COPY_PIECE));
        pieces.for_each(|(to, from)| to.copy_from_slice(from));
        unsafe { scatter_cpu(staged, data, &copies[slab.boxes.clone()], unit)? };
    }
    Ok(())
}

/// [`rearrange_slabs_cpu`] on `stream`: a copy and a scatter launch per slab, enqueued at once,
/// then waited for.
///
/// # Safety
/// `data` and `staging` must be valid device memory until this returns; no two boxes of a slab
/// may write the same bytes, nor any outside their slab.
pub unsafe fn rearrange_slabs_gpu(
    gpu: &Gpu,
    data: DeviceViewMut<'_, u8>,
    staging: DeviceViewMut<'_, u8>,
    slabs: &[Slab],
    copies: &[StridedCopy],
    unit: u64,
    stream: &Stream,
) -> Result<()> {
    check_slabs(data.len(), staging.len(), slabs, copies, unit)?;
    if copies.is_empty() {
        return Ok(());
    }
    let table = gpu.upload(copies)?;
    let (data, staging, table) = (data.address(), staging.address(), table.view().address());
    for slab in slabs {
        stream.copy_on_device(data + slab.bytes.start as u64, staging, slab.bytes.len())?;
        let first = table + (slab.boxes.start * size_of::<StridedCopy>()) as u64;
        unsafe { launch(gpu, staging, data, first, &copies[slab.boxes.clone()], unit, stream)? };
    }
    stream.synchronize()
}

/// Launches the scatter kernel over `copies`, whose table is at `table` on the device.
///
/// # Safety
/// As [`scatter_gpu`]; the table must match `copies` and live until the kernel ends.
unsafe fn launch(
    gpu: &Gpu,
    src: u64,
    dst: u64,
    table: u64,
    copies: &[StridedCopy],
    unit: u64,
    stream: &Stream,
) -> Result<()> {
    if copies.is_empty() {
        return Ok(());
    }
    let most = copies.iter().map(StridedCopy::units).max().unwrap_or(0);
    let per_copy = most.div_ceil(SCATTER_THREADS as u64 * UNITS_PER_THREAD).clamp(1, MAX_BLOCKS_PER_COPY) as u32;
    let blocks = u32::try_from(copies.len() as u64 * per_copy as u64)
        .map_err(|_| Error::InvalidArgument(format!("{} boxes are more than one launch takes", copies.len())))?;
    let count = copies.len();
    let args = [
        &src as *const _ as *mut c_void,
        &dst as *const _ as *mut _,
        &table as *const _ as *mut _,
        &count as *const _ as *mut _,
        &unit as *const _ as *mut _,
        &per_copy as *const _ as *mut _,
    ];
    unsafe { gpu.launch(gpu.kernels().scatter, blocks, SCATTER_THREADS, 0, stream, &args) }
}

/// Enqueues copying `sizes[i]` bytes from device address `srcs[i]` to `dsts[i]` for every `i`,
/// one warp per chunk.
///
/// # Safety
/// Every address must be valid device memory of its stated size until the stream has run the
/// call; destinations must not overlap sources or each other.
pub(crate) unsafe fn gather_async(
    gpu: &Gpu,
    srcs: DeviceView<'_, u64>,
    dsts: DeviceView<'_, u64>,
    sizes: DeviceView<'_, usize>,
    stream: &Stream,
) -> Result<()> {
    let count = srcs.len();
    let (srcs, dsts, sizes) = (srcs.address(), dsts.address(), sizes.address());
    let args = [
        &srcs as *const _ as *mut c_void,
        &dsts as *const _ as *mut _,
        &sizes as *const _ as *mut _,
        &count as *const _ as *mut _,
    ];
    let (blocks, threads) = (blocks(count, GATHER_WARPS_PER_BLOCK), GATHER_WARPS_PER_BLOCK * 32);
    unsafe { gpu.launch(gpu.kernels().gather, blocks, threads, 0, stream, &args) }
}

/// Refuses a slab outside `data_len` or longer than `staging_len`, boxes outside the batch, and
/// a slab's boxes that [`check_bounds`] refuses (their source being the slab).
fn check_slabs(data_len: usize, staging_len: usize, slabs: &[Slab], copies: &[StridedCopy], unit: u64) -> Result<()> {
    for (i, slab) in slabs.iter().enumerate() {
        let fits = slab.bytes.start <= slab.bytes.end && slab.bytes.end <= data_len && slab.bytes.len() <= staging_len;
        let boxes = copies.get(slab.boxes.clone()).filter(|_| fits).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "slab {i}: bytes {:?} of {data_len} (staging {staging_len}), boxes {:?} of {}",
                slab.bytes,
                slab.boxes,
                copies.len()
            ))
        })?;
        check_bounds(slab.bytes.len(), data_len, boxes, unit)?;
    }
    Ok(())
}

/// Refuses a unit other than a power of two up to 16, or a box reaching past either buffer.
fn check_bounds(src_len: usize, dst_len: usize, copies: &[StridedCopy], unit: u64) -> Result<()> {
    check_unit(unit)?;
    copies.iter().enumerate().try_for_each(|(i, copy)| check_box(i, src_len, dst_len, copy, unit))
}

/// Refuses a unit other than a power of two up to 16.
pub(crate) fn check_unit(unit: u64) -> Result<()> {
    if !unit.is_power_of_two() || unit > ferrocomp_format::strided::MAX_UNIT as u64 {
        return Err(Error::InvalidArgument(format!("a unit of {unit} bytes")));
    }
    Ok(())
}

/// Refuses box `i` where it reaches past either buffer or is not aligned to `unit`.
pub(crate) fn check_box(i: usize, src_len: usize, dst_len: usize, copy: &StridedCopy, unit: u64) -> Result<()> {
    let (src_end, dst_end) = copy.extents(unit);
    let aligned = (copy.src | copy.dst).is_multiple_of(unit);
    if src_end > src_len as u64 || dst_end > dst_len as u64 || !aligned {
        return Err(Error::InvalidArgument(format!(
            "box {i} reaches byte {src_end} of a {src_len}-byte source and {dst_end} of a {dst_len}-byte destination"
        )));
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

    /// The 6x10 array of u16 above, decoded in place: each slab of three rows holds its two 3x5
    /// chunks one after the other until rearranged.
    #[test]
    fn slabs_rearrange_in_place() {
        let plan = Plan { itemsize: 2, src_len: 60, dst_len: 120 };
        let mut data: Vec<u8> = (0..60u16).flat_map(u16::to_le_bytes).collect();
        let mut copies: Vec<StridedCopy> = (0..4u64)
            .map(|c| plan.copy(c % 2 * 30, (c / 2 * 30 + c % 2 * 5) * 2, &[3, 5], &[10, 2], &[20, 2]).unwrap())
            .collect();
        assert_eq!(Plan::widen(&mut copies, 0, 0), 2);
        let slabs = [Slab { bytes: 0..60, boxes: 0..2 }, Slab { bytes: 60..120, boxes: 2..4 }];
        unsafe { rearrange_slabs_cpu(&mut data, &mut [0; 60], &slabs, &copies, 2).unwrap() };
        let out: Vec<u16> = data.chunks(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
        for r in 0..6u16 {
            for c in 0..10u16 {
                assert_eq!(out[(r * 10 + c) as usize], r / 3 * 30 + c / 5 * 15 + (r % 3) * 5 + c % 5);
            }
        }
        let short_staging = unsafe { rearrange_slabs_cpu(&mut data, &mut [0; 59], &slabs, &copies, 2) };
        assert!(short_staging.unwrap_err().to_string().contains("slab 0"));
        let past_the_boxes = [Slab { bytes: 0..60, boxes: 2..5 }];
        assert!(unsafe { rearrange_slabs_cpu(&mut data, &mut [0; 60], &past_the_boxes, &copies, 2) }.is_err());
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

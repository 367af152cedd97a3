//! The read path's native steps, for `ferrocomp.zarr`'s pipeline and `ferrocomp.root`: byte
//! ranges of files read into one packed buffer (host memory on all cores, or device memory
//! through reused pinned staging), and decoded chunks scattered to their places in an array.

use crate::array::Array;
use crate::array::wrap::integers;
use crate::codec::Codec;
use crate::device::{self, LEGACY_STREAM, StreamRef, stream_arg};
use crate::errors::{Direction, device_error, to_py, value_error};
use ferrocomp::Error;
use ferrocomp::file_ranges::{self, FileRange, RangeReader};
use ferrocomp::scatter::{Plan, Slab, StridedCopy, rearrange_slabs_cpu, rearrange_slabs_gpu, scatter_cpu, scatter_gpu};
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

/// The reader of device `ordinal`, made at first use and kept (its pinned slots with it).
fn reader(ordinal: u32) -> PyResult<Arc<RangeReader>> {
    static READERS: OnceLock<Mutex<HashMap<u32, Arc<RangeReader>>>> = OnceLock::new();
    let mut readers = READERS.get_or_init(Default::default).lock().unwrap();
    if let Some(reader) = readers.get(&ordinal) {
        return Ok(reader.clone());
    }
    let gpu = device::gpu(ordinal).map_err(device_error)?;
    let reader = Arc::new(RangeReader::new(&gpu).map_err(device_error)?);
    readers.insert(ordinal, reader.clone());
    Ok(reader)
}

fn io_error(err: Error) -> PyErr {
    match err {
        Error::Io(e) => PyOSError::new_err(e.to_string()),
        other => device_error(other),
    }
}

/// Reads `sizes[i]` bytes at `offsets[i]` of `paths[i]` for every `i` into `out`, packed in
/// order; `out` is host memory (read on all cores) or device memory (through pinned staging,
/// enqueued on `cuda_stream`, the legacy default stream if not given). Raises `OSError` naming
/// the file for a missing file or a range past its end.
#[pyfunction]
#[pyo3(signature = (paths, offsets, sizes, out, *, cuda_stream = None))]
pub fn read_ranges(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    offsets: &Bound<'_, PyAny>,
    sizes: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
    cuda_stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let (offsets, sizes) = (integers(py, offsets)?, integers(py, sizes)?);
    let ranges = file_ranges_of(&paths, &offsets, &sizes)?;
    let out = Array::from_object(out, None)?;
    out.require_contiguous("out")?;
    out.require_writable("out")?;
    match out.device {
        None => {
            let dst = unsafe { out.host_bytes_mut() };
            py.detach(|| file_ranges::read_ranges(&ranges, dst)).map_err(io_error)
        }
        Some(ordinal) => {
            let reader = reader(ordinal)?;
            let stream = callers_stream(cuda_stream)?;
            py.detach(|| reader.read_to_device(&ranges, out.device_bytes_mut(), stream.stream())).map_err(io_error)
        }
    }
}

/// Reads `sizes[i]` bytes at `offsets[i]` of `paths[i]`, decodes them with `codec` (a CPU codec
/// of RAW chunks) into `decoded_sizes[i]` bytes and copies them into `out` (host memory) by row
/// `i` of `boxes` (as `scatter`'s, source offsets counted from the chunk's first byte): each
/// chunk read, decoded and placed by one core while in its cache, all cores at once. Raises
/// `DecodeError` naming the first failing chunk (by its index), `OSError` naming a file.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn decode_ranges(
    py: Python<'_>,
    codec: &Codec,
    paths: Vec<PathBuf>,
    offsets: &Bound<'_, PyAny>,
    sizes: &Bound<'_, PyAny>,
    decoded_sizes: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
    itemsize: u64,
    boxes: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let chunks = codec.cpu_chunks().ok_or_else(|| value_error("decode_ranges takes a CPU codec of RAW chunks"))?;
    let (offsets, sizes, expected) = (integers(py, offsets)?, integers(py, sizes)?, integers(py, decoded_sizes)?);
    let ranges = file_ranges_of(&paths, &offsets, &sizes)?;
    let expected: Vec<usize> = expected.into_iter().map(|n| n as usize).collect();
    let output = Array::from_object(out, None)?;
    output.require_contiguous("out")?;
    output.require_writable("out")?;
    if output.device.is_some() {
        return Err(value_error(
            "decode_ranges writes host memory; on a GPU read with read_ranges, decode with decode_packed",
        ));
    }
    let largest = expected.iter().copied().max().unwrap_or(0) as u64;
    let plan = Plan { itemsize, src_len: largest, dst_len: output.nbytes() as u64 };
    let (copies, unit) = strided_copies(py, boxes, plan, 0, output.ptr)?;
    let out = unsafe { output.host_bytes_mut() };
    py.detach(|| unsafe { file_ranges::decode_ranges_cpu(chunks, &ranges, &expected, out, &copies, unit) }).map_err(
        |err| match err {
            Error::Io(e) => PyOSError::new_err(e.to_string()),
            other => to_py(other, Direction::Decode),
        },
    )
}

/// The ranges `sizes[i]` bytes at `offsets[i]` of `paths[i]`, as many of each as of paths.
fn file_ranges_of<'a>(paths: &'a [PathBuf], offsets: &[u64], sizes: &[u64]) -> PyResult<Vec<FileRange<'a>>> {
    if offsets.len() != paths.len() || sizes.len() != paths.len() {
        return Err(value_error(format!(
            "{} paths, {} offsets and {} sizes: one of each per range",
            paths.len(),
            offsets.len(),
            sizes.len()
        )));
    }
    Ok((0..paths.len()).map(|i| FileRange { path: &paths[i], offset: offsets[i], len: sizes[i] as usize }).collect())
}

/// Copies boxes of `itemsize`-byte elements from `src` into `out` (both host or both device
/// memory), in one launch on the GPU (waited for, on `cuda_stream`) or on all cores. `boxes` is
/// an integer array of one row per box: source and destination byte offsets, then its shape, its
/// source strides and its destination strides (bytes), `ndim` each. Boxes must not overlap in `out`.
#[pyfunction]
#[pyo3(signature = (src, out, itemsize, boxes, *, cuda_stream = None))]
pub fn scatter(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
    itemsize: u64,
    boxes: &Bound<'_, PyAny>,
    cuda_stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let (input, output) = both_in_one_place((src, "src"), (out, "out"))?;
    let plan = Plan { itemsize, src_len: input.nbytes() as u64, dst_len: output.nbytes() as u64 };
    let (copies, unit) = strided_copies(py, boxes, plan, input.ptr, output.ptr)?;
    match output.device {
        None => {
            let (src, dst) = unsafe { (input.host_bytes(), output.host_bytes_mut()) };
            py.detach(|| unsafe { scatter_cpu(src, dst, &copies, unit) }).map_err(device_error)
        }
        Some(ordinal) => {
            let gpu = device::gpu(ordinal).map_err(device_error)?;
            let stream = callers_stream(cuda_stream)?;
            py.detach(|| unsafe {
                scatter_gpu(&gpu, input.device_bytes(), output.device_bytes_mut(), &copies, unit, stream.stream())
            })
            .map_err(device_error)
        }
    }
}

/// Rearranges slabs of `data` whose chunks were decoded in place, one after another: each slab
/// is copied to `staging` (host or device memory as `data`, as long as the longest slab), then
/// its boxes are scattered back from there, all in one call (waited for, on `cuda_stream`).
/// `slabs` has a row per slab: its first and end byte in `data`, its first and end row of
/// `boxes` (as `scatter`'s, source offsets counted from the slab's start).
#[pyfunction]
#[pyo3(signature = (data, staging, itemsize, boxes, slabs, *, cuda_stream = None))]
pub fn rearrange_slabs(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    staging: &Bound<'_, PyAny>,
    itemsize: u64,
    boxes: &Bound<'_, PyAny>,
    slabs: &Bound<'_, PyAny>,
    cuda_stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let (staging, data) = both_in_one_place((staging, "staging"), (data, "data"))?;
    staging.require_writable("staging")?;
    let plan = Plan { itemsize, src_len: staging.nbytes() as u64, dst_len: data.nbytes() as u64 };
    let (copies, unit) = strided_copies(py, boxes, plan, staging.ptr, data.ptr)?;
    let bounds = integers(py, slabs)?;
    if bounds.len() % 4 != 0 {
        return Err(value_error("slabs has rows of 4 integers: first byte, end byte, first box, end box"));
    }
    let slabs: Vec<Slab> = bounds
        .as_chunks::<4>()
        .0
        .iter()
        .map(|&[start, end, first, last]| Slab {
            bytes: start as usize..end as usize,
            boxes: first as usize..last as usize,
        })
        .collect();
    match data.device {
        None => {
            let (data, staging) = unsafe { (data.host_bytes_mut(), staging.host_bytes_mut()) };
            py.detach(|| unsafe { rearrange_slabs_cpu(data, staging, &slabs, &copies, unit) }).map_err(device_error)
        }
        Some(ordinal) => {
            let gpu = device::gpu(ordinal).map_err(device_error)?;
            let stream = callers_stream(cuda_stream)?;
            py.detach(|| unsafe {
                let (data, staging) = (data.device_bytes_mut(), staging.device_bytes_mut());
                rearrange_slabs_gpu(&gpu, data, staging, &slabs, &copies, unit, stream.stream())
            })
            .map_err(device_error)
        }
    }
}

/// `src` and `out` (named so in errors) as arrays, contiguous, `out` writable, both in host
/// memory or on one device.
fn both_in_one_place(
    (src, src_name): (&Bound<'_, PyAny>, &str),
    (out, out_name): (&Bound<'_, PyAny>, &str),
) -> PyResult<(Array, Array)> {
    let (input, output) = (Array::from_object(src, None)?, Array::from_object(out, None)?);
    input.require_contiguous(src_name)?;
    output.require_contiguous(out_name)?;
    output.require_writable(out_name)?;
    if input.device != output.device {
        return Err(value_error(format!(
            "{src_name} and {out_name} must both be in host memory or on the same device"
        )));
    }
    Ok((input, output))
}

/// The caller's `cuda_stream` (an argument as `stream_arg` reads it), or the legacy default stream.
fn callers_stream(cuda_stream: Option<&Bound<'_, PyAny>>) -> PyResult<StreamRef> {
    Ok(StreamRef::borrowed(stream_arg(cuda_stream)?.unwrap_or(LEGACY_STREAM)))
}

/// The rows of `boxes` (see `scatter`) as copies planned by `plan`, in the widest unit they and
/// the buffers' addresses `src` and `dst` allow (returned with them).
fn strided_copies(
    py: Python<'_>,
    boxes: &Bound<'_, PyAny>,
    plan: Plan,
    src: u64,
    dst: u64,
) -> PyResult<(Vec<StridedCopy>, u64)> {
    let rows: usize = boxes.getattr("shape")?.get_item(0)?.extract()?;
    let table = integers(py, boxes)?;
    let width = table.len().checked_div(rows).unwrap_or(2);
    if rows > 0 && (width < 2 || (width - 2) % 3 != 0 || width * rows != table.len()) {
        return Err(value_error(format!("boxes has rows of {width} integers, not 2 + 3 * ndim")));
    }
    let ndim = (width - 2) / 3;
    let mut copies = table
        .chunks_exact(width.max(1))
        .take(rows)
        .enumerate()
        .map(|(i, row)| {
            let (shape, strides) = row[2..].split_at(ndim);
            let (src_strides, dst_strides) = strides.split_at(ndim);
            plan.copy(row[0], row[1], shape, src_strides, dst_strides)
                .map_err(|e| value_error(format!("box {i}: {e:?}")))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let unit = Plan::widen(&mut copies, src, dst);
    Ok((copies, unit))
}

//! Running a `Codec`'s calls: the arrays placed where it runs, one native-bitstream call per
//! array, or a whole list as one batched call.

use super::config::{require_count, require_sizes};
use super::{Backend, Codec, is_list};
use crate::alloc::host_memory;
use crate::array::Array;
use crate::array::batch::{Arrays, BatchArray};
use crate::call::{Call, Outcomes, Pending, Returns, filled, first_failure, returned};
use crate::device;
use crate::dtype::{DType, ReturnType};
use crate::errors::{Direction, device_error, to_py, value_error};
use crate::keep::Keep;
use ferrocomp::{ChunkListCodec, DeviceView, DeviceViewMut};
use pyo3::prelude::*;
use std::collections::HashSet;
use std::sync::Arc;

/// The arrays `obj` holds (one, a list's or a `BatchArray`'s, the last shared rather than
/// copied), and what a call that took it returns.
fn arrays_of(obj: &Bound<'_, PyAny>) -> PyResult<(Arrays, Returns)> {
    if let Ok(batch) = obj.cast::<BatchArray>() {
        return Ok((Arrays::Batch(batch.clone().unbind()), Returns::Batch));
    }
    if !is_list(obj) {
        return Ok((Arrays::Owned(vec![Array::from_object(obj, None)?]), Returns::One));
    }
    let arrays = obj.try_iter()?.map(|item| Array::from_object(&item?, None)).collect::<PyResult<_>>()?;
    Ok((Arrays::Owned(arrays), Returns::List))
}

/// `out` (a host array) with the encoded `bytes` copied to its start, as filled.
fn copied_into(bytes: &[u8], out: &Array) -> PyResult<Array> {
    if out.nbytes() < bytes.len() {
        return Err(value_error(format!("out holds {} bytes, the encoded data is {}", out.nbytes(), bytes.len())));
    }
    unsafe { out.host_bytes_mut()[..bytes.len()].copy_from_slice(bytes) };
    filled(out, bytes.len(), true, &ReturnType::bytes())
}

/// One `encode` or `decode` call: its arrays where the codec runs, and what it returns.
struct Request {
    direction: Direction,
    inputs: Arrays,
    /// The caller's `out=` arrays, one per input.
    outs: Option<Arrays>,
    /// What the call returns: one array, a list or a `BatchArray`, as it took.
    returns: Returns,
    /// The element type of the arrays returned.
    dtype: ReturnType,
    /// Whether the call waits for the result (else it returns a `Pending`).
    sync: bool,
    /// A configuration's sizes, one per input: checked against the inputs (encode), or the
    /// outputs' to allocate (decode).
    sizes: Option<Vec<usize>>,
}

impl Codec {
    /// Encodes or decodes `src` (one array or a list) into `out` or new arrays of `dtype`: one
    /// native call per array, or RAW's one batched call. `sizes`: a configuration's (see
    /// `Request`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run(
        &self,
        py: Python<'_>,
        direction: Direction,
        src: &Bound<'_, PyAny>,
        out: Option<&Bound<'_, PyAny>>,
        dtype: ReturnType,
        sync: bool,
        sizes: Option<Vec<usize>>,
    ) -> PyResult<Py<PyAny>> {
        let (inputs, returns) = self.inputs(py, src)?;
        let outs = self.outs(out, inputs.len(), returns)?;
        match (&sizes, direction) {
            (Some(sizes), Direction::Encode) => require_sizes(sizes, &inputs)?,
            (Some(sizes), Direction::Decode) => require_count(sizes, inputs.len(), "decompression_config")?,
            (None, _) => {}
        }
        let request = Request { direction, inputs, outs, returns, dtype, sync, sizes };
        match &self.chunks {
            Some(chunks) => self.run_chunks(py, chunks, request),
            None => self.run_native(py, request),
        }
    }

    /// The call's input arrays, contiguous and where the codec runs (host ones uploaded on the
    /// codec's stream for a GPU codec, device ones copied down for the CPU), and what the call
    /// returns for them: one array, a list or a `BatchArray`, as it took. Arrays already in place
    /// are taken as they are.
    pub(super) fn inputs(&self, py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<(Arrays, Returns)> {
        let (given, returns) = arrays_of(obj)?;
        for (i, array) in given.iter().enumerate() {
            array.require_contiguous(format_args!("input {i}"))?;
            if let (Backend::Gpu { ordinal, .. }, Some(device)) = (&self.backend, array.device)
                && device != *ordinal
            {
                return Err(value_error(format!("input {i} is on device {device}, the codec on {ordinal}")));
            }
        }
        let placed = |array: &Array| array.device.is_some() == matches!(self.backend, Backend::Gpu { .. });
        if given.iter().all(placed) {
            return Ok((given, returns));
        }
        let place = |array: &Array| match &self.backend {
            _ if placed(array) => Ok(array.clone()),
            Backend::Cpu => array.to_host(py),
            Backend::Gpu { stream, .. } => array.to_device(py, false, stream.raw()),
        };
        Ok((Arrays::Owned(given.iter().map(place).collect::<PyResult<_>>()?), returns))
    }

    /// The caller's `out=` arrays: one per input, contiguous, writable, where the codec runs.
    fn outs(&self, out: Option<&Bound<'_, PyAny>>, count: usize, returns: Returns) -> PyResult<Option<Arrays>> {
        let Some(out) = out.filter(|out| !out.is_none()) else { return Ok(None) };
        let (given, kind) = arrays_of(out)?;
        match (returns == Returns::One, kind == Returns::One) {
            (true, false) => return Err(value_error("one array in, so out= is one array, not a list")),
            (false, true) => return Err(value_error("a list in, so out= is a list of arrays or a BatchArray")),
            _ => {}
        }
        if given.len() != count {
            return Err(value_error(format!("{count} inputs but {} out= arrays", given.len())));
        }
        for (i, array) in given.iter().enumerate() {
            let what = format_args!("out array {i}");
            array.require_contiguous(what)?;
            array.require_writable(what)?;
            match (&self.backend, array.device) {
                (Backend::Cpu, None) => {}
                (Backend::Gpu { ordinal, .. }, Some(device)) if device == *ordinal => {}
                (Backend::Cpu, Some(_)) => {
                    return Err(value_error(format!("{what} is on a GPU; the codec runs on the CPU")));
                }
                (Backend::Gpu { ordinal, .. }, _) => {
                    return Err(value_error(format!("{what} must be device memory on device {ordinal}")));
                }
            }
        }
        Ok(Some(given))
    }

    /// The distinct streams producing `arrays`' data, other than `own`.
    pub(super) fn producers<'a>(arrays: impl IntoIterator<Item = &'a Array>, own: u64) -> HashSet<u64> {
        arrays.into_iter().filter_map(|a| a.stream.as_ref().map(|s| s.raw())).filter(|&raw| raw != own).collect()
    }

    /// One array (native bitstream) at a time, each a whole `BufferCodec` call.
    fn run_native(&self, py: Python<'_>, request: Request) -> PyResult<Py<PyAny>> {
        let Request { direction, inputs, outs, returns, dtype, sync, sizes } = request;
        if !sync {
            return Err(value_error("sync=False needs RAW or WITH_UNCOMPRESSED_SIZE; native streams decode whole"));
        }
        if let Backend::Gpu { gpu, stream, .. } = &self.backend {
            // The container's header is read with a plain copy, so the producers must be done.
            for producer in Self::producers(inputs.iter().chain(outs.iter().flat_map(|outs| outs.iter())), 0) {
                py.detach(|| device::synchronize(gpu, producer)).map_err(device_error)?;
            }
            py.detach(|| stream.stream().synchronize()).map_err(device_error)?;
        }
        let fail = |e| to_py(e, direction);
        let mut results = Vec::with_capacity(inputs.len());
        for (i, input) in inputs.iter().enumerate() {
            let out = outs.as_ref().map(|outs| &outs[i]);
            let result = match (&self.backend, direction, out) {
                (Backend::Cpu, Direction::Encode, out) => {
                    let bytes = py.detach(|| self.native.compress(unsafe { input.host_bytes() })).map_err(fail)?;
                    match out {
                        Some(out) => copied_into(&bytes, out)?,
                        None => {
                            let (ptr, len) = (bytes.as_ptr() as u64, bytes.len());
                            Array::new(ptr, len, dtype.of(len)?, None, Arc::new(Keep::Bytes(bytes)))
                        }
                    }
                }
                (Backend::Gpu { stream, .. }, Direction::Encode, Some(out)) => {
                    let (view, target) = (input.device_bytes(), out.device_bytes_mut());
                    let size =
                        py.detach(|| self.native.compress_device_into(view, target, stream.stream())).map_err(fail)?;
                    filled(out, size, true, &ReturnType::bytes())?
                }
                (Backend::Gpu { ordinal, stream, .. }, Direction::Encode, None) => {
                    let view = input.device_bytes();
                    let buffer = py.detach(|| self.native.compress_device(view, stream.stream())).map_err(fail)?;
                    let (ptr, nbytes) = (buffer.address(), buffer.len());
                    Array::new(ptr, nbytes, dtype.of(nbytes)?, Some(*ordinal), Arc::new(Keep::Device(buffer)))
                }
                (Backend::Cpu, Direction::Decode, Some(out)) => {
                    let (input, output) = unsafe { (input.host_bytes(), out.host_bytes_mut()) };
                    let size = py.detach(|| self.native.decompress_into(input, output)).map_err(fail)?;
                    filled(out, size, true, &dtype)?
                }
                (Backend::Cpu, Direction::Decode, None) => {
                    let bytes = unsafe { input.host_bytes() };
                    let room = match &sizes {
                        Some(sizes) => sizes[i],
                        None => self.native.decompressed_size(bytes).map_err(fail)?,
                    };
                    let (ptr, keep) = host_memory(py, room)?;
                    let output = Array::new(ptr, room, DType::bytes(), None, Arc::new(keep));
                    let target = unsafe { output.host_bytes_mut() };
                    let size = py.detach(|| self.native.decompress_into(bytes, target)).map_err(fail)?;
                    filled(&output, size, false, &dtype)?
                }
                (Backend::Gpu { stream, .. }, Direction::Decode, Some(out)) => {
                    let (view, target) = (input.device_bytes(), out.device_bytes_mut());
                    let size = py
                        .detach(|| self.native.decompress_device_into(view, target, stream.stream()))
                        .map_err(fail)?;
                    filled(out, size, true, &dtype)?
                }
                (Backend::Gpu { gpu, ordinal, stream }, Direction::Decode, None) => {
                    let view = input.device_bytes();
                    let (buffer, size) = match &sizes {
                        Some(sizes) => {
                            let mut buffer = gpu.alloc::<u8>(sizes[i]).map_err(device_error)?;
                            let target = buffer.view_mut();
                            let size = py
                                .detach(|| self.native.decompress_device_into(view, target, stream.stream()))
                                .map_err(fail)?;
                            (buffer, size)
                        }
                        None => {
                            let buffer =
                                py.detach(|| self.native.decompress_device(view, stream.stream())).map_err(fail)?;
                            let size = buffer.len();
                            (buffer, size)
                        }
                    };
                    let (ptr, room) = (buffer.address(), buffer.len());
                    let output = Array::new(ptr, room, DType::bytes(), Some(*ordinal), Arc::new(Keep::Device(buffer)));
                    filled(&output, size, false, &dtype)?
                }
            };
            results.push(result);
        }
        returned(py, results, returns)
    }

    /// A whole list as one batched call (one block per array).
    fn run_chunks(&self, py: Python<'_>, chunks: &ChunkListCodec, request: Request) -> PyResult<Py<PyAny>> {
        let Request { direction, inputs, outs, returns, dtype, sync, sizes } = request;
        let callers_outputs = outs.is_some();
        let fail = |e| to_py(e, direction);
        let (outputs, outcomes, stream) = match &self.backend {
            Backend::Cpu => {
                let outputs = match outs {
                    Some(outs) => outs,
                    None => Arrays::Owned(self.allocate(py, direction, chunks, &inputs, sizes.as_deref())?),
                };
                let ins: Vec<&[u8]> = inputs.iter().map(|a| unsafe { a.host_bytes() }).collect();
                let mut targets: Vec<&mut [u8]> = outputs.iter().map(|a| unsafe { a.host_bytes_mut() }).collect();
                let outcomes = py.detach(|| match direction {
                    Direction::Encode => chunks.compress_cpu(&ins, &mut targets),
                    Direction::Decode => chunks.decompress_cpu(&ins, &mut targets),
                });
                (outputs, Outcomes::Cpu(outcomes), None)
            }
            Backend::Gpu { gpu, stream, .. } => {
                let producers =
                    Self::producers(inputs.iter().chain(outs.iter().flat_map(|outs| outs.iter())), stream.raw());
                for producer in producers {
                    device::wait_for(gpu, stream.raw(), producer).map_err(device_error)?;
                }
                let outputs = match outs {
                    Some(outs) => outs,
                    None => Arrays::Owned(self.allocate(py, direction, chunks, &inputs, sizes.as_deref())?),
                };
                let ins: Vec<DeviceView<'_, u8>> = inputs.iter().map(Array::device_bytes).collect();
                let targets: Vec<DeviceViewMut<'_, u8>> = outputs.iter().map(Array::device_bytes_mut).collect();
                let results = py
                    .detach(|| unsafe {
                        match direction {
                            Direction::Encode => chunks.compress_async(&ins, &targets, stream.stream()),
                            Direction::Decode => chunks.decompress_async(&ins, &targets, stream.stream()),
                        }
                    })
                    .map_err(fail)?;
                (outputs, Outcomes::Gpu(Arc::new(results)), Some(stream.clone()))
            }
        };
        let prefix_len = chunks.prefix_len();
        let call =
            Call { direction, inputs, outputs, callers_outputs, dtype, returns, prefix_len, packed: false, outcomes };
        if sync { call.finish(py) } else { Ok(Py::new(py, Pending::new(py, call, stream)?)?.into_any()) }
    }

    /// The sizes `inputs` (where the codec runs) decode to: from a native stream's header, a
    /// size prefix, or by walking a raw block; the first failing one raises.
    pub(super) fn uncompressed_sizes(&self, py: Python<'_>, inputs: &[Array]) -> PyResult<Vec<usize>> {
        if let Some(chunks) = &self.chunks {
            return self.decoded_sizes(py, chunks, inputs);
        }
        let size = |input: &Array| match &self.backend {
            Backend::Cpu => self.native.decompressed_size(unsafe { input.host_bytes() }),
            Backend::Gpu { gpu, stream, .. } => {
                for producer in Self::producers([input], stream.raw()) {
                    device::wait_for(gpu, stream.raw(), producer)?;
                }
                py.detach(|| self.native.decompressed_size_device(input.device_bytes(), stream.stream()))
            }
        };
        inputs.iter().map(|input| size(input).map_err(|e| to_py(e, Direction::Decode))).collect()
    }

    /// The sizes `inputs` (where the codec runs) decode to, from their prefixes or by walking
    /// their blocks; the first failing one raises.
    pub(super) fn decoded_sizes(
        &self,
        py: Python<'_>,
        chunks: &ChunkListCodec,
        inputs: &[Array],
    ) -> PyResult<Vec<usize>> {
        let outcomes = match &self.backend {
            Backend::Cpu => {
                let ins: Vec<&[u8]> = inputs.iter().map(|a| unsafe { a.host_bytes() }).collect();
                py.detach(|| chunks.decompressed_sizes_cpu(&ins))
            }
            Backend::Gpu { stream, .. } => {
                let ins: Vec<DeviceView<'_, u8>> = inputs.iter().map(Array::device_bytes).collect();
                py.detach(|| {
                    let results = unsafe { chunks.decompressed_sizes_async(&ins, stream.stream())? };
                    results.outcomes()
                })
                .map_err(|e| to_py(e, Direction::Decode))?
            }
        };
        first_failure(outcomes, Direction::Decode)
    }

    /// Outputs for a batched call without `out=`, back to back in one allocation: room for the
    /// largest input's bound each when encoding; each chunk's decompressed size when decoding,
    /// a configuration's `known` sizes or else asked first (which waits for the device).
    fn allocate(
        &self,
        py: Python<'_>,
        direction: Direction,
        chunks: &ChunkListCodec,
        inputs: &[Array],
        known: Option<&[usize]>,
    ) -> PyResult<Vec<Array>> {
        let sizes: Vec<usize> = match (direction, known) {
            (Direction::Encode, _) => {
                let largest = inputs.iter().map(Array::nbytes).max().unwrap_or(0);
                vec![chunks.max_compressed_size(largest); inputs.len()]
            }
            (Direction::Decode, Some(known)) => known.to_vec(),
            (Direction::Decode, None) => self.decoded_sizes(py, chunks, inputs)?,
        };
        let total = sizes.iter().sum();
        let (base, keep, device) = match &self.backend {
            Backend::Cpu => {
                let (ptr, keep) = host_memory(py, total)?;
                (ptr, keep, None)
            }
            Backend::Gpu { gpu, ordinal, .. } => {
                let buffer = gpu.alloc::<u8>(total).map_err(device_error)?;
                (buffer.address(), Keep::Device(buffer), Some(*ordinal))
            }
        };
        let keep = Arc::new(keep);
        let mut at = base;
        Ok(sizes
            .into_iter()
            .map(|size| {
                let array = Array::new(at, size, DType::bytes(), device, keep.clone());
                at += size as u64;
                array
            })
            .collect())
    }
}

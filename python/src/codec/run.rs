//! Running a `Codec`'s calls: the arrays placed where it runs, one native-bitstream call per
//! array, or a whole list as one batched call.

use super::{Backend, Codec, is_list};
use crate::alloc::host_memory;
use crate::array::Array;
use crate::array::batch::BatchArray;
use crate::call::{Call, Outcomes, Pending, Returns, filled, first_failure, returned};
use crate::device;
use crate::dtype::DType;
use crate::errors::{Direction, device_error, to_py, value_error};
use crate::keep::Keep;
use ferrocomp::{ChunkListCodec, DeviceView, DeviceViewMut};
use pyo3::prelude::*;
use std::collections::HashSet;
use std::sync::Arc;

/// The arrays `obj` holds (one, a list's or a `BatchArray`'s), and what a call that took it
/// returns.
fn arrays_of(obj: &Bound<'_, PyAny>) -> PyResult<(Vec<Array>, Returns)> {
    if let Ok(batch) = obj.cast::<BatchArray>() {
        return Ok((batch.get().arrays.clone(), Returns::Batch));
    }
    if !is_list(obj) {
        return Ok((vec![Array::from_object(obj, None)?], Returns::One));
    }
    let arrays = obj.try_iter()?.map(|item| Array::from_object(&item?, None)).collect::<PyResult<_>>()?;
    Ok((arrays, Returns::List))
}

/// One `encode` or `decode` call: its arrays where the codec runs, and what it returns.
struct Request {
    direction: Direction,
    inputs: Vec<Array>,
    /// The caller's `out=` arrays, one per input.
    outs: Option<Vec<Array>>,
    /// What the call returns: one array, a list or a `BatchArray`, as it took.
    returns: Returns,
    /// The element type of the arrays returned.
    dtype: DType,
    /// Whether the call waits for the result (else it returns a `Pending`).
    sync: bool,
}

impl Codec {
    /// Encodes or decodes `src` (one array or a list) into `out` or new arrays of `dtype`: one
    /// native call per array, or RAW's one batched call.
    pub(super) fn run(
        &self,
        py: Python<'_>,
        direction: Direction,
        src: &Bound<'_, PyAny>,
        out: Option<&Bound<'_, PyAny>>,
        dtype: DType,
        sync: bool,
    ) -> PyResult<Py<PyAny>> {
        let (inputs, returns) = self.inputs(py, src)?;
        let outs = self.outs(out, inputs.len(), returns)?;
        let request = Request { direction, inputs, outs, returns, dtype, sync };
        match &self.chunks {
            Some(chunks) => self.run_chunks(py, chunks, request),
            None => self.run_native(py, request),
        }
    }

    /// The call's input arrays, contiguous and where the codec runs (host ones uploaded on the
    /// codec's stream for a GPU codec, device ones copied down for the CPU), and what the call
    /// returns for them: one array, a list or a `BatchArray`, as it took.
    pub(super) fn inputs(&self, py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<(Vec<Array>, Returns)> {
        let (given, returns) = arrays_of(obj)?;
        let mut arrays = Vec::with_capacity(given.len());
        for (i, array) in given.into_iter().enumerate() {
            array.require_contiguous(format_args!("input {i}"))?;
            let placed = match &self.backend {
                Backend::Cpu => array.to_host(py)?,
                Backend::Gpu { ordinal, stream, .. } => match array.device {
                    None => array.to_device(py, false, stream.raw())?,
                    Some(device) if device == *ordinal => array,
                    Some(device) => {
                        return Err(value_error(format!("input {i} is on device {device}, the codec on {ordinal}")));
                    }
                },
            };
            arrays.push(placed);
        }
        Ok((arrays, returns))
    }

    /// The caller's `out=` arrays: one per input, contiguous, writable, where the codec runs.
    fn outs(&self, out: Option<&Bound<'_, PyAny>>, count: usize, returns: Returns) -> PyResult<Option<Vec<Array>>> {
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
        let Request { direction, inputs, outs, returns, dtype, sync } = request;
        if !sync {
            return Err(value_error("sync=False needs RAW or WITH_UNCOMPRESSED_SIZE; native streams decode whole"));
        }
        if let Backend::Gpu { gpu, stream, .. } = &self.backend {
            // The container's header is read with a plain copy, so the producers must be done.
            for producer in Self::producers(inputs.iter().chain(outs.iter().flatten()), 0) {
                py.detach(|| device::synchronize(gpu, producer)).map_err(device_error)?;
            }
            py.detach(|| stream.stream().synchronize()).map_err(device_error)?;
        }
        let fail = |e| to_py(e, direction);
        let mut results = Vec::with_capacity(inputs.len());
        for (i, input) in inputs.iter().enumerate() {
            let out = outs.as_ref().map(|outs| &outs[i]);
            let result = match (&self.backend, direction, out) {
                (Backend::Cpu, Direction::Encode, _) => {
                    let bytes = py.detach(|| self.native.compress(unsafe { input.host_bytes() })).map_err(fail)?;
                    let ptr = bytes.as_ptr() as u64;
                    Array::new(ptr, bytes.len(), DType::bytes(), None, Arc::new(Keep::Bytes(bytes)))
                }
                (Backend::Gpu { ordinal, stream, .. }, Direction::Encode, _) => {
                    let view = input.device_bytes();
                    let buffer = py.detach(|| self.native.compress_device(view, stream.stream())).map_err(fail)?;
                    let (ptr, nbytes) = (buffer.address(), buffer.len());
                    Array::new(ptr, nbytes, DType::bytes(), Some(*ordinal), Arc::new(Keep::Device(buffer)))
                }
                (Backend::Cpu, Direction::Decode, Some(out)) => {
                    let (input, output) = unsafe { (input.host_bytes(), out.host_bytes_mut()) };
                    let size = py.detach(|| self.native.decompress_into(input, output)).map_err(fail)?;
                    filled(out, size, true, &dtype)?
                }
                (Backend::Cpu, Direction::Decode, None) => {
                    let bytes = unsafe { input.host_bytes() };
                    let total = self.native.decompressed_size(bytes).map_err(fail)?;
                    let (ptr, keep) = host_memory(py, total)?;
                    let output = Array::new(ptr, total, DType::bytes(), None, Arc::new(keep));
                    let target = unsafe { output.host_bytes_mut() };
                    py.detach(|| self.native.decompress_into(bytes, target)).map_err(fail)?;
                    filled(&output, total, false, &dtype)?
                }
                (Backend::Gpu { stream, .. }, Direction::Decode, Some(out)) => {
                    let (view, target) = (input.device_bytes(), out.device_bytes_mut());
                    let size = py
                        .detach(|| self.native.decompress_device_into(view, target, stream.stream()))
                        .map_err(fail)?;
                    filled(out, size, true, &dtype)?
                }
                (Backend::Gpu { ordinal, stream, .. }, Direction::Decode, None) => {
                    let view = input.device_bytes();
                    let buffer = py.detach(|| self.native.decompress_device(view, stream.stream())).map_err(fail)?;
                    let (ptr, nbytes) = (buffer.address(), buffer.len());
                    let output =
                        Array::new(ptr, nbytes, DType::bytes(), Some(*ordinal), Arc::new(Keep::Device(buffer)));
                    filled(&output, nbytes, false, &dtype)?
                }
            };
            let result = match (direction, out) {
                (Direction::Encode, Some(out)) => self.copy_into(py, &result, out)?,
                _ => result,
            };
            results.push(result);
        }
        returned(py, results, returns)
    }

    /// Copies encoded bytes into the caller's `out` array (the native bitstream's size is only
    /// known once encoded); returns `out` as filled.
    fn copy_into(&self, py: Python<'_>, encoded: &Array, out: &Array) -> PyResult<Array> {
        let size = encoded.nbytes();
        if out.nbytes() < size {
            return Err(value_error(format!("out holds {} bytes, the encoded data is {size}", out.nbytes())));
        }
        match &self.backend {
            Backend::Cpu => unsafe { out.host_bytes_mut()[..size].copy_from_slice(encoded.host_bytes()) },
            Backend::Gpu { gpu, stream, .. } => py
                .detach(|| {
                    device::copy_async(gpu, out.ptr, encoded.ptr, size, stream.raw())?;
                    stream.stream().synchronize()
                })
                .map_err(device_error)?,
        }
        filled(out, size, true, &DType::bytes())
    }

    /// A whole list as one batched call (one block per array).
    fn run_chunks(&self, py: Python<'_>, chunks: &ChunkListCodec, request: Request) -> PyResult<Py<PyAny>> {
        let Request { direction, inputs, outs, returns, dtype, sync } = request;
        let callers_outputs = outs.is_some();
        let fail = |e| to_py(e, direction);
        let (outputs, outcomes, stream) = match &self.backend {
            Backend::Cpu => {
                let outputs = match outs {
                    Some(outs) => outs,
                    None => self.allocate(py, direction, chunks, &inputs)?,
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
                let producers = Self::producers(inputs.iter().chain(outs.iter().flatten()), stream.raw());
                for producer in producers {
                    device::wait_for(gpu, stream.raw(), producer).map_err(device_error)?;
                }
                let outputs = match outs {
                    Some(outs) => outs,
                    None => self.allocate(py, direction, chunks, &inputs)?,
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
    /// largest input's bound each when encoding; each chunk's decompressed size when decoding
    /// (asked first, which waits for the device).
    fn allocate(
        &self,
        py: Python<'_>,
        direction: Direction,
        chunks: &ChunkListCodec,
        inputs: &[Array],
    ) -> PyResult<Vec<Array>> {
        let sizes: Vec<usize> = match direction {
            Direction::Encode => {
                let largest = inputs.iter().map(Array::nbytes).max().unwrap_or(0);
                vec![chunks.max_compressed_size(largest); inputs.len()]
            }
            Direction::Decode => self.decoded_sizes(py, chunks, inputs)?,
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

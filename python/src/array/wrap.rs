//! Arrays over other objects' memory, without copies: from `__cuda_array_interface__`,
//! `__array_interface__`, the buffer protocol or `__dlpack__` (as `Array(...)`, `as_array`,
//! `as_arrays` and `from_dlpack` take them), a device array ready in order on the caller's stream.

use super::Array;
use super::batch::BatchArray;
use crate::buffer::HeldBuffer;
use crate::device::{self, LEGACY_STREAM, StreamRef, stream_arg};
use crate::dlpack::{self, DL_CPU};
use crate::dtype::DType;
use crate::errors::{device_error, value_error};
use crate::keep::Keep;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::sync::Arc;

impl Array {
    /// Reads any array-like object without copying (see the module docs), its data ready in order
    /// on `cuda_stream` if given.
    pub fn from_object(obj: &Bound<'_, PyAny>, cuda_stream: Option<u64>) -> PyResult<Self> {
        if let Ok(array) = obj.cast::<Array>() {
            return array.get().ready_on(cuda_stream);
        }
        if let Some(interface) = obj.getattr_opt("__cuda_array_interface__")? {
            return Self::from_interface(obj, &interface.cast_into::<PyDict>()?, true, cuda_stream);
        }
        if let Some(interface) = obj.getattr_opt("__array_interface__")? {
            let interface = interface.cast_into::<PyDict>()?;
            if interface.get_item("data")?.is_some_and(|data| data.is_instance_of::<PyTuple>()) {
                return Self::from_interface(obj, &interface, false, cuda_stream);
            }
        }
        if let Some((held, layout)) = HeldBuffer::get(obj) {
            let (shape, strides) = (layout.shape, Some(layout.strides));
            let array = Self {
                ptr: layout.ptr,
                shape: shape.into(),
                strides,
                dtype: layout.dtype,
                device: None,
                readonly: layout.readonly,
                stream: None,
                _owner: Arc::new(Keep::Buffer(held)),
            };
            return Ok(array.normalized());
        }
        if obj.hasattr("__dlpack__")? {
            return Self::from_capsule(&capsule_of(obj, cuda_stream)?, cuda_stream);
        }
        Self::from_capsule(obj, cuda_stream).map_err(|_| {
            PyTypeError::new_err(format!(
                "{} has none of __cuda_array_interface__, __array_interface__, the buffer protocol or __dlpack__",
                obj.get_type().name().map_or("the object".into(), |name| name.to_string())
            ))
        })
    }

    /// An array from a DLPack capsule; a device tensor is ready on `cuda_stream` (its producer
    /// was asked to order its work before that stream, or the legacy one).
    pub fn from_capsule(capsule: &Bound<'_, PyAny>, cuda_stream: Option<u64>) -> PyResult<Self> {
        let (tensor, layout) = dlpack::take_capsule(capsule)?;
        let stream = layout.device.map(|_| Arc::new(StreamRef::borrowed(cuda_stream.unwrap_or(LEGACY_STREAM))));
        let array = Self {
            ptr: layout.ptr,
            shape: layout.shape.into(),
            strides: layout.strides,
            dtype: layout.dtype,
            device: layout.device,
            readonly: layout.readonly,
            stream,
            _owner: Arc::new(Keep::Tensor(tensor)),
        };
        Ok(array.normalized())
    }

    /// An array from an `__array_interface__` or (`device`) `__cuda_array_interface__` dict.
    fn from_interface(
        obj: &Bound<'_, PyAny>,
        interface: &Bound<'_, PyDict>,
        device: bool,
        cuda_stream: Option<u64>,
    ) -> PyResult<Self> {
        let name = if device { "__cuda_array_interface__" } else { "__array_interface__" };
        let field = |key: &str| -> PyResult<Bound<'_, PyAny>> {
            interface.get_item(key)?.ok_or_else(|| value_error(format!("{name} has no {key:?}")))
        };
        let optional = |key: &str| -> PyResult<Option<Bound<'_, PyAny>>> {
            Ok(interface.get_item(key)?.filter(|value| !value.is_none()))
        };
        if optional("mask")?.is_some() {
            return Err(value_error(format!("{name} has a mask; masked arrays are not supported")));
        }
        let (ptr, readonly): (u64, bool) = field("data")?.extract()?;
        let strides = optional("strides")?.map(|s| s.extract()).transpose()?;
        let dtype = DType::parse(&field("typestr")?.extract::<String>()?)?;
        let mut array = Self {
            ptr,
            shape: field("shape")?.extract::<Vec<usize>>()?.into(),
            strides,
            dtype,
            device: None,
            readonly,
            stream: None,
            _owner: Arc::new(Keep::Object(obj.clone().unbind())),
        };
        if device {
            let ordinal = device::device_of(ptr).unwrap_or(0);
            array.device = Some(ordinal);
            // CAI v3: no stream means ready; 1 and 2 are the legacy and per-thread default streams.
            let producer: Option<u64> = optional("stream")?.map(|s| s.extract()).transpose()?;
            array.stream = producer.map(|raw| Arc::new(StreamRef::borrowed(raw.max(LEGACY_STREAM))));
            array = array.ready_on(cuda_stream)?;
        }
        Ok(array.normalized())
    }

    /// The array with `strides` dropped when they are C order's.
    fn normalized(mut self) -> Self {
        if self.is_contiguous() {
            self.strides = None;
        }
        self
    }

    /// The array with its data ready in order on `cuda_stream` (which is made to wait for the
    /// producer's stream, on the device), or as it is for `None` or a host array.
    fn ready_on(&self, cuda_stream: Option<u64>) -> PyResult<Self> {
        let (Some(consumer), Some(ordinal)) = (cuda_stream, self.device) else { return Ok(self.clone()) };
        if let Some(producer) = &self.stream {
            let gpu = device::gpu(ordinal).map_err(device_error)?;
            device::wait_for(&gpu, consumer, producer.raw()).map_err(device_error)?;
        }
        Ok(self.produced_on(Some(Arc::new(StreamRef::borrowed(consumer)))))
    }
}

/// Wraps an array-like object (see `Array`) without copying; `cuda_stream` is where its data must
/// be ready for consumers.
#[pyfunction]
#[pyo3(signature = (source, cuda_stream = None))]
pub fn as_array(source: &Bound<'_, PyAny>, cuda_stream: Option<&Bound<'_, PyAny>>) -> PyResult<Py<Array>> {
    let cuda_stream = stream_arg(cuda_stream)?;
    if let (Ok(array), None) = (source.cast::<Array>(), cuda_stream) {
        return Ok(array.clone().unbind());
    }
    Py::new(source.py(), Array::from_object(source, cuda_stream)?)
}

/// `as_array` over a list; or, as nvCOMP's `as_arrays(buffer, offsets, sizes)`, byte arrays
/// carved from one contiguous buffer (`offsets[i]` and `sizes[i]` in bytes), sharing its memory,
/// with no Python object per piece read. Either way a `BatchArray`, as nvCOMP 6 returns.
#[pyfunction]
#[pyo3(signature = (sources, offsets = None, sizes = None, cuda_stream = None))]
pub fn as_arrays(
    sources: &Bound<'_, PyAny>,
    offsets: Option<&Bound<'_, PyAny>>,
    sizes: Option<&Bound<'_, PyAny>>,
    cuda_stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<BatchArray>> {
    let py = sources.py();
    let (offsets, sizes) = match (offsets, sizes) {
        (None, None) => {
            let stream = stream_arg(cuda_stream)?;
            let arrays =
                sources.try_iter()?.map(|source| Array::from_object(&source?, stream)).collect::<PyResult<_>>()?;
            return BatchArray::new_py(py, arrays);
        }
        (Some(offsets), Some(sizes)) => (offsets.extract::<Vec<usize>>()?, sizes.extract::<Vec<usize>>()?),
        _ => return Err(value_error("as_arrays takes offsets and sizes together")),
    };
    if offsets.len() != sizes.len() {
        return Err(value_error(format!("{} offsets but {} sizes", offsets.len(), sizes.len())));
    }
    let buffer = Array::from_object(sources, stream_arg(cuda_stream)?)?;
    buffer.require_contiguous("the buffer")?;
    let len = buffer.nbytes();
    let pieces = offsets
        .into_iter()
        .zip(sizes)
        .enumerate()
        .map(|(i, (offset, size))| {
            if offset.checked_add(size).is_none_or(|end| end > len) {
                return Err(value_error(format!(
                    "piece {i} ({offset} + {size} bytes) is outside the {len}-byte buffer"
                )));
            }
            Ok(Array { ptr: buffer.ptr + offset as u64, ..buffer.prefix(size, DType::bytes()) })
        })
        .collect::<PyResult<_>>()?;
    BatchArray::new_py(py, pieces)
}

/// An array from a DLPack capsule or an object with `__dlpack__`, without copying.
#[pyfunction]
#[pyo3(signature = (source, cuda_stream = None))]
pub fn from_dlpack(source: &Bound<'_, PyAny>, cuda_stream: Option<&Bound<'_, PyAny>>) -> PyResult<Py<Array>> {
    let cuda_stream = stream_arg(cuda_stream)?;
    let array = if source.hasattr("__dlpack__")? {
        Array::from_capsule(&capsule_of(source, cuda_stream)?, cuda_stream)?
    } else {
        Array::from_capsule(source, cuda_stream)?
    };
    Py::new(source.py(), array)
}

/// The capsule `obj.__dlpack__` gives; a device producer is asked to order its work before
/// `cuda_stream` (default: the legacy stream).
fn capsule_of<'py>(obj: &Bound<'py, PyAny>, cuda_stream: Option<u64>) -> PyResult<Bound<'py, PyAny>> {
    let (device_type, _): (i32, i32) = obj.call_method0("__dlpack_device__")?.extract()?;
    if device_type == DL_CPU {
        return obj.call_method0("__dlpack__");
    }
    let kwargs = PyDict::new(obj.py());
    kwargs.set_item("stream", cuda_stream.unwrap_or(LEGACY_STREAM))?;
    obj.call_method("__dlpack__", (), Some(&kwargs))
}

/// Integers (any array or list) as `u64`s.
pub fn integers(py: Python<'_>, values: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    let values = py.import("numpy")?.call_method1("ascontiguousarray", (values, "<u8"))?;
    let array = Array::from_object(&values, None)?;
    let bytes: &[u8] = unsafe { array.host_bytes() };
    Ok(bytes.as_chunks::<8>().0.iter().map(|&v| u64::from_le_bytes(v)).collect())
}

//! `Array` (nvCOMP's): a view of host or device memory that some other object (or ferrocomp)
//! owns, taken without a copy ([`wrap`]) and given back the same ways: `__cuda_array_interface__`,
//! `__array_interface__` and DLPack; with host and device copies. A device array may carry the
//! stream its data is produced on: consumers wait for it.

pub mod batch;
pub mod wrap;

use crate::alloc::host_memory;
use crate::device::{self, LEGACY_STREAM, StreamRef, stream_arg};
use crate::dlpack::{self, DL_CPU, DL_CUDA, TensorLayout};
use crate::dtype::DType;
use crate::enums::ArrayBufferKind;
use crate::errors::{device_error, value_error};
use crate::keep::Keep;
use ferrocomp::{DeviceView, DeviceViewMut};
use pyo3::exceptions::{PyAttributeError, PyBufferError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use std::sync::Arc;

/// A host or device array that nvCOMP's API reads and returns: zero-copy in and out through
/// `__cuda_array_interface__` (device), `__array_interface__` (host) and DLPack (both).
#[pyclass(module = "ferrocomp", frozen)]
#[derive(Clone)]
pub struct Array {
    pub(crate) ptr: u64,
    /// Elements per dimension, shared by the array's copies.
    pub(crate) shape: Arc<[usize]>,
    /// Byte strides, `None` for C order.
    pub(crate) strides: Option<Vec<isize>>,
    pub(crate) dtype: DType,
    /// The CUDA device holding the data, `None` for host memory.
    pub(crate) device: Option<u32>,
    pub(crate) readonly: bool,
    /// The stream whose queued work produces the data, for consumers to wait on.
    pub(crate) stream: Option<Arc<StreamRef>>,
    /// Held for its drop: what keeps the memory alive.
    pub(crate) _owner: Arc<Keep>,
}

impl Array {
    /// A one-dimensional array of `nbytes / dtype.size` elements at `ptr`.
    pub fn new(ptr: u64, nbytes: usize, dtype: DType, device: Option<u32>, keep: Arc<Keep>) -> Self {
        let shape = Arc::from([nbytes / dtype.size]);
        Self { ptr, shape, strides: None, dtype, device, readonly: false, stream: None, _owner: keep }
    }

    /// A host array holding a copy of `values`, of element type `dtype`.
    pub fn from_values<T: Copy>(values: &[T], dtype: DType) -> Self {
        let bytes = size_of_val(values);
        let mut words = vec![0u64; bytes.div_ceil(8)];
        // SAFETY: `words` has room for `bytes` bytes; plain values are copied as bytes.
        unsafe { std::ptr::copy_nonoverlapping(values.as_ptr().cast::<u8>(), words.as_mut_ptr().cast::<u8>(), bytes) };
        let ptr = words.as_ptr() as u64;
        Self::new(ptr, bytes, dtype, None, Arc::new(Keep::Host(words)))
    }

    /// Bytes the elements span (for C-ordered arrays, all of them).
    pub fn nbytes(&self) -> usize {
        self.shape.iter().product::<usize>() * self.dtype.size
    }

    /// Whether the elements are back to back in C order.
    pub fn is_contiguous(&self) -> bool {
        let Some(strides) = &self.strides else { return true };
        if self.shape.contains(&0) {
            return true;
        }
        let mut expected = self.dtype.size as isize;
        for (&dim, &stride) in self.shape.iter().zip(strides).rev() {
            if dim != 1 && stride != expected {
                return false;
            }
            expected *= dim as isize;
        }
        true
    }

    /// Fails unless the array is C-contiguous.
    pub fn require_contiguous(&self, what: impl std::fmt::Display) -> PyResult<()> {
        if self.is_contiguous() {
            return Ok(());
        }
        Err(value_error(format!(
            "{what} is not C-contiguous (shape {}, strides {}); make a contiguous copy first",
            python_tuple(&self.shape),
            python_tuple(&self.byte_strides())
        )))
    }

    /// Fails if the array is read-only.
    pub fn require_writable(&self, what: impl std::fmt::Display) -> PyResult<()> {
        if self.readonly { Err(value_error(format!("{what} is read-only"))) } else { Ok(()) }
    }

    /// The first `nbytes` bytes as a one-dimensional array of `dtype`, sharing the memory.
    pub fn prefix(&self, nbytes: usize, dtype: DType) -> Self {
        Self { shape: Arc::from([nbytes / dtype.size]), strides: None, dtype, ..self.clone() }
    }

    /// The same array, its data produced on `stream`.
    pub fn produced_on(&self, stream: Option<Arc<StreamRef>>) -> Self {
        Self { stream, ..self.clone() }
    }

    /// The bytes of a host array.
    ///
    /// # Safety
    /// The array is in host memory, and nothing writes it while the slice is used.
    pub unsafe fn host_bytes(&self) -> &[u8] {
        match self.nbytes() {
            0 => &[],
            n => unsafe { std::slice::from_raw_parts(self.ptr as *const u8, n) },
        }
    }

    /// The bytes of a host array, writable.
    ///
    /// # Safety
    /// The array is in host memory, writable, and used by nothing else while the slice is.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn host_bytes_mut(&self) -> &mut [u8] {
        match self.nbytes() {
            0 => &mut [],
            n => unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u8, n) },
        }
    }

    /// The bytes of a device array.
    pub fn device_bytes(&self) -> DeviceView<'_, u8> {
        unsafe { DeviceView::from_raw(self.ptr, self.nbytes()) }
    }

    /// The bytes of a device array, writable.
    pub fn device_bytes_mut(&self) -> DeviceViewMut<'_, u8> {
        unsafe { DeviceViewMut::from_raw(self.ptr, self.nbytes()) }
    }

    /// Byte strides, given or C order's.
    fn byte_strides(&self) -> Vec<isize> {
        if let Some(strides) = &self.strides {
            return strides.clone();
        }
        let mut strides = vec![0; self.shape.len()];
        let mut step = self.dtype.size as isize;
        for (stride, &dim) in strides.iter_mut().zip(self.shape.iter()).rev() {
            *stride = step;
            step *= dim as isize;
        }
        strides
    }

    /// The interface dict both array interfaces share.
    fn interface<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        let typestr = self.dtype.typestr();
        dict.set_item("shape", PyTuple::new(py, self.shape.iter())?)?;
        dict.set_item("typestr", &typestr)?;
        dict.set_item("descr", PyList::new(py, [("", typestr)])?)?;
        dict.set_item("data", (self.ptr, self.readonly))?;
        dict.set_item("strides", self.strides.as_ref().map(|s| PyTuple::new(py, s)).transpose()?)?;
        dict.set_item("version", 3)?;
        Ok(dict)
    }

    /// The device the array is on, loaded.
    pub fn gpu(&self) -> PyResult<Option<ferrocomp::Gpu>> {
        self.device.map(|ordinal| device::gpu(ordinal).map_err(device_error)).transpose()
    }

    /// A host copy (the array itself if it is on the host).
    pub fn to_host(&self, py: Python<'_>) -> PyResult<Self> {
        let Some(gpu) = self.gpu()? else { return Ok(self.clone()) };
        self.require_contiguous("the array")?;
        let nbytes = self.nbytes();
        let (ptr, keep) = host_memory(py, nbytes)?;
        let (src, pending) = (self.ptr, self.stream.as_ref().map(|s| s.raw()));
        py.detach(|| {
            if let Some(producer) = pending {
                device::synchronize(&gpu, producer)?;
            }
            device::copy_to_host(&gpu, ptr, src, nbytes)
        })
        .map_err(device_error)?;
        let copy = Self {
            ptr,
            strides: None,
            device: None,
            readonly: false,
            stream: None,
            _owner: Arc::new(keep),
            ..self.clone()
        };
        Ok(copy)
    }

    /// A device copy on the first GPU (the array itself if it is on a device), enqueued on stream
    /// `raw` and waited for if `synchronize`.
    pub fn to_device(&self, py: Python<'_>, synchronize: bool, raw: u64) -> PyResult<Self> {
        if self.device.is_some() {
            return Ok(self.clone());
        }
        self.require_contiguous("the array")?;
        let gpu = device::default_gpu().ok_or_else(|| device_error(ferrocomp::Error::NoDevice))?;
        let nbytes = self.nbytes();
        let buffer = gpu.alloc::<u8>(nbytes).map_err(device_error)?;
        let (dst, src) = (buffer.address(), self.ptr);
        py.detach(|| {
            device::copy_async(&gpu, dst, src, nbytes, raw)?;
            if synchronize { device::synchronize(&gpu, raw) } else { Ok(()) }
        })
        .map_err(device_error)?;
        let stream = (!synchronize).then(|| Arc::new(StreamRef::borrowed(raw)));
        let copy = Self {
            ptr: dst,
            strides: None,
            device: Some(0),
            readonly: false,
            stream,
            _owner: Arc::new(Keep::Device(buffer)),
            ..self.clone()
        };
        Ok(copy)
    }

    /// Export as a DLPack capsule, after making `consumer` (a stream handle; -1: none) wait.
    fn export_dlpack(slf: &Bound<'_, Self>, consumer: Option<i64>) -> PyResult<Py<PyAny>> {
        let array = slf.get();
        if let (Some(producer), Some(gpu), false) = (&array.stream, array.gpu()?, consumer == Some(-1)) {
            let consumer = consumer.map_or(LEGACY_STREAM, |c| c as u64);
            device::wait_for(&gpu, consumer, producer.raw()).map_err(device_error)?;
        }
        let layout = TensorLayout {
            ptr: array.ptr,
            shape: array.shape.to_vec(),
            strides: array.strides.clone(),
            dtype: array.dtype.clone(),
            device: array.device,
            readonly: array.readonly,
        };
        dlpack::export(slf.py(), slf.clone().into_any().unbind(), &layout)
    }
}

#[pymethods]
impl Array {
    /// Wraps `src_object` (anything with `__cuda_array_interface__`, `__array_interface__`, the
    /// buffer protocol or `__dlpack__`) without copying; `cuda_stream` is where its data must be
    /// ready for consumers (made to wait for the object's own stream).
    #[new]
    #[pyo3(signature = (src_object, cuda_stream = None))]
    fn py_new(src_object: &Bound<'_, PyAny>, cuda_stream: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Self::from_object(src_object, stream_arg(cuda_stream)?)
    }

    /// The CUDA array interface (v3) of a device array; `stream` is where its data is produced.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.device.is_none() {
            return Err(PyAttributeError::new_err("a host array has no __cuda_array_interface__"));
        }
        let dict = self.interface(py)?;
        dict.set_item("stream", self.stream.as_ref().map(|s| s.raw().max(LEGACY_STREAM)))?;
        Ok(dict)
    }

    /// The NumPy array interface (v3) of a host array.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.device.is_some() {
            return Err(PyAttributeError::new_err("a device array has no __array_interface__; call cpu() first"));
        }
        self.interface(py)
    }

    /// Exports the array as a DLPack capsule without copying. A consumer's `stream` (an int; None:
    /// the legacy default stream; -1: none) is made to wait for the array's producer.
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__(
        slf: &Bound<'_, Self>,
        stream: Option<i64>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        let _ = max_version; // a legacy capsule is valid for every consumer version
        if dl_device.is_some_and(|wanted| wanted != slf.get().__dlpack_device__()) {
            return Err(PyBufferError::new_err("ferrocomp exports arrays only on their own device"));
        }
        if copy == Some(true) {
            return Err(PyBufferError::new_err("ferrocomp exports arrays without copying"));
        }
        Self::export_dlpack(slf, stream)
    }

    /// The DLPack device: `(kDLCUDA, ordinal)` or `(kDLCPU, 0)`.
    fn __dlpack_device__(&self) -> (i32, i32) {
        match self.device {
            Some(ordinal) => (DL_CUDA, ordinal as i32),
            None => (DL_CPU, 0),
        }
    }

    /// Exports the array as a DLPack capsule without copying, ordered before `cuda_stream`.
    #[pyo3(signature = (cuda_stream = None))]
    fn to_dlpack(slf: &Bound<'_, Self>, cuda_stream: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let consumer = stream_arg(cuda_stream)?.map(|raw| raw as i64);
        Self::export_dlpack(slf, consumer)
    }

    /// A host copy of the array (the array itself if it is on the host).
    fn cpu(slf: &Bound<'_, Self>) -> PyResult<Py<Self>> {
        if slf.get().device.is_none() {
            return Ok(slf.clone().unbind());
        }
        Py::new(slf.py(), slf.get().to_host(slf.py())?)
    }

    /// A device copy of the array (the array itself if it is on a device). The copy is enqueued
    /// on `cuda_stream` (default: the legacy stream) and waited for if `synchronize`.
    #[pyo3(signature = (synchronize = true, cuda_stream = None))]
    fn cuda(slf: &Bound<'_, Self>, synchronize: bool, cuda_stream: Option<&Bound<'_, PyAny>>) -> PyResult<Py<Self>> {
        if slf.get().device.is_some() {
            return Ok(slf.clone().unbind());
        }
        let raw = stream_arg(cuda_stream)?.unwrap_or(0);
        Py::new(slf.py(), slf.get().to_device(slf.py(), synchronize, raw)?)
    }

    /// Where the data lives.
    #[getter]
    fn buffer_kind(&self) -> ArrayBufferKind {
        if self.device.is_some() { ArrayBufferKind::StridedDevice } else { ArrayBufferKind::StridedHost }
    }

    /// Bytes of the array's data.
    #[getter]
    fn buffer_size(&self) -> usize {
        self.nbytes()
    }

    /// Bytes allocated for the array (nvCOMP's `capacity`): its data's, as ferrocomp allocates
    /// what it returns to size and wraps other arrays as they are.
    #[getter]
    fn capacity(&self) -> usize {
        self.nbytes()
    }

    /// The element type, as a `numpy.dtype`.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("numpy")?.call_method1("dtype", (self.dtype.typestr(),))
    }

    /// The array-protocol type string (`"<i4"`).
    #[getter]
    fn typestr(&self) -> String {
        self.dtype.typestr()
    }

    /// Elements per dimension.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.shape.iter())
    }

    /// Bytes between consecutive elements per dimension.
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.byte_strides())
    }

    /// Number of elements.
    #[getter]
    fn size(&self) -> usize {
        self.shape.iter().product()
    }

    /// Bytes per element.
    #[getter]
    fn item_size(&self) -> usize {
        self.dtype.size
    }

    /// Number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Significant bits per element; 0 means all of them (nvCOMP's `precision`).
    #[getter]
    fn precision(&self) -> usize {
        0
    }

    /// The data as `bytes` (a copy; device arrays are copied to the host first).
    fn __bytes__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let host = self.to_host(py)?;
        host.require_contiguous("the array")?;
        Ok(PyBytes::new(py, unsafe { host.host_bytes() }))
    }

    fn __len__(&self) -> PyResult<usize> {
        self.shape.first().copied().ok_or_else(|| PyTypeError::new_err("len() of a 0-d array"))
    }

    fn __repr__(&self) -> String {
        let place = self.device.map_or("host".to_string(), |d| format!("cuda:{d}"));
        format!("Array(shape={}, typestr='{}', {place})", python_tuple(&self.shape), self.dtype.typestr())
    }
}

/// `values` as Python writes a tuple of them: `(3,)`, `(3, 4)`, `()`.
fn python_tuple<T: std::fmt::Display>(values: &[T]) -> String {
    let items: Vec<String> = values.iter().map(T::to_string).collect();
    match items.as_slice() {
        [one] => format!("({one},)"),
        _ => format!("({})", items.join(", ")),
    }
}

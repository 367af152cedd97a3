//! `BatchArray`: arrays held together as one Python object (nvCOMP 6's batch type), so that a
//! batched call takes and returns a thousand chunks without a Python object for each.

use super::Array;
use crate::device::stream_arg;
use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::ops::Deref;

/// A batch of arrays, on the host or a device (nvCOMP 6's `BatchArray`): what `as_arrays`
/// returns, and what `Codec.encode` and `decode` return for one. Supports `len()`, indexing
/// and iteration; an entry becomes an `Array` object only when it is read.
#[pyclass(module = "ferrocomp", frozen)]
pub struct BatchArray {
    pub arrays: Vec<Array>,
}

impl BatchArray {
    /// The batch of `arrays` as a Python object.
    pub fn new_py(py: Python<'_>, arrays: Vec<Array>) -> PyResult<Py<Self>> {
        Py::new(py, Self { arrays })
    }
}

#[pymethods]
impl BatchArray {
    fn __len__(&self) -> usize {
        self.arrays.len()
    }

    /// Entry `index` (negative counts from the end).
    fn __getitem__(&self, py: Python<'_>, index: isize) -> PyResult<Py<Array>> {
        let len = self.arrays.len() as isize;
        let at = if index < 0 { index + len } else { index };
        if !(0..len).contains(&at) {
            return Err(PyIndexError::new_err(format!("index {index} is outside a batch of {len}")));
        }
        Py::new(py, self.arrays[at as usize].clone())
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let entries = self.arrays.iter().map(|array| Py::new(py, array.clone())).collect::<PyResult<Vec<_>>>()?;
        Ok(PyList::new(py, entries)?.as_any().try_iter()?.into_any().unbind())
    }

    /// Bytes of each entry, as a list.
    #[getter]
    fn buffer_sizes(&self) -> Vec<usize> {
        self.arrays.iter().map(Array::nbytes).collect()
    }

    /// This batch with every entry in host memory: itself where every entry is already there,
    /// else a copy.
    fn cpu(slf: &Bound<'_, Self>) -> PyResult<Py<Self>> {
        let py = slf.py();
        if slf.get().arrays.iter().all(|array| array.device.is_none()) {
            return Ok(slf.clone().unbind());
        }
        let arrays = slf.get().arrays.iter().map(|array| array.to_host(py)).collect::<PyResult<_>>()?;
        Self::new_py(py, arrays)
    }

    /// This batch with every entry in device memory: itself where every entry is already there,
    /// else a copy made on `cuda_stream` (waited for where `synchronize`).
    #[pyo3(signature = (synchronize = true, cuda_stream = None))]
    fn cuda(slf: &Bound<'_, Self>, synchronize: bool, cuda_stream: Option<&Bound<'_, PyAny>>) -> PyResult<Py<Self>> {
        let py = slf.py();
        if slf.get().arrays.iter().all(|array| array.device.is_some()) {
            return Ok(slf.clone().unbind());
        }
        let raw = stream_arg(cuda_stream)?.unwrap_or(0);
        let to_device = |array: &Array| match array.device {
            Some(_) => Ok(array.clone()),
            None => array.to_device(py, synchronize, raw),
        };
        let arrays = slf.get().arrays.iter().map(to_device).collect::<PyResult<_>>()?;
        Self::new_py(py, arrays)
    }

    fn __repr__(&self) -> String {
        let total: usize = self.arrays.iter().map(Array::nbytes).sum();
        format!("BatchArray({} arrays, {total} bytes)", self.arrays.len())
    }
}

/// The arrays a call holds: its own, or a `BatchArray`'s, shared rather than copied.
pub enum Arrays {
    Owned(Vec<Array>),
    Batch(Py<BatchArray>),
}

impl Deref for Arrays {
    type Target = [Array];

    fn deref(&self) -> &[Array] {
        match self {
            Arrays::Owned(arrays) => arrays,
            Arrays::Batch(batch) => &batch.get().arrays,
        }
    }
}

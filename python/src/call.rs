//! The end of a chunk-list call: per-chunk outcomes turned into the arrays it returns, or into
//! one exception naming the first failing chunk; and `Pending`, which an asynchronous call
//! returns at once with the statuses and sizes (on the device for a GPU codec).

use crate::array::Array;
use crate::array::batch::{Arrays, BatchArray};
use crate::device::StreamRef;
use crate::dtype::{DType, ReturnType};
use crate::errors::{Direction, to_py_at};
use crate::keep::Keep;
use ferrocomp::{ChunkResults, Error, Status};
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::sync::{Arc, Mutex};

/// Where a call's per-chunk outcomes come from.
pub enum Outcomes {
    /// A GPU call's results, ready once its event completes.
    Gpu(Arc<ChunkResults>),
    /// A CPU call's outcomes, already known.
    Cpu(Vec<ferrocomp::Result<usize>>),
}

/// A chunk-list call in flight: its inputs (kept alive), outputs and outcomes.
pub struct Call {
    pub direction: Direction,
    pub inputs: Arrays,
    pub outputs: Arrays,
    /// Whether `outputs` are the caller's (`out=`), which keep their shape when filled.
    pub callers_outputs: bool,
    /// The element type of outputs ferrocomp allocated.
    pub dtype: ReturnType,
    /// What the call returns: one array, a list or a `BatchArray`, as it took.
    pub returns: Returns,
    /// Bytes before each block (a size prefix), not counted in the device sizes.
    pub prefix_len: usize,
    /// Whether the chunks are packed in one input and one output array (`decode_packed`): the
    /// call returns the decoded sizes rather than an array per chunk.
    pub packed: bool,
    pub outcomes: Outcomes,
}

impl Call {
    /// The arrays the call returns, each of the size its chunk came to, before it has finished
    /// (their `stream` tells consumers what to wait for).
    fn pending_arrays(&self, stream: Option<Arc<StreamRef>>) -> Vec<Array> {
        self.outputs.iter().map(|output| output.produced_on(stream.clone())).collect()
    }

    /// Waits for the call; the arrays it returns, or the exception for its first failing chunk.
    pub fn finish(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let sizes: Vec<usize> = match &self.outcomes {
            Outcomes::Gpu(results) => {
                let outcomes = py.detach(|| results.outcomes()).map_err(|e| to_py_at(e, self.direction, None))?;
                first_failure(outcomes, self.direction)?
            }
            Outcomes::Cpu(outcomes) => first_failure(outcomes.iter().map(copy_outcome), self.direction)?,
        };
        if self.packed {
            let sizes: Vec<u64> = sizes.into_iter().map(|size| size as u64).collect();
            return Ok(Py::new(py, Array::from_values(&sizes, DType::parse("<u8")?))?.into_any());
        }
        let arrays = self
            .outputs
            .iter()
            .zip(sizes)
            .map(|(output, size)| filled(output, size, self.callers_outputs, &self.dtype))
            .collect::<PyResult<Vec<_>>>()?;
        returned(py, arrays, self.returns)
    }

    /// The device (or host) arrays of statuses and sizes, for an asynchronous call.
    fn status_arrays(&self, stream: Option<Arc<StreamRef>>) -> PyResult<(Array, Array)> {
        match &self.outcomes {
            Outcomes::Gpu(results) => {
                let keep = Arc::new(Keep::Results(results.clone()));
                let device = self.outputs.first().and_then(|o| o.device).or(self.inputs.first().and_then(|i| i.device));
                let array = |ptr: u64, dtype: &str| -> PyResult<Array> {
                    let dtype = DType::parse(dtype)?;
                    let array = Array::new(ptr, results.len() * dtype.size, dtype, device, keep.clone());
                    Ok(array.produced_on(stream.clone()))
                };
                Ok((array(results.statuses().address(), "<u4")?, array(results.sizes().address(), "<u8")?))
            }
            Outcomes::Cpu(outcomes) => {
                let prefix = if self.direction == Direction::Encode { self.prefix_len } else { 0 };
                let statuses: Vec<u32> = outcomes.iter().map(status_code).collect();
                let sizes: Vec<u64> =
                    outcomes.iter().map(|o| o.as_ref().map_or(0, |&n| n.saturating_sub(prefix)) as u64).collect();
                Ok((
                    Array::from_values(&statuses, DType::parse("<u4")?),
                    Array::from_values(&sizes, DType::parse("<u8")?),
                ))
            }
        }
    }
}

/// `output` as filled with `size` bytes: a caller's array (`callers`) whole when filled exactly,
/// otherwise its first `size` bytes (as `dtype` for arrays ferrocomp allocated), ready to use.
pub fn filled(output: &Array, size: usize, callers: bool, dtype: &ReturnType) -> PyResult<Array> {
    let ready = output.produced_on(None);
    if callers {
        if size == output.nbytes() {
            return Ok(ready);
        }
        let dtype = if size.is_multiple_of(output.dtype.size) { output.dtype.clone() } else { DType::bytes() };
        return Ok(ready.prefix(size, dtype));
    }
    Ok(ready.prefix(size, dtype.of(size)?))
}

/// What a call returns for its arrays: one array, a list of them, or a `BatchArray` (no Python
/// object per array).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Returns {
    One,
    List,
    Batch,
}

/// The arrays as the call returns them.
pub fn returned(py: Python<'_>, arrays: Vec<Array>, returns: Returns) -> PyResult<Py<PyAny>> {
    if returns == Returns::Batch {
        return Ok(BatchArray::new_py(py, arrays)?.into_any());
    }
    let mut arrays = arrays.into_iter().map(|array| Py::new(py, array)).collect::<PyResult<Vec<_>>>()?;
    match (returns, arrays.pop()) {
        (Returns::One, Some(array)) => Ok(array.into_any()),
        (_, last) => Ok(PyList::new(py, arrays.into_iter().chain(last))?.into_any().unbind()),
    }
}

/// Each chunk's size, or the exception for the first chunk that failed.
pub fn first_failure(
    outcomes: impl IntoIterator<Item = ferrocomp::Result<usize>>,
    direction: Direction,
) -> PyResult<Vec<usize>> {
    outcomes.into_iter().enumerate().map(|(i, outcome)| outcome.map_err(|e| to_py_at(e, direction, Some(i)))).collect()
}

/// A copy of a CPU chunk outcome (errors are rebuilt: they are not `Clone`).
fn copy_outcome(outcome: &ferrocomp::Result<usize>) -> ferrocomp::Result<usize> {
    match outcome {
        Ok(size) => Ok(*size),
        Err(Error::Chunk { chunk, status }) => Err(Error::Chunk { chunk: *chunk, status: *status }),
        Err(Error::ChunkSize { chunk, expected, actual }) => {
            Err(Error::ChunkSize { chunk: *chunk, expected: *expected, actual: *actual })
        }
        Err(Error::Container(what)) => Err(Error::Container(what.clone())),
        Err(Error::InvalidArgument(what)) => Err(Error::InvalidArgument(what.clone())),
        Err(other) => Err(Error::InvalidArgument(other.to_string())),
    }
}

/// The status code a CPU chunk outcome reports (a bad size prefix reads as malformed).
fn status_code(outcome: &ferrocomp::Result<usize>) -> u32 {
    match outcome {
        Ok(_) => Status::Success as u32,
        Err(Error::Chunk { status, .. }) => *status as u32,
        Err(_) => Status::Malformed as u32,
    }
}

/// An asynchronous call (`sync=False`), returned at once. `statuses` (`uint32`, a `Status` code
/// per chunk) and `sizes` (`uint64`, bytes per chunk's block, without a size prefix) are device
/// arrays for a GPU codec, ready in order on the codec's stream; `arrays` are the outputs, whole.
/// `wait()` returns what the blocking call would have, or raises its exception. Chunks that
/// succeed are intact either way. Holding a `Pending` (or its statuses and sizes) holds one of
/// the codec's staging slots: drop them to let the codec reuse it.
#[pyclass(module = "ferrocomp", frozen)]
pub struct Pending {
    call: Call,
    statuses: Py<Array>,
    sizes: Py<Array>,
    /// The stream the call's work is queued on (`None` on the CPU).
    stream: Option<Arc<StreamRef>>,
    finished: Mutex<Option<PyResult<Py<PyAny>>>>,
}

impl Pending {
    /// The pending form of `call`, whose work is queued on `stream` (`None` on the CPU).
    pub fn new(py: Python<'_>, call: Call, stream: Option<Arc<StreamRef>>) -> PyResult<Self> {
        let (statuses, sizes) = call.status_arrays(stream.clone())?;
        Ok(Self {
            statuses: Py::new(py, statuses)?,
            sizes: Py::new(py, sizes)?,
            stream,
            call,
            finished: Mutex::new(None),
        })
    }
}

#[pymethods]
impl Pending {
    /// A `Status` code per chunk (`uint32`).
    #[getter]
    fn statuses(&self, py: Python<'_>) -> Py<Array> {
        self.statuses.clone_ref(py)
    }

    /// Bytes per chunk's block (`uint64`; 0 where a chunk failed).
    #[getter]
    fn sizes(&self, py: Python<'_>) -> Py<Array> {
        self.sizes.clone_ref(py)
    }

    /// The output arrays, whole, their data produced on the codec's stream (made when asked
    /// for: a call creates no Python object per chunk).
    #[getter]
    fn arrays(&self) -> Vec<Array> {
        self.call.pending_arrays(self.stream.clone())
    }

    /// Whether the call has finished, asked without waiting.
    #[getter]
    fn done(&self) -> PyResult<bool> {
        match &self.call.outcomes {
            Outcomes::Gpu(results) => results.is_done().map_err(crate::errors::device_error),
            Outcomes::Cpu(_) => Ok(true),
        }
    }

    /// Waits for the call; returns what the blocking call returns, or raises its exception
    /// (`DecodeError`/`EncodeError` naming the first failing chunk).
    fn wait(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let mut finished = self.finished.lock().unwrap();
        let result = finished.get_or_insert_with(|| self.call.finish(py));
        match result {
            Ok(value) => Ok(value.clone_ref(py)),
            Err(error) => Err(error.clone_ref(py)),
        }
    }
}

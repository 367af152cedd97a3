//! ferrocomp's errors as Python exceptions: bad arguments raise `ValueError`, bad data a
//! `DecodeError` (or `EncodeError`) naming the chunk and its status, device trouble `RuntimeError`.

use crate::enums::PyStatus;
use ferrocomp::Error;
use ferrocomp::settings::OptionError;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// Which way the data was going, which names the exception for a bad chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Encode,
    Decode,
}

/// The Python exception for `err`.
pub fn to_py(err: Error, direction: Direction) -> PyErr {
    to_py_at(err, direction, None)
}

/// The Python exception for `err`, which chunk `chunk` of a list gave (if known).
pub fn to_py_at(err: Error, direction: Direction, chunk: Option<usize>) -> PyErr {
    let message = err.to_string();
    let (chunk, status) = match err {
        Error::InvalidArgument(_) => return PyValueError::new_err(message),
        Error::Chunk { chunk, status } => (Some(chunk), Some(status.into())),
        Error::ChunkSize { chunk, .. } => (Some(chunk), Some(PyStatus::Malformed)),
        Error::ChecksumMismatch { chunk, .. } => (Some(chunk), Some(PyStatus::BadChecksum)),
        Error::ChecksumMissing(_) => (chunk, None),
        Error::Container(_) => (chunk, Some(PyStatus::Malformed)),
        _ => return PyRuntimeError::new_err(message),
    };
    chunk_error(direction, message, chunk, status)
}

/// A `DecodeError` or `EncodeError` (from `ferrocomp._errors`) carrying `chunk` and `status`.
pub fn chunk_error(direction: Direction, message: String, chunk: Option<usize>, status: Option<PyStatus>) -> PyErr {
    let class = match direction {
        Direction::Encode => "EncodeError",
        Direction::Decode => "DecodeError",
    };
    Python::attach(|py| {
        let exception = py
            .import("ferrocomp._errors")
            .and_then(|module| module.getattr(class))
            .and_then(|class| class.call1((message, chunk, status)));
        match exception {
            Ok(exception) => PyErr::from_value(exception),
            Err(failed) => failed,
        }
    })
}

/// A `ValueError` with `message`.
pub fn value_error(message: impl Into<String>) -> PyErr {
    PyValueError::new_err(message.into())
}

/// A `ValueError` for a codec option refused.
pub fn option_error(err: OptionError) -> PyErr {
    value_error(err.to_string())
}

/// The Python exception for a failure outside any chunk (device, copies, allocation).
pub fn device_error(err: Error) -> PyErr {
    to_py(err, Direction::Decode)
}

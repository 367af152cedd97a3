//! What keeps an array's memory alive: the object it came from, or what ferrocomp allocated.

use crate::buffer::HeldBuffer;
use crate::dlpack::ImportedTensor;
use ferrocomp::{ChunkResults, DeviceBuffer};
use pyo3::prelude::*;
use std::sync::Arc;

/// What keeps an array's memory alive.
pub enum Keep {
    /// A Python object: the array's source, or what an allocator returned.
    Object(Py<PyAny>),
    /// Device memory ferrocomp allocated.
    Device(DeviceBuffer<u8>),
    /// Host memory ferrocomp allocated (as words, so any element type is aligned).
    Host(Vec<u64>),
    /// Host bytes a ferrocomp call returned.
    Bytes(Vec<u8>),
    /// The results of a batched call (statuses and sizes on the device).
    Results(Arc<ChunkResults>),
    /// A buffer held through the buffer protocol.
    Buffer(HeldBuffer),
    /// A tensor taken from a DLPack capsule.
    Tensor(ImportedTensor),
}

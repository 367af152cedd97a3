//! nvCOMP's allocator hooks: `set_device_allocator`, `set_pinned_allocator` and
//! `set_host_allocator` route ferrocomp's allocations (its scratch, staging and the arrays it
//! returns) to a Python callable, e.g. CuPy's or RMM's. The callable is called as
//! `allocator(nbytes, stream)` with a `CudaStream`, and returns an object with an integer `ptr`;
//! the memory is given back by dropping that object.

use crate::device::{self, CudaStream};
use crate::keep::Keep;
use ferrocomp::alloc::{DeviceAllocator, HostAllocator, PinnedAllocator, SystemHostAllocator};
use ferrocomp::gpu::{CudaDeviceAllocator, CudaPinnedAllocator};
use ferrocomp::{Error, Gpu, Result};
use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A Python allocator: the callable, and the objects it returned that are still in use.
pub struct PyAllocator {
    callable: Py<PyAny>,
    live: Mutex<HashMap<u64, Py<PyAny>>>,
    kind: &'static str,
}

impl PyAllocator {
    /// Calls the allocator for `bytes`; returns the object it gave and its address.
    fn call(&self, py: Python<'_>, bytes: usize) -> PyResult<(Py<PyAny>, u64)> {
        let memory = self.callable.call1(py, (bytes, CudaStream::legacy()))?;
        let ptr = memory.getattr(py, "ptr")?.extract(py)?;
        Ok((memory, ptr))
    }

    /// `bytes` from the allocator, kept alive until [`PyAllocator::release`].
    fn allocate(&self, bytes: usize) -> Result<u64> {
        let (memory, ptr) = Python::attach(|py| self.call(py, bytes))
            .map_err(|e| Error::InvalidArgument(format!("the {} allocator failed: {e}", self.kind)))?;
        self.live.lock().unwrap().insert(ptr, memory);
        Ok(ptr)
    }

    /// Drops the object behind `ptr`, which returns its memory.
    fn release(&self, ptr: u64) {
        let memory = self.live.lock().unwrap().remove(&ptr);
        // Freed now where Python can run; otherwise (at shutdown) PyO3 defers the release.
        Python::try_attach(|_| drop(memory));
    }
}

impl DeviceAllocator for PyAllocator {
    fn allocate(&self, bytes: usize) -> Result<u64> {
        PyAllocator::allocate(self, bytes)
    }

    unsafe fn free(&self, address: u64) {
        self.release(address)
    }
}

impl PinnedAllocator for PyAllocator {
    fn allocate(&self, bytes: usize) -> Result<*mut u8> {
        PyAllocator::allocate(self, bytes).map(|ptr| ptr as *mut u8)
    }

    unsafe fn free(&self, ptr: *mut u8) {
        self.release(ptr as u64)
    }
}

impl HostAllocator for PyAllocator {
    fn allocate(&self, bytes: usize) -> Result<*mut u8> {
        PyAllocator::allocate(self, bytes).map(|ptr| ptr as *mut u8)
    }

    unsafe fn free(&self, ptr: *mut u8, _bytes: usize) {
        self.release(ptr as u64)
    }
}

/// The allocators set from Python (`None`: ferrocomp's defaults).
#[derive(Default)]
struct Hooks {
    device: Option<Arc<PyAllocator>>,
    pinned: Option<Arc<PyAllocator>>,
    host: Option<Arc<PyAllocator>>,
}

fn hooks() -> &'static Mutex<Hooks> {
    static HOOKS: Mutex<Hooks> = Mutex::new(Hooks { device: None, pinned: None, host: None });
    &HOOKS
}

/// Gives `gpu` the allocators set from Python.
pub fn apply(gpu: &Gpu) {
    let hooks = hooks().lock().unwrap();
    match &hooks.device {
        Some(hook) => gpu.set_device_allocator(hook.clone()),
        None => gpu.set_device_allocator(Arc::new(CudaDeviceAllocator)),
    }
    match &hooks.pinned {
        Some(hook) => gpu.set_pinned_allocator(hook.clone()),
        None => gpu.set_pinned_allocator(Arc::new(CudaPinnedAllocator)),
    }
    match &hooks.host {
        Some(hook) => gpu.set_host_allocator(hook.clone()),
        None => gpu.set_host_allocator(Arc::new(SystemHostAllocator)),
    }
}

/// Sets one hook from an optional callable and applies it to every loaded device.
fn set(allocator: Option<Py<PyAny>>, kind: &'static str, slot: fn(&mut Hooks) -> &mut Option<Arc<PyAllocator>>) {
    let hook = allocator.map(|callable| Arc::new(PyAllocator { callable, live: Mutex::default(), kind }));
    *slot(&mut hooks().lock().unwrap()) = hook;
    device::for_each_gpu(apply);
}

/// Sets the allocator for future device allocations: `allocator(nbytes, stream)` returns an
/// object with an integer `ptr` (device memory, freed when the object is dropped), such as
/// `cupy.cuda.alloc(nbytes)` or `rmm.DeviceBuffer(size=nbytes)`. `None` restores the default.
#[pyfunction]
#[pyo3(signature = (allocator = None))]
pub fn set_device_allocator(allocator: Option<Py<PyAny>>) {
    set(allocator, "device", |hooks| &mut hooks.device);
}

/// Sets the allocator for future pinned host allocations (staging for asynchronous copies), with
/// the same signature as `set_device_allocator`. `None` restores the default.
#[pyfunction]
#[pyo3(signature = (allocator = None))]
pub fn set_pinned_allocator(allocator: Option<Py<PyAny>>) {
    set(allocator, "pinned", |hooks| &mut hooks.pinned);
}

/// Sets the allocator for future host allocations: the host arrays ferrocomp returns (except the
/// native bitstream's CPU encode, whose bytes come from Rust) and headers read back from the
/// device. Same signature as `set_device_allocator`. `None` restores the default.
#[pyfunction]
#[pyo3(signature = (allocator = None))]
pub fn set_host_allocator(allocator: Option<Py<PyAny>>) {
    set(allocator, "host", |hooks| &mut hooks.host);
}

/// `bytes` of host memory for an array: from the host allocator if one is set, else from Rust.
/// Returns its address and what keeps it alive.
pub fn host_memory(py: Python<'_>, bytes: usize) -> PyResult<(u64, Keep)> {
    let hook = hooks().lock().unwrap().host.clone();
    match hook {
        Some(hook) => {
            let (memory, ptr) = hook.call(py, bytes)?;
            Ok((ptr, Keep::Object(memory)))
        }
        None => {
            let words = vec![0u64; bytes.div_ceil(8)];
            Ok((words.as_ptr() as u64, Keep::Host(words)))
        }
    }
}

//! The CUDA side of the bindings: one `Gpu` per device (prepared by the hook set with
//! [`on_load`]: the Python allocators), streams (the caller's, borrowed, or new ones), making one
//! stream wait for another without the host waiting, and plain copies. `FERROCOMP_CPU=1` hides
//! every device.

use ferrocomp::{DeviceView, Error, Gpu, RawStream, Result, Stream};
use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The stream handle CUDA reads as the legacy default stream.
pub const LEGACY_STREAM: u64 = 1;

/// The loaded devices, by ordinal. They live as long as the module, so allocator settings stick.
fn gpus() -> &'static Mutex<HashMap<u32, Gpu>> {
    static GPUS: OnceLock<Mutex<HashMap<u32, Gpu>>> = OnceLock::new();
    GPUS.get_or_init(Default::default)
}

/// What each device goes through as it loads, set once by [`on_load`].
static ON_LOAD: OnceLock<fn(&Gpu)> = OnceLock::new();

/// Has `prepare` run on each device as it loads (the first call wins).
pub fn on_load(prepare: fn(&Gpu)) {
    ON_LOAD.get_or_init(|| prepare);
}

/// Whether `FERROCOMP_CPU=1` hides the GPUs.
pub fn cpu_forced() -> bool {
    std::env::var("FERROCOMP_CPU").is_ok_and(|v| v == "1")
}

/// Device `ordinal`, loaded once and prepared by the [`on_load`] hook.
pub fn gpu(ordinal: u32) -> Result<Gpu> {
    if cpu_forced() {
        return Err(Error::NoDevice);
    }
    let mut gpus = gpus().lock().unwrap();
    if let Some(gpu) = gpus.get(&ordinal) {
        return Ok(gpu.clone());
    }
    let gpu = Gpu::new(ordinal)?;
    if let Some(prepare) = ON_LOAD.get() {
        prepare(&gpu);
    }
    gpus.insert(ordinal, gpu.clone());
    Ok(gpu)
}

/// The first device, or `None` where there is none (or the driver cannot start one).
pub fn default_gpu() -> Option<Gpu> {
    gpu(0).ok()
}

/// Calls `f` on every loaded device.
pub fn for_each_gpu(f: impl Fn(&Gpu)) {
    gpus().lock().unwrap().values().for_each(f);
}

/// The number of CUDA devices ferrocomp can use (0 without a driver, a device, or with
/// `FERROCOMP_CPU=1`).
#[pyfunction]
pub fn device_count() -> usize {
    if default_gpu().is_none() {
        return 0;
    }
    Gpu::count().unwrap_or(0)
}

/// A CUDA stream the bindings use: one of ours, or the caller's, borrowed by its handle.
pub struct StreamRef {
    stream: Stream,
}

// A stream handle may be used from any thread.
unsafe impl Sync for StreamRef {}

impl StreamRef {
    /// The caller's stream with handle `raw` (1: the legacy default stream, 2: per-thread).
    pub fn borrowed(raw: u64) -> Self {
        Self { stream: borrowed(raw) }
    }

    /// A stream ferrocomp owns, destroyed with the last reference.
    pub fn owned(stream: Stream) -> Self {
        Self { stream }
    }

    /// The raw handle.
    pub fn raw(&self) -> u64 {
        self.stream.as_raw() as u64
    }

    /// The stream, for ferrocomp's calls.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }
}

/// The caller's stream `raw`, borrowed for one call.
fn borrowed(raw: u64) -> Stream {
    // SAFETY: the handle is the caller's; CUDA rejects a stale one with an error.
    unsafe { Stream::borrow_raw(raw as RawStream) }
}

/// Makes `consumer` wait (on the device, not the host) for the work queued on `producer` so far.
pub fn wait_for(gpu: &Gpu, consumer: u64, producer: u64) -> Result<()> {
    gpu.make_current()?;
    borrowed(consumer).wait_for(&borrowed(producer))
}

/// Waits on the host for the work queued on stream `raw`.
pub fn synchronize(gpu: &Gpu, raw: u64) -> Result<()> {
    gpu.make_current()?;
    borrowed(raw).synchronize()
}

/// Enqueues copying `bytes` bytes from `src` to `dst` (host or device addresses) on stream `raw`.
pub fn copy_async(gpu: &Gpu, dst: u64, src: u64, bytes: usize, raw: u64) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    gpu.make_current()?;
    // SAFETY: the addresses come from the caller's arrays, which the call keeps alive.
    unsafe { borrowed(raw).copy_async(dst, src, bytes) }
}

/// Copies `bytes` bytes from device `src` to host `dst`, complete when this returns.
pub fn copy_to_host(gpu: &Gpu, dst: u64, src: u64, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the addresses come from the caller's arrays, which the call keeps alive.
    let (src, dst) =
        unsafe { (DeviceView::<u8>::from_raw(src, bytes), std::slice::from_raw_parts_mut(dst as *mut u8, bytes)) };
    gpu.copy_to_host_sync(src, dst)
}

/// The device that owns device memory at `address`: the only one where there is one (no
/// driver query per array), else the one the driver names, if it knows.
pub fn device_of(address: u64) -> Option<u32> {
    static ONLY_ONE: OnceLock<bool> = OnceLock::new();
    if *ONLY_ONE.get_or_init(|| Gpu::count().is_ok_and(|count| count == 1)) {
        return Some(0);
    }
    ferrocomp::gpu::device_of(address)
}

/// The device of a non-special stream, asked of its context.
fn device_of_stream(raw: u64) -> Result<u32> {
    borrowed(raw).device()
}

/// A stream handle from a Python argument: an `int`, or anything with an integer `ptr` (a
/// `CudaStream`, a CuPy or Numba stream). `None` stays `None`.
pub fn stream_arg(arg: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    let Some(arg) = arg.filter(|arg| !arg.is_none()) else { return Ok(None) };
    match arg.getattr_opt("ptr")? {
        Some(ptr) => Ok(Some(ptr.extract()?)),
        None => Ok(Some(arg.extract()?)),
    }
}

/// Wrapper around a CUDA stream (nvCOMP's `CudaStream`): a view of the caller's (`borrow`) or a
/// new one ferrocomp owns (`make_new`). Allocators set with `set_*_allocator` receive one.
#[pyclass(module = "ferrocomp", frozen)]
pub struct CudaStream {
    pub(crate) stream: Arc<StreamRef>,
    device: i32,
}

impl CudaStream {
    /// The legacy default stream, as passed to the allocator callbacks.
    pub fn legacy() -> Self {
        Self { stream: Arc::new(StreamRef::borrowed(0)), device: 0 }
    }
}

#[pymethods]
impl CudaStream {
    /// A view of the stream with handle `cuda_stream`. `device_idx` names the device of a special
    /// stream (0, 1 or 2); -1 means the current one (device 0), or for others the stream's own.
    #[staticmethod]
    #[pyo3(signature = (cuda_stream, device_idx = -1))]
    fn borrow(cuda_stream: u64, device_idx: i32) -> PyResult<Self> {
        let special = cuda_stream <= 2;
        let device = match (special, device_idx) {
            (true, -1) => 0,
            (true, index) => index,
            (false, index) => {
                // The driver reads the handle itself, so there must be a driver and a device.
                default_gpu().ok_or_else(|| crate::errors::device_error(Error::NoDevice))?;
                let own = device_of_stream(cuda_stream).map_err(crate::errors::device_error)?;
                if index != -1 && index as u32 != own {
                    return Err(crate::errors::value_error(format!(
                        "stream {cuda_stream:#x} belongs to device {own}, not {index}"
                    )));
                }
                own as i32
            }
        };
        Ok(Self { stream: Arc::new(StreamRef::borrowed(cuda_stream)), device })
    }

    /// A new stream on device `device_idx` (-1: device 0), owned by the returned object.
    #[staticmethod]
    #[pyo3(signature = (device_idx = -1))]
    fn make_new(device_idx: i32) -> PyResult<Self> {
        let device = device_idx.max(0);
        let stream = gpu(device as u32).and_then(|gpu| gpu.stream()).map_err(crate::errors::device_error)?;
        Ok(Self { stream: Arc::new(StreamRef::owned(stream)), device })
    }

    /// The underlying `cudaStream_t` as an integer (named as CuPy names it).
    #[getter]
    fn ptr(&self) -> u64 {
        self.stream.raw()
    }

    /// The device index associated with the stream.
    #[getter]
    fn device(&self) -> i32 {
        self.device
    }

    /// Whether it is one of CUDA's special streams (default, legacy or per-thread).
    #[getter]
    fn is_special(&self) -> bool {
        self.stream.raw() <= 2
    }

    fn __int__(&self) -> u64 {
        self.stream.raw()
    }

    fn __repr__(&self) -> String {
        format!("CudaStream(ptr={:#x}, device={})", self.stream.raw(), self.device)
    }
}

//! The device: context, the kernel module (loaded once per context and cached), streams
//! (new, or the caller's borrowed), copies and launches.

use crate::alloc::{
    Allocators, DeviceAllocator, DeviceBuffer, DeviceView, DeviceViewMut, HostAllocator, PinnedAllocator,
};
use crate::batch::Kernel;
use crate::error::{Error, Result, check};
use cust::context::Context;
use cust::device::Device;
use cust::module::Module;
use cust::sys as cu;
use ferrocomp_format::Algorithm;
use ferrocomp_kernels_gpu as kernels;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock, RwLock, Weak};

/// A CUDA device with ferrocomp's kernels loaded. Cheap to clone; one per device is shared.
#[derive(Clone)]
pub struct Gpu {
    inner: Arc<GpuInner>,
}

struct GpuInner {
    // Kept loaded while the kernel handles are used; field order is drop order, so the
    // module goes before the context it lives in.
    _module: Module,
    context: Context,
    kernels: Kernels,
    name: String,
    allocators: RwLock<Allocators>,
}

/// Raw handles of the kernels, valid while the module is loaded.
pub(crate) struct Kernels {
    /// Each algorithm's batched kernels, in [`Algorithm::ALL`]'s order.
    codecs: Vec<CodecKernels>,
    pub crc32: cu::CUfunction,
    pub gather: cu::CUfunction,
    pub scatter: cu::CUfunction,
    pub blosc_unshuffle: cu::CUfunction,
}

/// One codec's batched kernels, named `{codec}_compress`, `{codec}_decompress` and
/// `{codec}_decompressed_sizes` in the PTX.
#[derive(Clone, Copy)]
struct CodecKernels {
    compress: cu::CUfunction,
    decompress: cu::CUfunction,
    decompressed_sizes: cu::CUfunction,
}

// The handles are plain driver handles, usable from any thread once the context is current.
unsafe impl Send for GpuInner {}
unsafe impl Sync for GpuInner {}

impl Gpu {
    /// The device with index `ordinal`, its primary context and the kernels. Calls for the same
    /// device share one loaded module.
    pub fn new(ordinal: u32) -> Result<Self> {
        static LOADED: OnceLock<Mutex<HashMap<u32, Weak<GpuInner>>>> = OnceLock::new();
        let mut loaded = LOADED.get_or_init(Default::default).lock().unwrap();
        if let Some(inner) = loaded.get(&ordinal).and_then(Weak::upgrade) {
            return Ok(Self { inner });
        }
        cust::init(cust::CudaFlags::empty()).map_err(|e| match e {
            cust::error::CudaError::NoDevice => Error::NoDevice,
            e => e.into(),
        })?;
        if cust::device::Device::num_devices()? <= ordinal {
            return Err(Error::NoDevice);
        }
        let device = Device::get_device(ordinal)?;
        let context = Context::new(device)?;
        // FERROCOMP_MAX_REGISTERS caps registers per thread when the driver compiles the PTX.
        let jit: Vec<_> = std::env::var("FERROCOMP_MAX_REGISTERS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(cust::module::ModuleJitOption::MaxRegisters)
            .into_iter()
            .collect();
        // FERROCOMP_PTX loads the kernels from that PTX file (rustc's output, as the shipped
        // one) instead, to try a kernel variant without rebuilding the host.
        let ptx = match std::env::var_os("FERROCOMP_PTX") {
            Some(path) => std::fs::read_to_string(&path)
                .map_err(|e| Error::InvalidArgument(format!("FERROCOMP_PTX {}: {e}", path.to_string_lossy())))?,
            None => kernels::PTX.to_owned(),
        };
        let ptx = kernels::with_launch_bounds(&ptx);
        let module = Module::from_ptx(&ptx, &jit)?;
        // Compiling the PTX (when the driver's cache lacks it) leaves a few hundred MB the C heap
        // keeps though they are free; hand them back so a process's footprint is its own.
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        unsafe {
            libc::malloc_trim(0)
        };
        let function = |name: &str| module.get_function(name).map(|f| f.to_raw());
        let codec = |name: &str| -> Result<CodecKernels> {
            Ok(CodecKernels {
                compress: function(&format!("{name}_compress"))?,
                decompress: function(&format!("{name}_decompress"))?,
                decompressed_sizes: function(&format!("{name}_decompressed_sizes"))?,
            })
        };
        let kernels = Kernels {
            codecs: Algorithm::ALL.iter().map(|algorithm| codec(algorithm.name())).collect::<Result<_>>()?,
            crc32: function("crc32")?,
            gather: function("gather")?,
            scatter: function("scatter")?,
            blosc_unshuffle: function("blosc_unshuffle")?,
        };
        let inner = Arc::new(GpuInner {
            name: device.name()?,
            _module: module,
            context,
            kernels,
            allocators: RwLock::new(Allocators::default()),
        });
        loaded.insert(ordinal, Arc::downgrade(&inner));
        Ok(Self { inner })
    }

    /// The device with index `ordinal`, or `None` on a machine without a CUDA device, where
    /// codecs given `None` run on the CPU; any other failure (a broken driver, say) is an error.
    pub fn optional(ordinal: u32) -> Result<Option<Self>> {
        match Self::new(ordinal) {
            Err(Error::NoDevice) => Ok(None),
            gpu => gpu.map(Some),
        }
    }

    /// The device's name, e.g. "NVIDIA H200".
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Makes this device's context current on the calling thread.
    pub fn make_current(&self) -> Result<()> {
        check("cuCtxSetCurrent", unsafe { cu::cuCtxSetCurrent(self.inner.context.as_raw()) })
    }

    /// A new non-blocking stream, destroyed on drop.
    pub fn stream(&self) -> Result<Stream> {
        self.make_current()?;
        let owned = cust::stream::Stream::new(cust::stream::StreamFlags::NON_BLOCKING, None)?;
        Ok(Stream { raw: owned.as_inner(), _owned: Some(owned) })
    }

    /// Routes device allocations to `allocator` (as nvCOMP's `set_device_allocator`).
    pub fn set_device_allocator(&self, allocator: Arc<dyn DeviceAllocator>) {
        self.inner.allocators.write().unwrap().device = allocator;
    }

    /// Routes pinned host allocations to `allocator`.
    pub fn set_pinned_allocator(&self, allocator: Arc<dyn PinnedAllocator>) {
        self.inner.allocators.write().unwrap().pinned = allocator;
    }

    /// Routes host allocations to `allocator`.
    pub fn set_host_allocator(&self, allocator: Arc<dyn HostAllocator>) {
        self.inner.allocators.write().unwrap().host = allocator;
    }

    /// The allocators in use.
    pub fn allocators(&self) -> Allocators {
        self.inner.allocators.read().unwrap().clone()
    }

    /// `len` values of device memory from the device allocator (contents undefined).
    pub fn alloc<T: Copy>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        self.make_current()?;
        DeviceBuffer::uninit(&self.allocators().device, len)
    }

    /// A device copy of `data`, complete when this returns.
    pub fn upload<T: Copy>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let mut buffer = self.alloc(data.len())?;
        self.copy_to_device_sync(data, buffer.view_mut())?;
        Ok(buffer)
    }

    /// Copies `src` into the start of `dst`, complete when this returns.
    pub fn copy_to_device_sync<T: Copy>(&self, src: &[T], dst: DeviceViewMut<'_, T>) -> Result<()> {
        assert!(src.len() <= dst.len(), "copy larger than its destination");
        self.make_current()?;
        check("cuMemcpyHtoD", unsafe { cu::cuMemcpyHtoD_v2(dst.address(), src.as_ptr().cast(), size_of_val(src)) })
    }

    /// Copies `src` into the start of `dst`, complete when this returns.
    pub fn copy_to_host_sync<T: Copy>(&self, src: DeviceView<'_, T>, dst: &mut [T]) -> Result<()> {
        assert!(dst.len() <= src.len(), "copy larger than its source");
        self.make_current()?;
        check("cuMemcpyDtoH", unsafe { cu::cuMemcpyDtoH_v2(dst.as_mut_ptr().cast(), src.address(), size_of_val(dst)) })
    }

    /// A host copy of `src`, complete when this returns.
    pub fn download<T: Copy + Default>(&self, src: DeviceView<'_, T>) -> Result<Vec<T>> {
        let mut out = vec![T::default(); src.len()];
        self.copy_to_host_sync(src, &mut out)?;
        Ok(out)
    }

    pub(crate) fn kernels(&self) -> &Kernels {
        &self.inner.kernels
    }

    /// The handle of `algorithm`'s `kernel`.
    pub(crate) fn kernel(&self, algorithm: Algorithm, kernel: Kernel) -> cu::CUfunction {
        let index = Algorithm::ALL.iter().position(|&a| a == algorithm).expect("every algorithm is in ALL");
        let codec = &self.inner.kernels.codecs[index];
        match kernel {
            Kernel::Compress => codec.compress,
            Kernel::Decompress => codec.decompress,
            Kernel::DecompressedSizes => codec.decompressed_sizes,
        }
    }

    /// Launches `function` on a 1-D grid.
    ///
    /// # Safety
    /// `args` must point to values matching the kernel's parameters, and the memory they
    /// name must stay valid until the kernel has run.
    pub(crate) unsafe fn launch(
        &self,
        function: cu::CUfunction,
        blocks: u32,
        threads: u32,
        shared_bytes: u32,
        stream: &Stream,
        args: &[*mut c_void],
    ) -> Result<()> {
        if blocks == 0 {
            return Ok(());
        }
        self.make_current()?;
        check("cuLaunchKernel", unsafe {
            cu::cuLaunchKernel(
                function,
                blocks,
                1,
                1,
                threads,
                1,
                1,
                shared_bytes,
                stream.raw,
                args.as_ptr() as *mut _,
                std::ptr::null_mut(),
            )
        })
    }
}

/// A CUDA stream: one of ferrocomp's own, or the caller's, borrowed.
pub struct Stream {
    raw: cu::CUstream,
    _owned: Option<cust::stream::Stream>,
}

unsafe impl Send for Stream {}

impl Stream {
    /// Wraps the caller's stream; ferrocomp enqueues work on it and never destroys it.
    ///
    /// # Safety
    /// `raw` must be a valid stream of the device's primary context (or null, the legacy
    /// default stream) that outlives the returned value.
    pub unsafe fn borrow_raw(raw: cu::CUstream) -> Self {
        Self { raw, _owned: None }
    }

    /// The raw driver handle.
    pub fn as_raw(&self) -> cu::CUstream {
        self.raw
    }

    /// Waits for all work enqueued on the stream.
    pub fn synchronize(&self) -> Result<()> {
        check("cuStreamSynchronize", unsafe { cu::cuStreamSynchronize(self.raw) })
    }

    /// Enqueues a copy of `src` into the start of `dst`. `src` is pinned so the copy is
    /// asynchronous; it must not be dropped before the stream reaches the copy.
    pub(crate) fn copy_to_device<T: Copy>(&self, src: &[T], dst: u64) -> Result<()> {
        check("cuMemcpyHtoDAsync", unsafe {
            cu::cuMemcpyHtoDAsync_v2(dst, src.as_ptr().cast(), size_of_val(src), self.raw)
        })
    }

    /// Enqueues a copy of `len` bytes from device `src` to device `dst`.
    pub(crate) fn copy_on_device(&self, src: u64, dst: u64, len: usize) -> Result<()> {
        check("cuMemcpyDtoDAsync", unsafe { cu::cuMemcpyDtoDAsync_v2(dst, src, len, self.raw) })
    }

    /// Enqueues a copy from device `src` into `dst` (pinned; read it after synchronizing).
    pub(crate) fn copy_to_host<T: Copy>(&self, src: u64, dst: &mut [T]) -> Result<()> {
        check("cuMemcpyDtoHAsync", unsafe {
            cu::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), src, size_of_val(dst), self.raw)
        })
    }
}

/// A CUDA event without timing, destroyed on drop.
pub(crate) struct Event(cu::CUevent);

// An event handle may be recorded, queried and waited on from any thread.
unsafe impl Send for Event {}
unsafe impl Sync for Event {}

impl Event {
    /// A new event; it reads as done until first recorded.
    pub(crate) fn new() -> Result<Self> {
        let mut event = std::ptr::null_mut();
        let flags = cu::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
        check("cuEventCreate", unsafe { cu::cuEventCreate(&mut event, flags) })?;
        Ok(Self(event))
    }

    /// Marks the point `stream` has reached in its queue.
    pub(crate) fn record(&self, stream: &Stream) -> Result<()> {
        check("cuEventRecord", unsafe { cu::cuEventRecord(self.0, stream.as_raw()) })
    }

    /// Whether the stream has passed the recorded point, asked without waiting.
    pub(crate) fn is_done(&self) -> Result<bool> {
        match unsafe { cu::cuEventQuery(self.0) } {
            cu::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => check("cuEventQuery", other).map(|()| true),
        }
    }

    /// Waits on the host until the stream has passed the recorded point.
    pub(crate) fn synchronize(&self) -> Result<()> {
        check("cuEventSynchronize", unsafe { cu::cuEventSynchronize(self.0) })
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        unsafe { cu::cuEventDestroy_v2(self.0) };
    }
}

/// Blocks for `count` warps (or groups of 32 threads) at `per_block` per block.
pub(crate) fn blocks(count: usize, per_block: u32) -> u32 {
    count.div_ceil(per_block as usize) as u32
}

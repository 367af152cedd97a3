//! The device, the one part of the crate that calls the CUDA driver: the driver itself (loaded
//! at first use), a device's primary context and the kernel module (loaded once per device and
//! shared), streams (new, or the caller's borrowed), memory, copies and launches.

mod driver;
mod memory;
mod stream;

pub use memory::{Allocators, CudaDeviceAllocator, CudaPinnedAllocator};
pub(crate) use stream::Event;
pub use stream::{RawStream, Stream, device_of};

use crate::alloc::{DeviceAllocator, DeviceBuffer, DeviceView, DeviceViewMut, HostAllocator, PinnedAllocator};
use crate::error::{Error, Result};
use driver::{Module, PrimaryContext, check, cu};
use ferrocomp_format::Algorithm;
use ferrocomp_kernels_gpu as kernels;
use std::borrow::Cow;
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
    context: PrimaryContext,
    kernels: Kernels,
    name: String,
    multiprocessors: u32,
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
    /// `{codec}_decompress_blocks`, for the codecs with a block decoder.
    decompress_blocks: Option<cu::CUfunction>,
    /// `{codec}_compress_parts`, for the codecs whose chunks longer than a part have their own
    /// compress kernel.
    compress_parts: Option<cu::CUfunction>,
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
        let context = PrimaryContext::retain(ordinal)?;
        context.make_current()?;
        // FERROCOMP_MAX_REGISTERS caps registers per thread when the driver compiles the PTX.
        let max_registers = std::env::var("FERROCOMP_MAX_REGISTERS").ok().and_then(|v| v.parse().ok());
        // FERROCOMP_PTX loads the kernels from that PTX file (rustc's output, as the shipped
        // one) instead, to try a kernel variant without rebuilding the host.
        let ptx = match std::env::var_os("FERROCOMP_PTX") {
            Some(path) => Cow::Owned(
                std::fs::read_to_string(&path)
                    .map_err(|e| Error::InvalidArgument(format!("FERROCOMP_PTX {}: {e}", path.to_string_lossy())))?,
            ),
            None => Cow::Borrowed(kernels::PTX),
        };
        let ptx = kernels::with_launch_bounds(&ptx);
        let module = Module::from_ptx(ptx, max_registers)?;
        // Compiling the PTX (when the driver's cache lacks it) leaves a few hundred MB the C heap
        // keeps though they are free; hand them back so a process's footprint is its own.
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        unsafe {
            libc::malloc_trim(0)
        };
        let function = |name: &str| module.function(name);
        let codec = |name: &str| -> Result<CodecKernels> {
            // A codec's kernels may take as much shared memory as a block may have (Cascaded's,
            // given few chunks, put up to an SM's worth of warps on each). It has a block decoder,
            // or a parts compressor, where the kernels' launch bounds name one.
            let with_shared = |name: &str| module.function_with_shared(name, kernels::MAX_SHARED_BYTES_PER_BLOCK);
            let optional = |kernel: &str| -> Result<Option<cu::CUfunction>> {
                let name = format!("{name}_{kernel}");
                match kernels::LAUNCH_BOUNDS.iter().any(|&(bounded, ..)| bounded == name) {
                    true => Ok(Some(with_shared(&name)?)),
                    false => Ok(None),
                }
            };
            Ok(CodecKernels {
                compress: with_shared(&format!("{name}_compress"))?,
                decompress: with_shared(&format!("{name}_decompress"))?,
                decompressed_sizes: function(&format!("{name}_decompressed_sizes"))?,
                decompress_blocks: optional("decompress_blocks")?,
                compress_parts: optional("compress_parts")?,
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
            name: context.device_name()?,
            multiprocessors: context.multiprocessors()?,
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

    /// The number of CUDA devices (0 without a driver).
    pub fn count() -> Result<usize> {
        driver::device_count()
    }

    /// The device's name, e.g. "NVIDIA H200".
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The device's streaming multiprocessors (132 on an H100 or H200): how many blocks of a
    /// kernel that takes a whole SM run at once.
    pub fn multiprocessors(&self) -> u32 {
        self.inner.multiprocessors
    }

    /// Makes this device's context current on the calling thread.
    pub fn make_current(&self) -> Result<()> {
        self.inner.context.make_current()
    }

    /// A new non-blocking stream, destroyed on drop.
    pub fn stream(&self) -> Result<Stream> {
        self.make_current()?;
        Stream::new()
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
    pub(crate) fn kernel(&self, algorithm: Algorithm, kernel: Kernel) -> Result<cu::CUfunction> {
        let index = Algorithm::ALL.iter().position(|&a| a == algorithm).expect("every algorithm is in ALL");
        let codec = &self.inner.kernels.codecs[index];
        match kernel {
            Kernel::Compress => Ok(codec.compress),
            Kernel::Decompress => Ok(codec.decompress),
            Kernel::DecompressedSizes => Ok(codec.decompressed_sizes),
            Kernel::DecompressBlocks => codec
                .decompress_blocks
                .ok_or_else(|| Error::InvalidArgument(format!("{} has no block decoder", algorithm.name()))),
            Kernel::CompressParts => codec
                .compress_parts
                .ok_or_else(|| Error::InvalidArgument(format!("{} has no parts compressor", algorithm.name()))),
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
                stream.as_raw(),
                args.as_ptr() as *mut _,
                std::ptr::null_mut(),
            )
        })
    }
}

/// Blocks for `count` warps (or groups of 32 threads) at `per_block` per block.
pub(crate) fn blocks(count: usize, per_block: u32) -> u32 {
    count.div_ceil(per_block as usize) as u32
}

/// The kernels of a codec: `{algorithm}_compress`, `{algorithm}_decompress` and
/// `{algorithm}_decompressed_sizes` in the PTX.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Compresses each chunk.
    Compress,
    /// Decompresses each chunk.
    Decompress,
    /// Finds each chunk's decompressed size.
    DecompressedSizes,
    /// Decompresses each chunk with a block of threads (`{codec}_decompress_blocks`).
    DecompressBlocks,
    /// Compresses each chunk, past one part if need be (`{codec}_compress_parts`).
    CompressParts,
}

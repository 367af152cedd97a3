//! nvCOMP 6's batched LZ4 C API, loaded at run time from `libnvcomp.so.6` (as its `nvcomp/lz4.h` and
//! `nvcomp.h` declare it). Device arrays of chunk addresses (`const void* const*`) and sizes
//! (`const size_t*`) are the same memory as ferrocomp's `u64`/`usize` arrays, so both read one batch.

use crate::Chunked;
use anyhow::{Context, Result, bail};
use cust::sys::CUstream;
use ferrocomp::DeviceBuffer;
use libloading::Library;
use std::ffi::{CStr, c_char, c_void};
use std::mem::ManuallyDrop;
use std::path::Path;

/// `nvcompStatus_t` (0 is `nvcompSuccess`).
type Status = i32;

/// `nvcompBatchedLZ4CompressOpts_t`. All zeros are nvCOMP's defaults: bytes (`NVCOMP_TYPE_CHAR`), no bitshuffle.
#[repr(C)]
#[derive(Clone, Copy)]
struct CompressOpts {
    data_type: i32,
    bitshuffle_mode: i32,
    reserved: [u8; 56],
}

/// `nvcompBatchedLZ4DecompressOpts_t`. All zeros are nvCOMP's defaults: default backend, bytes, no bitshuffle.
#[repr(C)]
#[derive(Clone, Copy)]
struct DecompressOpts {
    backend: i32,
    sort_before_hw_decompress: i32,
    data_type: i32,
    bitshuffle_mode: i32,
    reserved: [u8; 48],
}

const _: () = assert!(size_of::<CompressOpts>() == 64 && size_of::<DecompressOpts>() == 64);

/// `nvcompBatchedLZ4CompressDefaultOpts`.
const COMPRESS_DEFAULTS: CompressOpts = CompressOpts { data_type: 0, bitshuffle_mode: 0, reserved: [0; 56] };

/// `nvcompBatchedLZ4DecompressDefaultOpts`.
const DECOMPRESS_DEFAULTS: DecompressOpts =
    DecompressOpts { backend: 0, sort_before_hw_decompress: 0, data_type: 0, bitshuffle_mode: 0, reserved: [0; 48] };

/// `nvcompProperties_t`.
#[repr(C)]
#[derive(Default)]
struct Properties {
    version: u32,
    cudart_version: u32,
}

type GetProperties = unsafe extern "C" fn(*mut Properties) -> Status;
type GetStatusString = unsafe extern "C" fn(Status) -> *const c_char;
type CompressGetTempSize = unsafe extern "C" fn(usize, usize, CompressOpts, *mut usize, usize, CUstream) -> Status;
type CompressGetMaxOutputChunkSize = unsafe extern "C" fn(usize, CompressOpts, *mut usize) -> Status;
type CompressAsync = unsafe extern "C" fn(
    *const *const c_void,
    *const usize,
    usize,
    usize,
    *mut c_void,
    usize,
    *const *mut c_void,
    *mut usize,
    CompressOpts,
    *mut Status,
    CUstream,
) -> Status;
type DecompressGetTempSize = unsafe extern "C" fn(usize, usize, DecompressOpts, *mut usize, usize, CUstream) -> Status;
type DecompressAsync = unsafe extern "C" fn(
    *const *const c_void,
    *const usize,
    *const usize,
    *mut usize,
    usize,
    *mut c_void,
    usize,
    *const *mut c_void,
    DecompressOpts,
    *mut Status,
    CUstream,
) -> Status;

/// The loaded library and the entry points the benchmark calls.
pub struct Nvcomp {
    get_properties: GetProperties,
    get_status_string: GetStatusString,
    compress_get_temp_size: CompressGetTempSize,
    compress_get_max_output_chunk_size: CompressGetMaxOutputChunkSize,
    compress_async: CompressAsync,
    decompress_get_temp_size: DecompressGetTempSize,
    decompress_async: DecompressAsync,
    // Keeps the entry points above valid; never unloaded, so nvCOMP's CUDA runtime is torn down only at exit.
    _library: ManuallyDrop<Library>,
}

impl Nvcomp {
    /// Loads `libnvcomp.so.6` from `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let library = unsafe { Library::new(path) }.with_context(|| format!("loading {}", path.display()))?;
        unsafe {
            Ok(Self {
                get_properties: entry(&library, "nvcompGetProperties")?,
                get_status_string: entry(&library, "nvcompGetStatusString")?,
                compress_get_temp_size: entry(&library, "nvcompBatchedLZ4CompressGetTempSize")?,
                compress_get_max_output_chunk_size: entry(&library, "nvcompBatchedLZ4CompressGetMaxOutputChunkSize")?,
                compress_async: entry(&library, "nvcompBatchedLZ4CompressAsync")?,
                decompress_get_temp_size: entry(&library, "nvcompBatchedLZ4DecompressGetTempSize")?,
                decompress_async: entry(&library, "nvcompBatchedLZ4DecompressAsync")?,
                _library: ManuallyDrop::new(library),
            })
        }
    }

    /// The library's version and the CUDA runtime version it was built with, e.g. "6000 (CUDA runtime 13040)".
    pub fn version(&self) -> Result<String> {
        let mut properties = Properties::default();
        self.check("nvcompGetProperties", unsafe { (self.get_properties)(&mut properties) })?;
        Ok(format!("{} (CUDA runtime {})", properties.version, properties.cudart_version))
    }

    /// Bytes a compressed chunk of `chunk_size` may take.
    pub fn max_compressed_chunk_size(&self, chunk_size: usize) -> Result<usize> {
        let mut bytes = 0;
        let status = unsafe { (self.compress_get_max_output_chunk_size)(chunk_size, COMPRESS_DEFAULTS, &mut bytes) };
        self.check("nvcompBatchedLZ4CompressGetMaxOutputChunkSize", status)?;
        Ok(bytes)
    }

    /// Device temp bytes that both compressing and decompressing `count` chunks of at most `chunk_size`
    /// (`total` bytes in all) need. Enqueues nothing.
    pub fn temp_size(&self, count: usize, chunk_size: usize, total: usize) -> Result<usize> {
        let (mut compress, mut decompress) = (0, 0);
        let null = std::ptr::null_mut();
        let status =
            unsafe { (self.compress_get_temp_size)(count, chunk_size, COMPRESS_DEFAULTS, &mut compress, total, null) };
        self.check("nvcompBatchedLZ4CompressGetTempSize", status)?;
        let status = unsafe {
            (self.decompress_get_temp_size)(count, chunk_size, DECOMPRESS_DEFAULTS, &mut decompress, total, null)
        };
        self.check("nvcompBatchedLZ4DecompressGetTempSize", status)?;
        Ok(compress.max(decompress))
    }

    /// Enqueues compressing `input`'s chunks (of at most `max_chunk_size`) into `output`'s slots, which
    /// must each hold [`Nvcomp::max_compressed_chunk_size`]; writes `output`'s sizes and statuses.
    ///
    /// # Safety
    /// The buffers must stay alive until the stream has run the call, and `temp` must hold
    /// [`Nvcomp::temp_size`] bytes.
    pub unsafe fn compress(
        &self,
        input: &Chunked,
        max_chunk_size: usize,
        output: &mut Chunked,
        temp: &mut DeviceBuffer<u8>,
        stream: CUstream,
    ) -> Result<()> {
        let status = unsafe {
            (self.compress_async)(
                input.addresses.address() as *const *const c_void,
                input.sizes.address() as *const usize,
                max_chunk_size,
                input.count(),
                temp.address() as *mut c_void,
                temp.len(),
                output.addresses.address() as *const *mut c_void,
                output.sizes.address() as *mut usize,
                COMPRESS_DEFAULTS,
                output.statuses.address() as *mut Status,
                stream,
            )
        };
        self.check("nvcompBatchedLZ4CompressAsync", status)
    }

    /// Enqueues decompressing `input`'s chunks into `output`'s slots, which hold `capacities` bytes
    /// each (chunks of at most `max_chunk_size`); writes `output`'s sizes and statuses.
    ///
    /// # Safety
    /// As [`Nvcomp::compress`].
    pub unsafe fn decompress(
        &self,
        input: &Chunked,
        capacities: &DeviceBuffer<usize>,
        output: &mut Chunked,
        temp: &mut DeviceBuffer<u8>,
        stream: CUstream,
    ) -> Result<()> {
        let status = unsafe {
            (self.decompress_async)(
                input.addresses.address() as *const *const c_void,
                input.sizes.address() as *const usize,
                capacities.address() as *const usize,
                output.sizes.address() as *mut usize,
                input.count(),
                temp.address() as *mut c_void,
                temp.len(),
                output.addresses.address() as *const *mut c_void,
                DECOMPRESS_DEFAULTS,
                output.statuses.address() as *mut Status,
                stream,
            )
        };
        self.check("nvcompBatchedLZ4DecompressAsync", status)
    }

    /// An error naming `call` and nvCOMP's description of `status`, unless it is success.
    fn check(&self, call: &str, status: Status) -> Result<()> {
        if status == 0 {
            return Ok(());
        }
        let text = unsafe { (self.get_status_string)(status) };
        let text = if text.is_null() { "?".into() } else { unsafe { CStr::from_ptr(text) }.to_string_lossy() };
        bail!("{call} failed: nvCOMP status {status} ({text})")
    }
}

/// The function `name` of `library`.
///
/// # Safety
/// `T` must be the function's exact type.
unsafe fn entry<T: Copy>(library: &Library, name: &str) -> Result<T> {
    let symbol = unsafe { library.get::<T>(name.as_bytes()) }.with_context(|| format!("nvCOMP has no {name}"))?;
    Ok(*symbol)
}

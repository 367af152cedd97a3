//! nvCOMP 6's batched C API for LZ4, Snappy, Deflate, GDeflate, Zstd, Cascaded, Bitcomp and ANS, loaded at run time
//! from `libnvcomp.so.6` (as its `nvcomp/{lz4,snappy,deflate,gdeflate,zstd,cascaded,bitcomp,ans}.h` and `nvcomp.h`
//! declare it). The algorithms' entry points,
//! `nvcompBatched<Name>CompressAsync` and the like, have the same signatures but for their options structs
//! (64 bytes each, passed by value), so one table of entry points, generic over those structs, serves them all.
//! Device arrays of chunk addresses (`const void* const*`) and sizes (`const size_t*`) are the same memory as
//! ferrocomp's `u64`/`usize` arrays, so both read one batch.

use crate::{BenchStream, Chunked, Codec, codec_name};
use anyhow::{Context, Result, bail};
use cudarc::driver::sys::CUstream;
use ferrocomp::{AnsDataType, DataType, DeviceBuffer, Options, Wrapper};
use libloading::Library;
use std::ffi::{CStr, c_char, c_void};
use std::fmt::Arguments;
use std::mem::ManuallyDrop;
use std::path::Path;

/// `nvcompStatus_t` (0 is `nvcompSuccess`).
type Status = i32;

/// `nvcompBatchedLZ4CompressOpts_t`. All zeros are nvCOMP's defaults: bytes (`NVCOMP_TYPE_CHAR`), no bitshuffle.
#[repr(C)]
#[derive(Clone, Copy)]
struct Lz4CompressOpts {
    /// `nvcompType_t`.
    data_type: i32,
    bitshuffle_mode: i32,
    reserved: [u8; 56],
}

/// `nvcompBatchedLZ4DecompressOpts_t`. All zeros are nvCOMP's defaults: default backend, bytes, no bitshuffle.
#[repr(C)]
#[derive(Clone, Copy)]
struct Lz4DecompressOpts {
    backend: i32,
    sort_before_hw_decompress: i32,
    data_type: i32,
    bitshuffle_mode: i32,
    reserved: [u8; 48],
}

/// `nvcompBatchedSnappyCompressOpts_t` and `nvcompBatchedZstdCompressOpts_t`: reserved bytes only, all zero.
#[repr(C)]
#[derive(Clone, Copy)]
struct SnappyCompressOpts {
    reserved: [u8; 64],
}

/// `nvcompBatchedDeflateCompressOpts_t`, and `nvcompBatchedGdeflateCompressOpts_t` (the same fields).
#[repr(C)]
#[derive(Clone, Copy)]
struct LevelCompressOpts {
    /// The level: 0 (entropy coding only) to 5 (highest ratio); nvCOMP's default is 1.
    algorithm: i32,
    reserved: [u8; 60],
}

/// `nvcompBatchedSnappyDecompressOpts_t`, and `nvcompBatchedDeflateDecompressOpts_t` (the same fields). All
/// zeros are nvCOMP's defaults: `NVCOMP_DECOMPRESS_BACKEND_DEFAULT`, no sorting.
#[repr(C)]
#[derive(Clone, Copy)]
struct DecompressOpts {
    backend: i32,
    sort_before_hw_decompress: i32,
    reserved: [u8; 56],
}

/// `nvcompBatchedGdeflateDecompressOpts_t` and `nvcompBatchedZstdDecompressOpts_t`. All zeros are nvCOMP's default: `NVCOMP_DECOMPRESS_BACKEND_DEFAULT`.
#[repr(C)]
#[derive(Clone, Copy)]
struct GdeflateDecompressOpts {
    backend: i32,
    reserved: [u8; 60],
}

const _: () = assert!(
    size_of::<Lz4CompressOpts>() == 64
        && size_of::<Lz4DecompressOpts>() == 64
        && size_of::<SnappyCompressOpts>() == 64
        && size_of::<LevelCompressOpts>() == 64
        && size_of::<DecompressOpts>() == 64
        && size_of::<GdeflateDecompressOpts>() == 64
        && size_of::<CascadedCompressOpts>() == 64
        && size_of::<CascadedDecompressOpts>() == 64
);

/// `nvcompBatchedSnappyCompressDefaultOpts`.
const SNAPPY_COMPRESS_DEFAULTS: SnappyCompressOpts = SnappyCompressOpts { reserved: [0; 64] };

/// `nvcompBatchedLZ4DecompressDefaultOpts`.
const LZ4_DECOMPRESS_DEFAULTS: Lz4DecompressOpts =
    Lz4DecompressOpts { backend: 0, sort_before_hw_decompress: 0, data_type: 0, bitshuffle_mode: 0, reserved: [0; 48] };

/// `nvcompBatchedSnappyDecompressDefaultOpts` and `nvcompBatchedDeflateDecompressDefaultOpts`.
const DECOMPRESS_DEFAULTS: DecompressOpts =
    DecompressOpts { backend: 0, sort_before_hw_decompress: 0, reserved: [0; 56] };

/// `nvcompCascadedCommonOpts_t`: the data type, the mode and two encoding masks.
#[repr(C)]
#[derive(Clone, Copy)]
struct CascadedCommonOpts {
    data_type: i32,
    mode: u32,
    terminal_codec_flags: u64,
    coarse_grained_encoding_flags: u64,
}

/// `nvcompBatchedCascadedCompressOpts_t` (nvCOMP 5 and later: an adaptive search, no layer counts).
#[repr(C)]
#[derive(Clone, Copy)]
struct CascadedCompressOpts {
    common: CascadedCommonOpts,
    fine_grained_encoding_flags: u64,
    compression_level: u8,
    reserved: [u8; 31],
}

/// `nvcompBatchedCascadedDecompressOpts_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct CascadedDecompressOpts {
    backend: i32,
    common: CascadedCommonOpts,
    reserved: [u8; 32],
}

/// `nvcompBatchedCascadedCompressDefaultOpts`: `NVCOMP_TYPE_UINT`, `NVCOMP_CASCADED_MODE_ASYMMETRIC`, the bitpack
/// terminal codec, no coarse-grained encodings, every fine-grained one (delta, RLE, FOR), level 3.
const CASCADED_COMPRESS_DEFAULTS: CascadedCompressOpts = CascadedCompressOpts {
    common: CascadedCommonOpts { data_type: 5, mode: 1, terminal_codec_flags: 1, coarse_grained_encoding_flags: 0 },
    fine_grained_encoding_flags: 7,
    compression_level: 3,
    reserved: [0; 31],
};

/// Decompression told the compressor's common options, as nvCOMP's manager does (the defaults' unspecified
/// mode is documented as slower).
const CASCADED_DECOMPRESS_OPTS: CascadedDecompressOpts =
    CascadedDecompressOpts { backend: 0, common: CASCADED_COMPRESS_DEFAULTS.common, reserved: [0; 32] };

/// `nvcompBatchedBitcompCompressOpts_t`.
#[repr(C)]
#[derive(Clone, Copy)]
struct BitcompCompressOpts {
    /// 0: the default algorithm, 1: sparse.
    algorithm: i32,
    /// `nvcompType_t`.
    data_type: i32,
    /// Lossy quantisation step (unused lossless).
    delta: f64,
    /// `bitcompMode_t`: 0 is lossless.
    mode: i32,
    reserved: [u8; 44],
}

/// `nvcompBatchedANSCompressOpts_t` and, with `data_type` its `NVCOMP_TYPE_BITS` (read from the stream),
/// `nvcompBatchedANSDecompressOpts_t` (whose first field is the backend, 0 by default, where the type is).
#[repr(C)]
#[derive(Clone, Copy)]
struct AnsOpts {
    /// `nvcompANSType_t` (0: rANS), or the decompress backend.
    kind: i32,
    /// `nvcompType_t`.
    data_type: i32,
    reserved: [u8; 56],
}

/// `nvcompBatchedGdeflateDecompressDefaultOpts`.
const GDEFLATE_DECOMPRESS_DEFAULTS: GdeflateDecompressOpts = GdeflateDecompressOpts { backend: 0, reserved: [0; 60] };

/// `nvcompProperties_t`.
#[repr(C)]
#[derive(Default)]
struct Properties {
    version: u32,
    cudart_version: u32,
}

type GetProperties = unsafe extern "C" fn(*mut Properties) -> Status;
type GetStatusString = unsafe extern "C" fn(Status) -> *const c_char;
type CompressGetTempSize<C> = unsafe extern "C" fn(usize, usize, C, *mut usize, usize, CUstream) -> Status;
type CompressGetMaxOutputChunkSize<C> = unsafe extern "C" fn(usize, C, *mut usize) -> Status;
type CompressAsync<C> = unsafe extern "C" fn(
    *const *const c_void,
    *const usize,
    usize,
    usize,
    *mut c_void,
    usize,
    *const *mut c_void,
    *mut usize,
    C,
    *mut Status,
    CUstream,
) -> Status;
type DecompressGetTempSize<D> = unsafe extern "C" fn(usize, usize, D, *mut usize, usize, CUstream) -> Status;
type DecompressAsync<D> = unsafe extern "C" fn(
    *const *const c_void,
    *const usize,
    *const usize,
    *mut usize,
    usize,
    *mut c_void,
    usize,
    *const *mut c_void,
    D,
    *mut Status,
    CUstream,
) -> Status;

/// The loaded library.
pub struct Nvcomp {
    get_properties: GetProperties,
    get_status_string: GetStatusString,
    // Keeps the entry points valid; never unloaded, so nvCOMP's CUDA runtime is torn down only at exit.
    library: ManuallyDrop<Library>,
}

impl Nvcomp {
    /// Loads `libnvcomp.so.6` from `path`.
    pub fn load(path: &Path) -> Result<Self> {
        let library = unsafe { Library::new(path) }.with_context(|| format!("loading {}", path.display()))?;
        unsafe {
            Ok(Self {
                get_properties: entry(&library, "nvcompGetProperties")?,
                get_status_string: entry(&library, "nvcompGetStatusString")?,
                library: ManuallyDrop::new(library),
            })
        }
    }

    /// The library's version and the CUDA runtime version it was built with, e.g. "6000 (CUDA runtime 13040)".
    pub fn version(&self) -> Result<String> {
        let mut properties = Properties::default();
        self.check(format_args!("nvcompGetProperties"), unsafe { (self.get_properties)(&mut properties) })?;
        Ok(format!("{} (CUDA runtime {})", properties.version, properties.cudart_version))
    }

    /// nvCOMP's batched codec for `options`: the algorithm's entry points with its default options but for
    /// the level of Deflate and GDeflate (their `algorithm` option) and LZ4's data type. Raw deflate only.
    pub fn codec(&self, options: Options) -> Result<Box<dyn Codec + '_>> {
        let label = match options {
            Options::Zstd(_) => "nvCOMP Zstd".to_owned(), // one level only
            _ => format!("nvCOMP {}", codec_name(&options)),
        };
        let level = |level: u8| LevelCompressOpts { algorithm: i32::from(level), reserved: [0; 60] };
        // SAFETY: each options struct is the one its algorithm's entry points take.
        unsafe {
            Ok(match options {
                Options::Lz4(lz4) => {
                    // `nvcompType_t`: NVCOMP_TYPE_CHAR, _SHORT, _INT, _LONGLONG.
                    let data_type = match lz4.data_type {
                        DataType::Char => 0,
                        DataType::Short => 2,
                        DataType::Int => 4,
                        DataType::LongLong => 6,
                    };
                    let compress = Lz4CompressOpts { data_type, bitshuffle_mode: 0, reserved: [0; 56] };
                    Box::new(Batched::load(self, "LZ4", label, compress, LZ4_DECOMPRESS_DEFAULTS)?)
                }
                Options::Snappy(snappy) if snappy.data_type != DataType::Char => {
                    bail!("nvCOMP's Snappy has no data type option")
                }
                Options::Snappy(_) => {
                    Box::new(Batched::load(self, "Snappy", label, SNAPPY_COMPRESS_DEFAULTS, DECOMPRESS_DEFAULTS)?)
                }
                Options::Deflate(deflate) if deflate.wrapper != Wrapper::Raw => {
                    bail!("nvCOMP's Deflate writes raw deflate only")
                }
                Options::Deflate(deflate) => {
                    Box::new(Batched::load(self, "Deflate", label, level(deflate.level), DECOMPRESS_DEFAULTS)?)
                }
                Options::Blosc(_) => bail!("nvCOMP has no Blosc"),
                // Its defaults whatever ours are: nvCOMP 5 and later take no layer counts.
                Options::Cascaded(_) => Box::new(Batched::load(
                    self,
                    "Cascaded",
                    label,
                    CASCADED_COMPRESS_DEFAULTS,
                    CASCADED_DECOMPRESS_OPTS,
                )?),
                // Lossless only: nvCOMP's lossy step is a power of two, and its own bound.
                Options::Bitcomp(bitcomp) if bitcomp.error_bound.is_some() => bail!("nvCOMP's lossy Bitcomp differs"),
                Options::Bitcomp(bitcomp) => {
                    let compress = BitcompCompressOpts {
                        algorithm: bitcomp.sparse as i32,
                        data_type: bitcomp.element as i32,
                        delta: 0.0,
                        mode: 0,
                        reserved: [0; 44],
                    };
                    Box::new(Batched::load(self, "Bitcomp", label, compress, GDEFLATE_DECOMPRESS_DEFAULTS)?)
                }
                Options::Ans(ans) => {
                    // `nvcompType_t`: NVCOMP_TYPE_CHAR, _FLOAT16, _FLOAT32 or _FLOAT8_E4M3.
                    let data_type = match ans.data_type {
                        AnsDataType::Bytes => 0,
                        AnsDataType::Float16 => 10,
                        AnsDataType::Float32 => 11,
                        AnsDataType::Float8 => 9,
                    };
                    let compress = AnsOpts { kind: 0, data_type, reserved: [0; 56] };
                    let decompress = AnsOpts { kind: 0, data_type: 0xFF, reserved: [0; 56] };
                    Box::new(Batched::load(self, "ANS", label, compress, decompress)?)
                }
                // nvCOMP's Zstd has no level: ours at any level is set beside its one.
                Options::Zstd(_) => Box::new(Batched::load(
                    self,
                    "Zstd",
                    label,
                    SNAPPY_COMPRESS_DEFAULTS,
                    GDEFLATE_DECOMPRESS_DEFAULTS,
                )?),
                Options::GDeflate(gdeflate) => Box::new(Batched::load(
                    self,
                    "Gdeflate",
                    label,
                    level(gdeflate.level),
                    GDEFLATE_DECOMPRESS_DEFAULTS,
                )?),
            })
        }
    }

    /// An error naming `call` and nvCOMP's description of `status`, unless it is success.
    fn check(&self, call: Arguments, status: Status) -> Result<()> {
        if status == 0 {
            return Ok(());
        }
        let text = unsafe { (self.get_status_string)(status) };
        let text = if text.is_null() { "?".into() } else { unsafe { CStr::from_ptr(text) }.to_string_lossy() };
        bail!("{call} failed: nvCOMP status {status} ({text})")
    }
}

/// One algorithm's entry points, called with its compress options `C` and decompress options `D`.
struct Batched<'a, C, D> {
    nvcomp: &'a Nvcomp,
    /// The `<Name>` in the entry points' names, `nvcompBatched<Name>CompressAsync` and so on.
    name: &'static str,
    label: String,
    compress_opts: C,
    decompress_opts: D,
    compress_get_temp_size: CompressGetTempSize<C>,
    compress_get_max_output_chunk_size: CompressGetMaxOutputChunkSize<C>,
    compress_async: CompressAsync<C>,
    decompress_get_temp_size: DecompressGetTempSize<D>,
    decompress_async: DecompressAsync<D>,
}

impl<'a, C: Copy, D: Copy> Batched<'a, C, D> {
    /// The entry points `nvcompBatched<name>...` of `nvcomp`, to call with `compress_opts` and `decompress_opts`.
    ///
    /// # Safety
    /// `C` and `D` must be the options structs those entry points take.
    unsafe fn load(
        nvcomp: &'a Nvcomp,
        name: &'static str,
        label: String,
        compress_opts: C,
        decompress_opts: D,
    ) -> Result<Self> {
        let library = &nvcomp.library;
        let call = |call: &str| format!("nvcompBatched{name}{call}");
        unsafe {
            Ok(Self {
                nvcomp,
                name,
                label,
                compress_opts,
                decompress_opts,
                compress_get_temp_size: entry(library, &call("CompressGetTempSize"))?,
                compress_get_max_output_chunk_size: entry(library, &call("CompressGetMaxOutputChunkSize"))?,
                compress_async: entry(library, &call("CompressAsync"))?,
                decompress_get_temp_size: entry(library, &call("DecompressGetTempSize"))?,
                decompress_async: entry(library, &call("DecompressAsync"))?,
            })
        }
    }

    /// An error naming the entry point `nvcompBatched<Name><call>` and `status`, unless it is success.
    fn check(&self, call: &str, status: Status) -> Result<()> {
        self.nvcomp.check(format_args!("nvcompBatched{}{call}", self.name), status)
    }
}

impl<C: Copy, D: Copy> Codec for Batched<'_, C, D> {
    fn label(&self) -> &str {
        &self.label
    }

    fn max_compressed_chunk_size(&self, chunk_size: usize) -> Result<usize> {
        let mut bytes = 0;
        let status = unsafe { (self.compress_get_max_output_chunk_size)(chunk_size, self.compress_opts, &mut bytes) };
        self.check("CompressGetMaxOutputChunkSize", status)?;
        Ok(bytes)
    }

    /// Enqueues nothing.
    fn temp_size(&self, count: usize, chunk_size: usize, total: usize) -> Result<usize> {
        let (mut compress, mut decompress) = (0, 0);
        let null = std::ptr::null_mut();
        let status =
            unsafe { (self.compress_get_temp_size)(count, chunk_size, self.compress_opts, &mut compress, total, null) };
        self.check("CompressGetTempSize", status)?;
        let status = unsafe {
            (self.decompress_get_temp_size)(count, chunk_size, self.decompress_opts, &mut decompress, total, null)
        };
        self.check("DecompressGetTempSize", status)?;
        Ok(compress.max(decompress))
    }

    unsafe fn compress(
        &self,
        input: &Chunked,
        chunk_size: usize,
        output: &mut Chunked,
        temp: &mut DeviceBuffer<u8>,
        stream: &BenchStream,
    ) -> Result<()> {
        let status = unsafe {
            (self.compress_async)(
                input.addresses.address() as *const *const c_void,
                input.sizes.address() as *const usize,
                chunk_size,
                input.count(),
                temp.address() as *mut c_void,
                temp.len(),
                output.addresses.address() as *const *mut c_void,
                output.sizes.address() as *mut usize,
                self.compress_opts,
                output.statuses.address() as *mut Status,
                stream.raw(),
            )
        };
        self.check("CompressAsync", status)
    }

    unsafe fn decompress(
        &self,
        input: &Chunked,
        capacities: &DeviceBuffer<usize>,
        output: &mut Chunked,
        temp: &mut DeviceBuffer<u8>,
        stream: &BenchStream,
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
                self.decompress_opts,
                output.statuses.address() as *mut Status,
                stream.raw(),
            )
        };
        self.check("DecompressAsync", status)
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

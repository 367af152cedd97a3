//! nvCOMP's enums as Python classes, and ferrocomp's per-chunk [`Status`](PyStatus).

use ferrocomp::{Bitstream, ChecksumPolicy, Status};
use pyo3::prelude::*;

/// How a buffer is framed (nvCOMP's `BitstreamKind`).
#[pyclass(module = "ferrocomp", eq, eq_int, frozen, from_py_object)]
#[pyo3(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitstreamKind {
    /// Chunked, with a header naming the algorithm, sizes and optional checksums.
    NvcompNative,
    /// One standard block per array, nothing else: what the algorithm's CPU library reads.
    Raw,
    /// The uncompressed size (u64, little-endian), then one standard block per array.
    WithUncompressedSize,
}

impl From<BitstreamKind> for Bitstream {
    fn from(kind: BitstreamKind) -> Self {
        match kind {
            BitstreamKind::NvcompNative => Bitstream::Native,
            BitstreamKind::Raw => Bitstream::Raw,
            BitstreamKind::WithUncompressedSize => Bitstream::WithUncompressedSize,
        }
    }
}

/// When checksums are computed and verified (nvCOMP's `ChecksumPolicy`).
#[pyclass(name = "ChecksumPolicy", module = "ferrocomp", eq, eq_int, frozen, from_py_object)]
#[pyo3(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PyChecksumPolicy {
    /// Neither compute nor verify (the default).
    NoComputeNoVerify,
    /// Compute when compressing; do not verify.
    ComputeAndNoVerify,
    /// Compute none; verify those a stream has.
    NoComputeAndVerifyIfPresent,
    /// Compute; verify those a stream has.
    ComputeAndVerifyIfPresent,
    /// Compute; require and verify them.
    ComputeAndVerify,
}

impl From<PyChecksumPolicy> for ChecksumPolicy {
    fn from(policy: PyChecksumPolicy) -> Self {
        match policy {
            PyChecksumPolicy::NoComputeNoVerify => ChecksumPolicy::NoComputeNoVerify,
            PyChecksumPolicy::ComputeAndNoVerify => ChecksumPolicy::ComputeAndNoVerify,
            PyChecksumPolicy::NoComputeAndVerifyIfPresent => ChecksumPolicy::NoComputeAndVerifyIfPresent,
            PyChecksumPolicy::ComputeAndVerifyIfPresent => ChecksumPolicy::ComputeAndVerifyIfPresent,
            PyChecksumPolicy::ComputeAndVerify => ChecksumPolicy::ComputeAndVerify,
        }
    }
}

/// Where an array's bytes live (nvCOMP's `ArrayBufferKind`).
#[pyclass(module = "ferrocomp", eq, eq_int, frozen, from_py_object)]
#[pyo3(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrayBufferKind {
    /// GPU memory.
    StridedDevice = 1,
    /// Host memory.
    StridedHost = 2,
}

/// Latency or concurrency (nvCOMP's `ExecutionPolicy`). A hint ferrocomp accepts and does not
/// need: its kernels have one implementation, which spreads each chunk over a warp or a block.
#[pyclass(module = "ferrocomp", eq, eq_int, frozen, from_py_object)]
#[pyo3(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecutionPolicy {
    /// Optimised for running beside other device work (nvCOMP's default).
    Concurrency = 0,
    /// Optimised for one call's latency.
    Latency = 1,
}

/// What decodes (nvCOMP's `DecompressBackend`): ferrocomp's CUDA kernels, for `DEFAULT` and
/// `CUDA`; it has no path to Blackwell's hardware decompression engine (`HARDWARE`).
#[pyclass(module = "ferrocomp", eq, eq_int, frozen, from_py_object)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecompressBackend {
    /// The library chooses: CUDA kernels.
    #[pyo3(name = "NVCOMP_DECOMPRESS_BACKEND_DEFAULT")]
    Default = 0,
    /// The hardware decompression engine (refused: ferrocomp does not drive it).
    #[pyo3(name = "NVCOMP_DECOMPRESS_BACKEND_HARDWARE")]
    Hardware = 1,
    /// CUDA kernels.
    #[pyo3(name = "NVCOMP_DECOMPRESS_BACKEND_CUDA")]
    Cuda = 2,
}

/// nvCOMP's bit-shuffled LZ4 (`BitshuffleMode`): ferrocomp writes and reads plain LZ4 only, so
/// only `NVCOMP_BITSHUFFLE_NONE` is accepted.
#[pyclass(module = "ferrocomp", eq, eq_int, frozen, from_py_object)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitshuffleMode {
    /// Plain LZ4.
    #[pyo3(name = "NVCOMP_BITSHUFFLE_NONE")]
    None = 0,
    /// Bit planes, most significant first, before LZ4.
    #[pyo3(name = "NVCOMP_BITSHUFFLE_MSB_FIRST")]
    MsbFirst = 1,
    /// Bit planes, least significant first, before LZ4.
    #[pyo3(name = "NVCOMP_BITSHUFFLE_LSB_FIRST")]
    LsbFirst = 2,
}

/// Bitcomp lossless or lossy (nvCOMP's `BitcompMode`); lossy quantises floats to a step of
/// `delta`, which ferrocomp's Bitcomp does with its error bound of `delta / 2`.
#[pyclass(module = "ferrocomp", eq, eq_int, frozen, from_py_object)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitcompMode {
    /// Exact.
    #[pyo3(name = "BITCOMP_LOSSLESS")]
    Lossless = 0,
    /// Floats quantised to signed integers.
    #[pyo3(name = "BITCOMP_LOSSY_FP_TO_SIGNED")]
    LossyFpToSigned = 1,
    /// Floats quantised to unsigned integers.
    #[pyo3(name = "BITCOMP_LOSSY_FP_TO_UNSIGNED")]
    LossyFpToUnsigned = 2,
}

/// How Cascaded picks its stages (nvCOMP's `CascadedMode`): per sub-block (`ASYMMETRIC`,
/// ferrocomp's layer search) or fixed (`SYMMETRIC`, the layers as given).
#[pyclass(module = "ferrocomp", eq, eq_int, frozen, from_py_object)]
#[pyo3(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CascadedMode {
    /// The stages chosen per sub-block, for the best ratio.
    Asymmetric = 1,
    /// The same stages everywhere.
    Symmetric = 2,
}

/// Cascaded's last stage (nvCOMP's `CascadedTerminalCodec`, a bit mask).
#[pyclass(module = "ferrocomp", eq, eq_int, frozen, from_py_object)]
#[pyo3(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CascadedTerminalCodec {
    /// None named: invalid for compression.
    Unspecified = 0,
    /// Bit-packing.
    CascadedBitpack = 1,
}

/// Cascaded's optional stages before bit-packing (nvCOMP's `CascadedFineGrainedEncoding`, a bit
/// mask): `DELTA` and `RLE` are ferrocomp's delta and run-length layers; ferrocomp's bit-packing
/// always packs values less their minimum, nvCOMP's `FOR`.
#[pyclass(module = "ferrocomp", eq, eq_int, frozen, from_py_object)]
#[pyo3(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CascadedFineGrainedEncoding {
    /// No optional stage.
    None = 0,
    /// A delta layer.
    Delta = 1,
    /// A run-length layer.
    Rle = 2,
    /// Frame of reference.
    For = 4,
}

/// Cascaded's whole-stream stages (nvCOMP's `CascadedCoarseGrainedEncoding`): none exist.
#[pyclass(module = "ferrocomp", eq, eq_int, frozen, from_py_object)]
#[pyo3(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CascadedCoarseGrainedEncoding {
    /// The only one.
    None = 0,
}

/// The outcome of one chunk, as the statuses of an asynchronous call hold them (`uint32`).
#[pyclass(name = "Status", module = "ferrocomp", eq, eq_int, frozen, from_py_object)]
#[pyo3(rename_all = "SCREAMING_SNAKE_CASE")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PyStatus {
    /// The chunk was processed.
    Success = 0,
    /// The compressed stream ended in the middle of a sequence.
    Truncated = 1,
    /// A match referred to bytes before the start of the output.
    BadOffset = 2,
    /// The output buffer is too small for the chunk.
    OutputTooSmall = 3,
    /// The chunk is larger than the algorithm's maximum chunk size.
    ChunkTooLarge = 4,
    /// The compressed stream is malformed.
    Malformed = 5,
    /// A checksum does not match the data.
    BadChecksum = 6,
    /// The chunk uses a compressor (or format version) this build does not decode.
    Unsupported = 7,
    /// The frame needs a dictionary that was not given.
    DictionaryRequired = 8,
}

/// `name`, `value`, a hash and a constructor from the value (as Python's and pybind11's enums
/// have them) for an enum class of the variants listed, with any methods of its own.
macro_rules! enum_members {
    // A bit mask's members combine with `|` into an int, as nvCOMP's do.
    (@flags $class:ident [$($variant:ident),*]) => {
        enum_members!($class [$($variant),*] {
            fn __or__(&self, other: &Bound<'_, PyAny>) -> PyResult<u32> {
                Ok(*self as u32 | mask(other)?)
            }

            fn __ror__(&self, other: &Bound<'_, PyAny>) -> PyResult<u32> {
                Ok(*self as u32 | mask(other)?)
            }

            fn __index__(&self) -> u32 {
                *self as u32
            }
        });
    };
    ($class:ident [$($variant:ident),*] { $($own:tt)* }) => {
        #[pymethods]
        impl $class {
            /// The member of this value, as nvCOMP's enums are made from an int.
            #[new]
            fn from_value(value: u32) -> PyResult<Self> {
                let members = [$(Self::$variant),*];
                members.into_iter().find(|&member| member as u32 == value).ok_or_else(|| {
                    crate::errors::value_error(format!("{value} is not a value of {}", stringify!($class)))
                })
            }

            /// The member's name (`"RAW"`).
            #[getter]
            fn name(slf: &Bound<'_, Self>) -> PyResult<String> {
                member_name(slf.as_any())
            }

            /// The member's integer value.
            #[getter]
            fn value(&self) -> u32 {
                *self as u32
            }

            /// The value's hash, as members equal their values.
            fn __hash__(&self) -> u64 {
                *self as u64
            }

            $($own)*
        }
    };
}

enum_members!(BitstreamKind [NvcompNative, Raw, WithUncompressedSize] {});
enum_members!(PyChecksumPolicy [NoComputeNoVerify, ComputeAndNoVerify, NoComputeAndVerifyIfPresent, ComputeAndVerifyIfPresent, ComputeAndVerify] {});
enum_members!(ArrayBufferKind [StridedDevice, StridedHost] {});
enum_members!(ExecutionPolicy [Concurrency, Latency] {});
enum_members!(DecompressBackend [Default, Hardware, Cuda] {});
enum_members!(BitshuffleMode [None, MsbFirst, LsbFirst] {});
enum_members!(BitcompMode [Lossless, LossyFpToSigned, LossyFpToUnsigned] {});
enum_members!(CascadedMode [Asymmetric, Symmetric] {});
enum_members!(@flags CascadedTerminalCodec [Unspecified, CascadedBitpack]);
enum_members!(@flags CascadedFineGrainedEncoding [None, Delta, Rle, For]);
enum_members!(@flags CascadedCoarseGrainedEncoding [None]);
enum_members!(PyStatus [Success, Truncated, BadOffset, OutputTooSmall, ChunkTooLarge, Malformed, BadChecksum, Unsupported, DictionaryRequired] {
    /// What the status means, in a few words.
    fn describe(&self) -> &'static str {
        Status::from(*self).describe()
    }
});

/// The bits of a mask given as a member or an int.
pub fn mask(value: &Bound<'_, PyAny>) -> PyResult<u32> {
    value.call_method0("__index__")?.extract()
}

/// A member's name, from the `Class.NAME` its generated `repr` gives.
fn member_name(member: &Bound<'_, PyAny>) -> PyResult<String> {
    let repr = member.repr()?.to_string();
    Ok(repr.rsplit('.').next().unwrap_or(&repr).to_owned())
}

impl From<Status> for PyStatus {
    fn from(status: Status) -> Self {
        match status as u32 {
            0 => Self::Success,
            1 => Self::Truncated,
            2 => Self::BadOffset,
            3 => Self::OutputTooSmall,
            4 => Self::ChunkTooLarge,
            6 => Self::BadChecksum,
            7 => Self::Unsupported,
            8 => Self::DictionaryRequired,
            _ => Self::Malformed,
        }
    }
}

impl From<PyStatus> for Status {
    fn from(status: PyStatus) -> Self {
        Status::from_code(status as u32)
    }
}

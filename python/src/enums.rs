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
    StridedDevice,
    /// Host memory.
    StridedHost,
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

/// `name`, `value` and a hash (as Python's and pybind11's enums have them) for an enum class, with
/// any methods of its own.
macro_rules! enum_members {
    ($class:ty { $($own:tt)* }) => {
        #[pymethods]
        impl $class {
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

enum_members!(BitstreamKind {});
enum_members!(PyChecksumPolicy {});
enum_members!(ArrayBufferKind {});
enum_members!(PyStatus {
    /// What the status means, in a few words.
    fn describe(&self) -> &'static str {
        Status::from(*self).describe()
    }
});

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

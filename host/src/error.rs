//! The errors ferrocomp returns: each says what was wrong and, for data, which chunk.

use ferrocomp_format::Status;

/// Result with ferrocomp's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A raw CUDA driver call failed.
    #[error("CUDA driver call {call} failed with error {code}")]
    Driver {
        /// The driver function, e.g. `cuMemAlloc`.
        call: &'static str,
        /// Its `CUresult` code.
        code: u32,
    },
    /// No CUDA device (or no driver) is present.
    #[error("no CUDA device is available")]
    NoDevice,
    /// One chunk could not be processed.
    #[error("chunk {chunk}: {}", status.describe())]
    Chunk {
        /// Index of the chunk in its stream or batch.
        chunk: usize,
        /// Why it failed.
        status: Status,
    },
    /// A chunk decoded to a size other than the one the container declares.
    #[error("chunk {chunk}: decoded to {actual} bytes, the container declares {expected}")]
    ChunkSize {
        /// Index of the chunk in its stream.
        chunk: usize,
        /// Bytes the container declares.
        expected: usize,
        /// Bytes it decoded to.
        actual: usize,
    },
    /// A chunk's checksum (a CRC-32, or nvCOMP's in its streams) does not match the stored one.
    #[error("chunk {chunk}: the checksum of its {part} bytes is {actual:#010x}, the container stores {expected:#010x}")]
    ChecksumMismatch {
        /// Index of the chunk in its stream.
        chunk: usize,
        /// Whether the compressed or the decompressed bytes were checked.
        part: ChecksumPart,
        /// The checksum the container stores.
        expected: u32,
        /// The checksum of the bytes.
        actual: u32,
    },
    /// The checksum policy requires checksums the container does not have.
    #[error("checksum policy requires checksums, but the container has none for {0} bytes")]
    ChecksumMissing(ChecksumPart),
    /// The container (header, chunk table, sizes) is malformed.
    #[error("invalid container: {0}")]
    Container(String),
    /// Reading or writing a stream failed.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    /// An argument is out of range.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl Error {
    /// This error about chunk `i` of a segment as one about chunk `first + i` of the whole call.
    pub(crate) fn renumbered(self, first: usize) -> Error {
        match self {
            Error::Chunk { chunk, status } => Error::Chunk { chunk: first + chunk, status },
            Error::ChunkSize { chunk, expected, actual } => Error::ChunkSize { chunk: first + chunk, expected, actual },
            other => other,
        }
    }
}

/// Which bytes of a chunk a checksum covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumPart {
    /// The chunk before compression.
    Uncompressed,
    /// The chunk as stored.
    Compressed,
}

impl std::fmt::Display for ChecksumPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Uncompressed => "uncompressed",
            Self::Compressed => "compressed",
        })
    }
}

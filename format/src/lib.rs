//! What ferrocomp's host and GPU kernels must agree on, in one `no_std` crate so the two sides
//! cannot drift apart: algorithm ids, per-chunk status codes, output bounds, and the bitstreams
//! themselves as plain functions over byte slices (the CPU path, the test oracle, and the
//! reference the warp-cooperative GPU kernels are checked against).
#![no_std]
#![deny(missing_docs)]
#![cfg_attr(target_arch = "nvptx64", feature(asm_experimental_arch))]

pub use batch::BatchArgs;

pub mod adler32;
pub mod ans;
pub mod batch;
pub mod bitcomp;
pub mod bitpack;
pub mod blosc;
pub mod cascaded;
pub mod crc32;
pub mod deflate;
pub mod gdeflate;
pub mod lz4;
pub mod snappy;
pub mod strided;
pub mod zstd;

/// Compression algorithms, by the id written in the native container header.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// Standard LZ4 blocks (the lz4 "block format").
    Lz4 = 1,
    /// Snappy's raw format (no framing).
    Snappy = 2,
    /// Deflate (RFC 1951), raw or in a zlib (RFC 1950) or gzip (RFC 1952) wrapper.
    Deflate = 3,
    /// GDeflate: deflate with its bits swizzled into 32 sub-streams (DirectStorage's format).
    GDeflate = 4,
    /// Blosc 1 chunks (c-blosc 1.x, numcodecs, zarr v2's default compressor).
    Blosc = 5,
    /// Zstandard frames (RFC 8878).
    Zstd = 6,
    /// Run-length, delta and bit-packing layers over integers (ferrocomp's own layout).
    Cascaded = 7,
    /// Frame-of-reference, delta and sparse bit-packing of numbers, optionally lossy (ferrocomp's
    /// own layout).
    Bitcomp = 8,
    /// Interleaved rANS entropy coding of bytes or 16-bit floats (ferrocomp's own layout).
    Ans = 9,
}

impl Algorithm {
    /// Every algorithm, in id order.
    pub const ALL: [Self; 9] = [
        Self::Lz4,
        Self::Snappy,
        Self::Deflate,
        Self::GDeflate,
        Self::Blosc,
        Self::Zstd,
        Self::Cascaded,
        Self::Bitcomp,
        Self::Ans,
    ];

    /// The algorithm with header id `id`, if there is one.
    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            1 => Some(Self::Lz4),
            2 => Some(Self::Snappy),
            3 => Some(Self::Deflate),
            4 => Some(Self::GDeflate),
            5 => Some(Self::Blosc),
            6 => Some(Self::Zstd),
            7 => Some(Self::Cascaded),
            8 => Some(Self::Bitcomp),
            9 => Some(Self::Ans),
            _ => None,
        }
    }

    /// Lower-case name, as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lz4 => "lz4",
            Self::Snappy => "snappy",
            Self::Deflate => "deflate",
            Self::GDeflate => "gdeflate",
            Self::Blosc => "blosc",
            Self::Zstd => "zstd",
            Self::Cascaded => "cascaded",
            Self::Bitcomp => "bitcomp",
            Self::Ans => "ans",
        }
    }
}

/// The size a chunk's header declares, `declared`, if its bytes can decode to that much (at most
/// `bound`, the codec's `max_decompressed_size`); beyond it the header lies (`Malformed`).
pub fn declared_size(declared: usize, bound: usize) -> Result<usize, Status> {
    if declared <= bound { Ok(declared) } else { Err(Status::Malformed) }
}

/// The outcome of one chunk of a batched GPU call, written by the kernels into a device array.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// The chunk was processed.
    Success = 0,
    /// The compressed stream ended in the middle of a sequence.
    Truncated = 1,
    /// A match referred to bytes before the start of the output (or had offset/distance zero).
    BadOffset = 2,
    /// The output buffer given for the chunk is too small for what the stream decodes to.
    OutputTooSmall = 3,
    /// The chunk is larger than the algorithm's maximum chunk size.
    ChunkTooLarge = 4,
    /// The compressed stream has bytes after its last sequence, or is otherwise malformed.
    Malformed = 5,
    /// A checksum stored in the stream (a zlib Adler-32 or gzip CRC-32 trailer, or gzip's
    /// stored size) does not match the decoded data.
    BadChecksum = 6,
    /// The chunk uses a compressor (or a format version) this build does not decode.
    Unsupported = 7,
    /// The stream needs a dictionary (a Zstd frame with a dictionary id), and none was given.
    DictionaryRequired = 8,
}

impl Status {
    /// The status with code `code`; unknown codes read as `Malformed`.
    pub fn from_code(code: u32) -> Self {
        match code {
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

    /// What the status means, in a few words.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Success => "ok",
            Self::Truncated => "compressed stream is truncated",
            Self::BadOffset => "match offset points before the start of the output",
            Self::OutputTooSmall => "output buffer is too small for the decoded chunk",
            Self::ChunkTooLarge => "chunk exceeds the maximum chunk size",
            Self::Malformed => "compressed stream is malformed",
            Self::BadChecksum => "the stream's checksum trailer does not match the decoded data",
            Self::Unsupported => "the chunk uses a compressor or format version this build does not support",
            Self::DictionaryRequired => "the frame was compressed with a dictionary, which was not given",
        }
    }
}

/// Element type of the input, as nvCOMP's `data_type` option: matches start and end on
/// element boundaries, which suits arrays of fixed-width numbers.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum DataType {
    /// Bytes (nvCOMP's `char`/`uchar`): no alignment. The default.
    #[default]
    Char = 0,
    /// 16-bit elements (`short`/`ushort`).
    Short = 1,
    /// 32-bit elements (`int`/`uint`).
    Int = 2,
    /// 64-bit elements (`longlong`/`ulonglong`).
    LongLong = 3,
}

impl DataType {
    /// The data type with id `id`, if there is one.
    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(Self::Char),
            1 => Some(Self::Short),
            2 => Some(Self::Int),
            3 => Some(Self::LongLong),
            _ => None,
        }
    }

    /// Width of one element in bytes.
    pub fn width(self) -> usize {
        1 << (self as u8)
    }
}

/// Element type of the input, as nvCOMP's `data_type` (`nvcompType_t`, whose ids these are): the
/// width the integer codecs (Cascaded, Bitcomp) work in. Signedness does not change their streams
/// (the encoders pick the better frame of reference of both readings); it is kept so that options
/// round-trip.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ElementType {
    /// Signed bytes (`NVCOMP_TYPE_CHAR`).
    I8 = 0,
    /// Unsigned bytes (`NVCOMP_TYPE_UCHAR`).
    U8 = 1,
    /// Signed 16-bit integers (`NVCOMP_TYPE_SHORT`).
    I16 = 2,
    /// Unsigned 16-bit integers (`NVCOMP_TYPE_USHORT`).
    U16 = 3,
    /// Signed 32-bit integers (`NVCOMP_TYPE_INT`).
    I32 = 4,
    /// nvCOMP's default (`NVCOMP_TYPE_UINT`).
    #[default]
    U32 = 5,
    /// Signed 64-bit integers (`NVCOMP_TYPE_LONGLONG`).
    I64 = 6,
    /// Unsigned 64-bit integers (`NVCOMP_TYPE_ULONGLONG`).
    U64 = 7,
}

impl ElementType {
    /// Every element type, in id order.
    pub const ALL: [Self; 8] = [Self::I8, Self::U8, Self::I16, Self::U16, Self::I32, Self::U32, Self::I64, Self::U64];

    /// The type with id `id`, if there is one.
    pub fn from_id(id: u8) -> Option<Self> {
        Self::ALL.get(id as usize).copied()
    }

    /// Width of one element in bytes.
    pub const fn width(self) -> usize {
        1 << (self as u8 >> 1)
    }
}

//! The codecs, one module each, and [`Options`]: an algorithm with its options, as the native
//! container records them. Each codec states its bounds, scratch, CPU functions and kernel
//! shapes ([`crate::batch::Launch`]); the batched calls are shared ([`BatchCodec`]).

pub mod blosc;
pub mod deflate;
pub mod gdeflate;
pub mod lz4;
pub mod snappy;
pub mod zstd;

use crate::batch::BatchCodec;
use crate::error::{Error, Result};
pub use blosc::Blosc;
pub use deflate::Deflate;
use ferrocomp_format::blosc::Shuffle;
use ferrocomp_format::deflate::Wrapper;
use ferrocomp_format::{Algorithm, DataType};
pub use gdeflate::GDeflate;
pub use lz4::Lz4;
pub use snappy::Snappy;
use std::ops::RangeInclusive;
pub use zstd::Zstd;

/// An algorithm and its options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Options {
    /// LZ4 blocks.
    Lz4(Lz4),
    /// Snappy raw streams.
    Snappy(Snappy),
    /// Deflate streams, raw or zlib- or gzip-wrapped.
    Deflate(Deflate),
    /// GDeflate pages.
    GDeflate(GDeflate),
    /// Blosc 1 chunks.
    Blosc(Blosc),
    /// Zstandard frames.
    Zstd(Zstd),
}

impl Default for Options {
    fn default() -> Self {
        Self::Lz4(Lz4::default())
    }
}

impl Options {
    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        match self {
            Self::Lz4(_) => Algorithm::Lz4,
            Self::Snappy(_) => Algorithm::Snappy,
            Self::Deflate(_) => Algorithm::Deflate,
            Self::GDeflate(_) => Algorithm::GDeflate,
            Self::Blosc(_) => Algorithm::Blosc,
            Self::Zstd(_) => Algorithm::Zstd,
        }
    }

    /// The codec that implements it.
    pub fn codec(&self) -> &dyn BatchCodec {
        match self {
            Self::Lz4(codec) => codec,
            Self::Snappy(codec) => codec,
            Self::Deflate(codec) => codec,
            Self::GDeflate(codec) => codec,
            Self::Blosc(codec) => codec,
            Self::Zstd(codec) => codec,
        }
    }

    /// The options as the container header's 8 option bytes.
    pub fn to_bytes(&self) -> [u8; 8] {
        let first = match self {
            Self::Lz4(lz4) => [lz4.data_type as u8, 0],
            Self::Snappy(snappy) => [snappy.data_type as u8, 0],
            Self::Deflate(deflate) => [deflate.level, deflate.wrapper as u8],
            Self::GDeflate(gdeflate) => [gdeflate.level, 0],
            Self::Blosc(blosc) => [blosc.typesize, blosc.shuffle as u8],
            Self::Zstd(zstd) => [zstd.level, 0],
        };
        [first[0], first[1], 0, 0, 0, 0, 0, 0]
    }

    /// Options of `algorithm` from a header's 8 option bytes.
    pub fn from_bytes(algorithm: Algorithm, bytes: [u8; 8]) -> Result<Self> {
        let name = algorithm.name();
        let data_type = || {
            DataType::from_id(bytes[0])
                .ok_or_else(|| Error::Container(format!("unknown {name} data type {}", bytes[0])))
        };
        let level = |levels: RangeInclusive<u8>| match bytes[0] {
            level if levels.contains(&level) => Ok(level),
            level => Err(Error::Container(format!("unknown {name} level {level}"))),
        };
        Ok(match algorithm {
            Algorithm::Lz4 => Self::Lz4(Lz4 { data_type: data_type()? }),
            Algorithm::Snappy => Self::Snappy(Snappy { data_type: data_type()? }),
            Algorithm::Deflate => {
                let wrapper = Wrapper::from_id(bytes[1])
                    .ok_or_else(|| Error::Container(format!("unknown deflate wrapper {}", bytes[1])))?;
                Self::Deflate(Deflate { level: level(Deflate::LEVELS)?, wrapper })
            }
            Algorithm::GDeflate => Self::GDeflate(GDeflate { level: level(Deflate::LEVELS)? }),
            Algorithm::Blosc => {
                let shuffle = match bytes[1] {
                    0 => Shuffle::None,
                    1 => Shuffle::Byte,
                    2 => Shuffle::Bit,
                    other => return Err(Error::Container(format!("unknown blosc shuffle {other}"))),
                };
                Self::Blosc(Blosc { typesize: bytes[0].max(1), shuffle })
            }
            Algorithm::Zstd => Self::Zstd(Zstd { level: level(Zstd::LEVELS)? }),
        })
    }

    /// The default options of `algorithm`.
    pub fn for_algorithm(algorithm: Algorithm) -> Self {
        match algorithm {
            Algorithm::Lz4 => Self::Lz4(Lz4::default()),
            Algorithm::Snappy => Self::Snappy(Snappy::default()),
            Algorithm::Deflate => Self::Deflate(Deflate::default()),
            Algorithm::GDeflate => Self::GDeflate(GDeflate::default()),
            Algorithm::Blosc => Self::Blosc(Blosc::default()),
            Algorithm::Zstd => Self::Zstd(Zstd::default()),
        }
    }
}

/// A heap value of all-zero bytes (a valid start state of the format crate's scratch types).
pub(crate) fn zeroed<T>() -> Box<T> {
    // SAFETY: the format crate documents any bytes, zeros included, as valid for these types.
    unsafe { Box::<T>::new_zeroed().assume_init() }
}

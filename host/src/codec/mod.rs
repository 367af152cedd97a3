//! The codecs, one module each, and [`Options`]: an algorithm with its options, as the native
//! container records them. Each codec states its bounds, scratch, CPU functions and kernel
//! shapes ([`crate::batch::Launch`]); the batched calls are shared ([`BatchCodec`]).

pub mod ans;
pub mod bitcomp;
pub mod blosc;
pub mod cascaded;
pub mod deflate;
pub mod gdeflate;
pub mod lz4;
pub mod snappy;
pub mod zstd;

use crate::batch::BatchCodec;
use crate::error::{Error, Result};
pub use ans::{Ans, AnsDataType};
pub use bitcomp::{Bitcomp, ErrorBound};
pub use blosc::Blosc;
pub use cascaded::{Cascaded, ElementType};
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
    /// Cascaded's run-length, delta and bit-packing layers.
    Cascaded(Cascaded),
    /// Bitcomp's bit-packed tiles, lossless or within an error bound.
    Bitcomp(Bitcomp),
    /// Interleaved rANS over bytes or 16-bit floats.
    Ans(Ans),
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
            Self::Cascaded(_) => Algorithm::Cascaded,
            Self::Bitcomp(_) => Algorithm::Bitcomp,
            Self::Ans(_) => Algorithm::Ans,
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
            Self::Cascaded(codec) => codec,
            Self::Bitcomp(codec) => codec,
            Self::Ans(codec) => codec,
        }
    }

    /// The options as the container header's 8 option bytes.
    pub fn to_bytes(&self) -> [u8; 8] {
        let two = |first: u8, second: u8| [first, second, 0, 0, 0, 0, 0, 0];
        match self {
            Self::Lz4(lz4) => two(lz4.data_type as u8, 0),
            Self::Snappy(snappy) => two(snappy.data_type as u8, 0),
            Self::Deflate(deflate) => two(deflate.level, deflate.wrapper as u8),
            Self::GDeflate(gdeflate) => two(gdeflate.level, 0),
            Self::Blosc(blosc) => two(blosc.typesize, blosc.shuffle as u8),
            Self::Zstd(zstd) => two(zstd.level, 0),
            Self::Cascaded(c) => [c.element as u8, c.rles, c.deltas, c.bitpack as u8, c.auto as u8, 0, 0, 0],
            Self::Bitcomp(bitcomp) => bitcomp.to_word().to_le_bytes(),
            Self::Ans(ans) => two(ans.data_type as u8, 0),
        }
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
            Algorithm::Cascaded => {
                let flag = |byte: u8| (byte <= 1).then_some(byte == 1);
                let (element, bitpack, auto) = (ElementType::from_id(bytes[0]), flag(bytes[3]), flag(bytes[4]));
                let options = match (element, bitpack, auto) {
                    (Some(element), Some(bitpack), Some(auto)) => {
                        Some(Cascaded { element, rles: bytes[1], deltas: bytes[2], bitpack, auto })
                    }
                    _ => None,
                };
                let options = options.filter(Cascaded::valid);
                Self::Cascaded(options.ok_or_else(|| Error::Container(format!("unknown {name} options {bytes:?}")))?)
            }
            Algorithm::Bitcomp => {
                let options = Bitcomp::from_word(u64::from_le_bytes(bytes)).filter(|_| bytes[2..4] == [0, 0]);
                Self::Bitcomp(options.ok_or_else(|| Error::Container(format!("unknown {name} options {bytes:?}")))?)
            }
            Algorithm::Ans => {
                let data_type = AnsDataType::from_id(bytes[0])
                    .ok_or_else(|| Error::Container(format!("unknown {name} data type {}", bytes[0])))?;
                Self::Ans(Ans { data_type })
            }
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
            Algorithm::Cascaded => Self::Cascaded(Cascaded::default()),
            Algorithm::Bitcomp => Self::Bitcomp(Bitcomp::default()),
            Algorithm::Ans => Self::Ans(Ans::default()),
        }
    }
}

//! The codecs, one module each, and [`Options`]: an algorithm with its options, as the native
//! container records them.

pub mod lz4;

use crate::batch::BatchCodec;
use crate::error::{Error, Result};
use ferrocomp_format::{Algorithm, DataType};
pub use lz4::Lz4;

/// An algorithm and its options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Options {
    /// LZ4 blocks.
    Lz4(Lz4),
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
        }
    }

    /// The codec that implements it.
    pub fn codec(&self) -> &dyn BatchCodec {
        match self {
            Self::Lz4(lz4) => lz4,
        }
    }

    /// The options as the container header's 8 option bytes.
    pub fn to_bytes(&self) -> [u8; 8] {
        match self {
            Self::Lz4(lz4) => [lz4.data_type as u8, 0, 0, 0, 0, 0, 0, 0],
        }
    }

    /// Options of `algorithm` from a header's 8 option bytes.
    pub fn from_bytes(algorithm: Algorithm, bytes: [u8; 8]) -> Result<Self> {
        match algorithm {
            Algorithm::Lz4 => {
                let data_type = DataType::from_id(bytes[0])
                    .ok_or_else(|| Error::Container(format!("unknown LZ4 data type {}", bytes[0])))?;
                Ok(Self::Lz4(Lz4 { data_type }))
            }
        }
    }

    /// The default options of `algorithm`.
    pub fn for_algorithm(algorithm: Algorithm) -> Self {
        match algorithm {
            Algorithm::Lz4 => Self::Lz4(Lz4::default()),
        }
    }
}

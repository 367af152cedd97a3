//! How a list's chunks are laid out (one block each, after a size prefix or not) and how a
//! chunk's outcome reads from its status, its size and its prefix.

use crate::codec::Options;
use crate::container::{Frame, SIZE_PREFIX_LEN};
use crate::error::{Error, Result};
use ferrocomp_format::Status;

/// What a call computes, which decides how its results read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Compress,
    Sizes,
    Decompress,
}

/// The algorithm and whether blocks carry a size prefix: how chunks are laid out and read.
#[derive(Clone, Copy)]
pub(super) struct Layout {
    pub(super) options: Options,
    pub(super) prefixed: bool,
}

impl Layout {
    pub(super) fn prefix_len(&self) -> usize {
        if self.prefixed { SIZE_PREFIX_LEN } else { 0 }
    }

    /// The size prefix of a `WithUncompressedSize` chunk, or `None` for `Raw`.
    pub(super) fn read_prefix(&self, chunk: usize, input: &[u8]) -> Result<Option<u64>> {
        if !self.prefixed {
            return Ok(None);
        }
        let prefix = input.first_chunk::<SIZE_PREFIX_LEN>().ok_or(Error::Chunk { chunk, status: Status::Truncated })?;
        Ok(Some(u64::from_le_bytes(*prefix.first_chunk().unwrap())))
    }

    /// One chunk's outcome from its status and size; `declared` is its size prefix, if any.
    /// A prefix is checked against what the block can hold, and against the decoded size.
    pub(super) fn outcome(
        &self,
        op: Op,
        chunk: usize,
        input_len: usize,
        status: Result<usize, Status>,
        declared: u64,
    ) -> Result<usize> {
        let size = status.map_err(|status| Error::Chunk { chunk, status })?;
        if !self.prefixed {
            return Ok(size);
        }
        match op {
            Op::Compress => Ok(SIZE_PREFIX_LEN + size),
            Op::Sizes => Frame::parse_with_size(self.options, &declared.to_le_bytes(), input_len)
                .map(|frame| frame.total_size)
                .map_err(|e| match e {
                    Error::Container(what) => Error::Container(format!("chunk {chunk}: {what}")),
                    other => other,
                }),
            Op::Decompress if size as u64 != declared => {
                Err(Error::ChunkSize { chunk, expected: declared as usize, actual: size })
            }
            Op::Decompress => Ok(size),
        }
    }
}

/// The error for a chunk over the compressor's limit.
pub(super) fn too_large(chunk: usize, len: usize, max: usize) -> Error {
    Error::InvalidArgument(format!(
        "chunk {chunk}: {len} bytes is over the {max}-byte chunk limit of a single-block bitstream; use the native one"
    ))
}

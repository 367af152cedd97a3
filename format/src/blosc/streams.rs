//! Where each block's streams lie in the chunk, checked: what a GPU warp reads to decode a block's
//! streams itself (one stream per lane, or the warp stream by stream).

use super::header::{HEADER_LEN, Header, MAX_SPLITS, read_u32};
use crate::Status;

/// One stored stream of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Stream {
    /// Offset of the stream's bytes in the chunk (past its `u32` size).
    pub at: usize,
    /// Stored size.
    pub len: usize,
    /// Where its decoded bytes start in the block, before any unshuffle.
    pub decoded_at: usize,
    /// Decoded size.
    pub decoded_len: usize,
}

impl Stream {
    /// Whether the stream is stored as is: c-blosc's mark for that is a stored size equal to the
    /// decoded size.
    pub fn is_raw(&self) -> bool {
        self.len == self.decoded_len
    }

    /// The stream's stored bytes in `chunk` (`Truncated` if `chunk` is not the one it was read from).
    pub fn bytes<'a>(&self, chunk: &'a [u8]) -> Result<&'a [u8], Status> {
        chunk.get(self.at..self.at.saturating_add(self.len)).ok_or(Status::Truncated)
    }
}

/// The streams of one block, in order: at most [`MAX_SPLITS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockStreams {
    count: usize,
    streams: [Stream; MAX_SPLITS],
}

impl BlockStreams {
    /// The streams as a slice.
    pub fn as_slice(&self) -> &[Stream] {
        &self.streams[..self.count]
    }
}

impl Header {
    /// The streams of block `i` of `chunk`, each checked to lie inside the chunk's `cbytes`.
    ///
    /// A compressed block's entry in the block table is the offset of its first stream's `u32`
    /// size; each stream follows the previous one and decodes to `block_len(i) / streams_per_block(i)`
    /// bytes. A memcpyed chunk's block is one raw stream inside the data after the header.
    /// `Malformed` for a block index past the end or a table offset or stream size reaching past
    /// `cbytes`; `Truncated` if `chunk` is shorter than `cbytes`.
    pub fn block_streams(&self, chunk: &[u8], i: usize) -> Result<BlockStreams, Status> {
        let block_len = self.block_len(i);
        if block_len == 0 {
            return Err(Status::Malformed);
        }
        let chunk = chunk.get(..self.cbytes()).ok_or(Status::Truncated)?;
        let mut block = BlockStreams { count: 0, streams: [Stream::default(); MAX_SPLITS] };
        if self.is_memcpyed() {
            let at = HEADER_LEN + self.block_start(i);
            block.streams[0] = Stream { at, len: block_len, decoded_at: 0, decoded_len: block_len };
            block.count = 1;
            return Ok(block);
        }
        block.count = self.streams_per_block(i);
        let decoded_len = block_len / block.count;
        let mut at = read_u32(chunk, HEADER_LEN + 4 * i).ok_or(Status::Malformed)?;
        for (j, stream) in block.streams.iter_mut().take(block.count).enumerate() {
            let len = read_u32(chunk, at).ok_or(Status::Malformed)?;
            at += 4;
            if len > chunk.len() - at {
                return Err(Status::Malformed);
            }
            *stream = Stream { at, len, decoded_at: j * decoded_len, decoded_len };
            at += len;
        }
        Ok(block)
    }
}

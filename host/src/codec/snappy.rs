//! Snappy: raw Snappy streams, one per chunk. On the GPU the compressor is LZ4's warp parse
//! writing Snappy elements; the decoder LZ4's, by a pair of warps a chunk, one parsing while the
//! other writes, or a block where the batch is small.

use super::lz4::{COMPRESS_SHAPE, SIZES_SHAPE, block_decoder};
use crate::batch::{BatchCodec, Launch, Shape};
use ferrocomp_format::lz4::HASH_ENTRIES;
use ferrocomp_format::snappy::{self, MAX_CHUNK_SIZE};
use ferrocomp_format::{Algorithm, DataType, Status};
use ferrocomp_kernels_gpu::lz77::pair;

/// The decompress kernel's shape: a block of two warps a chunk.
const DECOMPRESS_SHAPE: Shape = Shape::blocks(pair::WARPS, pair::SHARED_BYTES);

/// Snappy with its options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snappy {
    /// Element type of the input (as nvCOMP's `data_type` for LZ4): matches align to its width.
    pub data_type: DataType,
}

impl BatchCodec for Snappy {
    fn max_chunk_size(&self) -> usize {
        MAX_CHUNK_SIZE
    }

    fn max_decompressed_size(&self, compressed_bytes: usize) -> usize {
        snappy::max_decompressed_size(compressed_bytes)
    }

    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize {
        snappy::max_compressed_size(chunk_bytes)
    }

    fn block_decoder(&self, count: usize, _: Option<usize>, multiprocessors: u32) -> Option<Shape> {
        block_decoder(count, multiprocessors)
    }

    fn launch(&self) -> Launch {
        Launch {
            algorithm: Algorithm::Snappy,
            options: self.data_type as u64,
            compress: COMPRESS_SHAPE,
            decompress: DECOMPRESS_SHAPE,
            sizes: SIZES_SHAPE,
        }
    }

    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        let mut table = [0u16; HASH_ENTRIES];
        snappy::compress(input, self.data_type, &mut table, out)
    }

    fn decompress_scalar(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        snappy::decompress(input, out)
    }

    /// `snap`'s raw decoder. It makes the checks [`snappy::decompress`] makes, no more and no
    /// fewer: a preamble of at most five bytes saying at most `u32::MAX`, which `out` holds, every
    /// element within the input, copies of offset 1 to the bytes written and within the
    /// preamble's size, the elements ending at exactly that size.
    fn decompress_library(&self, input: &[u8], out: &mut [u8]) -> Option<usize> {
        snap::raw::Decoder::new().decompress(input, out).ok()
    }

    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status> {
        snappy::decompressed_size(input)
    }
}

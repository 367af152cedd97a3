//! GDeflate: one GDeflate page (deflate with its bits swizzled into 32 sub-streams, as
//! DirectStorage and nvCOMP write it) per chunk. Launched and scratched as Deflate is
//! ([`super::deflate`]).

use super::deflate::{
    compress_kernel, compress_scratch_size, launch, pair_decoder, with_compress_scratch, with_decode_tables,
};
use crate::batch::{BatchCodec, Launch, Shape};
use crate::gpu::Kernel;
use ferrocomp_format::deflate::DEFAULT_LEVEL;
use ferrocomp_format::gdeflate::{self, MAX_CHUNK_SIZE};
use ferrocomp_format::{Algorithm, Status};

/// GDeflate with its options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GDeflate {
    /// nvCOMP's `algorithm_type`, 0..=5, as for [`super::deflate::Deflate`].
    pub level: u8,
}

impl Default for GDeflate {
    fn default() -> Self {
        Self { level: DEFAULT_LEVEL }
    }
}

impl BatchCodec for GDeflate {
    fn max_chunk_size(&self) -> usize {
        MAX_CHUNK_SIZE
    }

    fn max_decompressed_size(&self, compressed_bytes: usize) -> usize {
        gdeflate::max_decompressed_size(compressed_bytes)
    }

    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize {
        gdeflate::max_compressed_size(chunk_bytes)
    }

    fn compress_scratch_size(&self, count: usize, _max_chunk_bytes: usize) -> usize {
        compress_scratch_size(count)
    }

    fn launch(&self) -> Launch {
        launch(Algorithm::GDeflate, self.level as u64)
    }

    fn compress_kernel(&self, max_chunk_bytes: usize) -> Kernel {
        compress_kernel(max_chunk_bytes)
    }

    /// Two warps a page (`gdeflate_decompress_blocks`) for batches the SMs hold at once, the
    /// smallest with their output staged in shared memory.
    fn block_decoder(&self, count: usize, _: Option<usize>, multiprocessors: u32) -> Option<Shape> {
        pair_decoder(count, multiprocessors)
    }

    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        with_compress_scratch(|scratch| gdeflate::compress(input, self.level, scratch, out))
    }

    fn decompress_scalar(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        with_decode_tables(|tables| gdeflate::decompress(input, out, tables))
    }

    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status> {
        with_decode_tables(|tables| gdeflate::decompressed_size(input, tables))
    }
}

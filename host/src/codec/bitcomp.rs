//! Bitcomp: numbers in tiles of frame-of-reference, delta or sparse bit-packing, optionally
//! quantised within an error bound, in ferrocomp's own layout. On the GPU a block of warps codes
//! each chunk both ways, a tile a lane.

use crate::batch::{BatchCodec, Launch, Shape};
use ferrocomp_format::bitcomp::{self, MAX_CHUNK_SIZE};
pub use ferrocomp_format::bitcomp::{ErrorBound, Options as Bitcomp};
use ferrocomp_format::{Algorithm, Status};
use ferrocomp_kernels_gpu::bitcomp::{COMPRESS_SHARED_BYTES, COMPRESS_WARPS, DECODE_SHARED_BYTES, DECODE_WARPS};

impl BatchCodec for Bitcomp {
    fn max_chunk_size(&self) -> usize {
        MAX_CHUNK_SIZE
    }

    fn max_decompressed_size(&self, compressed_bytes: usize) -> usize {
        bitcomp::max_decompressed_size(compressed_bytes)
    }

    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize {
        bitcomp::max_compressed_size(chunk_bytes, self)
    }

    fn launch(&self) -> Launch {
        Launch {
            algorithm: Algorithm::Bitcomp,
            options: self.to_word(),
            compress: Shape::blocks(COMPRESS_WARPS, COMPRESS_SHARED_BYTES),
            decompress: Shape::blocks(DECODE_WARPS, DECODE_SHARED_BYTES),
            sizes: super::lz4::SIZES_SHAPE,
        }
    }

    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        bitcomp::compress(input, self, out)
    }

    fn decompress_scalar(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        bitcomp::decompress(input, out)
    }

    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status> {
        bitcomp::decompressed_size(input)
    }

    fn lossless(&self) -> bool {
        self.error_bound.is_none()
    }
}

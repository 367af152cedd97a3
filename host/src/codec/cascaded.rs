//! Cascaded: run-length, delta and bit-packing layers over integers, one stream per chunk in
//! ferrocomp's own layout. On the GPU a warp codes each chunk, a sub-block at a time (in its
//! shared memory when compressing).

use crate::batch::{BatchCodec, Launch, Shape};
use ferrocomp_format::cascaded::{self, MAX_CHUNK_SIZE};
pub use ferrocomp_format::cascaded::{ElementType, Options as Cascaded};
use ferrocomp_format::{Algorithm, Status};
use ferrocomp_kernels_gpu::cascaded::{COMPRESS_SHARED_BYTES, COMPRESS_WARPS, DECODE_SHARED_BYTES, DECODE_WARPS};

impl BatchCodec for Cascaded {
    fn max_chunk_size(&self) -> usize {
        MAX_CHUNK_SIZE
    }

    fn max_decompressed_size(&self, compressed_bytes: usize) -> usize {
        cascaded::max_decompressed_size(compressed_bytes)
    }

    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize {
        cascaded::max_compressed_size(chunk_bytes)
    }

    fn launch(&self) -> Launch {
        Launch {
            algorithm: Algorithm::Cascaded,
            options: self.to_word() as u64,
            compress: Shape::Blocks {
                warps: COMPRESS_WARPS,
                shared_bytes: COMPRESS_SHARED_BYTES,
                max_blocks: usize::MAX,
            },
            decompress: Shape::Blocks {
                warps: DECODE_WARPS,
                shared_bytes: DECODE_SHARED_BYTES,
                max_blocks: usize::MAX,
            },
            sizes: super::lz4::SIZES_SHAPE,
        }
    }

    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        cascaded::compress(input, self, out)
    }

    fn decompress_scalar(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        cascaded::decompress(input, out)
    }

    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status> {
        cascaded::decompressed_size(input)
    }
}

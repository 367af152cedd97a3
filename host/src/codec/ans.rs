//! ANS: order-0 interleaved rANS over bytes or the high bytes of 16-bit floats, in ferrocomp's
//! own layout. On the GPU a block of warps codes each chunk both ways, a warp a sub-block, its lanes
//! the 32 states.

use crate::batch::{BatchCodec, Launch, Shape};
use ferrocomp_format::ans::{self, MAX_CHUNK_SIZE};
pub use ferrocomp_format::ans::{DataType as AnsDataType, Options as Ans};
use ferrocomp_format::{Algorithm, Status};
use ferrocomp_kernels_gpu::ans::{BLOCK_WARPS, compress_shared_bytes, decode_shared_bytes};

impl BatchCodec for Ans {
    fn max_chunk_size(&self) -> usize {
        MAX_CHUNK_SIZE
    }

    fn max_decompressed_size(&self, compressed_bytes: usize) -> usize {
        ans::max_decompressed_size(compressed_bytes)
    }

    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize {
        ans::max_compressed_size(chunk_bytes)
    }

    fn launch(&self) -> Launch {
        Launch {
            algorithm: Algorithm::Ans,
            options: self.data_type as u64,
            compress: Shape::blocks_of(BLOCK_WARPS, compress_shared_bytes),
            decompress: Shape::blocks_of(BLOCK_WARPS, decode_shared_bytes),
            sizes: super::lz4::SIZES_SHAPE,
        }
    }

    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        ans::compress(input, self, out)
    }

    fn decompress_scalar(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        ans::decompress(input, out)
    }

    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status> {
        ans::decompressed_size(input)
    }

    fn value_width(&self) -> usize {
        self.data_type.width()
    }
}

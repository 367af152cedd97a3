//! Cascaded: run-length, delta and bit-packing layers over integers, one stream per chunk in
//! ferrocomp's own layout. On the GPU a block of warps codes each chunk, each warp a sub-block at
//! a time in its shared memory; a batch of few chunks is decoded by larger blocks.

use crate::batch::{BatchCodec, Launch, Shape, forced_warps, wave_warps};
use ferrocomp_format::cascaded::{self, MAX_CHUNK_SIZE};
pub use ferrocomp_format::cascaded::{ElementType, Options as Cascaded};
use ferrocomp_format::{Algorithm, Status};
use ferrocomp_kernels_gpu::cascaded::{
    COMPRESS_WARPS, DECODE_WARPS, WARPS_PER_SM, compress_shared_bytes, decode_shared_bytes,
};
use std::sync::OnceLock;

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
            compress: Shape::blocks_of(COMPRESS_WARPS, compress_shared_bytes),
            decompress: Shape::blocks_of(DECODE_WARPS, decode_shared_bytes),
            sizes: super::lz4::SIZES_SHAPE,
        }
    }

    fn compress_shape(&self, count: usize, _max_chunk_bytes: usize, multiprocessors: u32) -> Shape {
        Shape::blocks_of(warps(count, multiprocessors, COMPRESS_WARPS), compress_shared_bytes)
    }

    fn decompress_shape(&self, count: usize, _max_chunk_bytes: Option<usize>, multiprocessors: u32) -> Shape {
        Shape::blocks_of(warps(count, multiprocessors, DECODE_WARPS), decode_shared_bytes)
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

/// Warps a chunk for a batch of `count` chunks on a GPU of `multiprocessors` SMs, from `least`
/// ([`wave_warps`]'s rule, at 85% a wave). On an H200 with 64 KiB chunks (sixteen sub-blocks),
/// summed over the bench's four sets, 256 MiB decoded 3% faster in blocks of three warps than of
/// four and 12% faster than of six, 64 MiB 10% faster in three or six than in four (1.3 waves), 16
/// MiB 1.3x as fast in twelve as in four (a third of the GPU); compressing, four, six and twelve
/// were best. `FERROCOMP_CASCADED_WARPS=N` makes it N both ways, to measure.
fn warps(count: usize, multiprocessors: u32, least: u32) -> u32 {
    static FORCED: OnceLock<Option<u32>> = OnceLock::new();
    wave_warps(count, multiprocessors, (least, WARPS_PER_SM), 85, forced_warps(&FORCED, "FERROCOMP_CASCADED_WARPS"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_fill_the_waves_of_an_h200() {
        // 16, 64 and 256 MiB of 64 KiB chunks, 132 SMs: decoding from three warps a block,
        // compressing from four.
        let decode = |count| warps(count, 132, DECODE_WARPS);
        let compress = |count| warps(count, 132, COMPRESS_WARPS);
        assert_eq!((decode(4096), decode(1024), decode(256)), (3, 3, 12));
        assert_eq!((compress(4096), compress(1024), compress(256)), (4, 6, 12));
        // Fewer chunks than an SM's worth of warps fills: the most there are; 300 fill a wave
        // of blocks of eight as well as two of twenty-four, and eight is fewer.
        assert_eq!((decode(16), decode(300), decode(0)), (24, 8, 24));
    }
}

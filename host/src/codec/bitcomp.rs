//! Bitcomp: numbers in tiles of frame-of-reference, delta or sparse bit-packing, optionally
//! quantised within an error bound, in ferrocomp's own layout. On the GPU a block of warps codes
//! each chunk both ways, a tile a lane; a batch of few chunks takes larger blocks.

use crate::batch::{BatchCodec, Launch, Shape, forced_warps, wave_warps};
use ferrocomp_format::bitcomp::{self, MAX_CHUNK_SIZE};
pub use ferrocomp_format::bitcomp::{ErrorBound, Options as Bitcomp};
use ferrocomp_format::{Algorithm, Status};
use ferrocomp_kernels_gpu::bitcomp::{
    COMPRESS_WARPS, COMPRESS_WARPS_PER_SM, DECODE_WARPS, DECODE_WARPS_PER_SM, compress_shared_bytes,
    decode_shared_bytes,
};
use std::sync::OnceLock;

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
            compress: Shape::blocks_of(COMPRESS_WARPS, compress_shared_bytes),
            decompress: Shape::blocks_of(DECODE_WARPS, decode_shared_bytes),
            sizes: super::lz4::SIZES_SHAPE,
        }
    }

    fn compress_shape(&self, count: usize, _max_chunk_bytes: usize, multiprocessors: u32) -> Shape {
        let warps = wave_warps(count, multiprocessors, COMPRESS_SHAPES, COMPRESS_FILL, forced());
        Shape::blocks_of(warps, compress_shared_bytes)
    }

    fn decompress_shape(&self, count: usize, _max_chunk_bytes: Option<usize>, multiprocessors: u32) -> Shape {
        let warps = wave_warps(count, multiprocessors, DECODE_SHAPES, DECODE_FILL, forced());
        Shape::blocks_of(warps, decode_shared_bytes)
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

/// Warps of a block either way, from the fewest to an SM's worth.
const COMPRESS_SHAPES: (u32, u32) = (COMPRESS_WARPS, COMPRESS_WARPS_PER_SM);
const DECODE_SHAPES: (u32, u32) = (DECODE_WARPS, DECODE_WARPS_PER_SM);
/// How full the waves of blocks must be ([`wave_warps`]), percent. On an H200 with 64 KiB
/// chunks, the bench's four sets at two types: 16 MiB compressed up to 11% faster in blocks of
/// twelve than of four (one case 4% slower) and decoded 16-33% faster in ten; 64 MiB compressed
/// up to 9% faster in six (1.3 waves of four), but decoded 1-6% slower in five than in four (1.55
/// waves; one case 2% faster), so decoding takes larger blocks only for a batch short of a wave
/// of four.
const COMPRESS_FILL: usize = 85;
const DECODE_FILL: usize = 50;

/// Warps a block forced by `FERROCOMP_BITCOMP_WARPS=N` both ways (at least the fewest the
/// compressor takes), to measure.
fn forced() -> Option<u32> {
    static FORCED: OnceLock<Option<u32>> = OnceLock::new();
    forced_warps(&FORCED, "FERROCOMP_BITCOMP_WARPS").map(|warps| warps.max(COMPRESS_WARPS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_fill_the_waves_of_an_h200() {
        // 16, 64 and 256 MiB of 64 KiB chunks, 132 SMs: from four warps a block either way.
        let compress = |count| wave_warps(count, 132, COMPRESS_SHAPES, COMPRESS_FILL, None);
        let decode = |count| wave_warps(count, 132, DECODE_SHAPES, DECODE_FILL, None);
        assert_eq!((compress(4096), compress(1024), compress(256)), (4, 6, 12));
        assert_eq!((decode(4096), decode(1024), decode(256)), (4, 4, 10));
        // Fewer chunks than SMs: an SM's worth each; forced warps stay within the kernels' range.
        assert_eq!((compress(100), decode(100)), (24, 20));
        let forced = |warps| wave_warps(9, 132, COMPRESS_SHAPES, COMPRESS_FILL, Some(warps));
        assert_eq!((forced(64), forced(2)), (24, 2));
    }
}

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
            compress: compress_shape(COMPRESS_WARPS),
            decompress: decode_shape(DECODE_WARPS),
            sizes: super::lz4::SIZES_SHAPE,
        }
    }

    fn compress_shape(&self, count: usize, multiprocessors: u32) -> Shape {
        compress_shape(wave_warps(count, multiprocessors, COMPRESS_WARPS, COMPRESS_WARPS_PER_SM, forced()))
    }

    fn decompress_shape(&self, count: usize, _max_chunk_bytes: usize, multiprocessors: u32) -> Shape {
        decode_shape(wave_warps(count, multiprocessors, DECODE_WARPS, DECODE_WARPS_PER_SM, forced()))
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

/// Warps a block forced by `FERROCOMP_BITCOMP_WARPS=N` both ways (at least the fewest the
/// compressor takes), to measure.
fn forced() -> Option<u32> {
    static FORCED: OnceLock<Option<u32>> = OnceLock::new();
    forced_warps(&FORCED, "FERROCOMP_BITCOMP_WARPS").map(|warps| warps.max(COMPRESS_WARPS))
}

/// Blocks of `warps` warps compressing a chunk each.
fn compress_shape(warps: u32) -> Shape {
    Shape::blocks(warps, compress_shared_bytes(warps))
}

/// Blocks of `warps` warps decoding a chunk each.
fn decode_shape(warps: u32) -> Shape {
    Shape::blocks(warps, decode_shared_bytes(warps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_fill_the_waves_of_an_h200() {
        // 16, 64 and 256 MiB of 64 KiB chunks, 132 SMs: from four warps a block either way.
        let compress = |count| wave_warps(count, 132, COMPRESS_WARPS, COMPRESS_WARPS_PER_SM, None);
        let decode = |count| wave_warps(count, 132, DECODE_WARPS, DECODE_WARPS_PER_SM, None);
        assert_eq!((compress(4096), compress(1024), compress(256)), (4, 6, 12));
        assert_eq!((decode(4096), decode(1024), decode(256)), (4, 5, 10));
        // Fewer chunks than SMs: an SM's worth each; forced warps stay within the kernels' range.
        assert_eq!((compress(100), decode(100)), (24, 20));
        assert_eq!((wave_warps(9, 132, 4, 24, Some(64)), wave_warps(9, 132, 4, 24, Some(2))), (24, 2));
    }
}

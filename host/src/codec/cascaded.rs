//! Cascaded: run-length, delta and bit-packing layers over integers, one stream per chunk in
//! ferrocomp's own layout. On the GPU a block of warps codes each chunk, each warp a sub-block at
//! a time in its shared memory; a batch of few chunks is decoded by larger blocks.

use crate::batch::{BatchCodec, Launch, Shape};
use ferrocomp_format::cascaded::{self, MAX_CHUNK_SIZE};
pub use ferrocomp_format::cascaded::{ElementType, Options as Cascaded};
use ferrocomp_format::{Algorithm, Status};
use ferrocomp_kernels_gpu::cascaded::{
    COMPRESS_SHARED_BYTES, COMPRESS_WARPS, DECODE_WARPS, DECODE_WARPS_PER_SM, MAX_DECODE_WARPS, decode_shared_bytes,
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
            compress: Shape::Blocks {
                warps: COMPRESS_WARPS,
                shared_bytes: COMPRESS_SHARED_BYTES,
                max_blocks: usize::MAX,
            },
            decompress: decode_shape(DECODE_WARPS),
            sizes: super::lz4::SIZES_SHAPE,
        }
    }

    /// Enough warps a chunk that the batch is decoded in one wave where it takes at least two
    /// (1,024 chunks, 64 MiB of 64 KiB ones, in blocks of three warps rather than 1.3 waves of
    /// four; 256 chunks in blocks of twelve, not a third of the GPU in blocks of four), else
    /// [`DECODE_WARPS`]. `FERROCOMP_CASCADED_DECODE_WARPS=N` makes it N, to measure.
    fn decompress_shape(&self, count: usize, _max_chunk_bytes: usize, multiprocessors: u32) -> Shape {
        static FORCED: OnceLock<Option<u32>> = OnceLock::new();
        let forced = FORCED.get_or_init(|| std::env::var("FERROCOMP_CASCADED_DECODE_WARPS").ok()?.parse().ok());
        let one_wave = (DECODE_WARPS_PER_SM * multiprocessors) as usize / count.max(1);
        let warps = match *forced {
            Some(warps) => warps,
            None if one_wave >= 2 => one_wave as u32,
            None => DECODE_WARPS,
        };
        decode_shape(warps.clamp(1, MAX_DECODE_WARPS))
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

/// Blocks of `warps` warps decoding a chunk each.
fn decode_shape(warps: u32) -> Shape {
    Shape::Blocks { warps, shared_bytes: decode_shared_bytes(warps), max_blocks: usize::MAX }
}

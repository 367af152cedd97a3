//! Cascaded: run-length, delta and bit-packing layers over integers, one stream per chunk in
//! ferrocomp's own layout. On the GPU a block of warps codes each chunk, each warp a sub-block at
//! a time in its shared memory; a batch of few chunks is decoded by larger blocks.

use crate::batch::{BatchCodec, Launch, Shape};
use ferrocomp_format::cascaded::{self, MAX_CHUNK_SIZE};
pub use ferrocomp_format::cascaded::{ElementType, Options as Cascaded};
use ferrocomp_format::{Algorithm, Status};
use ferrocomp_kernels_gpu::cascaded::{
    COMPRESS_WARPS, DECODE_WARPS, MAX_WARPS, WARPS_PER_SM, compress_shared_bytes, decode_shared_bytes,
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
            compress: compress_shape(COMPRESS_WARPS),
            decompress: decode_shape(DECODE_WARPS),
            sizes: super::lz4::SIZES_SHAPE,
        }
    }

    fn compress_shape(&self, count: usize, multiprocessors: u32) -> Shape {
        compress_shape(warps(count, multiprocessors, COMPRESS_WARPS))
    }

    fn decompress_shape(&self, count: usize, _max_chunk_bytes: usize, multiprocessors: u32) -> Shape {
        decode_shape(warps(count, multiprocessors, DECODE_WARPS))
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

/// Warps a chunk for a batch of `count` chunks on a GPU of `multiprocessors` SMs: enough that
/// the batch is coded in one wave where that is two or more (1,024 chunks, 64 MiB of 64 KiB ones,
/// in blocks of three rather than 1.3 waves of four; 256 chunks in blocks of twelve, not a third
/// of the GPU in blocks of four), else `many` (the shape for many waves).
/// `FERROCOMP_CASCADED_WARPS=N` makes it N both ways, to measure.
fn warps(count: usize, multiprocessors: u32, many: u32) -> u32 {
    static FORCED: OnceLock<Option<u32>> = OnceLock::new();
    let forced = FORCED.get_or_init(|| std::env::var("FERROCOMP_CASCADED_WARPS").ok()?.parse().ok());
    let one_wave = (WARPS_PER_SM * multiprocessors) as usize / count.max(1);
    let warps = match *forced {
        Some(warps) => warps,
        None if one_wave >= 2 => one_wave.min(MAX_WARPS as usize) as u32,
        None => many,
    };
    warps.clamp(1, MAX_WARPS)
}

/// Blocks of `warps` warps compressing a chunk each.
fn compress_shape(warps: u32) -> Shape {
    Shape::Blocks { warps, shared_bytes: compress_shared_bytes(warps), max_blocks: usize::MAX }
}

/// Blocks of `warps` warps decoding a chunk each.
fn decode_shape(warps: u32) -> Shape {
    Shape::Blocks { warps, shared_bytes: decode_shared_bytes(warps), max_blocks: usize::MAX }
}

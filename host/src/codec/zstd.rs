//! Zstandard (RFC 8878): one frame per chunk written, any frames (back to back, skippable ones
//! included) read, as libzstd writes them. On the GPU a warp codes each chunk, its lanes sharing
//! every phase; each warp keeps its tables in shared memory and its literals and sequences in a
//! scratch slot of device memory. Decoding, a prologue first decodes every chunk's sequences, a
//! thread per chunk, into the scratch: 8 bytes for each 3 bytes a chunk may decode to.

use super::zeroed;
use crate::batch::{BatchCodec, Launch, Shape};
use ferrocomp_format::zstd::encode::{self, CompressScratch, DEFAULT_LEVEL};
use ferrocomp_format::zstd::{self as format, DecodeTables, MAX_DECOMPRESSED_CHUNK_SIZE};
use ferrocomp_format::{Algorithm, Status};
use ferrocomp_kernels_gpu::zstd::decode::{DECODE_SHARED_BYTES_PER_WARP, SIZES_SHARED_BYTES_PER_WARP};
use ferrocomp_kernels_gpu::zstd::encode::{compress_scratch_bytes_per_warp, compress_shared_bytes_per_warp};
use ferrocomp_kernels_gpu::zstd::{
    COMPRESS_WARPS, DECODE_SLOTS, DECOMPRESS_WARPS, PROLOGUE_LANES, PROLOGUE_SHARED_BYTES_PER_THREAD, SIZES_WARPS,
    decompress_scratch_bytes,
};
use std::cell::RefCell;
use std::ops::RangeInclusive;

/// Most warps a kernel with scratch runs (each owns a slot: 128 KiB to decode, 192 KiB to encode
/// at level 1, 328 KiB at levels 2 and 3); more chunks are taken in turns. Each warp's work is mostly
/// serial (the FSE coding, each parse step's chain walk), so throughput comes from chunks in flight: 4096 is
/// more than an H100 holds at once.
const SLOTS: usize = DECODE_SLOTS;
/// Most bytes one byte of a frame decodes to: a 4-byte RLE block regenerates 128 KiB.
const MAX_EXPANSION: usize = (128 << 10) / 4;

/// Zstandard with its options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Zstd {
    /// Compression level, 1 (fast, the default) to [`encode::MAX_LEVEL`] (higher ratio).
    pub level: u8,
}

impl Zstd {
    /// The levels there are.
    pub const LEVELS: RangeInclusive<u8> = 1..=encode::MAX_LEVEL;
}

impl Default for Zstd {
    fn default() -> Self {
        Self { level: DEFAULT_LEVEL }
    }
}

/// A warp per chunk, `per_block` to a block (the kernels' launch bounds), with `shared_bytes`
/// each, at most [`SLOTS`] of them.
const fn slotted(per_block: u32, shared_bytes: usize) -> Shape {
    Shape::Warps { per_block, shared_bytes, max_warps: SLOTS }
}

thread_local! {
    static CPU_DECODE_TABLES: RefCell<Box<DecodeTables>> = RefCell::new(zeroed());
    static CPU_COMPRESS_SCRATCH: RefCell<Box<CompressScratch>> = RefCell::new(zeroed());
}

/// Runs `f` with this thread's CPU decoding tables.
fn with_decode_tables<R>(f: impl FnOnce(&mut DecodeTables) -> R) -> R {
    CPU_DECODE_TABLES.with(|tables| f(&mut tables.borrow_mut()))
}

impl BatchCodec for Zstd {
    fn max_chunk_size(&self) -> usize {
        MAX_DECOMPRESSED_CHUNK_SIZE
    }

    fn max_decompressed_size(&self, compressed_bytes: usize) -> usize {
        compressed_bytes.saturating_mul(MAX_EXPANSION).min(MAX_DECOMPRESSED_CHUNK_SIZE)
    }

    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize {
        encode::max_compressed_size(chunk_bytes)
    }

    fn compress_scratch_size(&self, count: usize, _max_chunk_bytes: usize) -> usize {
        count.min(SLOTS) * compress_scratch_bytes_per_warp(self.level)
    }

    fn decompress_scratch_size(&self, count: usize, max_chunk_bytes: usize) -> usize {
        decompress_scratch_bytes(count, max_chunk_bytes)
    }

    fn launch(&self) -> Launch {
        Launch {
            algorithm: Algorithm::Zstd,
            options: self.level as u64,
            compress: slotted(COMPRESS_WARPS, compress_shared_bytes_per_warp(self.level)),
            decompress: slotted(DECOMPRESS_WARPS, DECODE_SHARED_BYTES_PER_WARP),
            sizes: Shape::warps(SIZES_WARPS, SIZES_SHARED_BYTES_PER_WARP),
        }
    }

    fn decompress_prologue(&self) -> Option<Shape> {
        // Each lane's FSE decoding is serial; the kernel is bound by the warps' instruction
        // issue, so lanes that keep in step share a warp's instructions. Since the sequence
        // decoder went branch-free, more lanes a warp is faster. Measured on an H100 (256 MiB in
        // 64 KiB chunks, level 1, decompression GB/s text / binary / float32 / int32): 2 lanes
        // 46.6 / 59.6 / 37.9 / 48.9, 4 lanes 54.4 / 60.2 / 41.9 / 49.2, 8 lanes 55.7 / 57.9 /
        // 43.3 / 48.6 (nvCOMP's chunks: 43.0 / 58.0 / 36.6 / 45.5, 49.3 / 54.9 / 44.0 / 46.5,
        // 50.6 / 53.7 / 46.1 / 46.5). 8 lanes' tables fill 43 KiB, under a block's 48.
        Some(Shape::Threads { per_block: PROLOGUE_LANES, shared_bytes: PROLOGUE_SHARED_BYTES_PER_THREAD })
    }

    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        CPU_COMPRESS_SCRATCH.with(|scratch| encode::compress(input, self.level, &mut scratch.borrow_mut(), out))
    }

    fn decompress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        with_decode_tables(|tables| format::decompress(input, out, tables))
    }

    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status> {
        with_decode_tables(|tables| format::decompressed_size(input, tables))
    }
}

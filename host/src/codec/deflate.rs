//! Deflate (RFC 1951), raw or wrapped as zlib (RFC 1950) or gzip (RFC 1952) with the trailer
//! checked: one stream per chunk. On the GPU a warp compresses each chunk, all its lanes
//! together, with a scratch slot of device memory per warp; a warp decodes each chunk, its
//! decoding tables in shared memory.

use super::zeroed;
use crate::batch::{BatchCodec, Launch, Shape};
use ferrocomp_format::deflate::{
    self, CompressScratch, DEFAULT_LEVEL, DecodeTables, MAX_CHUNK_SIZE, MAX_LEVEL, Wrapper,
};
use ferrocomp_format::{Algorithm, Status};
use ferrocomp_kernels_gpu::deflate::compress::{COMPRESS_SHARED_BYTES_PER_WARP, COMPRESS_WARPS};
use ferrocomp_kernels_gpu::deflate::{DECODE_SHARED_BYTES_PER_WARP, DECODE_WARPS};
use std::cell::RefCell;
use std::ops::RangeInclusive;

/// Most warps a compress kernel runs (each with a [`CompressScratch`] slot); more chunks are
/// taken in turns.
const COMPRESS_SLOTS: usize = 4096;

/// Deflate with its options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deflate {
    /// nvCOMP's `algorithm_type`, 0..=5: 0 entropy coding only, 1 fast (the default), 2 and 3
    /// medium (above zlib level 1), 4 high (above zlib level 6), 5 highest ratio.
    pub level: u8,
    /// The container around the deflate stream.
    pub wrapper: Wrapper,
}

impl Deflate {
    /// The levels there are (GDeflate's too).
    pub const LEVELS: RangeInclusive<u8> = 0..=MAX_LEVEL;
}

impl Default for Deflate {
    fn default() -> Self {
        Self { level: DEFAULT_LEVEL, wrapper: Wrapper::Raw }
    }
}

/// The compress kernels' shape (Deflate's and GDeflate's): a warp per chunk, at most
/// [`COMPRESS_SLOTS`], each with level 1's hash table in shared memory.
const COMPRESS_SHAPE: Shape =
    Shape::Warps { per_block: COMPRESS_WARPS, shared_bytes: COMPRESS_SHARED_BYTES_PER_WARP, max_warps: COMPRESS_SLOTS };

/// Device scratch the compress kernels need for `count` chunks.
pub(crate) fn compress_scratch_size(count: usize) -> usize {
    count.min(COMPRESS_SLOTS) * size_of::<CompressScratch>()
}

/// The decompress and size kernels' shape: a warp per chunk, with its decoding tables in shared
/// memory.
const DECOMPRESS_SHAPE: Shape = Shape::warps(DECODE_WARPS, DECODE_SHARED_BYTES_PER_WARP);

/// The launch of Deflate's kernels (`deflate`) or GDeflate's, which share its shapes.
pub(crate) fn launch(algorithm: Algorithm, options: u64) -> Launch {
    Launch { algorithm, options, compress: COMPRESS_SHAPE, decompress: DECOMPRESS_SHAPE, sizes: DECOMPRESS_SHAPE }
}

thread_local! {
    static CPU_COMPRESS_SCRATCH: RefCell<Box<CompressScratch>> = RefCell::new(zeroed());
    static CPU_DECODE_TABLES: RefCell<Box<DecodeTables>> = RefCell::new(zeroed());
}

/// Runs `f` with this thread's CPU compression scratch.
pub(crate) fn with_compress_scratch<R>(f: impl FnOnce(&mut CompressScratch) -> R) -> R {
    CPU_COMPRESS_SCRATCH.with(|scratch| f(&mut scratch.borrow_mut()))
}

/// Runs `f` with this thread's CPU decoding tables.
pub(crate) fn with_decode_tables<R>(f: impl FnOnce(&mut DecodeTables) -> R) -> R {
    CPU_DECODE_TABLES.with(|tables| f(&mut tables.borrow_mut()))
}

impl Deflate {
    /// The kernels' options word: level, then wrapper id.
    fn options(&self) -> u64 {
        self.level as u64 | (self.wrapper as u64) << 8
    }
}

impl BatchCodec for Deflate {
    fn max_chunk_size(&self) -> usize {
        MAX_CHUNK_SIZE
    }

    fn max_decompressed_size(&self, compressed_bytes: usize) -> usize {
        deflate::max_decompressed_size(compressed_bytes)
    }

    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize {
        deflate::max_compressed_size(chunk_bytes, self.wrapper)
    }

    fn compress_scratch_size(&self, count: usize, _max_chunk_bytes: usize) -> usize {
        compress_scratch_size(count)
    }

    fn launch(&self) -> Launch {
        launch(Algorithm::Deflate, self.options())
    }

    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        with_compress_scratch(|scratch| deflate::compress(input, self.level, self.wrapper, scratch, out))
    }

    fn decompress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        with_decode_tables(|tables| deflate::decompress(input, self.wrapper, out, tables))
    }

    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status> {
        with_decode_tables(|tables| deflate::decompressed_size(input, self.wrapper, tables))
    }
}

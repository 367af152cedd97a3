//! LZ4: standard LZ4 blocks, one per chunk, on the GPU (a warp per chunk, or a block of threads
//! where the batch is small) or the CPU.

use crate::batch::{BatchCodec, Launch, Shape, is_small_batch};
use ferrocomp_format::lz4::{self, HASH_ENTRIES, MAX_CHUNK_SIZE};
use ferrocomp_format::{Algorithm, DataType, Status};
use ferrocomp_kernels_gpu::lz4::COMPRESS_SHARED_BYTES_PER_WARP;
use ferrocomp_kernels_gpu::lz77::DECOMPRESS_WARPS;
use ferrocomp_kernels_gpu::lz77::block::{BLOCK_THREADS, SHARED_BYTES};

/// The compress kernel's shape: a warp per chunk, four to a block, each with its 8 KiB hash
/// table in shared memory (Snappy's compressor shares it).
pub(crate) const COMPRESS_SHAPE: Shape = Shape::warps(4, COMPRESS_SHARED_BYTES_PER_WARP);
/// The decompress kernel's shape: a warp per chunk.
const DECOMPRESS_SHAPE: Shape = Shape::warps(DECOMPRESS_WARPS, 0);
/// The size kernel's shape: a thread per chunk.
pub(crate) const SIZES_SHAPE: Shape = Shape::Threads { per_block: 128, shared_bytes: 0 };

/// LZ4 with its options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lz4 {
    /// Element type of the input (nvCOMP's `data_type`): matches align to its width.
    pub data_type: DataType,
}

/// Batches of at most this many chunks per SM decode with a block of threads per chunk (the
/// block decoder, `ferrocomp_kernels_gpu::lz77::block`), larger ones with a warp per chunk. On an
/// H200 with 64 KiB chunks (one call, bench/RESULTS.md, issue 48), blocks decode text, binary and
/// float data at 63-91 GB/s from 1,024 chunks (64 MiB) to 2,048 where warps take 27-64, and at
/// 3,072 still lead but on float32 (74.5 against 77.2). Near-random literals (the int32 set), which
/// the block copies in turn at 145-172 GB/s whatever the batch, go faster by warps from 8 chunks an
/// SM on (LZ4 164.6 against 193.2 at 64 MiB, 168.5 against 358.7 at 128). The count alone cannot
/// tell the two apart: blocks up to 16 an SM would decode compressible batches of 65-128 MiB
/// 1.3-2.6x faster and incompressible ones up to half as fast, so they stop at 8.
/// `FERROCOMP_BLOCK_DECODE_WAVES=N` overrides it, to measure where one overtakes the other.
const BLOCK_DECODE_WAVES: usize = 8;

/// LZ4's and Snappy's block decoder for `count` chunks on `multiprocessors` SMs: a block of
/// [`BLOCK_THREADS`] threads and all of an SM's shared memory a chunk, for a batch a few SMs deep.
pub(crate) fn block_decoder(count: usize, multiprocessors: u32) -> Option<Shape> {
    is_small_batch(count, multiprocessors, BLOCK_DECODE_WAVES)
        .then_some(Shape::blocks(BLOCK_THREADS / 32, SHARED_BYTES))
}

impl BatchCodec for Lz4 {
    fn max_chunk_size(&self) -> usize {
        MAX_CHUNK_SIZE
    }

    fn max_decompressed_size(&self, compressed_bytes: usize) -> usize {
        lz4::max_decompressed_size(compressed_bytes)
    }

    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize {
        lz4::max_compressed_size(chunk_bytes)
    }

    fn block_decoder(&self, count: usize, _: Option<usize>, multiprocessors: u32) -> Option<Shape> {
        block_decoder(count, multiprocessors)
    }

    fn launch(&self) -> Launch {
        Launch {
            algorithm: Algorithm::Lz4,
            options: self.data_type as u64,
            compress: COMPRESS_SHAPE,
            decompress: DECOMPRESS_SHAPE,
            sizes: SIZES_SHAPE,
        }
    }

    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        let mut table = [0u16; HASH_ENTRIES];
        lz4::compress(input, self.data_type, &mut table, out)
    }

    fn decompress_scalar(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        lz4::decompress(input, out)
    }

    /// lz4_flex's safe decoder. It accepts exactly the blocks [`lz4::decompress`] does, with the
    /// same size: sequences until the input ends right after a sequence's literals (a block
    /// ending after a match, or empty, is refused), every literal run within the input and the
    /// output, every match within the output with an offset from 1 to the bytes written, and no
    /// end-of-block rules beyond those. liblz4 (the `lz4` crate), faster alone, accepts offset 0,
    /// which ours refuses, so it would need a walk of the sequences first, and is then slower
    /// than lz4_flex.
    fn decompress_library(&self, input: &[u8], out: &mut [u8]) -> Option<usize> {
        lz4_flex::block::decompress_into(input, out).ok()
    }

    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status> {
        lz4::decompressed_size(input)
    }
}

//! Zstandard on the GPU: a warp per chunk, its lanes sharing the work of each phase
//! ([`decode`], [`encode`]). Each warp keeps its tables in shared memory and owns a slot of the
//! batch's device scratch for its literals and sequences.

pub mod decode;
pub mod encode;

use decode::DECODE_SHARED_BYTES_PER_WARP;
use encode::COMPRESS_SHARED_BYTES_PER_WARP;

/// Shared memory a block may use without opting in.
const SHARED_BYTES_PER_BLOCK: usize = 48 << 10;
/// Shared memory of one SM (an H100's, less the 1 KiB per block the driver keeps).
const SHARED_BYTES_PER_SM: usize = 228 << 10;

/// Warps per block of the decompress and size kernels: as many as their shared memory allows.
pub const DECOMPRESS_WARPS: u32 = (SHARED_BYTES_PER_BLOCK / DECODE_SHARED_BYTES_PER_WARP) as u32;
/// Warps per block of the compress kernel.
pub const COMPRESS_WARPS: u32 = (SHARED_BYTES_PER_BLOCK / COMPRESS_SHARED_BYTES_PER_WARP) as u32;

/// Blocks of `warps` warps with `shared_bytes` each that fit an SM's shared memory: the occupancy
/// the launch bounds ask of ptxas. A warp's work is mostly one lane's serial decoding or coding
/// (FSE sequences, Huffman streams), so the speed comes from warps in flight: unbounded, ptxas
/// gave the kernels 234 and 255 registers, 8 and 5 warps per SM (measured on an H100).
pub const fn blocks_per_sm(warps: u32, shared_bytes: usize) -> u32 {
    (SHARED_BYTES_PER_SM / (warps as usize * (shared_bytes + 1024 / warps as usize))) as u32
}

/// The batched entry points (`zstd_compress`, `zstd_decompress`, `zstd_decompressed_sizes`).
#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::decode::{self, DECODE_SCRATCH_BYTES_PER_WARP, DECODE_SHARED_BYTES_PER_WARP};
    use super::encode::{self, COMPRESS_SHARED_BYTES_PER_WARP, compress_scratch_bytes_per_warp};
    use crate::batch::{Chunk, ChunkKernels, Lanes, warp_shared};
    use crate::gpu::HardwareWarp;
    use ferrocomp_format::{BatchArgs, Status};

    /// A warp per chunk; the options word is the compression level, whose scratch slots are
    /// `compress_scratch_bytes_per_warp(level)` apart.
    pub struct Zstd;

    /// The chunk's slot of `bytes_per_warp` in the batch's scratch (null without scratch).
    fn scratch(args: &BatchArgs, chunk: &Chunk, bytes_per_warp: usize) -> *mut u8 {
        if args.scratch == 0 {
            return core::ptr::null_mut();
        }
        unsafe { (args.scratch as *mut u8).add(chunk.slot * bytes_per_warp) }
    }

    impl ChunkKernels for Zstd {
        const COMPRESS: Lanes = Lanes::Warp;
        const DECOMPRESS: Lanes = Lanes::Warp;
        const SIZES: Lanes = Lanes::Warp;

        unsafe fn compress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let shared = warp_shared::<u8>(COMPRESS_SHARED_BYTES_PER_WARP);
            let level = args.options as u8;
            let scratch = scratch(args, chunk, compress_scratch_bytes_per_warp(level));
            let (input, n, out, capacity) = (chunk.input, chunk.input_len, chunk.output, chunk.capacity);
            unsafe { encode::compress_chunk(warp, input, n, out, capacity, level, shared, scratch) }
        }

        unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let shared = warp_shared::<u8>(DECODE_SHARED_BYTES_PER_WARP);
            let scratch = scratch(args, chunk, DECODE_SCRATCH_BYTES_PER_WARP);
            let (input, n, out, capacity) = (chunk.input, chunk.input_len, chunk.output, chunk.capacity);
            unsafe { decode::decompress_chunk(warp, input, n, out, capacity, shared, scratch) }
        }

        unsafe fn decompressed_size(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let shared = warp_shared::<u8>(DECODE_SHARED_BYTES_PER_WARP);
            let scratch = scratch(args, chunk, DECODE_SCRATCH_BYTES_PER_WARP);
            unsafe { decode::decompressed_size(warp, chunk.input, chunk.input_len, shared, scratch) }
        }
    }

    crate::batch_kernels!(Zstd: zstd_compress, zstd_decompress, zstd_decompressed_sizes);
}

//! Zstandard on the GPU: a warp per chunk, its lanes sharing the work of each phase
//! ([`decode`], [`encode`]). Each warp keeps its tables in shared memory; compressing, it owns a
//! slot of the batch's device scratch. Decompressing needs no scratch: literals are decoded into
//! the output, and sequences a batch at a time into shared memory, by the warp's first lane
//! (`zstd_decompress`) or by a team's reader (`zstd_decompress_blocks`): a block of warps each
//! writing a chunk and one more, the last, whose lane i reads the sequences of writer i while
//! it writes, so that one instruction of the serial FSE loop serves every writer.

pub mod decode;
pub mod encode;

use crate::{SHARED_BYTES_PER_BLOCK, blocks_per_sm};
use decode::{DECODE_SHARED_BYTES_PER_WARP, SIZES_SHARED_BYTES_PER_WARP};
use encode::COMPRESS_SHARED_BYTES_PER_WARP;

/// Warps per block of the decompress kernel: as many as a block's shared memory holds the
/// tables of.
pub const DECOMPRESS_WARPS: u32 = (SHARED_BYTES_PER_BLOCK / DECODE_SHARED_BYTES_PER_WARP) as u32;
/// Blocks per SM of the decompress kernel: 16 warps at 128 registers, one block fewer than the
/// SM's shared memory holds. At 20 warps and 96 registers the spills cost more than the warps
/// gain (H200, 256 MiB in 64 KiB chunks, level 1, GB/s text / binary / float32 / int32 / Linux
/// sources, one call: 30.5 / 66.5 / 26.5 / 29.7 / 40.1 at 96 registers, 32.3 / 71.6 / 29.8 / 37.7
/// / 41.9 at 128).
pub const DECOMPRESS_BLOCKS_PER_SM: u32 = 4;
const _: () = assert!(DECOMPRESS_BLOCKS_PER_SM <= blocks_per_sm(DECOMPRESS_WARPS, DECODE_SHARED_BYTES_PER_WARP));
/// Warps an SM holds of the team kernel, `zstd_decompress_blocks`, in blocks of any size (their
/// writers and readers): eight pairs, or a team of up to 15 writers and its reader. Its launch
/// bounds hold ptxas to 128 registers; at 17 warps (96 registers, 474 bytes of spills) a team of
/// 16 took 256 MiB of text at 20.3 GB/s where the warp kernel takes 32.1 (H200).
pub const TEAM_WARPS_PER_SM: u32 = 16;
/// The bit of the team kernel's options (`BatchArgs::options`) that has its readers hand their
/// batches over as walked states (`decode::WalkedStates`), not full sequences.
pub const WALKED_STATES: u64 = 1 << 8;
/// Warps per block of the sizes kernel: as many as its shared memory allows.
pub const SIZES_WARPS: u32 = (SHARED_BYTES_PER_BLOCK / SIZES_SHARED_BYTES_PER_WARP) as u32;
/// Warps per block of the compress kernel, and its blocks per SM: 16 warps to an SM at 128
/// registers each, the fewest warps that take a batch of 256 MiB in 64 KiB chunks (4096) in two
/// rounds on an H100's or H200's 132 SMs. Each warp waits mostly on its own loads, so registers
/// (no spills) gain more than warps in flight. Measured on an H100 (level 2, GB/s text / binary /
/// float32 / int32, one run): 16 warps at 128 registers 9.8 / 12.4 / 10.5 / 10.6, 18 at 96
/// 9.0 / 11.7 / 9.0 / 10.2; blocks of 2 or 1 warps were within 0.1; 32 warps at 64 registers
/// (the batch in one round) at most 7.7 / 8.0 / 8.3 / 8.5.
pub const COMPRESS_WARPS: u32 = 4;
/// Blocks per SM of the compress kernel (see [`COMPRESS_WARPS`]).
pub const COMPRESS_BLOCKS_PER_SM: u32 = 4;
const _: () = assert!(
    COMPRESS_WARPS as usize * COMPRESS_SHARED_BYTES_PER_WARP <= SHARED_BYTES_PER_BLOCK
        && COMPRESS_BLOCKS_PER_SM <= blocks_per_sm(COMPRESS_WARPS, COMPRESS_SHARED_BYTES_PER_WARP)
);

/// The batched entry points (`zstd_compress`, `zstd_decompress`, `zstd_decompressed_sizes`).
#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::WALKED_STATES;
    use super::decode::{self, DECODE_SHARED_BYTES_PER_WARP, SIZES_SHARED_BYTES_PER_WARP};
    use super::encode::{self, compress_scratch_bytes_per_warp, compress_shared_bytes_per_warp};
    use crate::batch::{Chunk, ChunkKernels, Lanes, for_each_chunk, warp_shared};
    use crate::gpu::{HardwareBlock, HardwareWarp, dynamic_shared_memory};
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
            let level = args.options as u8;
            let shared = warp_shared::<u8>(compress_shared_bytes_per_warp(level));
            let scratch = scratch(args, chunk, compress_scratch_bytes_per_warp(level));
            let (input, n, out, capacity) = (chunk.input, chunk.input_len, chunk.output, chunk.capacity);
            unsafe { encode::compress_chunk(warp, input, n, out, capacity, level, shared, scratch) }
        }

        unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            let shared = warp_shared::<u8>(DECODE_SHARED_BYTES_PER_WARP);
            let (input, n, out, capacity) = (chunk.input, chunk.input_len, chunk.output, chunk.capacity);
            unsafe { decode::decompress_chunk(warp, input, n, out, capacity, shared) }
        }

        unsafe fn decompressed_size(warp: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            let shared = warp_shared::<u8>(SIZES_SHARED_BYTES_PER_WARP);
            unsafe { decode::decompressed_size(warp, chunk.input, chunk.input_len, shared) }
        }
    }

    crate::batch_kernels!(Zstd: zstd_compress, zstd_decompress, zstd_decompressed_sizes);

    /// Decompresses each chunk of the batch with a team: a warp a chunk but for the block's last,
    /// which reads the sequences of all (see `decode::read_for_team`), handing them over as
    /// walked states where the options have [`WALKED_STATES`], else in full; a status per chunk.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn zstd_decompress_blocks(args: BatchArgs) {
        match args.options & WALKED_STATES {
            0 => unsafe { decompress_in_teams::<decode::FullSequences>(&args) },
            _ => unsafe { decompress_in_teams::<decode::WalkedStates>(&args) },
        }
    }

    #[inline(always)]
    unsafe fn decompress_in_teams<F: decode::SequenceForm>(args: &BatchArgs) {
        let (block, warp, shared) = (HardwareBlock, HardwareWarp, dynamic_shared_memory::<u8>());
        if HardwareWarp::index_in_block() == decode::team_writers(&block) {
            return unsafe { decode::read_for_team::<_, _, F>(&block, &warp, shared) };
        }
        let mut writer = unsafe { decode::TeamWriter::<_, F>::new(&block, &warp, shared) };
        unsafe {
            for_each_chunk(Lanes::TeamWriter, args, |warp, chunk| {
                writer.decompress(warp, chunk.input, chunk.input_len, chunk.output, chunk.capacity)
            });
            writer.finish(&warp);
        }
    }
}

//! Zstandard on the GPU: a warp per chunk, its lanes sharing the work of each phase
//! ([`decode`], [`encode`]). Each warp keeps its tables in shared memory and owns a slot of the
//! batch's device scratch for its literals and sequences.
//!
//! Decompression takes two kernels. FSE decoding is serial, so the first (the prologue) decodes
//! each chunk's sequences in a lane of its own, [`PROLOGUE_LANES`] chunks to a warp (each lane's FSE tables in
//! shared memory), into the chunk's slot of the scratch (`ferrocomp_format::zstd::ahead`); the
//! second writes each chunk with a warp.
//! The decompress scratch: a slot of [`DECODE_SCRATCH_BYTES_PER_WARP`] for each warp (at most
//! [`DECODE_SLOTS`]), then the rest shared evenly by the chunks, 8-byte words each.

pub mod decode;
pub mod encode;

use crate::{SHARED_BYTES_PER_BLOCK, blocks_per_sm};
use decode::{DECODE_SCRATCH_BYTES_PER_WARP, DECODE_SHARED_BYTES_PER_WARP, SIZES_SHARED_BYTES_PER_WARP};
use encode::COMPRESS_SHARED_BYTES_PER_WARP;

/// Shared memory of each thread of the decompress prologue: the FSE tables it builds.
pub const PROLOGUE_SHARED_BYTES_PER_THREAD: usize = size_of::<ferrocomp_format::zstd::SequenceTables>();

/// Most warps the decompress kernel runs, each owning a slot of the scratch (the rest of the
/// chunks are taken in turns): more than an H100 holds at once.
pub const DECODE_SLOTS: usize = 4096;

/// Bytes of the decompress scratch for `count` chunks decoding to at most `max_chunk_bytes`.
pub const fn decompress_scratch_bytes(count: usize, max_chunk_bytes: usize) -> usize {
    let warps = if count < DECODE_SLOTS { count } else { DECODE_SLOTS };
    warps * DECODE_SCRATCH_BYTES_PER_WARP + count * 8 * ferrocomp_format::zstd::ahead::slot_words(max_chunk_bytes)
}

/// Warps per block of the decompress kernel, and its blocks per SM: 32 warps to an SM (64
/// registers each), so that an H100 holds 4224 chunks at once, as many as a batch of 256 MiB in
/// 64 KiB chunks has.
pub const DECOMPRESS_WARPS: u32 = 8;
/// Blocks per SM of the decompress kernel (see [`DECOMPRESS_WARPS`]).
pub const DECOMPRESS_BLOCKS_PER_SM: u32 = 4;
const _: () = assert!(
    DECOMPRESS_WARPS as usize * DECODE_SHARED_BYTES_PER_WARP <= SHARED_BYTES_PER_BLOCK
        && DECOMPRESS_BLOCKS_PER_SM <= blocks_per_sm(DECOMPRESS_WARPS, DECODE_SHARED_BYTES_PER_WARP)
);
/// Lanes of each warp (and block) of the decompress prologue, a chunk each.
pub const PROLOGUE_LANES: u32 = 8;
const _: () = assert!(PROLOGUE_LANES as usize * PROLOGUE_SHARED_BYTES_PER_THREAD <= SHARED_BYTES_PER_BLOCK);
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
    use super::decode::{
        self, Ahead, DECODE_SCRATCH_BYTES_PER_WARP, DECODE_SHARED_BYTES_PER_WARP, SIZES_SHARED_BYTES_PER_WARP,
    };
    use super::encode::{self, compress_scratch_bytes_per_warp, compress_shared_bytes_per_warp};
    use super::{DECODE_SLOTS, PROLOGUE_SHARED_BYTES_PER_THREAD};
    use crate::batch::{Chunk, ChunkKernels, Lanes, thread_shared, warp_shared};
    use crate::gpu::HardwareWarp;
    use ferrocomp_format::zstd::SequenceTables;
    use ferrocomp_format::zstd::ahead::{Stop, decode_sequences};
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

    /// Chunk `index`'s slot of the first decompression pass: its stop, then its sequences,
    /// `words` in all (the host makes it at least 2).
    fn sequence_slot(args: &BatchArgs, index: usize) -> (*mut u64, usize) {
        let count = args.count as usize;
        let warps_bytes = count.min(DECODE_SLOTS) * DECODE_SCRATCH_BYTES_PER_WARP;
        let words = (args.scratch_len as usize).saturating_sub(warps_bytes) / 8 / count;
        let first = (args.scratch as usize + warps_bytes) as *mut u64;
        (unsafe { first.add(index * words) }, words)
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

        unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let shared = warp_shared::<u8>(DECODE_SHARED_BYTES_PER_WARP);
            let scratch = scratch(args, chunk, DECODE_SCRATCH_BYTES_PER_WARP);
            let (slot, _) = sequence_slot(args, chunk.index);
            let ahead = unsafe { Ahead { sequences: slot.add(1), stop: Stop::from_word(*slot) } };
            let (input, n, out, capacity) = (chunk.input, chunk.input_len, chunk.output, chunk.capacity);
            unsafe { decode::decompress_chunk(warp, input, n, out, capacity, shared, scratch, ahead) }
        }

        unsafe fn decompress_prologue(_: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) {
            let tables =
                unsafe { &mut *(thread_shared::<u8>(PROLOGUE_SHARED_BYTES_PER_THREAD) as *mut SequenceTables) };
            let (slot, words) = sequence_slot(args, chunk.index);
            unsafe {
                let stored = core::slice::from_raw_parts_mut(slot.add(1), words - 1);
                *slot = decode_sequences(chunk.input(), tables, stored).to_word();
            }
        }

        unsafe fn decompressed_size(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let shared = warp_shared::<u8>(SIZES_SHARED_BYTES_PER_WARP);
            let scratch = scratch(args, chunk, DECODE_SCRATCH_BYTES_PER_WARP);
            unsafe { decode::decompressed_size(warp, chunk.input, chunk.input_len, shared, scratch) }
        }
    }

    crate::batch_kernels!(Zstd: zstd_compress, zstd_decompress, zstd_decompressed_sizes, zstd_decompress_prologue);
}

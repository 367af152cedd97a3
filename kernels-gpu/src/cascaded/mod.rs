//! Cascaded on the GPU: the format crate's bytes written and read (`ferrocomp_format::cascaded`), a
//! block of warps a chunk both ways, each warp a sub-block at a time.
//!
//! Compressing, the lanes take 32 entries a step: a run-length layer compares each entry with
//! the one before (a shuffle), ballots the run starts into a bitmap and compacts the runs' values
//! with a population count; a delta layer is a shuffle and a subtraction; frames of reference are
//! warp reductions; packing ORs each entry's bits into the coded sub-block with shared-memory
//! atomics. The run lengths are read back from the bitmap, and run-length layers past the first
//! have a run an entry, so only the first layer's values are ever held. Decoding, a warp stages a
//! coded sub-block in its shared memory 16 bytes a lane, unpacks four entries a lane a step from
//! there, undoes the deltas with the lanes' own sums and a warp scan into a row of elements beside
//! it, and expands each run-length layer in place in the row (32 runs a step, their starts a
//! scan, each entry finding its run by a binary search over the lanes) before copying it out.

mod decode;
mod encode;

pub use decode::{decode_shared_bytes, decompress_chunk};
pub use encode::compress_chunk;

use ferrocomp_format::cascaded::SUB_BLOCK;

/// Bytes of a compressing warp's row: a sub-block's elements, or its coding (at most stored,
/// `1 + SUB_BLOCK` bytes), to 16.
const ROW_BYTES: usize = (1 + SUB_BLOCK).next_multiple_of(16);
/// Bytes of the run-start bitmap (a bit per element).
const STARTS_BYTES: usize = SUB_BLOCK / 8;
/// Shared memory of each compressing warp: the staged sub-block and the first run-length
/// layer's values (a row each, one of them taking the coded sub-block), then the bitmap; a
/// multiple of 16 bytes, so that every warp's rows are aligned to 16.
pub const COMPRESS_SHARED_BYTES_PER_WARP: usize = (2 * ROW_BYTES + STARTS_BYTES).next_multiple_of(16);
/// Fewest warps of a block compressing one chunk, each warp a sub-block at a time in its own
/// shared memory: a batch of many chunks takes these, fewer chunks more, up to [`MAX_WARPS`].
pub const COMPRESS_WARPS: u32 = 4;
/// Fewest warps of a block decoding one chunk, as [`COMPRESS_WARPS`] (on an H200, many chunks
/// decoded faster in blocks of three than of four).
pub const DECODE_WARPS: u32 = 3;
/// Warps an SM holds coding either way, whatever the blocks: as many as its registers hold at
/// the kernels' 80 a thread (the shared memory of as many holds too).
pub const WARPS_PER_SM: u32 = 24;
/// Most warps of a block: an SM's worth.
pub const MAX_WARPS: u32 = WARPS_PER_SM;
/// Shared memory of a compressing block of `warps` warps: each warp's, then a word a warp for
/// its sub-block's size.
pub const fn compress_shared_bytes(warps: u32) -> usize {
    warps as usize * (COMPRESS_SHARED_BYTES_PER_WARP + 4)
}
/// Warps an SM holds of blocks of `warps` warps taking `shared` bytes of shared memory.
const fn warps_per_sm(warps: u32, shared: usize) -> u32 {
    crate::blocks_per_sm(warps, shared / warps as usize) * warps
}
const _: () = assert!(
    WARPS_PER_SM <= warps_per_sm(COMPRESS_WARPS, compress_shared_bytes(COMPRESS_WARPS))
        && WARPS_PER_SM <= warps_per_sm(DECODE_WARPS, decode_shared_bytes(DECODE_WARPS))
        && compress_shared_bytes(MAX_WARPS) <= crate::MAX_SHARED_BYTES_PER_BLOCK
        && decode_shared_bytes(MAX_WARPS) <= crate::MAX_SHARED_BYTES_PER_BLOCK
);

/// Entry `i` of the `width`-byte entries at `at` (aligned to `width`).
#[inline(always)]
unsafe fn get(at: *const u8, i: usize, width: usize) -> u64 {
    unsafe {
        match width {
            1 => *at.add(i) as u64,
            2 => *(at as *const u16).add(i) as u64,
            4 => *(at as *const u32).add(i) as u64,
            _ => *(at as *const u64).add(i),
        }
    }
}

/// Sets entry `i` of the `width`-byte entries at `at` (aligned to `width`) to `value`.
#[inline(always)]
unsafe fn set(at: *mut u8, i: usize, width: usize, value: u64) {
    unsafe {
        match width {
            1 => *at.add(i) = value as u8,
            2 => *(at as *mut u16).add(i) = value as u16,
            4 => *(at as *mut u32).add(i) = value as u32,
            _ => *(at as *mut u64).add(i) = value,
        }
    }
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{compress_chunk, decompress_chunk};
    use crate::batch::{Chunk, ChunkKernels, Lanes};
    use crate::gpu::{HardwareBlock, HardwareWarp, dynamic_shared_memory};
    use ferrocomp_format::cascaded::{self, Options};
    use ferrocomp_format::{BatchArgs, Status};

    /// Cascaded's kernels: a block per chunk both ways, a thread per chunk for the sizes.
    pub struct Cascaded;

    impl ChunkKernels for Cascaded {
        const COMPRESS: Lanes = Lanes::Block;
        const DECOMPRESS: Lanes = Lanes::Block;
        const SIZES: Lanes = Lanes::Thread;

        unsafe fn compress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let options = Options::from_word(args.options as u32).ok_or(Status::Unsupported)?;
            let (input, shared) = (unsafe { chunk.input() }, dynamic_shared_memory::<u8>());
            unsafe { compress_chunk(&HardwareBlock, warp, input, &options, shared, chunk.output, chunk.capacity) }
        }

        unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            let (input, len, shared) = (chunk.input, chunk.input_len, dynamic_shared_memory::<u8>());
            unsafe { decompress_chunk(&HardwareBlock, warp, input, len, chunk.output, chunk.capacity, shared) }
        }

        unsafe fn decompressed_size(_: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            cascaded::decompressed_size(unsafe { chunk.input() })
        }
    }

    crate::batch_kernels!(Cascaded: cascaded_compress, cascaded_decompress, cascaded_decompressed_sizes);
}

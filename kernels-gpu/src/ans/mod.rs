//! ANS on the GPU: the format crate's bytes written and read (`ferrocomp_format::ans`), a
//! sub-block's 32 interleaved rANS states a warp's lanes.
//!
//! Decoding, a block of warps takes each chunk: it writes the chunk's table once, a 32-bit entry
//! a slot (symbol, frequency and the slot's offset in the symbol's range), then each warp decodes
//! its sub-blocks, 32 symbols a step: one table lookup a symbol, and the lanes whose state falls
//! low take the next words in lane order, a ballot's prefix giving each the index of the word it
//! loads. From version 2 on a lane's four symbols of a round are one word stored; of floats, its
//! four values whole, their low bytes beside them.
//!
//! Compressing, a block of warps takes each chunk too: its threads count the symbols
//! (shared-memory atomics), a warp scales the counts to the table with warp reductions, then each
//! warp codes a sub-block at a time once, last symbol first, into its stage in shared memory, each
//! word where decoding reads it (the ballot of the lanes that emit, counted from the stage's end);
//! a block scan of the round's sizes places the sub-blocks, copied out 16 bytes a lane (the chunk
//! is stored if the coding would not be smaller). Dividing by a frequency is a multiply by its
//! reciprocal.

mod decode;
mod encode;

pub use decode::{HEAD_BYTES, decode_shared_bytes, decompress_chunk};
pub use encode::compress_chunk;

use crate::warp::Warp;
use ferrocomp_format::ans::{MAX_CHUNK_SIZE, SUB_BLOCK, Symbol};

/// Warps of a block coding one chunk either way where the batch leaves no better shape: a 64 KiB
/// chunk's eight sub-blocks at once. The host fits the warps to the batch's chunks (fewer for
/// smaller chunks, more for larger ones in a batch short of the GPU); the kernels take any.
pub const BLOCK_WARPS: u32 = 8;
/// Most warps of compressing blocks an SM holds at once: 16 at 128 registers, which their stages
/// also fill the shared memory with (three blocks of eight, at 80 registers with stages a word for
/// two symbols, compressed 12-27% slower on an H200 than two).
pub const COMPRESS_WARPS_PER_SM: u32 = 16;
/// Most warps of decoding blocks an SM holds at once: 32 at 64 registers, which hold a step's
/// values where 40 spilled the table's address (on an H200 with 64 KiB chunks, 4-10% faster at
/// 256 MiB than 48 warps at 40 registers, 15-45% at 16 and 64 MiB).
pub const DECODE_WARPS_PER_SM: u32 = 32;
/// Most warps of the block decoder's blocks (`ans_decompress_blocks`, the same code) an SM holds
/// at once: 16 at 128 registers, for batches an SM holds no more of (16 MiB of 64 KiB chunks).
/// Its chunk code keeps in registers what 64 spilled: 68 bytes of spills where 1,232 were
/// reloaded, a reload waited on for 14% of the samples decoding bytes at 16 MiB on an H100 and
/// 25% decoding float32; with it, 16 MiB decodes 1.20-1.29x faster (bytes), 1.51-1.67x (float32).
pub const BLOCK_DECODER_WARPS_PER_SM: u32 = 16;
/// Shared memory of a compressing block of `warps` warps: each symbol's count, then frequency and
/// cumulative frequency (u32), each symbol's coding entry (two u32), each sub-block's word count
/// (u16), a flag (a stage overflowed), then each warp's stage.
pub const fn compress_shared_bytes(warps: u32) -> usize {
    STAGES_AT as usize + warps as usize * STAGE_BYTES
}
const _: () = assert!(compress_shared_bytes(COMPRESS_WARPS_PER_SM) <= crate::MAX_SHARED_BYTES_PER_BLOCK);
/// Most words a sub-block's coding emits: a symbol adds at most log2(TOTAL / freq) + log2(1 +
/// 2^-5) bits to its lane's state (under 11.05) and a word takes 16 out, so a lane's words are
/// under 0.6903 of its symbols, and a sub-block's under 5,655 of its 8,192 (for bytes).
const STAGE_WORDS: usize = SUB_BLOCK * 45 / 64;
/// A warp's stage: a sub-block coded, its 32 states and its words.
const STAGE_BYTES: usize = 4 * ferrocomp_format::ans::LANES + 2 * STAGE_WORDS;
/// Bytes of the symbol bitmap.
const BITMAP_LEN: usize = 32;

/// The compressing block's tables in shared memory.
struct Tables {
    /// Each sub-block's word count.
    word_counts: *mut u16,
    /// The tables, to read and count in: from 0, symbol `s`'s word, its count, then its frequency
    /// (low 16 bits) and cumulative frequency (high 16); from [`ENTRIES_AT`], its coding entry,
    /// that word and its frequency's [`reciprocal`](ferrocomp_format::ans::reciprocal), looked up
    /// in one load.
    shared: crate::raw::SharedBytes,
}

/// Where [`Tables`]' parts start, in bytes.
const ENTRIES_AT: u32 = 4 * 256;
const WORD_COUNTS_AT: u32 = ENTRIES_AT + 8 * 256;
const OVERFLOWED_AT: u32 = WORD_COUNTS_AT + 2 * (MAX_CHUNK_SIZE / SUB_BLOCK) as u32;
const STAGES_AT: u32 = OVERFLOWED_AT + 16;

impl Tables {
    fn new(shared: *mut u32) -> Self {
        Self {
            word_counts: shared.wrapping_byte_add(WORD_COUNTS_AT as usize) as *mut u16,
            shared: unsafe { crate::raw::SharedBytes::new(shared as *const u8) },
        }
    }

    /// Compressing, before the table is written: symbol `s`'s count.
    #[inline(always)]
    unsafe fn count(&self, s: u32) -> u32 {
        unsafe { self.shared.u32(4 * s) }
    }

    /// Counts one more of symbol `s`, atomically among the block's threads.
    #[inline(always)]
    unsafe fn add(&self, s: u32) {
        unsafe { self.shared.add_u32(4 * s, 1) }
    }

    /// Writes symbol `s`'s coding entry from its word (which this thread wrote).
    #[inline(always)]
    unsafe fn set_entry(&self, s: u32) {
        let word = unsafe { self.shared.u32(4 * s) };
        let freq = word & 0xFFFF;
        let reciprocal = if freq > 0 { ferrocomp_format::ans::reciprocal(freq) } else { 0 };
        unsafe { self.shared.set_u32(ENTRIES_AT + 8 * s, word) };
        unsafe { self.shared.set_u32(ENTRIES_AT + 8 * s + 4, reciprocal) };
    }

    /// Warp `w`'s stage.
    #[inline(always)]
    fn stage(&self, w: usize) -> crate::raw::SharedBytes {
        self.shared.at(STAGES_AT + (w * STAGE_BYTES) as u32)
    }

    /// Whether a sub-block's words overflowed its stage (the chunk is then stored).
    #[inline(always)]
    unsafe fn overflowed(&self) -> bool {
        unsafe { self.shared.u32(OVERFLOWED_AT) != 0 }
    }

    /// Says a sub-block's words overflowed its stage.
    #[inline(always)]
    unsafe fn set_overflowed(&self) {
        unsafe { self.shared.set_u32(OVERFLOWED_AT, 1) }
    }

    /// Clears the flag, for the block's next chunk.
    #[inline(always)]
    unsafe fn clear_overflowed(&self) {
        unsafe { self.shared.set_u32(OVERFLOWED_AT, 0) }
    }

    /// Symbol `s`'s frequencies and reciprocal.
    #[inline(always)]
    unsafe fn entry(&self, s: u32) -> (Symbol, u32) {
        let [word, reciprocal] = unsafe { self.shared.at(ENTRIES_AT).pair(s) };
        (Symbol { freq: word & 0xFFFF, cum: word >> 16 }, reciprocal)
    }
}

/// Writes lane `l`'s symbols' frequencies (low 16 bits) and cumulative frequencies (high 16) of
/// symbols `8l .. 8l + 8` into `symbols` (256 words of shared memory); returns how many symbols
/// have a frequency before and in this lane.
#[inline(always)]
unsafe fn set_symbols<W: Warp>(warp: &W, symbols: crate::raw::SharedBytes, freqs: [u32; 8]) -> (u32, u32) {
    let lane = warp.lane();
    let own: u32 = freqs.iter().sum();
    let mut cum = crate::lz77::scan_add(warp, own) - own;
    for (j, &freq) in freqs.iter().enumerate() {
        unsafe { symbols.set_u32(4 * (8 * lane + j as u32), freq | cum << 16) };
        cum += freq;
    }
    let present = freqs.iter().filter(|&&f| f > 0).count() as u32;
    (crate::lz77::scan_add(warp, present) - present, present)
}

/// The bytes of `low` (0-3) and `high` (4-7) that `selector`'s nibbles pick, from the low byte
/// up (as CUDA's `__byte_perm`).
#[inline(always)]
fn byte_perm(low: u32, high: u32, selector: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let out: u32;
        unsafe {
            core::arch::asm!("prmt.b32 {out}, {low}, {high}, {selector};", out = out(reg32) out, low = in(reg32) low,
                high = in(reg32) high, selector = in(reg32) selector, options(pure, nomem, nostack))
        };
        out
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let bytes = ((high as u64) << 32 | low as u64).to_le_bytes();
        (0..4).fold(0, |out, k| out | (bytes[(selector >> (4 * k) & 7) as usize] as u32) << (8 * k))
    }
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{compress_chunk, decompress_chunk};
    use crate::batch::{BlockDecompress, Chunk, ChunkKernels, Lanes};
    use crate::gpu::{HardwareBlock, HardwareWarp, dynamic_shared_memory};
    use ferrocomp_format::ans::{self, Options};
    use ferrocomp_format::{BatchArgs, Status};

    /// ANS's kernels: a block per chunk both ways, a thread per chunk for the sizes.
    pub struct Ans;

    impl ChunkKernels for Ans {
        const COMPRESS: Lanes = Lanes::Block;
        const DECOMPRESS: Lanes = Lanes::Block;
        const SIZES: Lanes = Lanes::Thread;

        unsafe fn compress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let data_type = ans::DataType::from_id(args.options as u8).ok_or(Status::Unsupported)?;
            let (options, shared) = (Options { data_type }, dynamic_shared_memory::<u32>());
            let (input, out, capacity) = (unsafe { chunk.input() }, chunk.output, chunk.capacity);
            unsafe { compress_chunk(&HardwareBlock, warp, input, &options, shared, out, capacity) }
        }

        unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            let (input, len, shared) = (chunk.input, chunk.input_len, dynamic_shared_memory::<u8>());
            unsafe { decompress_chunk(&HardwareBlock, warp, input, len, chunk.output, chunk.capacity, shared) }
        }

        unsafe fn decompressed_size(_: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            ans::decompressed_size(unsafe { chunk.input() })
        }
    }

    impl BlockDecompress for Ans {
        unsafe fn decompress(
            _: &HardwareBlock,
            warp: &HardwareWarp,
            chunk: &Chunk,
            args: &BatchArgs,
        ) -> Result<usize, Status> {
            unsafe { <Self as ChunkKernels>::decompress(warp, chunk, args) }
        }
    }

    crate::batch_kernels!(Ans: ans_compress, ans_decompress, ans_decompressed_sizes);
    crate::block_decompress_kernel!(Ans: ans_decompress_blocks);
}

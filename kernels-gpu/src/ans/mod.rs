//! ANS on the GPU: a warp per chunk, its 32 lanes the format's 32 interleaved rANS states; the
//! format crate's bytes written and read (`ferrocomp_format::ans`).
//!
//! Decoding, each step decodes 32 symbols at once: every lane finds its symbol in the table (in the
//! warp's shared memory) and the lanes whose state falls low take the next words in lane order, a
//! ballot's prefix giving each its word. Compressing, the lanes count the symbols (shared-memory
//! atomics), scale the counts to the table with warp reductions, then code each sub-block twice,
//! last symbol first: once to count its words (the chunk is stored if the coding would not be
//! smaller), once to write them where decoding reads them (the ballot of the lanes that emit,
//! counted from the end); dividing by a frequency is a multiply by its reciprocal.
//!
//! Both ways a warp works on four sub-blocks at once, each step stage by stage across the four, so
//! that one's table lookups and shuffles are in flight while the others' issue: a warp's step is a
//! chain of dependent latencies, and one chain a warp left the SM waiting (measured on an H200,
//! text: decoding at 270 GB/s a sub-block at a time, 262 four a step each in turn with branches
//! between them, 324 stage by stage).

mod decode;
mod encode;

pub use decode::decompress_chunk;
pub use encode::compress_chunk;

use crate::warp::Warp;
use ferrocomp_format::ans::{MAX_CHUNK_SIZE, SUB_BLOCK, Symbol, TOTAL};

/// Warps per block of both kernels.
pub const WARPS: u32 = 4;
/// Shared memory of each warp: each symbol's frequency and cumulative frequency (u32) and its
/// frequency's reciprocal (u32), then, to decode, each slot's symbol (u8), or, to compress, each
/// sub-block's word count (u16).
pub const SHARED_BYTES_PER_WARP: usize = 2 * 4 * 256 + 2 * (MAX_CHUNK_SIZE / SUB_BLOCK);
const _: () = assert!(SHARED_BYTES_PER_WARP >= 2 * 4 * 256 + TOTAL as usize && SHARED_BYTES_PER_WARP.is_multiple_of(8));
/// Blocks of either kernel an SM holds at once: 32 warps (128 KiB of shared memory). Fewer, with
/// the registers to hold the four sub-blocks unspilled, decoded no faster (measured on an H200).
pub const BLOCKS_PER_SM: u32 = 32 / WARPS;
/// Bytes of the symbol bitmap.
const BITMAP_LEN: usize = 32;

/// The warp's tables in shared memory.
struct Tables {
    /// Symbol `s`'s frequency (low 16 bits) and cumulative frequency (high 16).
    symbols: *mut u32,
    /// Coding: the [`reciprocal`] of each symbol's frequency.
    reciprocals: *mut u32,
    /// Each slot's symbol (decoding) or each sub-block's word count (coding).
    rest: *mut u8,
    /// The three, to read.
    read: crate::raw::SharedBytes,
}

/// Where [`Tables`]' parts start, in bytes.
const RECIPROCALS_AT: u32 = 4 * 256;
const REST_AT: u32 = 2 * 4 * 256;

impl Tables {
    fn new(shared: *mut u32) -> Self {
        Self {
            symbols: shared,
            reciprocals: shared.wrapping_byte_add(RECIPROCALS_AT as usize),
            rest: shared.wrapping_byte_add(REST_AT as usize) as *mut u8,
            read: unsafe { crate::raw::SharedBytes::new(shared as *const u8) },
        }
    }

    /// Compressing, before the table is written: symbol `s`'s count.
    #[inline(always)]
    unsafe fn count(&self, s: u32) -> u32 {
        unsafe { self.read.u32(4 * s) }
    }

    #[inline(always)]
    unsafe fn symbol(&self, s: u32) -> Symbol {
        let entry = unsafe { self.read.u32(4 * s) };
        Symbol { freq: entry & 0xFFFF, cum: entry >> 16 }
    }

    #[inline(always)]
    unsafe fn reciprocal(&self, s: u32) -> u32 {
        unsafe { self.read.u32(RECIPROCALS_AT + 4 * s) }
    }

    /// Decoding: slot `slot`'s symbol.
    #[inline(always)]
    unsafe fn slot(&self, slot: u32) -> u32 {
        unsafe { self.read.u8(REST_AT + slot) as u32 }
    }
}

/// Copies `len` bytes from `from` to `to`, a byte a lane a step.
#[inline(always)]
fn copy<W: Warp>(warp: &W, from: *const u8, to: *mut u8, len: usize) {
    warp.for_each_strided(len, |i| unsafe { *to.add(i) = *from.add(i) });
}

/// Writes lane `l`'s symbols' frequencies and cumulative frequencies (symbols `8l .. 8l + 8`)
/// into the shared table; returns how many symbols have a frequency before and in this lane.
#[inline(always)]
unsafe fn set_symbols<W: Warp>(warp: &W, tables: &Tables, freqs: [u32; 8]) -> (u32, u32) {
    let lane = warp.lane() as usize;
    let own: u32 = freqs.iter().sum();
    let mut cum = crate::lz77::scan_add(warp, own) - own;
    for (j, &freq) in freqs.iter().enumerate() {
        unsafe { *tables.symbols.add(8 * lane + j) = freq | cum << 16 };
        cum += freq;
    }
    let present = freqs.iter().filter(|&&f| f > 0).count() as u32;
    (crate::lz77::scan_add(warp, present) - present, present)
}

/// `f` of each of the four `values`, called in turn (written out, not looped, so that what it
/// reads and writes stays in registers).
#[inline(always)]
fn each<T, U>(values: [T; INTERLEAVED], mut f: impl FnMut(T) -> U) -> [U; INTERLEAVED] {
    let [a, b, c, d] = values;
    [f(a), f(b), f(c), f(d)]
}

/// A group of sub-blocks' coders, `make(k)` the `k`-th: built member by member (an array
/// literal, not a loop), so that they stay in registers.
#[inline(always)]
fn group_of<T>(mut make: impl FnMut(usize) -> T) -> [T; INTERLEAVED] {
    [make(0), make(1), make(2), make(3)]
}

/// Sub-blocks a warp codes at once, a step of each in turn: while one's lookups and shuffles
/// wait, the others' run.
const INTERLEAVED: usize = 4;

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{SHARED_BYTES_PER_WARP, compress_chunk, decompress_chunk};
    use crate::batch::{Chunk, ChunkKernels, Lanes, warp_shared};
    use crate::gpu::HardwareWarp;
    use ferrocomp_format::ans::{self, Options};
    use ferrocomp_format::{BatchArgs, Status};

    /// ANS's kernels: a warp per chunk both ways, a thread per chunk for the sizes.
    pub struct Ans;

    impl ChunkKernels for Ans {
        const COMPRESS: Lanes = Lanes::Warp;
        const DECOMPRESS: Lanes = Lanes::Warp;
        const SIZES: Lanes = Lanes::Thread;

        unsafe fn compress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let data_type = ans::DataType::from_id(args.options as u8).ok_or(Status::Unsupported)?;
            let shared = warp_shared::<u32>(SHARED_BYTES_PER_WARP / 4);
            let options = Options { data_type };
            unsafe {
                compress_chunk(warp, chunk.input, chunk.input_len, &options, shared, chunk.output, chunk.capacity)
            }
        }

        unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            let shared = warp_shared::<u32>(SHARED_BYTES_PER_WARP / 4);
            unsafe { decompress_chunk(warp, chunk.input, chunk.input_len, chunk.output, chunk.capacity, shared) }
        }

        unsafe fn decompressed_size(_: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            ans::decompressed_size(unsafe { chunk.input() })
        }
    }

    crate::batch_kernels!(Ans: ans_compress, ans_decompress, ans_decompressed_sizes);
}

//! Zstandard (RFC 8878): one frame per chunk written, any frames (back to back, skippable ones
//! included) read, as libzstd writes them. On the GPU a warp codes each chunk, its lanes sharing
//! every phase; each warp keeps its tables in shared memory. Batches of up to 15 chunks an SM
//! decode in teams: a warp a chunk, and one more whose lanes read the sequences ahead for them.
//! Decoding needs no device memory but the output; encoding, a scratch slot per warp.

use crate::alloc::zeroed;
use crate::batch::{BatchCodec, Launch, Shape, is_small_batch};
use ::zstd::zstd_safe::DCtx;
use ferrocomp_format::zstd::check::check_blocks;
use ferrocomp_format::zstd::encode::{self, CompressScratch, DEFAULT_LEVEL};
use ferrocomp_format::zstd::frame;
use ferrocomp_format::zstd::{self as format, DecodeTables, MAX_DECOMPRESSED_CHUNK_SIZE};
use ferrocomp_format::{Algorithm, Status};
use ferrocomp_kernels_gpu::zstd::decode::{DECODE_SHARED_BYTES_PER_WARP, SIZES_SHARED_BYTES_PER_WARP};
use ferrocomp_kernels_gpu::zstd::encode::{compress_scratch_bytes_per_warp, compress_shared_bytes_per_warp};
use ferrocomp_kernels_gpu::zstd::{COMPRESS_WARPS, DECOMPRESS_WARPS, SIZES_WARPS, TEAM_WARPS_PER_SM, WALKED_STATES};
use std::cell::RefCell;
use std::ops::RangeInclusive;
use std::sync::OnceLock;

/// Most warps the compress kernel runs (each owns a slot: 192 KiB at level 1, 328 KiB at levels
/// 2 and 3); more chunks are taken in turns. Each warp's work is mostly serial (each parse step's
/// chain walk), so throughput comes from chunks in flight: 4096 is more than an H100 holds at once.
const SLOTS: usize = 4096;

/// Batches of at most this many chunks per SM decode in teams of two warps, a writer and its
/// reader (as many pairs as an SM holds at once), larger ones in teams of [`team_writers`]. On an
/// H200 with 64 KiB chunks, pairs handing batches over through flags in shared memory decode 16
/// and 64 MiB 10-27% faster than pairs meeting at block barriers did, which beat one warp a chunk
/// at 16 MiB and on six of ten sets and levels at 64 (bench/RESULTS.md, issue 48, steps 6, 9).
const PAIR_DECODE_WAVES: usize = 8;

/// Pairs deeper than this many chunks an SM hand their batches over as walked states, shallower
/// ones as full sequences (`ferrocomp_kernels_gpu::zstd::decode::SequenceForm`). On an H200 with 64
/// KiB chunks, the walk decodes 48 and 64 MiB 5-17% faster on text, binary, float32 and the
/// Linux sources (1-3% slower on int32), 32 MiB mixed (text and the Linux sources 8-9% faster,
/// binary and float32 at level 1 4-5% slower), 16 MiB 4-10% slower; teams (96 MiB) mixed, -7% to
/// +6% (bench/RESULTS.md, issue 48, step 16). `FERROCOMP_ZSTD_WALK_WAVES=N` makes it N, for teams
/// of any size (to measure them).
const WALK_DECODE_WAVES: usize = 4;

/// Writers a team has for a batch of `count` chunks deeper than `PAIR_DECODE_WAVES` an SM: a
/// team an SM holding them all at once, if one can (at most 15 an SM), else none (the warp
/// kernel, its first lane reading the sequences). On an H200, 96 MiB of 64 KiB chunks in teams of
/// 12 decode at level 1 / 2 (GB/s; a warp a chunk in brackets): text 25.6 / 23.2 (25.8 / 21.3),
/// binary 26.7 / 24.9 (28.4 / 21.6), float32 33.7 / 29.2 (25.0 / 20.8), int32 34.4 / 39.8 (33.7 /
/// 36.8), Linux sources 26.4 / 24.1 (27.1 / 22.7). At 256 MiB teams of 15 and 16 in two or three
/// rounds lost a third or more, their writers waiting on the reader two thirds of the time
/// (bench/RESULTS.md, issue 48, step 9). `FERROCOMP_ZSTD_TEAM_WRITERS=N` makes it N (1 to 15)
/// for any such batch, or 0: the warp kernel, for measuring one against the other.
fn team_writers(count: usize, multiprocessors: u32) -> Option<u32> {
    static WRITERS: OnceLock<Option<u32>> = OnceLock::new();
    let set = *WRITERS.get_or_init(|| std::env::var("FERROCOMP_ZSTD_TEAM_WRITERS").ok().and_then(|v| v.parse().ok()));
    let most = TEAM_WARPS_PER_SM - 1;
    let per_sm = count.div_ceil(multiprocessors as usize) as u32;
    let writers = set.map_or(per_sm, |writers| writers.min(most));
    (writers > 0 && writers <= most).then_some(writers)
}

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

thread_local! {
    static CPU_DECODE_TABLES: RefCell<Box<DecodeTables>> = RefCell::new(zeroed());
    static CPU_COMPRESS_SCRATCH: RefCell<Box<CompressScratch>> = RefCell::new(zeroed());
    /// libzstd's decompression context, reused for every frame.
    static DCTX: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
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
        format::max_decompressed_size(compressed_bytes)
    }

    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize {
        encode::max_compressed_size(chunk_bytes)
    }

    fn compress_scratch_size(&self, count: usize, _max_chunk_bytes: usize) -> usize {
        count.min(SLOTS) * compress_scratch_bytes_per_warp(self.level)
    }

    /// Teams (`zstd_decompress_blocks`): of a writer and its reader for batches of up to
    /// `PAIR_DECODE_WAVES` chunks an SM, of `team_writers` and a reader for larger ones, as
    /// many as the SMs hold at once.
    fn block_decoder(&self, count: usize, _: Option<usize>, multiprocessors: u32) -> Option<Shape> {
        let writers = match is_small_batch(count, multiprocessors, PAIR_DECODE_WAVES) {
            true => 1,
            false => team_writers(count, multiprocessors)?,
        };
        let blocks_per_sm = TEAM_WARPS_PER_SM / (writers + 1);
        Some(Shape::Teams {
            writers,
            shared_bytes: DECODE_SHARED_BYTES_PER_WARP,
            max_blocks: (blocks_per_sm * multiprocessors) as usize,
        })
    }

    /// Walked states for pairs deeper than `WALK_DECODE_WAVES` chunks an SM (the level is the
    /// compressor's alone).
    fn block_decoder_options(&self, count: usize, multiprocessors: u32) -> u64 {
        static WAVES: OnceLock<Option<usize>> = OnceLock::new();
        let waves = WAVES.get_or_init(|| std::env::var("FERROCOMP_ZSTD_WALK_WAVES").ok().and_then(|v| v.parse().ok()));
        let deeper_than = |waves: usize| count > waves * multiprocessors as usize;
        let walk = match waves {
            Some(waves) => deeper_than(*waves),
            None => {
                let pairs =
                    matches!(self.block_decoder(count, None, multiprocessors), Some(Shape::Teams { writers: 1, .. }));
                pairs && deeper_than(WALK_DECODE_WAVES)
            }
        };
        if walk { WALKED_STATES } else { 0 }
    }

    fn launch(&self) -> Launch {
        Launch {
            algorithm: Algorithm::Zstd,
            options: self.level as u64,
            compress: Shape::Warps {
                per_block: COMPRESS_WARPS,
                shared_bytes: compress_shared_bytes_per_warp(self.level),
                max_warps: SLOTS,
            },
            decompress: Shape::warps(DECOMPRESS_WARPS, DECODE_SHARED_BYTES_PER_WARP),
            sizes: Shape::warps(SIZES_WARPS, SIZES_SHARED_BYTES_PER_WARP),
        }
    }

    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        CPU_COMPRESS_SCRATCH.with(|scratch| encode::compress(input, self.level, &mut scratch.borrow_mut(), out))
    }

    fn decompress_scalar(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        with_decode_tables(|tables| format::decompress(input, out, tables))
    }

    /// libzstd, one frame at a time, with ours walking the frames first. libzstd makes the
    /// scalar decoder's other checks (frame and block headers, a dictionary id refused, block
    /// sizes, the FSE tables, the sequences' bitstream read exactly, offsets within the frame,
    /// the content size, the checksum: found alike by reading both and by the tests' damage
    /// campaigns) and is stricter in places (windows over 128 MiB: ours then decides), but it is
    /// laxer in these, each handled here:
    /// - an empty input decodes to nothing, where ours says `Truncated`: ours walks the frames
    ///   ([`frame::for_each_frame`]), which refuses it, an unknown magic number (libzstd built
    ///   with its legacy formats would decode those) and a skippable frame cut short;
    /// - a match may reach beyond the frame's window if the frame's output holds it: a frame
    ///   that decodes to more than its window is left to ours (one of at most its window cannot
    ///   reach beyond it);
    /// - Huffman codes of 12 bits are read (RFC 8878 and ours stop at 11), and the fast decoder
    ///   of four streams checks that each stream yields its share of the literals, not that its
    ///   bits end there: ours reads every tree, and every Huffman-coded literals section is
    ///   decoded again, its symbols dropped, to check that its streams end with their last
    ///   symbols (`check_blocks`). On text that adds a fifth to libzstd's time; on data of
    ///   mostly literals (int32 offsets) it more than doubles it, still well below the scalar
    ///   decoder's.
    fn decompress_library(&self, input: &[u8], out: &mut [u8]) -> Option<usize> {
        with_decode_tables(|tables| {
            DCTX.with(|dctx| {
                let dctx = &mut *dctx.borrow_mut();
                frame::for_each_frame(input, |ip, op, header| {
                    let end = check_blocks(input, ip, header, tables)?;
                    let frame = input.get(ip - 4 - header.len..end).ok_or(Status::Truncated)?;
                    let size = dctx.decompress(&mut out[op..], frame).map_err(|_| Status::Malformed)?;
                    if size as u64 > header.window {
                        return Err(Status::Malformed);
                    }
                    Ok((end, op + size))
                })
                .ok()
            })
        })
    }

    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status> {
        with_decode_tables(|tables| format::decompressed_size(input, tables))
    }
}

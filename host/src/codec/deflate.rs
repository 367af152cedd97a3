//! Deflate (RFC 1951), raw or wrapped as zlib (RFC 1950) or gzip (RFC 1952) with the trailer
//! checked: one stream per chunk. On the GPU a warp compresses each chunk, all its lanes
//! together, with a scratch slot of device memory per warp; a warp decodes each chunk, its
//! decoding tables in shared memory, and in batches the SMs hold at once a second warp copies the
//! matches it decodes.

use crate::alloc::zeroed;
use crate::batch::{BatchCodec, Launch, Shape, is_small_batch};
use crate::gpu::Kernel;
use ferrocomp_format::deflate::inflate::Decoded;
use ferrocomp_format::deflate::{
    self, CompressScratch, DEFAULT_LEVEL, DecodeTables, MAX_CHUNK_SIZE, MAX_LEVEL, PART_SIZE, Wrapper, wrapper,
};
use ferrocomp_format::{Algorithm, Status};
use ferrocomp_kernels_gpu::deflate::compress::{COMPRESS_SHARED_BYTES_PER_WARP, COMPRESS_WARPS};
use ferrocomp_kernels_gpu::deflate::decode::{
    PAIR_BLOCKS_PER_SM, PAIR_SHARED_BYTES, PAIR_WARPS, STAGED_BLOCKS_PER_SM, STAGED_SHARED_BYTES,
};
use ferrocomp_kernels_gpu::deflate::{DECODE_SHARED_BYTES_PER_WARP, DECODE_WARPS};
use std::cell::RefCell;
use std::ops::RangeInclusive;
use zlib_rs::{Inflate, InflateFlush};

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

/// The paired decoders' shape (Deflate's and GDeflate's `*_decompress_blocks`: a block of two
/// warps a chunk, one decoding, one copying its matches) for batches of up to
/// [`PAIR_BLOCKS_PER_SM`] chunks an SM, which they take at once. Batches of up to
/// [`STAGED_BLOCKS_PER_SM`] an SM get the shared memory to keep each chunk's output there until
/// whole, which GDeflate's kernel does (its pages' matches then read their sources there);
/// Deflate's does not, but decodes 4% faster with its pairs spread as the larger blocks are,
/// three an SM at most (H200, 1 and 16 MiB of 64 KiB chunks: text 0.327 and 3.9 GB/s with
/// [`PAIR_SHARED_BYTES`] a block, 0.340 and 4.1 with [`STAGED_SHARED_BYTES`]).
pub(crate) fn pair_decoder(count: usize, multiprocessors: u32) -> Option<Shape> {
    let staged = count <= STAGED_BLOCKS_PER_SM as usize * multiprocessors as usize;
    let shared_bytes = if staged { STAGED_SHARED_BYTES } else { PAIR_SHARED_BYTES };
    is_small_batch(count, multiprocessors, PAIR_BLOCKS_PER_SM as usize)
        .then_some(Shape::blocks(PAIR_WARPS, shared_bytes))
}

/// The compress kernel of Deflate and GDeflate for chunks of at most `max_chunk_bytes`: the batch
/// kernel for chunks of one part (nvCOMP's 64 KiB and less), else the parts kernel, which
/// compresses any size a part at a time (kept apart: the parts' loop slows the batch kernel).
pub(crate) fn compress_kernel(max_chunk_bytes: usize) -> Kernel {
    if max_chunk_bytes > PART_SIZE { Kernel::CompressParts } else { Kernel::Compress }
}

/// The launch of Deflate's kernels (`deflate`) or GDeflate's, which share its shapes.
pub(crate) fn launch(algorithm: Algorithm, options: u64) -> Launch {
    Launch { algorithm, options, compress: COMPRESS_SHAPE, decompress: DECOMPRESS_SHAPE, sizes: DECOMPRESS_SHAPE }
}

thread_local! {
    static CPU_COMPRESS_SCRATCH: RefCell<Box<CompressScratch>> = RefCell::new(zeroed());
    static CPU_DECODE_TABLES: RefCell<Box<DecodeTables>> = RefCell::new(zeroed());
    /// zlib-rs's inflate state (raw streams, a 32 KiB window), reset for each stream.
    static INFLATE: RefCell<Inflate> = RefCell::new(Inflate::new(false, 15));
}

/// A caller's slice as the wrappers see it while zlib-rs fills it: the bytes written so far and
/// their checksums (zlib-rs's vectorised Adler-32 and CRC-32: the same values as ours).
struct Written<'a> {
    out: &'a mut [u8],
    len: usize,
}

impl Decoded for Written<'_> {
    fn size(&self) -> usize {
        self.len
    }

    fn adler32(&self, from: usize) -> Option<u32> {
        self.out.get(from..self.len).map(|bytes| zlib_rs::adler32::adler32(1, bytes))
    }

    fn crc32(&self, from: usize) -> Option<u32> {
        self.out.get(from..self.len).map(|bytes| zlib_rs::crc32::crc32(0, bytes))
    }
}

/// Inflates the raw deflate stream at the start of `stream` with zlib-rs after `written`'s
/// bytes; returns the input bytes the stream spans. Any failure, the output filling up
/// included, is `Malformed`: the scalar decoder then decodes the chunk and gives the status.
fn inflate_raw(stream: &[u8], written: &mut Written<'_>) -> Result<usize, Status> {
    INFLATE.with(|inflate| {
        let inflate = &mut *inflate.borrow_mut();
        inflate.reset(false);
        match inflate.decompress(stream, &mut written.out[written.len..], InflateFlush::Finish) {
            Ok(zlib_rs::Status::StreamEnd) => {
                written.len += inflate.total_out() as usize;
                Ok(inflate.total_in() as usize)
            }
            _ => Err(Status::Malformed),
        }
    })
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

    fn compress_kernel(&self, max_chunk_bytes: usize) -> Kernel {
        compress_kernel(max_chunk_bytes)
    }

    /// Two warps a chunk (`deflate_decompress_blocks`) for batches the SMs hold at once.
    fn block_decoder(&self, count: usize, _: Option<usize>, multiprocessors: u32) -> Option<Shape> {
        pair_decoder(count, multiprocessors)
    }

    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        with_compress_scratch(|scratch| deflate::compress(input, self.level, self.wrapper, scratch, out))
    }

    fn decompress_scalar(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        with_decode_tables(|tables| deflate::decompress(input, self.wrapper, out, tables))
    }

    /// The raw deflate streams inflated by zlib-rs, inside our own reading of the wrappers
    /// ([`wrapper::decode_with`]: zlib's and gzip's headers, trailers and checksums, gzip's
    /// members one after another, nothing after the stream), so that only the raw inflate is the
    /// library's. zlib's inflate refuses what ours refuses:
    /// - literal/length symbols 286 and 287 and distance symbols 30 and 31 used, over-subscribed
    ///   codes, and incomplete ones but a single one-bit code or no distance codes at all;
    /// - distances beyond the bytes written, bits past the input's end;
    ///
    /// and reports the bytes a stream spans as ours does, through the byte holding its last bit.
    /// It is stricter in two places, where it fails and ours decides: code lengths given for
    /// those four symbols (HLIT above 286, HDIST above 30; ours reads them and refuses only their
    /// use), and a gzip member's match reaching into the member before it (ours allows it).
    ///
    /// libdeflate, faster, is not used: it decodes symbols 286 and 287 as length 258 and 30 and 31
    /// as distances from 24577, where ours refuses the stream, and nothing short of decoding the
    /// stream again tells.
    fn decompress_library(&self, input: &[u8], out: &mut [u8]) -> Option<usize> {
        let mut written = Written { out, len: 0 };
        wrapper::decode_with(input, self.wrapper, &mut written, inflate_raw).ok()?;
        Some(written.len)
    }

    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status> {
        with_decode_tables(|tables| deflate::decompressed_size(input, self.wrapper, tables))
    }
}

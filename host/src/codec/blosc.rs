//! Blosc: one Blosc 1 chunk per chunk, as c-blosc and numcodecs write them (LZ4, LZ4HC, BloscLZ,
//! Snappy, zlib or zstd inside, byte or bit shuffle, any element size). On the GPU a block of
//! threads codes a chunk, its warps taking the chunk's streams in turns, each with its codec's
//! warp decoder; scratch holds each chunk shuffled. Chunks are written with LZ4 inside.

use super::{deflate::Deflate, lz4::Lz4, snappy::Snappy, zstd::Zstd};
use crate::alloc::zeroed;
use crate::batch::{BatchCodec, Launch, Shape};
use crate::error::Result as GpuResult;
use crate::gpu::{Gpu, Stream};
use ferrocomp_format::blosc::{self, Compressor, MAX_BUFFERSIZE, Shuffle};
use ferrocomp_format::deflate::Wrapper;
use ferrocomp_format::lz4::HASH_ENTRIES;
use ferrocomp_format::{Algorithm, BatchArgs, Status};
use ferrocomp_kernels_gpu::blosc::{
    COMPRESS_SHARED_BYTES, COMPRESS_WARPS, DECOMPRESS_SHARED_BYTES, DECOMPRESS_WARPS, UNSHUFFLE_CTAS,
    UNSHUFFLE_SHARED_BYTES, UNSHUFFLE_THREADS, compress_slot_bytes, decompress_scratch_bytes,
};
use std::cell::RefCell;
use std::ffi::c_void;

/// Most blocks of threads a Blosc kernel runs (compressing, each with a scratch slot); more
/// chunks are taken in turns.
const SLOTS: usize = 1024;
/// Warps of the decompress kernel an H100 or H200 holds at once: 132 SMs of 32 (64 registers a
/// thread, the launch bounds' two CTAs of 16 warps).
const RESIDENT_WARPS: usize = 132 * 32;

/// Blosc with the options its compressor takes (its decoder reads them from each chunk).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blosc {
    /// Bytes per element, 1..=255: the unit the shuffles transpose (numcodecs: the array's item size).
    pub typesize: u8,
    /// The filter applied to each block before compression.
    pub shuffle: Shuffle,
}

thread_local! {
    static CPU_STREAM_TABLES: RefCell<Box<blosc::StreamTables>> = RefCell::new(zeroed());
    /// A block before its unshuffle, kept: a fresh one per chunk cost an mmap and munmap, whose
    /// TLB shootdowns stalled every core decoding.
    static CPU_BLOCK: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Decodes the chunk with `header` from `input` into `out` on the CPU with this thread's tables
/// and block scratch, offering each stream to `library_first`.
fn decode_on_cpu(
    input: &[u8],
    header: &blosc::Header,
    out: &mut [u8],
    library_first: blosc::LibraryFirst<'_>,
) -> Result<usize, Status> {
    CPU_BLOCK.with(|block| {
        let mut block = block.borrow_mut();
        // A block longer than `out` belongs to a chunk that does not fit, refused before its use.
        let len = header.scratch_len().min(out.len());
        if block.len() < len {
            block.resize(len, 0);
        }
        CPU_STREAM_TABLES
            .with(|tables| blosc::decompress_with(input, out, &mut block, &mut tables.borrow_mut(), library_first))
    })
}

impl Default for Blosc {
    /// numcodecs' default filter, byte shuffle, over bytes.
    fn default() -> Self {
        Self { typesize: 1, shuffle: Shuffle::Byte }
    }
}

impl BatchCodec for Blosc {
    fn max_chunk_size(&self) -> usize {
        MAX_BUFFERSIZE.min(u32::MAX as usize)
    }

    fn max_decompressed_size(&self, compressed_bytes: usize) -> usize {
        compressed_bytes.saturating_mul(blosc::MAX_EXPANSION).min(MAX_BUFFERSIZE)
    }

    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize {
        blosc::max_compressed_size(chunk_bytes)
    }

    fn compress_scratch_size(&self, count: usize, max_chunk_bytes: usize) -> usize {
        count.min(SLOTS) * compress_slot_bytes(max_chunk_bytes)
    }

    /// The unshuffle's scratch: a chunk's slot for each chunk, up to 16 MiB and one more.
    fn decompress_scratch_size(&self, count: usize, max_chunk_bytes: usize) -> usize {
        decompress_scratch_bytes(count, max_chunk_bytes)
    }

    /// A warp per stream a chunk of `max_chunk_bytes` may hold, about: 64 KiB chunks of 4-byte
    /// elements are one block of 4 streams, 1 MiB ones 8 to 16 (measured on an H100: 4 warps
    /// decode 64 KiB float32 chunks at 68 GB/s, 8 at 46; 1 MiB ones at 21 and 40, 256 to a batch).
    /// But no more than let a batch of `count` chunks decode in one wave of `RESIDENT_WARPS`:
    /// 1024 chunks of 1 MiB in CTAs of 16 warps took four waves, and a chunk of zstd frames (one
    /// per 256 KiB block) keeps four of its warps busy.
    fn decompress_shape(&self, count: usize, max_chunk_bytes: Option<usize>, _multiprocessors: u32) -> Shape {
        let by_size: u32 = match max_chunk_bytes.unwrap_or(MAX_BUFFERSIZE) {
            0..=0x20000 => 4,
            0x20001..=0x80000 => 8,
            _ => DECOMPRESS_WARPS as u32,
        };
        let one_wave = (RESIDENT_WARPS / count.max(1)).clamp(4, DECOMPRESS_WARPS) as u32;
        let warps = by_size.min(1 << one_wave.ilog2());
        Shape::Blocks { warps, shared_bytes: DECOMPRESS_SHARED_BYTES, max_blocks: SLOTS }
    }

    /// Unshuffles the decoded chunks in place.
    unsafe fn finish_decompress(&self, gpu: &Gpu, args: &BatchArgs, stream: &Stream) -> GpuResult<()> {
        let ctas = (args.count as usize).min(UNSHUFFLE_CTAS) as u32;
        let params = [args as *const BatchArgs as *mut c_void];
        let shared = UNSHUFFLE_SHARED_BYTES as u32;
        unsafe { gpu.launch(gpu.kernels().blosc_unshuffle, ctas, UNSHUFFLE_THREADS, shared, stream, &params) }
    }

    fn launch(&self) -> Launch {
        Launch {
            algorithm: Algorithm::Blosc,
            options: self.typesize.max(1) as u64 | (self.shuffle as u64) << 8,
            compress: Shape::Blocks {
                warps: COMPRESS_WARPS as u32,
                shared_bytes: COMPRESS_SHARED_BYTES,
                max_blocks: SLOTS,
            },
            decompress: self.decompress_shape(1, None, 0),
            sizes: Shape::Threads { per_block: 128, shared_bytes: 0 },
        }
    }

    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        let mut table = [0u16; HASH_ENTRIES];
        let mut tmp = vec![0; blosc::compute_blocksize(input.len(), self.typesize as usize)];
        blosc::compress(input, self.typesize as usize, self.shuffle, out, &mut table, &mut tmp)
    }

    fn decompress_scalar(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        decode_on_cpu(input, &blosc::Header::parse(input)?, out, &mut |_, _, _| None)
    }

    /// Each stream through the CPU library of the codec that writes it alone (LZ4, Snappy, zlib,
    /// zstd), as that codec's CPU path takes it; ours where a library declines, and for BloscLZ.
    /// A chunk that fails goes to ours whole, which decides.
    fn decompress_library(&self, input: &[u8], out: &mut [u8]) -> Option<usize> {
        let header = blosc::Header::parse(input).ok()?;
        let zlib = Deflate { wrapper: Wrapper::Zlib, ..Deflate::default() };
        let mut library = |compressor, stream: &[u8], out: &mut [u8]| match compressor {
            Compressor::BloscLz => None,
            Compressor::Lz4 => Lz4::default().decompress_library(stream, out),
            Compressor::Snappy => Snappy::default().decompress_library(stream, out),
            Compressor::Zlib => zlib.decompress_library(stream, out),
            Compressor::Zstd => Zstd::default().decompress_library(stream, out),
        };
        decode_on_cpu(input, &header, out, &mut library).ok()
    }

    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status> {
        blosc::decompressed_size(input)
    }
}

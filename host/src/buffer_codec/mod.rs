//! The one-buffer codec: splits a buffer into chunks, runs the batched codec over them on the
//! GPU (or the CPU when there is none) and frames the result as one of the [`Bitstream`]s.
//! Host data (slices, and streams from a `Read` to a `Write`) moves through the pipeline of
//! [`crate::pipeline`] in segments; its slots and scratch are kept and reused from call to call.
//!
//! Here: the codec, its configuration and the rules both paths share; its calls on host data
//! are in `host`, those on device memory and a segment's work on the GPU in `gpu`, and a
//! segment's work on the CPU in `cpu`.

mod cpu;
mod gpu;
mod host;

use crate::checksum::ChecksumPolicy;
use crate::codec::Options;
use crate::container::{Bitstream, Checksums, Frame, MAX_BLOCK_BYTES, MAX_BLOCK_CHUNKS};
use crate::error::{ChecksumPart, Error, Result};
use crate::file_ranges::RangeReader;
use crate::gpu::Gpu;
use crate::pipeline::{DEFAULT_SEGMENT_SIZE, GPU_WORKERS, SegmentSlot};
use crate::scratch::Scratch;
use std::sync::{Mutex, OnceLock};

/// Default uncompressed chunk size: 64 KiB, as nvCOMP's.
pub const DEFAULT_CHUNK_SIZE: usize = 1 << 16;

/// How a [`BufferCodec`] chunks, frames and checksums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Uncompressed bytes per chunk (native bitstream only; the others hold one chunk).
    pub chunk_size: usize,
    /// The framing of the compressed bytes.
    pub bitstream: Bitstream,
    /// Whether checksums are written and checked.
    pub checksum: ChecksumPolicy,
}

impl Default for Config {
    fn default() -> Self {
        Self { chunk_size: DEFAULT_CHUNK_SIZE, bitstream: Bitstream::Native, checksum: ChecksumPolicy::default() }
    }
}

/// Compresses and decompresses whole buffers and streams, on the GPU when it has one, else on
/// the CPU, writing the same bitstream either way.
///
/// ```
/// use ferrocomp::{BufferCodec, Config, Options};
/// let codec = BufferCodec::new(Options::default(), Config::default(), None)?; // CPU
/// let data = b"to be or not to be, that is the question; to be or not to be".repeat(100);
/// let compressed = codec.compress(&data)?;
/// assert!(compressed.len() < data.len() / 10);
/// assert_eq!(codec.decompress(&compressed)?, data);
///
/// // From any `Read` to any `Write`, in bounded memory (a streamed container):
/// let mut streamed = Vec::new();
/// codec.compress_stream(&data[..], &mut streamed, &mut |_| {})?;
/// let mut restored = Vec::new();
/// codec.decompress_stream(&streamed[..], &mut restored, &mut |_| {})?;
/// assert_eq!(restored, data);
/// # Ok::<(), ferrocomp::Error>(())
/// ```
pub struct BufferCodec {
    options: Options,
    config: Config,
    /// Bytes of host data per pipeline segment.
    segment_size: usize,
    /// Scratch of the device-memory calls.
    scratch: Mutex<Option<Scratch>>,
    /// Pipeline slots kept between host-memory calls.
    slots: Mutex<Vec<SegmentSlot>>,
    /// Reads files' chunks to the device, for [`Self::decompress_file`].
    range_reader: OnceLock<RangeReader>,
    /// Last, so that the memory above is freed while its context lives.
    gpu: Option<Gpu>,
}

/// Per-chunk results of compressing a run of chunks.
struct Compressed {
    sizes: Vec<usize>,
    checksums: Checksums,
}

impl BufferCodec {
    /// A codec for `options` framed by `config`, on `gpu` (or the CPU for `None`).
    pub fn new(options: Options, config: Config, gpu: Option<Gpu>) -> Result<Self> {
        let max = options.codec().max_chunk_size();
        if config.chunk_size == 0 || config.chunk_size > max {
            return Err(Error::InvalidArgument(format!("chunk size {} is outside 1..={max}", config.chunk_size)));
        }
        let width = options.codec().value_width();
        if !config.chunk_size.is_multiple_of(width) {
            return Err(Error::InvalidArgument(format!(
                "chunk size {} is not a multiple of the {width}-byte values",
                config.chunk_size
            )));
        }
        let (scratch, slots) = (Mutex::new(None), Mutex::new(Vec::new()));
        let range_reader = OnceLock::new();
        Ok(Self { options, config, segment_size: DEFAULT_SEGMENT_SIZE, scratch, slots, range_reader, gpu })
    }

    /// The same codec moving host data in segments of `bytes` (rounded down to whole chunks, at
    /// least one; at most [`MAX_BLOCK_BYTES`]), which are also the blocks of a streamed container.
    pub fn with_segment_size(mut self, bytes: usize) -> Result<Self> {
        if bytes == 0 || bytes > MAX_BLOCK_BYTES {
            return Err(Error::InvalidArgument(format!("segment size {bytes} is outside 1..={MAX_BLOCK_BYTES}")));
        }
        self.segment_size = bytes;
        Ok(self)
    }

    /// The GPU it runs on, if any.
    pub fn gpu(&self) -> Option<&Gpu> {
        self.gpu.as_ref()
    }

    /// Chunks of `chunk_size` per segment of host data (and per block of a streamed container).
    fn chunks_per_block(&self, chunk_size: usize) -> usize {
        (self.segment_size / chunk_size).clamp(1, MAX_BLOCK_CHUNKS)
    }

    /// Workers of a pipeline: two on a GPU (a stream each), or one that spreads each segment
    /// over the CPU's cores.
    fn workers(&self) -> usize {
        if self.gpu.is_some() { GPU_WORKERS } else { 1 }
    }

    /// Chunk size and count for `len` input bytes.
    fn chunking(&self, len: usize) -> Result<(usize, usize)> {
        if self.config.bitstream == Bitstream::Native {
            return Ok((self.config.chunk_size, len.div_ceil(self.config.chunk_size)));
        }
        let max = self.options.codec().max_chunk_size();
        if len > max {
            return Err(Error::InvalidArgument(format!(
                "{len} bytes is over the {max}-byte limit of a single-chunk ({:?}) bitstream; use the native one",
                self.config.bitstream
            )));
        }
        Ok((len.max(1), 1))
    }

    fn new_checksums(&self, count: usize) -> Checksums {
        let table = |stores: bool| stores.then(|| Vec::with_capacity(count));
        Checksums {
            uncompressed: table(self.stores_uncompressed_checksums()),
            compressed: table(self.stores_checksums()),
            nvcomp_skews: None,
        }
    }

    fn frame_for(&self, total_size: usize, chunk_size: usize, compressed: &Compressed) -> Frame {
        Frame {
            options: self.options,
            chunk_size,
            total_size,
            compressed_sizes: compressed.sizes.clone(),
            data_offset: 0,
            chunk_offsets: None,
            checksums: compressed.checksums.clone(),
        }
    }

    /// Whether compression stores checksums (only the native bitstream has room for them).
    fn stores_checksums(&self) -> bool {
        self.config.checksum.computes() && self.config.bitstream == Bitstream::Native
    }

    /// Whether compression stores checksums of the uncompressed data: not where it is lossy.
    fn stores_uncompressed_checksums(&self) -> bool {
        self.stores_checksums() && self.options.codec().lossless()
    }

    fn require_gpu(&self) -> Result<&Gpu> {
        self.gpu.as_ref().ok_or(Error::NoDevice)
    }

    fn check_checksum_policy(&self, frame: &Frame) -> Result<()> {
        if self.config.checksum.requires() {
            if frame.checksums.uncompressed.is_none() && frame.options.codec().lossless() {
                return Err(Error::ChecksumMissing(ChecksumPart::Uncompressed));
            }
            if frame.checksums.compressed.is_none() {
                return Err(Error::ChecksumMissing(ChecksumPart::Compressed));
            }
        }
        Ok(())
    }

    /// The checksums a decode must verify.
    fn checksums_to_verify<'f>(&self, frame: &'f Frame) -> (Option<&'f [u32]>, Option<&'f [u32]>) {
        if !self.config.checksum.verifies() {
            return (None, None);
        }
        (frame.checksums.uncompressed.as_deref(), frame.checksums.compressed.as_deref())
    }
}

impl Compressed {
    fn append(&mut self, part: Compressed) {
        self.sizes.extend(part.sizes);
        for (all, part) in [
            (&mut self.checksums.uncompressed, part.checksums.uncompressed),
            (&mut self.checksums.compressed, part.checksums.compressed),
        ] {
            if let (Some(all), Some(part)) = (all, part) {
                all.extend(part);
            }
        }
    }
}

fn check_crc(chunk: usize, part: ChecksumPart, expected: u32, actual: u32) -> Result<()> {
    if expected == actual { Ok(()) } else { Err(Error::ChecksumMismatch { chunk, part, expected, actual }) }
}

//! The one-buffer codec: splits a buffer into chunks, runs the batched codec over them on the
//! GPU (or the CPU when there is none) and frames the result as one of the [`Bitstream`]s.
//! Host data (slices, and streams from a `Read` to a `Write`) moves through the pipeline of
//! [`crate::pipeline`] in segments; its slots and scratch are kept and reused from call to call.

use crate::alloc::{DeviceBuffer, DeviceView, DeviceViewMut, HostBuffer};
use crate::batch::{Chunks, Results};
use crate::checksum::{ChecksumPolicy, crc32_async};
use crate::codec::Options;
use crate::container::{
    Bitstream, Checksums, FIXED_HEADER_LEN, Frame, MAX_BLOCK_BYTES, MAX_BLOCK_CHUNKS, NativeReader, describe,
    is_streamed, native_header_len_from_fixed,
};
use crate::error::{ChecksumPart, Error, Result};
use crate::file_ranges::{FileRange, RangeReader, in_file};
use crate::gpu::{Gpu, Stream};
use crate::parallel::parallel_map;
use crate::pipeline::{self, DEFAULT_SEGMENT_SIZE, GPU_WORKERS, SegmentSlot, Staging, Totals};
use crate::scatter::gather_async;
use crate::scratch::Scratch;
use ferrocomp_format::Status;
use ferrocomp_format::crc32::crc32;
use rayon::prelude::*;
use std::io::{Read, Write};
use std::sync::{Mutex, OnceLock};

/// Default uncompressed chunk size: 64 KiB, as nvCOMP's.
pub const DEFAULT_CHUNK_SIZE: usize = 1 << 16;
/// Workers, each also a writer, decompressing into a file: measured on the H200 machine, one
/// thread writes its page cache at about 2 GB/s and four reach 3.2 GB/s into one file.
const FILE_WORKERS: usize = 4;

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

    /// Compresses host bytes (the native bitstream as a version-1 container, one chunk table).
    pub fn compress(&self, input: &[u8]) -> Result<Vec<u8>> {
        self.compress_with_progress(input, &mut |_| {})
    }

    /// Compresses host bytes, calling `progress` with the input bytes done so far.
    pub fn compress_with_progress(&self, input: &[u8], progress: &mut dyn FnMut(usize)) -> Result<Vec<u8>> {
        let (chunk_size, count) = self.chunking(input.len())?;
        let per_block = self.chunks_per_block(chunk_size);
        let mut blocks = (0..count)
            .step_by(per_block)
            .map(|first| (first, first * chunk_size..((first + per_block) * chunk_size).min(input.len())));
        let mut data = Vec::with_capacity(input.len() / 2);
        let mut compressed = Compressed { sizes: Vec::with_capacity(count), checksums: self.new_checksums(count) };
        match &self.gpu {
            None => {
                for (first, range) in blocks {
                    let part = self.compress_segment_cpu(&input[range.clone()], first, chunk_size, &mut data)?;
                    compressed.append(part);
                    progress(range.end);
                }
            }
            Some(_) => self.pipeline(
                self.workers(),
                count > per_block,
                |slot| {
                    let Some((first, range)) = blocks.next() else { return Ok(None) };
                    slot.input.resize(range.len())?.copy_from_slice(&input[range.clone()]);
                    Ok(Some((first, range)))
                },
                |slot, (first, range)| self.compress_slot(slot, *first, range.len(), chunk_size),
                |slot, (_, range), part| {
                    data.extend_from_slice(slot.output.bytes());
                    compressed.append(part);
                    progress(range.end);
                    Ok(())
                },
            )?,
        }
        let mut out = self.frame_for(input.len(), chunk_size, &compressed).header(self.config.bitstream);
        out.extend_from_slice(&data);
        Ok(out)
    }

    /// Compresses everything `input` yields into `output`: the native bitstream as a streamed
    /// (version 2) container written block by block in bounded memory, the others as one block
    /// (the input at most the codec's largest chunk). Reading, the GPU's copies and kernels (or
    /// the CPU's work) and writing overlap. `progress` gets the input bytes done so far.
    pub fn compress_stream<R: Read + Send, W: Write>(
        &self,
        mut input: R,
        mut output: W,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Totals> {
        if self.config.bitstream != Bitstream::Native {
            let data = read_at_most(&mut input, self.options.codec().max_chunk_size(), "a single-chunk bitstream")?;
            let compressed = self.compress(&data)?;
            output.write_all(&compressed)?;
            output.flush()?;
            progress(data.len() as u64);
            return Ok(Totals { uncompressed: data.len() as u64, compressed: compressed.len() as u64 });
        }
        let chunk_size = self.config.chunk_size;
        let block_bytes = self.chunks_per_block(chunk_size) * chunk_size;
        let empty = Compressed { sizes: Vec::new(), checksums: self.new_checksums(0) };
        let header = self.frame_for(0, chunk_size, &empty).stream_header();
        output.write_all(&header)?;
        let mut totals = Totals { uncompressed: 0, compressed: header.len() as u64 };
        let mut next_chunk = 0;
        self.pipeline(
            self.workers(),
            true,
            |slot| {
                let len = slot.input.read_from(&mut input, block_bytes)?;
                let first = next_chunk;
                next_chunk += len.div_ceil(chunk_size);
                Ok((len > 0).then_some((first, len)))
            },
            |slot, &(first, len)| self.compress_slot(slot, first, len, chunk_size),
            |slot, (_, len), part| {
                let block = self.frame_for(len, chunk_size, &part).block_header();
                output.write_all(&block)?;
                output.write_all(slot.output.bytes())?;
                totals.uncompressed += len as u64;
                totals.compressed += (block.len() + slot.output.bytes().len()) as u64;
                progress(totals.uncompressed);
                Ok(())
            },
        )?;
        let end = Frame::stream_end(totals.uncompressed);
        output.write_all(&end)?;
        output.flush()?;
        totals.compressed += end.len() as u64;
        Ok(totals)
    }

    /// Decompresses what `input` yields into `output`: a native container of either version
    /// (its header names the algorithm), or a raw or size-prefixed block in the codec's options.
    /// A streamed container is read in bounded memory; reading, decoding and writing overlap.
    /// `progress` gets the output bytes done so far. Chunks before a failing one are written.
    pub fn decompress_stream<R: Read + Send, W: Write>(
        &self,
        input: R,
        mut output: W,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Totals> {
        let totals = self.decompress_to(input, Output::Stream(&mut output), progress)?;
        output.flush()?;
        Ok(totals)
    }

    /// As [`Self::decompress_stream`], into a file from its start, with each segment written
    /// where it belongs by the worker that decoded it: writing to the page cache runs at a few
    /// GB/s a thread, so a GPU's output needs several writers.
    #[cfg(unix)]
    pub fn decompress_to_file<R: Read + Send>(
        &self,
        input: R,
        output: &std::fs::File,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Totals> {
        self.decompress_to(input, Output::File(output), progress)
    }

    /// Decompresses the file at `path` into `output` from its start, as [`Self::decompress_to_file`];
    /// `progress` gets the bytes of `path` done so far. On a GPU, a native container's chunks are
    /// read as byte ranges of the file by a [`RangeReader`] (on all cores, straight to the
    /// device through pinned staging) block by block, while other workers decode and write
    /// theirs; only the chunk tables are read in order.
    #[cfg(unix)]
    pub fn decompress_file(
        &self,
        path: &std::path::Path,
        output: &std::fs::File,
        progress: &mut (dyn FnMut(u64) + Send),
    ) -> Result<Totals> {
        let file = std::fs::File::open(path).map_err(|e| in_file(path, e))?;
        let (Some(gpu), Bitstream::Native) = (&self.gpu, self.config.bitstream) else {
            let mut read = 0;
            let counted = ReadProgress { inner: file, read: &mut read, progress };
            return self.decompress_to(counted, Output::File(output), &mut |_| {});
        };
        let file_len = file.metadata().map_err(|e| in_file(path, e))?.len();
        let mut reader = NativeReader::new(std::io::BufReader::new(file), self.segment_size)?;
        let ranges = self.range_reader(gpu)?;
        let mut uncompressed = 0;
        self.pipeline(
            FILE_WORKERS,
            true,
            |_| {
                let Some((first_chunk, block)) = reader.next_block()? else { return Ok(None) };
                let at = reader.skip_data(first_chunk, &block, file_len)?;
                Ok(Some((first_chunk, block, at)))
            },
            |slot, (first_chunk, block, at)| {
                let len = block.compressed_sizes.iter().sum();
                let chunks: Vec<FileRange<'_>> = block
                    .compressed_offsets()
                    .iter()
                    .zip(&block.compressed_sizes)
                    .map(|(&offset, &len)| FileRange { path, offset: at + offset as u64, len })
                    .collect();
                self.decompress_uploaded_gpu(gpu, slot, *first_chunk, block, len, |_, device, stream| {
                    ranges.read_to_device(&chunks, device, stream)
                })?;
                let decoded_at = (first_chunk * block.chunk_size) as u64;
                std::os::unix::fs::FileExt::write_all_at(output, slot.output.bytes(), decoded_at)?;
                Ok(())
            },
            |slot, (_, block, at), ()| {
                uncompressed += slot.output.bytes().len() as u64;
                progress(at + block.compressed_sizes.iter().sum::<usize>() as u64);
                Ok(())
            },
        )?;
        progress(reader.bytes_read());
        Ok(Totals { uncompressed, compressed: reader.bytes_read() })
    }

    /// The reader of file ranges on `gpu`, made at first use.
    fn range_reader(&self, gpu: &Gpu) -> Result<&RangeReader> {
        if let Some(reader) = self.range_reader.get() {
            return Ok(reader);
        }
        let reader = RangeReader::new(gpu)?;
        Ok(self.range_reader.get_or_init(|| reader))
    }

    fn decompress_to<R: Read + Send>(
        &self,
        mut input: R,
        output: Output,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Totals> {
        let (mut stream, file) = match output {
            Output::Stream(stream) => (Some(stream), None),
            #[cfg(unix)]
            Output::File(file) => (None, Some(file)),
        };
        if self.config.bitstream != Bitstream::Native {
            let codec = self.options.codec();
            // Every decoder takes chunks of up to 16 MiB, above what some codecs write.
            let limit = 8 + codec.max_compressed_chunk_size(1 << 24);
            let compressed = read_at_most(&mut input, limit, "a single-chunk bitstream")?;
            let data = self.decompress(&compressed)?;
            match (stream, file) {
                (Some(stream), _) => stream.write_all(&data)?,
                #[cfg(unix)]
                (_, Some(file)) => std::os::unix::fs::FileExt::write_all_at(file, &data, 0)?,
                _ => unreachable!("one output"),
            }
            progress(data.len() as u64);
            return Ok(Totals { uncompressed: data.len() as u64, compressed: compressed.len() as u64 });
        }
        let mut reader = NativeReader::new(input, self.segment_size)?;
        let workers = if file.is_some() { FILE_WORKERS } else { self.workers() };
        let mut uncompressed = 0;
        self.pipeline(
            workers,
            true,
            |slot| {
                let Some((first_chunk, block)) = reader.next_block()? else { return Ok(None) };
                let len = block.compressed_sizes.iter().sum();
                reader.read_data(first_chunk, &block, Some(slot.input.resize(len)?))?;
                Ok(Some((first_chunk, block)))
            },
            |slot, (first_chunk, block)| {
                self.decompress_slot(slot, *first_chunk, block)?;
                #[cfg(unix)]
                if let Some(file) = file {
                    let at = (first_chunk * block.chunk_size) as u64;
                    std::os::unix::fs::FileExt::write_all_at(file, slot.output.bytes(), at)?;
                }
                Ok(())
            },
            |slot, _, ()| {
                if let Some(stream) = stream.as_mut() {
                    stream.write_all(slot.output.bytes())?;
                }
                uncompressed += slot.output.bytes().len() as u64;
                progress(uncompressed);
                Ok(())
            },
        )?;
        Ok(Totals { uncompressed, compressed: reader.bytes_read() })
    }

    /// Decompresses host bytes. `Raw` streams decode to the size their block walks to.
    pub fn decompress(&self, compressed: &[u8]) -> Result<Vec<u8>> {
        self.decompress_with_progress(compressed, &mut |_| {})
    }

    /// Decompresses host bytes, calling `progress` with the output bytes done so far.
    pub fn decompress_with_progress(&self, compressed: &[u8], progress: &mut dyn FnMut(usize)) -> Result<Vec<u8>> {
        if self.streamed(compressed) {
            let mut out = Vec::new();
            self.decompress_stream(compressed, &mut out, &mut |done| progress(done as usize))?;
            return Ok(out);
        }
        let frame = self.read_frame(compressed)?;
        let mut out = vec![0u8; frame.total_size];
        self.decompress_frame(&frame, compressed, &mut out, progress)?;
        Ok(out)
    }

    /// Decompresses host bytes into the start of `out`; returns the bytes written. Fails,
    /// writing nothing, if `out` is smaller than the stream's decompressed size.
    pub fn decompress_into(&self, compressed: &[u8], out: &mut [u8]) -> Result<usize> {
        let total = self.decompressed_size(compressed)?;
        if out.len() < total {
            return Err(Error::InvalidArgument(format!(
                "output holds {} bytes, the stream decodes to {total}",
                out.len()
            )));
        }
        if self.streamed(compressed) {
            self.decompress_stream(compressed, &mut out[..total], &mut |_| {})?;
        } else {
            self.decompress_frame(&self.read_frame(compressed)?, compressed, &mut out[..total], &mut |_| {})?;
        }
        Ok(total)
    }

    /// The size host bytes decompress to, from their headers (a raw block is walked).
    pub fn decompressed_size(&self, compressed: &[u8]) -> Result<usize> {
        if self.streamed(compressed) {
            return Ok(describe(compressed)?.uncompressed as usize);
        }
        Ok(self.read_frame(compressed)?.total_size)
    }

    /// Whether `compressed` is a streamed native container, to be read block by block.
    fn streamed(&self, compressed: &[u8]) -> bool {
        self.config.bitstream == Bitstream::Native && is_streamed(compressed)
    }

    /// Decodes every chunk of `frame` (in `compressed`) into `out`, of its decompressed size.
    fn decompress_frame(
        &self,
        frame: &Frame,
        compressed: &[u8],
        out: &mut [u8],
        progress: &mut dyn FnMut(usize),
    ) -> Result<()> {
        let per_block = self.chunks_per_block(frame.chunk_size);
        let offsets = frame.compressed_offsets();
        let mut blocks = (0..frame.count()).step_by(per_block).map(|first| {
            let end = (first + per_block).min(frame.count());
            let input = offsets[first]..offsets[end - 1] + frame.compressed_sizes[end - 1];
            (first, frame.segment(first..end), input)
        });
        match &self.gpu {
            None => {
                for (first, block, input) in blocks {
                    let start = first * frame.chunk_size;
                    let output = &mut out[start..start + block.total_size];
                    self.decompress_segment_cpu(&block, first, &compressed[input], output)?;
                    progress(start + block.total_size);
                }
            }
            Some(_) => {
                let mut at = 0;
                self.pipeline(
                    self.workers(),
                    frame.count() > per_block,
                    |slot| {
                        let Some((first, block, input)) = blocks.next() else { return Ok(None) };
                        slot.input.resize(input.len())?.copy_from_slice(&compressed[input]);
                        Ok(Some((first, block)))
                    },
                    |slot, (first, block)| self.decompress_slot(slot, *first, block),
                    |slot, _, ()| {
                        let decoded = slot.output.bytes();
                        out[at..at + decoded.len()].copy_from_slice(decoded);
                        at += decoded.len();
                        progress(at);
                        Ok(())
                    },
                )?;
            }
        }
        Ok(())
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

    /// Runs [`pipeline::run`] with `workers` and this codec's slots.
    fn pipeline<T: Send, D: Send>(
        &self,
        workers: usize,
        overlap: bool,
        fill: impl FnMut(&mut SegmentSlot) -> Result<Option<T>> + Send,
        process: impl Fn(&mut SegmentSlot, &T) -> Result<D> + Sync,
        drain: impl FnMut(&SegmentSlot, T, D) -> Result<()>,
    ) -> Result<()> {
        let wanted = if overlap { workers + 2 } else { 1 };
        let mut slots: Vec<SegmentSlot> = {
            let mut kept = self.slots.lock().unwrap();
            let keep = kept.len().saturating_sub(wanted);
            kept.split_off(keep)
        };
        while slots.len() < wanted {
            slots.push(SegmentSlot::new(self.gpu.as_ref())?);
        }
        let (slots, result) = pipeline::run(slots, workers, overlap, fill, process, drain);
        self.slots.lock().unwrap().extend(slots);
        result
    }

    /// Compresses the first `len` bytes of a slot's input (chunks numbered from `first_chunk`)
    /// into its output.
    fn compress_slot(
        &self,
        slot: &mut SegmentSlot,
        first_chunk: usize,
        len: usize,
        chunk_size: usize,
    ) -> Result<Compressed> {
        match &self.gpu {
            Some(gpu) => self.compress_segment_gpu(gpu, slot, len, chunk_size).map_err(|e| e.renumbered(first_chunk)),
            None => {
                let SegmentSlot { input, output: Staging::Heap(data), .. } = slot else {
                    unreachable!("a CPU slot stages on the heap")
                };
                data.clear();
                self.compress_segment_cpu(&input.bytes()[..len], first_chunk, chunk_size, data)
            }
        }
    }

    /// Decodes the chunks of `block` (numbered from `first_chunk`), held in a slot's input, into
    /// its output.
    fn decompress_slot(&self, slot: &mut SegmentSlot, first_chunk: usize, block: &Frame) -> Result<()> {
        match &self.gpu {
            Some(gpu) => self.decompress_segment_gpu(gpu, slot, first_chunk, block),
            None => {
                let SegmentSlot { input, output, .. } = slot;
                let out = output.resize(block.total_size)?;
                self.decompress_segment_cpu(block, first_chunk, input.bytes(), out)
            }
        }
    }

    /// Compresses device bytes into a new device buffer, on the GPU.
    pub fn compress_device(&self, input: DeviceView<'_, u8>, stream: &Stream) -> Result<DeviceBuffer<u8>> {
        let gpu = self.require_gpu()?;
        let (chunk_size, _) = self.chunking(input.len())?;
        let mut guard = self.scratch.lock().unwrap();
        let compressed = self.compress_chunks_gpu(gpu, &mut guard, input, chunk_size, stream)?;
        let header = self.frame_for(input.len(), chunk_size, &compressed).header(self.config.bitstream);
        let total: usize = compressed.sizes.iter().sum();
        let mut out = gpu.alloc::<u8>(header.len() + total)?;
        if !header.is_empty() {
            gpu.copy_to_device_sync(&header, out.view_mut())?;
        }
        if let Some(scratch) = guard.as_mut().filter(|_| !compressed.sizes.is_empty()) {
            self.pack_gpu(gpu, scratch, &compressed.sizes, out.address() + header.len() as u64, stream)?;
            stream.synchronize()?;
        }
        Ok(out)
    }

    /// Decompresses device bytes into a new device buffer, on the GPU.
    pub fn decompress_device(&self, compressed: DeviceView<'_, u8>, stream: &Stream) -> Result<DeviceBuffer<u8>> {
        let gpu = self.require_gpu()?;
        let frame = self.read_frame_device(gpu, compressed, stream)?;
        let mut out = gpu.alloc::<u8>(frame.total_size)?;
        let mut scratch = self.scratch.lock().unwrap();
        self.decompress_frame_gpu(gpu, &mut scratch, &frame, 0, compressed, out.view_mut(), stream)?;
        Ok(out)
    }

    /// Decompresses device bytes into the caller's device memory; returns the bytes written.
    /// Fails, writing nothing, if `output` is smaller than the stream's decompressed size.
    pub fn decompress_device_into(
        &self,
        compressed: DeviceView<'_, u8>,
        output: DeviceViewMut<'_, u8>,
        stream: &Stream,
    ) -> Result<usize> {
        let gpu = self.require_gpu()?;
        let frame = self.read_frame_device(gpu, compressed, stream)?;
        if output.len() < frame.total_size {
            return Err(Error::InvalidArgument(format!(
                "output holds {} bytes, the stream decodes to {}",
                output.len(),
                frame.total_size
            )));
        }
        let mut scratch = self.scratch.lock().unwrap();
        self.decompress_frame_gpu(gpu, &mut scratch, &frame, 0, compressed, output, stream)?;
        Ok(frame.total_size)
    }

    /// Describes a compressed host buffer: its algorithm, sizes and chunks.
    pub fn read_frame(&self, compressed: &[u8]) -> Result<Frame> {
        match self.config.bitstream {
            Bitstream::Native => Frame::parse_native(compressed, compressed.len()),
            Bitstream::WithUncompressedSize => Frame::parse_with_size(self.options, compressed, compressed.len()),
            Bitstream::Raw => {
                let size = self
                    .options
                    .codec()
                    .decompressed_size_cpu(compressed)
                    .map_err(|status| Error::Chunk { chunk: 0, status })?;
                Frame::raw(self.options, size as u64, compressed.len())
            }
        }
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
        }
    }

    fn frame_for(&self, total_size: usize, chunk_size: usize, compressed: &Compressed) -> Frame {
        Frame {
            options: self.options,
            chunk_size,
            total_size,
            compressed_sizes: compressed.sizes.clone(),
            data_offset: 0,
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

    // ---- CPU ----

    /// Compresses `segment`, whose chunks are numbered from `first_chunk`, appending them to `data`.
    fn compress_segment_cpu(
        &self,
        segment: &[u8],
        first_chunk: usize,
        chunk_size: usize,
        data: &mut Vec<u8>,
    ) -> Result<Compressed> {
        let codec = self.options.codec();
        let inputs: Vec<&[u8]> = chunks_of(segment, chunk_size);
        let (uncompressed_crcs, compressed_crcs) = (self.stores_uncompressed_checksums(), self.stores_checksums());
        let outputs = parallel_map(&inputs, |i, input| {
            let mut out = vec![0u8; codec.max_compressed_chunk_size(input.len())];
            let chunk = first_chunk + i;
            let size = codec.compress_cpu(input, &mut out).map_err(|status| Error::Chunk { chunk, status })?;
            out.truncate(size);
            let crcs = (uncompressed_crcs.then(|| crc32(input)), compressed_crcs.then(|| crc32(&out)));
            Ok((out, crcs))
        })?;
        let mut compressed =
            Compressed { sizes: Vec::with_capacity(inputs.len()), checksums: self.new_checksums(inputs.len()) };
        for (output, (uncompressed, stored)) in &outputs {
            compressed.sizes.push(output.len());
            compressed.checksums.uncompressed.iter_mut().zip(uncompressed).for_each(|(crcs, &crc)| crcs.push(crc));
            compressed.checksums.compressed.iter_mut().zip(stored).for_each(|(crcs, &crc)| crcs.push(crc));
            data.extend_from_slice(output);
        }
        Ok(compressed)
    }

    fn decompress_segment_cpu(
        &self,
        segment: &Frame,
        first_chunk: usize,
        compressed: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.check_checksum_policy(segment)?;
        let codec = segment.options.codec();
        let offsets = segment.compressed_offsets();
        let (verify_uncompressed, verify_compressed) = self.checksums_to_verify(segment);
        // One output per chunk, an empty chunk's too: its bytes must still decode to nothing.
        let mut outputs = Vec::with_capacity(segment.count());
        let mut rest = out;
        for i in 0..segment.count() {
            let (output, after) = rest.split_at_mut(segment.uncompressed_size(i));
            outputs.push(output);
            rest = after;
        }
        let results: Vec<Result<()>> = outputs
            .into_par_iter()
            .enumerate()
            .map(|(i, out)| {
                let chunk = first_chunk + i;
                let input = &compressed[offsets[i]..offsets[i] + segment.compressed_sizes[i]];
                if let Some(crcs) = verify_compressed {
                    check_crc(chunk, ChecksumPart::Compressed, crcs[i], crc32(input))?;
                }
                let size = codec.decompress_cpu(input, out).map_err(|status| Error::Chunk { chunk, status })?;
                if size != out.len() {
                    return Err(Error::ChunkSize { chunk, expected: out.len(), actual: size });
                }
                if let Some(crcs) = verify_uncompressed {
                    check_crc(chunk, ChecksumPart::Uncompressed, crcs[i], crc32(out))?;
                }
                Ok(())
            })
            .collect();
        results.into_iter().collect()
    }

    // ---- GPU ----

    /// Compresses the first `len` bytes of a slot's input on its stream: uploaded, compressed,
    /// packed and downloaded into its output.
    fn compress_segment_gpu(
        &self,
        gpu: &Gpu,
        slot: &mut SegmentSlot,
        len: usize,
        chunk_size: usize,
    ) -> Result<Compressed> {
        gpu.make_current()?;
        let SegmentSlot { input, output, device } = slot;
        let device = device.as_mut().expect("a GPU slot has a device side");
        let stream = &device.stream;
        let address = device.input.ensure(gpu, len)?;
        stream.copy_to_device(&input.bytes()[..len], address)?;
        let device_input = unsafe { DeviceView::from_raw(address, len) };
        let compressed = self.compress_chunks_gpu(gpu, &mut device.scratch, device_input, chunk_size, stream)?;
        let scratch = device.scratch.as_mut().expect("scratch was prepared");
        let packed = scratch.packed.address();
        self.pack_gpu(gpu, scratch, &compressed.sizes, packed, stream)?;
        stream.copy_to_host(packed, output.resize(compressed.sizes.iter().sum())?)?;
        stream.synchronize()?;
        Ok(compressed)
    }

    /// Decodes the chunks of `block` in a slot's input on its stream into its output.
    fn decompress_segment_gpu(
        &self,
        gpu: &Gpu,
        slot: &mut SegmentSlot,
        first_chunk: usize,
        block: &Frame,
    ) -> Result<()> {
        let len = slot.input.bytes().len();
        self.decompress_uploaded_gpu(gpu, slot, first_chunk, block, len, |input, device, stream| {
            stream.copy_to_device(input.bytes(), device.address())
        })
    }

    /// Decodes the chunks of `block`, `len` compressed bytes that `upload` enqueues from a
    /// slot's input (or from elsewhere) into device memory, on the slot's stream into its output.
    fn decompress_uploaded_gpu(
        &self,
        gpu: &Gpu,
        slot: &mut SegmentSlot,
        first_chunk: usize,
        block: &Frame,
        len: usize,
        upload: impl FnOnce(&Staging, DeviceViewMut<'_, u8>, &Stream) -> Result<()>,
    ) -> Result<()> {
        gpu.make_current()?;
        let SegmentSlot { input, output, device } = slot;
        let device = device.as_mut().expect("a GPU slot has a device side");
        let (stream, total) = (&device.stream, block.total_size);
        let input_address = device.input.ensure(gpu, len)?;
        let output_address = device.output.ensure(gpu, total)?;
        upload(input, unsafe { DeviceViewMut::from_raw(input_address, len) }, stream)?;
        let (compressed, decoded) =
            unsafe { (DeviceView::from_raw(input_address, len), DeviceViewMut::from_raw(output_address, total)) };
        self.decompress_frame_gpu(gpu, &mut device.scratch, block, first_chunk, compressed, decoded, stream)?;
        stream.copy_to_host(output_address, output.resize(total)?)?;
        stream.synchronize()
    }

    /// Compresses the chunks of `input`; chunk `i` is left at `staging + i * bound`.
    fn compress_chunks_gpu(
        &self,
        gpu: &Gpu,
        guard: &mut Option<Scratch>,
        input: DeviceView<'_, u8>,
        chunk_size: usize,
        stream: &Stream,
    ) -> Result<Compressed> {
        let codec = self.options.codec();
        let count = self.chunking(input.len())?.1;
        if count == 0 {
            return Ok(Compressed { sizes: Vec::new(), checksums: self.new_checksums(0) });
        }
        let chunk_bytes = chunk_size.min(input.len());
        let bound = codec.max_compressed_chunk_size(chunk_bytes);
        let codec_bytes = codec.compress_scratch_size(count, chunk_size);
        let scratch = Scratch::ensure(gpu, guard, count, count * bound, count * bound, codec_bytes)?;
        for i in 0..count {
            scratch.host_addresses[i] = input.address() + (i * chunk_size) as u64;
            scratch.host_sizes[i] = (input.len() - (i * chunk_size).min(input.len())).min(chunk_size);
            scratch.host_addresses[count + i] = scratch.staging.address() + (i * bound) as u64;
        }
        stream.copy_to_device(&scratch.host_addresses[..2 * count], scratch.addresses.address())?;
        stream.copy_to_device(&scratch.host_sizes[..count], scratch.sizes.address())?;
        let (inputs, outputs) = halves(&scratch.addresses, count);
        let inputs = Chunks::new(inputs, scratch.sizes.view().slice(0, count));
        let results = Results { sizes: scratch.result_sizes.view_mut(), statuses: scratch.statuses.view_mut() };
        unsafe { codec.compress_async(gpu, inputs, outputs, bound, scratch.codec.view_mut(), results, stream)? };
        let (computes, lossless) = (self.stores_checksums(), self.stores_uncompressed_checksums());
        if computes {
            let compressed = Chunks::new(outputs, scratch.result_sizes.view().slice(0, count));
            unsafe {
                if lossless {
                    crc32_async(gpu, inputs, scratch.crcs_uncompressed.view_mut(), stream)?;
                }
                crc32_async(gpu, compressed, scratch.crcs_compressed.view_mut(), stream)?;
            }
        }
        stream.copy_to_host(scratch.result_sizes.address(), &mut scratch.host_result_sizes[..count])?;
        stream.copy_to_host(scratch.statuses.address(), &mut scratch.host_statuses[..count])?;
        if computes {
            stream.copy_to_host(scratch.crcs_uncompressed.address(), &mut scratch.host_crcs[..count])?;
            stream.copy_to_host(scratch.crcs_compressed.address(), &mut scratch.host_crcs[count..2 * count])?;
        }
        stream.synchronize()?;
        if let Some(chunk) = scratch.host_statuses[..count].iter().position(|&s| s != Status::Success as u32) {
            return Err(Error::Chunk { chunk, status: Status::from_code(scratch.host_statuses[chunk]) });
        }
        let crcs = |stores: bool, range: std::ops::Range<usize>| stores.then(|| scratch.host_crcs[range].to_vec());
        Ok(Compressed {
            sizes: scratch.host_result_sizes[..count].to_vec(),
            checksums: Checksums {
                uncompressed: crcs(lossless, 0..count),
                compressed: crcs(computes, count..2 * count),
            },
        })
    }

    /// Copies the chunks [`Self::compress_chunks_gpu`] left in staging, back to back, to `dst`.
    fn pack_gpu(&self, gpu: &Gpu, scratch: &mut Scratch, sizes: &[usize], dst: u64, stream: &Stream) -> Result<()> {
        let count = sizes.len();
        let mut at = dst;
        for (i, &size) in sizes.iter().enumerate() {
            scratch.host_addresses[i] = at;
            at += size as u64;
        }
        // Sources (staging) are still in the second half of the address array.
        stream.copy_to_device(&scratch.host_addresses[..count], scratch.addresses.address())?;
        let (dsts, srcs) = halves(&scratch.addresses, count);
        unsafe { gather_async(gpu, srcs, dsts, scratch.result_sizes.view().slice(0, count), stream) }
    }

    /// Reads the frame of a compressed device buffer (copying its header to the host).
    fn read_frame_device(&self, gpu: &Gpu, compressed: DeviceView<'_, u8>, stream: &Stream) -> Result<Frame> {
        // The first `len` bytes (or all there are), in memory from the host allocator.
        let prefix = |len: usize| -> Result<HostBuffer> {
            let mut bytes = HostBuffer::zeroed(&gpu.allocators().host, len.min(compressed.len()))?;
            gpu.copy_to_host_sync(compressed, &mut bytes)?;
            Ok(bytes)
        };
        match self.config.bitstream {
            Bitstream::Native => {
                let fixed = prefix(FIXED_HEADER_LEN)?;
                if fixed.len() < FIXED_HEADER_LEN {
                    return Frame::parse_native(&fixed, compressed.len());
                }
                let header = prefix(native_header_len_from_fixed(&fixed)?)?;
                Frame::parse_native(&header, compressed.len())
            }
            Bitstream::WithUncompressedSize => Frame::parse_with_size(self.options, &prefix(8)?, compressed.len()),
            Bitstream::Raw => {
                let size = self.raw_size_gpu(gpu, compressed, stream)?;
                Frame::raw(self.options, size as u64, compressed.len())
            }
        }
    }

    /// The decompressed size of a raw single-block stream, found by walking it on the GPU.
    fn raw_size_gpu(&self, gpu: &Gpu, compressed: DeviceView<'_, u8>, stream: &Stream) -> Result<usize> {
        let mut guard = self.scratch.lock().unwrap();
        let scratch = Scratch::ensure(gpu, &mut guard, 1, 0, 0, 0)?;
        scratch.host_addresses[0] = compressed.address();
        scratch.host_sizes[0] = compressed.len();
        stream.copy_to_device(&scratch.host_addresses[..1], scratch.addresses.address())?;
        stream.copy_to_device(&scratch.host_sizes[..1], scratch.sizes.address())?;
        let inputs = Chunks::new(scratch.addresses.view().slice(0, 1), scratch.sizes.view().slice(0, 1));
        let results = Results { sizes: scratch.result_sizes.view_mut(), statuses: scratch.statuses.view_mut() };
        unsafe { self.options.codec().decompressed_sizes_async(gpu, inputs, results, stream)? };
        stream.copy_to_host(scratch.result_sizes.address(), &mut scratch.host_result_sizes[..1])?;
        stream.copy_to_host(scratch.statuses.address(), &mut scratch.host_statuses[..1])?;
        stream.synchronize()?;
        match Status::from_code(scratch.host_statuses[0]) {
            Status::Success => Ok(scratch.host_result_sizes[0]),
            status => Err(Error::Chunk { chunk: 0, status }),
        }
    }

    /// Decodes every chunk of `frame` (in `compressed`) into `output`, checking sizes and the
    /// checksums the policy asks for.
    #[allow(clippy::too_many_arguments)]
    fn decompress_frame_gpu(
        &self,
        gpu: &Gpu,
        slot: &mut Option<Scratch>,
        frame: &Frame,
        first_chunk: usize,
        compressed: DeviceView<'_, u8>,
        output: DeviceViewMut<'_, u8>,
        stream: &Stream,
    ) -> Result<()> {
        self.check_checksum_policy(frame)?;
        let count = frame.count();
        if count == 0 {
            return Ok(());
        }
        let codec_bytes = frame.options.codec().decompress_scratch_size(count, frame.chunk_size);
        let scratch = Scratch::ensure(gpu, slot, count, 0, 0, codec_bytes)?;
        let offsets = frame.compressed_offsets();
        for i in 0..count {
            scratch.host_addresses[i] = compressed.address() + offsets[i] as u64;
            scratch.host_sizes[i] = frame.compressed_sizes[i];
            scratch.host_addresses[count + i] = output.address() + (i * frame.chunk_size) as u64;
            scratch.host_sizes[count + i] = frame.uncompressed_size(i);
        }
        scratch.host_first_failure[0] = u32::MAX;
        stream.copy_to_device(&scratch.host_addresses[..2 * count], scratch.addresses.address())?;
        stream.copy_to_device(&scratch.host_sizes[..2 * count], scratch.sizes.address())?;
        stream.copy_to_device(&scratch.host_first_failure[..], scratch.first_failure.address())?;
        let (inputs, outputs) = halves(&scratch.addresses, count);
        let inputs = Chunks::new(inputs, scratch.sizes.view().slice(0, count));
        let outputs = Chunks::new(outputs, scratch.sizes.view().slice(count, count));
        let results = Results { sizes: scratch.result_sizes.view_mut(), statuses: scratch.statuses.view_mut() };
        let codec = frame.options.codec();
        let (verify_uncompressed, verify_compressed) = self.checksums_to_verify(frame);
        unsafe {
            codec.decompress_async(
                gpu,
                inputs,
                outputs,
                scratch.codec.view_mut(),
                results,
                Some(scratch.first_failure.view_mut()),
                stream,
            )?;
            if verify_compressed.is_some() {
                crc32_async(gpu, inputs, scratch.crcs_compressed.view_mut(), stream)?;
            }
            if verify_uncompressed.is_some() {
                let decoded = Chunks::new(outputs.addresses, scratch.result_sizes.view().slice(0, count));
                crc32_async(gpu, decoded, scratch.crcs_uncompressed.view_mut(), stream)?;
            }
        }
        stream.copy_to_host(scratch.first_failure.address(), &mut scratch.host_first_failure[..])?;
        stream.copy_to_host(scratch.result_sizes.address(), &mut scratch.host_result_sizes[..count])?;
        if verify_uncompressed.is_some() {
            stream.copy_to_host(scratch.crcs_uncompressed.address(), &mut scratch.host_crcs[..count])?;
        }
        if verify_compressed.is_some() {
            stream.copy_to_host(scratch.crcs_compressed.address(), &mut scratch.host_crcs[count..2 * count])?;
        }
        stream.synchronize()?;
        // Each chunk in the CPU path's order: its stored bytes' CRC, its decoding, its size and
        // its decoded bytes' CRC; chunks past the first that failed to decode are not reached.
        let first_failure = scratch.host_first_failure[0] as usize;
        for i in 0..count {
            let chunk = first_chunk + i;
            if let Some(crcs) = verify_compressed {
                check_crc(chunk, ChecksumPart::Compressed, crcs[i], scratch.host_crcs[count + i])?;
            }
            if i == first_failure {
                let mut status = [0u32];
                gpu.copy_to_host_sync(scratch.statuses.view().slice(i, 1), &mut status)?;
                return Err(Error::Chunk { chunk, status: Status::from_code(status[0]) });
            }
            let (expected, actual) = (frame.uncompressed_size(i), scratch.host_result_sizes[i]);
            if actual != expected {
                return Err(Error::ChunkSize { chunk, expected, actual });
            }
            if let Some(crcs) = verify_uncompressed {
                check_crc(chunk, ChecksumPart::Uncompressed, crcs[i], scratch.host_crcs[i])?;
            }
        }
        Ok(())
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

/// `data` cut into `chunk_size` pieces (one empty piece for empty data).
fn chunks_of(data: &[u8], chunk_size: usize) -> Vec<&[u8]> {
    if data.is_empty() { vec![data] } else { data.chunks(chunk_size).collect() }
}

/// The address array as written for a call of `count` chunks: inputs, then outputs.
fn halves(addresses: &DeviceBuffer<u64>, count: usize) -> (DeviceView<'_, u64>, DeviceView<'_, u64>) {
    let all = addresses.view();
    (all.slice(0, count), all.slice(count, count))
}

/// Where a decompressed stream goes.
enum Output<'a> {
    /// In order, to a `Write`.
    Stream(&'a mut dyn Write),
    /// To a file at each segment's offset.
    #[cfg(unix)]
    File(&'a std::fs::File),
}

/// A reader telling `progress` the bytes read so far.
struct ReadProgress<'a, R> {
    inner: R,
    read: &'a mut u64,
    progress: &'a mut (dyn FnMut(u64) + Send),
}

impl<R: Read> Read for ReadProgress<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        *self.read += n as u64;
        (self.progress)(*self.read);
        Ok(n)
    }
}

/// All of `input`, which must be at most `limit` bytes (`what` says why).
fn read_at_most(input: &mut impl Read, limit: usize, what: &str) -> Result<Vec<u8>> {
    let mut data = Vec::new();
    input.take(limit as u64 + 1).read_to_end(&mut data)?;
    if data.len() > limit {
        return Err(Error::InvalidArgument(format!(
            "input is over the {limit}-byte limit of {what}; use the native one"
        )));
    }
    Ok(data)
}

//! Host data: buffers, streams from a `Read` to a `Write`, and files, moved through the
//! pipeline of [`crate::pipeline`] in segments, each processed on the GPU or the CPU.

use super::{BufferCodec, Compressed};
use crate::container::{
    Bitstream, FIXED_HEADER_LEN, Frame, NativeReader, SIZE_PREFIX_LEN, describe, head_of, is_nvcomp, is_streamed,
    read_nvcomp_stream,
};
use crate::error::{Error, Result};
use crate::file_ranges::{FileRange, RangeReader, in_file};
use crate::gpu::Gpu;
use crate::pipeline::{self, SegmentSlot, Staging, Totals};
use std::io::{Read, Write};

/// Workers, each also a writer, decompressing into a file: measured on the H200 machine, one
/// thread writes its page cache at about 2 GB/s and four reach 3.2 GB/s into one file.
const FILE_WORKERS: usize = 4;

impl BufferCodec {
    /// Most bytes [`Self::compress`] (or the device's `compress_device`) writes for `len` input
    /// bytes: its header and every chunk at the codec's bound.
    pub fn max_compressed_size(&self, len: usize) -> Result<usize> {
        let (chunk_size, count) = self.chunking(len)?;
        let bound = |bytes: usize| self.options.codec().max_compressed_chunk_size(bytes);
        Ok(match self.config.bitstream {
            Bitstream::Native => {
                let tables = 1 + self.stores_checksums() as usize + self.stores_uncompressed_checksums() as usize;
                let chunks = match count {
                    0 => 0,
                    _ => (count - 1) * bound(chunk_size) + bound(len - (count - 1) * chunk_size),
                };
                FIXED_HEADER_LEN + 4 * tables * count + chunks
            }
            Bitstream::WithUncompressedSize => SIZE_PREFIX_LEN + bound(len),
            Bitstream::Raw => bound(len),
        })
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
        let mut magic = [0; 4];
        let nvcomp = std::os::unix::fs::FileExt::read_at(&file, &mut magic, 0).is_ok_and(|n| is_nvcomp(&magic[..n]));
        let (Some(gpu), Bitstream::Native, false) = (&self.gpu, self.config.bitstream, nvcomp) else {
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
            |_| reader.skip_block(file_len),
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

    /// The work of [`Self::decompress_stream`] and [`Self::decompress_to_file`]: what `input`
    /// yields, decompressed into `output`.
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
        // A stream read whole and decoded in memory: the single-chunk bitstreams and nvCOMP's.
        let mut whole = |compressed: &[u8], data: Vec<u8>| -> Result<Totals> {
            match (&mut stream, file) {
                (Some(stream), _) => stream.write_all(&data)?,
                #[cfg(unix)]
                (_, Some(file)) => std::os::unix::fs::FileExt::write_all_at(file, &data, 0)?,
                _ => unreachable!("one output"),
            }
            progress(data.len() as u64);
            Ok(Totals { uncompressed: data.len() as u64, compressed: compressed.len() as u64 })
        };
        if self.config.bitstream != Bitstream::Native {
            let codec = self.options.codec();
            // Every decoder takes chunks of up to 16 MiB, above what some codecs write.
            let limit = 8 + codec.max_compressed_chunk_size(1 << 24);
            let compressed = read_at_most(&mut input, limit, "a single-chunk bitstream")?;
            return whole(&compressed, self.decompress(&compressed)?);
        }
        let head = head_of(&mut input)?;
        if is_nvcomp(&head) {
            let (compressed, frame) = read_nvcomp_stream(&head, input)?;
            let mut data = vec![0; frame.total_size];
            self.decompress_frame(&frame, &compressed, &mut data, &mut |_| {})?;
            return whole(&compressed, data);
        }
        let mut reader = NativeReader::new(head.chain(input), self.segment_size)?;
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

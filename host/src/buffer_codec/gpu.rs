//! The GPU's work: device memory compressed and decompressed in one batched call, and a
//! pipeline slot's segment uploaded, processed on its stream and downloaded.

use super::{BufferCodec, Compressed, check_crc};
use crate::alloc::{DeviceBuffer, DeviceView, DeviceViewMut, HostBuffer};
use crate::batch::{Chunks, Results};
use crate::checksum::crc32_async;
use crate::container::{
    Bitstream, Checksums, FIXED_HEADER_LEN, Frame, NVCOMP_HEADER_LEN, SIZE_PREFIX_LEN, native_header_len_from_fixed,
};
use crate::error::{ChecksumPart, Error, Result};
use crate::gpu::{Gpu, Stream};
use crate::pipeline::{SegmentSlot, Staging};
use crate::scatter::gather_async;
use crate::scratch::Scratch;
use ferrocomp_format::Status;
use rayon::prelude::*;

impl BufferCodec {
    /// Compresses device bytes into a new device buffer, on the GPU.
    pub fn compress_device(&self, input: DeviceView<'_, u8>, stream: &Stream) -> Result<DeviceBuffer<u8>> {
        let gpu = self.require_gpu()?;
        let place = |total| {
            let out = gpu.alloc::<u8>(total)?;
            let address = out.address();
            Ok((out, address))
        };
        Ok(self.compress_device_with(input, stream, place)?.0)
    }

    /// Compresses device bytes into the caller's device memory, allocating nothing once the
    /// codec's scratch has grown to the input's size; returns the bytes written. Fails, writing
    /// nothing, if `output` is smaller than the compressed stream.
    pub fn compress_device_into(
        &self,
        input: DeviceView<'_, u8>,
        output: DeviceViewMut<'_, u8>,
        stream: &Stream,
    ) -> Result<usize> {
        let place = |total| {
            if total > output.len() {
                let room = output.len();
                return Err(Error::InvalidArgument(format!(
                    "output holds {room} bytes, the compressed stream is {total}"
                )));
            }
            Ok(((), output.address()))
        };
        Ok(self.compress_device_with(input, stream, place)?.1)
    }

    /// Compresses device bytes on the GPU into the memory `place` gives (what owns it, and its
    /// address) for the stream's size in bytes; returns the owner and that size.
    fn compress_device_with<T>(
        &self,
        input: DeviceView<'_, u8>,
        stream: &Stream,
        place: impl FnOnce(usize) -> Result<(T, u64)>,
    ) -> Result<(T, usize)> {
        let gpu = self.require_gpu()?;
        let (chunk_size, _) = self.chunking(input.len())?;
        let mut guard = self.scratch.lock().unwrap();
        let compressed = self.compress_chunks_gpu(gpu, &mut guard, input, chunk_size, stream)?;
        let header = self.frame_for(input.len(), chunk_size, &compressed).header(self.config.bitstream);
        let total = header.len() + compressed.sizes.iter().sum::<usize>();
        let (owner, address) = place(total)?;
        if !header.is_empty() {
            gpu.copy_to_device_sync(&header, unsafe { DeviceViewMut::from_raw(address, header.len()) })?;
        }
        if let Some(scratch) = guard.as_mut().filter(|_| !compressed.sizes.is_empty()) {
            self.pack_gpu(gpu, scratch, &compressed.sizes, address + header.len() as u64, stream)?;
            stream.synchronize()?;
        }
        Ok((owner, total))
    }

    /// The size a compressed device buffer decompresses to, from its header (a raw block is
    /// walked on the GPU): ferrocomp's container, nvCOMP's native stream or a size prefix.
    pub fn decompressed_size_device(&self, compressed: DeviceView<'_, u8>, stream: &Stream) -> Result<usize> {
        Ok(self.read_frame_device(self.require_gpu()?, compressed, stream)?.total_size)
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

    /// Compresses the first `len` bytes of a slot's input on its stream: uploaded, compressed,
    /// packed and downloaded into its output.
    pub(super) fn compress_segment_gpu(
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
    pub(super) fn decompress_segment_gpu(
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
    pub(super) fn decompress_uploaded_gpu(
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
        let inputs = Chunks::new(inputs, scratch.sizes.view().slice(0, count)).with_largest(chunk_bytes);
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
                nvcomp_skews: None,
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
                // Enough for ferrocomp's fixed header and nvCOMP's.
                let fixed = prefix(FIXED_HEADER_LEN.max(NVCOMP_HEADER_LEN))?;
                if fixed.len() < FIXED_HEADER_LEN {
                    return Frame::parse_native(&fixed, compressed.len());
                }
                let header = prefix(native_header_len_from_fixed(&fixed)?)?;
                Frame::parse_native(&header, compressed.len())
            }
            Bitstream::WithUncompressedSize => {
                Frame::parse_with_size(self.options, &prefix(SIZE_PREFIX_LEN)?, compressed.len())
            }
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
        let outputs = Chunks::new(outputs, scratch.sizes.view().slice(count, count)).with_largest(frame.chunk_size);
        let results = Results { sizes: scratch.result_sizes.view_mut(), statuses: scratch.statuses.view_mut() };
        let codec = frame.options.codec();
        let (verify_uncompressed, verify_compressed) = self.checksums_to_verify(frame);
        // nvCOMP's checksums are computed on the host (the kernel computes CRC-32s).
        let on_device = frame.checksums.nvcomp_skews.is_none();
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
            if verify_compressed.is_some() && on_device {
                crc32_async(gpu, inputs, scratch.crcs_compressed.view_mut(), stream)?;
            }
            if verify_uncompressed.is_some() && on_device {
                let decoded = Chunks::new(outputs.addresses, scratch.result_sizes.view().slice(0, count));
                crc32_async(gpu, decoded, scratch.crcs_uncompressed.view_mut(), stream)?;
            }
        }
        stream.copy_to_host(scratch.first_failure.address(), &mut scratch.host_first_failure[..])?;
        stream.copy_to_host(scratch.result_sizes.address(), &mut scratch.host_result_sizes[..count])?;
        if verify_uncompressed.is_some() && on_device {
            stream.copy_to_host(scratch.crcs_uncompressed.address(), &mut scratch.host_crcs[..count])?;
        }
        if verify_compressed.is_some() && on_device {
            stream.copy_to_host(scratch.crcs_compressed.address(), &mut scratch.host_crcs[count..2 * count])?;
        }
        stream.synchronize()?;
        if !on_device && (verify_uncompressed.is_some() || verify_compressed.is_some()) {
            let sums = nvcomp_checksums(gpu, frame, compressed, output.as_view())?;
            scratch.host_crcs[..2 * count].copy_from_slice(&sums);
        }
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

/// nvCOMP's checksums of `frame`'s decoded chunks in `output`, then of its chunks in
/// `compressed`, computed on the host from copies of both.
fn nvcomp_checksums(
    gpu: &Gpu,
    frame: &Frame,
    compressed: DeviceView<'_, u8>,
    output: DeviceView<'_, u8>,
) -> Result<Vec<u32>> {
    let (mut stream, mut decoded) = (vec![0u8; compressed.len()], vec![0u8; frame.total_size]);
    gpu.copy_to_host_sync(compressed, &mut stream)?;
    gpu.copy_to_host_sync(output, &mut decoded)?;
    let offsets = frame.compressed_offsets();
    let sums = &frame.checksums;
    let uncompressed = (0..frame.count()).into_par_iter().map(|i| {
        let at = i * frame.chunk_size;
        sums.of(ChecksumPart::Uncompressed, i, &decoded[at..at + frame.uncompressed_size(i)])
    });
    let compressed = (0..frame.count())
        .into_par_iter()
        .map(|i| sums.of(ChecksumPart::Compressed, i, &stream[offsets[i]..offsets[i] + frame.compressed_sizes[i]]));
    Ok(uncompressed.chain(compressed).collect())
}

/// The address array as written for a call of `count` chunks: inputs, then outputs.
fn halves(addresses: &DeviceBuffer<u64>, count: usize) -> (DeviceView<'_, u64>, DeviceView<'_, u64>) {
    let all = addresses.view();
    (all.slice(0, count), all.slice(count, count))
}

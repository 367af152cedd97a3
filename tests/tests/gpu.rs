//! On the GPU: round trips, byte-exact agreement with the CPU path, interop with the CPU
//! libraries both ways, checksums, decoding into slices of one buffer, and per-chunk statuses
//! for corrupt chunks. Each test says it skipped and passes where the machine has no GPU.

use ferrocomp::alloc::{DeviceAllocator, HostAllocator, SystemHostAllocator};
use ferrocomp::gpu::CudaDeviceAllocator;
use ferrocomp::{
    BatchCodec, Bitstream, BufferCodec, ChecksumPart, ChecksumPolicy, Config, DataType, DeviceViewMut, Error, Gpu, Lz4,
    Options, Results, Status, Stream,
};
use ferrocomp_format::lz4::max_compressed_size;
use ferrocomp_tests::{DeviceChunks, gpu, random_bytes, text_bytes};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const CHUNK: usize = 65536;

fn codec(gpu: &Gpu, bitstream: Bitstream, checksum: ChecksumPolicy) -> BufferCodec {
    BufferCodec::new(Options::default(), Config { chunk_size: CHUNK, bitstream, checksum }, Some(gpu.clone())).unwrap()
}

fn cpu_codec(bitstream: Bitstream, checksum: ChecksumPolicy) -> BufferCodec {
    BufferCodec::new(Options::default(), Config { chunk_size: CHUNK, bitstream, checksum }, None).unwrap()
}

fn no_scratch() -> DeviceViewMut<'static, u8> {
    unsafe { DeviceViewMut::from_raw(0, 0) }
}

/// Compressed chunks from the batched API, with their statuses.
fn batch_compress(gpu: &Gpu, lz4: Lz4, chunks: &[&[u8]], stream: &Stream) -> Vec<Vec<u8>> {
    let inputs = DeviceChunks::upload(gpu, chunks);
    let bound = max_compressed_size(chunks.iter().map(|c| c.len()).max().unwrap_or(0));
    let outputs = DeviceChunks::slots(gpu, &vec![bound; chunks.len()]);
    let (mut sizes, mut statuses) =
        (gpu.alloc::<usize>(chunks.len()).unwrap(), gpu.alloc::<u32>(chunks.len()).unwrap());
    let results = Results { sizes: sizes.view_mut(), statuses: statuses.view_mut() };
    unsafe { lz4.compress_async(gpu, inputs.chunks(), outputs.addresses.view(), bound, no_scratch(), results, stream) }
        .unwrap();
    stream.synchronize().unwrap();
    assert!(gpu.download(statuses.view()).unwrap().iter().all(|&s| s == Status::Success as u32));
    let sizes = gpu.download(sizes.view()).unwrap();
    sizes.iter().enumerate().map(|(i, &n)| outputs.download(gpu, i, n)).collect()
}

/// Decodes `blocks` into slices of one device buffer with room `capacities`; returns each
/// chunk's status and bytes.
fn batch_decompress(gpu: &Gpu, blocks: &[&[u8]], capacities: &[usize], stream: &Stream) -> Vec<(Status, Vec<u8>)> {
    let inputs = DeviceChunks::upload(gpu, blocks);
    let outputs = DeviceChunks::slots(gpu, capacities);
    let (mut sizes, mut statuses) =
        (gpu.alloc::<usize>(blocks.len()).unwrap(), gpu.alloc::<u32>(blocks.len()).unwrap());
    let mut first_failure = gpu.upload(&[u32::MAX]).unwrap();
    let results = Results { sizes: sizes.view_mut(), statuses: statuses.view_mut() };
    unsafe {
        Lz4::default().decompress_async(
            gpu,
            inputs.chunks(),
            outputs.chunks(),
            no_scratch(),
            results,
            Some(first_failure.view_mut()),
            stream,
        )
    }
    .unwrap();
    stream.synchronize().unwrap();
    let (sizes, statuses) = (gpu.download(sizes.view()).unwrap(), gpu.download(statuses.view()).unwrap());
    let first = gpu.download(first_failure.view()).unwrap()[0];
    let expected_first = statuses.iter().position(|&s| s != 0).map_or(u32::MAX, |i| i as u32);
    assert_eq!(first, expected_first, "first failing chunk");
    (0..blocks.len()).map(|i| (Status::from_code(statuses[i]), outputs.download(gpu, i, sizes[i]))).collect()
}

#[test]
fn round_trips_on_the_device_at_chunk_edges() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let codec = codec(&gpu, Bitstream::Native, ChecksumPolicy::ComputeAndVerify);
    for n in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, (5 << 20) + 3] {
        for data in [random_bytes(n, 1), text_bytes(n, 2)] {
            let input = gpu.upload(&data).unwrap();
            let compressed = codec.compress_device(input.view(), &stream).unwrap();
            let restored = codec.decompress_device(compressed.view(), &stream).unwrap();
            assert_eq!(gpu.download(restored.view()).unwrap(), data, "{n} bytes");
            // The same bytes through the host-memory entry points.
            assert_eq!(codec.decompress(&codec.compress(&data).unwrap()).unwrap(), data);
        }
    }
}

#[test]
fn gpu_and_cpu_write_identical_bytes() {
    let Some(gpu) = gpu() else { return };
    let mut data = text_bytes(3 << 20, 3);
    data.extend(random_bytes(200_000, 4));
    for bitstream in [Bitstream::Native, Bitstream::WithUncompressedSize] {
        let data = if bitstream == Bitstream::Native { &data[..] } else { &data[..1 << 20] };
        let policy = ChecksumPolicy::ComputeAndVerifyIfPresent;
        let on_gpu = codec(&gpu, bitstream, policy).compress(data).unwrap();
        let on_cpu = cpu_codec(bitstream, policy).compress(data).unwrap();
        assert_eq!(on_gpu, on_cpu, "{bitstream:?}");
        assert_eq!(cpu_codec(bitstream, policy).decompress(&on_gpu).unwrap(), data);
        assert_eq!(codec(&gpu, bitstream, policy).decompress(&on_cpu).unwrap(), data);
    }
    let stream = gpu.stream().unwrap();
    let ints: Vec<u8> = (0..300_000u32).flat_map(|i| (i * 3 / 5).to_le_bytes()).collect();
    for data_type in [DataType::Char, DataType::Short, DataType::Int, DataType::LongLong] {
        let lz4 = Lz4 { data_type };
        let on_gpu = batch_compress(&gpu, lz4, &[&ints[..CHUNK], &ints[CHUNK..3 * CHUNK]], &stream);
        for (chunk, block) in [&ints[..CHUNK], &ints[CHUNK..3 * CHUNK]].iter().zip(&on_gpu) {
            let mut expected = vec![0u8; max_compressed_size(chunk.len())];
            let n = lz4.compress_cpu(chunk, &mut expected).unwrap();
            assert_eq!(*block, expected[..n], "{data_type:?}");
        }
    }
}

#[test]
fn gpu_blocks_open_with_the_cpu_libraries() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = text_bytes(1 << 24, 5); // the largest chunk, 16 MiB
    let random = random_bytes(CHUNK, 6);
    let pieces: [&[u8]; 4] = [&data[..100], &data[..CHUNK], &data, &random];
    let blocks = batch_compress(&gpu, Lz4::default(), &pieces, &stream);
    for (piece, block) in pieces.iter().zip(&blocks) {
        assert_eq!(lz4_flex::block::decompress(block, piece.len()).unwrap(), *piece);
        assert_eq!(lz4::block::decompress(block, Some(piece.len() as i32)).unwrap(), *piece);
    }
}

#[test]
fn cpu_library_blocks_decode_on_the_gpu() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = text_bytes(1 << 24, 7);
    let small = random_bytes(5000, 8);
    let blocks = [
        lz4_flex::block::compress(&data[..CHUNK]),
        lz4::block::compress(&data, None, false).unwrap(),
        lz4::block::compress(&data[..1 << 20], Some(lz4::block::CompressionMode::HIGHCOMPRESSION(9)), false).unwrap(),
        lz4::block::compress(&data[..3 << 20], Some(lz4::block::CompressionMode::HIGHCOMPRESSION(12)), false).unwrap(),
        lz4::block::compress(&small, Some(lz4::block::CompressionMode::FAST(4)), false).unwrap(),
    ];
    let expected: [&[u8]; 5] = [&data[..CHUNK], &data, &data[..1 << 20], &data[..3 << 20], &small];
    let block_refs: Vec<&[u8]> = blocks.iter().map(|b| &b[..]).collect();
    let capacities: Vec<usize> = expected.iter().map(|e| e.len()).collect();
    for (i, (status, bytes)) in batch_decompress(&gpu, &block_refs, &capacities, &stream).into_iter().enumerate() {
        assert_eq!(status, Status::Success, "block {i}");
        assert_eq!(bytes, expected[i], "block {i}");
    }
    // The decompressed sizes, found by walking the blocks on the GPU.
    let inputs = DeviceChunks::upload(&gpu, &block_refs);
    let (mut sizes, mut statuses) = (gpu.alloc::<usize>(5).unwrap(), gpu.alloc::<u32>(5).unwrap());
    let results = Results { sizes: sizes.view_mut(), statuses: statuses.view_mut() };
    unsafe { Lz4::default().decompressed_sizes_async(&gpu, inputs.chunks(), results, &stream) }.unwrap();
    stream.synchronize().unwrap();
    assert_eq!(gpu.download(sizes.view()).unwrap(), capacities);
}

#[test]
fn pages_decode_straight_into_one_buffer() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    // Pages of uneven sizes, as a cluster's: each decodes into its own slice of one buffer.
    let page_sizes = [1000, CHUNK, 7, 40_000, CHUNK - 1, 123_457];
    let mut cluster = Vec::new();
    let mut pages = Vec::new();
    for (i, &size) in page_sizes.iter().enumerate() {
        let page = if i % 2 == 0 { text_bytes(size, i as u64) } else { random_bytes(size, i as u64) };
        cluster.extend_from_slice(&page);
        pages.push(page);
    }
    let page_refs: Vec<&[u8]> = pages.iter().map(|p| &p[..]).collect();
    let blocks = batch_compress(&gpu, Lz4::default(), &page_refs, &stream);
    let block_refs: Vec<&[u8]> = blocks.iter().map(|b| &b[..]).collect();
    let inputs = DeviceChunks::upload(&gpu, &block_refs);
    let one_buffer = DeviceChunks::slots(&gpu, &page_sizes);
    let (mut sizes, mut statuses) = (gpu.alloc::<usize>(6).unwrap(), gpu.alloc::<u32>(6).unwrap());
    let results = Results { sizes: sizes.view_mut(), statuses: statuses.view_mut() };
    unsafe {
        Lz4::default().decompress_async(
            &gpu,
            inputs.chunks(),
            one_buffer.chunks(),
            no_scratch(),
            results,
            None,
            &stream,
        )
    }
    .unwrap();
    stream.synchronize().unwrap();
    assert_eq!(gpu.download(statuses.view()).unwrap(), vec![0; 6]);
    assert_eq!(gpu.download(sizes.view()).unwrap(), page_sizes);
    assert_eq!(gpu.download(one_buffer.data.view()).unwrap(), cluster);
}

#[test]
fn corrupt_chunks_fail_alone_with_their_status() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let pages: Vec<Vec<u8>> = (0..6).map(|i| text_bytes(CHUNK, 10 + i)).collect();
    let page_refs: Vec<&[u8]> = pages.iter().map(|p| &p[..]).collect();
    let mut blocks = batch_compress(&gpu, Lz4::default(), &page_refs, &stream);
    let last = blocks[1].len() - 1;
    blocks[1].truncate(last); // truncated
    blocks[3] = vec![0x10, b'a', 9, 0, 0x00]; // offset before the start
    blocks[5] = vec![0xF0, 0xFF, 0xFF]; // a length running off the end
    let mut capacities = vec![CHUNK; 6];
    capacities[4] = CHUNK - 1; // room one byte short
    let block_refs: Vec<&[u8]> = blocks.iter().map(|b| &b[..]).collect();
    let decoded = batch_decompress(&gpu, &block_refs, &capacities, &stream);
    let statuses: Vec<Status> = decoded.iter().map(|(s, _)| *s).collect();
    use Status::*;
    assert_eq!(statuses, [Success, Truncated, Success, BadOffset, OutputTooSmall, Truncated]);
    for i in [0, 2] {
        assert_eq!(decoded[i].1, pages[i]);
    }
    // The same statuses as the CPU reference.
    for (i, block) in blocks.iter().enumerate() {
        let mut out = vec![0u8; capacities[i]];
        assert_eq!(ferrocomp_format::lz4::decompress(block, &mut out).err().unwrap_or(Success), statuses[i]);
    }
}

#[test]
fn checksum_mismatches_are_caught_and_named() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let mut data = text_bytes(5 * CHUNK, 20);
    data[3 * CHUNK..4 * CHUNK].copy_from_slice(&random_bytes(CHUNK, 21)); // all literals
    let codec = codec(&gpu, Bitstream::Native, ChecksumPolicy::ComputeAndVerify);
    let mut compressed = codec.compress(&data).unwrap();
    let offsets = codec.read_frame(&compressed).unwrap().compressed_offsets();
    compressed[offsets[3] + 500] ^= 0x04;
    let on_device = gpu.upload(&compressed).unwrap();
    match codec.decompress_device(on_device.view(), &stream) {
        Err(Error::ChecksumMismatch { chunk: 3, part: ChecksumPart::Compressed, .. }) => {}
        other => panic!("{:?}", other.map(|_| ())),
    }
    // Verifying only uncompressed CRCs still catches it, by the decoded bytes.
    let mut stripped = compressed.clone();
    stripped[6] = 1; // only the uncompressed table: drop the compressed one
    let header = ferrocomp::container::FIXED_HEADER_LEN + 2 * 4 * 5;
    stripped.drain(header..header + 4 * 5);
    let codec = self::codec(&gpu, Bitstream::Native, ChecksumPolicy::NoComputeAndVerifyIfPresent);
    match codec.decompress(&stripped) {
        Err(Error::ChecksumMismatch { chunk: 3, part: ChecksumPart::Uncompressed, .. }) => {}
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn lying_headers_are_refused_before_allocating() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let codec = codec(&gpu, Bitstream::Native, ChecksumPolicy::default());
    let good = codec.compress(&text_bytes(3 * CHUNK, 30)).unwrap();
    let mut huge = good.clone();
    huge[16..24].copy_from_slice(&(1u64 << 45).to_le_bytes());
    let mut short = good.clone();
    short[16..24].copy_from_slice(&(3 * CHUNK as u64 - 1).to_le_bytes()); // the last chunk decodes long
    for (bytes, container_error) in [(&huge, true), (&good[..40].to_vec(), true), (&short, false)] {
        let on_device = gpu.upload(bytes).unwrap();
        match codec.decompress_device(on_device.view(), &stream) {
            Err(Error::Container(_)) if container_error => {}
            Err(Error::Chunk { chunk: 2, status: Status::OutputTooSmall }) if !container_error => {}
            other => panic!("{:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn raw_bitstreams_on_the_device() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = text_bytes(3 << 20, 40);
    let raw = codec(&gpu, Bitstream::Raw, ChecksumPolicy::default());
    let input = gpu.upload(&data).unwrap();
    let compressed = raw.compress_device(input.view(), &stream).unwrap();
    let bytes = gpu.download(compressed.view()).unwrap();
    assert_eq!(lz4_flex::block::decompress(&bytes, data.len()).unwrap(), data);
    // Raw needs no size: the GPU walks the block to find it.
    let restored = raw.decompress_device(compressed.view(), &stream).unwrap();
    assert_eq!(gpu.download(restored.view()).unwrap(), data);
    let mut exact = gpu.alloc::<u8>(data.len()).unwrap();
    assert_eq!(raw.decompress_device_into(compressed.view(), exact.view_mut(), &stream).unwrap(), data.len());
    assert_eq!(gpu.download(exact.view()).unwrap(), data);
    let mut small = gpu.alloc::<u8>(data.len() - 1).unwrap();
    assert!(matches!(
        raw.decompress_device_into(compressed.view(), small.view_mut(), &stream),
        Err(Error::InvalidArgument(_))
    ));
}

/// Counts the allocations the creating thread makes through it (tests on other threads share
/// the device and its allocators meanwhile).
struct CountingAllocator(AtomicUsize, std::thread::ThreadId);

impl CountingAllocator {
    fn count(&self) {
        if std::thread::current().id() == self.1 {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl HostAllocator for CountingAllocator {
    fn allocate(&self, bytes: usize) -> ferrocomp::Result<*mut u8> {
        self.count();
        SystemHostAllocator.allocate(bytes)
    }

    unsafe fn free(&self, ptr: *mut u8, bytes: usize) {
        unsafe { SystemHostAllocator.free(ptr, bytes) }
    }
}

impl DeviceAllocator for CountingAllocator {
    fn allocate(&self, bytes: usize) -> ferrocomp::Result<u64> {
        self.count();
        CudaDeviceAllocator.allocate(bytes)
    }

    unsafe fn free(&self, address: u64) {
        unsafe { CudaDeviceAllocator.free(address) }
    }
}

#[test]
fn caller_streams_and_allocators_are_used() {
    let Some(gpu) = gpu() else { return };
    let counting = Arc::new(CountingAllocator(AtomicUsize::new(0), std::thread::current().id()));
    gpu.make_current().unwrap();
    let own = cudarc::driver::CudaContext::new(0).unwrap().new_stream().unwrap();
    let stream = unsafe { Stream::borrow_raw(own.cu_stream()) };
    let codec = codec(&gpu, Bitstream::Native, ChecksumPolicy::default());
    let data = text_bytes(2 * CHUNK + 9, 50);
    let input = gpu.upload(&data).unwrap();
    gpu.set_device_allocator(counting.clone());
    let compressed = codec.compress_device(input.view(), &stream).unwrap();
    let restored = codec.decompress_device(compressed.view(), &stream).unwrap();
    gpu.set_device_allocator(Arc::new(CudaDeviceAllocator));
    assert_eq!(gpu.download(restored.view()).unwrap(), data);
    assert!(counting.0.load(Ordering::Relaxed) >= 2, "the codec allocated through the caller's allocator");
    // Reusing the codec allocates no new scratch for a batch that fits.
    let before = counting.0.load(Ordering::Relaxed);
    gpu.set_device_allocator(counting.clone());
    let again = codec.decompress_device(compressed.view(), &stream).unwrap();
    gpu.set_device_allocator(Arc::new(CudaDeviceAllocator));
    assert_eq!(counting.0.load(Ordering::Relaxed), before + 1, "only the output was allocated");
    // The container's header is read back into host memory from the host allocator.
    let host = Arc::new(CountingAllocator(AtomicUsize::new(0), std::thread::current().id()));
    gpu.set_host_allocator(host.clone());
    let third = codec.decompress_device(compressed.view(), &stream).unwrap();
    gpu.set_host_allocator(Arc::new(SystemHostAllocator));
    assert_eq!(host.0.load(Ordering::Relaxed), 2, "fixed header, then the whole header");
    drop((third, again, restored, compressed));
}

/// Chunks in files (several to a file, behind a header) read and decoded into slices of one
/// device buffer by `RangeReader`, over more than one of its segments; a corrupt chunk is named
/// by its place among all the ranges; the reader alone packs the ranges' bytes on the device.
#[test]
fn file_ranges_decode_into_one_device_buffer() {
    use ferrocomp::file_ranges::{FileRange, SEGMENT_SIZE};
    use ferrocomp::{ChunkListCodec, RangeReader};
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let dir = std::env::temp_dir().join(format!("ferrocomp-file-ranges-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let codec = ChunkListCodec::new(Options::Lz4(Lz4::default()), Bitstream::Raw, Some(gpu.clone())).unwrap();
    // Incompressible chunks, so that their compressed bytes span two segments.
    let count = SEGMENT_SIZE * 3 / 2 / CHUNK;
    let data = random_bytes(count * CHUNK, 46);
    let mut chunks: Vec<Vec<u8>> = data.chunks(CHUNK).map(|chunk| cpu_compress(&codec, chunk)).collect();
    chunks[count - 3] = chunks[count - 3][..100].to_vec(); // cut short: Truncated or Malformed
    let mut places = Vec::new();
    for (f, group) in chunks.chunks(8).enumerate() {
        let path = dir.join(format!("{f}"));
        let mut file = b"header".to_vec();
        for chunk in group {
            places.push((path.clone(), file.len() as u64, chunk.len()));
            file.extend_from_slice(chunk);
        }
        std::fs::write(&path, file).unwrap();
    }
    let ranges: Vec<FileRange<'_>> =
        places.iter().map(|(path, offset, len)| FileRange { path, offset: *offset, len: *len }).collect();
    let reader = RangeReader::new(&gpu).unwrap();
    let out = gpu.alloc::<u8>(data.len()).unwrap();
    let at = out.address();
    let outputs: Vec<DeviceViewMut<'_, u8>> =
        (0..count).map(|i| unsafe { DeviceViewMut::from_raw(at + (i * CHUNK) as u64, CHUNK) }).collect();
    let failed = unsafe { reader.decode_to_device(&codec, &ranges, &outputs, &stream) }.unwrap_err();
    assert!(matches!(failed, Error::Chunk { chunk, .. } if chunk == count - 3), "{failed}");
    let good = &ranges[..count - 3];
    let sizes = unsafe { reader.decode_to_device(&codec, good, &outputs[..count - 3], &stream) }.unwrap();
    assert_eq!(sizes, vec![CHUNK; count - 3]);
    assert!(gpu.download(out.view()).unwrap()[..(count - 3) * CHUNK] == data[..(count - 3) * CHUNK]);
    let packed: Vec<u8> = chunks.concat();
    let mut on_device = gpu.alloc::<u8>(packed.len()).unwrap();
    reader.read_to_device(&ranges, on_device.view_mut(), &stream).unwrap();
    stream.synchronize().unwrap();
    assert!(gpu.download(on_device.view()).unwrap() == packed);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `chunk` compressed on the CPU by `codec`.
fn cpu_compress(codec: &ferrocomp::ChunkListCodec, chunk: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; codec.max_compressed_size(chunk.len())];
    let size = codec.compress_cpu(&[chunk], &mut [&mut out[..]]).remove(0).unwrap();
    out.truncate(size);
    out
}

/// Decoded chunks scattered into a 2-D array by `host::scatter` on the GPU land where the CPU's
/// do: four 300 x 75 chunks of u16 tiling a 600 x 150 array, then every third element of a
/// fifth chunk's rows over the first 100 columns.
#[test]
fn scatter_on_the_gpu_places_boxes_as_the_cpu() {
    use ferrocomp::scatter::{Plan, scatter_cpu, scatter_gpu};
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let (cols, item, chunk) = (150u64, 2u64, 300 * 75 * 2);
    let src = random_bytes(5 * chunk as usize, 9);
    let plan = Plan { itemsize: item, src_len: src.len() as u64, dst_len: 600 * cols * item };
    let mut copies: Vec<_> = (0..4u64)
        .map(|c| {
            let at = (c / 2 * 300 * cols + c % 2 * 75) * item;
            plan.copy(c * chunk, at, &[300, 75], &[150, 2], &[cols * item, item]).unwrap()
        })
        .collect();
    copies.push(plan.copy(4 * chunk, 0, &[300, 25], &[150, 6], &[cols * item, item]).unwrap());
    let (tiles, strided) = copies.split_at_mut(4);
    for boxes in [tiles, strided] {
        // Device memory is 256-byte aligned, so a unit the boxes allow at address 0 holds there too.
        let unit = Plan::widen(boxes, 0, 0);
        let mut expected = vec![0u8; plan.dst_len as usize];
        unsafe { scatter_cpu(&src, &mut expected, boxes, unit).unwrap() };
        let input = gpu.upload(&src).unwrap();
        let mut output = gpu.upload(&vec![0u8; expected.len()]).unwrap();
        unsafe { scatter_gpu(&gpu, input.view(), output.view_mut(), boxes, unit, &stream).unwrap() };
        assert!(gpu.download(output.view()).unwrap() == expected, "unit {unit}");
    }
}

/// Slabs of rows decoded in place and rearranged on the GPU match the CPU's: a 600 x 150 array
/// of u16 in two slabs of 300 rows, each holding its two 300 x 75 chunks one after the other.
#[test]
fn slabs_rearrange_on_the_gpu_as_on_the_cpu() {
    use ferrocomp::scatter::{Plan, Slab, rearrange_slabs_cpu, rearrange_slabs_gpu};
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let (cols, item, chunk) = (150u64, 2u64, 300 * 75 * 2);
    let data = random_bytes(4 * chunk as usize, 10);
    let plan = Plan { itemsize: item, src_len: 2 * chunk, dst_len: data.len() as u64 };
    let mut copies: Vec<_> = (0..4u64)
        .map(|c| {
            plan.copy(
                c % 2 * chunk,
                (c / 2 * 300 * cols + c % 2 * 75) * item,
                &[300, 75],
                &[150, 2],
                &[cols * item, item],
            )
            .unwrap()
        })
        .collect();
    let unit = Plan::widen(&mut copies, 0, 0);
    let half = 2 * chunk as usize;
    let slabs = [Slab { bytes: 0..half, boxes: 0..2 }, Slab { bytes: half..2 * half, boxes: 2..4 }];
    let mut expected = data.clone();
    unsafe { rearrange_slabs_cpu(&mut expected, &mut vec![0; half], &slabs, &copies, unit).unwrap() };
    assert!(expected != data);
    let mut on_device = gpu.upload(&data).unwrap();
    let mut staging = gpu.alloc::<u8>(half).unwrap();
    unsafe {
        rearrange_slabs_gpu(&gpu, on_device.view_mut(), staging.view_mut(), &slabs, &copies, unit, &stream).unwrap()
    };
    assert!(gpu.download(on_device.view()).unwrap() == expected, "unit {unit}");
}

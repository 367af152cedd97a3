//! The codecs and shapes under test, sample data, and each codec compressing and decompressing chunks
//! on the CPU and, in batches, on the GPU.

use ferrocomp::{
    Ans, AnsDataType, BatchCodec, Bitcomp, Bitstream, Blosc, BufferCodec, Cascaded, ChecksumPolicy, Config, DataType,
    Deflate, DeviceBuffer, ElementType, ErrorBound, GDeflate, Gpu, Options, Results, Shuffle, Snappy, Status, Stream,
    Wrapper, Zstd,
};
use ferrocomp_tests::{DeviceChunks, random_bytes, text_bytes};
use flate2::Compression;
use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
use std::io::Write;

pub const CHUNK: usize = 65536;

pub const WRAPPERS: [Wrapper; 3] = [Wrapper::Raw, Wrapper::Zlib, Wrapper::Gzip];

/// Blosc at element sizes that split into streams (up to 16), that do not (24), that leave a
/// partial element (3), with each shuffle.
pub const BLOSC: [Blosc; 6] = [
    Blosc { typesize: 1, shuffle: Shuffle::Byte },
    Blosc { typesize: 4, shuffle: Shuffle::Byte },
    Blosc { typesize: 4, shuffle: Shuffle::Bit },
    Blosc { typesize: 8, shuffle: Shuffle::None },
    Blosc { typesize: 3, shuffle: Shuffle::Byte },
    Blosc { typesize: 24, shuffle: Shuffle::Bit },
];

/// Cascaded at the defaults, at nvCOMP 4's exact layers, at the most layers, and unpacked, at each width.
pub const CASCADED: [Cascaded; 4] = [
    Cascaded { element: ElementType::U32, rles: 2, deltas: 1, bitpack: true, auto: true },
    Cascaded { element: ElementType::I8, rles: 2, deltas: 1, bitpack: true, auto: false },
    Cascaded { element: ElementType::U16, rles: 4, deltas: 4, bitpack: true, auto: true },
    Cascaded { element: ElementType::I64, rles: 1, deltas: 2, bitpack: false, auto: false },
];

/// Bitcomp lossless at the defaults (bytes), and sparse or not at each other width.
pub const BITCOMP: [Bitcomp; 4] = [
    Bitcomp { element: ElementType::U8, sparse: false, error_bound: None },
    Bitcomp { element: ElementType::U16, sparse: true, error_bound: None },
    Bitcomp { element: ElementType::I32, sparse: false, error_bound: None },
    Bitcomp { element: ElementType::U64, sparse: true, error_bound: None },
];

/// Every new codec at every level (and wrapper, and Blosc, Cascaded and Bitcomp shape) it has.
pub fn all_options() -> Vec<Options> {
    let mut all = vec![Options::Snappy(Snappy::default()), Options::Snappy(Snappy { data_type: DataType::Int })];
    for level in 0..=5 {
        all.extend(WRAPPERS.map(|wrapper| Options::Deflate(Deflate { level, wrapper })));
        all.push(Options::GDeflate(GDeflate { level }));
    }
    all.extend(BLOSC.map(Options::Blosc));
    all.extend(Zstd::LEVELS.map(|level| Options::Zstd(Zstd { level })));
    all.extend(CASCADED.map(Options::Cascaded));
    all.extend(BITCOMP.map(Options::Bitcomp));
    all.extend(
        [AnsDataType::Bytes, AnsDataType::Float16, AnsDataType::Float32, AnsDataType::Float8]
            .map(|data_type| Options::Ans(Ans { data_type })),
    );
    all
}

/// Lossy Bitcomp over `f32` and, sparse, over `f64`.
pub fn lossy_bitcomp(bound: f32) -> [Bitcomp; 2] {
    let error_bound = ErrorBound::new(bound);
    [
        Bitcomp { element: ElementType::U32, sparse: false, error_bound },
        Bitcomp { element: ElementType::I64, sparse: true, error_bound },
    ]
}

/// Text, then random bytes, then a run: each block kind gets used.
pub fn mixed_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut data = text_bytes(n / 2, seed);
    data.extend(random_bytes(n / 4, seed + 1));
    data.resize(n, b'z');
    data
}

/// `data` compressed by flate2 at `level` in `wrapper`.
pub fn flate2_compress(data: &[u8], level: u32, wrapper: Wrapper) -> Vec<u8> {
    let level = Compression::new(level);
    match wrapper {
        Wrapper::Raw => {
            let mut encoder = DeflateEncoder::new(Vec::new(), level);
            encoder.write_all(data).unwrap();
            encoder.finish().unwrap()
        }
        Wrapper::Zlib => {
            let mut encoder = ZlibEncoder::new(Vec::new(), level);
            encoder.write_all(data).unwrap();
            encoder.finish().unwrap()
        }
        Wrapper::Gzip => {
            let mut encoder = GzEncoder::new(Vec::new(), level);
            encoder.write_all(data).unwrap();
            encoder.finish().unwrap()
        }
    }
}

pub fn buffer_codec(options: Options, bitstream: Bitstream, gpu: Option<Gpu>) -> BufferCodec {
    let config = Config { chunk_size: CHUNK, bitstream, checksum: ChecksumPolicy::ComputeAndVerifyIfPresent };
    BufferCodec::new(options, config, gpu).unwrap()
}

/// One chunk compressed on the CPU.
pub fn cpu_compress(codec: &dyn BatchCodec, chunk: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; codec.max_compressed_chunk_size(chunk.len())];
    let n = codec.compress_cpu(chunk, &mut out).unwrap();
    out.truncate(n);
    out
}

/// One chunk decompressed on the CPU into room for `capacity` bytes.
pub fn cpu_decompress(codec: &dyn BatchCodec, stream: &[u8], capacity: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity];
    let n = codec.decompress_cpu(stream, &mut out)?;
    out.truncate(n);
    Ok(out)
}

/// `bytes` of device scratch, allocated for one call.
pub fn scratch(gpu: &Gpu, bytes: usize) -> DeviceBuffer<u8> {
    gpu.alloc(bytes).unwrap()
}

/// Compresses `chunks` with the batched API on the GPU.
pub fn gpu_compress(gpu: &Gpu, codec: &dyn BatchCodec, chunks: &[&[u8]], stream: &Stream) -> Vec<Vec<u8>> {
    let inputs = DeviceChunks::upload(gpu, chunks);
    let bound = codec.max_compressed_chunk_size(chunks.iter().map(|c| c.len()).max().unwrap_or(0));
    let outputs = DeviceChunks::slots(gpu, &vec![bound; chunks.len()]);
    let (mut sizes, mut statuses) =
        (gpu.alloc::<usize>(chunks.len()).unwrap(), gpu.alloc::<u32>(chunks.len()).unwrap());
    let mut scratch = scratch(gpu, codec.compress_scratch_size(chunks.len(), CHUNK));
    let results = Results { sizes: sizes.view_mut(), statuses: statuses.view_mut() };
    let outs = outputs.addresses.view();
    unsafe { codec.compress_async(gpu, inputs.chunks(), outs, bound, scratch.view_mut(), results, stream) }.unwrap();
    stream.synchronize().unwrap();
    assert!(gpu.download(statuses.view()).unwrap().iter().all(|&s| s == Status::Success as u32));
    let sizes = gpu.download(sizes.view()).unwrap();
    sizes.iter().enumerate().map(|(i, &n)| outputs.download(gpu, i, n)).collect()
}

/// Decodes `streams` on the GPU into slices of one buffer with room `capacities`; checks the
/// first-failure word and the size kernel; returns each chunk's status and bytes.
pub fn gpu_decompress(
    gpu: &Gpu,
    codec: &dyn BatchCodec,
    streams: &[&[u8]],
    capacities: &[usize],
    stream: &Stream,
) -> Vec<(Status, Vec<u8>)> {
    let count = streams.len();
    let inputs = DeviceChunks::upload(gpu, streams);
    let outputs = DeviceChunks::slots(gpu, capacities);
    let (mut sizes, mut statuses) = (gpu.alloc::<usize>(count).unwrap(), gpu.alloc::<u32>(count).unwrap());
    let mut first_failure = gpu.upload(&[u32::MAX]).unwrap();
    let largest = capacities.iter().copied().max().unwrap_or(0).max(CHUNK);
    let mut scratch = scratch(gpu, codec.decompress_scratch_size(count, largest));
    let results = Results { sizes: sizes.view_mut(), statuses: statuses.view_mut() };
    let first = Some(first_failure.view_mut());
    // The outputs' largest told, as the buffer codec and the chunk list tell it.
    let told = outputs.chunks().with_largest(capacities.iter().copied().max().unwrap_or(0));
    unsafe { codec.decompress_async(gpu, inputs.chunks(), told, scratch.view_mut(), results, first, stream) }.unwrap();
    stream.synchronize().unwrap();
    let (sizes, statuses) = (gpu.download(sizes.view()).unwrap(), gpu.download(statuses.view()).unwrap());
    let first = gpu.download(first_failure.view()).unwrap()[0];
    assert_eq!(first, statuses.iter().position(|&s| s != 0).map_or(u32::MAX, |i| i as u32), "first failing chunk");

    let (mut probe_sizes, mut probe_statuses) = (gpu.alloc::<usize>(count).unwrap(), gpu.alloc::<u32>(count).unwrap());
    let results = Results { sizes: probe_sizes.view_mut(), statuses: probe_statuses.view_mut() };
    unsafe { codec.decompressed_sizes_async(gpu, inputs.chunks(), results, stream) }.unwrap();
    stream.synchronize().unwrap();
    let (probe_sizes, probe_statuses) =
        (gpu.download(probe_sizes.view()).unwrap(), gpu.download(probe_statuses.view()).unwrap());
    for (i, stream) in streams.iter().enumerate() {
        let expected = codec.decompressed_size_cpu(stream);
        let got = match Status::from_code(probe_statuses[i]) {
            Status::Success => Ok(probe_sizes[i]),
            status => Err(status),
        };
        assert_eq!(got, expected, "decompressed size of chunk {i}");
    }
    (0..count).map(|i| (Status::from_code(statuses[i]), outputs.download(gpu, i, sizes[i]))).collect()
}

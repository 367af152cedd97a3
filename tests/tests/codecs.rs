//! Snappy, Deflate (raw, zlib, gzip), GDeflate, Blosc, Zstd, Cascaded, Bitcomp and ANS through the batched API
//! and `BufferCodec`:
//! CPU round trips and interop with `flate2`, `snap`, c-blosc and libzstd everywhere; on the GPU, byte-exact agreement
//! with the CPU path, streams from the CPU libraries decoded in place, and a status per corrupt
//! chunk equal to the CPU decoder's. GPU tests say they skipped where there is no device.

use ferrocomp::{
    Ans, AnsDataType, BatchCodec, Bitcomp, Bitstream, Blosc, BufferCodec, Cascaded, ChecksumPolicy, Config, DataType,
    Deflate, DeviceBuffer, ElementType, Error, ErrorBound, GDeflate, Gpu, Options, Results, Shuffle, Snappy, Status,
    Stream, Wrapper, Zstd,
};
use ferrocomp_tests::{DeviceChunks, c_blosc, gpu, random_bytes, text_bytes};
use flate2::Compression;
use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
use std::io::Write;

const CHUNK: usize = 65536;
const WRAPPERS: [Wrapper; 3] = [Wrapper::Raw, Wrapper::Zlib, Wrapper::Gzip];

/// Blosc at element sizes that split into streams (up to 16), that do not (24), that leave a
/// partial element (3), with each shuffle.
const BLOSC: [Blosc; 6] = [
    Blosc { typesize: 1, shuffle: Shuffle::Byte },
    Blosc { typesize: 4, shuffle: Shuffle::Byte },
    Blosc { typesize: 4, shuffle: Shuffle::Bit },
    Blosc { typesize: 8, shuffle: Shuffle::None },
    Blosc { typesize: 3, shuffle: Shuffle::Byte },
    Blosc { typesize: 24, shuffle: Shuffle::Bit },
];

/// Cascaded at the defaults, at nvCOMP 4's exact layers, at the most layers, and unpacked, at each width.
const CASCADED: [Cascaded; 4] = [
    Cascaded { element: ElementType::U32, rles: 2, deltas: 1, bitpack: true, auto: true },
    Cascaded { element: ElementType::I8, rles: 2, deltas: 1, bitpack: true, auto: false },
    Cascaded { element: ElementType::U16, rles: 4, deltas: 4, bitpack: true, auto: true },
    Cascaded { element: ElementType::I64, rles: 1, deltas: 2, bitpack: false, auto: false },
];

/// Bitcomp lossless at the defaults (bytes), and sparse or not at each other width.
const BITCOMP: [Bitcomp; 4] = [
    Bitcomp { element: ElementType::U8, sparse: false, error_bound: None },
    Bitcomp { element: ElementType::U16, sparse: true, error_bound: None },
    Bitcomp { element: ElementType::I32, sparse: false, error_bound: None },
    Bitcomp { element: ElementType::U64, sparse: true, error_bound: None },
];

/// Every new codec at every level (and wrapper, and Blosc, Cascaded and Bitcomp shape) it has.
fn all_options() -> Vec<Options> {
    let mut all = vec![Options::Snappy(Snappy::default()), Options::Snappy(Snappy { data_type: DataType::Int })];
    for level in 0..=5 {
        all.extend(WRAPPERS.map(|wrapper| Options::Deflate(Deflate { level, wrapper })));
        all.push(Options::GDeflate(GDeflate { level }));
    }
    all.extend(BLOSC.map(Options::Blosc));
    all.extend(Zstd::LEVELS.map(|level| Options::Zstd(Zstd { level })));
    all.extend(CASCADED.map(Options::Cascaded));
    all.extend(BITCOMP.map(Options::Bitcomp));
    all.extend([AnsDataType::Bytes, AnsDataType::Float16].map(|data_type| Options::Ans(Ans { data_type })));
    all
}

/// Lossy Bitcomp over `f32` and, sparse, over `f64`.
fn lossy_bitcomp(bound: f32) -> [Bitcomp; 2] {
    let error_bound = ErrorBound::new(bound);
    [
        Bitcomp { element: ElementType::U32, sparse: false, error_bound },
        Bitcomp { element: ElementType::I64, sparse: true, error_bound },
    ]
}

/// A smooth field of `width`-byte floats with zeros, a NaN and an infinity.
fn float_field(count: usize, width: usize) -> Vec<u8> {
    (0..count)
        .flat_map(|k| {
            let value = match k % 5000 {
                17 => f64::NAN,
                18 => f64::INFINITY,
                100..400 => 0.0,
                _ => 280.0 + 20.0 * (k as f64 / 700.0).sin() + (k % 7) as f64 * 0.013,
            };
            if width == 4 { (value as f32).to_le_bytes().to_vec() } else { value.to_le_bytes().to_vec() }
        })
        .collect()
}

/// Whether every element of `decoded` is within `bound` of `original`'s (non-finite ones equal).
fn within_bound(original: &[u8], decoded: &[u8], width: usize, bound: f32) -> bool {
    let value = |b: &[u8]| {
        if width == 4 {
            f32::from_le_bytes(b.try_into().unwrap()) as f64
        } else {
            f64::from_le_bytes(b.try_into().unwrap())
        }
    };
    original.len() == decoded.len()
        && original.chunks(width).zip(decoded.chunks(width)).all(|(x, y)| {
            let (x, y) = (value(x), value(y));
            if x.is_finite() {
                (x - y).abs() <= bound as f64
            } else {
                x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan()
            }
        })
}

#[test]
fn ans_float16_codes_half_floats_and_takes_even_chunk_sizes() {
    let data: Vec<u8> =
        (0..100_000).flat_map(|k| half::f16::from_f32((k as f32 / 500.0).cos()).to_le_bytes()).collect();
    let options = Options::Ans(Ans { data_type: AnsDataType::Float16 });
    let codec = buffer_codec(options, Bitstream::Native, gpu());
    let compressed = codec.compress(&data).unwrap();
    // The high bytes (sign, exponent, two mantissa bits) coded, the low bytes stored.
    assert!(compressed.len() < data.len() * 85 / 100, "{}", compressed.len());
    assert_eq!(codec.decompress(&compressed).unwrap(), data);
    let odd =
        Config { chunk_size: CHUNK + 1, bitstream: Bitstream::Native, checksum: ChecksumPolicy::NoComputeNoVerify };
    assert!(
        matches!(BufferCodec::new(options, odd, None), Err(Error::InvalidArgument(m)) if m.contains("2-byte values"))
    );
}

#[test]
fn lossy_bitcomp_decodes_within_its_bound_on_the_cpu() {
    for bound in [1e-4, 0.01, 2.0] {
        for codec in lossy_bitcomp(bound) {
            let width = codec.element.width();
            let data = float_field(3 * CHUNK / width + 5, width);
            let native = buffer_codec(Options::Bitcomp(codec), Bitstream::Native, None);
            let compressed = native.compress(&data).unwrap();
            assert!(within_bound(&data, &native.decompress(&compressed).unwrap(), width, bound), "{codec:?}");
            assert!(compressed.len() < data.len() / 2, "{codec:?}: {} bytes", compressed.len());
        }
    }
}

#[test]
fn gpu_lossy_bitcomp_writes_the_cpu_bytes_and_decodes_within_its_bound() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    for codec in lossy_bitcomp(0.001) {
        let width = codec.element.width();
        let data = float_field(4 * CHUNK / width, width);
        let pieces: Vec<&[u8]> = vec![&data[..0], &data[..width], &data[..1000 * width], &data[CHUNK..3 * CHUNK]];
        let on_gpu = gpu_compress(&gpu, &codec, &pieces, &stream);
        for (piece, ours) in pieces.iter().zip(&on_gpu) {
            assert_eq!(*ours, cpu_compress(&codec, piece), "{codec:?}, {} bytes", piece.len());
        }
        let streams: Vec<&[u8]> = on_gpu.iter().map(Vec::as_slice).collect();
        let capacities: Vec<usize> = pieces.iter().map(|p| p.len()).collect();
        for (i, (status, bytes)) in gpu_decompress(&gpu, &codec, &streams, &capacities, &stream).into_iter().enumerate()
        {
            assert_eq!(status, Status::Success, "{codec:?}");
            assert_eq!(bytes, cpu_decompress(&codec, streams[i], capacities[i]).unwrap(), "{codec:?}");
            assert!(within_bound(pieces[i], &bytes, width, 0.001), "{codec:?} chunk {i}");
        }
    }
}

/// Text, then random bytes, then a run: each block kind gets used.
fn mixed_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut data = text_bytes(n / 2, seed);
    data.extend(random_bytes(n / 4, seed + 1));
    data.resize(n, b'z');
    data
}

/// `data` compressed by flate2 at `level` in `wrapper`.
fn flate2_compress(data: &[u8], level: u32, wrapper: Wrapper) -> Vec<u8> {
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

/// `stream` inflated by flate2 as `wrapper`.
fn flate2_decompress(stream: &[u8], wrapper: Wrapper) -> Vec<u8> {
    let mut out = Vec::new();
    match wrapper {
        Wrapper::Raw => flate2::write::DeflateDecoder::new(&mut out).write_all(stream).unwrap(),
        Wrapper::Zlib => flate2::write::ZlibDecoder::new(&mut out).write_all(stream).unwrap(),
        Wrapper::Gzip => flate2::write::GzDecoder::new(&mut out).write_all(stream).unwrap(),
    }
    out
}

fn buffer_codec(options: Options, bitstream: Bitstream, gpu: Option<Gpu>) -> BufferCodec {
    let config = Config { chunk_size: CHUNK, bitstream, checksum: ChecksumPolicy::ComputeAndVerifyIfPresent };
    BufferCodec::new(options, config, gpu).unwrap()
}

/// One chunk compressed on the CPU.
fn cpu_compress(codec: &dyn BatchCodec, chunk: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; codec.max_compressed_chunk_size(chunk.len())];
    let n = codec.compress_cpu(chunk, &mut out).unwrap();
    out.truncate(n);
    out
}

/// One chunk decompressed on the CPU into room for `capacity` bytes.
fn cpu_decompress(codec: &dyn BatchCodec, stream: &[u8], capacity: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity];
    let n = codec.decompress_cpu(stream, &mut out)?;
    out.truncate(n);
    Ok(out)
}

#[test]
fn cpu_round_trips_every_codec_level_and_bitstream() {
    let data = mixed_bytes(5 * CHUNK + 123, 1);
    for options in all_options() {
        let native = buffer_codec(options, Bitstream::Native, None);
        let compressed = native.compress(&data).unwrap();
        assert_eq!(native.decompress(&compressed).unwrap(), data, "{options:?}");
        // A native stream names its codec: a codec built for LZ4 decodes it too.
        assert_eq!(buffer_codec(Options::default(), Bitstream::Native, None).decompress(&compressed).unwrap(), data);
        for bitstream in [Bitstream::Raw, Bitstream::WithUncompressedSize] {
            let single = buffer_codec(options, bitstream, None);
            for piece in [&data[..0], &data[..1], &data[..CHUNK]] {
                assert_eq!(single.decompress(&single.compress(piece).unwrap()).unwrap(), piece, "{options:?}");
            }
        }
    }
}

#[test]
fn deflate_chunks_open_with_flate2_and_flate2_streams_decode() {
    let data = text_bytes(CHUNK, 2);
    for wrapper in WRAPPERS {
        for level in 0..=5 {
            let codec = Deflate { level, wrapper };
            assert_eq!(flate2_decompress(&cpu_compress(&codec, &data), wrapper), data, "{codec:?}");
        }
        let big = mixed_bytes(3 << 20, 3);
        for level in [0, 1, 6, 9] {
            let stream = flate2_compress(&big, level, wrapper);
            let codec = Deflate { level: 1, wrapper };
            assert_eq!(codec.decompressed_size_cpu(&stream), Ok(big.len()), "{wrapper:?} level {level}");
            assert_eq!(cpu_decompress(&codec, &stream, big.len()).unwrap(), big, "{wrapper:?} level {level}");
        }
    }
}

#[test]
fn snappy_chunks_open_with_snap_and_snap_streams_decode() {
    let data = mixed_bytes(3 << 20, 4);
    let ours = cpu_compress(&Snappy::default(), &data);
    assert_eq!(snap::raw::Decoder::new().decompress_vec(&ours).unwrap(), data);
    let theirs = snap::raw::Encoder::new().compress_vec(&data).unwrap();
    assert_eq!(Snappy::default().decompressed_size_cpu(&theirs), Ok(data.len()));
    assert_eq!(cpu_decompress(&Snappy::default(), &theirs, data.len()).unwrap(), data);
}

#[test]
fn wrong_trailers_and_corrupt_chunks_name_the_chunk() {
    let data = text_bytes(3 * CHUNK, 5);
    for wrapper in [Wrapper::Zlib, Wrapper::Gzip] {
        // No container CRC-32s, so the stream's own trailer is what catches the damage.
        let config =
            Config { chunk_size: CHUNK, bitstream: Bitstream::Native, checksum: ChecksumPolicy::NoComputeNoVerify };
        let codec = BufferCodec::new(Options::Deflate(Deflate { level: 1, wrapper }), config, None).unwrap();
        let mut compressed = codec.compress(&data).unwrap();
        // The last byte of the stream is the last byte of chunk 2's trailer.
        *compressed.last_mut().unwrap() ^= 1;
        match codec.decompress(&compressed) {
            Err(Error::Chunk { chunk: 2, status: Status::BadChecksum }) => {}
            other => panic!("{wrapper:?}: {other:?}"),
        }
    }
}

/// `bytes` of device scratch, allocated for one call.
fn scratch(gpu: &Gpu, bytes: usize) -> DeviceBuffer<u8> {
    gpu.alloc(bytes).unwrap()
}

/// Compresses `chunks` with the batched API on the GPU.
fn gpu_compress(gpu: &Gpu, codec: &dyn BatchCodec, chunks: &[&[u8]], stream: &Stream) -> Vec<Vec<u8>> {
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
fn gpu_decompress(
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
    unsafe {
        codec.decompress_async(gpu, inputs.chunks(), outputs.chunks(), scratch.view_mut(), results, first, stream)
    }
    .unwrap();
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

#[test]
fn gpu_writes_the_cpu_bytes_and_reads_them_back() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = mixed_bytes(4 * CHUNK, 6);
    let pieces: Vec<&[u8]> = vec![&data[..0], &data[..1], &data[..1000], &data[..CHUNK], &data[CHUNK..3 * CHUNK / 2]];
    for options in all_options() {
        let codec = options.codec();
        let on_gpu = gpu_compress(&gpu, codec, &pieces, &stream);
        for (piece, ours) in pieces.iter().zip(&on_gpu) {
            assert_eq!(*ours, cpu_compress(codec, piece), "{options:?}, {} bytes", piece.len());
        }
        let streams: Vec<&[u8]> = on_gpu.iter().map(Vec::as_slice).collect();
        let capacities: Vec<usize> = pieces.iter().map(|p| p.len()).collect();
        for (i, (status, bytes)) in gpu_decompress(&gpu, codec, &streams, &capacities, &stream).into_iter().enumerate()
        {
            assert_eq!((status, bytes.as_slice()), (Status::Success, pieces[i]), "{options:?}");
        }
    }
}

#[test]
fn gpu_decodes_streams_from_the_cpu_libraries() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = mixed_bytes(2 << 20, 7);
    for wrapper in WRAPPERS {
        let streams: Vec<Vec<u8>> = [0, 1, 6, 9].map(|level| flate2_compress(&data, level, wrapper)).to_vec();
        let refs: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
        let codec = Deflate { level: 1, wrapper };
        for (status, bytes) in gpu_decompress(&gpu, &codec, &refs, &[data.len(); 4], &stream) {
            assert_eq!(status, Status::Success, "{wrapper:?}");
            assert!(bytes == data, "{wrapper:?}");
        }
    }
    let theirs = snap::raw::Encoder::new().compress_vec(&data).unwrap();
    let decoded = gpu_decompress(&gpu, &Snappy::default(), &[&theirs], &[data.len()], &stream);
    assert!(decoded[0].0 == Status::Success && decoded[0].1 == data);
}

#[test]
fn gpu_decodes_c_blosc_chunks_of_every_compressor_shuffle_and_size() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = mixed_bytes(3 << 20, 9);
    let mut chunks = Vec::new();
    for compressor in ["lz4", "lz4hc", "blosclz", "zlib", "snappy", "zstd"] {
        for (typesize, shuffle) in [(4, Shuffle::Byte), (8, Shuffle::Bit), (2, Shuffle::None), (24, Shuffle::Byte)] {
            for len in [0, 100, 70_000, data.len()] {
                chunks.push((c_blosc::compress(&data[..len], typesize, shuffle, compressor, 5, 0), len));
            }
        }
    }
    let streams: Vec<&[u8]> = chunks.iter().map(|(chunk, _)| chunk.as_slice()).collect();
    let capacities: Vec<usize> = chunks.iter().map(|&(_, len)| len).collect();
    let decoded = gpu_decompress(&gpu, &Blosc::default(), &streams, &capacities, &stream);
    for (i, (status, bytes)) in decoded.into_iter().enumerate() {
        assert_eq!(status, Status::Success, "c-blosc chunk {i}");
        assert!(bytes == data[..capacities[i]], "c-blosc chunk {i}");
    }
}

#[test]
fn gpu_blosc_keeps_a_chunk_exactly_as_long_as_a_memcpyed_one_laid_out() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let codec = Blosc { typesize: 4, shuffle: Shuffle::Byte };
    // Random bytes after a run of zeros: some run length makes the laid-out chunk exactly the
    // memcpyed size (n + 16) without the memcpyed flag.
    let random = random_bytes(CHUNK, 21);
    let chunk = (0..CHUNK)
        .map(|zeros| [vec![0u8; zeros], random[zeros..].to_vec()].concat())
        .find(|data| {
            let ours = cpu_compress(&codec, data);
            ours.len() == data.len() + 16 && ours[2] & 2 == 0
        })
        .expect("a chunk that lays out to the memcpyed size");
    let on_gpu = gpu_compress(&gpu, &codec, &[&chunk], &stream);
    assert!(on_gpu[0] == cpu_compress(&codec, &chunk), "the GPU wrote other bytes than the CPU");
    let decoded = gpu_decompress(&gpu, &codec, &[&on_gpu[0]], &[CHUNK], &stream);
    assert!(decoded[0].0 == Status::Success && decoded[0].1 == chunk);
}

#[test]
fn gpu_blosc_fails_a_shuffled_chunk_its_scratch_has_no_room_for_and_decodes_the_rest() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = mixed_bytes(16 * CHUNK, 22);
    let shuffled = Blosc { typesize: 4, shuffle: Shuffle::Byte };
    let plain = Blosc { typesize: 4, shuffle: Shuffle::None };
    let (small, large) = (&data[..CHUNK], &data[..]);
    let chunks = [cpu_compress(&shuffled, small), cpu_compress(&shuffled, large), cpu_compress(&plain, large)];
    let streams: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
    let inputs = DeviceChunks::upload(&gpu, &streams);
    let outputs = DeviceChunks::slots(&gpu, &[large.len(); 3]);
    let (mut sizes, mut statuses) = (gpu.alloc::<usize>(3).unwrap(), gpu.alloc::<u32>(3).unwrap());
    // Scratch for chunks of CHUNK bytes: the unshuffle has no room to stage the large one.
    let mut scratch = scratch(&gpu, shuffled.decompress_scratch_size(3, CHUNK));
    let results = Results { sizes: sizes.view_mut(), statuses: statuses.view_mut() };
    unsafe {
        shuffled.decompress_async(&gpu, inputs.chunks(), outputs.chunks(), scratch.view_mut(), results, None, &stream)
    }
    .unwrap();
    stream.synchronize().unwrap();
    let statuses: Vec<Status> = gpu.download(statuses.view()).unwrap().into_iter().map(Status::from_code).collect();
    assert_eq!(statuses, [Status::Success, Status::ChunkTooLarge, Status::Success]);
    let sizes = gpu.download(sizes.view()).unwrap();
    assert_eq!(sizes, [small.len(), 0, large.len()]);
    assert!(outputs.download(&gpu, 0, sizes[0]) == small && outputs.download(&gpu, 2, sizes[2]) == large);
}

/// Zstd on the GPU writes the CPU's frames at every level for chunks of a whole number of words,
/// the last ending where its buffer ends: under memcheck (`scripts/gpu-check.sh`), the search's
/// loads near a chunk's end stay inside it.
#[test]
fn zstd_chunks_ending_at_their_buffer_compress_as_on_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = text_bytes(3 * 16384, 12);
    let pieces: Vec<&[u8]> = data.chunks(16384).collect();
    for level in Zstd::LEVELS {
        let codec = Zstd { level };
        let frames = gpu_compress(&gpu, &codec, &pieces, &stream);
        for (i, (piece, frame)) in pieces.iter().zip(&frames).enumerate() {
            assert!(*frame == cpu_compress(&codec, piece), "level {level}, chunk {i}: the GPU wrote other bytes");
        }
    }
}

#[test]
fn corrupt_chunks_get_the_cpu_decoders_status_and_the_rest_decode() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = text_bytes(8 * CHUNK, 8);
    let pieces: Vec<&[u8]> = data.chunks(CHUNK).collect();
    for options in [
        Options::Snappy(Snappy::default()),
        Options::Deflate(Deflate { level: 1, wrapper: Wrapper::Raw }),
        Options::Deflate(Deflate { level: 4, wrapper: Wrapper::Zlib }),
        Options::Deflate(Deflate { level: 1, wrapper: Wrapper::Gzip }),
        Options::GDeflate(GDeflate { level: 1 }),
        Options::Blosc(BLOSC[1]),
        Options::Blosc(BLOSC[2]),
        Options::Zstd(Zstd { level: 1 }),
        Options::Zstd(Zstd { level: 2 }),
        Options::Cascaded(CASCADED[0]),
        Options::Cascaded(CASCADED[3]),
        Options::Bitcomp(BITCOMP[0]),
        Options::Bitcomp(BITCOMP[1]),
        Options::Bitcomp(lossy_bitcomp(0.01)[1]),
        Options::Ans(Ans { data_type: AnsDataType::Bytes }),
        Options::Ans(Ans { data_type: AnsDataType::Float16 }),
    ] {
        let codec = options.codec();
        let mut streams: Vec<Vec<u8>> = pieces.iter().map(|p| cpu_compress(codec, p)).collect();
        let half = streams[1].len() / 2;
        streams[1].truncate(half); // truncated
        streams[2].iter_mut().skip(40).step_by(97).for_each(|b| *b ^= 0x5A); // bit flips
        let last = streams[3].len() - 1;
        streams[3][last] ^= 0x80; // trailer or last symbols
        streams[4] = random_bytes(5000, 9); // garbage
        let mut capacities = vec![CHUNK; pieces.len()];
        capacities[5] = CHUNK - 1; // one byte too small
        let refs: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
        let decoded = gpu_decompress(&gpu, codec, &refs, &capacities, &stream);
        for (i, (status, bytes)) in decoded.into_iter().enumerate() {
            let expected = cpu_decompress(codec, refs[i], capacities[i]);
            assert_eq!(status, expected.as_ref().err().copied().unwrap_or(Status::Success), "{options:?} chunk {i}");
            if let Ok(expected) = expected {
                assert!(bytes == expected, "{options:?} chunk {i}");
            }
        }
        assert_ne!(cpu_decompress(codec, refs[1], CHUNK).err(), None, "{options:?}: truncation must fail");
        assert_eq!(cpu_decompress(codec, refs[5], CHUNK - 1).err(), Some(Status::OutputTooSmall), "{options:?}");
    }
}

#[test]
fn gpu_buffer_codec_round_trips_every_codec() {
    let Some(gpu) = gpu() else { return };
    let data = mixed_bytes(5 * CHUNK + 77, 10);
    for options in all_options() {
        let on_gpu = buffer_codec(options, Bitstream::Native, Some(gpu.clone()));
        let compressed = on_gpu.compress(&data).unwrap();
        assert_eq!(compressed, buffer_codec(options, Bitstream::Native, None).compress(&data).unwrap());
        assert_eq!(on_gpu.decompress(&compressed).unwrap(), data, "{options:?}");
    }
}

/// `data` compressed by libzstd at `level` with the frame options named: a content checksum, the
/// content size in the header, long-distance matching (with a 16 MiB window).
fn libzstd_compress(data: &[u8], level: i32, checksum: bool, content_size: bool, long: bool) -> Vec<u8> {
    use zstd::zstd_safe::CParameter;
    let mut compressor = zstd::bulk::Compressor::new(level).unwrap();
    compressor.set_parameter(CParameter::ChecksumFlag(checksum)).unwrap();
    compressor.set_parameter(CParameter::ContentSizeFlag(content_size)).unwrap();
    if long {
        compressor.set_parameter(CParameter::EnableLongDistanceMatching(true)).unwrap();
        compressor.set_parameter(CParameter::WindowLog(24)).unwrap();
    }
    compressor.compress(data).unwrap()
}

/// A skippable frame (magic 0x184D2A5?) of `len` bytes of user data.
fn skippable_frame(nibble: u8, len: usize) -> Vec<u8> {
    let mut frame = (0x184D_2A50u32 | nibble as u32).to_le_bytes().to_vec();
    frame.extend((len as u32).to_le_bytes());
    frame.extend(random_bytes(len, 3));
    frame
}

/// libzstd's frames of every kind the issue names, each with the bytes it decodes to: levels 1, 3,
/// 9, 19 and -5, with and without checksum and content size, long-distance matching, several
/// frames and skippable frames in one chunk, an empty frame.
fn libzstd_frames(data: &[u8]) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let mut frames = Vec::new();
    for level in [1, 3, 9, 19, -5] {
        for (checksum, content_size) in [(false, true), (true, true), (true, false), (false, false)] {
            let frame = libzstd_compress(data, level, checksum, content_size, false);
            frames.push((format!("level {level} checksum {checksum} size {content_size}"), frame, data.to_vec()));
        }
    }
    let long = [data, &text_bytes(data.len(), 77), data].concat();
    frames.push(("long-distance matching".into(), libzstd_compress(&long, 3, true, true, true), long));
    let (a, b) = data.split_at(data.len() / 3);
    let several = [
        skippable_frame(0, 10),
        libzstd_compress(a, 3, true, true, false),
        skippable_frame(15, 0),
        libzstd_compress(b, -1, false, false, false),
        libzstd_compress(&[], 1, false, true, false),
    ]
    .concat();
    frames.push(("several frames and skippable ones".into(), several, data.to_vec()));
    frames.push(("empty frame".into(), libzstd_compress(&[], 3, true, true, false), Vec::new()));
    frames
}

/// A frame naming dictionary 7 (a raw block of `data` after its header): decoding needs the dictionary.
fn frame_with_dictionary(data: &[u8]) -> Vec<u8> {
    assert!(data.len() < 256);
    // Single segment, a 1-byte dictionary id, a 1-byte content size; then one last raw block.
    let mut frame = vec![0x28, 0xB5, 0x2F, 0xFD, 0x21, 7, data.len() as u8];
    frame.extend(&((data.len() as u32) << 3 | 1).to_le_bytes()[..3]);
    frame.extend(data);
    frame
}

#[test]
fn zstd_chunks_open_with_libzstd_and_libzstd_frames_decode() {
    let data = mixed_bytes(3 * CHUNK + 5, 11);
    for level in Zstd::LEVELS {
        let codec = Zstd { level };
        for piece in [&data[..0], &data[..1], &data[..1000], &data[..CHUNK], &data[..]] {
            let ours = cpu_compress(&codec, piece);
            assert!(zstd::bulk::decompress(&ours, piece.len()).unwrap() == piece, "level {level}");
        }
    }
    for (what, frame, expected) in libzstd_frames(&data) {
        let codec = Zstd::default();
        assert_eq!(codec.decompressed_size_cpu(&frame), Ok(expected.len()), "{what}");
        assert!(cpu_decompress(&codec, &frame, expected.len()).unwrap() == expected, "{what}");
    }
    let codec = Zstd::default();
    assert_eq!(cpu_decompress(&codec, &frame_with_dictionary(b"abc"), 3), Err(Status::DictionaryRequired));
    let mut checked = libzstd_compress(&data, 3, true, true, false);
    let last = checked.len() - 1;
    checked[last] ^= 1;
    assert_eq!(cpu_decompress(&codec, &checked, data.len()), Err(Status::BadChecksum));
}

#[test]
fn gpu_decodes_libzstd_frames_of_every_kind() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = mixed_bytes(3 * CHUNK + 5, 12);
    let mut frames = libzstd_frames(&data);
    let big = mixed_bytes(16 << 20, 13);
    frames.push(("16 MiB chunk".into(), libzstd_compress(&big, 3, true, true, false), big));
    frames.push(("dictionary".into(), frame_with_dictionary(b"abc"), Vec::new()));
    let mut checked = libzstd_compress(&data, 3, true, true, false);
    let last = checked.len() - 1;
    checked[last] ^= 1;
    frames.push(("wrong checksum".into(), checked, Vec::new()));
    let streams: Vec<&[u8]> = frames.iter().map(|(_, frame, _)| frame.as_slice()).collect();
    let capacities: Vec<usize> = frames.iter().map(|(_, _, expected)| expected.len().max(data.len())).collect();
    let codec = Zstd::default();
    let decoded = gpu_decompress(&gpu, &codec, &streams, &capacities, &stream);
    for (i, ((what, _, expected), (status, bytes))) in frames.iter().zip(decoded).enumerate() {
        match what.as_str() {
            "dictionary" => assert_eq!(status, Status::DictionaryRequired),
            "wrong checksum" => assert_eq!(status, Status::BadChecksum),
            _ => assert!((status, bytes.as_slice()) == (Status::Success, expected.as_slice()), "{what}: {status:?}"),
        }
        let on_cpu = cpu_decompress(&codec, streams[i], capacities[i]).err().unwrap_or(Status::Success);
        assert_eq!(status, on_cpu, "{what}: the CPU decoder's status");
    }
}

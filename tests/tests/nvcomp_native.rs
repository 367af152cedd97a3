//! nvCOMP 6's native streams, as its Python `Codec.encode` wrote them on an H100
//! (`tests/data/nvcomp6`, from `scripts/nvcomp_native_streams.py`): decoded on the CPU and the
//! GPU with their checksums verified; damaged and lying ones refused; nvCOMP's own Cascaded,
//! Bitcomp and ANS refused with a reason.

use ferrocomp::container::NVCOMP_VERSION;
use ferrocomp::{
    Bitstream, BufferCodec, ChecksumPart, ChecksumPolicy, ChunkListCodec, Config, Error, Gpu, NVCOMP_MAGIC, Options,
    Zstd, describe, is_nvcomp,
};
use ferrocomp_format::crc32::nvcomp_header_crc;
use ferrocomp_tests::{damaged_copies, gpu};
use std::path::{Path, PathBuf};

/// A stream from the test data and the bytes it holds.
struct Stream {
    name: String,
    bytes: Vec<u8>,
    expected: Vec<u8>,
    checksums: bool,
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/nvcomp6")
}

/// Every stream of the five standard codecs (`ALGORITHM-SIZE-CHUNK-POLICY.nvcomp`, or
/// `-uint32` for 70,000 bytes encoded as 32-bit values), with the input it was written from.
fn streams() -> Vec<Stream> {
    let mut streams: Vec<Stream> = std::fs::read_dir(data_dir())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "nvcomp"))
        .filter_map(|path| {
            let name = path.file_stem().unwrap().to_str().unwrap().to_string();
            let fields: Vec<&str> = name.split('-').collect();
            if !["lz4", "snappy", "deflate", "gdeflate", "zstd"].contains(&fields[0]) {
                return None;
            }
            let expected = std::fs::read(data_dir().join(format!("text-{}.raw", fields[1]))).unwrap();
            let checksums = name.ends_with("compute_and_verify");
            Some(Stream { bytes: std::fs::read(&path).unwrap(), expected, checksums, name })
        })
        .collect();
    streams.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(streams.len(), 72, "the test data's streams");
    streams
}

fn stream(name: &str) -> Stream {
    streams().into_iter().find(|s| s.name == name).unwrap()
}

/// A codec of `options` (which the stream's header overrides) with `checksum`, on `gpu`.
fn codec(options: Options, checksum: ChecksumPolicy, gpu: Option<Gpu>) -> BufferCodec {
    BufferCodec::new(options, Config { checksum, ..Config::default() }, gpu).unwrap()
}

#[test]
fn every_stream_decodes_on_the_cpu_its_checksums_verified() {
    for stream in streams() {
        assert!(is_nvcomp(&stream.bytes) && stream.bytes[..4] == NVCOMP_MAGIC, "{}", stream.name);
        // The header names the algorithm, whatever the codec's own.
        for options in [Options::default(), Options::Zstd(Zstd::default())] {
            let policy = if stream.checksums {
                ChecksumPolicy::ComputeAndVerify
            } else {
                ChecksumPolicy::ComputeAndVerifyIfPresent
            };
            let codec = codec(options, policy, None);
            assert_eq!(codec.decompressed_size(&stream.bytes).unwrap(), stream.expected.len(), "{}", stream.name);
            assert_eq!(codec.decompress(&stream.bytes).unwrap(), stream.expected, "{}", stream.name);
        }
    }
}

#[test]
fn a_stream_without_checksums_fails_a_policy_that_requires_them() {
    let stream = stream("lz4-70000-65536-no_compute_no_verify");
    let error = codec(Options::default(), ChecksumPolicy::ComputeAndVerify, None).decompress(&stream.bytes);
    assert!(matches!(error, Err(Error::ChecksumMissing(_))), "{error:?}");
}

/// Where an nvCOMP 6 LZ4 stream's chunk table starts: after the 56-byte header and the 12 bytes
/// of LZ4's options, at a multiple of 8.
const LZ4_TABLE: usize = 72;

/// Where an nvCOMP 6 stream's chunks start (the header's `comp_data_offset`).
fn data_offset(bytes: &[u8]) -> usize {
    u32::from_le_bytes(bytes[40..44].try_into().unwrap()) as usize
}

#[test]
fn checksums_name_the_chunk_and_part_that_changed() {
    let stream = stream("lz4-70000-4096-compute_and_verify");
    let (count, table, data) = (18, LZ4_TABLE, data_offset(&stream.bytes));
    let verifying = codec(Options::default(), ChecksumPolicy::NoComputeAndVerifyIfPresent, None);

    // A byte of chunk 5's compressed bytes: its compressed checksum.
    let offset = |i: usize| u64::from_le_bytes(stream.bytes[table + 8 * i..][..8].try_into().unwrap()) as usize;
    let mut changed = stream.bytes.clone();
    changed[data + offset(5) + 7] ^= 0x20;
    match verifying.decompress(&changed) {
        Err(Error::ChecksumMismatch { chunk: 5, part: ChecksumPart::Compressed, .. }) => {}
        other => panic!("{other:?}"),
    }
    // Chunk 3's stored uncompressed checksum, the header's own checksum made to agree.
    let mut changed = stream.bytes.clone();
    let at = table + 20 * count + 4 * 3;
    changed[at] ^= 1;
    changed[48..52].fill(0);
    let header_crc = nvcomp_header_crc(&changed[..table + 24 * count]);
    changed[48..52].copy_from_slice(&header_crc.to_le_bytes());
    match verifying.decompress(&changed) {
        Err(Error::ChecksumMismatch { chunk: 3, part: ChecksumPart::Uncompressed, .. }) => {}
        other => panic!("{other:?}"),
    }
    // Without verifying, the same stream decodes.
    let trusting = codec(Options::default(), ChecksumPolicy::NoComputeNoVerify, None);
    assert_eq!(trusting.decompress(&changed).unwrap(), stream.expected);
    // The table itself is covered by the header's checksum, whatever the policy.
    let mut changed = stream.bytes.clone();
    changed[table + 8 * count + 8] ^= 1; // chunk 1's size
    let error = trusting.decompress(&changed).unwrap_err().to_string();
    assert!(error.contains("header checksum"), "{error}");
}

#[test]
fn lying_and_truncated_headers_are_refused_before_anything_is_sized() {
    let stream = stream("zstd-70000-65536-no_compute_no_verify");
    let codec = codec(Options::default(), ChecksumPolicy::NoComputeNoVerify, None);
    let refused = |bytes: &[u8], says: &str| {
        let error = codec.decompress(bytes).unwrap_err().to_string();
        assert!(error.contains(says), "{error} (expected: {says})");
    };
    let with = |at: usize, value: &[u8]| {
        let mut bytes = stream.bytes.clone();
        bytes[at..at + value.len()].copy_from_slice(value);
        bytes
    };
    refused(&stream.bytes[..stream.bytes.len() - 1], "the stream has");
    refused(&stream.bytes[..40], "do not start an nvCOMP 6 header");
    refused(&with(24, &u64::MAX.to_le_bytes()), "chunks cannot hold");
    refused(&with(16, &(1u64 << 40).to_le_bytes()), "chunks cannot hold");
    refused(&with(32, &0u64.to_le_bytes()), "chunk size 0");
    refused(&with(32, &(1u64 << 40).to_le_bytes()), "chunk size");
    refused(&with(40, &u32::MAX.to_le_bytes()), "the stream has");
    refused(&with(4, &[5]), "native version 5.0");
    refused(&with(0, &0x5291_1326u32.to_le_bytes()), "nvCOMP 5.3 or older");
    refused(&with(52, &[0]), "offsets are not stored");
    refused(&with(6, &[9]), "unknown format id 9");
    // The second chunk's offset past the data, then before the first chunk's end.
    refused(&with(72, &u64::MAX.to_le_bytes()), "ends past the chunks");
    refused(&with(64 + 8, &1u64.to_le_bytes()), "overlaps");
    // Every byte of the header and table changed, and the chunks damaged: an error or the
    // data, never a panic.
    for at in 0..104 {
        for value in [0u8, 1, 0x7F, 0xFF] {
            if let Ok(data) = codec.decompress(&with(at, &[value])) {
                assert_eq!(data.len(), 70000);
            }
        }
    }
    for damaged in damaged_copies(&stream.bytes, 300, 5) {
        let _ = codec.decompress(&damaged);
    }
}

#[test]
fn nvcomps_own_formats_are_refused_with_the_reason() {
    for (file, name) in [
        ("cascaded-1000-4096-compute_and_verify", "Cascaded"),
        ("bitcomp-1000-65536-no_compute_no_verify", "Bitcomp"),
        ("ans-1000-65536-no_compute_no_verify", "ANS"),
    ] {
        let bytes = std::fs::read(data_dir().join(format!("{file}.nvcomp"))).unwrap();
        let error = codec(Options::default(), ChecksumPolicy::NoComputeNoVerify, None).decompress(&bytes).unwrap_err();
        let said = error.to_string();
        assert!(
            said.contains(&format!("nvCOMP's own {name} layout")) && said.contains("decode it with nvCOMP"),
            "{said}"
        );
    }
}

#[test]
fn every_stream_decodes_on_the_gpu_its_checksums_verified() {
    let Some(gpu) = gpu() else { return };
    let device_stream = gpu.stream().unwrap();
    for stream in streams() {
        let policy =
            if stream.checksums { ChecksumPolicy::ComputeAndVerify } else { ChecksumPolicy::NoComputeNoVerify };
        let codec = codec(Options::default(), policy, Some(gpu.clone()));
        // Host bytes, through the pipeline.
        assert_eq!(codec.decompress(&stream.bytes).unwrap(), stream.expected, "{}", stream.name);
        // Device bytes.
        let compressed = gpu.upload(&stream.bytes).unwrap();
        let decoded = codec.decompress_device(compressed.view(), &device_stream).unwrap();
        assert_eq!(gpu.download(decoded.view()).unwrap(), stream.expected, "{} on the device", stream.name);
    }
    // A changed chunk is caught on the GPU path too.
    let stream = stream("snappy-70000-4096-compute_and_verify");
    let data = data_offset(&stream.bytes);
    let mut changed = stream.bytes.clone();
    changed[data + 3] ^= 0x40;
    let codec = codec(Options::default(), ChecksumPolicy::ComputeAndVerify, Some(gpu.clone()));
    let compressed = gpu.upload(&changed).unwrap();
    match codec.decompress_device(compressed.view(), &device_stream) {
        Err(Error::ChecksumMismatch { chunk: 0, part: ChecksumPart::Compressed, .. }) => {}
        other => panic!("{:?}", other.err()),
    }
}

/// One of nvCOMP's single-chunk bitstreams, its codec's and the input it holds.
struct SingleChunk {
    name: String,
    bitstream: Bitstream,
    options: Options,
    bytes: Vec<u8>,
    expected: Vec<u8>,
}

/// nvCOMP's single-chunk bitstreams of the five standard codecs: `ALGORITHM-with-size-SIZE.bin`
/// (its 16-byte size prefix, then the block) and `ALGORITHM-raw-100000.bin` (Deflate's and
/// GDeflate's a stream past 64 KiB).
fn single_chunk_streams() -> Vec<SingleChunk> {
    let mut streams = Vec::new();
    for algorithm in ["lz4", "snappy", "deflate", "gdeflate", "zstd"] {
        let options = match algorithm {
            "lz4" => Options::Lz4(Default::default()),
            "snappy" => Options::Snappy(Default::default()),
            "deflate" => Options::Deflate(Default::default()),
            "gdeflate" => Options::GDeflate(Default::default()),
            _ => Options::Zstd(Default::default()),
        };
        for (kind, bitstream, size) in [
            ("with-size", Bitstream::WithUncompressedSize, 1),
            ("with-size", Bitstream::WithUncompressedSize, 1000),
            ("raw", Bitstream::Raw, 100_000),
        ] {
            let name = format!("{algorithm}-{kind}-{size}");
            let bytes = std::fs::read(data_dir().join(format!("{name}.bin"))).unwrap();
            let expected = std::fs::read(data_dir().join(format!("text-{size}.raw"))).unwrap();
            streams.push(SingleChunk { name, bitstream, options, bytes, expected });
        }
    }
    streams
}

#[test]
fn single_chunk_streams_decode_on_the_cpu_and_the_gpu() {
    // The CPU, and the GPU where there is one.
    let backends: Vec<Option<Gpu>> = std::iter::once(None).chain(gpu().map(Some)).collect();
    for SingleChunk { name, bitstream, options, bytes, expected } in single_chunk_streams() {
        let config = Config { bitstream, ..Config::default() };
        for on in &backends {
            let codec = BufferCodec::new(options, config, on.clone()).unwrap();
            assert_eq!(codec.decompress(&bytes).unwrap(), expected, "{name}, GPU {}", on.is_some());
            let batch = ChunkListCodec::new(options, bitstream, on.clone()).unwrap();
            let mut out = vec![0; expected.len()];
            let decoded = match on {
                None => batch.decompress_cpu(&[&bytes], &mut [&mut out]).remove(0).unwrap(),
                Some(gpu) => {
                    let stream = gpu.stream().unwrap();
                    let (input, mut output) = (gpu.upload(&bytes).unwrap(), gpu.alloc::<u8>(expected.len()).unwrap());
                    let size = unsafe { batch.decompress_async(&[input.view()], &[output.view_mut()], &stream) }
                        .unwrap()
                        .wait()
                        .unwrap()[0];
                    out = gpu.download(output.view()).unwrap();
                    size
                }
            };
            assert_eq!((decoded, &out), (expected.len(), &expected), "{name} as a batch, GPU {}", on.is_some());
        }
        // ferrocomp writes nvCOMP's size prefix.
        if bitstream == Bitstream::WithUncompressedSize {
            let ours = BufferCodec::new(options, config, None).unwrap().compress(&expected).unwrap();
            assert_eq!(ours[..16], bytes[..16], "{name}");
        }
    }
}

#[test]
fn streams_from_a_reader_decode_and_are_described() {
    for name in ["lz4-70000-4096-compute_and_verify", "gdeflate-1-65536-no_compute_no_verify"] {
        let stream = stream(name);
        let codec = codec(Options::default(), ChecksumPolicy::NoComputeAndVerifyIfPresent, None);
        let mut out = Vec::new();
        let totals = codec.decompress_stream(&stream.bytes[..], &mut out, &mut |_| {}).unwrap();
        assert_eq!((out, totals.compressed), (stream.expected.clone(), stream.bytes.len() as u64));
        let description = describe(&stream.bytes[..]).unwrap();
        assert_eq!(description.version, NVCOMP_VERSION);
        assert_eq!(description.uncompressed, stream.expected.len() as u64);
        assert_eq!(description.compressed_checksums, stream.checksums);
        // A reader that ends early, or goes on past the stream, is refused.
        let short = codec.decompress_stream(&stream.bytes[..stream.bytes.len() - 1], &mut Vec::new(), &mut |_| {});
        assert!(short.unwrap_err().to_string().contains("ends early"));
        let long = [&stream.bytes[..], b"x"].concat();
        let error = codec.decompress_stream(&long[..], &mut Vec::new(), &mut |_| {}).unwrap_err();
        assert!(error.to_string().contains("bytes past its end"), "{error}");
    }
}

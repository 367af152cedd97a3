//! The pipelined host path: streams from a `Read` to a `Write` (the streamed native container,
//! version 2) and host slices, on the CPU and, where there is one, the GPU; segment edges,
//! the container byte by byte, and truncated, corrupted, lying and failing input and output.

use ferrocomp::container::{MAX_BLOCK_CHUNKS, describe};
use ferrocomp::{
    Bitstream, BufferCodec, ChecksumPart, ChecksumPolicy, Config, Deflate, Error, Gpu, Options, Totals, Zstd,
};
use ferrocomp_tests::{gpu, random_bytes, text_bytes};
use std::io::{Read, Write};

const CHUNK: usize = 16 << 10;
const SEGMENT: usize = 64 << 10;

/// The CPU, and the GPU where there is one.
fn devices() -> Vec<Option<Gpu>> {
    std::iter::once(None).chain(gpu().map(Some)).collect()
}

fn codec(options: Options, checksum: ChecksumPolicy, gpu: Option<Gpu>) -> BufferCodec {
    let config = Config { chunk_size: CHUNK, bitstream: Bitstream::Native, checksum };
    BufferCodec::new(options, config, gpu).unwrap().with_segment_size(SEGMENT).unwrap()
}

fn compress_stream(codec: &BufferCodec, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let totals = codec.compress_stream(data, &mut out, &mut |_| {}).unwrap();
    assert_eq!(totals, Totals { uncompressed: data.len() as u64, compressed: out.len() as u64 });
    out
}

fn decompress_stream(codec: &BufferCodec, compressed: &[u8]) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    let totals = codec.decompress_stream(compressed, &mut out, &mut |_| {})?;
    assert_eq!(totals, Totals { uncompressed: out.len() as u64, compressed: compressed.len() as u64 });
    Ok(out)
}

#[test]
fn streams_round_trip_at_segment_edges_on_every_device() {
    let sizes = [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, SEGMENT - 1, SEGMENT, SEGMENT + 1, 3 * SEGMENT + 5, (1 << 20) + 7];
    let options = [Options::default(), Options::Zstd(Zstd::default()), Options::Deflate(Deflate::default())];
    let devices = devices();
    for checksum in [ChecksumPolicy::NoComputeNoVerify, ChecksumPolicy::ComputeAndVerify] {
        for options in options {
            let cpu = codec(options, checksum, None);
            let codecs: Vec<BufferCodec> =
                devices.iter().map(|device| codec(options, checksum, device.clone())).collect();
            for n in sizes {
                let data = text_bytes(n, n as u64);
                let expected = compress_stream(&cpu, &data);
                for codec in &codecs {
                    let compressed = compress_stream(codec, &data);
                    assert!(compressed == expected, "{options:?} {n}: the GPU and CPU write the same stream");
                    assert!(decompress_stream(codec, &compressed).unwrap() == data, "{options:?} {n}");
                    assert!(codec.decompress(&compressed).unwrap() == data, "{options:?} {n}: as one slice");
                    assert_eq!(codec.decompressed_size(&compressed).unwrap(), n);
                    let mut into = vec![0u8; n + 3];
                    assert_eq!(codec.decompress_into(&compressed, &mut into).unwrap(), n);
                    assert!(into[..n] == data[..]);
                    // A version-1 buffer reads as a stream too.
                    let whole = codec.compress(&data).unwrap();
                    assert!(decompress_stream(codec, &whole).unwrap() == data, "{options:?} {n}: version 1");
                    let description = describe(&compressed[..]).unwrap();
                    assert_eq!(description.version, 2);
                    assert_eq!(description.chunks, n.div_ceil(CHUNK) as u64);
                    assert_eq!(description.blocks, n.div_ceil(SEGMENT) as u64);
                    assert_eq!(description.uncompressed, n as u64);
                    assert_eq!(description.compressed, compressed.len() as u64);
                    assert_eq!(description.uncompressed_checksums, checksum.computes());
                }
            }
        }
    }
}

/// A scratch directory of this test process, `name` in it.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrocomp-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// `compressed` decoded from a file of its own into another by `decompress_file`, whose last
/// progress report must be the file's length.
fn decompress_file(codec: &BufferCodec, compressed: &[u8], name: &str) -> Result<Vec<u8>, Error> {
    let (input, output) = (scratch(&format!("{name}.fcmp")), scratch(name));
    std::fs::write(&input, compressed).unwrap();
    let file = std::fs::File::create(&output).unwrap();
    let mut last = 0;
    let result = codec.decompress_file(&input, &file, &mut |read| last = read);
    let out = std::fs::read(&output).unwrap();
    std::fs::remove_file(&input).unwrap();
    std::fs::remove_file(&output).unwrap();
    let totals = result?;
    assert_eq!(totals, Totals { uncompressed: out.len() as u64, compressed: compressed.len() as u64 });
    assert_eq!(last, compressed.len() as u64, "the progress reported last");
    Ok(out)
}

#[test]
fn files_are_written_by_several_workers_at_their_offsets() {
    for device in devices() {
        let codec = codec(Options::default(), ChecksumPolicy::ComputeAndVerify, device);
        for n in [0, 1, SEGMENT - 1, SEGMENT, 7 * SEGMENT + 5] {
            let data = text_bytes(n, 7);
            let compressed = compress_stream(&codec, &data);
            let path = scratch("out");
            let file = std::fs::File::create(&path).unwrap();
            let totals = codec.decompress_to_file(&compressed[..], &file, &mut |_| {}).unwrap();
            assert_eq!(totals, Totals { uncompressed: n as u64, compressed: compressed.len() as u64 });
            assert!(std::fs::read(&path).unwrap() == data, "{n} bytes");
            // From a file path: chunks read as byte ranges (to the device through the range reader).
            assert!(decompress_file(&codec, &compressed, "streamed").unwrap() == data, "{n} bytes, streamed");
            let whole = codec.compress(&data).unwrap();
            assert!(decompress_file(&codec, &whole, "whole").unwrap() == data, "{n} bytes, version 1");
        }
    }
}

#[test]
fn slices_through_the_gpu_pipeline_match_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let data = text_bytes((5 << 20) + 11, 3);
    for checksum in [ChecksumPolicy::NoComputeNoVerify, ChecksumPolicy::ComputeAndVerify] {
        let (on_gpu, on_cpu) =
            (codec(Options::default(), checksum, Some(gpu.clone())), codec(Options::default(), checksum, None));
        let compressed = on_gpu.compress(&data).unwrap();
        assert!(compressed == on_cpu.compress(&data).unwrap());
        assert!(on_gpu.decompress(&compressed).unwrap() == data);
        let mut into = vec![0u8; data.len()];
        assert_eq!(on_gpu.decompress_into(&compressed, &mut into).unwrap(), data.len());
        assert!(into == data);
    }
}

fn word(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

#[test]
fn the_streamed_container_byte_by_byte() {
    let data = text_bytes(40_000, 9);
    let codec = {
        let config =
            Config { chunk_size: CHUNK, bitstream: Bitstream::Native, checksum: ChecksumPolicy::ComputeAndVerify };
        BufferCodec::new(Options::default(), config, None).unwrap().with_segment_size(2 * CHUNK + 100).unwrap()
    };
    let s = compress_stream(&codec, &data);
    assert_eq!(&s[..8], &[b'F', b'C', b'M', b'P', 2, 1, 3, 0]);
    assert_eq!(&s[8..16], &[0; 8], "LZ4's options");
    assert_eq!((word(&s, 16), word(&s, 20)), (CHUNK as u32, 0));
    let mut at = 24;
    let mut restored = Vec::new();
    for (count, last) in [(2, CHUNK), (1, 40_000 - 2 * CHUNK)] {
        assert_eq!((word(&s, at), word(&s, at + 4)), (count, last as u32));
        let table = at + 8;
        let sizes: Vec<usize> = (0..count as usize).map(|i| word(&s, table + 4 * i) as usize).collect();
        let mut data_at = table + 12 * count as usize;
        for (i, &size) in sizes.iter().enumerate() {
            let chunk = &s[data_at..data_at + size];
            let decoded = lz4_flex::block::decompress(chunk, CHUNK).unwrap();
            assert_eq!(word(&s, table + 4 * count as usize + 4 * i), crc32fast::hash(&decoded));
            assert_eq!(word(&s, table + 8 * count as usize + 4 * i), crc32fast::hash(chunk));
            restored.extend_from_slice(&decoded);
            data_at += size;
        }
        at = data_at;
    }
    assert!(restored == data);
    assert_eq!(&s[at..at + 8], &[0; 8], "the end marker");
    assert_eq!(u64::from_le_bytes(s[at + 8..at + 16].try_into().unwrap()), 40_000);
    assert_eq!(s.len(), at + 16);
}

/// A stream of five 16 KiB chunks in blocks of two, with both CRC tables.
fn five_chunks() -> (BufferCodec, Vec<u8>, Vec<u8>) {
    let data = text_bytes(5 * CHUNK - 100, 4);
    let config = Config { chunk_size: CHUNK, bitstream: Bitstream::Native, checksum: ChecksumPolicy::ComputeAndVerify };
    let codec = BufferCodec::new(Options::default(), config, None).unwrap().with_segment_size(2 * CHUNK).unwrap();
    let compressed = compress_stream(&codec, &data);
    (codec, data, compressed)
}

/// Where each chunk's bytes start in a stream from [`five_chunks`].
fn chunk_starts(s: &[u8]) -> Vec<(usize, usize)> {
    let mut at = 24;
    let mut chunks = Vec::new();
    while word(s, at) != 0 {
        let count = word(s, at) as usize;
        let mut data = at + 8 + 12 * count;
        for i in 0..count {
            let size = word(s, at + 8 + 4 * i) as usize;
            chunks.push((data, size));
            data += size;
        }
        at = data;
    }
    chunks
}

#[test]
fn truncated_streams_fail_saying_where() {
    let (_, _, s) = five_chunks();
    let chunks = chunk_starts(&s);
    for device in devices() {
        let codec =
            codec(Options::default(), ChecksumPolicy::ComputeAndVerify, device).with_segment_size(2 * CHUNK).unwrap();
        for cut in 0..s.len() {
            let message = decompress_stream(&codec, &s[..cut]).unwrap_err().to_string();
            assert!(message.contains("truncated"), "cut at {cut}: {message}");
            let inside = chunks.iter().position(|&(start, size)| cut > start && cut < start + size);
            if let Some(chunk) = inside {
                assert!(message.ends_with(&format!("the stream ends inside chunk {chunk}")), "cut at {cut}: {message}");
            }
            // A file cut there says the same (cuts in every chunk, and some between).
            if inside.is_some_and(|chunk| cut == chunks[chunk].0 + 1) || cut % 997 == 0 {
                let from_file = decompress_file(&codec, &s[..cut], "cut").unwrap_err().to_string();
                assert_eq!(from_file, message, "cut at {cut}, from a file");
            }
        }
    }
}

#[test]
fn corrupted_chunks_fail_naming_the_chunk_on_every_device() {
    let (_, data, s) = five_chunks();
    let chunks = chunk_starts(&s);
    for device in devices() {
        let codec =
            codec(Options::default(), ChecksumPolicy::ComputeAndVerify, device).with_segment_size(2 * CHUNK).unwrap();
        for (chunk, &(start, size)) in chunks.iter().enumerate() {
            let mut bad = s.clone();
            bad[start + size / 2] ^= 0x40;
            match decompress_stream(&codec, &bad) {
                Err(Error::ChecksumMismatch { chunk: at, part: ChecksumPart::Compressed, .. }) => assert_eq!(at, chunk),
                other => panic!("chunk {chunk}: {other:?}"),
            }
            let mut written = Vec::new();
            let _ = codec.decompress_stream(&bad[..], &mut written, &mut |_| {});
            assert!(written.len() <= chunk * CHUNK && written[..] == data[..written.len()], "only chunks before it");
            match decompress_file(&codec, &bad, "bad") {
                Err(Error::ChecksumMismatch { chunk: at, part: ChecksumPart::Compressed, .. }) => assert_eq!(at, chunk),
                other => panic!("chunk {chunk}, from a file: {other:?}"),
            }
        }
    }
}

#[test]
fn lying_streams_are_refused() {
    let (codec, _, s) = five_chunks();
    let end = s.len() - 16;
    let set = |at: usize, value: u32| {
        let mut bad = s.clone();
        bad[at..at + 4].copy_from_slice(&value.to_le_bytes());
        bad
    };
    let refused = |bad: &[u8], expected: &str| {
        let message = decompress_stream(&codec, bad).unwrap_err().to_string();
        assert!(message.contains(expected), "{message} (expected {expected:?})");
    };
    refused(&set(24, MAX_BLOCK_CHUNKS as u32 + 1), "chunks, the last of");
    refused(&set(28, 0), "chunks, the last of 0 bytes");
    refused(&set(28, CHUNK as u32 + 1), "the last of 16385 bytes");
    refused(&set(32, 1 << 30), "chunk 0: 1073741824 compressed bytes cannot hold");
    refused(&set(16, 0), "chunk size 0 is outside");
    refused(&set(20, 1), "reserved header bytes");
    refused(&set(end + 8, 7), "end marker declares 7 bytes");
    refused(&[&s[..], &[0]].concat(), "bytes follow the end of the stream");
    // Another block after the short last one.
    let chunks = chunk_starts(&s);
    let last_block = chunks[4].0 - 8 - 12;
    let again = [&s[..end], &s[last_block..end], &s[end..]].concat();
    refused(&again, "a block follows chunk 4, which was shorter than a chunk");
    refused(&set(4, 3), "unsupported native version 3");
}

/// Hands out one byte per read.
struct Trickle<'a>(&'a [u8]);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.0.len()).min(1);
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

/// Fails once `room` bytes have been written.
struct Full {
    room: usize,
}

impl Write for Full {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.room == 0 {
            return Err(std::io::Error::other("disk full"));
        }
        let n = buf.len().min(self.room);
        self.room -= n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Fails after `left` bytes.
struct Broken<'a>(&'a [u8], usize);

impl Read for Broken<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.1 == 0 {
            return Err(std::io::Error::other("cable pulled"));
        }
        let n = buf.len().min(self.0.len()).min(self.1);
        buf[..n].copy_from_slice(&self.0[..n]);
        (self.0, self.1) = (&self.0[n..], self.1 - n);
        Ok(n)
    }
}

#[test]
fn slow_readers_and_failing_readers_and_writers() {
    let data = random_bytes(3 * SEGMENT + 17, 5);
    for device in devices() {
        let codec = codec(Options::default(), ChecksumPolicy::ComputeAndVerify, device);
        let mut compressed = Vec::new();
        codec.compress_stream(Trickle(&data), &mut compressed, &mut |_| {}).unwrap();
        let mut restored = Vec::new();
        codec.decompress_stream(Trickle(&compressed), &mut restored, &mut |_| {}).unwrap();
        assert!(restored == data);
        for room in [0, 10, 30, SEGMENT + 5] {
            let full = codec.compress_stream(&data[..], Full { room }, &mut |_| {}).unwrap_err();
            assert!(matches!(full, Error::Io(ref e) if e.to_string() == "disk full"), "{full:?}");
            let full = codec.decompress_stream(&compressed[..], Full { room }, &mut |_| {}).unwrap_err();
            assert!(matches!(full, Error::Io(ref e) if e.to_string() == "disk full"), "{full:?}");
        }
        for left in [0, 10, 2 * SEGMENT] {
            let broken = codec.compress_stream(Broken(&data, left), Vec::new(), &mut |_| {}).unwrap_err();
            assert!(matches!(broken, Error::Io(ref e) if e.to_string() == "cable pulled"), "{broken:?}");
            let broken = codec.decompress_stream(Broken(&compressed, left), Vec::new(), &mut |_| {}).unwrap_err();
            assert!(matches!(broken, Error::Io(ref e) if e.to_string() == "cable pulled"), "{broken:?}");
        }
    }
}

#[test]
fn progress_counts_uncompressed_bytes_in_order() {
    let data = text_bytes(3 * SEGMENT + 5, 6);
    let codec = codec(Options::default(), ChecksumPolicy::NoComputeNoVerify, None);
    let mut seen = Vec::new();
    let mut compressed = Vec::new();
    codec.compress_stream(&data[..], &mut compressed, &mut |done| seen.push(done)).unwrap();
    let expected: Vec<u64> = [1, 2, 3].map(|i| (i * SEGMENT) as u64).into_iter().chain([data.len() as u64]).collect();
    assert_eq!(seen, expected);
    seen.clear();
    codec.decompress_stream(&compressed[..], Vec::new(), &mut |done| seen.push(done)).unwrap();
    assert_eq!(seen, expected);
    // A reader with smaller segments splits the writer's blocks.
    let halves = codec.with_segment_size(SEGMENT / 2).unwrap();
    seen.clear();
    let mut restored = Vec::new();
    halves.decompress_stream(&compressed[..], &mut restored, &mut |done| seen.push(done)).unwrap();
    let expected: Vec<u64> = (1..=6).map(|i| (i * SEGMENT / 2) as u64).chain([data.len() as u64]).collect();
    assert_eq!(seen, expected);
    assert!(restored == data);
}

#[test]
fn single_block_bitstreams_stream_whole() {
    let data = text_bytes(100_000, 8);
    for bitstream in [Bitstream::Raw, Bitstream::WithUncompressedSize] {
        let config = Config { chunk_size: CHUNK, bitstream, checksum: ChecksumPolicy::NoComputeNoVerify };
        let codec = BufferCodec::new(Options::default(), config, None).unwrap();
        let compressed = compress_stream(&codec, &data);
        assert!(compressed == codec.compress(&data).unwrap());
        assert!(decompress_stream(&codec, &compressed).unwrap() == data);
        let too_big = vec![0u8; (16 << 20) + 1];
        let refused = codec.compress_stream(&too_big[..], Vec::new(), &mut |_| {}).unwrap_err();
        assert!(refused.to_string().contains("over the 16777216-byte limit"), "{refused}");
    }
}

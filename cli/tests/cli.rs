//! Runs the `ferrocomp` binary (on the CPU) over temporary files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const POLICIES: [&str; 5] = [
    "no-compute-no-verify",
    "compute-no-verify",
    "no-compute-verify-if-present",
    "compute-verify-if-present",
    "compute-verify",
];

/// A directory of its own for one test, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("ferrocomp-cli-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// `name` in the directory, holding `bytes`.
    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `ferrocomp COMMAND --cpu ARGS... IN OUT`.
fn ferrocomp(command: &str, args: &[&str], input: &Path, output: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrocomp"))
        .arg(command)
        .arg("--cpu")
        .args(args)
        .arg(input)
        .arg(output)
        .output()
        .unwrap()
}

/// Runs it, expecting success and a quiet stderr; returns what it wrote.
fn ferrocomp_ok(command: &str, args: &[&str], input: &Path, output: &Path) -> Vec<u8> {
    let result = ferrocomp(command, args, input, output);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{command} {args:?} failed: {stderr}");
    assert_eq!(stderr, "", "{command} {args:?} should be quiet");
    std::fs::read(output).unwrap()
}

/// Runs it, expecting exit code 1 and no output file; returns stderr.
fn ferrocomp_err(command: &str, args: &[&str], input: &Path, output: &Path) -> String {
    let result = ferrocomp(command, args, input, output);
    let stderr = String::from_utf8_lossy(&result.stderr).into_owned();
    assert_eq!(result.status.code(), Some(1), "{command} {args:?}: {stderr}");
    assert!(stderr.starts_with("ferrocomp: "), "{stderr}");
    assert!(!output.exists(), "a failed {command} must not write its output");
    stderr
}

/// Compressible, text-like bytes with some noise, `len` long.
fn sample(len: usize) -> Vec<u8> {
    const WORDS: [&[u8]; 8] = [b"gpu ", b"chunk ", b"lz4 ", b"block ", b"warp ", b"stream ", b"\n", b"ferrocomp "];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut out = Vec::with_capacity(len + 16);
    while out.len() < len {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let pick = (state >> 33) as usize;
        if pick.is_multiple_of(16) {
            out.extend_from_slice(&state.to_le_bytes());
        } else {
            out.extend_from_slice(WORDS[pick % WORDS.len()]);
        }
    }
    out.truncate(len);
    out
}

#[test]
fn native_round_trip_with_each_checksum_policy() {
    let dir = TempDir::new("native");
    let data = sample(300_000);
    let input = dir.file("in", &data);
    for policy in POLICIES {
        let (compressed, restored) = (dir.path(&format!("{policy}.fc")), dir.path(&format!("{policy}.out")));
        let packed = ferrocomp_ok("compress", &["--checksum", policy], &input, &compressed);
        assert!(packed.starts_with(b"FCMP") && packed.len() < data.len() / 2, "{policy}");
        assert_eq!(ferrocomp_ok("decompress", &["--checksum", policy], &compressed, &restored), data, "{policy}");
    }
}

#[test]
fn native_round_trip_of_empty_and_typed_input() {
    let dir = TempDir::new("empty-typed");
    let empty = dir.file("empty", b"");
    ferrocomp_ok("compress", &[], &empty, &dir.path("empty.fc"));
    assert_eq!(ferrocomp_ok("decompress", &[], &dir.path("empty.fc"), &dir.path("empty.out")), b"");
    let data: Vec<u8> = (0..50_000u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
    let input = dir.file("ints", &data);
    ferrocomp_ok("compress", &["--data-type", "int"], &input, &dir.path("ints.fc"));
    assert_eq!(ferrocomp_ok("decompress", &[], &dir.path("ints.fc"), &dir.path("ints.out")), data);
}

#[test]
fn raw_round_trip_with_and_without_size() {
    let dir = TempDir::new("raw");
    let data = sample(200_000);
    let (input, compressed) = (dir.file("in", &data), dir.path("in.lz4"));
    ferrocomp_ok("compress", &["-a", "lz4", "--bitstream", "raw"], &input, &compressed);
    let restored = ferrocomp_ok("decompress", &["-a", "lz4", "--bitstream", "raw"], &compressed, &dir.path("a"));
    assert_eq!(restored, data);
    let size = data.len().to_string();
    let restored = ferrocomp_ok("decompress", &["--bitstream", "raw", "--size", &size], &compressed, &dir.path("b"));
    assert_eq!(restored, data);
}

#[test]
fn raw_output_is_standard_lz4() {
    let dir = TempDir::new("standard");
    let data = sample(10_000);
    let ours = ferrocomp_ok("compress", &["--bitstream", "raw"], &dir.file("in", &data), &dir.path("in.lz4"));
    assert_eq!(lz4_flex::block::decompress(&ours, data.len()).unwrap(), data);
    let theirs = dir.file("flex.lz4", &lz4_flex::block::compress(&data));
    assert_eq!(ferrocomp_ok("decompress", &["--bitstream", "raw"], &theirs, &dir.path("flex.out")), data);
}

#[test]
fn with_size_round_trip() {
    let dir = TempDir::new("with-size");
    let data = sample(100_000);
    let compressed = dir.path("in.lz4s");
    let packed = ferrocomp_ok("compress", &["--bitstream", "with-size"], &dir.file("in", &data), &compressed);
    assert_eq!(packed[..8], (data.len() as u64).to_le_bytes());
    assert_eq!(lz4_flex::block::decompress(&packed[8..], data.len()).unwrap(), data);
    assert_eq!(ferrocomp_ok("decompress", &["--bitstream", "with-size"], &compressed, &dir.path("out")), data);
}

#[test]
fn wrong_size_fails() {
    let dir = TempDir::new("wrong-size");
    let data = sample(5_000);
    let compressed = dir.path("in.lz4");
    ferrocomp_ok("compress", &["--bitstream", "raw"], &dir.file("in", &data), &compressed);
    let stderr = ferrocomp_err("decompress", &["--bitstream", "raw", "--size", "4999"], &compressed, &dir.path("out"));
    assert!(stderr.contains("decodes to 5000 bytes, --size says 4999"), "{stderr}");
}

#[test]
fn garbage_fails() {
    let dir = TempDir::new("garbage");
    let garbage = dir.file("garbage", &sample(1_000));
    let stderr = ferrocomp_err("decompress", &[], &garbage, &dir.path("out"));
    assert!(stderr.contains("decompressing") && stderr.contains("bad magic"), "{stderr}");
    let truncated = dir.path("truncated");
    ferrocomp_ok("compress", &[], &dir.file("in", &sample(100_000)), &truncated);
    let bytes = std::fs::read(&truncated).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() - 10]).unwrap();
    let stderr = ferrocomp_err("decompress", &[], &truncated, &dir.path("out"));
    assert!(stderr.contains("invalid container"), "{stderr}");
}

#[test]
fn corrupted_native_chunk_fails_its_checksum() {
    let dir = TempDir::new("corrupt");
    let data = sample(300_000);
    let compressed = dir.path("in.fc");
    let args = ["--checksum", "compute-verify"];
    let mut bytes = ferrocomp_ok("compress", &args, &dir.file("in", &data), &compressed);
    // Header: 32 fixed bytes, then compressed sizes, uncompressed CRCs and compressed CRCs.
    let count = u32::from_le_bytes(bytes[28..32].try_into().unwrap()) as usize;
    assert_eq!(count, 5);
    let size = |i: usize| u32::from_le_bytes(bytes[32 + 4 * i..36 + 4 * i].try_into().unwrap()) as usize;
    let middle_of_chunk_2 = 32 + 12 * count + size(0) + size(1) + size(2) / 2;
    bytes[middle_of_chunk_2] ^= 0x40;
    std::fs::write(&compressed, &bytes).unwrap();
    let stderr = ferrocomp_err("decompress", &args, &compressed, &dir.path("out"));
    assert!(stderr.contains("chunk 2") && stderr.contains("CRC-32"), "{stderr}");
}

#[test]
fn chunk_size_takes_units() {
    let dir = TempDir::new("chunk-size");
    let input = dir.file("in", &sample(300_000));
    let header_chunk_size = |bytes: &[u8]| u32::from_le_bytes(bytes[24..28].try_into().unwrap());
    let plain = ferrocomp_ok("compress", &["--chunk-size", "65536"], &input, &dir.path("plain"));
    let k = ferrocomp_ok("compress", &["--chunk-size", "64K"], &input, &dir.path("k"));
    let default = ferrocomp_ok("compress", &[], &input, &dir.path("default"));
    assert_eq!(header_chunk_size(&k), 65536);
    assert!(k == plain && k == default);
    let kib = ferrocomp_ok("compress", &["--chunk-size", "16KiB"], &input, &dir.path("kib"));
    assert_eq!(header_chunk_size(&kib), 16 << 10);
    let mib = ferrocomp_ok("compress", &["--chunk-size", "1MiB"], &input, &dir.path("mib"));
    assert_eq!(header_chunk_size(&mib), 1 << 20);
    assert_eq!(ferrocomp_ok("decompress", &[], &dir.path("kib"), &dir.path("out")), std::fs::read(&input).unwrap());
    let usage = ferrocomp("compress", &["--chunk-size", "64Q"], &input, &dir.path("bad"));
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn every_algorithm_round_trips_at_its_levels() {
    let dir = TempDir::new("algorithms");
    let data = sample(300_000);
    let input = dir.file("in", &data);
    for (algorithm, levels) in [
        ("snappy", &["1"][..]),
        ("deflate", &["0", "1", "4"]),
        ("zlib", &["2"]),
        ("gzip", &["5"]),
        ("gdeflate", &["1", "4"]),
        ("zstd", &["1", "2"]),
    ] {
        for level in levels {
            let (compressed, restored) = (dir.path("c"), dir.path("r"));
            let packed = ferrocomp_ok("compress", &["-a", algorithm, "--level", level], &input, &compressed);
            // Level 0 codes literals only.
            let bound = if *level == "0" { data.len() * 4 / 5 } else { data.len() / 2 };
            assert!(packed.starts_with(b"FCMP") && packed.len() < bound, "{algorithm} {level}: {}", packed.len());
            // The header names the algorithm: decompress needs no -a.
            assert_eq!(ferrocomp_ok("decompress", &[], &compressed, &restored), data, "{algorithm} {level}");
            std::fs::remove_file(&compressed).unwrap();
            std::fs::remove_file(&restored).unwrap();
        }
    }
}

#[test]
fn levels_outside_an_algorithms_range_are_refused() {
    let dir = TempDir::new("levels");
    let input = dir.file("in", &sample(1000));
    for (algorithm, level, range) in [("zstd", "0", "1..=3"), ("zstd", "4", "1..=3"), ("deflate", "6", "0..=5")] {
        let stderr = ferrocomp_err("compress", &["-a", algorithm, "--level", level], &input, &dir.path("out"));
        assert!(stderr.contains(&format!("level {level} is outside {range}")), "{stderr}");
    }
}

#[test]
fn raw_zstd_frames_are_libzstds() {
    let dir = TempDir::new("zstd-frames");
    let data = sample(200_000);
    let input = dir.file("in", &data);
    let frame = ferrocomp_ok("compress", &["-a", "zstd", "--bitstream", "raw"], &input, &dir.path("in.zst"));
    assert_eq!(zstd::bulk::decompress(&frame, data.len()).unwrap(), data);
    let theirs = dir.file("theirs.zst", &zstd::bulk::compress(&data, 19).unwrap());
    let args = ["-a", "zstd", "--bitstream", "raw", "--size", "200000"];
    assert_eq!(ferrocomp_ok("decompress", &args, &theirs, &dir.path("out")), data);
}

#[test]
fn raw_gzip_zlib_and_snappy_are_the_standard_formats() {
    use std::io::{Read, Write};
    let dir = TempDir::new("standard-formats");
    let data = sample(60_000);
    let input = dir.file("in", &data);
    let gz = ferrocomp_ok("compress", &["-a", "gzip", "--bitstream", "raw"], &input, &dir.path("in.gz"));
    let mut restored = Vec::new();
    flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut restored).unwrap();
    assert_eq!(restored, data);
    let zlib = ferrocomp_ok("compress", &["-a", "zlib", "--bitstream", "raw"], &input, &dir.path("in.zz"));
    let mut restored = Vec::new();
    flate2::read::ZlibDecoder::new(&zlib[..]).read_to_end(&mut restored).unwrap();
    assert_eq!(restored, data);
    let sz = ferrocomp_ok("compress", &["-a", "snappy", "--bitstream", "raw"], &input, &dir.path("in.sz"));
    assert_eq!(snap::raw::Decoder::new().decompress_vec(&sz).unwrap(), data);

    // A gzip file made elsewhere, larger than a compression chunk, decodes as one raw stream.
    let big = sample(1 << 20);
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(9));
    encoder.write_all(&big).unwrap();
    let file = dir.file("big.gz", &encoder.finish().unwrap());
    assert_eq!(ferrocomp_ok("decompress", &["-a", "gzip", "--bitstream", "raw"], &file, &dir.path("big")), big);
    let snapped = dir.file("big.sz", &snap::raw::Encoder::new().compress_vec(&big).unwrap());
    assert_eq!(ferrocomp_ok("decompress", &["-a", "snappy", "--bitstream", "raw"], &snapped, &dir.path("bigs")), big);
}

#[test]
fn a_gzip_file_with_a_wrong_crc_fails() {
    let dir = TempDir::new("gzip-crc");
    let data = sample(50_000);
    let mut gz =
        ferrocomp_ok("compress", &["-a", "gzip", "--bitstream", "raw"], &dir.file("in", &data), &dir.path("c"));
    let crc_at = gz.len() - 8;
    gz[crc_at] ^= 1;
    let bad = dir.file("bad.gz", &gz);
    let stderr = ferrocomp_err("decompress", &["-a", "gzip", "--bitstream", "raw"], &bad, &dir.path("out"));
    assert!(stderr.contains("checksum"), "{stderr}");
}

#[test]
fn cascaded_takes_its_layers_and_element_type() {
    let dir = TempDir::new("cascaded");
    // Sorted offsets with small steps: one delta layer and 6-bit packing.
    let data: Vec<u8> = (0..100_000u32).flat_map(|i| (i * 25 + i % 7).to_le_bytes()).collect();
    let input = dir.file("in", &data);
    for args in [
        &["-a", "cascaded"][..],
        &["-a", "cascaded", "--data-type", "int", "--rles", "0", "--deltas", "2", "--exact-layers"],
        &["-a", "cascaded", "--data-type", "uchar", "--no-bitpack"],
    ] {
        let (compressed, restored) = (dir.path("c"), dir.path("r"));
        let packed = ferrocomp_ok("compress", args, &input, &compressed);
        assert!(packed.starts_with(b"FCMP") && packed[5] == 7, "{args:?}");
        if args.len() < 4 {
            assert!(packed.len() < data.len() / 4, "{args:?}: {}", packed.len());
        }
        assert_eq!(ferrocomp_ok("decompress", &[], &compressed, &restored), data, "{args:?}");
        std::fs::remove_file(&compressed).unwrap();
        std::fs::remove_file(&restored).unwrap();
    }
    let stderr = ferrocomp_err("compress", &["-a", "cascaded", "--rles", "5"], &input, &dir.path("out"));
    assert!(stderr.contains("at most 4"), "{stderr}");
}

#[test]
fn bitcomp_takes_its_algorithm_element_type_and_error_bound() {
    let dir = TempDir::new("bitcomp");
    // Sorted offsets: deltas of 5 bits a tile.
    let data: Vec<u8> = (0..100_000u32).flat_map(|i| (i * 25 + i % 7).to_le_bytes()).collect();
    let input = dir.file("in", &data);
    for args in [&["-a", "bitcomp"][..], &["-a", "bitcomp", "--data-type", "int"], &["-a", "bitcomp", "--sparse"]] {
        let (compressed, restored) = (dir.path("c"), dir.path("r"));
        let packed = ferrocomp_ok("compress", args, &input, &compressed);
        assert!(packed.starts_with(b"FCMP") && packed[5] == 8, "{args:?}");
        if args.len() == 4 {
            assert!(packed.len() < data.len() / 4, "{args:?}: {}", packed.len());
        }
        assert_eq!(ferrocomp_ok("decompress", &[], &compressed, &restored), data, "{args:?}");
        std::fs::remove_file(&compressed).unwrap();
        std::fs::remove_file(&restored).unwrap();
    }
    // Lossy floats: every value back within the bound.
    let field: Vec<f32> = (0..50_000).map(|k| 280.0 + 20.0 * (k as f32 / 900.0).sin()).collect();
    let input = dir.file("field", &field.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
    let (compressed, restored) = (dir.path("fc"), dir.path("fr"));
    let packed = ferrocomp_ok("compress", &["-a", "bitcomp", "--error-bound", "0.01"], &input, &compressed);
    assert!(packed.len() < field.len() * 4 / 2, "{}", packed.len());
    let decoded = ferrocomp_ok("decompress", &[], &compressed, &restored);
    for (value, bytes) in field.iter().zip(decoded.chunks(4)) {
        assert!((value - f32::from_le_bytes(bytes.try_into().unwrap())).abs() <= 0.01);
    }
    let stderr = ferrocomp_err(
        "compress",
        &["-a", "bitcomp", "--data-type", "short", "--error-bound", "1"],
        &input,
        &dir.path("o"),
    );
    assert!(stderr.contains("4- or 8-byte"), "{stderr}");
    let stderr = ferrocomp_err("compress", &["-a", "bitcomp", "--error-bound", "0"], &input, &dir.path("o"));
    assert!(stderr.contains("above 0"), "{stderr}");
}

#[test]
fn ans_codes_bytes_and_float16() {
    let dir = TempDir::new("ans");
    let data = sample(200_000);
    let input = dir.file("in", &data);
    for args in [&["-a", "ans"][..], &["-a", "ans", "--data-type", "float16"]] {
        let (compressed, restored) = (dir.path("c"), dir.path("r"));
        let packed = ferrocomp_ok("compress", args, &input, &compressed);
        assert!(packed.starts_with(b"FCMP") && packed[5] == 9, "{args:?}");
        assert!(packed.len() < data.len(), "{args:?}: {}", packed.len());
        assert_eq!(ferrocomp_ok("decompress", &[], &compressed, &restored), data, "{args:?}");
        std::fs::remove_file(&compressed).unwrap();
        std::fs::remove_file(&restored).unwrap();
    }
    let stderr = ferrocomp_err("compress", &["-a", "ans", "--data-type", "int"], &input, &dir.path("o"));
    assert!(stderr.contains("float16"), "{stderr}");
}

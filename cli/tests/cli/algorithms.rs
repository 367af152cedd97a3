//! Each algorithm and bitstream: raw and size-prefixed streams in the standard formats, levels, and the
//! options of Cascaded, Bitcomp and ANS.

use crate::support::{TempDir, sample};
use std::io::{Read, Write};

/// A raw LZ4 block round-trips, with `-a` or `--size`.
#[test]
fn raw_round_trip_with_and_without_size() {
    let dir = TempDir::new("raw");
    let data = sample(200_000);
    dir.file("in", &data);
    dir.code(&["-a", "lz4", "--bitstream", "raw"], "in", "in.lz4");
    assert_eq!(dir.code(&["-d", "-a", "lz4", "--bitstream", "raw"], "in.lz4", "a"), data);
    let size = data.len().to_string();
    assert_eq!(dir.code(&["-d", "--bitstream", "raw", "--size", &size], "in.lz4", "b"), data);
}

/// Raw LZ4 is the standard block format, both ways.
#[test]
fn raw_output_is_standard_lz4() {
    let dir = TempDir::new("standard");
    let data = sample(10_000);
    dir.file("in", &data);
    let ours = dir.code(&["--bitstream", "raw"], "in", "in.lz4");
    assert_eq!(lz4_flex::block::decompress(&ours, data.len()).unwrap(), data);
    dir.file("flex.lz4", &lz4_flex::block::compress(&data));
    assert_eq!(dir.code(&["-d", "--bitstream", "raw"], "flex.lz4", "flex.out"), data);
}

/// The size-prefixed bitstream is nvCOMP 6's: a u64 size and eight zero bytes, then a standard block.
#[test]
fn with_size_round_trip() {
    let dir = TempDir::new("with-size");
    let data = sample(100_000);
    dir.file("in", &data);
    let packed = dir.code(&["--bitstream", "with-size"], "in", "in.lz4s");
    assert_eq!(packed[..8], (data.len() as u64).to_le_bytes());
    assert_eq!(packed[8..16], [0; 8]);
    assert_eq!(lz4_flex::block::decompress(&packed[16..], data.len()).unwrap(), data);
    assert_eq!(dir.code(&["-d", "--bitstream", "with-size"], "in.lz4s", "out"), data);
}

/// `--size` other than the stream's is an error.
#[test]
fn wrong_size_fails() {
    let dir = TempDir::new("wrong-size");
    dir.file("in", &sample(5_000));
    dir.code(&["--bitstream", "raw"], "in", "in.lz4");
    let stderr = dir.code_err(&["-d", "--bitstream", "raw", "--size", "4999"], "in.lz4", "out");
    assert_eq!(stderr, "ferrocomp: decompressing in.lz4: the stream decodes to 5000 bytes, --size says 4999\n");
}

/// Every algorithm round-trips at its levels; decompression reads the algorithm from the header.
#[test]
fn every_algorithm_round_trips_at_its_levels() {
    let dir = TempDir::new("algorithms");
    let data = sample(300_000);
    dir.file("in", &data);
    for (algorithm, levels) in [
        ("snappy", &["1"][..]),
        ("deflate", &["0", "1", "4"]),
        ("zlib", &["2"]),
        ("gzip", &["5"]),
        ("gdeflate", &["1", "4"]),
        ("zstd", &["1", "2"]),
    ] {
        for level in levels {
            let packed = dir.code(&["-a", algorithm, "--level", level], "in", "c");
            // Level 0 codes literals only.
            let bound = if *level == "0" { data.len() * 4 / 5 } else { data.len() / 2 };
            assert!(packed.starts_with(b"FCMP") && packed.len() < bound, "{algorithm} {level}: {}", packed.len());
            // The header names the algorithm: decompression needs no -a.
            assert_eq!(dir.code(&["-d"], "c", "r"), data, "{algorithm} {level}");
            std::fs::remove_file(dir.path("c")).unwrap();
            std::fs::remove_file(dir.path("r")).unwrap();
        }
    }
}

/// Levels outside an algorithm's range are refused, naming the range.
#[test]
fn levels_outside_an_algorithms_range_are_refused() {
    let dir = TempDir::new("levels");
    dir.file("in", &sample(1000));
    for (algorithm, level, range) in [("zstd", "0", "1..=3"), ("zstd", "4", "1..=3"), ("deflate", "6", "0..=5")] {
        let stderr = dir.code_err(&["-a", algorithm, "--level", level], "in", "out");
        assert_eq!(stderr, format!("ferrocomp: level {level} is outside {range} for this algorithm\n"));
    }
}

/// Raw zstd frames are libzstd's, both ways.
#[test]
fn raw_zstd_frames_are_libzstds() {
    let dir = TempDir::new("zstd-frames");
    let data = sample(200_000);
    dir.file("in", &data);
    let frame = dir.code(&["-a", "zstd", "--bitstream", "raw"], "in", "in.zst");
    assert_eq!(zstd::bulk::decompress(&frame, data.len()).unwrap(), data);
    dir.file("theirs.zst", &zstd::bulk::compress(&data, 19).unwrap());
    let args = ["-d", "-a", "zstd", "--bitstream", "raw", "--size", "200000"];
    assert_eq!(dir.code(&args, "theirs.zst", "out"), data);
}

/// Raw gzip, zlib and snappy are the standard formats, both ways.
#[test]
fn raw_gzip_zlib_and_snappy_are_the_standard_formats() {
    let dir = TempDir::new("standard-formats");
    let data = sample(60_000);
    dir.file("in", &data);
    let gz = dir.code(&["-a", "gzip", "--bitstream", "raw"], "in", "in.gz");
    let mut restored = Vec::new();
    flate2::read::GzDecoder::new(&gz[..]).read_to_end(&mut restored).unwrap();
    assert_eq!(restored, data);
    let zlib = dir.code(&["-a", "zlib", "--bitstream", "raw"], "in", "in.zz");
    let mut restored = Vec::new();
    flate2::read::ZlibDecoder::new(&zlib[..]).read_to_end(&mut restored).unwrap();
    assert_eq!(restored, data);
    let sz = dir.code(&["-a", "snappy", "--bitstream", "raw"], "in", "in.sz");
    assert_eq!(snap::raw::Decoder::new().decompress_vec(&sz).unwrap(), data);

    // A gzip file made elsewhere, larger than a compression chunk, decodes as one raw stream:
    // `ferrocomp -d -a gzip --bitstream raw x.gz -o x`.
    let big = sample(1 << 20);
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(9));
    encoder.write_all(&big).unwrap();
    dir.file("big.gz", &encoder.finish().unwrap());
    assert_eq!(dir.code(&["-d", "-a", "gzip", "--bitstream", "raw"], "big.gz", "big"), big);
    dir.file("big.sz", &snap::raw::Encoder::new().compress_vec(&big).unwrap());
    assert_eq!(dir.code(&["-d", "-a", "snappy", "--bitstream", "raw"], "big.sz", "bigs"), big);
}

/// A gzip file with a wrong CRC-32 trailer fails.
#[test]
fn a_gzip_file_with_a_wrong_crc_fails() {
    let dir = TempDir::new("gzip-crc");
    dir.file("in", &sample(50_000));
    let mut gz = dir.code(&["-a", "gzip", "--bitstream", "raw"], "in", "c");
    let crc_at = gz.len() - 8;
    gz[crc_at] ^= 1;
    dir.file("bad.gz", &gz);
    let stderr = dir.code_err(&["-d", "-a", "gzip", "--bitstream", "raw"], "bad.gz", "out");
    assert!(stderr.contains("checksum"), "{stderr}");
}

/// The algorithm line `ferrocomp info` prints for `name`.
fn algorithm_of(dir: &TempDir, name: &str) -> String {
    let info = String::from_utf8(dir.run(&["info", name]).stdout).unwrap();
    info.lines().find_map(|line| line.strip_prefix("  algorithm: ")).unwrap().to_string()
}

/// Cascaded takes its layers and element type, as `info` shows.
#[test]
fn cascaded_takes_its_layers_and_element_type() {
    let dir = TempDir::new("cascaded");
    // Sorted offsets with small steps: one delta layer and 6-bit packing.
    let data: Vec<u8> = (0..100_000u32).flat_map(|i| (i * 25 + i % 7).to_le_bytes()).collect();
    dir.file("in", &data);
    for (args, described) in [
        (&["-a", "cascaded"][..], "cascaded, data type uint, up to 2 run-length and 1 delta layers, bit-packed"),
        (
            &["-a", "cascaded", "--data-type", "int", "--rles", "0", "--deltas", "2", "--exact-layers"],
            "cascaded, data type int, exactly 0 run-length and 2 delta layers, bit-packed",
        ),
        (
            &["-a", "cascaded", "--data-type", "uchar", "--no-bitpack"],
            "cascaded, data type uchar, up to 2 run-length and 1 delta layers, not bit-packed",
        ),
    ] {
        let packed = dir.code(args, "in", "c");
        assert_eq!(algorithm_of(&dir, "c"), described);
        if args.len() < 4 {
            assert!(packed.len() < data.len() / 4, "{args:?}: {}", packed.len());
        }
        assert_eq!(dir.code(&["-d"], "c", "r"), data, "{args:?}");
        std::fs::remove_file(dir.path("c")).unwrap();
        std::fs::remove_file(dir.path("r")).unwrap();
    }
    let stderr = dir.code_err(&["-a", "cascaded", "--rles", "5"], "in", "out");
    assert!(stderr.contains("at most 4"), "{stderr}");
}

/// Bitcomp takes its algorithm, element type and error bound, as `info` shows.
#[test]
fn bitcomp_takes_its_algorithm_element_type_and_error_bound() {
    let dir = TempDir::new("bitcomp");
    // Sorted offsets: deltas of 5 bits a tile.
    let data: Vec<u8> = (0..100_000u32).flat_map(|i| (i * 25 + i % 7).to_le_bytes()).collect();
    dir.file("in", &data);
    for (args, described) in [
        (&["-a", "bitcomp"][..], "bitcomp, data type char, default algorithm, lossless"),
        (&["-a", "bitcomp", "--data-type", "int"], "bitcomp, data type int, default algorithm, lossless"),
        (&["-a", "bitcomp", "--sparse"], "bitcomp, data type char, sparse algorithm, lossless"),
    ] {
        let packed = dir.code(args, "in", "c");
        assert_eq!(algorithm_of(&dir, "c"), described);
        if args.len() == 4 {
            assert!(packed.len() < data.len() / 4, "{args:?}: {}", packed.len());
        }
        assert_eq!(dir.code(&["-d"], "c", "r"), data, "{args:?}");
        std::fs::remove_file(dir.path("c")).unwrap();
        std::fs::remove_file(dir.path("r")).unwrap();
    }
    // Lossy floats: every value back within the bound.
    let field: Vec<f32> = (0..50_000).map(|k| 280.0 + 20.0 * (k as f32 / 900.0).sin()).collect();
    dir.file("field", &field.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
    let packed = dir.code(&["-a", "bitcomp", "--error-bound", "0.01"], "field", "fc");
    assert_eq!(algorithm_of(&dir, "fc"), "bitcomp, data type float, default algorithm, error bound 0.01");
    assert!(packed.len() < field.len() * 4 / 2, "{}", packed.len());
    let decoded = dir.code(&["-d"], "fc", "fr");
    for (value, bytes) in field.iter().zip(decoded.chunks(4)) {
        assert!((value - f32::from_le_bytes(bytes.try_into().unwrap())).abs() <= 0.01);
    }
    let stderr = dir.code_err(&["-a", "bitcomp", "--data-type", "short", "--error-bound", "1"], "field", "o");
    assert!(stderr.contains("4- or 8-byte"), "{stderr}");
    let stderr = dir.code_err(&["-a", "bitcomp", "--error-bound", "0"], "field", "o");
    assert!(stderr.contains("above 0"), "{stderr}");
}

/// ANS codes bytes, float16, float32 and float8, as `info` shows.
#[test]
fn ans_codes_bytes_and_floats() {
    let dir = TempDir::new("ans");
    let data = sample(200_000);
    dir.file("in", &data);
    for (args, described) in [
        (&["-a", "ans"][..], "ans, bytes"),
        (&["-a", "ans", "--data-type", "float16"], "ans, float16"),
        (&["-a", "ans", "--data-type", "float"], "ans, float32"),
        (&["-a", "ans", "--data-type", "float8_e4m3"], "ans, float8"),
    ] {
        let packed = dir.code(args, "in", "c");
        assert_eq!(algorithm_of(&dir, "c"), described);
        assert!(packed.len() < data.len(), "{args:?}: {}", packed.len());
        assert_eq!(dir.code(&["-d"], "c", "r"), data, "{args:?}");
        std::fs::remove_file(dir.path("c")).unwrap();
        std::fs::remove_file(dir.path("r")).unwrap();
    }
    let stderr = dir.code_err(&["-a", "ans", "--data-type", "int"], "in", "o");
    assert!(stderr.contains("float16"), "{stderr}");
}

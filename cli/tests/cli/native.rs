//! The native container: checksums and their policies, damaged and foreign inputs, chunk and segment sizes.

use crate::support::{TempDir, pipe, sample};

/// The checksum policies by ferrocomp's names, then nvCOMP's and nvCOMP's Python enum's.
const POLICIES: [&str; 14] = [
    "no-compute-no-verify",
    "compute-no-verify",
    "no-compute-verify-if-present",
    "compute-verify-if-present",
    "compute-verify",
    "compute-and-no-verify",
    "no-compute-and-verify-if-present",
    "compute-and-verify-if-present",
    "compute-and-verify",
    "NO_COMPUTE_NO_VERIFY",
    "COMPUTE_AND_NO_VERIFY",
    "NO_COMPUTE_AND_VERIFY_IF_PRESENT",
    "COMPUTE_AND_VERIFY_IF_PRESENT",
    "COMPUTE_AND_VERIFY",
];

/// The offset and length of each chunk's compressed bytes in a streamed native container, in
/// chunk order (blocks: a count, the last chunk's size, the tables, the chunks; then an end).
fn chunk_spans(container: &[u8]) -> Vec<(usize, usize)> {
    assert_eq!(&container[..5], b"FCMP\x02", "a streamed native container");
    let tables = 1 + (container[6] & 1) as usize + (container[6] >> 1 & 1) as usize;
    let word = |at: usize| u32::from_le_bytes(container[at..at + 4].try_into().unwrap()) as usize;
    let (mut spans, mut at) = (Vec::new(), 24);
    loop {
        let count = word(at);
        if count == 0 {
            return spans;
        }
        let mut data = at + 8 + 4 * tables * count;
        for i in 0..count {
            let size = word(at + 8 + 4 * i);
            spans.push((data, size));
            data += size;
        }
        at = data;
    }
}

/// CRC-32s are stored and checked by default: a flipped byte fails, naming its chunk.
#[test]
fn checksums_are_stored_and_checked_by_default() {
    let dir = TempDir::new("checksums");
    dir.file("in", &sample(300_000));
    dir.ok(&["--chunk-size", "16K", "--segment-size", "64K", "in"]);
    let info = String::from_utf8(dir.run(&["info", "in.fcmp"]).stdout).unwrap();
    assert!(info.contains("\n  checksums: CRC-32 of each chunk's uncompressed and compressed bytes\n"), "{info}");
    // Chunk 6 is in the second block.
    let mut bytes = dir.read("in.fcmp");
    let (offset, len) = chunk_spans(&bytes)[6];
    bytes[offset + len / 2] ^= 0x40;
    dir.file("bad.fcmp", &bytes);
    let stderr = dir.code_err(&["-d"], "bad.fcmp", "out");
    assert!(
        stderr.starts_with("ferrocomp: decompressing bad.fcmp: chunk 6: the checksum of its compressed bytes is "),
        "{stderr}"
    );
    // Without checksums, none is stored; none is checked.
    dir.ok(&["--no-check", "-f", "in"]);
    let info = String::from_utf8(dir.run(&["info", "in.fcmp"]).stdout).unwrap();
    assert!(info.contains("\n  checksums: none\n"), "{info}");
    let unchecked = dir.run(&["--cpu", "-dc", "--no-check", "bad.fcmp"]);
    assert!(!String::from_utf8_lossy(&unchecked.stderr).contains("checksum"));
}

/// Every checksum policy, by each of its names, round-trips; `--no-check` is no-compute-no-verify.
#[test]
fn native_round_trip_with_each_checksum_policy() {
    let dir = TempDir::new("native");
    let data = sample(300_000);
    dir.file("in", &data);
    for policy in POLICIES {
        let (compressed, restored) = (format!("{policy}.fcmp"), format!("{policy}.out"));
        let packed = dir.code(&["--checksum", policy], "in", &compressed);
        assert!(packed.starts_with(b"FCMP") && packed.len() < data.len() / 2, "{policy}");
        assert_eq!(dir.code(&["-d", "--checksum", policy], &compressed, &restored), data, "{policy}");
    }
    let packed = dir.code(&["--no-check"], "in", "unchecked.fcmp");
    assert_eq!(packed, dir.read("no-compute-no-verify.fcmp"));
    assert_eq!(packed, dir.read("NO_COMPUTE_NO_VERIFY.fcmp"));
    assert_eq!(dir.read("compute-verify.fcmp"), dir.read("COMPUTE_AND_VERIFY.fcmp"));
    assert_eq!(dir.code(&["-d", "--no-check"], "unchecked.fcmp", "unchecked"), data);
    // A stream without checksums fails the policy that requires them.
    let stderr = dir.code_err(&["-d", "--checksum", "compute-and-verify"], "unchecked.fcmp", "out");
    assert!(stderr.contains("checksum policy requires checksums"), "{stderr}");
}

/// Truncated and corrupted inputs fail naming the chunk, and leave no file.
#[test]
fn truncated_and_corrupted_inputs_leave_no_output() {
    let dir = TempDir::new("truncated");
    dir.file("in", &sample(300_000));
    let bytes = dir.code(&["--chunk-size", "16K", "--segment-size", "64K"], "in", "in.fcmp");
    let (offset, len) = chunk_spans(&bytes)[3];
    dir.file("truncated.fcmp", &bytes[..offset + len / 2]);
    let stderr = dir.code_err(&["-d"], "truncated.fcmp", "out");
    assert!(stderr.starts_with("ferrocomp: decompressing truncated.fcmp: ") && stderr.contains("chunk 3"), "{stderr}");
    let mut corrupted = bytes.clone();
    corrupted[offset..offset + len].fill(0x55);
    dir.file("corrupted.fcmp", &corrupted);
    let stderr = dir.code_err(&["-d", "--no-check"], "corrupted.fcmp", "out");
    assert!(stderr.starts_with("ferrocomp: decompressing corrupted.fcmp: chunk 3: "), "{stderr}");
    // Short of a whole header, and missing its end.
    dir.file("short.fcmp", &bytes[..10]);
    let stderr = dir.code_err(&["-d"], "short.fcmp", "out");
    assert!(stderr.starts_with("ferrocomp: decompressing short.fcmp: "), "{stderr}");
    dir.file("endless.fcmp", &bytes[..bytes.len() - 1]);
    let stderr = dir.code_err(&["-d"], "endless.fcmp", "out");
    assert!(stderr.starts_with("ferrocomp: decompressing endless.fcmp: "), "{stderr}");
}

/// Sizes around chunk and segment boundaries round-trip through files and pipes.
#[test]
fn round_trips_around_segment_boundaries() {
    let dir = TempDir::new("segments");
    let args = ["--segment-size", "64K", "--chunk-size", "16K"];
    let (k16, k64) = (16 << 10, 64 << 10);
    for len in [0, 1, k16 - 1, k16, k16 + 1, k64 - 1, k64, k64 + 1, 3 * k64 + 5] {
        let data = sample(len);
        dir.file("in", &data);
        let packed = dir.code(&args, "in", "in.fcmp");
        assert_eq!(dir.code(&[&args[..], &["-d"]].concat(), "in.fcmp", "out"), data, "{len}");
        assert_eq!(pipe(&data, &args, &args), data, "{len}");
        let info = String::from_utf8(dir.run(&["info", "in.fcmp"]).stdout).unwrap();
        assert!(info.contains(&format!("\n  chunks: {}\n", len.div_ceil(k16))), "{len}: {info}");
        assert!(info.contains(&format!("\n  compressed: {} bytes\n", packed.len())), "{len}: {info}");
        for name in ["in", "in.fcmp", "out"] {
            std::fs::remove_file(dir.path(name)).unwrap();
        }
    }
}

/// Bytes that are not a container fail, saying so.
#[test]
fn garbage_fails() {
    let dir = TempDir::new("garbage");
    dir.file("garbage", &sample(1_000));
    let stderr = dir.code_err(&["-d"], "garbage", "out");
    assert_eq!(
        stderr,
        "ferrocomp: decompressing garbage: invalid container: not a ferrocomp native stream (bad magic)\n"
    );
}

/// `--chunk-size` takes K, KiB, M and MiB; a bad unit is a usage error.
#[test]
fn chunk_size_takes_units() {
    let dir = TempDir::new("chunk-size");
    let data = sample(300_000);
    dir.file("in", &data);
    let chunk_size = |name: &str| {
        let info = String::from_utf8(dir.run(&["info", name]).stdout).unwrap();
        info.lines().find_map(|line| line.strip_prefix("  chunk size: ")).unwrap().to_string()
    };
    let plain = dir.code(&["--chunk-size", "65536"], "in", "plain");
    let k = dir.code(&["--chunk-size", "64K"], "in", "k");
    let default = dir.code(&[], "in", "default");
    assert_eq!(chunk_size("k"), "65536 bytes");
    assert!(k == plain && k == default);
    dir.code(&["--chunk-size", "16KiB"], "in", "kib");
    assert_eq!(chunk_size("kib"), "16384 bytes");
    dir.code(&["--chunk-size", "1MiB"], "in", "mib");
    assert_eq!(chunk_size("mib"), "1048576 bytes");
    assert_eq!(dir.code(&["-d"], "kib", "out"), data);
    let usage = dir.run(&["--cpu", "--chunk-size", "64Q", "in", "-o", "bad"]);
    assert_eq!(usage.status.code(), Some(2));
    let usage = dir.run(&["--cpu", "--segment-size", "1X", "in", "-o", "bad"]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(!dir.path("bad").exists());
}

/// nvCOMP 6's own native streams decode and are described (`tests/data/nvcomp6`).
#[test]
fn nvcomps_native_streams_decode_and_are_described() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/nvcomp6");
    let dir = TempDir::new("nvcomp");
    let stream = std::fs::read(data.join("zstd-70000-4096-compute_and_verify.nvcomp")).unwrap();
    dir.file("in.nvcomp", &stream);
    let decoded = dir.ok(&["-dc", "in.nvcomp"]);
    assert_eq!(decoded, std::fs::read(data.join("text-70000.raw")).unwrap());
    let info = String::from_utf8(dir.run(&["info", "in.nvcomp"]).stdout).unwrap();
    assert!(info.contains("\n  container version: nvCOMP 6 native stream\n  algorithm: zstd"), "{info}");
    assert!(info.contains("\n  chunks: 18\n  uncompressed: 70000 bytes\n"), "{info}");
    assert!(info.contains("\n  checksums: nvCOMP's checksum of each chunk's uncompressed and compressed bytes\n"));
}

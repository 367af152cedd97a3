//! `ferrocomp info` and `ferrocomp bench`.

use crate::support::{TempDir, assert_failed, assert_ok, sample};
use ferrocomp::{BufferCodec, Config, Options};

/// `info` describes a native file field by field, and reports a file that is not one.
#[test]
fn info_describes_a_native_file() {
    let dir = TempDir::new("info");
    dir.file("in", &sample(300_000));
    dir.ok(&["-a", "zstd", "-l", "2", "in"]);
    let size = dir.read("in.fcmp").len();
    let result = dir.run(&["info", "in.fcmp"]);
    assert_ok(&result, &["info"]);
    assert_eq!(
        String::from_utf8(result.stdout).unwrap(),
        format!(
            "in.fcmp\n  container version: 2\n  algorithm: zstd, level 2\n  chunk size: 65536 bytes\n  chunks: 5\n  \
             blocks: 1\n  uncompressed: 300000 bytes\n  compressed: {size} bytes\n  ratio: {:.3}\n  \
             checksums: CRC-32 of each chunk's uncompressed and compressed bytes\n",
            300_000.0 / size as f64
        )
    );
    let result = dir.run(&["info", "in", "in.fcmp"]);
    let stderr = assert_failed(&result, &["info"]);
    assert_eq!(stderr, "ferrocomp: reading in: invalid container: not a ferrocomp native stream (bad magic)\n");
    assert!(String::from_utf8(result.stdout).unwrap().starts_with("in.fcmp\n"));
}

/// `info` gives a streamed (version 2) file's blocks, and no blocks line for a version-1 file, which
/// has one chunk table and no blocks.
#[test]
fn info_gives_blocks_for_streamed_files_only() {
    let dir = TempDir::new("info-versions");
    let data = sample(300_000);
    dir.file("in", &data);
    dir.ok(&["in"]);
    let codec = BufferCodec::new(Options::default(), Config::default(), None).unwrap();
    dir.file("whole.fcmp", &codec.compress(&data).unwrap());
    let info = |name: &str| String::from_utf8(dir.run(&["info", name]).stdout).unwrap();
    let (streamed, whole) = (info("in.fcmp"), info("whole.fcmp"));
    assert!(streamed.contains("\n  container version: 2\n") && streamed.contains("\n  blocks: 1\n"), "{streamed}");
    assert!(whole.contains("\n  container version: 1\n") && whole.contains("\n  chunks: 5\n"), "{whole}");
    assert!(!whole.contains("blocks"), "{whole}");
}

/// `bench` prints a Markdown row for each codec and level asked for.
#[test]
fn bench_prints_a_row_per_codec_and_level() {
    let dir = TempDir::new("bench");
    dir.file("in", &sample(200_000));
    let result = dir.run(&["bench", "-q", "-a", "lz4", "-a", "zstd", "--cpu", "--seconds", "0.2", "in"]);
    assert_ok(&result, &["bench"]);
    let stdout = String::from_utf8(result.stdout).unwrap();
    let rows: Vec<&str> = stdout.lines().filter(|line| line.starts_with("| CPU |")).collect();
    let codecs: Vec<String> = rows.iter().map(|row| row.split(" | ").take(3).collect::<Vec<_>>().join(" | ")).collect();
    assert_eq!(codecs, ["| CPU | lz4 | -", "| CPU | zstd | 1", "| CPU | zstd | 2", "| CPU | zstd | 3"], "{stdout}");
    assert!(stdout.starts_with("ferrocomp bench on in (200000 bytes): "), "{stdout}");
    assert!(rows.iter().all(|row| row.split(" | ").count() == 8 && !row.contains("error")), "{stdout}");
}

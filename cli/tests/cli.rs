//! Runs the `ferrocomp` binary (on the CPU) as a user types it, in temporary directories.

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_ferrocomp");

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

/// A directory of its own for one test, removed when dropped; the binary runs in it.
struct TempDir(PathBuf);

impl TempDir {
    /// A new, empty directory for `test`.
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("ferrocomp-cli-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// `name` in the directory, holding `bytes`.
    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// The path of `name` in the directory.
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The bytes of `name`.
    fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// The names in the directory, sorted.
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(&self.0).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }

    /// `ferrocomp ARGS` in the directory, with `stdin` (none: empty) as standard input.
    fn run_with(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut child = Command::new(BIN)
            .args(args)
            .current_dir(&self.0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        std::thread::scope(|scope| {
            scope.spawn(move || input.write_all(stdin.unwrap_or_default()));
            child.wait_with_output().unwrap()
        })
    }

    /// `ferrocomp ARGS` in the directory, with empty standard input.
    fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, None)
    }

    /// `ferrocomp --cpu -q ARGS`, expecting success and a silent stderr; returns stdout.
    fn ok(&self, args: &[&str]) -> Vec<u8> {
        let result = self.run(&[&["--cpu", "-q"], args].concat());
        assert_ok(&result, args);
        result.stdout
    }

    /// `ferrocomp --cpu ARGS`, expecting status 1 and an error; returns stderr.
    fn err(&self, args: &[&str]) -> String {
        let result = self.run(&[&["--cpu"], args].concat());
        assert_failed(&result, args)
    }

    /// `ferrocomp --cpu -q ARGS INPUT -o OUTPUT`, expecting success; returns what it wrote.
    fn code(&self, args: &[&str], input: &str, output: &str) -> Vec<u8> {
        self.ok(&[args, &[input, "-o", output]].concat());
        self.read(output)
    }

    /// `ferrocomp --cpu ARGS INPUT -o OUTPUT`, expecting failure and no output nor temporary
    /// file; returns stderr.
    fn code_err(&self, args: &[&str], input: &str, output: &str) -> String {
        let before = self.names();
        let stderr = self.err(&[args, &[input, "-o", output]].concat());
        assert_eq!(self.names(), before, "a failure must leave no file behind");
        stderr
    }
}

impl Drop for TempDir {
    /// Removes the directory and everything in it.
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Asserts that `result` succeeded with nothing on stderr.
fn assert_ok(result: &Output, args: &[&str]) {
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{args:?} failed: {stderr}");
    assert_eq!(stderr, "", "{args:?} should be quiet");
}

/// Asserts that `result` failed with status 1 and an error message; returns the message.
fn assert_failed(result: &Output, args: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&result.stderr).into_owned();
    assert_eq!(result.status.code(), Some(1), "{args:?}: {stderr}");
    assert!(stderr.starts_with("ferrocomp: "), "{stderr}");
    stderr
}

/// Compressible, text-like bytes with some noise, `len` long.
fn sample(len: usize) -> Vec<u8> {
    /// The vocabulary.
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

/// `cat DATA | ferrocomp --cpu COMPRESS... | ferrocomp --cpu -d DECOMPRESS...`: what comes out.
fn pipe(data: &[u8], compress: &[&str], decompress: &[&str]) -> Vec<u8> {
    let spawn = |args: &[&str], stdin: Stdio| {
        let mut command = Command::new(BIN);
        command.arg("--cpu").args(args).stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
        command.spawn().unwrap()
    };
    let mut first = spawn(compress, Stdio::piped());
    let second = spawn(&[&["-d"], decompress].concat(), Stdio::from(first.stdout.take().unwrap()));
    let mut input = first.stdin.take().unwrap();
    let (first, second) = std::thread::scope(|scope| {
        scope.spawn(move || input.write_all(data).unwrap());
        let second = second.wait_with_output().unwrap();
        (first.wait_with_output().unwrap(), second)
    });
    assert_ok(&first, compress);
    assert_ok(&second, decompress);
    second.stdout
}

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

/// `ferrocomp FILE` writes FILE.fcmp and keeps FILE; `-d FILE.fcmp` restores it.
#[test]
fn compresses_to_fcmp_keeps_the_source_and_restores_it() {
    let dir = TempDir::new("suffix");
    let data = sample(300_000);
    dir.file("in", &data);
    dir.ok(&["in"]);
    assert_eq!(dir.names(), ["in", "in.fcmp"]);
    assert!(dir.read("in.fcmp").starts_with(b"FCMP"));
    std::fs::rename(dir.path("in"), dir.path("original")).unwrap();
    dir.ok(&["-d", "in.fcmp"]);
    assert_eq!(dir.names(), ["in", "in.fcmp", "original"]);
    assert_eq!(dir.read("in"), data);
    // -z is the default, said explicitly; -k keeps the source, as it would anyway.
    dir.ok(&["-z", "-k", "-f", "in"]);
    assert_eq!(dir.names(), ["in", "in.fcmp", "original"]);
}

/// `-c` writes stdout; `-` and no FILE read stdin and write stdout, or `-o`'s file.
#[test]
fn stdout_and_stdin() {
    let dir = TempDir::new("stdout");
    let data = sample(100_000);
    dir.file("in", &data);
    let packed = dir.ok(&["-c", "in"]);
    assert!(packed.starts_with(b"FCMP"));
    assert_eq!(dir.names(), ["in"], "-c writes no file");
    dir.file("in.fcmp", &packed);
    assert_eq!(dir.ok(&["-dc", "in.fcmp"]), data);
    // - and no FILE read stdin and write stdout.
    let result = dir.run_with(&["--cpu", "-d", "-"], Some(&packed));
    assert_ok(&result, &["-d", "-"]);
    assert_eq!(result.stdout, data);
    let result = dir.run_with(&["--cpu"], Some(&data));
    assert_ok(&result, &[]);
    assert_eq!(result.stdout, packed);
    // -o names a file for stdin's output.
    assert_ok(&dir.run_with(&["--cpu", "-q", "-o", "from-stdin.fcmp"], Some(&data)), &["-o"]);
    assert_eq!(dir.read("from-stdin.fcmp"), packed);
}

/// `cat x | ferrocomp | ferrocomp -d > y` gives x back.
#[test]
fn pipes_round_trip() {
    let data = sample(500_000);
    assert_eq!(pipe(&data, &[], &[]), data);
    assert_eq!(pipe(&data, &["-a", "zstd", "-l", "2"], &["-"]), data);
}

/// `-o` names the output; of several inputs each is done, a failing one reported (status 1).
#[test]
fn output_names_with_o_and_several_inputs() {
    let dir = TempDir::new("several");
    let (a, b) = (sample(10_000), sample(20_000));
    dir.file("a", &a);
    dir.file("b", &b);
    dir.ok(&["a", "-o", "named"]);
    assert_eq!(dir.ok(&["-dc", "named"]), a);
    // One missing input: the others are done, the status is 1.
    let result = dir.run(&["--cpu", "-q", "a", "missing", "b"]);
    let stderr = assert_failed(&result, &["a", "missing", "b"]);
    assert_eq!(stderr, "ferrocomp: missing: No such file or directory (os error 2)\n");
    assert_eq!(dir.names(), ["a", "a.fcmp", "b", "b.fcmp", "named"]);
    std::fs::remove_file(dir.path("a")).unwrap();
    std::fs::remove_file(dir.path("b")).unwrap();
    dir.ok(&["-d", "a.fcmp", "b.fcmp"]);
    assert_eq!((dir.read("a"), dir.read("b")), (a, b));
    // -o is for one input; a usage error says so (status 2).
    let result = dir.run(&["--cpu", "a", "b", "-o", "x"]);
    assert_eq!(result.status.code(), Some(2));
    // Compressing several files to stdout would concatenate containers: a usage error too.
    let result = dir.run(&["--cpu", "-c", "a", "b"]);
    assert_eq!(result.status.code(), Some(2));
    assert_eq!(dir.names(), ["a", "a.fcmp", "b", "b.fcmp", "named"]);
}

/// An existing output is replaced only with `-f`, and never by its own input.
#[test]
fn existing_outputs_are_kept_without_force() {
    let dir = TempDir::new("force");
    let data = sample(50_000);
    dir.file("in", &data);
    dir.file("in.fcmp", b"precious");
    let stderr = dir.err(&["in"]);
    assert_eq!(stderr, "ferrocomp: in.fcmp already exists; not overwritten (use -f to overwrite)\n");
    assert_eq!(dir.read("in.fcmp"), b"precious");
    assert_eq!(dir.names(), ["in", "in.fcmp"]);
    dir.ok(&["-f", "in"]);
    assert_eq!(dir.ok(&["-dc", "in.fcmp"]), data);
    let stderr = dir.err(&["-d", "in.fcmp"]);
    assert_eq!(stderr, "ferrocomp: in already exists; not overwritten (use -f to overwrite)\n");
    dir.file("in", b"stale");
    dir.ok(&["-d", "-f", "in.fcmp"]);
    assert_eq!(dir.read("in"), data);
    let stderr = dir.err(&["-f", "in", "-o", "in"]);
    assert_eq!(stderr, "ferrocomp: in: the input and the output are the same file\n");
}

/// Compressed data is not written to a terminal nor read from one.
#[test]
fn compressed_data_neither_goes_to_nor_comes_from_a_terminal() {
    let dir = TempDir::new("terminal");
    dir.file("in", &sample(1000));
    // script(1) runs a command on a pseudo-terminal; without it there is no terminal to test.
    let on_terminal = |command: &str| {
        let script = Command::new("script").current_dir(&dir.0).args(["-qec", command, "/dev/null"]).output();
        script.ok().map(|result| (result.status.code(), String::from_utf8_lossy(&result.stdout).into_owned()))
    };
    let Some(compress) = on_terminal(&format!("'{BIN}' --cpu -c in")) else {
        eprintln!("no script(1): terminal test skipped");
        return;
    };
    let refused = "ferrocomp: refusing to write compressed data to a terminal (redirect it, or use -f)\r\n";
    assert_eq!(compress, (Some(1), refused.to_string()));
    let refused = "ferrocomp: refusing to read compressed data from a terminal (redirect it, or use -f)\r\n";
    assert_eq!(on_terminal(&format!("'{BIN}' --cpu -d")), Some((Some(1), refused.to_string())));
    assert_eq!(dir.names(), ["in"]);
}

/// Decompressing a file not named .fcmp without `-o` or `-c` is an error naming it.
#[test]
fn decompressing_an_unknown_suffix_needs_a_name() {
    let dir = TempDir::new("unknown-suffix");
    dir.file("in.gz", &sample(1000));
    let stderr = dir.err(&["-d", "in.gz"]);
    assert_eq!(stderr, "ferrocomp: in.gz: unknown suffix, not .fcmp (name the output with -o, or use -c)\n");
    assert_eq!(dir.names(), ["in.gz"]);
}

/// `--rm` removes the source once its output is complete, not after a failure.
#[test]
fn rm_removes_sources_after_success_only() {
    let dir = TempDir::new("rm");
    let data = sample(70_000);
    dir.file("in", &data);
    dir.ok(&["--rm", "in"]);
    assert_eq!(dir.names(), ["in.fcmp"]);
    dir.ok(&["-d", "--rm", "in.fcmp"]);
    assert_eq!(dir.names(), ["in"]);
    assert_eq!(dir.read("in"), data);
    // -k after --rm keeps.
    dir.ok(&["--rm", "-k", "in"]);
    assert_eq!(dir.names(), ["in", "in.fcmp"]);
    // A failure keeps the source.
    dir.file("bad.fcmp", b"not a container");
    dir.err(&["-d", "--rm", "bad.fcmp"]);
    assert_eq!(dir.names(), ["bad.fcmp", "in", "in.fcmp"]);
}

/// A summary by default, with the device and speed with `-v`, nothing with `-q`.
#[test]
fn quiet_prints_nothing_verbose_and_default_print_a_summary() {
    let dir = TempDir::new("quiet");
    let data = sample(300_000);
    dir.file("in", &data);
    let result = dir.run(&["--cpu", "in"]);
    let size = dir.read("in.fcmp").len();
    let ratio = 300_000.0 / size as f64;
    assert_eq!(
        String::from_utf8_lossy(&result.stderr),
        format!("in -> in.fcmp: 300000 -> {size} bytes, ratio {ratio:.3}\n")
    );
    assert!(result.status.success() && result.stdout.is_empty());
    let result = dir.run(&["--cpu", "-d", "-v", "-c", "in.fcmp"]);
    let stderr = String::from_utf8_lossy(&result.stderr);
    let summary = format!("in.fcmp -> stdout: {size} -> 300000 bytes, ratio {ratio:.3}, CPU, ");
    assert!(stderr.starts_with(&summary) && stderr.ends_with(" GB/s\n"), "{stderr}");
    assert_eq!(result.stdout, data);
    for args in
        [&["-q", "-f", "in"][..], &["-q", "-d", "-f", "in.fcmp"], &["-q", "-c", "in"], &["-q", "-dc", "in.fcmp"]]
    {
        let result = dir.run(&[&["--cpu"], args].concat());
        assert!(result.status.success() && result.stderr.is_empty(), "{args:?}");
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
        stderr.starts_with("ferrocomp: decompressing bad.fcmp: chunk 6: CRC-32 of its compressed bytes is "),
        "{stderr}"
    );
    // Without checksums, none is stored; none is checked.
    dir.ok(&["--no-check", "-f", "in"]);
    let info = String::from_utf8(dir.run(&["info", "in.fcmp"]).stdout).unwrap();
    assert!(info.contains("\n  checksums: none\n"), "{info}");
    let unchecked = dir.run(&["--cpu", "-dc", "--no-check", "bad.fcmp"]);
    assert!(!String::from_utf8_lossy(&unchecked.stderr).contains("CRC-32"));
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

/// A file larger than the process's address-space limit round-trips: memory stays bounded.
#[test]
fn a_file_larger_than_the_memory_limit_round_trips() {
    /// 4 KiB blocks, each its number then zeros: cheap to code, and out-of-order blocks show.
    fn blocks(count: u64) -> impl Iterator<Item = [u8; 4096]> {
        (0..count).map(|i| {
            let mut block = [0; 4096];
            block[..8].copy_from_slice(&i.to_le_bytes());
            block
        })
    }
    /// 640 MiB of blocks.
    const BLOCKS: u64 = 640 << 8;
    /// The address-space limit (`ulimit -v`, in KiB): 400 MiB, where the binary needs about 100.
    const LIMIT_KIB: u64 = 400 << 10;
    let dir = TempDir::new("big");
    let mut file = BufWriter::new(std::fs::File::create(dir.path("big")).unwrap());
    blocks(BLOCKS).for_each(|block| file.write_all(&block).unwrap());
    file.into_inner().unwrap().sync_all().unwrap();
    // Without checksums, which the debug build computes slowly. glibc reserves 64 MiB of address
    // space for each thread's malloc arena; one arena makes the limit measure memory, not cores.
    let limited = |args: &[&str]| {
        let script = format!("ulimit -v {LIMIT_KIB}; exec \"$0\" --cpu -q --no-check --segment-size 8M \"$@\"");
        let mut command = Command::new("sh");
        command.current_dir(&dir.0).env("MALLOC_ARENA_MAX", "1").args(["-c", &script, BIN]).args(args);
        assert_ok(&command.output().unwrap(), args);
    };
    limited(&["big"]);
    limited(&["-d", "big.fcmp", "-o", "restored"]);
    let mut restored = BufReader::new(std::fs::File::open(dir.path("restored")).unwrap());
    for (i, block) in blocks(BLOCKS).enumerate() {
        let mut read = [0; 4096];
        restored.read_exact(&mut read).unwrap();
        assert!(read == block, "block {i} differs");
    }
    assert_eq!(restored.read(&mut [0]).unwrap(), 0, "the restored file is longer");
}

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

/// The size-prefixed bitstream is a u64 size, then a standard block.
#[test]
fn with_size_round_trip() {
    let dir = TempDir::new("with-size");
    let data = sample(100_000);
    dir.file("in", &data);
    let packed = dir.code(&["--bitstream", "with-size"], "in", "in.lz4s");
    assert_eq!(packed[..8], (data.len() as u64).to_le_bytes());
    assert_eq!(lz4_flex::block::decompress(&packed[8..], data.len()).unwrap(), data);
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

/// ANS codes bytes and float16, as `info` shows.
#[test]
fn ans_codes_bytes_and_float16() {
    let dir = TempDir::new("ans");
    let data = sample(200_000);
    dir.file("in", &data);
    for (args, described) in
        [(&["-a", "ans"][..], "ans, bytes"), (&["-a", "ans", "--data-type", "float16"], "ans, float16")]
    {
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

//! Which files are read and written: suffixes, `-c`, stdin and stdout, `-o`, `-f`, `--rm`, terminals, the
//! summary, and memory that stays bounded for a file of any size.

use crate::support::{BIN, TempDir, assert_failed, assert_ok, pipe, sample};
use std::io::{BufReader, BufWriter, Read, Write};
use std::process::Command;

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

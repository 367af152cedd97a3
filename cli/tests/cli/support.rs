//! The harness: a temporary directory to run the binary in, what a run must show, sample data.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_ferrocomp");

/// A directory of its own for one test, removed when dropped; the binary runs in it.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new, empty directory for `test`.
    pub fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("ferrocomp-cli-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    /// `name` in the directory, holding `bytes`.
    pub fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// The path of `name` in the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The bytes of `name`.
    pub fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.path(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// The names in the directory, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(&self.0).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }

    /// `ferrocomp ARGS` in the directory, with `stdin` (none: empty) as standard input.
    pub fn run_with(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
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
    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with(args, None)
    }

    /// `ferrocomp --cpu -q ARGS`, expecting success and a silent stderr; returns stdout.
    pub fn ok(&self, args: &[&str]) -> Vec<u8> {
        let result = self.run(&[&["--cpu", "-q"], args].concat());
        assert_ok(&result, args);
        result.stdout
    }

    /// `ferrocomp --cpu ARGS`, expecting status 1 and an error; returns stderr.
    pub fn err(&self, args: &[&str]) -> String {
        let result = self.run(&[&["--cpu"], args].concat());
        assert_failed(&result, args)
    }

    /// `ferrocomp --cpu -q ARGS INPUT -o OUTPUT`, expecting success; returns what it wrote.
    pub fn code(&self, args: &[&str], input: &str, output: &str) -> Vec<u8> {
        self.ok(&[args, &[input, "-o", output]].concat());
        self.read(output)
    }

    /// `ferrocomp --cpu ARGS INPUT -o OUTPUT`, expecting failure and no output nor temporary
    /// file; returns stderr.
    pub fn code_err(&self, args: &[&str], input: &str, output: &str) -> String {
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
pub fn assert_ok(result: &Output, args: &[&str]) {
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{args:?} failed: {stderr}");
    assert_eq!(stderr, "", "{args:?} should be quiet");
}

/// Asserts that `result` failed with status 1 and an error message; returns the message.
pub fn assert_failed(result: &Output, args: &[&str]) -> String {
    let stderr = String::from_utf8_lossy(&result.stderr).into_owned();
    assert_eq!(result.status.code(), Some(1), "{args:?}: {stderr}");
    assert!(stderr.starts_with("ferrocomp: "), "{stderr}");
    stderr
}

/// Compressible, text-like bytes with some noise, `len` long.
pub fn sample(len: usize) -> Vec<u8> {
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
pub fn pipe(data: &[u8], compress: &[&str], decompress: &[&str]) -> Vec<u8> {
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

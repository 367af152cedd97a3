//! Where each input comes from and where its output goes, as lz4 and zstd do it: FILE to
//! FILE.fcmp and back, `-` (or no FILE) from standard input to standard output; outputs written
//! atomically and never over an existing file without `-f`.

use anyhow::{Context, Result, bail};
use ferrocomp::Totals;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::fmt;
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

/// The suffix of compressed files.
pub const SUFFIX: &str = ".fcmp";
/// Inputs larger than this get a progress bar.
const PROGRESS_THRESHOLD: u64 = 64 << 20;

/// Compressing or decompressing.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Plain bytes in, compressed bytes out.
    Compress,
    /// Compressed bytes in, plain bytes out.
    Decompress,
}

/// Where a job reads.
pub enum Source {
    /// Standard input.
    Stdin,
    /// A file.
    File(PathBuf),
}

/// Where a job writes.
pub enum Sink {
    /// Standard output.
    Stdout,
    /// A file, replaced only once the job has succeeded.
    File(PathBuf),
}

/// What a job's work writes to: a stream, or a file it may write at any offset.
pub enum Target<'a> {
    /// Standard output.
    Stream(&'a mut (dyn Write + Send)),
    /// A new file (the temporary one behind an output).
    File(&'a File),
}

/// What a job's work reads.
pub struct Input<'a> {
    /// The source's bytes; reading them moves the progress bar.
    pub reader: &'a mut (dyn Read + Send),
    /// The source's path where it is a regular file, for work that reads it its own way (and
    /// moves the bar with [`Input::progress`]).
    pub file: Option<&'a Path>,
    bar: ProgressBar,
}

impl Input<'_> {
    /// A callback moving the progress bar to the bytes of the source read so far.
    pub fn progress(&self) -> impl FnMut(u64) + Send + 'static {
        let bar = self.bar.clone();
        move |bytes| bar.set_position(bytes)
    }
}

/// How jobs treat their files.
pub struct Policy {
    /// Overwrite existing outputs; write compressed data to a terminal and read it from one.
    pub force: bool,
    /// Remove each source file once its output is complete.
    pub remove_source: bool,
    /// Show a progress bar for large files.
    pub progress: bool,
}

/// A source, opened.
struct Opened {
    /// Its bytes.
    reader: Box<dyn Read + Send>,
    /// Its length, if it is a regular file.
    len: Option<u64>,
    /// Its permissions, if it is a file.
    permissions: Option<Permissions>,
}

/// One input and where its output goes.
pub struct Job {
    /// What is read.
    pub source: Source,
    /// What is written.
    pub sink: Sink,
    /// Which way the bytes are coded.
    direction: Direction,
}

impl fmt::Display for Source {
    /// `stdin`, or the path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdin => f.write_str("stdin"),
            Self::File(path) => path.display().fmt(f),
        }
    }
}

impl fmt::Display for Sink {
    /// `stdout`, or the path.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stdout => f.write_str("stdout"),
            Self::File(path) => path.display().fmt(f),
        }
    }
}

impl Job {
    /// The job for `input` (`-`: standard input): to `output` if given (`-`: standard output),
    /// to standard output with `to_stdout` or from standard input, else to FILE.fcmp
    /// (compressing) or FILE.fcmp's FILE (decompressing; another suffix is an error).
    pub fn new(input: &Path, output: Option<&Path>, to_stdout: bool, direction: Direction) -> Result<Self> {
        let source = if is_dash(input) { Source::Stdin } else { Source::File(input.to_path_buf()) };
        let sink = match (output, &source) {
            (Some(output), _) if !is_dash(output) => Sink::File(output.to_path_buf()),
            (Some(_), _) | (None, Source::Stdin) => Sink::Stdout,
            (None, _) if to_stdout => Sink::Stdout,
            (None, Source::File(path)) => Sink::File(output_name(path, direction)?),
        };
        Ok(Self { source, sink, direction })
    }

    /// Runs `work` from the source to the sink. A file sink appears, whole, only if `work` and
    /// the writing succeed; the source is removed after that if the policy says so.
    pub fn run(&self, policy: &Policy, work: impl FnOnce(Input<'_>, Target<'_>) -> Result<Totals>) -> Result<Totals> {
        self.check_terminals(policy.force)?;
        if let Sink::File(target) = &self.sink {
            check_target(&self.source, target, policy.force)?;
        }
        let Opened { reader, len, permissions } = self.open()?;
        let bar = progress_bar(len.filter(|_| policy.progress));
        let mut reader = ProgressReader { inner: reader, bar: bar.clone() };
        let file = match (&self.source, len) {
            (Source::File(path), Some(_)) => Some(path.as_path()),
            _ => None,
        };
        let input = Input { reader: &mut reader, file, bar: bar.clone() };
        let totals = self.write(input, policy.force, permissions, work);
        bar.finish_and_clear();
        let totals = totals?;
        if let (Source::File(path), true) = (&self.source, policy.remove_source) {
            fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
        }
        Ok(totals)
    }

    /// Runs `work` from `input` to the sink; a file sink gets the source's `permissions`.
    fn write(
        &self,
        input: Input<'_>,
        force: bool,
        permissions: Option<Permissions>,
        work: impl FnOnce(Input<'_>, Target<'_>) -> Result<Totals>,
    ) -> Result<Totals> {
        match &self.sink {
            Sink::Stdout => {
                let mut stdout = io::stdout();
                let totals = work(input, Target::Stream(&mut stdout))?;
                stdout.flush().context("writing stdout")?;
                Ok(totals)
            }
            Sink::File(target) => {
                let temp = TempOutput::create(target)?;
                let totals = work(input, Target::File(&temp.file))?;
                temp.persist(target, force, permissions)?;
                Ok(totals)
            }
        }
    }

    /// Refuses compressed data to or from a terminal, unless forced.
    fn check_terminals(&self, force: bool) -> Result<()> {
        match (self.direction, &self.source, &self.sink) {
            _ if force => {}
            (Direction::Compress, _, Sink::Stdout) if io::stdout().is_terminal() => {
                bail!("refusing to write compressed data to a terminal (redirect it, or use -f)")
            }
            (Direction::Decompress, Source::Stdin, _) if io::stdin().is_terminal() => {
                bail!("refusing to read compressed data from a terminal (redirect it, or use -f)")
            }
            _ => {}
        }
        Ok(())
    }

    /// The source, opened.
    fn open(&self) -> Result<Opened> {
        match &self.source {
            Source::Stdin => Ok(Opened { reader: Box::new(io::stdin()), len: None, permissions: None }),
            Source::File(path) => {
                let file = File::open(path).with_context(|| path.display().to_string())?;
                let metadata = file.metadata().with_context(|| path.display().to_string())?;
                if metadata.is_dir() {
                    bail!("{}: is a directory", path.display());
                }
                let len = metadata.is_file().then_some(metadata.len());
                Ok(Opened { reader: Box::new(file), len, permissions: Some(metadata.permissions()) })
            }
        }
    }
}

/// Whether `path` names standard input or output.
pub fn is_dash(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// The output name for `input`: FILE.fcmp, or FILE.fcmp's FILE.
fn output_name(input: &Path, direction: Direction) -> Result<PathBuf> {
    let mut name = input.as_os_str().to_owned();
    if direction == Direction::Compress {
        name.push(SUFFIX);
        return Ok(name.into());
    }
    let file_name = input.file_name().map(|name| name.to_string_lossy()).unwrap_or_default();
    match file_name.strip_suffix(SUFFIX) {
        Some(stem) if !stem.is_empty() => Ok(input.with_file_name(stem)),
        _ => bail!("{}: unknown suffix, not {SUFFIX} (name the output with -o, or use -c)", input.display()),
    }
}

/// Fails if `target` exists and may not be replaced, or is the source itself.
fn check_target(source: &Source, target: &Path, force: bool) -> Result<()> {
    if !target.exists() {
        return Ok(());
    }
    if !force {
        bail!("{} already exists; not overwritten (use -f to overwrite)", target.display());
    }
    if let Source::File(path) = source
        && fs::canonicalize(path).ok() == fs::canonicalize(target).ok()
    {
        bail!("{}: the input and the output are the same file", path.display());
    }
    Ok(())
}

/// A temporary file beside an output, renamed over it once complete, removed if dropped before.
struct TempOutput {
    /// Where it is.
    path: PathBuf,
    /// It, open for writing.
    file: File,
    /// Whether it has become the output.
    persisted: bool,
}

impl TempOutput {
    /// A new, empty temporary file in `target`'s directory.
    fn create(target: &Path) -> Result<Self> {
        let dir = target.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = target.file_name().with_context(|| format!("{}: not a file name", target.display()))?;
        let mut attempt = 0;
        loop {
            let path = dir.join(format!(".{}.{}-{attempt}.tmp", name.to_string_lossy(), std::process::id()));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(file) => return Ok(Self { path, file, persisted: false }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
                Err(e) => return Err(e).with_context(|| format!("creating a temporary file in {}", dir.display())),
            }
        }
    }

    /// Gives it `permissions` (the source's) and renames it over `target`, which must not have
    /// appeared meanwhile unless `force`.
    fn persist(mut self, target: &Path, force: bool, permissions: Option<Permissions>) -> Result<()> {
        if let Some(permissions) = permissions {
            self.file.set_permissions(permissions).with_context(|| format!("writing {}", target.display()))?;
        }
        if !force && target.exists() {
            bail!("{} already exists; not overwritten (use -f to overwrite)", target.display());
        }
        fs::rename(&self.path, target).with_context(|| format!("writing {}", target.display()))?;
        self.persisted = true;
        Ok(())
    }
}

impl Drop for TempOutput {
    /// Removes the file unless it became the output.
    fn drop(&mut self) {
        if !self.persisted {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// A reader that moves a progress bar by the bytes it reads.
struct ProgressReader {
    /// The source.
    inner: Box<dyn Read + Send>,
    /// The bar (hidden for small or unknown sizes).
    bar: ProgressBar,
}

impl Read for ProgressReader {
    /// Reads from the source and advances the bar.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.bar.inc(read as u64);
        Ok(read)
    }
}

/// A progress bar on stderr for an input of `len` bytes; hidden for small or unknown lengths
/// (and by indicatif when stderr is not a terminal).
fn progress_bar(len: Option<u64>) -> ProgressBar {
    let Some(len) = len.filter(|&len| len > PROGRESS_THRESHOLD) else {
        return ProgressBar::hidden();
    };
    let style =
        ProgressStyle::with_template("{bar:40} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {eta}")
            .expect("valid template");
    ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr()).with_style(style)
}

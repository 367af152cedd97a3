//! `ferrocomp bench`: the ratio and speeds of every codec and level on this machine's GPU and
//! CPU, as `lz4 -b` and `zstd -b` measure theirs, as a Markdown table on stdout.

use crate::options::{AlgorithmArg, NumericArgs, options, parse_size};
use anyhow::{Context, Result, bail, ensure};
use clap::{Args, ValueEnum};
use ferrocomp::{BufferCodec, Config, DEFAULT_CHUNK_SIZE, Gpu, Stream};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Bytes of the built-in sample.
const SAMPLE_SIZE: usize = 64 << 20;
/// What the built-in sample is, as the output says.
const SAMPLE: &str = "the built-in sample: 64 MiB of deterministic text-like data (lines of 4 to 15 words drawn \
    from 64, one line in eight a repeat of one of the previous hundred)";

/// The arguments of `ferrocomp bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// File to measure on (default: a built-in 64 MiB text-like sample).
    file: Option<PathBuf>,
    /// A codec to measure at each of its levels (repeatable; default: every one).
    #[arg(short, long = "algorithm", value_enum, value_name = "ALGORITHM")]
    algorithms: Vec<AlgorithmArg>,
    /// The CPU only.
    #[arg(long, conflicts_with = "gpu")]
    cpu: bool,
    /// The GPU only (an error without one).
    #[arg(long)]
    gpu: bool,
    /// Time for each measurement, in seconds: the best of as many runs as fit (at least one).
    #[arg(long, default_value_t = 0.5)]
    seconds: f64,
    /// Uncompressed bytes per chunk: bytes, or with a K, KiB, M or MiB suffix.
    #[arg(long, value_parser = parse_size, default_value_t = DEFAULT_CHUNK_SIZE)]
    chunk_size: usize,
    /// No progress on stderr.
    #[arg(short, long)]
    quiet: bool,
}

/// The sizes and the best times of one codec on one device.
struct Row {
    /// Uncompressed bytes.
    uncompressed: usize,
    /// Compressed bytes.
    compressed: usize,
    /// Compression with the data already on the device.
    kernel_compress: Duration,
    /// Decompression with the data already on the device.
    kernel_decompress: Duration,
    /// Compression from host bytes to host bytes through the pipelined stream path.
    end_to_end_compress: Duration,
    /// Decompression from host bytes to host bytes through the pipelined stream path.
    end_to_end_decompress: Duration,
}

/// Measures every codec and level asked for on every device asked for; progress on stderr
/// unless quiet. Fails (status 1) if any row does.
pub fn run(args: &BenchArgs) -> Result<ExitCode> {
    let budget = Duration::try_from_secs_f64(args.seconds).with_context(|| format!("--seconds {}", args.seconds))?;
    let (input, what) = match &args.file {
        Some(path) => {
            let input = std::fs::read(path).with_context(|| path.display().to_string())?;
            let what = format!("{} ({} bytes)", path.display(), input.len());
            (input, what)
        }
        None => (sample(SAMPLE_SIZE), SAMPLE.to_string()),
    };
    let algorithms = match args.algorithms.is_empty() {
        true => AlgorithmArg::value_variants(),
        false => &args.algorithms[..],
    };
    let devices = devices(args)?;
    println!(
        "ferrocomp bench on {what}: chunks of {} bytes, no checksums, numeric codecs with their default options; \
         the best of {} s of runs per measurement; GB/s of uncompressed bytes. Kernel: data already where the codec \
         runs; end to end: host bytes in and out through the pipelined stream path.\n",
        args.chunk_size, args.seconds
    );
    println!(
        "| device | codec | level | ratio | kernel compress GB/s | kernel decompress GB/s | end-to-end compress GB/s \
         | end-to-end decompress GB/s |\n|---|---|---|--:|--:|--:|--:|--:|"
    );
    let mut status = ExitCode::SUCCESS;
    for (device, gpu) in &devices {
        for &algorithm in algorithms {
            let levels: Vec<Option<u8>> = algorithm.levels().map_or(vec![None], |levels| levels.map(Some).collect());
            for level in levels {
                let (name, level_text) = (algorithm.name(), level.map_or("-".to_string(), |level| level.to_string()));
                if !args.quiet {
                    eprintln!("ferrocomp bench: {device} {name} level {level_text}");
                }
                let cells = match measure(algorithm, level, args.chunk_size, gpu.clone(), &input, budget) {
                    Ok(row) => row.cells(),
                    Err(e) => {
                        status = ExitCode::FAILURE;
                        format!("error: {} | | | |", format!("{e:#}").replace('|', "\\|"))
                    }
                };
                println!("| {device} | {name} | {level_text} | {cells} |");
                std::io::stdout().flush()?;
            }
        }
    }
    Ok(status)
}

/// The devices asked for, each with its name: the GPU (unless `--cpu`; required with `--gpu`,
/// else skipped, saying so, where there is none), then the CPU (unless `--gpu`).
fn devices(args: &BenchArgs) -> Result<Vec<(String, Option<Gpu>)>> {
    let mut devices = Vec::new();
    if !args.cpu {
        match Gpu::new(0) {
            Ok(gpu) => devices.push((gpu.name().to_string(), Some(gpu))),
            Err(e) if args.gpu => bail!("--gpu: {e}"),
            Err(e) if !args.quiet => eprintln!("ferrocomp bench: {e}; the CPU only"),
            Err(_) => {}
        }
    }
    if !args.gpu {
        devices.push(("CPU".to_string(), None));
    }
    Ok(devices)
}

impl Row {
    /// The table's cells from the ratio on: the ratio, then GB/s of uncompressed bytes.
    fn cells(&self) -> String {
        let ratio = self.uncompressed as f64 / self.compressed.max(1) as f64;
        let times =
            [self.kernel_compress, self.kernel_decompress, self.end_to_end_compress, self.end_to_end_decompress];
        let speeds = times.map(|time| speed(self.uncompressed as u64, time));
        format!("{ratio:.3} | {}", speeds.join(" | "))
    }
}

/// GB/s of `bytes` in `time`, to three significant digits.
pub fn speed(bytes: u64, time: Duration) -> String {
    let speed = bytes as f64 / time.as_secs_f64() / 1e9;
    let decimals = (2.0 - speed.log10().floor()).clamp(0.0, 9.0) as usize;
    format!("{speed:.decimals$}")
}

/// One row: `algorithm` at `level` in chunks of `chunk_size` on `gpu` (the CPU for `None`).
fn measure(
    algorithm: AlgorithmArg,
    level: Option<u8>,
    chunk_size: usize,
    gpu: Option<Gpu>,
    input: &[u8],
    budget: Duration,
) -> Result<Row> {
    let options = options(algorithm, level, None, &NumericArgs::default())?;
    let codec = BufferCodec::new(options, Config { chunk_size, ..Config::default() }, gpu)?;
    let (compressed, kernel_compress, kernel_decompress) = match codec.gpu() {
        Some(gpu) => kernel_gpu(&codec, gpu, input, budget)?,
        None => kernel_cpu(&codec, input, budget)?,
    };
    let (end_to_end_compress, end_to_end_decompress) = end_to_end(&codec, input, budget)?;
    Ok(Row {
        uncompressed: input.len(),
        compressed,
        kernel_compress,
        kernel_decompress,
        end_to_end_compress,
        end_to_end_decompress,
    })
}

/// The compressed size and the best compression and decompression times on the GPU, of data
/// already in device memory (`compress_device`, `decompress_device`, a stream synchronize).
fn kernel_gpu(codec: &BufferCodec, gpu: &Gpu, input: &[u8], budget: Duration) -> Result<(usize, Duration, Duration)> {
    let stream = gpu.stream()?;
    let uploaded = gpu.upload(input)?;
    let (compress, compressed) =
        best_on_stream(budget, &stream, || Ok(codec.compress_device(uploaded.view(), &stream)?))?;
    let (decompress, restored) =
        best_on_stream(budget, &stream, || Ok(codec.decompress_device(compressed.view(), &stream)?))?;
    let restored = gpu.download(restored.view())?;
    ensure!(restored == input, "the kernels' round trip differs from the input");
    Ok((compressed.len(), compress, decompress))
}

/// The compressed size and the best compression and decompression times on the CPU, in memory
/// (`compress`, `decompress_into`).
fn kernel_cpu(codec: &BufferCodec, input: &[u8], budget: Duration) -> Result<(usize, Duration, Duration)> {
    let mut compressed = Vec::new();
    let compress = best(budget, || {
        let start = Instant::now();
        let output = codec.compress(input)?;
        let time = start.elapsed();
        compressed = output;
        Ok(time)
    })?;
    let mut restored = vec![0; input.len()];
    let decompress = best(budget, || {
        let start = Instant::now();
        let size = codec.decompress_into(&compressed, &mut restored)?;
        ensure!(size == input.len(), "decompressed to {size} bytes, not {}", input.len());
        Ok(start.elapsed())
    })?;
    ensure!(restored == input, "the in-memory round trip differs from the input");
    Ok((compressed.len(), compress, decompress))
}

/// The best compression and decompression times from host bytes to host bytes through the
/// pipelined stream path (`compress_stream`, `decompress_stream`).
fn end_to_end(codec: &BufferCodec, input: &[u8], budget: Duration) -> Result<(Duration, Duration)> {
    let mut compressed = Vec::with_capacity(input.len() / 2);
    let compress = best(budget, || {
        compressed.clear();
        let start = Instant::now();
        codec.compress_stream(input, &mut compressed, &mut |_| {})?;
        Ok(start.elapsed())
    })?;
    let mut restored = Vec::with_capacity(input.len());
    let decompress = best(budget, || {
        restored.clear();
        let start = Instant::now();
        codec.decompress_stream(&compressed[..], &mut restored, &mut |_| {})?;
        Ok(start.elapsed())
    })?;
    ensure!(restored == input, "the end-to-end round trip differs from the input");
    Ok((compress, decompress))
}

/// The shortest of the times `run` reports, run again and again for `budget` (at least once).
fn best(budget: Duration, mut run: impl FnMut() -> Result<Duration>) -> Result<Duration> {
    let start = Instant::now();
    let mut best = run()?;
    while start.elapsed() < budget {
        best = best.min(run()?);
    }
    Ok(best)
}

/// The shortest time of `run` and a synchronize of `stream`, run again and again for `budget`
/// (at least once), and what its last run returned.
fn best_on_stream<T>(budget: Duration, stream: &Stream, mut run: impl FnMut() -> Result<T>) -> Result<(Duration, T)> {
    let mut last = None;
    let time = best(budget, || {
        let start = Instant::now();
        let output = run()?;
        stream.synchronize()?;
        let time = start.elapsed();
        last = Some(output);
        Ok(time)
    })?;
    Ok((time, last.expect("run at least once")))
}

/// `len` bytes of [`SAMPLE`]: lines of words, some repeating earlier lines.
fn sample(len: usize) -> Vec<u8> {
    /// The vocabulary.
    const WORDS: [&str; 64] = [
        "the",
        "of",
        "and",
        "to",
        "in",
        "a",
        "is",
        "that",
        "for",
        "it",
        "as",
        "was",
        "with",
        "be",
        "by",
        "on",
        "not",
        "he",
        "this",
        "are",
        "or",
        "his",
        "from",
        "at",
        "which",
        "but",
        "have",
        "an",
        "had",
        "they",
        "you",
        "were",
        "their",
        "one",
        "all",
        "we",
        "can",
        "her",
        "has",
        "there",
        "been",
        "if",
        "more",
        "when",
        "will",
        "would",
        "who",
        "so",
        "no",
        "chunk",
        "stream",
        "kernel",
        "device",
        "memory",
        "warp",
        "block",
        "thread",
        "buffer",
        "compression",
        "ratio",
        "throughput",
        "latency",
        "segment",
        "pipeline",
    ];
    /// Lines a repeat may copy: the last this many.
    const RECENT: usize = 100;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = Vec::with_capacity(len + 256);
    let (mut recent, mut lines) = ([(0, 0); RECENT], 0);
    while out.len() < len {
        let start = out.len();
        let pick = next();
        if pick.is_multiple_of(8) && lines > 0 {
            let (from, to) = recent[(pick >> 8) as usize % lines.min(RECENT)];
            out.extend_from_within(from..to);
        } else {
            for word in 0..4 + (pick >> 16) % 12 {
                if word > 0 {
                    out.push(b' ');
                }
                out.extend_from_slice(WORDS[(next() % 64) as usize].as_bytes());
            }
            out.extend_from_slice(b".\n");
        }
        recent[lines % RECENT] = (start, out.len());
        lines += 1;
    }
    out.truncate(len);
    out
}

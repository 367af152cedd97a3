//! `ferrocomp`: compresses and decompresses files on the GPU, or on the CPU without one, with
//! lz4's and zstd's command line: `ferrocomp FILE` writes FILE.fcmp, `ferrocomp -d FILE.fcmp`
//! restores FILE; `ferrocomp info` describes native files and `ferrocomp bench` measures codecs.

mod bench;
mod files;
mod info;
mod options;

use anyhow::{Context, Result, bail};
use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Parser, Subcommand};
use ferrocomp::{BufferCodec, Gpu, Totals};
use files::{Direction, Input, Job, Policy, Sink, Target};
use options::CodecArgs;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// The command line.
#[derive(Parser)]
#[command(
    name = "ferrocomp",
    version,
    about = "GPU compression (falls back to the CPU without a CUDA device)",
    long_about = "GPU compression (falls back to the CPU without a CUDA device).\n\n\
        Compresses each FILE to FILE.fcmp, or with -d restores FILE from FILE.fcmp; sources are kept. \
        With - or no FILE, reads standard input and writes standard output (unless -o).",
    args_conflicts_with_subcommands = true,
    after_help = "A file named like a command: ./info, ./bench."
)]
struct Cli {
    /// `info` or `bench`, or none to compress or decompress.
    #[command(subcommand)]
    command: Option<Command>,
    /// Files to compress (to FILE.fcmp) or decompress (FILE.fcmp to FILE); - for standard input.
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    /// No progress bar and no summaries (errors are still shown).
    #[arg(short, long, conflicts_with = "verbose")]
    quiet: bool,
    /// Print the device, sizes, ratio and throughput of each file.
    #[arg(short, long)]
    verbose: bool,
    /// Which way, and where outputs go.
    #[command(flatten)]
    files_args: FilesArgs,
    /// The codec and its options.
    #[command(flatten)]
    codec: CodecArgs,
}

/// The commands besides compressing and decompressing.
#[derive(Subcommand)]
enum Command {
    /// Describe native files: container version, algorithm and options, chunks, sizes, ratio,
    /// stored CRC-32s.
    Info {
        /// Native files (- for standard input).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
    /// Measure every codec and level (or those of -a) on the GPU and the CPU, as lz4 -b and
    /// zstd -b do: a Markdown table on stdout.
    Bench(bench::BenchArgs),
}

/// Which way, and where outputs go.
#[derive(Args)]
#[command(next_help_heading = "Files")]
struct FilesArgs {
    /// Compress (the default).
    #[arg(short = 'z', long, overrides_with = "decompress")]
    compress: bool,
    /// Decompress FILE.fcmp to FILE (with -a and --bitstream, raw streams of any name with -o or -c).
    #[arg(short, long, overrides_with = "compress")]
    decompress: bool,
    /// Write to standard output.
    #[arg(short = 'c', long = "stdout", conflicts_with = "output")]
    stdout: bool,
    /// Write to FILE (one input only; - for standard output).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Overwrite existing outputs; write compressed data to a terminal, read it from one.
    #[arg(short, long)]
    force: bool,
    /// Keep source files (the default).
    #[arg(short, long, overrides_with = "rm")]
    keep: bool,
    /// Remove each source file once its output is complete.
    #[arg(long, overrides_with = "keep", conflicts_with = "stdout")]
    rm: bool,
}

impl FilesArgs {
    /// Compressing, unless the last of -z and -d was -d.
    fn direction(&self) -> Direction {
        if self.decompress && !self.compress { Direction::Decompress } else { Direction::Compress }
    }
}

/// Compresses or decompresses each file; reports each failure and goes on.
fn transcode(cli: &Cli) -> ExitCode {
    let args = &cli.files_args;
    let direction = args.direction();
    let stdin = [PathBuf::from("-")];
    let inputs = if cli.files.is_empty() { &stdin[..] } else { &cli.files[..] };
    if inputs.len() > 1 && args.output.is_some() {
        usage_error("-o names the output of one input; give one FILE");
    }
    if inputs.len() > 1 && args.stdout && direction == Direction::Compress {
        usage_error("-c compresses one FILE at a time (several containers in one stream are not one stream)");
    }
    let gpu = if cli.codec.cpu { None } else { gpu(cli.quiet) };
    let device = gpu.as_ref().map_or("CPU".to_string(), |gpu| gpu.name().to_string());
    let codec = match cli.codec.codec(gpu) {
        Ok(codec) => codec,
        Err(e) => return failure(&e),
    };
    let policy = Policy { force: args.force, remove_source: args.rm && !args.keep, progress: !cli.quiet };
    let mut status = ExitCode::SUCCESS;
    for input in inputs {
        let start = Instant::now();
        let job = Job::new(input, args.output.as_deref(), args.stdout, direction);
        let done = job.and_then(|job| {
            let totals = job.run(&policy, |from, to| code(&codec, direction, cli.codec.size, &job, from, to))?;
            Ok((job, totals))
        });
        match done {
            Ok((job, totals)) if cli.verbose || (!cli.quiet && !matches!(job.sink, Sink::Stdout)) => {
                summarise(&job, direction, totals, cli.verbose.then_some((device.as_str(), start)));
            }
            Ok(_) => {}
            Err(e) => status = failure(&e),
        }
    }
    status
}

/// Runs the codec over one job's bytes; `size`: the decompressed size the user expects.
fn code(
    codec: &BufferCodec,
    direction: Direction,
    size: Option<usize>,
    job: &Job,
    input: Input<'_>,
    output: Target<'_>,
) -> Result<Totals> {
    let source = &job.source;
    let mut progress = input.progress();
    let reader = input.reader;
    let totals = match (direction, output, input.file) {
        (Direction::Compress, Target::Stream(stream), _) => codec.compress_stream(reader, stream, &mut |_| {}),
        (Direction::Compress, Target::File(file), _) => codec.compress_stream(reader, file, &mut |_| {}),
        (Direction::Decompress, Target::Stream(stream), _) => codec.decompress_stream(reader, stream, &mut |_| {}),
        // A file's chunks are read as byte ranges on all cores (straight to the GPU), and decoded
        // segments are written by several threads at their offsets (the page cache takes one
        // file's writes at a few GB/s a thread).
        (Direction::Decompress, Target::File(file), Some(path)) => codec.decompress_file(path, file, &mut progress),
        (Direction::Decompress, Target::File(file), None) => codec.decompress_to_file(reader, file, &mut |_| {}),
    };
    let totals = totals.with_context(|| match direction {
        Direction::Compress => format!("compressing {source}"),
        Direction::Decompress => format!("decompressing {source}"),
    })?;
    let decompressing = direction == Direction::Decompress;
    if let Some(size) = size.filter(|&size| decompressing && size as u64 != totals.uncompressed) {
        bail!("decompressing {source}: the stream decodes to {} bytes, --size says {size}", totals.uncompressed);
    }
    Ok(totals)
}

/// Prints what a job did: sizes and ratio, and with `verbose` (device, start) the device and
/// throughput.
fn summarise(job: &Job, direction: Direction, totals: Totals, verbose: Option<(&str, Instant)>) {
    let Totals { uncompressed, compressed } = totals;
    let (read, written) = match direction {
        Direction::Compress => (uncompressed, compressed),
        Direction::Decompress => (compressed, uncompressed),
    };
    let ratio = uncompressed as f64 / compressed.max(1) as f64;
    let line = format!("{} -> {}: {read} -> {written} bytes, ratio {ratio:.3}", job.source, job.sink);
    match verbose {
        Some((device, start)) => {
            eprintln!("{line}, {device}, {} GB/s", bench::speed(uncompressed, start.elapsed()));
        }
        None => eprintln!("{line}"),
    }
}

/// The GPU, or `None` (said on stderr unless `quiet`) where there is none.
fn gpu(quiet: bool) -> Option<Gpu> {
    match Gpu::new(0) {
        Ok(gpu) => Some(gpu),
        Err(e) => {
            if !quiet {
                eprintln!("ferrocomp: {e}; using the CPU");
            }
            None
        }
    }
}

/// Reports `error` on stderr; the exit status of a failure.
fn failure(error: &anyhow::Error) -> ExitCode {
    eprintln!("ferrocomp: {error:#}");
    ExitCode::FAILURE
}

/// Exits with clap's usage error `message` (status 2).
fn usage_error(message: &str) -> ! {
    Cli::command().error(ErrorKind::ArgumentConflict, message).exit()
}

/// Runs the command line's command.
fn main() -> ExitCode {
    let cli = Cli::parse();
    match &cli.command {
        None => transcode(&cli),
        Some(Command::Info { files }) => info::run(files),
        Some(Command::Bench(args)) => bench::run(args).unwrap_or_else(|e| failure(&e)),
    }
}

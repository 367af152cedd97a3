//! `ferrocomp`: compresses and decompresses files on the GPU, or on the CPU without one.

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use ferrocomp::{
    Ans, AnsDataType, Bitcomp, Bitstream, Blosc, BufferCodec, Cascaded, ChecksumPolicy, Config, DEFAULT_CHUNK_SIZE,
    DataType, Deflate, ElementType, ErrorBound, GDeflate, Gpu, Lz4, Options, Shuffle, Snappy, Wrapper, Zstd,
};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Inputs larger than this get a progress bar.
const PROGRESS_THRESHOLD: usize = 64 << 20;

#[derive(Parser)]
#[command(name = "ferrocomp", version, about = "GPU compression (falls back to the CPU without a CUDA device)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Print the device, sizes, ratio and throughput.
    #[arg(short, long, global = true)]
    verbose: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Compress IN into OUT.
    Compress {
        #[command(flatten)]
        common: Common,
        /// Uncompressed bytes per chunk (native bitstream): bytes, or with a K, KiB, M or MiB suffix.
        #[arg(long, value_parser = parse_size, default_value_t = DEFAULT_CHUNK_SIZE)]
        chunk_size: usize,
        /// Element type of the input; matches align to its width (lz4, snappy), blosc shuffles its
        /// bytes, cascaded and bitcomp code numbers of it (float and double as their bits, but for
        /// bitcomp's --error-bound), ans codes bytes or float16. Default char, for cascaded uint,
        /// for a lossy bitcomp float.
        #[arg(long, value_enum)]
        data_type: Option<DataTypeArg>,
        #[command(flatten)]
        numeric: NumericArgs,
        /// Level of deflate, zlib, gzip and gdeflate (nvCOMP's algorithm_type): 0 entropy coding
        /// only, 1 fast (the default), 2-3 medium, 4 high, 5 highest ratio. Of zstd: 1 fast (the
        /// default) to 2, higher ratio.
        #[arg(short, long)]
        level: Option<u8>,
    },
    /// Decompress IN into OUT.
    Decompress {
        #[command(flatten)]
        common: Common,
        /// Expected decompressed size; fails if the stream decodes to another.
        #[arg(long, value_parser = parse_size)]
        size: Option<usize>,
    },
}

/// The numeric codecs' options: Cascaded's layers (nvCOMP's num_RLEs, num_deltas and use_bp),
/// Bitcomp's algorithm and error bound.
#[derive(Args)]
struct NumericArgs {
    /// Cascaded: run-length layers, at most 4 (searched per sub-block up to this unless --exact-layers).
    #[arg(long, default_value_t = Cascaded::default().rles)]
    rles: u8,
    /// Cascaded: delta layers, at most 4 (searched per sub-block up to this unless --exact-layers).
    #[arg(long, default_value_t = Cascaded::default().deltas)]
    deltas: u8,
    /// Cascaded: store the streams' entries whole rather than bit-packed.
    #[arg(long)]
    no_bitpack: bool,
    /// Cascaded: apply exactly --rles and --deltas layers to every sub-block, as nvCOMP does.
    #[arg(long)]
    exact_layers: bool,
    /// Bitcomp: nvCOMP's sparse algorithm (algorithm_type 1), for data with many zeros.
    #[arg(long)]
    sparse: bool,
    /// Bitcomp: lossy; each element, a float (4-byte data types) or double (8-byte), decodes
    /// within this absolute error of its value.
    #[arg(long)]
    error_bound: Option<f32>,
}

impl Default for NumericArgs {
    /// The options' defaults (a stream decodes whatever layers it has).
    fn default() -> Self {
        let Cascaded { rles, deltas, .. } = Cascaded::default();
        Self { rles, deltas, no_bitpack: false, exact_layers: false, sparse: false, error_bound: None }
    }
}

/// Arguments of both commands.
#[derive(Args)]
struct Common {
    /// Algorithm (a native stream is decompressed with the one its header names).
    #[arg(short, long, value_enum, default_value_t = AlgorithmArg::Lz4)]
    algorithm: AlgorithmArg,
    /// Framing of the compressed bytes.
    #[arg(long, value_enum, default_value_t = BitstreamArg::Native)]
    bitstream: BitstreamArg,
    /// Whether CRC-32s are stored (compress) and checked (decompress).
    #[arg(long, value_enum, default_value_t = ChecksumArg::NoComputeNoVerify)]
    checksum: ChecksumArg,
    /// Run on the CPU even if a CUDA device is present.
    #[arg(long)]
    cpu: bool,
    /// File to read.
    input: PathBuf,
    /// File to write (only once the whole operation has succeeded).
    output: PathBuf,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AlgorithmArg {
    Lz4,
    Snappy,
    /// raw deflate (RFC 1951)
    Deflate,
    /// deflate in a zlib wrapper (RFC 1950)
    Zlib,
    /// deflate in a gzip wrapper (RFC 1952)
    Gzip,
    Gdeflate,
    /// Blosc 1 chunks as numcodecs writes them: LZ4 inside, bytes of --data-type elements shuffled
    Blosc,
    /// Zstandard frames (RFC 8878), as libzstd reads and writes them
    Zstd,
    /// run-length, delta and bit-packing layers over --data-type integers (nvCOMP's Cascaded)
    Cascaded,
    /// bit-packed tiles of --data-type numbers, lossless or within --error-bound (nvCOMP's Bitcomp)
    Bitcomp,
    /// interleaved rANS entropy coding of bytes, or of float16's high bytes (nvCOMP's ANS)
    Ans,
}

#[derive(Clone, Copy, ValueEnum)]
enum BitstreamArg {
    /// ferrocomp's chunked container, naming its algorithm.
    Native,
    /// one standard block, nothing else.
    Raw,
    /// the uncompressed size (u64, little-endian), then one standard block.
    WithSize,
}

#[derive(Clone, Copy, ValueEnum)]
enum ChecksumArg {
    NoComputeNoVerify,
    ComputeNoVerify,
    NoComputeVerifyIfPresent,
    ComputeVerifyIfPresent,
    ComputeVerify,
}

/// nvCOMP's data types (the signed and unsigned of a width alike but for the numeric codecs'
/// element type; floats as unsigned integers of their width).
#[derive(Clone, Copy, ValueEnum)]
enum DataTypeArg {
    Char,
    Uchar,
    Short,
    Ushort,
    Int,
    Uint,
    #[value(name = "longlong")]
    LongLong,
    #[value(name = "ulonglong")]
    ULongLong,
    Float,
    Double,
    Float16,
}

impl DataTypeArg {
    /// The numeric codecs' element type of the same width and sign.
    fn element(self) -> ElementType {
        match self {
            Self::Float16 => ElementType::U16,
            Self::Float => ElementType::U32,
            Self::Double => ElementType::U64,
            _ => ElementType::ALL[self as usize], // nvCOMP's order
        }
    }

    /// The width, as LZ4's and Snappy's data type.
    fn data_type(self) -> DataType {
        [DataType::Char, DataType::Short, DataType::Int, DataType::LongLong]
            [self.element().width().trailing_zeros() as usize]
    }
}

impl Common {
    fn config(&self, chunk_size: usize) -> Config {
        let bitstream = match self.bitstream {
            BitstreamArg::Native => Bitstream::Native,
            BitstreamArg::Raw => Bitstream::Raw,
            BitstreamArg::WithSize => Bitstream::WithUncompressedSize,
        };
        let checksum = match self.checksum {
            ChecksumArg::NoComputeNoVerify => ChecksumPolicy::NoComputeNoVerify,
            ChecksumArg::ComputeNoVerify => ChecksumPolicy::ComputeAndNoVerify,
            ChecksumArg::NoComputeVerifyIfPresent => ChecksumPolicy::NoComputeAndVerifyIfPresent,
            ChecksumArg::ComputeVerifyIfPresent => ChecksumPolicy::ComputeAndVerifyIfPresent,
            ChecksumArg::ComputeVerify => ChecksumPolicy::ComputeAndVerify,
        };
        Config { chunk_size, bitstream, checksum }
    }

    fn options(&self, data_type: Option<DataTypeArg>, level: Option<u8>, numeric: &NumericArgs) -> Result<Options> {
        let data_type_arg = data_type;
        let element = data_type.unwrap_or(DataTypeArg::Uint).element();
        let bitcomp_element = data_type
            .unwrap_or(if numeric.error_bound.is_some() { DataTypeArg::Float } else { DataTypeArg::Char })
            .element();
        let data_type = data_type.unwrap_or(DataTypeArg::Char).data_type();
        let (levels, default) = match self.algorithm {
            AlgorithmArg::Zstd => (Zstd::LEVELS, Zstd::default().level),
            _ => (Deflate::LEVELS, Deflate::default().level),
        };
        let level = match level {
            None => default,
            Some(level) if levels.contains(&level) => level,
            Some(level) => bail!("level {level} is outside {}..={} for this algorithm", levels.start(), levels.end()),
        };
        Ok(match self.algorithm {
            AlgorithmArg::Lz4 => Options::Lz4(Lz4 { data_type }),
            AlgorithmArg::Snappy => Options::Snappy(Snappy { data_type }),
            AlgorithmArg::Deflate => Options::Deflate(Deflate { level, wrapper: Wrapper::Raw }),
            AlgorithmArg::Zlib => Options::Deflate(Deflate { level, wrapper: Wrapper::Zlib }),
            AlgorithmArg::Gzip => Options::Deflate(Deflate { level, wrapper: Wrapper::Gzip }),
            AlgorithmArg::Gdeflate => Options::GDeflate(GDeflate { level }),
            AlgorithmArg::Blosc => Options::Blosc(Blosc { typesize: data_type.width() as u8, shuffle: Shuffle::Byte }),
            AlgorithmArg::Zstd => Options::Zstd(Zstd { level }),
            AlgorithmArg::Cascaded => {
                let (rles, deltas) = (numeric.rles, numeric.deltas);
                let bitpack = !numeric.no_bitpack;
                let cascaded = Cascaded { element, rles, deltas, bitpack, auto: !numeric.exact_layers };
                if !cascaded.valid() {
                    bail!("--rles {rles} and --deltas {deltas}: each may be at most 4");
                }
                Options::Cascaded(cascaded)
            }
            AlgorithmArg::Bitcomp => {
                let error_bound = match numeric.error_bound {
                    Some(bound) => Some(
                        ErrorBound::new(bound)
                            .with_context(|| format!("--error-bound {bound}: the bound must be finite and above 0"))?,
                    ),
                    None => None,
                };
                let bitcomp = Bitcomp { element: bitcomp_element, sparse: numeric.sparse, error_bound };
                if !bitcomp.valid() {
                    bail!(
                        "--error-bound needs 4- or 8-byte elements (float or double), not {}-byte",
                        bitcomp_element.width()
                    );
                }
                Options::Bitcomp(bitcomp)
            }
            AlgorithmArg::Ans => Options::Ans(Ans {
                data_type: match data_type_arg {
                    None | Some(DataTypeArg::Char | DataTypeArg::Uchar) => AnsDataType::Bytes,
                    Some(DataTypeArg::Float16) => AnsDataType::Float16,
                    Some(_) => bail!("ans codes bytes (--data-type char or uchar) or float16"),
                },
            }),
        })
    }

    /// The GPU, unless `--cpu` was given or there is none (which is said once on stderr).
    fn gpu(&self) -> Option<Gpu> {
        if self.cpu {
            return None;
        }
        Gpu::new(0).inspect_err(|e| eprintln!("ferrocomp: {e}; using the CPU")).ok()
    }
}

/// A byte count: plain, or with a K, KiB, M or MiB suffix.
fn parse_size(text: &str) -> Result<usize, String> {
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let scale = match unit {
        "" => 1,
        "K" | "k" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        _ => return Err(format!("unknown unit {unit:?} (use K, KiB, M or MiB)")),
    };
    let value: usize = digits.parse().map_err(|e| format!("{text:?} is not a size: {e}"))?;
    value.checked_mul(scale).ok_or_else(|| format!("{text} is too large"))
}

/// A progress bar on stderr for `total` bytes; hidden for small totals (and by indicatif when
/// stderr is not a terminal).
fn progress_bar(total: usize) -> ProgressBar {
    if total <= PROGRESS_THRESHOLD {
        return ProgressBar::hidden();
    }
    let style =
        ProgressStyle::with_template("{bar:40} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {eta}")
            .expect("valid template");
    ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr()).with_style(style)
}

/// Reads IN, compresses or decompresses it, and writes OUT once that has succeeded.
fn run(cli: Cli) -> Result<()> {
    let (Command::Compress { common, .. } | Command::Decompress { common, .. }) = &cli.command;
    let input_path = common.input.display();
    let input = std::fs::read(&common.input).with_context(|| format!("reading {input_path}"))?;
    let gpu = common.gpu();
    let device = gpu.as_ref().map_or("CPU".into(), |gpu| gpu.name().to_string());
    let start = Instant::now();
    let (output, uncompressed, compressed) = match cli.command {
        Command::Compress { ref common, chunk_size, data_type, level, ref numeric } => {
            let codec = BufferCodec::new(common.options(data_type, level, numeric)?, common.config(chunk_size), gpu)
                .context("configuring the compressor")?;
            let bar = progress_bar(input.len());
            let output = codec
                .compress_with_progress(&input, &mut |done| bar.set_position(done as u64))
                .with_context(|| format!("compressing {input_path}"))?;
            bar.finish_and_clear();
            let compressed = output.len();
            (output, input.len(), compressed)
        }
        Command::Decompress { ref common, size } => {
            let codec = BufferCodec::new(
                common.options(None, None, &NumericArgs::default())?,
                common.config(DEFAULT_CHUNK_SIZE),
                gpu,
            )
            .context("configuring the decompressor")?;
            let context = || format!("decompressing {input_path}");
            let total = codec.read_frame(&input).with_context(context)?.total_size;
            if let Some(size) = size.filter(|&size| size != total) {
                bail!("{}: the stream decodes to {total} bytes, --size says {size}", context());
            }
            let bar = progress_bar(total);
            let output = codec
                .decompress_with_progress(&input, &mut |done| bar.set_position(done as u64))
                .with_context(context)?;
            bar.finish_and_clear();
            (output, total, input.len())
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    std::fs::write(&common.output, &output).with_context(|| format!("writing {}", common.output.display()))?;
    if cli.verbose {
        eprintln!(
            "ferrocomp: {device}: {} -> {} bytes, ratio {:.3}, {:.3} GB/s",
            input.len(),
            output.len(),
            uncompressed as f64 / compressed.max(1) as f64,
            uncompressed as f64 / seconds / 1e9,
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ferrocomp: {e:#}");
            ExitCode::FAILURE
        }
    }
}

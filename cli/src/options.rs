//! The codec's arguments (algorithm, level, data type, the numeric codecs' options, bitstream,
//! chunk and segment sizes, checksums) and what they make: [`Options`], [`Config`], a codec.

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use ferrocomp::settings::config;
use ferrocomp::settings::{NumberKind, NumberType, Setting, Settings};
use ferrocomp::{
    Ans, Bitcomp, Bitstream, Blosc, BufferCodec, Cascaded, ChecksumPolicy, Config, DEFAULT_CHUNK_SIZE,
    DEFAULT_SEGMENT_SIZE, Deflate, ElementType, GDeflate, Gpu, Lz4, Options, Snappy, Zstd,
};
use std::ops::RangeInclusive;

/// How to compress, and how to read what is not a native stream.
#[derive(Args)]
#[command(next_help_heading = "Codec")]
pub struct CodecArgs {
    /// Algorithm (a native stream is decompressed with the one its header names).
    #[arg(short, long, value_enum, default_value_t = AlgorithmArg::Lz4)]
    pub algorithm: AlgorithmArg,
    /// Level of deflate, zlib, gzip and gdeflate (nvCOMP's algorithm_type): 0 entropy coding
    /// only, 1 fast (the default), 2-3 medium, 4 high, 5 highest ratio. Of zstd: 1 fast (the
    /// default) to 3, higher ratio. Other algorithms ignore it.
    #[arg(short, long)]
    pub level: Option<u8>,
    /// Element type of the input; matches align to its width (lz4, snappy), blosc shuffles its
    /// bytes, cascaded and bitcomp code numbers of it (float and double as their bits, but for
    /// bitcomp's --error-bound), ans codes bytes, float8, float16 or float (float32). Default char, for cascaded uint,
    /// for a lossy bitcomp float.
    #[arg(long, value_enum)]
    pub data_type: Option<DataTypeArg>,
    /// Framing of the compressed bytes.
    #[arg(long, value_enum, default_value_t = BitstreamArg::Native)]
    pub bitstream: BitstreamArg,
    /// Uncompressed bytes per chunk (native bitstream): bytes, or with a K, KiB, M or MiB suffix.
    #[arg(long, value_parser = parse_size, default_value_t = DEFAULT_CHUNK_SIZE)]
    pub chunk_size: usize,
    /// Uncompressed bytes per pipelined segment (whole chunks, at least one), with units as --chunk-size.
    #[arg(long, value_parser = parse_size, default_value_t = DEFAULT_SEGMENT_SIZE)]
    pub segment_size: usize,
    /// Whether CRC-32s are stored (compress) and checked (decompress). nvCOMP's names are
    /// accepted too (compute-and-verify-if-present, COMPUTE_AND_VERIFY_IF_PRESENT, ...).
    #[arg(long, value_enum, default_value_t = ChecksumArg::ComputeVerifyIfPresent)]
    pub checksum: ChecksumArg,
    /// Neither store nor check CRC-32s (--checksum no-compute-no-verify).
    #[arg(long, conflicts_with = "checksum")]
    pub no_check: bool,
    /// Expected decompressed size; fails if the stream decodes to another.
    #[arg(long, value_parser = parse_size)]
    pub size: Option<usize>,
    /// Run on the CPU even if a CUDA device is present.
    #[arg(long)]
    pub cpu: bool,
    /// Cascaded's and Bitcomp's options.
    #[command(flatten)]
    pub numeric: NumericArgs,
}

/// The numeric codecs' options: Cascaded's layers (nvCOMP's num_RLEs, num_deltas and use_bp),
/// Bitcomp's algorithm and error bound.
#[derive(Args, Default)]
#[command(next_help_heading = "Cascaded and Bitcomp")]
pub struct NumericArgs {
    /// Cascaded: run-length layers, at most 4, default 2 (searched per sub-block up to this unless
    /// --exact-layers).
    #[arg(long)]
    rles: Option<u8>,
    /// Cascaded: delta layers, at most 4, default 1 (searched per sub-block up to this unless
    /// --exact-layers).
    #[arg(long)]
    deltas: Option<u8>,
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

/// The algorithms, as `-a` names them.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AlgorithmArg {
    /// LZ4 blocks
    Lz4,
    /// Snappy raw streams
    Snappy,
    /// raw deflate (RFC 1951)
    Deflate,
    /// deflate in a zlib wrapper (RFC 1950)
    Zlib,
    /// deflate in a gzip wrapper (RFC 1952)
    Gzip,
    /// GDeflate pages (DirectStorage's and nvCOMP's)
    Gdeflate,
    /// Blosc 1 chunks as numcodecs writes them: LZ4 inside, bytes of --data-type elements shuffled
    Blosc,
    /// Zstandard frames (RFC 8878), as libzstd reads and writes them
    Zstd,
    /// run-length, delta and bit-packing layers over --data-type integers (nvCOMP's Cascaded)
    Cascaded,
    /// bit-packed tiles of --data-type numbers, lossless or within --error-bound (nvCOMP's Bitcomp)
    Bitcomp,
    /// interleaved rANS entropy coding of bytes, or of float16's and float32's high bytes (nvCOMP's ANS)
    Ans,
}

impl AlgorithmArg {
    /// The name `-a` takes.
    pub fn name(self) -> String {
        self.to_possible_value().expect("no variant is skipped").get_name().to_string()
    }

    /// The levels it has, if it has levels.
    pub fn levels(self) -> Option<RangeInclusive<u8>> {
        match self {
            Self::Deflate | Self::Zlib | Self::Gzip | Self::Gdeflate => Some(Deflate::LEVELS),
            Self::Zstd => Some(Zstd::LEVELS),
            _ => None,
        }
    }
}

/// The framings of compressed bytes.
#[derive(Clone, Copy, ValueEnum)]
pub enum BitstreamArg {
    /// ferrocomp's chunked container, naming its algorithm.
    Native,
    /// one standard block, nothing else.
    Raw,
    /// the uncompressed size (u64, little-endian), then one standard block.
    WithSize,
}

/// nvCOMP's five checksum policies, by ferrocomp's names and nvCOMP's.
#[derive(Clone, Copy, ValueEnum)]
pub enum ChecksumArg {
    /// store none, check none
    #[value(alias = "NO_COMPUTE_NO_VERIFY")]
    NoComputeNoVerify,
    /// store CRC-32s, check none
    #[value(aliases = ["compute-and-no-verify", "COMPUTE_AND_NO_VERIFY"])]
    ComputeNoVerify,
    /// store none, check those a stream has
    #[value(aliases = ["no-compute-and-verify-if-present", "NO_COMPUTE_AND_VERIFY_IF_PRESENT"])]
    NoComputeVerifyIfPresent,
    /// store CRC-32s, check those a stream has
    #[value(aliases = ["compute-and-verify-if-present", "COMPUTE_AND_VERIFY_IF_PRESENT"])]
    ComputeVerifyIfPresent,
    /// store CRC-32s, require and check them
    #[value(aliases = ["compute-and-verify", "COMPUTE_AND_VERIFY"])]
    ComputeVerify,
}

/// nvCOMP's data types (the signed and unsigned of a width alike but for the numeric codecs'
/// element type; floats as unsigned integers of their width).
#[derive(Clone, Copy, ValueEnum)]
pub enum DataTypeArg {
    /// 8-bit signed
    Char,
    /// 8-bit unsigned
    Uchar,
    /// 16-bit signed
    Short,
    /// 16-bit unsigned
    Ushort,
    /// 32-bit signed
    Int,
    /// 32-bit unsigned
    Uint,
    /// 64-bit signed
    #[value(name = "longlong")]
    LongLong,
    /// 64-bit unsigned
    #[value(name = "ulonglong")]
    ULongLong,
    /// 32-bit float
    Float,
    /// 64-bit float
    Double,
    /// 16-bit float
    Float16,
    /// 8-bit float (e4m3)
    #[value(name = "float8", alias = "float8_e4m3")]
    Float8,
}

impl DataTypeArg {
    /// What its numbers are, and their width.
    fn number_type(self) -> NumberType {
        let float = |width| NumberType { kind: NumberKind::Float, width };
        match self {
            Self::Float8 => float(1),
            Self::Float16 => float(2),
            Self::Float => float(4),
            Self::Double => float(8),
            // nvCOMP's order: the signed, then the unsigned integers of each width.
            integer => {
                let kind = if (integer as usize).is_multiple_of(2) { NumberKind::Signed } else { NumberKind::Unsigned };
                NumberType { kind, width: 1 << (integer as usize / 2) }
            }
        }
    }

    /// The name `--data-type` takes for an element type.
    fn name_of(element: ElementType) -> String {
        let value = Self::value_variants()[element as usize].to_possible_value();
        value.expect("no variant is skipped").get_name().to_string()
    }
}

impl CodecArgs {
    /// The codec these arguments ask for, on `gpu` (the CPU for `None`).
    pub fn codec(&self, gpu: Option<Gpu>) -> Result<BufferCodec> {
        let options = options(self.algorithm, self.level, self.data_type, &self.numeric)?;
        let codec = BufferCodec::new(options, self.config()?, gpu).context("configuring the codec")?;
        codec.with_segment_size(self.segment_size).with_context(|| format!("--segment-size {}", self.segment_size))
    }

    /// Chunking, framing and checksums.
    fn config(&self) -> Result<Config> {
        let bitstream = match self.bitstream {
            BitstreamArg::Native => Bitstream::Native,
            BitstreamArg::Raw => Bitstream::Raw,
            BitstreamArg::WithSize => Bitstream::WithUncompressedSize,
        };
        let checksum = match (self.no_check, self.checksum) {
            (true, _) | (_, ChecksumArg::NoComputeNoVerify) => ChecksumPolicy::NoComputeNoVerify,
            (_, ChecksumArg::ComputeNoVerify) => ChecksumPolicy::ComputeAndNoVerify,
            (_, ChecksumArg::NoComputeVerifyIfPresent) => ChecksumPolicy::NoComputeAndVerifyIfPresent,
            (_, ChecksumArg::ComputeVerifyIfPresent) => ChecksumPolicy::ComputeAndVerifyIfPresent,
            (_, ChecksumArg::ComputeVerify) => ChecksumPolicy::ComputeAndVerify,
        };
        Ok(config(self.chunk_size, bitstream, checksum)?)
    }
}

/// The options of `algorithm` at `level` (its default for `None`) over `data_type`, by the rules
/// the Python bindings share.
pub fn options(
    algorithm: AlgorithmArg,
    level: Option<u8>,
    data_type: Option<DataTypeArg>,
    numeric: &NumericArgs,
) -> Result<Options> {
    // -l is every algorithm's flag, as lz4's and zstd's: one without levels ignores a level in
    // Deflate's range.
    if let (None, Some(level)) = (algorithm.levels(), level) {
        let levels = Deflate::LEVELS;
        anyhow::ensure!(levels.contains(&level), "level {level} is outside {levels:?} for this algorithm");
    }
    let settings = Settings {
        level: level.filter(|_| algorithm.levels().is_some()).map(i64::from),
        data_type: data_type.map(DataTypeArg::number_type),
        rles: numeric.rles,
        deltas: numeric.deltas,
        bitpack: numeric.no_bitpack.then_some(false),
        search_layers: numeric.exact_layers.then_some(false),
        sparse: numeric.sparse.then_some(true),
        error_bound: numeric.error_bound,
        signed_bytes: true, // --data-type's default, char
        ..Settings::default()
    };
    Ok(settings.options(&algorithm.name(), flag_name)?)
}

/// The command line's name for a setting, as its messages say it.
fn flag_name(setting: Setting) -> &'static str {
    match setting {
        Setting::Level => "level",
        Setting::DataType => "--data-type",
        Setting::Rles => "--rles",
        Setting::Deltas => "--deltas",
        Setting::Bitpack => "--no-bitpack",
        Setting::SearchLayers => "--exact-layers",
        Setting::Sparse => "--sparse",
        Setting::ErrorBound => "--error-bound",
        // Not flags: zlib and gzip are algorithms, Blosc's element size is the data type's.
        Setting::Wrapper => "wrapper",
        Setting::Typesize => "typesize",
        Setting::Shuffle => "shuffle",
    }
}

/// The algorithm and its options in words, as the command line names them.
pub fn describe(options: &Options) -> String {
    let lower = |debug: String| debug.to_lowercase();
    match *options {
        Options::Lz4(Lz4 { data_type }) | Options::Snappy(Snappy { data_type }) => {
            format!("{}, data type {}", options.algorithm().name(), lower(format!("{data_type:?}")))
        }
        Options::Deflate(Deflate { level, wrapper }) => {
            let name = [AlgorithmArg::Deflate, AlgorithmArg::Zlib, AlgorithmArg::Gzip][wrapper as usize].name();
            format!("{name}, level {level}")
        }
        Options::GDeflate(GDeflate { level }) | Options::Zstd(Zstd { level }) => {
            format!("{}, level {level}", options.algorithm().name())
        }
        Options::Blosc(Blosc { typesize, shuffle }) => {
            format!("blosc, {typesize}-byte elements, {} shuffle", lower(format!("{shuffle:?}")))
        }
        Options::Cascaded(Cascaded { element, rles, deltas, bitpack, auto }) => format!(
            "cascaded, data type {}, {} {rles} run-length and {deltas} delta layers, {}",
            DataTypeArg::name_of(element),
            if auto { "up to" } else { "exactly" },
            if bitpack { "bit-packed" } else { "not bit-packed" },
        ),
        Options::Bitcomp(Bitcomp { element, sparse, error_bound }) => format!(
            "bitcomp, data type {}, {} algorithm, {}",
            match (error_bound, element.width()) {
                (Some(_), 4) => "float".to_string(),
                (Some(_), _) => "double".to_string(),
                (None, _) => DataTypeArg::name_of(element),
            },
            if sparse { "sparse" } else { "default" },
            error_bound.map_or("lossless".to_string(), |bound| format!("error bound {}", bound.get())),
        ),
        Options::Ans(Ans { data_type }) => format!("ans, {}", lower(format!("{data_type:?}"))),
    }
}

/// A byte count: plain, or with a K, KiB, M or MiB suffix.
pub fn parse_size(text: &str) -> Result<usize, String> {
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

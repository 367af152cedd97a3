//! The codec's arguments (algorithm, level, data type, the numeric codecs' options, bitstream,
//! chunk and segment sizes, checksums) and what they make: [`Options`], [`Config`], a codec.

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use ferrocomp::{
    Ans, AnsDataType, Bitcomp, Bitstream, Blosc, BufferCodec, Cascaded, ChecksumPolicy, Config, DEFAULT_CHUNK_SIZE,
    DEFAULT_SEGMENT_SIZE, DataType, Deflate, ElementType, ErrorBound, GDeflate, Gpu, Lz4, Options, Shuffle, Snappy,
    Wrapper, Zstd,
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
    /// default) to 3, higher ratio.
    #[arg(short, long)]
    pub level: Option<u8>,
    /// Element type of the input; matches align to its width (lz4, snappy), blosc shuffles its
    /// bytes, cascaded and bitcomp code numbers of it (float and double as their bits, but for
    /// bitcomp's --error-bound), ans codes bytes or float16. Default char, for cascaded uint,
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
#[derive(Args)]
#[command(next_help_heading = "Cascaded and Bitcomp")]
pub struct NumericArgs {
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
    /// The options' defaults.
    fn default() -> Self {
        let Cascaded { rles, deltas, .. } = Cascaded::default();
        Self { rles, deltas, no_bitpack: false, exact_layers: false, sparse: false, error_bound: None }
    }
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
    /// interleaved rANS entropy coding of bytes, or of float16's high bytes (nvCOMP's ANS)
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
        let codec = BufferCodec::new(options, self.config(), gpu).context("configuring the codec")?;
        codec.with_segment_size(self.segment_size).with_context(|| format!("--segment-size {}", self.segment_size))
    }

    /// Chunking, framing and checksums.
    fn config(&self) -> Config {
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
        Config { chunk_size: self.chunk_size, bitstream, checksum }
    }
}

/// The options of `algorithm` at `level` (its default for `None`) over `data_type`.
pub fn options(
    algorithm: AlgorithmArg,
    level: Option<u8>,
    data_type: Option<DataTypeArg>,
    numeric: &NumericArgs,
) -> Result<Options> {
    let data_type_arg = data_type;
    let element = data_type.unwrap_or(DataTypeArg::Uint).element();
    let bitcomp_element = data_type
        .unwrap_or(if numeric.error_bound.is_some() { DataTypeArg::Float } else { DataTypeArg::Char })
        .element();
    let data_type = data_type.unwrap_or(DataTypeArg::Char).data_type();
    let default = match algorithm {
        AlgorithmArg::Zstd => Zstd::default().level,
        _ => Deflate::default().level,
    };
    let levels = algorithm.levels().unwrap_or(Deflate::LEVELS);
    let level = match level {
        None => default,
        Some(level) if levels.contains(&level) => level,
        Some(level) => bail!("level {level} is outside {}..={} for this algorithm", levels.start(), levels.end()),
    };
    Ok(match algorithm {
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

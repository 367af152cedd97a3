//! `ferrocomp-bench`: ferrocomp's codecs and nvCOMP's side by side on one GPU (LZ4, Snappy, and Deflate and
//! GDeflate at the same levels), on the same bytes cut into the same chunks, every buffer allocated before timing.
//! Checks each round trip, and that each library decodes the other's chunks; exits non-zero if any check fails.
//! The Deflate and GDeflate tables also give zlib's ratios on the same chunks (on the CPU), for reference.

use anyhow::{Context, Result, bail, ensure};
use ferrocomp::{
    Algorithm, Ans, AnsDataType, Bitcomp, Blosc, Cascaded, Chunks, Deflate, DeviceBuffer, ElementType, GDeflate, Gpu,
    Lz4, Options, Results, Shuffle, Snappy, Wrapper, Zstd,
};
use ferrocomp_bench::nvcomp::Nvcomp;
use ferrocomp_bench::{BenchStream, Chunked, Codec, DATASETS, Timer, chunk_sizes, codec_name, exit_code, title};
use flate2::{Compress, Compression, FlushCompress};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: ferrocomp-bench --data DIR [--nvcomp PATH/libnvcomp.so.6] \
                     [--codecs lz4,snappy,deflate,gdeflate,blosc,zstd,cascaded,bitcomp,ans] [--levels 1,4] [--zstd-levels 1,2,3] [--ans-types bytes,float32] \
                     [--chunk-size 65536] \
                     [--reps 10] [--batch-mib 1,4,16,64,256] [--out FILE] [--keep DIR]\n--levels (or --level): the Deflate and GDeflate levels, 0 to 5 (nvCOMP's \
                     `algorithm` option), default 1; --zstd-levels: the Zstd levels, default all; --ans-types: ANS's data types, of \
                     bytes, float16, float32 and float8, default bytes and float32; --batch-mib: \
                     each data set's first N MiB as a batch of its own, for each N (default: the whole set in one batch); --keep: write each codec's compressed chunks \
                     of each data set to DIR/DATASET.CODEC.bin, back to back (for Zstd, one multi-frame stream)";

/// Every algorithm, in table order.
const ALGORITHMS: [Algorithm; 9] = Algorithm::ALL;

/// zlib levels whose ratios (zlib-rs's) the Deflate and GDeflate tables give for reference.
const ZLIB_LEVELS: [u32; 2] = [1, 6];

/// Alignment of compressed chunk slots (nvCOMP's Deflate and GDeflate need 8, LZ4 4; it says more may help).
const SLOT_ALIGN: usize = 16;

/// Chunk sizes must be multiples of this, as nvCOMP's Deflate and GDeflate need their input chunks 8-byte aligned.
const CHUNK_ALIGN: usize = 8;

fn main() -> ExitCode {
    exit_code(run())
}

/// Command-line arguments.
struct Args {
    data: PathBuf,
    nvcomp: Option<PathBuf>,
    algorithms: Vec<Algorithm>,
    levels: Vec<u8>,
    zstd_levels: Vec<u8>,
    ans_types: Vec<AnsDataType>,
    chunk_size: usize,
    reps: usize,
    /// Batch sizes in MiB, each a batch of every data set's first bytes; empty: the whole set.
    batch_mib: Vec<usize>,
    out: Option<PathBuf>,
    keep: Option<PathBuf>,
}

impl Args {
    fn parse() -> Result<Self> {
        let (mut data, mut nvcomp, mut out, mut keep) = (None, None, None, None);
        let (mut algorithms, mut levels) = (ALGORITHMS.to_vec(), vec![Deflate::default().level]);
        let mut zstd_levels = Zstd::LEVELS.collect();
        let mut ans_types = vec![AnsDataType::Bytes, AnsDataType::Float32];
        let (mut chunk_size, mut reps, mut batch_mib) = (65536, 10, Vec::new());
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let mut value = || args.next().with_context(|| format!("{flag} needs a value\n{USAGE}"));
            match flag.as_str() {
                "--data" => data = Some(PathBuf::from(value()?)),
                "--nvcomp" => nvcomp = Some(PathBuf::from(value()?)),
                "--codecs" => algorithms = value()?.split(',').map(parse_algorithm).collect::<Result<_>>()?,
                "--level" | "--levels" => levels = value()?.split(',').map(parse_level).collect::<Result<_>>()?,
                "--zstd-levels" => zstd_levels = value()?.split(',').map(parse_zstd_level).collect::<Result<_>>()?,
                "--ans-types" => ans_types = value()?.split(',').map(parse_ans_type).collect::<Result<_>>()?,
                "--chunk-size" => chunk_size = value()?.parse().context("--chunk-size")?,
                "--reps" => reps = value()?.parse().context("--reps")?,
                "--batch-mib" => {
                    batch_mib =
                        value()?.split(',').map(|mib| mib.parse().context("--batch-mib")).collect::<Result<_>>()?
                }
                "--out" => out = Some(PathBuf::from(value()?)),
                "--keep" => keep = Some(PathBuf::from(value()?)),
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                _ => bail!("unknown argument {flag}\n{USAGE}"),
            }
        }
        if chunk_size == 0 || chunk_size % CHUNK_ALIGN != 0 || reps == 0 || batch_mib.contains(&0) {
            bail!("--chunk-size must be a positive multiple of {CHUNK_ALIGN}, and --reps and --batch-mib positive");
        }
        let data = data.context(USAGE)?;
        Ok(Self { data, nvcomp, algorithms, levels, zstd_levels, ans_types, chunk_size, reps, batch_mib, out, keep })
    }

    /// The batches of a data set named `name` of `len` bytes: each a label and a length.
    fn batches(&self, name: &str, len: usize) -> Vec<(String, usize)> {
        if self.batch_mib.is_empty() {
            return vec![(name.to_owned(), len)];
        }
        self.batch_mib.iter().map(|&mib| (format!("{name}, {mib} MiB"), len.min(mib << 20))).collect()
    }

    /// The codecs of `algorithm` to run: for Deflate and GDeflate one per level of `--levels` (raw deflate
    /// streams), for Zstd one per level of `--zstd-levels`.
    fn codecs(&self, algorithm: Algorithm) -> Vec<Options> {
        let levels = self.levels.iter().copied();
        match algorithm {
            Algorithm::Lz4 => vec![Options::Lz4(Lz4::default())],
            Algorithm::Snappy => vec![Options::Snappy(Snappy::default())],
            Algorithm::Deflate => {
                levels.map(|level| Options::Deflate(Deflate { level, wrapper: Wrapper::Raw })).collect()
            }
            Algorithm::GDeflate => levels.map(|level| Options::GDeflate(GDeflate { level })).collect(),
            // Zarr's usual float32/int32 arrays: four-byte elements, byte shuffle.
            Algorithm::Blosc => vec![Options::Blosc(Blosc { typesize: 4, shuffle: Shuffle::Byte })],
            // Each level beside nvCOMP's Zstd (which has none).
            Algorithm::Zstd => self.zstd_levels.iter().map(|&level| Options::Zstd(Zstd { level })).collect(),
            // The defaults (u32 elements, layers searched), beside nvCOMP's (u32, its adaptive mode).
            Algorithm::Cascaded => vec![Options::Cascaded(Cascaded::default())],
            // The defaults (bytes, lossless), and 32-bit integers, each beside nvCOMP's at the same.
            Algorithm::Bitcomp => [ElementType::U8, ElementType::U32]
                .map(|element| Options::Bitcomp(Bitcomp { element, ..Bitcomp::default() }))
                .to_vec(),
            // Each type of `--ans-types` beside nvCOMP's at the same.
            Algorithm::Ans => self.ans_types.iter().map(|&data_type| Options::Ans(Ans { data_type })).collect(),
        }
    }
}

/// The algorithm named `name` ("lz4", "snappy", "deflate", "gdeflate", "blosc", "zstd", "cascaded", "bitcomp",
/// "ans").
fn parse_algorithm(name: &str) -> Result<Algorithm> {
    ALGORITHMS.into_iter().find(|algorithm| algorithm.name() == name).with_context(|| format!("unknown codec {name:?}"))
}

/// A Deflate and GDeflate level (nvCOMP's `algorithm` option).
fn parse_level(level: &str) -> Result<u8> {
    parse_level_in(level, Deflate::LEVELS)
}

/// A Zstd level of `--zstd-levels`.
fn parse_zstd_level(level: &str) -> Result<u8> {
    parse_level_in(level, Zstd::LEVELS)
}

/// An ANS data type by its name in the tables: `bytes`, `float16`, `float32` or `float8`.
fn parse_ans_type(name: &str) -> Result<AnsDataType> {
    [AnsDataType::Bytes, AnsDataType::Float16, AnsDataType::Float32, AnsDataType::Float8]
        .into_iter()
        .find(|data_type| format!("{data_type:?}").to_lowercase() == name)
        .with_context(|| format!("unknown ANS data type {name:?} (bytes, float16, float32 or float8)"))
}

/// `level` as a number within `levels`.
fn parse_level_in(level: &str, levels: std::ops::RangeInclusive<u8>) -> Result<u8> {
    level
        .parse()
        .ok()
        .filter(|level| levels.contains(level))
        .with_context(|| format!("level {level:?}: not {} to {}", levels.start(), levels.end()))
}

/// Whether the algorithm writes deflate streams, which the zlib reference lines compare with.
fn is_deflate(algorithm: Algorithm) -> bool {
    matches!(algorithm, Algorithm::Deflate | Algorithm::GDeflate)
}

fn run() -> Result<bool> {
    let args = Args::parse()?;
    let mut tables: Vec<Table> = args
        .algorithms
        .iter()
        .map(|&algorithm| Table { algorithm, codecs: args.codecs(algorithm), lines: Vec::new() })
        .collect();
    for options in tables.iter().flat_map(|table| &table.codecs) {
        let max = options.codec().max_chunk_size();
        ensure!(args.chunk_size <= max, "--chunk-size is above {}'s largest chunk, {max}", title(options.algorithm()));
    }
    let nvcomp = args.nvcomp.as_deref().map(Nvcomp::load).transpose()?;
    let nvcomp_version = match &nvcomp {
        Some(nvcomp) => format!("nvCOMP version {}", nvcomp.version()?),
        None => "nvCOMP not loaded (no --nvcomp given)".to_string(),
    };
    eprintln!("{nvcomp_version}");
    let gpu = match Gpu::new(0) {
        Err(ferrocomp::Error::NoDevice) => {
            println!("no CUDA device: nothing to benchmark");
            return Ok(true);
        }
        gpu => gpu?,
    };
    let stream = BenchStream::new(&gpu)?;
    let bench = Bench {
        timer: Timer::new(&stream)?,
        stream,
        gpu: gpu.clone(),
        chunk_size: args.chunk_size,
        reps: args.reps,
        keep: args.keep.clone(),
    };
    let zlib_levels: &[u32] = if tables.iter().any(|table| is_deflate(table.algorithm)) { &ZLIB_LEVELS } else { &[] };
    let mut dataset_bytes = BTreeSet::new();
    for (file, name) in DATASETS {
        let path = args.data.join(file);
        if !path.exists() {
            eprintln!("{}: not found, skipped", path.display());
            continue;
        }
        let all = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        for (name, len) in args.batches(name, all.len()) {
            let bytes = all[..len].to_vec();
            eprintln!("{name}: {} bytes", bytes.len());
            dataset_bytes.insert(bytes.len());
            measure(&args, &bench, &mut tables, nvcomp.as_ref(), zlib_levels, name, bytes)?;
        }
    }
    if dataset_bytes.is_empty() {
        bail!("no data sets in {} (write them with bench/make_datasets.py)", args.data.display());
    }
    let mib: Vec<String> = dataset_bytes.iter().map(|&b| (b as f64 / (1 << 20) as f64).to_string()).collect();
    let header = format!(
        "ferrocomp and nvCOMP on {}: chunks of {} B, data sets of {} MiB, best and median of {} timed runs (CUDA \
         events, buffers preallocated); {nvcomp_version}",
        gpu.name(),
        args.chunk_size,
        mib.join("/"),
        args.reps,
    );
    let report = report(&header, &tables);
    print!("{report}");
    if let Some(out) = &args.out {
        std::fs::write(out, &report).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(tables.iter().flat_map(|table| &table.lines).all(Line::ok))
}

/// Measures every table's codecs on the data set `name` (a batch of `bytes`), ours beside nvCOMP's.
fn measure(
    args: &Args,
    bench: &Bench,
    tables: &mut [Table],
    nvcomp: Option<&Nvcomp>,
    zlib_levels: &[u32],
    name: String,
    bytes: Vec<u8>,
) -> Result<()> {
    let zlib = zlib_levels
        .iter()
        .map(|&level| Ok((level, zlib_ratio(&bytes, args.chunk_size, level)?)))
        .collect::<Result<Vec<_>>>()?;
    let data = Dataset {
        name,
        sizes: chunk_sizes(bytes.len(), args.chunk_size),
        input: Chunked::upload(&bench.gpu, &bytes, args.chunk_size)?,
        bytes,
    };
    for table in tables {
        if is_deflate(table.algorithm) {
            table.lines.extend(zlib.iter().map(|&(level, ratio)| Line::Cpu {
                dataset: data.name.clone(),
                codec: format!("zlib-rs level {level} (CPU)"),
                ratio,
            }));
        }
        for &options in &table.codecs {
            let ours =
                Ferrocomp { gpu: bench.gpu.clone(), options, label: format!("ferrocomp {}", codec_name(&options)) };
            let theirs = match nvcomp {
                Some(nvcomp) if table.algorithm != Algorithm::Blosc => Some(nvcomp.codec(options)?),
                _ => None, // nvCOMP has no Blosc
            };
            // ferrocomp's Cascaded, Bitcomp and ANS layouts are its own
            let cross = !matches!(table.algorithm, Algorithm::Cascaded | Algorithm::Bitcomp | Algorithm::Ans);
            table.lines.extend(bench.compare(&data, &ours, theirs.as_deref(), cross)?.into_iter().map(Line::Gpu));
        }
    }
    Ok(())
}

/// Ratio of zlib at `level` (zlib-rs through flate2, on all host cores) on `bytes` cut into chunks of
/// `chunk_size`, each compressed on its own into a raw deflate stream.
fn zlib_ratio(bytes: &[u8], chunk_size: usize, level: u32) -> Result<f64> {
    let chunks: Vec<&[u8]> = bytes.chunks(chunk_size).collect();
    let threads = std::thread::available_parallelism().map_or(1, |threads| threads.get());
    let compressed = std::thread::scope(|scope| {
        let workers: Vec<_> = chunks
            .chunks(chunks.len().div_ceil(threads).max(1))
            .map(|part| scope.spawn(move || zlib_bytes(part, level)))
            .collect();
        workers.into_iter().map(|worker| worker.join().expect("zlib worker panicked")).sum::<Result<usize>>()
    })?;
    Ok(bytes.len() as f64 / compressed as f64)
}

/// Bytes zlib at `level` compresses `chunks` to, each on its own into a raw deflate stream.
fn zlib_bytes(chunks: &[&[u8]], level: u32) -> Result<usize> {
    let mut compress = Compress::new(Compression::new(level), false);
    let mut out = Vec::new();
    chunks
        .iter()
        .map(|chunk| {
            compress.reset();
            out.clear();
            out.reserve(chunk.len() + chunk.len() / 8 + 64); // above deflate's bound
            let status = compress.compress_vec(chunk, &mut out, FlushCompress::Finish)?;
            ensure!(status == flate2::Status::StreamEnd, "zlib level {level}: a chunk did not fit its bound");
            Ok(out.len())
        })
        .sum()
}

/// A ferrocomp codec.
struct Ferrocomp {
    gpu: Gpu,
    options: Options,
    label: String,
}

impl Codec for Ferrocomp {
    fn label(&self) -> &str {
        &self.label
    }

    fn max_compressed_chunk_size(&self, chunk_size: usize) -> Result<usize> {
        Ok(self.options.codec().max_compressed_chunk_size(chunk_size))
    }

    fn temp_size(&self, count: usize, chunk_size: usize, _total: usize) -> Result<usize> {
        let codec = self.options.codec();
        Ok(codec.compress_scratch_size(count, chunk_size).max(codec.decompress_scratch_size(count, chunk_size)))
    }

    unsafe fn compress(
        &self,
        input: &Chunked,
        _chunk_size: usize,
        output: &mut Chunked,
        temp: &mut DeviceBuffer<u8>,
        stream: &BenchStream,
    ) -> Result<()> {
        let results = Results { sizes: output.sizes.view_mut(), statuses: output.statuses.view_mut() };
        let (outputs, capacity, scratch) = (output.addresses.view(), output.slot, temp.view_mut());
        unsafe {
            self.options.codec().compress_async(
                &self.gpu,
                input.chunks(),
                outputs,
                capacity,
                scratch,
                results,
                stream.ferrocomp(),
            )
        }?;
        Ok(())
    }

    unsafe fn decompress(
        &self,
        input: &Chunked,
        capacities: &DeviceBuffer<usize>,
        output: &mut Chunked,
        temp: &mut DeviceBuffer<u8>,
        stream: &BenchStream,
    ) -> Result<()> {
        let results = Results { sizes: output.sizes.view_mut(), statuses: output.statuses.view_mut() };
        let outputs = Chunks::new(output.addresses.view(), capacities.view()).with_largest(output.slot);
        unsafe {
            self.options.codec().decompress_async(
                &self.gpu,
                input.chunks(),
                outputs,
                temp.view_mut(),
                results,
                None,
                stream.ferrocomp(),
            )
        }?;
        Ok(())
    }
}

/// One data set: its bytes on the host and, cut into chunks, on the device.
struct Dataset {
    name: String,
    bytes: Vec<u8>,
    /// Host copy of the chunk sizes.
    sizes: Vec<usize>,
    input: Chunked,
}

/// A codec with its buffers for one data set, all allocated up front.
struct Side<'a> {
    codec: &'a dyn Codec,
    compressed: Chunked,
    decompressed: Chunked,
    temp: DeviceBuffer<u8>,
}

impl<'a> Side<'a> {
    fn new(bench: &Bench, codec: &'a dyn Codec, data: &Dataset) -> Result<Self> {
        let (gpu, count, len) = (&bench.gpu, data.input.count(), data.bytes.len());
        let slot = codec.max_compressed_chunk_size(bench.chunk_size)?.next_multiple_of(SLOT_ALIGN);
        Ok(Self {
            codec,
            compressed: Chunked::new(gpu, count * slot, slot)?,
            decompressed: Chunked::new(gpu, len, bench.chunk_size)?,
            temp: gpu.alloc(codec.temp_size(count, bench.chunk_size, len)?)?,
        })
    }
}

/// Best and median seconds of the timed runs.
struct Timing {
    best: f64,
    median: f64,
}

/// One codec's results on one data set.
struct Row {
    dataset: String,
    codec: String,
    ratio: f64,
    bytes: usize,
    compress: Timing,
    decompress: Timing,
    /// Whether its own decompression gave back the input.
    round_trip: bool,
    /// Whether the other library decoded its compressed chunks to the input (None: no other library).
    interop: Option<bool>,
    /// Time this codec took to decode the other library's chunks.
    cross_decompress: Option<Timing>,
}

/// A line of a table: a codec measured on the GPU, or a CPU reference's ratio.
enum Line {
    Gpu(Row),
    Cpu { dataset: String, codec: String, ratio: f64 },
}

impl Line {
    /// Whether its checks passed.
    fn ok(&self) -> bool {
        match self {
            Self::Gpu(row) => row.round_trip && row.interop != Some(false),
            Self::Cpu { .. } => true,
        }
    }
}

/// One algorithm's table: the codecs it runs, and its lines so far.
struct Table {
    algorithm: Algorithm,
    codecs: Vec<Options>,
    lines: Vec<Line>,
}

/// What every measurement shares.
struct Bench {
    gpu: Gpu,
    stream: BenchStream,
    timer: Timer,
    chunk_size: usize,
    reps: usize,
    /// Where to write each codec's compressed chunks (`--keep`).
    keep: Option<PathBuf>,
}

impl Bench {
    /// Measures `ours` and, if given, `theirs` on `data`, and where they share a format (`cross`) each decoding
    /// the other's chunks.
    fn compare(&self, data: &Dataset, ours: &dyn Codec, theirs: Option<&dyn Codec>, cross: bool) -> Result<Vec<Row>> {
        let mut ours = Side::new(self, ours, data)?;
        let mut our_row = self.measure(data, &mut ours)?;
        let Some(theirs) = theirs else {
            return Ok(vec![our_row]);
        };
        let mut theirs = Side::new(self, theirs, data)?;
        let mut their_row = self.measure(data, &mut theirs)?;
        if !cross {
            return Ok(vec![our_row, their_row]);
        }
        let (ok, time) = self.decodes(data, &ours.compressed, &mut theirs)?;
        (our_row.interop, their_row.cross_decompress) = (Some(ok), Some(time));
        let (ok, time) = self.decodes(data, &theirs.compressed, &mut ours)?;
        (their_row.interop, our_row.cross_decompress) = (Some(ok), Some(time));
        Ok(vec![our_row, their_row])
    }

    /// Compresses and decompresses `data` with `side`, timed; checks the round trip.
    fn measure(&self, data: &Dataset, side: &mut Side) -> Result<Row> {
        let Side { codec, compressed, decompressed, temp } = side;
        let what = format!("{}: {}", data.name, codec.label());
        eprintln!("{what}");
        let compress =
            self.time(|| unsafe { codec.compress(&data.input, self.chunk_size, compressed, temp, &self.stream) })?;
        let statuses = self.gpu.download(compressed.statuses.view())?;
        let compressed_ok =
            same(&format!("{what} compression"), "status of chunk", &statuses, &vec![0; statuses.len()]);
        let compressed_sizes = self.gpu.download(compressed.sizes.view())?;
        let compressed_bytes: usize = compressed_sizes.iter().sum();
        if let Some(dir) = &self.keep {
            let bytes = self.gpu.download(compressed.buffer.view())?;
            let chunks = compressed_sizes.iter().enumerate().flat_map(|(i, &size)| {
                let start = i * compressed.slot;
                &bytes[start..(start + size).min(bytes.len())]
            });
            let name = format!("{}.{}.bin", data.name, codec.label())
                .replace(|c: char| !c.is_ascii_alphanumeric() && c != '.', "-");
            std::fs::create_dir_all(dir)?;
            std::fs::write(dir.join(name), chunks.copied().collect::<Vec<u8>>())?;
        }
        decompressed.clear(&self.gpu)?;
        let decompress =
            self.time(|| unsafe { codec.decompress(compressed, &data.input.sizes, decompressed, temp, &self.stream) })?;
        let round_trip = self.holds(data, decompressed, &format!("{what} round trip"))? && compressed_ok;
        Ok(Row {
            dataset: data.name.clone(),
            codec: codec.label().to_owned(),
            ratio: data.bytes.len() as f64 / compressed_bytes as f64,
            bytes: data.bytes.len(),
            compress,
            decompress,
            round_trip,
            interop: None,
            cross_decompress: None,
        })
    }

    /// Whether `side`'s codec decodes `compressed` (the other codec's chunks) back to `data`, and how fast.
    fn decodes(&self, data: &Dataset, compressed: &Chunked, side: &mut Side) -> Result<(bool, Timing)> {
        side.decompressed.clear(&self.gpu)?;
        let Side { codec, decompressed, temp, .. } = side;
        let time =
            self.time(|| unsafe { codec.decompress(compressed, &data.input.sizes, decompressed, temp, &self.stream) })?;
        let ok = self.holds(
            data,
            &side.decompressed,
            &format!("{}: {} decoding the other's chunks", data.name, side.codec.label()),
        )?;
        Ok((ok, time))
    }

    /// Whether `out` holds `data`: every status success, every size its chunk's, every byte equal. Says
    /// what differs first, naming the check `what`, if not.
    fn holds(&self, data: &Dataset, out: &Chunked, what: &str) -> Result<bool> {
        let statuses = self.gpu.download(out.statuses.view())?;
        let statuses_ok = same(what, "status of chunk", &statuses, &vec![0; statuses.len()]);
        let sizes_ok = same(what, "size of chunk", &self.gpu.download(out.sizes.view())?, &data.sizes);
        let bytes_ok = same(what, "byte", &self.gpu.download(out.buffer.view())?, &data.bytes);
        Ok(statuses_ok && sizes_ok && bytes_ok)
    }

    /// Runs `enqueue` once to warm up, then times it `reps` times.
    fn time(&self, mut enqueue: impl FnMut() -> Result<()>) -> Result<Timing> {
        enqueue()?;
        let mut times =
            (0..self.reps).map(|_| self.timer.time(&self.stream, &mut enqueue)).collect::<Result<Vec<_>>>()?;
        times.sort_by(f64::total_cmp);
        Ok(Timing { best: times[0], median: times[times.len() / 2] })
    }
}

/// Whether `actual` is `expected`; if not, says where they first differ, naming the check `what`.
fn same<T: PartialEq + std::fmt::Debug>(what: &str, item: &str, actual: &[T], expected: &[T]) -> bool {
    let Some(i) = actual.iter().zip(expected).position(|(a, e)| a != e) else {
        return actual.len() == expected.len();
    };
    eprintln!("{what} FAILED: {item} {i} is {:?}, expected {:?}", actual[i], expected[i]);
    false
}

/// The results as markdown: `header`, a table per algorithm, and what their columns mean.
fn report(header: &str, tables: &[Table]) -> String {
    let mut out = format!("{header}\n");
    let yes_no = |ok: bool| if ok { "yes" } else { "NO" };
    for table in tables {
        let _ = write!(out, "\n## {}\n\n", title(table.algorithm));
        out += "| dataset | codec | ratio | compress GB/s | decompress GB/s | decompress µs per call \
                | compress median GB/s | decompress median GB/s | decompress other's chunks GB/s | round trip \
                | interop ok |\n";
        out += "|---|---|---|---|---|---|---|---|---|---|---|\n";
        for line in &table.lines {
            let row = match line {
                Line::Gpu(row) => row,
                Line::Cpu { dataset, codec, ratio } => {
                    let _ = writeln!(out, "| {dataset} | {codec} | {ratio:.3} | - | - | - | - | - | - | - | - |");
                    continue;
                }
            };
            // One decimal, three below 1 GB/s.
            let gbps = |seconds: f64| {
                let gbps = row.bytes as f64 / seconds / 1e9;
                format!("{gbps:.*}", if gbps < 1.0 { 3 } else { 1 })
            };
            let _ = writeln!(
                out,
                "| {} | {} | {:.3} | {} | {} | {:.1} | {} | {} | {} | {} | {} |",
                row.dataset,
                row.codec,
                row.ratio,
                gbps(row.compress.best),
                gbps(row.decompress.best),
                row.decompress.best * 1e6,
                gbps(row.compress.median),
                gbps(row.decompress.median),
                row.cross_decompress.as_ref().map_or("-".to_owned(), |t| gbps(t.best)),
                yes_no(row.round_trip),
                row.interop.map_or("-", yes_no),
            );
        }
    }
    out += "\nratio: uncompressed bytes / sum of compressed chunk sizes. GB/s: uncompressed bytes (1e9) per second \
            of GPU time (best; median as marked). decompress µs per call: the best decompression call's GPU time. decompress other's chunks: this codec decoding the other library's \
            compressed chunks of the same data. interop ok: the other library decodes this row's compressed chunks to \
            the input (not for Cascaded, whose layouts differ). Deflate and GDeflate levels are nvCOMP's `algorithm` option, the same for both libraries; \
            Deflate is raw deflate. zlib-rs level N (CPU): zlib-rs (through flate2) compressing each chunk on its \
            own into raw deflate, for its ratio only; its level 1 is zlib-ng's quick strategy, below zlib's own level \
            1 in ratio.\n";
    out
}

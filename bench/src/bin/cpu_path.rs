//! `cpu-path`: ferrocomp's CPU path (a `BufferCodec` without a GPU: 64 KiB chunks on all cores)
//! beside the CPU library it decodes with, run directly on the same chunks on all cores, and
//! beside ferrocomp's scalar decoders (the CPU path's oracle) on them, for LZ4, Snappy, Deflate
//! (raw) and Zstd; compression too, ours and the library's. GB/s of uncompressed bytes, best of
//! `--reps`; every decode is checked against the data. Prints a Markdown table per data set.

use anyhow::{Context, Result, bail, ensure};
use ferrocomp::{Algorithm, BufferCodec, Config, DEFAULT_CHUNK_SIZE, Deflate, Lz4, Options, Snappy, Wrapper, Zstd};
use ferrocomp_bench::{DATASETS, codec_name, exit_code};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "usage: cpu-path --data DIR [--codecs lz4,snappy,deflate,zstd] [--levels 1] [--zstd-levels 1,2,3] \
                     [--reps 5] [--out FILE]\n--data: the files bench/make_datasets.py writes; --levels: the Deflate \
                     levels (0 to 5), default 1; --zstd-levels: default all";

/// The algorithms whose CPU path decodes with a library.
const ALGORITHMS: [Algorithm; 4] = [Algorithm::Lz4, Algorithm::Snappy, Algorithm::Deflate, Algorithm::Zstd];

/// The zlib level beside each of ours (nvCOMP's: 0 entropy coding only, 1 fast, 2 and 3 medium, 4
/// high, 5 highest ratio), for the library's compression.
const ZLIB_LEVELS: [i32; 6] = [1, 1, 3, 5, 6, 9];

fn main() -> ExitCode {
    exit_code(run())
}

/// Command-line arguments.
struct Args {
    data: PathBuf,
    codecs: Vec<Options>,
    reps: usize,
    out: Option<PathBuf>,
}

impl Args {
    fn parse() -> Result<Self> {
        let (mut data, mut out, mut reps) = (None, None, 5);
        let (mut algorithms, mut levels) = (ALGORITHMS.to_vec(), vec![Deflate::default().level]);
        let mut zstd_levels: Vec<u8> = Zstd::LEVELS.collect();
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let mut value = || args.next().with_context(|| format!("{flag} needs a value\n{USAGE}"));
            match flag.as_str() {
                "--data" => data = Some(PathBuf::from(value()?)),
                "--codecs" => algorithms = value()?.split(',').map(parse_algorithm).collect::<Result<_>>()?,
                "--levels" => levels = parse_levels(&value()?, Deflate::LEVELS)?,
                "--zstd-levels" => zstd_levels = parse_levels(&value()?, Zstd::LEVELS)?,
                "--reps" => reps = value()?.parse().context("--reps")?,
                "--out" => out = Some(PathBuf::from(value()?)),
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                _ => bail!("unknown argument {flag}\n{USAGE}"),
            }
        }
        ensure!(reps > 0, "--reps must be positive");
        let codecs = algorithms
            .iter()
            .flat_map(|algorithm| match algorithm {
                Algorithm::Lz4 => vec![Options::Lz4(Lz4::default())],
                Algorithm::Snappy => vec![Options::Snappy(Snappy::default())],
                Algorithm::Deflate => {
                    levels.iter().map(|&level| Options::Deflate(Deflate { level, wrapper: Wrapper::Raw })).collect()
                }
                _ => zstd_levels.iter().map(|&level| Options::Zstd(Zstd { level })).collect(),
            })
            .collect();
        Ok(Self { data: data.context(USAGE)?, codecs, reps, out })
    }
}

/// One of [`ALGORITHMS`] by name ("lz4", "snappy", "deflate", "zstd").
fn parse_algorithm(name: &str) -> Result<Algorithm> {
    ALGORITHMS
        .into_iter()
        .find(|algorithm| algorithm.name() == name)
        .with_context(|| format!("no CPU library: {name:?}"))
}

/// Comma-separated levels, each within `levels`.
fn parse_levels(list: &str, levels: std::ops::RangeInclusive<u8>) -> Result<Vec<u8>> {
    list.split(',')
        .map(|level| level.parse().ok().filter(|level| levels.contains(level)))
        .collect::<Option<_>>()
        .with_context(|| format!("levels {list:?}: not {} to {}", levels.start(), levels.end()))
}

/// Codes one chunk into a buffer, with state of its own: the bytes written, or `None` on failure.
type Coder = Box<dyn FnMut(&[u8], &mut [u8]) -> Option<usize>>;

/// Makes a [`Coder`] (each thread makes its own).
type MakeCoder = Box<dyn Fn() -> Coder + Sync>;

/// A CPU library for a codec, called directly as a user would.
struct Library {
    name: &'static str,
    decoder: MakeCoder,
    compressor: MakeCoder,
}

/// The library `options`' CPU path decodes with (compressing at the nearest level), and the
/// faster decoder it does not use where there is one (liblz4 and libdeflate take streams the
/// scalar decoder refuses, see the codecs' `decompress_library`).
fn libraries(options: Options) -> (Library, Option<(&'static str, MakeCoder)>) {
    match options {
        Options::Lz4(_) => {
            let library = Library {
                name: "lz4_flex",
                decoder: Box::new(|| Box::new(|input, out| lz4_flex::block::decompress_into(input, out).ok())),
                compressor: Box::new(|| Box::new(|input, out| lz4_flex::block::compress_into(input, out).ok())),
            };
            let liblz4: MakeCoder = Box::new(|| {
                Box::new(|input, out| lz4::block::decompress_to_buffer(input, Some(out.len() as i32), out).ok())
            });
            (library, Some(("liblz4", liblz4)))
        }
        Options::Snappy(_) => {
            let library = Library {
                name: "snap",
                decoder: Box::new(|| {
                    let mut decoder = snap::raw::Decoder::new();
                    Box::new(move |input, out| decoder.decompress(input, out).ok())
                }),
                compressor: Box::new(|| {
                    let mut encoder = snap::raw::Encoder::new();
                    Box::new(move |input, out| encoder.compress(input, out).ok())
                }),
            };
            (library, None)
        }
        Options::Deflate(deflate) => {
            let level = ZLIB_LEVELS[deflate.level as usize];
            let library = Library {
                name: "zlib-rs",
                decoder: Box::new(|| {
                    let mut inflate = zlib_rs::Inflate::new(false, 15);
                    Box::new(move |input, out| {
                        inflate.reset(false);
                        let status = inflate.decompress(input, out, zlib_rs::InflateFlush::Finish);
                        matches!(status, Ok(zlib_rs::Status::StreamEnd)).then(|| inflate.total_out() as usize)
                    })
                }),
                compressor: Box::new(move || {
                    let mut deflate = zlib_rs::Deflate::new(level, false, 15);
                    Box::new(move |input, out| {
                        deflate.reset();
                        let status = deflate.compress(input, out, zlib_rs::DeflateFlush::Finish);
                        matches!(status, Ok(zlib_rs::Status::StreamEnd)).then(|| deflate.total_out() as usize)
                    })
                }),
            };
            let libdeflate: MakeCoder = Box::new(|| {
                let mut decompressor = libdeflater::Decompressor::new();
                Box::new(move |input, out| decompressor.deflate_decompress(input, out).ok())
            });
            (library, Some(("libdeflate", libdeflate)))
        }
        Options::Zstd(zstd) => {
            let level = i32::from(zstd.level);
            let library = Library {
                name: "libzstd",
                decoder: Box::new(|| {
                    let mut decompressor = zstd::bulk::Decompressor::new().expect("a zstd context");
                    Box::new(move |input, out| decompressor.decompress_to_buffer(input, out).ok())
                }),
                compressor: Box::new(move || {
                    let mut compressor = zstd::bulk::Compressor::new(level).expect("a zstd context");
                    Box::new(move |input, out| compressor.compress_to_buffer(input, out).ok())
                }),
            };
            (library, None)
        }
        _ => unreachable!("no CPU library for {options:?}"),
    }
}

/// Seconds `coder` (each thread's own, from `make`) takes over `inputs` into `outputs` on every
/// core, each thread taking a run of consecutive chunks, and each chunk's result.
fn run_chunks(
    make: &(dyn Fn() -> Coder + Sync),
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
) -> (f64, Vec<Option<usize>>) {
    let threads = std::thread::available_parallelism().map_or(1, |threads| threads.get());
    let per_thread = inputs.len().div_ceil(threads).max(1);
    let start = Instant::now();
    let results = std::thread::scope(|scope| {
        let handles: Vec<_> = inputs
            .chunks(per_thread)
            .zip(outputs.chunks_mut(per_thread))
            .map(|(inputs, outputs)| {
                scope.spawn(move || {
                    let mut coder = make();
                    inputs.iter().zip(outputs).map(|(input, out)| coder(input, out)).collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|handle| handle.join().expect("a bench thread panicked")).collect()
    });
    (start.elapsed().as_secs_f64(), results)
}

/// `buffer` cut into `count` slots of `slot` bytes.
fn slots(buffer: &mut [u8], slot: usize, count: usize) -> Vec<&mut [u8]> {
    buffer.chunks_mut(slot).take(count).collect()
}

/// Chunks compressed into slots of a buffer: what [`compress_chunks`] returns.
struct Compressed {
    buffer: Vec<u8>,
    slot: usize,
    sizes: Vec<usize>,
}

impl Compressed {
    /// The compressed chunks.
    fn chunks(&self) -> Vec<&[u8]> {
        self.buffer.chunks(self.slot).zip(&self.sizes).map(|(slot, &size)| &slot[..size]).collect()
    }

    /// Compressed bytes in all.
    fn len(&self) -> usize {
        self.sizes.iter().sum()
    }
}

/// `chunks` compressed by `make`'s coders into slots of `slot` bytes, best of `reps`: the seconds
/// and the chunks (`None` if one failed).
fn compress_chunks(
    make: &(dyn Fn() -> Coder + Sync),
    chunks: &[&[u8]],
    slot: usize,
    reps: usize,
) -> (f64, Option<Compressed>) {
    let mut buffer = vec![0u8; slot * chunks.len()];
    let mut best = (f64::INFINITY, Vec::new());
    for _ in 0..reps {
        let (seconds, sizes) = run_chunks(make, chunks, &mut slots(&mut buffer, slot, chunks.len()));
        best = if seconds < best.0 { (seconds, sizes) } else { best };
    }
    let sizes: Option<Vec<usize>> = best.1.into_iter().collect();
    (best.0, sizes.map(|sizes| Compressed { buffer, slot, sizes }))
}

/// Seconds `make`'s coders take to decode `chunks` into `out` (cut into `chunk_size` slots), best
/// of `reps`, if every chunk decodes to `data`'s.
fn decode_chunks(
    make: &(dyn Fn() -> Coder + Sync),
    chunks: &[&[u8]],
    data: &[u8],
    out: &mut [u8],
    reps: usize,
) -> Option<f64> {
    let chunk_size = DEFAULT_CHUNK_SIZE;
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        out.fill(0);
        let (seconds, sizes) = run_chunks(make, chunks, &mut slots(out, chunk_size, chunks.len()));
        let expected = data.chunks(chunk_size).map(|chunk| Some(chunk.len()));
        if !sizes.into_iter().eq(expected) || out != data {
            return None;
        }
        best = best.min(seconds);
    }
    Some(best)
}

/// The seconds `f` takes, and what it returns.
fn timed<R>(f: impl FnOnce() -> R) -> (f64, R) {
    let start = Instant::now();
    let result = f();
    (start.elapsed().as_secs_f64(), result)
}

/// One table row: a codec's numbers on one data set (GB/s; `None` where verification failed).
struct Row {
    codec: String,
    library: &'static str,
    ratio: f64,
    library_ratio: Option<f64>,
    compress: f64,
    library_compress: Option<f64>,
    decode: Option<f64>,
    library_decode: Option<f64>,
    scalar_decode: Option<f64>,
    unused: Option<(&'static str, Option<f64>)>,
}

impl Row {
    /// Whether every check passed.
    fn ok(&self) -> bool {
        let speeds = [self.library_ratio, self.library_compress, self.decode, self.library_decode, self.scalar_decode];
        speeds.iter().all(Option::is_some) && self.unused.is_none_or(|(_, speed)| speed.is_some())
    }

    /// The row in Markdown.
    fn markdown(&self) -> String {
        let cell = |value: Option<f64>, digits: usize| value.map_or("FAILED".to_owned(), |v| format!("{v:.digits$}"));
        let unused = self.unused.map_or("—".to_owned(), |(name, speed)| format!("{name} {}", cell(speed, 2)));
        format!(
            "| {} | {} | {:.3} | {} | {:.2} | {} | {} | {} | {} | {unused} |\n",
            self.codec,
            self.library,
            self.ratio,
            cell(self.library_ratio, 3),
            self.compress,
            cell(self.library_compress, 2),
            cell(self.decode, 2),
            cell(self.library_decode, 2),
            cell(self.scalar_decode, 2),
        )
    }
}

/// Benchmarks `options` on `data`: its row.
fn bench(options: Options, data: &[u8], reps: usize) -> Result<Row> {
    let gbps = |seconds: f64| data.len() as f64 / seconds / 1e9;
    let codec = BufferCodec::new(options, Config::default(), None)?;
    let (mut compress, compressed) = timed(|| codec.compress(data));
    for _ in 1..reps {
        compress = compress.min(timed(|| codec.compress(data)).0);
    }
    let compressed = compressed?;
    let mut out = vec![0u8; data.len()];
    let mut decode = Some(f64::INFINITY);
    for _ in 0..reps {
        out.fill(0);
        let (seconds, decoded) = timed(|| codec.decompress_into(&compressed, &mut out));
        decode = decode.filter(|_| decoded.is_ok() && out == data).map(|best| best.min(seconds));
    }

    let chunks: Vec<&[u8]> = data.chunks(DEFAULT_CHUNK_SIZE).collect();
    let compressor: MakeCoder =
        Box::new(move || Box::new(move |input, out| options.codec().compress_cpu(input, out).ok()));
    let slot = options.codec().max_compressed_chunk_size(DEFAULT_CHUNK_SIZE);
    let ours = compress_chunks(&*compressor, &chunks, slot, 1).1.context("ferrocomp's compressor failed")?;
    let scalar: MakeCoder =
        Box::new(move || Box::new(move |input, out| options.codec().decompress_scalar(input, out).ok()));
    let (library, unused) = libraries(options);
    let decoded_by =
        |make: &MakeCoder, chunks: &[&[u8]], out: &mut [u8]| decode_chunks(&**make, chunks, data, out, reps);
    let library_decode = decoded_by(&library.decoder, &ours.chunks(), &mut out);
    let scalar_decode = decoded_by(&scalar, &ours.chunks(), &mut out);
    let unused = unused.map(|(name, make)| (name, decoded_by(&make, &ours.chunks(), &mut out).map(gbps)));
    // The library's own chunks, with room for its bound on incompressible chunks.
    let (seconds, theirs) = compress_chunks(&*library.compressor, &chunks, 2 * DEFAULT_CHUNK_SIZE + 1024, reps);
    let theirs = theirs.filter(|theirs| decoded_by(&library.decoder, &theirs.chunks(), &mut out).is_some());
    Ok(Row {
        codec: codec_name(&options),
        library: library.name,
        ratio: data.len() as f64 / compressed.len() as f64,
        library_ratio: theirs.as_ref().map(|theirs| data.len() as f64 / theirs.len() as f64),
        compress: gbps(compress),
        library_compress: theirs.map(|_| gbps(seconds)),
        decode: decode.map(gbps),
        library_decode: library_decode.map(gbps),
        scalar_decode: scalar_decode.map(gbps),
        unused,
    })
}

fn run() -> Result<bool> {
    let args = Args::parse()?;
    let threads = std::thread::available_parallelism().map_or(1, |threads| threads.get());
    let mut report = format!(
        "# ferrocomp's CPU path and the CPU libraries\n\n{threads} threads, chunks of {} KiB, best of {} runs; GB/s \
         of uncompressed bytes. CPU path: `BufferCodec` without a GPU (`Config::default()`), which decodes with the \
         library and keeps the scalar decoder as its oracle. Library: called directly on the same chunks (ferrocomp's \
         chunks to decode; for compression its own, Deflate at the nearest zlib level). Scalar: ferrocomp's scalar \
         decoder on the same chunks. Unused: a faster decoder the CPU path cannot use as it is (it takes streams the \
         scalar decoder refuses).\n",
        DEFAULT_CHUNK_SIZE >> 10,
        args.reps,
    );
    let mut ok = true;
    let mut any = false;
    for (file, name) in DATASETS {
        let path = args.data.join(file);
        if !path.exists() {
            eprintln!("{}: not found, skipped", path.display());
            continue;
        }
        let data = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        any = true;
        eprintln!("{name}: {} bytes", data.len());
        write!(
            report,
            "\n{name}: {} bytes\n\n| codec | library | ratio | library ratio | compress | library compress | CPU \
             path decode | library decode | scalar decode | unused decoder |\n|---|---|---|---|---|---|---|---|---|---|\n",
            data.len()
        )?;
        for &options in &args.codecs {
            let row = bench(options, &data, args.reps)?;
            ok &= row.ok();
            eprint!("{}", row.markdown());
            report.push_str(&row.markdown());
        }
    }
    ensure!(any, "no data sets in {} (write them with bench/make_datasets.py)", args.data.display());
    print!("{report}");
    if let Some(out) = &args.out {
        std::fs::write(out, &report).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(ok)
}

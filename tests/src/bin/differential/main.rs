//! Differential fuzzer: batches of chunks mutated from valid seed chunks, decoded by the GPU's
//! batched calls and by the CPU path, which must agree exactly (sizes, outcomes, bytes), and
//! neither may write past a chunk's output room. With `--cpu-only` the CPU path is checked
//! against the scalar decoders instead, so it runs without a GPU.
//!
//! Seeds are the files of `fuzz/corpus/decode_<decoder>/`, else chunks ferrocomp compresses. Every
//! 4th batch (batch % 4 == 1) uses the `WithUncompressedSize` bitstream: its saved chunks start with
//! their 8-byte size prefix. A batch is drawn from `--seed`, the decoder and the batch index alone,
//! so `--seed S --decoder D` with the same `--batch` repeats a run.

mod batch;
mod seeds;
mod sides;

use batch::{Batch, Outcome, Rng, batch_seed};
use ferrocomp::{Bitstream, ChunkListCodec, Error, Gpu, Options, Stream, Wrapper};
use seeds::Seeds;
use sides::{Other, check_chunk, run_cpu};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "usage: differential [--seed S] [--count N] [--decoder NAME]... [--batch B] [--out DIR] \
                     [--corpus DIR] [--cpu-only]";

/// Every decoder, by the name its corpus directory and findings carry (ANS's float modes, whose
/// values' low bytes are stored, apart from its bytes).
const DECODERS: [&str; 13] = [
    "lz4",
    "snappy",
    "deflate",
    "zlib",
    "gzip",
    "gdeflate",
    "zstd",
    "blosc",
    "cascaded",
    "bitcomp",
    "ans",
    "ans-float16",
    "ans-float32",
];

/// Findings printed and saved per decoder; the rest are only counted.
const MAX_REPORTED: usize = 20;

/// The options decoder `name` decodes with.
fn options(name: &str) -> Option<Options> {
    let deflate = |wrapper| Options::Deflate(ferrocomp::Deflate { wrapper, ..Default::default() });
    Some(match name {
        "lz4" => Options::Lz4(Default::default()),
        "snappy" => Options::Snappy(Default::default()),
        "deflate" => deflate(Wrapper::Raw),
        "zlib" => deflate(Wrapper::Zlib),
        "gzip" => deflate(Wrapper::Gzip),
        "gdeflate" => Options::GDeflate(Default::default()),
        "zstd" => Options::Zstd(Default::default()),
        "blosc" => Options::Blosc(Default::default()),
        "cascaded" => Options::Cascaded(Default::default()),
        "bitcomp" => Options::Bitcomp(Default::default()),
        "ans" => Options::Ans(Default::default()),
        "ans-float16" => Options::Ans(ferrocomp::Ans { data_type: ferrocomp::AnsDataType::Float16 }),
        "ans-float32" => Options::Ans(ferrocomp::Ans { data_type: ferrocomp::AnsDataType::Float32 }),
        _ => return None,
    })
}

struct Args {
    seed: u64,
    count: usize,
    decoders: Vec<&'static str>,
    batch: usize,
    out: PathBuf,
    corpus: PathBuf,
    cpu_only: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        seed: 1,
        count: 100_000,
        decoders: Vec::new(),
        batch: 1024,
        out: "differential-findings".into(),
        corpus: "fuzz/corpus".into(),
        cpu_only: false,
    };
    let mut words = std::env::args().skip(1);
    while let Some(word) = words.next() {
        let mut value = || words.next().ok_or(format!("{word} needs a value"));
        let number = |text: String| text.parse().map_err(|_| format!("{word}: not a number: {text}"));
        match word.as_str() {
            "--seed" => args.seed = number(value()?)?,
            "--count" => args.count = number(value()?)? as usize,
            "--batch" => args.batch = (number(value()?)? as usize).max(1),
            "--decoder" => {
                let name = value()?;
                let known = DECODERS.iter().find(|&&d| d == name).ok_or(format!("unknown decoder {name}"))?;
                args.decoders.push(known);
            }
            "--out" => args.out = value()?.into(),
            "--corpus" => args.corpus = value()?.into(),
            "--cpu-only" => args.cpu_only = true,
            _ => return Err(format!("unknown argument {word}")),
        }
    }
    if args.decoders.is_empty() {
        args.decoders = DECODERS.to_vec();
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("differential: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let device = if args.cpu_only {
        None
    } else {
        // The stream first, so that it is dropped before the context it lives in.
        match Gpu::new(0).and_then(|gpu| Ok((gpu.stream()?, gpu))) {
            Ok(device) => Some(device),
            Err(e) => {
                eprintln!(
                    "differential: no GPU to check ({e}); --cpu-only checks the CPU path against the scalar decoders"
                );
                return ExitCode::from(2);
            }
        }
    };
    if let Err(e) = std::fs::create_dir_all(&args.out) {
        eprintln!("differential: cannot create {}: {e}", args.out.display());
        return ExitCode::from(2);
    }
    let mut total = Totals::default();
    for &name in &args.decoders {
        match fuzz_decoder(name, &args, device.as_ref()) {
            Ok(totals) => {
                println!("{name}: {totals}");
                total.add(&totals);
            }
            Err(e) => {
                eprintln!("{name}: the GPU call failed: {e} (the batch is saved in {}); stopping", args.out.display());
                return ExitCode::from(1);
            }
        }
    }
    println!("TOTAL: {total}");
    if total.disagreements + total.guard_violations > 0 { ExitCode::from(1) } else { ExitCode::SUCCESS }
}

/// Counts for one decoder, or for all.
#[derive(Default)]
struct Totals {
    chunks: usize,
    batches: usize,
    decoded: usize,
    refused: usize,
    disagreements: usize,
    guard_violations: usize,
    seconds: f64,
}

impl Totals {
    fn add(&mut self, other: &Totals) {
        self.chunks += other.chunks;
        self.batches += other.batches;
        self.decoded += other.decoded;
        self.refused += other.refused;
        self.disagreements += other.disagreements;
        self.guard_violations += other.guard_violations;
        self.seconds += other.seconds;
    }
}

impl std::fmt::Display for Totals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} chunks in {} batches ({} decoded, {} refused), {} disagreements, {} guard violations, {:.1} s",
            self.chunks,
            self.batches,
            self.decoded,
            self.refused,
            self.disagreements,
            self.guard_violations,
            self.seconds
        )
    }
}

/// Runs `args.count` chunks of decoder `name` in batches, against the GPU on `device` (or the
/// scalar decoders without one). Fails only when a GPU call fails as a whole.
fn fuzz_decoder(name: &str, args: &Args, device: Option<&(Stream, Gpu)>) -> Result<Totals, Error> {
    let start = Instant::now();
    let options = options(name).expect("names come from DECODERS");
    let bitstreams = [Bitstream::Raw, Bitstream::WithUncompressedSize];
    let cpu = bitstreams.map(|bitstream| ChunkListCodec::new(options, bitstream, None).unwrap());
    let other = match device {
        Some((stream, gpu)) => Other::Gpu {
            stream,
            codecs: bitstreams.map(|bitstream| ChunkListCodec::new(options, bitstream, Some(gpu.clone())).unwrap()),
        },
        None => Other::Scalar(options),
    };
    let mut totals = Totals::default();
    let mut reporter = Reporter { decoder: name, seed: args.seed, out: &args.out, reported: 0 };
    let seeds = Seeds::load(name, &args.corpus, &cpu[0]);
    for (file, error) in &seeds.refused {
        totals.disagreements += 1;
        reporter.report(&format!("seed {file}: the CPU refuses this valid chunk: {error}"), None);
    }
    let mut done = 0;
    while done < args.count {
        let (index, size) = (totals.batches, args.batch.min(args.count - done));
        let prefixed = index % 4 == 1;
        let mut rng = Rng::new(batch_seed(args.seed, name, index));
        let batch = Batch::new(&cpu[prefixed as usize], &cpu[0], &seeds, size, &mut rng);
        let ours = run_cpu(&cpu[prefixed as usize], &batch);
        let theirs = match other.run(prefixed, &batch) {
            Ok(theirs) => theirs,
            Err(e) => {
                for i in 0..size {
                    reporter.save(index, i, batch.input(i));
                }
                return Err(e);
            }
        };
        for i in 0..size {
            let (disagreements, guard_violations) = check_chunk(&batch, i, &ours, &theirs, other.name());
            totals.disagreements += !disagreements.is_empty() as usize;
            totals.guard_violations += !guard_violations.is_empty() as usize;
            let problems = [disagreements, guard_violations].concat();
            if !problems.is_empty() {
                let what = format!(
                    "batch {index} chunk {i} ({}, {} input bytes, room {}): {}",
                    if prefixed { "WithUncompressedSize" } else { "Raw" },
                    batch.input(i).len(),
                    batch.rooms[i].len(),
                    problems.join("; ")
                );
                reporter.report(&what, Some((index, i, batch.input(i))));
            }
            match ours.decoded[i] {
                Outcome::Ok(_) => totals.decoded += 1,
                _ => totals.refused += 1,
            }
        }
        totals.chunks += size;
        totals.batches += 1;
        done += size;
    }
    totals.seconds = start.elapsed().as_secs_f64();
    Ok(totals)
}

/// Prints findings of one decoder and saves their chunks, up to [`MAX_REPORTED`].
struct Reporter<'a> {
    decoder: &'a str,
    seed: u64,
    out: &'a Path,
    reported: usize,
}

impl Reporter<'_> {
    /// Reports `what`, saving `chunk` (batch, index, bytes) if given.
    fn report(&mut self, what: &str, chunk: Option<(usize, usize, &[u8])>) {
        self.reported += 1;
        if self.reported > MAX_REPORTED {
            return;
        }
        let saved = chunk.map_or(String::new(), |(batch, i, bytes)| format!("; saved {}", self.save(batch, i, bytes)));
        println!("{}: {what}{saved}", self.decoder);
        if self.reported == MAX_REPORTED {
            println!("{}: further findings are counted, not printed or saved", self.decoder);
        }
    }

    /// Writes chunk `i` of `batch` to `<decoder>-<seed>-<batch>-<chunk>.bin`; its path.
    fn save(&self, batch: usize, i: usize, bytes: &[u8]) -> String {
        let path = self.out.join(format!("{}-{}-{batch}-{i}.bin", self.decoder, self.seed));
        if let Err(e) = std::fs::write(&path, bytes) {
            eprintln!("{}: cannot save {}: {e}", self.decoder, path.display());
        }
        path.display().to_string()
    }
}

//! Differential fuzzer: batches of chunks mutated from valid seed chunks, decoded by the GPU's
//! batched calls and by the CPU path, which must agree exactly (sizes, outcomes, bytes), and
//! neither may write past a chunk's output room. With `--cpu-only` the CPU path is checked
//! against the scalar decoders instead, so it runs without a GPU.
//!
//! Seeds are the files of `fuzz/corpus/decode_<decoder>/`, else chunks ferrocomp compresses. Every
//! 4th batch (batch % 4 == 1) uses the `WithUncompressedSize` bitstream: its saved chunks start with
//! their 8-byte size prefix. A batch is drawn from `--seed`, the decoder and the batch index alone,
//! so `--seed S --decoder D` with the same `--batch` repeats a run.

use ferrocomp::{Bitstream, ChunkListCodec, DeviceView, DeviceViewMut, Error, Gpu, Options, Status, Stream, Wrapper};
use ferrocomp_tests::{int32_bytes, random_bytes, random_u64s, text_bytes};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "usage: differential [--seed S] [--count N] [--decoder NAME]... [--batch B] [--out DIR] \
                     [--corpus DIR] [--cpu-only]";
/// Every decoder, by the name its corpus directory and findings carry.
const DECODERS: [&str; 11] =
    ["lz4", "snappy", "deflate", "zlib", "gzip", "gdeflate", "zstd", "blosc", "cascaded", "bitcomp", "ans"];
/// Largest output room given for a size the CPU reports (declared sizes may be huge).
const MAX_ROOM: usize = 1 << 20;
/// Bytes after every output room that no decoder may write.
const GUARD: usize = 64;
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

/// A deterministic pseudo-random source.
struct Rng(Box<dyn FnMut() -> u64>);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(Box::new(random_u64s(seed)))
    }

    /// A number below `n` (0 for `n` = 0).
    fn below(&mut self, n: usize) -> usize {
        ((self.0)() >> 11) as usize % n.max(1)
    }

    fn byte(&mut self) -> u8 {
        ((self.0)() >> 32) as u8
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }
}

/// The seed of batch `batch` of `decoder` in the run of `seed` (FNV-1a, stable across builds).
fn batch_seed(seed: u64, decoder: &str, batch: usize) -> u64 {
    let bytes = seed.to_le_bytes().into_iter().chain(decoder.bytes()).chain((batch as u64).to_le_bytes());
    bytes.fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ byte as u64).wrapping_mul(0x100_0000_01b3))
}

/// The valid chunks batches are mutated from.
struct Seeds {
    /// Every seed chunk.
    all: Vec<Vec<u8>>,
    /// The seeds the CPU decodes: the unmutated chunks of a batch.
    good: Vec<Vec<u8>>,
    /// The seeds (file name) the CPU refuses, and why.
    refused: Vec<(String, String)>,
}

impl Seeds {
    /// The files of `corpus/decode_<decoder>/`, else chunks `codec` (raw, CPU) compresses.
    fn load(decoder: &str, corpus: &Path, codec: &ChunkListCodec) -> Self {
        let dir = corpus.join(format!("decode_{decoder}"));
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|entries| entries.filter_map(|e| Some(e.ok()?.path())).filter(|p| p.is_file()).collect())
            .unwrap_or_default();
        files.sort();
        let named: Vec<(String, Vec<u8>)> = if files.is_empty() {
            eprintln!("{decoder}: no seeds in {}; using chunks ferrocomp compresses", dir.display());
            compressed_samples(decoder, codec)
        } else {
            let read = |path: &PathBuf| (path.display().to_string(), std::fs::read(path).unwrap_or_default());
            files.iter().map(read).collect()
        };
        let mut seeds = Self { all: Vec::new(), good: Vec::new(), refused: Vec::new() };
        for (name, chunk) in named {
            match decode_alone(codec, &chunk) {
                Ok(_) => seeds.good.push(chunk.clone()),
                Err(e) => seeds.refused.push((name, e.to_string())),
            }
            seeds.all.push(chunk);
        }
        seeds
    }
}

/// Chunk `chunk` decoded alone on the CPU into a room of its size.
fn decode_alone(codec: &ChunkListCodec, chunk: &[u8]) -> ferrocomp::Result<Vec<u8>> {
    let size = codec.decompressed_sizes_cpu(&[chunk]).remove(0)?;
    let mut out = vec![0u8; size];
    let n = codec.decompress_cpu(&[chunk], &mut [&mut out]).remove(0)?;
    out.truncate(n);
    Ok(out)
}

/// Sample buffers (text, integers, floats, zeros, random bytes; three sizes) compressed by
/// `codec`, named by what they hold.
fn compressed_samples(decoder: &str, codec: &ChunkListCodec) -> Vec<(String, Vec<u8>)> {
    let mut samples = Vec::new();
    for size in [1000, 4096, 65536].map(|n: usize| n.min(codec.max_chunk_size())) {
        let floats: Vec<u8> = (0..size / 4).flat_map(|i| (i as f32 * 0.01).sin().to_le_bytes()).collect();
        let kinds = [
            ("text", text_bytes(size, 1)),
            ("int32", int32_bytes(size)),
            ("floats", floats),
            ("zeros", vec![0; size]),
            ("random", random_bytes(size, 2)),
        ];
        for (kind, data) in kinds {
            let mut room = vec![0u8; codec.max_compressed_size(data.len())];
            match codec.compress_cpu(&[&data], &mut [&mut room]).remove(0) {
                Ok(n) => samples.push((format!("{kind}-{size}"), room[..n].to_vec())),
                Err(e) => eprintln!("{decoder}: cannot compress sample {kind}-{size}: {e}"),
            }
        }
    }
    samples
}

/// Applies one to three mutations to `chunk`, splicing with `seeds`.
fn mutate(chunk: &mut Vec<u8>, seeds: &[Vec<u8>], rng: &mut Rng) {
    for _ in 0..1 + rng.below(3) {
        let len = chunk.len();
        // An empty chunk can only grow.
        match if len == 0 { 5 } else { rng.below(9) } {
            0 => (0..1 + rng.below(8)).for_each(|_| chunk[rng.below(len)] ^= 1 << rng.below(8)),
            1 => (0..1 + rng.below(8)).for_each(|_| chunk[rng.below(len)] = rng.byte()),
            // An interesting value, often among the header's declared sizes.
            2 | 3 => {
                let at = if rng.below(2) == 0 { rng.below(len.min(32)) } else { rng.below(len) };
                let value = interesting(rng);
                let n = value.len().min(len - at);
                chunk[at..at + n].copy_from_slice(&value[..n]);
            }
            4 => chunk.truncate(if rng.below(4) == 0 { rng.below(2) } else { rng.below(len + 1) }),
            5 => {
                let n = 1 + rng.below(64);
                chunk.extend(rng.bytes(n));
            }
            // Splice: a prefix of this chunk and a suffix of a seed.
            6 => {
                let other = &seeds[rng.below(seeds.len())];
                chunk.truncate(rng.below(len + 1));
                chunk.extend_from_slice(&other[rng.below(other.len() + 1)..]);
            }
            // Duplicate a range to a random place, or delete it.
            _ => {
                let start = rng.below(len);
                let range = start..start + 1 + rng.below((len - start).min(256));
                if rng.below(2) == 0 {
                    let copy = chunk[range].to_vec();
                    let at = rng.below(len + 1);
                    chunk.splice(at..at, copy);
                } else {
                    chunk.drain(range);
                }
            }
        }
    }
}

/// A little-endian integer of 1, 2, 4 or 8 bytes at an extreme or a small value.
fn interesting(rng: &mut Rng) -> Vec<u8> {
    let width = [1, 2, 4, 8][rng.below(4)];
    let max = u64::MAX >> (64 - 8 * width);
    let value = match rng.below(6) {
        0 => 0,
        1 => max,
        2 => max >> 1,
        3 => (max >> 1) + 1,
        4 => 1 + rng.below(64) as u64,
        _ => max - rng.below(16) as u64,
    };
    value.to_le_bytes()[..width].to_vec()
}

/// The size prefix of a chunk whose block decodes to `size` (if it does): that size, or for
/// three in ten mutated chunks a lie.
fn size_prefix(size: Option<usize>, good: bool, rng: &mut Rng) -> u64 {
    let size = size.unwrap_or_else(|| rng.below(1 << 16)) as u64;
    if good || rng.below(10) < 7 {
        return size;
    }
    [0, size.wrapping_add(1), size.wrapping_sub(1), 1 << 40, u64::MAX][rng.below(5)]
}

/// The output room of a chunk whose CPU size result is `size`: a good chunk's size or more; a
/// mutated chunk's (at most [`MAX_ROOM`]) exactly, too small by 1 to 16 bytes, or larger; a few
/// KiB or nothing where the size is an error.
fn room(size: &Outcome, good: bool, rng: &mut Rng) -> usize {
    match *size {
        Outcome::Ok(n) if good => n + [0, 1 + rng.below(64)][rng.below(2)],
        Outcome::Ok(n) => {
            let n = n.min(MAX_ROOM);
            [n, n.saturating_sub(1 + rng.below(16)), n + 1 + rng.below(4096)][rng.below(3)]
        }
        _ => [0, rng.below(4096)][rng.below(2)],
    }
}

/// A byte of the pattern every output buffer is filled with before decoding.
fn sentinel(at: usize) -> u8 {
    0xA5 ^ (at % 251) as u8
}

fn sentinel_filled(len: usize) -> Vec<u8> {
    (0..len).map(sentinel).collect()
}

/// A chunk's result, with errors reduced to what both sides must agree on.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    Ok(usize),
    Refused { chunk: usize, status: Status },
    SizeMismatch { chunk: usize, expected: usize, actual: usize },
    Other(String),
}

impl From<ferrocomp::Result<usize>> for Outcome {
    fn from(result: ferrocomp::Result<usize>) -> Self {
        match result {
            Ok(n) => Self::Ok(n),
            Err(Error::Chunk { chunk, status }) => Self::Refused { chunk, status },
            Err(Error::ChunkSize { chunk, expected, actual }) => Self::SizeMismatch { chunk, expected, actual },
            Err(other) => Self::Other(other.to_string()),
        }
    }
}

/// One batch: inputs back to back at random small offsets in one buffer, and output rooms each
/// followed by a guard gap in another.
struct Batch {
    inputs: Vec<u8>,
    input_at: Vec<Range<usize>>,
    /// Where each chunk's output room is in the output buffer.
    rooms: Vec<Range<usize>>,
    output_len: usize,
    /// Whether each chunk is an unmutated seed.
    good: Vec<bool>,
    /// The CPU's size result for each chunk.
    sizes: Vec<Outcome>,
}

impl Batch {
    /// `count` chunks for `codec`, a tenth of them unmutated seeds; `raw` finds the true sizes
    /// the prefixes of a `WithUncompressedSize` codec state (or lie about).
    fn new(codec: &ChunkListCodec, raw: &ChunkListCodec, seeds: &Seeds, count: usize, rng: &mut Rng) -> Self {
        let (mut chunks, mut good) = (Vec::with_capacity(count), Vec::with_capacity(count));
        for _ in 0..count {
            let is_good = !seeds.good.is_empty() && rng.below(10) == 0;
            let chunk = if is_good {
                seeds.good[rng.below(seeds.good.len())].clone()
            } else {
                let mut chunk = seeds.all[rng.below(seeds.all.len())].clone();
                mutate(&mut chunk, &seeds.all, rng);
                chunk
            };
            chunks.push(chunk);
            good.push(is_good);
        }
        if codec.prefix_len() > 0 {
            let blocks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
            let sizes = raw.decompressed_sizes_cpu(&blocks);
            for ((chunk, size), &good) in chunks.iter_mut().zip(sizes).zip(&good) {
                chunk.splice(0..0, size_prefix(size.ok(), good, rng).to_le_bytes());
            }
        }
        let slices: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        let sizes: Vec<Outcome> = codec.decompressed_sizes_cpu(&slices).into_iter().map(Outcome::from).collect();
        let (mut inputs, mut input_at) = (Vec::new(), Vec::with_capacity(count));
        for chunk in &chunks {
            let lead = rng.below(16);
            inputs.extend(rng.bytes(lead));
            input_at.push(inputs.len()..inputs.len() + chunk.len());
            inputs.extend_from_slice(chunk);
        }
        let (mut rooms, mut output_len) = (Vec::with_capacity(count), 0);
        for (size, &good) in sizes.iter().zip(&good) {
            let room = room(size, good, rng);
            rooms.push(output_len..output_len + room);
            output_len += room + GUARD + rng.below(16);
        }
        Self { inputs, input_at, rooms, output_len, good, sizes }
    }

    fn input(&self, i: usize) -> &[u8] {
        &self.inputs[self.input_at[i].clone()]
    }

    fn inputs(&self) -> Vec<&[u8]> {
        (0..self.input_at.len()).map(|i| self.input(i)).collect()
    }

    /// The gap after chunk `i`'s room, up to the next room.
    fn gap(&self, i: usize) -> Range<usize> {
        self.rooms[i].end..self.rooms.get(i + 1).map_or(self.output_len, |next| next.start)
    }

    /// The rooms of `output` (a buffer of `output_len` bytes).
    fn split_rooms<'a>(&self, mut output: &'a mut [u8]) -> Vec<&'a mut [u8]> {
        let mut at = 0;
        let mut rooms = Vec::with_capacity(self.rooms.len());
        for range in &self.rooms {
            let (room, rest) = std::mem::take(&mut output)[range.start - at..].split_at_mut(range.len());
            rooms.push(room);
            (output, at) = (rest, range.end);
        }
        rooms
    }
}

/// One side's results for a batch, and its output buffer.
struct Run {
    sizes: Vec<Outcome>,
    decoded: Vec<Outcome>,
    output: Vec<u8>,
}

/// The CPU path (decoding with the libraries where they vouch for the result).
fn run_cpu(codec: &ChunkListCodec, batch: &Batch) -> Run {
    let mut output = sentinel_filled(batch.output_len);
    let decoded = codec.decompress_cpu(&batch.inputs(), &mut batch.split_rooms(&mut output));
    Run { sizes: batch.sizes.clone(), decoded: decoded.into_iter().map(Outcome::from).collect(), output }
}

/// What the CPU path is checked against.
enum Other<'a> {
    /// The GPU's batched calls, with a codec per bitstream (raw, size-prefixed).
    Gpu { stream: &'a Stream, codecs: [ChunkListCodec; 2] },
    /// The scalar decoders of these options, one chunk at a time.
    Scalar(Options),
}

impl Other<'_> {
    fn name(&self) -> &'static str {
        match self {
            Self::Gpu { .. } => "GPU",
            Self::Scalar(_) => "scalar",
        }
    }

    fn run(&self, prefixed: bool, batch: &Batch) -> ferrocomp::Result<Run> {
        match self {
            Self::Gpu { stream, codecs } => run_gpu(&codecs[prefixed as usize], stream, batch),
            Self::Scalar(options) => Ok(run_scalar(*options, prefixed, batch)),
        }
    }
}

/// The GPU: inputs in one device buffer, outputs slices of another, one stream.
fn run_gpu(codec: &ChunkListCodec, stream: &Stream, batch: &Batch) -> ferrocomp::Result<Run> {
    let gpu = codec.gpu().expect("a GPU codec");
    let inputs = gpu.upload(&batch.inputs)?;
    let outputs = gpu.upload(&sentinel_filled(batch.output_len))?;
    // An upload from pageable memory may return before its DMA ends; a download after it may not.
    gpu.download(outputs.view().slice(0, 1))?;
    let input_views: Vec<DeviceView<'_>> =
        batch.input_at.iter().map(|r| inputs.view().slice(r.start, r.len())).collect();
    // SAFETY: the rooms lie in `outputs` and do not overlap; both buffers outlive the calls,
    // whose outcomes are waited for.
    let output_views: Vec<DeviceViewMut<'_>> = batch
        .rooms
        .iter()
        .map(|r| unsafe { DeviceViewMut::from_raw(outputs.address() + r.start as u64, r.len()) })
        .collect();
    let sizes = unsafe { codec.decompressed_sizes_async(&input_views, stream)? }.outcomes()?;
    let decoded = unsafe { codec.decompress_async(&input_views, &output_views, stream)? }.outcomes()?;
    Ok(Run {
        sizes: sizes.into_iter().map(Outcome::from).collect(),
        decoded: decoded.into_iter().map(Outcome::from).collect(),
        output: gpu.download(outputs.view())?,
    })
}

/// The scalar decoders, chunk by chunk, with the size-prefix check `ChunkListCodec` makes. Sizes
/// have one CPU implementation: the batch's.
fn run_scalar(options: Options, prefixed: bool, batch: &Batch) -> Run {
    let mut output = sentinel_filled(batch.output_len);
    let prefix = if prefixed { ferrocomp::chunk_list::SIZE_PREFIX_LEN } else { 0 };
    let decoded = batch
        .inputs()
        .into_iter()
        .zip(batch.split_rooms(&mut output))
        .enumerate()
        .map(|(chunk, (input, room))| {
            let declared = input.first_chunk().map_or(0, |prefix| u64::from_le_bytes(*prefix));
            match options.codec().decompress_scalar(&input[prefix..], room) {
                Ok(actual) if prefixed && actual as u64 != declared => {
                    Outcome::SizeMismatch { chunk, expected: declared as usize, actual }
                }
                Ok(n) => Outcome::Ok(n),
                Err(status) => Outcome::Refused { chunk, status },
            }
        })
        .collect();
    Run { sizes: batch.sizes.clone(), decoded, output }
}

/// What is wrong with chunk `i`: how the CPU path (`ours`) and the other side disagree (results,
/// bytes, a good chunk that fails), and which of them wrote into the guard gap after its room.
fn check_chunk(batch: &Batch, i: usize, ours: &Run, theirs: &Run, other: &str) -> (Vec<String>, Vec<String>) {
    let mut disagreements = Vec::new();
    if ours.sizes[i] != theirs.sizes[i] {
        disagreements.push(format!("sizes: CPU {:?} vs {other} {:?}", ours.sizes[i], theirs.sizes[i]));
    }
    let room = &batch.rooms[i];
    match (&ours.decoded[i], &theirs.decoded[i]) {
        (a, b) if a != b => disagreements.push(format!("decoded: CPU {a:?} vs {other} {b:?}")),
        (&Outcome::Ok(n), _) if n > room.len() => {
            disagreements.push(format!("decoded {n} bytes into a room of {}", room.len()))
        }
        (&Outcome::Ok(n), _) => {
            let (ours, theirs) = (&ours.output[room.start..room.start + n], &theirs.output[room.start..room.start + n]);
            if let Some(at) = (0..n).find(|&k| ours[k] != theirs[k]) {
                disagreements.push(format!("decoded bytes differ from byte {at} of {n}"));
            }
        }
        _ => {}
    }
    if batch.good[i] && !matches!((&ours.decoded[i], &theirs.decoded[i]), (Outcome::Ok(_), Outcome::Ok(_))) {
        disagreements.push("an unmutated seed chunk does not decode".into());
    }
    let gap = batch.gap(i);
    let guard_violations = [("CPU", ours), (other, theirs)]
        .into_iter()
        .filter_map(|(side, run)| {
            let at = gap.clone().find(|&at| run.output[at] != sentinel(at))?;
            Some(format!("{side} wrote into the guard gap, {} bytes past the room", at - gap.start))
        })
        .collect();
    (disagreements, guard_violations)
}

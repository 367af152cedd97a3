//! `ferrocomp-bench`: ferrocomp's LZ4 and nvCOMP's side by side on one GPU, on the same bytes cut into
//! the same chunks, every buffer allocated before timing. Checks each round trip, and that each
//! library decodes the other's chunks; exits non-zero if any check fails.

use anyhow::{Context, Result, bail};
use ferrocomp::{BatchCodec, Chunks, DeviceBuffer, Gpu, Lz4, Results};
use ferrocomp_bench::nvcomp::Nvcomp;
use ferrocomp_bench::{BenchStream, Chunked, Timer, chunk_sizes};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: ferrocomp-bench --data DIR [--nvcomp PATH/libnvcomp.so.6] [--chunk-size 65536] \
                     [--reps 10] [--out FILE]";

/// The data sets `make_datasets.py` writes: file name, and the name the nvCOMP anchor gives it.
const DATASETS: [(&str, &str); 4] = [
    ("text.bin", "text(py-src)"),
    ("binary.bin", "binary(libtorch)"),
    ("float32.bin", "float32-field"),
    ("int32.bin", "int32-offsets"),
];

/// Alignment of compressed chunk slots (nvCOMP's LZ4 needs at most 4; it says more may help).
const SLOT_ALIGN: usize = 16;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("verification FAILED");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Command-line arguments.
struct Args {
    data: PathBuf,
    nvcomp: Option<PathBuf>,
    chunk_size: usize,
    reps: usize,
    out: Option<PathBuf>,
}

impl Args {
    fn parse() -> Result<Self> {
        let (mut data, mut nvcomp, mut chunk_size, mut reps, mut out) = (None, None, 65536, 10, None);
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            let mut value = || args.next().with_context(|| format!("{flag} needs a value\n{USAGE}"));
            match flag.as_str() {
                "--data" => data = Some(PathBuf::from(value()?)),
                "--nvcomp" => nvcomp = Some(PathBuf::from(value()?)),
                "--chunk-size" => chunk_size = value()?.parse().context("--chunk-size")?,
                "--reps" => reps = value()?.parse().context("--reps")?,
                "--out" => out = Some(PathBuf::from(value()?)),
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                _ => bail!("unknown argument {flag}\n{USAGE}"),
            }
        }
        if chunk_size == 0 || reps == 0 {
            bail!("--chunk-size and --reps must be positive");
        }
        Ok(Self { data: data.context(USAGE)?, nvcomp, chunk_size, reps, out })
    }
}

fn run() -> Result<bool> {
    let args = Args::parse()?;
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
    let bench = Bench {
        stream: BenchStream::new(&gpu)?,
        timer: Timer::new()?,
        gpu: gpu.clone(),
        chunk_size: args.chunk_size,
        reps: args.reps,
    };
    let ferrocomp = Ferrocomp(gpu.clone());
    let (mut rows, mut dataset_bytes) = (Vec::new(), BTreeSet::new());
    for (file, name) in DATASETS {
        let path = args.data.join(file);
        if !path.exists() {
            eprintln!("{}: not found, skipped", path.display());
            continue;
        }
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        eprintln!("{name}: {} bytes", bytes.len());
        dataset_bytes.insert(bytes.len());
        let data = Dataset {
            name,
            sizes: chunk_sizes(bytes.len(), args.chunk_size),
            input: Chunked::upload(&gpu, &bytes, args.chunk_size)?,
            bytes,
        };
        let mut ours = Side::new(&bench, &ferrocomp, &data)?;
        let mut our_row = bench.measure(&data, &mut ours)?;
        if let Some(nvcomp) = &nvcomp {
            let mut theirs = Side::new(&bench, nvcomp, &data)?;
            let mut their_row = bench.measure(&data, &mut theirs)?;
            let (ok, time) = bench.decodes(&data, &ours.compressed, &mut theirs)?;
            (our_row.interop, their_row.cross_decompress) = (Some(ok), Some(time));
            let (ok, time) = bench.decodes(&data, &theirs.compressed, &mut ours)?;
            (their_row.interop, our_row.cross_decompress) = (Some(ok), Some(time));
            rows.extend([our_row, their_row]);
        } else {
            rows.push(our_row);
        }
    }
    if rows.is_empty() {
        bail!("no data sets in {} (write them with bench/make_datasets.py)", args.data.display());
    }
    let mib: Vec<String> = dataset_bytes.iter().map(|&b| (b as f64 / (1 << 20) as f64).to_string()).collect();
    let header = format!(
        "LZ4 on {}: chunks of {} B, data sets of {} MiB, best and median of {} timed runs (CUDA events, buffers \
         preallocated); {nvcomp_version}",
        gpu.name(),
        args.chunk_size,
        mib.join("/"),
        args.reps,
    );
    let report = report(&header, &rows);
    print!("{report}");
    if let Some(out) = &args.out {
        std::fs::write(out, &report).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(rows.iter().all(|row| row.round_trip && row.interop != Some(false)))
}

/// A batched LZ4 implementation under test, in nvCOMP's shape.
trait Codec {
    /// Its row label.
    fn label(&self) -> &'static str;

    /// Bytes a compressed chunk of `chunk_size` may take.
    fn max_compressed_chunk_size(&self, chunk_size: usize) -> Result<usize>;

    /// Device temp bytes both directions need for `count` chunks of at most `chunk_size`, `total` in all.
    fn temp_size(&self, count: usize, chunk_size: usize, total: usize) -> Result<usize>;

    /// Enqueues compressing `input` (chunks of at most `chunk_size`) into `output`'s slots, writing its
    /// sizes and statuses.
    ///
    /// # Safety
    /// The buffers must stay alive until the stream has run the call; `temp` holds [`Codec::temp_size`].
    unsafe fn compress(
        &self,
        input: &Chunked,
        chunk_size: usize,
        output: &mut Chunked,
        temp: &mut DeviceBuffer<u8>,
        stream: &BenchStream,
    ) -> Result<()>;

    /// Enqueues decompressing `input` into `output`'s slots, which hold `capacities` bytes each, writing
    /// its sizes and statuses.
    ///
    /// # Safety
    /// As [`Codec::compress`].
    unsafe fn decompress(
        &self,
        input: &Chunked,
        capacities: &DeviceBuffer<usize>,
        output: &mut Chunked,
        temp: &mut DeviceBuffer<u8>,
        stream: &BenchStream,
    ) -> Result<()>;
}

/// ferrocomp's LZ4, default options.
struct Ferrocomp(Gpu);

impl Codec for Ferrocomp {
    fn label(&self) -> &'static str {
        "ferrocomp LZ4"
    }

    fn max_compressed_chunk_size(&self, chunk_size: usize) -> Result<usize> {
        Ok(Lz4::default().max_compressed_chunk_size(chunk_size))
    }

    fn temp_size(&self, count: usize, chunk_size: usize, _total: usize) -> Result<usize> {
        let lz4 = Lz4::default();
        Ok(lz4.compress_scratch_size(count, chunk_size).max(lz4.decompress_scratch_size(count, chunk_size)))
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
            Lz4::default().compress_async(
                &self.0,
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
        let outputs = Chunks::new(output.addresses.view(), capacities.view());
        unsafe {
            Lz4::default().decompress_async(
                &self.0,
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

impl Codec for Nvcomp {
    fn label(&self) -> &'static str {
        "nvCOMP LZ4"
    }

    fn max_compressed_chunk_size(&self, chunk_size: usize) -> Result<usize> {
        Nvcomp::max_compressed_chunk_size(self, chunk_size)
    }

    fn temp_size(&self, count: usize, chunk_size: usize, total: usize) -> Result<usize> {
        Nvcomp::temp_size(self, count, chunk_size, total)
    }

    unsafe fn compress(
        &self,
        input: &Chunked,
        chunk_size: usize,
        output: &mut Chunked,
        temp: &mut DeviceBuffer<u8>,
        stream: &BenchStream,
    ) -> Result<()> {
        unsafe { Nvcomp::compress(self, input, chunk_size, output, temp, stream.raw()) }
    }

    unsafe fn decompress(
        &self,
        input: &Chunked,
        capacities: &DeviceBuffer<usize>,
        output: &mut Chunked,
        temp: &mut DeviceBuffer<u8>,
        stream: &BenchStream,
    ) -> Result<()> {
        unsafe { Nvcomp::decompress(self, input, capacities, output, temp, stream.raw()) }
    }
}

/// One data set: its bytes on the host and, cut into chunks, on the device.
struct Dataset {
    name: &'static str,
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
    dataset: &'static str,
    codec: &'static str,
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

/// What every measurement shares.
struct Bench {
    gpu: Gpu,
    stream: BenchStream,
    timer: Timer,
    chunk_size: usize,
    reps: usize,
}

impl Bench {
    /// Compresses and decompresses `data` with `side`, timed; checks the round trip.
    fn measure(&self, data: &Dataset, side: &mut Side) -> Result<Row> {
        let Side { codec, compressed, decompressed, temp } = side;
        let what = format!("{}: {}", data.name, codec.label());
        let compress =
            self.time(|| unsafe { codec.compress(&data.input, self.chunk_size, compressed, temp, &self.stream) })?;
        let statuses = self.gpu.download(compressed.statuses.view())?;
        let compressed_ok =
            same(&format!("{what} compression"), "status of chunk", &statuses, &vec![0; statuses.len()]);
        let compressed_bytes: usize = self.gpu.download(compressed.sizes.view())?.iter().sum();
        decompressed.clear(&self.gpu)?;
        let decompress =
            self.time(|| unsafe { codec.decompress(compressed, &data.input.sizes, decompressed, temp, &self.stream) })?;
        let round_trip = self.holds(data, decompressed, &format!("{what} round trip"))? && compressed_ok;
        Ok(Row {
            dataset: data.name,
            codec: codec.label(),
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

/// The results as markdown: `header`, the table, and what its columns mean.
fn report(header: &str, rows: &[Row]) -> String {
    let mut out = format!("{header}\n\n");
    out += "| dataset | codec | ratio | compress GB/s | decompress GB/s | compress median GB/s \
            | decompress median GB/s | decompress other's chunks GB/s | round trip | interop ok |\n";
    out += "|---|---|---|---|---|---|---|---|---|---|\n";
    let yes_no = |ok: bool| if ok { "yes" } else { "NO" };
    for row in rows {
        let gbps = |seconds: f64| row.bytes as f64 / seconds / 1e9;
        let _ = writeln!(
            out,
            "| {} | {} | {:.3} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} | {} |",
            row.dataset,
            row.codec,
            row.ratio,
            gbps(row.compress.best),
            gbps(row.decompress.best),
            gbps(row.compress.median),
            gbps(row.decompress.median),
            row.cross_decompress.as_ref().map_or("-".to_owned(), |t| format!("{:.1}", gbps(t.best))),
            yes_no(row.round_trip),
            row.interop.map_or("-", yes_no),
        );
    }
    out += "\nratio: uncompressed bytes / sum of compressed chunk sizes. GB/s: uncompressed bytes (1e9) per second \
            of GPU time (best; median as marked). decompress other's chunks: this codec decoding the other library's \
            compressed chunks of the same data. interop ok: the other library decodes this row's compressed chunks to \
            the input.\n";
    out
}

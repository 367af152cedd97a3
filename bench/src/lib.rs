//! Shared pieces of ferrocomp's benchmarks: chunked device buffers, streams timed with CUDA events, the
//! batched-codec shape both libraries are driven through, and nvCOMP's batched C API loaded at run time.

pub mod nvcomp;

use anyhow::Result;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream, sys};
use ferrocomp::{Algorithm, Chunks, DeviceBuffer, Gpu, Options};
use std::sync::Arc;

/// The data sets `make_datasets.py` writes: file name, and the name the nvCOMP anchor gives it (the
/// fifth, real text, is not the anchor's).
pub const DATASETS: [(&str, &str); 5] = [
    ("text.bin", "text(py-src)"),
    ("binary.bin", "binary(libtorch)"),
    ("float32.bin", "float32-field"),
    ("int32.bin", "int32-offsets"),
    ("realtext.bin", "text(linux-src)"),
];

/// A batched codec under test, in nvCOMP's shape.
pub trait Codec {
    /// Its row label.
    fn label(&self) -> &str;

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

/// A bench binary's exit status: success when it ran and every output matched its input.
pub fn exit_code(outcome: Result<bool>) -> std::process::ExitCode {
    match outcome {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("verification FAILED");
            std::process::ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The algorithm's name in tables: "LZ4", "Snappy", "Deflate", "GDeflate", "Blosc", "Zstd", "Cascaded",
/// "Bitcomp", "ANS".
pub fn title(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::Lz4 => "LZ4",
        Algorithm::Snappy => "Snappy",
        Algorithm::Deflate => "Deflate",
        Algorithm::GDeflate => "GDeflate",
        Algorithm::Blosc => "Blosc",
        Algorithm::Zstd => "Zstd",
        Algorithm::Cascaded => "Cascaded",
        Algorithm::Bitcomp => "Bitcomp",
        Algorithm::Ans => "ANS",
    }
}

/// The codec's name in tables: its algorithm's [`title`], and the level of Deflate, GDeflate and Zstd, and
/// Bitcomp's element type and algorithm ("Bitcomp u32 sparse").
pub fn codec_name(options: &Options) -> String {
    match options {
        Options::Deflate(deflate) => format!("Deflate level {}", deflate.level),
        Options::GDeflate(gdeflate) => format!("GDeflate level {}", gdeflate.level),
        Options::Zstd(zstd) => format!("Zstd level {}", zstd.level),
        Options::Ans(ans) if ans.data_type != ferrocomp::AnsDataType::Bytes => {
            format!("ANS {}", format!("{:?}", ans.data_type).to_lowercase())
        }
        Options::Bitcomp(bitcomp) => {
            let sparse = if bitcomp.sparse { " sparse" } else { "" };
            format!("Bitcomp {}{sparse}", format!("{:?}", bitcomp.element).to_lowercase())
        }
        _ => title(options.algorithm()).to_owned(),
    }
}

/// Chunks on the device: one buffer cut into slots of `slot` bytes (the last may be shorter), with
/// device arrays of their addresses and sizes and a status each, as batched calls read and write them.
pub struct Chunked {
    /// The bytes of all chunks.
    pub buffer: DeviceBuffer<u8>,
    /// Device address of each chunk.
    pub addresses: DeviceBuffer<u64>,
    /// Byte count of each chunk (for outputs: written by the call).
    pub sizes: DeviceBuffer<usize>,
    /// Status of each chunk, written by the call (0 is success for ferrocomp and nvCOMP alike).
    pub statuses: DeviceBuffer<u32>,
    /// Bytes between chunk starts.
    pub slot: usize,
}

impl Chunked {
    /// `len` bytes (contents undefined) cut into slots of `slot`; each size starts as its slot's length.
    pub fn new(gpu: &Gpu, len: usize, slot: usize) -> Result<Self> {
        let count = len.div_ceil(slot);
        let buffer = gpu.alloc(len)?;
        let addresses: Vec<u64> = (0..count).map(|i| buffer.address() + (i * slot) as u64).collect();
        let sizes = chunk_sizes(len, slot);
        Ok(Self {
            addresses: gpu.upload(&addresses)?,
            sizes: gpu.upload(&sizes)?,
            statuses: gpu.alloc(count)?,
            buffer,
            slot,
        })
    }

    /// A device copy of `data` cut into chunks of `chunk_size`.
    pub fn upload(gpu: &Gpu, data: &[u8], chunk_size: usize) -> Result<Self> {
        let mut chunked = Self::new(gpu, data.len(), chunk_size)?;
        gpu.copy_to_device_sync(data, chunked.buffer.view_mut())?;
        Ok(chunked)
    }

    /// Number of chunks.
    pub fn count(&self) -> usize {
        self.addresses.len()
    }

    /// The chunks as the input of a ferrocomp batched call.
    pub fn chunks(&self) -> Chunks<'_> {
        Chunks::new(self.addresses.view(), self.sizes.view()).with_largest(self.slot)
    }

    /// Zeroes the buffer, so that a decode that writes nothing cannot pass for a right one.
    pub fn clear(&mut self, gpu: &Gpu) -> Result<()> {
        gpu.make_current()?;
        let result = unsafe { sys::cuMemsetD8_v2(self.buffer.address(), 0, self.buffer.len()) };
        anyhow::ensure!(result == sys::CUresult::CUDA_SUCCESS, "cuMemsetD8 failed: {result:?}");
        Ok(())
    }
}

/// Sizes of the chunks of `chunk_size` that `len` bytes are cut into.
pub fn chunk_sizes(len: usize, chunk_size: usize) -> Vec<usize> {
    (0..len.div_ceil(chunk_size)).map(|i| chunk_size.min(len - i * chunk_size)).collect()
}

/// A CUDA stream seen both as cudarc's (for events and nvCOMP) and as ferrocomp's.
pub struct BenchStream {
    // Declared first so it is dropped before the stream it borrows.
    view: ferrocomp::Stream,
    owned: Arc<CudaStream>,
}

impl BenchStream {
    /// A new non-blocking stream on device 0's primary context (`Gpu::new(0)`'s).
    pub fn new(gpu: &Gpu) -> Result<Self> {
        gpu.make_current()?;
        let owned = CudaContext::new(0)?.new_stream()?;
        let view = unsafe { ferrocomp::Stream::borrow_raw(owned.cu_stream()) };
        Ok(Self { view, owned })
    }

    /// The stream as ferrocomp takes it.
    pub fn ferrocomp(&self) -> &ferrocomp::Stream {
        &self.view
    }

    /// The raw handle, as nvCOMP takes it (`cudaStream_t` is `CUstream`).
    pub fn raw(&self) -> sys::CUstream {
        self.owned.cu_stream()
    }

    /// Waits for all work enqueued on the stream.
    pub fn synchronize(&self) -> Result<()> {
        Ok(self.owned.synchronize()?)
    }
}

/// Times work on a stream with a pair of CUDA events.
pub struct Timer {
    start: CudaEvent,
    stop: CudaEvent,
}

impl Timer {
    /// Two new timing events on `stream`'s context.
    pub fn new(stream: &BenchStream) -> Result<Self> {
        let context = stream.owned.context();
        let timed = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        Ok(Self { start: context.new_event(timed)?, stop: context.new_event(timed)? })
    }

    /// Seconds the GPU spends on what `enqueue` puts on `stream`; returns once that work is done.
    pub fn time(&self, stream: &BenchStream, enqueue: impl FnOnce() -> Result<()>) -> Result<f64> {
        self.start.record(&stream.owned)?;
        enqueue()?;
        self.stop.record(&stream.owned)?;
        Ok(f64::from(self.start.elapsed_ms(&self.stop)?) / 1e3)
    }
}

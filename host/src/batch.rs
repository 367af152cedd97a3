//! The batched API every codec implements, in nvCOMP's shape: size the scratch, bound the
//! output, compress a batch, ask the decompressed sizes, decompress a batch with a status per
//! chunk. Batches are device arrays of chunk addresses and byte counts, so outputs may be any
//! caller-owned memory, slices of one buffer included; nothing is allocated per call and the
//! host never waits.

use crate::alloc::{DeviceView, DeviceViewMut};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Kernel, Stream, blocks};
use ferrocomp_format::{Algorithm, BatchArgs, Status};
use std::ffi::c_void;
use std::sync::OnceLock;

/// Device arrays describing `len` chunks: their addresses and byte counts.
#[derive(Clone, Copy, Debug)]
pub struct Chunks<'a> {
    /// Device address of each chunk.
    pub addresses: DeviceView<'a, u64>,
    /// Byte count of each chunk (for outputs: the room each has).
    pub sizes: DeviceView<'a, usize>,
    /// The largest of `sizes`, where the caller knows it (see [`Chunks::with_largest`]).
    pub largest: Option<usize>,
}

impl<'a> Chunks<'a> {
    /// The batch of `addresses` and `sizes`, which must be equally long.
    pub fn new(addresses: DeviceView<'a, u64>, sizes: DeviceView<'a, usize>) -> Self {
        assert_eq!(addresses.len(), sizes.len(), "one size per chunk address");
        Self { addresses, sizes, largest: None }
    }

    /// The batch saying that none of its sizes exceeds `bytes`: the inputs' largest compressing,
    /// the outputs' decompressing, tell a codec whose kernels fit their blocks to the chunks (ANS)
    /// how large they are, which the sizes on the device do not tell the host. Only the speed
    /// depends on it: a larger chunk is coded all the same.
    pub fn with_largest(self, bytes: usize) -> Self {
        Self { largest: Some(bytes), ..self }
    }

    /// Number of chunks.
    pub fn len(&self) -> usize {
        self.addresses.len()
    }

    /// Whether there are no chunks.
    pub fn is_empty(&self) -> bool {
        self.addresses.is_empty()
    }
}

/// Per-chunk results a batched call writes on the device.
#[derive(Debug)]
pub struct Results<'a> {
    /// Bytes produced per chunk (0 where the chunk failed).
    pub sizes: DeviceViewMut<'a, usize>,
    /// A [`Status`] code per chunk.
    pub statuses: DeviceViewMut<'a, u32>,
}

/// A compression algorithm with its options: the batched GPU API plus the CPU path writing the
/// same bitstream. A codec states its bounds, scratch needs, CPU functions and [`Launch`]; the
/// batched calls are the same for all of them.
pub trait BatchCodec: Send + Sync {
    /// Largest chunk the compressor accepts.
    fn max_chunk_size(&self) -> usize;

    /// Largest size `compressed_bytes` of a chunk can decode to (a guard against lying headers).
    fn max_decompressed_size(&self, compressed_bytes: usize) -> usize;

    /// Largest compressed size of a chunk of `chunk_bytes`.
    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize;

    /// The compress kernel's shape for `count` chunks of at most `max_chunk_bytes` (the inputs'
    /// [`Chunks::largest`] where given, and at most the largest the call's output capacity has
    /// room for) on a GPU of `multiprocessors` SMs; by default the one
    /// [`BatchCodec::launch`] states.
    fn compress_shape(&self, _count: usize, _max_chunk_bytes: usize, _multiprocessors: u32) -> Shape {
        self.launch().compress
    }

    /// The compress kernel for chunks of at most `max_chunk_bytes` (as
    /// [`BatchCodec::compress_shape`]'s): by default `{codec}_compress`, whatever their size.
    fn compress_kernel(&self, _max_chunk_bytes: usize) -> Kernel {
        Kernel::Compress
    }

    /// The decompress kernel's shape for `count` chunks of at most `max_chunk_bytes` where the host
    /// knows it (the outputs' [`Chunks::largest`], or the largest the call's scratch has room for
    /// where the codec's scratch grows with the chunks) on a GPU of `multiprocessors` SMs; by
    /// default the one [`BatchCodec::launch`] states.
    fn decompress_shape(&self, _count: usize, _max_chunk_bytes: Option<usize>, _multiprocessors: u32) -> Shape {
        self.launch().decompress
    }

    /// The shape of the block decoder (the `{codec}_decompress_blocks` kernel, for the codecs
    /// that have one: several warps a chunk) where a batch of `count` chunks of at most
    /// `max_chunk_bytes` (as [`BatchCodec::decompress_shape`] is told it) decodes faster with it
    /// on a GPU of `multiprocessors` SMs than in [`BatchCodec::decompress_shape`]; by default,
    /// none.
    fn block_decoder(&self, _count: usize, _max_chunk_bytes: Option<usize>, _multiprocessors: u32) -> Option<Shape> {
        None
    }

    /// The options word (`BatchArgs::options`) of the block decoder for a batch of `count`
    /// chunks on a GPU of `multiprocessors` SMs; by default [`Launch::options`].
    fn block_decoder_options(&self, _count: usize, _multiprocessors: u32) -> u64 {
        self.launch().options
    }

    /// Device scratch bytes [`BatchCodec::compress_async`] needs for `count` chunks of at most
    /// `max_chunk_bytes`.
    fn compress_scratch_size(&self, _count: usize, _max_chunk_bytes: usize) -> usize {
        0
    }

    /// Device scratch bytes [`BatchCodec::decompress_async`] needs for `count` chunks that
    /// decompress to at most `max_chunk_bytes`.
    fn decompress_scratch_size(&self, _count: usize, _max_chunk_bytes: usize) -> usize {
        0
    }

    /// How the codec's kernels are launched.
    fn launch(&self) -> Launch;

    /// Enqueues what the decompress kernel leaves to later kernels, for a codec that has such
    /// (Blosc's unshuffle), over the batch `args` it decoded. By default, nothing.
    ///
    /// # Safety
    /// As [`BatchCodec::decompress_async`].
    unsafe fn finish_decompress(&self, _gpu: &Gpu, _args: &BatchArgs, _stream: &Stream) -> Result<()> {
        Ok(())
    }

    /// Compresses one chunk on the CPU into `out`; returns the compressed size.
    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status>;

    /// Decompresses one chunk on the CPU into `out`; returns the decompressed size. Decodes with
    /// the codec's CPU library ([`BatchCodec::decompress_library`]) where it vouches for its
    /// result, else with the scalar decoder; either way the result (status, size and bytes) is
    /// [`BatchCodec::decompress_scalar`]'s.
    fn decompress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        self.decompress_library(input, out).map_or_else(|| self.decompress_scalar(input, out), Ok)
    }

    /// Decompresses one chunk on the CPU with ferrocomp's own scalar decoder (the format crate's,
    /// twin of the GPU kernels): the oracle of [`BatchCodec::decompress_cpu`].
    fn decompress_scalar(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status>;

    /// Decompresses one chunk into `out` with a CPU library alone, for a codec that has one:
    /// `Some(size)` only where [`BatchCodec::decompress_scalar`] would return that size and
    /// write the same bytes; `None` where the library failed or cannot vouch for its result
    /// (then `out` holds anything). By default, no library: always `None`.
    fn decompress_library(&self, _input: &[u8], _out: &mut [u8]) -> Option<usize> {
        None
    }

    /// The size one compressed chunk decompresses to, found on the CPU.
    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status>;

    /// Bytes a chunk size must be a multiple of, so that every chunk holds whole values (ANS's
    /// 16-bit floats).
    fn value_width(&self) -> usize {
        1
    }

    /// Whether decoding gives the input back exactly. A lossy codec's native streams carry no
    /// checksums of the uncompressed data (what decodes is not what was compressed).
    fn lossless(&self) -> bool {
        true
    }

    /// Enqueues compressing each chunk of `inputs` into `outputs` (each with room for
    /// `output_capacity` bytes: [`BatchCodec::max_compressed_chunk_size`] of the largest input).
    ///
    /// # Safety
    /// Every address in the arrays must be valid device memory of its stated size until the
    /// stream has run the call, and outputs must not overlap inputs or each other.
    #[allow(clippy::too_many_arguments)]
    unsafe fn compress_async(
        &self,
        gpu: &Gpu,
        inputs: Chunks<'_>,
        outputs: DeviceView<'_, u64>,
        output_capacity: usize,
        scratch: DeviceViewMut<'_, u8>,
        results: Results<'_>,
        stream: &Stream,
    ) -> Result<()> {
        let count = check_batch(inputs.len(), outputs.len(), &results)?;
        check_scratch(&scratch, self.compress_scratch_size(count, 0))?;
        let launch = self.launch();
        let args = BatchArgs {
            outputs: outputs.address(),
            output_capacity: output_capacity as u64,
            ..batch_args(inputs, &results, Some(&scratch), count, launch.options)
        };
        let largest =
            largest_fitting(self.max_chunk_size(), |bytes| self.max_compressed_chunk_size(bytes) <= output_capacity);
        let largest = inputs.largest.map_or(largest, |given| given.min(largest));
        let shape = self.compress_shape(count, largest, gpu.multiprocessors());
        unsafe { launch.run(gpu, self.compress_kernel(largest), shape, &args, stream) }
    }

    /// Enqueues finding the decompressed size of each chunk of `inputs`.
    ///
    /// # Safety
    /// As [`BatchCodec::compress_async`], for `inputs`.
    unsafe fn decompressed_sizes_async(
        &self,
        gpu: &Gpu,
        inputs: Chunks<'_>,
        results: Results<'_>,
        stream: &Stream,
    ) -> Result<()> {
        let count = check_batch(inputs.len(), inputs.len(), &results)?;
        let launch = self.launch();
        let args = batch_args(inputs, &results, None, count, launch.options);
        unsafe { launch.run(gpu, Kernel::DecompressedSizes, launch.sizes, &args, stream) }
    }

    /// Enqueues decompressing each chunk of `inputs` into `outputs`; a chunk that is corrupt or
    /// does not fit gets an error status, and the others still decode. `first_failure`, if
    /// given, is lowered (atomically) to the index of the first failing chunk.
    ///
    /// # Safety
    /// As [`BatchCodec::compress_async`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn decompress_async(
        &self,
        gpu: &Gpu,
        inputs: Chunks<'_>,
        outputs: Chunks<'_>,
        scratch: DeviceViewMut<'_, u8>,
        results: Results<'_>,
        first_failure: Option<DeviceViewMut<'_, u32>>,
        stream: &Stream,
    ) -> Result<()> {
        let count = check_batch(inputs.len(), outputs.len(), &results)?;
        check_scratch(&scratch, self.decompress_scratch_size(count, 0))?;
        let launch = self.launch();
        // The scratch was sized for the caller's largest chunk: the largest it has room for, where
        // it grows with the chunks.
        let max = self.max_chunk_size();
        let sized = self.decompress_scratch_size(count, max) > self.decompress_scratch_size(count, 0);
        let room =
            sized.then(|| largest_fitting(max, |bytes| self.decompress_scratch_size(count, bytes) <= scratch.len()));
        let largest = match (outputs.largest, room) {
            (Some(given), Some(room)) => Some(given.min(room)),
            (given, room) => given.or(room),
        };
        let args = BatchArgs {
            outputs: outputs.addresses.address(),
            output_capacities: outputs.sizes.address(),
            first_failure: first_failure.map_or(0, |f| f.address()),
            ..batch_args(inputs, &results, Some(&scratch), count, launch.options)
        };
        unsafe {
            match self.block_decoder(count, largest, gpu.multiprocessors()) {
                Some(shape) => {
                    let options = self.block_decoder_options(count, gpu.multiprocessors());
                    launch.run(gpu, Kernel::DecompressBlocks, shape, &BatchArgs { options, ..args }, stream)?
                }
                None => {
                    let shape = self.decompress_shape(count, largest, gpu.multiprocessors());
                    launch.run(gpu, Kernel::Decompress, shape, &args, stream)?
                }
            }
            self.finish_decompress(gpu, &args, stream)
        }
    }
}

/// The largest chunk size up to `max` that `fits` (which holds for a size if it holds for a
/// larger one); 0 if none does.
fn largest_fitting(max: usize, fits: impl Fn(usize) -> bool) -> usize {
    let (mut low, mut high) = (0, max);
    while low < high {
        let mid = low + (high - low).div_ceil(2);
        (low, high) = if fits(mid) { (mid, high) } else { (low, mid - 1) };
    }
    low
}

/// Whether a batch of `count` chunks is at most `per_sm` chunks an SM deep on a GPU of
/// `multiprocessors` SMs: where a codec's block decoder takes it (see
/// [`BatchCodec::block_decoder`]). `FERROCOMP_BLOCK_DECODE_WAVES=N` makes it N for every codec,
/// to measure where one decoder overtakes the other.
pub(crate) fn is_small_batch(count: usize, multiprocessors: u32, per_sm: usize) -> bool {
    static WAVES: OnceLock<Option<usize>> = OnceLock::new();
    let waves = WAVES.get_or_init(|| std::env::var("FERROCOMP_BLOCK_DECODE_WAVES").ok().and_then(|v| v.parse().ok()));
    count <= waves.unwrap_or(per_sm) * multiprocessors as usize
}

/// Warps of each block coding a chunk (a block per chunk), for a batch of `count` chunks on a GPU
/// of `multiprocessors` SMs, each holding `per_sm` warps of the kernel: the fewest, from `least`,
/// whose waves of blocks the batch fills to `fill` percent or more (a last wave mostly empty
/// leaves the GPU idle), else those it fills best; blocks divide an SM's warps, so that an SM
/// holds a whole number of them. `forced` (from a codec's environment variable, to measure)
/// overrides it, up to an SM's worth.
pub(crate) fn wave_warps(
    count: usize,
    multiprocessors: u32,
    (least, per_sm): (u32, u32),
    fill: usize,
    forced: Option<u32>,
) -> u32 {
    if let Some(warps) = forced {
        return warps.clamp(1, per_sm);
    }
    // Blocks the waves of blocks of `warps` warps that code the batch hold (the batch fills
    // `count` of them).
    let count = count.max(1);
    let room = |warps: u32| {
        let per_wave = (multiprocessors.max(1) * (per_sm / warps)) as usize;
        count.div_ceil(per_wave) * per_wave
    };
    let mut shapes = (least..=per_sm).filter(|warps| per_sm.is_multiple_of(*warps));
    let best = shapes.clone().min_by_key(|&warps| room(warps)).unwrap_or(least);
    shapes.find(|&warps| 100 * count >= fill * room(warps)).unwrap_or(best)
}

/// The number the environment variable `name` holds, read once into `cell`: a codec's forced
/// warps a block (see [`wave_warps`]).
pub(crate) fn forced_warps(cell: &'static OnceLock<Option<u32>>, name: &str) -> Option<u32> {
    *cell.get_or_init(|| std::env::var(name).ok()?.parse().ok())
}

/// How a codec's kernels are spread over the GPU: what differs between codecs' launches.
#[derive(Clone, Copy, Debug)]
pub struct Launch {
    /// Whose kernels these are.
    pub algorithm: Algorithm,
    /// The options word the kernels receive (`BatchArgs::options`).
    pub options: u64,
    /// The compress kernel's shape.
    pub compress: Shape,
    /// The decompress kernel's shape.
    pub decompress: Shape,
    /// The decompressed-sizes kernel's shape.
    pub sizes: Shape,
}

/// Which threads code a chunk, as the kernel's `Lanes` expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A warp per chunk, `per_block` warps to a block, each with `shared_bytes` of shared
    /// memory; at most `max_warps` warps (the rest of the chunks are taken in turns).
    Warps {
        /// Warps to a block.
        per_block: u32,
        /// Bytes of shared memory for each warp.
        shared_bytes: usize,
        /// Most warps launched; more chunks are taken in turns.
        max_warps: usize,
    },
    /// A thread per chunk, `per_block` threads to a block, each with `shared_bytes` of shared
    /// memory.
    Threads {
        /// Threads to a block.
        per_block: u32,
        /// Bytes of shared memory for each thread.
        shared_bytes: usize,
    },
    /// A block of `warps` warps per chunk, with `shared_bytes` of shared memory; at most
    /// `max_blocks` blocks (each owns a scratch slot; the rest of the chunks are taken in turns).
    Blocks {
        /// Warps to a block, all on one chunk.
        warps: u32,
        /// Bytes of shared memory for the block.
        shared_bytes: usize,
        /// Most blocks launched (one scratch slot each); more chunks are taken in turns.
        max_blocks: usize,
    },
    /// A warp per chunk, `writers` of them to a block with one more warp that helps them all (a
    /// team), each writer with `shared_bytes` of shared memory; at most `max_blocks` blocks (the
    /// rest of the chunks are taken in turns).
    Teams {
        /// Warps to a block that each code a chunk.
        writers: u32,
        /// Bytes of shared memory for each writer.
        shared_bytes: usize,
        /// Most blocks launched.
        max_blocks: usize,
    },
}

impl Shape {
    /// A warp per chunk, as many as there are chunks.
    pub const fn warps(per_block: u32, shared_bytes: usize) -> Self {
        Self::Warps { per_block, shared_bytes, max_warps: usize::MAX }
    }

    /// A block per chunk, as many as there are chunks.
    pub const fn blocks(warps: u32, shared_bytes: usize) -> Self {
        Self::Blocks { warps, shared_bytes, max_blocks: usize::MAX }
    }

    /// A block of `warps` warps per chunk, with `shared_bytes(warps)` of shared memory.
    pub fn blocks_of(warps: u32, shared_bytes: impl Fn(u32) -> usize) -> Self {
        Self::blocks(warps, shared_bytes(warps))
    }

    /// Blocks, threads per block and shared bytes per block for `count` chunks.
    fn grid(self, count: usize) -> (u32, u32, u32) {
        match self {
            Self::Warps { per_block, shared_bytes, max_warps } => {
                (blocks(count.min(max_warps), per_block), per_block * 32, per_block * shared_bytes as u32)
            }
            Self::Threads { per_block, shared_bytes } => {
                (blocks(count, per_block), per_block, per_block * shared_bytes as u32)
            }
            Self::Blocks { warps, shared_bytes, max_blocks } => {
                (count.min(max_blocks) as u32, warps * 32, shared_bytes as u32)
            }
            Self::Teams { writers, shared_bytes, max_blocks } => {
                (blocks(count, writers).min(max_blocks as u32), (writers + 1) * 32, writers * shared_bytes as u32)
            }
        }
    }
}

impl Launch {
    /// Enqueues `kernel` in `shape` over the batch `args`.
    ///
    /// # Safety
    /// `args` must describe device memory valid until the stream has run the kernel.
    unsafe fn run(&self, gpu: &Gpu, kernel: Kernel, shape: Shape, args: &BatchArgs, stream: &Stream) -> Result<()> {
        let (blocks, threads, shared_bytes) = shape.grid(args.count as usize);
        let function = gpu.kernel(self.algorithm, kernel)?;
        let params = [args as *const BatchArgs as *mut c_void];
        unsafe { gpu.launch(function, blocks, threads, shared_bytes, stream, &params) }
    }
}

/// The arguments every kernel of a batch shares.
fn batch_args(
    inputs: Chunks<'_>,
    results: &Results<'_>,
    scratch: Option<&DeviceViewMut<'_, u8>>,
    count: usize,
    options: u64,
) -> BatchArgs {
    BatchArgs {
        inputs: inputs.addresses.address(),
        input_sizes: inputs.sizes.address(),
        result_sizes: results.sizes.address(),
        statuses: results.statuses.address(),
        scratch: scratch.map_or(0, |s| s.address()),
        scratch_len: scratch.map_or(0, |s| s.len() as u64),
        count: count as u64,
        options,
        ..BatchArgs::default()
    }
}

/// Checks that a batch's arrays agree in length; returns the chunk count.
fn check_batch(inputs: usize, outputs: usize, results: &Results<'_>) -> Result<usize> {
    if outputs != inputs || results.sizes.len() < inputs || results.statuses.len() < inputs {
        return Err(Error::InvalidArgument(format!(
            "batch arrays disagree: {inputs} inputs, {outputs} outputs, {} sizes, {} statuses",
            results.sizes.len(),
            results.statuses.len()
        )));
    }
    if inputs > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!("{inputs} chunks is more than a batch can hold")));
    }
    Ok(inputs)
}

/// Checks that `scratch` holds `needed` bytes.
fn check_scratch(scratch: &DeviceViewMut<'_, u8>, needed: usize) -> Result<()> {
    if scratch.len() < needed {
        return Err(Error::InvalidArgument(format!("scratch of {} bytes, {needed} needed", scratch.len())));
    }
    Ok(())
}

//! What the batched kernels share: the arguments ([`BatchArgs`]), the walk over a batch's
//! chunks, and recording each chunk's outcome. A codec states only what it does with one chunk
//! ([`ChunkKernels`]) and names its entry points with [`batch_kernels!`].

use crate::gpu::{HardwareBlock, HardwareWarp, atomic_min_u32, thread};
use crate::raw::{bytes, bytes_mut};
use crate::warp::Warp;
use ferrocomp_format::{BatchArgs, Status};

/// Which threads code one chunk.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Lanes {
    /// The 32 lanes of a warp together (the host launches a warp per chunk).
    Warp,
    /// The first lane of a warp alone (a warp per chunk; the other lanes idle).
    FirstOfWarp,
    /// Every thread its own chunk (the host launches a thread per chunk).
    Thread,
    /// All threads of a block (CTA) together (the host launches a block per chunk); the codec's
    /// functions may wait at block barriers, which every thread of the block reaches.
    Block,
    /// A warp per chunk, every warp of a block but the last, which helps them all (a team: the
    /// host launches a block per that many chunks).
    TeamWriter,
}

/// One chunk of a batch, as a kernel sees it.
#[derive(Clone, Copy)]
pub struct Chunk {
    /// Index in the batch.
    pub index: usize,
    /// The input bytes.
    pub input: *const u8,
    /// Their count.
    pub input_len: usize,
    /// The output (null for the size kernels).
    pub output: *mut u8,
    /// Bytes the output may hold.
    pub capacity: usize,
    /// Index in the grid of the warp, thread or block coding the chunk (as its [`Lanes`] say):
    /// it owns that scratch slot.
    pub slot: usize,
}

impl Chunk {
    /// The input bytes as a slice.
    ///
    /// # Safety
    /// The batch's arrays must describe valid device memory.
    #[inline(always)]
    pub unsafe fn input<'a>(&self) -> &'a [u8] {
        unsafe { bytes(self.input, self.input_len) }
    }

    /// The output as a slice, for chunks coded by one thread.
    ///
    /// # Safety
    /// As [`Chunk::input`], and no other thread may use the output meanwhile.
    #[inline(always)]
    pub unsafe fn output<'a>(&self) -> &'a mut [u8] {
        unsafe { bytes_mut(self.output, self.capacity) }
    }
}

/// What a codec's GPU kernels do with one chunk, and which threads do it. Every function runs in
/// each thread of its [`Lanes`] and returns the chunk's result size (the same in every lane).
pub trait ChunkKernels {
    /// Threads coding a chunk in the compress kernel.
    const COMPRESS: Lanes;
    /// Threads coding a chunk in the decompress kernel.
    const DECOMPRESS: Lanes;
    /// Threads reading a chunk in the decompressed-sizes kernel.
    const SIZES: Lanes;

    /// Compresses `chunk`'s input into its output.
    ///
    /// # Safety
    /// The batch's arrays and `args.scratch` must be valid as the host documents them.
    unsafe fn compress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status>;

    /// Decompresses `chunk`'s input into its output.
    ///
    /// # Safety
    /// As [`ChunkKernels::compress`].
    unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status>;

    /// The size `chunk`'s input decompresses to.
    ///
    /// # Safety
    /// As [`ChunkKernels::compress`].
    unsafe fn decompressed_size(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status>;
}

/// The kernels a codec's batched API launches, which the host finds by these names.
#[derive(Clone, Copy)]
pub enum Kernel {
    /// `{codec}_compress`.
    Compress,
    /// `{codec}_decompress`.
    Decompress,
    /// `{codec}_decompressed_sizes`.
    DecompressedSizes,
}

/// Runs `kernel` of codec `C` over the batch `args`: each chunk is coded by the threads of its
/// [`Lanes`], and the first of them records the result.
///
/// # Safety
/// `args` must describe valid device arrays of `args.count` entries, as the host documents.
#[inline(always)]
pub unsafe fn run<C: ChunkKernels>(kernel: Kernel, args: &BatchArgs) {
    let lanes = match kernel {
        Kernel::Compress => C::COMPRESS,
        Kernel::Decompress => C::DECOMPRESS,
        Kernel::DecompressedSizes => C::SIZES,
    };
    unsafe {
        for_each_chunk(lanes, args, |warp, chunk| match kernel {
            Kernel::Compress => C::compress(warp, chunk, args),
            Kernel::Decompress => C::decompress(warp, chunk, args),
            Kernel::DecompressedSizes => C::decompressed_size(warp, chunk, args),
        })
    }
}

/// A codec's decoder that spreads each chunk over a block of threads, for batches with too few
/// chunks to fill the GPU a warp each: its kernel is `{codec}_decompress_blocks`.
pub trait BlockDecompress {
    /// Decompresses `chunk` of the batch `args` with the whole block, its shared memory the
    /// block's dynamic shared memory; the result in thread 0.
    ///
    /// # Safety
    /// As [`ChunkKernels::compress`].
    unsafe fn decompress(
        block: &HardwareBlock,
        warp: &HardwareWarp,
        chunk: &Chunk,
        args: &BatchArgs,
    ) -> Result<usize, Status>;
}

/// Runs `C`'s block decoder over the batch `args`, a block per chunk.
///
/// # Safety
/// As [`run`].
#[inline(always)]
pub unsafe fn run_blocks<C: BlockDecompress>(args: &BatchArgs) {
    unsafe { for_each_chunk(Lanes::Block, args, |warp, chunk| C::decompress(&HardwareBlock, warp, chunk, args)) }
}

/// Codes each chunk of the batch `args` with `code` in the threads of `lanes`; the first of them
/// records the result.
///
/// # Safety
/// As [`run`].
#[inline(always)]
pub unsafe fn for_each_chunk(
    lanes: Lanes,
    args: &BatchArgs,
    mut code: impl FnMut(&HardwareWarp, &Chunk) -> Result<usize, Status>,
) {
    let warp = HardwareWarp;
    let (slot, slots) = match lanes {
        Lanes::Thread => (thread::index_1d() as usize, (thread::block_dim_x() * thread::grid_dim_x()) as usize),
        Lanes::Block => (thread::block_idx_x() as usize, thread::grid_dim_x() as usize),
        Lanes::TeamWriter => {
            let writers = HardwareWarp::per_block() - 1;
            let slot = thread::block_idx_x() * writers + HardwareWarp::index_in_block();
            (slot as usize, (writers * thread::grid_dim_x()) as usize)
        }
        Lanes::Warp | Lanes::FirstOfWarp => {
            if lanes == Lanes::FirstOfWarp && warp.lane() != 0 {
                return;
            }
            (HardwareWarp::index_in_grid() as usize, (HardwareWarp::per_block() * thread::grid_dim_x()) as usize)
        }
    };
    let records = match lanes {
        Lanes::Warp | Lanes::TeamWriter => warp.lane() == 0,
        Lanes::Block => thread::thread_idx_x() == 0,
        Lanes::FirstOfWarp | Lanes::Thread => true,
    };
    let mut index = slot;
    while index < args.count as usize {
        let chunk = unsafe { chunk_at(args, index, slot) };
        let result = code(&warp, &chunk);
        if records {
            unsafe { finish(args, index, result) };
        }
        index += slots;
    }
}

/// Chunk `index` of the batch, coded by the owner of scratch slot `slot`.
///
/// # Safety
/// `args` must describe valid device arrays of more than `index` entries.
#[inline(always)]
pub unsafe fn chunk_at(args: &BatchArgs, index: usize, slot: usize) -> Chunk {
    unsafe {
        let at = |array: u64| *(array as *const u64).add(index);
        let (output, capacity) = match (args.outputs, args.output_capacities) {
            (0, _) => (core::ptr::null_mut(), 0),
            (outputs, 0) => (at(outputs) as *mut u8, args.output_capacity as usize),
            (outputs, capacities) => (at(outputs) as *mut u8, at(capacities) as usize),
        };
        Chunk {
            index,
            input: at(args.inputs) as *const u8,
            input_len: at(args.input_sizes) as usize,
            output,
            capacity,
            slot,
        }
    }
}

/// Records that chunk `index` failed with `status`, after its kernel recorded its outcome.
///
/// # Safety
/// As [`chunk_at`]; no other thread records the chunk's outcome meanwhile.
pub unsafe fn fail(args: &BatchArgs, index: usize, status: Status) {
    unsafe { finish(args, index, Err(status)) }
}

/// Records one chunk's outcome (size 0 on failure) and lowers `first_failure` when it failed.
#[inline(always)]
unsafe fn finish(args: &BatchArgs, index: usize, result: Result<usize, Status>) {
    let (size, status) = match result {
        Ok(size) => (size, Status::Success),
        Err(status) => (0, status),
    };
    unsafe {
        *(args.result_sizes as *mut usize).add(index) = size;
        if args.statuses != 0 {
            *(args.statuses as *mut u32).add(index) = status as u32;
        }
        if status != Status::Success && args.first_failure != 0 {
            atomic_min_u32(args.first_failure as *mut u32, index as u32);
        }
    }
}

/// Scratch slot `slot` of the batch's scratch, taken as an array of `T`s.
///
/// # Safety
/// The scratch must hold at least `slot + 1` `T`s, slot `slot` used by this thread alone.
#[inline(always)]
pub unsafe fn scratch_slot<'a, T>(args: &BatchArgs, slot: usize) -> &'a mut T {
    unsafe { &mut *(args.scratch as *mut T).add(slot) }
}

/// This warp's share of the block's dynamic shared memory, taken as `T`s of `per_warp` each.
#[inline(always)]
pub fn warp_shared<T>(per_warp: usize) -> *mut T {
    unsafe { crate::gpu::dynamic_shared_memory::<T>().add(HardwareWarp::index_in_block() as usize * per_warp) }
}

/// Defines a codec's batched kernels, `$compress`, `$decompress` and `$sizes`, each taking one
/// [`BatchArgs`] and running the codec's [`ChunkKernels`] impl `$codec` over the batch.
#[macro_export]
macro_rules! batch_kernels {
    ($codec:ty: $compress:ident, $decompress:ident, $sizes:ident) => {
        /// Compresses each chunk of the batch (see `ferrocomp_format::BatchArgs`).
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $compress(args: ferrocomp_format::BatchArgs) {
            unsafe { $crate::batch::run::<$codec>($crate::batch::Kernel::Compress, &args) }
        }

        /// Decompresses each chunk of the batch, with a status per chunk.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $decompress(args: ferrocomp_format::BatchArgs) {
            unsafe { $crate::batch::run::<$codec>($crate::batch::Kernel::Decompress, &args) }
        }

        /// Finds the size each chunk of the batch decompresses to.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $sizes(args: ferrocomp_format::BatchArgs) {
            unsafe { $crate::batch::run::<$codec>($crate::batch::Kernel::DecompressedSizes, &args) }
        }
    };
}

/// A codec's compressor of chunks longer than its batch kernels take: Deflate's and GDeflate's,
/// past one 64 KiB part (nvCOMP's single-chunk bitstreams), kept in a kernel of its own,
/// `{codec}_compress_parts`, so that the common one compiles without the parts' loop.
pub trait PartsCompress {
    /// Compresses `chunk`'s input into its output, a part at a time.
    ///
    /// # Safety
    /// As [`ChunkKernels::compress`].
    unsafe fn compress_parts(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status>;
}

/// Runs `C`'s parts compressor over the batch `args`, a warp per chunk.
///
/// # Safety
/// As [`run`].
#[inline(always)]
pub unsafe fn run_parts<C: PartsCompress>(args: &BatchArgs) {
    unsafe { for_each_chunk(Lanes::Warp, args, |warp, chunk| C::compress_parts(warp, chunk, args)) }
}

/// Defines a codec's parts compressor kernel `$name`, taking one [`BatchArgs`] and running the
/// codec's [`PartsCompress`] impl `$codec` over the batch.
#[macro_export]
macro_rules! compress_parts_kernel {
    ($codec:ty: $name:ident) => {
        /// Compresses each chunk of the batch, any size, a part at a time.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: ferrocomp_format::BatchArgs) {
            unsafe { $crate::batch::run_parts::<$codec>(&args) }
        }
    };
}

/// Defines a codec's block decoder kernel `$name`, taking one [`BatchArgs`] and running the
/// codec's [`BlockDecompress`] impl `$codec` over the batch.
#[macro_export]
macro_rules! block_decompress_kernel {
    ($codec:ty: $name:ident) => {
        /// Decompresses each chunk of the batch with a block of threads, with a status per chunk.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $name(args: ferrocomp_format::BatchArgs) {
            unsafe { $crate::batch::run_blocks::<$codec>(&args) }
        }
    };
}

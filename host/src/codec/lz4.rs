//! LZ4: standard LZ4 blocks, one per chunk, on the GPU (one warp per chunk) or the CPU.

use super::{Grid, launch_compress, launch_decompress, launch_sizes};
use crate::alloc::{DeviceView, DeviceViewMut};
use crate::batch::{BatchCodec, Chunks, Results};
use crate::error::Result;
use crate::gpu::{Gpu, Stream};
use ferrocomp_format::lz4::{self, HASH_ENTRIES, MAX_CHUNK_SIZE};
use ferrocomp_format::{DataType, Status};
use ferrocomp_kernels_gpu::lz4::COMPRESS_SHARED_BYTES_PER_WARP;

/// Warps per block of the compress kernel (each holds an 8 KiB hash table in shared memory).
pub(crate) const COMPRESS_WARPS_PER_BLOCK: u32 = 4;
/// Warps per block of the decompress kernel.
const DECOMPRESS_WARPS_PER_BLOCK: u32 = 8;
/// Threads per block of the size-scan kernel (one thread per chunk).
const SIZES_THREADS_PER_BLOCK: u32 = 128;

/// LZ4 with its options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lz4 {
    /// Element type of the input (nvCOMP's `data_type`): matches align to its width.
    pub data_type: DataType,
}

impl BatchCodec for Lz4 {
    fn max_chunk_size(&self) -> usize {
        MAX_CHUNK_SIZE
    }

    fn max_decompressed_size(&self, compressed_bytes: usize) -> usize {
        lz4::max_decompressed_size(compressed_bytes)
    }

    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize {
        lz4::max_compressed_size(chunk_bytes)
    }

    fn compress_scratch_size(&self, _count: usize, _max_chunk_bytes: usize) -> usize {
        0 // the hash tables live in shared memory
    }

    fn decompress_scratch_size(&self, _count: usize, _max_chunk_bytes: usize) -> usize {
        0
    }

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
        let grid = |count| Grid::warps(count, COMPRESS_WARPS_PER_BLOCK, COMPRESS_SHARED_BYTES_PER_WARP);
        let kernel = gpu.kernels().lz4.compress;
        let options = self.data_type as u32;
        unsafe {
            launch_compress(gpu, kernel, grid, inputs, outputs, output_capacity, scratch, results, options, stream)
        }
    }

    unsafe fn decompressed_sizes_async(
        &self,
        gpu: &Gpu,
        inputs: Chunks<'_>,
        results: Results<'_>,
        stream: &Stream,
    ) -> Result<()> {
        let grid = |count| Grid::threads(count, SIZES_THREADS_PER_BLOCK);
        unsafe { launch_sizes(gpu, gpu.kernels().lz4.decompressed_sizes, grid, inputs, results, 0, stream) }
    }

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
        let grid = |count| Grid::warps(count, DECOMPRESS_WARPS_PER_BLOCK, 0);
        let kernel = gpu.kernels().lz4.decompress;
        unsafe { launch_decompress(gpu, kernel, grid, inputs, outputs, scratch, results, first_failure, 0, stream) }
    }

    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        let mut table = [0u16; HASH_ENTRIES];
        lz4::compress(input, self.data_type, &mut table, out)
    }

    fn decompress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        lz4::decompress(input, out)
    }

    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status> {
        lz4::decompressed_size(input)
    }
}

//! Snappy: raw Snappy streams, one per chunk. The GPU compressor is LZ4's warp parse writing
//! Snappy elements; the decoder runs one thread per chunk.

use super::lz4::COMPRESS_WARPS_PER_BLOCK;
use super::{Grid, launch_compress, launch_decompress, launch_sizes};
use crate::alloc::{DeviceView, DeviceViewMut};
use crate::batch::{BatchCodec, Chunks, Results};
use crate::error::Result;
use crate::gpu::{Gpu, Stream};
use ferrocomp_format::lz4::HASH_ENTRIES;
use ferrocomp_format::snappy::{self, MAX_CHUNK_SIZE};
use ferrocomp_format::{DataType, Status};
use ferrocomp_kernels_gpu::lz4::COMPRESS_SHARED_BYTES_PER_WARP;

/// Warps per block of the decompress and size kernels (one working lane each).
const DECOMPRESS_WARPS_PER_BLOCK: u32 = 8;

/// Snappy with its options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snappy {
    /// Element type of the input (as nvCOMP's `data_type` for LZ4): matches align to its width.
    pub data_type: DataType,
}

impl BatchCodec for Snappy {
    fn max_chunk_size(&self) -> usize {
        MAX_CHUNK_SIZE
    }

    fn max_decompressed_size(&self, compressed_bytes: usize) -> usize {
        snappy::max_decompressed_size(compressed_bytes)
    }

    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize {
        snappy::max_compressed_size(chunk_bytes)
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
        let kernel = gpu.kernels().snappy.compress;
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
        let grid = |count| Grid::warps(count, DECOMPRESS_WARPS_PER_BLOCK, 0);
        unsafe { launch_sizes(gpu, gpu.kernels().snappy.decompressed_sizes, grid, inputs, results, 0, stream) }
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
        let kernel = gpu.kernels().snappy.decompress;
        unsafe { launch_decompress(gpu, kernel, grid, inputs, outputs, scratch, results, first_failure, 0, stream) }
    }

    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        let mut table = [0u16; HASH_ENTRIES];
        snappy::compress(input, self.data_type, &mut table, out)
    }

    fn decompress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        snappy::decompress(input, out)
    }

    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status> {
        snappy::decompressed_size(input)
    }
}

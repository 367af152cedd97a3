//! GDeflate: one GDeflate page (deflate with its bits swizzled into 32 sub-streams, as
//! DirectStorage and nvCOMP write it) per chunk. Launched and scratched as Deflate is
//! ([`super::deflate`]).

use super::deflate::{
    compress_grid, compress_scratch_size, decompress_grid, with_compress_scratch, with_decode_tables,
};
use super::{check_scratch, launch_compress, launch_decompress, launch_sizes};
use crate::alloc::{DeviceView, DeviceViewMut};
use crate::batch::{BatchCodec, Chunks, Results};
use crate::error::Result;
use crate::gpu::{Gpu, Stream};
use ferrocomp_format::Status;
use ferrocomp_format::deflate::DEFAULT_LEVEL;
use ferrocomp_format::gdeflate::{self, MAX_CHUNK_SIZE};

/// GDeflate with its options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GDeflate {
    /// nvCOMP's `algorithm_type`, 0..=5, as for [`super::Deflate`].
    pub level: u8,
}

impl Default for GDeflate {
    fn default() -> Self {
        Self { level: DEFAULT_LEVEL }
    }
}

impl BatchCodec for GDeflate {
    fn max_chunk_size(&self) -> usize {
        MAX_CHUNK_SIZE
    }

    fn max_decompressed_size(&self, compressed_bytes: usize) -> usize {
        gdeflate::max_decompressed_size(compressed_bytes)
    }

    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize {
        gdeflate::max_compressed_size(chunk_bytes)
    }

    fn compress_scratch_size(&self, count: usize, _max_chunk_bytes: usize) -> usize {
        compress_scratch_size(count)
    }

    fn decompress_scratch_size(&self, _count: usize, _max_chunk_bytes: usize) -> usize {
        0 // the decoding tables live in shared memory
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
        check_scratch(&scratch, compress_scratch_size(inputs.len()))?;
        let kernel = gpu.kernels().gdeflate.compress;
        let level = self.level as u32;
        unsafe {
            launch_compress(
                gpu,
                kernel,
                compress_grid,
                inputs,
                outputs,
                output_capacity,
                scratch,
                results,
                level,
                stream,
            )
        }
    }

    unsafe fn decompressed_sizes_async(
        &self,
        gpu: &Gpu,
        inputs: Chunks<'_>,
        results: Results<'_>,
        stream: &Stream,
    ) -> Result<()> {
        let kernel = gpu.kernels().gdeflate.decompressed_sizes;
        unsafe { launch_sizes(gpu, kernel, decompress_grid, inputs, results, 0, stream) }
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
        let kernel = gpu.kernels().gdeflate.decompress;
        unsafe {
            launch_decompress(gpu, kernel, decompress_grid, inputs, outputs, scratch, results, first_failure, 0, stream)
        }
    }

    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        with_compress_scratch(|scratch| gdeflate::compress(input, self.level, scratch, out))
    }

    fn decompress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        with_decode_tables(|tables| gdeflate::decompress(input, out, tables))
    }

    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status> {
        with_decode_tables(|tables| gdeflate::decompressed_size(input, tables))
    }
}

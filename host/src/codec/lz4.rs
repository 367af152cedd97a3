//! LZ4: standard LZ4 blocks, one per chunk, on the GPU (one warp per chunk) or the CPU.

use crate::alloc::{DeviceView, DeviceViewMut};
use crate::batch::{BatchCodec, Chunks, Results};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Stream, blocks};
use ferrocomp_format::lz4::{self, HASH_ENTRIES, MAX_CHUNK_SIZE};
use ferrocomp_format::{DataType, Status};
use ferrocomp_kernels_gpu::lz4::COMPRESS_SHARED_BYTES_PER_WARP;
use std::ffi::c_void;

/// Warps per block of the compress kernel (each holds an 8 KiB hash table in shared memory).
const COMPRESS_WARPS_PER_BLOCK: u32 = 4;
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

macro_rules! args {
    ($($arg:expr),* $(,)?) => { [$(&$arg as *const _ as *mut c_void),*] };
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
        _scratch: DeviceViewMut<'_, u8>,
        results: Results<'_>,
        stream: &Stream,
    ) -> Result<()> {
        let count = check_batch(inputs.len(), outputs.len(), &results)?;
        let (inputs_at, in_sizes_at, outputs_at) =
            (inputs.addresses.address(), inputs.sizes.address(), outputs.address());
        let (sizes_at, statuses_at, data_type) =
            (results.sizes.address(), results.statuses.address(), self.data_type as u32);
        let args = args![inputs_at, in_sizes_at, outputs_at, output_capacity, sizes_at, statuses_at, count, data_type];
        let shared = COMPRESS_WARPS_PER_BLOCK * COMPRESS_SHARED_BYTES_PER_WARP as u32;
        unsafe {
            gpu.launch(
                gpu.kernels().lz4_compress,
                blocks(count, COMPRESS_WARPS_PER_BLOCK),
                COMPRESS_WARPS_PER_BLOCK * 32,
                shared,
                stream,
                &args,
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
        let count = check_batch(inputs.len(), inputs.len(), &results)?;
        let (inputs_at, in_sizes_at) = (inputs.addresses.address(), inputs.sizes.address());
        let (sizes_at, statuses_at) = (results.sizes.address(), results.statuses.address());
        let args = args![inputs_at, in_sizes_at, sizes_at, statuses_at, count];
        unsafe {
            gpu.launch(
                gpu.kernels().lz4_decompressed_sizes,
                blocks(count, SIZES_THREADS_PER_BLOCK / 32),
                SIZES_THREADS_PER_BLOCK,
                0,
                stream,
                &args,
            )
        }
    }

    unsafe fn decompress_async(
        &self,
        gpu: &Gpu,
        inputs: Chunks<'_>,
        outputs: Chunks<'_>,
        _scratch: DeviceViewMut<'_, u8>,
        results: Results<'_>,
        first_failure: Option<DeviceViewMut<'_, u32>>,
        stream: &Stream,
    ) -> Result<()> {
        let count = check_batch(inputs.len(), outputs.len(), &results)?;
        let (inputs_at, in_sizes_at) = (inputs.addresses.address(), inputs.sizes.address());
        let (outputs_at, capacities_at) = (outputs.addresses.address(), outputs.sizes.address());
        let (sizes_at, statuses_at) = (results.sizes.address(), results.statuses.address());
        let first_failure_at = first_failure.map_or(0, |f| f.address());
        let args =
            args![inputs_at, in_sizes_at, outputs_at, capacities_at, sizes_at, statuses_at, count, first_failure_at];
        unsafe {
            gpu.launch(
                gpu.kernels().lz4_decompress,
                blocks(count, DECOMPRESS_WARPS_PER_BLOCK),
                DECOMPRESS_WARPS_PER_BLOCK * 32,
                0,
                stream,
                &args,
            )
        }
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

//! The codecs, one module each, and [`Options`]: an algorithm with its options, as the native
//! container records them.
//!
//! Every codec's kernels take the same arguments, so one set of launchers serves them all:
//! - compress: inputs, input sizes, outputs, output capacity, result sizes, statuses, count,
//!   scratch, options;
//! - decompress: inputs, input sizes, outputs, output capacities, result sizes, statuses, count,
//!   first failure, scratch, options;
//! - decompressed sizes: inputs, input sizes, result sizes, statuses, count, scratch, options.

pub mod deflate;
pub mod gdeflate;
pub mod lz4;
pub mod snappy;

use crate::alloc::{DeviceView, DeviceViewMut};
use crate::batch::{BatchCodec, Chunks, Results};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Stream, blocks};
use cust::sys as cu;
pub use deflate::Deflate;
use ferrocomp_format::deflate::{MAX_LEVEL, Wrapper};
use ferrocomp_format::{Algorithm, DataType};
pub use gdeflate::GDeflate;
pub use lz4::Lz4;
pub use snappy::Snappy;
use std::ffi::c_void;

/// An algorithm and its options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Options {
    /// LZ4 blocks.
    Lz4(Lz4),
    /// Snappy raw streams.
    Snappy(Snappy),
    /// Deflate streams, raw or zlib- or gzip-wrapped.
    Deflate(Deflate),
    /// GDeflate pages.
    GDeflate(GDeflate),
}

impl Default for Options {
    fn default() -> Self {
        Self::Lz4(Lz4::default())
    }
}

impl Options {
    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        match self {
            Self::Lz4(_) => Algorithm::Lz4,
            Self::Snappy(_) => Algorithm::Snappy,
            Self::Deflate(_) => Algorithm::Deflate,
            Self::GDeflate(_) => Algorithm::GDeflate,
        }
    }

    /// The codec that implements it.
    pub fn codec(&self) -> &dyn BatchCodec {
        match self {
            Self::Lz4(codec) => codec,
            Self::Snappy(codec) => codec,
            Self::Deflate(codec) => codec,
            Self::GDeflate(codec) => codec,
        }
    }

    /// The options as the container header's 8 option bytes.
    pub fn to_bytes(&self) -> [u8; 8] {
        let first = match self {
            Self::Lz4(lz4) => [lz4.data_type as u8, 0],
            Self::Snappy(snappy) => [snappy.data_type as u8, 0],
            Self::Deflate(deflate) => [deflate.level, deflate.wrapper as u8],
            Self::GDeflate(gdeflate) => [gdeflate.level, 0],
        };
        [first[0], first[1], 0, 0, 0, 0, 0, 0]
    }

    /// Options of `algorithm` from a header's 8 option bytes.
    pub fn from_bytes(algorithm: Algorithm, bytes: [u8; 8]) -> Result<Self> {
        let name = algorithm.name();
        let data_type = || {
            DataType::from_id(bytes[0])
                .ok_or_else(|| Error::Container(format!("unknown {name} data type {}", bytes[0])))
        };
        let level = || match bytes[0] {
            level @ 0..=MAX_LEVEL => Ok(level),
            level => Err(Error::Container(format!("unknown {name} level {level}"))),
        };
        Ok(match algorithm {
            Algorithm::Lz4 => Self::Lz4(Lz4 { data_type: data_type()? }),
            Algorithm::Snappy => Self::Snappy(Snappy { data_type: data_type()? }),
            Algorithm::Deflate => {
                let wrapper = Wrapper::from_id(bytes[1])
                    .ok_or_else(|| Error::Container(format!("unknown deflate wrapper {}", bytes[1])))?;
                Self::Deflate(Deflate { level: level()?, wrapper })
            }
            Algorithm::GDeflate => Self::GDeflate(GDeflate { level: level()? }),
        })
    }

    /// The default options of `algorithm`.
    pub fn for_algorithm(algorithm: Algorithm) -> Self {
        match algorithm {
            Algorithm::Lz4 => Self::Lz4(Lz4::default()),
            Algorithm::Snappy => Self::Snappy(Snappy::default()),
            Algorithm::Deflate => Self::Deflate(Deflate::default()),
            Algorithm::GDeflate => Self::GDeflate(GDeflate::default()),
        }
    }
}

macro_rules! args {
    ($($arg:expr),* $(,)?) => { [$(&$arg as *const _ as *mut c_void),*] };
}

/// How a kernel is spread over the GPU.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Grid {
    blocks: u32,
    threads_per_block: u32,
    shared_bytes: u32,
}

impl Grid {
    /// `warps` warps, `warps_per_block` to a block, each with `shared_per_warp` bytes of
    /// shared memory.
    pub(crate) fn warps(warps: usize, warps_per_block: u32, shared_per_warp: usize) -> Self {
        Self {
            blocks: blocks(warps, warps_per_block),
            threads_per_block: warps_per_block * 32,
            shared_bytes: warps_per_block * shared_per_warp as u32,
        }
    }

    /// One thread for each of `count` chunks, `threads_per_block` to a block.
    pub(crate) fn threads(count: usize, threads_per_block: u32) -> Self {
        Self { blocks: blocks(count, threads_per_block), threads_per_block, shared_bytes: 0 }
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

/// Enqueues a codec's compress kernel (see [`BatchCodec::compress_async`]).
///
/// # Safety
/// As [`BatchCodec::compress_async`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn launch_compress(
    gpu: &Gpu,
    kernel: cu::CUfunction,
    grid: impl FnOnce(usize) -> Grid,
    inputs: Chunks<'_>,
    outputs: DeviceView<'_, u64>,
    output_capacity: usize,
    scratch: DeviceViewMut<'_, u8>,
    results: Results<'_>,
    options: u32,
    stream: &Stream,
) -> Result<()> {
    let count = check_batch(inputs.len(), outputs.len(), &results)?;
    let (inputs_at, in_sizes_at, outputs_at) = (inputs.addresses.address(), inputs.sizes.address(), outputs.address());
    let (sizes_at, statuses_at, scratch_at) = (results.sizes.address(), results.statuses.address(), scratch.address());
    let args =
        args![inputs_at, in_sizes_at, outputs_at, output_capacity, sizes_at, statuses_at, count, scratch_at, options];
    let grid = grid(count);
    unsafe { gpu.launch(kernel, grid.blocks, grid.threads_per_block, grid.shared_bytes, stream, &args) }
}

/// Enqueues a codec's decompress kernel (see [`BatchCodec::decompress_async`]).
///
/// # Safety
/// As [`BatchCodec::decompress_async`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn launch_decompress(
    gpu: &Gpu,
    kernel: cu::CUfunction,
    grid: impl FnOnce(usize) -> Grid,
    inputs: Chunks<'_>,
    outputs: Chunks<'_>,
    scratch: DeviceViewMut<'_, u8>,
    results: Results<'_>,
    first_failure: Option<DeviceViewMut<'_, u32>>,
    options: u32,
    stream: &Stream,
) -> Result<()> {
    let count = check_batch(inputs.len(), outputs.len(), &results)?;
    let (inputs_at, in_sizes_at) = (inputs.addresses.address(), inputs.sizes.address());
    let (outputs_at, capacities_at) = (outputs.addresses.address(), outputs.sizes.address());
    let (sizes_at, statuses_at, scratch_at) = (results.sizes.address(), results.statuses.address(), scratch.address());
    let first_failure_at = first_failure.map_or(0, |f| f.address());
    let args = args![
        inputs_at,
        in_sizes_at,
        outputs_at,
        capacities_at,
        sizes_at,
        statuses_at,
        count,
        first_failure_at,
        scratch_at,
        options
    ];
    let grid = grid(count);
    unsafe { gpu.launch(kernel, grid.blocks, grid.threads_per_block, grid.shared_bytes, stream, &args) }
}

/// Enqueues a codec's decompressed-sizes kernel (see [`BatchCodec::decompressed_sizes_async`]).
///
/// # Safety
/// As [`BatchCodec::decompressed_sizes_async`].
pub(crate) unsafe fn launch_sizes(
    gpu: &Gpu,
    kernel: cu::CUfunction,
    grid: impl FnOnce(usize) -> Grid,
    inputs: Chunks<'_>,
    results: Results<'_>,
    options: u32,
    stream: &Stream,
) -> Result<()> {
    let count = check_batch(inputs.len(), inputs.len(), &results)?;
    let (inputs_at, in_sizes_at) = (inputs.addresses.address(), inputs.sizes.address());
    let (sizes_at, statuses_at, no_scratch) = (results.sizes.address(), results.statuses.address(), 0u64);
    let args = args![inputs_at, in_sizes_at, sizes_at, statuses_at, count, no_scratch, options];
    let grid = grid(count);
    unsafe { gpu.launch(kernel, grid.blocks, grid.threads_per_block, grid.shared_bytes, stream, &args) }
}

//! ferrocomp's GPU kernels. Built for `nvptx64-nvidia-cuda` by the host crate's build script,
//! which embeds the PTX.
//!
//! Each kernel body is a function generic over [`Warp`]: on the GPU that is the hardware warp
//! (`gpu::HardwareWarp`); on the host it is `emulated::EmulatedWarp`, 32 threads in lockstep,
//! so the very code that runs on the GPU is tested on machines without one.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx, asm_experimental_arch))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod adler32;
pub mod ans;
#[cfg(target_arch = "nvptx64")]
pub mod batch;
pub mod bitcomp;
pub mod bitpack;
pub mod blosc;
pub mod cascaded;
pub mod copy;
pub mod crc32;
pub mod deflate;
#[cfg(not(target_arch = "nvptx64"))]
pub mod emulated;
pub mod entropy;
pub mod gdeflate;
#[cfg(target_arch = "nvptx64")]
pub mod gpu;
pub mod lz4;
pub mod lz77;
pub mod raw;
pub mod snappy;
pub mod warp;
pub mod zstd;

pub use warp::Warp;

/// Kernels whose occupancy the PTX states, as CUDA's `__launch_bounds__` would: (entry, threads
/// per block, blocks that must fit on one SM at once). ptxas then keeps each thread's registers
/// within the SM's share; the host's build script writes them into the PTX.
pub const LAUNCH_BOUNDS: &[(&str, u32, u32)] = &[
    ("ans_compress", ans::WARPS * 32, ans::BLOCKS_PER_SM),
    ("ans_decompress", ans::WARPS * 32, ans::BLOCKS_PER_SM),
    ("bitcomp_compress", bitcomp::WARPS * 32, bitcomp::BLOCKS_PER_SM),
    ("bitcomp_decompress", bitcomp::WARPS * 32, bitcomp::BLOCKS_PER_SM),
    ("blosc_decompress", blosc::DECOMPRESS_WARPS as u32 * 32, 2),
    (
        "cascaded_compress",
        cascaded::WARPS * 32,
        blocks_per_sm(cascaded::WARPS, cascaded::COMPRESS_SHARED_BYTES_PER_WARP),
    ),
    ("cascaded_decompress", cascaded::WARPS * 32, cascaded::DECOMPRESS_BLOCKS_PER_SM),
    ("deflate_compress", deflate::compress::COMPRESS_WARPS * 32, deflate::compress::COMPRESS_BLOCKS_PER_SM),
    ("gdeflate_compress", deflate::compress::COMPRESS_WARPS * 32, deflate::compress::COMPRESS_BLOCKS_PER_SM),
    ("deflate_decompress", deflate::DECODE_WARPS * 32, deflate::DECOMPRESS_BLOCKS_PER_SM),
    ("gdeflate_decompress", deflate::DECODE_WARPS * 32, deflate::DECOMPRESS_BLOCKS_PER_SM),
    ("lz4_decompress", lz77::DECOMPRESS_WARPS * 32, lz77::DECOMPRESS_BLOCKS_PER_SM),
    ("snappy_decompress", lz77::DECOMPRESS_WARPS * 32, lz77::DECOMPRESS_BLOCKS_PER_SM),
    ("zstd_decompress", zstd::DECOMPRESS_WARPS * 32, zstd::DECOMPRESS_BLOCKS_PER_SM),
    ("zstd_decompressed_sizes", zstd::SIZES_WARPS * 32, ZSTD_SIZES_BLOCKS),
    ("zstd_compress", zstd::COMPRESS_WARPS * 32, zstd::COMPRESS_BLOCKS_PER_SM),
];

/// Shared memory a block may use without opting in.
pub const SHARED_BYTES_PER_BLOCK: usize = 48 << 10;
/// Shared memory of one SM (an H100's, less the 1 KiB per block the driver keeps).
const SHARED_BYTES_PER_SM: usize = 228 << 10;

/// Blocks of `warps` warps with `shared_bytes` each that fit an SM's shared memory: the occupancy
/// the launch bounds ask of ptxas. Where a warp's work waits mostly on its own loads (Zstd's
/// serial FSE and Huffman decoding, GDeflate's table lookups), the speed comes from warps in
/// flight: unbounded, ptxas gave Zstd's kernels 234 and 255 registers, 8 and 5 warps per SM
/// (measured on an H100).
pub const fn blocks_per_sm(warps: u32, shared_bytes: usize) -> u32 {
    (SHARED_BYTES_PER_SM / (warps as usize * (shared_bytes + 1024 / warps as usize))) as u32
}

/// Blocks per SM of Zstd's sizes kernel.
const ZSTD_SIZES_BLOCKS: u32 = blocks_per_sm(zstd::SIZES_WARPS, zstd::decode::SIZES_SHARED_BYTES_PER_WARP);

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    gpu::trap()
}

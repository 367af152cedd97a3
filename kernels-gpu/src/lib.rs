//! ferrocomp's GPU kernels, and their PTX for the host crate to load.
//!
//! Built for `nvptx64-nvidia-cuda`, the crate is the kernels; built for the host, it is their
//! [`PTX`] (shipped with the crate, or rebuilt from this source: see `build.rs`) and the
//! constants the host launches them with.
//!
//! Each kernel body is a function generic over [`Warp`]: on the GPU that is the hardware warp
//! (`gpu::HardwareWarp`); on the host, with the `emulated` feature, it is
//! `emulated::EmulatedWarp`, 32 coroutines meeting at every barrier, so the very code that runs on
//! the GPU is tested on machines without one.
#![no_std]
#![deny(missing_docs)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx, asm_experimental_arch))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod adler32;
pub mod ans;
#[cfg(target_arch = "nvptx64")]
pub mod batch;
pub mod bitcomp;
pub mod bitpack;
pub mod block;
pub mod blosc;
pub mod cascaded;
pub mod copy;
pub mod crc32;
pub mod deflate;
#[cfg(all(feature = "emulated", not(target_arch = "nvptx64")))]
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

/// The kernels' PTX for sm_75 and later (or the arch `FERROCOMP_PTX_ARCH` names), as rustc's
/// NVPTX backend writes it; load it through [`with_launch_bounds`].
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = include_str!(env!("FERROCOMP_KERNELS_PTX"));

/// `ptx` with `.maxntid` and `.minnctapersm` after the parameters of each kernel in
/// [`LAUNCH_BOUNDS`], which rustc's NVPTX target has no attribute for. A variant under trial keeps
/// what it states: kernels missing from `ptx`, or already carrying a `.maxntid`, are left as they are.
#[cfg(not(target_arch = "nvptx64"))]
pub fn with_launch_bounds(ptx: &str) -> std::string::String {
    let mut ptx = std::string::String::from(ptx);
    for &(kernel, threads, blocks) in LAUNCH_BOUNDS {
        let entry = std::format!(".entry {kernel}(");
        let Some(start) = ptx.find(&entry) else { continue };
        let Some(body) = ptx[start..].find("\n{").map(|at| start + at) else { continue };
        if !ptx[start..body].contains(".maxntid") {
            ptx.insert_str(body, &std::format!("\n.maxntid {threads}, 1, 1\n.minnctapersm {blocks}"));
        }
    }
    ptx
}

/// Kernels whose occupancy the PTX states, as CUDA's `__launch_bounds__` would: (entry, threads
/// per block, blocks that must fit on one SM at once). ptxas then keeps each thread's registers
/// within the SM's share; [`with_launch_bounds`] writes them into the PTX.
pub const LAUNCH_BOUNDS: &[(&str, u32, u32)] = &[
    // Blocks of any size up to an SM's worth of warps, at the registers that many leave.
    ("ans_compress", ans::COMPRESS_WARPS_PER_SM * 32, 1),
    ("ans_decompress", ans::DECODE_WARPS_PER_SM * 32, 1),
    ("ans_decompress_blocks", ans::BLOCK_DECODER_WARPS_PER_SM * 32, 1),
    // Blocks of any size up to an SM's worth of warps, at the registers that many leave.
    ("bitcomp_compress", bitcomp::COMPRESS_WARPS_PER_SM * 32, 1),
    ("bitcomp_decompress", bitcomp::DECODE_WARPS_PER_SM * 32, 1),
    ("blosc_decompress", blosc::DECOMPRESS_WARPS as u32 * 32, 2),
    ("blosc_unshuffle", blosc::UNSHUFFLE_THREADS, 2),
    // Blocks of any size up to an SM's worth of warps, at the registers that many leave.
    ("cascaded_compress", cascaded::MAX_WARPS * 32, 1),
    ("cascaded_decompress", cascaded::MAX_WARPS * 32, 1),
    ("deflate_compress", deflate::compress::COMPRESS_WARPS * 32, deflate::compress::COMPRESS_BLOCKS_PER_SM),
    ("gdeflate_compress", deflate::compress::COMPRESS_WARPS * 32, deflate::compress::COMPRESS_BLOCKS_PER_SM),
    ("deflate_compress_parts", deflate::compress::COMPRESS_WARPS * 32, deflate::compress::COMPRESS_BLOCKS_PER_SM),
    ("gdeflate_compress_parts", deflate::compress::COMPRESS_WARPS * 32, deflate::compress::COMPRESS_BLOCKS_PER_SM),
    ("deflate_decompress", deflate::DECODE_WARPS * 32, deflate::DECOMPRESS_BLOCKS_PER_SM),
    ("gdeflate_decompress", deflate::DECODE_WARPS * 32, deflate::DECOMPRESS_BLOCKS_PER_SM),
    ("deflate_decompress_blocks", deflate::decode::PAIR_WARPS * 32, deflate::decode::PAIR_BLOCKS_PER_SM),
    ("gdeflate_decompress_blocks", deflate::decode::PAIR_WARPS * 32, deflate::decode::PAIR_BLOCKS_PER_SM),
    ("lz4_decompress", lz77::DECOMPRESS_WARPS * 32, lz77::DECOMPRESS_BLOCKS_PER_SM),
    ("snappy_decompress", lz77::pair::WARPS * 32, lz77::pair::BLOCKS_PER_SM),
    ("lz4_decompress_blocks", lz77::block::BLOCK_THREADS, 1),
    ("snappy_decompress_blocks", lz77::block::BLOCK_THREADS, 1),
    ("zstd_decompress", zstd::DECOMPRESS_WARPS * 32, zstd::DECOMPRESS_BLOCKS_PER_SM),
    ("zstd_decompress_blocks", zstd::TEAM_WARPS_PER_SM * 32, 1),
    ("zstd_decompressed_sizes", zstd::SIZES_WARPS * 32, ZSTD_SIZES_BLOCKS),
    ("zstd_compress", zstd::COMPRESS_WARPS * 32, zstd::COMPRESS_BLOCKS_PER_SM),
];

/// Shared memory a block may use without opting in.
pub const SHARED_BYTES_PER_BLOCK: usize = 48 << 10;
/// Shared memory a block of an H100 or H200 may opt into: what the host allows the kernels that
/// take more than [`SHARED_BYTES_PER_BLOCK`].
pub const MAX_SHARED_BYTES_PER_BLOCK: usize = 227 << 10;
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

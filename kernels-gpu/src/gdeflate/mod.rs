//! GDeflate on the GPU, a warp per page.
//!
//! Decoding ([`decompress_page`]) gives each lane one of the page's 32 sub-streams, the format's
//! own design; where a batch leaves SMs idle, [`decompress_page_staged`] keeps the page's output
//! in shared memory while it decodes. Compression ([`compress`]) writes the format crate's pages
//! byte for byte, the lanes sharing levels 0 and 1 as Deflate's do.

pub mod compress;
mod decode;

pub use crate::deflate::decode::Output;
use crate::lz77::copy;
use crate::warp::Warp;
pub use decode::decompress_page;
use ferrocomp_format::Status;
use ferrocomp_format::deflate::DecodeTables;
use ferrocomp_format::gdeflate::MAX_CHUNK_SIZE;

/// Bytes of shared memory the decode tables take before a staged page's output (16-aligned).
const STAGED_TABLES: usize = size_of::<DecodeTables>().next_multiple_of(16);
/// Shared memory of [`decompress_page_staged`]'s warp: the tables and a page's largest output.
pub const STAGED_SHARED_BYTES: usize = STAGED_TABLES + MAX_CHUNK_SIZE;
/// Warps of the staged decoder an SM holds at once (blocks of one warp), which its launch bounds
/// hold ptxas to.
pub const STAGED_BLOCKS_PER_SM: u32 = crate::blocks_per_sm(1, STAGED_SHARED_BYTES);
const _: () = assert!(STAGED_BLOCKS_PER_SM >= 2);

/// [`decompress_page`] into `out` (writable for `capacity` bytes), the page's output kept in
/// `shared` (the warp's [`STAGED_SHARED_BYTES`], with the tables) until it is whole, then copied
/// out: its matches read their sources from shared memory instead of output just written to
/// global memory, whose latency the copy stage waits on where few warps share an SM. Nothing
/// reaches `out` from a page that fails. Output larger than a page decodes in place.
///
/// # Safety
/// As [`decompress_page`]; `shared` 16-aligned and this warp's alone.
pub unsafe fn decompress_page_staged<W: Warp>(
    warp: &W,
    input: *const u8,
    len: usize,
    out: *mut u8,
    capacity: usize,
    shared: *mut u8,
) -> Result<usize, Status> {
    let tables = shared as *mut DecodeTables;
    if capacity > MAX_CHUNK_SIZE {
        return unsafe { decompress_page(warp, input, len, Output::to(out, capacity), tables) };
    }
    let staged = unsafe { shared.add(STAGED_TABLES) };
    let size = unsafe { decompress_page(warp, input, len, Output::to(staged, capacity), tables)? };
    warp.sync(); // the page's output is visible to every lane
    unsafe { copy(warp, staged, out, size as u32) };
    Ok(size)
}

/// The batched entry points (`gdeflate_compress`, `gdeflate_decompress`,
/// `gdeflate_decompressed_sizes`).
#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{Output, compress, decompress_page, decompress_page_staged};
    use crate::batch::{BlockDecompress, Chunk, ChunkKernels, Lanes, scratch_slot, warp_shared};
    use crate::deflate::shared_tables;
    use crate::gpu::{HardwareBlock, HardwareWarp, dynamic_shared_memory};
    use ferrocomp_format::deflate::CompressScratch;
    use ferrocomp_format::deflate::compress::FAST_RULES;
    use ferrocomp_format::{BatchArgs, Status};

    /// A warp per page, in each direction: compressing with Deflate's scratch and level 1's hash
    /// table in shared memory (`options` is the level), decoding with its tables there.
    pub struct GDeflate;

    impl ChunkKernels for GDeflate {
        const COMPRESS: Lanes = Lanes::Warp;
        const DECOMPRESS: Lanes = Lanes::Warp;
        const SIZES: Lanes = Lanes::Warp;

        unsafe fn compress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            unsafe {
                let scratch = scratch_slot::<CompressScratch>(args, chunk.slot);
                let table = warp_shared::<u16>(FAST_RULES.table_entries());
                let (input, n, output, capacity) = (chunk.input, chunk.input_len, chunk.output, chunk.capacity);
                compress::compress_page(warp, input, n, args.options as u8, scratch, table, output, capacity)
            }
        }

        unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            let output = Output::to(chunk.output, chunk.capacity);
            unsafe { decompress_page(warp, chunk.input, chunk.input_len, output, shared_tables()) }
        }

        unsafe fn decompressed_size(warp: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            unsafe { decompress_page(warp, chunk.input, chunk.input_len, Output::counting(), shared_tables()) }
        }
    }

    crate::batch_kernels!(GDeflate: gdeflate_compress, gdeflate_decompress, gdeflate_decompressed_sizes);

    /// A block of one warp a page, its output staged in shared memory.
    impl BlockDecompress for GDeflate {
        unsafe fn decompress(_: &HardwareBlock, warp: &HardwareWarp, chunk: &Chunk) -> Result<usize, Status> {
            let (input, n, shared) = (chunk.input, chunk.input_len, dynamic_shared_memory::<u8>());
            unsafe { decompress_page_staged(warp, input, n, chunk.output, chunk.capacity, shared) }
        }
    }

    crate::block_decompress_kernel!(GDeflate: gdeflate_decompress_blocks);
}

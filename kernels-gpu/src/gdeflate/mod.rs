//! GDeflate on the GPU, a warp per page.
//!
//! Decoding ([`decompress_page`]) gives each lane one of the page's 32 sub-streams, the format's
//! own design; where a batch leaves SMs idle, Deflate's `decompress_in_pair` has a second warp
//! copy the matches the first decodes (and keeps the page's output in shared memory while it
//! decodes, where the batch is smaller still). Compression ([`compress`]) writes the format
//! crate's pages byte for byte, the lanes sharing levels 0 and 1 as Deflate's do.

pub mod compress;
mod decode;

pub use crate::deflate::decode::Output;
pub use decode::decompress_page;
use ferrocomp_format::deflate::PART_SIZE;

const _: () =
    assert!(PART_SIZE <= crate::deflate::decode::STAGED_OUTPUT, "a page of one part (64 KiB) is staged whole");

/// The batched entry points (`gdeflate_compress`, `gdeflate_decompress`,
/// `gdeflate_decompressed_sizes`).
#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::{Output, compress, decompress_page};
    use crate::batch::{BlockDecompress, Chunk, ChunkKernels, Lanes, PartsCompress, scratch_slot, warp_shared};
    use crate::deflate::decode::{STAGED_SHARED_BYTES, decompress_in_pair};
    use crate::deflate::rounds::InWarp;
    use crate::deflate::shared_tables;
    use crate::gpu::{HardwareBlock, HardwareWarp, dynamic_shared_bytes, dynamic_shared_memory};
    use ferrocomp_format::deflate::CompressScratch;
    use ferrocomp_format::deflate::compress::FAST_RULES;
    use ferrocomp_format::{BatchArgs, Status};

    /// A warp per page, in each direction: compressing with Deflate's scratch and level 1's hash
    /// table in shared memory (`options` is the level), decoding with its tables there.
    pub struct GDeflate;

    impl GDeflate {
        /// Compresses `chunk`, which may be longer than a part where `PARTS`.
        #[inline(always)]
        unsafe fn compress_with<const PARTS: bool>(
            warp: &HardwareWarp,
            chunk: &Chunk,
            args: &BatchArgs,
        ) -> Result<usize, Status> {
            unsafe {
                let scratch = scratch_slot::<CompressScratch>(args, chunk.slot);
                let table = warp_shared::<u16>(FAST_RULES.table_entries());
                let (input, n, output, capacity) = (chunk.input, chunk.input_len, chunk.output, chunk.capacity);
                let level = args.options as u8;
                compress::compress_page::<_, PARTS>(warp, input, n, level, scratch, table, output, capacity)
            }
        }
    }

    impl ChunkKernels for GDeflate {
        const COMPRESS: Lanes = Lanes::Warp;
        const DECOMPRESS: Lanes = Lanes::Warp;
        const SIZES: Lanes = Lanes::Warp;

        unsafe fn compress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            unsafe { Self::compress_with::<false>(warp, chunk, args) }
        }

        unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            let output = Output::to(chunk.output, chunk.capacity);
            unsafe { decompress_page(warp, chunk.input, chunk.input_len, output, shared_tables(), &mut InWarp) }
        }

        unsafe fn decompressed_size(warp: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            let (input, n, output) = (chunk.input, chunk.input_len, Output::counting());
            unsafe { decompress_page(warp, input, n, output, shared_tables(), &mut InWarp) }
        }
    }

    crate::batch_kernels!(GDeflate: gdeflate_compress, gdeflate_decompress, gdeflate_decompressed_sizes);

    impl PartsCompress for GDeflate {
        unsafe fn compress_parts(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            unsafe { Self::compress_with::<true>(warp, chunk, args) }
        }
    }

    crate::compress_parts_kernel!(GDeflate: gdeflate_compress_parts);

    /// A block of two warps a page, one decoding, one copying its matches.
    impl BlockDecompress for GDeflate {
        unsafe fn decompress(
            block: &HardwareBlock,
            warp: &HardwareWarp,
            chunk: &Chunk,
            _: &BatchArgs,
        ) -> Result<usize, Status> {
            let (input, n, shared) = (chunk.input, chunk.input_len, dynamic_shared_memory::<u8>());
            let decode =
                |output, tables, rounds: &mut _| unsafe { decompress_page(warp, input, n, output, tables, rounds) };
            let (out, capacity) = (chunk.output, chunk.capacity);
            let stage = dynamic_shared_bytes() >= STAGED_SHARED_BYTES; // as the launch asks
            unsafe { decompress_in_pair(block, warp, out, capacity, shared, stage, decode) }
        }
    }

    crate::block_decompress_kernel!(GDeflate: gdeflate_decompress_blocks);
}

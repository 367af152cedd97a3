//! Deflate (raw, zlib or gzip) on the GPU: one warp per chunk, whose first lane runs the format
//! crate's codec (`ferrocomp_format::deflate`), so the GPU and the CPU write the same bytes.
//! Compression scratch lives in a device array, one slot per warp of the grid; the decoding
//! tables of each warp live in shared memory.

use ferrocomp_format::deflate::{DecodeTables, Wrapper};

/// Bytes of shared memory each warp of the decompress kernels needs (its decoding tables).
pub const DECODE_SHARED_BYTES_PER_WARP: usize = size_of::<DecodeTables>();

/// The level and wrapper packed in a kernel's `options` word (level in bits 0..8, wrapper id in
/// bits 8..16).
pub fn unpack_options(options: u32) -> (u8, Wrapper) {
    (options as u8, Wrapper::from_id((options >> 8) as u8).unwrap_or_default())
}

/// This warp's decoding tables, in the block's shared memory (Deflate's and GDeflate's kernels).
///
/// # Safety
/// The launch must give each warp [`DECODE_SHARED_BYTES_PER_WARP`] of dynamic shared memory.
#[cfg(target_arch = "nvptx64")]
pub(crate) unsafe fn shared_tables<'a>() -> &'a mut DecodeTables {
    unsafe { &mut *crate::batch::warp_shared::<DecodeTables>(1) }
}

/// The batched entry points (`deflate_compress`, `deflate_decompress`,
/// `deflate_decompressed_sizes`).
#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use crate::batch::{Chunk, ChunkKernels, Lanes, scratch_slot};
    use crate::gpu::HardwareWarp;
    use ferrocomp_format::deflate::{self, CompressScratch};
    use ferrocomp_format::{BatchArgs, Status};

    /// The first lane of a warp per chunk runs the format crate's codec; compression scratch is
    /// a `CompressScratch` per warp of the grid.
    pub struct Deflate;

    impl ChunkKernels for Deflate {
        const COMPRESS: Lanes = Lanes::FirstOfWarp;
        const DECOMPRESS: Lanes = Lanes::FirstOfWarp;
        const SIZES: Lanes = Lanes::FirstOfWarp;

        unsafe fn compress(_: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let (level, wrapper) = unpack_options(args.options);
            let scratch = unsafe { scratch_slot::<CompressScratch>(args, chunk.slot) };
            unsafe { deflate::compress(chunk.input(), level, wrapper, scratch, chunk.output()) }
        }

        unsafe fn decompress(_: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let (_, wrapper) = unpack_options(args.options);
            unsafe { deflate::decompress(chunk.input(), wrapper, chunk.output(), shared_tables()) }
        }

        unsafe fn decompressed_size(_: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let (_, wrapper) = unpack_options(args.options);
            unsafe { deflate::decompressed_size(chunk.input(), wrapper, shared_tables()) }
        }
    }

    crate::batch_kernels!(Deflate: deflate_compress, deflate_decompress, deflate_decompressed_sizes);
}

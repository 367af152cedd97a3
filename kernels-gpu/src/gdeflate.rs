//! GDeflate on the GPU: one warp per chunk, whose first lane runs the format crate's codec
//! (`ferrocomp_format::gdeflate`), so the GPU and the CPU write the same bytes. Scratch and
//! decoding tables are placed as for Deflate (`crate::deflate`).

/// The batched entry points (`gdeflate_compress`, `gdeflate_decompress`,
/// `gdeflate_decompressed_sizes`).
#[cfg(target_arch = "nvptx64")]
mod kernels {
    use crate::batch::{Chunk, ChunkKernels, Lanes, scratch_slot};
    use crate::deflate::shared_tables;
    use crate::gpu::HardwareWarp;
    use ferrocomp_format::deflate::CompressScratch;
    use ferrocomp_format::{BatchArgs, Status, gdeflate};

    /// The first lane of a warp per chunk runs the format crate's codec, with Deflate's scratch
    /// and tables; `options` is the level.
    pub struct GDeflate;

    impl ChunkKernels for GDeflate {
        const COMPRESS: Lanes = Lanes::FirstOfWarp;
        const DECOMPRESS: Lanes = Lanes::FirstOfWarp;
        const SIZES: Lanes = Lanes::FirstOfWarp;

        unsafe fn compress(_: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let scratch = unsafe { scratch_slot::<CompressScratch>(args, chunk.slot) };
            unsafe { gdeflate::compress(chunk.input(), args.options as u8, scratch, chunk.output()) }
        }

        unsafe fn decompress(_: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            unsafe { gdeflate::decompress(chunk.input(), chunk.output(), shared_tables()) }
        }

        unsafe fn decompressed_size(_: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            unsafe { gdeflate::decompressed_size(chunk.input(), shared_tables()) }
        }
    }

    crate::batch_kernels!(GDeflate: gdeflate_compress, gdeflate_decompress, gdeflate_decompressed_sizes);
}

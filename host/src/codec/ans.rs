//! ANS: order-0 interleaved rANS over bytes or the high bytes of 16-, 32- and 8-bit floats, in
//! ferrocomp's own layout. On the GPU a block of warps codes each chunk both ways, a warp a
//! sub-block, its lanes the 32 states; the block's warps fit the batch's chunks.

use crate::batch::{BatchCodec, Launch, Shape, forced_warps, is_small_batch};
use ferrocomp_format::ans::{self, MAX_CHUNK_SIZE, SUB_BLOCK};
pub use ferrocomp_format::ans::{DataType as AnsDataType, Options as Ans};
use ferrocomp_format::{Algorithm, Status};
use ferrocomp_kernels_gpu::ans::{
    BLOCK_DECODER_WARPS_PER_SM, BLOCK_WARPS, COMPRESS_WARPS_PER_SM, DECODE_WARPS_PER_SM, compress_shared_bytes,
    decode_shared_bytes,
};
use ferrocomp_kernels_gpu::blocks_per_sm;
use std::sync::OnceLock;

impl BatchCodec for Ans {
    fn max_chunk_size(&self) -> usize {
        MAX_CHUNK_SIZE
    }

    fn max_decompressed_size(&self, compressed_bytes: usize) -> usize {
        ans::max_decompressed_size(compressed_bytes)
    }

    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize {
        ans::max_compressed_size(chunk_bytes)
    }

    fn launch(&self) -> Launch {
        Launch {
            algorithm: Algorithm::Ans,
            options: self.data_type as u64,
            compress: Shape::blocks_of(BLOCK_WARPS, compress_shared_bytes),
            decompress: Shape::blocks_of(BLOCK_WARPS, decode_shared_bytes),
            sizes: super::lz4::SIZES_SHAPE,
        }
    }

    fn compress_shape(&self, count: usize, max_chunk_bytes: usize, multiprocessors: u32) -> Shape {
        Shape::blocks_of(warps(count, Some(max_chunk_bytes), multiprocessors, COMPRESSING), compress_shared_bytes)
    }

    fn decompress_shape(&self, count: usize, max_chunk_bytes: Option<usize>, multiprocessors: u32) -> Shape {
        Shape::blocks_of(warps(count, max_chunk_bytes, multiprocessors, DECODING), decode_shared_bytes)
    }

    /// The block decoder (`ans_decompress_blocks`: the same code at 128 registers) for a batch of
    /// chunks of known size that it holds in one wave and decodes as soon as the kernel at 64:
    /// its chunk code reloads no spills (16 MiB of 64 KiB chunks takes it, 64 MiB does not).
    fn block_decoder(&self, count: usize, max_chunk_bytes: Option<usize>, multiprocessors: u32) -> Option<Shape> {
        max_chunk_bytes?;
        let few = schedule(count, max_chunk_bytes, multiprocessors, BLOCK_DECODING);
        let most = schedule(count, max_chunk_bytes, multiprocessors, DECODING);
        (is_small_batch(count, multiprocessors, few.blocks_per_sm as usize) && few.time <= most.time)
            .then(|| Shape::blocks_of(few.warps, decode_shared_bytes))
    }

    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        ans::compress(input, self, out)
    }

    fn decompress_scalar(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        ans::decompress(input, out)
    }

    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status> {
        ans::decompressed_size(input)
    }

    fn value_width(&self) -> usize {
        self.data_type.width()
    }
}

/// What bounds the blocks of a kernel an SM holds at once: its warps (the registers the launch
/// bounds leave a thread) and the shared memory of a block of so many warps.
type Residency = (u32, fn(u32) -> usize);
const COMPRESSING: Residency = (COMPRESS_WARPS_PER_SM, compress_shared_bytes);
const DECODING: Residency = (DECODE_WARPS_PER_SM, decode_shared_bytes);
const BLOCK_DECODING: Residency = (BLOCK_DECODER_WARPS_PER_SM, decode_shared_bytes);

/// Warps of the block coding each of `count` chunks of at most `max_chunk_bytes` on a GPU of
/// `multiprocessors` SMs: [`schedule`]'s.
fn warps(count: usize, max_chunk_bytes: Option<usize>, multiprocessors: u32, residency: Residency) -> u32 {
    schedule(count, max_chunk_bytes, multiprocessors, residency).warps
}

/// How a kernel of `residency` codes a batch: the warps of each block, the blocks an SM holds,
/// and the time, in sub-blocks' times: the waves of blocks the batch takes times the sub-blocks
/// a warp codes in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Schedule {
    warps: u32,
    blocks_per_sm: u32,
    time: usize,
}

/// The schedule of `count` chunks of at most `max_chunk_bytes` on a GPU of `multiprocessors`
/// SMs, its blocks' warps a power of two up to the chunk's sub-blocks (more would idle) and an
/// SM's worth: the one coding the batch soonest. Of equal ones, the nearest [`BLOCK_WARPS`]
/// (measured best for 64 KiB chunks, which keep it). So a 16 KiB chunk takes two warps (where a
/// block of eight idled six, and an SM held four such chunks at once where it now holds eleven),
/// and sixteen chunks of 1 MiB take 32 decoding (where eight left three quarters of their SMs'
/// warps unused). Chunks of unknown size (`None`) take [`BLOCK_WARPS`]; a chunk larger than
/// `max_chunk_bytes` is coded all the same. `FERROCOMP_ANS_WARPS=N` makes it N both ways, to
/// measure.
fn schedule(
    count: usize,
    max_chunk_bytes: Option<usize>,
    multiprocessors: u32,
    (most, shared_bytes): Residency,
) -> Schedule {
    static FORCED: OnceLock<Option<u32>> = OnceLock::new();
    let sub_blocks = max_chunk_bytes.map_or(1, |bytes| bytes.div_ceil(SUB_BLOCK).max(1));
    let of = |warps: u32| {
        let blocks_per_sm = (most / warps).min(blocks_per_sm(warps, shared_bytes(warps) / warps as usize)).max(1);
        let per_wave = multiprocessors.max(1) as usize * blocks_per_sm as usize;
        let time = count.max(1).div_ceil(per_wave) * sub_blocks.div_ceil(warps as usize);
        Schedule { warps, blocks_per_sm, time }
    };
    if let Some(warps) = forced_warps(&FORCED, "FERROCOMP_ANS_WARPS") {
        return of(warps.clamp(1, most));
    }
    if max_chunk_bytes.is_none() {
        return of(BLOCK_WARPS);
    }
    let from_measured = |warps: u32| warps.max(BLOCK_WARPS) / warps.min(BLOCK_WARPS);
    (0..=most.ilog2())
        .map(|k| of(1 << k))
        .filter(|schedule| schedule.warps as usize <= sub_blocks.next_power_of_two())
        .min_by_key(|schedule| (schedule.time, from_measured(schedule.warps), schedule.warps))
        .unwrap_or(of(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The decoding and compressing warps for `count` chunks of `chunk` bytes on an H200.
    fn h200(count: usize, chunk: usize) -> (u32, u32) {
        (warps(count, Some(chunk), 132, DECODING), warps(count, Some(chunk), 132, COMPRESSING))
    }

    #[test]
    fn blocks_fit_the_chunks_and_the_batch_of_an_h200() {
        // 64 KiB chunks (eight sub-blocks) keep the eight warps measured best, at 16, 64 and 256 MiB.
        assert_eq!((h200(256, 65536), h200(1024, 65536), h200(4096, 65536)), ((8, 8), (8, 8), (8, 8)));
        // Smaller chunks take a warp a sub-block: 16 KiB two, 4 KiB one, 24 KiB (three) four.
        assert_eq!((h200(1024, 16384), h200(4096, 4096), h200(683, 24576)), ((2, 2), (1, 1), (4, 4)));
        // 1 MiB chunks: 16 MiB fills 16 SMs' warps, decoding (32) and compressing (16); 256 MiB
        // decodes in a wave of sixteen where 32 take two, and compresses as soon in eight.
        assert_eq!((h200(16, 1 << 20), h200(256, 1 << 20)), ((32, 16), (16, 8)));
        // 128 KiB chunks: a 16 MiB batch of 128 in blocks of sixteen; 256 MiB in eight.
        assert_eq!((h200(128, 128 << 10), h200(2048, 128 << 10)), ((16, 16), (8, 8)));
        // Chunks of unknown size (a decoder told neither their size nor a scratch) keep eight.
        assert_eq!((warps(16, None, 132, DECODING), warps(4096, None, 132, DECODING)), (8, 8));
    }

    #[test]
    fn the_block_decoder_takes_the_batches_an_h200_holds_in_one_wave() {
        let block_decoder = |count, chunk| Ans::default().block_decoder(count, chunk, 132);
        // 16 MiB of 64 KiB chunks (256) in blocks of eight warps, two an SM; 16 KiB chunks in two.
        assert_eq!(block_decoder(256, Some(65536)), Some(Shape::blocks_of(8, decode_shared_bytes)));
        assert_eq!(block_decoder(1024, Some(16384)), Some(Shape::blocks_of(2, decode_shared_bytes)));
        // 64 MiB (two waves at 16 warps an SM, one at 32), 1 MiB chunks (32 warps a block), and
        // chunks of unknown size take the kernel at 64 registers.
        assert_eq!((block_decoder(265, Some(65536)), block_decoder(1024, Some(65536))), (None, None));
        assert_eq!((block_decoder(16, Some(1 << 20)), block_decoder(16, None)), (None, None));
    }
}

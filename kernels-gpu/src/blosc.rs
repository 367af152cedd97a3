//! Blosc 1 chunks on the GPU: a block of threads (CTA) per chunk.
//!
//! Decompression: the CTA's warps take the chunk's streams (every stream of every block) in
//! turns; a warp decodes each with the warp decoder of its codec, LZ4/LZ4HC and Snappy with the
//! one LZ4 uses (`crate::lz77`), zstd and zlib with Zstd's and Deflate's (their tables in shared
//! memory, room for [`TABLE_WARPS`] warps' only: the first warps take a chunk of those streams),
//! copies raw ones across its lanes, and runs BloscLZ, which has no warp decoder, in its first
//! lane (the format crate's). Every chunk decodes straight into the output; a shuffled one is
//! then unshuffled in place by a second kernel (`blosc_unshuffle`): CTAs take the batch's
//! blocks in turns, each copying a block into its slot of the scratch and moving the elements
//! back. The scratch holds [`UNSHUFFLE_STAGING_BYTES`] of blocks, not the batch.

use crate::deflate::decode::Output;
use crate::raw::{bytes, bytes_mut};
use crate::warp::{Warp, first_lane};
use ferrocomp_format::Status;
use ferrocomp_format::blosc::shuffle::{bit_plane_index, byte_shuffled_index, transpose_bits};
use ferrocomp_format::blosc::{Compressor, Shuffle, Stream, blosclz};
use ferrocomp_format::deflate::{self, Wrapper};
use ferrocomp_format::lz4::HASH_ENTRIES;

/// Most warps per CTA of the decompress kernel (the host launches fewer for small chunks, which
/// have fewer streams to share out).
pub const DECOMPRESS_WARPS: usize = 16;
/// Shared memory a warp of the decompress kernel decodes a zstd or zlib stream with: Zstd's
/// tables or Deflate's, whichever are larger, in 16-byte units (Zstd's are 16-byte aligned).
pub const STREAM_SHARED_BYTES_PER_WARP: usize = {
    let (zstd, deflate) =
        (crate::zstd::decode::DECODE_SHARED_BYTES_PER_WARP, crate::deflate::DECODE_SHARED_BYTES_PER_WARP);
    (if zstd > deflate { zstd } else { deflate }).next_multiple_of(16)
};
/// Warps of a decompress CTA with room for those tables: two keep a CTA of 4 warps small
/// enough that an SM holds 8 (32 warps) for the LZ4 streams most chunks hold.
pub const TABLE_WARPS: usize = 2;
/// Where the tables start in a decompress CTA's shared memory: after each warp's first failing
/// stream and status.
const STREAM_SHARED_AT: usize = DECOMPRESS_WARPS * 8;
/// Shared memory per CTA of the decompress kernel.
pub const DECOMPRESS_SHARED_BYTES: usize = STREAM_SHARED_AT + TABLE_WARPS * STREAM_SHARED_BYTES_PER_WARP;
const _: () = assert!(DECOMPRESS_SHARED_BYTES <= crate::SHARED_BYTES_PER_BLOCK);
/// Scratch the unshuffle stages blocks in: as many slots of the batch's largest block as fit
/// (and one more).
pub const UNSHUFFLE_STAGING_BYTES: usize = 16 << 20;
/// Most CTAs of the unshuffle kernel: two an SM.
pub const UNSHUFFLE_CTAS: usize = 2 * 132;
/// Threads per CTA of the unshuffle kernel.
pub const UNSHUFFLE_THREADS: u32 = 512;
/// Shared memory per CTA of the unshuffle kernel: each warp's share of a reduction.
pub const UNSHUFFLE_SHARED_BYTES: usize = UNSHUFFLE_THREADS as usize / 32 * 8;
/// Warps per CTA of the compress kernel.
pub const COMPRESS_WARPS: usize = 4;
/// Shared memory per CTA of the compress kernel: an LZ4 hash table per warp, then the chunk's
/// size as laid out.
pub const COMPRESS_SHARED_BYTES: usize = COMPRESS_WARPS * HASH_ENTRIES * 2 + 16;

/// Bytes of decompress scratch (the unshuffle's) for `count` chunks of at most
/// `max_chunk_bytes`: a slot of a chunk (rounded up to 16) for each, up to
/// [`UNSHUFFLE_STAGING_BYTES`] and one more.
pub const fn decompress_scratch_bytes(count: usize, max_chunk_bytes: usize) -> usize {
    let slot = max_chunk_bytes.next_multiple_of(16);
    let all = count.saturating_mul(slot);
    let most = UNSHUFFLE_STAGING_BYTES + slot;
    if all < most { all } else { most }
}

/// Most streams a chunk of `n` bytes is cut into by the encoder: a block is at least 64 KiB less
/// an element, or half the input below that, so there are at most `n / 32768 + 3` blocks, of at
/// most 16 streams each.
const fn max_streams(n: usize) -> usize {
    16 * (n / 32768 + 3)
}

/// Bytes of compress scratch a chunk of at most `max_chunk_bytes` needs: the shuffled chunk, the
/// streams compressed in place of it, and two `u32`s (stored size, offset) per stream.
pub const fn compress_slot_bytes(max_chunk_bytes: usize) -> usize {
    2 * max_chunk_bytes.next_multiple_of(16) + 8 * max_streams(max_chunk_bytes)
}

/// The kernels' options word: the element size, then the [`Shuffle`] (as `u8`).
pub fn unpack_options(options: u32) -> (usize, Shuffle) {
    let shuffle = match (options >> 8) as u8 {
        1 => Shuffle::Byte,
        2 => Shuffle::Bit,
        _ => Shuffle::None,
    };
    ((options as u8).max(1) as usize, shuffle)
}

/// Decodes `stream` of `chunk` into the `stream.decoded_len` bytes at `dest`, with the warp; a
/// stream that is not raw needs a `compressor`. `shared`, the warp's, holds zstd's and zlib's
/// tables. The same checks and statuses as `ferrocomp_format::blosc::decompress_block`.
///
/// # Safety
/// `chunk` must be readable for the stream's bytes, `dest` writable for `stream.decoded_len`
/// bytes and `shared` (16-byte aligned) for [`STREAM_SHARED_BYTES_PER_WARP`], none of them
/// written by others meanwhile.
pub unsafe fn decode_stream<W: Warp>(
    warp: &W,
    compressor: Option<Compressor>,
    stream: &Stream,
    chunk: *const u8,
    dest: *mut u8,
    shared: *mut u8,
) -> Result<(), Status> {
    let input = unsafe { chunk.add(stream.at) };
    if stream.is_raw() {
        warp.for_each_strided(stream.decoded_len, |i| unsafe { *dest.add(i) = *input.add(i) });
        warp.sync();
        return Ok(());
    }
    let decoded = match compressor {
        Some(Compressor::Lz4) => unsafe {
            crate::lz4::decompress_chunk(warp, input, stream.len, dest, stream.decoded_len)
        },
        Some(Compressor::Snappy) => unsafe {
            crate::snappy::decompress_chunk(warp, input, stream.len, dest, stream.decoded_len)
        },
        Some(Compressor::Zstd) => unsafe {
            crate::zstd::decode::decompress_chunk(warp, input, stream.len, dest, stream.decoded_len, shared)
        },
        Some(Compressor::Zlib) => unsafe {
            let tables = shared as *mut deflate::DecodeTables;
            let output = Output::to(dest, stream.decoded_len);
            let rounds = &mut crate::deflate::rounds::InWarp;
            crate::deflate::decode::decompress_chunk(warp, input, stream.len, Wrapper::Zlib, output, tables, rounds)
        },
        Some(Compressor::BloscLz) => first_lane(warp, || {
            blosclz::decompress(unsafe { bytes(input, stream.len) }, unsafe { bytes_mut(dest, stream.decoded_len) })
        }),
        None => Err(Status::Unsupported),
    };
    match decoded {
        Ok(n) if n == stream.decoded_len => Ok(()),
        Ok(_) | Err(Status::OutputTooSmall) => Err(Status::Malformed),
        Err(status) => Err(status),
    }
}

/// Which way a block is transposed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Plain elements to shuffled planes (the encoder).
    Shuffle,
    /// Shuffled planes back to elements (the decoder).
    Unshuffle,
}

/// Units of work (un)shuffling a block of `len` bytes of `typesize`-byte elements takes: one per
/// element (byte shuffle) or per group of eight elements (bit shuffle), then one per byte left
/// after them (or per byte of the block, for a bit shuffle c-blosc leaves undone when the element
/// count is not a multiple of 8).
pub fn transpose_units(shuffle: Shuffle, typesize: usize, len: usize) -> usize {
    let elements = len / typesize;
    match shuffle {
        Shuffle::Bit if !elements.is_multiple_of(8) => len,
        Shuffle::Bit => elements / 8 + (len - elements * typesize),
        _ => elements + (len - elements * typesize),
    }
}

/// Moves unit `unit` (of [`transpose_units`]) of the block of `len` bytes at `src` to its place
/// in `dst`, as `ferrocomp_format::blosc::shuffle` places it.
///
/// # Safety
/// `src` must be readable and `dst` writable for `len` bytes; no other thread writes the bytes
/// of this unit.
#[inline(always)]
pub unsafe fn transpose_unit(
    direction: Direction,
    shuffle: Shuffle,
    typesize: usize,
    src: *const u8,
    dst: *mut u8,
    len: usize,
    unit: usize,
) {
    let elements = len / typesize;
    let whole = elements * typesize;
    let (plain, shuffled) = match direction {
        Direction::Shuffle => (src, dst as *const u8),
        Direction::Unshuffle => (dst as *const u8, src),
    };
    // The byte of the plain block at `p` and of the shuffled one at `q`: copy one to the other.
    let copy = |p: usize, q: usize| unsafe {
        match direction {
            Direction::Shuffle => *dst.add(q) = *plain.add(p),
            Direction::Unshuffle => *dst.add(p) = *shuffled.add(q),
        }
    };
    match shuffle {
        Shuffle::Bit if !elements.is_multiple_of(8) => copy(unit, unit),
        Shuffle::Bit if unit < elements / 8 => {
            for byte in 0..typesize {
                // The eight elements' byte `byte` and the eight bit planes' bytes are each
                // other's 8x8 bit transpose.
                let from = |k: usize| match direction {
                    Direction::Shuffle => (8 * unit + k) * typesize + byte,
                    Direction::Unshuffle => bit_plane_index(unit, byte, k, elements),
                };
                let to = |k: usize| match direction {
                    Direction::Shuffle => bit_plane_index(unit, byte, k, elements),
                    Direction::Unshuffle => (8 * unit + k) * typesize + byte,
                };
                let mut tile = 0u64;
                for k in 0..8 {
                    tile |= (unsafe { *src.add(from(k)) } as u64) << (8 * k);
                }
                for (k, value) in transpose_bits(tile).to_le_bytes().into_iter().enumerate() {
                    unsafe { *dst.add(to(k)) = value };
                }
            }
        }
        Shuffle::Bit => copy(whole + unit - elements / 8, whole + unit - elements / 8),
        _ if unit < elements => {
            let element = unsafe { dst.add(unit * typesize) };
            let word = matches!(typesize, 2 | 4 | 8) && (element as usize).is_multiple_of(typesize);
            if direction == Direction::Unshuffle && word {
                // The element's bytes gathered from their planes, stored in one access.
                let mut value = 0u64;
                for byte in 0..typesize {
                    value |= (unsafe { *src.add(byte_shuffled_index(unit, byte, elements)) } as u64) << (8 * byte);
                }
                unsafe {
                    match typesize {
                        2 => *(element as *mut u16) = value as u16,
                        4 => *(element as *mut u32) = value as u32,
                        _ => *(element as *mut u64) = value,
                    }
                }
            } else {
                for byte in 0..typesize {
                    copy(unit * typesize + byte, byte_shuffled_index(unit, byte, elements));
                }
            }
        }
        _ => copy(whole + unit - elements, whole + unit - elements),
    }
}

/// The batched entry points (`blosc_compress`, `blosc_decompress`, `blosc_decompressed_sizes`).
#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use crate::batch::{Chunk, ChunkKernels, Lanes, warp_shared};
    use crate::block::strided;
    use crate::gpu::{HardwareWarp, dynamic_shared_memory, thread};
    use ferrocomp_format::blosc::{self, HEADER_LEN, Header, MAX_BUFFERSIZE, MIN_BUFFERSIZE};
    use ferrocomp_format::{BatchArgs, DataType};

    /// A CTA per chunk compresses and decompresses; a thread per chunk reads the size from the
    /// header.
    pub struct Blosc;

    impl ChunkKernels for Blosc {
        const COMPRESS: Lanes = Lanes::Block;
        const DECOMPRESS: Lanes = Lanes::Block;
        const SIZES: Lanes = Lanes::Thread;

        unsafe fn compress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            unsafe { compress_chunk(warp, chunk, args) }
        }

        unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            let input = unsafe { chunk.input() };
            // Every thread reads the header (the loads broadcast), so all take the same branches.
            let header = Header::parse(input)?;
            let n = header.nbytes();
            if n > chunk.capacity {
                return Err(Status::OutputTooSmall);
            }
            let (thread, threads) = (thread::thread_idx_x() as usize, thread::block_dim_x() as usize);
            if header.is_memcpyed() {
                for i in strided(thread..n, threads) {
                    unsafe { *chunk.output.add(i) = input[HEADER_LEN + i] };
                }
                return Ok(n);
            }
            let (warp_index, warps) = (HardwareWarp::index_in_block() as usize, HardwareWarp::per_block() as usize);
            // Past TABLE_WARPS no warp uses it.
            let shared = dynamic_shared_memory::<u8>()
                .wrapping_add(STREAM_SHARED_AT + warp_index.min(TABLE_WARPS - 1) * STREAM_SHARED_BYTES_PER_WARP);
            let failure = unsafe { decode_streams(warp, &header, input, chunk.output, shared, warp_index, warps) };
            // The chunk's status is that of its first failing stream, as the CPU decoder finds it.
            let failures = dynamic_shared_memory::<(u32, u32)>();
            if warp.lane() == 0 {
                let failure = failure.map_or((u32::MAX, 0), |(item, status)| (item as u32, status as u32));
                unsafe { *failures.add(warp_index) = failure };
            }
            thread::sync_threads();
            let first = (0..warps).map(|w| unsafe { *failures.add(w) }).min_by_key(|&(item, _)| item);
            thread::sync_threads(); // read by all before the next chunk writes them
            if let Some((item, code)) = first
                && item != u32::MAX
            {
                return Err(Status::from_code(code));
            }
            Ok(n)
        }

        unsafe fn decompressed_size(_: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            blosc::decompressed_size(unsafe { chunk.input() })
        }
    }

    /// This warp's share of the chunk's streams (warp `warp_index` of `warps` takes every
    /// `warps`-th; of zstd and zlib streams, the first [`TABLE_WARPS`] alone), decoded into
    /// `target` at their blocks' places; its first failing stream's index in the chunk and
    /// status.
    unsafe fn decode_streams(
        warp: &HardwareWarp,
        header: &Header,
        input: &[u8],
        target: *mut u8,
        shared: *mut u8,
        warp_index: usize,
        warps: usize,
    ) -> Option<(usize, Status)> {
        let compressor = header.compressor();
        let warps = match compressor {
            Some(Compressor::Zstd | Compressor::Zlib) => warps.min(TABLE_WARPS),
            _ => warps,
        };
        if warp_index >= warps {
            return None; // the streams need tables this warp has no room for
        }
        let per_block = header.streams_per_block(0);
        for item in strided(warp_index..header.block_count() * per_block, warps) {
            let block = item / per_block;
            let streams = match header.block_streams(input, block) {
                Ok(_) if compressor.is_none() => return Some((item, Status::Unsupported)),
                Ok(streams) => streams,
                Err(status) => return Some((item, status)),
            };
            // A leftover last block has fewer streams than the others.
            let Some(stream) = streams.as_slice().get(item % per_block) else { continue };
            let dest = unsafe { target.add(header.block_start(block) + stream.decoded_at) };
            if let Err(status) = unsafe { decode_stream(warp, compressor, stream, input.as_ptr(), dest, shared) } {
                return Some((item, status));
            }
        }
        None
    }

    /// Compresses a chunk as `ferrocomp_format::blosc::compress` does, byte for byte: the CTA
    /// shuffles its blocks into scratch, the warps compress the streams in turns (LZ4's warp
    /// parse) in place of them, one thread lays the chunk out (block table, stream sizes, raw
    /// streams, the memcpyed fallback) and the warps copy the streams into place.
    unsafe fn compress_chunk(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
        let (typesize, shuffle) = unpack_options(args.options as u32);
        let n = chunk.input_len;
        if n > MAX_BUFFERSIZE {
            return Err(Status::ChunkTooLarge);
        }
        if chunk.capacity < blosc::max_compressed_size(n) {
            return Err(Status::OutputTooSmall);
        }
        let (thread, threads) = (thread::thread_idx_x() as usize, thread::block_dim_x() as usize);
        let (warp_index, warps) = (HardwareWarp::index_in_block() as usize, HardwareWarp::per_block() as usize);
        let (input, out) = (chunk.input, chunk.output);
        let blocksize = blosc::compute_blocksize(n, typesize);
        let split = blosc::splits(typesize, blocksize);
        let nblocks = n.div_ceil(blocksize);
        let per_block = if split { typesize } else { 1 };
        let items = nblocks * per_block;
        let stride = (args.scratch_len as usize / thread::grid_dim_x() as usize) & !15;
        let slot = unsafe { (args.scratch as *mut u8).add(chunk.slot * stride) };
        let (shuffled, staging) = (slot, unsafe { slot.add(n.next_multiple_of(16)) });
        let layout = unsafe { staging.add(n.next_multiple_of(16)) } as *mut u32;
        if 2 * n.next_multiple_of(16) + 8 * items > stride {
            return Err(Status::OutputTooSmall); // the host sized the scratch for smaller chunks
        }
        let source = if shuffle == Shuffle::None { input } else { shuffled as *const u8 };
        let stream = |item: usize| {
            let (block, j) = (item / per_block, item % per_block);
            let len = (n - block * blocksize).min(blocksize);
            let streams = if len < blocksize { 1 } else { per_block };
            (j < streams).then_some((block * blocksize + j * (len / streams), len / streams))
        };
        let compressible = n >= MIN_BUFFERSIZE;
        if compressible {
            if shuffle != Shuffle::None {
                for block in 0..nblocks {
                    let (start, len) = (block * blocksize, (n - block * blocksize).min(blocksize));
                    let (src, dst) = unsafe { (input.add(start), shuffled.add(start)) };
                    for unit in strided(thread..transpose_units(shuffle, typesize, len), threads) {
                        unsafe { transpose_unit(Direction::Shuffle, shuffle, typesize, src, dst, len, unit) };
                    }
                }
                thread::sync_threads();
            }
            let table = warp_shared::<u16>(HASH_ENTRIES);
            for item in strided(warp_index..items, warps) {
                let Some((at, len)) = stream(item) else { continue };
                let (src, dst) = unsafe { (source.add(at), staging.add(at)) };
                let packed = unsafe { crate::lz4::compress_chunk(warp, src, len, dst, len, table, DataType::Char) };
                // Stored raw unless LZ4 shrinks it. LZ4 fails only for want of room here: a
                // stream is at most a block (1 MiB), far below LZ4's chunk limit.
                let stored = match packed {
                    Ok(packed) if packed < len => packed,
                    _ => len,
                };
                if warp.lane() == 0 {
                    unsafe { *layout.add(2 * item) = stored as u32 };
                }
            }
        }
        let total = unsafe { dynamic_shared_memory::<usize>().add(COMPRESS_WARPS * HASH_ENTRIES * 2 / 8) };
        thread::sync_threads();
        if thread == 0 {
            let laid_out =
                if compressible { unsafe { lay_out(out, layout, nblocks, per_block, n, &stream) } } else { None };
            let header = blosc::lz4_header(shuffle, typesize, n, blocksize, laid_out);
            for (k, &byte) in header.iter().enumerate() {
                unsafe { *out.add(k) = byte };
            }
            // 0 says memcpyed: a laid-out chunk may be exactly as long as a memcpyed one.
            unsafe { *total = laid_out.unwrap_or(0) };
        }
        thread::sync_threads();
        let laid_out = unsafe { *total };
        let cbytes = if laid_out == 0 { n + HEADER_LEN } else { laid_out };
        if laid_out == 0 {
            for i in strided(thread..n, threads) {
                unsafe { *out.add(HEADER_LEN + i) = *input.add(i) };
            }
        } else {
            for item in strided(warp_index..items, warps) {
                let Some((at, len)) = stream(item) else { continue };
                let (stored, to) = unsafe { (*layout.add(2 * item) as usize, *layout.add(2 * item + 1) as usize) };
                let from = if stored == len { source } else { staging as *const u8 };
                let (src, dst) = unsafe { (from.add(at), out.add(to)) };
                warp.for_each_strided(stored, |i| unsafe { *dst.add(i) = *src.add(i) });
            }
        }
        thread::sync_threads(); // the scratch slot and the shared size are free again
        Ok(cbytes)
    }

    /// Writes the block table and each stream's stored size into `out`, and each stream's offset
    /// into `layout` (beside its stored size); returns the chunk's size, or `None` when it would
    /// not be smaller than a memcpyed chunk. One thread.
    unsafe fn lay_out(
        out: *mut u8,
        layout: *mut u32,
        nblocks: usize,
        per_block: usize,
        n: usize,
        stream: &impl Fn(usize) -> Option<(usize, usize)>,
    ) -> Option<usize> {
        let limit = blosc::max_compressed_size(n);
        let mut at = HEADER_LEN + 4 * nblocks;
        if at > limit {
            return None;
        }
        for block in 0..nblocks {
            unsafe { write_u32(out, HEADER_LEN + 4 * block, at as u32) };
            for item in block * per_block..(block + 1) * per_block {
                if stream(item).is_none() {
                    continue;
                }
                let stored = unsafe { *layout.add(2 * item) } as usize;
                if at + 4 + stored > limit {
                    return None;
                }
                unsafe {
                    write_u32(out, at, stored as u32);
                    *layout.add(2 * item + 1) = (at + 4) as u32;
                }
                at += 4 + stored;
            }
        }
        Some(at)
    }

    /// Writes `value` little-endian at `out[at..at + 4]`.
    unsafe fn write_u32(out: *mut u8, at: usize, value: u32) {
        for (k, byte) in value.to_le_bytes().into_iter().enumerate() {
            unsafe { *out.add(at + k) = byte };
        }
    }

    crate::batch_kernels!(Blosc: blosc_compress, blosc_decompress, blosc_decompressed_sizes);

    /// Unshuffles in place the chunks of a batch `blosc_decompress` decoded: the CTAs find the
    /// largest block and the most blocks of a chunk to unshuffle, give each of as many CTAs as
    /// the scratch has room for a slot of that block (or of all the scratch), and take the
    /// blocks in turns (block `b` of chunk `i` is item `i * most + b`): each copies its block
    /// into its slot, then moves the units back into the output. Chunks that failed, decoded to
    /// nothing or are not shuffled are left as they are; one with a block larger than a slot
    /// fails (`ChunkTooLarge`: the scratch was sized for smaller chunks).
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn blosc_unshuffle(args: BatchArgs) {
        let (cta, ctas) = (thread::block_idx_x() as usize, thread::grid_dim_x() as usize);
        let (thread, threads) = (thread::thread_idx_x() as usize, thread::block_dim_x() as usize);
        let count = args.count as usize;
        let (largest, most) = unsafe { block_extent(&args, thread, threads) };
        let stride = largest.next_multiple_of(16).min(args.scratch_len as usize & !15);
        let usable = (args.scratch_len as usize).checked_div(stride).unwrap_or(0).min(ctas);
        if cta >= usable.max(1) {
            return;
        }
        let slot = unsafe { (args.scratch as *mut u8).add(cta * stride) };
        for item in strided(cta..count * most, usable.max(1)) {
            // Every thread reads the same sizes and header, so all take the same branches.
            let (index, block) = (item / most, item % most);
            let Some((chunk, header)) = (unsafe { to_unshuffle(&args, index) }) else { continue };
            if block >= header.block_count() {
                continue;
            }
            let (start, len) = (header.block_start(block), header.block_len(block));
            if len > stride {
                if thread == 0 {
                    unsafe { crate::batch::fail(&args, index, Status::ChunkTooLarge) };
                }
                continue;
            }
            let out = unsafe { chunk.output.add(start) };
            unsafe { copy_block(out, slot, len, thread, threads) };
            thread::sync_threads(); // the block is staged
            for unit in strided(thread..transpose_units(header.shuffle(), header.typesize(), len), threads) {
                unsafe {
                    transpose_unit(Direction::Unshuffle, header.shuffle(), header.typesize(), slot, out, len, unit)
                };
            }
            thread::sync_threads(); // the slot is free again
        }
    }

    /// Chunk `index` of the batch, with its header, if it decoded to something shuffled.
    unsafe fn to_unshuffle(args: &BatchArgs, index: usize) -> Option<(Chunk, Header)> {
        if unsafe { *(args.result_sizes as *const usize).add(index) } == 0 {
            return None;
        }
        let chunk = unsafe { crate::batch::chunk_at(args, index, 0) };
        let header = Header::parse(unsafe { chunk.input() }).ok()?;
        (header.shuffle() != Shuffle::None).then_some((chunk, header))
    }

    /// The largest block and the most blocks of a chunk to unshuffle, in every thread of the
    /// CTA: each thread takes every `threads`-th chunk, then the warps, then the CTA, reduce.
    unsafe fn block_extent(args: &BatchArgs, thread: usize, threads: usize) -> (usize, usize) {
        let (mut largest, mut most) = (0u32, 0u32);
        for index in strided(thread..args.count as usize, threads) {
            if let Some((_, header)) = unsafe { to_unshuffle(args, index) } {
                largest = largest.max(header.blocksize().min(header.nbytes()) as u32);
                most = most.max(header.block_count() as u32);
            }
        }
        let warp = HardwareWarp;
        for shift in [16, 8, 4, 2, 1] {
            largest = largest.max(warp.shuffle(largest, warp.lane() ^ shift));
            most = most.max(warp.shuffle(most, warp.lane() ^ shift));
        }
        let partial = dynamic_shared_memory::<[u32; 2]>();
        if warp.lane() == 0 {
            unsafe { *partial.add(HardwareWarp::index_in_block() as usize) = [largest, most] };
        }
        thread::sync_threads();
        let warps = HardwareWarp::per_block() as usize;
        let [largest, most] = (0..warps).fold([0, 0], |[l, m], w| {
            let [wl, wm] = unsafe { *partial.add(w) };
            [l.max(wl), m.max(wm)]
        });
        (largest as usize, most as usize)
    }

    /// Copies `len` bytes from `src` to `dst`, a share per thread (`thread` of `threads`): in
    /// the widest units both are aligned to (16 bytes, 4, or 1), the rest byte by byte.
    unsafe fn copy_block(src: *const u8, dst: *mut u8, len: usize, thread: usize, threads: usize) {
        let alignment = src as usize | dst as usize;
        let done = if alignment.is_multiple_of(16) {
            unsafe { copy_units::<u128>(src, dst, len / 16, thread, threads) };
            len / 16 * 16
        } else if alignment.is_multiple_of(4) {
            unsafe { copy_units::<u32>(src, dst, len / 4, thread, threads) };
            len / 4 * 4
        } else {
            0
        };
        unsafe { copy_units::<u8>(src.add(done), dst.add(done), len - done, thread, threads) };
    }

    /// Copies `units` `T`s from `src` to `dst`, every `threads`-th from `thread` on.
    unsafe fn copy_units<T: Copy>(src: *const u8, dst: *mut u8, units: usize, thread: usize, threads: usize) {
        let (src, dst) = (src as *const T, dst as *mut T);
        for unit in strided(thread..units, threads) {
            unsafe { *dst.add(unit) = *src.add(unit) };
        }
    }
}

//! Snappy on the GPU. Compression is LZ4's warp parse, a warp per chunk
//! (`crate::lz4::parse_chunk`) with Snappy's elements written instead of LZ4's, exactly as
//! `ferrocomp_format::snappy::compress` writes them. Decompression is LZ4's decoder
//! (`crate::lz77`) reading Snappy's elements, with the format crate's checks and statuses: a
//! block of threads a chunk where a batch is small, else a pair of warps ([`lz77::pair`]).

use crate::block::Block;
use crate::lz4::{SequenceEncoder, parse_chunk};
use crate::lz77::pair::Walk;
use crate::lz77::{self, Parsed, SHORT_SEQUENCE, Stream, Syntax};
use crate::warp::Warp;
use core::slice;
use ferrocomp_format::lz4::MatchRules;
use ferrocomp_format::snappy;
use ferrocomp_format::{DataType, Status};

/// Compresses the `n` bytes at `input` into `out` (room for `capacity` bytes) as one Snappy
/// stream; returns the compressed size. `table` is this warp's LZ4 hash table.
///
/// # Safety
/// As `crate::lz4::compress_chunk`.
pub unsafe fn compress_chunk<W: Warp>(
    warp: &W,
    input: *const u8,
    n: usize,
    out: *mut u8,
    capacity: usize,
    table: *mut u16,
    data_type: DataType,
) -> Result<usize, Status> {
    if n > snappy::MAX_CHUNK_SIZE {
        return Err(Status::ChunkTooLarge);
    }
    let len = snappy::preamble_len(n);
    if len > capacity {
        return Err(Status::OutputTooSmall);
    }
    if warp.lane() == 0 {
        snappy::write_preamble(unsafe { slice::from_raw_parts_mut(out, len) }, n);
    }
    let mut writer = WarpWriter { warp, out, capacity, len };
    unsafe { parse_chunk(warp, input, n, table, MatchRules::new(data_type), &mut writer)? };
    Ok(writer.len)
}

/// Appends Snappy elements to a chunk's output: lane 0 writes the tags and copies, all lanes
/// the literals.
struct WarpWriter<'w, W> {
    warp: &'w W,
    out: *mut u8,
    capacity: usize,
    len: usize,
}

impl<W: Warp> WarpWriter<'_, W> {
    /// A literal element of `count` bytes at `literals` (none when `count` is 0).
    unsafe fn literals(&mut self, literals: *const u8, count: usize) -> Result<(), Status> {
        if count == 0 {
            return Ok(());
        }
        let header = snappy::literal_header_len(count);
        let end = self.len + header + count;
        if end > self.capacity {
            return Err(Status::OutputTooSmall);
        }
        if self.warp.lane() == 0 {
            snappy::write_literal_header(unsafe { slice::from_raw_parts_mut(self.out.add(self.len), header) }, count);
        }
        let dst = unsafe { self.out.add(self.len + header) };
        // 4 bytes a lane: on incompressible int32 6% faster, elsewhere within 3% (H200); LZ4's
        // writer measured 3-5% slower with it on text, binary and float32 and keeps bytes.
        unsafe { lz77::copy(self.warp, literals, dst, count as u32) };
        self.len = end;
        Ok(())
    }
}

impl<W: Warp> SequenceEncoder for WarpWriter<'_, W> {
    unsafe fn sequence(
        &mut self,
        literals: *const u8,
        count: usize,
        offset: usize,
        match_len: usize,
    ) -> Result<(), Status> {
        unsafe { self.literals(literals, count)? };
        let copies = snappy::copy_elements_len(offset, match_len);
        if self.len + copies > self.capacity {
            return Err(Status::OutputTooSmall);
        }
        if self.warp.lane() == 0 {
            let out = unsafe { slice::from_raw_parts_mut(self.out.add(self.len), copies) };
            snappy::write_copies(out, offset, match_len);
        }
        self.len += copies;
        Ok(())
    }

    unsafe fn last_literals(&mut self, literals: *const u8, count: usize) -> Result<(), Status> {
        unsafe { self.literals(literals, count) }
    }
}

/// Decompresses the Snappy stream of `in_len` bytes at `input` into `out` (room for `capacity`
/// bytes); returns the decompressed size, or the status `ferrocomp_format::snappy::decompress`
/// gives for the same stream.
///
/// # Safety
/// `input` must be readable for `in_len` bytes and `out` writable for `capacity` bytes, and not
/// written by anyone else meanwhile.
pub unsafe fn decompress_chunk<W: Warp>(
    warp: &W,
    input: *const u8,
    in_len: usize,
    out: *mut u8,
    capacity: usize,
) -> Result<usize, Status> {
    let (stream, start) = unsafe { stream(input, in_len, out, capacity)? };
    unsafe { lz77::decode(warp, &SnappySyntax, &stream, start, 0).map(|op| op as usize) }
}

/// [`decompress_chunk`] by a block of two warps ([`lz77::pair`]), one parsing while the other
/// writes: the result in the first warp.
///
/// # Safety
/// As [`decompress_chunk`], and as [`lz77::pair::decode`] for the block and `shared`.
pub unsafe fn decompress_chunk_in_pair<B: Block, W: Warp>(
    block: &B,
    warp: &W,
    input: *const u8,
    in_len: usize,
    out: *mut u8,
    capacity: usize,
    shared: *mut u8,
) -> Result<usize, Status> {
    let (stream, start) = unsafe { stream(input, in_len, out, capacity)? };
    unsafe { lz77::pair::decode(block, warp, &SnappySyntax, &stream, start, shared).map(|op| op as usize) }
}

/// [`decompress_chunk`] by a block of threads ([`lz77::block`]), for batches too small to fill
/// the GPU a warp per chunk: the result in thread 0.
///
/// # Safety
/// As [`decompress_chunk`], and as [`lz77::block::decode`] for the block and `shared`.
pub unsafe fn decompress_chunk_in_block<B: Block, W: Warp>(
    block: &B,
    warp: &W,
    input: *const u8,
    in_len: usize,
    out: *mut u8,
    capacity: usize,
    shared: *mut u8,
) -> Result<usize, Status> {
    let (stream, start) = unsafe { stream(input, in_len, out, capacity)? };
    unsafe { lz77::block::decode(block, warp, &SnappySyntax, &stream, start, shared).map(|op| op as usize) }
}

/// The stream of `in_len` bytes at `input` to decode into `out`, and where its elements start.
///
/// # Safety
/// `input` must be readable for `in_len` bytes.
unsafe fn stream(input: *const u8, in_len: usize, out: *mut u8, capacity: usize) -> Result<(Stream, u32), Status> {
    if in_len > u32::MAX as usize {
        return Err(Status::ChunkTooLarge);
    }
    let bytes = unsafe { crate::raw::bytes(input, in_len) };
    let (n, start) = snappy::read_preamble(bytes)?;
    if n > capacity {
        return Err(Status::OutputTooSmall);
    }
    // The preamble's size is the output's: writing past it is `Malformed`, as in the scalar decoder.
    Ok((Stream { block: input, end: in_len as u32, out, capacity: n as u32 }, start as u32))
}

/// Snappy's elements: a literal run, or one copy.
struct SnappySyntax;

/// Element tags (the low two bits of an element's first byte).
const LITERAL: u32 = 0;
const COPY1: u32 = 1;
const COPY2: u32 = 2;

impl SnappySyntax {
    /// The literal element whose tag `code` (upper six bits) is at `p`: where its bytes start and
    /// how many there are, or `Truncated` if its length bytes or its bytes are cut off. In 32-bit
    /// words and without a loop: the block decoder's walks kept a 64-bit length, and a loop's, in
    /// local memory.
    #[inline(always)]
    fn literal<const STAGED: bool>(stream: &Stream<STAGED>, p: u32, code: u32) -> Result<(u32, u32), Status> {
        let extra = code.saturating_sub(59); // length bytes after the tag: 0 to 4
        if stream.end - (p + 1) < extra {
            return Err(Status::Truncated);
        }
        let byte = |i: u32| if i < extra { stream.byte(p + 1 + i) } else { 0 };
        let below = if code < 60 { code } else { byte(0) | byte(1) << 8 | byte(2) << 16 | byte(3) << 24 };
        // `below + 1` bytes, which may not fit in 32 bits where they would not fit the input.
        let literals_at = p + 1 + extra;
        if below >= stream.end - literals_at {
            return Err(Status::Truncated);
        }
        Ok((literals_at, below + 1))
    }

    /// The copy element whose tag is at `p`: (offset, length, its size in bytes), or `Truncated`.
    #[inline(always)]
    fn copy<const STAGED: bool>(
        stream: &Stream<STAGED>,
        p: u32,
        kind: u32,
        code: u32,
    ) -> Result<(u32, u32, u32), Status> {
        let size = match kind {
            COPY1 => 2,
            COPY2 => 3,
            _ => 5,
        };
        if stream.end - p < size {
            return Err(Status::Truncated);
        }
        let byte = |i: u32| stream.byte(p + i);
        Ok(match kind {
            COPY1 => ((code >> 3) << 8 | byte(1), 4 + (code & 7), size),
            COPY2 => (byte(1) | byte(2) << 8, code + 1, size),
            _ => (byte(1) | byte(2) << 8 | byte(3) << 16 | byte(4) << 24, code + 1, size),
        })
    }
}

impl Syntax for SnappySyntax {
    const READS_HEAD: bool = true;
    const FILLS_CAPACITY: bool = true;

    #[inline(always)]
    fn sequence_at<const STAGED: bool>(&self, stream: &Stream<STAGED>, p: u32) -> Option<Parsed> {
        let tag = stream.byte(p);
        let (kind, code) = (tag & 3, tag >> 2);
        if kind == LITERAL {
            let (literals_at, len) = Self::literal(stream, p, code).ok()?;
            Some(Parsed { literals_at, literals: len, offset: 0, len: 0, next: literals_at + len })
        } else {
            let (offset, len, size) = Self::copy(stream, p, kind, code).ok()?;
            Some(Parsed { literals_at: 0, literals: 0, offset, len, next: p + size })
        }
    }

    /// Every element kind from its first five bytes, without branches: a literal with a one-
    /// or two-byte header, or a copy.
    #[inline(always)]
    fn short_sequence(&self, stream: &Stream, p: u32, head: u64) -> Option<Parsed> {
        let left = stream.end.checked_sub(p).filter(|&left| left > 0)?;
        let (kind, code, rest) = (head as u32 & 3, (head as u32 >> 2) & 63, (head >> 8) as u32);
        // Both readings, then selects: a `match` on the kind became a jump table, the lanes of a
        // batch parsing each kind in turn.
        let literal = kind == LITERAL;
        let (header, literals) = if code < 60 { (1, code + 1) } else { (2, (rest & 0xff) + 1) };
        let copy1 = kind == COPY1;
        let offset =
            if copy1 { (code >> 3) << 8 | (rest & 0xff) } else { rest & if kind == COPY2 { 0xffff } else { !0 } };
        let len = if copy1 { 4 + (code & 7) } else { code + 1 };
        // A copy's size by its kind (1, 2, 4: 2, 3 and 5 bytes).
        let size = if literal { header + literals } else { (0x0503_0200 >> (8 * kind)) & 0xff };
        let fits = size <= left && (!literal || (code <= 60 && literals <= SHORT_SEQUENCE));
        fits.then_some(if literal {
            Parsed { literals_at: p + header, literals, offset: 0, len: 0, next: p + size }
        } else {
            Parsed { literals_at: 0, literals: 0, offset, len, next: p + size }
        })
    }

    unsafe fn decode_one<W: Warp>(
        &self,
        warp: &W,
        stream: &Stream,
        ip: &mut u32,
        op: &mut u32,
    ) -> Result<bool, Status> {
        let n = stream.capacity;
        if *ip >= stream.end {
            return if *op == n { Ok(true) } else { Err(Status::Malformed) };
        }
        let tag = stream.byte(*ip);
        let (kind, code) = (tag & 3, tag >> 2);
        if kind == LITERAL {
            let (literals_at, len) = Self::literal(stream, *ip, code)?;
            if len > n - *op {
                return Err(Status::Malformed);
            }
            let (src, dst) = unsafe { (stream.block.add(literals_at as usize), stream.out.add(*op as usize)) };
            unsafe { lz77::copy(warp, src, dst, len) };
            warp.sync(); // the literals are visible to every lane
            (*ip, *op) = (literals_at + len, *op + len);
        } else {
            let (offset, len, size) = Self::copy(stream, *ip, kind, code)?;
            if offset == 0 || offset > *op {
                return Err(Status::BadOffset);
            }
            if len > n - *op {
                return Err(Status::Malformed);
            }
            unsafe { lz77::copy_match(warp, stream.out, *op, offset, len) };
            (*ip, *op) = (*ip + size, *op + len);
        }
        Ok(false)
    }
}

impl Walk for SnappySyntax {
    /// `decode_one`'s checks without its writes. `decode_one` keeps its own: built on this one,
    /// the block decoder's fallback grew and its kernel took more stack (ptxas, sm_90).
    #[inline(always)]
    fn check_one(&self, stream: &Stream, ip: u32, op: u32) -> Result<(Parsed, bool), Status> {
        let left = stream.capacity - op;
        if ip >= stream.end {
            let end = Parsed { literals_at: 0, literals: 0, offset: 0, len: 0, next: ip };
            return if left == 0 { Ok((end, true)) } else { Err(Status::Malformed) };
        }
        let tag = stream.byte(ip);
        let (kind, code) = (tag & 3, tag >> 2);
        let one = if kind == LITERAL {
            let (literals_at, len) = Self::literal(stream, ip, code)?;
            if len > left {
                return Err(Status::Malformed);
            }
            Parsed { literals_at, literals: len, offset: 0, len: 0, next: literals_at + len }
        } else {
            let (offset, len, size) = Self::copy(stream, ip, kind, code)?;
            if offset == 0 || offset > op {
                return Err(Status::BadOffset);
            }
            if len > left {
                return Err(Status::Malformed);
            }
            Parsed { literals_at: 0, literals: 0, offset, len, next: ip + size }
        };
        Ok((one, false))
    }

    /// Without branches: a copy's size by its kind, a literal's by its code and second byte.
    #[inline(always)]
    fn short_size(&self, head: u32, left: u32) -> u32 {
        let (kind, code, second) = (head & 3, (head >> 2) & 63, head >> 8);
        let literal = if code < 60 {
            code + 2
        } else if code == 60 && second < SHORT_SEQUENCE {
            second + 3
        } else {
            0
        };
        let size = if kind == LITERAL { literal } else { (0x0503_0200 >> (8 * kind)) & 0xff };
        if size <= left { size } else { 0 }
    }
}

/// The batched entry points (`snappy_compress`, `snappy_decompress`,
/// `snappy_decompressed_sizes`).
#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use crate::batch::{BlockDecompress, Chunk, ChunkKernels, Lanes, warp_shared};
    use crate::gpu::{HardwareBlock, HardwareWarp, dynamic_shared_memory};
    use ferrocomp_format::BatchArgs;
    use ferrocomp_format::lz4::HASH_ENTRIES;

    /// A warp per chunk compresses (LZ4's parse, its hash table in shared memory), a pair of
    /// warps decompresses; a thread per chunk reads the size from the preamble.
    pub struct Snappy;

    impl ChunkKernels for Snappy {
        const COMPRESS: Lanes = Lanes::Warp;
        const DECOMPRESS: Lanes = Lanes::Block;
        const SIZES: Lanes = Lanes::Thread;

        #[inline(always)] // with the word copy of literals LLVM called it: 70 registers, text 13% slower
        unsafe fn compress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let table = warp_shared::<u16>(HASH_ENTRIES);
            let data_type = DataType::from_id(args.options as u8).unwrap_or_default();
            unsafe {
                compress_chunk(warp, chunk.input, chunk.input_len, chunk.output, chunk.capacity, table, data_type)
            }
        }

        unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            let (input, output, shared) = (chunk.input, chunk.output, dynamic_shared_memory::<u8>());
            unsafe {
                decompress_chunk_in_pair(&HardwareBlock, warp, input, chunk.input_len, output, chunk.capacity, shared)
            }
        }

        unsafe fn decompressed_size(_: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            snappy::decompressed_size(unsafe { chunk.input() })
        }
    }

    crate::batch_kernels!(Snappy: snappy_compress, snappy_decompress, snappy_decompressed_sizes);

    impl BlockDecompress for Snappy {
        unsafe fn decompress(
            block: &HardwareBlock,
            warp: &HardwareWarp,
            chunk: &Chunk,
            _: &BatchArgs,
        ) -> Result<usize, Status> {
            let (input, output, shared) = (chunk.input, chunk.output, dynamic_shared_memory::<u8>());
            unsafe { decompress_chunk_in_block(block, warp, input, chunk.input_len, output, chunk.capacity, shared) }
        }
    }

    crate::block_decompress_kernel!(Snappy: snappy_decompress_blocks);
}

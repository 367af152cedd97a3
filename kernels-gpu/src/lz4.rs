//! LZ4 on the GPU: one warp per chunk.
//!
//! Compression follows `ferrocomp_format::lz4::compress` step for step (the lanes look at
//! [`BATCH`] positions at once) and so writes the same bytes. Decompression walks the sequences
//! in every lane (the loads broadcast), with the checks and statuses of the format crate's
//! decoder, and copies literals and matches 32 bytes at a time.

use crate::block::Block;
use crate::lz77::{self, Parsed, SHORT_SEQUENCE, Stream, Syntax, word_at};
use crate::warp::{WARP_SIZE, Warp};
use core::slice;
use ferrocomp_format::lz4::{self, BATCH, HASH_ENTRIES, LAST_LITERALS, MAX_CHUNK_SIZE, MatchRules, candidate};
use ferrocomp_format::{DataType, Status};

/// Bytes of shared memory each warp of the compress kernel needs (its hash table).
pub const COMPRESS_SHARED_BYTES_PER_WARP: usize = HASH_ENTRIES * 2;

/// Whether the `len` bytes (at least 4) at `c` equal those at `p`, whose first 4 are `first`:
/// a word at a time, each from two aligned loads (a candidate's bytes lie anywhere, so every
/// load of them is a memory transaction of its own per lane).
///
/// # Safety
/// As [`word_at`], for the `len` bytes at `c` and at `p` rounded up to whole words.
#[inline(always)]
unsafe fn words_equal(data: *const u8, c: usize, p: usize, first: u32, len: usize) -> bool {
    let rest_equal = |k: usize| {
        let differing = unsafe { word_at(data.add(c + k)) ^ word_at(data.add(p + k)) };
        differing & (u32::MAX >> (8 * (k + 4).saturating_sub(len))) == 0
    };
    unsafe { word_at(data.add(c)) == first && (4..len).step_by(4).all(rest_equal) }
}

/// Compresses the `n` bytes at `input` into `out` (room for `capacity` bytes) as one LZ4 block;
/// returns the compressed size. `table` is this warp's [`HASH_ENTRIES`]-entry scratch.
///
/// # Safety
/// `input` must be readable for `n` bytes, `out` writable for `capacity` bytes and `table` for
/// [`HASH_ENTRIES`] entries, none of them written by anyone else meanwhile.
pub unsafe fn compress_chunk<W: Warp>(
    warp: &W,
    input: *const u8,
    n: usize,
    out: *mut u8,
    capacity: usize,
    table: *mut u16,
    data_type: DataType,
) -> Result<usize, Status> {
    let mut writer = WarpWriter { warp, out, capacity, len: 0 };
    unsafe { parse_chunk(warp, input, n, table, MatchRules::new(data_type), &mut writer)? };
    Ok(writer.len)
}

/// Where [`parse_chunk`] sends the sequences it finds: a writer of one codec's format. Every
/// lane makes each call, with the same arguments.
pub trait SequenceEncoder {
    /// `count` literals at `literals`, then a match of `match_len` bytes `offset` back.
    ///
    /// # Safety
    /// `literals` must be readable for `count` bytes.
    unsafe fn sequence(
        &mut self,
        literals: *const u8,
        count: usize,
        offset: usize,
        match_len: usize,
    ) -> Result<(), Status>;

    /// The final `count` literals at `literals`.
    ///
    /// # Safety
    /// `literals` must be readable for `count` bytes.
    unsafe fn last_literals(&mut self, literals: *const u8, count: usize) -> Result<(), Status>;
}

/// Finds the LZ4 parse of the `n` bytes at `input` under `rules` (the sequences
/// `ferrocomp_format::lz4::parse` finds) and hands them to `encoder`.
///
/// # Safety
/// As [`compress_chunk`], for `input` and `table`.
pub unsafe fn parse_chunk<W: Warp, E: SequenceEncoder>(
    warp: &W,
    input: *const u8,
    n: usize,
    table: *mut u16,
    rules: MatchRules,
    encoder: &mut E,
) -> Result<(), Status> {
    if n > MAX_CHUNK_SIZE {
        return Err(Status::ChunkTooLarge);
    }
    // Positions in 32 bits (a chunk is at most 64 KiB): the loop's values take one register
    // each, and widths (powers of two) are shifts.
    let (lane, shift) = (warp.lane(), rules.width.trailing_zeros());
    let (batch, end) = (BATCH as u32, (n - LAST_LITERALS.min(n)) as u32);
    warp.for_each_strided(rules.table_entries(), |slot| unsafe { *table.add(slot) = 0 });
    warp.sync();
    let mut anchor = 0u32;
    if let Some(last_start) = rules.last_start(n) {
        let last_start = last_start as u32;
        let mut pos = 0u32;
        while pos <= last_start {
            let p = pos + (lane << shift);
            let active = p <= last_start;
            let (slot, entry, word) = if active {
                let word = unsafe { word_at(input.add(p as usize)) };
                let slot = rules.slot(word);
                (slot as u32, unsafe { *table.add(slot) }, word)
            } else {
                (u32::MAX - lane, 0, 0) // a slot no other lane holds
            };
            warp.sync();
            let peers = warp.match_any(slot);
            if active && 31 - peers.leading_zeros() == lane {
                unsafe { *table.add(slot as usize) = p as u16 };
            }
            warp.sync();
            let found = if active { candidate(p as usize, entry) } else { None }.filter(|&c| {
                rules.reaches(p as usize, c) && unsafe { words_equal(input, c, p as usize, word, rules.min_len) }
            });
            let matched = warp.ballot(found.is_some());
            let found = found.unwrap_or(0) as u32;

            let mut cursor = pos;
            loop {
                let first_lane = (cursor - pos + (1 << shift) - 1) >> shift;
                if first_lane >= batch {
                    break;
                }
                let eligible = matched & (u32::MAX << first_lane);
                if eligible == 0 {
                    break;
                }
                let f = eligible.trailing_zeros();
                let p = pos + (f << shift);
                let c = warp.shuffle(found, f);
                let (forward, back) = extend(warp, input, p, c, end, anchor);
                let (len, back) = (forward >> shift << shift, back >> shift << shift);
                let literals = unsafe { input.add(anchor as usize) };
                unsafe {
                    encoder.sequence(literals, (p - back - anchor) as usize, (p - c) as usize, (len + back) as usize)?
                };
                cursor = p + len;
                anchor = cursor;
            }
            pos = cursor.max(pos + (batch << shift));
        }
    }
    unsafe { encoder.last_literals(input.add(anchor as usize), n - anchor as usize) }
}

/// [`common_forward`] and [`common_backward`] of one match, the loads of both first steps
/// issued together (each step waits on its loads).
#[inline(always)]
fn extend<W: Warp>(warp: &W, data: *const u8, p: u32, c: u32, end: u32, anchor: u32) -> (u32, u32) {
    let lane = warp.lane();
    let byte = |at: u32| unsafe { *data.add(at as usize) };
    let equal_after = p + lane < end && byte(p + lane) == byte(c + lane);
    let equal_before = lane < (p - anchor).min(c) && byte(p - 1 - lane) == byte(c - 1 - lane);
    let (after, before) = (warp.ballot(!equal_after), warp.ballot(!equal_before));
    let forward = match after {
        0 => WARP_SIZE + common_forward(warp, data, p + WARP_SIZE, c + WARP_SIZE, end),
        _ => after.trailing_zeros(),
    };
    let backward = match before {
        0 => WARP_SIZE + common_backward(warp, data, p - WARP_SIZE, c - WARP_SIZE, anchor),
        _ => before.trailing_zeros(),
    };
    (forward, backward)
}

/// Length of the common run of `data[p..]` and `data[c..]`, not reaching `end`; 32 bytes a step.
#[inline(always)]
pub(crate) fn common_forward<W: Warp>(warp: &W, data: *const u8, p: u32, c: u32, end: u32) -> u32 {
    let mut len = 0;
    loop {
        let i = len + warp.lane();
        let equal = p + i < end && unsafe { *data.add((p + i) as usize) == *data.add((c + i) as usize) };
        let differs = warp.ballot(!equal);
        if differs != 0 {
            return len + differs.trailing_zeros();
        }
        len += WARP_SIZE;
    }
}

/// Length of the common run ending before `p` and `c`, not reaching before `anchor` or 0.
#[inline(always)]
pub(crate) fn common_backward<W: Warp>(warp: &W, data: *const u8, p: u32, c: u32, anchor: u32) -> u32 {
    let limit = (p - anchor).min(c);
    let mut len = 0;
    loop {
        let i = len + warp.lane();
        let equal = i < limit && unsafe { *data.add((p - 1 - i) as usize) == *data.add((c - 1 - i) as usize) };
        let differs = warp.ballot(!equal);
        if differs != 0 {
            return len + differs.trailing_zeros();
        }
        len += WARP_SIZE;
    }
}

/// Appends sequences to a chunk's output: lane 0 writes the headers, all lanes the literals.
struct WarpWriter<'w, W> {
    warp: &'w W,
    out: *mut u8,
    capacity: usize,
    len: usize,
}

impl<W: Warp> SequenceEncoder for WarpWriter<'_, W> {
    unsafe fn sequence(
        &mut self,
        literals: *const u8,
        count: usize,
        offset: usize,
        match_len: usize,
    ) -> Result<(), Status> {
        let trailer_at = self.len + lz4::literal_header_len(count) + count;
        let end = trailer_at + lz4::match_trailer_len(match_len);
        if end > self.capacity {
            return Err(Status::OutputTooSmall);
        }
        unsafe { self.literals(literals, count, match_len) };
        if self.warp.lane() == 0 {
            let trailer = unsafe { slice::from_raw_parts_mut(self.out.add(trailer_at), end - trailer_at) };
            lz4::write_match_trailer(trailer, offset, match_len);
        }
        self.len = end;
        Ok(())
    }

    unsafe fn last_literals(&mut self, literals: *const u8, count: usize) -> Result<(), Status> {
        let end = self.len + lz4::literal_header_len(count) + count;
        if end > self.capacity {
            return Err(Status::OutputTooSmall);
        }
        unsafe { self.literals(literals, count, 0) };
        self.len = end;
        Ok(())
    }
}

impl<W: Warp> WarpWriter<'_, W> {
    /// Token, literal-length bytes and the literals themselves, at `self.len`.
    unsafe fn literals(&mut self, literals: *const u8, count: usize, match_len: usize) {
        let header = lz4::literal_header_len(count);
        if self.warp.lane() == 0 {
            let out = unsafe { slice::from_raw_parts_mut(self.out.add(self.len), header) };
            lz4::write_literal_header(out, count, match_len);
        }
        let dst = unsafe { self.out.add(self.len + header) };
        self.warp.for_each_strided(count, |i| unsafe { *dst.add(i) = *literals.add(i) });
    }
}

/// Decompresses the LZ4 block of `in_len` bytes at `block` into `out` (room for `capacity`
/// bytes); returns the decompressed size, or the status `ferrocomp_format::lz4::decompress`
/// gives for the same block. Runs of short sequences are decoded together
/// ([`crate::lz77::decode`]); any other sequence goes through `Lz4Syntax::decode_one`, which
/// checks everything as the scalar decoder does.
///
/// # Safety
/// `block` must be readable for `in_len` bytes and `out` writable for `capacity` bytes, and
/// not written by anyone else meanwhile.
pub unsafe fn decompress_chunk<W: Warp>(
    warp: &W,
    block: *const u8,
    in_len: usize,
    out: *mut u8,
    capacity: usize,
) -> Result<usize, Status> {
    let stream = stream(block, in_len, out, capacity)?;
    unsafe { lz77::decode(warp, &Lz4Syntax, &stream, 0, 0).map(|op| op as usize) }
}

/// [`decompress_chunk`] by a block of threads ([`lz77::block`]), for batches too small to fill
/// the GPU a warp per chunk: the result in thread 0.
///
/// # Safety
/// As [`decompress_chunk`], and as [`lz77::block::decode`] for the block and `shared`.
pub unsafe fn decompress_chunk_in_block<B: Block, W: Warp>(
    threads: &B,
    warp: &W,
    block: *const u8,
    in_len: usize,
    out: *mut u8,
    capacity: usize,
    shared: *mut u8,
) -> Result<usize, Status> {
    let stream = stream(block, in_len, out, capacity)?;
    unsafe { lz77::block::decode(threads, warp, &Lz4Syntax, &stream, 0, shared).map(|op| op as usize) }
}

/// The block of `in_len` bytes at `block` to decode into `out`.
fn stream(block: *const u8, in_len: usize, out: *mut u8, capacity: usize) -> Result<Stream, Status> {
    if in_len > u32::MAX as usize {
        return Err(Status::ChunkTooLarge);
    }
    // No block decodes to 4 GiB or more here, so a larger capacity changes nothing.
    Ok(Stream { block, end: in_len as u32, out, capacity: capacity.min(u32::MAX as usize) as u32 })
}

/// LZ4's sequences: a token, literal length bytes, literals, offset, match length bytes.
struct Lz4Syntax;

impl Syntax for Lz4Syntax {
    /// A sequence's offset lies past its literals, mostly beyond the 8 bytes of a head.
    const READS_HEAD: bool = false;
    const FILLS_CAPACITY: bool = false;

    #[inline(always)]
    fn sequence_at<const STAGED: bool>(&self, stream: &Stream<STAGED>, p: u32) -> Option<Parsed> {
        let end = stream.end;
        let token = stream.byte(p);
        let mut at = p + 1;
        let literals = bounded_length(stream, token >> 4, &mut at)?;
        let literals_at = at;
        if literals > end - literals_at {
            return None;
        }
        at = literals_at + literals;
        if at == end {
            return Some(Parsed { literals_at, literals, offset: 0, len: 0, next: end });
        }
        if end - at < 2 {
            return None;
        }
        let offset = stream.byte(at) | stream.byte(at + 1) << 8;
        at += 2;
        let len = bounded_length(stream, token & 15, &mut at)? + lz4::MIN_MATCH as u32;
        // A sequence with a match is never the last.
        (at < end).then_some(Parsed { literals_at, literals, offset, len, next: at })
    }

    #[inline(always)]
    fn short_sequence(&self, stream: &Stream, p: u32, _: u64) -> Option<Parsed> {
        // A short sequence's header: at most SHORT_SEQUENCE bytes of output, and not the
        // block's last sequence.
        if p >= stream.end {
            return None;
        }
        let token = stream.byte(p);
        let mut at = p + 1;
        let literals = short_length(stream, token >> 4, &mut at);
        let literals_at = at;
        if literals > SHORT_SEQUENCE || literals_at + literals + 2 > stream.end {
            return None;
        }
        at = literals_at + literals;
        let offset = stream.byte(at) | stream.byte(at + 1) << 8;
        at += 2;
        let len = short_length(stream, token & 15, &mut at) + lz4::MIN_MATCH as u32;
        (literals + len <= SHORT_SEQUENCE).then_some(Parsed { literals_at, literals, offset, len, next: at })
    }

    unsafe fn decode_one<W: Warp>(
        &self,
        warp: &W,
        stream: &Stream,
        ip: &mut u32,
        op: &mut u32,
    ) -> Result<bool, Status> {
        let (end, capacity) = (stream.end, stream.capacity);
        let byte = |at: u32| stream.byte(at);
        if *ip >= end {
            return Err(Status::Truncated);
        }
        let token = byte(*ip);
        *ip += 1;
        let literals = extend_length(token >> 4, ip, end, byte)?;
        if literals > end - *ip {
            return Err(Status::Truncated);
        }
        let literals_at = *ip;
        *ip += literals;
        // The whole sequence is read before its output is checked, as the scalar decoder does,
        // so a sequence both truncated and too long for the output is `Truncated` on both.
        let matched = *ip != end;
        let (mut offset, mut len) = (0, 0);
        if matched {
            if end - *ip < 2 {
                return Err(Status::Truncated);
            }
            offset = byte(*ip) | byte(*ip + 1) << 8;
            *ip += 2;
            len = extend_length(token & 15, ip, end, byte)?.saturating_add(lz4::MIN_MATCH as u32);
        }
        if literals > capacity - *op {
            return Err(Status::OutputTooSmall);
        }
        unsafe { lz77::copy(warp, stream.block.add(literals_at as usize), stream.out.add(*op as usize), literals) };
        *op += literals;
        if !matched {
            return Ok(true);
        }
        if offset == 0 || offset > *op {
            return Err(Status::BadOffset);
        }
        if len > capacity - *op {
            return Err(Status::OutputTooSmall);
        }
        warp.sync(); // the literals are visible to every lane
        unsafe { lz77::copy_match(warp, stream.out, *op, offset, len) };
        *op += len;
        Ok(false)
    }
}

/// A length field read from `at` on, as [`extend_length`] does, but giving up (returning more
/// than [`SHORT_SEQUENCE`]) once it is longer than that or the block ends.
#[inline(always)]
fn short_length(stream: &Stream, nibble: u32, at: &mut u32) -> u32 {
    let mut len = nibble;
    if nibble == 15 {
        loop {
            if *at >= stream.end || len > SHORT_SEQUENCE {
                return SHORT_SEQUENCE + 1;
            }
            let b = stream.byte(*at);
            *at += 1;
            len += b;
            if b != 255 {
                break;
            }
        }
    }
    len
}

/// A length field read from `at` on, as [`extend_length`] does, but `None` where the block
/// ends within it or it is spelled in more than [`lz77::block::MAX_LENGTH_BYTES`] bytes.
#[inline(always)]
fn bounded_length<const STAGED: bool>(stream: &Stream<STAGED>, nibble: u32, at: &mut u32) -> Option<u32> {
    let mut len = nibble;
    if nibble == 15 {
        let limit = (*at + lz77::block::MAX_LENGTH_BYTES).min(stream.end);
        loop {
            if *at >= limit {
                return None;
            }
            // A run of 255s a word at a time where the input holds the whole aligned word.
            if (stream.block as usize + *at as usize).is_multiple_of(4) && limit - *at >= 4 {
                let word = stream.word(*at);
                if word == u32::MAX {
                    (*at, len) = (*at + 4, len + 4 * 255);
                    continue;
                }
            }
            let b = stream.byte(*at);
            *at += 1;
            len += b;
            if b != 255 {
                break;
            }
        }
    }
    Some(len)
}

/// A length field: the token's `nibble`, plus the bytes that follow it when it is 15.
#[inline(always)]
fn extend_length(nibble: u32, ip: &mut u32, end: u32, byte: impl Fn(u32) -> u32) -> Result<u32, Status> {
    let mut len = nibble;
    if nibble == 15 {
        loop {
            if *ip >= end {
                return Err(Status::Truncated);
            }
            let b = byte(*ip);
            *ip += 1;
            len = len.saturating_add(b); // saturated, it is still too long for any output
            if b != 255 {
                break;
            }
        }
    }
    Ok(len)
}

/// The batched entry points (`lz4_compress`, `lz4_decompress`, `lz4_decompressed_sizes`).
#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use crate::batch::{BlockDecompress, Chunk, ChunkKernels, Lanes, warp_shared};
    use crate::gpu::{HardwareBlock, HardwareWarp, dynamic_shared_memory};
    use ferrocomp_format::BatchArgs;

    /// A warp per chunk compresses (its hash table in shared memory) and decompresses; a thread
    /// per chunk walks the sequences for the decompressed size.
    pub struct Lz4;

    impl ChunkKernels for Lz4 {
        const COMPRESS: Lanes = Lanes::Warp;
        const DECOMPRESS: Lanes = Lanes::Warp;
        const SIZES: Lanes = Lanes::Thread;

        unsafe fn compress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let table = warp_shared::<u16>(HASH_ENTRIES);
            let data_type = DataType::from_id(args.options as u8).unwrap_or_default();
            unsafe {
                compress_chunk(warp, chunk.input, chunk.input_len, chunk.output, chunk.capacity, table, data_type)
            }
        }

        unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            unsafe { decompress_chunk(warp, chunk.input, chunk.input_len, chunk.output, chunk.capacity) }
        }

        unsafe fn decompressed_size(_: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            lz4::decompressed_size(unsafe { chunk.input() })
        }
    }

    crate::batch_kernels!(Lz4: lz4_compress, lz4_decompress, lz4_decompressed_sizes);

    impl BlockDecompress for Lz4 {
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

    crate::block_decompress_kernel!(Lz4: lz4_decompress_blocks);
}

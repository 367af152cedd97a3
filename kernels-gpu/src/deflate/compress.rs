//! Deflate compression on the GPU, a warp per chunk, writing the streams
//! `ferrocomp_format::deflate::compress` writes, byte for byte.
//!
//! The lanes find the parse together: level 1's is LZ4's warp parse
//! ([`crate::lz4::parse_chunk`], under `FAST_RULES`), levels 2 to 5 search hash chains 32
//! candidates or 32 positions at a time (`parse_chains`), and level 0 takes every byte as a
//! literal. They write its tokens into the scratch slot's [`Blocks`], a segment at a time. At
//! each segment's end the lanes count its symbols ([`count`]) and sum the estimates of its cost
//! and of the block's with it (`Estimate`, ten symbols a lane), and the first lane decides from
//! them, as the format crate's `Blocks::close_segment` does, whether it joins the block. To
//! write a block, the lanes sort its symbols by rank ([`build_lengths`]) and the first lane
//! builds the code lengths; the lanes sum the block's costs, hand out the codewords and write
//! the header's items and then the tokens into a [`WarpSink`] (Deflate's one bit stream,
//! [`BitStream`], or GDeflate's 32 sub-streams), or copy a stored block's bytes.

use super::canonical_codes;
use super::chains::parse_chains;
use crate::adler32::adler32_chunk;
use crate::crc32::crc32_chunk;
use crate::entropy::{BitStream, Field, NO_BIN, count, unrolled};
use crate::lz4::{SequenceEncoder, parse_chunk};
use crate::raw::bytes_mut;
use crate::warp::{WARP_SIZE, Warp};
use crate::{SHARED_BYTES_PER_BLOCK, blocks_per_sm};
use ferrocomp_format::Status;
use ferrocomp_format::deflate::block::{
    BitSink, BlockKind, BlockPlan, Freqs, NUM_SYMBOLS, StreamKind, block_type, choose_block, stored_cost,
    stored_pieces, symbol_bits, token, write_stored_header,
};
use ferrocomp_format::deflate::compress::{Blocks, CompressScratch, FAST_RULES, SEGMENT, match_pieces};
use ferrocomp_format::deflate::estimate::Estimate;
use ferrocomp_format::deflate::huffman::{LengthWork, MAX_CODE_LEN, lengths_of_sorted, sort_key};
use ferrocomp_format::deflate::tables::{
    FIXED_DIST_LENS, FIXED_LITLEN_LENS, NUM_DIST, NUM_LITLEN, dist_slot, length_slot_in,
};
use ferrocomp_format::deflate::{self, MAX_CHUNK_SIZE, PART_SIZE, Wrapper, wrapper};

/// Bytes of shared memory each warp of the compress kernel needs (level 1's hash table).
pub const COMPRESS_SHARED_BYTES_PER_WARP: usize = FAST_RULES.table_entries() * size_of::<u16>();
/// Warps per block of the compress kernel: as many as a block's shared memory holds tables for.
pub const COMPRESS_WARPS: u32 = (SHARED_BYTES_PER_BLOCK / COMPRESS_SHARED_BYTES_PER_WARP) as u32;
/// Blocks per SM the compress kernel's launch bounds ask for.
pub const COMPRESS_BLOCKS_PER_SM: u32 = blocks_per_sm(COMPRESS_WARPS, COMPRESS_SHARED_BYTES_PER_WARP);

/// Compresses the `n` bytes at `input` at `level` into one stream in `wrapper` at `out` (room
/// for `capacity` bytes); returns its size (every lane returns the same), or the status
/// `ferrocomp_format::deflate::compress` gives. `PARTS`: whether `n` may exceed one part
/// ([`PART_SIZE`]; else such a chunk is `ChunkTooLarge`), see [`compress_blocks`].
///
/// # Safety
/// `input` must be readable for `n` bytes, `out` writable for `capacity` bytes, `scratch` for a
/// [`CompressScratch`] and `table` for [`COMPRESS_SHARED_BYTES_PER_WARP`] bytes, none written by
/// anyone else meanwhile.
#[allow(clippy::too_many_arguments)]
pub unsafe fn compress_chunk<W: Warp, const PARTS: bool>(
    warp: &W,
    input: *const u8,
    n: usize,
    level: u8,
    wrapper: Wrapper,
    scratch: *mut CompressScratch,
    table: *mut u16,
    out: *mut u8,
    capacity: usize,
) -> Result<usize, Status> {
    let level = level.min(deflate::MAX_LEVEL);
    if n > if PARTS { MAX_CHUNK_SIZE } else { PART_SIZE } {
        return Err(Status::ChunkTooLarge);
    }
    let zlib_header = wrapper::zlib_header(level);
    let header: &[u8] = match wrapper {
        Wrapper::Raw => &[],
        Wrapper::Zlib => &zlib_header,
        Wrapper::Gzip => &wrapper::GZIP_HEADER,
    };
    let lane = warp.lane() as usize;
    if lane < header.len().min(capacity) {
        unsafe { *out.add(lane) = header[lane] };
    }
    // Safety: the caller's `out` is writable for `capacity` bytes.
    let mut stream = unsafe { BitStream::new(out.wrapping_add(header.len()), capacity.saturating_sub(header.len())) };
    unsafe { compress_blocks::<W, BitStream, PARTS>(warp, input, n, level, scratch, table, &mut stream)? };
    let len = header.len() + stream.finish(warp)?;
    let (trailer, trailer_len) = match wrapper {
        Wrapper::Raw => ([0; 8], 0),
        Wrapper::Zlib => (u64::from(unsafe { adler32_chunk(warp, input, n) }.swap_bytes()).to_le_bytes(), 4),
        Wrapper::Gzip => {
            let crc = unsafe { crc32_chunk(warp, input, n) };
            ((crc as u64 | (n as u64) << 32).to_le_bytes(), 8)
        }
    };
    if lane < trailer_len && len + lane < capacity {
        unsafe { *out.add(len + lane) = trailer[lane] };
    }
    let total = len + trailer_len;
    if total > capacity { Err(Status::OutputTooSmall) } else { Ok(total) }
}

/// Compresses the `n` bytes at `input` at `level` into `sink`, as the format crate's
/// `compress_blocks` does into its sink, a part of [`PART_SIZE`] bytes at a time: Deflate's and
/// GDeflate's compressors, which differ in their sinks alone. Without `PARTS`, `n` is at most one
/// part and the parts' loop is left out: so the batch kernels (`*_compress`, for nvCOMP's chunks
/// of 64 KiB and less) are compiled, while longer chunks have their own kernels
/// (`*_compress_parts`), because the loop's state held through the parse cost compression up to 17%
/// in spills (H100).
///
/// # Safety
/// As [`compress_chunk`]'s `input`, `scratch` and `table`.
pub unsafe fn compress_blocks<W: Warp, S: WarpSink, const PARTS: bool>(
    warp: &W,
    input: *const u8,
    n: usize,
    level: u8,
    scratch: *mut CompressScratch,
    table: *mut u16,
    sink: &mut S,
) -> Result<(), Status> {
    if !PARTS {
        return unsafe { compress_part(warp, input, n, level, scratch, table, sink, true) };
    }
    let mut start = 0;
    loop {
        let end = n.min(start + PART_SIZE);
        let last = end == n;
        unsafe { compress_part(warp, input.add(start), end - start, level, scratch, table, sink, last)? };
        if last {
            return Ok(());
        }
        start = end;
    }
}

/// Compresses one part (at most [`PART_SIZE`] bytes) into blocks in `sink`, its matches within
/// it; its last block is final if `last`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn compress_part<W: Warp, S: WarpSink>(
    warp: &W,
    input: *const u8,
    n: usize,
    level: u8,
    scratch: *mut CompressScratch,
    table: *mut u16,
    sink: &mut S,
    last: bool,
) -> Result<(), Status> {
    let blocks = unsafe { &raw mut (*scratch).blocks };
    if warp.lane() == 0 {
        unsafe { (*blocks).clear() };
    }
    warp.sync(); // the cleared counts are visible to every lane
    let mut writer = BlockWriter { warp, input, blocks, sink };
    let tokens = writer.tokens();
    let mut coder = TokenCoder { warp, tokens, writer: &mut writer, pos: 0, block_tokens: 0, seg_tokens: 0 };
    match level {
        0 => unsafe { coder.literals(input, n as u32) },
        1 => unsafe { parse_chunk(warp, input, n, table, FAST_RULES, &mut coder)? },
        _ => unsafe { parse_chains(warp, input, n, level, &raw mut (*scratch).matcher, &mut coder)? },
    }
    unsafe { coder.finish(n, last) };
    Ok(())
}

/// Where a warp writes blocks: Deflate's one bit stream ([`BitStream`]) or GDeflate's 32
/// sub-streams (`crate::gdeflate::compress::SubStreams`). Every lane makes each call.
pub trait WarpSink: StreamKind {
    /// Writes a Huffman block's header (`kind` fixed or dynamic, its code lengths in `plan`), as
    /// the format crate's `write_huffman_header`; ends with the block's codes in `plan`, visible
    /// to every lane.
    ///
    /// # Safety
    /// `plan` must be writable, by this warp alone.
    unsafe fn huffman_header<W: Warp>(&mut self, warp: &W, plan: *mut BlockPlan, kind: BlockKind, last: bool);

    /// Writes a stored block of the `len` (at most 65535) bytes at `data`, header included.
    ///
    /// # Safety
    /// `data` must be readable for `len` bytes.
    unsafe fn stored<W: Warp>(&mut self, warp: &W, data: *const u8, len: usize, last: bool);

    /// Writes a Huffman block's `count` tokens at `tokens` and its end-of-block code, in the codes
    /// of `plan`.
    ///
    /// # Safety
    /// `tokens` must be readable for `count` tokens.
    unsafe fn symbols<W: Warp>(&mut self, warp: &W, plan: &BlockPlan, tokens: *const u32, count: usize);
}

/// Gathers a chunk's tokens into segments and blocks: the counts the parse updates, kept in
/// registers, apart from the [`BlockWriter`] that closes segments and writes blocks. Every lane
/// makes each call, and holds the same counts.
struct TokenCoder<'a, 'w, W, S> {
    warp: &'w W,
    tokens: *mut u32,
    writer: &'a mut BlockWriter<'w, W, S>,
    /// Input offset of the next token (32 bits, as the parse's positions).
    pos: u32,
    /// The block's tokens and the segment's, as the first lane's `blocks` counts them.
    block_tokens: u32,
    seg_tokens: u32,
}

impl<W: Warp, S: WarpSink> TokenCoder<'_, '_, W, S> {
    /// Adds the `count` bytes at `literals` as literal tokens, 32 a step.
    unsafe fn literals(&mut self, literals: *const u8, count: u32) {
        let mut done = 0;
        while done < count {
            let k = (SEGMENT as u32 - self.seg_tokens).min(count - done);
            let at = unsafe { self.tokens.add((self.block_tokens + self.seg_tokens) as usize) };
            let from = unsafe { literals.add(done as usize) };
            self.warp.for_each_strided(k as usize, |i| unsafe { *at.add(i) = token(0, *from.add(i) as usize) });
            (done, self.seg_tokens, self.pos) = (done + k, self.seg_tokens + k, self.pos + k);
            if self.seg_tokens == SEGMENT as u32 {
                unsafe { self.close_segment() };
            }
        }
    }

    /// Adds a match of `len` bytes `dist` back, in pieces deflate can express.
    unsafe fn matched(&mut self, dist: u32, len: u32) {
        for piece in match_pieces(len as usize) {
            if self.warp.lane() == 0 {
                let at = (self.block_tokens + self.seg_tokens) as usize;
                unsafe { *self.tokens.add(at) = token(dist as usize, piece) };
            }
            (self.seg_tokens, self.pos) = (self.seg_tokens + 1, self.pos + piece as u32);
            if self.seg_tokens == SEGMENT as u32 {
                unsafe { self.close_segment() };
            }
        }
    }

    unsafe fn close_segment(&mut self) {
        let (pos, block_tokens, seg_tokens) = (self.pos as usize, self.block_tokens as usize, self.seg_tokens as usize);
        self.block_tokens = unsafe { self.writer.close_segment(pos, block_tokens, seg_tokens) } as u32;
        self.seg_tokens = 0;
    }

    /// Writes the part's last block (final if `last`), its `n` bytes all parsed.
    unsafe fn finish(&mut self, n: usize, last: bool) {
        if self.seg_tokens > 0 {
            unsafe { self.close_segment() };
        }
        let start = unsafe { self.writer.first_lane(|b| b.block_start) };
        unsafe { self.writer.write_block(self.block_tokens as usize, start, n, last) };
    }
}

/// Closes segments and writes blocks into the sink: the rare work, kept out of the parse's loop
/// (and its registers).
struct BlockWriter<'w, W, S> {
    warp: &'w W,
    input: *const u8,
    blocks: *mut Blocks,
    sink: &'w mut S,
}

impl<W: Warp, S: WarpSink> BlockWriter<'_, W, S> {
    fn tokens(&self) -> *mut u32 {
        unsafe { &raw mut (*self.blocks).tokens as *mut u32 }
    }

    /// Ends the segment of `seg_tokens` tokens after the block's `block_tokens`, at input offset
    /// `pos`: the lanes count its symbols and estimate the costs, the first lane decides, and the
    /// block before it is written if it does not join it. Returns the block's tokens now.
    #[inline(never)]
    unsafe fn close_segment(&mut self, pos: usize, block_tokens: usize, seg_tokens: usize) -> usize {
        let warp = self.warp;
        warp.sync(); // the segment's tokens are visible to every lane
        let tokens = self.tokens();
        let seg = unsafe { &raw mut (*self.blocks).seg } as *mut u32;
        unsafe { count(warp, seg_tokens, |i| symbol_bins::<S>(*tokens.add(block_tokens + i)), seg) };
        warp.sync(); // the counts are visible to every lane
        let (seg_estimate, merged_estimate) = estimates(warp, unsafe { &*self.blocks });
        let write = warp.lane() == 0 && {
            let blocks = unsafe { &mut *self.blocks };
            blocks.seg_tokens = seg_tokens;
            blocks.close_estimated_segment(&*self.sink, pos, seg_estimate, merged_estimate)
        };
        if warp.ballot(write) != 0 {
            let (start, end) = unsafe { (self.first_lane(|b| b.block_start), self.first_lane(|b| b.seg_start)) };
            unsafe { self.write_block(block_tokens, start, end, false) };
            // A block written here holds whole segments, so the segment does not overlap where it goes.
            warp.for_each_strided(seg_tokens, |i| unsafe { *tokens.add(i) = *tokens.add(block_tokens + i) });
            warp.sync();
            if warp.lane() == 0 {
                unsafe { (*self.blocks).start_block(pos) };
            }
        }
        warp.sync();
        unsafe { self.first_lane(|b| b.block_tokens) }
    }

    /// `field` of the first lane's `blocks`, in every lane.
    unsafe fn first_lane(&self, field: impl Fn(&Blocks) -> usize) -> usize {
        let value = if self.warp.lane() == 0 { field(unsafe { &*self.blocks }) } else { 0 };
        self.warp.shuffle(value as u32, 0) as usize
    }

    /// Writes the block of the first `count` tokens, which encode the input's bytes `start..end`,
    /// as the format crate's `write_block` does.
    #[inline(never)]
    unsafe fn write_block(&mut self, count: usize, start: usize, end: usize, last: bool) {
        let (warp, lane) = (self.warp, self.warp.lane());
        let blocks = self.blocks;
        let plan = unsafe { &raw mut (*blocks).plan };
        let f = unsafe { &raw const (*blocks).block };
        unsafe {
            let (lit, dist, work) = (&raw mut (*plan).lit_lens, &raw mut (*plan).dist_lens, &raw mut (*plan).work);
            build_lengths(warp, &raw const (*f).lit as _, NUM_LITLEN, lit as _, work);
            build_lengths(warp, &raw const (*f).dist as _, NUM_DIST, dist as _, work);
        }
        let (dynamic, fixed) = unsafe { symbol_costs(warp, &*plan, &*f) };
        let kind = if lane == 0 {
            let header = unsafe { (*plan).header_cost() };
            choose_block(&*self.sink, header + dynamic, fixed, end - start)
        } else {
            BlockKind::Stored
        };
        let kind = match warp.shuffle(kind as u32, 0) {
            0 => BlockKind::Stored,
            1 => BlockKind::Fixed,
            _ => BlockKind::Dynamic,
        };
        if kind == BlockKind::Stored {
            let mut pieces = stored_pieces(end - start).peekable();
            while let Some(piece) = pieces.next() {
                let last_piece = last && pieces.peek().is_none();
                unsafe { self.sink.stored(warp, self.input.add(start + piece.start), piece.len(), last_piece) };
            }
            return;
        }
        unsafe {
            self.sink.huffman_header(warp, plan, kind, last);
            self.sink.symbols(warp, &*plan, self.tokens(), count);
        }
    }
}

impl<W: Warp, S: WarpSink> SequenceEncoder for TokenCoder<'_, '_, W, S> {
    unsafe fn sequence(
        &mut self,
        literals: *const u8,
        count: usize,
        offset: usize,
        match_len: usize,
    ) -> Result<(), Status> {
        unsafe {
            self.literals(literals, count as u32);
            self.matched(offset as u32, match_len as u32);
        }
        Ok(())
    }

    unsafe fn last_literals(&mut self, literals: *const u8, count: usize) -> Result<(), Status> {
        unsafe { self.literals(literals, count as u32) };
        Ok(())
    }
}

/// The format's `build_lengths` of the `syms` counts at `freqs` (at most 288) into `lens`, with
/// codes of at most `MAX_CODE_LEN` bits: each lane ranks its nine symbols among the used ones
/// (all keys differ), so that the sorted keys land in `work` at once, and the first lane builds
/// the code from them.
///
/// # Safety
/// `freqs` must be readable for `syms` counts; `lens` (`syms` bytes) and `work` writable, by
/// this warp alone.
pub unsafe fn build_lengths<W: Warp>(warp: &W, freqs: *const u32, syms: usize, lens: *mut u8, work: *mut LengthWork) {
    const PER_LANE: usize = 288 / WARP_SIZE as usize;
    let lane = warp.lane() as usize;
    let mut keys = [0; PER_LANE];
    unrolled::<PER_LANE>(|k| {
        let sym = lane + k * WARP_SIZE as usize;
        if sym < syms {
            keys[k] = sort_key(sym, unsafe { *freqs.add(sym) });
            unsafe { *lens.add(sym) = 0 };
        }
    });
    let (mut ranks, mut n) = ([0u32; PER_LANE], 0);
    unrolled::<PER_LANE>(|k| {
        let mut used = warp.ballot(keys[k] != 0);
        n += used.count_ones() as usize;
        while used != 0 {
            let other = warp.shuffle(keys[k], used.trailing_zeros());
            used &= used - 1;
            unrolled::<PER_LANE>(|j| ranks[j] += (other < keys[j]) as u32);
        }
    });
    let sorted = unsafe { &raw mut (*work).keys } as *mut u32;
    unrolled::<PER_LANE>(|k| {
        if keys[k] != 0 {
            unsafe { *sorted.add(ranks[k] as usize) = keys[k] };
        }
    });
    warp.sync(); // the sorted keys and the zeroed lengths are visible to the first lane
    if lane == 0 {
        unsafe { lengths_of_sorted(n, MAX_CODE_LEN, bytes_mut(lens, syms), &mut *work) };
    }
    warp.sync(); // the lengths are visible to every lane
}

/// The cost estimates of the segment and of the block with it, each lane adding every 32nd
/// symbol and the warp summing the lanes'.
fn estimates<W: Warp>(warp: &W, blocks: &Blocks) -> (Estimate, Estimate) {
    let symbols = || (warp.lane() as usize..NUM_SYMBOLS).step_by(WARP_SIZE as usize);
    let (mut seg, mut merged) = (Estimate::default(), Estimate::default());
    seg.add_symbols(&[&blocks.seg], symbols());
    merged.add_symbols(&[&blocks.block, &blocks.seg], symbols());
    let sum = |value| warp.reduce_add(value);
    (seg.map(sum), merged.map(sum))
}

/// The format's `BlockPlan::ready_codes` of a block of `kind`, warp-wide: the first lane readies
/// the lengths and the precode, the warp the symbols' codewords. Ends with them visible to every
/// lane.
///
/// # Safety
/// `plan` must be writable, by this warp alone.
pub(crate) unsafe fn ready_codes<W: Warp>(warp: &W, plan: *mut BlockPlan, kind: BlockKind) {
    if warp.lane() == 0 {
        unsafe { (*plan).ready_lengths(kind) };
    }
    warp.sync(); // the lengths are visible to every lane
    // Over the whole alphabets, as the format's: the fixed code's two unused literal/length
    // symbols have 8-bit codes, which come before the 9-bit ones.
    let (lit_symbols, dist_symbols) = (FIXED_LITLEN_LENS.len(), FIXED_DIST_LENS.len());
    unsafe {
        canonical_codes(warp, &raw const (*plan).lit_lens as _, lit_symbols, &raw mut (*plan).lit_codes as _);
        canonical_codes(warp, &raw const (*plan).dist_lens as _, dist_symbols, &raw mut (*plan).dist_codes as _);
    }
    warp.sync(); // the codes are visible to every lane
}

/// The bits of the symbols of a block with counts `f`, in the codes of `plan`'s lengths and in
/// the fixed code (with its 3-bit header, as `fixed_cost`), each lane adding every 32nd symbol.
fn symbol_costs<W: Warp>(warp: &W, plan: &BlockPlan, f: &Freqs) -> (u64, u64) {
    let (mut dynamic, mut fixed) = (0, 0);
    for sym in (warp.lane() as usize..NUM_SYMBOLS).step_by(WARP_SIZE as usize) {
        dynamic += symbol_bits(f, &plan.lit_lens, &plan.dist_lens, sym);
        fixed += symbol_bits(f, &FIXED_LITLEN_LENS, &FIXED_DIST_LENS, sym);
    }
    (warp.reduce_add(dynamic) as u64, 3 + warp.reduce_add(fixed) as u64)
}

/// The counts a token adds to, as indices into a `Freqs` (its literal/length symbol's, then
/// its distance symbol's or none), as `Freqs::count` counts it in a stream of `S`'s kind.
#[inline(always)]
fn symbol_bins<S: StreamKind>(tok: u32) -> [u32; 2] {
    let (dist, v) = ((tok >> 16) as usize, (tok & 0xFFFF) as usize);
    if dist == 0 {
        [(v & 255) as u32, NO_BIN]
    } else {
        [(257 + length_slot_in(v, S::DEFLATE64)) as u32, (NUM_LITLEN + dist_slot(dist)) as u32]
    }
}

/// A token's codes, with their extra bits, in the block `plan` codes, in a stream of `S`'s
/// kind: a literal's code and an empty field, or a match's length and distance.
#[inline(always)]
pub(crate) fn token_fields<S: StreamKind>(plan: &BlockPlan, tok: u32) -> [Field; 2] {
    let (dist, v) = ((tok >> 16) as usize, (tok & 0xFFFF) as usize);
    if dist == 0 { [plan.literal(v as u8), (0, 0)] } else { plan.matched::<S>(v, dist) }
}

impl StreamKind for BitStream {
    const DEFLATE64: bool = false;

    fn stored_cost(&self, len: usize) -> u64 {
        stored_cost(self.bit_len(), len)
    }
}

/// Deflate's sink: the first lane writes a block's first three bits and a stored block's header
/// (through `LaneSink`) and shares the stream; the lanes write the header's items and the tokens
/// 32 at a time, and a stored block's bytes.
impl WarpSink for BitStream {
    unsafe fn huffman_header<W: Warp>(&mut self, warp: &W, plan: *mut BlockPlan, kind: BlockKind, last: bool) {
        unsafe { ready_codes(warp, plan, kind) };
        let plan = unsafe { &*plan };
        let lane = warp.lane() as usize;
        if lane == 0 {
            let (bits, n) = block_type(kind, last);
            self.put(bits, n);
        }
        self.share(warp, 0);
        if kind == BlockKind::Dynamic {
            let counts = if lane == 0 { plan.code_counts() } else { (0, 0) };
            self.write(warp, [counts, if lane < plan.precode_items() { plan.precode_item(lane) } else { (0, 0) }]);
            let items = plan.length_items();
            for base in (0..items).step_by(WARP_SIZE as usize) {
                let k = base + lane;
                self.write(warp, [if k < items { plan.length_item(k) } else { (0, 0) }]);
            }
        }
    }

    unsafe fn stored<W: Warp>(&mut self, warp: &W, data: *const u8, len: usize, last: bool) {
        if warp.lane() == 0 {
            write_stored_header(&mut LaneSink(self), len, last);
        }
        self.share(warp, 0);
        unsafe { self.bytes(warp, data, len) };
    }

    unsafe fn symbols<W: Warp>(&mut self, warp: &W, plan: &BlockPlan, tokens: *const u32, count: usize) {
        let lane = warp.lane() as usize;
        for base in (0..count).step_by(WARP_SIZE as usize) {
            let i = base + lane;
            let fields = if i < count { token_fields::<Self>(plan, unsafe { *tokens.add(i) }) } else { [(0, 0); 2] };
            self.write(warp, fields);
        }
        if lane == 0 {
            let (code, n) = plan.end_of_block();
            self.put(code, n);
        }
        self.share(warp, 0);
    }
}

/// The stream as one lane writes it: the format crate's block headers go through it, and the
/// lane then shares the stream ([`BitStream::share`]).
struct LaneSink<'s>(&'s mut BitStream);

impl StreamKind for LaneSink<'_> {
    const DEFLATE64: bool = false;

    fn stored_cost(&self, len: usize) -> u64 {
        self.0.stored_cost(len)
    }
}

impl BitSink for LaneSink<'_> {
    fn restart(&mut self) {}

    fn header(&mut self, bits: u32, n: u32) {
        self.0.put(bits, n);
    }

    fn item(&mut self, bits: u32, n: u32) {
        self.0.put(bits, n);
    }

    fn literal(&mut self, code: u32, n: u32) {
        self.0.put(code, n);
    }

    fn matched(&mut self, length: u32, length_n: u32, dist: u32, dist_n: u32) {
        self.0.put(length, length_n);
        self.0.put(dist, dist_n);
    }

    fn end_of_block(&mut self, code: u32, n: u32) {
        self.0.put(code, n);
    }

    fn stored_header(&mut self, len: u16) {
        let padding = (8 - self.0.bit_len() % 8) % 8;
        self.0.put(0, padding as u32);
        self.0.put(len as u32 | ((!len as u32) << 16), 32);
    }

    fn stored_bytes(&mut self, data: &[u8]) {
        for &byte in data {
            self.0.put(byte as u32, 8);
        }
    }
}

//! GDeflate, the format of DirectStorage and nvCOMP: deflate blocks whose bits are dealt out to
//! 32 sub-streams so that 32 lanes can decode in parallel, one symbol each per round
//! (docs/FORMAT.md, "GDeflate", describes the layout). A chunk is one GDeflate *page*, with no
//! header, as DirectStorage's tiles and nvCOMP's batched chunks are: those hold at most 64 KiB,
//! and nvCOMP's single-chunk bitstreams more, which [`compress`] writes as Deflate's compressor
//! does, a part of 64 KiB at a time.
//!
//! Everything above the bit layout is deflate's: the same parsers, block choice and Huffman
//! codes ([`deflate::block::BitSink`]) and the same header decoding ([`BitSource`]); this module
//! only says where each item's bits go.

use crate::Status;
use crate::deflate::block::{BitSink, StreamKind};
use crate::deflate::inflate::{BitSource, Block, CountOut, Output, SliceOut, Symbol, litlen, read_block_header};
use crate::deflate::{self, CompressScratch, DecodeTables, MAX_DECOMPRESSED_CHUNK_SIZE};

/// Sub-streams, one per lane of a warp.
pub const LANES: usize = 32;
/// Largest input [`compress`] accepts (as Deflate's).
pub const MAX_CHUNK_SIZE: usize = deflate::MAX_CHUNK_SIZE;
/// Bits a sub-stream reads at a time, as a little-endian u32.
const PACKET_BITS: u32 = 32;
/// A lane refills when it holds fewer bits than this.
const LOW_WATER: u32 = 32;

/// Largest page [`compress`] writes for `len` input bytes: every block stored (19 bits per
/// stored block of at most 65535 bytes, a block per 4096 tokens at least but for each part's
/// last), plus each sub-stream's partly filled packets (at most 63 bits each).
pub const fn max_compressed_size(len: usize) -> usize {
    len + 3 * (len / 4096 + len / 65535 + deflate::extra_parts(len) + 3) + 256
}

/// Largest size `compressed_len` bytes can decode to (a Deflate64 match of 65538 bytes costs at
/// least 18 bits), capped at [`deflate::MAX_DECOMPRESSED_CHUNK_SIZE`].
pub const fn max_decompressed_size(compressed_len: usize) -> usize {
    let bound = compressed_len.saturating_mul(65538 * 8 / 18 + 1);
    if bound < MAX_DECOMPRESSED_CHUNK_SIZE { bound } else { MAX_DECOMPRESSED_CHUNK_SIZE }
}

/// Compresses `input` (at most [`MAX_CHUNK_SIZE`] bytes) at `level` (as [`deflate::compress`](fn@deflate::compress))
/// into one page in `out`; returns its size.
pub fn compress(input: &[u8], level: u8, scratch: &mut CompressScratch, out: &mut [u8]) -> Result<usize, Status> {
    if input.len() > MAX_CHUNK_SIZE {
        return Err(Status::ChunkTooLarge);
    }
    let mut sink = SubStreamWriter::new(out);
    deflate::compress::compress_blocks(input, level.min(deflate::MAX_LEVEL), scratch, &mut sink);
    sink.finish()
}

/// Decompresses one page into `out`; returns the bytes written. Bytes after the page's last
/// packet must be zero (padding).
pub fn decompress(input: &[u8], out: &mut [u8], tables: &mut DecodeTables) -> Result<usize, Status> {
    let mut sink = SliceOut { out, len: 0 };
    decode(input, &mut sink, tables)?;
    Ok(sink.len)
}

/// The size a page decodes to, found by decoding it without writing (same checks as
/// [`decompress`]). Above [`deflate::MAX_DECOMPRESSED_CHUNK_SIZE`]: `ChunkTooLarge`.
pub fn decompressed_size(input: &[u8], tables: &mut DecodeTables) -> Result<usize, Status> {
    let mut count = CountOut { len: 0, limit: MAX_DECOMPRESSED_CHUNK_SIZE };
    decode(input, &mut count, tables)?;
    Ok(count.len)
}

fn decode<O: Output>(input: &[u8], out: &mut O, tables: &mut DecodeTables) -> Result<(), Status> {
    let mut s = SubStreams::new(input)?;
    loop {
        let (block, last) = read_block_header(&mut s, tables)?;
        match block {
            Block::Stored => s.stored(out)?,
            Block::Huffman => s.huffman_block(tables, out)?,
        }
        s.finish_block(tables, out)?;
        if last {
            break;
        }
    }
    match input.get(s.next..) {
        Some(rest) if rest.iter().all(|&b| b == 0) => Ok(()),
        _ => Err(Status::Malformed),
    }
}

/// One sub-stream as its decoding lane holds it: a 64-bit window on its bits, and a match whose
/// distance is due in the lane's next turn.
#[derive(Clone, Copy, Default)]
struct Lane {
    /// The next `bits` bits of the sub-stream, first in bit 0.
    buf: u64,
    bits: u32,
    /// Length of the match waiting for its distance (0: none), and where its bytes go.
    pending_len: u32,
    pending_at: u32,
}

/// The decoder's view of a page: 32 lanes and a cursor. Items are read from lane `lane`; after
/// each, the lane refills from the page if it holds fewer than 32 bits, taking the next packet,
/// and the cursor moves on. A warp decodes a round at once and orders the refills by lane.
struct SubStreams<'a> {
    input: &'a [u8],
    /// Where the next packet starts.
    next: usize,
    lanes: [Lane; LANES],
    lane: usize,
}

impl<'a> SubStreams<'a> {
    /// LEN (16 bits, no NLEN, no alignment) from lane 0, then the bytes, one per lane in turn
    /// starting with lane 0.
    fn stored<O: Output>(&mut self, out: &mut O) -> Result<(), Status> {
        let len = self.bits(16)?;
        for _ in 0..len {
            let byte = self.bits(8)?;
            out.push(byte as u8)?;
            self.next_item()?;
        }
        Ok(())
    }

    /// The page's first 32 packets, one per lane.
    fn new(input: &'a [u8]) -> Result<Self, Status> {
        let mut s = Self { input, next: 0, lanes: [Lane::default(); LANES], lane: 0 };
        for lane in 0..LANES {
            s.refill(lane)?;
        }
        Ok(s)
    }

    #[inline(always)]
    fn refill(&mut self, lane: usize) -> Result<(), Status> {
        let l = &mut self.lanes[lane & (LANES - 1)];
        if l.bits < LOW_WATER {
            let word = self.input.get(self.next..self.next + 4).ok_or(Status::Truncated)?;
            l.buf |= (u32::from_le_bytes([word[0], word[1], word[2], word[3]]) as u64) << l.bits;
            l.bits += PACKET_BITS;
            self.next += 4;
        }
        Ok(())
    }

    #[inline(always)]
    fn current(&mut self) -> &mut Lane {
        &mut self.lanes[self.lane & (LANES - 1)]
    }

    /// The current lane's turn in a round of a Huffman block: the distance of its pending
    /// match, or else its next literal/length symbol. `Ok(false)` at the end-of-block symbol.
    #[inline(always)]
    fn step<O: Output>(&mut self, t: &DecodeTables, out: &mut O) -> Result<bool, Status> {
        let (len, at) = (self.current().pending_len, self.current().pending_at);
        if len != 0 {
            let dist = self.distance(t)?;
            out.copy_at(at as usize, dist, len as usize)?;
            self.current().pending_len = 0;
            return Ok(true);
        }
        match litlen(self, t)? {
            Symbol::Literal(byte) => out.push(byte)?,
            Symbol::Length(len) => {
                let at = out.reserve(len)?;
                let lane = self.current();
                (lane.pending_len, lane.pending_at) = (len as u32, at as u32);
            }
            Symbol::End => return Ok(false),
        }
        Ok(true)
    }

    /// Decodes rounds from lane 0 until some lane reads the end-of-block symbol.
    fn huffman_block<O: Output>(&mut self, t: &DecodeTables, out: &mut O) -> Result<(), Status> {
        loop {
            for _ in 0..LANES {
                if !self.step(t, out)? {
                    return Ok(());
                }
                self.next_item()?;
            }
        }
    }

    /// After a block: one more turn for each lane from the current one, in which lanes with a
    /// pending match read its distance (and every lane refills).
    fn finish_block<O: Output>(&mut self, t: &DecodeTables, out: &mut O) -> Result<(), Status> {
        for _ in 0..LANES {
            if self.current().pending_len != 0 {
                self.step(t, out)?;
            }
            self.next_item()?;
        }
        Ok(())
    }
}

impl BitSource for SubStreams<'_> {
    const DEFLATE64: bool = true;

    #[inline(always)]
    fn peek(&mut self) -> u64 {
        self.current().buf
    }

    #[inline(always)]
    fn consume(&mut self, n: u32) -> Result<(), Status> {
        let lane = self.current();
        // A lane holds 32 bits before each item and no item is longer; only a broken stream
        // could ask for more.
        if n > lane.bits {
            return Err(Status::Malformed);
        }
        lane.buf >>= n;
        lane.bits -= n;
        Ok(())
    }

    fn ensure(&mut self) -> Result<(), Status> {
        self.refill(self.lane)
    }

    #[inline(always)]
    fn next_item(&mut self) -> Result<(), Status> {
        self.refill(self.lane)?;
        self.lane = (self.lane + 1) & (LANES - 1);
        Ok(())
    }

    fn restart(&mut self) {
        self.lane = 0;
    }
}

/// One sub-stream as the writer fills it: bits not yet written out, the packet they go to, the
/// one reserved after it, and how many bits the decoder's lane holds at this point (so that
/// packets are reserved exactly when the decoder refills). A warp's lane holds one of these, the
/// scalar writer all 32.
#[derive(Clone, Copy)]
pub struct SubStream {
    buf: u64,
    count: u32,
    /// Offset of the packet being filled, and of the one reserved after it (`NONE`: none yet).
    slot: u32,
    next_slot: u32,
    lane_bits: u32,
}

const NONE: u32 = u32::MAX;

impl SubStream {
    /// The sub-stream of the page's `lane`th packet, which the decoder's lane starts with.
    pub fn new(lane: usize) -> Self {
        Self { buf: 0, count: 0, slot: (lane * 4) as u32, next_slot: NONE, lane_bits: PACKET_BITS }
    }

    /// Packets (0, 1 or 2) that [`SubStream::add`] of `n` bits reserves.
    #[inline(always)]
    pub fn packets_needed(&self, n: u32) -> u32 {
        let full = self.count + n >= PACKET_BITS;
        let first = full && self.next_slot == NONE;
        let next_after = if full { NONE } else { self.next_slot };
        let lane_bits = self.lane_bits - n + if first { PACKET_BITS } else { 0 };
        first as u32 + (lane_bits < LOW_WATER && next_after == NONE) as u32
    }

    /// Appends `n` ≤ 31 bits, taking the packets it reserves from offset `fresh` on; returns
    /// the packet it fills, if any, as (offset, word).
    #[inline(always)]
    pub fn add(&mut self, bits: u32, n: u32, mut fresh: u32) -> Option<(u32, u32)> {
        let mut reserve = || {
            fresh += 4;
            fresh - 4
        };
        self.buf |= (bits as u64) << self.count;
        self.count += n;
        self.lane_bits -= n;
        let mut filled = None;
        if self.count >= PACKET_BITS {
            if self.next_slot == NONE {
                self.next_slot = reserve();
                self.lane_bits += PACKET_BITS;
            }
            filled = Some((self.slot, self.buf as u32));
            self.buf >>= PACKET_BITS;
            self.count -= PACKET_BITS;
            (self.slot, self.next_slot) = (self.next_slot, NONE);
        }
        // The decoder refills here: the packet it will read is the next one of the page.
        if self.lane_bits < LOW_WATER && self.next_slot == NONE {
            self.next_slot = reserve();
            self.lane_bits += PACKET_BITS;
        }
        filled
    }

    /// The packets the page ends with: the one being filled, with its bits, and the one
    /// reserved after it, if any, empty. (offset, word) each.
    pub fn last_packets(&self) -> [Option<(u32, u32)>; 2] {
        [Some((self.slot, self.buf as u32)), (self.next_slot != NONE).then_some((self.next_slot, 0))]
    }
}

/// Bits that storing `len` bytes takes in a page, in blocks of at most 65535 bytes.
pub fn stored_cost(len: usize) -> u64 {
    let mut bits = 3 + STORED_LEN_BITS as u64 + 8 * len as u64;
    let mut rest = len;
    while rest > 65535 {
        rest -= 65535;
        bits += 3 + STORED_LEN_BITS as u64;
    }
    bits
}

/// A stored block's LEN: 16 bits, no NLEN, no alignment.
pub const STORED_LEN_BITS: u32 = 16;

/// A match's distance code and extra bits, due in its lane's turn in round `round` (0: none).
#[derive(Clone, Copy, Default)]
struct Due {
    bits: u32,
    n: u32,
    round: u32,
}

/// GDeflate's [`BitSink`]: a page of 32 sub-streams. Block headers go to sub-stream 0; the
/// items of a dynamic header go to the sub-streams in turn from 0; the symbols go in rounds,
/// one per lane, a match's distance to the same lane one round after its length.
struct SubStreamWriter<'a> {
    out: &'a mut [u8],
    lanes: [SubStream; LANES],
    due: [Due; LANES],
    /// Where the next reserved packet goes.
    next: usize,
    lane: usize,
    round: u32,
}

impl<'a> SubStreamWriter<'a> {
    fn new(out: &'a mut [u8]) -> Self {
        let lanes = core::array::from_fn(SubStream::new);
        Self { out, lanes, due: [Due::default(); LANES], next: LANES * 4, lane: 0, round: 1 }
    }

    fn write(&mut self, (at, word): (u32, u32)) {
        if let Some(dst) = self.out.get_mut(at as usize..at as usize + 4) {
            dst.copy_from_slice(&word.to_le_bytes());
        }
    }

    /// Appends `n` ≤ 31 bits to the current lane.
    fn add(&mut self, bits: u32, n: u32) {
        let lane = &mut self.lanes[self.lane & (LANES - 1)];
        let fresh = self.next as u32;
        self.next += 4 * lane.packets_needed(n) as usize;
        if let Some(packet) = lane.add(bits, n, fresh) {
            self.write(packet);
        }
    }

    fn advance(&mut self) {
        self.lane = (self.lane + 1) & (LANES - 1);
        if self.lane == 0 {
            self.round += 1;
        }
    }

    /// Writes the distance due in this round for the current lane, if any.
    fn take_due(&mut self, round: u32) -> bool {
        let due = self.due[self.lane];
        if round == 0 || due.round != round {
            return false;
        }
        self.due[self.lane].round = 0;
        self.add(due.bits, due.n);
        true
    }

    /// Writes the distances due in this round for the lanes from the current one on, each
    /// taking its lane's turn.
    fn due_distances(&mut self) {
        while self.take_due(self.round - 1) {
            self.advance();
        }
    }

    /// Flushes every lane's last bits; returns the page size. Every packet reserved is written,
    /// the last at `next - 4`: the page fits if that one did.
    fn finish(mut self) -> Result<usize, Status> {
        for n in 0..LANES {
            for packet in self.lanes[n].last_packets().into_iter().flatten() {
                self.write(packet);
            }
        }
        if self.next > self.out.len() { Err(Status::OutputTooSmall) } else { Ok(self.next) }
    }
}

impl StreamKind for SubStreamWriter<'_> {
    const DEFLATE64: bool = true;

    fn stored_cost(&self, len: usize) -> u64 {
        stored_cost(len)
    }
}

impl BitSink for SubStreamWriter<'_> {
    fn restart(&mut self) {
        self.lane = 0;
        self.round = 1;
        self.due = [Due::default(); LANES];
    }

    fn header(&mut self, bits: u32, n: u32) {
        self.add(bits, n);
    }

    fn item(&mut self, bits: u32, n: u32) {
        self.add(bits, n);
        self.advance();
    }

    fn literal(&mut self, code: u32, n: u32) {
        self.due_distances();
        self.add(code, n);
        self.advance();
    }

    fn matched(&mut self, length: u32, length_n: u32, dist: u32, dist_n: u32) {
        self.due_distances();
        self.add(length, length_n);
        self.due[self.lane] = Due { bits: dist, n: dist_n, round: self.round };
        self.advance();
    }

    /// The end-of-block code, then the last distances: those due this round for the lanes after
    /// it, and those due next round for the lanes before it.
    fn end_of_block(&mut self, code: u32, n: u32) {
        self.due_distances();
        self.add(code, n);
        self.advance();
        let (split, round) = (self.lane, self.round);
        for lane in (split..LANES).chain(0..split) {
            self.lane = lane;
            self.take_due(if lane >= split { round - 1 } else { round });
        }
    }

    fn stored_header(&mut self, len: u16) {
        self.add(len as u32, STORED_LEN_BITS);
    }

    fn stored_bytes(&mut self, data: &[u8]) {
        for &byte in data {
            self.add(byte as u32, 8);
            self.advance();
        }
    }
}

//! Writing blocks: choosing stored, fixed or dynamic by exact bit cost, building the dynamic
//! header (code lengths run-length coded with the precode), and emitting every item through a
//! [`BitSink`], which decides where its bits go. [`BitWriter`] is plain deflate's sink.

use super::huffman::{LengthWork, MAX_CODE_LEN, MAX_PRECODE_LEN, build_lengths, canonical_codes};
use super::tables::{
    DIST_BASE, DIST_EXTRA, END_OF_BLOCK, FIXED_DIST_LENS, FIXED_LITLEN_LENS, LENGTH_BASE, LENGTH_EXTRA, NUM_DIST,
    NUM_LITLEN, PRECODE_EXTRA, PRECODE_ORDER, dist_slot, length_slot_in,
};
use crate::Status;

/// What choosing a block needs to know of the stream it goes to.
pub trait StreamKind {
    /// Whether the stream is Deflate64 (GDeflate), where symbol 285 is not length 258.
    const DEFLATE64: bool;

    /// Bits that storing `len` bytes would take here, in blocks of at most 65535, headers included.
    fn stored_cost(&self, len: usize) -> u64;
}

/// Receives a block's items in stream order, each named for what it is. Plain deflate writes
/// them LSB-first one after another; GDeflate deals them out to its 32 sub-streams.
pub trait BitSink: StreamKind {
    /// Starts a group of items (block header, code lengths, symbols) at sub-stream 0.
    fn restart(&mut self);
    /// Header bits: BFINAL and BTYPE (3 bits), or a dynamic block's HLIT/HDIST/HCLEN (14 bits).
    fn header(&mut self, bits: u32, n: u32);
    /// One item of a dynamic header: a 3-bit precode length, or a code-length symbol with its
    /// extra bits (`bits` holds both, the code first).
    fn item(&mut self, bits: u32, n: u32);
    /// A literal's code.
    fn literal(&mut self, code: u32, n: u32);
    /// A match: the length code with its extra bits, then the distance code with its extra bits.
    fn matched(&mut self, length: u32, length_n: u32, dist: u32, dist_n: u32);
    /// The end-of-block code.
    fn end_of_block(&mut self, code: u32, n: u32);
    /// A stored block's LEN (and for deflate, byte alignment and NLEN), after its block header.
    fn stored_header(&mut self, len: u16);
    /// A stored block's bytes.
    fn stored_bytes(&mut self, data: &[u8]);
}

/// Largest stored block.
const MAX_STORED: usize = 65535;

/// Frequencies of one block's symbols; `lit[256]` (end of block) is always 1.
#[repr(C)]
pub struct Freqs {
    /// Counts of the literal/length symbols 0 to 285.
    pub lit: [u32; NUM_LITLEN],
    /// Counts of the distance symbols 0 to 29.
    pub dist: [u32; NUM_DIST],
}

impl Freqs {
    /// Zeroes the counts but end of block's (1), for a new block.
    pub fn clear(&mut self) {
        self.lit.fill(0);
        self.dist.fill(0);
        self.lit[END_OF_BLOCK] = 1;
    }

    /// Counts one token (see [`token`]) of a stream that is Deflate64 or not.
    #[inline(always)]
    pub fn count(&mut self, tok: u32, deflate64: bool) {
        let (dist, v) = ((tok >> 16) as usize, (tok & 0xFFFF) as usize);
        if dist == 0 {
            self.lit[v & 255] += 1;
        } else {
            self.lit[257 + length_slot_in(v, deflate64)] += 1;
            self.dist[dist_slot(dist)] += 1;
        }
    }

    /// Adds `other`'s counts.
    pub fn add(&mut self, other: &Freqs) {
        for (a, b) in self.lit.iter_mut().zip(other.lit.iter()) {
            *a += b;
        }
        for (a, b) in self.dist.iter_mut().zip(other.dist.iter()) {
            *a += b;
        }
        self.lit[END_OF_BLOCK] = 1;
    }
}

/// A literal (`dist` 0, `value` the byte) or a match (`value` its length), packed in a u32.
#[inline(always)]
pub const fn token(dist: usize, value: usize) -> u32 {
    ((dist as u32) << 16) | value as u32
}

/// Work space for one block's codes.
#[repr(C)]
pub struct BlockPlan {
    /// The literal/length code lengths, by symbol.
    pub lit_lens: [u8; 288],
    /// The distance code lengths, by symbol.
    pub dist_lens: [u8; 32],
    /// The literal/length codewords, bit-reversed (sent LSB first), from [`canonical_codes`].
    pub lit_codes: [u16; 288],
    /// The distance codewords, bit-reversed likewise.
    pub dist_codes: [u16; 32],
    pre_freq: [u32; 19],
    pre_lens: [u8; 19],
    pre_codes: [u16; 19],
    /// The code lengths' run-length items: precode symbol | extra value << 5.
    items: [u16; 320],
    n_items: u32,
    hlit: u32,
    hdist: u32,
    hclen: u32,
    /// Work space for building the codes.
    pub work: LengthWork,
}

impl BlockPlan {
    /// Builds the dynamic codes for `f` and returns the block's exact size in bits.
    pub fn dynamic_cost(&mut self, f: &Freqs) -> u64 {
        build_lengths(&f.lit, MAX_CODE_LEN, &mut self.lit_lens[..NUM_LITLEN], &mut self.work);
        build_lengths(&f.dist, MAX_CODE_LEN, &mut self.dist_lens[..NUM_DIST], &mut self.work);
        self.cost_of_lengths(f)
    }

    /// [`BlockPlan::dynamic_cost`], its literal/length and distance code lengths built (with
    /// `build_lengths` and [`MAX_CODE_LEN`]).
    pub fn cost_of_lengths(&mut self, f: &Freqs) -> u64 {
        self.header_cost() + symbol_cost(f, &self.lit_lens, &self.dist_lens)
    }

    /// The dynamic header's bits, its literal/length and distance code lengths built: readies
    /// the header (HLIT, HDIST, the code lengths' run-length items and their precode).
    pub fn header_cost(&mut self) -> u64 {
        let mut hlit = NUM_LITLEN;
        while hlit > 257 && self.lit_lens[hlit - 1] == 0 {
            hlit -= 1;
        }
        let mut hdist = NUM_DIST;
        while hdist > 1 && self.dist_lens[hdist - 1] == 0 {
            hdist -= 1;
        }
        self.hlit = hlit as u32;
        self.hdist = hdist as u32;
        self.run_length_items();
        build_lengths(&self.pre_freq, MAX_PRECODE_LEN, &mut self.pre_lens, &mut self.work);
        let mut hclen = 19;
        while hclen > 4 && self.pre_lens[PRECODE_ORDER[hclen - 1] as usize] == 0 {
            hclen -= 1;
        }
        self.hclen = hclen as u32;
        let mut bits = 3 + 14 + 3 * hclen as u64;
        for s in 0..19 {
            bits += self.pre_freq[s] as u64 * (self.pre_lens[s] + PRECODE_EXTRA[s]) as u64;
        }
        bits
    }

    /// Run-length codes the literal/length then distance code lengths with symbols 16, 17, 18.
    fn run_length_items(&mut self) {
        let (hlit, total) = (self.hlit as usize, (self.hlit + self.hdist) as usize);
        let len_at = |i: usize| if i < hlit { self.lit_lens[i] } else { self.dist_lens[i - hlit] };
        self.pre_freq = [0; 19];
        let mut n = 0;
        let mut push = |sym: u16, extra: usize, pre_freq: &mut [u32; 19]| {
            self.items[n] = sym | (extra << 5) as u16;
            pre_freq[sym as usize] += 1;
            n += 1;
        };
        let mut i = 0;
        while i < total {
            let len = len_at(i);
            let mut run = 1;
            while i + run < total && len_at(i + run) == len {
                run += 1;
            }
            i += run;
            if len == 0 {
                while run >= 11 {
                    let r = run.min(138);
                    push(18, r - 11, &mut self.pre_freq);
                    run -= r;
                }
                if run >= 3 {
                    push(17, run - 3, &mut self.pre_freq);
                    run = 0;
                }
            } else if run >= 4 {
                push(len as u16, 0, &mut self.pre_freq);
                run -= 1;
                while run >= 3 {
                    let r = run.min(6);
                    push(16, r - 3, &mut self.pre_freq);
                    run -= r;
                }
            }
            for _ in 0..run {
                push(len as u16, 0, &mut self.pre_freq);
            }
        }
        self.n_items = n as u32;
    }
}

/// Bits of a block's symbols (end of block included) with the given code lengths.
fn symbol_cost(f: &Freqs, lit_lens: &[u8; 288], dist_lens: &[u8; 32]) -> u64 {
    (0..NUM_SYMBOLS).map(|sym| symbol_bits(f, lit_lens, dist_lens, sym) as u64).sum()
}

/// Bits that symbol `sym` (numbered as [`NUM_SYMBOLS`] says) takes in a block with counts `f`
/// and the given code lengths, its extra bits included: a warp's lanes sum them.
#[inline(always)]
pub fn symbol_bits(f: &Freqs, lit_lens: &[u8; 288], dist_lens: &[u8; 32], sym: usize) -> u32 {
    if sym < NUM_LITLEN {
        let extra = if sym > 256 { LENGTH_EXTRA[sym - 257] } else { 0 };
        f.lit[sym] * (lit_lens[sym] + extra) as u32
    } else {
        let sym = sym - NUM_LITLEN;
        f.dist[sym] * (dist_lens[sym] + DIST_EXTRA[sym]) as u32
    }
}

/// Literal/length and distance symbols together, as
/// [`Estimate::add_symbols`](super::estimate::Estimate::add_symbols) numbers them.
pub const NUM_SYMBOLS: usize = NUM_LITLEN + NUM_DIST;

/// Bits of the block as a fixed-code block.
pub fn fixed_cost(f: &Freqs) -> u64 {
    3 + symbol_cost(f, &FIXED_LITLEN_LENS, &FIXED_DIST_LENS)
}

/// How a block is written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BlockKind {
    /// Its bytes as they are, in pieces of at most 65535.
    Stored,
    /// Huffman-coded with the fixed code.
    Fixed,
    /// Huffman-coded with codes of its own, sent in its header.
    Dynamic,
}

/// Chooses the smallest way to write a block of `bytes` input bytes with counts `f`, building
/// its dynamic codes in `plan` on the way.
pub fn plan_block<S: StreamKind>(sink: &S, plan: &mut BlockPlan, f: &Freqs, bytes: usize) -> BlockKind {
    choose_block(sink, plan.dynamic_cost(f), fixed_cost(f), bytes)
}

/// [`plan_block`]'s choice, given the block's bits with codes of its own and with the fixed code.
pub fn choose_block<S: StreamKind>(sink: &S, dynamic: u64, fixed: u64, bytes: usize) -> BlockKind {
    if sink.stored_cost(bytes) <= dynamic.min(fixed) {
        BlockKind::Stored
    } else if dynamic < fixed {
        BlockKind::Dynamic
    } else {
        BlockKind::Fixed
    }
}

/// Writes one block of `tokens` (which encode `data`) with counts `f`, as whichever block type
/// is smallest.
pub fn write_block<S: BitSink>(sink: &mut S, plan: &mut BlockPlan, f: &Freqs, tokens: &[u32], data: &[u8], last: bool) {
    let kind = plan_block(sink, plan, f, data.len());
    if kind == BlockKind::Stored {
        let mut pieces = stored_pieces(data.len()).peekable();
        while let Some(piece) = pieces.next() {
            write_stored_header(sink, piece.len(), last && pieces.peek().is_none());
            sink.stored_bytes(&data[piece]);
        }
        return;
    }
    write_huffman_header(sink, plan, kind, last);
    sink.restart();
    for &tok in tokens {
        let (dist, v) = ((tok >> 16) as usize, (tok & 0xFFFF) as usize);
        if dist == 0 {
            let (code, n) = plan.literal(v as u8);
            sink.literal(code, n);
        } else {
            let [(length, length_n), (distance, dist_n)] = plan.matched::<S>(v, dist);
            sink.matched(length, length_n, distance, dist_n);
        }
    }
    let (code, n) = plan.end_of_block();
    sink.end_of_block(code, n);
}

/// The byte ranges of a stored block of `len` bytes's pieces (one, empty, when `len` is 0).
pub fn stored_pieces(len: usize) -> impl Iterator<Item = core::ops::Range<usize>> {
    (0..len.div_ceil(MAX_STORED).max(1)).map(move |i| i * MAX_STORED..((i + 1) * MAX_STORED).min(len))
}

/// A stored piece's block header and length, before its `len` bytes.
pub fn write_stored_header<S: BitSink>(sink: &mut S, len: usize, last: bool) {
    sink.restart();
    let (bits, n) = block_type(BlockKind::Stored, last);
    sink.header(bits, n);
    sink.stored_header(len as u16);
}

/// A Huffman block's header (`kind` fixed or dynamic, its codes in `plan` from [`plan_block`]),
/// leaving in `plan` the codes its symbols take ([`BlockPlan::literal`] and the others).
pub fn write_huffman_header<S: BitSink>(sink: &mut S, plan: &mut BlockPlan, kind: BlockKind, last: bool) {
    plan.ready_codes(kind);
    sink.restart();
    let (bits, n) = block_type(kind, last);
    sink.header(bits, n);
    if kind == BlockKind::Dynamic {
        let (bits, n) = plan.code_counts();
        sink.header(bits, n);
        for k in 0..plan.precode_items() {
            let (bits, n) = plan.precode_item(k);
            sink.item(bits, n);
        }
        sink.restart();
        for k in 0..plan.length_items() {
            let (bits, n) = plan.length_item(k);
            sink.item(bits, n);
        }
    }
}

/// A block's first 3 bits: BFINAL and BTYPE.
pub fn block_type(kind: BlockKind, last: bool) -> (u32, u32) {
    let btype = match kind {
        BlockKind::Stored => 0,
        BlockKind::Fixed => 1,
        BlockKind::Dynamic => 2,
    };
    (last as u32 | btype << 1, 3)
}

// A dynamic header's items, each `(bits, n)`: what `write_huffman_header` writes, to be read in
// any order (by a warp's lanes) once `ready_codes` has run.
impl BlockPlan {
    /// Readies the codes of a block of `kind` (fixed or dynamic, its lengths from
    /// [`plan_block`]): the precode's and the symbols' codewords.
    pub fn ready_codes(&mut self, kind: BlockKind) {
        self.ready_lengths(kind);
        canonical_codes(&self.lit_lens, &mut self.lit_codes);
        canonical_codes(&self.dist_lens, &mut self.dist_codes);
    }

    /// [`BlockPlan::ready_codes`] but for the symbols' codewords: their lengths, and the
    /// precode's codewords.
    pub fn ready_lengths(&mut self, kind: BlockKind) {
        if kind == BlockKind::Dynamic {
            canonical_codes(&self.pre_lens, &mut self.pre_codes);
            self.lit_lens[NUM_LITLEN..].fill(0);
            self.dist_lens[NUM_DIST..].fill(0);
        } else {
            self.lit_lens = FIXED_LITLEN_LENS;
            self.dist_lens = FIXED_DIST_LENS;
        }
    }

    /// HLIT, HDIST and HCLEN.
    pub fn code_counts(&self) -> (u32, u32) {
        ((self.hlit - 257) | ((self.hdist - 1) << 5) | ((self.hclen - 4) << 10), 14)
    }

    /// How many precode lengths the header sends.
    pub fn precode_items(&self) -> usize {
        self.hclen as usize
    }

    /// The `k`th precode length sent (in `PRECODE_ORDER`).
    pub fn precode_item(&self, k: usize) -> (u32, u32) {
        (self.pre_lens[PRECODE_ORDER[k] as usize] as u32, 3)
    }

    /// How many run-length items code the code lengths.
    pub fn length_items(&self) -> usize {
        self.n_items as usize
    }

    /// The `k`th run-length item: its precode codeword, then its extra bits.
    pub fn length_item(&self, k: usize) -> (u32, u32) {
        let item = self.items[k];
        let sym = (item & 31) as usize;
        let n = self.pre_lens[sym] as u32;
        (self.pre_codes[sym] as u32 | ((item as u32 >> 5) << n), n + PRECODE_EXTRA[sym] as u32)
    }
}

impl BlockPlan {
    /// A literal's code and its length, in the block [`write_huffman_header`] began.
    #[inline(always)]
    pub fn literal(&self, byte: u8) -> (u32, u32) {
        (self.lit_codes[byte as usize] as u32, self.lit_lens[byte as usize] as u32)
    }

    /// A match's length code with its extra bits, then its distance code with its extra bits,
    /// each with its bit count, in a stream of sink `S`'s kind.
    #[inline(always)]
    pub fn matched<S: StreamKind>(&self, len: usize, dist: usize) -> [(u32, u32); 2] {
        let (ls, ds) = (length_slot_in(len, S::DEFLATE64), dist_slot(dist));
        let (ln, dn) = (self.lit_lens[257 + ls] as u32, self.dist_lens[ds] as u32);
        let length = self.lit_codes[257 + ls] as u32 | ((len as u32 - LENGTH_BASE[ls] as u32) << ln);
        let distance = self.dist_codes[ds] as u32 | ((dist as u32 - DIST_BASE[ds] as u32) << dn);
        [(length, ln + LENGTH_EXTRA[ls] as u32), (distance, dn + DIST_EXTRA[ds] as u32)]
    }

    /// The end-of-block code and its length.
    #[inline(always)]
    pub fn end_of_block(&self) -> (u32, u32) {
        (self.lit_codes[END_OF_BLOCK] as u32, self.lit_lens[END_OF_BLOCK] as u32)
    }
}

/// Plain deflate's sink: one LSB-first bit stream into a byte slice.
pub struct BitWriter<'a> {
    out: &'a mut [u8],
    pos: usize,
    buf: u64,
    count: u32,
    overflow: bool,
}

impl<'a> BitWriter<'a> {
    /// A writer whose stream starts at byte `pos` of `out` (the bytes before it left as they are).
    pub fn new(out: &'a mut [u8], pos: usize) -> Self {
        Self { out, pos, buf: 0, count: 0, overflow: false }
    }

    #[inline(always)]
    fn put(&mut self, bits: u32, n: u32) {
        self.buf |= (bits as u64) << self.count;
        self.count += n;
        if self.count >= 32 {
            self.bytes(&(self.buf as u32).to_le_bytes());
            self.buf >>= 32;
            self.count -= 32;
        }
    }

    #[inline(always)]
    fn bytes(&mut self, bytes: &[u8]) {
        match self.out.get_mut(self.pos..self.pos + bytes.len()) {
            Some(dst) => dst.copy_from_slice(bytes),
            None => self.overflow = true,
        }
        self.pos += bytes.len();
    }

    /// Pads the last byte with zero bits and writes out what is buffered.
    fn flush(&mut self) {
        while self.count > 0 {
            self.bytes(&[self.buf as u8]);
            self.buf >>= 8;
            self.count = self.count.saturating_sub(8);
        }
    }

    /// Appends whole bytes after the bit stream.
    pub fn append(&mut self, bytes: &[u8]) {
        self.flush();
        self.bytes(bytes);
    }

    /// Ends the stream; returns the bytes written, or `OutputTooSmall`.
    pub fn finish(mut self) -> Result<usize, Status> {
        self.flush();
        if self.overflow { Err(Status::OutputTooSmall) } else { Ok(self.pos) }
    }
}

impl StreamKind for BitWriter<'_> {
    const DEFLATE64: bool = false;

    fn stored_cost(&self, len: usize) -> u64 {
        stored_cost(self.count as usize, len)
    }
}

impl BitSink for BitWriter<'_> {
    fn restart(&mut self) {}

    fn header(&mut self, bits: u32, n: u32) {
        self.put(bits, n);
    }

    fn item(&mut self, bits: u32, n: u32) {
        self.put(bits, n);
    }

    #[inline(always)]
    fn literal(&mut self, code: u32, n: u32) {
        self.put(code, n);
    }

    #[inline(always)]
    fn matched(&mut self, length: u32, length_n: u32, dist: u32, dist_n: u32) {
        self.put(length, length_n);
        self.put(dist, dist_n);
    }

    fn end_of_block(&mut self, code: u32, n: u32) {
        self.put(code, n);
    }

    fn stored_header(&mut self, len: u16) {
        self.flush();
        self.bytes(&len.to_le_bytes());
        self.bytes(&(!len).to_le_bytes());
    }

    fn stored_bytes(&mut self, data: &[u8]) {
        self.bytes(data);
    }
}

/// Bits that storing `len` bytes takes in plain deflate at bit position `at` of the stream, in
/// blocks of at most 65535 bytes, headers and padding included.
pub fn stored_cost(at: usize, len: usize) -> u64 {
    // The first block pads from the current bit position; later ones start aligned.
    let mut bits = 3 + ((8 - ((at + 3) & 7)) & 7) as u64 + 32 + 8 * len as u64;
    let mut rest = len;
    while rest > MAX_STORED {
        rest -= MAX_STORED;
        bits += 8 + 32;
    }
    bits
}

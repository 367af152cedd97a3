//! Decoding. The block-level logic (block headers, the dynamic header's code lengths, building the
//! decode tables) runs over a [`BitSource`], so GDeflate's 32 interleaved sub-streams reuse it; the
//! symbols of a plain deflate block are decoded here by `huffman_block` over a [`BitReader`].

use super::huffman::{
    Alphabet, DIST_ROOT, KIND_BASE, KIND_END, KIND_LITERAL, LITLEN_ROOT, PRECODE_ROOT, build_table, entry_extra,
    entry_kind, entry_len, entry_value, lookup,
};
use super::tables::{END_OF_BLOCK, FIXED_DIST_LENS, FIXED_LITLEN_LENS, PRECODE_ORDER};
use super::{DecodeTables, MAX_LENS};
use crate::Status;
use core::marker::PhantomData;

/// What the wrappers ask of decoded output: its size and its checksums.
pub trait Decoded {
    /// Bytes produced so far (including space reserved for matches not yet copied).
    fn size(&self) -> usize;
    /// Adler-32 of the bytes from `from` on, where the bytes are kept (`None` where not).
    fn adler32(&self, from: usize) -> Option<u32>;
    /// CRC-32 of the bytes from `from` on, where the bytes are kept (`None` where not).
    fn crc32(&self, from: usize) -> Option<u32>;
}

/// Where decoded bytes go: a slice, or nowhere (only counting, for `decompressed_size`).
/// Matches are checked the same way in both.
pub trait Output: Decoded {
    /// Appends one byte.
    fn push(&mut self, byte: u8) -> Result<(), Status>;
    /// Appends bytes.
    fn extend(&mut self, bytes: &[u8]) -> Result<(), Status>;
    /// Reserves `len` bytes for a match whose distance comes later; returns where they start.
    fn reserve(&mut self, len: usize) -> Result<usize, Status>;
    /// Fills the reserved `at..at + len` from `dist` bytes back.
    fn copy_at(&mut self, at: usize, dist: usize, len: usize) -> Result<(), Status>;
    /// Appends a match.
    #[inline(always)]
    fn copy(&mut self, dist: usize, len: usize) -> Result<(), Status> {
        let at = self.reserve(len)?;
        self.copy_at(at, dist, len)
    }
}

/// Decodes into a caller's slice.
pub struct SliceOut<'a> {
    /// Where the bytes go, from its start; its length is the most the stream may decode to.
    pub out: &'a mut [u8],
    /// Bytes of `out` written so far, matches' reserved bytes included.
    pub len: usize,
}

impl Decoded for SliceOut<'_> {
    #[inline(always)]
    fn size(&self) -> usize {
        self.len
    }

    fn adler32(&self, from: usize) -> Option<u32> {
        self.out.get(from..self.len).map(crate::adler32::adler32)
    }

    fn crc32(&self, from: usize) -> Option<u32> {
        self.out.get(from..self.len).map(crate::crc32::crc32)
    }
}

impl Output for SliceOut<'_> {
    #[inline(always)]
    fn push(&mut self, byte: u8) -> Result<(), Status> {
        *self.out.get_mut(self.len).ok_or(Status::OutputTooSmall)? = byte;
        self.len += 1;
        Ok(())
    }

    fn extend(&mut self, bytes: &[u8]) -> Result<(), Status> {
        let end = self.len + bytes.len();
        self.out.get_mut(self.len..end).ok_or(Status::OutputTooSmall)?.copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }

    #[inline(always)]
    fn reserve(&mut self, len: usize) -> Result<usize, Status> {
        let at = self.len;
        if len > self.out.len() - at {
            return Err(Status::OutputTooSmall);
        }
        self.len += len;
        Ok(at)
    }

    #[inline(always)]
    fn copy_at(&mut self, at: usize, dist: usize, len: usize) -> Result<(), Status> {
        if dist == 0 || dist > at {
            return Err(Status::BadOffset);
        }
        let window = self.out.get_mut(at - dist..at + len).ok_or(Status::Malformed)?;
        copy_match(window, dist, len);
        Ok(())
    }
}

/// Writes `window[dist..dist + len]` by repeating from `dist` bytes back (`window[..dist]` is
/// final). A GPU thread would wait a memory round trip per byte of a byte loop, so the bytes move
/// in pieces of up to 16 whose loads all issue before their stores, or, for a short period that
/// repeats, from the pattern held in registers. Nothing past the match is written (GDeflate fills
/// matches after later bytes are out).
#[inline(always)]
fn copy_match(window: &mut [u8], dist: usize, len: usize) {
    if dist < len && dist < 16 {
        let mut pattern = [0u8; 16];
        pattern[..dist].copy_from_slice(&window[..dist]);
        let mut phase = 0;
        for byte in &mut window[dist..] {
            *byte = pattern[phase];
            phase += 1;
            if phase == dist {
                phase = 0;
            }
        }
        return;
    }
    match len {
        16.. => copy_pieces::<16>(window, dist, len),
        8..=15 => copy_pieces::<8>(window, dist, len),
        4..=7 => copy_pieces::<4>(window, dist, len),
        _ => {
            for i in 0..len {
                window[dist + i] = window[i];
            }
        }
    }
}

/// [`copy_match`] in `N`-byte pieces, the last one ending at the match's end (rewriting bytes
/// already right). Needs `N <= len` and `N <= dist` or `len <= dist`, so every piece reads final
/// bytes.
#[inline(always)]
fn copy_pieces<const N: usize>(window: &mut [u8], dist: usize, len: usize) {
    let mut i = 0;
    loop {
        let start = if i + N <= len { i } else { len - N };
        let piece: [u8; N] = window[start..start + N].try_into().unwrap_or([0; N]);
        window[dist + start..dist + start + N].copy_from_slice(&piece);
        if start + N == len {
            break;
        }
        i += N;
    }
}

/// Counts decoded bytes up to `limit` without keeping them.
pub struct CountOut {
    /// Bytes counted so far.
    pub len: usize,
    /// Most bytes allowed; counting past it is `ChunkTooLarge`.
    pub limit: usize,
}

impl Decoded for CountOut {
    fn size(&self) -> usize {
        self.len
    }

    fn adler32(&self, _: usize) -> Option<u32> {
        None
    }

    fn crc32(&self, _: usize) -> Option<u32> {
        None
    }
}

impl Output for CountOut {
    fn push(&mut self, _: u8) -> Result<(), Status> {
        self.reserve(1).map(|_| ())
    }

    fn extend(&mut self, bytes: &[u8]) -> Result<(), Status> {
        self.reserve(bytes.len()).map(|_| ())
    }

    fn reserve(&mut self, len: usize) -> Result<usize, Status> {
        let at = self.len;
        if len > self.limit - at {
            return Err(Status::ChunkTooLarge);
        }
        self.len += len;
        Ok(at)
    }

    fn copy_at(&mut self, at: usize, dist: usize, _: usize) -> Result<(), Status> {
        if dist == 0 || dist > at { Err(Status::BadOffset) } else { Ok(()) }
    }
}

/// The bits of a compressed block, as the block-level decoder sees them. Plain deflate is one
/// LSB-first stream; GDeflate deals the items of a block out to 32 sub-streams, so it moves to
/// the next sub-stream after each item and back to sub-stream 0 where a new group of items starts.
pub trait BitSource {
    /// Whether the stream is Deflate64 (GDeflate is): length symbol 285 is 3 plus 16 extra bits,
    /// distance symbols 30 and 31 reach back 64 KiB.
    const DEFLATE64: bool;

    /// At least the next 32 bits of the current stream (bit 0 first); more may follow.
    fn peek(&mut self) -> u64;
    /// Consumes `n` bits of the current stream.
    fn consume(&mut self, n: u32) -> Result<(), Status>;
    /// Refills the current stream to hold at least 32 bits (GDeflate's refill after a header).
    fn ensure(&mut self) -> Result<(), Status>;
    /// Ends one item (a precode length, a code-length symbol, a stored byte).
    fn next_item(&mut self) -> Result<(), Status>;
    /// Starts a group of items (block header, code lengths, symbols) at sub-stream 0.
    fn restart(&mut self);

    /// Reads `n` ≤ 16 bits.
    #[inline(always)]
    fn bits(&mut self, n: u32) -> Result<u32, Status> {
        let v = (self.peek() & ((1 << n) - 1)) as u32;
        self.consume(n)?;
        Ok(v)
    }

    /// Decodes one symbol with `table`; returns its entry.
    #[inline(always)]
    fn decode(&mut self, table: &[u32], root: u32) -> Result<u32, Status> {
        let entry = lookup(table, root, self.peek());
        self.consume(entry_len(entry))?;
        Ok(entry)
    }

    /// Decodes a distance (code and extra bits).
    #[inline(always)]
    fn distance(&mut self, tables: &DecodeTables) -> Result<usize, Status> {
        let entry = self.decode(&tables.dist, DIST_ROOT)?;
        if entry_kind(entry) != KIND_BASE {
            return Err(Status::Malformed);
        }
        Ok(entry_value(entry) as usize + self.bits(entry_extra(entry))? as usize)
    }
}

/// What a literal/length symbol decoded to.
pub enum Symbol {
    /// A literal byte.
    Literal(u8),
    /// A match's length, with its extra bits added; the distance follows.
    Length(usize),
    /// The end-of-block symbol.
    End,
}

/// Decodes a literal/length symbol and a length's extra bits.
#[inline(always)]
pub fn litlen<S: BitSource>(src: &mut S, tables: &DecodeTables) -> Result<Symbol, Status> {
    let entry = src.decode(&tables.litlen, LITLEN_ROOT)?;
    match entry_kind(entry) {
        KIND_LITERAL => Ok(Symbol::Literal(entry_value(entry) as u8)),
        KIND_BASE => Ok(Symbol::Length(entry_value(entry) as usize + src.bits(entry_extra(entry))? as usize)),
        KIND_END => Ok(Symbol::End),
        _ => Err(Status::Malformed),
    }
}

/// Kind of block, from its header.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Block {
    /// BTYPE 0: LEN, NLEN and the bytes as they are, from the next byte boundary.
    Stored,
    /// BTYPE 1 or 2: Huffman-coded with the fixed code or a dynamic header's.
    Huffman,
}

/// Where a Huffman block's code lengths are.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Lengths {
    /// The fixed code's.
    Fixed,
    /// A dynamic header's: `hlit` literal/length lengths, then `hdist` distance lengths, in the
    /// tables' [`DecodeTables::lens_and_precode`].
    Dynamic {
        /// Literal/length code lengths: HLIT + 257, 257 to 288.
        hlit: usize,
        /// Distance code lengths: HDIST + 1, 1 to 32.
        hdist: usize,
    },
}

/// Reads a block header and, for a Huffman block, sets up `tables`; returns the kind and BFINAL.
pub fn read_block_header<S: BitSource>(src: &mut S, tables: &mut DecodeTables) -> Result<(Block, bool), Status> {
    let (block, last, lengths) = read_block_lengths(src, tables)?;
    if block == Block::Huffman {
        build_block_tables(tables, lengths, S::DEFLATE64)?;
    }
    Ok((block, last))
}

/// The first half of [`read_block_header`]: reads the header and a dynamic block's code lengths
/// (building only the precode's table); returns the kind, BFINAL and where the code lengths are
/// (`Fixed` for a stored block, which has none).
pub fn read_block_lengths<S: BitSource>(
    src: &mut S,
    tables: &mut DecodeTables,
) -> Result<(Block, bool, Lengths), Status> {
    src.restart();
    let header = src.bits(3)?;
    src.ensure()?;
    let last = header & 1 != 0;
    let lengths = match header >> 1 {
        0 => return Ok((Block::Stored, last, Lengths::Fixed)),
        1 => Lengths::Fixed,
        2 => read_dynamic_lengths(src, tables)?,
        _ => return Err(Status::Malformed),
    };
    src.restart();
    Ok((Block::Huffman, last, lengths))
}

/// The second half of [`read_block_header`]: builds a Huffman block's tables from its code
/// lengths (`deflate64`: GDeflate's meanings of the top symbols).
pub fn build_block_tables(t: &mut DecodeTables, lengths: Lengths, deflate64: bool) -> Result<(), Status> {
    let (litlen, dist) = (Alphabet::LitLen { deflate64 }, Alphabet::Dist { deflate64 });
    match lengths {
        Lengths::Fixed => {
            build_table(&mut t.litlen, LITLEN_ROOT, &FIXED_LITLEN_LENS, litlen)?;
            build_table(&mut t.dist, DIST_ROOT, &FIXED_DIST_LENS, dist)
        }
        Lengths::Dynamic { hlit, hdist } => {
            // The lengths lie in `dist`, which is built from them.
            let lens: [u8; MAX_LENS] = core::array::from_fn(|i| t.dist[i] as u8);
            let (lit_lens, dist_lens) = lens[..hlit + hdist].split_at(hlit);
            build_table(&mut t.litlen, LITLEN_ROOT, lit_lens, litlen)?;
            build_table(&mut t.dist, DIST_ROOT, dist_lens, dist)
        }
    }
}

/// Reads a dynamic block's code lengths (RFC 1951 §3.2.7) into the tables' lengths. Like
/// libdeflate (and unlike zlib) it accepts lengths for symbols that deflate may not use
/// (literal/length 286 and 287, distance 30 and 31, which Deflate64 does use); only using them is
/// `Malformed`.
fn read_dynamic_lengths<S: BitSource>(src: &mut S, t: &mut DecodeTables) -> Result<Lengths, Status> {
    let counts = src.bits(14)?;
    src.ensure()?;
    let hlit = (counts & 31) as usize + 257;
    let hdist = ((counts >> 5) & 31) as usize + 1;
    let hclen = (counts >> 10) as usize + 4;
    let mut pre_lens = [0u8; 19];
    for &sym in PRECODE_ORDER.iter().take(hclen) {
        pre_lens[sym as usize] = src.bits(3)? as u8;
        src.next_item()?;
    }
    build_table(t.precode(), PRECODE_ROOT, &pre_lens, Alphabet::Precode)?;
    src.restart();
    let total = hlit + hdist;
    let (lens, precode) = t.lens_and_precode();
    let lens = lens.get_mut(..total).ok_or(Status::Malformed)?;
    let mut i = 0;
    while i < total {
        let sym = entry_value(src.decode(precode, PRECODE_ROOT)?);
        let (value, run) = match sym {
            0..=15 => (sym, 1),
            16 => {
                let prev = *lens.get(i.wrapping_sub(1)).ok_or(Status::Malformed)?;
                (prev, 3 + src.bits(2)? as usize)
            }
            17 => (0, 3 + src.bits(3)? as usize),
            _ => (0, 11 + src.bits(7)? as usize),
        };
        lens.get_mut(i..i + run).ok_or(Status::Malformed)?.fill(value);
        i += run;
        src.next_item()?;
    }
    if lens[END_OF_BLOCK] == 0 {
        return Err(Status::Malformed);
    }
    Ok(Lengths::Dynamic { hlit, hdist })
}

/// How a [`BitReader`] takes the input's next 8 bytes into its buffer at once: [`Bytes`] on the
/// CPU (one unaligned load); the GPU's warp decoder loads the aligned words holding them.
pub trait Load {
    /// Input bytes that must lie from the load's position on for [`Load::load`] (nearer the end,
    /// the reader takes bytes one at a time).
    const SPAN: usize;
    /// The 8 bytes from `input[pos]` on, little-endian.
    ///
    /// # Safety
    /// `pos + SPAN` must be at most `input.len()`.
    unsafe fn load(input: &[u8], pos: usize) -> u64;
}

/// The 8 bytes from the slice.
pub struct Bytes;

impl Load for Bytes {
    const SPAN: usize = 8;

    #[inline(always)]
    unsafe fn load(input: &[u8], pos: usize) -> u64 {
        let b = &input[pos..pos + 8];
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }
}

/// Plain deflate's bit stream: LSB-first, through a 64-bit buffer. Past the end of the input it
/// reads zero bits but counts them, and consuming any of them reports `Truncated`.
pub struct BitReader<'a, L: Load = Bytes> {
    input: &'a [u8],
    pos: usize,
    buf: u64,
    count: u32,
    /// Zero bits appended past the end of the input (the newest `pad` bits of `buf`).
    pad: u32,
    load: PhantomData<L>,
}

// A copy is a saved position: refilling either never changes what it reads next.
impl<L: Load> Clone for BitReader<'_, L> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<L: Load> Copy for BitReader<'_, L> {}

impl<'a, L: Load> BitReader<'a, L> {
    /// A reader at the start of `input`, nothing buffered.
    pub fn new(input: &'a [u8]) -> Self {
        Self { input, pos: 0, buf: 0, count: 0, pad: 0, load: PhantomData }
    }

    /// Tops the buffer up to at least 56 bits.
    #[inline(always)]
    fn refill(&mut self) {
        if self.input.len() - self.pos >= L::SPAN {
            let word = unsafe { L::load(self.input, self.pos) }; // SPAN bytes follow
            self.buf |= word << self.count;
            self.pos += ((63 - self.count) >> 3) as usize;
            self.count |= 56;
        } else {
            while self.count <= 55 {
                match self.input.get(self.pos) {
                    Some(&b) => {
                        self.buf |= (b as u64) << self.count;
                        self.pos += 1;
                    }
                    None => self.pad += 8,
                }
                self.count += 8;
            }
        }
    }

    /// The reader with each 32-bit word of its state passed through `f`: for handing a reader
    /// from one thread to others.
    pub fn map_state(&self, mut f: impl FnMut(u32) -> u32) -> Self {
        let mut halves = |v: u64| f(v as u32) as u64 | (f((v >> 32) as u32) as u64) << 32;
        let (pos, buf) = (halves(self.pos as u64) as usize, halves(self.buf));
        Self { pos, buf, count: f(self.count), pad: f(self.pad), ..Self::new(self.input) }
    }

    /// Reads `n` < 32 of the bits held, without checking that they are the input's: for a
    /// caller that asks [`BitReader::overran`] before trusting what it decoded. A peek leaves at
    /// least 32 bits held.
    #[inline(always)]
    pub fn take_held(&mut self, n: u32) -> u32 {
        let v = self.buf as u32 & ((1 << n) - 1);
        self.skip(n);
        v
    }

    /// The bits held, without refilling: at least as many as a peek left, less those consumed
    /// since (bits past them may be the input's next or zero).
    #[inline(always)]
    pub fn held(&self) -> u64 {
        self.buf
    }

    /// Consumes `n` of the bits held, without checking that they are the input's.
    #[inline(always)]
    pub fn skip(&mut self, n: u32) {
        self.buf >>= n;
        self.count -= n;
    }

    /// Whether bits past the end of the input were consumed: what [`BitSource::consume`] would
    /// have reported as `Truncated` at the first of them.
    #[inline(always)]
    pub fn overran(&self) -> bool {
        self.pad > self.count
    }

    /// Input bytes consumed, counting a partly used last byte as consumed.
    pub fn consumed_bytes(&self) -> usize {
        (self.pos * 8 + self.pad as usize - self.count as usize).div_ceil(8)
    }

    /// Holds at least 48 bits where the input has them: a whole symbol with its extra bits and
    /// distance.
    #[inline(always)]
    fn refill_for_symbol(&mut self) {
        if self.count < 48 {
            self.refill();
        }
    }

    /// A stored block after its header: skips to the byte boundary and returns the block's
    /// bytes (`stored_span`), the reader moved past them.
    pub fn stored(&mut self) -> Result<&'a [u8], Status> {
        let span = stored_span(self.input, self.consumed_bytes())?;
        *self = Self::new(self.input);
        self.pos = span.end;
        Ok(&self.input[span])
    }
}

/// The bytes of the stored block whose header ends at input byte `at` (at the byte boundary
/// after the block header): LEN checked against NLEN, and the bytes within `input`.
fn stored_span(input: &[u8], at: usize) -> Result<core::ops::Range<usize>, Status> {
    if at > input.len() {
        return Err(Status::Truncated);
    }
    let header = input.get(at..at + 4).ok_or(Status::Truncated)?;
    let len = u16::from_le_bytes([header[0], header[1]]);
    if len != !u16::from_le_bytes([header[2], header[3]]) {
        return Err(Status::Malformed);
    }
    let span = at + 4..at + 4 + len as usize;
    if span.end > input.len() {
        return Err(Status::Truncated);
    }
    Ok(span)
}

impl<L: Load> BitSource for BitReader<'_, L> {
    const DEFLATE64: bool = false;

    #[inline(always)]
    fn peek(&mut self) -> u64 {
        if self.count < 32 {
            self.refill();
        }
        self.buf
    }

    #[inline(always)]
    fn consume(&mut self, n: u32) -> Result<(), Status> {
        if n + self.pad > self.count {
            return Err(Status::Truncated);
        }
        self.buf >>= n;
        self.count -= n;
        Ok(())
    }

    fn ensure(&mut self) -> Result<(), Status> {
        Ok(())
    }

    fn next_item(&mut self) -> Result<(), Status> {
        Ok(())
    }

    fn restart(&mut self) {}
}

/// Decodes the symbols of one Huffman block, through its end-of-block code.
fn huffman_block<O: Output>(src: &mut BitReader, t: &DecodeTables, out: &mut O) -> Result<(), Status> {
    loop {
        // One refill covers a whole match: 15 + 5 + 15 + 13 bits.
        src.refill_for_symbol();
        match litlen(src, t)? {
            Symbol::Literal(byte) => out.push(byte)?,
            Symbol::Length(len) => {
                let dist = src.distance(t)?;
                out.copy(dist, len)?;
            }
            Symbol::End => return Ok(()),
        }
    }
}

/// Decodes one raw deflate stream from the start of `input`; returns the input bytes it spans
/// (through the byte holding the final block's last bit).
pub fn inflate<O: Output>(input: &[u8], out: &mut O, tables: &mut DecodeTables) -> Result<usize, Status> {
    let mut src = BitReader::new(input);
    loop {
        let (block, last) = read_block_header(&mut src, tables)?;
        match block {
            Block::Stored => out.extend(src.stored()?)?,
            Block::Huffman => huffman_block(&mut src, tables, out)?,
        }
        if last {
            return Ok(src.consumed_bytes());
        }
    }
}

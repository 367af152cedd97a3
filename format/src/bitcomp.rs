//! Bitcomp: fixed-width numbers in tiles of 128 bytes (256 for 64-bit elements), each tile stored
//! as a frame of reference or as deltas, bit-packed, as the bits that vary across it (a mask), or
//! (the sparse algorithm) as a bitmap of its non-zero elements and those packed; with an error
//! bound, floating-point elements are first quantised to multiples of twice the bound. Lossless
//! chunks may code each byte as its rank in the chunk's byte counts (text: the frequent bytes
//! become small numbers). nvCOMP's Bitcomp, in ferrocomp's own byte layout (docs/FORMAT.md gives
//! it byte by byte).
//!
//! A chunk is a header, the ranks' table where ranked, a table of fixed-size tile headers, the
//! tiles' payloads (whole 32-bit words, so a tile's payload size follows from its header alone),
//! and the chunk's last `len % width` bytes as they are. A tile's elements are packed least significant bit first,
//! element `i` at bit `i * bits` of its payload: on the GPU, lane `l` of a warp owns the tile's
//! `l`-th 4 (or 8) bytes, and so a contiguous run of bits.
//!
//! [`compress`] picks, per tile, the smallest of the codings the options allow (frame of
//! reference on a tie), and ranks a chunk's bytes where its first tiles say that pays;
//! [`decompress`] reads versions 1 and 2, checks every header, size and count and never panics.

pub use crate::ElementType;
use crate::Status;
use crate::bitpack::{Extremes, Frame, deposit, extract, mask, read_bits, sign_extend, write_bits};

/// The format version [`compress`] writes; version 1 (no masks, no ranks) is still read.
pub const VERSION: u8 = 2;
/// The chunk header: version, element type, flags ([`SPARSE`], [`LOSSY`], [`RANKED`]), a
/// reserved byte, the uncompressed size (u32), and the error bound (f32; 0 without [`LOSSY`]).
pub const HEADER_LEN: usize = 12;
/// Largest chunk [`compress`] accepts (16 MiB, as LZ4's).
pub const MAX_CHUNK_SIZE: usize = 1 << 24;
/// Header flag: tiles may be sparse (the table's entries have a count byte).
pub const SPARSE: u8 = 1;
/// Header flag: the elements are floats, quantised within the header's error bound.
pub const LOSSY: u8 = 2;
/// Header flag (version 2, lossless only): the elements' bytes are coded as ranks, byte `r`
/// standing for `symbols[r]` of the [`SYMBOLS_LEN`]-byte table after the header.
pub const RANKED: u8 = 4;
/// Bytes of a ranked chunk's table: the byte each rank stands for.
pub const SYMBOLS_LEN: usize = 256;
/// Bytes of elements (the chunk's first tiles) from which [`compress`] decides whether to rank.
pub const RANKING_SAMPLE: usize = 16384;
/// A tile header's mode byte for a tile stored as it is.
pub const VERBATIM: u8 = 0xFF;
/// A mode byte's flag for a tile stored as deltas (the rest is the bits per delta).
pub const DELTA: u8 = 0x80;
/// Version 2: a mode byte of `MASK + b` (`b` from 1 to 8·width − 1) is a tile of the `b` bits
/// that vary across it, the others the base's.
pub const MASK: u8 = 0x40;
/// A sparse chunk's count byte for a dense tile.
pub const DENSE: u8 = 0xFF;
/// Lanes of the warp that codes a tile, each owning a contiguous part of it.
pub const LANES: usize = 32;

/// An error bound for lossy coding: finite and positive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrorBound(u32);

impl ErrorBound {
    /// The bound `bound`, if it is finite and positive.
    pub fn new(bound: f32) -> Option<Self> {
        (bound.is_finite() && bound > 0.0).then_some(Self(bound.to_bits()))
    }

    /// The bound.
    pub fn get(self) -> f32 {
        f32::from_bits(self.0)
    }

    /// The quantisation step: twice the bound, so rounding to a multiple errs by at most it.
    pub fn step(self) -> f64 {
        2.0 * self.get() as f64
    }
}

/// Bitcomp's options: nvCOMP's `data_type` and `algorithm_type` (1: sparse), and the lossy mode's
/// error bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// The elements' type.
    pub element: ElementType,
    /// nvCOMP's `algorithm_type` 1: tiles of mostly zeros may be stored as a bitmap and their
    /// non-zero elements.
    pub sparse: bool,
    /// Lossy coding: the elements are `f32` (4-byte types) or `f64` (8-byte types), each decoded
    /// within this bound of its value (or exactly, where the tile cannot be quantised).
    pub error_bound: Option<ErrorBound>,
}

impl Default for Options {
    /// nvCOMP's defaults: bytes, the default algorithm, lossless.
    fn default() -> Self {
        Self { element: ElementType::U8, sparse: false, error_bound: None }
    }
}

impl Options {
    /// The options as the kernels' options word.
    pub fn to_word(self) -> u64 {
        let bound = self.error_bound.map_or(0, |bound| bound.0);
        self.element as u64 | (self.flags() as u64) << 8 | (bound as u64) << 32
    }

    /// The options of an options word, if it holds valid ones.
    pub fn from_word(word: u64) -> Option<Self> {
        Self::new(ElementType::from_id(word as u8)?, (word >> 8) as u8, f32::from_bits((word >> 32) as u32))
    }

    /// The options of a header's element, flags and bound, if valid.
    fn new(element: ElementType, flags: u8, bound: f32) -> Option<Self> {
        let lossy = flags & LOSSY != 0;
        let options = Self {
            element,
            sparse: flags & SPARSE != 0,
            error_bound: if lossy { Some(ErrorBound::new(bound)?) } else { None },
        };
        (flags & !(SPARSE | LOSSY) == 0 && options.valid()).then_some(options)
    }

    /// The header's flags byte.
    pub fn flags(self) -> u8 {
        (if self.sparse { SPARSE } else { 0 }) | if self.error_bound.is_some() { LOSSY } else { 0 }
    }

    /// Whether lossy coding, if asked for, is over a float width (4 or 8 bytes).
    pub fn valid(&self) -> bool {
        self.error_bound.is_none() || self.element.width() >= 4
    }

    /// The shape of this chunk's tiles.
    pub fn geometry(&self) -> Geometry {
        Geometry::new(self.element.width(), self.sparse)
    }
}

/// Elements of `width` bytes a lane owns in a tile: 4 bytes' worth, or one 8-byte element.
pub const fn per_lane(width: usize) -> usize {
    if width >= 4 { 1 } else { 4 / width }
}

/// The shape of a chunk's tiles, from its element width and whether it may hold sparse tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Bytes per element.
    pub width: usize,
    /// Elements per tile.
    pub elements: usize,
    /// Bytes of a tile header in the table: the mode, a count in sparse chunks, the base.
    pub header: usize,
    /// Whether tile headers have a count byte.
    pub sparse: bool,
    /// Offset of the tile headers: after the chunk header and, where ranked, the ranks' table.
    pub table: usize,
    /// Whether tiles may be masks (version 2).
    pub masks: bool,
}

impl Geometry {
    /// The tiles of `width`-byte elements, their headers with a count byte where `sparse`, in a
    /// chunk of the present version without ranks.
    pub const fn new(width: usize, sparse: bool) -> Self {
        let header = 1 + sparse as usize + width;
        Self { width, elements: LANES * per_lane(width), header, sparse, table: HEADER_LEN, masks: true }
    }

    /// The same tiles in a chunk of `version` (1 or 2), ranked or not.
    pub const fn of(self, version: u8, ranked: bool) -> Self {
        let table = HEADER_LEN + if ranked { SYMBOLS_LEN } else { 0 };
        Self { table, masks: version >= 2, ..self }
    }

    /// Offset of tile `t`'s header.
    pub const fn entry(&self, t: usize) -> usize {
        self.table + t * self.header
    }

    /// 32-bit words before a mask tile's entries: its varying bits.
    pub const fn mask_words(&self) -> usize {
        self.width.div_ceil(4)
    }

    /// Bytes of a tile.
    pub const fn tile_bytes(&self) -> usize {
        self.elements * self.width
    }

    /// Tiles of a chunk of `n` bytes.
    pub const fn tiles(&self, n: usize) -> usize {
        (n / self.width).div_ceil(self.elements)
    }

    /// Offset of the payloads in a chunk of `n` bytes: after the header and the tile table,
    /// aligned to 4.
    pub const fn payload_start(&self, n: usize) -> usize {
        self.entry(self.tiles(n)).next_multiple_of(4)
    }

    /// Words of a sparse tile's bitmap.
    pub const fn bitmap_words(&self) -> usize {
        self.elements / 32
    }
}

/// How a tile is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Element `i` is `base + packed[i]`.
    Frame,
    /// Element `i` is the element before it (the previous tile's last, 0 before the first
    /// tile) plus `base + packed[i]`.
    Delta,
    /// Element `i` is the base's bits but for [`Tile::varying`]'s, which are `packed[i]`'s, in
    /// order (after the varying bits themselves, the payload's first words).
    Mask,
    /// A bitmap of the non-zero elements, then those as a frame of reference; `count` of them.
    Sparse {
        /// Non-zero elements: the bitmap's set bits, at most the tile's elements.
        count: usize,
    },
    /// The tile's bytes as they are.
    Verbatim,
}

/// A tile's header, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// How the tile is stored.
    pub kind: Kind,
    /// Bits per packed entry.
    pub bits: u32,
    /// The frame of reference's base, added to each packed entry; 0 for a verbatim tile.
    pub base: u64,
    /// A mask tile's varying bits, which its payload begins with (0 in a tile parsed from its
    /// header alone, and in other kinds).
    pub varying: u64,
}

impl Tile {
    /// A tile stored as it is.
    pub const VERBATIM: Self = Self { kind: Kind::Verbatim, bits: 0, base: 0, varying: 0 };

    /// The tile header `entry` (`geometry.header` bytes), checked.
    pub fn parse(entry: &[u8], geometry: &Geometry) -> Result<Self, Status> {
        let width = geometry.width;
        let mode = entry[0];
        let count = if geometry.sparse { entry[1] } else { DENSE };
        let base = entry[entry.len() - width..].iter().rev().fold(0, |base, &b| base << 8 | b as u64);
        let (full, masked) = (8 * width as u32, geometry.masks && mode & DELTA == 0 && mode > MASK);
        let bits = if masked { (mode - MASK) as u32 } else { (mode & !DELTA) as u32 };
        let kind = match (mode, count) {
            (VERBATIM, DENSE) => return Ok(Self::VERBATIM),
            (_, DENSE) if mode & DELTA != 0 => Kind::Delta,
            (_, DENSE) if masked && bits < full => Kind::Mask,
            (_, DENSE) if !masked => Kind::Frame,
            (_, count) if mode <= MASK && count as usize <= geometry.elements => Kind::Sparse { count: count as usize },
            _ => return Err(Status::Malformed),
        };
        if bits > full {
            return Err(Status::Malformed);
        }
        Ok(Self { kind, bits, base, varying: 0 })
    }

    /// Byte `k` of the tile's header: the mode, the count (in sparse chunks), the base.
    #[inline(always)]
    pub fn entry_byte(&self, geometry: &Geometry, k: usize) -> u8 {
        let (mode, count) = match self.kind {
            Kind::Frame => (self.bits as u8, DENSE),
            Kind::Delta => (DELTA | self.bits as u8, DENSE),
            Kind::Mask => (MASK + self.bits as u8, DENSE),
            Kind::Sparse { count } => (self.bits as u8, count as u8),
            Kind::Verbatim => (VERBATIM, DENSE),
        };
        match k {
            0 => mode,
            1 if geometry.sparse => count,
            _ => (self.base >> (8 * (k - 1 - geometry.sparse as usize))) as u8,
        }
    }

    /// 32-bit words of the tile's payload.
    pub const fn words(&self, geometry: &Geometry) -> usize {
        let bits = self.bits as usize;
        match self.kind {
            Kind::Frame | Kind::Delta => geometry.elements * bits / 32,
            Kind::Mask => geometry.mask_words() + geometry.elements * bits / 32,
            Kind::Sparse { count } => geometry.bitmap_words() + (count * bits).div_ceil(32),
            Kind::Verbatim => geometry.tile_bytes() / 4,
        }
    }
}

/// The element a quantised `width`-byte integer `q` decodes to: `q * step` as an `f32` (4 bytes)
/// or `f64`, as its bits.
#[inline(always)]
pub fn dequantize(q: u64, width: usize, step: f64) -> u64 {
    let value = sign_extend(q, width) as f64 * step;
    if width == 4 { (value as f32).to_bits() as u64 } else { value.to_bits() }
}

/// The quantised integer of the `width`-byte float `bits`, if it decodes within `bound`.
#[inline(always)]
pub fn quantize(bits: u64, width: usize, bound: ErrorBound) -> Option<u64> {
    let value = if width == 4 { f32::from_bits(bits as u32) as f64 } else { f64::from_bits(bits) };
    let step = bound.step();
    let scaled = value / step;
    // |scaled| < 2^(8 width - 2), so the integer fits with room (and NaN fails the test).
    let limit = (1u64 << (8 * width - 2)) as f64;
    let fits = scaled.abs() < limit;
    if !fits {
        return None;
    }
    let truncated = scaled as i64; // towards zero; rounded to the nearest below
    let fraction = scaled - truncated as f64;
    let q = truncated + (fraction >= 0.5) as i64 - (fraction <= -0.5) as i64;
    let q = q as u64 & mask(width);
    let decoded = dequantize(q, width, step);
    let decoded = if width == 4 { f32::from_bits(decoded as u32) as f64 } else { f64::from_bits(decoded) };
    ((decoded - value).abs() <= bound.get() as f64).then_some(q)
}

/// The frame of reference of a tile's extremes (or of its non-zero elements').
#[inline(always)]
pub fn frame(extremes: Extremes, width: usize) -> Frame {
    extremes.frame(width, true)
}

/// The tile a tile's statistics choose: the smallest payload of the frame of reference of its
/// elements, of its deltas, where the geometry allows of the mask of the bits that vary across
/// its elements (`varying`: the OR of each element XOR the first, `first`), and, where given,
/// of the sparse coding (the non-zero elements' frame and count); the earlier on a tie.
pub fn choose(
    geometry: &Geometry,
    frame: Frame,
    delta: Frame,
    (varying, first): (u64, u64),
    sparse: Option<(Frame, usize)>,
) -> Tile {
    let mut best = Tile { kind: Kind::Frame, bits: frame.bits, base: frame.base, varying: 0 };
    if delta.bits < frame.bits {
        best = Tile { kind: Kind::Delta, bits: delta.bits, base: delta.base, varying: 0 };
    }
    let mut consider = |tile: Tile| {
        if tile.words(geometry) < best.words(geometry) {
            best = tile;
        }
    };
    let bits = varying.count_ones();
    if geometry.masks && bits > 0 && bits < 8 * geometry.width as u32 {
        consider(Tile { kind: Kind::Mask, bits, base: first & !varying, varying });
    }
    if let Some((frame, count)) = sparse {
        consider(Tile { kind: Kind::Sparse { count }, bits: frame.bits, base: frame.base, varying: 0 });
    }
    best
}

/// Largest compressed size of an `n`-byte chunk: ranked where lossless, every tile whole, the
/// last padded.
pub const fn max_compressed_size(n: usize, options: &Options) -> usize {
    let geometry = Geometry::new(options.element.width(), options.sparse).of(VERSION, options.error_bound.is_none());
    geometry.payload_start(n) + geometry.tiles(n) * geometry.tile_bytes() + n % geometry.width
}

/// Largest size `compressed_len` bytes can decode to: each tile of at most 256 bytes needs a
/// header of at least 2 (a guard against lying headers).
pub const fn max_decompressed_size(compressed_len: usize) -> usize {
    let bound = compressed_len.saturating_sub(HEADER_LEN) / 2 * 256 + 7;
    if bound > MAX_CHUNK_SIZE { MAX_CHUNK_SIZE } else { bound }
}

/// A chunk's header, read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The options it was compressed with.
    pub options: Options,
    /// Its uncompressed size.
    pub size: usize,
    /// The shape of its tiles, and where their headers start.
    pub geometry: Geometry,
    /// Whether its elements' bytes are ranks (the table of [`SYMBOLS_LEN`] bytes after the header).
    pub ranked: bool,
}

/// A chunk's header, checked.
pub fn read_header(input: &[u8]) -> Result<Header, Status> {
    let header: &[u8; HEADER_LEN] = input.get(..HEADER_LEN).and_then(|h| h.try_into().ok()).ok_or(Status::Truncated)?;
    let version = header[0];
    if version != 1 && version != VERSION {
        return Err(Status::Unsupported);
    }
    let element = ElementType::from_id(header[1]).ok_or(Status::Malformed)?;
    let bound = f32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    let ranked = version >= 2 && header[2] & (RANKED | LOSSY) == RANKED;
    let options =
        Options::new(element, header[2] & !if ranked { RANKED } else { 0 }, bound).ok_or(Status::Malformed)?;
    let size = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if header[3] != 0 || size > MAX_CHUNK_SIZE {
        return Err(Status::Malformed);
    }
    Ok(Header { options, size, geometry: options.geometry().of(version, ranked), ranked })
}

/// The uncompressed size of the chunk `input`, from its header, if its bytes can hold it.
pub fn decompressed_size(input: &[u8]) -> Result<usize, Status> {
    crate::declared_size(read_header(input)?.size, max_decompressed_size(input.len()))
}

/// A ranked chunk's table: the byte each rank stands for.
pub fn symbols(input: &[u8]) -> Result<&[u8; SYMBOLS_LEN], Status> {
    input.get(HEADER_LEN..HEADER_LEN + SYMBOLS_LEN).and_then(|t| t.try_into().ok()).ok_or(Status::Truncated)
}

/// `value`'s `width` bytes, each replaced by `table`'s entry for it.
#[inline(always)]
pub fn map_bytes(value: u64, width: usize, table: &[u8; SYMBOLS_LEN]) -> u64 {
    (0..width).fold(0, |mapped, k| mapped | (table[(value >> (8 * k)) as u8 as usize] as u64) << (8 * k))
}

/// The bytes of `input` from the most frequent to the least (the lower first on a tie): the
/// table of a ranked chunk, `symbols[r]` the byte rank `r` stands for.
pub fn symbols_by_count(input: &[u8]) -> [u8; SYMBOLS_LEN] {
    let mut counts = [0u32; SYMBOLS_LEN];
    for &byte in input {
        counts[byte as usize] += 1;
    }
    let mut symbols = [0; SYMBOLS_LEN];
    for b in 0..SYMBOLS_LEN {
        symbols[rank_of(&counts, b)] = b as u8;
    }
    symbols
}

/// Byte `b`'s rank by `counts`: the bytes more frequent, and those as frequent but lower.
#[inline(always)]
pub fn rank_of(counts: &[u32; SYMBOLS_LEN], b: usize) -> usize {
    let count = counts[b];
    (0..SYMBOLS_LEN).filter(|&c| counts[c] > count || (counts[c] == count && c < b)).count()
}

/// Whether ranking pays for its table: the first `sample` of a chunk's `tiles` take `raw` payload
/// words as they are and `ranked` ranked, and the savings, scaled to the chunk, exceed the table.
pub const fn ranking_pays(raw: usize, ranked: usize, sample: usize, tiles: usize) -> bool {
    raw > ranked && 4 * (raw - ranked) as u64 * tiles as u64 > (SYMBOLS_LEN * sample) as u64
}

/// The `width`-byte element `i` of `bytes`, little-endian; past the end, zeros.
fn element(bytes: &[u8], i: usize, width: usize) -> u64 {
    read_bits(bytes, 8 * i * width, 8 * width as u32)
}

/// Decompresses the chunk `input` into `out`, returning the uncompressed size.
pub fn decompress(input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
    let Header { options, size: n, geometry, ranked } = read_header(input)?;
    let out = out.get_mut(..n).ok_or(Status::OutputTooSmall)?;
    let symbols = if ranked { Some(symbols(input)?) } else { None };
    let (width, count) = (geometry.width, n / geometry.width);
    let mut at = geometry.payload_start(n);
    let (mut values, mut previous) = ([0u64; 128], 0);
    for t in 0..geometry.tiles(n) {
        let entry = geometry.entry(t);
        let tile = Tile::parse(input.get(entry..entry + geometry.header).ok_or(Status::Truncated)?, &geometry)?;
        let end = at + 4 * tile.words(&geometry);
        let payload = input.get(at..end).ok_or(Status::Truncated)?;
        let first = t * geometry.elements;
        let values = &mut values[..geometry.elements];
        decode_tile(&tile, &geometry, payload, previous, values)?;
        previous = values[geometry.elements - 1];
        for (i, &value) in values.iter().take(count - first).enumerate() {
            let value = match (options.error_bound, tile.kind, symbols) {
                (Some(bound), kind, _) if kind != Kind::Verbatim => dequantize(value, width, bound.step()),
                (_, _, Some(symbols)) => map_bytes(value, width, symbols),
                _ => value,
            };
            out[(first + i) * width..(first + i + 1) * width].copy_from_slice(&value.to_le_bytes()[..width]);
        }
        at = end;
    }
    let tail = n % width;
    if input.len() != at + tail {
        return Err(if input.len() < at + tail { Status::Truncated } else { Status::Malformed });
    }
    out[n - tail..].copy_from_slice(&input[at..]);
    Ok(n)
}

/// Decodes the tile with header `tile` and payload `payload` into `values` (its coded
/// elements: quantised where lossy); `previous` is the last of the tile before.
fn decode_tile(
    tile: &Tile,
    geometry: &Geometry,
    payload: &[u8],
    previous: u64,
    values: &mut [u64],
) -> Result<(), Status> {
    let (width, bits) = (geometry.width, tile.bits);
    let (bitmap, packed) = payload.split_at(match tile.kind {
        Kind::Sparse { .. } => 4 * geometry.bitmap_words(),
        Kind::Mask => 4 * geometry.mask_words(),
        _ => 0,
    });
    let varying = read_bits(bitmap, 0, 8 * width as u32);
    let malformed = match tile.kind {
        Kind::Sparse { count } => bitmap.iter().map(|b| b.count_ones() as usize).sum::<usize>() != count,
        Kind::Mask => varying.count_ones() != bits || read_bits(bitmap, 0, 64) != varying,
        _ => false,
    };
    if malformed {
        return Err(Status::Malformed);
    }
    let entry = |i: usize| read_bits(packed, i * bits as usize, bits);
    let masked = |i: usize| tile.base & !varying | deposit(entry(i), varying);
    let packed = |i: usize| tile.base.wrapping_add(entry(i)) & mask(width);
    let (mut sum, mut rank) = (previous, 0);
    for (i, value) in values.iter_mut().enumerate() {
        *value = match tile.kind {
            Kind::Frame => packed(i),
            Kind::Mask => masked(i),
            Kind::Delta => {
                sum = sum.wrapping_add(packed(i)) & mask(width);
                sum
            }
            Kind::Sparse { .. } if bitmap[i / 8] >> (i % 8) & 1 == 1 => {
                rank += 1;
                packed(rank - 1)
            }
            Kind::Sparse { .. } => 0,
            Kind::Verbatim => element(payload, i, width),
        };
    }
    Ok(())
}

/// Compresses `input` into `out`, returning the compressed size.
pub fn compress(input: &[u8], options: &Options, out: &mut [u8]) -> Result<usize, Status> {
    let n = input.len();
    if n > MAX_CHUNK_SIZE {
        return Err(Status::ChunkTooLarge);
    }
    if !options.valid() {
        return Err(Status::Unsupported);
    }
    let size = max_compressed_size(n, options);
    let out = out.get_mut(..size).ok_or(Status::OutputTooSmall)?;
    let plain = options.geometry();
    let symbols = options.error_bound.is_none().then(|| symbols_by_count(input)).filter(|symbols| {
        let ranks = ranks(symbols);
        let sample = plain.tiles(n).min(RANKING_SAMPLE / plain.tile_bytes());
        let words = |ranks| {
            let mut words = 0;
            code_tiles(input, options, &plain, ranks, sample, |_, tile, _, _, _| words += tile.words(&plain));
            words
        };
        ranking_pays(words(None), words(Some(&ranks)), sample, plain.tiles(n))
    });
    let geometry = plain.of(VERSION, symbols.is_some());
    out[..HEADER_LEN].copy_from_slice(&header(options, n, symbols.is_some()));
    if let Some(symbols) = &symbols {
        out[HEADER_LEN..geometry.table].copy_from_slice(symbols);
    }
    let mut at = geometry.payload_start(n);
    out[geometry.table..at].fill(0);
    let ranks = symbols.as_ref().map(ranks);
    code_tiles(input, options, &geometry, ranks.as_ref(), geometry.tiles(n), |t, tile, values, real, previous| {
        let entry = geometry.entry(t);
        for (k, byte) in out[entry..entry + geometry.header].iter_mut().enumerate() {
            *byte = tile.entry_byte(&geometry, k);
        }
        let end = at + 4 * tile.words(&geometry);
        let payload = &mut out[at..end];
        payload.fill(0);
        encode_tile(tile, &geometry, values, real, previous, payload);
        at = end;
    });
    let tail = n % geometry.width;
    out[at..at + tail].copy_from_slice(&input[n - tail..]);
    Ok(at + tail)
}

/// The rank of each byte in `symbols` (its inverse).
pub fn ranks(symbols: &[u8; SYMBOLS_LEN]) -> [u8; SYMBOLS_LEN] {
    let mut ranks = [0; SYMBOLS_LEN];
    for (rank, &byte) in symbols.iter().enumerate() {
        ranks[byte as usize] = rank as u8;
    }
    ranks
}

/// Chooses the codings of the first `tiles` tiles of the chunk `input`, their bytes replaced by
/// `ranks` where given, and calls `f` with each in order: its index, its coding, its coded
/// elements (past the chunk's end, copies of its last; quantised where lossy), how many are
/// real, and the last coded element before it.
fn code_tiles(
    input: &[u8],
    options: &Options,
    geometry: &Geometry,
    ranks: Option<&[u8; SYMBOLS_LEN]>,
    tiles: usize,
    mut f: impl FnMut(usize, &Tile, &[u64], usize, u64),
) {
    let (width, count) = (geometry.width, input.len() / geometry.width);
    let (mut elements, mut previous) = ([0u64; 128], 0);
    let elements = &mut elements[..geometry.elements];
    for t in 0..tiles {
        let first = t * geometry.elements;
        let real = (count - first).min(geometry.elements);
        for (i, e) in elements.iter_mut().enumerate() {
            let value = element(input, first + i.min(real - 1), width);
            *e = ranks.map_or(value, |ranks| map_bytes(value, width, ranks));
        }
        let (tile, values) = tile_of(elements, real, previous, options, geometry);
        f(t, &tile, values, real, previous);
        previous = values[geometry.elements - 1];
    }
}

/// A chunk header (of a ranked chunk where `ranked`).
pub fn header(options: &Options, n: usize, ranked: bool) -> [u8; HEADER_LEN] {
    let mut header = [0; HEADER_LEN];
    let flags = options.flags() | if ranked { RANKED } else { 0 };
    header[..3].copy_from_slice(&[VERSION, options.element as u8, flags]);
    header[4..8].copy_from_slice(&(n as u32).to_le_bytes());
    header[8..].copy_from_slice(&options.error_bound.map_or(0, |b| b.0).to_le_bytes());
    header
}

/// The coding of a tile whose first `real` elements are real and the rest copies of the last,
/// after a tile whose last coded element is `previous`; lossy, the elements it returns are
/// quantised (unless it is verbatim).
fn tile_of<'a>(
    elements: &'a mut [u64],
    real: usize,
    previous: u64,
    options: &Options,
    geometry: &Geometry,
) -> (Tile, &'a [u64]) {
    let width = geometry.width;
    if let Some(bound) = options.error_bound {
        if elements.iter().any(|&e| quantize(e, width, bound).is_none()) {
            return (Tile::VERBATIM, elements);
        }
        for e in elements.iter_mut() {
            *e = quantize(*e, width, bound).unwrap_or(0);
        }
    }
    let extremes = elements.iter().fold(Extremes::EMPTY, |x, &e| x.merge(Extremes::of(e, width)));
    let deltas = (0..elements.len()).map(|i| delta(elements, i, previous, width));
    let delta_extremes = deltas.fold(Extremes::EMPTY, |x, d| x.merge(Extremes::of(d, width)));
    let varying = elements.iter().fold(0, |varying, &e| varying | e ^ elements[0]);
    let sparse = options.sparse.then(|| {
        let nonzero = elements[..real].iter().filter(|&&e| e != 0);
        let extremes = nonzero.clone().fold(Extremes::EMPTY, |x, &e| x.merge(Extremes::of(e, width)));
        (frame(extremes, width), nonzero.count())
    });
    let (frame, delta) = (frame(extremes, width), frame(delta_extremes, width));
    (choose(geometry, frame, delta, (varying, elements[0]), sparse), elements)
}

/// Element `i`'s difference from the one before it (`previous` before the first).
fn delta(elements: &[u64], i: usize, previous: u64, width: usize) -> u64 {
    let before = if i == 0 { previous } else { elements[i - 1] };
    elements[i].wrapping_sub(before) & mask(width)
}

/// Writes a tile's payload (zeroed) from its elements, of which the first `real` are real (after
/// a tile whose last is `previous`).
fn encode_tile(tile: &Tile, geometry: &Geometry, elements: &[u64], real: usize, previous: u64, payload: &mut [u8]) {
    let (width, bits) = (geometry.width, tile.bits);
    match tile.kind {
        Kind::Frame => {
            for (i, &e) in elements.iter().enumerate() {
                write_bits(payload, i * bits as usize, bits, e.wrapping_sub(tile.base) & mask(width));
            }
        }
        Kind::Delta => {
            for i in 0..elements.len() {
                let packed = delta(elements, i, previous, width).wrapping_sub(tile.base) & mask(width);
                write_bits(payload, i * bits as usize, bits, packed);
            }
        }
        Kind::Mask => {
            let (varying, packed) = payload.split_at_mut(4 * geometry.mask_words());
            write_bits(varying, 0, 8 * width as u32, tile.varying);
            for (i, &e) in elements.iter().enumerate() {
                write_bits(packed, i * bits as usize, bits, extract(e, tile.varying));
            }
        }
        Kind::Sparse { .. } => {
            let (bitmap, packed) = payload.split_at_mut(4 * geometry.bitmap_words());
            let nonzero = elements[..real].iter().enumerate().filter(|&(_, &e)| e != 0);
            for (rank, (i, &e)) in nonzero.enumerate() {
                bitmap[i / 8] |= 1 << (i % 8);
                write_bits(packed, rank * bits as usize, bits, e.wrapping_sub(tile.base) & mask(width));
            }
        }
        Kind::Verbatim => {
            for (i, &e) in elements.iter().enumerate() {
                write_bits(payload, 8 * i * width, 8 * width as u32, e);
            }
        }
    }
}

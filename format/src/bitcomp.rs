//! Bitcomp: fixed-width numbers in tiles of 128 bytes (256 for 64-bit elements), each tile stored
//! as a frame of reference or as deltas, bit-packed, or (the sparse algorithm) as a bitmap of its
//! non-zero elements and those packed; with an error bound, floating-point elements are first
//! quantised to multiples of twice the bound. nvCOMP's Bitcomp, in ferrocomp's own byte layout
//! (docs/FORMAT.md gives it byte by byte).
//!
//! A chunk is a header, a table of fixed-size tile headers, the tiles' payloads (whole 32-bit
//! words, so a tile's payload size follows from its header alone), and the chunk's last
//! `len % width` bytes as they are. A tile's elements are packed least significant bit first,
//! element `i` at bit `i * bits` of its payload: on the GPU, lane `l` of a warp owns the tile's
//! `l`-th 4 (or 8) bytes, and so a contiguous run of bits.
//!
//! [`compress`] picks, per tile, the smallest of the codings the options allow (frame of
//! reference on a tie); [`decompress`] checks every header, size and count and never panics.

pub use crate::ElementType;
use crate::Status;
use crate::bitpack::{Extremes, Frame, mask, read_bits, sign_extend, write_bits};

/// The format version [`compress`] writes.
pub const VERSION: u8 = 1;
/// The chunk header: version, element type, flags ([`SPARSE`], [`LOSSY`]), a reserved byte, the
/// uncompressed size (u32), and the error bound (f32; 0 without [`LOSSY`]).
pub const HEADER_LEN: usize = 12;
/// Largest chunk [`compress`] accepts (16 MiB, as LZ4's).
pub const MAX_CHUNK_SIZE: usize = 1 << 24;
/// Header flag: tiles may be sparse (the table's entries have a count byte).
pub const SPARSE: u8 = 1;
/// Header flag: the elements are floats, quantised within the header's error bound.
pub const LOSSY: u8 = 2;
/// A tile header's mode byte for a tile stored as it is.
pub const VERBATIM: u8 = 0xFF;
/// A mode byte's flag for a tile stored as deltas (the rest is the bits per delta).
pub const DELTA: u8 = 0x80;
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
}

impl Geometry {
    /// The tiles of `width`-byte elements, their headers with a count byte where `sparse`.
    pub const fn new(width: usize, sparse: bool) -> Self {
        Self { width, elements: LANES * per_lane(width), header: 1 + sparse as usize + width, sparse }
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
        (HEADER_LEN + self.tiles(n) * self.header).next_multiple_of(4)
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
}

impl Tile {
    /// The tile header `entry` (`geometry.header` bytes), checked.
    pub fn parse(entry: &[u8], geometry: &Geometry) -> Result<Self, Status> {
        let width = geometry.width;
        let mode = entry[0];
        let count = if geometry.sparse { entry[1] } else { DENSE };
        let base = entry[entry.len() - width..].iter().rev().fold(0, |base, &b| base << 8 | b as u64);
        let bits = (mode & !DELTA) as u32;
        let kind = match (mode, count) {
            (VERBATIM, DENSE) => return Ok(Self { kind: Kind::Verbatim, bits: 0, base: 0 }),
            (_, DENSE) if mode & DELTA != 0 => Kind::Delta,
            (_, DENSE) => Kind::Frame,
            (_, count) if mode & DELTA == 0 && count as usize <= geometry.elements => {
                Kind::Sparse { count: count as usize }
            }
            _ => return Err(Status::Malformed),
        };
        if bits > 8 * width as u32 {
            return Err(Status::Malformed);
        }
        Ok(Self { kind, bits, base })
    }

    /// Byte `k` of the tile's header: the mode, the count (in sparse chunks), the base.
    #[inline(always)]
    pub fn entry_byte(&self, geometry: &Geometry, k: usize) -> u8 {
        let (mode, count) = match self.kind {
            Kind::Frame => (self.bits as u8, DENSE),
            Kind::Delta => (DELTA | self.bits as u8, DENSE),
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
/// elements, of its deltas, and, where given, the sparse coding (the non-zero elements' frame and
/// count); the earlier on a tie.
pub fn choose(geometry: &Geometry, frame: Frame, delta: Frame, sparse: Option<(Frame, usize)>) -> Tile {
    let mut best = Tile { kind: Kind::Frame, bits: frame.bits, base: frame.base };
    if delta.bits < frame.bits {
        best = Tile { kind: Kind::Delta, bits: delta.bits, base: delta.base };
    }
    if let Some((frame, count)) = sparse {
        let tile = Tile { kind: Kind::Sparse { count }, bits: frame.bits, base: frame.base };
        if tile.words(geometry) < best.words(geometry) {
            best = tile;
        }
    }
    best
}

/// Largest compressed size of an `n`-byte chunk: every tile whole, the last padded.
pub const fn max_compressed_size(n: usize, options: &Options) -> usize {
    let geometry = Geometry::new(options.element.width(), options.sparse);
    geometry.payload_start(n) + geometry.tiles(n) * geometry.tile_bytes() + n % geometry.width
}

/// Largest size `compressed_len` bytes can decode to: each tile of at most 256 bytes needs a
/// header of at least 2 (a guard against lying headers).
pub const fn max_decompressed_size(compressed_len: usize) -> usize {
    let bound = compressed_len.saturating_sub(HEADER_LEN) / 2 * 256 + 7;
    if bound > MAX_CHUNK_SIZE { MAX_CHUNK_SIZE } else { bound }
}

/// A chunk header's options and uncompressed size, checked.
pub fn read_header(input: &[u8]) -> Result<(Options, usize), Status> {
    let header: &[u8; HEADER_LEN] = input.get(..HEADER_LEN).and_then(|h| h.try_into().ok()).ok_or(Status::Truncated)?;
    if header[0] != VERSION {
        return Err(Status::Unsupported);
    }
    let element = ElementType::from_id(header[1]).ok_or(Status::Malformed)?;
    let bound = f32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    let options = Options::new(element, header[2], bound).ok_or(Status::Malformed)?;
    let n = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if header[3] != 0 || n > MAX_CHUNK_SIZE {
        return Err(Status::Malformed);
    }
    Ok((options, n))
}

/// The uncompressed size of the chunk `input`, from its header, if its bytes can hold it.
pub fn decompressed_size(input: &[u8]) -> Result<usize, Status> {
    crate::declared_size(read_header(input)?.1, max_decompressed_size(input.len()))
}

/// The `width`-byte element `i` of `bytes`, little-endian; past the end, zeros.
fn element(bytes: &[u8], i: usize, width: usize) -> u64 {
    read_bits(bytes, 8 * i * width, 8 * width as u32)
}

/// Decompresses the chunk `input` into `out`, returning the uncompressed size.
pub fn decompress(input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
    let (options, n) = read_header(input)?;
    let out = out.get_mut(..n).ok_or(Status::OutputTooSmall)?;
    let geometry = options.geometry();
    let (width, count) = (geometry.width, n / geometry.width);
    let mut at = geometry.payload_start(n);
    let (mut values, mut previous) = ([0u64; 128], 0);
    for t in 0..geometry.tiles(n) {
        let entry = HEADER_LEN + t * geometry.header;
        let tile = Tile::parse(input.get(entry..entry + geometry.header).ok_or(Status::Truncated)?, &geometry)?;
        let end = at + 4 * tile.words(&geometry);
        let payload = input.get(at..end).ok_or(Status::Truncated)?;
        let first = t * geometry.elements;
        let values = &mut values[..geometry.elements];
        decode_tile(&tile, &geometry, payload, previous, values)?;
        previous = values[geometry.elements - 1];
        for (i, &value) in values.iter().take(count - first).enumerate() {
            let value = match (options.error_bound, tile.kind) {
                (Some(bound), kind) if kind != Kind::Verbatim => dequantize(value, width, bound.step()),
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
        _ => 0,
    });
    if let Kind::Sparse { count } = tile.kind
        && bitmap.iter().map(|b| b.count_ones() as usize).sum::<usize>() != count
    {
        return Err(Status::Malformed);
    }
    let packed = |i: usize| tile.base.wrapping_add(read_bits(packed, i * bits as usize, bits)) & mask(width);
    let (mut sum, mut rank) = (previous, 0);
    for (i, value) in values.iter_mut().enumerate() {
        *value = match tile.kind {
            Kind::Frame => packed(i),
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
    let geometry = options.geometry();
    let width = geometry.width;
    let size = max_compressed_size(n, options);
    let out = out.get_mut(..size).ok_or(Status::OutputTooSmall)?;
    out[..HEADER_LEN].copy_from_slice(&header(options, n));
    let start = geometry.payload_start(n);
    out[HEADER_LEN..start].fill(0);
    let mut at = start;
    let count = n / width;
    let (mut elements, mut previous) = ([0u64; 128], 0);
    let elements = &mut elements[..geometry.elements];
    for t in 0..geometry.tiles(n) {
        let first = t * geometry.elements;
        let real = (count - first).min(geometry.elements);
        for (i, e) in elements.iter_mut().enumerate() {
            *e = element(input, first + i.min(real - 1), width);
        }
        let (tile, values) = tile_of(elements, real, previous, options, &geometry);
        let entry = HEADER_LEN + t * geometry.header;
        for (k, byte) in out[entry..entry + geometry.header].iter_mut().enumerate() {
            *byte = tile.entry_byte(&geometry, k);
        }
        let end = at + 4 * tile.words(&geometry);
        let payload = &mut out[at..end];
        payload.fill(0);
        encode_tile(&tile, &geometry, values, real, previous, payload);
        previous = values[geometry.elements - 1];
        at = end;
    }
    let tail = n % width;
    out[at..at + tail].copy_from_slice(&input[n - tail..]);
    Ok(at + tail)
}

/// A chunk header.
pub fn header(options: &Options, n: usize) -> [u8; HEADER_LEN] {
    let mut header = [0; HEADER_LEN];
    header[..3].copy_from_slice(&[VERSION, options.element as u8, options.flags()]);
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
            return (Tile { kind: Kind::Verbatim, bits: 0, base: 0 }, elements);
        }
        for e in elements.iter_mut() {
            *e = quantize(*e, width, bound).unwrap_or(0);
        }
    }
    let extremes = elements.iter().fold(Extremes::EMPTY, |x, &e| x.merge(Extremes::of(e, width)));
    let deltas = (0..elements.len()).map(|i| delta(elements, i, previous, width));
    let delta_extremes = deltas.fold(Extremes::EMPTY, |x, d| x.merge(Extremes::of(d, width)));
    let sparse = options.sparse.then(|| {
        let nonzero = elements[..real].iter().filter(|&&e| e != 0);
        let extremes = nonzero.clone().fold(Extremes::EMPTY, |x, &e| x.merge(Extremes::of(e, width)));
        (frame(extremes, width), nonzero.count())
    });
    (choose(geometry, frame(extremes, width), frame(delta_extremes, width), sparse), elements)
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

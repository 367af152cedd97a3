//! Cascaded: run-length, delta and bit-packing layers over fixed-width integers (nvCOMP's
//! Cascaded, in ferrocomp's own byte layout; docs/FORMAT.md gives it byte by byte).
//!
//! A chunk is cut into sub-blocks of [`SUB_BLOCK`] bytes, each coded on its own so that a warp
//! holds one in shared memory. A sub-block's elements go through `R` run-length layers (each
//! splits its input into the values of its runs and their lengths; the next layer takes the
//! values), then `D` delta layers over the last values, and every resulting stream (the `R` run
//! lengths and the values) is stored frame-of-reference bit-packed: a base and `bits` bits per
//! entry. A delta layer takes its first entry's difference from that entry itself (0) and keeps
//! the entry beside the stream, so a large first value does not widen the frame. A sub-block the
//! layers would not shrink is stored as it is.
//!
//! [`compress`] writes the layers the options ask for, or with [`Options::auto`] (the default)
//! whichever counts up to those code each sub-block smallest; [`decompress`] and [`decompressed_size`] check every count,
//! run and length, and never panic.

pub use crate::ElementType;
use crate::Status;
use crate::bitpack::{Extremes, mask, packed_len, read_bits, write_bits};

/// Bytes of input per sub-block (nvCOMP's default Cascaded chunk size); a multiple of every
/// element width.
pub const SUB_BLOCK: usize = 4096;
/// Largest chunk [`compress`] accepts (16 MiB, as LZ4's).
pub const MAX_CHUNK_SIZE: usize = 1 << 24;
/// Most run-length layers and most delta layers a sub-block may have.
pub const MAX_LAYERS: usize = 4;
/// The chunk header: version, element type, two reserved bytes, the uncompressed size (u32).
pub const HEADER_LEN: usize = 8;
/// The format version [`compress`] writes.
pub const VERSION: u8 = 1;
/// A sub-block's first byte when it is stored as it is.
pub const STORED: u8 = 0xFF;
/// Bytes of a run-length stream's entries, unpacked (runs are at most [`SUB_BLOCK`] long).
pub const RUN_WIDTH: usize = 2;

/// Cascaded's options: the element type and the layers (nvCOMP's `num_rles`, `num_deltas`,
/// `use_bitpack`), and whether they are a most (the smallest coding per sub-block is searched
/// for) or exact (nvCOMP's meaning).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// The elements' type.
    pub element: ElementType,
    /// Run-length layers, at most [`MAX_LAYERS`] (nvCOMP's default 2).
    pub rles: u8,
    /// Delta layers, at most [`MAX_LAYERS`] (nvCOMP's default 1).
    pub deltas: u8,
    /// Whether streams are bit-packed (else each entry keeps its full width).
    pub bitpack: bool,
    /// Per sub-block, the run-length and delta layer counts up to `rles` and `deltas` that code
    /// it smallest (where nvCOMP always applies them all: a run-length layer over data with
    /// few runs costs a bit an element).
    pub auto: bool,
}

impl Default for Options {
    /// nvCOMP 4's layers (two run-length layers, one delta layer, packed) as most, searched per
    /// sub-block (as nvCOMP 5 and later search theirs), over nvCOMP's default 32-bit integers.
    fn default() -> Self {
        Self { element: ElementType::U32, rles: 2, deltas: 1, bitpack: true, auto: true }
    }
}

impl Options {
    /// The options as the kernels' options word.
    pub const fn to_word(self) -> u32 {
        self.element as u32
            | (self.rles as u32) << 8
            | (self.deltas as u32) << 16
            | (self.bitpack as u32) << 24
            | (self.auto as u32) << 25
    }

    /// The options of an options word, if it holds valid ones.
    pub fn from_word(word: u32) -> Option<Self> {
        let options = Self {
            element: ElementType::from_id(word as u8)?,
            rles: (word >> 8) as u8,
            deltas: (word >> 16) as u8,
            bitpack: word >> 24 & 1 == 1,
            auto: word >> 25 & 1 == 1,
        };
        options.valid().then_some(options)
    }

    /// Whether the layer counts are within [`MAX_LAYERS`].
    pub fn valid(&self) -> bool {
        self.rles as usize <= MAX_LAYERS && self.deltas as usize <= MAX_LAYERS
    }
}

/// Sub-blocks of an `n`-byte chunk.
pub const fn sub_blocks(n: usize) -> usize {
    n.div_ceil(SUB_BLOCK)
}

/// Largest compressed size of an `n`-byte chunk: the header, the size table, and every
/// sub-block stored.
pub const fn max_compressed_size(n: usize) -> usize {
    HEADER_LEN + 3 * sub_blocks(n) + n
}

/// Largest size `compressed_len` bytes can decode to: each sub-block of [`SUB_BLOCK`] bytes
/// takes at least a 2-byte size and its first byte (a guard against lying headers).
pub const fn max_decompressed_size(compressed_len: usize) -> usize {
    let bound = compressed_len.saturating_sub(HEADER_LEN) / 3 * SUB_BLOCK;
    if bound > MAX_CHUNK_SIZE { MAX_CHUNK_SIZE } else { bound }
}

/// Where one stream of a sub-block lies, as [`Layout::parse`] finds it (offsets in 32 bits: a
/// sub-block is at most `1 + SUB_BLOCK` bytes, and a GPU's arithmetic on them stays narrow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stream {
    /// Entries.
    pub count: u32,
    /// Offset of the packed entries in the sub-block.
    pub at: u32,
    /// The frame of reference's base, added to each packed entry.
    pub base: u64,
    /// Bits per packed entry.
    pub bits: u32,
}

impl Stream {
    /// Entry `i` of the stream in `bytes` (the sub-block), `width` bytes wide.
    #[inline(always)]
    pub fn entry(&self, bytes: &[u8], i: usize, width: usize) -> u64 {
        let bit = 8 * self.at as usize + i * self.bits as usize;
        self.base.wrapping_add(read_bits(bytes, bit, self.bits)) & mask(width)
    }
}

/// A coded sub-block's layers and streams.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// Run-length layers, applied first.
    pub rles: u32,
    /// Delta layers, applied after the run-length layers, to the last layer's values.
    pub deltas: u32,
    /// The run lengths of layer `r + 1` (applied `r`-th to the input): `runs[r].count` runs,
    /// which add up to the previous layer's entries (the elements for `r = 0`).
    pub runs: [Stream; MAX_LAYERS],
    /// The last layer's values, after the delta layers.
    pub values: Stream,
    /// The first delta layer's first entry (the others' are 0).
    pub start: u64,
    /// Offset of the trailing bytes (those past the last whole element) in the sub-block.
    pub tail: u32,
}

impl Layout {
    /// The layout of the coded (not stored) sub-block of `len` bytes whose byte `i` is
    /// `byte(i)` (a slice on the CPU, a GPU warp's staged copy), holding `elements` elements of
    /// `width` bytes and `tail` bytes more: checks every count against its layer and every
    /// stream against the sub-block's end, which must be the tail's. Reads only bytes below
    /// `len`.
    #[inline(always)]
    pub fn parse(len: u32, byte: impl Fn(u32) -> u8, width: u32, elements: u32, tail: u32) -> Result<Self, Status> {
        // The `n` bytes at `at`, little-endian, if the sub-block holds them.
        let read = |at: u32, n: u32| {
            if at + n > len {
                return Err(Status::Truncated);
            }
            Ok((0..n).rev().fold(0u64, |value, k| value << 8 | byte(at + k) as u64))
        };
        let layers = read(0, 1)? as u32;
        let (rles, deltas) = (layers & 15, layers >> 4);
        if rles as usize > MAX_LAYERS || deltas as usize > MAX_LAYERS {
            return Err(Status::Malformed);
        }
        let mut layout = Self { rles, deltas, ..Self::default() };
        let mut at = 1 + 2 * rles;
        if at > len {
            return Err(Status::Truncated);
        }
        // Reads a stream's header (bits, then a base of `width` bytes) at `at` and steps past
        // its `count` packed entries.
        let stream = |at: &mut u32, count: u32, width: u32| {
            let bits = read(*at, 1)? as u32;
            if bits > 8 * width {
                return Err(Status::Malformed);
            }
            let stream = Stream { count, at: *at + 1 + width, base: read(*at + 1, width)?, bits };
            *at = stream.at + packed_len(count as usize, bits) as u32;
            Ok(stream)
        };
        let mut previous = elements;
        // Constant indices (a guard, not a bound) keep the layout in a GPU's registers.
        for r in 0..MAX_LAYERS as u32 {
            if r < rles {
                let count = read(1 + 2 * r, 2)? as u32;
                // Each layer has at most one run per entry of the one before, and some if it has any.
                if count > previous || (count == 0) != (previous == 0) {
                    return Err(Status::Malformed);
                }
                layout.runs[r as usize] = stream(&mut at, count, RUN_WIDTH as u32)?;
                previous = count;
            }
        }
        if deltas > 0 {
            layout.start = read(at, width)?;
            at += width;
        }
        layout.values = stream(&mut at, previous, width)?;
        layout.tail = at;
        match (at + tail).cmp(&len) {
            core::cmp::Ordering::Equal => Ok(layout),
            core::cmp::Ordering::Greater => Err(Status::Truncated),
            core::cmp::Ordering::Less => Err(Status::Malformed),
        }
    }
}

/// The chunk header's element type and uncompressed size, checked against the input's length
/// (the size table must fit) and [`MAX_CHUNK_SIZE`].
pub fn read_header(input: &[u8]) -> Result<(ElementType, usize), Status> {
    let header = input.get(..HEADER_LEN).ok_or(Status::Truncated)?;
    if header[0] != VERSION {
        return Err(Status::Unsupported);
    }
    let element = ElementType::from_id(header[1]).ok_or(Status::Malformed)?;
    if header[2] != 0 || header[3] != 0 {
        return Err(Status::Malformed);
    }
    let n = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if n > MAX_CHUNK_SIZE {
        return Err(Status::Malformed);
    }
    if input.len() < HEADER_LEN + 2 * sub_blocks(n) {
        return Err(Status::Truncated);
    }
    Ok((element, n))
}

/// Size of compressed sub-block `i` from the size table.
#[inline(always)]
pub fn sub_block_size(input: &[u8], i: usize) -> usize {
    u16::from_le_bytes([input[HEADER_LEN + 2 * i], input[HEADER_LEN + 2 * i + 1]]) as usize
}

/// The size `input` decompresses to, from its header, if its bytes can hold it.
pub fn decompressed_size(input: &[u8]) -> Result<usize, Status> {
    crate::declared_size(read_header(input)?.1, max_decompressed_size(input.len()))
}

/// Decompresses the chunk `input` into `out`; returns its size.
pub fn decompress(input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
    let (element, n) = read_header(input)?;
    let out = out.get_mut(..n).ok_or(Status::OutputTooSmall)?;
    let mut at = HEADER_LEN + 2 * sub_blocks(n);
    let mut elements = [0u64; SUB_BLOCK];
    for (i, out) in out.chunks_mut(SUB_BLOCK).enumerate() {
        let size = sub_block_size(input, i);
        let bytes = input.get(at..at + size).ok_or(Status::Truncated)?;
        decode_sub_block(bytes, element.width(), out, &mut elements)?;
        at += size;
    }
    if at != input.len() { Err(Status::Malformed) } else { Ok(n) }
}

/// Decodes one sub-block into `out` (its bytes, all of them), with `elements` as room.
fn decode_sub_block(bytes: &[u8], width: usize, out: &mut [u8], elements: &mut [u64; SUB_BLOCK]) -> Result<(), Status> {
    if bytes.len() > 1 + SUB_BLOCK {
        return Err(Status::Malformed); // a coding larger than stored is not written
    }
    if bytes.first() == Some(&STORED) {
        if bytes.len() != 1 + out.len() {
            return Err(if bytes.len() < 1 + out.len() { Status::Truncated } else { Status::Malformed });
        }
        out.copy_from_slice(&bytes[1..]);
        return Ok(());
    }
    let (count, tail) = (out.len() / width, out.len() % width);
    let layout = Layout::parse(bytes.len() as u32, |i| bytes[i as usize], width as u32, count as u32, tail as u32)?;
    // The values go to the end of the room; each run-length layer expands its values forward
    // from there to the end, never past an entry it has still to read.
    let values = layout.values;
    let mut first = count - values.count as usize;
    // Undoing the last delta layer first; the first layer's sum starts from its kept entry.
    let mut sums = [0u64; MAX_LAYERS];
    let deltas = layout.deltas as usize;
    if deltas > 0 {
        sums[deltas - 1] = layout.start;
    }
    for i in 0..values.count as usize {
        let mut value = values.entry(bytes, i, width);
        for sum in &mut sums[..deltas] {
            *sum = sum.wrapping_add(value) & mask(width);
            value = *sum;
        }
        elements[first + i] = value;
    }
    for r in (0..layout.rles as usize).rev() {
        let runs = layout.runs[r];
        let target = if r == 0 { count } else { layout.runs[r - 1].count as usize };
        let mut at = count - target;
        for i in 0..runs.count as usize {
            let (run, value) = (runs.entry(bytes, i, RUN_WIDTH) as usize, elements[first + i]);
            if run == 0 || at + run > count {
                return Err(Status::Malformed);
            }
            elements[at..at + run].fill(value);
            at += run;
        }
        if at != count {
            return Err(Status::Malformed);
        }
        first = count - target;
    }
    for (element, out) in elements[..count].iter().zip(out.chunks_exact_mut(width)) {
        out.copy_from_slice(&element.to_le_bytes()[..width]);
    }
    out[count * width..].copy_from_slice(&bytes[layout.tail as usize..]);
    Ok(())
}

/// Compresses `input` with `options` into `out`; returns the compressed size.
pub fn compress(input: &[u8], options: &Options, out: &mut [u8]) -> Result<usize, Status> {
    if input.len() > MAX_CHUNK_SIZE {
        return Err(Status::ChunkTooLarge);
    }
    if !options.valid() {
        return Err(Status::Unsupported);
    }
    let table = HEADER_LEN + 2 * sub_blocks(input.len());
    let header = out.get_mut(..table).ok_or(Status::OutputTooSmall)?;
    header[..4].copy_from_slice(&[VERSION, options.element as u8, 0, 0]);
    header[4..HEADER_LEN].copy_from_slice(&(input.len() as u32).to_le_bytes());
    let mut at = table;
    let mut scratch = SubBlockScratch::new();
    for (i, sub_block) in input.chunks(SUB_BLOCK).enumerate() {
        let size = scratch.encode(sub_block, options);
        out.get_mut(at..at + size).ok_or(Status::OutputTooSmall)?.copy_from_slice(&scratch.coded[..size]);
        out[HEADER_LEN + 2 * i..HEADER_LEN + 2 * i + 2].copy_from_slice(&(size as u16).to_le_bytes());
        at += size;
    }
    Ok(at)
}

/// The CPU encoder's working memory for one sub-block.
struct SubBlockScratch {
    /// Each layer's entries: the elements, then each run-length layer's values.
    values: [[u64; SUB_BLOCK]; 1 + MAX_LAYERS],
    runs: [[u16; SUB_BLOCK]; MAX_LAYERS],
    counts: [usize; 1 + MAX_LAYERS],
    /// The coded sub-block, and room for a second coding while the layers are searched.
    coded: [u8; 1 + SUB_BLOCK],
    trial: [u8; 1 + SUB_BLOCK],
}

impl SubBlockScratch {
    fn new() -> Self {
        Self {
            values: [[0; SUB_BLOCK]; 1 + MAX_LAYERS],
            runs: [[0; SUB_BLOCK]; MAX_LAYERS],
            counts: [0; 1 + MAX_LAYERS],
            coded: [0; 1 + SUB_BLOCK],
            trial: [0; 1 + SUB_BLOCK],
        }
    }

    /// Codes `bytes` into `self.coded`; returns the coded size.
    fn encode(&mut self, bytes: &[u8], options: &Options) -> usize {
        let width = options.element.width();
        let count = bytes.len() / width;
        for (value, element) in self.values[0].iter_mut().zip(bytes.chunks_exact(width)) {
            let mut le = [0u8; 8];
            le[..width].copy_from_slice(element);
            *value = u64::from_le_bytes(le);
        }
        self.counts[0] = count;
        let (rles, deltas) = (options.rles as usize, options.deltas as usize);
        for r in 0..rles {
            let (from, to) = (r, r + 1);
            let n = self.counts[r];
            let mut runs = 0;
            for i in 0..n {
                let value = self.values[from][i];
                if i == 0 || value != self.values[to][runs - 1] {
                    self.values[to][runs] = value;
                    self.runs[r][runs] = 0;
                    runs += 1;
                }
                self.runs[r][runs - 1] += 1;
            }
            self.counts[r + 1] = runs;
        }
        let mut best = usize::MAX;
        // The search tries run-length layers, then delta layers, from 0 up and keeps the first
        // smallest.
        let configs = if options.auto { (rles + 1) * (deltas + 1) } else { 1 };
        for k in 0..configs {
            let (r, d) = if options.auto { (k / (deltas + 1), k % (deltas + 1)) } else { (rles, deltas) };
            let size = self.write(bytes, width, r, d, options.bitpack);
            if size < best {
                best = size;
                self.coded[..size].copy_from_slice(&self.trial[..size]);
            }
        }
        best
    }

    /// Writes the sub-block with `rles` and `deltas` layers into `self.trial`, or stored where
    /// that is smaller; returns its size.
    fn write(&mut self, bytes: &[u8], width: usize, rles: usize, deltas: usize, bitpack: bool) -> usize {
        let stored = |trial: &mut [u8; 1 + SUB_BLOCK]| {
            trial[0] = STORED;
            trial[1..1 + bytes.len()].copy_from_slice(bytes);
            1 + bytes.len()
        };
        let mut writer = BitWriter { out: &mut self.trial, at: 0, fits: true };
        writer.bytes(&[rles as u8 | (deltas as u8) << 4]);
        for r in 0..rles {
            writer.bytes(&(self.counts[r + 1] as u16).to_le_bytes()); // RUN_WIDTH bytes
        }
        for r in 0..rles {
            let runs = &self.runs[r][..self.counts[r + 1]];
            writer.stream(runs.iter().map(|&run| run as u64), RUN_WIDTH, bitpack);
        }
        let values = &self.values[rles][..self.counts[rles]];
        if deltas > 0 {
            writer.bytes(&values.first().copied().unwrap_or(0).to_le_bytes()[..width]);
        }
        writer.stream(Deltas::new(values, deltas, width), width, bitpack);
        writer.bytes(&bytes[bytes.len() / width * width..]);
        let (at, fits) = (writer.at, writer.fits);
        if fits && at <= 1 + bytes.len() { at } else { stored(&mut self.trial) }
    }
}

/// The entries of `values` after `layers` delta layers (each replaces every entry by its
/// difference from the one before, in `width` bytes, the first's taken from itself).
#[derive(Clone)]
struct Deltas<'a> {
    values: &'a [u64],
    previous: [u64; MAX_LAYERS],
    layers: usize,
    width: usize,
    i: usize,
}

impl<'a> Deltas<'a> {
    fn new(values: &'a [u64], layers: usize, width: usize) -> Self {
        let mut previous = [0; MAX_LAYERS];
        previous[0] = values.first().copied().unwrap_or(0);
        Self { values, previous, layers, width, i: 0 }
    }
}

impl Iterator for Deltas<'_> {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        let mut value = *self.values.get(self.i)?;
        self.i += 1;
        for previous in &mut self.previous[..self.layers] {
            (value, *previous) = (value.wrapping_sub(*previous) & mask(self.width), value);
        }
        Some(value)
    }
}

/// Appends bytes and bit-packed streams to a sub-block, noting when they would not fit.
struct BitWriter<'a> {
    out: &'a mut [u8; 1 + SUB_BLOCK],
    at: usize,
    fits: bool,
}

impl BitWriter<'_> {
    fn bytes(&mut self, bytes: &[u8]) {
        if let Some(out) = self.out.get_mut(self.at..self.at + bytes.len()) {
            out.copy_from_slice(bytes);
        } else {
            self.fits = false;
        }
        self.at += bytes.len();
    }

    /// A stream of `width`-byte entries: its frame of reference, then the entries packed.
    fn stream(&mut self, entries: impl Iterator<Item = u64> + Clone, width: usize, bitpack: bool) {
        let extremes = entries.clone().fold(Extremes::EMPTY, |e, v| e.merge(Extremes::of(v, width)));
        let frame = extremes.frame(width, bitpack);
        self.bytes(&[frame.bits as u8]);
        self.bytes(&frame.base.to_le_bytes()[..width]);
        let count = entries.clone().count();
        let len = packed_len(count, frame.bits);
        let Some(out) = self.out.get_mut(self.at..self.at + len) else {
            (self.fits, self.at) = (false, self.at + len);
            return;
        };
        out.fill(0);
        for (i, value) in entries.enumerate() {
            let packed = value.wrapping_sub(frame.base) & mask(width);
            write_bits(out, i * frame.bits as usize, frame.bits, packed);
        }
        self.at += len;
    }
}

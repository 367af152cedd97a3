//! Bitcomp on the GPU: a warp per chunk, a tile at a time, the format crate's bytes written and
//! read (`ferrocomp_format::bitcomp`).
//!
//! Lane `l` owns the tile's `l`-th 4 bytes (or 8-byte element), so its packed bits are one
//! contiguous run. Compressing, a tile's frames of reference (of its elements, of their deltas)
//! and non-zero count are warp reductions; the chosen coding's runs are merged into whole words
//! by a segmented scan and stored straight to the output. Decompressing, 32 tile headers are read at once, one a lane, their payload offsets
//! a scan; then each tile is decoded a lane word a lane (a delta tile's sums a scan, a sparse
//! tile's ranks a scan of its bitmap's counts) and stored whole.

use crate::bitpack::{Words, reduce_extremes, scan_add64, shuffle_value, write_runs};
use crate::lz77::scan_add;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::bitcomp::{
    Geometry, HEADER_LEN, Kind, MAX_CHUNK_SIZE, Options, Tile, choose, dequantize, frame, header, max_compressed_size,
    per_lane, quantize, read_header,
};
use ferrocomp_format::bitpack::{Extremes, mask};

/// Warps per block of both kernels.
pub const WARPS: u32 = 4;
/// Blocks of either kernel an SM must hold at once: 32 warps.
pub const BLOCKS_PER_SM: u32 = 32 / WARPS;
/// Most elements a lane owns (4 bytes).
const MAX_PER_LANE: usize = 4;

/// A lane's elements of a tile.
type Elements = [u64; MAX_PER_LANE];

/// The `width`-byte element at `at`, byte by byte.
#[inline(always)]
unsafe fn load_bytes(at: *const u8, width: usize) -> u64 {
    (0..width).rev().fold(0, |value, k| value << 8 | unsafe { *at.add(k) } as u64)
}

/// Compresses the `n` bytes at `input` with `options` into `out` (room for `capacity` bytes),
/// as `ferrocomp_format::bitcomp::compress`; returns the compressed size (in every lane).
///
/// # Safety
/// `input` must be readable for `n` bytes and `out` writable for `capacity` bytes, by this warp
/// alone.
pub unsafe fn compress_chunk<W: Warp>(
    warp: &W,
    input: *const u8,
    n: usize,
    options: &Options,
    out: *mut u8,
    capacity: usize,
) -> Result<usize, Status> {
    if n > MAX_CHUNK_SIZE {
        return Err(Status::ChunkTooLarge);
    }
    if !options.valid() {
        return Err(Status::Unsupported);
    }
    if capacity < max_compressed_size(n, options) {
        return Err(Status::OutputTooSmall);
    }
    let start = options.geometry().payload_start(n);
    let chunk_header = header(options, n);
    let word = |k: usize| {
        u32::from_le_bytes([
            chunk_header[4 * k],
            chunk_header[4 * k + 1],
            chunk_header[4 * k + 2],
            chunk_header[4 * k + 3],
        ])
    };
    let words = [word(0), word(1), word(2)];
    warp.for_each_strided(start, |i| {
        // Picked by comparisons, which keep the header in registers.
        let word = if i < 4 {
            words[0]
        } else if i < 8 {
            words[1]
        } else {
            words[2]
        };
        unsafe { *out.add(i) = if i < HEADER_LEN { (word >> (8 * (i % 4))) as u8 } else { 0 } };
    });
    let compressed = unsafe {
        match options.element.width() {
            1 => compress_tiles::<W, 1>(warp, input, n, options, out),
            2 => compress_tiles::<W, 2>(warp, input, n, options, out),
            4 => compress_tiles::<W, 4>(warp, input, n, options, out),
            _ => compress_tiles::<W, 8>(warp, input, n, options, out),
        }
    };
    Ok(compressed)
}

/// Writes the tiles of a chunk of `WIDTH`-byte elements and its tail after its header; returns
/// the compressed size.
#[inline(always)]
unsafe fn compress_tiles<W: Warp, const WIDTH: usize>(
    warp: &W,
    input: *const u8,
    n: usize,
    options: &Options,
    out: *mut u8,
) -> usize {
    let geometry = Geometry::new(WIDTH, options.sparse);
    let per_lane = per_lane(WIDTH);
    let lane = warp.lane() as usize;
    let count = n / WIDTH;
    let lane_bytes = per_lane * WIDTH;
    let aligned = (input as usize).is_multiple_of(lane_bytes);
    let mut at = geometry.payload_start(n);
    let mut previous = 0;
    for t in 0..geometry.tiles(n) {
        let first = t * geometry.elements;
        let real = (count - first).min(geometry.elements);
        // This lane's elements; past the chunk's end, copies of its last.
        let mut elements: Elements = [0; MAX_PER_LANE];
        let tile_input = unsafe { input.add(first * WIDTH) };
        if real == geometry.elements && aligned {
            let word = unsafe {
                if lane_bytes == 8 {
                    *(tile_input as *const u64).add(lane)
                } else {
                    *(tile_input as *const u32).add(lane) as u64
                }
            };
            for (i, e) in elements.iter_mut().enumerate().take(per_lane) {
                *e = word >> (8 * WIDTH * i) & mask(WIDTH);
            }
        } else {
            for (i, e) in elements.iter_mut().enumerate().take(per_lane) {
                let index = (lane * per_lane + i).min(real - 1);
                *e = unsafe { load_bytes(tile_input.add(index * WIDTH), WIDTH) };
            }
        }
        let coded = &mut elements;
        let verbatim = quantize_lane::<W, WIDTH>(warp, options, coded);
        let deltas = deltas::<W, WIDTH>(warp, coded, previous);
        let tile = if verbatim {
            Tile { kind: Kind::Verbatim, bits: 0, base: 0 }
        } else {
            code_tile::<W, WIDTH>(warp, &geometry, options, coded, &deltas, real)
        };
        if lane < geometry.header {
            unsafe { *out.add(HEADER_LEN + t * geometry.header + lane) = tile.entry_byte(&geometry, lane) };
        }
        unsafe { pack_tile::<W, WIDTH>(warp, &geometry, &tile, coded, &deltas, real, out.add(at)) };
        previous = shuffle_value(warp, coded[per_lane - 1], WARP_SIZE - 1, WIDTH <= 4);
        at += 4 * tile.words(&geometry);
    }
    let tail = n % WIDTH;
    if lane < tail {
        unsafe { *out.add(at + lane) = *input.add(n - tail + lane) };
    }
    at + tail
}

/// This lane's elements' differences from the elements before them (`previous` before the
/// tile's first).
#[inline(always)]
fn deltas<W: Warp, const WIDTH: usize>(warp: &W, coded: &Elements, previous: u64) -> Elements {
    let (per_lane, lane) = (per_lane(WIDTH), warp.lane());
    let below = shuffle_value(warp, coded[per_lane - 1], lane.saturating_sub(1), WIDTH <= 4);
    let mut deltas = [0; MAX_PER_LANE];
    for i in 0..per_lane {
        let before = match (i, lane) {
            (0, 0) => previous,
            (0, _) => below,
            _ => coded[i - 1],
        };
        deltas[i] = coded[i].wrapping_sub(before) & mask(WIDTH);
    }
    deltas
}

/// Whether lossy coding must keep the tile verbatim; else this lane's `elements` quantised.
/// (Element by element, so that the arrays stay in registers.)
#[inline(always)]
fn quantize_lane<W: Warp, const WIDTH: usize>(warp: &W, options: &Options, elements: &mut Elements) -> bool {
    let Some(bound) = options.error_bound else { return false };
    let mut quantized = *elements;
    let mut exact = true;
    for i in 0..per_lane(WIDTH) {
        match quantize(elements[i], WIDTH, bound) {
            Some(q) => quantized[i] = q,
            None => exact = false,
        }
    }
    let verbatim = warp.ballot(!exact) != 0;
    for i in 0..per_lane(WIDTH) {
        elements[i] = if verbatim { elements[i] } else { quantized[i] };
    }
    verbatim
}

/// The coding of a tile of `coded` elements (quantised where lossy), whose differences from the
/// elements before them are `deltas`, as `ferrocomp_format::bitcomp` chooses it.
#[inline(always)]
fn code_tile<W: Warp, const WIDTH: usize>(
    warp: &W,
    geometry: &Geometry,
    options: &Options,
    coded: &Elements,
    deltas: &Elements,
    real: usize,
) -> Tile {
    let (width, per_lane, lane) = (WIDTH, per_lane(WIDTH), warp.lane() as usize);
    let extremes = coded.iter().take(per_lane).fold(Extremes::EMPTY, |x, &e| x.merge(Extremes::of(e, width)));
    let frame_of_all = frame(reduce_extremes(warp, extremes, WIDTH <= 4), width);
    let delta_extremes = deltas.iter().take(per_lane).fold(Extremes::EMPTY, |x, &d| x.merge(Extremes::of(d, width)));
    let delta = frame(reduce_extremes(warp, delta_extremes, WIDTH <= 4), width);
    let sparse = if options.sparse {
        let mut nonzero = Extremes::EMPTY;
        let mut count = 0;
        for (i, &e) in coded.iter().enumerate().take(per_lane) {
            if lane * per_lane + i < real && e != 0 {
                nonzero = nonzero.merge(Extremes::of(e, width));
                count += 1;
            }
        }
        Some((frame(reduce_extremes(warp, nonzero, WIDTH <= 4), width), warp.reduce_add(count) as usize))
    } else {
        None
    };
    choose(geometry, frame_of_all, delta, sparse)
}

/// Writes `tile`'s payload at `payload`, this lane's part from its `coded` elements (or their
/// `deltas`), as runs of bits laid end to end.
#[inline(always)]
unsafe fn pack_tile<W: Warp, const WIDTH: usize>(
    warp: &W,
    geometry: &Geometry,
    tile: &Tile,
    coded: &Elements,
    deltas: &Elements,
    real: usize,
    payload: *mut u8,
) {
    let (width, per_lane, lane) = (WIDTH, per_lane(WIDTH), warp.lane());
    let (bits, words) = (tile.bits, tile.words(geometry) as u32);
    let first = lane as usize * per_lane;
    // Each element's bits after the one before's: the elements of a lane make one run.
    let run_of = |elements: &Elements, take: &dyn Fn(usize) -> bool| {
        let (mut run, mut count) = (0u64, 0);
        for (i, &e) in elements.iter().enumerate().take(per_lane) {
            if take(i) {
                run |= (e.wrapping_sub(tile.base) & mask(width)) << (count * bits);
                count += 1;
            }
        }
        (run, count)
    };
    match tile.kind {
        Kind::Frame | Kind::Delta => {
            let (run, _) = run_of(if tile.kind == Kind::Delta { deltas } else { coded }, &|_| true);
            let lane_bits = per_lane as u32 * bits;
            unsafe { write_runs(warp, lane * lane_bits, lane_bits, run, words, payload) };
        }
        Kind::Sparse { .. } => {
            let nonzero = |i: usize| first + i < real && coded[i] != 0;
            let flags = (0..per_lane).fold(0, |flags, i| flags | (nonzero(i) as u64) << i);
            let (run, count) = run_of(coded, &nonzero);
            let rank = scan_add(warp, count) - count;
            let bitmap = geometry.bitmap_words() as u32;
            unsafe {
                write_runs(warp, first as u32, per_lane as u32, flags, bitmap, payload);
                write_runs(warp, rank * bits, count * bits, run, words - bitmap, payload.add(4 * bitmap as usize));
            }
        }
        Kind::Verbatim => {
            let raw = coded.iter().take(per_lane).enumerate().fold(0, |raw, (i, &e)| raw | e << (8 * width * i));
            let lane_bits = 8 * (per_lane * width) as u32;
            unsafe { write_runs(warp, lane * lane_bits, lane_bits, raw, words, payload) };
        }
    }
}

/// Decompresses the chunk of `len` bytes at `input` into `out` (room for `capacity` bytes), as
/// `ferrocomp_format::bitcomp::decompress`: the same size or status, in every lane.
///
/// # Safety
/// `input` must be readable for `len` bytes and `out` writable for `capacity` bytes, neither
/// written by anyone else meanwhile.
pub unsafe fn decompress_chunk<W: Warp>(
    warp: &W,
    input: *const u8,
    len: usize,
    out: *mut u8,
    capacity: usize,
) -> Result<usize, Status> {
    let bytes = unsafe { crate::raw::bytes(input, len) };
    let (options, n) = read_header(bytes)?;
    if n > capacity {
        return Err(Status::OutputTooSmall);
    }
    unsafe {
        match options.element.width() {
            1 => decode_tiles::<W, 1>(warp, bytes, &options, n, out),
            2 => decode_tiles::<W, 2>(warp, bytes, &options, n, out),
            4 => decode_tiles::<W, 4>(warp, bytes, &options, n, out),
            _ => decode_tiles::<W, 8>(warp, bytes, &options, n, out),
        }
    }
}

/// Decodes the tiles and tail of the chunk `bytes` of `WIDTH`-byte elements (`n` bytes) into
/// `out`.
#[inline(always)]
unsafe fn decode_tiles<W: Warp, const WIDTH: usize>(
    warp: &W,
    bytes: &[u8],
    options: &Options,
    n: usize,
    out: *mut u8,
) -> Result<usize, Status> {
    let (input, len) = (bytes.as_ptr(), bytes.len());
    let geometry = Geometry::new(WIDTH, options.sparse);
    let lane = warp.lane() as usize;
    let words = Words::new(input, len);
    let tiles = geometry.tiles(n);
    let mut at = geometry.payload_start(n);
    let (mut group, mut previous) = (0, 0);
    while group < tiles {
        // Lane `l` reads tile `group + l`'s header and finds its payload.
        let t = group + lane;
        let entry = HEADER_LEN + t * geometry.header;
        let parsed = match bytes.get(entry..entry + geometry.header) {
            _ if t >= tiles => Ok(Tile { kind: Kind::Frame, bits: 0, base: 0 }),
            Some(entry) => Tile::parse(entry, &geometry),
            None => Err(Status::Truncated),
        };
        let (tile, status) = match parsed {
            Ok(tile) => (tile, Status::Success),
            Err(status) => (Tile { kind: Kind::Frame, bits: 0, base: 0 }, status),
        };
        let size = 4 * tile.words(&geometry) as u32;
        let end = at + scan_add(warp, size) as usize;
        let offset = end - size as usize;
        let status = if status == Status::Success && end > len { Status::Truncated } else { status };
        // The tiles before the first that fails are decoded, then its status returned.
        let failing = warp.ballot(status != Status::Success);
        let decodable =
            if failing == 0 { (tiles - group).min(WARP_SIZE as usize) } else { failing.trailing_zeros() as usize };
        for j in 0..decodable as u32 {
            let tile = broadcast(warp, &tile, j, WIDTH <= 4);
            let offset = warp.shuffle(offset as u32, j) as usize;
            let t = group + j as usize;
            unsafe {
                decode_tile::<W, WIDTH>(warp, &geometry, options, &tile, &words, offset, out, n, t, &mut previous)?
            };
        }
        if failing != 0 {
            return Err(Status::from_code(warp.shuffle(status as u32, decodable as u32)));
        }
        at = warp.shuffle(end as u32, WARP_SIZE - 1) as usize;
        group += WARP_SIZE as usize;
    }
    let tail = n % WIDTH;
    if len != at + tail {
        return Err(if len < at + tail { Status::Truncated } else { Status::Malformed });
    }
    if lane < tail {
        unsafe { *out.add(n - tail + lane) = bytes[at + lane] };
    }
    Ok(n)
}

/// Lane `lane`'s `tile`, in every lane.
#[inline(always)]
fn broadcast<W: Warp>(warp: &W, tile: &Tile, lane: u32, narrow: bool) -> Tile {
    let (tag, count) = match tile.kind {
        Kind::Frame => (0, 0),
        Kind::Delta => (1, 0),
        Kind::Sparse { count } => (2, count as u32),
        Kind::Verbatim => (3, 0),
    };
    let word = warp.shuffle(tag | tile.bits << 2 | count << 9, lane);
    let kind = match word & 3 {
        0 => Kind::Frame,
        1 => Kind::Delta,
        2 => Kind::Sparse { count: (word >> 9) as usize },
        _ => Kind::Verbatim,
    };
    Tile { kind, bits: word >> 2 & 0x7F, base: shuffle_value(warp, tile.base, lane, narrow) }
}

/// A lane's `bits` bits at bit `bit` of `words`: at most 32 for elements of 4 bytes or fewer.
#[inline(always)]
unsafe fn lane_bits<const WIDTH: usize>(words: &Words, bit: usize, bits: u32) -> u64 {
    unsafe { if WIDTH <= 4 { words.bits32(bit, bits) as u64 } else { words.bits(bit, bits) } }
}

/// The low `bits` bits.
#[inline(always)]
const fn low(bits: usize) -> u64 {
    if bits >= 64 { u64::MAX } else { (1 << bits) - 1 }
}

/// Decodes tile `t` (header `tile`, payload at byte `offset` of the input `words`) into its
/// place in `out`, a lane word a lane; `previous`, the last coded element of the tile before,
/// becomes this one's.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn decode_tile<W: Warp, const WIDTH: usize>(
    warp: &W,
    geometry: &Geometry,
    options: &Options,
    tile: &Tile,
    words: &Words,
    offset: usize,
    out: *mut u8,
    n: usize,
    t: usize,
    previous: &mut u64,
) -> Result<(), Status> {
    let (width, per_lane, lane) = (WIDTH, per_lane(WIDTH), warp.lane() as usize);
    let (first, bits, bit) = (t * geometry.elements, tile.bits as usize, 8 * offset);
    let real = (n / width - first).min(geometry.elements);
    let lane_first = lane * per_lane;
    let mut values: Elements = [0; MAX_PER_LANE];
    match tile.kind {
        Kind::Frame => {
            let packed = unsafe { lane_bits::<WIDTH>(words, bit + lane_first * bits, (per_lane * bits) as u32) };
            for (i, value) in values.iter_mut().enumerate().take(per_lane) {
                *value = tile.base.wrapping_add(packed >> (i * bits) & low(bits)) & mask(width);
            }
        }
        Kind::Delta => {
            let packed = unsafe { lane_bits::<WIDTH>(words, bit + lane_first * bits, (per_lane * bits) as u32) };
            let mut sum = 0u64;
            for (i, value) in values.iter_mut().enumerate().take(per_lane) {
                sum = sum.wrapping_add(tile.base.wrapping_add(packed >> (i * bits) & low(bits)));
                *value = sum;
            }
            let before = scan_add64(warp, sum, WIDTH <= 4).wrapping_sub(sum).wrapping_add(*previous);
            for value in values.iter_mut().take(per_lane) {
                *value = value.wrapping_add(before) & mask(width);
            }
        }
        Kind::Sparse { count } => {
            let flags = unsafe { words.bits32(bit + lane_first, per_lane as u32) };
            let nonzero = flags.count_ones();
            let through = scan_add(warp, nonzero);
            if warp.shuffle(through, WARP_SIZE - 1) as usize != count {
                return Err(Status::Malformed);
            }
            let at = bit + 32 * geometry.bitmap_words() + (through - nonzero) as usize * bits;
            let packed = unsafe { lane_bits::<WIDTH>(words, at, nonzero * bits as u32) };
            let mut k = 0;
            for (i, value) in values.iter_mut().enumerate().take(per_lane) {
                if flags >> i & 1 == 1 {
                    *value = tile.base.wrapping_add(packed >> (k * bits) & low(bits)) & mask(width);
                    k += 1;
                }
            }
        }
        Kind::Verbatim => {
            let raw = unsafe { lane_bits::<WIDTH>(words, bit + 8 * lane_first * width, 8 * (per_lane * width) as u32) };
            for (i, value) in values.iter_mut().enumerate().take(per_lane) {
                *value = raw >> (8 * width * i) & mask(width);
            }
        }
    }
    *previous = shuffle_value(warp, values[per_lane - 1], WARP_SIZE - 1, WIDTH <= 4);
    if let Some(bound) = options.error_bound
        && tile.kind != Kind::Verbatim
    {
        for value in values.iter_mut().take(per_lane) {
            *value = dequantize(*value, width, bound.step());
        }
    }
    let tile_out = unsafe { out.add(first * width) };
    let lane_bytes = per_lane * width;
    if real == geometry.elements && (tile_out as usize).is_multiple_of(lane_bytes) {
        let word =
            values.iter().take(per_lane).enumerate().fold(0, |word, (i, &value)| word | value << (8 * width * i));
        unsafe {
            if lane_bytes == 8 {
                *(tile_out as *mut u64).add(lane) = word;
            } else {
                *(tile_out as *mut u32).add(lane) = word as u32;
            }
        }
    } else {
        for (i, &value) in values.iter().enumerate().take(per_lane) {
            if lane_first + i < real {
                for k in 0..width {
                    unsafe { *tile_out.add((lane_first + i) * width + k) = (value >> (8 * k)) as u8 };
                }
            }
        }
    }
    Ok(())
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use crate::batch::{Chunk, ChunkKernels, Lanes};
    use crate::gpu::HardwareWarp;
    use ferrocomp_format::BatchArgs;
    use ferrocomp_format::bitcomp;

    /// Bitcomp's kernels: a warp per chunk both ways, a thread per chunk for the sizes.
    pub struct Bitcomp;

    impl ChunkKernels for Bitcomp {
        const COMPRESS: Lanes = Lanes::Warp;
        const DECOMPRESS: Lanes = Lanes::Warp;
        const SIZES: Lanes = Lanes::Thread;

        unsafe fn compress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let options = Options::from_word(args.options).ok_or(Status::Unsupported)?;
            unsafe { compress_chunk(warp, chunk.input, chunk.input_len, &options, chunk.output, chunk.capacity) }
        }

        unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            unsafe { decompress_chunk(warp, chunk.input, chunk.input_len, chunk.output, chunk.capacity) }
        }

        unsafe fn decompressed_size(_: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            bitcomp::decompressed_size(unsafe { chunk.input() })
        }
    }

    crate::batch_kernels!(Bitcomp: bitcomp_compress, bitcomp_decompress, bitcomp_decompressed_sizes);
}

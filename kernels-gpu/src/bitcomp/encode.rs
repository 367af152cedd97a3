//! Compressing a chunk with a block of warps, a tile a lane. Each warp takes a group of tiles
//! (4 KiB of elements) a round: it copies the group into shared memory 16 bytes a lane, a row a
//! tile, and each lane measures its own tile in one pass over its row (the extremes of its
//! elements, of their differences and of its non-zero elements, read unsigned and signed) and
//! chooses its coding as the format crate does. A block scan of the payload sizes places the
//! tiles; each lane packs its tile into the group's payload in shared memory a word at a time,
//! and the warp copies the payload out 16 bytes a lane. Lossy, each lane first quantises its row
//! in place, unless a value cannot be, which keeps the tile verbatim.

use super::{COMPRESS_WARPS, Layout, Rows, Swizzled, group_tiles, larger, row_bytes};
use crate::block::Block;
use crate::copy::{Memory, spread};
use crate::raw::SharedBytes;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::bitcomp::{
    ErrorBound, Geometry, HEADER_LEN, Kind, MAX_CHUNK_SIZE, Options, Tile, choose, frame, header, max_compressed_size,
    per_lane, quantize,
};
use ferrocomp_format::bitpack::{Extremes, mask, sign_extend};

/// Bytes of a warp's payload stage ([`Swizzled`]): its group's payloads, at most the group's 4 KiB
/// (no coding the format crate chooses is larger than the tile as it is).
const PAYLOAD_BYTES: usize = 4096;

/// Shared memory of a compressing warp: its group's rows, then their payloads.
const fn warp_bytes(width: usize) -> usize {
    group_tiles(width) * row_bytes(width) + PAYLOAD_BYTES
}

/// The most any element width takes.
const WARP_BYTES: usize = larger(warp_bytes(1), warp_bytes(8));

/// The block's shared memory.
type Shared = Layout<COMPRESS_WARPS, WARP_BYTES>;

/// Shared memory of the compressing block.
pub const COMPRESS_SHARED_BYTES: usize = Shared::BYTES;
const _: () = assert!(COMPRESS_SHARED_BYTES <= crate::SHARED_BYTES_PER_BLOCK);
const _: () = assert!(warp_bytes(2) <= WARP_BYTES && warp_bytes(4) <= WARP_BYTES && WARP_BYTES.is_multiple_of(16));

/// Compresses the `n` bytes at `input` with `options` into `out` (room for `capacity` bytes), as
/// `ferrocomp_format::bitcomp::compress`; returns the compressed size, in every thread of the
/// block.
///
/// # Safety
/// `input` must be readable for `n` bytes and `out` writable for `capacity` bytes, by this block
/// alone; `shared` must be [`COMPRESS_SHARED_BYTES`] of shared memory (aligned to 16), the
/// block's alone; the block has at most [`COMPRESS_WARPS`] warps, and every thread calls this
/// with the same chunk.
#[allow(clippy::too_many_arguments)]
pub unsafe fn compress_chunk<B: Block, W: Warp>(
    block: &B,
    warp: &W,
    input: *const u8,
    n: usize,
    options: &Options,
    out: *mut u8,
    capacity: usize,
    shared: *mut u8,
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
    let geometry = options.geometry();
    if block.thread() == 0 {
        // The chunk header, and the zeros between the tile table and the payloads.
        let table_end = HEADER_LEN + geometry.tiles(n) * geometry.header;
        for (k, byte) in header(options, n).into_iter().enumerate() {
            unsafe { *out.add(k) = byte };
        }
        for k in table_end..geometry.payload_start(n) {
            unsafe { *out.add(k) = 0 };
        }
    }
    let compressed = unsafe {
        match options.element.width() {
            1 => compress_tiles::<B, W, 1>(block, warp, input, n, options, out, shared),
            2 => compress_tiles::<B, W, 2>(block, warp, input, n, options, out, shared),
            4 => compress_tiles::<B, W, 4>(block, warp, input, n, options, out, shared),
            _ => compress_tiles::<B, W, 8>(block, warp, input, n, options, out, shared),
        }
    };
    Ok(compressed)
}

/// Writes the tile table, the tiles and the tail of a chunk of `WIDTH`-byte elements, a round of
/// groups at a time; returns the compressed size.
#[inline(always)]
unsafe fn compress_tiles<B: Block, W: Warp, const WIDTH: usize>(
    block: &B,
    warp: &W,
    input: *const u8,
    n: usize,
    options: &Options,
    out: *mut u8,
    shared: *mut u8,
) -> usize {
    let geometry = Geometry::new(WIDTH, options.sparse);
    let (tiles, count, tile_bytes) = (geometry.tiles(n), n / WIDTH, geometry.tile_bytes());
    let (group, lane, index) = (group_tiles(WIDTH), warp.lane() as usize, (block.thread() / WARP_SIZE) as usize);
    let warps = (block.threads() / WARP_SIZE) as usize;
    let shared = Shared::new(shared);
    let (scratch, slots, warp_at) = unsafe { (shared.scratch(), shared.slots(), shared.warp(index)) };
    let rows = unsafe { Rows::<WIDTH>::new(warp_at) };
    let payload = unsafe { Swizzled::new(warp_at.add(group * row_bytes(WIDTH))) };
    let mut at = geometry.payload_start(n);
    // Whether the last tile before the round is verbatim (lossy).
    let mut verbatim_before_round = false;
    let mut round = 0;
    while round < tiles {
        let first_tile = round + index * group;
        let (t, first_byte) = (first_tile + lane, first_tile * tile_bytes);
        let mine = lane < group && t < tiles;
        let group_bytes = (count * WIDTH).saturating_sub(first_byte).min(group * tile_bytes);
        unsafe {
            spread::<1>(
                lane,
                WARP_SIZE as usize,
                &Memory(input.wrapping_add(first_byte) as *mut u8),
                &rows,
                group_bytes,
            )
        };
        warp.sync();
        let (row, real) =
            (rows.row(lane), if mine { (count - t * geometry.elements).min(geometry.elements) } else { 0 });
        if mine && real < geometry.elements {
            unsafe { pad::<WIDTH>(row, real) };
        }
        // (Lossy coding is over floats: 4 or 8 bytes.)
        let verbatim = match options.error_bound {
            Some(bound) if mine && WIDTH >= 4 => unsafe { quantize_row::<WIDTH>(row, bound) },
            _ => false,
        };
        // Lossy, whether the tile before the group's first is verbatim, from the warp before.
        let verbatim_before = options.error_bound.is_some() && {
            let last = warp.shuffle(verbatim as u32, group as u32 - 1);
            if lane == 0 {
                unsafe { slots.set_u32(Shared::slot(index), last) };
            }
            block.sync_threads();
            let before =
                if index == 0 { verbatim_before_round } else { unsafe { slots.u32(Shared::slot(index - 1)) != 0 } };
            verbatim_before_round = unsafe { slots.u32(Shared::slot(warps - 1)) != 0 };
            before
        };
        warp.sync();
        // The last coded element of the tile before this lane's.
        let previous = if !mine || (lane == 0 && first_tile == 0) {
            0
        } else if lane > 0 {
            unsafe { element::<WIDTH>(rows.row(lane - 1), geometry.elements - 1) }
        } else {
            let raw = unsafe { load_element::<WIDTH>(input.add((first_tile * geometry.elements - 1) * WIDTH)) };
            match options.error_bound {
                Some(bound) if !verbatim_before => quantize(raw, WIDTH, bound).unwrap_or(0),
                _ => raw,
            }
        };
        let tile = match (mine, verbatim) {
            (false, _) => None,
            (_, true) => Some(Tile { kind: Kind::Verbatim, bits: 0, base: 0 }),
            _ if options.sparse => Some(unsafe { measure::<WIDTH, true>(row, previous, real, &geometry) }),
            _ => Some(unsafe { measure::<WIDTH, false>(row, previous, real, &geometry) }),
        };
        let size = tile.map_or(0, |tile| 4 * tile.words(&geometry) as u32);
        if let Some(tile) = tile {
            for k in 0..geometry.header {
                unsafe { *out.add(HEADER_LEN + t * geometry.header + k) = tile.entry_byte(&geometry, k) };
            }
        }
        let (below, total) = unsafe { block.scan_add(warp, size, scratch) };
        let group_below = warp.shuffle(below, 0);
        if let Some(tile) = tile {
            unsafe { pack::<WIDTH>(&tile, row, previous, real, payload, below - group_below) };
        }
        warp.sync();
        let group_len = (warp.shuffle(below + size, WARP_SIZE - 1) - group_below) as usize;
        let to = unsafe { out.add(at + group_below as usize) };
        unsafe { spread::<1>(lane, WARP_SIZE as usize, &payload, &Memory(to), group_len) };
        warp.sync();
        at += total as usize;
        round += warps * group;
    }
    let (thread, tail) = (block.thread() as usize, n % WIDTH);
    if thread < tail {
        unsafe { *out.add(at + thread) = *input.add(n - tail + thread) };
    }
    at + tail
}

/// The `WIDTH`-byte element at `at`, byte by byte.
#[inline(always)]
unsafe fn load_element<const WIDTH: usize>(at: *const u8) -> u64 {
    (0..WIDTH).rev().fold(0, |value, k| value << 8 | unsafe { *at.add(k) } as u64)
}

/// Element `i` of `row`.
#[inline(always)]
unsafe fn element<const WIDTH: usize>(row: SharedBytes, i: usize) -> u64 {
    (0..WIDTH).rev().fold(0, |value, k| value << 8 | unsafe { row.u8((i * WIDTH + k) as u32) } as u64)
}

/// Fills `row` past its first `real` elements with copies of the last of them.
#[inline(always)]
unsafe fn pad<const WIDTH: usize>(row: SharedBytes, real: usize) {
    let last = unsafe { element::<WIDTH>(row, real - 1) };
    for i in real..Geometry::new(WIDTH, false).elements {
        for k in 0..WIDTH {
            unsafe { row.set_u8((i * WIDTH + k) as u32, (last >> (8 * k)) as u8) };
        }
    }
}

/// Element `k` of the 16 bytes `words` (`k` known at compile time: an index into the array
/// computed at run time would put it in local memory).
#[inline(always)]
fn piece_element<const WIDTH: usize>(words: [u32; 4], k: usize) -> u64 {
    if WIDTH == 8 {
        return words[2 * k] as u64 | (words[2 * k + 1] as u64) << 32;
    }
    let per_word = 4 / WIDTH;
    (words[k / per_word] >> (8 * WIDTH * (k % per_word))) as u64 & mask(WIDTH)
}

/// Calls `f` with each element of `row` in order, and its index: a piece of 16 bytes a load,
/// each of its words taken apart in registers.
#[inline(always)]
unsafe fn for_each_element<const WIDTH: usize>(row: SharedBytes, mut f: impl FnMut(usize, u64)) {
    let per_piece = 16 / WIDTH;
    for piece in 0..Geometry::new(WIDTH, false).tile_bytes() / 16 {
        let [a, b, c, d] = unsafe { row.u32x4(16 * piece as u32) };
        let first = piece * per_piece;
        if WIDTH == 8 {
            f(first, a as u64 | (b as u64) << 32);
            f(first + 1, c as u64 | (d as u64) << 32);
        } else {
            let per_word = 4 / WIDTH;
            let mut word = |word: u32, first: usize| {
                for i in 0..per_word {
                    f(first + i, (word >> (8 * WIDTH * i)) as u64 & mask(WIDTH));
                }
            };
            word(a, first);
            word(b, first + per_word);
            word(c, first + 2 * per_word);
            word(d, first + 3 * per_word);
        }
    }
}

/// Quantises `row`'s floats in place within `bound`, unless one cannot be; returns whether one
/// cannot (the tile stays verbatim).
#[inline(always)]
unsafe fn quantize_row<const WIDTH: usize>(row: SharedBytes, bound: ErrorBound) -> bool {
    let mut exact = true;
    unsafe { for_each_element::<WIDTH>(row, |_, value| exact &= quantize(value, WIDTH, bound).is_some()) };
    if !exact {
        return true;
    }
    for piece in 0..Geometry::new(WIDTH, false).tile_bytes() as u32 / 16 {
        let words = unsafe { row.u32x4(16 * piece) };
        let q = |k: usize| quantize(piece_element::<WIDTH>(words, k), WIDTH, bound).unwrap_or(0);
        let words = if WIDTH == 8 {
            let (a, b) = (q(0), q(1));
            [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32]
        } else {
            [q(0) as u32, q(1) as u32, q(2) as u32, q(3) as u32]
        };
        unsafe { row.set_u32x4(16 * piece, words) };
    }
    false
}

/// The extremes of `WIDTH`-byte entries, read unsigned and with their sign bits flipped (whose
/// unsigned order is the signed order of the entries).
#[derive(Clone, Copy)]
struct Span<const WIDTH: usize> {
    low: u64,
    high: u64,
    low_flipped: u64,
    high_flipped: u64,
}

impl<const WIDTH: usize> Span<WIDTH> {
    const SIGN: u64 = 1 << (8 * WIDTH - 1);
    const EMPTY: Self = Self { low: mask(WIDTH), high: 0, low_flipped: mask(WIDTH), high_flipped: 0 };

    /// Adds `value` (of `WIDTH` bytes); in 32-bit steps where they hold it.
    #[inline(always)]
    fn add(&mut self, value: u64) {
        let flipped = value ^ Self::SIGN;
        if WIDTH <= 4 {
            let (min, max) =
                (|a: u64, b: u64| (a as u32).min(b as u32) as u64, |a: u64, b: u64| (a as u32).max(b as u32) as u64);
            (self.low, self.high) = (min(self.low, value), max(self.high, value));
            (self.low_flipped, self.high_flipped) = (min(self.low_flipped, flipped), max(self.high_flipped, flipped));
        } else {
            (self.low, self.high) = (self.low.min(value), self.high.max(value));
            (self.low_flipped, self.high_flipped) = (self.low_flipped.min(flipped), self.high_flipped.max(flipped));
        }
    }

    /// The extremes of the entries added: none if `empty`.
    #[inline(always)]
    fn extremes(self, empty: bool) -> Extremes {
        if empty {
            return Extremes::EMPTY;
        }
        let signed = |flipped: u64| sign_extend(flipped ^ Self::SIGN, WIDTH);
        Extremes {
            min: self.low,
            max: self.high,
            min_signed: signed(self.low_flipped),
            max_signed: signed(self.high_flipped),
        }
    }
}

/// The coding the format crate chooses for the tile in `row` (its elements coded: quantised where
/// lossy), the first `real` real, after a tile whose last coded element is `previous`: one pass.
/// `SPARSE`: whether the chunk may hold sparse tiles (its non-zero elements measured too).
#[inline(always)]
unsafe fn measure<const WIDTH: usize, const SPARSE: bool>(
    row: SharedBytes,
    previous: u64,
    real: usize,
    geometry: &Geometry,
) -> Tile {
    let (mut values, mut deltas, mut nonzero) = (Span::<WIDTH>::EMPTY, Span::<WIDTH>::EMPTY, Span::<WIDTH>::EMPTY);
    let (mut before, mut count, real) = (previous, 0, real as u32);
    unsafe {
        for_each_element::<WIDTH>(row, |i, value| {
            values.add(value);
            deltas.add(value.wrapping_sub(before) & mask(WIDTH));
            before = value;
            if SPARSE && (i as u32) < real && value != 0 {
                nonzero.add(value);
                count += 1;
            }
        })
    };
    let sparse = SPARSE.then(|| (frame(nonzero.extremes(count == 0), WIDTH), count));
    choose(geometry, frame(values.extremes(false), WIDTH), frame(deltas.extremes(false), WIDTH), sparse)
}

/// Bits appended to a payload in shared memory, a word stored whenever one fills.
struct BitWriter {
    payload: Swizzled,
    /// The next word.
    at: u32,
    pending: u64,
    bits: u32,
}

impl BitWriter {
    /// Appends the `bits` (at most 32) low bits of `value` (no others set).
    #[inline(always)]
    unsafe fn push32(&mut self, value: u32, bits: u32) {
        self.pending |= (value as u64) << self.bits;
        self.bits += bits;
        if self.bits >= 32 {
            unsafe { self.payload.set_word(self.at, self.pending as u32) };
            (self.at, self.pending, self.bits) = (self.at + 1, self.pending >> 32, self.bits - 32);
        }
    }

    /// Appends the `bits` low bits of `value` (no others set).
    #[inline(always)]
    unsafe fn push(&mut self, value: u64, bits: u32) {
        unsafe {
            if bits > 32 {
                self.push32(value as u32, 32);
                self.push32((value >> 32) as u32, bits - 32);
            } else {
                self.push32(value as u32, bits);
            }
        }
    }

    /// Stores the last, partly filled word.
    #[inline(always)]
    unsafe fn finish(self) {
        if self.bits > 0 {
            unsafe { self.payload.set_word(self.at, self.pending as u32) };
        }
    }
}

/// Packs the tile `tile` in `row` (its first `real` elements real, after a tile whose last coded
/// element is `previous`) into the payload at byte `offset` of `payload`.
#[inline(always)]
unsafe fn pack<const WIDTH: usize>(
    tile: &Tile,
    row: SharedBytes,
    previous: u64,
    real: usize,
    payload: Swizzled,
    offset: u32,
) {
    let mut writer = BitWriter { payload, at: offset / 4, pending: 0, bits: 0 };
    let (base, bits) = (tile.base, if tile.kind == Kind::Verbatim { 8 * WIDTH as u32 } else { tile.bits });
    let entry = |value: u64| value.wrapping_sub(base) & mask(WIDTH);
    unsafe {
        match tile.kind {
            Kind::Frame | Kind::Verbatim | Kind::Delta => {
                // A unit's entries (4 bytes of elements, or one of 8) appended at once.
                let (delta, per_unit) = (tile.kind == Kind::Delta, per_lane(WIDTH));
                let (mut before, mut unit) = (previous, 0u64);
                for_each_element::<WIDTH>(row, |i, value| {
                    unit |= entry(value.wrapping_sub(if delta { before } else { 0 })) << (i % per_unit * bits as usize);
                    before = value;
                    if i % per_unit == per_unit - 1 {
                        writer.push(unit, per_unit as u32 * bits);
                        unit = 0;
                    }
                });
            }
            Kind::Sparse { .. } => {
                let mut bitmap = 0u32;
                for_each_element::<WIDTH>(row, |i, value| {
                    bitmap |= ((i < real && value != 0) as u32) << (i % 32);
                    if i % 32 == 31 {
                        writer.push32(bitmap, 32);
                        bitmap = 0;
                    }
                });
                for_each_element::<WIDTH>(row, |i, value| {
                    if i < real && value != 0 {
                        writer.push(entry(value), bits);
                    }
                });
            }
        }
        writer.finish();
    }
}

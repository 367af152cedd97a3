//! Compressing a chunk with a block of warps, a tile a lane. Each warp takes a group of tiles
//! (4 KiB of elements) a round: it copies the group into shared memory 16 bytes a lane, a row a
//! tile, and each lane measures its own tile in one pass over its row (the extremes of its
//! elements, of their differences and of its non-zero elements, read unsigned and signed) and
//! chooses its coding as the format crate does. A block scan of the payload sizes places the
//! tiles; each lane packs its tile into the group's payload in shared memory a unit (4 bytes of
//! elements) at a time, the unit's entries computed lane by lane in one word and squeezed
//! together, and the warp copies the payload out 16 bytes a lane. Lossy, each lane first
//! quantises its row in place, unless a value cannot be, which keeps the tile verbatim.
//!
//! Lossless, the block first counts the chunk's bytes (a histogram a lane in shared memory, so
//! that no two lanes of a warp contend) and ranks them; the first round's lanes measure their
//! tiles both as they are and ranked, and the block ranks the chunk where the format crate's rule
//! says the sample (the first round's first 16 KiB) pays: then each later round's group is staged
//! through the ranks' table.
//!
//! The block has four warps or more (the host chooses from the batch: larger blocks for fewer
//! chunks); its rounds are its warps' groups.

use super::{
    COMPRESS_WARPS, COMPRESS_WARPS_PER_SM, Layout, Mapped, Rows, Swizzled, group_tiles, larger, map_word, repeat,
    row_bytes,
};
use crate::bitpack::{Scatter32, Scatter64};
use crate::block::{Block, strided};
use crate::copy::{Memory, Sink, spread};
use crate::raw::SharedBytes;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::bitcomp::{
    ErrorBound, Geometry, HEADER_LEN, Kind, MAX_CHUNK_SIZE, Options, RANKING_SAMPLE, SYMBOLS_LEN, Tile, VERSION,
    choose, frame, header, max_compressed_size, per_lane, quantize, ranking_pays,
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
type Shared = Layout<WARP_BYTES>;

/// Shared memory of a compressing block of `warps` warps.
pub const fn compress_shared_bytes(warps: u32) -> usize {
    Shared::bytes(warps)
}
const _: () = assert!(
    Shared::fits(COMPRESS_WARPS, COMPRESS_WARPS_PER_SM) && Shared::fits(COMPRESS_WARPS_PER_SM, COMPRESS_WARPS_PER_SM)
);
const _: () = assert!(warp_bytes(2) <= WARP_BYTES && warp_bytes(4) <= WARP_BYTES && WARP_BYTES.is_multiple_of(16));
// The first round takes the sample the ranking is decided from, or more; the counts (a histogram
// a lane, then their totals) fit the fewest warps' memory.
const _: () = assert!(COMPRESS_WARPS as usize * 4096 >= RANKING_SAMPLE);
const _: () = assert!(COUNTS_BYTES + 4 * SYMBOLS_LEN <= COMPRESS_WARPS as usize * WARP_BYTES);

/// Bytes of the histograms, one a lane index (the warps' lanes of that index sharing it), byte
/// `b`'s 32 counts together: a warp's 32 counts of any bytes fall in 32 banks.
const COUNTS_BYTES: usize = 4 * WARP_SIZE as usize * SYMBOLS_LEN;

/// Compresses the `n` bytes at `input` with `options` into `out` (room for `capacity` bytes), as
/// `ferrocomp_format::bitcomp::compress`; returns the compressed size, in every thread of the
/// block.
///
/// # Safety
/// `input` must be readable for `n` bytes and `out` writable for `capacity` bytes, by this block
/// alone; the block has [`COMPRESS_WARPS`] to [`COMPRESS_WARPS_PER_SM`] warps and `shared` is
/// [`compress_shared_bytes`] of them, of shared memory (aligned to 16), the block's alone; every
/// thread calls this with the same chunk.
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
/// groups at a time; returns the compressed size. Out of line, a width's loop keeps its registers
/// to itself: 400-550 bytes of spills a width against 1,616 for the four inlined together (as
/// fast on the device, within 3% either way).
#[inline(never)]
unsafe fn compress_tiles<B: Block, W: Warp, const WIDTH: usize>(
    block: &B,
    warp: &W,
    input: *const u8,
    n: usize,
    options: &Options,
    out: *mut u8,
    shared: *mut u8,
) -> usize {
    let plain = Geometry::new(WIDTH, options.sparse);
    let (tiles, count, tile_bytes) = (plain.tiles(n), n / WIDTH, plain.tile_bytes());
    let (group, lane, index) = (group_tiles(WIDTH), warp.lane() as usize, (block.thread() / WARP_SIZE) as usize);
    let warps = (block.threads() / WARP_SIZE) as usize;
    let shared = Shared::new(shared);
    let (scratch, slots, ranks, warp_at) =
        unsafe { (shared.scratch(), shared.slots(), shared.table(), shared.warp(index)) };
    let rows = unsafe { Rows::<WIDTH>::new(warp_at) };
    let payload = unsafe { Swizzled::new(warp_at.add(group * row_bytes(WIDTH))) };
    let lossless = options.error_bound.is_none();
    if lossless {
        unsafe { rank_bytes(block, warp, input, n, out, &shared) };
    }
    let (mut ranked, mut geometry, mut at) = (false, plain, plain.payload_start(n));
    // Whether the last tile before the round is verbatim (lossy).
    let mut verbatim_before_round = false;
    let mut round = 0;
    while round < tiles {
        let first_tile = round + index * group;
        let (t, first_byte) = (first_tile + lane, first_tile * tile_bytes);
        let mine = lane < group && t < tiles;
        let group_bytes = (count * WIDTH).saturating_sub(first_byte).min(group * tile_bytes);
        let group_input = Memory(input.wrapping_add(first_byte) as *mut u8);
        unsafe {
            if ranked {
                spread::<4>(lane, WARP_SIZE as usize, &Mapped { source: group_input, table: ranks }, &rows, group_bytes)
            } else {
                spread::<4>(lane, WARP_SIZE as usize, &group_input, &rows, group_bytes)
            }
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
        let mut previous = if !mine || (lane == 0 && first_tile == 0) {
            0
        } else if lane > 0 {
            unsafe { element::<WIDTH>(rows.row(lane - 1), plain.elements - 1) }
        } else {
            let raw = unsafe { load_element::<WIDTH>(input.add((first_tile * plain.elements - 1) * WIDTH)) };
            match options.error_bound {
                Some(bound) if !verbatim_before => quantize(raw, WIDTH, bound).unwrap_or(0),
                _ if ranked => unsafe { map_element::<WIDTH>(raw, ranks) },
                _ => raw,
            }
        };
        let coded = (mine && !verbatim).then_some((row, real, options.sparse));
        let mut tile =
            if verbatim { Some(Tile::VERBATIM) } else { unsafe { measure::<WIDTH>(coded, previous, |w| w) } };
        if round == 0 && lossless {
            // This round's tiles measured as they are and ranked; the sample's (the first of them)
            // summed over the block.
            let ranked_previous = unsafe { map_element::<WIDTH>(previous, ranks) };
            let ranked_tile = unsafe { measure_ranked::<WIDTH>(coded, ranked_previous, ranks) };
            let sample = tiles.min(RANKING_SAMPLE / tile_bytes);
            let words = |tile: Option<Tile>| tile.filter(|_| t < sample).map_or(0, |tile| tile.words(&plain) as u32);
            let (_, both) = unsafe { block.scan_add(warp, words(tile) | words(ranked_tile) << 16, scratch) };
            ranked = ranking_pays((both & 0xFFFF) as usize, (both >> 16) as usize, sample, tiles);
            if ranked {
                (tile, previous) = (ranked_tile, ranked_previous);
                if mine {
                    unsafe { map_row::<WIDTH>(row, ranks) };
                }
                warp.sync();
            }
        }
        if round == 0 {
            geometry = plain.of(VERSION, ranked);
            at = geometry.payload_start(n);
            if block.thread() == 0 {
                unsafe { write_head(options, n, ranked, &geometry, out) };
            }
        }
        let size = tile.map_or(0, |tile| 4 * tile.words(&geometry) as u32);
        if let Some(tile) = tile {
            for k in 0..geometry.header {
                unsafe { *out.add(geometry.entry(t) + k) = tile.entry_byte(&geometry, k) };
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
    if tiles == 0 && block.thread() == 0 {
        unsafe { write_head(options, n, false, &plain, out) };
    }
    let (thread, tail) = (block.thread() as usize, n % WIDTH);
    if thread < tail {
        unsafe { *out.add(at + thread) = *input.add(n - tail + thread) };
    }
    at + tail
}

/// Counts the chunk's `n` bytes at `input` (a histogram a lane, then their sums) and writes each
/// byte's rank (as `ferrocomp_format::bitcomp::symbols_by_count` orders them) into the shared
/// table, and the byte of each rank into the ranked chunk's table at `out` (which a chunk that is
/// not ranked overwrites).
///
/// # Safety
/// As [`compress_chunk`]'s; every thread of the block calls it. Once a chunk, so out of line.
#[inline(never)]
unsafe fn rank_bytes<B: Block, W: Warp>(
    block: &B,
    warp: &W,
    input: *const u8,
    n: usize,
    out: *mut u8,
    shared: &Shared,
) {
    let (thread, threads) = (block.thread() as usize, block.threads() as usize);
    let (counts, totals) = unsafe { (shared.warp(0), SharedBytes::new(shared.warp(0).add(COUNTS_BYTES))) };
    // The warps' memory is the chunk before's until every warp is done with it.
    block.sync_threads();
    let histograms = unsafe { SharedBytes::new(counts) };
    for k in strided(thread..COUNTS_BYTES / 16, threads) {
        unsafe { histograms.set_u32x4(16 * k as u32, [0; 4]) };
    }
    block.sync_threads();
    let mine = Counts(histograms.at(4 * warp.lane()));
    // Four 16-byte loads in flight a thread: the pass waits on memory, not on the counting.
    unsafe { spread::<4>(thread, threads, &Memory(input as *mut u8), &mine, n) };
    block.sync_threads();
    // Each byte's key: its count, then the lower byte higher, so that a byte's rank is the number
    // of greater keys. (Counts past 24 bits are held at the most: at most one byte can have that
    // many, and it ranks first either way.)
    for b in strided(thread..SYMBOLS_LEN, threads) {
        let row = (0..WARP_SIZE / 4).map(|k| unsafe { histograms.u32x4(128 * b as u32 + 16 * k) });
        let count: u32 = row.map(|[a, b, c, d]| a + b + c + d).sum();
        unsafe { totals.set_u32(4 * b as u32, count.min(0xFF_FFFF) << 8 | (255 - b as u32)) };
    }
    block.sync_threads();
    // Two bytes a thread, 128 apart, ranked in one pass over the keys.
    const HALF: usize = SYMBOLS_LEN / 2;
    for low in strided(thread..HALF, threads) {
        let keys = unsafe { (totals.u32(4 * low as u32), totals.u32(4 * (low + HALF) as u32)) };
        // (Arrays taken apart by name: iterating one puts it in local memory.)
        let (mut low_rank, mut high_rank) = (0, 0);
        for c in 0..SYMBOLS_LEN as u32 / 4 {
            let [w, x, y, z] = unsafe { totals.u32x4(16 * c) };
            let greater = |key: u32| (w > key) as u32 + (x > key) as u32 + (y > key) as u32 + (z > key) as u32;
            (low_rank, high_rank) = (low_rank + greater(keys.0), high_rank + greater(keys.1));
        }
        let place = |b: usize, rank: u32| unsafe {
            shared.table().set_u8(b as u32, rank as u8);
            *out.add(HEADER_LEN + rank as usize) = b as u8;
        };
        place(low, low_rank);
        place(low + HALF, high_rank);
    }
    block.sync_threads();
}

/// A lane's histogram of bytes in shared memory (its counts a warp's width of words apart), as
/// the [`Sink`] of a copy: each byte written counts once.
struct Counts(SharedBytes);

impl Counts {
    /// Counts `byte`.
    #[inline(always)]
    unsafe fn count(&self, byte: u8) {
        unsafe { self.0.add_u32(4 * WARP_SIZE * byte as u32, 1) };
    }

    /// Counts the four bytes of `word`.
    #[inline(always)]
    unsafe fn count_word(&self, word: u32) {
        unsafe {
            self.count(word as u8);
            self.count((word >> 8) as u8);
            self.count((word >> 16) as u8);
            self.count((word >> 24) as u8);
        }
    }
}

impl Sink for Counts {
    #[inline(always)]
    fn unit_skew(&self) -> usize {
        0
    }

    #[inline(always)]
    unsafe fn set_byte(&self, _: usize, value: u8) {
        unsafe { self.count(value) };
    }

    #[inline(always)]
    unsafe fn set_unit(&self, _: usize, [a, b, c, d]: [u32; 4]) {
        unsafe {
            self.count_word(a);
            self.count_word(b);
            self.count_word(c);
            self.count_word(d);
        }
    }
}

/// Writes the chunk header, the ranks' table's place aside (written by [`rank_bytes`]), and the
/// zeros between the tile table and the payloads.
///
/// # Safety
/// `out` must be writable for the chunk's head.
#[inline(always)]
unsafe fn write_head(options: &Options, n: usize, ranked: bool, geometry: &Geometry, out: *mut u8) {
    for (k, byte) in header(options, n, ranked).into_iter().enumerate() {
        unsafe { *out.add(k) = byte };
    }
    for k in geometry.entry(geometry.tiles(n))..geometry.payload_start(n) {
        unsafe { *out.add(k) = 0 };
    }
}

/// `value`'s `WIDTH` bytes, each replaced by its rank in `ranks`.
#[inline(always)]
unsafe fn map_element<const WIDTH: usize>(value: u64, ranks: SharedBytes) -> u64 {
    (0..WIDTH).fold(0, |mapped, k| mapped | (unsafe { ranks.u8((value >> (8 * k)) as u32 & 0xFF) } as u64) << (8 * k))
}

/// Replaces each byte of `row` by its rank in `ranks`.
#[inline(always)]
unsafe fn map_row<const WIDTH: usize>(row: SharedBytes, ranks: SharedBytes) {
    for piece in 0..Geometry::new(WIDTH, false).tile_bytes() as u32 / 16 {
        let [a, b, c, d] = unsafe { row.u32x4(16 * piece) };
        unsafe { row.set_u32x4(16 * piece, [a, b, c, d].map(|word| map_word(ranks, word))) };
    }
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
unsafe fn for_each_element<const WIDTH: usize>(row: SharedBytes, f: impl FnMut(usize, u64)) {
    unsafe { for_each_mapped::<WIDTH>(row, |word| word, f) }
}

/// As [`for_each_element`], each word of `row` first replaced by `map`'s.
#[inline(always)]
unsafe fn for_each_mapped<const WIDTH: usize>(
    row: SharedBytes,
    map: impl Fn(u32) -> u32,
    mut f: impl FnMut(usize, u64),
) {
    let per_piece = 16 / WIDTH;
    for piece in 0..Geometry::new(WIDTH, false).tile_bytes() / 16 {
        let [a, b, c, d] = unsafe { row.u32x4(16 * piece as u32) }.map(&map);
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

/// The coding the format crate chooses for the tile `coded` (its row, its elements coded:
/// quantised where lossy and mapped by `map` a word at a time; how many are real; whether the
/// chunk may hold sparse tiles), after a tile whose last coded element is `previous`: one pass.
/// None without a tile.
#[inline(always)]
unsafe fn measure<const WIDTH: usize>(
    coded: Option<(SharedBytes, usize, bool)>,
    previous: u64,
    map: impl Fn(u32) -> u32,
) -> Option<Tile> {
    let (row, real, sparse) = coded?;
    Some(unsafe {
        if sparse {
            measure_row::<WIDTH, true>(row, previous, real, map)
        } else {
            measure_row::<WIDTH, false>(row, previous, real, map)
        }
    })
}

/// [`measure`] of the tile's bytes replaced by their ranks in `ranks`: once a chunk, kept out of
/// line so that the main loop's registers do not pay for it.
#[inline(never)]
unsafe fn measure_ranked<const WIDTH: usize>(
    coded: Option<(SharedBytes, usize, bool)>,
    previous: u64,
    ranks: SharedBytes,
) -> Option<Tile> {
    unsafe { measure::<WIDTH>(coded, previous, |word| map_word(ranks, word)) }
}

/// [`measure`]'s pass over `row`. `SPARSE`: whether the chunk may hold sparse tiles (its non-zero
/// elements measured too).
#[inline(always)]
unsafe fn measure_row<const WIDTH: usize, const SPARSE: bool>(
    row: SharedBytes,
    previous: u64,
    real: usize,
    map: impl Fn(u32) -> u32,
) -> Tile {
    let (mut values, mut deltas, mut nonzero) = (Span::<WIDTH>::EMPTY, Span::<WIDTH>::EMPTY, Span::<WIDTH>::EMPTY);
    let (mut before, mut count, real, mut first, mut varying) = (previous, 0, real as u32, 0, 0);
    unsafe {
        for_each_mapped::<WIDTH>(row, map, |i, value| {
            values.add(value);
            deltas.add(value.wrapping_sub(before) & mask(WIDTH));
            before = value;
            if i == 0 {
                first = value;
            }
            varying |= value ^ first;
            if SPARSE && (i as u32) < real && value != 0 {
                nonzero.add(value);
                count += 1;
            }
        })
    };
    let sparse = SPARSE.then(|| (frame(nonzero.extremes(count == 0), WIDTH), count));
    let (frame, delta) = (frame(values.extremes(false), WIDTH), frame(deltas.extremes(false), WIDTH));
    choose(&Geometry::new(WIDTH, SPARSE), frame, delta, (varying, first), sparse)
}

/// Bits appended to a payload in shared memory, a word stored whenever one fills: in 32-bit steps
/// (a variable shift of 64 bits takes the GPU a handful of selects).
struct BitWriter {
    payload: Swizzled,
    /// The next word.
    at: u32,
    /// The next word's bits so far, and how many.
    pending: u32,
    bits: u32,
}

impl BitWriter {
    /// Appends the `bits` (at most 32) low bits of `value` (no others set).
    #[inline(always)]
    unsafe fn push32(&mut self, value: u32, bits: u32) {
        self.pending |= value << self.bits;
        if self.bits + bits >= 32 {
            unsafe { self.payload.set_word(self.at, self.pending) };
            // The bits that did not fit: a funnel shift.
            self.pending = (((value as u64) << self.bits) >> 32) as u32;
            (self.at, self.bits) = (self.at + 1, self.bits + bits - 32);
        } else {
            self.bits += bits;
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
            unsafe { self.payload.set_word(self.at, self.pending) };
        }
    }
}

/// `x - y` in each `WIDTH`-byte lane of a word, wrapping within the lane (Hacker's Delight's
/// subtraction within a register: the lanes' high bits kept out of the borrow, then set right).
#[inline(always)]
fn lanes_sub<const WIDTH: usize>(x: u32, y: u32) -> u32 {
    if WIDTH == 4 {
        return x.wrapping_sub(y);
    }
    let high = repeat::<WIDTH>(1 << (8 * WIDTH - 1)) as u32;
    ((x | high).wrapping_sub(y & !high)) ^ ((x ^ !y) & high)
}

/// Each `WIDTH`-byte lane of `unit` replaced by the element before it: the lane below, the lowest
/// from the highest of `before` (the unit before).
#[inline(always)]
fn lanes_before<const WIDTH: usize>(unit: u32, before: u32) -> u32 {
    if WIDTH == 4 { before } else { unit << (8 * WIDTH) | before >> (32 - 8 * WIDTH) }
}

/// The entries of a unit (each below `2^bits` in its `WIDTH`-byte lane) packed together, the
/// first lowest: the upper lane of each pair shifted down onto the lower's top, then of each pair
/// of pairs.
#[inline(always)]
fn squeeze<const WIDTH: usize>(entries: u32, bits: u32) -> u32 {
    match WIDTH {
        1 => {
            let pairs = (entries & 0x00FF_00FF) | (entries & 0xFF00_FF00) >> (8 - bits);
            (pairs & 0xFFFF) | (pairs & 0xFFFF_0000) >> (16 - 2 * bits)
        }
        2 => (entries & 0xFFFF) | (entries & 0xFFFF_0000) >> (16 - bits),
        _ => entries,
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
            Kind::Frame | Kind::Verbatim | Kind::Delta if WIDTH == 8 => {
                // A unit is an element.
                let mut before = previous;
                for_each_element::<WIDTH>(row, |_, value| {
                    writer.push(entry(value.wrapping_sub(if tile.kind == Kind::Delta { before } else { 0 })), bits);
                    before = value;
                });
            }
            Kind::Frame | Kind::Verbatim | Kind::Delta => {
                // A unit's entries computed lane by lane in one word, then packed together.
                let (delta, base, unit_bits) =
                    (tile.kind == Kind::Delta, repeat::<WIDTH>(base) as u32, per_lane(WIDTH) as u32 * bits);
                // The element before, in the top lane.
                let mut before = (previous << (32 - 8 * WIDTH.min(4))) as u32;
                let mut unit = |unit: u32| {
                    let value =
                        if delta { lanes_sub::<WIDTH>(unit, lanes_before::<WIDTH>(unit, before)) } else { unit };
                    before = unit;
                    writer.push32(squeeze::<WIDTH>(lanes_sub::<WIDTH>(value, base), bits), unit_bits);
                };
                for piece in 0..Geometry::new(WIDTH, false).tile_bytes() as u32 / 16 {
                    let [a, b, c, d] = row.u32x4(16 * piece);
                    unit(a);
                    unit(b);
                    unit(c);
                    unit(d);
                }
            }
            Kind::Mask => {
                // A unit's entries gathered at once from the varying bits repeated over it.
                let repeated = repeat::<WIDTH>(tile.varying);
                writer.push(tile.varying, 32 * Geometry::new(WIDTH, false).mask_words() as u32);
                let unit_bits = per_lane(WIDTH) as u32 * bits;
                if WIDTH == 8 {
                    let gather = Scatter64::new(repeated);
                    for_each_element::<WIDTH>(row, |_, value| writer.push(gather.gather(value), unit_bits));
                } else {
                    let gather = Scatter32::new(repeated as u32);
                    for piece in 0..Geometry::new(WIDTH, false).tile_bytes() as u32 / 16 {
                        let [a, b, c, d] = row.u32x4(16 * piece);
                        writer.push32(gather.gather(a), unit_bits);
                        writer.push32(gather.gather(b), unit_bits);
                        writer.push32(gather.gather(c), unit_bits);
                        writer.push32(gather.gather(d), unit_bits);
                    }
                }
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

//! Decompressing a chunk with a block of warps, a tile a lane. Each warp takes a group of tiles
//! (4 KiB of elements) a round: its lanes parse the tiles' headers, a block scan of their payload
//! sizes places them, the warp copies the group's payloads into shared memory 16 bytes a lane,
//! and each lane decodes its own tile there, a 4-byte unit (or 8-byte element) a step, into its
//! row of the group's output. A delta tile needs the last element of the tile before, which the
//! lanes do not have until all are decoded: each decodes its tile from 0 and the lanes' last
//! elements are composed by a warp scan and across the warps, then the delta tiles add what
//! came before. The warp copies its rows out 16 bytes a lane, through the chunk's table where it
//! is ranked (staged in shared memory once a chunk). A mask tile's entries are scattered to its
//! varying bits a unit at once (the four bytes of a unit of 1-byte elements in one step).

use super::{
    DECODE_WARPS, DECODE_WARPS_PER_SM, Layout, Mapped, Rows, Swizzled, group_tiles, larger, max_payload, repeat,
    row_bytes,
};
use crate::bitpack::{Scatter32, Scatter64, shuffle_value};
use crate::block::{Block, strided};
use crate::copy::{Memory, spread};
use crate::lz77::funnel;
use crate::raw::SharedBytes;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::bitcomp::{
    Geometry, HEADER_LEN, Header, Kind, SYMBOLS_LEN, Tile, dequantize, per_lane, read_header,
};
use ferrocomp_format::bitpack::mask;

/// Bytes of a warp's payload stage for `width`-byte elements ([`Swizzled`]): its group's largest
/// payloads and 16 bytes past them, which a lane's last window may reach; whole lines of 128.
const fn stage_bytes(width: usize) -> usize {
    (group_tiles(width) * max_payload(width) + 16).next_multiple_of(128)
}

/// Shared memory of a decoding warp: its payload stage, then its output rows.
const fn warp_bytes(width: usize) -> usize {
    stage_bytes(width) + group_tiles(width) * row_bytes(width)
}

/// The most any element width takes.
const WARP_BYTES: usize = larger(warp_bytes(1), warp_bytes(8));

/// The block's shared memory.
type Shared = Layout<WARP_BYTES>;

/// Shared memory of a decoding block of `warps` warps.
pub const fn decode_shared_bytes(warps: u32) -> usize {
    Shared::bytes(warps)
}
const _: () =
    assert!(Shared::fits(DECODE_WARPS, DECODE_WARPS_PER_SM) && Shared::fits(DECODE_WARPS_PER_SM, DECODE_WARPS_PER_SM));
const _: () = assert!(warp_bytes(2) <= WARP_BYTES && warp_bytes(4) <= WARP_BYTES && WARP_BYTES.is_multiple_of(16));

/// Decompresses the chunk of `len` bytes at `input` into `out` (room for `capacity` bytes), as
/// `ferrocomp_format::bitcomp::decompress`: the same size or status, in every thread of the
/// block.
///
/// # Safety
/// `input` must be readable for `len` bytes and `out` writable for `capacity` bytes, neither
/// written by anyone else meanwhile; the block has at most [`DECODE_WARPS_PER_SM`] warps and
/// `shared` is [`decode_shared_bytes`] of them, of shared memory (aligned to 16), the block's
/// alone; every thread calls this with the same chunk.
pub unsafe fn decompress_chunk<B: Block, W: Warp>(
    block: &B,
    warp: &W,
    input: *const u8,
    len: usize,
    out: *mut u8,
    capacity: usize,
    shared: *mut u8,
) -> Result<usize, Status> {
    let bytes = unsafe { crate::raw::bytes(input, len) };
    let header = read_header(bytes)?;
    if header.size > capacity {
        return Err(Status::OutputTooSmall);
    }
    if header.ranked {
        if bytes.len() < HEADER_LEN + SYMBOLS_LEN {
            return Err(Status::Truncated);
        }
        // The table staged once the block's warps are past the chunk before, which may still
        // have been copying through its table.
        let table = unsafe { Shared::new(shared).table() };
        block.sync_threads();
        for k in strided(block.thread() as usize..SYMBOLS_LEN, block.threads() as usize) {
            unsafe { table.set_u8(k as u32, bytes[HEADER_LEN + k]) };
        }
        block.sync_threads();
    }
    unsafe {
        match header.options.element.width() {
            1 => decode_tiles::<B, W, 1>(block, warp, bytes, &header, out, shared),
            2 => decode_tiles::<B, W, 2>(block, warp, bytes, &header, out, shared),
            4 => decode_tiles::<B, W, 4>(block, warp, bytes, &header, out, shared),
            _ => decode_tiles::<B, W, 8>(block, warp, bytes, &header, out, shared),
        }
    }
}

/// A tile's header as a lane decodes it: verbatim tiles are frames of reference of full-width
/// entries from 0.
#[derive(Clone, Copy)]
struct Coding {
    bits: u32,
    base: u64,
    delta: bool,
    sparse: bool,
    masked: bool,
    verbatim: bool,
}

impl Coding {
    /// No tile: nothing to decode.
    const NONE: Self = Self { bits: 0, base: 0, delta: false, sparse: false, masked: false, verbatim: false };

    fn of(tile: &Tile, width: usize) -> Self {
        let verbatim = tile.kind == Kind::Verbatim;
        Self {
            bits: if verbatim { 8 * width as u32 } else { tile.bits },
            base: tile.base,
            delta: tile.kind == Kind::Delta,
            sparse: matches!(tile.kind, Kind::Sparse { .. }),
            masked: tile.kind == Kind::Mask,
            verbatim,
        }
    }
}

/// Decodes the tiles and tail of the chunk `bytes` of `WIDTH`-byte elements (`header`) into
/// `out`, a round of groups at a time.
#[inline(always)]
unsafe fn decode_tiles<B: Block, W: Warp, const WIDTH: usize>(
    block: &B,
    warp: &W,
    bytes: &[u8],
    header: &Header,
    out: *mut u8,
    shared: *mut u8,
) -> Result<usize, Status> {
    // (The tiles' shape as constants where the width gives them.)
    let geometry = Geometry { width: WIDTH, elements: Geometry::new(WIDTH, false).elements, ..header.geometry };
    let (len, n, options) = (bytes.len(), header.size, &header.options);
    let (tiles, elements) = (geometry.tiles(n), n / WIDTH);
    let (group, lane, index) = (group_tiles(WIDTH), warp.lane() as usize, (block.thread() / WARP_SIZE) as usize);
    let warps = (block.threads() / WARP_SIZE) as usize;
    let shared = Shared::new(shared);
    let (scratch, slots, table, stage_at) =
        unsafe { (shared.scratch(), shared.slots(), shared.table(), shared.warp(index)) };
    let stage = unsafe { Swizzled::new(stage_at) };
    let rows = unsafe { Rows::<WIDTH>::new(stage_at.add(stage_bytes(WIDTH))) };
    let mut at = geometry.payload_start(n);
    // The last element of the tiles before the round, as decoded (before any dequantisation).
    let mut before_round = 0u64;
    let mut round = 0;
    while round < tiles {
        let t = round + index * group + lane;
        let mine = lane < group && t < tiles;
        let entry = geometry.entry(t);
        let parsed = match bytes.get(entry..entry + geometry.header) {
            _ if !mine => Ok(None),
            Some(entry) => Tile::parse(entry, &geometry).map(Some),
            None => Err(Status::Truncated),
        };
        let (tile, mut status) = match parsed {
            Ok(tile) => (tile, Status::Success),
            Err(status) => (None, status),
        };
        let coding = tile.map_or(Coding::NONE, |tile| Coding::of(&tile, WIDTH));
        let size = tile.map_or(0, |tile| 4 * tile.words(&geometry) as u32);
        let (below, total) = unsafe { block.scan_add(warp, size, scratch) };
        if status == Status::Success && at + (below + size) as usize > len {
            status = Status::Truncated;
        }
        // The group's payloads, from where its first starts, into the stage.
        let group_at = at + warp.shuffle(below, 0) as usize;
        let group_end = at + warp.shuffle(below + size, WARP_SIZE - 1) as usize;
        let (from, to) = (group_at.min(len), group_end.min(len));
        unsafe {
            spread::<1>(lane, WARP_SIZE as usize, &Memory(bytes.as_ptr().add(from) as *mut u8), &stage, to - from)
        };
        warp.sync();
        let offset = at + below as usize - group_at;
        let malformed = match tile {
            Some(Tile { kind: Kind::Sparse { count }, .. }) => (unsafe { set_bits(stage, offset, &geometry) }) != count,
            Some(Tile { kind: Kind::Mask, bits, .. }) => {
                let varying = unsafe { varying::<WIDTH>(stage, offset) };
                varying.count_ones() != bits || varying & !mask(WIDTH) != 0
            }
            _ => false,
        };
        if status == Status::Success && malformed {
            status = Status::Malformed;
        }
        let last = if mine && status == Status::Success {
            unsafe {
                if coding.sparse {
                    decode_tile::<WIDTH, true>(&coding, stage, offset, rows.row(lane))
                } else if coding.masked {
                    decode_mask_tile::<WIDTH>(&coding, stage, offset, rows.row(lane))
                } else {
                    decode_tile::<WIDTH, false>(&coding, stage, offset, rows.row(lane))
                }
            }
        } else {
            0
        };
        // Each lane's last element, composed with those before it in the warp.
        let (through_alone, through) = compose_scan(warp, mine && !coding.delta, last, WIDTH);
        let failing = warp.ballot(status != Status::Success);
        let first = failing.trailing_zeros();
        let first_status = warp.shuffle(status as u32, first & (WARP_SIZE - 1));
        if lane == WARP_SIZE as usize - 1 {
            let failure = match failing {
                0 => u32::MAX,
                _ => ((round + index * group + first as usize) as u32) << 8 | first_status,
            };
            let slot = [failure, through_alone as u32, through as u32, (through >> 32) as u32];
            unsafe { slots.set_u32x4(Shared::slot(index), slot) };
        }
        block.sync_threads();
        // The warps' outcomes in order: the first failure, and what precedes each group.
        let (mut failure, mut before_group, mut before_next) = (u32::MAX, 0, before_round);
        for w in 0..warps {
            let [failed, alone, low, high] = unsafe { slots.u32x4(Shared::slot(w)) };
            failure = failure.min(failed);
            if w == index {
                before_group = before_next;
            }
            let value = low as u64 | (high as u64) << 32;
            before_next = if alone != 0 { value } else { before_next.wrapping_add(value) & mask(WIDTH) };
        }
        if failure != u32::MAX {
            return Err(Status::from_code(failure & 0xFF));
        }
        // What precedes this lane's tile: the lanes' before it, after the group's.
        let below = (lane as u32).saturating_sub(1);
        let (below_alone, below_value) =
            (warp.shuffle(through_alone as u32, below) != 0, shuffle_value(warp, through, below, WIDTH <= 4));
        let previous = match (lane, below_alone) {
            (0, _) => before_group,
            (_, true) => below_value,
            _ => before_group.wrapping_add(below_value) & mask(WIDTH),
        };
        if mine {
            let carry = if coding.delta { previous } else { 0 };
            // (Lossy coding is over floats: 4 or 8 bytes.)
            let step = options.error_bound.filter(|_| WIDTH >= 4 && !coding.verbatim).map(|bound| bound.step());
            unsafe { finish_tile::<WIDTH>(rows.row(lane), carry, step) };
        }
        warp.sync();
        let first_byte = (round + index * group) * geometry.tile_bytes();
        let group_bytes = (elements * WIDTH).saturating_sub(first_byte).min(group * geometry.tile_bytes());
        let to = Memory(unsafe { out.add(first_byte) });
        match header.ranked {
            _ if group_bytes == 0 => {}
            true => unsafe { spread::<1>(lane, WARP_SIZE as usize, &Mapped { source: rows, table }, &to, group_bytes) },
            false => unsafe { spread::<1>(lane, WARP_SIZE as usize, &rows, &to, group_bytes) },
        }
        warp.sync();
        at += total as usize;
        before_round = before_next;
        round += warps * group;
    }
    let tail = n % WIDTH;
    if len != at + tail {
        return Err(if len < at + tail { Status::Truncated } else { Status::Malformed });
    }
    let lane = block.thread() as usize;
    if lane < tail {
        unsafe { *out.add(n - tail + lane) = bytes[at + lane] };
    }
    Ok(n)
}

/// Set bits of the sparse tile's bitmap at byte `offset` of the stage.
#[inline(always)]
unsafe fn set_bits(stage: Swizzled, offset: usize, geometry: &Geometry) -> usize {
    let words = geometry.bitmap_words() as u32;
    (0..words).map(|k| unsafe { stage.word(offset as u32 / 4 + k) }.count_ones() as usize).sum()
}

/// The varying bits of the mask tile at byte `offset` of the stage: its first word (two for 8-byte
/// elements), all of it (bits past the element's width make the tile malformed).
#[inline(always)]
unsafe fn varying<const WIDTH: usize>(stage: Swizzled, offset: usize) -> u64 {
    let at = offset as u32 / 4;
    let low = unsafe { stage.word(at) } as u64;
    if WIDTH == 8 { low | (unsafe { stage.word(at + 1) } as u64) << 32 } else { low }
}

/// Decodes the mask tile `coding` whose payload is at byte `offset` of the stage into `row`, a
/// unit a step: the unit's entries (of its elements in order) scattered at once to the varying
/// bits repeated over the unit, over the base's other bits; returns its last element.
#[inline(always)]
unsafe fn decode_mask_tile<const WIDTH: usize>(
    coding: &Coding,
    stage: Swizzled,
    offset: usize,
    row: SharedBytes,
) -> u64 {
    let (per_unit, unit_bytes) = (per_lane(WIDTH) as u32, (per_lane(WIDTH) * WIDTH) as u32);
    let varying = unsafe { varying::<WIDTH>(stage, offset) };
    let (repeated, base) = (repeat::<WIDTH>(varying), repeat::<WIDTH>(coding.base & !varying));
    let unit_bits = per_unit * coding.bits;
    let first_bit = 8 * offset as u32 + 32 * Geometry::new(WIDTH, false).mask_words() as u32;
    let mut unit = 0u64;
    if unit_bytes == 4 {
        let scatter = Scatter32::new(repeated as u32);
        let word = |k: u32| {
            let window = unsafe { window::<WIDTH>(stage, first_bit + k * unit_bits) } as u32;
            base as u32 | scatter.scatter(window & low(unit_bits) as u32)
        };
        for piece in 0..super::TILE_UNITS as u32 / 4 {
            let words = [word(4 * piece), word(4 * piece + 1), word(4 * piece + 2), word(4 * piece + 3)];
            unit = words[3] as u64;
            unsafe { row.set_u32x4(16 * piece, words) };
        }
    } else {
        let scatter = Scatter64::new(repeated);
        let element = |k: u32| {
            let window = unsafe { window::<WIDTH>(stage, first_bit + k * unit_bits) };
            base | scatter.scatter(window & low(unit_bits))
        };
        for piece in 0..super::TILE_UNITS as u32 / 2 {
            let (a, b) = (element(2 * piece), element(2 * piece + 1));
            unit = b;
            unsafe { row.set_u32x4(16 * piece, [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32]) };
        }
    }
    unit >> (8 * WIDTH as u32 * (per_unit - 1)) & mask(WIDTH)
}

/// `(alone, value)` composed over lanes `0..=lane`: a lane's `value` stands alone where `alone`,
/// else adds (mod 2^(8 `width`)) to the composition of those before; returns whether the
/// composition stands alone, and its value.
#[inline(always)]
fn compose_scan<W: Warp>(warp: &W, mut alone: bool, mut value: u64, width: usize) -> (bool, u64) {
    let lane = warp.lane();
    let mut distance = 1;
    while distance < WARP_SIZE {
        let from = lane.saturating_sub(distance);
        let (below_alone, below) =
            (warp.shuffle(alone as u32, from) != 0, shuffle_value(warp, value, from, width <= 4));
        if lane >= distance && !alone {
            alone = below_alone;
            value = value.wrapping_add(below) & mask(width);
        }
        distance *= 2;
    }
    (alone, value)
}

/// The 32 bits (64 for 8-byte elements) of the stage from bit `bit`.
#[inline(always)]
unsafe fn window<const WIDTH: usize>(stage: Swizzled, bit: u32) -> u64 {
    let (at, shift) = (bit / 32, bit % 32);
    let (low, high) = unsafe { (stage.word(at), stage.word(at + 1)) };
    if WIDTH <= 4 {
        return funnel(low, high, shift) as u64;
    }
    let top = unsafe { stage.word(at + 2) };
    funnel(low, high, shift) as u64 | (funnel(high, top, shift) as u64) << 32
}

/// The low `bits` bits.
#[inline(always)]
const fn low(bits: u32) -> u64 {
    if bits >= 64 { u64::MAX } else { (1 << bits) - 1 }
}

/// Decodes the tile `coding` whose payload is at byte `offset` of the stage into `row`, a 4-byte
/// unit (or 8-byte element) a step, a delta tile's from 0; returns its last element. `SPARSE`:
/// whether it is a sparse tile (its entries after a bitmap of its elements).
#[inline(always)]
unsafe fn decode_tile<const WIDTH: usize, const SPARSE: bool>(
    coding: &Coding,
    stage: Swizzled,
    offset: usize,
    row: SharedBytes,
) -> u64 {
    let (per_unit, unit_bytes) = (per_lane(WIDTH) as u32, (per_lane(WIDTH) * WIDTH) as u32);
    let units_per_piece = 16 / unit_bytes;
    let bitmap_words = if SPARSE { Geometry::new(WIDTH, true).bitmap_words() as u32 } else { 0 };
    let (bits, fields, offset) = (coding.bits, low(coding.bits), offset as u32);
    let first_bit = 8 * offset + 32 * bitmap_words;
    let (mut rank, mut last) = (0, 0u64);
    // Unit `k`, its elements in order from the low bytes up.
    let mut unit = |k: u32| {
        let flags = if SPARSE {
            let at = k * per_unit;
            (unsafe { stage.word(offset / 4 + at / 32) } >> (at % 32)) & ((1 << per_unit) - 1)
        } else {
            (1 << per_unit) - 1
        };
        let window = unsafe { window::<WIDTH>(stage, first_bit + rank * bits) };
        let (mut used, mut unit) = (0, 0u64);
        for i in 0..per_unit {
            let set = flags >> i & 1 != 0;
            let entry = coding.base.wrapping_add(window >> (used * bits) & fields) & mask(WIDTH);
            let value = if set { entry } else { 0 };
            last = if coding.delta { last.wrapping_add(value) & mask(WIDTH) } else { value };
            unit |= last << (8 * WIDTH as u32 * i);
            used += set as u32;
        }
        rank += used;
        unit
    };
    // A piece's words named, not an array filled in a loop (which a sparse tile's left in local
    // memory).
    for piece in 0..super::TILE_UNITS as u32 / units_per_piece {
        let words = if unit_bytes == 4 {
            let first = 4 * piece;
            [unit(first) as u32, unit(first + 1) as u32, unit(first + 2) as u32, unit(first + 3) as u32]
        } else {
            let (a, b) = (unit(2 * piece), unit(2 * piece + 1));
            [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32]
        };
        unsafe { row.set_u32x4(16 * piece, words) };
    }
    last
}

/// Adds `carry` to every element of the decoded tile in `row` (mod 2^(8 `WIDTH`)), then turns
/// each into the float it stands for where `step` is given (lossy).
#[inline(always)]
unsafe fn finish_tile<const WIDTH: usize>(row: SharedBytes, carry: u64, step: Option<f64>) {
    if carry == 0 && step.is_none() {
        return;
    }
    for piece in 0..(super::TILE_UNITS * per_lane(WIDTH) * WIDTH / 16) as u32 {
        let words = unsafe { row.u32x4(16 * piece) };
        let words = if WIDTH == 8 {
            let element = |k: usize| {
                let q = (words[2 * k] as u64 | (words[2 * k + 1] as u64) << 32).wrapping_add(carry);
                step.map_or(q, |step| dequantize(q, WIDTH, step))
            };
            let (a, b) = (element(0), element(1));
            [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32]
        } else {
            words.map(|word| {
                let sum = add_elements::<WIDTH>(word, carry as u32);
                step.map_or(sum, |step| dequantize(sum as u64, WIDTH, step) as u32)
            })
        };
        unsafe { row.set_u32x4(16 * piece, words) };
    }
}

/// `carry` added to each `WIDTH`-byte element of `word`, mod 2^(8 `WIDTH`): one addition with
/// the elements' top bits kept out of it and put back.
#[inline(always)]
fn add_elements<const WIDTH: usize>(word: u32, carry: u32) -> u32 {
    let (spread, top) = match WIDTH {
        1 => (0x0101_0101, 0x8080_8080),
        2 => (0x0001_0001, 0x8000_8000),
        _ => return word.wrapping_add(carry),
    };
    let carry = carry.wrapping_mul(spread);
    ((word & !top).wrapping_add(carry & !top)) ^ ((word ^ carry) & top)
}

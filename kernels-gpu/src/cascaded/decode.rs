//! Decompressing a chunk with a block of warps, a warp a sub-block at a time, handed out in
//! order to whichever warp is free. A coded sub-block is staged in the warp's shared memory, 16
//! bytes a lane; its layout is parsed there (32-bit offsets, shared loads), the lanes unpack its
//! values four a lane a step and undo their deltas with their own sums and a warp scan into the
//! warp's row of elements, expand each run-length layer in place in the row, and copy the row out
//! 16 bytes a lane. A stored sub-block is copied straight, 16 bytes a lane. Every global load of a
//! sub-block is made at once, before any of its work waits on one.

use super::MAX_WARPS;
use crate::bitpack::{scan_add64, shuffle_value};
use crate::block::{Block, decode_parts, decode_parts_words};
use crate::copy::{Memory, spread};
use crate::lz77::{last_starting_by, scan_add};
use crate::raw::SharedBytes;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::bitpack::mask;
use ferrocomp_format::cascaded::{
    HEADER_LEN, Layout, MAX_LAYERS, RUN_WIDTH, STORED, SUB_BLOCK, Stream, read_header, sub_block_size, sub_blocks,
};

/// Bytes of the block's [`decode_parts`] words (for the largest block), to 16.
const PARTS_BYTES: usize = (4 * decode_parts_words(MAX_WARPS * WARP_SIZE)).next_multiple_of(16);
/// Bytes of a warp's stage: the largest coded sub-block (`1 + SUB_BLOCK`) to 16, and 16 more
/// that a lane unpacking a stream's last entry reads past it (those bits are masked off).
const STAGE_BYTES: usize = (1 + SUB_BLOCK).next_multiple_of(16) + 16;
/// Bytes of a warp's shared memory: its stage, then its row of elements.
const WARP_BYTES: usize = STAGE_BYTES + SUB_BLOCK;
/// Shared memory of a decoding block of `warps` warps (at most [`MAX_WARPS`]):
/// [`decode_parts`]'s words, then each warp's stage and row.
pub const fn decode_shared_bytes(warps: u32) -> usize {
    PARTS_BYTES + warps as usize * WARP_BYTES
}

/// Decompresses the chunk of `len` bytes at `input` into `out` (room for `capacity` bytes), as
/// `ferrocomp_format::cascaded::decompress`: the same size or status, in every thread of the
/// block.
///
/// # Safety
/// `input` must be readable for `len` bytes and `out` writable for `capacity` bytes, neither
/// written by anyone else meanwhile; `shared` must be [`decode_shared_bytes`] of shared memory
/// for the block's warps (at most [`MAX_WARPS`]), aligned to 16, the block's alone; every
/// thread of the block calls this with the same chunk.
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
    let (element, n) = read_header(bytes)?;
    if n > capacity {
        return Err(Status::OutputTooSmall);
    }
    let warp_index = (block.thread() / WARP_SIZE) as usize;
    let own = unsafe { shared.add(PARTS_BYTES + warp_index * WARP_BYTES) };
    let parts = sub_blocks(n);
    let decode = |s: u32, at: u32, size: u32| {
        let (s, at, size) = (s as usize, at as usize, size as usize);
        if at + size > len {
            return Err(Status::Truncated);
        }
        let (bytes, out, len) =
            (&bytes[at..at + size], unsafe { out.add(s * SUB_BLOCK) }, SUB_BLOCK.min(n - s * SUB_BLOCK));
        unsafe {
            match element.width() {
                1 => decode_sub_block::<W, 1>(warp, bytes, own, out, len),
                2 => decode_sub_block::<W, 2>(warp, bytes, own, out, len),
                4 => decode_sub_block::<W, 4>(warp, bytes, own, out, len),
                _ => decode_sub_block::<W, 8>(warp, bytes, own, out, len),
            }
        }
    };
    // Within 32 bits: at most 4,096 parts of 64 KiB.
    let size = |s: u32| sub_block_size(bytes, s as usize) as u32;
    let first_at = (HEADER_LEN + 2 * parts) as u32;
    let end = unsafe { decode_parts(block, warp, parts as u32, first_at, size, shared as *mut u32, decode)? };
    if end as usize != len { Err(Status::Malformed) } else { Ok(n) }
}

/// A row of `WIDTH`-byte elements in shared memory.
#[derive(Clone, Copy)]
struct Row<const WIDTH: usize>(SharedBytes);

impl<const WIDTH: usize> Row<WIDTH> {
    #[inline(always)]
    unsafe fn get(self, i: u32) -> u64 {
        let at = self.0;
        unsafe {
            match WIDTH {
                1 => at.u8(i) as u64,
                2 => at.u16(2 * i) as u64,
                4 => at.u32(4 * i) as u64,
                _ => at.u32(8 * i) as u64 | (at.u32(8 * i + 4) as u64) << 32,
            }
        }
    }

    #[inline(always)]
    unsafe fn set(self, i: u32, value: u64) {
        let at = self.0;
        unsafe {
            match WIDTH {
                1 => at.set_u8(i, value as u8),
                2 => at.set_u16(2 * i, value as u16),
                4 => at.set_u32(4 * i, value as u32),
                _ => {
                    at.set_u32(8 * i, value as u32);
                    at.set_u32(8 * i + 4, (value >> 32) as u32);
                }
            }
        }
    }

    /// Sets entries `i ..` to `group`, as many of them as `left` allows; one store for the group
    /// where the row is aligned to it.
    #[inline(always)]
    unsafe fn set_group(self, i: u32, group: &[u64; GROUP], left: u32) {
        let (at, offset) = (self.0, i * WIDTH as u32);
        let word = |k: usize| match WIDTH {
            1 => (0..4).fold(0, |word, j| word | (group[j] as u32) << (8 * j)),
            2 => group[2 * k] as u32 | (group[2 * k + 1] as u32) << 16,
            4 => group[k] as u32,
            _ => (group[k / 2] >> (32 * (k % 2))) as u32,
        };
        if left < GROUP as u32 || !offset.is_multiple_of((GROUP * WIDTH).min(16) as u32) {
            // Constant indices (a guard, not a bound) keep the group in registers.
            for (j, &value) in group.iter().enumerate() {
                if (j as u32) < left {
                    unsafe { self.set(i + j as u32, value) };
                }
            }
            return;
        }
        unsafe {
            match WIDTH {
                1 => at.set_u32(offset, word(0)),
                2 => {
                    at.set_u32(offset, word(0));
                    at.set_u32(offset + 4, word(1));
                }
                4 => at.set_u32x4(offset, [word(0), word(1), word(2), word(3)]),
                _ => {
                    at.set_u32x4(offset, [word(0), word(1), word(2), word(3)]);
                    at.set_u32x4(offset + 16, [word(4), word(5), word(6), word(7)]);
                }
            }
        }
    }
}

/// Entries a lane unpacks a step, one after another: a delta layer is then a lane's own sums and
/// one warp scan a step.
const GROUP: usize = 4;

/// Entry `i` of `stream` in the staged sub-block, `WIDTH` bytes wide (32-bit arithmetic where
/// that is at most 4).
#[inline(always)]
unsafe fn entry<const WIDTH: usize>(stage: SharedBytes, stream: &Stream, i: u32) -> u64 {
    let bit = 8 * stream.at + i * stream.bits;
    let (word, shift) = (bit / 32, bit % 32);
    let low = unsafe { stage.u32(4 * word) as u64 | (stage.u32(4 * word + 4) as u64) << 32 };
    if WIDTH <= 4 {
        let packed = (low >> shift) as u32 & u32::MAX.checked_shr(32 - stream.bits).unwrap_or(0);
        return (stream.base as u32).wrapping_add(packed) as u64 & mask(WIDTH);
    }
    // A third word only where an entry of more than 32 bits crosses two word boundaries.
    let packed = if shift + stream.bits > 64 {
        low >> shift | (unsafe { stage.u32(4 * word + 8) } as u64) << (64 - shift)
    } else {
        low >> shift
    };
    let packed = packed & u64::MAX.checked_shr(64 - stream.bits).unwrap_or(0);
    stream.base.wrapping_add(packed) & mask(WIDTH)
}

/// Expands the run-length layer whose run lengths are `runs` and whose values are at the end of
/// the row (before them, `count` entries in all) into the `target` entries of the layer before,
/// also ending the row: 32 runs a step, never past a value it has still to read.
#[inline(always)]
unsafe fn expand<W: Warp, const WIDTH: usize>(
    warp: &W,
    stage: SharedBytes,
    row: Row<WIDTH>,
    runs: &Stream,
    count: u32,
    target: u32,
) -> Result<(), Status> {
    let lane = warp.lane();
    let first = count - runs.count;
    let mut at = count - target;
    let mut k = 0;
    while k < runs.count {
        let i = k + lane;
        let (run, value) = if i < runs.count {
            unsafe { (entry::<RUN_WIDTH>(stage, runs, i) as u32, row.get(first + i)) }
        } else {
            (0, 0)
        };
        let end = scan_add(warp, run);
        let total = warp.shuffle(end, WARP_SIZE - 1);
        let empty = warp.ballot(i < runs.count && run == 0);
        warp.sync(); // this step's values are read before its entries are written
        if empty != 0 || at + total > count {
            return Err(Status::Malformed);
        }
        let start = if i < runs.count { end - run } else { u32::MAX };
        let mut step = 0;
        while step < total {
            let q = step + lane;
            let owner = last_starting_by(warp, start, q);
            let entry = shuffle_value(warp, value, owner, WIDTH <= 4);
            if q < total {
                unsafe { row.set(at + q, entry) };
            }
            step += WARP_SIZE;
        }
        warp.sync();
        at += total;
        k += WARP_SIZE;
    }
    if at != count { Err(Status::Malformed) } else { Ok(()) }
}

/// Decodes the sub-block `bytes` of `WIDTH`-byte elements into the `len` bytes at `out`, with
/// `own` (the warp's shared memory) as its stage and row.
#[inline(always)]
unsafe fn decode_sub_block<W: Warp, const WIDTH: usize>(
    warp: &W,
    bytes: &[u8],
    own: *mut u8,
    out: *mut u8,
    len: usize,
) -> Result<(), Status> {
    let size = bytes.len();
    if size > 1 + SUB_BLOCK {
        return Err(Status::Malformed);
    }
    let lane = warp.lane();
    if size == 1 + len {
        // Stored, most likely: copied while its first byte is read (a coding as long as stored
        // would be is decoded over the copy).
        let first = bytes[0];
        unsafe {
            spread::<2>(lane as usize, WARP_SIZE as usize, &Memory(bytes[1..].as_ptr() as *mut u8), &Memory(out), len)
        };
        if first == STORED {
            return Ok(());
        }
    }
    let (stage, row) = unsafe { (SharedBytes::new(own), SharedBytes::new(own.add(STAGE_BYTES))) };
    warp.sync(); // the sub-block before is out of the stage and the row
    unsafe { spread::<2>(lane as usize, WARP_SIZE as usize, &Memory(bytes.as_ptr() as *mut u8), &stage, size) };
    warp.sync();
    let (count, tail) = ((len / WIDTH) as u32, (len % WIDTH) as u32);
    let size = size as u32;
    if size > 0 && unsafe { stage.u8(0) } == STORED {
        // Stored, in a size that does not fit.
        return Err(if size < 1 + len as u32 { Status::Truncated } else { Status::Malformed });
    }
    let layout = Layout::parse(size, |i| unsafe { stage.u8(i) }, WIDTH as u32, count, tail)?;
    let row = Row::<WIDTH>(row);
    let narrow = WIDTH <= 4;
    // The values, their deltas undone (the last layer first), to the end of the row.
    let values = layout.values;
    let first = count - values.count;
    // Constant indices (a guard, not a bound) keep the sums in registers.
    let mut sums = [0u64; MAX_LAYERS];
    for (j, sum) in sums.iter_mut().enumerate() {
        if j as u32 + 1 == layout.deltas {
            *sum = layout.start;
        }
    }
    let mut tile = 0;
    while tile < values.count {
        let at = tile + GROUP as u32 * lane;
        let mut group = [0u64; GROUP];
        for (j, value) in group.iter_mut().enumerate() {
            if at + (j as u32) < values.count {
                *value = unsafe { entry::<WIDTH>(stage, &values, at + j as u32) };
            }
        }
        for (layer, sum) in sums.iter_mut().enumerate() {
            if (layer as u32) < layout.deltas {
                for j in 1..GROUP {
                    group[j] = group[j].wrapping_add(group[j - 1]);
                }
                let own = group[GROUP - 1];
                let before = scan_add64(warp, own, narrow).wrapping_sub(own).wrapping_add(*sum);
                for value in &mut group {
                    *value = value.wrapping_add(before) & mask(WIDTH);
                }
                *sum = shuffle_value(warp, group[GROUP - 1], WARP_SIZE - 1, narrow);
            }
        }
        if at < values.count {
            unsafe { row.set_group(first + at, &group, values.count - at) };
        }
        tile += GROUP as u32 * WARP_SIZE;
    }
    warp.sync();
    // Each run-length layer expands its values (at the end of the row) into the entries of the
    // layer before, the last layer first: spelled out, so that the layout stays in registers.
    let [first, second, third, fourth] = layout.runs;
    let expand = |runs: &Stream, target: u32| unsafe { expand::<W, WIDTH>(warp, stage, row, runs, count, target) };
    const _: () = assert!(MAX_LAYERS == 4);
    if layout.rles > 3 {
        expand(&fourth, third.count)?;
    }
    if layout.rles > 2 {
        expand(&third, second.count)?;
    }
    if layout.rles > 1 {
        expand(&second, first.count)?;
    }
    if layout.rles > 0 {
        expand(&first, count)?;
    }
    if lane < tail {
        unsafe { row.0.set_u8(count * WIDTH as u32 + lane, stage.u8(layout.tail + lane)) };
    }
    warp.sync();
    unsafe { spread::<2>(lane as usize, WARP_SIZE as usize, &row.0, &Memory(out), len) };
    Ok(())
}

//! Decompressing a chunk with a block of warps, a warp a sub-block at a time, straight into the
//! output: the values unpacked and their deltas undone 32 a step, then each run-length layer
//! expanded in place.

use super::{load, set};
use crate::bitpack::{Words, scan_add64, shuffle64};
use crate::block::{Block, decode_parts};
use crate::lz77::last_starting_by;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::bitpack::mask;
use ferrocomp_format::cascaded::{
    HEADER_LEN, Layout, MAX_LAYERS, RUN_WIDTH, STORED, SUB_BLOCK, read_header, sub_block_size, sub_blocks,
};

/// A sub-block's output as `width`-byte elements, stored whole where the output is aligned.
struct Elements {
    at: *mut u8,
    width: usize,
    aligned: bool,
}

impl Elements {
    #[inline(always)]
    unsafe fn get(&self, i: usize) -> u64 {
        unsafe { load(self.at, i, self.width, self.aligned) }
    }

    #[inline(always)]
    unsafe fn set(&self, i: usize, value: u64) {
        if self.aligned {
            unsafe { set(self.at, i, self.width, value) };
        } else {
            for k in 0..self.width {
                unsafe { *self.at.add(i * self.width + k) = (value >> (8 * k)) as u8 };
            }
        }
    }
}

/// Decompresses the chunk of `len` bytes at `input` into `out` (room for `capacity` bytes), as
/// `ferrocomp_format::cascaded::decompress`: the same size or status, in every thread of the
/// block. Each warp decodes its sub-blocks straight into their output, which holds the values
/// while the run-length layers expand them.
///
/// # Safety
/// `input` must be readable for `len` bytes and `out` writable for `capacity` bytes, neither
/// written by anyone else meanwhile; `failures` shared memory for a word a warp, the block's
/// alone; every thread of the block calls this with the same chunk.
pub unsafe fn decompress_chunk<B: Block, W: Warp>(
    block: &B,
    warp: &W,
    input: *const u8,
    len: usize,
    out: *mut u8,
    capacity: usize,
    failures: *mut u32,
) -> Result<usize, Status> {
    let bytes = unsafe { crate::raw::bytes(input, len) };
    let (element, n) = read_header(bytes)?;
    if n > capacity {
        return Err(Status::OutputTooSmall);
    }
    let words = Words::new(input, len);
    let parts = sub_blocks(n);
    let size = |s: usize| sub_block_size(bytes, s);
    let end = unsafe {
        decode_parts(block, warp, parts, HEADER_LEN + 2 * parts, size, failures, |s, at| {
            if at + size(s) > len {
                return Err(Status::Truncated);
            }
            let (out, len) = (out.add(s * SUB_BLOCK), SUB_BLOCK.min(n - s * SUB_BLOCK));
            decode_sub_block(warp, &words, &bytes[at..at + size(s)], 8 * at, element.width(), out, len)
        })?
    };
    if end != len { Err(Status::Malformed) } else { Ok(n) }
}

/// Decodes the sub-block `bytes` (at bit `bit` of the input `words`) into the `len` bytes at
/// `out`.
unsafe fn decode_sub_block<W: Warp>(
    warp: &W,
    words: &Words,
    bytes: &[u8],
    bit: usize,
    width: usize,
    out: *mut u8,
    len: usize,
) -> Result<(), Status> {
    if bytes.len() > 1 + SUB_BLOCK {
        return Err(Status::Malformed);
    }
    let lane = warp.lane() as usize;
    if bytes.first() == Some(&STORED) {
        if bytes.len() != 1 + len {
            return Err(if bytes.len() < 1 + len { Status::Truncated } else { Status::Malformed });
        }
        // Whole words where the output is aligned to them, the rest byte by byte.
        let whole = if (out as usize).is_multiple_of(4) { len / 4 } else { 0 };
        warp.for_each_strided(whole, |k| unsafe {
            *(out as *mut u32).add(k) = words.bits(bit + 8 + 32 * k, 32) as u32
        });
        warp.for_each_strided(len - 4 * whole, |i| unsafe { *out.add(4 * whole + i) = bytes[1 + 4 * whole + i] });
        return Ok(());
    }
    let (count, tail) = (len / width, len % width);
    let layout = Layout::parse(bytes, width, count, tail)?;
    let elements = Elements { at: out, width, aligned: (out as usize).is_multiple_of(width) };
    // The values, their deltas undone (the last layer first), to the end of the output.
    let stream = layout.values;
    let first = count - stream.count;
    let mut sums = [0u64; MAX_LAYERS];
    for (j, sum) in sums.iter_mut().enumerate() {
        if j + 1 == layout.deltas {
            *sum = layout.start;
        }
    }
    let mut tile = 0;
    while tile < stream.count {
        let i = tile + lane;
        let mut value = if i < stream.count {
            let packed = unsafe { words.bits(bit + 8 * stream.at + i * stream.bits as usize, stream.bits) };
            stream.base.wrapping_add(packed) & mask(width)
        } else {
            0
        };
        for (j, sum) in sums.iter_mut().enumerate() {
            if j >= layout.deltas {
                break;
            }
            value = scan_add64(warp, value, width <= 4).wrapping_add(*sum) & mask(width);
            *sum = shuffle64(warp, value, WARP_SIZE - 1);
        }
        if i < stream.count {
            unsafe { elements.set(first + i, value) };
        }
        tile += WARP_SIZE as usize;
    }
    warp.sync();
    // Each run-length layer expands its values (at the end of the output) forward from there,
    // 32 runs a step, never past a value it has still to read.
    for r in (0..layout.rles).rev() {
        let runs = layout.runs[r];
        let first = count - runs.count;
        let target = if r == 0 { count } else { layout.runs[r - 1].count };
        let mut at = count - target;
        let mut k = 0;
        while k < runs.count {
            let i = k + lane;
            let run = if i < runs.count {
                let packed = unsafe { words.bits(bit + 8 * runs.at + i * runs.bits as usize, runs.bits) };
                (runs.base.wrapping_add(packed) & mask(RUN_WIDTH)) as u32
            } else {
                0
            };
            let value = if i < runs.count { unsafe { elements.get(first + i) } } else { 0 };
            let end = crate::lz77::scan_add(warp, run);
            let total = warp.shuffle(end, WARP_SIZE - 1) as usize;
            let empty = warp.ballot(i < runs.count && run == 0);
            warp.sync(); // this step's values are read before its entries are written
            if empty != 0 || at + total > count {
                return Err(Status::Malformed);
            }
            let start = if i < runs.count { end - run } else { u32::MAX };
            let mut step = 0;
            while step < total {
                let q = (step + lane) as u32;
                let owner = last_starting_by(warp, start, q);
                let entry = shuffle64(warp, value, owner);
                if (q as usize) < total {
                    unsafe { elements.set(at + q as usize, entry) };
                }
                step += WARP_SIZE as usize;
            }
            warp.sync();
            at += total;
            k += WARP_SIZE as usize;
        }
        if at != count {
            return Err(Status::Malformed);
        }
    }
    if lane < tail {
        unsafe { *out.add(count * width + lane) = bytes[layout.tail + lane] };
    }
    Ok(())
}

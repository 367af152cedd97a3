//! Compressing a chunk with a block of warps, a warp a sub-block at a time: the sub-block is
//! staged in the warp's shared memory 16 bytes a lane, each run-length and delta layer the
//! options allow is framed, the smallest coding chosen as the CPU's is, its bits ORed into
//! shared memory, and the coded (or stored) sub-block copied out 16 bytes a lane.

use super::{COMPRESS_SHARED_BYTES_PER_WARP, ROW_BYTES, get, set};
use crate::bitpack::{or_bits, reduce_extremes, shuffle64};
use crate::block::{Block, strided};
use crate::copy::{Memory, spread};
use crate::raw::SharedBytes;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::bitpack::{Extremes, Frame, mask, packed_len};
use ferrocomp_format::cascaded::{
    HEADER_LEN, MAX_CHUNK_SIZE, MAX_LAYERS, Options, RUN_WIDTH, STORED, SUB_BLOCK, VERSION, sub_blocks,
};

/// The lane before's `value`, or `first` in lane 0.
#[inline(always)]
fn previous<W: Warp>(warp: &W, value: u64, first: u64) -> u64 {
    let lane = warp.lane();
    let below = shuffle64(warp, value, lane.saturating_sub(1));
    if lane == 0 { first } else { below }
}

/// `levels[d]`, found by comparing with constant indices (which keeps `levels` in registers).
#[inline(always)]
fn pick(levels: &[u64; 1 + MAX_LAYERS], d: usize) -> u64 {
    levels.iter().enumerate().fold(0, |picked, (k, &level)| if k == d { level } else { picked })
}

/// Compresses `input` with `options` into `out` (room for `capacity` bytes), as
/// `ferrocomp_format::cascaded::compress`; returns the compressed size (in every thread of the
/// block). The block's warps code a round of sub-blocks at once, each into its own shared memory,
/// then write them out one after another.
///
/// # Safety
/// `out` must be writable for `capacity` bytes and `shared` for
/// [`compress_shared_bytes`](super::compress_shared_bytes) of the block's warps (at most
/// [`MAX_WARPS`](super::MAX_WARPS); aligned to 8, the block's alone),
/// neither written by anyone else meanwhile; every thread of the block calls this with the same chunk.
pub unsafe fn compress_chunk<B: Block, W: Warp>(
    block: &B,
    warp: &W,
    input: &[u8],
    options: &Options,
    shared: *mut u8,
    out: *mut u8,
    capacity: usize,
) -> Result<usize, Status> {
    let (input, n) = (input.as_ptr(), input.len());
    if n > MAX_CHUNK_SIZE {
        return Err(Status::ChunkTooLarge);
    }
    if !options.valid() {
        return Err(Status::Unsupported);
    }
    let table = HEADER_LEN + 2 * sub_blocks(n);
    if table > capacity {
        return Err(Status::OutputTooSmall);
    }
    let (thread, lane) = (block.thread() as usize, warp.lane() as usize);
    let (warp_index, warps) = (thread / WARP_SIZE as usize, (block.threads() / WARP_SIZE) as usize);
    if thread < HEADER_LEN {
        let header = [VERSION, options.element as u8, 0, 0, n as u8, (n >> 8) as u8, (n >> 16) as u8, (n >> 24) as u8];
        unsafe { *out.add(thread) = header[thread] };
    }
    let mut encoder = Encoder::new(unsafe { shared.add(warp_index * COMPRESS_SHARED_BYTES_PER_WARP) }, options);
    let sizes = unsafe { shared.add(warps * COMPRESS_SHARED_BYTES_PER_WARP) } as *mut u32;
    let mut at = table;
    for round in strided(0..sub_blocks(n), warps) {
        let s = round + warp_index;
        let (from, len) = (s * SUB_BLOCK, SUB_BLOCK.min(n.saturating_sub(s * SUB_BLOCK)));
        let coded = if len > 0 { unsafe { encoder.encode(warp, input.add(from), len) } } else { None };
        let size = if len > 0 { coded.unwrap_or(1 + len) } else { 0 };
        if lane == 0 {
            unsafe { *sizes.add(warp_index) = size as u32 };
        }
        block.sync_threads();
        let (before, total) = (0..warps).fold((0, 0), |(before, total), w| {
            let size = unsafe { *sizes.add(w) } as usize;
            (if w < warp_index { before + size } else { before }, total + size)
        });
        let fits = at + total <= capacity;
        if fits && len > 0 {
            let to = unsafe { out.add(at + before) };
            let (from, to, len) = match coded {
                Some(size) => (encoder.coded as *mut u8, to, size),
                None => {
                    if lane == 0 {
                        unsafe { *to = STORED };
                    }
                    (encoder.input, unsafe { to.add(1) }, len)
                }
            };
            unsafe { spread::<2>(lane, WARP_SIZE as usize, &SharedBytes::new(from), &Memory(to), len) };
            if lane < 2 {
                unsafe { *out.add(HEADER_LEN + 2 * s + lane) = (size >> (8 * lane)) as u8 };
            }
        }
        // The round's sizes and coded sub-blocks are read before the next's (or the next chunk's)
        // are written, whether or not the chunk goes on.
        block.sync_threads();
        if !fits {
            return Err(Status::OutputTooSmall);
        }
        at += total;
    }
    Ok(at)
}

/// A warp's sub-block encoder: its shared memory and options.
struct Encoder<'a> {
    options: &'a Options,
    width: usize,
    /// The staged sub-block: the elements (layer 0's values), then the trailing bytes.
    input: *mut u8,
    /// Values of the first run-length layer, which are every later layer's too (consecutive
    /// runs have different values, so a run-length layer over run values has a run an entry).
    layer: *mut u8,
    /// A bitmap of the first run-length layer's run starts (a later layer has a run an entry).
    starts: *mut u32,
    /// The coded sub-block: in whichever row the chosen layers do not read.
    coded: *mut u32,
    /// Entries of the elements and of each run-length layer's values.
    counts: [usize; 1 + MAX_LAYERS],
    /// The frame of each run-length layer's run lengths.
    runs: [Frame; MAX_LAYERS],
}

impl<'a> Encoder<'a> {
    fn new(shared: *mut u8, options: &'a Options) -> Self {
        let (input, layer) = (shared, shared.wrapping_add(ROW_BYTES));
        let starts = shared.wrapping_add(2 * ROW_BYTES) as *mut u32;
        let coded = core::ptr::null_mut();
        let width = options.element.width();
        Self {
            options,
            width,
            input,
            layer,
            starts,
            coded,
            counts: [0; 1 + MAX_LAYERS],
            runs: [Frame { base: 0, bits: 0 }; MAX_LAYERS],
        }
    }

    /// Entry `i` of layer `r`'s values (the staged elements for layer 0).
    #[inline(always)]
    unsafe fn value(&self, r: usize, i: usize) -> u64 {
        unsafe { get(if r == 0 { self.input } else { self.layer }, i, self.width) }
    }

    /// Stages the `len` bytes at `input` and codes them into `self.coded`; returns the coded
    /// size, or `None` where the sub-block is better stored (as staged).
    unsafe fn encode<W: Warp>(&mut self, warp: &W, input: *const u8, len: usize) -> Option<usize> {
        let (options, width) = (self.options, self.width);
        let stage = unsafe { SharedBytes::new(self.input) };
        unsafe { spread::<2>(warp.lane() as usize, WARP_SIZE as usize, &Memory(input as *mut u8), &stage, len) };
        warp.sync();
        let (rles, deltas) = (options.rles as usize, options.deltas as usize);
        self.counts[0] = len / width;
        let tail = len % width;
        // The frames of each layer's values after 0 to `deltas` delta layers, where searched
        // (every layer past the first has the first's values).
        let mut frames = [[Frame { base: 0, bits: 0 }; 1 + MAX_LAYERS]; 1 + MAX_LAYERS];
        for r in 0..=rles {
            if r >= 2 && options.auto {
                frames[r] = frames[1];
            } else if options.auto || r == rles {
                let extremes = unsafe { self.delta_extremes(warp, r, deltas) };
                for (frame, extremes) in frames[r].iter_mut().zip(extremes).take(deltas + 1) {
                    *frame = reduce_extremes(warp, extremes, width <= 4).frame(width, options.bitpack);
                }
            }
            if r < rles {
                unsafe { self.run_length_layer(warp, r) };
            }
        }
        // The search tries run-length layers, then delta layers, from 0 up and keeps the first
        // smallest, a coding larger than the sub-block stored counting as stored (as the CPU's).
        // Plain index arithmetic: written with iterators and an `Option<(usize, usize)>`, this
        // loop came out of NVPTX choosing layers that disagreed with the size it chose (H200).
        let stored = 1 + len;
        let (mut best, mut chosen) = (usize::MAX, usize::MAX);
        for k in 0..(rles + 1) * (deltas + 1) {
            let (r, d) = (k / (deltas + 1), k % (deltas + 1));
            if options.auto || k + 1 == (rles + 1) * (deltas + 1) {
                let size = self.coded_size(r, d, frames[r][d], tail);
                let (size, config) = if size <= stored { (size, k) } else { (stored, usize::MAX) };
                if size < best {
                    (best, chosen) = (size, config);
                }
            }
        }
        if chosen == usize::MAX {
            return None;
        }
        let (r, d) = (chosen / (deltas + 1), chosen % (deltas + 1));
        unsafe { self.write(warp, r, d, frames[r][d], best) };
        Some(best)
    }

    /// The coded size with `r` run-length and `d` delta layers, the values framed by `values`.
    fn coded_size(&self, r: usize, d: usize, values: Frame, tail: usize) -> usize {
        let runs: usize = (0..r).map(|k| 2 * RUN_WIDTH + 1 + packed_len(self.counts[k + 1], self.runs[k].bits)).sum();
        let start = if d > 0 { self.width } else { 0 };
        1 + runs + start + 1 + self.width + packed_len(self.counts[r], values.bits) + tail
    }

    /// Extremes of layer `r`'s values after 0 to `deltas` delta layers, each lane's own.
    unsafe fn delta_extremes<W: Warp>(&self, warp: &W, r: usize, deltas: usize) -> [Extremes; 1 + MAX_LAYERS] {
        let mut extremes = [Extremes::EMPTY; 1 + MAX_LAYERS];
        unsafe {
            self.for_each_delta(warp, r, deltas, |_, levels| {
                // Constant indices (a guard, not a bound) keep the arrays in registers.
                for (d, extremes) in extremes.iter_mut().enumerate() {
                    if d <= deltas {
                        *extremes = extremes.merge(Extremes::of(levels[d], self.width));
                    }
                }
            })
        };
        extremes
    }

    /// Calls `f(i, levels)` for each entry `i` of layer `r`'s values, in the lane holding it,
    /// `levels[d]` being the entry after `d` delta layers (`d` up to `deltas`).
    #[inline(always)]
    unsafe fn for_each_delta<W: Warp>(
        &self,
        warp: &W,
        r: usize,
        deltas: usize,
        mut f: impl FnMut(usize, &[u64; 1 + MAX_LAYERS]),
    ) {
        let count = self.counts[r];
        if count == 0 {
            return;
        }
        // Each delta layer takes its first entry's difference from itself: the first layer's
        // from the first value, the others' from 0.
        let mut carries = [0u64; MAX_LAYERS];
        carries[0] = unsafe { self.value(r, 0) };
        let mut tile = 0;
        while tile < count {
            let i = tile + warp.lane() as usize;
            let mut levels = [0u64; 1 + MAX_LAYERS];
            levels[0] = if i < count { unsafe { self.value(r, i) } } else { 0 };
            for d in 0..MAX_LAYERS {
                if d < deltas {
                    let before = previous(warp, levels[d], carries[d]);
                    levels[d + 1] = levels[d].wrapping_sub(before) & mask(self.width);
                    carries[d] = shuffle64(warp, levels[d], WARP_SIZE - 1);
                }
            }
            if i < count {
                f(i, &levels);
            }
            tile += WARP_SIZE as usize;
        }
    }

    /// Run-length layer `r + 1` over layer `r`'s values: its run starts into bitmap `r`, its
    /// values into the layer row (for the first layer; a later one's are the same), its count
    /// and the frame of its run lengths.
    unsafe fn run_length_layer<W: Warp>(&mut self, warp: &W, r: usize) {
        let (count, lane) = (self.counts[r], warp.lane());
        let (to, starts) = (self.layer, self.starts);
        if r >= 1 {
            // A run an entry.
            self.counts[r + 1] = count;
            let ones = if count > 0 { Extremes::of(1, RUN_WIDTH) } else { Extremes::EMPTY };
            self.runs[r] = ones.frame(RUN_WIDTH, self.options.bitpack);
            return;
        }
        let (mut runs, mut last, mut tile) = (0, 0, 0);
        while tile < count {
            let i = tile + lane as usize;
            let value = if i < count { unsafe { self.value(r, i) } } else { 0 };
            let before = previous(warp, value, last);
            let word = warp.ballot(i < count && (i == 0 || value != before));
            if lane == 0 {
                unsafe { *starts.add(tile / 32) = word };
            }
            if word >> lane & 1 == 1 {
                unsafe { set(to, runs + (word & ((1 << lane) - 1)).count_ones() as usize, self.width, value) };
            }
            runs += word.count_ones() as usize;
            last = shuffle64(warp, value, WARP_SIZE - 1);
            tile += WARP_SIZE as usize;
        }
        warp.sync(); // the values and bitmap are written before they are read
        self.counts[r + 1] = runs;
        let mut extremes = Extremes::EMPTY;
        unsafe { self.for_each_run(warp, r, |_, run| extremes = extremes.merge(Extremes::of(run as u64, RUN_WIDTH))) };
        self.runs[r] = reduce_extremes(warp, extremes, true).frame(RUN_WIDTH, self.options.bitpack);
    }

    /// Calls `f(k, length)` for each run `k` of layer `r + 1`, in some lane, from bitmap `r`.
    #[inline(always)]
    unsafe fn for_each_run<W: Warp>(&self, warp: &W, r: usize, mut f: impl FnMut(usize, usize)) {
        let (count, lane) = (self.counts[r], warp.lane());
        if r >= 1 {
            for k in (lane as usize..count).step_by(WARP_SIZE as usize) {
                f(k, 1);
            }
            return;
        }
        let starts = self.starts;
        // Each start closes the run before it, which began at the start before (`open` where
        // that lies in an earlier word).
        let (mut open, mut runs, mut tile) = (0, 0, 0);
        while tile < count {
            let word = unsafe { *starts.add(tile / 32) };
            let below = word & ((1 << lane) - 1);
            if word >> lane & 1 == 1 && runs + below.count_ones() as usize >= 1 {
                let begun = if below != 0 { tile + 31 - below.leading_zeros() as usize } else { open };
                f(runs + below.count_ones() as usize - 1, tile + lane as usize - begun);
            }
            if word != 0 {
                open = tile + 31 - word.leading_zeros() as usize;
            }
            runs += word.count_ones() as usize;
            tile += WARP_SIZE as usize;
        }
        if runs > 0 && lane == 0 {
            f(runs - 1, count - open);
        }
    }

    /// Writes the sub-block's `size` coded bytes with `r` run-length and `d` delta layers.
    unsafe fn write<W: Warp>(&mut self, warp: &W, r: usize, d: usize, values: Frame, size: usize) {
        let (width, lane) = (self.width, warp.lane() as usize);
        // The trailing bytes (fewer than a lane each) are taken before the input row may be
        // written over.
        let whole = self.counts[0] * width;
        let trailing = if lane < width { unsafe { *self.input.add(whole + lane) } } else { 0 };
        self.coded = (if r == 0 { self.layer } else { self.input }) as *mut u32;
        let coded = self.coded;
        warp.sync(); // the trailing bytes are read before the coded sub-block is cleared
        warp.for_each_strided(size.div_ceil(4), |i| unsafe { *coded.add(i) = 0 });
        warp.sync();
        // The header's bytes (layers, counts, frames) in the first lane, the entries in all.
        let mut bit = 0;
        let put = |bit: &mut usize, bytes: u32, value: u64| {
            if lane == 0 {
                unsafe { or_bits(coded, *bit, 8 * bytes, value) };
            }
            *bit += 8 * bytes as usize;
        };
        put(&mut bit, 1, (r | d << 4) as u64);
        for &count in &self.counts[1..=r] {
            put(&mut bit, RUN_WIDTH as u32, count as u64);
        }
        for k in 0..r {
            let frame = self.runs[k];
            put(&mut bit, 1, frame.bits as u64);
            put(&mut bit, RUN_WIDTH as u32, frame.base);
            let at = bit;
            unsafe {
                self.for_each_run(warp, k, |i, run| {
                    let packed = (run as u64).wrapping_sub(frame.base) & mask(RUN_WIDTH);
                    or_bits(coded, at + i * frame.bits as usize, frame.bits, packed);
                })
            };
            bit += 8 * packed_len(self.counts[k + 1], frame.bits);
        }
        if d > 0 {
            let first = if self.counts[r] > 0 { unsafe { self.value(r, 0) } } else { 0 };
            put(&mut bit, width as u32, first);
        }
        put(&mut bit, 1, values.bits as u64);
        put(&mut bit, width as u32, values.base);
        let at = bit;
        unsafe {
            self.for_each_delta(warp, r, d, |i, levels| {
                let packed = pick(levels, d).wrapping_sub(values.base) & mask(width);
                or_bits(coded, at + i * values.bits as usize, values.bits, packed);
            })
        };
        bit += 8 * packed_len(self.counts[r], values.bits);
        let tail_at = bit / 8;
        if lane < size - tail_at {
            unsafe { or_bits(coded, 8 * (tail_at + lane), 8, trailing as u64) };
        }
        warp.sync(); // every lane's bits are in before the sub-block is copied out
    }
}

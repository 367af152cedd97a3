//! The literals section: the histogram, the Huffman code the first lane plans, and the four
//! streams coded by eight lanes each ([`encode_streams_split`]); raw or RLE literals where
//! Huffman does not pay.

use super::LiteralStage;
use crate::entropy::{count, unrolled};
use crate::lz77::{copy, scan_add};
use crate::raw::bytes_mut;
use crate::warp::{WARP_SIZE, Warp};
use core::ptr::addr_of_mut;
use ferrocomp_format::Status;
use ferrocomp_format::zstd::encode::huffman::HuffmanCode;
use ferrocomp_format::zstd::encode::literals::{HuffmanLiterals, plan_huffman, stream_range, uncompressed_header};

/// Counts the literals' byte values into the histogram in shared memory.
pub(super) unsafe fn histogram<W: Warp>(warp: &W, literals: &[u8], stage: *mut LiteralStage) {
    let counts = unsafe { addr_of_mut!((*stage).counts) } as *mut u32;
    warp.for_each_strided(256, |b| unsafe { *counts.add(b) = 0 });
    warp.sync();
    unsafe { count(warp, literals.len(), |i| [literals[i] as u32], counts) };
}

/// Writes the literals section at `out` as the format crate's `write_literals` does: the first
/// lane plans the Huffman code, all lanes count each stream's bits, then eight lanes (below
/// 1024 literals one) code each stream; raw or RLE literals when Huffman does not pay.
pub(super) unsafe fn write_literals<W: Warp>(
    warp: &W,
    literals: &[u8],
    stage: *mut LiteralStage,
    out: *mut u8,
    available: usize,
) -> Result<usize, Status> {
    let (n, lane) = (literals.len(), warp.lane() as usize);
    let planned = if lane == 0 {
        let (counts, huffman) = unsafe { (&(*stage).counts, &mut (*stage).huffman) };
        plan_huffman(n, counts, huffman, unsafe { bytes_mut(out, available) })
    } else {
        None
    };
    if let Some(mut plan) = broadcast_plan(warp, planned, n) {
        warp.sync(); // the code is visible to every lane
        let huffman = unsafe { &(*stage).huffman };
        let quarter = n.div_ceil(4).max(1);
        let mut bits = [0u32; 4];
        let stream = |i: usize| match plan.streams {
            1 => 0,
            _ => (i >= quarter) as usize + (i >= 2 * quarter) as usize + (i >= 3 * quarter) as usize,
        };
        // Four strides' literals loaded at a time, so that their loads overlap.
        let mut base = lane;
        while base < n {
            let at = |s: usize| base + s * WARP_SIZE as usize;
            let quad: [u8; 4] = core::array::from_fn(|s| if at(s) < n { literals[at(s)] } else { 0 });
            unrolled::<4>(|s| {
                let (k, len) = (stream(at(s)), huffman.lens[quad[s] as usize] as u32);
                unrolled::<4>(|j| bits[j] += if j == k && at(s) < n { len } else { 0 });
            });
            base += 4 * WARP_SIZE as usize;
        }
        for bits in &mut bits {
            *bits = warp.shuffle(scan_add(warp, *bits), WARP_SIZE - 1);
        }
        if plan.settle(&bits) {
            if plan.size() > available {
                return Err(Status::OutputTooSmall);
            }
            if lane == 0 {
                let _ = plan.write_header(unsafe { bytes_mut(out, plan.stream_start(0)) });
            }
            if n >= SPLIT_STREAMS {
                unsafe { encode_streams_split(warp, huffman, literals, &plan, out) };
            } else if lane < plan.streams as usize {
                let at = plan.stream_start(lane);
                let stream = unsafe { bytes_mut(out.add(at), plan.stream_lens[lane] as usize) };
                let _ = huffman.encode_stream(&literals[stream_range(n, plan.streams, lane)], stream);
            }
            warp.sync();
            return Ok(plan.size());
        }
    }
    let (header, header_len, body_len) = uncompressed_header(literals, unsafe { &(*stage).counts });
    if header_len + body_len > available {
        return Err(Status::OutputTooSmall);
    }
    if lane == 0 {
        unsafe { out.copy_from_nonoverlapping(header.as_ptr(), header_len) };
    }
    unsafe { copy(warp, literals.as_ptr(), out.add(header_len), body_len as u32) };
    warp.sync();
    Ok(header_len + body_len)
}

/// Fewest literals whose four streams are split among all lanes (eight per stream, each with
/// at least 32 literals, so at least 32 bits: two lanes at most share a byte).
const SPLIT_STREAMS: usize = 1024;
/// Lanes sharing one stream.
const LANES_PER_STREAM: u32 = WARP_SIZE / 4;

/// Encodes the four Huffman streams of `literals` at their places in `out` with eight lanes
/// per stream, the bits `HuffmanCode::encode_stream` writes: each lane codes a run of the
/// stream's literals at the bit where the later runs' codes end (a stream is written last
/// literal first), and a byte two lanes' bits share is completed by the lane coding the
/// earlier literals, with the other lane's bits passed over.
unsafe fn encode_streams_split<W: Warp>(
    warp: &W,
    huffman: &HuffmanCode,
    literals: &[u8],
    plan: &HuffmanLiterals,
    out: *mut u8,
) {
    let lane = warp.lane();
    let (stream, rank) = ((lane / LANES_PER_STREAM) as usize, lane % LANES_PER_STREAM);
    let range = stream_range(literals.len(), 4, stream);
    let cut = |r: u32| range.start + range.len() * r as usize / LANES_PER_STREAM as usize;
    let run = &literals[cut(rank)..cut(rank + 1)];
    let bits: u32 = run.iter().map(|&b| huffman.lens[b as usize] as u32).sum();
    // The bits of the runs after this one (lanes of higher rank in the same stream).
    let mut start = 0;
    for distance in 1..LANES_PER_STREAM {
        let later = warp.shuffle(bits, lane + distance);
        if rank + distance < LANES_PER_STREAM {
            start += later;
        }
    }
    let dst = unsafe { out.add(plan.stream_start(stream)) };
    let mut bits = RunBits { dst, at: start as usize / 8, acc: 0, filled: start % 8, head: None };
    let mut put = |b: u8| unsafe { bits.put(huffman.codes[b as usize] as u32, huffman.lens[b as usize] as u32) };
    // Four literals loaded at a time, so that their loads overlap.
    let mut left = run.len();
    while left >= 4 {
        let quad = [run[left - 1], run[left - 2], run[left - 3], run[left - 4]];
        quad.into_iter().for_each(&mut put);
        left -= 4;
    }
    run[..left].iter().rev().for_each(|&b| put(b));
    if rank == 0 {
        unsafe { bits.put(1, 1) }; // the end marker after the stream's first literal
    }
    unsafe { bits.drain() };
    let RunBits { at, acc, filled, head, .. } = bits;
    // A partial last byte goes to the lane coding the run before this one, which shares it;
    // the stream's first run ends the stream and writes it.
    let tail = if filled > 0 { acc as u32 } else { 0 };
    let (head_index, head_byte) = (start as usize / 8, head.unwrap_or(acc as u8));
    if rank == 0 && filled > 0 && head.is_some() {
        unsafe { *dst.add(at) = acc as u8 };
    }
    let later_tail = warp.shuffle(tail, lane + 1);
    let shared = if rank + 1 < LANES_PER_STREAM { later_tail as u8 } else { 0 };
    unsafe { *dst.add(head_index) = head_byte | shared };
}

/// A lane's run of a Huffman stream as it is written: the bits not yet written (`filled` of
/// them in `acc`, from the byte at `at` in `dst`) and the run's first byte, which the lane coding
/// the run before shares, kept rather than written.
struct RunBits {
    dst: *mut u8,
    at: usize,
    acc: u64,
    filled: u32,
    head: Option<u8>,
}

impl RunBits {
    /// Adds the `n` (at most 11) bits of `value`; writes four bytes once 32 bits are held, so
    /// that a literal takes one branch rather than a loop a byte.
    ///
    /// # Safety
    /// As [`RunBits::emit`].
    #[inline(always)]
    unsafe fn put(&mut self, value: u32, n: u32) {
        self.acc |= (value as u64) << self.filled;
        self.filled += n;
        if self.filled >= 32 {
            for k in 0..4 {
                unsafe { self.emit((self.acc >> (8 * k)) as u8) };
            }
            self.acc >>= 32;
            self.filled -= 32;
        }
    }

    /// Writes the complete bytes held, leaving fewer than 8 bits.
    ///
    /// # Safety
    /// As [`RunBits::emit`].
    #[inline(always)]
    unsafe fn drain(&mut self) {
        while self.filled >= 8 {
            unsafe { self.emit(self.acc as u8) };
            self.acc >>= 8;
            self.filled -= 8;
        }
    }

    /// The run's next byte: kept if it is its first, else written.
    ///
    /// # Safety
    /// The stream's bytes at `dst` must be writable up to this run's end.
    #[inline(always)]
    unsafe fn emit(&mut self, byte: u8) {
        if self.head.is_none() {
            self.head = Some(byte);
        } else {
            unsafe { *self.dst.add(self.at) = byte };
        }
        self.at += 1;
    }
}

/// The first lane's Huffman plan for `n` literals, in every lane.
fn broadcast_plan<W: Warp>(warp: &W, plan: Option<HuffmanLiterals>, n: usize) -> Option<HuffmanLiterals> {
    let fields = plan.map_or([0; 3], |p| [p.streams, p.header_len, p.description_len]);
    let [streams, header_len, description_len] = fields.map(|field| warp.shuffle(field, 0));
    (streams != 0).then_some(HuffmanLiterals {
        regenerated: n as u32,
        streams,
        header_len,
        description_len,
        stream_lens: [0; 4],
    })
}

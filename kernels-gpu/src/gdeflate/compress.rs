//! GDeflate compression on the GPU, a warp per page, writing the pages
//! `ferrocomp_format::gdeflate::compress` writes, byte for byte.
//!
//! It is Deflate's warp compressor ([`compress_blocks`]) writing into [`SubStreams`]: lane i
//! holds sub-stream i, as the decoder's lane i does, and the lanes write the items of a round
//! together, each its own, the packets they reserve dealt out in lane order by a ballot (the
//! format's rounds, in which a match's distance goes to its lane one round after its length).

use crate::deflate::compress::{WarpSink, compress_blocks, ready_codes, token_fields};
use crate::entropy::Field;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::deflate::block::{BlockKind, BlockPlan, StreamKind, block_type};
use ferrocomp_format::deflate::{self, CompressScratch, PART_SIZE};
use ferrocomp_format::gdeflate::{self, LANES, STORED_LEN_BITS, SubStream};

/// Compresses the `n` bytes at `input` at `level` into one page at `out` (room for `capacity`
/// bytes); returns its size (every lane returns the same), or the status
/// `ferrocomp_format::gdeflate::compress` gives.
///
/// # Safety
/// As `crate::deflate::compress::compress_chunk`'s arguments, `PARTS` too.
#[allow(clippy::too_many_arguments)]
pub unsafe fn compress_page<W: Warp, const PARTS: bool>(
    warp: &W,
    input: *const u8,
    n: usize,
    level: u8,
    scratch: *mut CompressScratch,
    table: *mut u16,
    out: *mut u8,
    capacity: usize,
) -> Result<usize, Status> {
    let level = level.min(deflate::MAX_LEVEL);
    if n > if PARTS { gdeflate::MAX_CHUNK_SIZE } else { PART_SIZE } {
        return Err(Status::ChunkTooLarge);
    }
    // Safety: the caller's `out` is writable for `capacity` bytes.
    let mut page = unsafe { SubStreams::new(warp, out, capacity) };
    unsafe { compress_blocks::<W, SubStreams, PARTS>(warp, input, n, level, scratch, table, &mut page)? };
    page.finish()
}

/// A page as a warp writes it: each lane's sub-stream and the distance due in its next turn,
/// and, the same in every lane, where the next packet goes.
pub struct SubStreams {
    out: *mut u8,
    capacity: usize,
    stream: SubStream,
    /// This lane's match distance, due in its next turn (0 bits: none).
    due: Field,
    next: u32,
}

impl SubStreams {
    /// An empty page at `out`, which has room for `capacity` bytes; nothing is written past
    /// them. Its first 32 packets are the lanes'.
    ///
    /// # Safety
    /// `out` must be writable for `capacity` bytes, by this warp alone, while the page lives.
    pub unsafe fn new<W: Warp>(warp: &W, out: *mut u8, capacity: usize) -> Self {
        let stream = SubStream::new(warp.lane() as usize);
        Self { out, capacity, stream, due: (0, 0), next: (LANES * 4) as u32 }
    }

    /// One turn of every lane, in lane order: each lane appends its field (none where it has
    /// 0 bits), the packets the lanes reserve taken in lane order.
    #[inline(always)]
    fn turn<W: Warp>(&mut self, warp: &W, (bits, n): Field) {
        let before = (1u32 << warp.lane()) - 1;
        let needed = if n > 0 { self.stream.packets_needed(n) } else { 0 };
        let (one, two) = (warp.ballot(needed >= 1), warp.ballot(needed == 2));
        let fresh = self.next + 4 * ((one & before).count_ones() + (two & before).count_ones());
        self.next += 4 * (one.count_ones() + two.count_ones());
        if n > 0
            && let Some(packet) = self.stream.add(bits, n, fresh)
        {
            self.put(packet);
        }
    }

    /// A turn in which the first lane alone appends `field`.
    fn first_lane_turn<W: Warp>(&mut self, warp: &W, field: Field) {
        self.turn(warp, if warp.lane() == 0 { field } else { (0, 0) });
    }

    /// Writes the packet `word` at offset `at`, if it fits.
    fn put(&self, (at, word): (u32, u32)) {
        let at = at as usize;
        if at + 4 > self.capacity {
            return;
        }
        let dst = self.out.wrapping_add(at);
        if (dst as usize).is_multiple_of(4) {
            unsafe { *(dst as *mut u32) = word.to_le() };
        } else {
            for (i, byte) in word.to_le_bytes().into_iter().enumerate() {
                unsafe { *dst.add(i) = byte };
            }
        }
    }

    /// Writes every lane's last packets; returns the page size (every packet reserved is
    /// written, the last at `next - 4`: the page fits if that one did).
    pub fn finish(&self) -> Result<usize, Status> {
        for packet in self.stream.last_packets().into_iter().flatten() {
            self.put(packet);
        }
        let size = self.next as usize;
        if size > self.capacity { Err(Status::OutputTooSmall) } else { Ok(size) }
    }
}

impl StreamKind for SubStreams {
    const DEFLATE64: bool = true;

    fn stored_cost(&self, len: usize) -> u64 {
        gdeflate::stored_cost(len)
    }
}

/// A block's items in the format's order: its header in sub-stream 0; a dynamic header's precode
/// lengths, then its code-length items, a round each 32 from lane 0; its symbols in rounds from
/// lane 0, where a lane with a distance due writes it and the others take the next tokens.
impl WarpSink for SubStreams {
    unsafe fn huffman_header<W: Warp>(&mut self, warp: &W, plan: *mut BlockPlan, kind: BlockKind, last: bool) {
        unsafe { ready_codes(warp, plan, kind) };
        let plan = unsafe { &*plan };
        self.first_lane_turn(warp, block_type(kind, last));
        if kind == BlockKind::Dynamic {
            self.first_lane_turn(warp, plan.code_counts());
            let lane = warp.lane() as usize;
            self.turn(warp, if lane < plan.precode_items() { plan.precode_item(lane) } else { (0, 0) });
            let items = plan.length_items();
            for base in (0..items).step_by(WARP_SIZE as usize) {
                let k = base + lane;
                self.turn(warp, if k < items { plan.length_item(k) } else { (0, 0) });
            }
        }
    }

    unsafe fn stored<W: Warp>(&mut self, warp: &W, data: *const u8, len: usize, last: bool) {
        self.first_lane_turn(warp, block_type(BlockKind::Stored, last));
        self.first_lane_turn(warp, (len as u32, STORED_LEN_BITS));
        let lane = warp.lane() as usize;
        for base in (0..len).step_by(WARP_SIZE as usize) {
            let i = base + lane;
            self.turn(warp, if i < len { (unsafe { *data.add(i) } as u32, 8) } else { (0, 0) });
        }
    }

    unsafe fn symbols<W: Warp>(&mut self, warp: &W, plan: &BlockPlan, tokens: *const u32, count: usize) {
        let before = (1u32 << warp.lane()) - 1;
        let mut taken = 0;
        // Rounds until the end-of-block code is taken (by the lane after the last token's).
        while taken <= count {
            let takers = warp.ballot(self.due.1 == 0);
            let field = if self.due.1 != 0 {
                core::mem::take(&mut self.due)
            } else {
                let i = taken + (takers & before).count_ones() as usize;
                if i < count {
                    let [first, distance] = token_fields::<Self>(plan, unsafe { *tokens.add(i) });
                    self.due = distance;
                    first
                } else if i == count {
                    plan.end_of_block()
                } else {
                    (0, 0)
                }
            };
            self.turn(warp, field);
            taken += takers.count_ones() as usize;
        }
        // The distances of the last round's matches, due in the round after it.
        let due = core::mem::take(&mut self.due);
        self.turn(warp, due);
    }
}

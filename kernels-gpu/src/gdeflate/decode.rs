//! GDeflate's decoder. Decoding is what the format was made for: lane i holds sub-stream i and
//! decodes one item a round (its pending match's distance, or its next literal/length symbol), in
//! the order `ferrocomp_format::gdeflate` reads them, with its statuses and bytes. A prefix sum
//! places each round's output (a round of 32 literals needs none), a ballot deals the next packets
//! to the lanes that refill, in turn order, from 64 packets the lanes hold loaded ahead; literals
//! are stored at once, and the matches whose distances came in are copied warp-wide, 32 bytes a
//! step, each byte's source followed back through the round's matches to a final byte, so that no
//! match waits for the one before it. Stored blocks go 128 bytes at a time, each lane taking a word
//! of its sub-stream and a packet whose place it knows in advance. Block headers are read warp-wide
//! too (a dynamic header's code lengths 32 items a round), and the decode tables built together in
//! shared memory ([`crate::deflate::build_table`]). The sizes kernel runs the same decoder without
//! writing.

use crate::deflate::decode::Output;
use crate::deflate::rounds::{Match, Rounds};
use crate::deflate::{build_block_tables, build_table, lengths_at, lookup_at, lookup_shared, low_bits};
use crate::lz77::{scan_add, scan_max, word_at};
use crate::raw::SharedBytes;
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::deflate::DecodeTables;
use ferrocomp_format::deflate::huffman::{
    Alphabet, DIST_ROOT, KIND_BASE, KIND_END, KIND_LITERAL, LITLEN_ROOT, PRECODE_ROOT, PRECODE_TABLE, entry_extra,
    entry_kind, entry_len, entry_value,
};
use ferrocomp_format::deflate::inflate::Lengths;
use ferrocomp_format::deflate::tables::{END_OF_BLOCK, PRECODE_ORDER};

/// Decodes the page `input[..len]` into `output`; returns its decoded size, in every lane: the
/// format crate's `gdeflate::decompress` (or `decompressed_size`, counting), warp-wide.
///
/// # Safety
/// `input` must be readable for `len` bytes, `output` as its constructor says, and `tables` (in
/// memory the warp shares) writable, none of them used by anyone else meanwhile.
#[inline(always)] // a copy in each kernel that decodes pages (warp, pair, sizes), compiled for each
pub unsafe fn decompress_page<W: Warp>(
    warp: &W,
    input: *const u8,
    len: usize,
    output: Output,
    tables: *mut DecodeTables,
    rounds: &mut impl Rounds,
) -> Result<usize, Status> {
    if len > u32::MAX as usize {
        return Err(Status::Malformed);
    }
    let mut page =
        Page { input, len: len as u32, next: 0, window: 0, near: 0, far: 0, buf: 0, bits: 0, op: 0, output, tables };
    let lane = warp.lane();
    unsafe { (page.near, page.far) = (page.packet_or_zero(4 * lane), page.packet_or_zero(4 * (WARP_SIZE + lane))) };
    unsafe { page.decode(warp, rounds) }.map(|size| size as usize)
}

/// A page being decoded: the input and the packets dealt out so far, this lane's sub-stream, the
/// output, and the warp's tables.
#[derive(Clone, Copy)]
struct Page {
    input: *const u8,
    len: u32,
    /// Where the next packet starts (the same in every lane).
    next: u32,
    /// Where the 64 packets loaded ahead start (the same in every lane, at most `next`): lane i
    /// holds the i-th in `near` and the (32 + i)-th in `far`, so that a refill is a shuffle,
    /// not a load the lane's next item waits for.
    window: u32,
    near: u32,
    far: u32,
    /// The next `bits` bits of this lane's sub-stream, first in bit 0.
    buf: u64,
    bits: u32,
    /// Bytes decoded (or reserved for matches) so far (the same in every lane).
    op: u32,
    output: Output,
    tables: *mut DecodeTables,
}

/// Sub-streams hold at least this many bits after each turn (no item is longer).
const LOW_WATER: u32 = 32;
const NO_FAILURE: u32 = Status::Success as u32;

/// Lanes `first`, `first + 1`, … in turn order (wrapping past lane 31): those of `lanes` whose
/// turn comes before this lane's.
#[inline(always)]
fn turns_before(lanes: u32, first: u32, lane: u32) -> u32 {
    let me = (lane + WARP_SIZE - first) % WARP_SIZE;
    (lanes.rotate_right(first) & ((1u32 << me) - 1)).count_ones()
}

/// The failure of the first lane, in turn order from `first`, that failed (`failure` is a
/// status code, `NO_FAILURE` for none): what the format crate's decoder, taking the turns one by
/// one, reports.
#[inline(always)]
fn first_failure<W: Warp>(warp: &W, failure: u32, first: u32) -> Result<(), Status> {
    let failed = warp.ballot(failure != NO_FAILURE).rotate_right(first);
    if failed == 0 {
        return Ok(());
    }
    let lane = (first + failed.trailing_zeros()) % WARP_SIZE;
    Err(Status::from_code(warp.shuffle(failure, lane)))
}

impl Page {
    unsafe fn decode<W: Warp, R: Rounds>(&mut self, warp: &W, rounds: &mut R) -> Result<u32, Status> {
        // Each lane starts with a packet, in lane order.
        self.end_turns(warp, u32::MAX, 0, NO_FAILURE)?;
        loop {
            let header = self.read(warp, 0, 3)?;
            self.end_turns(warp, 1, 0, NO_FAILURE)?;
            // Every lane is done with the last block's tables before this block's are built
            // over them (counting, no copy of its last matches orders that).
            warp.sync();
            match header >> 1 {
                0 => unsafe { self.stored(warp)? },
                1 => unsafe {
                    build_block_tables(warp, self.tables, Lengths::Fixed, true)?;
                    self.huffman(warp, rounds)?
                },
                2 => unsafe {
                    self.dynamic_header(warp)?;
                    self.huffman(warp, rounds)?
                },
                _ => return Err(Status::Malformed),
            }
            if header & 1 != 0 {
                break;
            }
        }
        // Only zero bytes may follow the last packet.
        let mut stray = false;
        let mut at = self.next + warp.lane();
        while at < self.len {
            stray |= unsafe { *self.input.add(at as usize) } != 0;
            at += WARP_SIZE;
        }
        if warp.ballot(stray) != 0 { Err(Status::Malformed) } else { Ok(self.op) }
    }

    /// Ends the turns of the lanes in `turns` (in turn order from lane `first`): they refill, and
    /// the first of them in turn order that failed (with `failure`, this lane's, or a refill past
    /// the page's end) gives the page's status.
    #[inline(always)]
    fn end_turns<W: Warp>(&mut self, warp: &W, turns: u32, first: u32, failure: u32) -> Result<(), Status> {
        let truncated = self.refill(warp, turns, first);
        first_failure(warp, if failure != NO_FAILURE { failure } else { truncated }, first)
    }

    /// After the turns of the lanes in `turns` (in turn order from lane `first`): each of them
    /// holding fewer than [`LOW_WATER`] bits takes the page's next packet. Returns this lane's
    /// failure: `Truncated` where its packet is past the end.
    #[inline(always)]
    fn refill<W: Warp>(&mut self, warp: &W, turns: u32, first: u32) -> u32 {
        let lane = warp.lane();
        let needs = warp.ballot(turns >> lane & 1 != 0 && self.bits < LOW_WATER);
        if needs == 0 {
            return NO_FAILURE;
        }
        let k = turns_before(needs, first, lane);
        let at = self.next + 4 * k;
        let packet = unsafe { self.take_packets(warp, k, needs.count_ones()) };
        if needs >> lane & 1 == 0 {
            return NO_FAILURE;
        }
        if at > self.len || self.len - at < 4 {
            return Status::Truncated as u32;
        }
        self.buf |= (packet as u64) << self.bits;
        self.bits += 32;
        NO_FAILURE
    }

    /// The packet `k` after `next` (each lane its own `k` < 32, `count` ≤ 32 packets taken in
    /// all, `next` moving past them), from the packets loaded ahead; once the first 32 of those
    /// are taken, the next 32 are loaded.
    #[inline(always)]
    unsafe fn take_packets<W: Warp>(&mut self, warp: &W, k: u32, count: u32) -> u32 {
        let index = (self.next - self.window) / 4 + k;
        let (near, far) = (warp.shuffle(self.near, index % WARP_SIZE), warp.shuffle(self.far, index % WARP_SIZE));
        self.next += 4 * count;
        if self.next - self.window >= 4 * WARP_SIZE {
            self.window += 4 * WARP_SIZE;
            self.near = self.far;
            self.far = unsafe { self.packet_or_zero(self.window + 4 * (WARP_SIZE + warp.lane())) };
        }
        if index < WARP_SIZE { near } else { far }
    }

    /// The packet at `at`, or 0 where it is not within the page.
    #[inline(always)]
    unsafe fn packet_or_zero(&self, at: u32) -> u32 {
        if self.len >= 4 && at <= self.len - 4 { unsafe { self.packet(at) } } else { 0 }
    }

    /// The 4 bytes at `at` (`at + 4 <= len`), little-endian, reading none outside the page.
    #[inline(always)]
    unsafe fn packet(&self, at: u32) -> u32 {
        let p = unsafe { self.input.add(at as usize) };
        if (p as usize).is_multiple_of(4) {
            unsafe { *(p as *const u32) }
        } else if self.len - at >= 8 {
            unsafe { word_at(p) } // its second word ends within the page
        } else {
            unsafe { u32::from_le_bytes([*p, *p.add(1), *p.add(2), *p.add(3)]) }
        }
    }

    /// The next `n` ≤ 16 bits of lane `from`'s sub-stream, consumed, in every lane.
    #[inline(always)]
    fn read<W: Warp>(&mut self, warp: &W, from: u32, n: u32) -> Result<u32, Status> {
        let mine = warp.lane() == from;
        if warp.ballot(mine && n > self.bits) != 0 {
            return Err(Status::Malformed);
        }
        let value = low_bits(self.buf, n);
        if mine {
            self.consume(n);
        }
        Ok(warp.shuffle(value, from))
    }

    #[inline(always)]
    fn consume(&mut self, n: u32) {
        self.buf >>= n;
        self.bits -= n;
    }

    /// A stored block after its header: LEN from lane 0, then the bytes, one a lane in turn from
    /// lane 0, 32 a round ([`Page::stored_periods`] where it can).
    unsafe fn stored<W: Warp>(&mut self, warp: &W) -> Result<(), Status> {
        let lane = warp.lane();
        let len = self.read(warp, 0, 16)?;
        let mut page = *self; // in registers: the output's byte stores cannot alias a copy
        let mut done = 0;
        while done < len {
            done += unsafe { page.stored_periods(warp, len - done) };
            if done == len {
                break;
            }
            let turn = lane < len - done;
            let at = page.op + lane;
            let mut failure = NO_FAILURE;
            if turn {
                if page.bits < 8 {
                    failure = Status::Malformed as u32;
                } else if !page.output.fits(at, 1) {
                    failure = page.output.full as u32;
                } else {
                    if page.output.writes() {
                        unsafe { *page.output.out.add(at as usize) = page.buf as u8 };
                    }
                    page.consume(8);
                }
            }
            let turns = warp.ballot(turn);
            page.end_turns(warp, turns, 0, failure)?;
            page.op += turns.count_ones();
            done += turns.count_ones();
        }
        *self = page;
        // The block's last turn: every lane, from the one after the last byte's.
        self.end_turns(warp, u32::MAX, len % WARP_SIZE, NO_FAILURE)
    }

    /// As many of a stored block's next `remaining` bytes as whole periods of 4 rounds (128 bytes)
    /// decode where nothing can fail; returns how many. Where every lane holds 32 to 63 bits,
    /// each takes its next 32 bits in a period, a byte a round, and refills once, in round
    /// `(bits - 32) / 8`, keeping its count. The period's 32 packets therefore go to the lanes in
    /// a fixed order (of that round, then of the lane), and every lane takes its packet at once.
    #[inline(always)]
    unsafe fn stored_periods<W: Warp>(&mut self, warp: &W, remaining: u32) -> u32 {
        const PERIOD: u32 = 4 * WARP_SIZE;
        let lane = warp.lane();
        if remaining < PERIOD || warp.ballot(self.bits < LOW_WATER) != 0 {
            return 0;
        }
        let refill_round = (self.bits - LOW_WATER) / 8;
        let mut rank = 0;
        for round in 0..4 {
            let refilling = warp.ballot(refill_round == round);
            if round < refill_round {
                rank += refilling.count_ones();
            } else if round == refill_round {
                rank += (refilling & ((1 << lane) - 1)).count_ones();
            }
        }
        let mut done = 0;
        while remaining - done >= PERIOD
            && self.len.saturating_sub(self.next) >= PERIOD
            && self.output.fits(self.op, PERIOD)
        {
            let packet = unsafe { self.take_packets(warp, rank, WARP_SIZE) };
            if self.output.writes() {
                let out = unsafe { self.output.out.add((self.op + lane) as usize) };
                for round in 0..4 {
                    unsafe { *out.add((round * WARP_SIZE) as usize) = (self.buf >> (8 * round)) as u8 };
                }
            }
            self.buf = self.buf >> 32 | (packet as u64) << (self.bits - 32);
            self.op += PERIOD;
            done += PERIOD;
        }
        done
    }

    /// A dynamic block's header after its first 3 bits: counts, the precode, the code lengths;
    /// builds the literal/length and distance tables.
    unsafe fn dynamic_header<W: Warp>(&mut self, warp: &W) -> Result<(), Status> {
        let lane = warp.lane();
        let counts = self.read(warp, 0, 14)?;
        self.end_turns(warp, 1, 0, NO_FAILURE)?;
        let hlit = (counts & 31) + 257;
        let hdist = ((counts >> 5) & 31) + 1;
        let hclen = (counts >> 10) + 4;

        // The precode's lengths, one a lane from lane 0, into the lengths in symbol order.
        let t = self.tables;
        let lens = unsafe { (*t).lens_and_precode().0.as_mut_ptr() };
        if lane < PRECODE_ORDER.len() as u32 {
            unsafe { *lens.add(lane as usize) = 0 };
        }
        warp.sync();
        let turn = lane < hclen;
        let mut failure = NO_FAILURE;
        if turn {
            if self.bits < 3 {
                failure = Status::Malformed as u32;
            } else {
                unsafe { *lens.add(PRECODE_ORDER[lane as usize] as usize) = low_bits(self.buf, 3) };
                self.consume(3);
            }
        }
        self.end_turns(warp, warp.ballot(turn), 0, failure)?;
        warp.sync();
        unsafe {
            let (precode, lens) = ((*t).precode().as_mut_ptr(), lengths_at(warp, lens, 19));
            build_table(warp, precode, PRECODE_TABLE, PRECODE_ROOT, lens, 19, Alphabet::Precode)?
        };

        unsafe { self.code_lengths(warp, hlit + hdist)? };
        if unsafe { *lens.add(END_OF_BLOCK) } == 0 {
            return Err(Status::Malformed);
        }
        let lengths = Lengths::Dynamic { hlit: hlit as usize, hdist: hdist as usize };
        unsafe { build_block_tables(warp, t, lengths, true) }
    }

    /// Reads `total` code lengths into the tables' lengths, an item a lane from lane 0, 32 a
    /// round: each lane decodes its item, a prefix sum places the runs, and the items starting
    /// past `total` are not read.
    unsafe fn code_lengths<W: Warp>(&mut self, warp: &W, total: u32) -> Result<(), Status> {
        let lane = warp.lane();
        let (lens, precode) = unsafe { (*self.tables).lens_and_precode() };
        let lens = lens.as_mut_ptr();
        let (mut done, mut previous) = (0, 0);
        while done < total {
            let entry = unsafe { lookup_shared(precode.as_ptr(), PRECODE_ROOT, self.buf) };
            let (sym, n) = (entry_value(entry), entry_len(entry));
            let (extra, base) = match sym {
                16 => (2, 3),
                17 => (3, 3),
                18 => (7, 11),
                _ => (0, 1),
            };
            let run = base + low_bits(self.buf >> n, extra);
            let end = done + scan_add(warp, run);
            let start = end - run;
            // 16 repeats the length before it: that of the last other item before, or the
            // rounds' before.
            let setter = scan_max(warp, if sym != 16 { lane + 1 } else { 0 });
            let set = warp.shuffle(if sym < 16 { sym } else { 0 }, setter.saturating_sub(1));
            let value = if setter == 0 { previous } else { set };
            let turn = start < total;
            let mut failure = NO_FAILURE;
            if turn {
                if n + extra > self.bits || (sym == 16 && start == 0) || end > total {
                    failure = Status::Malformed as u32;
                } else {
                    self.consume(n + extra);
                    for at in start..end {
                        unsafe { *lens.add(at as usize) = value };
                    }
                }
            }
            let turns = warp.ballot(turn);
            self.end_turns(warp, turns, 0, failure)?;
            let last = WARP_SIZE - 1 - turns.leading_zeros();
            (done, previous) = (warp.shuffle(end, last), warp.shuffle(value, last));
        }
        warp.sync(); // the lengths are visible to every lane
        Ok(())
    }

    /// A Huffman block's symbols, a round of 32 turns at a time from lane 0, through its
    /// end-of-block symbol and the turns after it (which read the distances still due).
    unsafe fn huffman<W: Warp, R: Rounds>(&mut self, warp: &W, rounds: &mut R) -> Result<(), Status> {
        let mut page = *self; // in registers: the output's byte stores cannot alias a copy
        let result = unsafe { page.symbols(warp, rounds) };
        *self = page;
        result
    }

    /// [`Page::huffman`]'s rounds.
    #[inline(always)]
    unsafe fn symbols<W: Warp, R: Rounds>(&mut self, warp: &W, rounds: &mut R) -> Result<(), Status> {
        let lane = warp.lane();
        let tables = unsafe { &*self.tables };
        // This lane's match waiting for its distance: its length (0: none) and output position.
        let (mut pending_len, mut pending_at) = (0, 0);
        loop {
            let item = unsafe { Item::next(tables, self.buf, pending_len != 0, pending_at) };
            // A round of 32 literals that fit (the lanes' bits and the output) takes no prefix
            // sum and copies nothing.
            let literal = item.kind == ItemKind::Literal && item.bits <= self.bits;
            if warp.ballot(literal) == u32::MAX && self.output.fits(self.op, WARP_SIZE) {
                if self.output.writes() {
                    unsafe { *self.output.out.add((self.op + lane) as usize) = item.value as u8 };
                }
                self.consume(item.bits);
                self.end_turns(warp, u32::MAX, 0, NO_FAILURE)?;
                self.op += WARP_SIZE;
                continue;
            }
            // The end-of-block symbol ends the round: the lanes after it have no turn.
            let end = warp.ballot(item.kind == ItemKind::End);
            let turns = if end == 0 { u32::MAX } else { u32::MAX >> (WARP_SIZE - 1 - end.trailing_zeros()) };
            let turn = turns >> lane & 1 != 0;
            let size = if turn { item.size } else { 0 };
            let total = scan_add(warp, size);
            let at = self.op + total - size;
            let mut failure = NO_FAILURE;
            if turn {
                failure = item.failure(self.bits);
                if failure == NO_FAILURE && !self.output.fits(at, size) {
                    failure = self.output.full as u32;
                }
            }
            let mut copy = false;
            if turn && failure == NO_FAILURE {
                self.consume(item.bits);
                match item.kind {
                    ItemKind::Literal if self.output.writes() => unsafe {
                        *self.output.out.add(at as usize) = item.value as u8;
                    },
                    ItemKind::Length => (pending_len, pending_at) = (item.value, at),
                    ItemKind::Distance => copy = true,
                    _ => {}
                }
            }
            self.end_turns(warp, turns, 0, failure)?;
            self.op += warp.shuffle(total, WARP_SIZE - 1);
            let mine = Match { at: pending_at, dist: item.value, len: if copy { pending_len } else { 0 } };
            unsafe { rounds.copy(warp, &self.output, mine, 0) };
            if copy {
                pending_len = 0;
            }
            if end != 0 {
                let last = end.trailing_zeros();
                return unsafe { self.after_end(warp, tables, rounds, last, pending_len, pending_at) };
            }
        }
    }

    /// The turns after the end-of-block symbol read by lane `last`, from the lane after it to
    /// lane `last` again: lanes with a pending match read its distance, and every lane refills
    /// (lane `last` has).
    #[inline(always)]
    unsafe fn after_end<W: Warp, R: Rounds>(
        &mut self,
        warp: &W,
        tables: &DecodeTables,
        rounds: &mut R,
        last: u32,
        pending_len: u32,
        pending_at: u32,
    ) -> Result<(), Status> {
        let first = (last + 1) % WARP_SIZE;
        let mut item = Item::default();
        let mut failure = NO_FAILURE;
        let copy = pending_len != 0;
        if copy {
            item = unsafe { Item::next(tables, self.buf, true, pending_at) };
            failure = item.failure(self.bits);
            if failure == NO_FAILURE {
                self.consume(item.bits);
            }
        }
        self.end_turns(warp, !(1 << last), first, failure)?;
        // Output order: the matches of the round before (lanes after `last`), then this round's.
        let mine = Match { at: pending_at, dist: item.value, len: if copy { pending_len } else { 0 } };
        unsafe { rounds.copy(warp, &self.output, mine, first) };
        Ok(())
    }
}

#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum ItemKind {
    #[default]
    Invalid,
    Literal,
    Length,
    End,
    Distance,
    /// A distance reaching before the output's start.
    BadDistance,
}

/// One lane's item of a round, decoded from the bits it holds before it takes its turn.
#[derive(Clone, Copy, Default)]
struct Item {
    kind: ItemKind,
    /// The literal byte, the match length or the distance.
    value: u32,
    /// Bits the item takes.
    bits: u32,
    /// Output bytes it adds.
    size: u32,
}

impl Item {
    /// The lane's next item: the distance of its pending match (at output position `at`) where
    /// it has one, else a literal/length symbol (and a length's extra bits). Both are one lookup
    /// in the table the item's code is in, so the lanes of a round take the same path.
    ///
    /// # Safety
    /// `tables` must be built, in shared memory.
    #[inline(always)]
    unsafe fn next(tables: &DecodeTables, buf: u64, pending: bool, at: u32) -> Item {
        let (table, root) =
            if pending { (tables.dist.as_ptr(), DIST_ROOT) } else { (tables.litlen.as_ptr(), LITLEN_ROOT) };
        let entry = unsafe { lookup_at(SharedBytes::new(table.cast()), root, buf) };
        let (n, extra) = (entry_len(entry), entry_extra(entry)); // no extra bits but a base's
        let value = entry_value(entry) + low_bits(buf >> n, extra);
        let (kind, size) = match (entry_kind(entry), pending) {
            (KIND_LITERAL, false) => (ItemKind::Literal, 1),
            (KIND_BASE, false) => (ItemKind::Length, value),
            (KIND_END, false) => (ItemKind::End, 0),
            (KIND_BASE, true) if value == 0 || value > at => (ItemKind::BadDistance, 0),
            (KIND_BASE, true) => (ItemKind::Distance, 0),
            _ => (ItemKind::Invalid, 0),
        };
        Item { kind, value, bits: n + extra, size }
    }

    /// What reading the item with `held` bits reports, as the format crate's decoder checks it.
    #[inline(always)]
    fn failure(&self, held: u32) -> u32 {
        match self.kind {
            _ if self.bits > held => Status::Malformed as u32,
            ItemKind::Invalid => Status::Malformed as u32,
            ItemKind::BadDistance => Status::BadOffset as u32,
            _ => NO_FAILURE,
        }
    }
}

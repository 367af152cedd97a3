//! LZ4 on the GPU: one warp per chunk.
//!
//! Compression follows `ferrocomp_format::lz4::compress` step for step (the lanes look at
//! [`BATCH`] positions at once) and so writes the same bytes. Decompression walks the sequences
//! in every lane (the loads broadcast), with the checks and statuses of the format crate's
//! decoder, and copies literals and matches 32 bytes at a time.

use crate::warp::{WARP_SIZE, Warp};
use core::slice;
use ferrocomp_format::lz4::{self, BATCH, HASH_ENTRIES, LAST_LITERALS, MAX_CHUNK_SIZE, MatchRules, candidate, hash};
use ferrocomp_format::{DataType, Status};

/// Bytes of shared memory each warp of the compress kernel needs (its hash table).
pub const COMPRESS_SHARED_BYTES_PER_WARP: usize = HASH_ENTRIES * 2;

#[inline(always)]
unsafe fn read_u32(data: *const u8, at: usize) -> u32 {
    unsafe { u32::from_le_bytes([*data.add(at), *data.add(at + 1), *data.add(at + 2), *data.add(at + 3)]) }
}

#[inline(always)]
unsafe fn bytes_equal(data: *const u8, a: usize, b: usize, len: usize) -> bool {
    (0..len).all(|i| unsafe { *data.add(a + i) == *data.add(b + i) })
}

/// Compresses the `n` bytes at `input` into `out` (room for `capacity` bytes) as one LZ4 block;
/// returns the compressed size. `table` is this warp's [`HASH_ENTRIES`]-entry scratch.
///
/// # Safety
/// `input` must be readable for `n` bytes, `out` writable for `capacity` bytes and `table` for
/// [`HASH_ENTRIES`] entries, none of them written by anyone else meanwhile.
pub unsafe fn compress_chunk<W: Warp>(
    warp: &W,
    input: *const u8,
    n: usize,
    out: *mut u8,
    capacity: usize,
    table: *mut u16,
    data_type: DataType,
) -> Result<usize, Status> {
    if n > MAX_CHUNK_SIZE {
        return Err(Status::ChunkTooLarge);
    }
    let lane = warp.lane() as usize;
    warp.for_each_strided(HASH_ENTRIES, |slot| unsafe { *table.add(slot) = 0 });
    warp.sync();
    let rules = MatchRules::new(data_type);
    let mut writer = WarpWriter { warp, out, capacity, len: 0 };
    let mut anchor = 0;
    if let Some(last_start) = rules.last_start(n) {
        let mut pos = 0;
        while pos <= last_start {
            let p = pos + lane * rules.width;
            let active = p <= last_start;
            let (slot, entry) = if active {
                let slot = hash(unsafe { read_u32(input, p) });
                (slot as u32, unsafe { *table.add(slot) })
            } else {
                (u32::MAX - lane as u32, 0) // a value no other lane holds
            };
            warp.sync();
            let peers = warp.match_any(slot);
            if active && 31 - peers.leading_zeros() == lane as u32 {
                unsafe { *table.add(slot as usize) = p as u16 };
            }
            warp.sync();
            let found = if active { candidate(p, entry) } else { None }
                .filter(|&c| unsafe { bytes_equal(input, c, p, rules.min_len) });
            let matched = warp.ballot(found.is_some());
            let found = found.unwrap_or(0) as u32;

            let mut cursor = pos;
            loop {
                let first_lane = (cursor - pos).div_ceil(rules.width);
                if first_lane >= BATCH {
                    break;
                }
                let eligible = matched & (u32::MAX << first_lane);
                if eligible == 0 {
                    break;
                }
                let f = eligible.trailing_zeros();
                let p = pos + f as usize * rules.width;
                let c = warp.shuffle(found, f) as usize;
                let forward = common_forward(warp, input, p, c, n - LAST_LITERALS);
                let len = forward - forward % rules.width;
                let back = common_backward(warp, input, p, c, anchor);
                let back = back - back % rules.width;
                unsafe { writer.sequence(input.add(anchor), p - back - anchor, p - c, len + back)? };
                cursor = p + len;
                anchor = cursor;
            }
            pos = cursor.max(pos + BATCH * rules.width);
        }
    }
    unsafe { writer.last_literals(input.add(anchor), n - anchor)? };
    Ok(writer.len)
}

/// Length of the common run of `data[p..]` and `data[c..]`, not reaching `end`; 32 bytes a step.
#[inline(always)]
fn common_forward<W: Warp>(warp: &W, data: *const u8, p: usize, c: usize, end: usize) -> usize {
    let mut len = 0;
    loop {
        let i = len + warp.lane() as usize;
        let equal = p + i < end && unsafe { *data.add(p + i) == *data.add(c + i) };
        let differs = warp.ballot(!equal);
        if differs != 0 {
            return len + differs.trailing_zeros() as usize;
        }
        len += WARP_SIZE as usize;
    }
}

/// Length of the common run ending before `p` and `c`, not reaching before `anchor` or 0.
#[inline(always)]
fn common_backward<W: Warp>(warp: &W, data: *const u8, p: usize, c: usize, anchor: usize) -> usize {
    let limit = (p - anchor).min(c);
    let mut len = 0;
    loop {
        let i = len + warp.lane() as usize;
        let equal = i < limit && unsafe { *data.add(p - 1 - i) == *data.add(c - 1 - i) };
        let differs = warp.ballot(!equal);
        if differs != 0 {
            return len + differs.trailing_zeros() as usize;
        }
        len += WARP_SIZE as usize;
    }
}

/// Appends sequences to a chunk's output: lane 0 writes the headers, all lanes the literals.
struct WarpWriter<'w, W> {
    warp: &'w W,
    out: *mut u8,
    capacity: usize,
    len: usize,
}

impl<W: Warp> WarpWriter<'_, W> {
    unsafe fn sequence(
        &mut self,
        literals: *const u8,
        count: usize,
        offset: usize,
        match_len: usize,
    ) -> Result<(), Status> {
        let trailer_at = self.len + lz4::literal_header_len(count) + count;
        let end = trailer_at + lz4::match_trailer_len(match_len);
        if end > self.capacity {
            return Err(Status::OutputTooSmall);
        }
        unsafe { self.literals(literals, count, match_len) };
        if self.warp.lane() == 0 {
            let trailer = unsafe { slice::from_raw_parts_mut(self.out.add(trailer_at), end - trailer_at) };
            lz4::write_match_trailer(trailer, offset, match_len);
        }
        self.len = end;
        Ok(())
    }

    unsafe fn last_literals(&mut self, literals: *const u8, count: usize) -> Result<(), Status> {
        let end = self.len + lz4::literal_header_len(count) + count;
        if end > self.capacity {
            return Err(Status::OutputTooSmall);
        }
        unsafe { self.literals(literals, count, 0) };
        self.len = end;
        Ok(())
    }

    /// Token, literal-length bytes and the literals themselves, at `self.len`.
    unsafe fn literals(&mut self, literals: *const u8, count: usize, match_len: usize) {
        let header = lz4::literal_header_len(count);
        if self.warp.lane() == 0 {
            let out = unsafe { slice::from_raw_parts_mut(self.out.add(self.len), header) };
            lz4::write_literal_header(out, count, match_len);
        }
        let dst = unsafe { self.out.add(self.len + header) };
        self.warp.for_each_strided(count, |i| unsafe { *dst.add(i) = *literals.add(i) });
    }
}

/// Decompresses the LZ4 block of `in_len` bytes at `block` into `out` (room for `capacity`
/// bytes); returns the decompressed size, or the status `ferrocomp_format::lz4::decompress`
/// gives for the same block.
///
/// Runs of short sequences (at most `SHORT_SEQUENCE` bytes, matches reading bytes written
/// before them) are decoded together: each lane parses the header that would start at its
/// position of the next 32 input bytes, the real headers are chained with shuffles, a prefix sum
/// places them, and the output is written 32 bytes a step. Any other sequence goes through
/// `Stream::decode_one_sequence`, which checks everything as the scalar decoder does.
///
/// # Safety
/// `block` must be readable for `in_len` bytes and `out` writable for `capacity` bytes, and
/// not written by anyone else meanwhile.
pub unsafe fn decompress_chunk<W: Warp>(
    warp: &W,
    block: *const u8,
    in_len: usize,
    out: *mut u8,
    capacity: usize,
) -> Result<usize, Status> {
    if in_len > u32::MAX as usize {
        return Err(Status::ChunkTooLarge);
    }
    // No block decodes to 4 GiB or more here, so a larger capacity changes nothing.
    let stream = Stream { block, end: in_len as u32, out, capacity: capacity.min(u32::MAX as usize) as u32 };
    let (mut ip, mut op) = (0u32, 0u32);
    loop {
        let batch = unsafe { stream.short_sequences(warp, ip, op) };
        if batch.sequences == 0 {
            if unsafe { stream.decode_one_sequence(warp, &mut ip, &mut op)? } {
                return Ok(op as usize);
            }
        } else {
            unsafe { stream.write_batch(warp, &batch, op) };
            (ip, op) = (batch.next_ip, op + batch.total);
        }
    }
}

/// Output bytes of the longest sequence decoded in a batch; longer ones are copied alone.
const SHORT_SEQUENCE: u32 = 2 * WARP_SIZE;

/// A block being decoded.
struct Stream {
    block: *const u8,
    end: u32,
    out: *mut u8,
    capacity: u32,
}

/// Short sequences found together. Lane k describes the sequence whose header would start k
/// bytes into the batch's input (a real one where the chain of headers passed through k).
struct Batch {
    /// How many sequences; 0 when the next one must be decoded alone.
    sequences: u32,
    /// Input position after the batch.
    next_ip: u32,
    /// Output bytes of the batch.
    total: u32,
    /// The last real sequence's lane at or before this lane.
    owner: u32,
    /// Output position of the owner's literals (grows with the lane).
    owner_start: u32,
    /// Input position of this lane's literals.
    literals_at: u32,
    /// Literal bytes of this lane's sequence.
    literals: u32,
    /// Match offset of this lane's sequence.
    offset: u32,
}

impl Stream {
    #[inline(always)]
    fn byte(&self, at: u32) -> u32 {
        unsafe { *self.block.add(at as usize) as u32 }
    }

    /// The run of short sequences starting at input `ip` (output `op`) that can be written
    /// together; `sequences` is 0 when the next one is not such.
    #[inline(always)]
    unsafe fn short_sequences<W: Warp>(&self, warp: &W, ip: u32, op: u32) -> Batch {
        let lane = warp.lane();
        // The header that would start here, if it is a short sequence's: at most
        // SHORT_SEQUENCE bytes of output, and not the block's last sequence.
        let p = ip + lane;
        let token = if p < self.end { self.byte(p) } else { 0 };
        let mut at = p + 1;
        let literals = self.short_length(token >> 4, &mut at);
        let literals_at = at;
        let mut short = p < self.end && literals <= SHORT_SEQUENCE && literals_at + literals + 2 <= self.end;
        let (mut offset, mut len) = (0, 0);
        if short {
            at = literals_at + literals;
            offset = self.byte(at) | self.byte(at + 1) << 8;
            at += 2;
            len = self.short_length(token & 15, &mut at) + lz4::MIN_MATCH as u32;
            short = literals + len <= SHORT_SEQUENCE;
        }
        let next = at;

        // Follow the headers from `ip`: lane k's header leads to the one at `next`.
        let link = if short { next - ip } else { u32::MAX };
        let (mut real, mut k) = (0u32, 0u32);
        while k < WARP_SIZE {
            let following = warp.shuffle(link, k);
            if following == u32::MAX {
                break;
            }
            real |= 1 << k;
            k = following;
        }

        // Place them, and keep the prefix that is valid and reads only bytes written before
        // each 32-byte step (an offset of 32 or more, or a source before the batch).
        let mine = real >> lane & 1 != 0;
        let bytes = if mine { literals + len } else { 0 };
        let end_of_mine = op + scan_add(warp, bytes);
        let start = end_of_mine - bytes;
        let match_start = start + literals;
        let bad = mine
            && (literals > self.capacity.saturating_sub(start)
                || offset == 0
                || offset > match_start
                || len > self.capacity.saturating_sub(match_start)
                || (offset < WARP_SIZE && match_start + len - offset > op));
        let first_bad = warp.ballot(bad).trailing_zeros();
        let real = if first_bad == WARP_SIZE { real } else { real & ((1 << first_bad) - 1) };
        if real == 0 {
            return Batch {
                sequences: 0,
                next_ip: ip,
                total: 0,
                owner: 0,
                owner_start: 0,
                literals_at,
                literals,
                offset,
            };
        }
        let last = 31 - real.leading_zeros();
        let total = warp.shuffle(end_of_mine, last) - op;
        let next_ip = warp.shuffle(next, last);
        let owner = scan_max(warp, if real >> lane & 1 != 0 { lane } else { 0 });
        let owner_start = warp.shuffle(start, owner);
        Batch { sequences: real.count_ones(), next_ip, total, owner, owner_start, literals_at, literals, offset }
    }

    /// A length field read from `at` on, as [`extend_length`] does, but giving up (returning
    /// more than [`SHORT_SEQUENCE`]) once it is longer than that or the block ends.
    #[inline(always)]
    fn short_length(&self, nibble: u32, at: &mut u32) -> u32 {
        let mut len = nibble;
        if nibble == 15 {
            loop {
                if *at >= self.end || len > SHORT_SEQUENCE {
                    return SHORT_SEQUENCE + 1;
                }
                let b = self.byte(*at);
                *at += 1;
                len += b;
                if b != 255 {
                    break;
                }
            }
        }
        len
    }

    /// Writes a batch's `total` bytes at `op`, 32 a step: lane i writes byte `op + step + i`,
    /// from its sequence's literals or the output it repeats.
    #[inline(always)]
    unsafe fn write_batch<W: Warp>(&self, warp: &W, batch: &Batch, op: u32) {
        let lane = warp.lane();
        let mut step = 0;
        while step < batch.total {
            let at = op + step + lane;
            // The last lane whose sequence starts at or before `at` (owner starts only grow).
            let mut j = 0;
            let mut half = WARP_SIZE / 2;
            while half > 0 {
                if warp.shuffle(batch.owner_start, j + half) <= at {
                    j += half;
                }
                half /= 2;
            }
            let owner = warp.shuffle(batch.owner, j);
            let start = warp.shuffle(batch.owner_start, j);
            let literals = warp.shuffle(batch.literals, owner);
            let literals_at = warp.shuffle(batch.literals_at, owner);
            let offset = warp.shuffle(batch.offset, owner);
            if step + lane < batch.total {
                let i = at - start;
                let src = if i < literals {
                    unsafe { self.block.add((literals_at + i) as usize) }
                } else {
                    unsafe { self.out.add((at - offset) as usize) }
                };
                unsafe { *self.out.add(at as usize) = *src };
            }
            warp.sync(); // the step's bytes are visible to every lane
            step += WARP_SIZE;
        }
    }

    /// Decodes the one sequence at `ip` (output `op`), of any shape, with every check of the
    /// scalar decoder; returns whether it was the block's last.
    unsafe fn decode_one_sequence<W: Warp>(&self, warp: &W, ip: &mut u32, op: &mut u32) -> Result<bool, Status> {
        let (end, capacity) = (self.end, self.capacity);
        let byte = |at: u32| self.byte(at);
        if *ip >= end {
            return Err(Status::Truncated);
        }
        let token = byte(*ip);
        *ip += 1;
        let literals = extend_length(token >> 4, ip, end, byte)?;
        if literals > end - *ip {
            return Err(Status::Truncated);
        }
        if literals > capacity - *op {
            return Err(Status::OutputTooSmall);
        }
        unsafe { copy(warp, self.block.add(*ip as usize), self.out.add(*op as usize), literals) };
        *ip += literals;
        *op += literals;
        if *ip == end {
            return Ok(true);
        }
        if end - *ip < 2 {
            return Err(Status::Truncated);
        }
        let offset = byte(*ip) | byte(*ip + 1) << 8;
        *ip += 2;
        let len = extend_length(token & 15, ip, end, byte)?.saturating_add(lz4::MIN_MATCH as u32);
        if offset == 0 || offset > *op {
            return Err(Status::BadOffset);
        }
        if len > capacity - *op {
            return Err(Status::OutputTooSmall);
        }
        warp.sync(); // the literals are visible to every lane
        let (src, dst) = unsafe { (self.out.add((*op - offset) as usize), self.out.add(*op as usize)) };
        if offset >= len {
            unsafe { copy(warp, src, dst, len) };
        } else {
            // The match overlaps itself: byte i repeats byte (i mod offset) of the `offset`
            // bytes before it, which are all written already.
            let step = WARP_SIZE % offset;
            let mut phase = warp.lane() % offset;
            warp.for_each_strided(len as usize, |i| {
                unsafe { *dst.add(i) = *src.add(phase as usize) };
                phase += step;
                if phase >= offset {
                    phase -= offset;
                }
            });
        }
        warp.sync(); // the match is visible to every lane
        *op += len;
        Ok(false)
    }
}

/// Sum of `value` over lanes `0..=lane`.
#[inline(always)]
fn scan_add<W: Warp>(warp: &W, mut value: u32) -> u32 {
    let lane = warp.lane();
    let mut distance = 1;
    while distance < WARP_SIZE {
        let below = warp.shuffle(value, lane.saturating_sub(distance));
        if lane >= distance {
            value += below;
        }
        distance *= 2;
    }
    value
}

/// Maximum of `value` over lanes `0..=lane`.
#[inline(always)]
fn scan_max<W: Warp>(warp: &W, mut value: u32) -> u32 {
    let lane = warp.lane();
    let mut distance = 1;
    while distance < WARP_SIZE {
        value = value.max(warp.shuffle(value, lane.saturating_sub(distance)));
        distance *= 2;
    }
    value
}

/// Copies `n` bytes from `src` to `dst` (not overlapping): 128 a step, 4 per lane, then the
/// rest 32 a step.
#[inline(always)]
unsafe fn copy<W: Warp>(warp: &W, src: *const u8, dst: *mut u8, n: u32) {
    const STEP: u32 = 4 * WARP_SIZE;
    let mut base = 0;
    while base + STEP <= n {
        let i = (base + 4 * warp.lane()) as usize;
        unsafe {
            let bytes = [*src.add(i), *src.add(i + 1), *src.add(i + 2), *src.add(i + 3)];
            dst.add(i).copy_from_nonoverlapping(bytes.as_ptr(), 4);
        }
        base += STEP;
    }
    let (src, dst) = unsafe { (src.add(base as usize), dst.add(base as usize)) };
    warp.for_each_strided((n - base) as usize, |i| unsafe { *dst.add(i) = *src.add(i) });
}

/// A length field: the token's `nibble`, plus the bytes that follow it when it is 15.
#[inline(always)]
fn extend_length(nibble: u32, ip: &mut u32, end: u32, byte: impl Fn(u32) -> u32) -> Result<u32, Status> {
    let mut len = nibble;
    if nibble == 15 {
        loop {
            if *ip >= end {
                return Err(Status::Truncated);
            }
            let b = byte(*ip);
            *ip += 1;
            len = len.saturating_add(b); // saturated, it is still too long for any output
            if b != 255 {
                break;
            }
        }
    }
    Ok(len)
}

/// Kernel entry points: the batched arrays are nvCOMP's (device arrays of pointers and sizes).
#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use crate::gpu::{HardwareWarp, atomic_min_u32, dynamic_shared_memory, thread};

    /// Compresses chunk `i` of `count` into `outputs[i]` (room for `capacity` bytes each),
    /// writing `out_sizes[i]` and `statuses[i]`. One warp per chunk; dynamic shared memory of
    /// `COMPRESS_SHARED_BYTES_PER_WARP` per warp.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn lz4_compress(
        inputs: *const *const u8,
        in_sizes: *const usize,
        outputs: *const *mut u8,
        capacity: usize,
        out_sizes: *mut usize,
        statuses: *mut u32,
        count: usize,
        data_type: u32,
    ) {
        let chunk = HardwareWarp::index_in_grid() as usize;
        if chunk >= count {
            return;
        }
        let warp = HardwareWarp;
        let table =
            unsafe { dynamic_shared_memory::<u16>().add(HardwareWarp::index_in_block() as usize * HASH_ENTRIES) };
        let data_type = DataType::from_id(data_type as u8).unwrap_or_default();
        let result = unsafe {
            compress_chunk(
                &warp,
                *inputs.add(chunk),
                *in_sizes.add(chunk),
                *outputs.add(chunk),
                capacity,
                table,
                data_type,
            )
        };
        if warp.lane() == 0 {
            unsafe { finish(chunk, result, out_sizes, statuses, core::ptr::null_mut()) };
        }
    }

    /// Decompresses chunk `i` of `count` into `outputs[i]` (room for `capacities[i]` bytes),
    /// writing `out_sizes[i]` and `statuses[i]`; `first_failure`, if not null, is lowered to the
    /// index of the first chunk that failed. One warp per chunk.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn lz4_decompress(
        inputs: *const *const u8,
        in_sizes: *const usize,
        outputs: *const *mut u8,
        capacities: *const usize,
        out_sizes: *mut usize,
        statuses: *mut u32,
        count: usize,
        first_failure: *mut u32,
    ) {
        let chunk = HardwareWarp::index_in_grid() as usize;
        if chunk >= count {
            return;
        }
        let warp = HardwareWarp;
        let result = unsafe {
            decompress_chunk(
                &warp,
                *inputs.add(chunk),
                *in_sizes.add(chunk),
                *outputs.add(chunk),
                *capacities.add(chunk),
            )
        };
        if warp.lane() == 0 {
            unsafe { finish(chunk, result, out_sizes, statuses, first_failure) };
        }
    }

    /// Finds the decompressed size of chunk `i` of `count` by walking its sequences. One
    /// thread per chunk.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn lz4_decompressed_sizes(
        inputs: *const *const u8,
        in_sizes: *const usize,
        out_sizes: *mut usize,
        statuses: *mut u32,
        count: usize,
    ) {
        let chunk = thread::index_1d() as usize;
        if chunk >= count {
            return;
        }
        let block = unsafe { slice::from_raw_parts(*inputs.add(chunk), *in_sizes.add(chunk)) };
        unsafe { finish(chunk, lz4::decompressed_size(block), out_sizes, statuses, core::ptr::null_mut()) };
    }

    /// Records one chunk's outcome (size 0 on failure).
    unsafe fn finish(
        chunk: usize,
        result: Result<usize, Status>,
        sizes: *mut usize,
        statuses: *mut u32,
        first_failure: *mut u32,
    ) {
        let (size, status) = match result {
            Ok(size) => (size, Status::Success),
            Err(status) => (0, status),
        };
        unsafe {
            *sizes.add(chunk) = size;
            if !statuses.is_null() {
                *statuses.add(chunk) = status as u32;
            }
            if status != Status::Success && !first_failure.is_null() {
                atomic_min_u32(first_failure, chunk as u32);
            }
        }
    }
}

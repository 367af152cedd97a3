//! Zstandard decompression on the GPU, a warp per chunk, its lanes sharing each phase of the
//! format crate's decoder (`ferrocomp_format::zstd`), with its statuses and bytes. It needs no
//! memory but the output and the warp's shared memory:
//!
//! - frame, block and section headers: every lane reads them (the same bytes, the same result);
//! - raw and RLE blocks, raw literals, the literals left after a block's sequences: warp copies;
//! - a Huffman tree: lane 0 reads the weights, the warp fills the decode table's cells; the four
//!   literal streams: lanes 0..4, each with the format crate's one-stream decoder, into the
//!   output itself, at the end of the room the block may fill (see `literals_end`);
//! - sequences: lane 0 reads the FSE tables and decodes 32 at a time (FSE is serial) into
//!   shared memory; each lane checks one as `Cursor::advance` would, placed by prefix sums, and
//!   the warp writes them: runs of short sequences whose matches read bytes written before them,
//!   32 output bytes a step; any other sequence alone, with warp copies;
//! - the XXH64 checksum: lanes 0..4 each keep one accumulator over the frame's stripes.
//!
//! The sizes kernel runs the format crate's `decompressed_size` in lane 0: it reads headers and,
//! for frames without a content size, sequences, all serial work.

use crate::lz77::{SHORT_SEQUENCE, copy, copy_down, copy_match, last_starting_by, scan_add};
use crate::raw::bytes;
use crate::warp::{WARP_SIZE, Warp, first_lane};
use ferrocomp_format::Status;
use ferrocomp_format::zstd::frame::{
    BlockKind, FrameHeader, LiteralsHeader, LiteralsKind, for_each_frame, little_endian, read_block_header,
    read_literals_header,
};
use ferrocomp_format::zstd::sequences::{self, Cursor, RepeatOffsets, Sequence, SequenceDecoder, SequencesHeader};
use ferrocomp_format::zstd::{DecodeTables, HuffmanTables, SequenceTables, huffman, xxh64};

/// Sequences the warp writes at a time.
const BATCH: usize = WARP_SIZE as usize;

/// What a warp keeps in shared memory: the literals' and the sequences' tables, and the batch of
/// sequences lane 0 decoded for the warp to write.
#[repr(C)]
struct WarpShared {
    literals: HuffmanTables,
    sequences: SequenceTables,
    batch: [[u32; 3]; BATCH],
}

/// Bytes of shared memory each warp of the decompress kernel needs (4-byte aligned).
pub const DECODE_SHARED_BYTES_PER_WARP: usize = size_of::<WarpShared>();
/// Bytes of shared memory each warp of the sizes kernel needs (4-byte aligned): all the tables.
pub const SIZES_SHARED_BYTES_PER_WARP: usize = size_of::<DecodeTables>();

/// Decodes every frame of the chunk `input[..n]` into `out[..capacity]`; returns the decoded
/// size, in every lane: the format crate's `zstd::decompress`, warp-wide. Bytes of `out` past
/// the decoded size may be overwritten (with literals on their way to their place).
///
/// # Safety
/// `input` must be readable for `n` bytes, `out` writable for `capacity` and `shared` (4-byte
/// aligned) for [`DECODE_SHARED_BYTES_PER_WARP`], none written by anyone else meanwhile.
pub unsafe fn decompress_chunk<W: Warp>(
    warp: &W,
    input: *const u8,
    n: usize,
    out: *mut u8,
    capacity: usize,
    shared: *mut u8,
) -> Result<usize, Status> {
    let input = unsafe { bytes(input, n) };
    let chunk = Job { input, out, capacity, shared: shared as *mut WarpShared };
    for_each_frame(input, |ip, op, header| unsafe { decode_frame(warp, &chunk, ip, op, header) })
}

/// The size the chunk `input[..n]` decodes to, in every lane: the format crate's
/// `zstd::decompressed_size`, run by lane 0.
///
/// # Safety
/// As [`decompress_chunk`], with `shared` of [`SIZES_SHARED_BYTES_PER_WARP`].
pub unsafe fn decompressed_size<W: Warp>(
    warp: &W,
    input: *const u8,
    n: usize,
    shared: *mut u8,
) -> Result<usize, Status> {
    first_lane(warp, || {
        let tables = unsafe { &mut *(shared as *mut DecodeTables) };
        ferrocomp_format::zstd::decompressed_size(unsafe { bytes(input, n) }, tables)
    })
}

/// The chunk a warp decodes, and its memory.
struct Job<'a> {
    input: &'a [u8],
    out: *mut u8,
    capacity: usize,
    shared: *mut WarpShared,
}

impl Job<'_> {
    /// The literals' tables, for reading (no lane may be writing them).
    unsafe fn tables(&self) -> &HuffmanTables {
        unsafe { &(*self.shared).literals }
    }

    /// The literals' tables, for lane 0 alone to write.
    #[allow(clippy::mut_from_ref)]
    unsafe fn tables_mut(&self) -> &mut HuffmanTables {
        unsafe { &mut (*self.shared).literals }
    }
}

/// What a frame's blocks leave for the next: where they got to, the Huffman table's log (for
/// treeless literals), if there is one, and the repeat offsets (lane 0's).
struct FrameState {
    cursor: Cursor,
    huffman_log: Option<u32>,
    reps: RepeatOffsets,
}

/// Decodes the blocks and checksum of the frame with `header`, from input position `ip` and
/// output position `op`; returns both after it.
unsafe fn decode_frame<W: Warp>(
    warp: &W,
    chunk: &Job,
    mut ip: usize,
    op: usize,
    header: &FrameHeader,
) -> Result<(usize, usize), Status> {
    let cursor = Cursor::for_frame(header, op, chunk.capacity, Status::OutputTooSmall)?;
    let mut frame = FrameState { cursor, huffman_log: None, reps: RepeatOffsets::START };
    if warp.lane() == 0 {
        unsafe { (*chunk.shared).sequences.repeatable = 0 }; // read by lane 0 alone
    }
    loop {
        let block = read_block_header(chunk.input.get(ip..).unwrap_or(&[]), frame.cursor.block_max)?;
        let content = chunk.input.get(ip + 3..ip + 3 + block.content_len()).ok_or(Status::Truncated)?;
        ip += 3 + content.len();
        frame.cursor.block_start = frame.cursor.op;
        let at = frame.cursor.op;
        match block.kind {
            BlockKind::Raw | BlockKind::Rle => {
                if block.size > frame.cursor.limit - at {
                    return Err(frame.cursor.limit_status);
                }
                let dst = unsafe { chunk.out.add(at) };
                match block.kind {
                    BlockKind::Raw => unsafe { copy(warp, content.as_ptr(), dst, block.size as u32) },
                    _ => unsafe { fill(warp, dst, content.first().copied().unwrap_or(0), block.size) },
                }
                warp.sync(); // the block is visible to every lane
                frame.cursor.op += block.size;
            }
            BlockKind::Compressed => unsafe { decode_compressed(warp, chunk, content, &mut frame)? },
        }
        if block.last {
            break;
        }
    }
    let checksum = if header.checksum {
        let stored = chunk.input.get(ip..ip + 4).ok_or(Status::Truncated)?;
        ip += 4;
        Some(little_endian(stored) as u32)
    } else {
        None
    };
    let end = frame.cursor.op;
    if header.content_size.is_some_and(|size| size != (end - op) as u64) {
        return Err(Status::Malformed);
    }
    if let Some(stored) = checksum
        && unsafe { checksum_of(warp, chunk.out.add(op), end - op) } != stored
    {
        return Err(Status::BadChecksum);
    }
    Ok((ip, end))
}

/// Writes `byte` `n` times at `dst`.
unsafe fn fill<W: Warp>(warp: &W, dst: *mut u8, byte: u8, n: usize) {
    warp.for_each_strided(n, |i| unsafe { *dst.add(i) = byte });
}

/// Where in the output a block's decoded literals end: at the end of the room the block may
/// fill (its size limit, the frame's). Every sequence that passes `Cursor::advance` leaves the
/// output position plus the literals still to come within that room, so the sequences write
/// below the literals they have not taken yet; a sequence's own literals move down to it (see
/// [`copy_down`]).
fn literals_end(cursor: &Cursor) -> usize {
    cursor.limit.min(cursor.block_start + cursor.block_max)
}

/// Decodes a compressed block's `content` at the frame's cursor.
unsafe fn decode_compressed<W: Warp>(
    warp: &W,
    chunk: &Job,
    content: &[u8],
    frame: &mut FrameState,
) -> Result<(), Status> {
    let header = read_literals_header(content)?;
    let cursor = &mut frame.cursor;
    if header.regenerated > cursor.block_max {
        return Err(Status::Malformed);
    }
    if header.regenerated > cursor.limit - cursor.op {
        return Err(cursor.limit_status);
    }
    let section = content.get(header.len..header.len + header.stored).ok_or(Status::Malformed)?;
    let decoded_at = unsafe { chunk.out.add(literals_end(cursor) - header.regenerated) };
    let literals = unsafe { read_literals(warp, chunk, &header, section, &mut frame.huffman_log, decoded_at)? };
    frame.cursor.literals_left = header.regenerated;
    let sequences = content.get(header.len + header.stored..).unwrap_or(&[]);
    let seq_header = sequences::read_header(sequences)?;
    let mut literal_at = 0;
    if seq_header.count > 0 {
        literal_at = unsafe { run_sequences(warp, chunk, sequences, &seq_header, literals, frame)? };
    }
    let cursor = &mut frame.cursor;
    let dst = unsafe { chunk.out.add(cursor.op) };
    unsafe { copy_down(warp, literals.add(literal_at), dst, cursor.literals_left as u32) };
    warp.sync(); // the block is visible to every lane
    cursor.op += cursor.literals_left;
    cursor.literals_left = 0;
    Ok(())
}

/// Where the block's literals are: raw ones in the input, RLE and Huffman-coded ones decoded at
/// `decoded_at`. Reads (and keeps, in `huffman_log`) a Huffman tree.
unsafe fn read_literals<W: Warp>(
    warp: &W,
    chunk: &Job,
    header: &LiteralsHeader,
    section: &[u8],
    huffman_log: &mut Option<u32>,
    decoded_at: *mut u8,
) -> Result<*const u8, Status> {
    let streams = match header.kind {
        LiteralsKind::Raw => return Ok(section.as_ptr()),
        LiteralsKind::Rle => {
            unsafe { fill(warp, decoded_at, section.first().copied().unwrap_or(0), header.regenerated) };
            warp.sync();
            return Ok(decoded_at);
        }
        LiteralsKind::Compressed => {
            let (log, used) = unsafe { read_huffman_table(warp, chunk, section)? };
            *huffman_log = Some(log);
            section.get(used..).unwrap_or(&[])
        }
        LiteralsKind::Treeless if huffman_log.is_some() => section,
        LiteralsKind::Treeless => return Err(Status::Malformed),
    };
    let log = huffman_log.unwrap_or(0);
    unsafe { decode_huffman_literals(warp, chunk, streams, header, log, decoded_at)? };
    Ok(decoded_at)
}

/// Reads a Huffman tree description at the start of `section`: lane 0 its weights, then the warp
/// fills the table. Returns the table's log and the bytes read.
unsafe fn read_huffman_table<W: Warp>(warp: &W, chunk: &Job, section: &[u8]) -> Result<(u32, usize), Status> {
    let weights = first_lane(warp, || {
        huffman::read_weights(section, unsafe { chunk.tables_mut() }).map(|(symbols, used)| symbols << 16 | used)
    })?;
    let (symbols, used) = (weights >> 16, weights & 0xFFFF);
    warp.sync(); // the weights are visible to every lane
    let log = unsafe { fill_huffman_table(warp, chunk, symbols)? };
    Ok((log, used))
}

/// Fills the Huffman decode table from the `symbols` weights in the tables: each lane finds its
/// symbols' first cells (weight classes in order, symbols in order within one), then fills the
/// cells of symbols with few; the warp fills those of symbols with many together.
unsafe fn fill_huffman_table<W: Warp>(warp: &W, chunk: &Job, symbols: usize) -> Result<u32, Status> {
    const FEW: u32 = 8;
    let lane = warp.lane();
    let weights = unsafe { chunk.tables().weights.get(..symbols).ok_or(Status::Malformed)? };
    let log = huffman::table_log(weights)?;
    let weight_of = |s: usize| weights.get(s).copied().unwrap_or(0) as u32;
    let below = (1u32 << lane) - 1;
    let classes = 1..=ferrocomp_format::zstd::tables::MAX_HUFFMAN_WEIGHT as u32;
    // Lane w counts the symbols of weight w, then holds the first cell of the next one.
    let mut count = 0;
    for base in (0..symbols).step_by(BATCH) {
        let weight = weight_of(base + lane as usize);
        for class in classes.clone() {
            let members = warp.ballot(weight == class);
            if lane == class {
                count += members.count_ones();
            }
        }
    }
    let class_cells = if classes.contains(&lane) { count << (lane - 1) } else { 0 };
    let mut next_cell = scan_add(warp, class_cells) - class_cells;
    let cells = unsafe { core::ptr::addr_of_mut!((*chunk.shared).literals.cells) as *mut u16 };
    for base in (0..symbols).step_by(BATCH) {
        let symbol = base + lane as usize;
        let weight = weight_of(symbol);
        let mut start = 0;
        for class in classes.clone() {
            let members = warp.ballot(weight == class);
            let first = warp.shuffle(next_cell, class);
            if weight == class {
                start = first + ((members & below).count_ones() << (class - 1));
            }
            if lane == class {
                next_cell += members.count_ones() << (class - 1);
            }
        }
        let width = if weight > 0 { 1u32 << (weight - 1) } else { 0 };
        let cell = huffman::huffman_cell(symbol, weight as u8, log);
        if width <= FEW {
            for i in start..start + width {
                unsafe { *cells.add(i as usize) = cell };
            }
        }
        let mut many = warp.ballot(width > FEW);
        while many != 0 {
            let owner = many.trailing_zeros();
            many &= many - 1;
            let (start, width, cell) =
                (warp.shuffle(start, owner), warp.shuffle(width, owner), warp.shuffle(cell as u32, owner) as u16);
            let run = unsafe { cells.add(start as usize) };
            warp.for_each_strided(width as usize, |i| unsafe { *run.add(i) = cell });
        }
    }
    warp.sync(); // the table is visible to every lane
    Ok(log)
}

/// Decodes Huffman-coded literals (1 stream in lane 0, or 4 in lanes 0..4) at `decoded_at`.
unsafe fn decode_huffman_literals<W: Warp>(
    warp: &W,
    chunk: &Job,
    streams: &[u8],
    header: &LiteralsHeader,
    log: u32,
    decoded_at: *mut u8,
) -> Result<(), Status> {
    let lane = warp.lane() as usize;
    let literals = header.regenerated;
    let (sizes, segment) = if header.four_streams {
        huffman::split_streams(streams, literals)?
    } else {
        ([streams.len(), 0, 0, 0], literals)
    };
    let result = if lane < 4 && (header.four_streams || lane == 0) {
        let skip = if header.four_streams { 6 } else { 0 };
        let from = skip + sizes.iter().take(lane).sum::<usize>();
        let size = sizes.get(lane).copied().unwrap_or(0);
        let stream = streams.get(from..from + size).ok_or(Status::Malformed);
        let len = if lane == 3 || !header.four_streams { literals - lane * segment } else { segment };
        let out = unsafe { core::slice::from_raw_parts_mut(decoded_at.add(lane * segment), len) };
        stream.and_then(|stream| huffman::decode_stream(&unsafe { chunk.tables() }.cells, log, stream, out))
    } else {
        Ok(())
    };
    let failed = warp.ballot(result.is_err()) != 0;
    warp.sync(); // the literals are visible to every lane
    if failed { Err(Status::Malformed) } else { Ok(()) }
}

/// Decodes and writes the block's sequences (`section`, with `header`), a batch at a time: lane
/// 0 reads the tables and decodes each batch into shared memory, the warp checks and writes it,
/// with the literals at `literals`. Returns how many literals they took.
unsafe fn run_sequences<W: Warp>(
    warp: &W,
    chunk: &Job,
    section: &[u8],
    header: &SequencesHeader,
    literals: *const u8,
    frame: &mut FrameState,
) -> Result<usize, Status> {
    let tables_at = section.get(header.len..).unwrap_or(&[]);
    let tables: *mut SequenceTables = unsafe { &raw mut (*chunk.shared).sequences };
    let used = first_lane(warp, || sequences::read_tables(header.modes, tables_at, unsafe { &mut *tables }))?;
    let tables = unsafe { &*tables };
    // Every lane starts the decoder (the same bytes, the same result); lane 0 runs it.
    let mut decoder = SequenceDecoder::new(tables_at.get(used..).unwrap_or(&[]), tables)?;
    let batch = unsafe { &mut (*chunk.shared).batch };
    let (count, cursor) = (header.count, &mut frame.cursor);
    let (mut written, mut literal_at) = (0, 0);
    while written < count {
        let len = (count - written).min(BATCH as u32);
        if warp.lane() == 0 {
            decoder.decode_resolved(tables, &mut frame.reps, &mut batch[..len as usize], written + len == count);
        }
        warp.sync(); // the batch is visible to every lane
        let me = place(warp, batch, len);
        check(warp, cursor, &me, len)?;
        let (bytes, taken) = unsafe { write_batch(warp, chunk, literals.add(literal_at), cursor.op, len, &me) };
        cursor.op += bytes;
        cursor.literals_left -= taken;
        literal_at += taken;
        written += len;
    }
    if warp.ballot(warp.lane() == 0 && !decoder.finished()) != 0 {
        return Err(Status::Malformed); // the bitstream has bits left
    }
    Ok(literal_at)
}

/// One sequence of a batch as its lane holds it: output position and literals position
/// (relative to the batch's), literal and match lengths, and offset.
#[derive(Clone, Copy)]
struct Placed {
    start: u32,
    literal_at: u32,
    literals: u32,
    match_len: u32,
    offset: u32,
}

/// Lane i's sequence of the `len` in `batch` (none past them), placed by prefix sums.
fn place<W: Warp>(warp: &W, batch: &[[u32; 3]; BATCH], len: u32) -> Placed {
    let lane = warp.lane();
    let [literals, match_len, offset] = if lane < len { batch[lane as usize] } else { [0; 3] };
    let bytes = literals + match_len;
    let start = scan_add(warp, bytes) - bytes;
    let literal_at = scan_add(warp, literals) - literals;
    Placed { start, literal_at, literals, match_len, offset }
}

/// Checks the batch's `len` sequences at `cursor` as the format crate's `Cursor::advance` does
/// one after another: each lane its own, from where the sequences before it leave the cursor.
/// The status is the first failing sequence's.
fn check<W: Warp>(warp: &W, cursor: &Cursor, me: &Placed, len: u32) -> Result<(), Status> {
    let status = if warp.lane() < len {
        let mut at = *cursor;
        at.op += me.start as usize;
        // Past the literals left, a sequence before this one fails first.
        at.literals_left = at.literals_left.saturating_sub(me.literal_at as usize);
        let sequence = Sequence { literals: me.literals, match_len: me.match_len, offset_value: 0 };
        at.advance(&sequence, me.offset).err().map_or(0, |status| status as u32)
    } else {
        0
    };
    match warp.ballot(status != 0) {
        0 => Ok(()),
        failing => Err(Status::from_code(warp.shuffle(status, failing.trailing_zeros()))),
    }
}

/// Writes the `len` sequences of the batch (lane i holding sequence i as `me`) at output
/// position `op`, their literals from `literals`; returns the bytes written and the literals
/// taken. Runs of short sequences go 32 bytes a step (see [`write_run`]); a long one alone.
unsafe fn write_batch<W: Warp>(
    warp: &W,
    chunk: &Job,
    literals: *const u8,
    op: usize,
    len: u32,
    me: &Placed,
) -> (usize, usize) {
    let lane = warp.lane();
    let alone = warp.ballot(lane < len && me.literals + me.match_len > SHORT_SEQUENCE);
    let mut first = 0;
    while first < len {
        let next_alone = (alone >> first << first).trailing_zeros().min(len);
        if next_alone > first {
            unsafe { write_run(warp, chunk.out, op, literals, me, first, next_alone) };
        }
        if next_alone < len {
            let one = shuffle_placed(warp, me, next_alone);
            let match_at = op + (one.start + one.literals) as usize;
            unsafe {
                let literal = literals.add(one.literal_at as usize);
                copy_down(warp, literal, chunk.out.add(op + one.start as usize), one.literals);
                warp.sync(); // the literals may be the match's source
                // Addressed from the match's source, which the checks keep within the frame.
                let source = chunk.out.add(match_at - one.offset as usize);
                copy_match(warp, source, one.offset, one.offset, one.match_len);
            }
        }
        first = next_alone + 1;
    }
    let last = shuffle_placed(warp, me, 31);
    ((last.start + last.literals + last.match_len) as usize, (last.literal_at + last.literals) as usize)
}

/// Lane `from`'s sequence, in every lane.
fn shuffle_placed<W: Warp>(warp: &W, placed: &Placed, from: u32) -> Placed {
    Placed {
        start: warp.shuffle(placed.start, from),
        literal_at: warp.shuffle(placed.literal_at, from),
        literals: warp.shuffle(placed.literals, from),
        match_len: warp.shuffle(placed.match_len, from),
        offset: warp.shuffle(placed.offset, from),
    }
}

/// Writes sequences `first..end` of the batch at output position `op` (lanes `first..end`), 32
/// output bytes a step: lane i writes byte `step + i` of the run, from its sequence's literals or
/// the bytes it repeats. Where no match of the run reads within [`DEEP_STEPS`] steps back, the
/// steps go that many at a time, all their bytes read before any is written (the loads in
/// flight together, not one memory latency a step); otherwise a step at a time, a match's source
/// taken from the lanes where it lies within this step or the one before.
unsafe fn write_run<W: Warp>(
    warp: &W,
    out: *mut u8,
    op: usize,
    literals: *const u8,
    me: &Placed,
    first: u32,
    end: u32,
) {
    let lane = warp.lane();
    let run_start = warp.shuffle(me.start, first);
    let last = shuffle_placed(warp, me, end - 1);
    let run = Run { out, op, literals, run_start, total: last.start + last.literals + last.match_len - run_start };
    // Lanes before the run start where it does, lanes after it never: starts only grow.
    let owner_start = match lane {
        l if l < first => 0,
        l if l < end => me.start - run_start,
        _ => u32::MAX,
    };
    let source_in_batch = (me.start + me.literals + me.match_len) as usize > me.offset as usize;
    let near = lane >= first && lane < end && me.match_len > 0 && source_in_batch;
    if warp.ballot(near && me.offset < DEEP_STEPS as u32 * WARP_SIZE) == 0 {
        unsafe { run.write_far(warp, me, owner_start) }
    } else {
        unsafe { run.write_near(warp, me, owner_start) }
    }
}

/// Steps of a run written together where its matches allow.
const DEEP_STEPS: usize = 4;

/// A run of short sequences: where its bytes go and come from.
struct Run {
    out: *mut u8,
    op: usize,
    literals: *const u8,
    /// The run's first byte, relative to the batch's.
    run_start: u32,
    /// Its bytes.
    total: u32,
}

impl Run {
    /// Writes the run [`DEEP_STEPS`] steps at a time: each lane reads its byte of every step,
    /// then writes them (no match of the run may read less than that many steps back within it).
    #[inline(always)]
    unsafe fn write_far<W: Warp>(&self, warp: &W, me: &Placed, owner_start: u32) {
        const STEPS: usize = DEEP_STEPS;
        let lane = warp.lane();
        let mut step = 0;
        while step < self.total {
            let mut bytes = [0u8; STEPS];
            for (i, byte) in bytes.iter_mut().enumerate() {
                let at = step + i as u32 * WARP_SIZE + lane;
                let owner = shuffle_placed(warp, me, last_starting_by(warp, owner_start, at));
                if at < self.total {
                    let into = at + self.run_start - owner.start;
                    let to = self.op + (self.run_start + at) as usize;
                    *byte = if into < owner.literals {
                        unsafe { *self.literals.add((owner.literal_at + into) as usize) }
                    } else {
                        unsafe { *self.out.add(to - owner.offset as usize) }
                    };
                }
            }
            warp.sync(); // every literal read before its place (which may hold a later one) is written
            for (i, &byte) in bytes.iter().enumerate() {
                let at = step + i as u32 * WARP_SIZE + lane;
                if at < self.total {
                    unsafe { *self.out.add(self.op + (self.run_start + at) as usize) = byte };
                }
            }
            warp.sync(); // the steps' bytes are visible to every lane
            step += STEPS as u32 * WARP_SIZE;
        }
    }

    /// Writes the run a step at a time. A match byte whose source lies in this step is another
    /// lane's byte, followed back lane to lane (by pointer jumping) to one that is resolved; in
    /// the step before, a lane's byte kept from it; further back, in memory. Short offsets (a
    /// run of 4-byte floats repeating the one before) cost shuffles, not memory round trips.
    #[inline(always)]
    unsafe fn write_near<W: Warp>(&self, warp: &W, me: &Placed, owner_start: u32) {
        let lane = warp.lane();
        let (mut step, mut before) = (0, 0);
        while step < self.total {
            let at = step + lane;
            let owner = shuffle_placed(warp, me, last_starting_by(warp, owner_start, at));
            let into = at + self.run_start - owner.start;
            let to = self.op + (self.run_start + at) as usize;
            let in_step = into >= owner.literals && owner.offset <= lane;
            let in_before = into >= owner.literals && step > 0 && owner.offset <= lane + WARP_SIZE;
            let (mut source, mut pending) = (lane.wrapping_sub(owner.offset), in_step && at < self.total);
            let from_before = warp.shuffle(before, source.wrapping_add(WARP_SIZE) % WARP_SIZE);
            let mut byte = match () {
                _ if at >= self.total || in_step => 0,
                _ if into < owner.literals => unsafe { *self.literals.add((owner.literal_at + into) as usize) as u32 },
                _ if in_before => from_before,
                _ => unsafe { *self.out.add(to - owner.offset as usize) as u32 },
            };
            // Sources lie in lower lanes, so each round a pending lane's source moves down.
            while warp.ballot(pending) != 0 {
                let source_byte = warp.shuffle(byte, source % WARP_SIZE);
                let source_pending = warp.shuffle(pending as u32, source % WARP_SIZE) != 0;
                let source_source = warp.shuffle(source, source % WARP_SIZE);
                if pending {
                    if source_pending {
                        source = source_source;
                    } else {
                        (byte, pending) = (source_byte, false);
                    }
                }
            }
            if at < self.total {
                unsafe { *self.out.add(to) = byte as u8 };
            }
            before = byte;
            warp.sync(); // the step's bytes are visible to every lane
            step += WARP_SIZE;
        }
    }
}

/// The low 32 bits of the XXH64 of `len` bytes at `data`, in every lane: lane i < 4 keeps
/// accumulator i over the 32-byte stripes, then every lane finishes the hash.
unsafe fn checksum_of<W: Warp>(warp: &W, data: *const u8, len: usize) -> u32 {
    let lane = warp.lane() as usize;
    let stripes = len / xxh64::STRIPE;
    let mut acc = xxh64::initial(lane);
    if lane < 4 {
        for stripe in 0..stripes {
            let word = unsafe { data.add(stripe * xxh64::STRIPE + 8 * lane).cast::<[u8; 8]>().read() };
            acc = xxh64::round(acc, u64::from_le_bytes(word));
        }
    }
    let accs: [u64; 4] = core::array::from_fn(|i| {
        let low = warp.shuffle(acc as u32, i as u32) as u64;
        low | (warp.shuffle((acc >> 32) as u32, i as u32) as u64) << 32
    });
    let tail = unsafe { bytes(data.add(stripes * xxh64::STRIPE), len % xxh64::STRIPE) };
    xxh64::finish(xxh64::converge(accs), tail, len as u64) as u32
}

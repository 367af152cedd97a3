//! Zstandard decompression on the GPU, a warp per chunk, its lanes sharing each phase of the
//! format crate's decoder (`ferrocomp_format::zstd`), with its statuses and bytes. It needs no
//! memory but the output and the warp's shared memory:
//!
//! - frame, block and section headers: every lane reads them (the same bytes, the same result);
//! - raw and RLE blocks, raw literals, the literals left after a block's sequences: warp copies;
//! - a Huffman tree: lane 0 reads the weights, the warp fills the decode table's cells; the four
//!   literal streams: lanes 0..4, each with the format crate's one-stream decoder, into the
//!   output itself, at the end of the room the block may fill (see `literals_end`);
//! - sequences: one lane reads the FSE tables and decodes 32 at a time (FSE is serial) into
//!   shared memory, a batch ahead of the warp, while the literals decode: the warp's first lane
//!   when asked, or a lane of a team's reader warp, which then works while the writers write
//!   (see `reader`); each lane checks one as `Cursor::advance` would, placed by
//!   prefix sums, and the warp writes them: runs of short sequences whose matches read bytes
//!   written before them, 32 output bytes a step; any other sequence alone, with warp copies;
//! - the XXH64 checksum: lanes 0..4 each keep one accumulator over the frame's stripes.
//!
//! The sizes kernel runs the format crate's `decompressed_size` in lane 0: it reads headers and,
//! for frames without a content size, sequences, all serial work.

mod execute;
mod handoff;
mod reader;

use crate::block::Block;
use crate::lz77::{copy, copy_down, scan_add};
use crate::raw::bytes;
use crate::warp::{WARP_SIZE, Warp, first_lane};
use ferrocomp_format::Status;
use ferrocomp_format::zstd::frame::{
    BlockKind, FrameHeader, LiteralsHeader, LiteralsKind, for_each_frame, little_endian, read_block_header,
    read_literals_header,
};
use ferrocomp_format::zstd::sequences::{self, Cursor};
use ferrocomp_format::zstd::{DecodeTables, HuffmanTables, SequenceTables, huffman, xxh64};
use handoff::Batches;
pub use handoff::{FullSequences, SequenceForm, WalkedStates};
pub use reader::TeamWriter;
use reader::{InLane0, Mailbox, Sequencer, SequencesJob, serve_team};

/// Sequences the warp writes at a time.
const BATCH: usize = WARP_SIZE as usize;

/// What a chunk's decoder keeps in shared memory: the literals' and the sequences' tables, the
/// batches of sequences decoded for the warp to write (one written while the next decodes), and
/// the mailbox between the two.
#[repr(C)]
struct WarpShared {
    literals: HuffmanTables,
    sequences: SequenceTables,
    batches: Batches,
    mailbox: Mailbox,
}

/// Bytes of shared memory each warp of the decompress kernel needs (16-byte aligned), and each
/// writer of a team ([`TeamWriter`]).
pub const DECODE_SHARED_BYTES_PER_WARP: usize = size_of::<WarpShared>();
/// Bytes of shared memory each warp of the sizes kernel needs (4-byte aligned): all the tables.
pub const SIZES_SHARED_BYTES_PER_WARP: usize = size_of::<DecodeTables>();

/// Decodes every frame of the chunk `input[..n]` into `out[..capacity]`; returns the decoded
/// size, in every lane: the format crate's `zstd::decompress`, warp-wide. Bytes of `out` past
/// the decoded size may be overwritten (with literals on their way to their place).
///
/// # Safety
/// `input` must be readable for `n` bytes, `out` writable for `capacity` and `shared` (16-byte
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
    unsafe { decompress_with(warp, &chunk, &mut InLane0::default()) }
}

/// Reads the sequences for a team's writers: the block's last warp, while each of the others
/// decodes chunks with [`TeamWriter::decompress`], lane i for writer i (see `reader`).
///
/// # Safety
/// `shared` (16-byte aligned) must be the block's shared memory, [`DECODE_SHARED_BYTES_PER_WARP`]
/// for each writer; every other warp of the block joins as a writer.
pub unsafe fn read_for_team<B: Block, W: Warp, F: SequenceForm>(block: &B, warp: &W, shared: *mut u8) {
    unsafe { serve_team::<B, W, F>(block, warp, team_writers(block), shared as *mut WarpShared) }
}

/// The writers of a team the size of `block`: all its warps but the last, the reader.
pub fn team_writers<B: Block>(block: &B) -> u32 {
    block.threads() / WARP_SIZE - 1
}

impl<'b, B: Block, F: SequenceForm> TeamWriter<'b, B, F> {
    /// [`decompress_chunk`], the sequences read by the team's reader.
    ///
    /// # Safety
    /// As [`decompress_chunk`], but for the shared memory, the team's.
    pub unsafe fn decompress<W: Warp>(
        &mut self,
        warp: &W,
        input: *const u8,
        n: usize,
        out: *mut u8,
        capacity: usize,
    ) -> Result<usize, Status> {
        let input = unsafe { bytes(input, n) };
        let chunk = Job { input, out, capacity, shared: self.shared };
        unsafe { decompress_with(warp, &chunk, self) }
    }
}

/// Decodes every frame of `chunk`, its sequences read by `sequencer`.
unsafe fn decompress_with<W: Warp, S: Sequencer>(warp: &W, chunk: &Job, sequencer: &mut S) -> Result<usize, Status> {
    for_each_frame(chunk.input, |ip, op, header| unsafe { decode_frame(warp, chunk, sequencer, ip, op, header) })
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
/// treeless literals), if there is one, and whether sequences were read yet (the reader keeps
/// the repeat offsets and the tables to repeat).
struct FrameState {
    cursor: Cursor,
    huffman_log: Option<u32>,
    sequences_read: bool,
}

/// Decodes the blocks and checksum of the frame with `header`, from input position `ip` and
/// output position `op`; returns both after it.
unsafe fn decode_frame<W: Warp, S: Sequencer>(
    warp: &W,
    chunk: &Job,
    sequencer: &mut S,
    mut ip: usize,
    op: usize,
    header: &FrameHeader,
) -> Result<(usize, usize), Status> {
    let cursor = Cursor::for_frame(header, op, chunk.capacity, Status::OutputTooSmall)?;
    let mut frame = FrameState { cursor, huffman_log: None, sequences_read: false };
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
            BlockKind::Compressed => unsafe { decode_compressed(warp, chunk, sequencer, content, &mut frame)? },
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

/// Decodes a compressed block's `content` at the frame's cursor: its sequences start decoding
/// (see [`reader`]) before its literals, whose failure still comes first.
unsafe fn decode_compressed<W: Warp, S: Sequencer>(
    warp: &W,
    chunk: &Job,
    sequencer: &mut S,
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
    let sequences = content.get(header.len + header.stored..).unwrap_or(&[]);
    let first_of_frame = !frame.sequences_read;
    let job =
        || sequences::read_header(sequences).map(|header| SequencesJob { section: sequences, header, first_of_frame });
    // Nothing of the sequences stays live across the literals' decoding but for a reader ahead.
    let ahead = if S::READS_AHEAD { Some(job()) } else { None };
    if let Some(Ok(job)) = &ahead
        && job.header.count > 0
    {
        unsafe { sequencer.start(warp, chunk, job) };
    }
    let decoded_at = unsafe { chunk.out.add(literals_end(cursor) - header.regenerated) };
    let literals = unsafe { read_literals(warp, chunk, &header, section, &mut frame.huffman_log, decoded_at)? };
    frame.cursor.literals_left = header.regenerated;
    let job = ahead.unwrap_or_else(job)?;
    let mut literal_at = 0;
    if job.header.count > 0 {
        frame.sequences_read = true;
        literal_at = unsafe { sequencer.run(warp, chunk, &job, literals, &mut frame.cursor)? };
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
#[inline(always)] // see `write_batch_checked`
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

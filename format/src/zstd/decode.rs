//! The scalar decoder: frames, blocks, literals and sequences put together.
//!
//! Decoding into a slice, a block's Huffman-coded literals are decoded into the end of the room
//! the frame's output may take (`Cursor::limit`); sequences then write from the front. Each
//! sequence is checked first to fit with the literals still to come, so no write reaches
//! literals not yet copied. Only counting (`WRITE` false), nothing is written or Huffman-decoded,
//! and every other check is the same.

use super::DecodeTables;
use super::frame::{
    BlockHeader, BlockKind, FrameHeader, LiteralsHeader, LiteralsKind, for_each_frame, little_endian,
    read_block_header, read_literals_header,
};
use super::sequences::{self, Cursor, RepeatOffsets, SequenceDecoder};
use super::{MAX_DECOMPRESSED_CHUNK_SIZE, huffman, xxh64};
use crate::Status;

/// Decodes (`WRITE`) or sizes every frame of `input`; returns the decoded size. Counting, frames
/// stating their content size are not decoded, only walked block by block.
pub fn decode_frames<const WRITE: bool>(
    input: &[u8],
    out: &mut [u8],
    tables: &mut DecodeTables,
) -> Result<usize, Status> {
    for_each_frame(input, |ip, op, header| decode_frame::<WRITE>(input, ip, out, op, header, tables))
}

/// Decodes the blocks and checksum of the frame with `header`, from input position `ip` and
/// output position `op`; returns both after it.
fn decode_frame<const WRITE: bool>(
    input: &[u8],
    mut ip: usize,
    out: &mut [u8],
    op: usize,
    header: &FrameHeader,
    tables: &mut DecodeTables,
) -> Result<(usize, usize), Status> {
    let (room, room_status) =
        if WRITE { (out.len(), Status::OutputTooSmall) } else { (MAX_DECOMPRESSED_CHUNK_SIZE, Status::ChunkTooLarge) };
    let mut cursor = Cursor::for_frame(header, op, room, room_status)?;
    let walk_only = !WRITE && header.content_size.is_some();
    tables.start_frame();
    let mut reps = RepeatOffsets::START;
    loop {
        let block = read_block_header(input.get(ip..).unwrap_or(&[]), cursor.block_max)?;
        let content = input.get(ip + 3..ip + 3 + block.content_len()).ok_or(Status::Truncated)?;
        ip += 3 + content.len();
        if !walk_only {
            cursor.block_start = cursor.op;
            decode_block::<WRITE>(&block, content, out, &mut cursor, &mut reps, tables)?;
        }
        if block.last {
            break;
        }
    }
    let checksum = if header.checksum {
        let stored = input.get(ip..ip + 4).ok_or(Status::Truncated)?;
        ip += 4;
        Some(little_endian(stored) as u32)
    } else {
        None
    };
    if walk_only {
        return Ok((ip, cursor.limit));
    }
    if header.content_size.is_some_and(|size| size != (cursor.op - op) as u64) {
        return Err(Status::Malformed);
    }
    if WRITE && let Some(stored) = checksum {
        let data = out.get(op..cursor.op).ok_or(Status::Malformed)?;
        if xxh64::xxh64(data) as u32 != stored {
            return Err(Status::BadChecksum);
        }
    }
    Ok((ip, cursor.op))
}

/// Decodes one block with `content` at the cursor.
fn decode_block<const WRITE: bool>(
    block: &BlockHeader,
    content: &[u8],
    out: &mut [u8],
    cursor: &mut Cursor,
    reps: &mut RepeatOffsets,
    tables: &mut DecodeTables,
) -> Result<(), Status> {
    match block.kind {
        BlockKind::Raw | BlockKind::Rle => {
            if block.size > cursor.limit - cursor.op {
                return Err(cursor.limit_status);
            }
            if WRITE {
                let dst = out.get_mut(cursor.op..cursor.op + block.size).ok_or(Status::OutputTooSmall)?;
                match block.kind {
                    BlockKind::Raw => dst.copy_from_slice(content),
                    _ => dst.fill(content.first().copied().unwrap_or(0)),
                }
            }
            cursor.op += block.size;
            Ok(())
        }
        BlockKind::Compressed => decode_compressed::<WRITE>(content, out, cursor, reps, tables),
    }
}

/// Where a block's literals are read from while its sequences run.
enum Literals<'a> {
    /// Raw literals in the input.
    Raw(&'a [u8]),
    /// One byte repeated.
    Rle(u8),
    /// Huffman-decoded into the output at this position.
    Decoded(usize),
    /// Not kept (only counting).
    Uncounted,
}

/// Decodes a compressed block's `content` at the cursor.
fn decode_compressed<const WRITE: bool>(
    content: &[u8],
    out: &mut [u8],
    cursor: &mut Cursor,
    reps: &mut RepeatOffsets,
    tables: &mut DecodeTables,
) -> Result<(), Status> {
    let header = read_literals_header(content)?;
    if header.regenerated > cursor.block_max {
        return Err(Status::Malformed);
    }
    if header.regenerated > cursor.limit - cursor.op {
        return Err(cursor.limit_status);
    }
    let section = content.get(header.len..header.len + header.stored).ok_or(Status::Malformed)?;
    let literals = read_literals::<WRITE>(&header, section, out, cursor, tables)?;
    cursor.literals_left = header.regenerated;
    let sequences = content.get(header.len + header.stored..).unwrap_or(&[]);
    let seq_header = sequences::read_header(sequences)?;
    let mut literal_at = 0;
    if seq_header.count > 0 {
        let tables_at = sequences.get(seq_header.len..).unwrap_or(&[]);
        let tables = &mut tables.sequences;
        let stream = tables_at.get(sequences::read_tables(seq_header.modes, tables_at, tables)?..).unwrap_or(&[]);
        let mut decoder = SequenceDecoder::new(stream, tables)?;
        for i in 0..seq_header.count {
            let sequence = decoder.next(tables, i + 1 == seq_header.count);
            let offset = reps.resolve(sequence.offset_value, sequence.literals);
            let op = cursor.op;
            cursor.advance(&sequence, offset)?;
            if WRITE {
                copy_literals(out, &literals, literal_at, op, sequence.literals as usize)?;
                copy_match(out, op + sequence.literals as usize, offset as usize, sequence.match_len as usize)?;
            }
            literal_at += sequence.literals as usize;
        }
        if !decoder.finished() {
            return Err(Status::Malformed);
        }
    }
    if WRITE {
        copy_literals(out, &literals, literal_at, cursor.op, cursor.literals_left)?;
    }
    cursor.op += cursor.literals_left;
    cursor.literals_left = 0;
    Ok(())
}

/// The Huffman streams of a compressed literals section `section` (its tree read into
/// `tables.literals`) or of a treeless one (the frame's last tree reused; none yet is malformed).
pub(super) fn huffman_streams<'a>(
    kind: LiteralsKind,
    section: &'a [u8],
    tables: &mut DecodeTables,
) -> Result<&'a [u8], Status> {
    if kind == LiteralsKind::Compressed {
        let tree = huffman::read_table(section, &mut tables.literals)?;
        tables.literals.present = 1;
        return Ok(section.get(tree..).unwrap_or(&[]));
    }
    if tables.literals.present == 0 {
        return Err(Status::Malformed);
    }
    Ok(section)
}

/// Reads the literals section `section`: raw and RLE literals stay where they are; Huffman-coded
/// ones are decoded (when writing) into the end of the room left for the frame.
fn read_literals<'a, const WRITE: bool>(
    header: &LiteralsHeader,
    section: &'a [u8],
    out: &mut [u8],
    cursor: &Cursor,
    tables: &mut DecodeTables,
) -> Result<Literals<'a>, Status> {
    let streams = match header.kind {
        LiteralsKind::Raw => return Ok(Literals::Raw(section)),
        LiteralsKind::Rle => return Ok(Literals::Rle(section.first().copied().unwrap_or(0))),
        LiteralsKind::Compressed | LiteralsKind::Treeless => huffman_streams(header.kind, section, tables)?,
    };
    if !WRITE {
        return Ok(Literals::Uncounted);
    }
    let at = cursor.limit - header.regenerated;
    let dst = out.get_mut(at..cursor.limit).ok_or(Status::OutputTooSmall)?;
    huffman::decode_literals(streams, header.four_streams, &tables.literals, dst)?;
    Ok(Literals::Decoded(at))
}

/// Copies `len` literals from index `from` of `literals` to `out[to..]`.
fn copy_literals(out: &mut [u8], literals: &Literals, from: usize, to: usize, len: usize) -> Result<(), Status> {
    if len == 0 {
        return Ok(());
    }
    match *literals {
        Literals::Raw(raw) => out
            .get_mut(to..to + len)
            .zip(raw.get(from..from + len))
            .map(|(dst, src)| dst.copy_from_slice(src))
            .ok_or(Status::Malformed),
        Literals::Rle(byte) => out.get_mut(to..to + len).map(|dst| dst.fill(byte)).ok_or(Status::Malformed),
        Literals::Decoded(at) => move_within(out, at + from, to, len),
        Literals::Uncounted => Ok(()),
    }
}

/// `out.copy_within(from..from + len, to)`, checked.
fn move_within(out: &mut [u8], from: usize, to: usize, len: usize) -> Result<(), Status> {
    if from.max(to) + len > out.len() {
        return Err(Status::Malformed);
    }
    out.copy_within(from..from + len, to);
    Ok(())
}

/// Writes the match of `len` bytes at `out[at..]` repeating those `offset` back (checked
/// already): the source doubles each step, as what is written repeats with period `offset`.
fn copy_match(out: &mut [u8], at: usize, offset: usize, len: usize) -> Result<(), Status> {
    let start = at.checked_sub(offset).ok_or(Status::BadOffset)?;
    let (mut written, end) = (at, at + len);
    while written < end {
        let piece = (written - start).min(end - written);
        move_within(out, start, written, piece)?;
        written += piece;
    }
    Ok(())
}

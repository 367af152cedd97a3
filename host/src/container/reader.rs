//! Reading a native container of either version from a `Read`, block by block.

use super::frame::{
    FIXED_HEADER_LEN, FLAG_COMPRESSED_CRCS, FLAG_UNCOMPRESSED_CRCS, Fixed, Frame, MAX_BLOCK_BYTES, MAX_BLOCK_CHUNKS,
    STREAM_HEADER_LEN, STREAM_VERSION, VERSION, check_chunk_size, parse_prefix, table_count,
};
use super::nvcomp::{NVCOMP_HEADER_LEN, is_nvcomp, read_stream};
use crate::codec::Options;
use crate::error::{Error, Result};
use crate::io::read_full;
use std::io::{Read, Seek, SeekFrom};

/// The [`Description::version`] of an nvCOMP 6 native stream.
pub const NVCOMP_VERSION: u8 = 6;

/// The first bytes of `input` (up to [`NVCOMP_HEADER_LEN`], fewer where it ends): enough to tell
/// an nvCOMP stream from ferrocomp's container, and to read its header.
pub(crate) fn head_of(input: &mut impl Read) -> Result<Vec<u8>> {
    let mut head = vec![0; NVCOMP_HEADER_LEN];
    let len = read_full(input, &mut head)?;
    head.truncate(len);
    Ok(head)
}

/// What a native container holds, from its headers (its chunks are read past, not decoded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Description {
    /// Container version: 1 (one chunk table) or 2 (streamed, a table per block); or
    /// [`NVCOMP_VERSION`], an nvCOMP 6 native stream (its checksums are nvCOMP's).
    pub version: u8,
    /// Algorithm and options the chunks were compressed with.
    pub options: Options,
    /// Uncompressed size of every chunk but the last.
    pub chunk_size: usize,
    /// Number of chunks.
    pub chunks: u64,
    /// Blocks of chunks, each with its table (version 2; 0 for version 1).
    pub blocks: u64,
    /// Uncompressed bytes.
    pub uncompressed: u64,
    /// Bytes of the whole container, headers included.
    pub compressed: u64,
    /// Whether it stores a CRC-32 of each chunk's uncompressed bytes.
    pub uncompressed_checksums: bool,
    /// Whether it stores a CRC-32 of each chunk's compressed bytes.
    pub compressed_checksums: bool,
}

/// Describes the native container `input` holds (either version, or an nvCOMP 6 stream),
/// reading it to its end and checking its structure, without decoding a chunk.
pub fn describe(mut input: impl Read) -> Result<Description> {
    let head = head_of(&mut input)?;
    if is_nvcomp(&head) {
        let (bytes, frame) = read_stream(&head, input)?;
        return Ok(Description {
            version: NVCOMP_VERSION,
            options: frame.options,
            chunk_size: frame.chunk_size,
            chunks: frame.count() as u64,
            blocks: 0,
            uncompressed: frame.total_size as u64,
            compressed: bytes.len() as u64,
            uncompressed_checksums: frame.checksums.uncompressed.is_some(),
            compressed_checksums: frame.checksums.compressed.is_some(),
        });
    }
    let mut reader = NativeReader::new(head.chain(input), MAX_BLOCK_BYTES)?;
    let (mut chunks, mut uncompressed) = (0, 0);
    while let Some((first_chunk, block)) = reader.next_block()? {
        reader.read_data(first_chunk, &block, None)?;
        chunks += block.count() as u64;
        uncompressed += block.total_size as u64;
    }
    Ok(Description {
        version: reader.version,
        options: reader.options,
        chunk_size: reader.chunk_size,
        chunks,
        blocks: reader.blocks,
        uncompressed,
        compressed: reader.input.count,
        uncompressed_checksums: reader.flags & FLAG_UNCOMPRESSED_CRCS != 0,
        compressed_checksums: reader.flags & FLAG_COMPRESSED_CRCS != 0,
    })
}

/// Bytes of a block's header before its tables: chunk count, size of its last chunk.
const BLOCK_HEADER_LEN: usize = 8;

/// Reads a native container of either version from a [`Read`], handing out its chunks in blocks
/// of about the reader's size, whatever the size of the writer's blocks, so that a version-2
/// container is read in bounded memory (a version-1 container's chunk table is held whole: 4 to
/// 12 bytes a chunk).
pub(crate) struct NativeReader<R> {
    input: Counted<R>,
    version: u8,
    options: Options,
    chunk_size: usize,
    flags: u8,
    /// The table being handed out: version 1's whole one, or version 2's current block's.
    table: Option<Frame>,
    /// The next chunk of `table` to hand out.
    in_table: usize,
    /// Version-2 blocks read.
    blocks: u64,
    block_bytes: usize,
    /// The number of the next block's first chunk.
    next_chunk: usize,
    /// Uncompressed bytes of the blocks handed out.
    uncompressed: u64,
    /// Whether a version-2 block ended with a short chunk, which only the end may follow.
    ended_short: bool,
}

impl<R: Read> NativeReader<R> {
    /// Reads the header; version-1 tables are handed out in blocks of about `block_bytes`.
    pub(crate) fn new(input: R, block_bytes: usize) -> Result<Self> {
        let mut input = Counted { inner: input, count: 0 };
        let mut fixed = [0u8; FIXED_HEADER_LEN];
        read_exactly(&mut input, &mut fixed[..16], "the native header")?;
        let mut reader = Self {
            input,
            version: fixed[4],
            options: Options::default(),
            chunk_size: 0,
            flags: 0,
            table: None,
            in_table: 0,
            blocks: 0,
            block_bytes,
            next_chunk: 0,
            uncompressed: 0,
            ended_short: false,
        };
        if fixed[4] == STREAM_VERSION {
            let (options, flags) = parse_prefix(&fixed, STREAM_VERSION)?;
            read_exactly(&mut reader.input, &mut fixed[16..STREAM_HEADER_LEN], "the native header")?;
            let chunk_size = u32::from_le_bytes(fixed[16..20].try_into().unwrap()) as usize;
            check_chunk_size(options, chunk_size)?;
            if fixed[20..24] != [0; 4] {
                return Err(Error::Container(format!("reserved header bytes {:?} are not 0", &fixed[20..24])));
            }
            (reader.options, reader.flags, reader.chunk_size) = (options, flags, chunk_size);
        } else {
            parse_prefix(&fixed, VERSION)?;
            read_exactly(&mut reader.input, &mut fixed[16..], "the native header")?;
            let parsed = Fixed::parse(&fixed)?;
            // Read as it arrives, so a header lying about its count costs only the bytes there are.
            let mut header = fixed.to_vec();
            let tables = parsed.header_len() - FIXED_HEADER_LEN;
            if (&mut reader.input).take(tables as u64).read_to_end(&mut header)? != tables {
                return Err(Error::Container(format!(
                    "truncated: the stream ends inside its {tables}-byte chunk table"
                )));
            }
            let frame = Frame::parse_native_header(&header)?;
            (reader.options, reader.flags, reader.chunk_size) = (frame.options, parsed.flags, frame.chunk_size);
            reader.table = Some(frame);
        }
        Ok(reader)
    }

    /// The next block of chunks, as a frame whose data starts at 0, with its first chunk's
    /// number; `None` after the last (when the stream must end).
    pub(crate) fn next_block(&mut self) -> Result<Option<(usize, Frame)>> {
        loop {
            if let Some(table) = self.table.as_ref().filter(|table| self.in_table < table.count()) {
                let per_block = (self.block_bytes / table.chunk_size).max(1);
                let end = (self.in_table + per_block).min(table.count());
                let block = table.segment(self.in_table..end);
                let first = self.next_chunk;
                self.in_table = end;
                self.next_chunk += block.count();
                self.uncompressed += block.total_size as u64;
                return Ok(Some((first, block)));
            }
            let next = if self.version == STREAM_VERSION { self.read_block()? } else { None };
            let Some(table) = next else {
                let mut byte = [0u8];
                if self.input.read(&mut byte)? != 0 {
                    let at = self.input.count - 1;
                    return Err(Error::Container(format!("bytes follow the end of the stream at {at}")));
                }
                return Ok(None);
            };
            (self.table, self.in_table) = (Some(table), 0);
            self.blocks += 1;
        }
    }

    /// A version-2 block's header and tables, or `None` at the end marker.
    fn read_block(&mut self) -> Result<Option<Frame>> {
        let bad = |what: String| Err(Error::Container(what));
        let mut head = [0u8; BLOCK_HEADER_LEN];
        read_exactly(&mut self.input, &mut head, "a block header (the stream has no end marker)")?;
        let count = u32::from_le_bytes(head[0..4].try_into().unwrap()) as usize;
        let last = u32::from_le_bytes(head[4..8].try_into().unwrap()) as usize;
        if count == 0 {
            let mut total = [0u8; 8];
            read_exactly(&mut self.input, &mut total, "the end marker")?;
            let total = u64::from_le_bytes(total);
            if last != 0 || total != self.uncompressed {
                return bad(format!("end marker declares {total} bytes, the blocks hold {}", self.uncompressed));
            }
            return Ok(None);
        }
        let chunk_size = self.chunk_size;
        if self.ended_short {
            return bad(format!("a block follows chunk {}, which was shorter than a chunk", self.next_chunk - 1));
        }
        if count > MAX_BLOCK_CHUNKS || last == 0 || last > chunk_size {
            return bad(format!("block at chunk {}: {count} chunks, the last of {last} bytes", self.next_chunk));
        }
        let bytes = (count - 1) * chunk_size + last;
        if bytes > MAX_BLOCK_BYTES {
            return bad(format!("block at chunk {}: {bytes} bytes is over {MAX_BLOCK_BYTES}", self.next_chunk));
        }
        let mut tables = vec![0u8; table_count(self.flags) * 4 * count];
        read_exactly(&mut self.input, &mut tables, "a block's chunk table")?;
        self.ended_short = last < chunk_size;
        let block = Frame::from_tables(self.options, chunk_size, bytes, self.flags, &tables);
        block.check_chunks(self.next_chunk).map(Some)
    }

    /// Reads the chunks of `block` (from [`Self::next_block`]) into `into` (as long as their
    /// compressed sizes' sum), or past them for `None`.
    pub(crate) fn read_data(&mut self, first_chunk: usize, block: &Frame, into: Option<&mut [u8]>) -> Result<()> {
        let len: usize = block.compressed_sizes.iter().sum();
        let got = match into {
            Some(buffer) => read_full(&mut self.input, &mut buffer[..len])?,
            None => std::io::copy(&mut (&mut self.input).take(len as u64), &mut std::io::sink())? as usize,
        };
        if got < len {
            return Err(truncated_in(first_chunk, block, got));
        }
        Ok(())
    }

    /// Bytes read so far.
    pub(crate) fn bytes_read(&self) -> u64 {
        self.input.count
    }
}

impl<R: Read + Seek> NativeReader<R> {
    /// The next block as [`Self::next_block`] gives it, and where its chunks start in a stream
    /// of `stream_len` bytes; they are moved past without being read.
    pub(crate) fn skip_block(&mut self, stream_len: u64) -> Result<Option<(usize, Frame, u64)>> {
        let Some((first_chunk, block)) = self.next_block()? else { return Ok(None) };
        let (at, len) = (self.input.count, block.compressed_sizes.iter().sum::<usize>() as u64);
        if at + len > stream_len {
            return Err(truncated_in(first_chunk, &block, stream_len.saturating_sub(at) as usize));
        }
        self.input.inner.seek(SeekFrom::Current(len as i64))?;
        self.input.count += len;
        Ok(Some((first_chunk, block, at)))
    }
}

/// The error for a stream that ends `got` bytes into the chunks of `block`.
fn truncated_in(first_chunk: usize, block: &Frame, got: usize) -> Error {
    let ends = block.compressed_sizes.iter().scan(0, |end, &size| {
        *end += size;
        Some(*end)
    });
    let chunk = first_chunk + ends.take_while(|&end| end <= got).count();
    Error::Container(format!("truncated: the stream ends inside chunk {chunk}"))
}

/// Fills `buffer` from `input`, or says the stream ended inside `what`.
fn read_exactly(input: &mut impl Read, buffer: &mut [u8], what: &str) -> Result<()> {
    input.read_exact(buffer).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => Error::Container(format!("truncated: the stream ends inside {what}")),
        _ => e.into(),
    })
}

/// A reader that counts the bytes it has read.
struct Counted<R> {
    inner: R,
    count: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count += n as u64;
        Ok(n)
    }
}

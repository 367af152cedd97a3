//! The bitstream kinds: `Native` (a header naming the algorithm, with a chunk table and
//! optional CRC-32s; `docs/FORMAT.md` gives it byte by byte), `Raw` (one standard block, nothing
//! else) and `WithUncompressedSize` (a u64 size, then one block).
//!
//! The native container has two versions: 1, one chunk table for the whole buffer, written when
//! the whole input is at hand; and 2, the streamed form, a table per block of chunks ahead of
//! them and an end marker, written and read block by block in bounded memory.

use crate::codec::Options;
use crate::error::{Error, Result};
use crate::io::read_full;
use ferrocomp_format::Algorithm;
use std::io::{Read, Seek, SeekFrom};

/// The native header's first four bytes.
pub const MAGIC: [u8; 4] = *b"FCMP";
/// The native version with one chunk table for the whole buffer.
pub const VERSION: u8 = 1;
/// The streamed native version: blocks of chunks, each with its table.
pub const STREAM_VERSION: u8 = 2;
/// Bytes of the native header before the chunk table.
pub const FIXED_HEADER_LEN: usize = 32;
/// Bytes of the streamed header before the first block.
pub const STREAM_HEADER_LEN: usize = 24;
/// Most chunks in one block of a streamed container.
pub const MAX_BLOCK_CHUNKS: usize = 1 << 20;
/// Most uncompressed bytes in one block of a streamed container.
pub const MAX_BLOCK_BYTES: usize = 256 << 20;
/// Bytes of a block's header before its tables: chunk count, size of its last chunk.
const BLOCK_HEADER_LEN: usize = 8;
const FLAG_UNCOMPRESSED_CRCS: u8 = 1;
const FLAG_COMPRESSED_CRCS: u8 = 2;

/// How compressed bytes are framed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bitstream {
    /// ferrocomp's chunked container: self-describing, checksummable.
    #[default]
    Native,
    /// One standard block of the whole input, readable by the algorithm's own CPU library.
    Raw,
    /// The uncompressed size (u64, little-endian), then one standard block.
    WithUncompressedSize,
}

/// CRC-32s stored per chunk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checksums {
    /// Of each chunk's uncompressed bytes.
    pub uncompressed: Option<Vec<u32>>,
    /// Of each chunk's compressed bytes.
    pub compressed: Option<Vec<u32>>,
}

/// Everything needed to decode a compressed buffer: where its chunks are, what they hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Algorithm and options the chunks were compressed with.
    pub options: Options,
    /// Uncompressed size of every chunk but the last.
    pub chunk_size: usize,
    /// Uncompressed size of everything.
    pub total_size: usize,
    /// Compressed size of each chunk.
    pub compressed_sizes: Vec<usize>,
    /// Where the first chunk's bytes start.
    pub data_offset: usize,
    /// Stored checksums.
    pub checksums: Checksums,
}

impl Frame {
    /// Number of chunks.
    pub fn count(&self) -> usize {
        self.compressed_sizes.len()
    }

    /// Uncompressed size of chunk `i`.
    pub fn uncompressed_size(&self, i: usize) -> usize {
        (self.total_size - i * self.chunk_size).min(self.chunk_size)
    }

    /// Offset of each chunk's compressed bytes in the buffer.
    pub fn compressed_offsets(&self) -> Vec<usize> {
        let mut at = self.data_offset;
        self.compressed_sizes
            .iter()
            .map(|&size| {
                let offset = at;
                at += size;
                offset
            })
            .collect()
    }

    /// The chunks `chunks` alone, as a frame whose data starts at offset 0.
    pub fn segment(&self, chunks: std::ops::Range<usize>) -> Frame {
        let first = chunks.start;
        let table = |crcs: &Option<Vec<u32>>| crcs.as_ref().map(|c| c[chunks.clone()].to_vec());
        Frame {
            options: self.options,
            chunk_size: self.chunk_size,
            total_size: (chunks.end * self.chunk_size).min(self.total_size) - first * self.chunk_size,
            compressed_sizes: self.compressed_sizes[chunks.clone()].to_vec(),
            data_offset: 0,
            checksums: Checksums {
                uncompressed: table(&self.checksums.uncompressed),
                compressed: table(&self.checksums.compressed),
            },
        }
    }

    /// The bytes that go before the chunks in `bitstream`.
    pub fn header(&self, bitstream: Bitstream) -> Vec<u8> {
        match bitstream {
            Bitstream::Native => self.native_header(),
            Bitstream::WithUncompressedSize => (self.total_size as u64).to_le_bytes().to_vec(),
            Bitstream::Raw => Vec::new(),
        }
    }

    /// The native header for this frame.
    fn native_header(&self) -> Vec<u8> {
        let count = self.count();
        let mut header = Vec::with_capacity(native_header_len(count, &self.checksums));
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&[VERSION, self.options.algorithm() as u8, self.flags(), 0]);
        header.extend_from_slice(&self.options.to_bytes());
        header.extend_from_slice(&(self.total_size as u64).to_le_bytes());
        header.extend_from_slice(&(self.chunk_size as u32).to_le_bytes());
        header.extend_from_slice(&(count as u32).to_le_bytes());
        self.write_tables(&mut header);
        header
    }

    /// The chunk table: compressed sizes, then the CRC-32 tables it has.
    fn write_tables(&self, out: &mut Vec<u8>) {
        let sizes = self.compressed_sizes.iter().map(|&s| s as u32);
        sizes.for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        for table in [&self.checksums.uncompressed, &self.checksums.compressed].into_iter().flatten() {
            table.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        }
    }

    /// The header of a streamed container (version 2) whose blocks are frames like this one.
    pub fn stream_header(&self) -> Vec<u8> {
        let mut header = Vec::with_capacity(STREAM_HEADER_LEN);
        header.extend_from_slice(&MAGIC);
        header.extend_from_slice(&[STREAM_VERSION, self.options.algorithm() as u8, self.flags(), 0]);
        header.extend_from_slice(&self.options.to_bytes());
        header.extend_from_slice(&(self.chunk_size as u32).to_le_bytes());
        header.extend_from_slice(&[0; 4]);
        header
    }

    /// This frame as one block of a streamed container: chunk count, last chunk's size, tables.
    pub fn block_header(&self) -> Vec<u8> {
        let count = self.count();
        let mut header = Vec::with_capacity(native_header_len(count, &self.checksums) - FIXED_HEADER_LEN + 8);
        header.extend_from_slice(&(count as u32).to_le_bytes());
        header.extend_from_slice(&(self.uncompressed_size(count - 1) as u32).to_le_bytes());
        self.write_tables(&mut header);
        header
    }

    /// The end of a streamed container that holds `total` uncompressed bytes.
    pub fn stream_end(total: u64) -> [u8; 16] {
        let mut end = [0; 16];
        end[8..].copy_from_slice(&total.to_le_bytes());
        end
    }

    /// The header's flags: which CRC-32 tables follow the sizes.
    fn flags(&self) -> u8 {
        (self.checksums.uncompressed.is_some() as u8 * FLAG_UNCOMPRESSED_CRCS)
            | (self.checksums.compressed.is_some() as u8 * FLAG_COMPRESSED_CRCS)
    }

    /// Reads the native header (version 1) at the start of `buffer` (at least the whole header;
    /// the chunks may be elsewhere) of a stream of `buffer_len` bytes, checking it against itself
    /// and the length before anything is allocated on its word.
    pub fn parse_native(buffer: &[u8], buffer_len: usize) -> Result<Self> {
        let bad = |what: String| Err(Error::Container(what));
        if buffer_len < FIXED_HEADER_LEN || buffer.len() < FIXED_HEADER_LEN {
            return bad(format!("{buffer_len} bytes is too short for a native header"));
        }
        let header_len = native_header_len_from_fixed(buffer)?;
        let count = u32::from_le_bytes(buffer[28..32].try_into().unwrap()) as usize;
        if header_len + count > buffer_len {
            return bad(format!("header declares {count} chunks, more than {buffer_len} bytes can hold"));
        }
        if buffer.len() < header_len {
            return bad(format!("header is {header_len} bytes, only {} given", buffer.len()));
        }
        let frame = Self::parse_native_header(&buffer[..header_len])?;
        let data: usize = frame.compressed_sizes.iter().sum();
        if header_len + data != buffer_len {
            return bad(format!(
                "chunk table sums to {data} bytes, the stream has {} after the header",
                buffer_len - header_len
            ));
        }
        Ok(frame)
    }

    /// Reads a whole version-1 header (exactly [`native_header_len_from_fixed`] bytes).
    fn parse_native_header(header: &[u8]) -> Result<Self> {
        let fixed = Fixed::parse(header)?;
        let frame = Self::from_tables(
            fixed.options,
            fixed.chunk_size,
            fixed.total as usize,
            fixed.flags,
            &header[FIXED_HEADER_LEN..],
        );
        frame.data_offset_at(header.len()).check_chunks(0)
    }

    /// A frame of `count = tables.len() / (4 · tables)` chunks from its tables (flags say which).
    fn from_tables(options: Options, chunk_size: usize, total_size: usize, flags: u8, tables: &[u8]) -> Self {
        let words: Vec<u32> = tables.as_chunks::<4>().0.iter().map(|b| u32::from_le_bytes(*b)).collect();
        let count = words.len() / table_count(flags);
        let mut tables = words.chunks(count.max(1));
        let mut table = |present: bool| present.then(|| tables.next().unwrap_or_default().to_vec());
        let compressed_sizes = table(true).unwrap().into_iter().map(|s| s as usize).collect();
        let checksums = Checksums {
            uncompressed: table(flags & FLAG_UNCOMPRESSED_CRCS != 0),
            compressed: table(flags & FLAG_COMPRESSED_CRCS != 0),
        };
        Frame { options, chunk_size, total_size, compressed_sizes, data_offset: 0, checksums }
    }

    fn data_offset_at(mut self, data_offset: usize) -> Self {
        self.data_offset = data_offset;
        self
    }

    /// Refuses chunks (numbered from `first_chunk` in errors) whose compressed size is 0, over
    /// the codec's bound for their uncompressed size, or too small to expand to it.
    fn check_chunks(self, first_chunk: usize) -> Result<Self> {
        let codec = self.options.codec();
        for (i, &size) in self.compressed_sizes.iter().enumerate() {
            let uncompressed = self.uncompressed_size(i);
            if size == 0
                || size > codec.max_compressed_chunk_size(uncompressed)
                || uncompressed > codec.max_decompressed_size(size)
            {
                let chunk = first_chunk + i;
                return Err(Error::Container(format!(
                    "chunk {chunk}: {size} compressed bytes cannot hold {uncompressed} bytes"
                )));
            }
        }
        Ok(self)
    }

    /// The frame of a `WithUncompressedSize` stream of `buffer_len` bytes starting with `prefix`.
    pub fn parse_with_size(options: Options, prefix: &[u8], buffer_len: usize) -> Result<Self> {
        if buffer_len < 8 || prefix.len() < 8 {
            return Err(Error::Container(format!("{buffer_len} bytes is too short for a size prefix")));
        }
        let total = u64::from_le_bytes(prefix[..8].try_into().unwrap());
        Self::single_chunk(options, total, 8, buffer_len - 8)
    }

    /// The frame of a `Raw` stream of `compressed_len` bytes that decodes to `total` bytes.
    pub fn raw(options: Options, total: u64, compressed_len: usize) -> Result<Self> {
        Self::single_chunk(options, total, 0, compressed_len)
    }

    fn single_chunk(options: Options, total: u64, data_offset: usize, compressed_len: usize) -> Result<Self> {
        let codec = options.codec();
        if compressed_len == 0 || total > codec.max_decompressed_size(compressed_len) as u64 {
            return Err(Error::Container(format!("{compressed_len} compressed bytes cannot hold {total} bytes")));
        }
        let total = total as usize;
        Ok(Frame {
            options,
            chunk_size: total.max(1),
            total_size: total,
            compressed_sizes: vec![compressed_len],
            data_offset,
            checksums: Checksums::default(),
        })
    }
}

/// Whether `bytes` start a streamed native container (version 2).
pub fn is_streamed(bytes: &[u8]) -> bool {
    bytes.len() > 4 && bytes[..4] == MAGIC && bytes[4] == STREAM_VERSION
}

/// Length of the whole native header (version 1), from its first [`FIXED_HEADER_LEN`] bytes.
pub fn native_header_len_from_fixed(fixed: &[u8]) -> Result<usize> {
    if fixed.len() < FIXED_HEADER_LEN {
        return Err(Error::Container(format!("{} bytes is too short for a native header", fixed.len())));
    }
    parse_prefix(fixed, VERSION)?;
    let count = u32::from_le_bytes(fixed[28..32].try_into().unwrap()) as usize;
    Ok(FIXED_HEADER_LEN + table_count(fixed[6]) * 4 * count)
}

/// The options and flags of the 16 bytes both native versions start with, which must be
/// `version`'s.
fn parse_prefix(prefix: &[u8], version: u8) -> Result<(Options, u8)> {
    let bad = |what: String| Err(Error::Container(what));
    if prefix[0..4] != MAGIC {
        return bad("not a ferrocomp native stream (bad magic)".into());
    }
    match prefix[4] {
        v if v == version => {}
        STREAM_VERSION => {
            return bad("a streamed native container (version 2): decode it with `decompress_stream`".into());
        }
        v => return bad(format!("unsupported native version {v}")),
    }
    let algorithm =
        Algorithm::from_id(prefix[5]).ok_or_else(|| Error::Container(format!("unknown algorithm id {}", prefix[5])))?;
    let flags = prefix[6];
    if flags & !(FLAG_UNCOMPRESSED_CRCS | FLAG_COMPRESSED_CRCS) != 0 || prefix[7] != 0 {
        return bad(format!("unknown header flags {flags:#04x}/{:#04x}", prefix[7]));
    }
    Ok((Options::from_bytes(algorithm, prefix[8..16].try_into().unwrap())?, flags))
}

/// The fields of a version-1 header's first [`FIXED_HEADER_LEN`] bytes, checked.
struct Fixed {
    options: Options,
    flags: u8,
    total: u64,
    chunk_size: usize,
    count: usize,
}

impl Fixed {
    fn parse(fixed: &[u8]) -> Result<Self> {
        let (options, flags) = parse_prefix(fixed, VERSION)?;
        let total = u64::from_le_bytes(fixed[16..24].try_into().unwrap());
        let chunk_size = u32::from_le_bytes(fixed[24..28].try_into().unwrap()) as usize;
        let count = u32::from_le_bytes(fixed[28..32].try_into().unwrap()) as usize;
        check_chunk_size(options, chunk_size)?;
        if total.div_ceil(chunk_size as u64) != count as u64 {
            return Err(Error::Container(format!(
                "{count} chunks cannot hold {total} bytes in chunks of {chunk_size}"
            )));
        }
        Ok(Self { options, flags, total, chunk_size, count })
    }

    fn header_len(&self) -> usize {
        FIXED_HEADER_LEN + table_count(self.flags) * 4 * self.count
    }
}

fn check_chunk_size(options: Options, chunk_size: usize) -> Result<()> {
    let max = options.codec().max_chunk_size();
    if chunk_size == 0 || chunk_size > max {
        return Err(Error::Container(format!("chunk size {chunk_size} is outside 1..={max}")));
    }
    Ok(())
}

/// How many u32 tables a chunk table with `flags` has: sizes, then the CRC-32 tables.
fn table_count(flags: u8) -> usize {
    1 + (flags & FLAG_UNCOMPRESSED_CRCS != 0) as usize + (flags & FLAG_COMPRESSED_CRCS != 0) as usize
}

fn native_header_len(count: usize, checksums: &Checksums) -> usize {
    let tables = 1 + checksums.uncompressed.is_some() as usize + checksums.compressed.is_some() as usize;
    FIXED_HEADER_LEN + tables * 4 * count
}

/// What a native container holds, from its headers (its chunks are read past, not decoded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Description {
    /// Container version: 1 (one chunk table) or 2 (streamed, a table per block).
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

/// Describes the native container `input` holds (either version), reading it to its end and
/// checking its structure, without decoding a chunk.
pub fn describe(input: impl Read) -> Result<Description> {
    let mut reader = NativeReader::new(input, MAX_BLOCK_BYTES)?;
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
    /// Moves past the chunks of `block` (from [`Self::next_block`]) without reading them, in a
    /// stream of `stream_len` bytes; returns where they start.
    pub(crate) fn skip_data(&mut self, first_chunk: usize, block: &Frame, stream_len: u64) -> Result<u64> {
        let (at, len) = (self.input.count, block.compressed_sizes.iter().sum::<usize>() as u64);
        if at + len > stream_len {
            return Err(truncated_in(first_chunk, block, stream_len.saturating_sub(at) as usize));
        }
        self.input.inner.seek(SeekFrom::Current(len as i64))?;
        self.input.count += len;
        Ok(at)
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

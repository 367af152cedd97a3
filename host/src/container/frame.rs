//! The frame of a compressed buffer: the bitstream kinds, the native header's constants and
//! [`Frame`], which describes a buffer's chunks and writes and parses the headers.

use crate::codec::Options;
use crate::error::{ChecksumPart, Error, Result};
use ferrocomp_format::Algorithm;
use ferrocomp_format::crc32::{crc32, nvcomp_chunk_crc};

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
/// Bytes of a `WithUncompressedSize` stream's prefix, as nvCOMP 6 writes it: the size as a u64,
/// then eight reserved bytes, written as zero.
pub const SIZE_PREFIX_LEN: usize = 16;
pub(super) const FLAG_UNCOMPRESSED_CRCS: u8 = 1;
pub(super) const FLAG_COMPRESSED_CRCS: u8 = 2;

/// How compressed bytes are framed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Bitstream {
    /// ferrocomp's chunked container: self-describing, checksummable.
    #[default]
    Native,
    /// One standard block of the whole input, readable by the algorithm's own CPU library.
    Raw,
    /// nvCOMP's size prefix ([`SIZE_PREFIX_LEN`] bytes: the uncompressed size as a u64,
    /// little-endian, then eight reserved bytes), then one standard block.
    WithUncompressedSize,
}

/// Checksums stored per chunk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checksums {
    /// Of each chunk's uncompressed bytes.
    pub uncompressed: Option<Vec<u32>>,
    /// Of each chunk's compressed bytes.
    pub compressed: Option<Vec<u32>>,
    /// Of an nvCOMP stream, whose checksums depend on where a chunk lies: each chunk's offset
    /// modulo 32 in the output and in the stream ([`NVCOMP_UNCHECKED`] for an uncompressed chunk
    /// of which nvCOMP checksums no byte). `None`: the checksums are CRC-32s.
    pub nvcomp_skews: Option<Vec<[u8; 2]>>,
}

/// The skew of an uncompressed chunk that nvCOMP checksums as empty: the last one, where the
/// chunk size divides the total (nvCOMP checksums `total mod chunk size` bytes of it).
pub const NVCOMP_UNCHECKED: u8 = u8::MAX;

impl Checksums {
    /// The checksum stored for chunk `i`'s `part` if that is `bytes`.
    pub fn of(&self, part: ChecksumPart, i: usize, bytes: &[u8]) -> u32 {
        let Some(skews) = &self.nvcomp_skews else { return crc32(bytes) };
        let skew = skews[i][match part {
            ChecksumPart::Uncompressed => 0,
            ChecksumPart::Compressed => 1,
        }];
        match skew {
            NVCOMP_UNCHECKED => nvcomp_chunk_crc(&[], 0),
            skew => nvcomp_chunk_crc(bytes, skew as usize),
        }
    }
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
    /// Where each chunk starts, counted from `data_offset`, in a stream whose chunks are not
    /// back to back (nvCOMP's align theirs); `None` where they are.
    pub chunk_offsets: Option<Vec<usize>>,
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
        if let Some(offsets) = &self.chunk_offsets {
            return offsets.iter().map(|&offset| self.data_offset + offset).collect();
        }
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
        let offsets = self.chunk_offsets.as_ref().map(|offsets| {
            let segment = &offsets[chunks.clone()];
            segment.iter().map(|&offset| offset - segment.first().copied().unwrap_or(0)).collect()
        });
        Frame {
            options: self.options,
            chunk_size: self.chunk_size,
            total_size: (chunks.end * self.chunk_size).min(self.total_size) - first * self.chunk_size,
            compressed_sizes: self.compressed_sizes[chunks.clone()].to_vec(),
            data_offset: 0,
            chunk_offsets: offsets,
            checksums: Checksums {
                uncompressed: table(&self.checksums.uncompressed),
                compressed: table(&self.checksums.compressed),
                nvcomp_skews: self.checksums.nvcomp_skews.as_ref().map(|skews| skews[chunks.clone()].to_vec()),
            },
        }
    }

    /// The bytes that go before the chunks in `bitstream`.
    pub fn header(&self, bitstream: Bitstream) -> Vec<u8> {
        match bitstream {
            Bitstream::Native => self.native_header(),
            Bitstream::WithUncompressedSize => size_prefix(self.total_size as u64).to_vec(),
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
        if super::is_nvcomp(buffer) {
            return super::nvcomp::parse(buffer, buffer_len);
        }
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
    pub(super) fn parse_native_header(header: &[u8]) -> Result<Self> {
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
    pub(super) fn from_tables(
        options: Options,
        chunk_size: usize,
        total_size: usize,
        flags: u8,
        tables: &[u8],
    ) -> Self {
        let words: Vec<u32> = tables.as_chunks::<4>().0.iter().map(|b| u32::from_le_bytes(*b)).collect();
        let count = words.len() / table_count(flags);
        let mut tables = words.chunks(count.max(1));
        let mut table = |present: bool| present.then(|| tables.next().unwrap_or_default().to_vec());
        let compressed_sizes = table(true).unwrap().into_iter().map(|s| s as usize).collect();
        let checksums = Checksums {
            uncompressed: table(flags & FLAG_UNCOMPRESSED_CRCS != 0),
            compressed: table(flags & FLAG_COMPRESSED_CRCS != 0),
            nvcomp_skews: None,
        };
        Frame { options, chunk_size, total_size, compressed_sizes, data_offset: 0, chunk_offsets: None, checksums }
    }

    fn data_offset_at(mut self, data_offset: usize) -> Self {
        self.data_offset = data_offset;
        self
    }

    /// Refuses chunks (numbered from `first_chunk` in errors) whose compressed size is 0, over
    /// the codec's bound for their uncompressed size, or too small to expand to it.
    pub(super) fn check_chunks(self, first_chunk: usize) -> Result<Self> {
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
    /// The reserved bytes are not read.
    pub fn parse_with_size(options: Options, prefix: &[u8], buffer_len: usize) -> Result<Self> {
        let size = prefix.first_chunk::<8>().filter(|_| buffer_len >= SIZE_PREFIX_LEN).ok_or_else(|| {
            Error::Container(format!("{buffer_len} bytes is too short for the {SIZE_PREFIX_LEN}-byte size prefix"))
        })?;
        Self::single_chunk(options, u64::from_le_bytes(*size), SIZE_PREFIX_LEN, buffer_len - SIZE_PREFIX_LEN)
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
            chunk_offsets: None,
            checksums: Checksums::default(),
        })
    }
}

/// The size prefix of a `WithUncompressedSize` stream of `total` uncompressed bytes.
pub fn size_prefix(total: u64) -> [u8; SIZE_PREFIX_LEN] {
    let mut prefix = [0; SIZE_PREFIX_LEN];
    prefix[..8].copy_from_slice(&total.to_le_bytes());
    prefix
}

/// Whether `bytes` start a streamed native container (version 2).
pub fn is_streamed(bytes: &[u8]) -> bool {
    bytes.len() > 4 && bytes[..4] == MAGIC && bytes[4] == STREAM_VERSION
}

/// Length of the whole native header (version 1), from its first [`FIXED_HEADER_LEN`] bytes;
/// of an nvCOMP stream's header and chunk table, from its first [`super::NVCOMP_HEADER_LEN`].
pub fn native_header_len_from_fixed(fixed: &[u8]) -> Result<usize> {
    if super::is_nvcomp(fixed) {
        return super::nvcomp::header_len(fixed);
    }
    if fixed.len() < FIXED_HEADER_LEN {
        return Err(Error::Container(format!("{} bytes is too short for a native header", fixed.len())));
    }
    parse_prefix(fixed, VERSION)?;
    let count = u32::from_le_bytes(fixed[28..32].try_into().unwrap()) as usize;
    Ok(FIXED_HEADER_LEN + table_count(fixed[6]) * 4 * count)
}

/// The options and flags of the 16 bytes both native versions start with, which must be
/// `version`'s.
pub(super) fn parse_prefix(prefix: &[u8], version: u8) -> Result<(Options, u8)> {
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
pub(super) struct Fixed {
    options: Options,
    pub(super) flags: u8,
    total: u64,
    chunk_size: usize,
    count: usize,
}

impl Fixed {
    pub(super) fn parse(fixed: &[u8]) -> Result<Self> {
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

    pub(super) fn header_len(&self) -> usize {
        FIXED_HEADER_LEN + table_count(self.flags) * 4 * self.count
    }
}

pub(super) fn check_chunk_size(options: Options, chunk_size: usize) -> Result<()> {
    let max = options.codec().max_chunk_size();
    if chunk_size == 0 || chunk_size > max {
        return Err(Error::Container(format!("chunk size {chunk_size} is outside 1..={max}")));
    }
    Ok(())
}

/// How many u32 tables a chunk table with `flags` has: sizes, then the CRC-32 tables.
pub(super) fn table_count(flags: u8) -> usize {
    1 + (flags & FLAG_UNCOMPRESSED_CRCS != 0) as usize + (flags & FLAG_COMPRESSED_CRCS != 0) as usize
}

fn native_header_len(count: usize, checksums: &Checksums) -> usize {
    let tables = 1 + checksums.uncompressed.is_some() as usize + checksums.compressed.is_some() as usize;
    FIXED_HEADER_LEN + tables * 4 * count
}

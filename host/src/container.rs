//! The bitstream kinds: `Native` (a header naming the algorithm, with a chunk table and
//! optional CRC-32s; `docs/FORMAT.md` gives it byte by byte), `Raw` (one standard block, nothing
//! else) and `WithUncompressedSize` (a u64 size, then one block).

use crate::codec::Options;
use crate::error::{Error, Result};
use ferrocomp_format::Algorithm;

/// The native header's first four bytes.
pub const MAGIC: [u8; 4] = *b"FCMP";
/// The native header version this library writes and reads.
pub const VERSION: u8 = 1;
/// Bytes of the native header before the chunk table.
pub const FIXED_HEADER_LEN: usize = 32;
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
        let flags = (self.checksums.uncompressed.is_some() as u8 * FLAG_UNCOMPRESSED_CRCS)
            | (self.checksums.compressed.is_some() as u8 * FLAG_COMPRESSED_CRCS);
        header.extend_from_slice(&[VERSION, self.options.algorithm() as u8, flags, 0]);
        header.extend_from_slice(&self.options.to_bytes());
        header.extend_from_slice(&(self.total_size as u64).to_le_bytes());
        header.extend_from_slice(&(self.chunk_size as u32).to_le_bytes());
        header.extend_from_slice(&(count as u32).to_le_bytes());
        let tables = [
            Some(self.compressed_sizes.iter().map(|&s| s as u32).collect()),
            self.checksums.uncompressed.clone(),
            self.checksums.compressed.clone(),
        ];
        for table in tables.into_iter().flatten() {
            table.iter().for_each(|v: &u32| header.extend_from_slice(&v.to_le_bytes()));
        }
        header
    }

    /// Reads the native header at the start of `buffer` (at least the whole header; the
    /// chunks may be elsewhere) of a stream of `buffer_len` bytes, checking it against itself
    /// and the length before anything is allocated on its word.
    pub fn parse_native(buffer: &[u8], buffer_len: usize) -> Result<Self> {
        let bad = |what: String| Err(Error::Container(what));
        if buffer_len < FIXED_HEADER_LEN || buffer.len() < FIXED_HEADER_LEN {
            return bad(format!("{buffer_len} bytes is too short for a native header"));
        }
        if buffer[0..4] != MAGIC {
            return bad("not a ferrocomp native stream (bad magic)".into());
        }
        if buffer[4] != VERSION {
            return bad(format!("unsupported native version {}", buffer[4]));
        }
        let algorithm = Algorithm::from_id(buffer[5])
            .ok_or_else(|| Error::Container(format!("unknown algorithm id {}", buffer[5])))?;
        let flags = buffer[6];
        if flags & !(FLAG_UNCOMPRESSED_CRCS | FLAG_COMPRESSED_CRCS) != 0 || buffer[7] != 0 {
            return bad(format!("unknown header flags {flags:#04x}/{:#04x}", buffer[7]));
        }
        let options = Options::from_bytes(algorithm, buffer[8..16].try_into().unwrap())?;
        let codec = options.codec();
        let total = u64::from_le_bytes(buffer[16..24].try_into().unwrap());
        let chunk_size = u32::from_le_bytes(buffer[24..28].try_into().unwrap()) as usize;
        let count = u32::from_le_bytes(buffer[28..32].try_into().unwrap()) as usize;
        if chunk_size == 0 || chunk_size > codec.max_chunk_size() {
            return bad(format!("chunk size {chunk_size} is outside 1..={}", codec.max_chunk_size()));
        }
        if total.div_ceil(chunk_size as u64) != count as u64 {
            return bad(format!("{count} chunks cannot hold {total} bytes in chunks of {chunk_size}"));
        }
        let header_len = native_header_len_from_fixed(buffer)?;
        if header_len + count > buffer_len {
            return bad(format!("header declares {count} chunks, more than {buffer_len} bytes can hold"));
        }
        if buffer.len() < header_len {
            return bad(format!("header is {header_len} bytes, only {} given", buffer.len()));
        }
        let table = |index: usize| -> Vec<u32> {
            let start = FIXED_HEADER_LEN + index * 4 * count;
            buffer[start..start + 4 * count].as_chunks::<4>().0.iter().map(|b| u32::from_le_bytes(*b)).collect()
        };
        let compressed_sizes: Vec<usize> = table(0).into_iter().map(|s| s as usize).collect();
        let mut next_table = 1;
        let mut optional = |flag: u8| {
            (flags & flag != 0).then(|| {
                next_table += 1;
                table(next_table - 1)
            })
        };
        let checksums =
            Checksums { uncompressed: optional(FLAG_UNCOMPRESSED_CRCS), compressed: optional(FLAG_COMPRESSED_CRCS) };
        let frame = Frame {
            options,
            chunk_size,
            total_size: total as usize,
            compressed_sizes,
            data_offset: header_len,
            checksums,
        };
        let data: usize = frame.compressed_sizes.iter().sum();
        if header_len + data != buffer_len {
            return bad(format!(
                "chunk table sums to {data} bytes, the stream has {} after the header",
                buffer_len - header_len
            ));
        }
        for (i, &size) in frame.compressed_sizes.iter().enumerate() {
            let uncompressed = frame.uncompressed_size(i);
            if size == 0
                || size > codec.max_compressed_chunk_size(uncompressed)
                || uncompressed > codec.max_decompressed_size(size)
            {
                return bad(format!("chunk {i}: {size} compressed bytes cannot hold {uncompressed} bytes"));
            }
        }
        Ok(frame)
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

/// Length of the whole native header, from its first [`FIXED_HEADER_LEN`] bytes.
pub fn native_header_len_from_fixed(fixed: &[u8]) -> Result<usize> {
    if fixed.len() < FIXED_HEADER_LEN {
        return Err(Error::Container(format!("{} bytes is too short for a native header", fixed.len())));
    }
    let count = u32::from_le_bytes(fixed[28..32].try_into().unwrap()) as usize;
    let tables =
        1 + (fixed[6] & FLAG_UNCOMPRESSED_CRCS != 0) as usize + (fixed[6] & FLAG_COMPRESSED_CRCS != 0) as usize;
    Ok(FIXED_HEADER_LEN + tables * 4 * count)
}

fn native_header_len(count: usize, checksums: &Checksums) -> usize {
    let tables = 1 + checksums.uncompressed.is_some() as usize + checksums.compressed.is_some() as usize;
    FIXED_HEADER_LEN + tables * 4 * count
}

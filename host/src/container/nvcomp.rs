//! nvCOMP 6's native streams (what its `Codec.encode` writes by default), read as a [`Frame`]: a
//! 56-byte header, a header of the algorithm's options, the chunk table (offsets and sizes,
//! then the optional checksums) and the chunks, each a standard LZ4, Snappy, Deflate, GDeflate
//! or Zstd block. `docs/FORMAT.md` gives the layout byte by byte.

use super::frame::{Checksums, Frame, NVCOMP_UNCHECKED, check_chunk_size};
use crate::codec::{Deflate, GDeflate, Lz4, Options, Snappy, Zstd};
use crate::error::{Error, Result};
use ferrocomp_format::crc32::nvcomp_header_crc;
use ferrocomp_format::deflate::Wrapper;
use std::io::Read;

/// The first four bytes of an nvCOMP 6 native stream (0x52911327, little-endian).
pub const NVCOMP_MAGIC: [u8; 4] = 0x5291_1327u32.to_le_bytes();
/// Those of nvCOMP 5.3 and older, whose layout differs (and which nvCOMP 6 refuses too).
const NVCOMP_5_MAGIC: [u8; 4] = 0x5291_1326u32.to_le_bytes();
/// Bytes of the header before the options' header.
pub const NVCOMP_HEADER_LEN: usize = 56;
/// Where the header keeps its own checksum.
const HEADER_CRC_AT: usize = 48;
/// Bytes of a chunk's uncompressed (output) or compressed (stream) offset that nvCOMP's chunk
/// checksums depend on: their offset modulo this.
const SKEW: usize = 32;

/// Whether `prefix` starts an nvCOMP native stream (of any version).
pub fn is_nvcomp(prefix: &[u8]) -> bool {
    prefix.len() >= 4 && (prefix[..4] == NVCOMP_MAGIC || prefix[..4] == NVCOMP_5_MAGIC)
}

/// The bytes before the first chunk of the nvCOMP stream whose first [`NVCOMP_HEADER_LEN`]
/// bytes are `prefix`: its header and chunk table.
pub fn header_len(prefix: &[u8]) -> Result<usize> {
    Ok(Header::parse(prefix)?.data_offset)
}

/// The whole nvCOMP stream whose first bytes `head` are (at least its fixed header), read from
/// `input` to the length its header gives (allocated as it arrives, not on the header's word),
/// and its frame. Bytes past that length, or fewer, are refused.
pub fn read_stream(head: &[u8], input: impl Read) -> Result<(Vec<u8>, Frame)> {
    let header = Header::parse(head)?;
    let len = (header.data_offset as u64).saturating_add(header.data_size);
    let mut bytes = head.to_vec();
    let mut rest = input.take(len.saturating_sub(head.len() as u64) + 1);
    rest.read_to_end(&mut bytes)?;
    if bytes.len() as u64 != len {
        let what = if (bytes.len() as u64) < len { "ends early" } else { "has bytes past its end" };
        return Err(Error::Container(format!("nvCOMP stream: {what} (its header says {len} bytes)")));
    }
    let frame = parse(&bytes, bytes.len())?;
    Ok((bytes, frame))
}

/// The frame of the nvCOMP stream of `buffer_len` bytes whose header and chunk table `buffer`
/// holds, checked against itself and the length before anything is sized by it. The header's
/// checksum, which covers the table that says where every chunk is, is checked wherever the
/// stream has one, whatever the checksum policy.
pub fn parse(buffer: &[u8], buffer_len: usize) -> Result<Frame> {
    let header = Header::parse(buffer)?;
    let bad = |what: String| Err(Error::Container(format!("nvCOMP stream: {what}")));
    if (header.data_offset as u64).checked_add(header.data_size) != Some(buffer_len as u64) {
        return bad(format!(
            "header says {} bytes of header and {} of chunks, the stream has {buffer_len}",
            header.data_offset, header.data_size
        ));
    }
    let count = header.count;
    // Offsets and sizes (u64), then the checksums of compressed and uncompressed chunks (u32).
    let checksum_tables = header.compressed_crcs as usize + header.uncompressed_crcs as usize;
    let table_len = (16 + 4 * checksum_tables) * count;
    if header.table_at + table_len > header.data_offset || buffer.len() < header.data_offset {
        return bad(format!("{count} chunks' table does not fit before the chunks at {}", header.data_offset));
    }
    let u64s = |at: usize| -> Vec<u64> {
        buffer[at..at + 8 * count].as_chunks::<8>().0.iter().map(|b| u64::from_le_bytes(*b)).collect()
    };
    let u32s = |at: usize| -> Vec<u32> {
        buffer[at..at + 4 * count].as_chunks::<4>().0.iter().map(|b| u32::from_le_bytes(*b)).collect()
    };
    let crcs_at = header.table_at + 16 * count;
    let compressed = header.compressed_crcs.then(|| u32s(crcs_at));
    let uncompressed = header.uncompressed_crcs.then(|| u32s(crcs_at + 4 * count * header.compressed_crcs as usize));
    if checksum_tables > 0 {
        let mut covered = buffer[..header.table_at + table_len].to_vec();
        let stored = u32::from_le_bytes(covered[HEADER_CRC_AT..HEADER_CRC_AT + 4].try_into().unwrap());
        covered[HEADER_CRC_AT..HEADER_CRC_AT + 4].fill(0);
        let computed = nvcomp_header_crc(&covered);
        if computed != stored {
            return bad(format!("header checksum {computed:#010x}, the header stores {stored:#010x}"));
        }
    }
    let (offsets, sizes) = (u64s(header.table_at), u64s(header.table_at + 8 * count));
    let mut end = 0;
    for (i, (&offset, &size)) in offsets.iter().zip(&sizes).enumerate() {
        if offset < end || offset.saturating_add(size) > header.data_size {
            return bad(format!(
                "chunk {i} at {offset} ({size} bytes) overlaps the one before or ends past the chunks"
            ));
        }
        end = offset + size;
    }
    let data_offset = header.data_offset;
    let unchecked = |i: usize| i + 1 == count && header.total.is_multiple_of(header.chunk_size as u64);
    let skews = (0..count)
        .map(|i| {
            let output = if unchecked(i) { NVCOMP_UNCHECKED } else { (i * header.chunk_size % SKEW) as u8 };
            [output, ((data_offset + offsets[i] as usize) % SKEW) as u8]
        })
        .collect();
    let frame = Frame {
        options: header.options,
        chunk_size: header.chunk_size,
        total_size: header.total as usize,
        compressed_sizes: sizes.iter().map(|&s| s as usize).collect(),
        data_offset,
        chunk_offsets: Some(offsets.iter().map(|&o| o as usize).collect()),
        checksums: Checksums { uncompressed, compressed, nvcomp_skews: Some(skews) },
    };
    // Each chunk must be able to expand to its size (nvCOMP's encoders may write more than
    // ferrocomp's bound on what its own write, so that is not checked).
    let codec = frame.options.codec();
    for (i, &size) in frame.compressed_sizes.iter().enumerate() {
        if size == 0 || frame.uncompressed_size(i) > codec.max_decompressed_size(size) {
            return bad(format!("chunk {i}: {size} compressed bytes cannot hold {} bytes", frame.uncompressed_size(i)));
        }
    }
    Ok(frame)
}

/// The fixed header's fields, checked.
struct Header {
    options: Options,
    total: u64,
    count: usize,
    chunk_size: usize,
    /// Where the chunk table starts and the chunks' bytes start, and their bytes.
    table_at: usize,
    data_offset: usize,
    data_size: u64,
    compressed_crcs: bool,
    uncompressed_crcs: bool,
}

impl Header {
    fn parse(header: &[u8]) -> Result<Self> {
        let bad = |what: String| Err(Error::Container(format!("nvCOMP stream: {what}")));
        if header.len() >= 4 && header[..4] == NVCOMP_5_MAGIC {
            return bad(
                "written by nvCOMP 5.3 or older, whose native layout is not read (nvCOMP 6 refuses it too)".into()
            );
        }
        if header.len() < NVCOMP_HEADER_LEN || header[..4] != NVCOMP_MAGIC {
            return bad(format!("{} bytes do not start an nvCOMP 6 header", header.len().min(NVCOMP_HEADER_LEN)));
        }
        let u64_at = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap());
        let (major, minor, format) = (header[4], header[5], header[6]);
        if major != 6 {
            return bad(format!("native version {major}.{minor} is not read (6.x is)"));
        }
        let (options, options_len) = match format {
            0 => {
                // The data type (u32), the bit-shuffle mode (u32), 4 reserved bytes.
                if header.len() >= 64 && header[60..64] != [0; 4] {
                    return bad("LZ4 chunks bit-shuffled by nvCOMP are not read".into());
                }
                (Options::Lz4(Lz4::default()), 12)
            }
            1 => (Options::Snappy(Snappy::default()), 4),
            3 => (Options::GDeflate(GDeflate::default()), 8),
            6 => (Options::Zstd(Zstd::default()), 4),
            7 => (Options::Deflate(Deflate { wrapper: Wrapper::Raw, ..Deflate::default() }), 8),
            2 | 4 | 5 => {
                let name = ["ANS", "", "Cascaded", "Bitcomp"][format as usize - 2];
                return bad(format!(
                    "its chunks are nvCOMP's own {name} layout, which ferrocomp does not read (ferrocomp's {name} is \
                     its own format); decode it with nvCOMP"
                ));
            }
            other => return bad(format!("unknown format id {other}")),
        };
        let (data_size, total, count, chunk_size) = (u64_at(8), u64_at(16), u64_at(24), u64_at(32));
        let data_offset = u32::from_le_bytes(header[40..44].try_into().unwrap()) as usize;
        if header[52] != 1 {
            return bad("the chunk offsets are not stored".into());
        }
        let chunk_size = usize::try_from(chunk_size).unwrap_or(usize::MAX);
        check_chunk_size(options, chunk_size)?;
        if total.div_ceil(chunk_size as u64) != count {
            return bad(format!("{count} chunks cannot hold {total} bytes in chunks of {chunk_size}"));
        }
        // A chunk takes 16 bytes of the table at least: more than the header's offset can hold
        // is refused before anything is sized by the count.
        if count > (data_offset / 16) as u64 {
            return bad(format!("{count} chunks' table does not fit before the chunks at {data_offset}"));
        }
        Ok(Self {
            options,
            total,
            count: count as usize,
            chunk_size,
            table_at: (NVCOMP_HEADER_LEN + options_len).next_multiple_of(8),
            data_offset,
            data_size,
            compressed_crcs: header[53] != 0,
            uncompressed_crcs: header[54] != 0,
        })
    }
}

//! Frames and blocks (RFC 8878 §3.1): the magic numbers, the frame header, block headers and the
//! literals section's header.

use super::MAGIC;
use crate::Status;

/// Skippable frames' magic numbers are `SKIPPABLE_MAGIC | 0..=15`.
pub const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;
/// Largest block size, and the most any block decodes to.
pub const MAX_BLOCK_SIZE: usize = 128 << 10;

/// The little-endian value of `bytes` (at most 8).
#[inline(always)]
pub fn little_endian(bytes: &[u8]) -> u64 {
    bytes.iter().rev().fold(0, |value, &byte| (value << 8) | byte as u64)
}

/// What starts at an input position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameStart {
    /// A Zstandard frame, its header after the 4-byte magic.
    Zstandard,
    /// A skippable frame of this many bytes in all (magic and size included).
    Skippable(u64),
}

/// Identifies the frame at the start of `input`: `Truncated` if too short to tell, `Malformed`
/// for an unknown magic number.
pub fn frame_start(input: &[u8]) -> Result<FrameStart, Status> {
    let magic = little_endian(input.get(..4).ok_or(Status::Truncated)?) as u32;
    if magic == MAGIC {
        Ok(FrameStart::Zstandard)
    } else if magic & !15 == SKIPPABLE_MAGIC {
        Ok(FrameStart::Skippable(8 + little_endian(input.get(4..8).ok_or(Status::Truncated)?)))
    } else {
        Err(Status::Malformed)
    }
}

/// A Zstandard frame's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// Farthest back a match may reach (the content size for single-segment frames).
    pub window: u64,
    /// The decoded size, when the header states it.
    pub content_size: Option<u64>,
    /// Whether a 4-byte checksum follows the last block.
    pub checksum: bool,
    /// Bytes of the header (after the magic number).
    pub len: usize,
}

impl FrameHeader {
    /// Most bytes one block may hold or decode to: the window, at most 128 KiB.
    pub fn block_max(&self) -> usize {
        self.window.min(MAX_BLOCK_SIZE as u64) as usize
    }
}

/// Walks the frames of a chunk back to back: skips skippable frames and hands each Zstandard
/// frame's header to `frame` with the input position after it and the output position so far;
/// `frame` decodes it and returns the positions after it. Returns the output size; `Truncated`
/// for an empty chunk.
pub fn for_each_frame(
    input: &[u8],
    mut frame: impl FnMut(usize, usize, &FrameHeader) -> Result<(usize, usize), Status>,
) -> Result<usize, Status> {
    if input.is_empty() {
        return Err(Status::Truncated);
    }
    let (mut ip, mut op) = (0, 0);
    while let Some(rest) = input.get(ip..).filter(|rest| !rest.is_empty()) {
        match frame_start(rest)? {
            FrameStart::Skippable(len) => {
                if len > rest.len() as u64 {
                    return Err(Status::Truncated);
                }
                ip += len as usize;
            }
            FrameStart::Zstandard => {
                let header = read_frame_header(rest.get(4..).unwrap_or(&[]))?;
                (ip, op) = frame(ip + 4 + header.len, op, &header)?;
            }
        }
    }
    Ok(op)
}

/// Reads the frame header at the start of `input` (after the magic number). `Malformed` if the
/// reserved bit is set, `DictionaryRequired` for a nonzero dictionary id.
pub fn read_frame_header(input: &[u8]) -> Result<FrameHeader, Status> {
    let descriptor = *input.first().ok_or(Status::Truncated)?;
    if descriptor & 0x08 != 0 {
        return Err(Status::Malformed);
    }
    let single_segment = descriptor & 0x20 != 0;
    let dictionary_bytes = [0, 1, 2, 4][(descriptor & 3) as usize];
    let content_bytes = match descriptor >> 6 {
        0 => single_segment as usize,
        flag => 1 << flag,
    };
    let window_bytes = !single_segment as usize;
    let len = 1 + window_bytes + dictionary_bytes + content_bytes;
    let header = input.get(..len).ok_or(Status::Truncated)?;
    let field = |from: usize, bytes: usize| header.get(from..from + bytes).map(little_endian).unwrap_or(0);
    let dictionary = field(1 + window_bytes, dictionary_bytes);
    let content_field = field(len - content_bytes, content_bytes);
    let content_size = match content_bytes {
        0 => None,
        2 => Some(content_field + 256),
        _ => Some(content_field),
    };
    let window = match (single_segment, content_size) {
        (true, Some(size)) => size,
        _ => {
            let descriptor = field(1, 1);
            let base = 1u64 << (10 + (descriptor >> 3));
            base + (base / 8) * (descriptor & 7)
        }
    };
    if dictionary != 0 {
        return Err(Status::DictionaryRequired);
    }
    Ok(FrameHeader { window, content_size, checksum: descriptor & 0x04 != 0, len })
}

/// Kind of block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// Stored bytes, copied as they are.
    Raw,
    /// One byte, repeated `size` times.
    Rle,
    /// Literals and sequences (RFC 8878, 3.1.1.3).
    Compressed,
}

/// A block header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    /// Whether the frame ends after this block.
    pub last: bool,
    /// How the content is stored.
    pub kind: BlockKind,
    /// Bytes decoded for raw and RLE blocks, bytes of content for compressed ones.
    pub size: usize,
}

impl BlockHeader {
    /// Bytes of content after the header.
    pub fn content_len(&self) -> usize {
        if self.kind == BlockKind::Rle { 1 } else { self.size }
    }
}

/// Reads the 3-byte block header at the start of `input`: `Malformed` for the reserved block
/// type or a size over `block_max`.
pub fn read_block_header(input: &[u8], block_max: usize) -> Result<BlockHeader, Status> {
    let value = little_endian(input.get(..3).ok_or(Status::Truncated)?) as usize;
    let kind = match (value >> 1) & 3 {
        0 => BlockKind::Raw,
        1 => BlockKind::Rle,
        2 => BlockKind::Compressed,
        _ => return Err(Status::Malformed),
    };
    let size = value >> 3;
    if size > block_max {
        return Err(Status::Malformed);
    }
    Ok(BlockHeader { last: value & 1 != 0, kind, size })
}

/// How a block's literals are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiteralsKind {
    /// Stored bytes.
    Raw,
    /// One byte, repeated `regenerated` times.
    Rle,
    /// Huffman-coded, the tree description first.
    Compressed,
    /// Huffman-coded with the previous block's tree.
    Treeless,
}

/// A literals section's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiteralsHeader {
    /// How the literals are stored.
    pub kind: LiteralsKind,
    /// Number of literals.
    pub regenerated: usize,
    /// Bytes after the header (the raw literals, the RLE byte, or the Huffman tree and streams).
    pub stored: usize,
    /// Whether Huffman-coded literals are in four streams.
    pub four_streams: bool,
    /// Bytes of the header.
    pub len: usize,
}

/// Reads the literals section's header at the start of a compressed block.
pub fn read_literals_header(block: &[u8]) -> Result<LiteralsHeader, Status> {
    let first = *block.first().ok_or(Status::Malformed)?;
    let format = (first >> 2) & 3;
    let field = |len: usize| block.get(..len).map(little_endian).ok_or(Status::Malformed);
    let kind = match first & 3 {
        0 => LiteralsKind::Raw,
        1 => LiteralsKind::Rle,
        2 => LiteralsKind::Compressed,
        _ => LiteralsKind::Treeless,
    };
    if matches!(kind, LiteralsKind::Raw | LiteralsKind::Rle) {
        let (regenerated, len) = match format {
            0 | 2 => ((first >> 3) as usize, 1),
            1 => ((field(2)? >> 4) as usize, 2),
            _ => ((field(3)? >> 4) as usize, 3),
        };
        let stored = if kind == LiteralsKind::Rle { 1 } else { regenerated };
        return Ok(LiteralsHeader { kind, regenerated, stored, four_streams: false, len });
    }
    let (len, bits) = match format {
        0 | 1 => (3, 10),
        2 => (4, 14),
        _ => (5, 18),
    };
    let value = field(len)? >> 4;
    let mask = (1 << bits) - 1;
    let (regenerated, stored) = ((value & mask) as usize, ((value >> bits) & mask) as usize);
    let four_streams = format != 0;
    if four_streams && regenerated < 6 {
        return Err(Status::Malformed);
    }
    Ok(LiteralsHeader { kind, regenerated, stored, four_streams, len })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_headers() {
        // Single segment, content size 1 byte (200), checksum.
        assert_eq!(
            read_frame_header(&[0x24, 200]),
            Ok(FrameHeader { window: 200, content_size: Some(200), checksum: true, len: 2 })
        );
        // Window descriptor 2^(10+3) + 2 * 2^13 / 8, 2-byte content size (+256).
        assert_eq!(
            read_frame_header(&[0x40, (3 << 3) | 2, 0x10, 0x00]),
            Ok(FrameHeader {
                window: (1 << 13) + 2 * (1 << 10),
                content_size: Some(0x10 + 256),
                checksum: false,
                len: 4
            })
        );
        assert_eq!(read_frame_header(&[0x40, 0, 0]), Err(Status::Truncated));
        assert_eq!(read_frame_header(&[0x08, 0]), Err(Status::Malformed), "reserved bit");
        assert_eq!(read_frame_header(&[0x01, 0, 7]), Err(Status::DictionaryRequired));
        assert_eq!(read_frame_header(&[0x01, 0, 0]).map(|h| h.len), Ok(3), "dictionary id 0 means none");
        assert_eq!(FrameHeader { window: 1 << 30, content_size: None, checksum: false, len: 2 }.block_max(), 128 << 10);
    }

    #[test]
    fn block_and_literals_headers() {
        let header = ((1000 << 3) | (2 << 1) | 1u32).to_le_bytes();
        assert_eq!(
            read_block_header(&header, 1000),
            Ok(BlockHeader { last: true, kind: BlockKind::Compressed, size: 1000 })
        );
        assert_eq!(read_block_header(&header, 999), Err(Status::Malformed));
        assert_eq!(read_block_header(&[6, 0, 0], 9), Err(Status::Malformed), "reserved type");
        assert_eq!(read_block_header(&[0, 0], 9), Err(Status::Truncated));
        // Raw, 12-bit size 0x123; RLE, 5-bit size 7.
        assert_eq!(
            read_literals_header(&[0x34, 0x12]).map(|h| (h.regenerated, h.stored, h.len)),
            Ok((0x123, 0x123, 2))
        );
        assert_eq!(read_literals_header(&[(7 << 3) | 1]).map(|h| (h.regenerated, h.stored, h.len)), Ok((7, 1, 1)));
        // Compressed, 4 streams, 14-bit sizes 1000 and 300.
        let value = 2 | (2 << 2) | (1000 << 4) | (300 << 18);
        let header = read_literals_header(&(value as u32).to_le_bytes()).unwrap();
        assert_eq!((header.regenerated, header.stored, header.four_streams, header.len), (1000, 300, true, 4));
        assert_eq!(read_literals_header(&[2 | (1 << 2) | (5 << 4), 0, 0]), Err(Status::Malformed), "4 streams of 5");
    }
}

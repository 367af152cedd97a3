//! The 16-byte chunk header and the block geometry it implies, checked the way c-blosc 1.x's
//! decoder checks it (plus the input length and an expansion bound, which c-blosc cannot see).

use crate::Status;

/// Bytes of the header, and of c-blosc's `BLOSC_MAX_OVERHEAD`.
pub const HEADER_LEN: usize = 16;
/// The only format version c-blosc 1.x writes and reads (byte 0).
pub const VERSION: u8 = 2;
/// The inner-codec format version every 1.x compressor writes (byte 1).
pub const CODEC_VERSION: u8 = 1;
/// Largest `nbytes` (c-blosc's `BLOSC_MAX_BUFFERSIZE`, an `int` less the header).
pub const MAX_BUFFERSIZE: usize = i32::MAX as usize - HEADER_LEN;
/// Largest element size the header can hold; c-blosc treats larger ones as 1.
pub const MAX_TYPESIZE: usize = 255;
/// Largest block c-blosc accepts (`BLOSC_MAX_BLOCKSIZE`).
pub const MAX_BLOCKSIZE: usize = (i32::MAX as usize - MAX_TYPESIZE * 4) / 3;
/// Inputs shorter than this are always stored memcpyed; a split stream holds at least this many bytes.
pub const MIN_BUFFERSIZE: usize = 128;
/// Most streams a block is split into: blocks split only for `typesize <= MAX_SPLITS`.
pub const MAX_SPLITS: usize = 16;
/// Most bytes one compressed byte is taken to decode to: zstd's, whose RLE block turns 4 bytes into
/// 128 KiB (Blosc's other codecs stay below deflate's 1032). A header claiming more is `Malformed`.
pub const MAX_EXPANSION: usize = 1 << 15;

/// Flag bit 0: the blocks are byte-shuffled.
pub const FLAG_SHUFFLE: u8 = 0x01;
/// Flag bit 1: the data is stored as is right after the header.
pub const FLAG_MEMCPYED: u8 = 0x02;
/// Flag bit 2: the blocks are bit-shuffled.
pub const FLAG_BITSHUFFLE: u8 = 0x04;
/// Flag bit 3: reserved; c-blosc 1.x rejects chunks that set it.
pub const FLAG_RESERVED: u8 = 0x08;
/// Flag bit 4: blocks are never split into per-byte streams.
pub const FLAG_DONT_SPLIT: u8 = 0x10;
/// The compressor's format code sits in flag bits 5..=7.
pub const COMPRESSOR_SHIFT: u32 = 5;

/// The inner codec, by the format code in flag bits 5..=7 (lz4 and lz4hc share code 1).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compressor {
    /// BloscLZ, FastLZ's descendant ([`super::blosclz`]).
    BloscLz = 0,
    /// LZ4 blocks, as both lz4 and lz4hc write them.
    Lz4 = 1,
    /// Snappy's raw format.
    Snappy = 2,
    /// zlib-wrapped deflate.
    Zlib = 3,
    /// Zstandard frames.
    Zstd = 4,
}

impl Compressor {
    /// The compressor with format code `code`, if c-blosc 1.x defines one.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Self::BloscLz),
            1 => Some(Self::Lz4),
            2 => Some(Self::Snappy),
            3 => Some(Self::Zlib),
            4 => Some(Self::Zstd),
            _ => None,
        }
    }
}

/// The shuffle filter applied to each block before compression (numcodecs' `shuffle` values).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Shuffle {
    /// Blocks are compressed as they are.
    #[default]
    None = 0,
    /// Byte `j` of every element goes to plane `j` ([`super::shuffle::unshuffle`]).
    Byte = 1,
    /// Bit `b` of byte `j` of every element goes to plane `8j + b` ([`super::shuffle::bitunshuffle`]).
    Bit = 2,
}

/// Whether c-blosc 1.x splits a full block of `blocksize` bytes into `typesize` streams when the
/// dont-split flag is clear (both its decoder's rule and its forward-compatible encoder's).
pub const fn splits(typesize: usize, blocksize: usize) -> bool {
    typesize != 0 && typesize <= MAX_SPLITS && blocksize / typesize >= MIN_BUFFERSIZE
}

/// A parsed, checked chunk header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    codec_version: u8,
    flags: u8,
    typesize: usize,
    nbytes: usize,
    blocksize: usize,
    cbytes: usize,
}

/// The little-endian `u32` at `chunk[at..at + 4]`, if the chunk holds it.
pub(crate) fn read_u32(chunk: &[u8], at: usize) -> Option<usize> {
    let bytes = chunk.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize)
}

impl Header {
    /// Reads and checks the header of `chunk`, which may extend past the chunk's `cbytes`.
    ///
    /// - `Truncated`: `chunk` is shorter than the header or than `cbytes`.
    /// - `Unsupported`: a format version other than 2, the reserved flag bit, or (unless memcpyed)
    ///   a compressor code above 4 or a codec version other than 1.
    /// - `ChunkTooLarge`: `nbytes` or `blocksize` above c-blosc's limits.
    /// - `Malformed`: a zero typesize or blocksize, `cbytes` below the header, a blocksize above
    ///   `nbytes` (or above 1 when `nbytes` is 0), a memcpyed chunk whose `cbytes` is not
    ///   `nbytes + 16`, a block table that does not fit in `cbytes`, `nbytes` above
    ///   [`MAX_EXPANSION`] times what follows the header, or split blocks that are not a whole
    ///   number of elements.
    pub fn parse(chunk: &[u8]) -> Result<Self, Status> {
        let head = chunk.get(..HEADER_LEN).ok_or(Status::Truncated)?;
        let field = |at| read_u32(head, at).ok_or(Status::Truncated);
        let header = Self {
            codec_version: head[1],
            flags: head[2],
            typesize: head[3] as usize,
            nbytes: field(4)?,
            blocksize: field(8)?,
            cbytes: field(12)?,
        };
        if head[0] != VERSION || header.flags & FLAG_RESERVED != 0 {
            return Err(Status::Unsupported);
        }
        if header.typesize == 0 || header.blocksize == 0 || header.cbytes < HEADER_LEN {
            return Err(Status::Malformed);
        }
        if header.cbytes > chunk.len() {
            return Err(Status::Truncated);
        }
        if header.nbytes > MAX_BUFFERSIZE || header.blocksize > MAX_BLOCKSIZE {
            return Err(Status::ChunkTooLarge);
        }
        // c-blosc rejects blocks larger than the destination, which numcodecs sizes to `nbytes`;
        // its encoder writes blocksize 1 for an empty input.
        if header.blocksize > header.nbytes.max(1) {
            return Err(Status::Malformed);
        }
        if header.is_memcpyed() {
            return if header.nbytes + HEADER_LEN == header.cbytes { Ok(header) } else { Err(Status::Malformed) };
        }
        if header.compressor().is_none() || header.codec_version != CODEC_VERSION {
            return Err(Status::Unsupported);
        }
        let payload = header.cbytes - HEADER_LEN;
        if header.block_count() > payload / 4 || header.nbytes > payload.saturating_mul(MAX_EXPANSION) {
            return Err(Status::Malformed);
        }
        let has_full_block = header.nbytes >= header.blocksize;
        if has_full_block && header.splits_full_blocks() && !header.blocksize.is_multiple_of(header.typesize) {
            return Err(Status::Malformed);
        }
        Ok(header)
    }

    /// The raw flags byte.
    pub fn flags(&self) -> u8 {
        self.flags
    }

    /// Bytes per element (1..=255).
    pub fn typesize(&self) -> usize {
        self.typesize
    }

    /// Size of the decompressed data.
    pub fn nbytes(&self) -> usize {
        self.nbytes
    }

    /// Size of every block but a shorter last one.
    pub fn blocksize(&self) -> usize {
        self.blocksize
    }

    /// Size of the whole chunk, header included; bytes of the input past it are not read.
    pub fn cbytes(&self) -> usize {
        self.cbytes
    }

    /// Whether the data is stored as is after the header.
    pub fn is_memcpyed(&self) -> bool {
        self.flags & FLAG_MEMCPYED != 0
    }

    /// The compressor named by flag bits 5..=7, if c-blosc 1.x defines it (memcpyed chunks may
    /// carry any code).
    pub fn compressor(&self) -> Option<Compressor> {
        Compressor::from_code(self.flags >> COMPRESSOR_SHIFT)
    }

    /// The unshuffle every block needs after decompression, as c-blosc decides it: byte shuffle
    /// wins over bit shuffle, and does nothing for 1-byte elements. Memcpyed data is never shuffled.
    pub fn shuffle(&self) -> Shuffle {
        if self.is_memcpyed() {
            Shuffle::None
        } else if self.flags & FLAG_SHUFFLE != 0 && self.typesize > 1 {
            Shuffle::Byte
        } else if self.flags & FLAG_BITSHUFFLE != 0 {
            Shuffle::Bit
        } else {
            Shuffle::None
        }
    }

    /// Number of blocks: `nbytes / blocksize`, rounded up.
    pub fn block_count(&self) -> usize {
        self.nbytes.div_ceil(self.blocksize)
    }

    /// Where block `i` starts in the decompressed data.
    pub fn block_start(&self, i: usize) -> usize {
        i.saturating_mul(self.blocksize).min(self.nbytes)
    }

    /// Decompressed size of block `i`: `blocksize`, less for a leftover last block, 0 past the end.
    pub fn block_len(&self, i: usize) -> usize {
        (self.nbytes - self.block_start(i)).min(self.blocksize)
    }

    /// Whether block `i` is a leftover last block, shorter than `blocksize`.
    pub fn is_leftover(&self, i: usize) -> bool {
        let len = self.block_len(i);
        len != 0 && len < self.blocksize
    }

    /// Number of streams block `i` of a compressed (not memcpyed) chunk is stored as: `typesize`
    /// when the dont-split flag is clear, the block is not a leftover one and [`splits`] holds,
    /// else 1.
    pub fn streams_per_block(&self, i: usize) -> usize {
        if self.splits_full_blocks() && !self.is_leftover(i) { self.typesize } else { 1 }
    }

    /// Scratch bytes [`super::decompress`] and [`super::decompress_block`] need: one block when
    /// blocks are unshuffled after decompression, else none.
    pub fn scratch_len(&self) -> usize {
        if self.shuffle() == Shuffle::None { 0 } else { self.block_len(0) }
    }

    fn splits_full_blocks(&self) -> bool {
        self.flags & FLAG_DONT_SPLIT == 0 && splits(self.typesize, self.blocksize)
    }
}

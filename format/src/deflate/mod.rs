//! Deflate (RFC 1951), raw or wrapped in zlib (RFC 1950) or gzip (RFC 1952).
//!
//! [`compress`](fn@compress) turns one chunk of at most [`MAX_CHUNK_SIZE`] bytes into one stream at a level
//! from 0 (Huffman-coded literals only) to [`MAX_LEVEL`], deterministically, [`PART_SIZE`] bytes at a
//! time: a longer chunk's stream is its parts' blocks one after another, each part's matches
//! within it. [`decompress`] and
//! [`decompressed_size`] read any valid stream (stored, fixed and dynamic blocks, matches
//! anywhere back in the output) and never panic on invalid ones.
//!
//! A raw stream must end in the byte holding its final block's last bit, and a zlib stream right
//! after its Adler-32; bytes after either are `Malformed`. A gzip input may hold several members,
//! decoded one after another like gunzip does, but nothing else after them.
//!
//! The block-level code is shared with [`gdeflate`](crate::gdeflate): blocks are written through a
//! [`block::BitSink`] and their headers read through an [`inflate::BitSource`].

pub mod block;
pub mod compress;
pub mod estimate;
pub mod huffman;
pub mod inflate;
pub mod tables;
pub mod wrapper;

pub use compress::CompressScratch;

use crate::Status;
use block::BitWriter;
use huffman::{DIST_TABLE, LITLEN_TABLE, PRECODE_TABLE};
use inflate::{CountOut, SliceOut};

/// The container around the deflate stream.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Wrapper {
    /// The bare deflate stream.
    #[default]
    Raw = 0,
    /// 2-byte zlib header, then the stream, then the big-endian Adler-32 of the data.
    Zlib = 1,
    /// 10-byte gzip header, then the stream, then the CRC-32 and size of the data.
    Gzip = 2,
}

impl Wrapper {
    /// The wrapper with id `id`, if there is one.
    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(Self::Raw),
            1 => Some(Self::Zlib),
            2 => Some(Self::Gzip),
            _ => None,
        }
    }

    /// Bytes the wrapper adds around the stream (as [`compress`](fn@compress) writes it).
    pub const fn overhead(self) -> usize {
        match self {
            Self::Raw => 0,
            Self::Zlib => 2 + 4,
            Self::Gzip => 10 + 8,
        }
    }
}

/// Highest compression level: 0 entropy coding only, 1 fast greedy, 2–3 medium, 4–5 high ratio.
pub const MAX_LEVEL: u8 = 5;
/// The default level.
pub const DEFAULT_LEVEL: u8 = 1;
/// Largest input [`compress`](fn@compress) accepts (16 MiB, as LZ4's).
pub const MAX_CHUNK_SIZE: usize = 1 << 24;
/// Bytes compressed at a time, matches within them: the most a u16 indexes in the scratch, and
/// nvCOMP's recommended chunk size.
pub const PART_SIZE: usize = 1 << 16;
/// Largest output [`decompressed_size`] reports (beyond it, `ChunkTooLarge`).
pub const MAX_DECOMPRESSED_CHUNK_SIZE: usize = 1 << 24;

/// Largest stream [`compress`](fn@compress) writes for `len` input bytes: every block stored. A block holds at
/// least 4096 tokens (so bytes) unless it is its part's last, a stored block at most 65535 bytes, and
/// each stored block costs at most 3 + 7 + 32 bits beyond its bytes.
pub const fn max_compressed_size(len: usize, wrapper: Wrapper) -> usize {
    len + 6 * (len / 4096 + len / 65535 + extra_parts(len) + 3) + wrapper.overhead()
}

/// Parts of a `len`-byte input after the first.
pub const fn extra_parts(len: usize) -> usize {
    len.saturating_sub(1) / PART_SIZE
}

/// Largest size `compressed_len` bytes can decode to (a 258-byte match costs at least 2 bits),
/// capped at [`MAX_DECOMPRESSED_CHUNK_SIZE`].
pub const fn max_decompressed_size(compressed_len: usize) -> usize {
    let bound = compressed_len.saturating_mul(4 * 258);
    if bound < MAX_DECOMPRESSED_CHUNK_SIZE { bound } else { MAX_DECOMPRESSED_CHUNK_SIZE }
}

/// Decode tables for one stream, 6.8 KiB. Any contents are a valid starting state (the tables
/// are built before they are read), so it may be reused as is or allocated zeroed (e.g.
/// `Box::<DecodeTables>::new_zeroed()`).
///
/// While a dynamic block's header is read, the tables of the block before are no longer needed,
/// so the header's state lives in them: the precode's table in the first entries of `litlen`
/// ([`DecodeTables::precode`]), the code lengths read in `dist`, one an entry
/// ([`DecodeTables::lens_and_precode`]). That keeps a GPU warp's tables small enough for 32 warps an SM.
#[repr(C)]
pub struct DecodeTables {
    /// The literal/length code's table ([`huffman::LITLEN_ROOT`] root bits).
    pub litlen: [u32; LITLEN_TABLE],
    /// The distance code's ([`huffman::DIST_ROOT`] root bits).
    pub dist: [u32; DIST_TABLE],
}

/// Code lengths a dynamic header may hold: 288 literal/length and 32 distance codes.
pub const MAX_LENS: usize = 320;
const _: () = assert!(MAX_LENS <= DIST_TABLE && PRECODE_TABLE <= LITLEN_TABLE);

impl DecodeTables {
    /// A dynamic header's precode table ([`huffman::PRECODE_ROOT`] root bits), in `litlen`.
    pub fn precode(&mut self) -> &mut [u32] {
        &mut self.litlen[..PRECODE_TABLE]
    }

    /// The code lengths being read from a dynamic header, in `dist`, and the precode's table.
    pub fn lens_and_precode(&mut self) -> (&mut [u32], &[u32]) {
        (&mut self.dist[..MAX_LENS], &self.litlen[..PRECODE_TABLE])
    }
}

/// Compresses `input` (at most [`MAX_CHUNK_SIZE`] bytes) at `level` (0..=[`MAX_LEVEL`]; higher is
/// read as [`MAX_LEVEL`]) into `out` in `wrapper`; returns the bytes written. Never more than
/// [`max_compressed_size`]; `OutputTooSmall` if `out` is shorter than needed.
pub fn compress(
    input: &[u8],
    level: u8,
    wrapper: Wrapper,
    scratch: &mut CompressScratch,
    out: &mut [u8],
) -> Result<usize, Status> {
    if input.len() > MAX_CHUNK_SIZE {
        return Err(Status::ChunkTooLarge);
    }
    let level = level.min(MAX_LEVEL);
    let mut w = BitWriter::new(out, 0);
    match wrapper {
        Wrapper::Raw => {}
        Wrapper::Zlib => w.append(&wrapper::zlib_header(level)),
        Wrapper::Gzip => w.append(&wrapper::GZIP_HEADER),
    }
    compress::compress_blocks(input, level, scratch, &mut w);
    match wrapper {
        Wrapper::Raw => {}
        Wrapper::Zlib => w.append(&crate::adler32::adler32(input).to_be_bytes()),
        Wrapper::Gzip => {
            w.append(&crate::crc32::crc32(input).to_le_bytes());
            w.append(&(input.len() as u32).to_le_bytes());
        }
    }
    w.finish()
}

/// Decompresses a whole stream in `wrapper` into `out`; returns the bytes written.
pub fn decompress(input: &[u8], wrapper: Wrapper, out: &mut [u8], tables: &mut DecodeTables) -> Result<usize, Status> {
    let mut sink = SliceOut { out, len: 0 };
    wrapper::decode(input, wrapper, &mut sink, tables)?;
    Ok(sink.len)
}

/// The size a stream decodes to, found by decoding it without writing: the same checks as
/// [`decompress`] (distances included) except the data checksums, which need the data (gzip's
/// stored size is still checked). Above [`MAX_DECOMPRESSED_CHUNK_SIZE`]: `ChunkTooLarge`.
pub fn decompressed_size(input: &[u8], wrapper: Wrapper, tables: &mut DecodeTables) -> Result<usize, Status> {
    let mut count = CountOut { len: 0, limit: MAX_DECOMPRESSED_CHUNK_SIZE };
    wrapper::decode(input, wrapper, &mut count, tables)?;
    Ok(count.len)
}

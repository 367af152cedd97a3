//! Zstandard (RFC 8878): frames decoded in full (the CPU path and the GPU kernels' oracle) and
//! written by a fast parse with Huffman literals and FSE sequences.
//!
//! The decoder is split in the phases the GPU kernels share out: frame and block headers
//! ([`frame`]), the literals section (its Huffman streams decoded one per lane, [`huffman`]), the
//! sequences section (FSE tables and sequences, [`sequences`], decoded a batch at a time by one
//! lane while the warp writes the batch before), and the execution of the sequences into the
//! output ([`decode`]).
//!
//! [`decompress`] reads any frame libzstd writes, without a dictionary: every frame header option,
//! skippable frames, raw, RLE and compressed blocks, all literal and sequence modes, and the
//! content checksum. It never panics on invalid input; its statuses:
//! - `Truncated`: the input ends inside a frame (or holds no frame at all);
//! - `Malformed`: anything inconsistent inside a frame, an unknown magic number, a block over
//!   the frame's block size limit, a content size the frame does not decode to;
//! - `BadOffset`: a match reaching back before the frame's start, beyond the window, or 0;
//! - `OutputTooSmall`: the output (or a frame's stated content size) does not fit `out`;
//! - `DictionaryRequired`: a frame names a dictionary; `BadChecksum`: the XXH64 does not match.

pub mod bits;
pub mod check;
pub mod decode;
pub mod encode;
pub mod frame;
pub mod fse;
pub mod huffman;
pub mod sequences;
pub mod tables;
pub mod xxh64;

use crate::Status;
use huffman::{HUFFMAN_CELLS, WEIGHT_CELLS};
use sequences::{LENGTH_CELLS, OFFSET_CELLS};

/// The magic number opening a Zstandard frame (little-endian on the wire).
pub const MAGIC: u32 = 0xFD2F_B528;

/// Largest chunk the batched API decodes to (the other codecs' limit as well).
pub const MAX_DECOMPRESSED_CHUNK_SIZE: usize = 1 << 24;

/// Decodes every frame of `input` (Zstandard and skippable frames, back to back) into `out`;
/// returns the decoded size.
pub fn decompress(input: &[u8], out: &mut [u8], tables: &mut DecodeTables) -> Result<usize, Status> {
    decode::decode_frames::<true>(input, out, tables)
}

/// Largest size `compressed_len` bytes of frames can decode to (a guard against lying headers):
/// no block regenerates more than a 4-byte RLE block's 128 KiB, capped at
/// [`MAX_DECOMPRESSED_CHUNK_SIZE`].
pub const fn max_decompressed_size(compressed_len: usize) -> usize {
    let bound = compressed_len.saturating_mul((128 << 10) / 4);
    if bound < MAX_DECOMPRESSED_CHUNK_SIZE { bound } else { MAX_DECOMPRESSED_CHUNK_SIZE }
}

/// The size `input`'s frames decode to: their content sizes where the headers state them (the
/// blocks only walked), else found by decoding the sequences without writing, with every check
/// of [`decompress`] but the checksum and the Huffman streams. Above
/// [`MAX_DECOMPRESSED_CHUNK_SIZE`]: `ChunkTooLarge`; above what the bytes can hold
/// ([`max_decompressed_size`]): `Malformed`.
pub fn decompressed_size(input: &[u8], tables: &mut DecodeTables) -> Result<usize, Status> {
    let size = decode::decode_frames::<false>(input, &mut [], tables)?;
    crate::declared_size(size, max_decompressed_size(input.len()))
}

/// The tables a frame's decoding builds and keeps between blocks (for the treeless and repeat
/// modes): the literals' and the sequences'. Any bytes are a valid starting state (each frame
/// starts by forgetting its tables), so they may be reused as they are or allocated zeroed.
#[repr(C)]
pub struct DecodeTables {
    /// The literals' Huffman table, kept for treeless literals.
    pub literals: HuffmanTables,
    /// The sequences' FSE tables, kept for repeat mode.
    pub sequences: SequenceTables,
}

impl DecodeTables {
    /// Forgets the tables of the previous frame.
    pub fn start_frame(&mut self) {
        self.literals.present = 0;
        self.sequences.repeatable = 0;
    }
}

/// The literals' Huffman decode table (see [`huffman`]) and what reading a tree takes, 4868 bytes.
#[repr(C)]
pub struct HuffmanTables {
    /// The decode table.
    pub cells: [u16; HUFFMAN_CELLS],
    /// The FSE table of the weights.
    pub weight_table: [u32; WEIGHT_CELLS],
    /// A weight distribution being read.
    pub normalized: [i16; 64],
    /// The state counters of the weight table being built.
    pub next: [u16; 64],
    /// Every symbol's weight, as the tree description gives them.
    pub weights: [u8; 256],
    /// The decode table's log.
    pub log: u8,
    /// Whether this frame has a decode table for treeless literals (nonzero: yes).
    pub present: u8,
    _pad: [u8; 2],
}

/// The sequences' three FSE decode tables (see [`fse`]) and what building them takes, 5384
/// bytes (a whole number of 8-byte words).
#[repr(C)]
pub struct SequenceTables {
    /// The literal-length decode table.
    pub literal_lengths: [u32; LENGTH_CELLS],
    /// The match-length decode table.
    pub match_lengths: [u32; LENGTH_CELLS],
    /// The offset decode table.
    pub offsets: [u32; OFFSET_CELLS],
    /// A table description being read.
    pub normalized: [i16; 64],
    /// The state counters of a table being built.
    pub next: [u16; 64],
    /// The accuracy logs of the literal-length, offset and match-length tables.
    pub logs: [u8; 3],
    /// Whether this frame has sequence tables for repeat mode (nonzero: yes).
    pub repeatable: u8,
    _pad: [u8; 4],
}

#[cfg(test)]
mod tests {
    #[test]
    fn tables_are_compact() {
        use core::mem::size_of;
        assert_eq!((size_of::<super::HuffmanTables>(), size_of::<super::SequenceTables>()), (4868, 5384));
    }
}

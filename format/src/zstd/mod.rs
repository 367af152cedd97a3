//! Zstandard (RFC 8878): frames decoded in full (the CPU path and the GPU kernels' oracle) and
//! written by a fast parse with Huffman literals and FSE sequences.
//!
//! The decoder is split in the phases the GPU kernels share out among a warp's lanes: frame and
//! block headers, the literals section (its Huffman streams decoded one per lane), the sequences
//! section (FSE tables built in shared memory, sequences decoded), and the execution of the
//! sequences into the output.

pub mod encode;
pub mod fse;
pub mod tables;

use crate::Status;

/// The magic number opening a Zstandard frame (little-endian on the wire).
pub const MAGIC: u32 = 0xFD2F_B528;

/// Largest chunk the batched API decodes to (the other codecs' limit as well).
pub const MAX_DECOMPRESSED_CHUNK_SIZE: usize = 1 << 24;

/// Decodes every frame of `input` (Zstandard and skippable frames, back to back) into `out`;
/// returns the decoded size.
pub fn decompress(input: &[u8], out: &mut [u8], tables: &mut DecodeTables) -> Result<usize, Status> {
    let _ = (input, out, tables);
    Err(Status::Unsupported)
}

/// The size `input`'s frames decode to: their content sizes where the headers state them, else
/// found by walking (and decoding) the blocks.
pub fn decompressed_size(input: &[u8], tables: &mut DecodeTables) -> Result<usize, Status> {
    let _ = (input, tables);
    Err(Status::Unsupported)
}

/// The tables a frame's decoding keeps between blocks (Huffman and FSE tables, for the repeat
/// modes). Any bytes are a valid starting state.
#[repr(C)]
pub struct DecodeTables {
    _todo: [u8; 1],
}

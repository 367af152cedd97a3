//! Writing chunks with LZ4 inside, laid out as c-blosc 1.x lays them out at numcodecs' default
//! (`Blosc(cname='lz4', clevel=5, blocksize=0)`): the same block size, split rule, raw streams and
//! memcpyed fallback. The LZ4 streams are ferrocomp's ([`lz4::compress`]), not liblz4's, so the
//! bytes differ from c-blosc's but decode with it.

use super::header::{
    CODEC_VERSION, COMPRESSOR_SHIFT, Compressor, FLAG_BITSHUFFLE, FLAG_DONT_SPLIT, FLAG_MEMCPYED, FLAG_SHUFFLE,
    HEADER_LEN, MAX_BUFFERSIZE, MAX_TYPESIZE, MIN_BUFFERSIZE, Shuffle, VERSION, splits,
};
use super::shuffle::{bitshuffle, shuffle as byte_shuffle};
use crate::lz4::{self, HASH_ENTRIES};
use crate::{DataType, Status};

/// c-blosc's L1 cache size, the unit of its block sizes.
const L1: usize = 32 * 1024;

/// The block size c-blosc 1.x picks for lz4 at clevel 5: the whole input below 32 KiB, else
/// 128 KiB; when blocks of that size would be split (typesize <= 16 and at least 128 elements per
/// stream) that many bytes per stream instead (at most 256 KiB each), clamped to 64 KiB..=1 MiB;
/// then at most the input, rounded down to whole elements. 1 for inputs shorter than one element.
pub fn compute_blocksize(nbytes: usize, typesize: usize) -> usize {
    let typesize = effective_typesize(typesize);
    if nbytes < typesize {
        return 1;
    }
    let mut blocksize = if nbytes >= L1 { 4 * L1 } else { nbytes };
    if splits(typesize, blocksize) {
        blocksize = (blocksize.min(1 << 18) * typesize).clamp(1 << 16, 1 << 20);
    }
    blocksize = blocksize.min(nbytes);
    if blocksize > typesize { blocksize - blocksize % typesize } else { blocksize }
}

/// Largest chunk [`compress`] writes for `len` input bytes: a memcpyed chunk.
pub const fn max_compressed_size(len: usize) -> usize {
    len + HEADER_LEN
}

/// Compresses `input`, made of `typesize`-byte elements (outside 1..=255 read as 1, as c-blosc
/// does above 255), into one chunk in `out`; returns its size. Each block is shuffled as
/// `shuffle` says into `tmp`, which needs [`compute_blocksize`] bytes unless `shuffle` is
/// `Shuffle::None`, then stored as LZ4 streams (one per byte of the element when c-blosc would
/// split), each stream raw where LZ4 does not shrink it. Inputs under 128 bytes, and inputs whose
/// chunk would exceed [`max_compressed_size`], are stored memcpyed.
///
/// `OutputTooSmall` if `out` is shorter than [`max_compressed_size`] or `tmp` than a block;
/// `ChunkTooLarge` above c-blosc's 2 GiB limit.
pub fn compress(
    input: &[u8],
    typesize: usize,
    shuffle: Shuffle,
    out: &mut [u8],
    lz4_table: &mut [u16; HASH_ENTRIES],
    tmp: &mut [u8],
) -> Result<usize, Status> {
    let n = input.len();
    if n > MAX_BUFFERSIZE {
        return Err(Status::ChunkTooLarge);
    }
    let out = out.get_mut(..max_compressed_size(n)).ok_or(Status::OutputTooSmall)?;
    let typesize = effective_typesize(typesize);
    let blocksize = compute_blocksize(n, typesize);
    let split = splits(typesize, blocksize);
    let blocks = Blocks { typesize, blocksize, split, shuffle };
    let compressed = if n >= MIN_BUFFERSIZE { blocks.compress(input, out, lz4_table, tmp)? } else { None };
    if compressed.is_none() {
        out[HEADER_LEN..].copy_from_slice(input);
    }
    let header = lz4_header(shuffle, typesize, n, blocksize, compressed);
    out[..HEADER_LEN].copy_from_slice(&header);
    Ok(compressed.unwrap_or(n + HEADER_LEN))
}

/// The header of a chunk of `n` bytes this encoder writes (LZ4 inside): `cbytes` as laid out,
/// or `None` for a memcpyed chunk. The GPU encoder writes the same.
pub fn lz4_header(
    shuffle: Shuffle,
    typesize: usize,
    n: usize,
    blocksize: usize,
    cbytes: Option<usize>,
) -> [u8; HEADER_LEN] {
    let mut flags = (Compressor::Lz4 as u8) << COMPRESSOR_SHIFT;
    flags |= match shuffle {
        Shuffle::None => 0,
        Shuffle::Byte => FLAG_SHUFFLE,
        Shuffle::Bit => FLAG_BITSHUFFLE,
    };
    if !splits(typesize, blocksize) {
        flags |= FLAG_DONT_SPLIT;
    }
    if cbytes.is_none() {
        flags |= FLAG_MEMCPYED;
    }
    let mut header = [0; HEADER_LEN];
    header[..4].copy_from_slice(&[VERSION, CODEC_VERSION, flags, typesize as u8]);
    for (at, value) in [(4, n), (8, blocksize), (12, cbytes.unwrap_or(n + HEADER_LEN))] {
        header[at..at + 4].copy_from_slice(&(value as u32).to_le_bytes());
    }
    header
}

fn effective_typesize(typesize: usize) -> usize {
    if (1..=MAX_TYPESIZE).contains(&typesize) { typesize } else { 1 }
}

/// How the blocks of one chunk are cut and filtered.
struct Blocks {
    typesize: usize,
    blocksize: usize,
    split: bool,
    shuffle: Shuffle,
}

impl Blocks {
    /// Writes the block table and every block's streams after the header; returns the chunk size,
    /// or `None` where the chunk would not fit in `out` (then it is stored memcpyed).
    fn compress(
        &self,
        input: &[u8],
        out: &mut [u8],
        table: &mut [u16; HASH_ENTRIES],
        tmp: &mut [u8],
    ) -> Result<Option<usize>, Status> {
        let nblocks = input.len().div_ceil(self.blocksize);
        let mut at = HEADER_LEN + 4 * nblocks;
        if at > out.len() {
            return Ok(None);
        }
        for (i, block) in input.chunks(self.blocksize).enumerate() {
            out[HEADER_LEN + 4 * i..HEADER_LEN + 4 * i + 4].copy_from_slice(&(at as u32).to_le_bytes());
            let data: &[u8] = if self.shuffle == Shuffle::None {
                block
            } else {
                let shuffled = tmp.get_mut(..block.len()).ok_or(Status::OutputTooSmall)?;
                let filter = if self.shuffle == Shuffle::Bit { bitshuffle } else { byte_shuffle };
                filter(block, shuffled, self.typesize)?;
                shuffled
            };
            let leftover = block.len() < self.blocksize;
            let streams = if self.split && !leftover { self.typesize } else { 1 };
            for stream in data.chunks(block.len() / streams) {
                match write_stream(stream, out, at, table)? {
                    Some(end) => at = end,
                    None => return Ok(None),
                }
            }
        }
        Ok(Some(at))
    }
}

/// Writes `stream` at `out[at..]` as its `u32` stored size and its LZ4 block, or its bytes as they
/// are when LZ4 does not make it smaller; returns where it ends, or `None` if it does not fit.
fn write_stream(
    stream: &[u8],
    out: &mut [u8],
    at: usize,
    table: &mut [u16; HASH_ENTRIES],
) -> Result<Option<usize>, Status> {
    let body = at + 4;
    let room = out.len().saturating_sub(body);
    if room == 0 {
        return Ok(None);
    }
    let limit = room.min(stream.len());
    let stored = match lz4::compress(stream, DataType::Char, table, &mut out[body..body + limit]) {
        Ok(len) if len < stream.len() => len,
        Ok(_) | Err(Status::OutputTooSmall) if stream.len() <= room => {
            out[body..body + stream.len()].copy_from_slice(stream);
            stream.len()
        }
        Ok(_) | Err(Status::OutputTooSmall) => return Ok(None),
        Err(status) => return Err(status),
    };
    out[at..body].copy_from_slice(&(stored as u32).to_le_bytes());
    Ok(Some(body + stored))
}

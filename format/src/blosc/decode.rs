//! Decoding a chunk block by block: each block's streams into scratch (or straight into the output
//! when nothing is to be unshuffled), then the unshuffle into the output.

use super::blosclz;
use super::header::{Compressor, HEADER_LEN, Header, Shuffle};
use super::shuffle::{bitunshuffle, unshuffle};
use super::streams::Stream;
use crate::Status;
use crate::deflate::{self, Wrapper};
use crate::{lz4, snappy, zstd};

/// The tables the table-driven inner codecs build: zlib's and zstd's. Any bytes, zeros included,
/// are a valid starting state for both, so they may be allocated zeroed and reused as they are.
#[repr(C)]
pub struct StreamTables {
    /// For zlib streams.
    pub zlib: deflate::DecodeTables,
    /// For zstd frames.
    pub zstd: zstd::DecodeTables,
}

/// Decodes block `i` of `chunk` (whose header is `header`) into `dest[..header.block_len(i)]`;
/// returns the block's length. `tmp` holds the block before it is unshuffled: it needs
/// [`Header::scratch_len`] bytes. `tables` is used for zlib and zstd streams only.
///
/// `OutputTooSmall` if `dest` or `tmp` is too short; `Unsupported` for an unknown compressor; any of the
/// [`Header::block_streams`] statuses; the inner codec's status for a corrupt stream, except that
/// a stream decoding to more or fewer bytes than the block layout says is `Malformed`.
pub fn decompress_block(
    chunk: &[u8],
    header: &Header,
    i: usize,
    dest: &mut [u8],
    tmp: &mut [u8],
    tables: &mut StreamTables,
) -> Result<usize, Status> {
    decode_block(chunk, header, i, dest, tmp, tables, &mut |_, _, _| None)
}

/// A decoder offered each compressed stream first, with its compressor (the host's CPU libraries,
/// say): the decoded size, or None to leave the stream to the format crate's decoder, which then
/// decides its status.
pub type LibraryFirst<'a> = &'a mut dyn FnMut(Compressor, &[u8], &mut [u8]) -> Option<usize>;

fn decode_block(
    chunk: &[u8],
    header: &Header,
    i: usize,
    dest: &mut [u8],
    tmp: &mut [u8],
    tables: &mut StreamTables,
    library_first: LibraryFirst<'_>,
) -> Result<usize, Status> {
    let streams = header.block_streams(chunk, i)?;
    let len = header.block_len(i);
    let dest = dest.get_mut(..len).ok_or(Status::OutputTooSmall)?;
    // Memcpyed blocks are raw and need no compressor, whatever code the flags carry.
    let compressor = header.compressor();
    if compressor.is_none() && !header.is_memcpyed() {
        return Err(Status::Unsupported);
    }
    let shuffle = header.shuffle();
    let decoded = match shuffle {
        Shuffle::None => &mut *dest,
        Shuffle::Byte | Shuffle::Bit => tmp.get_mut(..len).ok_or(Status::OutputTooSmall)?,
    };
    for stream in streams.as_slice() {
        let out =
            decoded.get_mut(stream.decoded_at..stream.decoded_at + stream.decoded_len).ok_or(Status::Malformed)?;
        decode_stream(compressor, stream, chunk, out, tables, library_first)?;
    }
    match shuffle {
        Shuffle::None => {}
        Shuffle::Byte => unshuffle(&tmp[..len], dest, header.typesize())?,
        Shuffle::Bit => bitunshuffle(&tmp[..len], dest, header.typesize())?,
    }
    Ok(len)
}

/// Decodes one stream of a block into `out`, which is exactly its decoded length; a stream that
/// is not raw needs a supported `compressor`.
fn decode_stream(
    compressor: Option<Compressor>,
    stream: &Stream,
    chunk: &[u8],
    out: &mut [u8],
    tables: &mut StreamTables,
    library_first: LibraryFirst<'_>,
) -> Result<(), Status> {
    let input = stream.bytes(chunk)?;
    if stream.is_raw() {
        out.copy_from_slice(input);
        return Ok(());
    }
    let Some(compressor) = compressor else { return Err(Status::Unsupported) };
    if let Some(n) = library_first(compressor, input, out) {
        return if n == out.len() { Ok(()) } else { Err(Status::Malformed) };
    }
    let decoded = match compressor {
        Compressor::BloscLz => blosclz::decompress(input, out),
        Compressor::Lz4 => lz4::decompress(input, out),
        Compressor::Snappy => snappy::decompress(input, out),
        Compressor::Zlib => deflate::decompress(input, Wrapper::Zlib, out, &mut tables.zlib),
        Compressor::Zstd => zstd::decompress(input, out, &mut tables.zstd),
    };
    match decoded {
        Ok(n) if n == out.len() => Ok(()),
        Ok(_) | Err(Status::OutputTooSmall) => Err(Status::Malformed),
        Err(status) => Err(status),
    }
}

/// Decompresses a whole chunk into `out[..nbytes]`; returns `nbytes`. `out` is the caller's limit:
/// shorter than `nbytes` is `OutputTooSmall`. `tmp` is one block of scratch
/// ([`Header::scratch_len`]), `tables` is used for zlib and zstd chunks only. Statuses as
/// [`Header::parse`] and [`decompress_block`].
pub fn decompress(chunk: &[u8], out: &mut [u8], tmp: &mut [u8], tables: &mut StreamTables) -> Result<usize, Status> {
    decompress_with(chunk, out, tmp, tables, &mut |_, _, _| None)
}

/// [`decompress`], with each compressed stream offered to `library_first` before the format crate's decoder.
pub fn decompress_with(
    chunk: &[u8],
    out: &mut [u8],
    tmp: &mut [u8],
    tables: &mut StreamTables,
    library_first: LibraryFirst<'_>,
) -> Result<usize, Status> {
    let header = Header::parse(chunk)?;
    let n = header.nbytes();
    let out = out.get_mut(..n).ok_or(Status::OutputTooSmall)?;
    if header.is_memcpyed() {
        out.copy_from_slice(&chunk[HEADER_LEN..HEADER_LEN + n]);
        return Ok(n);
    }
    for i in 0..header.block_count() {
        decode_block(chunk, &header, i, &mut out[header.block_start(i)..], tmp, tables, library_first)?;
    }
    Ok(n)
}

/// The size `chunk` decompresses to, from its header, once [`Header::parse`] has checked it.
pub fn decompressed_size(chunk: &[u8]) -> Result<usize, Status> {
    Header::parse(chunk).map(|header| header.nbytes())
}

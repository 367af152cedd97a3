//! The zlib (RFC 1950) and gzip (RFC 1952) wrappers around a deflate stream.

use super::inflate::{Decoded, Output, inflate};
use super::{DecodeTables, Wrapper};
use crate::Status;

/// gzip's fixed header as we write it: no flags, mtime 0, XFL 0, OS 255 (unknown).
pub const GZIP_HEADER: [u8; 10] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 255];

/// zlib's two header bytes: deflate with a 32 KiB window, FLEVEL from our `level`, no dictionary.
pub const fn zlib_header(level: u8) -> [u8; 2] {
    let flevel: u16 = match level {
        0 | 1 => 0,
        2 | 3 => 1,
        4 => 2,
        _ => 3,
    };
    let head = 0x7800 | (flevel << 6);
    let head = head + 31 - head % 31;
    [(head >> 8) as u8, head as u8]
}

/// Decodes a whole stream in `wrapper` into `out`, checking headers, trailers and checksums
/// (checksums only where `out` keeps the bytes). Nothing may follow the stream.
pub fn decode<O: Output>(input: &[u8], wrapper: Wrapper, out: &mut O, t: &mut DecodeTables) -> Result<(), Status> {
    decode_with(input, wrapper, out, |stream, out| inflate(stream, out, t))
}

/// [`decode`] with another decoder of the raw streams: `inflate(stream, out)` decodes the raw
/// deflate stream at the start of `stream` after `out`'s bytes and returns the input bytes it
/// spans (the GPU's warp decoder runs the wrappers this way).
pub fn decode_with<O: Decoded>(
    input: &[u8],
    wrapper: Wrapper,
    out: &mut O,
    mut inflate: impl FnMut(&[u8], &mut O) -> Result<usize, Status>,
) -> Result<(), Status> {
    match wrapper {
        Wrapper::Raw => {
            if inflate(input, out)? != input.len() {
                return Err(Status::Malformed);
            }
        }
        Wrapper::Zlib => {
            let &[cmf, flg] = input.get(..2).ok_or(Status::Truncated)? else { return Err(Status::Truncated) };
            let check = ((cmf as u16) << 8 | flg as u16) % 31;
            if cmf & 15 != 8 || cmf >> 4 > 7 || check != 0 || flg & 0x20 != 0 {
                return Err(Status::Malformed);
            }
            let end = 2 + inflate(&input[2..], out)?;
            let trailer = input.get(end..end + 4).ok_or(Status::Truncated)?;
            if end + 4 != input.len() {
                return Err(Status::Malformed);
            }
            let stored = u32::from_be_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
            if out.adler32(0).is_some_and(|sum| sum != stored) {
                return Err(Status::BadChecksum);
            }
        }
        Wrapper::Gzip => {
            // Members one after another, as gunzip reads them.
            let mut at = 0;
            loop {
                at = gzip_member_start(input, at)?;
                let start = out.size();
                at += inflate(&input[at..], out)?;
                let trailer = input.get(at..at + 8).ok_or(Status::Truncated)?;
                let crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
                let size = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
                if out.crc32(start).is_some_and(|c| c != crc) || size != (out.size() - start) as u32 {
                    return Err(Status::BadChecksum);
                }
                at += 8;
                if at == input.len() {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// Parses the gzip member header at `at`; returns where its deflate data starts.
fn gzip_member_start(input: &[u8], at: usize) -> Result<usize, Status> {
    let header = input.get(at..).unwrap_or(&[]);
    if header.iter().zip([0x1F, 0x8B, 8]).any(|(&b, expected)| b != expected) {
        return Err(Status::Malformed);
    }
    let fixed = header.get(..10).ok_or(Status::Truncated)?;
    if fixed[3] & 0xE0 != 0 {
        return Err(Status::Malformed);
    }
    let flags = fixed[3];
    let mut pos = 10;
    if flags & 4 != 0 {
        let xlen = header.get(pos..pos + 2).ok_or(Status::Truncated)?;
        pos += 2 + u16::from_le_bytes([xlen[0], xlen[1]]) as usize;
    }
    for flag in [8, 16] {
        if flags & flag != 0 {
            let rest = header.get(pos..).unwrap_or(&[]);
            pos += 1 + rest.iter().position(|&b| b == 0).ok_or(Status::Truncated)?;
        }
    }
    if flags & 2 != 0 {
        pos += 2;
    }
    if pos > header.len() {
        return Err(Status::Truncated);
    }
    Ok(at + pos)
}

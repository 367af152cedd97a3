//! BloscLZ streams (c-blosc's `blosclz.c`, a FastLZ level-2 descendant): a sequence of elements,
//! each starting with a control byte `ctrl`.
//!
//! - The first byte is always a literal run; its top three bits are a marker and are ignored.
//! - `ctrl < 32`: a literal run of `ctrl + 1` bytes follows.
//! - `ctrl >= 32`: a match. Its length is `(ctrl >> 5) + 2`; when `ctrl >> 5` is 7, bytes follow
//!   that add to it, each 255 meaning another byte follows. Then one byte `d`: the distance is
//!   `(ctrl & 31) * 256 + d + 1`, except when `ctrl & 31 == 31` and `d == 255`, where a big-endian
//!   `u16` follows and the distance is that plus 8192.
//!
//! A match must be followed by another element: c-blosc's decoder stops before copying a match
//! that ends the input, so such a stream never decodes to its full size.

use crate::Status;

/// Distances up to this are coded in the control and distance bytes; farther ones take a `u16`.
const MAX_DISTANCE: usize = 8191;

/// Decompresses one BloscLZ stream into `out`; returns the decompressed size. `Truncated` if an
/// element is cut short, `OutputTooSmall` if it decodes past `out`, `BadOffset` for a match
/// reaching before the start, `Malformed` for a match that ends the stream.
pub fn decompress(input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
    let mut reader = Bytes { input, at: 0 };
    let mut ctrl = (reader.next()? & 31) as usize;
    let mut written = 0;
    loop {
        if ctrl < 32 {
            let len = ctrl + 1;
            let dst = out.get_mut(written..written + len).ok_or(Status::OutputTooSmall)?;
            dst.copy_from_slice(reader.take(len)?);
            written += len;
        } else {
            let mut len = (ctrl >> 5) + 2;
            if ctrl >> 5 == 7 {
                loop {
                    let more = reader.next()?;
                    len += more as usize;
                    if more != 255 {
                        break;
                    }
                }
            }
            let low = reader.next()? as usize;
            let mut distance = ((ctrl & 31) << 8) + low + 1;
            if low == 255 && ctrl & 31 == 31 {
                let far = reader.take(2)?;
                distance = ((far[0] as usize) << 8 | far[1] as usize) + MAX_DISTANCE + 1;
            }
            if len > out.len() - written {
                return Err(Status::OutputTooSmall);
            }
            if distance > written {
                return Err(Status::BadOffset);
            }
            if reader.at == input.len() {
                return Err(Status::Malformed);
            }
            copy_match(out, written, distance, len);
            written += len;
        }
        match input.get(reader.at) {
            Some(&next) => {
                ctrl = next as usize;
                reader.at += 1;
            }
            None => return Ok(written),
        }
    }
}

/// A cursor over the input whose reads fail with `Truncated` at its end.
struct Bytes<'a> {
    input: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    fn next(&mut self) -> Result<u8, Status> {
        let byte = *self.input.get(self.at).ok_or(Status::Truncated)?;
        self.at += 1;
        Ok(byte)
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], Status> {
        let bytes = self.input.get(self.at..self.at + len).ok_or(Status::Truncated)?;
        self.at += len;
        Ok(bytes)
    }
}

/// Copies `len` bytes from `distance` back to `out[at..]`, byte by byte in effect: an overlapping
/// source repeats its pattern. The caller has checked `distance <= at` and `at + len <= out.len()`.
fn copy_match(out: &mut [u8], at: usize, distance: usize, len: usize) {
    if distance == 1 {
        let byte = out[at - 1];
        out[at..at + len].fill(byte);
        return;
    }
    // Pieces of at most `distance` bytes never overlap their source.
    let mut done = 0;
    while done < len {
        let piece = (len - done).min(distance);
        let to = at + done;
        out.copy_within(to - distance..to - distance + piece, to);
        done += piece;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_runs_and_far_matches_decode() {
        let mut out = [0u8; 64];
        // Marker bits on the first literal run are ignored; a 3-byte match at distance 1 is a run.
        assert_eq!(decompress(&[0x20 | 1, b'a', b'b', 32, 0, 0, b'c'], &mut out), Ok(6));
        assert_eq!(&out[..6], b"abbbbc");
        // A long match (ctrl >> 5 == 7) of 9 + 2 bytes at distance 2.
        assert_eq!(decompress(&[1, b'x', b'y', 7 << 5, 2, 1, 0, b'z'], &mut out), Ok(14));
        assert_eq!(&out[..14], b"xyxyxyxyxyxyxz");
        // Distance escape: ctrl & 31 == 31 and d == 255 read a u16 plus 8192; too far here.
        assert_eq!(decompress(&[0, b'a', 32 | 31, 255, 0, 0, 0], &mut out), Err(Status::BadOffset));
        // A match that ends the stream is never copied by c-blosc.
        assert_eq!(decompress(&[0, b'a', 32, 0], &mut out), Err(Status::Malformed));
        assert_eq!(decompress(&[0, b'a', 32], &mut out), Err(Status::Truncated));
        assert_eq!(decompress(&[], &mut out), Err(Status::Truncated));
        assert_eq!(decompress(&[3, b'a'], &mut out), Err(Status::Truncated));
        assert_eq!(decompress(&[3, 1, 2, 3, 4], &mut out[..3]), Err(Status::OutputTooSmall));
    }
}

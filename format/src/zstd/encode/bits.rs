//! Writing bits LSB-first into a byte slice: the order of every Zstandard bitstream. FSE table
//! descriptions are read forward; Huffman and sequence streams are read backward, from a final
//! 1-bit marker ([`BitWriter::finish_backward`]), so their writers emit symbols last to first.

use crate::Status;

/// Appends bit fields to `out`, LSB-first; running out of room is reported once, at the end.
pub struct BitWriter<'a> {
    out: &'a mut [u8],
    len: usize,
    acc: u64,
    bits: u32,
    overflow: bool,
}

impl<'a> BitWriter<'a> {
    /// A writer at the start of `out`.
    #[inline(always)]
    pub fn new(out: &'a mut [u8]) -> Self {
        Self { out, len: 0, acc: 0, bits: 0, overflow: false }
    }

    /// Appends the low `n` bits of `value` (`n` at most 32; higher bits of `value` must be 0).
    #[inline(always)]
    pub fn add(&mut self, value: u32, n: u32) {
        self.acc |= (value as u64) << self.bits;
        self.bits += n;
        while self.bits >= 8 {
            self.push(self.acc as u8);
            self.acc >>= 8;
            self.bits -= 8;
        }
    }

    /// Pads the last byte with zeros; returns the bytes written, or `OutputTooSmall`.
    pub fn finish(mut self) -> Result<usize, Status> {
        if self.bits > 0 {
            self.push(self.acc as u8);
        }
        if self.overflow { Err(Status::OutputTooSmall) } else { Ok(self.len) }
    }

    /// Ends a stream read backward: a 1 bit, then zeros to the byte's end.
    pub fn finish_backward(mut self) -> Result<usize, Status> {
        self.add(1, 1);
        self.finish()
    }

    #[inline(always)]
    fn push(&mut self, byte: u8) {
        match self.out.get_mut(self.len) {
            Some(slot) => *slot = byte,
            None => self.overflow = true,
        }
        self.len += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_pack_lsb_first_and_a_backward_stream_ends_in_its_marker() {
        let mut out = [0u8; 4];
        let mut w = BitWriter::new(&mut out);
        w.add(0b101, 3);
        w.add(0x3FF, 10);
        assert_eq!(w.finish_backward(), Ok(2));
        assert_eq!(out[..2], [0b1111_1101, 0b0011_1111]);
    }

    #[test]
    fn a_short_slice_is_reported() {
        let mut out = [0u8; 1];
        let mut w = BitWriter::new(&mut out);
        w.add(0xFFFF, 16);
        assert_eq!(w.finish(), Err(Status::OutputTooSmall));
    }
}

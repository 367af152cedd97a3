//! Reading a bitstream backward (RFC 8878 §4.1, §4.2.2): Huffman streams and the sequences
//! bitstream are written forward, ended by a 1 bit, and read from that bit back to the start.

use crate::Status;

/// A backward bitstream over a byte slice. The 64 bits of `data[at..at + 8]` (little-endian, zeros
/// above the end) are the container; `consumed` counts the bits read from its top, and `window`
/// holds the container shifted left by them, the next bit on top, so that reading is two shifts
/// (on a GPU lane as on a CPU). Past the start of `data` it reads zeros, and
/// [`overflowed`](Self::overflowed) tells.
pub struct ReverseBits<'a> {
    data: &'a [u8],
    /// The 4-byte-aligned words within `data`, which `head` bytes precede: a container inside
    /// them loads as three aligned words (on a GPU lane: three loads, not eight).
    words: &'a [u32],
    head: usize,
    at: usize,
    consumed: u32,
    window: u64,
}

impl<'a> ReverseBits<'a> {
    /// A reader positioned just below `data`'s final 1 bit; `Malformed` if `data` is empty or
    /// its last byte is 0 (no end marker).
    #[inline(always)]
    pub fn new(data: &'a [u8]) -> Result<Self, Status> {
        let last = *data.last().ok_or(Status::Malformed)?;
        if last == 0 {
            return Err(Status::Malformed);
        }
        let at = data.len().saturating_sub(8);
        let consumed = 64 - 8 * (data.len() - at) as u32 + last.leading_zeros() + 1;
        let (head, words, _) = bytemuck::pod_align_to::<u8, u32>(data);
        let mut reader = Self { data, words, head: head.len(), at, consumed, window: 0 };
        reader.load();
        Ok(reader)
    }

    /// Loads the container from `data[at..]` into the window.
    #[inline(always)]
    fn load(&mut self) {
        self.window = self.container().checked_shl(self.consumed).unwrap_or(0);
    }

    /// The 64 bits of `data[at..at + 8]`, zeros above the end.
    #[inline(always)]
    fn container(&self) -> u64 {
        let word_at = self.at.wrapping_sub(self.head);
        if self.at >= self.head && word_at + 8 <= 4 * self.words.len() {
            // The two words the bytes start in, and the third they reach into unless aligned.
            let (first, shift) = (word_at / 4, 8 * (word_at % 4) as u32);
            let word = |i: usize| self.words.get(i).map_or(0, |&w| u32::from_le(w) as u64);
            let low = (word(first) | word(first + 1) << 32) >> shift;
            return if shift == 0 { low } else { low | word(first + 2) << (64 - shift) };
        }
        let mut bytes = [0u8; 8];
        for (byte, &value) in bytes.iter_mut().zip(self.data.get(self.at..).unwrap_or(&[])) {
            *byte = value;
        }
        u64::from_le_bytes(bytes)
    }

    /// Moves the container down so that at least 57 unread bits are held (or all that are left).
    #[inline(always)]
    pub fn refill(&mut self) {
        if self.at == 0 || self.consumed < 8 {
            return;
        }
        let back = ((self.consumed / 8) as usize).min(self.at);
        self.at -= back;
        self.consumed -= 8 * back as u32;
        self.load();
    }

    /// The next `n` (at most 32) bits without consuming them, zeros past the start.
    #[inline(always)]
    pub fn peek(&self, n: u32) -> u32 {
        ((self.window >> 1) >> (63 - n.min(32))) as u32
    }

    /// Consumes `n` bits (at most 32: every field of the format is).
    #[inline(always)]
    pub fn consume(&mut self, n: u32) {
        self.consumed += n;
        self.window = self.window.wrapping_shl(n);
    }

    /// Reads `n` (at most 32) bits, refilling first only when fewer than 32 are held: a reload
    /// is 8 byte loads, which a GPU lane decoding sequences would otherwise wait on for every field.
    #[inline(always)]
    pub fn read(&mut self, n: u32) -> u32 {
        if self.consumed > 32 {
            self.refill();
        }
        let value = self.peek(n);
        self.consume(n);
        value
    }

    /// Whether more bits were read than the stream holds.
    #[inline(always)]
    pub fn overflowed(&self) -> bool {
        self.at == 0 && self.consumed > 64
    }

    /// Whether every bit was read, and no more.
    #[inline(always)]
    pub fn finished(&self) -> bool {
        self.at == 0 && self.consumed == 64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_back_to_front() {
        // Fields written LSB-first: 5 (3 bits), 300 (9 bits), 1 (1 bit), then the end marker.
        let value: u32 = 5 | (300 << 3) | (1 << 12) | (1 << 13);
        let bytes = value.to_le_bytes();
        let mut bits = ReverseBits::new(&bytes[..2]).unwrap();
        assert_eq!((bits.read(1), bits.read(9), bits.read(3)), (1, 300, 5));
        assert!(bits.finished());
        assert_eq!(bits.read(4), 0);
        assert!(bits.overflowed());
        assert_eq!(ReverseBits::new(&[7, 0]).err(), Some(Status::Malformed));
        assert_eq!(ReverseBits::new(&[]).err(), Some(Status::Malformed));
    }

    #[test]
    fn long_streams_refill() {
        // 40 bytes of fields 0..=99 of 3 bits each (300 bits), then the marker.
        let mut bytes = [0u8; 40];
        for (i, value) in (0..100u32).map(|v| v % 8).enumerate() {
            for b in 0..3 {
                bytes[(3 * i + b) / 8] |= (((value >> b) & 1) as u8) << ((3 * i + b) % 8);
            }
        }
        bytes[300 / 8] |= 1 << (300 % 8);
        // At every alignment: containers inside the aligned words load from them, the rest
        // byte by byte.
        let mut words = [0u32; 11];
        for offset in 0..4 {
            let aligned: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
            aligned[offset..offset + 38].copy_from_slice(&bytes[..38]);
            let mut bits = ReverseBits::new(&aligned[offset..offset + 38]).unwrap();
            for i in (0..100u32).rev() {
                assert_eq!(bits.read(3), i % 8, "field {i}, offset {offset}");
            }
            assert!(bits.finished());
        }
    }
}

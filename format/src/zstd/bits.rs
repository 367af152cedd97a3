//! Reading a bitstream backward (RFC 8878 §4.1, §4.2.2): Huffman streams and the sequences
//! bitstream are written forward, ended by a 1 bit, and read from that bit back to the start.

use crate::Status;

/// A backward bitstream over a byte slice. `window` holds the next `held` bits at its top, the
/// next bit first; `data[..at]` is not loaded yet. Loads take the aligned 4-byte words within
/// `data` one at a time, the few unaligned bytes at its end one by one when the reader starts,
/// and the few at its start (`head`) as one word made when it starts: on a GPU lane a refill
/// is one load without a branch (the stream's bytes in global memory, a word per 32 bits read),
/// issued a refill ahead of the one that uses it, so that its latency is hidden.
/// Past the start of `data` it reads zeros, and [`overflowed`](Self::overflowed) tells.
pub struct ReverseBits<'a> {
    data: &'a [u8],
    /// The aligned words of `data`, after its first `head` bytes.
    words: &'a [u32],
    head: u32,
    /// The bytes below the words at the top of a word, the stream's last load.
    head_word: u32,
    at: u32,
    /// Bits in `window`: below 0 once more were read than the stream holds.
    held: i32,
    window: u64,
    /// What the next refill loads: the aligned word below `at`, or `head_word`.
    ahead: u32,
}

impl<'a> ReverseBits<'a> {
    /// A reader positioned just below `data`'s final 1 bit; `Malformed` if `data` is empty, its
    /// last byte is 0 (no end marker), or it is longer than any stream of the format (4 GiB).
    #[inline(always)]
    pub fn new(data: &'a [u8]) -> Result<Self, Status> {
        let last = *data.last().ok_or(Status::Malformed)?;
        let len = u32::try_from(data.len()).map_err(|_| Status::Malformed)?;
        if last == 0 {
            return Err(Status::Malformed);
        }
        let (head_bytes, words, _) = bytemuck::pod_align_to::<u8, u32>(data);
        let (head, words_end) = (head_bytes.len() as u32, (head_bytes.len() + 4 * words.len()) as u32);
        // The last byte's bits below its marker, then bytes down to a word's end, so that from
        // there on words load whole.
        let held = 7 - last.leading_zeros() as i32;
        let window = (last as u64) << 56 << (last.leading_zeros() + 1);
        let mut reader = Self { data, words, head, head_word: 0, at: len - 1, held, window, ahead: 0 };
        while reader.at > head && (reader.at > words_end || !(reader.at - head).is_multiple_of(4)) {
            reader.load_byte();
        }
        // The bytes below the words (all the unloaded ones, in a stream shorter than a word).
        let below = &head_bytes[..reader.at.min(head) as usize];
        reader.head_word = below.iter().fold(0u32, |word, &byte| word >> 8 | (byte as u32) << 24);
        reader.ahead = reader.load_below(reader.at);
        reader.refill();
        Ok(reader)
    }

    /// Loads the byte below `at` under the bits held.
    #[inline(always)]
    fn load_byte(&mut self) {
        self.at -= 1;
        let byte = self.data.get(self.at as usize).copied().unwrap_or(0);
        self.window |= (byte as u64) << (56 - self.held);
        self.held += 8;
    }

    /// What a refill at `at` (a word boundary or at most `head`) loads: the aligned word ending
    /// there, or the head bytes' word.
    #[inline(always)]
    fn load_below(&self, at: u32) -> u32 {
        if at <= self.head {
            return self.head_word;
        }
        let index = ((at - self.head) / 4) as usize;
        u32::from_le(self.words.get(index.wrapping_sub(1)).copied().unwrap_or(0))
    }

    /// Loads bits until at least 32 are held (a word, or the head bytes, when 32 or fewer are),
    /// or every bit is.
    #[inline(always)]
    pub fn refill(&mut self) {
        // Selects rather than a branch: a GPU lane predicates the few instructions.
        let load = self.held <= 32 && self.at != 0;
        let bytes = if !load {
            0
        } else if self.at > self.head {
            4
        } else {
            self.at
        };
        self.window |= if load { (self.ahead as u64).wrapping_shl((32 - self.held) as u32) } else { 0 };
        self.held += 8 * bytes as i32;
        self.at -= bytes;
        if load {
            self.ahead = self.load_below(self.at);
        }
    }

    /// The next `n` bits without consuming them, for `n` from 1 to 32 (a Huffman table's log):
    /// one shift of the window's top half; as many must be held (a refill holds 32).
    #[inline(always)]
    pub fn peek_some(&self, n: u32) -> u32 {
        ((self.window >> 32) as u32) >> (32 - n)
    }

    /// Consumes `n` bits (at most 32: every field of the format is).
    #[inline(always)]
    pub fn consume(&mut self, n: u32) {
        self.held -= n as i32;
        self.window = self.window.wrapping_shl(n);
    }

    /// Reads `n` (at most 32) bits, after a refill when 32 or fewer are held: at most one load,
    /// without a branch on `n`.
    #[inline(always)]
    pub fn read(&mut self, n: u32) -> u32 {
        self.refill();
        // Two shifts, so that `n` = 0 reads 0.
        let value = ((self.window >> 1) >> (63 - n.min(32))) as u32;
        self.consume(n);
        value
    }

    /// Whether more bits were read than the stream holds.
    #[inline(always)]
    pub fn overflowed(&self) -> bool {
        self.held < 0
    }

    /// Whether every bit was read, and no more.
    #[inline(always)]
    pub fn finished(&self) -> bool {
        self.at == 0 && self.held == 0
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
        // Fields of 3 bits (the field index mod 8), then the marker: 100 fields fill 38 bytes,
        // 106 fill 40. Each at every alignment: the aligned words load whole, the bytes at
        // either end one by one.
        for fields in [100, 106] {
            let len = (3 * fields + 8) / 8;
            let mut words = [0u32; 11];
            for offset in 0..4 {
                let aligned: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
                let bytes = &mut aligned[offset..offset + len];
                bytes.fill(0);
                for (i, value) in (0..fields as u32).map(|v| v % 8).enumerate() {
                    for b in 0..3 {
                        bytes[(3 * i + b) / 8] |= (((value >> b) & 1) as u8) << ((3 * i + b) % 8);
                    }
                }
                bytes[3 * fields / 8] |= 1 << (3 * fields % 8);
                let mut bits = ReverseBits::new(bytes).unwrap();
                for i in (0..fields as u32).rev() {
                    assert_eq!(bits.read(3), i % 8, "field {i}, {len} bytes at offset {offset}");
                }
                assert!(bits.finished() && !bits.overflowed());
                assert_eq!(bits.read(1), 0);
                assert!(bits.overflowed());
            }
        }
    }

    #[test]
    fn reads_match_a_bit_by_bit_reader() {
        // Random streams of every length up to 40 bytes and every alignment, read in fields of
        // 0 to 32 bits (the head bytes, the words and the end's bytes all loaded on the way),
        // against reading the stream one bit at a time, past its start too.
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as u32
        };
        let mut words = [0u32; 12];
        for round in 0..2000 {
            let (offset, len) = (round % 4, 1 + round / 4 % 40);
            let aligned: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
            let bytes = &mut aligned[offset..offset + len];
            bytes.iter_mut().for_each(|byte| *byte = next() as u8);
            bytes[len - 1] |= 1 << (next() % 8);
            let total = 8 * len as i64 - 1 - bytes[len - 1].leading_zeros() as i64;
            let bit = |i: i64| if i < 0 { 0 } else { (bytes[i as usize / 8] >> (i % 8) & 1) as u32 };
            let mut reader = ReverseBits::new(bytes).unwrap();
            let mut at = total; // the bits below this one are unread
            while at > -40 {
                let n = if next() % 4 == 0 { 0 } else { next() % 33 };
                let expected = (0..n as i64).fold(0, |value, k| value << 1 | bit(at - 1 - k));
                assert_eq!(reader.read(n), expected, "{n} bits at bit {at} of {len} bytes at offset {offset}");
                at -= n as i64;
                assert_eq!((reader.overflowed(), reader.finished()), (at < 0, at == 0), "{len} bytes, bit {at}");
            }
        }
    }
}

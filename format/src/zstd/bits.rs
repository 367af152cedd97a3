//! Reading a bitstream backward (RFC 8878 §4.1, §4.2.2): Huffman streams and the sequences
//! bitstream are written forward, ended by a 1 bit, and read from that bit back to the start.

use crate::Status;

/// A backward bitstream over a byte slice. `window` holds the next `held` bits at its top, the
/// next bit first; `data[..at]` is not loaded yet. Loads take the aligned 4-byte words within
/// `data` one at a time, and only its few unaligned bytes at either end one by one: on a GPU
/// lane a refill is one load (the stream's bytes in global memory, a word per 32 bits read),
/// issued a refill ahead of the one that uses it, so that its latency is hidden.
/// Past the start of `data` it reads zeros, and [`overflowed`](Self::overflowed) tells.
pub struct ReverseBits<'a> {
    data: &'a [u8],
    /// The aligned words of `data`, after its first `head` bytes.
    words: &'a [u32],
    head: u32,
    at: u32,
    /// Bits in `window`: below 0 once more were read than the stream holds.
    held: i32,
    window: u64,
    /// The aligned word below `at` (0 where there is none), loaded a refill early.
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
        let (head, words, _) = bytemuck::pod_align_to::<u8, u32>(data);
        let (head, words_end) = (head.len() as u32, (head.len() + 4 * words.len()) as u32);
        // The last byte's bits below its marker, then bytes down to a word's end, so that from
        // there on words load whole.
        let held = 7 - last.leading_zeros() as i32;
        let window = (last as u64) << 56 << (last.leading_zeros() + 1);
        let mut reader = Self { data, words, head, at: len - 1, held, window, ahead: 0 };
        while reader.at > head && (reader.at > words_end || !(reader.at - head).is_multiple_of(4)) {
            reader.load_byte();
        }
        reader.ahead = reader.word_below(reader.at);
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

    /// The aligned word ending at `at` (a word boundary), 0 where there is none.
    #[inline(always)]
    fn word_below(&self, at: u32) -> u32 {
        // Below the first word (`at` at or before it), the index wraps past any slice's end.
        let index = (at.wrapping_sub(self.head) / 4).wrapping_sub(1);
        u32::from_le(self.words.get(index as usize).copied().unwrap_or(0))
    }

    /// Loads bits until at least 32 are held (a word when 32 or fewer are), or every bit is.
    /// The word is taken by selects, not a branch, so that the lanes of a warp that need one and
    /// those that do not stay on one path (the next word loads either way: the same one again
    /// where none was taken); only the stream's first bytes (below its first aligned word) load
    /// one by one.
    #[inline(always)]
    pub fn refill(&mut self) {
        let take = self.held <= 32 && self.at > self.head;
        let word = if take { self.ahead as u64 } else { 0 };
        // Where a word is taken, 0 to 32 bits are held.
        self.window |= word << ((32 - self.held) as u32 & 63);
        self.held += if take { 32 } else { 0 };
        self.at -= if take { 4 } else { 0 };
        self.ahead = self.word_below(self.at);
        if self.held <= 32 && self.at > 0 && self.at <= self.head {
            while self.held <= 56 && self.at > 0 {
                self.load_byte();
            }
        }
    }

    /// The next `n` (at most 32) bits without consuming them, zeros past the start; as many must
    /// be held (a refill holds 32).
    #[inline(always)]
    pub fn peek(&self, n: u32) -> u32 {
        ((self.window >> 32) as u32).checked_shr(32 - n.min(32)).unwrap_or(0)
    }

    /// The next `n` bits, for `n` from 1 to 32 (a Huffman table's log): one shift of the
    /// window's top half, where [`peek`](Self::peek) must also turn a shift by 32 into 0.
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

    /// Reads `n` (at most 32) bits, refilling first only when fewer are held.
    #[inline(always)]
    pub fn read(&mut self, n: u32) -> u32 {
        if self.held < n as i32 {
            self.refill();
        }
        let value = self.peek(n);
        self.consume(n);
        value
    }

    /// Reads fields of `widths` bits (each at most 32) one after another, as [`read`](Self::read)
    /// would. Where the window holds them all (after one refill), each is taken from it directly
    /// and the window moves once: no refill checks between them and no field waiting on the last
    /// (a GPU lane decoding sequences spends its time in that chain).
    #[inline(always)]
    pub fn read_fields<const N: usize>(&mut self, widths: [u32; N]) -> [u32; N] {
        self.refill();
        let total: u32 = widths.iter().sum();
        if total as i32 > self.held {
            return widths.map(|n| self.read(n));
        }
        let mut at = 0;
        let fields = widths.map(|n| {
            // The window's top word from the field on (`at` is 64 only after fields filling the
            // window, when `n` is 0 and so is the field).
            let top = (self.window.wrapping_shl(at) >> 32) as u32;
            at += n;
            shr_or_zero(top, 32 - n)
        });
        self.held -= total as i32;
        self.window = shl_or_zero(self.window, total);
        fields
    }

    /// Reads a field of `wide` bits (at most 63), then one of `n` (at most 32), as reads of at
    /// most 32 bits each would; where the window holds both (after one refill), they are taken
    /// from it directly and the window moves once.
    #[inline(always)]
    pub fn read_wide_then(&mut self, wide: u32, n: u32) -> (u64, u32) {
        self.refill();
        if (wide + n) as i32 > self.held {
            let (mut value, mut left) = (0, wide);
            while left > 0 {
                let piece = left.min(32);
                value = value << piece | self.read(piece) as u64;
                left -= piece;
            }
            return (value, self.read(n));
        }
        let value = self.window.checked_shr(64 - wide).unwrap_or(0);
        // The window's top word from the second field on (`wide` is 64 only when `n` is 0).
        let top = (self.window.wrapping_shl(wide) >> 32) as u32;
        self.held -= (wide + n) as i32;
        self.window = shl_or_zero(self.window, wide + n);
        (value, shr_or_zero(top, 32 - n))
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

/// `x >> n`, 0 where `n` is 32 or more: on a GPU one instruction (PTX's shifts clamp their
/// amount), elsewhere a compare.
#[inline(always)]
fn shr_or_zero(x: u32, n: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let shifted;
        // SAFETY: a shift of registers.
        unsafe {
            core::arch::asm!("shr.b32 {s}, {x}, {n};", s = out(reg32) shifted, x = in(reg32) x, n = in(reg32) n,
                options(pure, nomem, nostack));
        }
        shifted
    }
    #[cfg(not(target_arch = "nvptx64"))]
    x.checked_shr(n).unwrap_or(0)
}

/// `x << n`, 0 where `n` is 64 or more, as [`shr_or_zero`].
#[inline(always)]
fn shl_or_zero(x: u64, n: u32) -> u64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let shifted;
        // SAFETY: a shift of registers.
        unsafe {
            core::arch::asm!("shl.b64 {s}, {x}, {n};", s = out(reg64) shifted, x = in(reg64) x, n = in(reg32) n,
                options(pure, nomem, nostack));
        }
        shifted
    }
    #[cfg(not(target_arch = "nvptx64"))]
    x.checked_shl(n).unwrap_or(0)
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
    fn fields_read_at_once_match_fields_read_one_by_one() {
        // Random streams at every alignment, read in groups of three fields of 0 to 32 bits
        // (most groups fit the window, some do not, the last ones run past the start).
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) as u32
        };
        let mut words = [0u32; 40];
        for round in 0..200 {
            let (offset, len) = (round % 4, 1 + next() as usize % 150);
            let aligned: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
            let bytes = &mut aligned[offset..offset + len];
            bytes.iter_mut().for_each(|byte| *byte = next() as u8);
            bytes[len - 1] |= 1;
            let (mut at_once, mut one_by_one) = (ReverseBits::new(bytes).unwrap(), ReverseBits::new(bytes).unwrap());
            while !one_by_one.overflowed() {
                let widths = [0; 3].map(|_| if next() % 4 == 0 { 0 } else { next() % 33 });
                assert_eq!(at_once.read_fields(widths), widths.map(|n| one_by_one.read(n)), "{widths:?}");
                assert_eq!(
                    (at_once.overflowed(), at_once.finished()),
                    (one_by_one.overflowed(), one_by_one.finished())
                );
            }
        }
    }
}

//! Frame-of-reference bit packing, shared by the codecs that store fixed-width integers as a base
//! and a few bits each (Cascaded, Bitcomp): element masks, extremes, and bits read and written
//! least significant first.

/// Bits of the mask of a `width`-byte element.
#[inline(always)]
pub const fn mask(width: usize) -> u64 {
    if width >= 8 { u64::MAX } else { (1 << (8 * width)) - 1 }
}

/// Bits needed to hold `value`.
#[inline(always)]
pub const fn bit_len(value: u64) -> u32 {
    64 - value.leading_zeros()
}

/// Bytes of a packed stream of `count` entries of `bits` bits.
#[inline(always)]
pub const fn packed_len(count: usize, bits: u32) -> usize {
    (count * bits as usize).div_ceil(8)
}

/// The extremes of a stream's entries read unsigned and read signed, from which its frame of
/// reference is chosen; merged a part at a time (the GPU's lanes reduce them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extremes {
    /// The least entry, read unsigned.
    pub min: u64,
    /// The greatest entry, read unsigned.
    pub max: u64,
    /// The least entry, read signed.
    pub min_signed: i64,
    /// The greatest entry, read signed.
    pub max_signed: i64,
}

impl Extremes {
    /// The extremes of no entries.
    pub const EMPTY: Self = Self { min: u64::MAX, max: 0, min_signed: i64::MAX, max_signed: i64::MIN };

    /// The extremes of the one `width`-byte entry `value`.
    #[inline(always)]
    pub const fn of(value: u64, width: usize) -> Self {
        let signed = sign_extend(value, width);
        Self { min: value, max: value, min_signed: signed, max_signed: signed }
    }

    /// The extremes of both.
    #[inline(always)]
    pub fn merge(self, other: Self) -> Self {
        Self {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
            min_signed: self.min_signed.min(other.min_signed),
            max_signed: self.max_signed.max(other.max_signed),
        }
    }

    /// The frame of reference of `width`-byte entries with these extremes: the fewer bits of
    /// the two readings (unsigned on a tie), or every entry whole where `bitpack` is off.
    pub fn frame(self, width: usize, bitpack: bool) -> Frame {
        if !bitpack {
            return Frame { base: 0, bits: 8 * width as u32 };
        }
        if self.min > self.max {
            return Frame { base: 0, bits: 0 };
        }
        let unsigned = bit_len(self.max - self.min);
        let signed = bit_len(self.max_signed.wrapping_sub(self.min_signed) as u64);
        if signed < unsigned {
            Frame { base: self.min_signed as u64 & mask(width), bits: signed }
        } else {
            Frame { base: self.min, bits: unsigned }
        }
    }
}

/// `value`'s `width` bytes read as a signed number.
#[inline(always)]
pub const fn sign_extend(value: u64, width: usize) -> i64 {
    let shift = 64 - 8 * width as u32;
    ((value << shift) as i64) >> shift
}

/// A stream's frame of reference: entry `i` is `base + packed[i]`, `packed[i]` of `bits` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The reference each packed entry is added to, in the entries' width.
    pub base: u64,
    /// Bits per packed entry, at most the entries' width in bits.
    pub bits: u32,
}

/// The `bits` (at most 64) bits at bit `bit` of `bytes`, least significant first; bytes past
/// the end read as zeros.
#[inline(always)]
pub fn read_bits(bytes: &[u8], bit: usize, bits: u32) -> u64 {
    if bits == 0 {
        return 0;
    }
    let (byte, shift) = (bit / 8, bit % 8);
    let mut window = 0u128;
    for k in 0..(shift + bits as usize).div_ceil(8) {
        window |= (*bytes.get(byte + k).unwrap_or(&0) as u128) << (8 * k);
    }
    (window >> shift) as u64 & if bits == 64 { u64::MAX } else { (1 << bits) - 1 }
}

/// ORs the `bits` low bits of `value` into `bytes` at bit `bit`, least significant first.
#[inline(always)]
pub fn write_bits(bytes: &mut [u8], bit: usize, bits: u32, value: u64) {
    let (byte, shift) = (bit / 8, bit % 8);
    let window = (value as u128) << shift;
    for k in 0..(shift + bits as usize).div_ceil(8) {
        bytes[byte + k] |= (window >> (8 * k)) as u8;
    }
}

/// The low bits of `value` placed, in order, at the set bits of `mask` (x86's `pdep`): bit `k`
/// of `value` goes to the `k`-th set bit of `mask`, counting from the least significant.
#[inline(always)]
pub fn deposit(mut value: u64, mut mask: u64) -> u64 {
    let mut out = 0;
    while mask != 0 {
        let bit = mask & mask.wrapping_neg();
        out |= if value & 1 != 0 { bit } else { 0 };
        (value, mask) = (value >> 1, mask ^ bit);
    }
    out
}

/// The bits of `value` at the set bits of `mask`, gathered in order into the low bits (x86's
/// `pext`): the inverse of [`deposit`].
#[inline(always)]
pub fn extract(value: u64, mut mask: u64) -> u64 {
    let (mut out, mut k) = (0, 0);
    while mask != 0 {
        let bit = mask & mask.wrapping_neg();
        out |= ((value & bit != 0) as u64) << k;
        (k, mask) = (k + 1, mask ^ bit);
    }
    out
}

//! CRC-32 (ISO-HDLC: the zlib/gzip/PNG polynomial), with the arithmetic to combine the CRCs of
//! consecutive pieces, which is how a warp checksums one chunk: each lane takes a stripe and the
//! stripes' CRCs are shifted into place and XORed.

/// The reflected generator polynomial.
const POLY: u32 = 0xEDB8_8320;

/// The byte-at-a-time lookup table.
pub const TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            bit += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// `x^(2^k) mod P` for k in 0..32, in the reflected representation.
const X_POW_2K: [u32; 32] = {
    let mut powers = [0u32; 32];
    let mut p = 1u32 << 30; // x^1
    let mut k = 0;
    while k < 32 {
        powers[k] = p;
        p = multiply_mod_p(p, p);
        k += 1;
    }
    powers
};

/// CRC-32 of `data`.
pub fn crc32(data: &[u8]) -> u32 {
    !update_raw(!0, data)
}

/// Advances a raw CRC register (no initial or final inversion) over `data`.
#[inline]
pub fn update_raw(mut crc: u32, data: &[u8]) -> u32 {
    for &byte in data {
        crc = advance_byte(crc, byte);
    }
    crc
}

/// Advances a raw CRC register by one byte.
#[inline(always)]
pub fn advance_byte(crc: u32, byte: u8) -> u32 {
    TABLE[((crc ^ byte as u32) & 0xFF) as usize] ^ (crc >> 8)
}

/// Product of two polynomials modulo P, in the reflected representation.
pub const fn multiply_mod_p(a: u32, mut b: u32) -> u32 {
    let mut product = 0;
    let mut m = 1u32 << 31;
    while m != 0 {
        if a & m != 0 {
            product ^= b;
        }
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
        m >>= 1;
    }
    product
}

/// `x^(8 n) mod P`: the factor that moves a raw CRC past `n` further bytes.
pub fn shift_factor(mut n: u64) -> u32 {
    let mut factor = 1u32 << 31; // x^0
    let mut k = 3; // x^(8 n) = x^(n << 3)
    while n != 0 {
        if n & 1 != 0 {
            factor = multiply_mod_p(X_POW_2K[k & 31], factor);
        }
        n >>= 1;
        k += 1;
    }
    factor
}

/// The CRC-32 of a whole message of `len` bytes, given the XOR of its pieces' raw CRCs each
/// already shifted to the end of the message (see [`shift_factor`]).
pub fn finish_combined(combined_raw: u32, len: u64) -> u32 {
    !(multiply_mod_p(!0, shift_factor(len)) ^ combined_raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vector() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn stripes_combine_to_the_whole() {
        let data: [u8; 1000] = core::array::from_fn(|i| (i * 7 + i / 13) as u8);
        for stripes in [1usize, 2, 3, 32] {
            let len = data.len();
            let stripe = len.div_ceil(stripes);
            let mut combined = 0;
            for s in 0..stripes {
                let (start, end) = ((s * stripe).min(len), ((s + 1) * stripe).min(len));
                let raw = update_raw(0, &data[start..end]);
                combined ^= multiply_mod_p(raw, shift_factor((len - end) as u64));
            }
            assert_eq!(finish_combined(combined, len as u64), crc32(&data), "{stripes} stripes");
        }
    }
}

//! Adler-32 (RFC 1950), the checksum in a zlib stream's trailer.

/// The largest number of bytes whose sums cannot overflow 32 bits before they are reduced.
const NMAX: usize = 5552;
const MOD: u32 = 65521;

/// Adler-32 of `data`.
pub fn adler32(data: &[u8]) -> u32 {
    update(1, data)
}

/// Continues the checksum `adler` over `data`.
pub fn update(adler: u32, data: &[u8]) -> u32 {
    let (mut a, mut b) = (adler & 0xFFFF, adler >> 16);
    for chunk in data.chunks(NMAX) {
        for &byte in chunk {
            a += byte as u32;
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        assert_eq!(adler32(b""), 1);
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        let big: [u8; 20000] = core::array::from_fn(|i| 255 - (i % 7) as u8);
        assert_eq!(update(adler32(&big[..7000]), &big[7000..]), adler32(&big));
    }
}

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

/// One piece's share of the Adler-32 of a whole that it is a part of, for summing over the pieces
/// (a GPU warp checks a lane's stripe each): `piece` is [`update`]`(0, ..)` of the piece's bytes,
/// `after` the number of bytes that follow it in the whole. Both halves are below 2^16.
pub fn share(piece: u32, after: usize) -> (u32, u32) {
    let (a, b) = (piece & 0xFFFF, piece >> 16);
    // Each byte after the piece adds the piece's sum to `b` once more.
    (a, ((b as u64 + (after % MOD as usize) as u64 * a as u64) % MOD as u64) as u32)
}

/// The Adler-32 of `len` bytes from the sums of its pieces' [`share`]s (up to 2^16 pieces).
pub fn from_shares(a_sum: u32, b_sum: u32, len: usize) -> u32 {
    // The starting 1 of `a` adds one to `b` per byte.
    let a = (1 + a_sum % MOD) % MOD;
    let b = ((len % MOD as usize) as u32 + b_sum % MOD) % MOD;
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

    #[test]
    fn shares_of_pieces_make_the_whole() {
        let data: [u8; 70001] = core::array::from_fn(|i| (i * 7919 % 251) as u8 ^ 0xA5);
        for pieces in [1, 2, 32, 700] {
            let size = data.len().div_ceil(pieces);
            let (mut a, mut b) = (0, 0);
            for (i, piece) in data.chunks(size).enumerate() {
                let after = data.len() - (i * size + piece.len());
                let (pa, pb) = share(update(0, piece), after);
                (a, b) = (a + pa, b + pb);
            }
            assert_eq!(from_shares(a, b, data.len()), adler32(&data), "{pieces} pieces");
        }
        assert_eq!(from_shares(0, 0, 0), 1);
    }
}

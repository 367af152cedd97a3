//! CRC-32 (ISO-HDLC: the zlib/gzip/PNG polynomial), with the arithmetic to combine the CRCs of
//! consecutive pieces, which is how a warp checksums one chunk: each lane takes a stripe and the
//! stripes' CRCs are shifted into place and XORed; and nvCOMP's checksums of its native streams,
//! built from the same pieces in another order (see [`nvcomp_chunk_crc`]).

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

/// CRC-32 of the bytes before (`crc`) and `data` after them: zlib's `crc32(crc, data)`.
pub fn crc32_continue(crc: u32, data: &[u8]) -> u32 {
    !update_raw(!crc, data)
}

/// Bytes of a unit of nvCOMP's checksums, and the lanes that share a chunk's units.
const NVCOMP_UNIT: usize = 32;
const NVCOMP_LANES: usize = 32;

/// nvCOMP 6's checksum of one chunk of its native streams, the chunk starting `misalign` bytes
/// past a 32-byte boundary: the bytes before the next boundary are a CRC-32; then the 32-byte
/// units that follow go to 32 lanes in turn (unit `u` to lane `u mod 32`), each lane continuing
/// a CRC-32 over its units (lane 0 from the head's, the others from 0), shifted past
/// `(31 - lane) * 32 * (units / 32)` zero bytes; the lanes' values XORed are continued over the
/// bytes after the last whole unit. The CRC-32 of the chunk while one lane has units (up to 63
/// bytes past the head), another checksum beyond.
pub fn nvcomp_chunk_crc(data: &[u8], misalign: usize) -> u32 {
    let head = match misalign % NVCOMP_UNIT {
        0 => 0,
        skew => (NVCOMP_UNIT - skew).min(data.len()),
    };
    let units = (data.len() - head) / NVCOMP_UNIT;
    let body_end = head + units * NVCOMP_UNIT;
    let per_lane = (NVCOMP_UNIT * (units / NVCOMP_LANES)) as u64;
    let crc = nvcomp_lanes(&data[head..body_end], NVCOMP_LANES, crc32_continue(0, &data[..head]), per_lane);
    crc32_continue(crc, &data[body_end..])
}

/// nvCOMP 6's checksum of a native stream's header and chunk tables (`data`, with the 4 bytes
/// that store it zeroed): as [`nvcomp_chunk_crc`] of an aligned chunk but over `32 * ⌈n / 1024⌉`
/// lanes (n bytes), each shifted past `(lanes - 1 - lane) * ⌊n / lanes⌋` zero bytes, and the CRC-32
/// of the bytes after the last whole unit XORed in rather than continued.
pub fn nvcomp_header_crc(data: &[u8]) -> u32 {
    let n = data.len();
    let lanes = NVCOMP_LANES * n.div_ceil(1024).max(1);
    let body_end = n / NVCOMP_UNIT * NVCOMP_UNIT;
    nvcomp_lanes(&data[..body_end], lanes, 0, (n / lanes) as u64) ^ crc32_continue(0, &data[body_end..])
}

/// The units of `body` dealt to `lanes` lanes in turn, each lane's CRC-32 (lane 0's continuing
/// `first`) shifted past `(lanes - 1 - lane) * per_lane` zero bytes, XORed; `first` where there
/// are no units.
fn nvcomp_lanes(body: &[u8], lanes: usize, first: u32, per_lane: u64) -> u32 {
    let units = body.len() / NVCOMP_UNIT;
    if units == 0 {
        return first;
    }
    (0..lanes.min(units)).fold(0, |xor, lane| {
        let start = if lane == 0 { first } else { 0 };
        let own = body.as_chunks::<NVCOMP_UNIT>().0.iter().skip(lane).step_by(lanes);
        let crc = own.fold(start, |crc, unit| crc32_continue(crc, unit));
        xor ^ multiply_mod_p(crc, shift_factor((lanes - 1 - lane) as u64 * per_lane))
    })
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
    fn continuing_is_the_crc_of_the_whole() {
        let data: [u8; 100] = core::array::from_fn(|i| (i * 31) as u8);
        assert_eq!(crc32_continue(crc32(&data[..40]), &data[40..]), crc32(&data));
        assert_eq!(crc32_continue(0, &[]), 0);
    }

    #[test]
    fn nvcomps_chunk_checksum_is_the_crc_while_one_lane_has_units() {
        // With one unit (after an unaligned head, before a tail) lane 0 alone continues the
        // CRC-32; once two lanes have units, each starts its own from 0 and it is another sum.
        let data: [u8; 1000] = core::array::from_fn(|i| (i * 7 + i / 13) as u8);
        assert_eq!(nvcomp_chunk_crc(&data[..31], 0), crc32(&data[..31]));
        assert_eq!(nvcomp_chunk_crc(&data[..40], 0), crc32(&data[..40]));
        assert_eq!(nvcomp_chunk_crc(&data[..40], 24), crc32(&data[..40]));
        assert_ne!(nvcomp_chunk_crc(&data, 0), crc32(&data));
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

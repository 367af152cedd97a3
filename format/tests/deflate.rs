//! Deflate, zlib and gzip: round trips at every level, interoperation with zlib (flate2), ratios
//! against zlib, and malformed streams.

use std::io::{Read, Write};
use std::sync::OnceLock;

use ferrocomp_format::Status;
use ferrocomp_format::deflate::{
    self, CompressScratch, DecodeTables, MAX_CHUNK_SIZE, MAX_LEVEL, PART_SIZE, Wrapper, compress, decompress,
    decompressed_size, max_compressed_size,
};

mod common;
use common::source_text;

const WRAPPERS: [Wrapper; 3] = [Wrapper::Raw, Wrapper::Zlib, Wrapper::Gzip];

fn scratch() -> Box<CompressScratch> {
    // All-zero memory is a valid scratch; so is garbage, which the fill shows.
    let mut s: Box<CompressScratch> = unsafe { Box::new_zeroed().assume_init() };
    let bytes = unsafe {
        std::slice::from_raw_parts_mut(&mut *s as *mut CompressScratch as *mut u8, size_of::<CompressScratch>())
    };
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (i * 131 + 7) as u8;
    }
    s
}

fn tables() -> Box<DecodeTables> {
    unsafe { Box::new_zeroed().assume_init() }
}

/// 2 MiB of text like the repository's sources.
fn text() -> &'static [u8] {
    static TEXT: OnceLock<Vec<u8>> = OnceLock::new();
    TEXT.get_or_init(|| source_text(2 << 20, 1))
}

fn random(len: usize, mut seed: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect()
}

fn ours(input: &[u8], level: u8, wrapper: Wrapper, s: &mut CompressScratch) -> Vec<u8> {
    let mut out = vec![0u8; max_compressed_size(input.len(), wrapper)];
    let n = compress(input, level, wrapper, s, &mut out).unwrap();
    out.truncate(n);
    out
}

fn zlib_decode(data: &[u8], wrapper: Wrapper) -> Vec<u8> {
    let mut back = Vec::new();
    match wrapper {
        Wrapper::Raw => flate2::read::DeflateDecoder::new(data).read_to_end(&mut back),
        Wrapper::Zlib => flate2::read::ZlibDecoder::new(data).read_to_end(&mut back),
        Wrapper::Gzip => flate2::read::GzDecoder::new(data).read_to_end(&mut back),
    }
    .unwrap();
    back
}

fn zlib_encode(data: &[u8], level: u32, wrapper: Wrapper) -> Vec<u8> {
    let level = flate2::Compression::new(level);
    match wrapper {
        Wrapper::Raw => {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), level);
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        Wrapper::Zlib => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), level);
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        Wrapper::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), level);
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
    }
}

/// Compresses at every level and wrapper; checks the bound, our decoder, and zlib's.
fn round_trip_everywhere(input: &[u8], s: &mut CompressScratch, t: &mut DecodeTables) {
    for level in 0..=MAX_LEVEL {
        for wrapper in WRAPPERS {
            let packed = ours(input, level, wrapper, s);
            assert!(packed.len() <= max_compressed_size(input.len(), wrapper));
            let mut back = vec![0u8; input.len()];
            let what = format!("{} bytes, level {level}, {wrapper:?}", input.len());
            assert_eq!(decompress(&packed, wrapper, &mut back, t), Ok(input.len()), "{what}");
            assert!(back == input, "{what}");
            assert_eq!(decompressed_size(&packed, wrapper, t), Ok(input.len()), "{what}");
            assert!(zlib_decode(&packed, wrapper) == input, "zlib rejects {what}");
            assert_eq!(ours(input, level, wrapper, s), packed, "not deterministic: {what}");
        }
    }
}

#[test]
fn round_trips_at_every_level_and_wrapper() {
    let (mut s, mut t) = (scratch(), tables());
    let repetitive: Vec<u8> = (0..50_000).map(|i| b"abcabcabd"[i % 9]).collect();
    let runs: Vec<u8> = (0..65_536).map(|i| (i / 3000) as u8).collect();
    let inputs: [&[u8]; 8] = [
        b"",
        b"a",
        b"hello, hello, hello world",
        &repetitive,
        &runs,
        &random(65_536, 1),
        &text()[..PART_SIZE],
        &text()[100_000..103_000],
    ];
    for input in inputs {
        round_trip_everywhere(input, &mut s, &mut t);
    }
}

#[test]
fn scratch_contents_do_not_matter() {
    let mut garbage = scratch();
    let mut zeroed: Box<CompressScratch> = unsafe { Box::new_zeroed().assume_init() };
    for level in 0..=MAX_LEVEL {
        for input in [&text()[..PART_SIZE], &text()[70_000..71_000]] {
            let a = ours(input, level, Wrapper::Raw, &mut garbage);
            assert_eq!(a, ours(input, level, Wrapper::Raw, &mut zeroed), "level {level}");
        }
    }
}

#[test]
fn chunk_sizes_up_to_a_part_and_past_it() {
    let (mut s, mut t) = (scratch(), tables());
    let data: Vec<u8> = text().iter().zip(random(4 * PART_SIZE, 9)).map(|(&a, b)| a ^ (b & 1)).collect();
    let mut sizes = vec![1, 2, 3, 4, 5, 8, 13, 255, 256, 257, 4095, 4096, 4097, 32767, 32768, 32769, 65535, 65536];
    sizes.extend((1..PART_SIZE).step_by(4999));
    // Past a part: its blocks, then the next part's, one stream.
    sizes.extend([PART_SIZE + 1, 2 * PART_SIZE, 200_000, 4 * PART_SIZE]);
    for len in sizes {
        round_trip_everywhere(&data[..len], &mut s, &mut t);
    }
    let mut out = vec![0u8; 1 << 17];
    assert_eq!(compress(&vec![0; MAX_CHUNK_SIZE + 1], 1, Wrapper::Raw, &mut s, &mut out), Err(Status::ChunkTooLarge));
}

#[test]
fn output_too_small_to_compress() {
    let mut s = scratch();
    let input = &text()[..20_000];
    for level in 0..=MAX_LEVEL {
        let need = ours(input, level, Wrapper::Gzip, &mut s).len();
        let mut out = vec![0u8; need - 1];
        assert_eq!(compress(input, level, Wrapper::Gzip, &mut s, &mut out), Err(Status::OutputTooSmall));
    }
}

#[test]
fn zlib_streams_decode() {
    let mut t = tables();
    let mut big = Vec::new();
    while big.len() < 1 << 20 {
        big.extend_from_slice(text());
    }
    big.truncate(1 << 20);
    let inputs: [&[u8]; 4] = [b"", b"x", &big, &random(200_000, 3)];
    for input in inputs {
        for level in [0, 1, 6, 9] {
            for wrapper in WRAPPERS {
                let packed = zlib_encode(input, level, wrapper);
                let mut back = vec![0u8; input.len()];
                let what = format!("{} bytes, zlib level {level}, {wrapper:?}", input.len());
                assert_eq!(decompress(&packed, wrapper, &mut back, &mut t), Ok(input.len()), "{what}");
                assert!(back == input, "{what}");
                assert_eq!(decompressed_size(&packed, wrapper, &mut t), Ok(input.len()), "{what}");
            }
        }
    }
}

#[test]
fn gzip_members_decode_one_after_another() {
    let mut t = tables();
    let (a, b) = (&text()[..5000], &text()[5000..9000]);
    let mut two = zlib_encode(a, 6, Wrapper::Gzip);
    two.extend(zlib_encode(b, 1, Wrapper::Gzip));
    let mut back = vec![0u8; 9000];
    assert_eq!(decompress(&two, Wrapper::Gzip, &mut back, &mut t), Ok(9000));
    assert!(back == text()[..9000]);
    two.extend_from_slice(b"junk");
    assert_eq!(decompress(&two, Wrapper::Gzip, &mut back, &mut t), Err(Status::Malformed));
}

#[test]
fn ratios_on_text_beat_zlib() {
    let mut s = scratch();
    let text = text();
    let total = |f: &mut dyn FnMut(&[u8]) -> usize| text.chunks(PART_SIZE).map(f).sum::<usize>();
    let ratio = |size: usize| text.len() as f64 / size as f64;
    let ours: Vec<f64> =
        (0..=MAX_LEVEL).map(|level| ratio(total(&mut |c| ours(c, level, Wrapper::Raw, &mut s).len()))).collect();
    let zlib: Vec<f64> =
        [1, 6, 9].iter().map(|&l| ratio(total(&mut |c| zlib_encode(c, l, Wrapper::Raw).len()))).collect();
    eprintln!("text: {} bytes in 64 KiB chunks", text.len());
    for (level, r) in ours.iter().enumerate() {
        eprintln!("  ferrocomp level {level}: ratio {r:.4}");
    }
    eprintln!("  zlib 1: {:.4}, zlib 6: {:.4}, zlib 9: {:.4}", zlib[0], zlib[1], zlib[2]);
    assert!(ours[2] > zlib[0], "level 2 {} vs zlib 1 {}", ours[2], zlib[0]);
    assert!(ours[4] > zlib[1], "level 4 {} vs zlib 6 {}", ours[4], zlib[1]);
    assert!(ours[5] >= ours[4]);
    assert!(ours[1] > ours[0] && ours[0] > 1.3);
}

/// Bits written LSB-first, for hand-built streams.
#[derive(Default)]
struct Bits {
    bytes: Vec<u8>,
    n: usize,
}

impl Bits {
    fn put(&mut self, value: u32, n: u32) -> &mut Self {
        for i in 0..n {
            if self.n.is_multiple_of(8) {
                self.bytes.push(0);
            }
            *self.bytes.last_mut().unwrap() |= (((value >> i) & 1) as u8) << (self.n % 8);
            self.n += 1;
        }
        self
    }

    /// A Huffman code, most significant bit first.
    fn code(&mut self, code: u32, n: u32) -> &mut Self {
        for i in (0..n).rev() {
            self.put((code >> i) & 1, 1);
        }
        self
    }

    /// A fixed-code literal/length symbol.
    fn fixed(&mut self, sym: u32) -> &mut Self {
        match sym {
            0..=143 => self.code(0x30 + sym, 8),
            144..=255 => self.code(0x190 + sym - 144, 9),
            256..=279 => self.code(sym - 256, 7),
            _ => self.code(0xC0 + sym - 280, 8),
        }
    }

    /// A dynamic block header whose precode gives symbols 0–13 4-bit codes and 15–18 5-bit
    /// codes, followed by the code-length `items` (symbol, extra value).
    fn dynamic(&mut self, hlit: u32, hdist: u32, items: &[(u32, u32)]) -> &mut Self {
        self.put(1, 1).put(2, 2).put(hlit - 257, 5).put(hdist - 1, 5).put(15, 4);
        for sym in [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15] {
            self.put(
                if sym == 14 {
                    0
                } else if sym < 14 {
                    4
                } else {
                    5
                },
                3,
            );
        }
        for &(sym, extra) in items {
            match sym {
                0..=13 => self.code(sym, 4),
                _ => self.code(28 + sym - 15, 5),
            };
            match sym {
                16 => self.put(extra, 2),
                17 => self.put(extra, 3),
                18 => self.put(extra, 7),
                _ => self,
            };
        }
        self
    }
}

/// Code-length items giving 257 literal/length codes and one distance code the lengths `lit`
/// (symbol, length) and `dist`, every other length zero, written one length at a time.
fn lengths(lit: &[(usize, u32)], dist: u32) -> Vec<(u32, u32)> {
    let mut lens = vec![0u32; 258];
    for &(sym, len) in lit {
        lens[sym] = len;
    }
    lens[257] = dist;
    lens.into_iter().map(|l| (l, 0)).collect()
}

fn decode(stream: &[u8], out_len: usize) -> Result<usize, Status> {
    let mut t = tables();
    let mut out = vec![0u8; out_len];
    let result = decompress(stream, Wrapper::Raw, &mut out, &mut t);
    let size = decompressed_size(stream, Wrapper::Raw, &mut t);
    match (result, size) {
        (Ok(a), Ok(b)) => assert_eq!(a, b),
        (Err(Status::OutputTooSmall), _) => {}
        (a, b) => assert_eq!(a, b, "decompress and decompressed_size disagree"),
    }
    result
}

#[test]
fn hand_built_streams() {
    // A fixed block: "ab", then a 3-byte match at distance 2, then end of block.
    let mut ok = Bits::default();
    ok.put(1, 1).put(1, 2).fixed(b'a' as u32).fixed(b'b' as u32).fixed(257).code(1, 5).fixed(256);
    assert_eq!(decode(&ok.bytes, 5), Ok(5));
    assert_eq!(decode(&ok.bytes, 4), Err(Status::OutputTooSmall));
    // Distance 3 with only 2 bytes written.
    let mut far = Bits::default();
    far.put(1, 1).put(1, 2).fixed(b'a' as u32).fixed(b'b' as u32).fixed(257).code(2, 5).fixed(256);
    assert_eq!(decode(&far.bytes, 100), Err(Status::BadOffset));
    // Literal/length symbol 286, distance symbol 30.
    let mut sym286 = Bits::default();
    sym286.put(1, 1).put(1, 2).fixed(b'a' as u32).fixed(286).fixed(256);
    assert_eq!(decode(&sym286.bytes, 100), Err(Status::Malformed));
    let mut dist30 = Bits::default();
    dist30.put(1, 1).put(1, 2).fixed(b'a' as u32).fixed(257).code(30, 5).fixed(256);
    assert_eq!(decode(&dist30.bytes, 100), Err(Status::Malformed));
    // Block type 3; stored LEN/NLEN mismatch; trailing bytes after a raw stream.
    assert_eq!(decode(&[0x07, 0, 0], 100), Err(Status::Malformed));
    assert_eq!(decode(&[0x01, 2, 0, 0xFD, 0xFF, b'h', b'i'], 100), Ok(2));
    assert_eq!(decode(&[0x01, 2, 0, 0xFC, 0xFF, b'h', b'i'], 100), Err(Status::Malformed));
    assert_eq!(decode(&[0x01, 2, 0, 0xFD, 0xFF, b'h', b'i', 0], 100), Err(Status::Malformed));
    let mut trailing = ok.bytes.clone();
    trailing.push(0);
    assert_eq!(decode(&trailing, 100), Err(Status::Malformed));

    // Dynamic blocks: a valid one ('A' and end of block, one-bit codes), then broken ones.
    let mut valid = Bits::default();
    valid.dynamic(257, 1, &lengths(&[(65, 1), (256, 1)], 1)).code(0, 1).code(1, 1);
    assert_eq!(decode(&valid.bytes, 10), Ok(1));
    let over = lengths(&[(0, 1), (1, 1), (256, 1)], 1);
    assert_eq!(decode(&Bits::default().dynamic(257, 1, &over).bytes, 10), Err(Status::Malformed));
    let incomplete = lengths(&[(0, 2), (1, 2), (256, 2)], 1);
    assert_eq!(decode(&Bits::default().dynamic(257, 1, &incomplete).bytes, 10), Err(Status::Malformed));
    let no_end = lengths(&[(0, 1), (1, 1)], 1);
    assert_eq!(decode(&Bits::default().dynamic(257, 1, &no_end).bytes, 10), Err(Status::Malformed));
    // Repeat-previous (16) as the first item; a zero run (18) past HLIT + HDIST.
    let mut first16 = vec![(16, 0)];
    first16.extend(&lengths(&[(65, 1), (256, 1)], 1)[3..]);
    assert_eq!(decode(&Bits::default().dynamic(257, 1, &first16).bytes, 10), Err(Status::Malformed));
    let mut past_end = lengths(&[(65, 1), (256, 1)], 1);
    past_end.truncate(250);
    past_end.push((18, 127));
    assert_eq!(decode(&Bits::default().dynamic(257, 1, &past_end).bytes, 10), Err(Status::Malformed));
    // Zero distance codes are allowed while no match needs one.
    let mut no_dist = Bits::default();
    no_dist.dynamic(257, 1, &lengths(&[(65, 1), (256, 1)], 0)).code(0, 1).code(1, 1);
    assert_eq!(decode(&no_dist.bytes, 10), Ok(1));
}

#[test]
fn truncated_streams_say_so() {
    let (mut s, mut t) = (scratch(), tables());
    let input = &text()[..3000];
    for level in [0, 1, 4] {
        for wrapper in WRAPPERS {
            let packed = ours(input, level, wrapper, &mut s);
            let mut out = vec![0u8; input.len()];
            for cut in 0..packed.len() {
                let what = format!("level {level}, {wrapper:?}, cut at {cut} of {}", packed.len());
                assert_eq!(decompress(&packed[..cut], wrapper, &mut out, &mut t), Err(Status::Truncated), "{what}");
                assert_eq!(decompressed_size(&packed[..cut], wrapper, &mut t), Err(Status::Truncated), "{what}");
            }
            let mut short = vec![0u8; input.len() - 1];
            assert_eq!(decompress(&packed, wrapper, &mut short, &mut t), Err(Status::OutputTooSmall));
        }
    }
}

#[test]
fn wrapper_checks() {
    let (mut s, mut t) = (scratch(), tables());
    let input = &text()[..1000];
    let mut out = vec![0u8; 1000];
    let zlib = ours(input, 2, Wrapper::Zlib, &mut s);
    assert_eq!(&zlib[..2], &[0x78, 0x5E]);
    let mut bad = zlib.clone();
    bad[1] ^= 1; // FCHECK
    assert_eq!(decompress(&bad, Wrapper::Zlib, &mut out, &mut t), Err(Status::Malformed));
    let fdict = [0x78, 0x3F]; // FDICT set, FCHECK valid
    assert_eq!((u16::from_be_bytes(fdict) % 31, fdict[1] & 0x20), (0, 0x20));
    let mut dict = zlib.clone();
    dict[..2].copy_from_slice(&fdict);
    assert_eq!(decompress(&dict, Wrapper::Zlib, &mut out, &mut t), Err(Status::Malformed));
    let mut adler = zlib.clone();
    *adler.last_mut().unwrap() ^= 1;
    assert_eq!(decompress(&adler, Wrapper::Zlib, &mut out, &mut t), Err(Status::BadChecksum));
    assert_eq!(decompressed_size(&adler, Wrapper::Zlib, &mut t), Ok(1000));

    let gzip = ours(input, 2, Wrapper::Gzip, &mut s);
    assert_eq!(&gzip[..10], &[0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 255]);
    let n = gzip.len();
    let mut crc = gzip.clone();
    crc[n - 8] ^= 1;
    assert_eq!(decompress(&crc, Wrapper::Gzip, &mut out, &mut t), Err(Status::BadChecksum));
    let mut size = gzip.clone();
    size[n - 4] ^= 1;
    assert_eq!(decompress(&size, Wrapper::Gzip, &mut out, &mut t), Err(Status::BadChecksum));
    assert_eq!(decompressed_size(&size, Wrapper::Gzip, &mut t), Err(Status::BadChecksum));
    let mut magic = gzip.clone();
    magic[1] = 0x8C;
    assert_eq!(decompress(&magic, Wrapper::Gzip, &mut out, &mut t), Err(Status::Malformed));
    // Optional header fields are skipped.
    let mut named = gzip[..10].to_vec();
    named[3] = 4 | 8 | 16 | 2;
    named.extend([3, 0, 1, 2, 3]);
    named.extend(b"name\0comment\0");
    named.extend([0xAB, 0xCD]);
    named.extend(&gzip[10..]);
    assert_eq!(decompress(&named, Wrapper::Gzip, &mut out, &mut t), Ok(1000));
    let mut reserved = gzip.clone();
    reserved[3] = 0x20;
    assert_eq!(decompress(&reserved, Wrapper::Gzip, &mut out, &mut t), Err(Status::Malformed));
}

#[test]
fn corrupt_streams_never_panic() {
    let (mut s, mut t) = (scratch(), tables());
    let mut seeds = Vec::new();
    for (i, level) in [0u8, 1, 3, 5].into_iter().enumerate() {
        for wrapper in WRAPPERS {
            let start = 7000 * i;
            seeds.push((ours(&text()[start..start + 5000], level, wrapper, &mut s), wrapper));
        }
    }
    seeds.push((zlib_encode(&text()[..5000], 6, Wrapper::Raw), Wrapper::Raw));
    seeds.push((ours(&random(3000, 5), 2, Wrapper::Raw, &mut s), Wrapper::Raw));
    let mut rng = 0x1234_5678_9ABC_DEF1u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut out = vec![0u8; 1 << 16];
    let mut agreed = 0;
    for round in 0..6000 {
        let (seed, wrapper) = &seeds[round % seeds.len()];
        let mut data = seed.clone();
        match next() % 4 {
            0 => data.truncate(next() as usize % data.len()),
            1 => data = random(next() as usize % 600, next()),
            _ => {
                for _ in 0..1 + next() % 4 {
                    let bit = next() as usize % (8 * data.len());
                    data[bit / 8] ^= 1 << (bit % 8);
                }
            }
        }
        let a = decompress(&data, *wrapper, &mut out, &mut t);
        let b = decompressed_size(&data, *wrapper, &mut t);
        if let (Ok(a), Ok(b)) = (a, b) {
            assert_eq!(a, b);
            agreed += 1;
        }
    }
    eprintln!("{agreed} corrupted streams still decoded");
}

#[test]
fn bounds() {
    assert!(max_compressed_size(0, Wrapper::Raw) >= 2);
    assert_eq!(deflate::max_decompressed_size(10), 10_320);
    assert_eq!(deflate::max_decompressed_size(1 << 30), deflate::MAX_DECOMPRESSED_CHUNK_SIZE);
    assert_eq!(Wrapper::from_id(2), Some(Wrapper::Gzip));
    assert_eq!(Wrapper::from_id(3), None);
    assert!(size_of::<DecodeTables>() <= 12 * 1024, "{}", size_of::<DecodeTables>());
    eprintln!("size_of CompressScratch {} DecodeTables {}", size_of::<CompressScratch>(), size_of::<DecodeTables>());
}

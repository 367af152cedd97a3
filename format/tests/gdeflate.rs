//! GDeflate pages: round trips, block types, agreement with deflate, corrupt pages.

use ferrocomp_format::Status;
use ferrocomp_format::deflate::{self, CompressScratch, DecodeTables, MAX_LEVEL, PART_SIZE, Wrapper};
use ferrocomp_format::gdeflate::{self, MAX_CHUNK_SIZE, compress, decompress, decompressed_size, max_compressed_size};

mod common;
use common::source_text;

fn scratch() -> Box<CompressScratch> {
    unsafe { Box::new_zeroed().assume_init() }
}

fn tables() -> Box<DecodeTables> {
    unsafe { Box::new_zeroed().assume_init() }
}

/// Four parts' worth of text like the repository's sources.
fn text() -> Vec<u8> {
    source_text(4 * PART_SIZE, 1)
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

fn page(input: &[u8], level: u8, s: &mut CompressScratch) -> Vec<u8> {
    let mut out = vec![0u8; max_compressed_size(input.len())];
    let n = compress(input, level, s, &mut out).unwrap();
    out.truncate(n);
    out
}

/// The block type of a page's first block: the first three bits of sub-stream 0.
fn first_block_type(page: &[u8]) -> u8 {
    (page[0] >> 1) & 3
}

#[test]
fn round_trips_and_agrees_with_deflate() {
    let (mut s, mut t) = (scratch(), tables());
    let text = text();
    let repetitive: Vec<u8> = (0..40_000).map(|i| b"abcabcabd"[i % 9]).collect();
    let inputs: [&[u8]; 11] = [
        b"",
        b"a",
        b"hello, hello, hello world",
        &repetitive,
        &random(PART_SIZE, 1),
        &text[..PART_SIZE],
        &text[..1000],
        &text[5000..5031],
        &text[..65535],
        // Past a part, as nvCOMP's single-chunk bitstreams hold: its blocks, then the next part's.
        &text[..PART_SIZE + 1],
        &text[..200_000],
    ];
    for input in inputs {
        for level in 0..=MAX_LEVEL {
            let what = format!("{} bytes at level {level}", input.len());
            let p = page(input, level, &mut s);
            assert!(p.len() <= max_compressed_size(input.len()), "{what}");
            assert_eq!(p.len() % 4, 0, "{what}");
            assert_eq!(page(input, level, &mut s), p, "not deterministic: {what}");
            let mut back = vec![0u8; input.len()];
            assert_eq!(decompress(&p, &mut back, &mut t), Ok(input.len()), "{what}");
            assert!(back == input, "{what}");
            assert_eq!(decompressed_size(&p, &mut t), Ok(input.len()), "{what}");
            // The same blocks and symbols as deflate's, only laid out differently: the sizes
            // differ by the packets' padding (under 256 bytes), deflate's stored-block alignment
            // and NLEN, and the 5 extra bits Deflate64 spends on each 258-byte match.
            let mut raw = vec![0u8; deflate::max_compressed_size(input.len(), Wrapper::Raw)];
            let raw_len = deflate::compress(input, level, Wrapper::Raw, &mut s, &mut raw).unwrap();
            let most = raw_len + 256 + input.len() / 258 * 5 / 8 + 1;
            assert!(p.len() + 16 >= raw_len && p.len() <= most, "{what}: {} vs {raw_len}", p.len());
            assert_eq!(first_block_type(&p), (raw[0] >> 1) & 3, "{what}");
        }
    }
    let mut out = vec![0u8; 1 << 18];
    assert_eq!(compress(&vec![0; MAX_CHUNK_SIZE + 1], 1, &mut s, &mut out), Err(Status::ChunkTooLarge));
    assert_eq!(compress(&text, 4, &mut s, &mut out[..1000]), Err(Status::OutputTooSmall));
}

#[test]
fn stored_fixed_and_dynamic_blocks() {
    let (mut s, mut t) = (scratch(), tables());
    let cases: [(Vec<u8>, u8); 3] =
        [(random(30_000, 7), 0), (b"a short string, a short string".to_vec(), 1), (text()[..20_000].to_vec(), 2)];
    for (input, block_type) in cases {
        for level in 0..=MAX_LEVEL {
            let p = page(&input, level, &mut s);
            assert_eq!(first_block_type(&p), block_type, "level {level}");
            let mut back = vec![0u8; input.len()];
            assert_eq!(decompress(&p, &mut back, &mut t), Ok(input.len()));
            assert!(back == input);
            assert_eq!(decompress(&p, &mut back[..input.len() - 1], &mut t), Err(Status::OutputTooSmall));
        }
    }
}

#[test]
fn an_empty_page_is_one_packet_per_lane_and_one_more() {
    let (mut s, mut t) = (scratch(), tables());
    let p = page(b"", 1, &mut s);
    // A fixed block holding only end-of-block: 10 bits in sub-stream 0, which refills once.
    assert_eq!(p.len(), 132);
    assert_eq!(&p[..4], &[0x03, 0, 0, 0]);
    assert!(p[4..].iter().all(|&b| b == 0));
    assert_eq!(decompress(&p, &mut [], &mut t), Ok(0));
}

#[test]
fn padding_truncation_and_trailing_bytes() {
    let (mut s, mut t) = (scratch(), tables());
    let input = &text()[..4000];
    let p = page(input, 2, &mut s);
    let mut out = vec![0u8; input.len()];
    for cut in 0..p.len() {
        assert_eq!(decompress(&p[..cut], &mut out, &mut t), Err(Status::Truncated), "cut {cut}");
        assert_eq!(decompressed_size(&p[..cut], &mut t), Err(Status::Truncated), "cut {cut}");
    }
    let mut padded = p.clone();
    padded.extend([0u8; 128]);
    assert_eq!(decompress(&padded, &mut out, &mut t), Ok(input.len()));
    padded.push(1);
    assert_eq!(decompress(&padded, &mut out, &mut t), Err(Status::Malformed));
}

#[test]
fn corrupt_pages_never_panic() {
    let (mut s, mut t) = (scratch(), tables());
    let text = text();
    let mut seeds: Vec<Vec<u8>> =
        (0..=MAX_LEVEL).map(|level| page(&text[level as usize * 3000..][..6000], level, &mut s)).collect();
    seeds.push(page(&random(3000, 3), 1, &mut s));
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut out = vec![0u8; 1 << 16];
    let mut decoded = 0;
    for round in 0..5000 {
        let mut data = seeds[round % seeds.len()].clone();
        match next() % 4 {
            0 => data.truncate(next() as usize % data.len()),
            1 => data = random(next() as usize % 800, next()),
            _ => {
                for _ in 0..1 + next() % 4 {
                    let bit = next() as usize % (8 * data.len());
                    data[bit / 8] ^= 1 << (bit % 8);
                }
            }
        }
        let a = decompress(&data, &mut out, &mut t);
        let b = decompressed_size(&data, &mut t);
        if let (Ok(a), Ok(b)) = (a, b) {
            assert_eq!(a, b);
            decoded += 1;
        }
    }
    eprintln!("{decoded} corrupted pages still decoded");
}

#[test]
fn bounds() {
    assert_eq!(gdeflate::max_decompressed_size(10), 291_290);
    assert_eq!(gdeflate::max_decompressed_size(1 << 20), deflate::MAX_DECOMPRESSED_CHUNK_SIZE);
    assert!(max_compressed_size(0) >= 132);
}

/// A page from the DirectStorage reference compressor (libdeflate's GDeflate, level 12). Its
/// 999-byte match uses Deflate64's length symbol 285 (3 plus 16 extra bits).
const REFERENCE_PAGE: [u8; 256] = {
    let mut page = [0u8; 256];
    let head: [u8; 128] = [
        0x73, 0x07, 0x00, 0x00, 0x2E, 0x00, 0x00, 0x00, 0xA9, 0x00, 0x00, 0x00, 0x69, 0x00, 0x00, 0x00, //
        0x39, 0x00, 0x00, 0x00, 0x89, 0x00, 0x00, 0x00, 0x25, 0x00, 0x00, 0x00, 0xA9, 0x00, 0x00, 0x00, //
        0x56, 0x00, 0x00, 0x00, 0x0A, 0x00, 0x00, 0x00, 0x89, 0x00, 0x00, 0x00, 0xA3, 0xE4, 0x03, 0x00, //
        0x0A, 0x00, 0x00, 0x00, 0x89, 0x00, 0x00, 0x00, 0x79, 0x00, 0x00, 0x00, 0x29, 0x00, 0x00, 0x00, //
        0x0A, 0x00, 0x00, 0x00, 0xEA, 0x00, 0x00, 0x00, 0x89, 0x00, 0x00, 0x00, 0x49, 0x00, 0x00, 0x00, //
        0xEA, 0x00, 0x00, 0x00, 0x0A, 0x00, 0x00, 0x00, 0x5A, 0x00, 0x00, 0x00, 0x0A, 0x00, 0x00, 0x00, //
        0xC6, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x56, 0x00, 0x00, 0x00, //
        0x0A, 0x00, 0x00, 0x00, 0x89, 0x00, 0x00, 0x00, 0x49, 0x00, 0x00, 0x00, 0xA3, 0x53, 0x02, 0x10, //
    ];
    let mut i = 0;
    while i < 128 {
        page[i] = head[i];
        i += 1;
    }
    page
};

#[test]
fn reference_pages_decode() {
    let mut input = b"GDeflate: ".to_vec();
    input.extend(std::iter::repeat_n(b'a', 1000));
    input.extend(b" and 'ab' * 300: ");
    for _ in 0..300 {
        input.extend(b"ab");
    }
    let mut t = tables();
    let mut out = vec![0u8; input.len()];
    assert_eq!(decompress(&REFERENCE_PAGE, &mut out, &mut t), Ok(input.len()));
    assert!(out == input);
    assert_eq!(decompressed_size(&REFERENCE_PAGE, &mut t), Ok(input.len()));
}

//! Snappy against the `snap` crate (both directions, byte-exact), exact element encodings,
//! malformed streams, and a fuzz loop that must never panic; plus a check that the LZ4 bytes
//! are those written before the parse was shared with Snappy.

use ferrocomp_format::snappy::{self, MAX_CHUNK_SIZE};
use ferrocomp_format::{DataType, Status, lz4};
mod common;
use common::{XorShift, source_text};

const DATA_TYPES: [DataType; 4] = [DataType::Char, DataType::Short, DataType::Int, DataType::LongLong];

/// Text-like bytes: words from a small vocabulary, now and then a random byte.
fn words(seed: u64, len: usize) -> Vec<u8> {
    const WORDS: [&[u8]; 12] = [
        b"the ",
        b"chunk ",
        b"warp ",
        b"offset ",
        b"literal ",
        b"match ",
        b"\n",
        b"snappy ",
        b"lz4 ",
        b"0x1234 ",
        b"compress ",
        b"a ",
    ];
    let mut rng = XorShift(seed);
    let mut out = Vec::with_capacity(len + 16);
    while out.len() < len {
        let r = rng.next();
        if r.is_multiple_of(7) {
            out.push((r >> 8) as u8);
        } else {
            out.extend_from_slice(WORDS[(r >> 16) as usize % WORDS.len()]);
        }
    }
    out.truncate(len);
    out
}

fn compress(input: &[u8], data_type: DataType) -> Vec<u8> {
    let mut table = [0u16; lz4::HASH_ENTRIES];
    let mut out = vec![0u8; snappy::max_compressed_size(input.len())];
    let n = snappy::compress(input, data_type, &mut table, &mut out).unwrap();
    out.truncate(n);
    out
}

fn decompress(stream: &[u8], len: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; len];
    let n = snappy::decompress(stream, &mut out)?;
    out.truncate(n);
    Ok(out)
}

/// Compresses with us, then decodes with us and with snap; returns the compressed size.
fn round_trip(input: &[u8], data_type: DataType) -> usize {
    let stream = compress(input, data_type);
    assert!(stream.len() <= snappy::max_compressed_size(input.len()));
    assert!(input.len() <= snappy::max_decompressed_size(stream.len()));
    assert_eq!(snappy::decompressed_size(&stream), Ok(input.len()));
    assert_eq!(snap::raw::decompress_len(&stream).unwrap(), input.len());
    assert_eq!(decompress(&stream, input.len()).as_deref(), Ok(input), "{data_type:?}");
    assert_eq!(snap::raw::Decoder::new().decompress_vec(&stream).unwrap(), input, "{data_type:?}");
    stream.len()
}

/// Compresses with snap, then decodes with us.
fn from_snap(input: &[u8]) -> usize {
    let stream = snap::raw::Encoder::new().compress_vec(input).unwrap();
    assert_eq!(snappy::decompressed_size(&stream), Ok(input.len()));
    assert_eq!(decompress(&stream, input.len()).as_deref(), Ok(input));
    // Room to spare changes nothing.
    assert_eq!(decompress(&stream, input.len() + 100).as_deref(), Ok(input));
    stream.len()
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

#[test]
fn lz4_bytes_are_those_of_before_the_shared_parse() {
    // (seed, length, data type, compressed size, FNV-1a of the block), from `lz4::compress`
    // before its parse was split out.
    const GOLDEN: [(u64, usize, DataType, usize, u64); 24] = [
        (1, 0, DataType::Char, 1, 0xaf63bd4c8601b7df),
        (1, 0, DataType::Short, 1, 0xaf63bd4c8601b7df),
        (1, 0, DataType::Int, 1, 0xaf63bd4c8601b7df),
        (1, 0, DataType::LongLong, 1, 0xaf63bd4c8601b7df),
        (2, 1, DataType::Char, 2, 0x08693c07b51a3139),
        (2, 1, DataType::Short, 2, 0x08693c07b51a3139),
        (2, 1, DataType::Int, 2, 0x08693c07b51a3139),
        (2, 1, DataType::LongLong, 2, 0x08693c07b51a3139),
        (3, 100, DataType::Char, 87, 0xb23a23ccafb07e41),
        (3, 100, DataType::Short, 100, 0x25fb6ae6a3c96030),
        (3, 100, DataType::Int, 102, 0xb2e81e517781de4d),
        (3, 100, DataType::LongLong, 102, 0xb2e81e517781de4d),
        (4, 5000, DataType::Char, 2236, 0x0b7e7a678da709bb),
        (4, 5000, DataType::Short, 2529, 0x60a14e701817c516),
        (4, 5000, DataType::Int, 3499, 0xf756da22fbab3980),
        (4, 5000, DataType::LongLong, 4660, 0xd823fea6e1b68d97),
        (5, 70000, DataType::Char, 29219, 0xe0d0d7ad034d7f28),
        (5, 70000, DataType::Short, 32711, 0x7973d83ec0ef2d07),
        (5, 70000, DataType::Int, 41360, 0xdee0261bb9cd338b),
        (5, 70000, DataType::LongLong, 58266, 0xac2f497c3912e6d3),
        (6, 300000, DataType::Char, 124820, 0x93302dd4e1c1b5ad),
        (6, 300000, DataType::Short, 138891, 0xe809751f5449c9a2),
        (6, 300000, DataType::Int, 173478, 0x856f5423a8fa2ce1),
        (6, 300000, DataType::LongLong, 248395, 0x233f972604ecdae9),
    ];
    let mut table = [0u16; lz4::HASH_ENTRIES];
    for (seed, len, data_type, size, hash) in GOLDEN {
        let input = words(seed, len);
        let mut out = vec![0u8; lz4::max_compressed_size(len)];
        let n = lz4::compress(&input, data_type, &mut table, &mut out).unwrap();
        assert_eq!((n, fnv(&out[..n])), (size, hash), "{seed} {len} {data_type:?}");
        let mut back = vec![0u8; len];
        assert_eq!(lz4::decompress(&out[..n], &mut back), Ok(len));
        assert_eq!(back, input);
    }
}

#[test]
fn small_inputs_encode_exactly() {
    for data_type in DATA_TYPES {
        assert_eq!(compress(&[], data_type), [0]);
        assert_eq!(compress(b"x", data_type), [1, 0, b'x']);
        assert_eq!(compress(b"hello", data_type), [5, 4 << 2, b'h', b'e', b'l', b'l', b'o']);
    }
    // 12 literals, then a 24-byte copy at offset 12 (copy-2: longer than 11), then 5 literals.
    let input = b"abcdefghijklabcdefghijklabcdefghijklxyzuv";
    let mut expected = vec![41, 11 << 2];
    expected.extend_from_slice(b"abcdefghijkl");
    expected.extend_from_slice(&[23 << 2 | 2, 12, 0, 4 << 2]);
    expected.extend_from_slice(b"xyzuv");
    assert_eq!(compress(input, DataType::Char), expected);
    round_trip(input, DataType::Char);
}

#[test]
fn round_trips_at_every_data_type() {
    let mut rng = XorShift(0x5eed);
    let text = source_text(2 << 20, 1);
    let inputs: Vec<Vec<u8>> = vec![
        vec![],
        vec![7],
        b"short, short, short input".to_vec(),
        (0..100_000).map(|i| b"abcdefgh"[i % 8]).collect(),
        vec![0; 200_000],
        (0..150_000u32).flat_map(|i| (i / 3).to_le_bytes()).collect(),
        rng.bytes(100_000),
        words(9, 250_000),
        text,
    ];
    for input in &inputs {
        for data_type in DATA_TYPES {
            let size = round_trip(input, data_type);
            if input.len() >= 100_000 && input.iter().all(|&b| b == b'a' + (b % 8)) {
                assert!(size < input.len() / 15, "{data_type:?}: {size}");
            }
        }
    }
    // A run of zeros is a literal and copies of 64 bytes at three bytes each.
    let zeros = compress(&[0; 200_000], DataType::Char);
    assert!(zeros.len() < 200_000 / 64 * 3 + 50, "{}", zeros.len());
}

#[test]
fn snap_encoder_output_decodes_with_ours() {
    let mut rng = XorShift(42);
    let mut mixed = Vec::new();
    while mixed.len() < 3 << 20 {
        let piece = rng.below(5000) + 1;
        if rng.next().is_multiple_of(2) {
            mixed.extend(rng.bytes(piece));
        } else {
            let from = mixed.len().saturating_sub(rng.below(200_000) + 1);
            let end = (from + piece).min(mixed.len());
            mixed.extend_from_within(from..end);
        }
    }
    for input in [
        vec![],
        vec![1],
        b"abc".to_vec(),
        vec![0; 70_000],
        words(1, 65_536),
        words(2, 70_000),
        words(3, 5 << 20),
        rng.bytes(1 << 20),
        source_text(2 << 20, 1),
        mixed,
    ] {
        from_snap(&input);
    }
}

#[test]
fn large_inputs_round_trip() {
    let mut rng = XorShift(7);
    let mut input = words(11, 4 << 20);
    input.extend(rng.bytes(1 << 20));
    input.extend(vec![0xAB; 1 << 20]);
    round_trip(&input, DataType::Char);
    round_trip(&input, DataType::Int);
    let largest = words(12, MAX_CHUNK_SIZE);
    round_trip(&largest, DataType::Char);
}

#[test]
fn compress_limits() {
    let mut table = [0u16; lz4::HASH_ENTRIES];
    let big = vec![0u8; MAX_CHUNK_SIZE + 1];
    let mut out = vec![0u8; 64];
    assert_eq!(snappy::compress(&big, DataType::Char, &mut table, &mut out), Err(Status::ChunkTooLarge));
    let input = words(3, 10_000);
    let size = compress(&input, DataType::Char).len();
    for short in [0, 1, 2, size / 2, size - 1] {
        assert_eq!(
            snappy::compress(&input, DataType::Char, &mut table, &mut out.repeat(size)[..short]),
            Err(Status::OutputTooSmall),
            "{short}"
        );
    }
    // Incompressible data stays within the bound.
    let mut rng = XorShift(99);
    for len in [0, 1, 59, 60, 61, 256, 257, 65_536, 65_537, 1 << 20] {
        let input = rng.bytes(len);
        let size = round_trip(&input, DataType::Char);
        assert!(size <= len + 9, "{len}: {size}");
    }
}

#[test]
fn element_helpers_write_the_reference_encoding() {
    let mut buf = [0u8; 16];
    for (n, bytes) in [
        (0, &[0][..]),
        (127, &[0x7F]),
        (128, &[0x80, 0x01]),
        (300, &[0xAC, 0x02]),
        (u32::MAX as usize, &[0xFF, 0xFF, 0xFF, 0xFF, 0x0F]),
    ] {
        assert_eq!(snappy::preamble_len(n), bytes.len());
        assert_eq!(snappy::write_preamble(&mut buf, n), bytes.len());
        assert_eq!(&buf[..bytes.len()], bytes);
        assert_eq!(snappy::read_preamble(bytes), Ok((n, bytes.len())));
    }
    for (count, bytes) in [
        (1, &[0][..]),
        (60, &[59 << 2]),
        (61, &[60 << 2, 60]),
        (256, &[60 << 2, 255]),
        (257, &[61 << 2, 0, 1]),
        (65_536, &[61 << 2, 255, 255]),
        (65_537, &[62 << 2, 0, 0, 1]),
        (1 << 24, &[62 << 2, 255, 255, 255]),
        ((1 << 24) + 1, &[63 << 2, 0, 0, 0, 1]),
    ] {
        assert_eq!(snappy::literal_header_len(count), bytes.len());
        assert_eq!(snappy::write_literal_header(&mut buf, count), bytes.len());
        assert_eq!(&buf[..bytes.len()], bytes, "{count}");
    }
    // Copy-1 tags: offset bits 8..=10, length - 4, kind 01.
    let mut copies = [0u8; 32];
    for (offset, len, bytes) in [
        (1, 4, &[1, 1][..]),
        (2047, 11, &[7 << 5 | 7 << 2 | 1, 0xFF]),
        (2048, 11, &[10 << 2 | 2, 0, 8]),
        (5, 3, &[2 << 2 | 2, 5, 0]),
        (5, 12, &[11 << 2 | 2, 5, 0]),
        (5, 64, &[63 << 2 | 2, 5, 0]),
        (5, 65, &[59 << 2 | 2, 5, 0, 1 << 2 | 1, 5]),
        (5, 67, &[59 << 2 | 2, 5, 0, 3 << 2 | 1, 5]),
        (5, 68, &[63 << 2 | 2, 5, 0, 1, 5]),
        (300, 139, &[63 << 2 | 2, 44, 1, 63 << 2 | 2, 44, 1, 1 << 5 | 7 << 2 | 1, 44]),
        (300, 140, &[63 << 2 | 2, 44, 1, 63 << 2 | 2, 44, 1, 11 << 2 | 2, 44, 1]),
        (65_535, 70, &[63 << 2 | 2, 255, 255, 5 << 2 | 2, 255, 255]),
        (65_536, 8, &[7 << 2 | 3, 0, 0, 1, 0]),
    ] {
        assert_eq!(snappy::copy_elements_len(offset, len), bytes.len(), "{offset} {len}");
        assert_eq!(snappy::write_copies(&mut copies, offset, len), bytes.len());
        assert_eq!(&copies[..bytes.len()], bytes, "{offset} {len}");
    }
}

/// A stream built element by element: `(literal bytes, offset, copy length)` steps.
fn build(steps: &[(&[u8], usize, usize)]) -> (Vec<u8>, Vec<u8>) {
    let mut expected = Vec::new();
    let mut body = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    for &(literals, offset, len) in steps {
        if !literals.is_empty() {
            let n = snappy::write_literal_header(&mut buf, literals.len());
            body.extend_from_slice(&buf[..n]);
            body.extend_from_slice(literals);
            expected.extend_from_slice(literals);
        }
        let n = snappy::write_copies(&mut buf, offset, len);
        body.extend_from_slice(&buf[..n]);
        for _ in 0..len {
            expected.push(expected[expected.len() - offset]);
        }
    }
    let mut stream = vec![0u8; 5];
    let n = snappy::write_preamble(&mut stream, expected.len());
    stream.truncate(n);
    stream.extend(body);
    (stream, expected)
}

#[test]
fn copy4_and_overlapping_copies_decode_as_snap_does() {
    let mut rng = XorShift(3);
    let far = rng.bytes(70_000);
    let (stream, expected) = build(&[
        (b"a", 1, 1),
        (b"", 1, 200),
        (b"xyz", 3, 10),
        (b"", 7, 100),
        (&far, 70_000, 64),
        (b"", 65_536, 1000),
        (b"", 1, 3),
        (b"q", 2, 2),
        (&far[..100], 2000, 11),
        (b"", 2048, 4),
    ]);
    assert!(stream.windows(1).any(|w| w[0] & 3 == 3));
    assert_eq!(snap::raw::Decoder::new().decompress_vec(&stream).unwrap(), expected);
    assert_eq!(decompress(&stream, expected.len()), Ok(expected));
}

#[test]
fn max_decompressed_size_bounds_dense_streams() {
    assert_eq!(snappy::max_decompressed_size(0), 0);
    assert_eq!(snappy::max_decompressed_size(1), 0);
    assert_eq!(snappy::max_decompressed_size(3), 11);
    assert_eq!(snappy::max_decompressed_size(4), 64);
    assert_eq!(snappy::max_decompressed_size(usize::MAX), u32::MAX as usize);
    // One literal, then nothing but 64-byte copies: the densest stream there is.
    let (stream, expected) = build(&[(b"z", 1, 64 * 10_000)]);
    assert!(expected.len() <= snappy::max_decompressed_size(stream.len()));
    assert!(expected.len() * 11 / 10 > snappy::max_decompressed_size(stream.len()));
    assert_eq!(decompress(&stream, expected.len()), Ok(expected));
}

#[test]
fn malformed_streams_give_statuses() {
    let mut out = [0u8; 64];
    let cases: [(&[u8], Status); 17] = [
        (&[], Status::Truncated),
        (&[0x80], Status::Truncated),
        (&[0xFF, 0xFF, 0xFF], Status::Truncated),
        (&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00], Status::Malformed),
        (&[0x80, 0x80, 0x80, 0x80, 0x10], Status::Malformed),
        // Literals running past the end, in the header or the bytes.
        (&[5, 4 << 2, b'a', b'b'], Status::Truncated),
        (&[5, 60 << 2], Status::Truncated),
        (&[5, 63 << 2, 4, 0, 0], Status::Truncated),
        (&[5, 63 << 2, 0xFF, 0xFF, 0xFF, 0xFF], Status::Truncated),
        // Copies cut short.
        (&[5, 0, b'a', 0b01], Status::Truncated),
        (&[5, 0, b'a', 3 << 2 | 2, 1], Status::Truncated),
        (&[5, 0, b'a', 3 << 2 | 3, 1, 0, 0], Status::Truncated),
        // Offsets of zero or before the start.
        (&[5, 0, b'a', 1, 0], Status::BadOffset),
        (&[5, 0, b'a', 3 << 2 | 2, 2, 0], Status::BadOffset),
        (&[5, 3 << 2 | 2, 0, 0], Status::BadOffset),
        // Fewer bytes than the preamble says, and more.
        (&[5, 2 << 2, b'a', b'b', b'c'], Status::Malformed),
        (&[2, 2 << 2, b'a', b'b', b'c'], Status::Malformed),
    ];
    for (stream, status) in cases {
        assert_eq!(snappy::decompress(stream, &mut out), Err(status), "{stream:?}");
        assert!(snap::raw::Decoder::new().decompress(stream, &mut out).is_err(), "{stream:?}");
    }
    // A copy past the preamble's length.
    assert_eq!(snappy::decompress(&[3, 0, b'a', 3 << 2 | 2, 1, 0], &mut out), Err(Status::Malformed));
    assert_eq!(snappy::decompress(&[5, 4 << 2, 1, 2, 3, 4, 5], &mut out[..4]), Err(Status::OutputTooSmall));
    assert_eq!(snappy::decompress(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F], &mut out), Err(Status::OutputTooSmall));
    // A preamble over what the bytes after it can decode to: the size query refuses it.
    assert_eq!(snappy::decompressed_size(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F]), Err(Status::Malformed));
    assert_eq!(snappy::decompressed_size(&[0x80, 0x00]), Ok(0));
    assert_eq!(snappy::decompress(&[0x80, 0x00], &mut out), Ok(0));
}

#[test]
fn fuzzed_streams_never_panic_and_agree_with_snap() {
    let mut rng = XorShift(0xF022);
    let seeds: Vec<Vec<u8>> = vec![
        compress(&words(1, 3000), DataType::Char),
        compress(&words(2, 40_000), DataType::Int),
        compress(&[0; 5000], DataType::Char),
        build(&[(b"ab", 2, 300), (b"cdefg", 7, 20), (&[9; 70], 70, 65_600), (b"", 65_700, 64)]).0,
        snap::raw::Encoder::new().compress_vec(&words(3, 20_000)).unwrap(),
    ];
    let mut outcomes = [0usize; 7];
    let mut out = vec![0u8; 1 << 17];
    for round in 0..40_000 {
        let mut stream = seeds[round % seeds.len()].clone();
        match rng.below(4) {
            0 => {
                for _ in 0..rng.below(4) + 1 {
                    let at = rng.below(stream.len());
                    stream[at] ^= 1 << rng.below(8);
                }
            }
            1 => stream.truncate(rng.below(stream.len())),
            2 => {
                let at = rng.below(stream.len());
                let end = (at + rng.below(8) + 1).min(stream.len());
                for b in &mut stream[at..end] {
                    *b = rng.next() as u8;
                }
            }
            _ => {
                let len = rng.below(64);
                stream = rng.bytes(len);
            }
        }
        let room = rng.below(out.len() + 1);
        let ours = snappy::decompress(&stream, &mut out[..room]);
        let code = match ours {
            Ok(_) => 0,
            Err(status) => status as usize,
        };
        outcomes[code] += 1;
        let theirs = snap::raw::Decoder::new().decompress(&stream, &mut vec![0u8; room]);
        if let Ok(n) = ours {
            assert_eq!(Some(n), theirs.as_ref().ok().copied(), "{stream:?}");
            assert_eq!(snap::raw::Decoder::new().decompress_vec(&stream).unwrap(), &out[..n]);
        } else if theirs.is_ok() {
            // snap reads preambles of up to ten bytes; we stop at five.
            assert_eq!(ours, Err(Status::Malformed), "{stream:?}");
            assert!(stream.iter().take(5).all(|&b| b & 0x80 != 0), "{stream:?}");
        }
        let _ = snappy::decompressed_size(&stream);
    }
    eprintln!("fuzz outcomes by status code: {outcomes:?}");
    let reached = [Status::Success, Status::Truncated, Status::BadOffset, Status::OutputTooSmall, Status::Malformed];
    assert!(reached.iter().all(|&status| outcomes[status as usize] > 0), "{outcomes:?}");
}

#[test]
fn text_ratio_against_snap() {
    let text = source_text(2 << 20, 1);
    let ours = round_trip(&text, DataType::Char);
    let theirs = from_snap(&text);
    let chunks = |f: &dyn Fn(&[u8]) -> usize| text.chunks(1 << 16).map(f).sum::<usize>();
    let ours_64k = chunks(&|c| compress(c, DataType::Char).len());
    let theirs_64k = chunks(&|c| snap::raw::Encoder::new().compress_vec(c).unwrap().len());
    let ratio = |size: usize| text.len() as f64 / size as f64;
    eprintln!(
        "source-like text, {} bytes: ours {ours} (ratio {:.3}), snap {theirs} (ratio {:.3}); \
         in 64 KiB chunks: ours {:.3}, snap {:.3}",
        text.len(),
        ratio(ours),
        ratio(theirs),
        ratio(ours_64k),
        ratio(theirs_64k),
    );
    assert!(ratio(ours) > 1.5);
}

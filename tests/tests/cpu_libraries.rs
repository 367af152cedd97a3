//! The CPU path's libraries (lz4_flex, snap, zlib-rs, libzstd, also for Blosc's streams)
//! against the scalar decoders they stand in for: on valid chunks (ours at every level, the reference libraries'), on thousands of
//! damaged ones and with outputs a byte short, `decompress_cpu` gives exactly the status, size and
//! bytes of `decompress_scalar`, and valid chunks are decoded by the library itself. Then the
//! streams each bare library takes where ours refuses them, one by one.

use ferrocomp::{BatchCodec, Blosc, DataType, Deflate, Lz4, Options, Shuffle, Snappy, Status, Wrapper, Zstd};
use ferrocomp_tests::{c_blosc, int32_bytes, random_bytes, random_u64s, short_repeats_bytes, text_bytes};
use std::io::{Read, Write};

/// Every codec whose CPU path has a library, Deflate in each wrapper.
fn codecs() -> Vec<Options> {
    let deflate = |wrapper| Options::Deflate(Deflate { wrapper, ..Deflate::default() });
    vec![
        Options::Lz4(Lz4::default()),
        Options::Snappy(Snappy::default()),
        deflate(Wrapper::Raw),
        deflate(Wrapper::Zlib),
        deflate(Wrapper::Gzip),
        Options::Zstd(Zstd::default()),
        Options::Blosc(Blosc::default()),
    ]
}

/// What the chunks hold: the edges, text, incompressible bytes, short repeats, int32 offsets,
/// zeros, and text over two Zstandard blocks (of at most 128 KiB).
fn datas() -> Vec<Vec<u8>> {
    vec![
        vec![],
        vec![42],
        text_bytes(5000, 1),
        random_bytes(3000, 2),
        short_repeats_bytes(6000, 3),
        int32_bytes(4096),
        vec![0; 9000],
        text_bytes(140_000, 4),
    ]
}

/// `data` compressed by `options`' codec on the CPU, if the compressor takes chunks so large.
fn ours(options: Options, data: &[u8]) -> Option<Vec<u8>> {
    let codec = options.codec();
    let mut out = vec![0; codec.max_compressed_chunk_size(data.len())];
    let size = codec.compress_cpu(data, &mut out).ok()?;
    out.truncate(size);
    Some(out)
}

/// `data` compressed by libdeflate (C) at `level`, in `wrapper`.
fn libdeflate(data: &[u8], level: i32, wrapper: Wrapper) -> Vec<u8> {
    let mut compressor = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(level).unwrap());
    let mut out = vec![0; compressor.gzip_compress_bound(data.len())];
    let size = match wrapper {
        Wrapper::Raw => compressor.deflate_compress(data, &mut out),
        Wrapper::Zlib => compressor.zlib_compress(data, &mut out),
        Wrapper::Gzip => compressor.gzip_compress(data, &mut out),
    };
    out.truncate(size.unwrap());
    out
}

/// `data` compressed by zlib-rs (through flate2) at `level`, in `wrapper`.
fn zlib(data: &[u8], level: u32, wrapper: Wrapper) -> Vec<u8> {
    let level = flate2::Compression::new(level);
    let mut encoder: Box<dyn Read + '_> = match wrapper {
        Wrapper::Raw => Box::new(flate2::read::DeflateEncoder::new(data, level)),
        Wrapper::Zlib => Box::new(flate2::read::ZlibEncoder::new(data, level)),
        Wrapper::Gzip => Box::new(flate2::read::GzEncoder::new(data, level)),
    };
    let mut out = Vec::new();
    encoder.read_to_end(&mut out).unwrap();
    out
}

/// Valid chunks of `data` for `options`' codec, named: ours at every level (and element type),
/// and the reference libraries' at several levels, multi-member and multi-frame ones included.
fn valid_streams(options: Options, data: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut streams = Vec::new();
    let mut add = |name: String, stream: Option<Vec<u8>>| streams.extend(stream.map(|stream| (name, stream)));
    let half = data.len() / 2;
    match options {
        Options::Lz4(_) | Options::Snappy(_) => {
            for data_type in [DataType::Char, DataType::Short, DataType::Int, DataType::LongLong] {
                let ours_options = match options {
                    Options::Lz4(_) => Options::Lz4(Lz4 { data_type }),
                    _ => Options::Snappy(Snappy { data_type }),
                };
                add(format!("ours {data_type:?}"), ours(ours_options, data));
            }
            if let Options::Lz4(_) = options {
                add("liblz4".into(), lz4::block::compress(data, None, false).ok());
                let fast = Some(lz4::block::CompressionMode::FAST(8));
                add("liblz4 fast 8".into(), lz4::block::compress(data, fast, false).ok());
                let hc = Some(lz4::block::CompressionMode::HIGHCOMPRESSION(9));
                add("liblz4 hc 9".into(), lz4::block::compress(data, hc, false).ok());
                add("lz4_flex".into(), Some(lz4_flex::block::compress(data)));
            } else {
                add("snap".into(), snap::raw::Encoder::new().compress_vec(data).ok());
            }
        }
        Options::Deflate(Deflate { wrapper, .. }) => {
            for level in Deflate::LEVELS {
                add(format!("ours level {level}"), ours(Options::Deflate(Deflate { level, wrapper }), data));
            }
            for level in [1, 6, 12] {
                add(format!("libdeflate {level}"), Some(libdeflate(data, level, wrapper)));
            }
            for level in [1, 9] {
                add(format!("zlib-rs {level}"), Some(zlib(data, level, wrapper)));
            }
            if wrapper == Wrapper::Gzip {
                let second = ours(options, &data[half..]);
                add(
                    "two gzip members".into(),
                    second.map(|second| [libdeflate(&data[..half], 6, wrapper), second].concat()),
                );
            }
        }
        Options::Zstd(_) => {
            for level in Zstd::LEVELS {
                add(format!("ours level {level}"), ours(Options::Zstd(Zstd { level }), data));
            }
            for level in [-5, 1, 3, 19] {
                add(format!("libzstd {level}"), zstd::bulk::compress(data, level).ok());
            }
            let mut compressor = zstd::bulk::Compressor::new(3).unwrap();
            compressor.include_checksum(true).unwrap();
            compressor.include_contentsize(false).unwrap();
            add("libzstd checksum, no size".into(), compressor.compress(data).ok());
            let mut encoder = zstd::stream::Encoder::new(Vec::new(), 5).unwrap();
            encoder.include_checksum(true).unwrap();
            encoder.write_all(data).unwrap();
            add("libzstd stream".into(), encoder.finish().ok());
            let skippable = [0x5A, 0x2A, 0x4D, 0x18, 3, 0, 0, 0, 7, 7, 7];
            let first = zstd::bulk::compress(&data[..half], 1).unwrap();
            let frames = ours(options, &data[half..]).map(|second| [first, skippable.to_vec(), second].concat());
            add("two frames, a skippable one between".into(), frames);
        }
        Options::Blosc(_) => {
            for cname in ["zstd", "lz4", "zlib", "blosclz"] {
                for (typesize, shuffle) in [(1, Shuffle::None), (4, Shuffle::Byte), (8, Shuffle::Bit)] {
                    for (level, blocksize) in [(1, 0), (5, 0), (9, 4096)] {
                        let chunk = c_blosc::compress(data, typesize, shuffle, cname, level, blocksize);
                        let what =
                            format!("c-blosc {cname} {level}, typesize {typesize}, {shuffle:?}, block {blocksize}");
                        add(what, Some(chunk));
                    }
                }
            }
        }
        _ => unreachable!("no CPU library"),
    }
    streams
}

/// Decodes `stream` into `capacity` bytes through the CPU path and through the scalar decoder,
/// each into a buffer of its own filling; asserts that they agree exactly (status, and size and
/// bytes on success), and returns the result.
fn agree(codec: &dyn BatchCodec, stream: &[u8], capacity: usize, what: &str) -> Result<Vec<u8>, Status> {
    let (mut cpu, mut scalar) = (vec![0xA5; capacity], vec![0x5A; capacity]);
    let got = codec.decompress_cpu(stream, &mut cpu);
    let expected = codec.decompress_scalar(stream, &mut scalar);
    assert_eq!(got, expected, "{what}, {capacity}-byte output");
    expected.map(|size| {
        assert!(cpu[..size] == scalar[..size], "{what}, {capacity}-byte output: the bytes differ");
        scalar[..size].to_vec()
    })
}

#[test]
fn valid_chunks_decode_through_the_library_exactly() {
    for options in codecs() {
        let codec = options.codec();
        for data in datas() {
            for (name, stream) in valid_streams(options, &data) {
                let what = format!("{options:?}, {name}, {} bytes", data.len());
                for capacity in [data.len(), data.len() + 100] {
                    assert_eq!(agree(codec, &stream, capacity, &what).as_deref(), Ok(&data[..]), "{what}");
                    let mut out = vec![0; capacity];
                    assert_eq!(codec.decompress_library(&stream, &mut out), Some(data.len()), "{what}");
                    assert!(out[..data.len()] == data[..], "{what}: the library's bytes differ");
                }
            }
        }
    }
}

#[test]
fn outputs_a_byte_short_fail_alike() {
    for options in codecs() {
        for data in datas().into_iter().filter(|data| !data.is_empty()) {
            for (name, stream) in valid_streams(options, &data) {
                let what = format!("{options:?}, {name}, {} bytes", data.len());
                for capacity in [data.len() - 1, data.len() / 2, 0] {
                    assert!(agree(options.codec(), &stream, capacity, &what).is_err(), "{what}");
                }
            }
        }
    }
}

/// Rounds of damage per stream (`FERROCOMP_DAMAGE_ROUNDS` instead, where set).
fn rounds(default: usize) -> usize {
    std::env::var("FERROCOMP_DAMAGE_ROUNDS").ok().and_then(|n| n.parse().ok()).unwrap_or(default)
}

/// A damaged copy of `stream`, its damage drawn from `next`: bits flipped, bytes overwritten, the
/// end cut off, bytes appended, or a byte nudged by up to 2 near the start or the end, where the
/// sizes are (preambles, frame and block headers, trailers).
fn damaged(stream: &[u8], next: &mut impl FnMut() -> u64) -> Vec<u8> {
    let mut damaged = stream.to_vec();
    let len = damaged.len().max(1);
    let near_start = |at: u64| (at as usize % 24).min(len - 1);
    let near_end = |at: u64| len - 1 - (at as usize % 12).min(len - 1);
    match next() % 6 {
        kind @ (0 | 1) => {
            for _ in 0..1 + next() % 3 {
                let (at, value) = (next() as usize % len, next());
                if let Some(byte) = damaged.get_mut(at) {
                    *byte = if kind == 0 { *byte ^ 1 << (value % 8) } else { value as u8 };
                }
            }
        }
        2 => damaged.truncate(next() as usize % len),
        3 => damaged.extend((0..1 + next() % 8).map(|_| next() as u8)),
        kind => {
            let at = if kind == 4 { near_start(next()) } else { near_end(next()) };
            if let Some(byte) = damaged.get_mut(at) {
                *byte = byte.wrapping_add([1, 2, 254, 255][next() as usize % 4]);
            }
        }
    }
    damaged
}

#[test]
fn damaged_chunks_get_the_scalar_decoders_status() {
    let datas = [text_bytes(4000, 5), short_repeats_bytes(3000, 6), int32_bytes(2048)];
    let mut laxer_libzstd = 0;
    for (i, options) in codecs().into_iter().enumerate() {
        let codec = options.codec();
        let mut next = random_u64s(100 + i as u64);
        for data in &datas {
            for (name, stream) in valid_streams(options, data) {
                for round in 0..rounds(120) {
                    let damaged = damaged(&stream, &mut next);
                    let what = format!("{options:?}, {name}, {} bytes, round {round}", data.len());
                    // Every other round with room to spare, for sizes damaged upwards.
                    let result = agree(codec, &damaged, data.len() + round % 2 * 7, &what);
                    if let (Options::Zstd(_), Err(_)) = (options, &result) {
                        let mut out = vec![0; data.len()];
                        let bare = zstd::bulk::Decompressor::new().unwrap().decompress_to_buffer(&damaged, &mut out);
                        laxer_libzstd += bare.is_ok() as usize;
                    }
                }
            }
        }
    }
    // Some of the damage libzstd alone takes (Huffman streams with bits to spare), and the CPU
    // path refuses.
    assert!(laxer_libzstd > 0, "{laxer_libzstd}");
}

/// LSB-first bits, as deflate packs them.
#[derive(Default)]
struct Bits {
    bytes: Vec<u8>,
    count: usize,
}

impl Bits {
    /// Appends the `n` low bits of `value`, low bit first.
    fn put(&mut self, value: u32, n: usize) -> &mut Self {
        for bit in 0..n {
            if self.count.is_multiple_of(8) {
                self.bytes.push(0);
            }
            *self.bytes.last_mut().unwrap() |= ((value >> bit) as u8 & 1) << (self.count % 8);
            self.count += 1;
        }
        self
    }

    /// Appends a Huffman code of `len` bits, high bit first.
    fn code(&mut self, code: u32, len: usize) -> &mut Self {
        let reversed = (0..len).fold(0, |r, bit| r | ((code >> bit) & 1) << (len - 1 - bit));
        self.put(reversed, len)
    }
}

#[test]
fn streams_where_a_library_and_ours_part_ways() {
    let lz4 = Options::Lz4(Lz4::default());
    // LZ4: 32 literals, a match of offset 0, 20 literals. liblz4 decodes it; ours and lz4_flex
    // refuse offset 0.
    let mut block = vec![0xF0, 32 - 15];
    block.extend([b'x'; 32]);
    block.extend([0, 0, 0xF0, 20 - 15]);
    block.extend([b'y'; 20]);
    let mut out = [0u8; 56];
    assert!(lz4::block::decompress_to_buffer(&block, Some(56), &mut out).is_ok());
    assert_eq!(lz4.codec().decompress_cpu(&block, &mut out), Err(Status::BadOffset));

    // Snappy: a 6-byte preamble (5, padded), which snap (from 1.1.2) refuses as ours does: the
    // one check snap's earlier versions lacked, so none is added before it.
    let snappy = Options::Snappy(Snappy::default());
    let stream = [0x85, 0x80, 0x80, 0x80, 0x80, 0x00, 4 << 2, b'h', b'e', b'l', b'l', b'o'];
    let mut out = [0u8; 5];
    assert!(snap::raw::Decoder::new().decompress(&stream, &mut out).is_err());
    assert_eq!(snappy.codec().decompress_cpu(&stream, &mut out), Err(Status::Malformed));
    let padded_to_five = [&stream[..4], &stream[5..]].concat();
    assert_eq!(snappy.codec().decompress_library(&padded_to_five, &mut out), Some(5));

    // Deflate: a fixed block of 'a', then length symbol 286 at distance 1, which libdeflate
    // reads as length 258; ours (and zlib) refuse it.
    let deflate = Options::Deflate(Deflate::default());
    let mut bits = Bits::default();
    bits.put(1, 1).put(1, 2).code(0x30 + b'a' as u32, 8).code(0xC0 + 6, 8).code(0, 5).code(0, 7);
    let mut out = vec![0u8; 259];
    assert_eq!(libdeflater::Decompressor::new().deflate_decompress(&bits.bytes, &mut out).ok(), Some(259));
    assert_eq!(deflate.codec().decompress_library(&bits.bytes, &mut out), None);
    assert_eq!(deflate.codec().decompress_cpu(&bits.bytes, &mut out), Err(Status::Malformed));

    // Deflate: a dynamic block giving a code length to symbol 286, unused; it decodes to "a".
    // Ours takes it, zlib refuses more than 286 lengths: the scalar decoder decides.
    let order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15];
    let mut bits = Bits::default();
    bits.put(1, 1).put(2, 2).put(287 - 257, 5).put(0, 5).put(19 - 4, 4);
    for symbol in order {
        bits.put(if matches!(symbol, 0 | 1 | 2 | 18) { 2 } else { 0 }, 3);
    }
    // Precode: 0 is 00, 1 is 01, 2 is 10, 18 (a run of 11 + 7 bits zeros) is 11. Lengths: 97
    // zeros, 'a' 1, 158 zeros, end of block 2, 29 zeros, 286 2, and no distance code.
    let zeros = |bits: &mut Bits, run: u32| {
        bits.code(3, 2).put(run - 11, 7);
    };
    zeros(&mut bits, 97);
    bits.code(1, 2);
    zeros(&mut bits, 138);
    zeros(&mut bits, 20);
    bits.code(2, 2);
    zeros(&mut bits, 29);
    bits.code(2, 2).code(0, 2);
    // 'a' is 0, end of block 10.
    bits.code(0, 1).code(2, 2);
    let mut out = [0u8; 1];
    assert_eq!(deflate.codec().decompress_library(&bits.bytes, &mut out), None);
    assert_eq!(agree(deflate.codec(), &bits.bytes, 1, "286 given a length"), Ok(b"a".to_vec()));

    // Gzip: a second member whose match reaches into the first, which ours allows and a fresh
    // inflate refuses: again the scalar decoder decides.
    let gzip = Options::Deflate(Deflate { wrapper: Wrapper::Gzip, ..Deflate::default() });
    let mut members = libdeflate(b"abc", 6, Wrapper::Gzip);
    let mut bits = Bits::default();
    bits.put(1, 1).put(1, 2).code(1, 7).code(0, 5).code(0, 7);
    members.extend([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 255]);
    members.extend(bits.bytes);
    members.extend(crc32fast::hash(b"ccc").to_le_bytes());
    members.extend(3u32.to_le_bytes());
    let mut out = [0u8; 6];
    assert_eq!(gzip.codec().decompress_library(&members, &mut out), None);
    assert_eq!(agree(gzip.codec(), &members, 6, "a match into the member before"), Ok(b"abcccc".to_vec()));

    let zstd = Options::Zstd(Zstd::default());
    let mut out = [0u8; 64];
    let mut decompressor = zstd::bulk::Decompressor::new().unwrap();
    // Zstd: an empty chunk, which libzstd decodes to nothing.
    assert_eq!(decompressor.decompress_to_buffer(&[], &mut out[..]).ok(), Some(0));
    assert_eq!(zstd.codec().decompress_cpu(&[], &mut out), Err(Status::Truncated));

    // Zstd: 16 literals coded with a 12-bit Huffman code (weights 1, 1, 2, ..., 11 listed, 12
    // implied: symbol 12's code is one bit), which libzstd reads; RFC 8878 and ours stop at 11.
    let weights = [1u8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
    let mut section = vec![127 + weights.len() as u8];
    section.extend(weights.chunks(2).map(|pair| pair[0] << 4 | pair[1]));
    section.extend([0xFF, 0xFF, 0x01]);
    let literals_header = 2 | 16 << 4 | (section.len() as u32) << 14;
    let mut block = literals_header.to_le_bytes()[..3].to_vec();
    block.extend(section);
    block.push(0);
    let mut frame = vec![0x28, 0xB5, 0x2F, 0xFD, 0x20, 16];
    frame.extend(&(1 | 2 << 1 | (block.len() as u32) << 3).to_le_bytes()[..3]);
    frame.extend(block);
    assert_eq!(decompressor.decompress_to_buffer(&frame, &mut out[..]).ok(), Some(16));
    assert_eq!(out[..16], [12; 16]);
    assert_eq!(zstd.codec().decompress_library(&frame, &mut out), None);
    assert_eq!(zstd.codec().decompress_cpu(&frame, &mut out), Err(Status::Malformed));

    // Zstd: a frame whose 1 KiB window is smaller than what it decodes to. libzstd does not hold
    // its matches to the window; the library path leaves such a frame to ours, which does.
    let data = text_bytes(8000, 7);
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    encoder.window_log(10).unwrap();
    encoder.write_all(&data).unwrap();
    let frame = encoder.finish().unwrap();
    let mut out = vec![0u8; data.len()];
    assert_eq!(zstd.codec().decompress_library(&frame, &mut out), None);
    assert_eq!(agree(zstd.codec(), &frame, data.len(), "1 KiB window"), Ok(data));
}

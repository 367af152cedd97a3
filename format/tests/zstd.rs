//! The Zstandard decoder against libzstd (the `zstd` crate): its frames at many levels and with
//! every header option decode to the input exactly, with exact sizes; corrupt, truncated and
//! lying frames give the statuses they must; mutated frames never panic.

use std::io::Write;

use ferrocomp_format::Status;
use ferrocomp_format::zstd::{DecodeTables, MAGIC, decompress, decompressed_size};
mod common;
use common::XorShift;

/// Decode tables full of garbage: any bytes must be a valid starting state.
fn tables() -> Box<DecodeTables> {
    let mut t: Box<DecodeTables> = unsafe { Box::new_zeroed().assume_init() };
    let bytes =
        unsafe { std::slice::from_raw_parts_mut(&mut *t as *mut DecodeTables as *mut u8, size_of::<DecodeTables>()) };
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = (i * 151 + 13) as u8;
    }
    t
}

fn random(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = XorShift(seed | 1);
    (0..n).map(|_| rng.next() as u8).collect()
}

/// Words from a small vocabulary with punctuation: like prose or source code.
fn text(n: usize, seed: u64) -> Vec<u8> {
    const WORDS: [&str; 24] = [
        "the",
        "decoder",
        "reads",
        "a",
        "frame",
        "of",
        "blocks",
        "and",
        "writes",
        "bytes",
        "into",
        "output",
        "while",
        "literals",
        "sequences",
        "match",
        "offset",
        "window",
        "Huffman",
        "FSE",
        "table",
        "state",
        "{",
        "};\n",
    ];
    let mut rng = XorShift(seed | 1);
    let mut out = Vec::with_capacity(n + 16);
    while out.len() < n {
        out.extend_from_slice(WORDS[rng.below(WORDS.len()).min(rng.below(WORDS.len()))].as_bytes());
        out.push(if rng.below(9) == 0 { b'\n' } else { b' ' });
    }
    out.truncate(n);
    out
}

/// Little-endian f32 samples of a smooth signal, with a little noise.
fn numeric(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = XorShift(seed | 1);
    let mut out = Vec::with_capacity(n + 4);
    let mut i = 0u32;
    while out.len() < n {
        let x = (i as f32 * 0.01).sin() * 1000.0 + (rng.below(4) as f32) * 0.125;
        out.extend_from_slice(&x.to_le_bytes());
        i += 1;
    }
    out.truncate(n);
    out
}

/// Long runs of a few byte values, with short random stretches between.
fn runs(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = XorShift(seed | 1);
    let mut out = Vec::with_capacity(n + 4096);
    while out.len() < n {
        let byte = [0u8, 0xFF, b'a', 7][rng.below(4)];
        out.extend(std::iter::repeat_n(byte, 1 + rng.below(3000)));
        out.extend((0..rng.below(8)).map(|_| rng.next() as u8));
    }
    out.truncate(n);
    out
}

/// How a frame is written.
#[derive(Clone, Copy, Debug)]
struct Options {
    level: i32,
    checksum: bool,
    content_size: bool,
    long_window: Option<u32>,
}

const PLAIN: Options = Options { level: 3, checksum: false, content_size: true, long_window: None };

fn compress(data: &[u8], o: Options) -> Vec<u8> {
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), o.level).unwrap();
    encoder.include_checksum(o.checksum).unwrap();
    encoder.include_contentsize(o.content_size).unwrap();
    if o.content_size {
        encoder.set_pledged_src_size(Some(data.len() as u64)).unwrap();
    }
    if let Some(log) = o.long_window {
        encoder.long_distance_matching(true).unwrap();
        encoder.window_log(log).unwrap();
    }
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

/// Decodes `frames` into a buffer of exactly `expected.len()` bytes and checks the bytes, the
/// size, and that one byte less of room is `OutputTooSmall`.
fn check_decodes_to(frames: &[u8], expected: &[u8], t: &mut DecodeTables, what: &str) {
    let mut out = vec![0xA5u8; expected.len()];
    assert_eq!(decompress(frames, &mut out, t), Ok(expected.len()), "{what}");
    assert!(out == expected, "{what}: decoded bytes differ");
    assert_eq!(decompressed_size(frames, t), Ok(expected.len()), "{what}");
    if !expected.is_empty() {
        let mut short = vec![0u8; expected.len() - 1];
        assert_eq!(decompress(frames, &mut short, t), Err(Status::OutputTooSmall), "{what}");
    }
}

/// Random bytes 0..13: Huffman tables with few symbols (weights written directly, not
/// FSE-compressed).
fn small_alphabet(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = XorShift(seed | 1);
    (0..n).map(|_| rng.below(13) as u8).collect()
}

/// A random 200-byte piece repeated, one byte of each copy replaced by a 'Q': after the first
/// copies, every literal is a 'Q' (RLE literals).
fn one_literal(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = XorShift(seed | 1);
    let piece: Vec<u8> = random(200, seed).into_iter().map(|b| if b == b'Q' { 0 } else { b }).collect();
    let mut out = Vec::with_capacity(n + 200);
    while out.len() < n {
        let at = out.len() + rng.below(200);
        out.extend(&piece);
        out[at] = b'Q';
    }
    out.truncate(n);
    out
}

type Generator = fn(usize, u64) -> Vec<u8>;
const KINDS: [(&str, Generator); 6] = [
    ("text", text),
    ("numeric", numeric),
    ("runs", runs),
    ("random", random),
    ("small alphabet", small_alphabet),
    ("one literal", one_literal),
];

#[test]
fn libzstd_frames_at_every_level_and_option() {
    let mut t = tables();
    for (name, generate) in KINDS {
        for (i, size) in [0usize, 1, 37, 1000, 70_000, 300_000].into_iter().enumerate() {
            let data = generate(size, 11 + i as u64);
            for level in [-5, 1, 3, 9, 19] {
                if level == 19 && size > 70_000 {
                    continue; // slow without optimization, and level 9 covers the parse
                }
                for (checksum, content_size) in [(false, true), (true, true), (true, false), (false, false)] {
                    let o = Options { level, checksum, content_size, long_window: None };
                    let frame = compress(&data, o);
                    check_decodes_to(&frame, &data, &mut t, &format!("{name} {size} {o:?}"));
                }
            }
        }
    }
}

#[test]
fn chunks_up_to_16_mib() {
    let mut t = tables();
    let mut data = text(12 << 20, 5);
    data.extend(numeric(4 << 20, 6));
    for o in [PLAIN, Options { level: -5, checksum: true, content_size: false, long_window: None }] {
        let frame = compress(&data, o);
        check_decodes_to(&frame, &data, &mut t, &format!("16 MiB {o:?}"));
    }
    // One byte more than the batched API's limit: decodable, but too large to size.
    data.push(1);
    let frame = compress(&data, Options { content_size: false, ..PLAIN });
    assert_eq!(decompressed_size(&frame, &mut t), Err(Status::ChunkTooLarge));
}

#[test]
fn long_distance_matching_with_a_large_window() {
    let mut t = tables();
    // A random megabyte repeated 4 MiB later: only a long window finds it.
    let block = random(1 << 20, 9);
    let mut data = block.clone();
    data.extend(text(3 << 20, 10));
    data.extend(&block);
    for checksum in [false, true] {
        let o = Options { level: 3, checksum, content_size: checksum, long_window: Some(24) };
        let frame = compress(&data, o);
        assert!(frame.len() < data.len() - (900 << 10), "the repeat was not found: {} bytes", frame.len());
        check_decodes_to(&frame, &data, &mut t, &format!("{o:?}"));
    }
}

/// A skippable frame with magic `0x184D2A50 + nibble` and `payload`.
fn skippable(nibble: u32, payload: &[u8]) -> Vec<u8> {
    let mut frame = (0x184D_2A50 + nibble).to_le_bytes().to_vec();
    frame.extend((payload.len() as u32).to_le_bytes());
    frame.extend(payload);
    frame
}

#[test]
fn frames_back_to_back_and_skippable_frames() {
    let mut t = tables();
    let (a, b) = (text(50_000, 1), runs(80_000, 2));
    let mut frames = skippable(0, b"metadata");
    frames.extend(compress(&a, Options { checksum: true, ..PLAIN }));
    frames.extend(skippable(15, &[]));
    frames.extend(compress(&b, Options { content_size: false, ..PLAIN }));
    frames.extend(compress(&[], PLAIN));
    frames.extend(skippable(7, &[0xFF; 300]));
    let expected = [a.as_slice(), b.as_slice()].concat();
    check_decodes_to(&frames, &expected, &mut t, "multi-frame");
    // Only skippable frames: nothing to decode.
    let only = skippable(3, b"x");
    assert_eq!(decompress(&only, &mut [], &mut t), Ok(0));
    assert_eq!(decompressed_size(&only, &mut t), Ok(0));
    // A skippable frame longer than the input.
    let mut short = skippable(3, b"abcdef");
    short.pop();
    assert_eq!(decompress(&short, &mut [0; 8], &mut t), Err(Status::Truncated));
    assert_eq!(decompressed_size(&short, &mut t), Err(Status::Truncated));
}

#[test]
fn empty_input_and_empty_frames() {
    let mut t = tables();
    assert_eq!(decompress(&[], &mut [0; 4], &mut t), Err(Status::Truncated));
    assert_eq!(decompressed_size(&[], &mut t), Err(Status::Truncated));
    for o in [PLAIN, Options { checksum: true, content_size: false, ..PLAIN }] {
        check_decodes_to(&compress(&[], o), &[], &mut t, "empty frame");
    }
    assert_eq!(decompress(&zstd::bulk::compress(&[], 1).unwrap(), &mut [], &mut t), Ok(0));
}

/// A frame written by hand: a 1 KiB window, content size `content_size` if given, `blocks` (each
/// a 3-byte header and its content), then `checksum` if given.
fn hand_frame(content_size: Option<u32>, blocks: &[&[u8]], checksum: Option<u32>) -> Vec<u8> {
    let mut frame = MAGIC.to_le_bytes().to_vec();
    frame.push(if content_size.is_some() { 2 << 6 } else { 0 } | if checksum.is_some() { 0x04 } else { 0 });
    frame.push(0); // window 1 KiB
    if let Some(size) = content_size {
        frame.extend(size.to_le_bytes());
    }
    for block in blocks {
        frame.extend(*block);
    }
    if let Some(sum) = checksum {
        frame.extend(sum.to_le_bytes());
    }
    frame
}

/// A block header: `last`, `kind` (0 raw, 1 RLE, 2 compressed, 3 reserved), `size`.
fn block_header(last: bool, kind: u32, size: u32) -> [u8; 3] {
    let v = (size << 3) | (kind << 1) | last as u32;
    [v as u8, (v >> 8) as u8, (v >> 16) as u8]
}

#[test]
fn hand_written_blocks() {
    let mut t = tables();
    let mut out = [0u8; 64];
    // Raw then RLE block.
    let raw = [&block_header(false, 0, 3)[..], b"abc"].concat();
    let rle = [&block_header(true, 1, 5)[..], b"z"].concat();
    let frame = hand_frame(Some(8), &[&raw, &rle], None);
    assert_eq!(decompress(&frame, &mut out, &mut t), Ok(8));
    assert_eq!(&out[..8], b"abczzzzz");
    // A compressed block of raw literals and no sequences: literals header (raw, 5-bit size 4),
    // then 0 sequences.
    let block = [&block_header(true, 2, 6)[..], &[4 << 3], b"wxyz", &[0]].concat();
    assert_eq!(decompress(&hand_frame(Some(4), &[&block], None), &mut out, &mut t), Ok(4));
    assert_eq!(&out[..4], b"wxyz");
    // RLE literals ("zzzzz") and one sequence of 5 literals and a match of 5 at repeat offset 1
    // (the frame's first, 1), all tables in RLE mode (LL code 5, OF code 0, ML code 2); the
    // stream holds no bits, only its end marker.
    let block = [&[(5 << 3) | 1, b'z'][..], &[1, 0b0101_0100, 5, 0, 2, 0x01]].concat();
    let frame = hand_frame(Some(10), &[&[&block_header(true, 2, block.len() as u32)[..], &block].concat()], None);
    assert_eq!(decompress(&frame, &mut out, &mut t), Ok(10));
    assert_eq!(&out[..10], b"zzzzzzzzzz");
    // Block size over the window of 1 KiB.
    let big = [&block_header(true, 1, 1025)[..], b"q"].concat();
    assert_eq!(decompress(&hand_frame(None, &[&big], None), &mut vec![0; 2000], &mut t), Err(Status::Malformed));
    let fits = [&block_header(true, 1, 1024)[..], b"q"].concat();
    assert_eq!(decompress(&hand_frame(None, &[&fits], None), &mut vec![0; 2000], &mut t), Ok(1024));
    // Reserved block type.
    let reserved = [&block_header(true, 3, 1)[..], b"q"].concat();
    assert_eq!(decompress(&hand_frame(Some(1), &[&reserved], None), &mut out, &mut t), Err(Status::Malformed));
    // Content size not what the blocks decode to: more, and fewer.
    assert_eq!(decompress(&hand_frame(Some(9), &[&raw, &rle], None), &mut out, &mut t), Err(Status::Malformed));
    assert_eq!(decompress(&hand_frame(Some(7), &[&raw, &rle], None), &mut out, &mut t), Err(Status::Malformed));
    // Content size larger than the output: refused before decoding.
    assert_eq!(
        decompress(&hand_frame(Some(8), &[&raw, &rle], None), &mut out[..7], &mut t),
        Err(Status::OutputTooSmall)
    );
    // Treeless literals without an earlier Huffman table; repeat-mode sequences without earlier
    // tables.
    // (Literals header: treeless, one stream, 4 literals in 1 byte.)
    let treeless = [&block_header(true, 2, 5)[..], &[0x43, 0x40, 0], &[0x80, 0]].concat();
    assert_eq!(decompress(&hand_frame(Some(4), &[&treeless], None), &mut out, &mut t), Err(Status::Malformed));
    let repeat = [&block_header(true, 2, 4)[..], &[0], &[1, 0b1111_1100, 0x80]].concat();
    assert_eq!(decompress(&hand_frame(Some(3), &[&repeat], None), &mut out, &mut t), Err(Status::Malformed));
    // An unknown magic number after a good frame; fewer than 4 bytes after it.
    let mut trailing = hand_frame(Some(8), &[&raw, &rle], None);
    trailing.extend([1, 2, 3, 4, 5]);
    assert_eq!(decompress(&trailing, &mut out, &mut t), Err(Status::Malformed));
    trailing.truncate(trailing.len() - 2);
    assert_eq!(decompress(&trailing, &mut out, &mut t), Err(Status::Truncated));
}

#[test]
fn dictionary_ids_need_a_dictionary() {
    let mut t = tables();
    let data = text(5000, 3);
    let plain = compress(&data, PLAIN);
    // Write a dictionary id of each field size (1, 2, 4 bytes) into the header.
    for flag in 1..=3u8 {
        let mut with_id = plain.clone();
        let descriptor = with_id[4];
        with_id[4] = descriptor | flag;
        let at = 5 + (descriptor & 0x20 == 0) as usize;
        let id = [0x2A, 0, 0, 0];
        with_id.splice(at..at, id[..[0, 1, 2, 4][flag as usize]].iter().copied());
        assert_eq!(decompress(&with_id, &mut vec![0; 5000], &mut t), Err(Status::DictionaryRequired));
        assert_eq!(decompressed_size(&with_id, &mut t), Err(Status::DictionaryRequired));
        // Id 0 means no dictionary.
        with_id[at] = 0;
        check_decodes_to(&with_id, &data, &mut t, "dictionary id 0");
    }
}

#[test]
fn wrong_checksums_are_caught() {
    let mut t = tables();
    let data = text(10_000, 8);
    let mut frame = compress(&data, Options { checksum: true, ..PLAIN });
    let last = frame.len() - 1;
    frame[last] ^= 0x40;
    assert_eq!(decompress(&frame, &mut vec![0; data.len()], &mut t), Err(Status::BadChecksum));
    assert_eq!(decompressed_size(&frame, &mut t), Ok(data.len()), "sizing does not hash");
}

#[test]
fn every_truncation_is_truncated() {
    let mut t = tables();
    let data = [text(3000, 12), runs(3000, 13)].concat();
    for o in [
        Options { checksum: true, ..PLAIN },
        Options { content_size: false, ..PLAIN },
        Options { level: 19, checksum: true, content_size: false, long_window: None },
    ] {
        let frame = compress(&data, o);
        let mut out = vec![0; data.len()];
        for len in 0..frame.len() {
            assert_eq!(decompress(&frame[..len], &mut out, &mut t), Err(Status::Truncated), "{o:?} cut at {len}");
            assert_eq!(decompressed_size(&frame[..len], &mut t), Err(Status::Truncated), "{o:?} cut at {len}");
        }
    }
}

/// The frame of `data` as libzstd writes it at level 19 (Huffman literals and FSE tables), and
/// the position of its first compressed block's sequences section, found by decoding its
/// headers.
fn frame_and_sequences_at(data: &[u8]) -> (Vec<u8>, usize) {
    let frame = compress(data, Options { level: 19, checksum: false, content_size: true, long_window: None });
    let header = ferrocomp_format::zstd::frame::read_frame_header(&frame[4..]).unwrap();
    let block_at = 4 + header.len;
    let block = ferrocomp_format::zstd::frame::read_block_header(&frame[block_at..], 1 << 17).unwrap();
    assert_eq!(block.kind, ferrocomp_format::zstd::frame::BlockKind::Compressed);
    let literals = ferrocomp_format::zstd::frame::read_literals_header(&frame[block_at + 3..]).unwrap();
    (frame, block_at + 3 + literals.len + literals.stored)
}

#[test]
fn corrupt_sequences_sections() {
    let mut t = tables();
    let data = text(20_000, 21);
    let (frame, at) = frame_and_sequences_at(&data);
    let mut out = vec![0; data.len()];
    let seq = ferrocomp_format::zstd::sequences::read_header(&frame[at..frame.len()]);
    let seq = seq.unwrap();
    assert_eq!(seq.modes >> 6, 2, "literal lengths described by an FSE table");
    // An accuracy log of 5 + 15 = 20, over the limit of 9.
    let mut bad_log = frame.clone();
    bad_log[at + seq.len] |= 0x0F;
    assert_eq!(decompress(&bad_log, &mut out, &mut t), Err(Status::Malformed));
    assert_eq!(decompressed_size(&bad_log, &mut t), Ok(data.len()), "sizing from the content size");
    // Reserved bits of the modes byte.
    let mut reserved = frame.clone();
    reserved[at + seq.len - 1] |= 1;
    assert_eq!(decompress(&reserved, &mut out, &mut t), Err(Status::Malformed));
}

#[test]
fn offsets_before_the_frame_or_beyond_the_window() {
    let mut t = tables();
    // A block of raw literals "abc" and one sequence: literal length 3, match length 3, offset
    // value 9 (offset 6, before the frame's start), all three tables in RLE mode: LL code 3,
    // OF code 3 (8 plus 3 extra bits of 1), ML code 0; the stream is those 3 bits and the marker.
    let sequences = [1u8, 0b0101_0100, 3, 3, 0, 0b1001];
    let block = [&[3u8 << 3][..], b"abc", &sequences].concat();
    let frame = hand_frame(Some(6), &[&[&block_header(true, 2, block.len() as u32)[..], &block].concat()], None);
    let mut out = [0u8; 16];
    assert_eq!(decompress(&frame, &mut out, &mut t), Err(Status::BadOffset));
    // Offset 3 (value 6: OF code 2 plus extra bits 0b10) is fine: "abcabc".
    let sequences = [1u8, 0b0101_0100, 3, 2, 0, 0b110];
    let block = [&[3u8 << 3][..], b"abc", &sequences].concat();
    let good = hand_frame(Some(6), &[&[&block_header(true, 2, block.len() as u32)[..], &block].concat()], None);
    assert_eq!(decompress(&good, &mut out, &mut t), Ok(6));
    assert_eq!(&out[..6], b"abcabc");
    // The same block after a frame of 3 bytes: the offset of 6 still may not reach into it.
    let mut two = hand_frame(Some(3), &[&[&block_header(true, 0, 3)[..], b"xyz"].concat()], None);
    two.extend(&frame);
    assert_eq!(decompress(&two, &mut out, &mut t), Err(Status::BadOffset));
    // A window of 1 KiB (descriptor 0) and an offset of 1025 after 1100 raw bytes.
    let mut windowed = MAGIC.to_le_bytes().to_vec();
    windowed.extend([0x00, 0x00]);
    let raw = random(1100, 3);
    for piece in raw.chunks(1000) {
        windowed.extend(block_header(false, 0, piece.len() as u32));
        windowed.extend(piece);
    }
    // Offset value 1028 = 1024 + 4: OF code 10, 10 extra bits of 4. Stream (read backward):
    // states LL 0 bits, OF 0, ML 0; then OF extra bits 4 (10 bits), ML 0 bits, LL 0 bits.
    let stream = [4u8, 0b100];
    let sequences = [&[1u8, 0b0101_0100, 0, 10, 0][..], &stream].concat();
    let block = [&[0u8][..], &sequences].concat();
    windowed.extend(block_header(true, 2, block.len() as u32));
    windowed.extend(&block);
    assert_eq!(decompress(&windowed, &mut vec![0; 2000], &mut t), Err(Status::BadOffset));
    // Offset 1024 (value 1027: extra bits 3) is within the window.
    let last = windowed.len() - 2;
    windowed[last] = 3;
    let n = decompress(&windowed, &mut vec![0; 2000], &mut t);
    assert_eq!(n, Ok(1103));
}

#[test]
fn mutated_frames_never_panic() {
    let mut t = tables();
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let sources = [
        compress(&text(4000, 1), Options { checksum: true, ..PLAIN }),
        compress(&text(4000, 2), Options { level: 19, checksum: false, content_size: false, long_window: None }),
        compress(&runs(6000, 3), Options { level: 1, checksum: false, content_size: true, long_window: None }),
        compress(&numeric(3000, 4), Options { level: -5, checksum: true, content_size: false, long_window: None }),
    ];
    let mut ok = 0;
    for round in 0..4000 {
        let mut frame = sources[round % sources.len()].clone();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(frame.len());
            frame[at] = match rng.below(3) {
                0 => rng.next() as u8,
                1 => frame[at] ^ (1 << rng.below(8)),
                _ => frame[at].wrapping_add(1),
            };
        }
        let capacity = 6100;
        let mut out = vec![0u8; capacity];
        let decoded = decompress(&frame, &mut out, &mut t);
        let sized = decompressed_size(&frame, &mut t);
        if let Ok(n) = decoded {
            ok += 1;
            assert!(n <= capacity);
            assert_eq!(sized, Ok(n), "round {round}: sizing agrees with decoding");
        }
    }
    assert!(ok < 4000, "some mutations must be caught");
}

//! The Zstandard compressor: every frame decodes with libzstd (the `zstd` crate) to the exact
//! input at every level, blocks take the expected form, and ratios on fixed inputs stay put.

use ferrocomp_format::Status;
use ferrocomp_format::zstd::encode::{CompressScratch, MAX_BLOCK_SIZE, MAX_LEVEL, compress, max_compressed_size};
mod common;
use common::random_bytes;

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

fn zstd_compress(input: &[u8], level: u8) -> Vec<u8> {
    let mut out = vec![0u8; max_compressed_size(input.len())];
    let n = compress(input, level, &mut scratch(), &mut out).unwrap();
    out.truncate(n);
    out
}

/// Compresses at `level` and checks libzstd decodes the frame to `input`; returns the frame.
fn round_trip(input: &[u8], level: u8) -> Vec<u8> {
    let frame = zstd_compress(input, level);
    let back =
        zstd::stream::decode_all(&frame[..]).unwrap_or_else(|e| panic!("{} bytes, level {level}: {e}", input.len()));
    assert!(back == input, "{} bytes, level {level}: decoded bytes differ", input.len());
    assert_eq!(zstd::zstd_safe::get_frame_content_size(&frame).ok(), Some(Some(input.len() as u64)));
    frame
}

/// `n` bytes of source-like text: lines of identifiers, keywords and numbers from `seed`.
fn text_bytes(n: usize, seed: u64) -> Vec<u8> {
    const WORDS: [&str; 24] = [
        "def", "self", "return", "import", "value", "for", "in", "range", "if", "else", "None", "len", "data", "item",
        "class", "(", ")", ":", "=", "+", "numpy", "array", "index", "\n    ",
    ];
    let picks = random_bytes(n, seed);
    let mut out = Vec::with_capacity(n + 16);
    let mut i = 0;
    while out.len() < n {
        let pick = picks[i % n] as usize;
        out.extend_from_slice(WORDS[pick % WORDS.len()].as_bytes());
        if pick.is_multiple_of(7) {
            out.extend_from_slice(format!("{}", pick * 37 % 1000).as_bytes());
        }
        out.push(if i % 9 == 8 { b'\n' } else { b' ' });
        i += 1;
    }
    out.truncate(n);
    out
}

/// A smooth float32 field (a 2-D wave on a 1024-wide grid, with noise, rounded to hundredths),
/// little-endian, like the benchmark's `float32-field`.
fn float32_bytes(n: usize) -> Vec<u8> {
    let noise = random_bytes(n / 4, 17);
    (0..n / 4)
        .flat_map(|i| {
            let (x, y) = ((i % 1024) as f32 / 1024.0, (i / 1024) as f32 / 1024.0);
            let v = (8.0 * x).sin() * (6.0 * y).cos() * 20.0 + 280.0 + (noise[i] as f32 - 127.5) * 0.0001;
            ((v * 100.0).round() / 100.0).to_le_bytes()
        })
        .collect()
}

/// Slowly rising int32 counters with small noise, little-endian.
fn int32_bytes(n: usize) -> Vec<u8> {
    let noise = random_bytes(n / 4, 9);
    (0..n / 4).flat_map(|i| ((i as i32) * 3 + (noise[i] % 4) as i32).to_le_bytes()).collect()
}

fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    let mut mixed = text_bytes(70_000, 3);
    mixed.extend(random_bytes(5000, 4));
    mixed.extend(vec![b'z'; 70_000]);
    mixed.extend(text_bytes(1000, 5));
    vec![
        ("empty", Vec::new()),
        ("one byte", vec![42]),
        ("two bytes", vec![1, 2]),
        ("short text", text_bytes(100, 1)),
        ("random", random_bytes(100_000, 2)),
        ("same byte", vec![7; 200_000]),
        ("text", text_bytes(300_000, 7)),
        ("float32", float32_bytes(262_144)),
        ("int32", int32_bytes(262_144)),
        ("mixed", mixed),
    ]
}

#[test]
fn frames_decode_with_libzstd_at_every_level() {
    for (name, input) in inputs() {
        for level in 0..=MAX_LEVEL + 1 {
            let frame = round_trip(&input, level);
            assert!(frame.len() <= max_compressed_size(input.len()), "{name}, level {level}");
        }
    }
}

#[test]
fn sizes_around_block_boundaries_round_trip() {
    let text = text_bytes(3 * MAX_BLOCK_SIZE + 10, 11);
    for n in [31, 32, 255, 256, 1023, 1024, 4095, 4096, 16383, 16384, 65535, 65536, 65537, 131_071, 131_072, 131_073] {
        for level in 1..=MAX_LEVEL {
            round_trip(&text[..n], level);
            round_trip(&random_bytes(n, n as u64)[..], level);
        }
    }
}

#[test]
fn sixteen_mebibytes_round_trip() {
    let mut input = text_bytes(1 << 23, 21);
    input.extend(float32_bytes(1 << 23));
    for level in 1..=MAX_LEVEL {
        round_trip(&input, level);
    }
}

#[test]
fn empty_input_is_one_empty_raw_block() {
    // Magic, single-segment header with a 1-byte content size of 0, last raw block of size 0.
    assert_eq!(zstd_compress(&[], 1), [0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x00, 0x01, 0x00, 0x00]);
}

#[test]
fn runs_are_rle_blocks_and_noise_is_raw() {
    let frame = zstd_compress(&[5; 1000], 1);
    // Magic and header (7 bytes: content size 1000 takes 2), then one last RLE block of 1000 fives.
    assert_eq!(frame[7..], [(1000 << 3 | 1 << 1 | 1) as u8, (1000 >> 5) as u8, 0, 5]);
    let noise = random_bytes(5000, 3);
    let frame = zstd_compress(&noise, 1);
    assert_eq!(frame.len(), 7 + 3 + 5000);
    assert_eq!(frame[10..], noise[..]);
}

#[test]
fn a_short_output_is_reported() {
    let input = text_bytes(10_000, 4);
    let need = zstd_compress(&input, 1).len();
    let mut out = vec![0u8; need - 1];
    assert_eq!(compress(&input, 1, &mut scratch(), &mut out), Err(Status::OutputTooSmall));
}

#[test]
fn ratios_on_fixed_inputs_stay_above_their_floors() {
    // 64 KiB chunks; the floors sit just under today's ratios (level 1: 3.168 and 1.993;
    // level 2: 3.343 and 2.366; level 3: 3.507 and 2.513), so a change that loses ratio shows.
    // Taking only matches that gain `lazy::MIN_GAIN` cost levels 2 and 3 1-2% here (from 3.398 and
    // 2.409, 3.550 and 2.528) for 15-25% fewer sequences to decode.
    for (name, input, floors) in
        [("text", text_bytes(1 << 20, 31), [3.16, 3.34, 3.50]), ("float32", float32_bytes(1 << 20), [1.99, 2.36, 2.51])]
    {
        for level in 1..=MAX_LEVEL {
            let total: usize = input.chunks(MAX_BLOCK_SIZE).map(|chunk| zstd_compress(chunk, level).len()).sum();
            let ratio = input.len() as f64 / total as f64;
            assert!(ratio >= floors[level as usize - 1], "{name}, level {level}: ratio {ratio:.3}");
        }
    }
}

//! The Zstandard compress kernel's body on an emulated warp: it writes the format crate's frames
//! byte for byte (and the same status when the output is too small), and libzstd decodes them.

use ferrocomp_format::Status;
use ferrocomp_format::zstd::encode::{self, CompressScratch, MAX_BLOCK_SIZE, MAX_LEVEL, max_compressed_size};
use ferrocomp_kernels_gpu::emulated;
use ferrocomp_kernels_gpu::zstd::encode::{
    COMPRESS_SCRATCH_BYTES_PER_WARP, COMPRESS_SHARED_BYTES_PER_WARP, compress_chunk, compress_scratch_bytes_per_warp,
};
use ferrocomp_tests::{agreed, int32_bytes, random_bytes, text_bytes};

/// Bytes after a warp's scratch share that it must leave alone.
const GUARD: usize = 4096;

/// Memory filled with garbage, 16-byte aligned: neither side may depend on what its scratch held
/// before.
fn garbage(len: usize) -> Vec<u128> {
    (0..len.div_ceil(16)).map(|i| (i as u128).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)).collect()
}

fn as_bytes(words: &[u128]) -> &[u8] {
    unsafe { std::slice::from_raw_parts(words.as_ptr() as *const u8, words.len() * 16) }
}

fn warp_compress(input: &[u8], level: u8, capacity: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity];
    let mut shared = garbage(COMPRESS_SHARED_BYTES_PER_WARP);
    // The level's share of the slot, then a guard that must come back untouched.
    let share = compress_scratch_bytes_per_warp(level);
    let mut scratch = garbage(share + GUARD);
    let guard = as_bytes(&scratch)[share..].to_vec();
    let (i, o) = (input.as_ptr() as usize, out.as_mut_ptr() as usize);
    let (sh, sc) = (shared.as_mut_ptr() as usize, scratch.as_mut_ptr() as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        compress_chunk(warp, i as *const u8, input.len(), o as *mut u8, capacity, level, sh as *mut u8, sc as *mut u8)
    }));
    assert!(as_bytes(&scratch)[share..] == guard[..], "level {level} wrote past its scratch");
    result.map(|n| out[..n].to_vec())
}

fn scalar_compress(input: &[u8], level: u8, capacity: usize) -> Result<Vec<u8>, Status> {
    let mut scratch: Box<CompressScratch> = unsafe { Box::new_zeroed().assume_init() };
    let mut out = vec![0u8; capacity];
    encode::compress(input, level, &mut scratch, &mut out).map(|n| out[..n].to_vec())
}

/// A smooth float32 field rounded to hundredths, little-endian.
fn float32_bytes(n: usize) -> Vec<u8> {
    (0..n / 4)
        .flat_map(|i| {
            let (x, y) = ((i % 512) as f32 / 512.0, (i / 512) as f32 / 512.0);
            let v = (8.0 * x).sin() * (6.0 * y).cos() * 20.0 + 280.0;
            ((v * 100.0).round() / 100.0).to_le_bytes()
        })
        .collect()
}

fn inputs() -> Vec<Vec<u8>> {
    // Two blocks: text, noise and a long run, then a short text block.
    let mut mixed = text_bytes(8000, 3);
    mixed.extend(random_bytes(1000, 4));
    mixed.extend(vec![b'z'; 60_000]);
    mixed.extend(text_bytes(500, 5));
    // Few byte values, most of them one: codes of 1 to 3 bits, so stream runs share bytes.
    let skewed = random_bytes(6000, 12).iter().map(|&b| if b < 200 { b'a' } else { b'b' + b % 3 }).collect();
    vec![
        Vec::new(),
        vec![7],
        vec![1; 13],
        text_bytes(100, 1),
        text_bytes(1001, 2),
        random_bytes(3001, 2),
        vec![9; MAX_BLOCK_SIZE + 5],
        float32_bytes(20_000),
        int32_bytes(40_000), // short matches close together: later matches of a batch extend backward
        skewed,
        text_bytes(MAX_BLOCK_SIZE, 6),
        mixed,
    ]
}

#[test]
fn warp_compressor_writes_the_scalar_frames() {
    for input in inputs() {
        for level in 1..=MAX_LEVEL {
            let capacity = max_compressed_size(input.len());
            let expected = scalar_compress(&input, level, capacity).unwrap();
            let got = warp_compress(&input, level, capacity).unwrap();
            assert!(got == expected, "{} bytes, level {level}: frames differ", input.len());
            assert!(zstd::stream::decode_all(&got[..]).unwrap() == input, "{} bytes, level {level}", input.len());
        }
    }
}

#[test]
fn level_1_needs_less_scratch() {
    assert_eq!(compress_scratch_bytes_per_warp(2), COMPRESS_SCRATCH_BYTES_PER_WARP);
    assert!(COMPRESS_SCRATCH_BYTES_PER_WARP < size_of::<CompressScratch>());
    assert!(compress_scratch_bytes_per_warp(1) < 205_000);
}

#[test]
fn warp_compressor_reports_a_small_output_as_the_scalar_one_does() {
    let input = text_bytes(5000, 8);
    for level in 1..=MAX_LEVEL {
        let need = scalar_compress(&input, level, max_compressed_size(input.len())).unwrap().len();
        for capacity in [0, 5, need / 2, need - 1] {
            assert_eq!(scalar_compress(&input, level, capacity), Err(Status::OutputTooSmall));
            assert_eq!(warp_compress(&input, level, capacity), Err(Status::OutputTooSmall), "capacity {capacity}");
        }
        assert_eq!(warp_compress(&input, level, need).unwrap().len(), need);
    }
}

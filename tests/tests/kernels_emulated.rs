//! The GPU kernels' bodies, run on an emulated warp (32 host threads in lockstep): they must
//! write exactly what the scalar reference writes and report the same statuses.

use ferrocomp_format::lz4::{self, HASH_ENTRIES};
use ferrocomp_format::{DataType, Status, crc32};
use ferrocomp_kernels_gpu::{copy, crc32 as gpu_crc32, emulated, lz4 as gpu_lz4};
use ferrocomp_tests::{agreed, random_bytes, short_repeats_bytes, text_bytes};

fn warp_compress(input: &[u8], data_type: DataType, capacity: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity];
    let mut table = vec![0u16; HASH_ENTRIES];
    let (i, o, t) = (input.as_ptr() as usize, out.as_mut_ptr() as usize, table.as_mut_ptr() as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        gpu_lz4::compress_chunk(warp, i as *const u8, input.len(), o as *mut u8, capacity, t as *mut u16, data_type)
    }));
    result.map(|n| {
        out.truncate(n);
        out
    })
}

fn warp_decompress(block: &[u8], capacity: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity];
    let (b, o) = (block.as_ptr() as usize, out.as_mut_ptr() as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        gpu_lz4::decompress_chunk(warp, b as *const u8, block.len(), o as *mut u8, capacity)
    }));
    result.map(|n| {
        out.truncate(n);
        out
    })
}

fn scalar_compress(input: &[u8], data_type: DataType) -> Vec<u8> {
    let mut out = vec![0u8; lz4::max_compressed_size(input.len())];
    let n = lz4::compress(input, data_type, &mut [0; HASH_ENTRIES], &mut out).unwrap();
    out.truncate(n);
    out
}

#[test]
fn warp_compressor_writes_the_scalar_bytes() {
    let mut inputs = vec![Vec::new(), vec![7], vec![1; 13], text_bytes(100, 1), random_bytes(3000, 2)];
    let mut mixed = text_bytes(3000, 3);
    mixed.extend(random_bytes(500, 4));
    mixed.extend(vec![b'z'; 700]);
    inputs.push(mixed);
    for input in &inputs {
        for data_type in [DataType::Char, DataType::Short, DataType::Int, DataType::LongLong] {
            let expected = scalar_compress(input, data_type);
            let got = warp_compress(input, data_type, lz4::max_compressed_size(input.len())).unwrap();
            assert_eq!(got, expected, "{} bytes, {data_type:?}", input.len());
            assert_eq!(lz4_flex::block::decompress(&got, input.len()).unwrap(), *input);
            assert_eq!(warp_decompress(&got, input.len()).unwrap(), *input);
        }
    }
}

#[test]
fn warp_compressor_reports_a_small_output() {
    let input = random_bytes(1000, 5);
    assert_eq!(warp_compress(&input, DataType::Char, 900), Err(Status::OutputTooSmall));
}

#[test]
fn warp_decompressor_reads_liblz4_blocks() {
    // Text, and a run whose match is far longer than its whole block.
    let mut run = vec![b'a'; 20_000];
    run.extend_from_slice(b"end of the run");
    for input in [text_bytes(6000, 6), run] {
        for mode in [None, Some(::lz4::block::CompressionMode::HIGHCOMPRESSION(12))] {
            let block = ::lz4::block::compress(&input, mode, false).unwrap();
            assert_eq!(warp_decompress(&block, input.len()).unwrap(), input);
        }
    }
}

#[test]
fn warp_decompressor_matches_scalar_statuses_on_bad_blocks() {
    let good = scalar_compress(&text_bytes(2000, 7), DataType::Char);
    let cases = [
        (Vec::new(), 100, Status::Truncated),
        (good[..good.len() - 1].to_vec(), 2000, Status::Truncated),
        (vec![0x10, b'a', 2, 0, 0x00], 100, Status::BadOffset),
        (vec![0x10, b'a', 0, 0, 0x00], 100, Status::BadOffset),
        (good.clone(), 1999, Status::OutputTooSmall),
        (vec![0xF0, 255, 255], 100, Status::Truncated),
        (vec![0x1F, b'a', 1, 0, 255, 255, 255, 10, 0x00], 100, Status::OutputTooSmall), // long match
    ];
    for (block, capacity, status) in cases {
        let mut out = vec![0u8; capacity];
        assert_eq!(lz4::decompress(&block, &mut out), Err(status));
        assert_eq!(warp_decompress(&block, capacity), Err(status), "block {:?}", &block[..block.len().min(8)]);
    }
}

#[test]
fn warp_crc32_matches_crc32fast() {
    for n in [0usize, 1, 31, 32, 33, 1000, 4099] {
        let data = random_bytes(n, n as u64);
        let d = data.as_ptr() as usize;
        let crc = agreed(emulated::run(|warp| unsafe { gpu_crc32::crc32_chunk(warp, d as *const u8, n) }));
        assert_eq!(crc, crc32fast::hash(&data), "{n} bytes");
        assert_eq!(crc, crc32::crc32(&data));
    }
}

#[test]
fn warp_copy_copies_exactly() {
    let src = random_bytes(100, 9);
    let mut dst = vec![0u8; 101];
    let (s, d) = (src.as_ptr() as usize, dst.as_mut_ptr() as usize);
    emulated::run(|warp| unsafe { copy::copy_chunk(warp, s as *const u8, d as *mut u8, 100) });
    assert_eq!(dst[..100], src[..]);
    assert_eq!(dst[100], 0);
}

/// Blocks from the CPU libraries over data of several shapes, and the same blocks damaged:
/// the warp decoder gives what the scalar decoder gives, bytes or status.
#[test]
fn warp_decoder_agrees_with_scalar_on_foreign_and_damaged_blocks() {
    let numbers: Vec<u8> = (0..1500u32).flat_map(|i| (i * i / 7).to_le_bytes()).collect();
    let mut indented = Vec::new();
    for i in 0..120 {
        indented.extend_from_slice(&b"        "[..(i % 9)]);
        indented.extend_from_slice(format!("line {i} = value_{}\n", i % 13).as_bytes());
    }
    let inputs = [text_bytes(5000, 11), numbers, random_bytes(700, 12), indented, short_repeats_bytes(2000, 14)];
    let mut blocks = Vec::new();
    for input in &inputs {
        blocks.push((lz4_flex::block::compress(input), input.len()));
        for mode in [
            Some(::lz4::block::CompressionMode::FAST(1)),
            None,
            Some(::lz4::block::CompressionMode::HIGHCOMPRESSION(9)),
        ] {
            blocks.push((::lz4::block::compress(input, mode, false).unwrap(), input.len()));
        }
    }
    let scalar = |block: &[u8], capacity: usize| {
        let mut out = vec![0u8; capacity];
        lz4::decompress(block, &mut out).map(|n| out[..n].to_vec())
    };
    let mut noise = random_bytes(256, 13).into_iter();
    for (block, len) in &blocks {
        assert_eq!(warp_decompress(block, *len), scalar(block, *len));
        // Damage: one byte replaced, at a spread of positions.
        for _ in 0..4 {
            let mut damaged = block.clone();
            let at = noise.next().unwrap() as usize * block.len() / 256;
            damaged[at] = noise.next().unwrap();
            assert_eq!(warp_decompress(&damaged, *len), scalar(&damaged, *len), "damaged at {at}");
        }
    }
}

/// The differential fuzzer's finding: a sequence cut short in its match, with no room for its
/// literals, is `Truncated` (the scalar decoder reads the whole sequence before writing), where
/// the warp decoder said `OutputTooSmall`. The cuts of a block's first sequences, at small rooms.
#[test]
fn cut_blocks_fail_as_the_scalar_decoder_does_at_every_small_room() {
    let scalar = |block: &[u8], capacity: usize| {
        let mut out = vec![0u8; capacity];
        lz4::decompress(block, &mut out).map(|n| out[..n].to_vec())
    };
    assert_eq!(warp_decompress(&[0x11, b'a', 0x01], 0), Err(Status::Truncated));
    let block = scalar_compress(&text_bytes(300, 5), DataType::Char);
    for cut in 0..block.len().min(48) {
        for room in [0, 2, 17] {
            assert_eq!(warp_decompress(&block[..cut], room), scalar(&block[..cut], room), "cut {cut}, room {room}");
        }
    }
}

/// The spread copy at every alignment of source and destination and at lengths around its
/// 16-byte units' edges, with one, two and four units in flight: the bytes copied, nothing
/// written around them.
#[test]
fn spread_copy_copies_exactly_at_every_alignment() {
    let src = random_bytes(400, 10);
    for (src_shift, dst_shift) in (0..16).flat_map(|s| (0..16).map(move |d| (s, d))) {
        for (n, in_flight) in (0..48).chain([63, 64, 65, 200, 383]).flat_map(|n| [(n, 1), (n, 2), (n, 4)]) {
            let mut dst = vec![0xA5u8; 420];
            let (s, d) = (src[src_shift..].as_ptr() as usize, dst[dst_shift..].as_mut_ptr() as usize);
            for thread in 0..3 {
                let (from, to) = (copy::Memory(s as *mut u8), copy::Memory(d as *mut u8));
                match in_flight {
                    1 => unsafe { copy::copy_spread(thread, 3, s as *const u8, d as *mut u8, n) },
                    2 => unsafe { copy::spread::<2>(thread, 3, &from, &to, n) },
                    _ => unsafe { copy::spread::<4>(thread, 3, &from, &to, n) },
                }
            }
            assert_eq!(dst[dst_shift..dst_shift + n], src[src_shift..src_shift + n], "{src_shift} {dst_shift} {n}");
            assert!(dst[..dst_shift].iter().chain(&dst[dst_shift + n..]).all(|&b| b == 0xA5));
        }
    }
}

//! The Snappy kernels' bodies on an emulated warp: the compressor writes the format crate's
//! bytes, and the decoders (a warp's, and a pair of warps' on an emulated block) give the scalar
//! decoder's bytes or status on our streams, `snap`'s, and damaged ones.

use ferrocomp_format::lz4::HASH_ENTRIES;
use ferrocomp_format::{DataType, Status, snappy};
use ferrocomp_kernels_gpu::lz77::pair;
use ferrocomp_kernels_gpu::{emulated, snappy as gpu_snappy};
use ferrocomp_tests::{agreed, random_bytes, short_repeats_bytes, text_bytes};

fn warp_compress(input: &[u8], data_type: DataType) -> Result<Vec<u8>, Status> {
    let capacity = snappy::max_compressed_size(input.len());
    let mut out = vec![0u8; capacity];
    let mut table = vec![0u16; HASH_ENTRIES];
    let (i, o, t) = (input.as_ptr() as usize, out.as_mut_ptr() as usize, table.as_mut_ptr() as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        gpu_snappy::compress_chunk(warp, i as *const u8, input.len(), o as *mut u8, capacity, t as *mut u16, data_type)
    }));
    result.map(|n| out[..n].to_vec())
}

/// The warp decoder's result (Blosc's) and the pair's (the batched kernel's, on a block of two
/// warps), which must agree; the first is returned.
fn gpu_decompress(stream: &[u8], capacity: usize) -> Result<Vec<u8>, Status> {
    let exact: Box<[u8]> = stream.into(); // an allocation of the stream's size, for a sanitizer
    let mut out = vec![0u8; capacity];
    let (s, o) = (exact.as_ptr() as usize, out.as_mut_ptr() as usize);
    let warp = agreed(emulated::run(|warp| unsafe {
        gpu_snappy::decompress_chunk(warp, s as *const u8, stream.len(), o as *mut u8, capacity)
    }))
    .map(|n| out[..n].to_vec());
    let mut out = vec![0u8; capacity];
    let mut shared = vec![0u128; pair::SHARED_BYTES / 16];
    let (o, m) = (out.as_mut_ptr() as usize, shared.as_mut_ptr() as usize);
    let results = emulated::run_block(pair::WARPS * 32, |thread| unsafe {
        let (input, output, shared) = (s as *const u8, o as *mut u8, m as *mut u8);
        gpu_snappy::decompress_chunk_in_pair(thread, thread, input, stream.len(), output, capacity, shared)
    });
    assert_eq!(agreed(results[..32].to_vec()).map(|n| out[..n].to_vec()), warp, "the pair and the warp disagree");
    warp
}

/// The stream of Snappy `elements` that decode to `n` bytes, after checking that they do (the
/// scalar decoder) and that the GPU decoders give the same bytes.
fn check_elements(elements: Vec<u8>, n: u32) -> Vec<u8> {
    let mut stream = vec![0u8; snappy::preamble_len(n as usize)];
    snappy::write_preamble(&mut stream, n as usize);
    stream.extend(elements);
    let expected = scalar_decompress(&stream, n as usize);
    assert_eq!(expected.as_ref().map(Vec::len), Ok(n as usize));
    assert_eq!(gpu_decompress(&stream, n as usize), expected);
    stream
}

fn scalar_decompress(stream: &[u8], capacity: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity];
    snappy::decompress(stream, &mut out).map(|n| out[..n].to_vec())
}

fn inputs() -> Vec<Vec<u8>> {
    let mut mixed = text_bytes(3000, 3);
    mixed.extend(random_bytes(500, 4));
    mixed.extend(vec![b'z'; 700]);
    let numbers: Vec<u8> = (0..1500u32).flat_map(|i| (i * i / 7).to_le_bytes()).collect();
    let repeats = short_repeats_bytes(2000, 5);
    vec![Vec::new(), vec![7], vec![1; 13], text_bytes(100, 1), random_bytes(3000, 2), mixed, numbers, repeats]
}

#[test]
fn warp_compressor_writes_the_scalar_bytes() {
    for input in inputs() {
        for data_type in [DataType::Char, DataType::Int] {
            let mut expected = vec![0u8; snappy::max_compressed_size(input.len())];
            let n = snappy::compress(&input, data_type, &mut [0; HASH_ENTRIES], &mut expected).unwrap();
            let got = warp_compress(&input, data_type).unwrap();
            assert_eq!(got, expected[..n], "{} bytes, {data_type:?}", input.len());
            assert_eq!(snap::raw::Decoder::new().decompress_vec(&got).unwrap(), input);
        }
    }
}

#[test]
fn decoders_agree_with_scalar_on_foreign_and_damaged_streams() {
    let mut streams = Vec::new();
    for input in inputs() {
        streams.push((snap::raw::Encoder::new().compress_vec(&input).unwrap(), input.len()));
        streams.push((warp_compress(&input, DataType::Char).unwrap(), input.len()));
    }
    let mut noise = random_bytes(512, 13).into_iter();
    for (stream, len) in &streams {
        assert_eq!(gpu_decompress(stream, *len), scalar_decompress(stream, *len));
        assert_eq!(gpu_decompress(stream, *len + 5), scalar_decompress(stream, *len + 5));
        for _ in 0..4 {
            let mut damaged = stream.clone();
            let at = noise.next().unwrap() as usize * stream.len() / 256;
            damaged[at] = noise.next().unwrap();
            assert_eq!(gpu_decompress(&damaged, *len), scalar_decompress(&damaged, *len), "damaged at {at}");
            let cut = &stream[..at];
            assert_eq!(gpu_decompress(cut, *len), scalar_decompress(cut, *len), "cut at {at}");
        }
    }
}

#[test]
fn decoders_give_the_scalar_statuses() {
    let good = snap::raw::Encoder::new().compress_vec(&text_bytes(2000, 7)).unwrap();
    let cases = [
        (Vec::new(), 100, Status::Truncated),
        (good[..good.len() - 1].to_vec(), 2000, Status::Truncated),
        (good.clone(), 1999, Status::OutputTooSmall),
        (vec![5, 0x00, b'a', 0x0a, 2, 0], 100, Status::BadOffset), // copy-2 from 2 back after 1 byte
        (vec![5, 0x00, b'a', 0x01, 0], 100, Status::BadOffset),    // copy-1 with offset 0
        (vec![5, 0x00, b'a', 0x0d, 1, 0], 100, Status::Malformed), // past the preamble's size
        (vec![9, 0x00, b'a'], 100, Status::Malformed),             // fewer bytes than the preamble
        (vec![3, 0xf0, 10], 100, Status::Truncated),               // a literal's length cut off
    ];
    for (stream, capacity, status) in cases {
        assert_eq!(scalar_decompress(&stream, capacity), Err(status), "{stream:?}");
        assert_eq!(gpu_decompress(&stream, capacity), Err(status), "{stream:?}");
    }
}

/// Streams of short elements, each copy repeating bytes a few to a hundred and fifty back, often
/// of the elements just before it: the decoders batch them, each step (32 or 64 bytes) reading
/// bytes its batch wrote a step before and following those its own step writes back to a final
/// byte. Every stream is checked against the scalar decoder's bytes.
#[test]
fn decoders_follow_matches_into_their_own_batch() {
    let mut next = ferrocomp_tests::random_u64s(21);
    for _ in 0..40 {
        let (mut elements, mut n) = (vec![0x1c, 1, 2, 3, 4, 5, 6, 7, 8], 8u32); // 8 literals
        while n < 3000 {
            let r = next();
            let offset = 1 + (r >> 8) as u32 % (if r & 1 == 0 { 12 } else { 150 }).min(n);
            match (r >> 4) % 4 {
                0 => {
                    let len = 1 + (r >> 20) as u32 % 4;
                    elements.push(((len - 1) << 2) as u8);
                    elements.extend((0..len).map(|i| (r >> (32 + 8 * i)) as u8));
                    n += len;
                }
                1 => {
                    let len = 4 + (r >> 20) as u32 % 8;
                    elements.extend([1 | ((len - 4) << 2) as u8 | ((offset >> 8) << 5) as u8, offset as u8]);
                    n += len;
                }
                _ => {
                    let len = 1 + (r >> 20) as u32 % 64;
                    elements.extend([2 | ((len - 1) << 2) as u8, offset as u8, (offset >> 8) as u8]);
                    n += len;
                }
            }
        }
        check_elements(elements, n);
    }
}

/// Streams of literals of 56 to 64 bytes, one length byte each (the longest sequences the
/// parsers batch: a batch's window of input holds two or three), between copies: every stream
/// decodes to the scalar decoder's bytes, whole and cut short.
#[test]
fn decoders_walk_runs_of_long_short_literals() {
    let mut next = ferrocomp_tests::random_u64s(22);
    for _ in 0..30 {
        let (mut elements, mut n) = (Vec::new(), 0u32);
        while n < 4000 {
            let r = next();
            if n > 0 && r.is_multiple_of(5) {
                let len = 4 + (r >> 8) as u32 % 8;
                elements.extend([1 | ((len - 4) << 2) as u8, 1 + (r >> 16) as u8 % n.min(255) as u8]);
                n += len;
            } else {
                let len = 56 + (r >> 8) as u32 % 9;
                elements.extend([60 << 2, (len - 1) as u8]);
                elements.extend((0..len).map(|i| (r >> (i % 56)) as u8));
                n += len;
            }
        }
        let stream = check_elements(elements, n);
        let cut = &stream[..stream.len() * 2 / 3];
        assert_eq!(gpu_decompress(cut, n as usize), scalar_decompress(cut, n as usize));
    }
}

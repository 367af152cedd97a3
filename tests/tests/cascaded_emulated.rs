//! The Cascaded kernels' bodies on an emulated block of warps: the compressor writes the format
//! crate's bytes at every element type and option, and the decoder gives the scalar decoder's
//! bytes or status on those streams, on misaligned ones and on damaged ones.

use ferrocomp_format::Status;
use ferrocomp_format::cascaded::{self, ElementType, Options, SUB_BLOCK};
use ferrocomp_kernels_gpu::{cascaded as gpu_cascaded, emulated};
use ferrocomp_tests::{agreed, random_bytes, text_bytes};

/// The stream of `input` by a block of [`gpu_cascaded::COMPRESS_WARPS`] warps, as
/// [`block_compress_with`].
fn block_compress(input: &[u8], options: &Options, shift: usize, capacity: usize) -> Result<Vec<u8>, Status> {
    block_compress_with(gpu_cascaded::COMPRESS_WARPS, input, options, shift, capacity)
}

/// The stream of `input` by a block of `warps` warps, `input` placed `shift` bytes past an
/// aligned address, into an output with room for `capacity` bytes.
fn block_compress_with(
    warps: u32,
    input: &[u8],
    options: &Options,
    shift: usize,
    capacity: usize,
) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity];
    let mut placed = vec![0u8; input.len() + shift];
    placed[shift..].copy_from_slice(input);
    let mut shared = vec![0u64; gpu_cascaded::compress_shared_bytes(warps).div_ceil(8)];
    let (i, o, s) = (placed[shift..].as_ptr() as usize, out.as_mut_ptr() as usize, shared.as_mut_ptr() as usize);
    let (n, o, s) = (input.len(), o as *mut u8, s as *mut u8);
    let result = agreed(emulated::run_block(warps * 32, |thread| unsafe {
        let input = core::slice::from_raw_parts(i as *const u8, n);
        gpu_cascaded::compress_chunk(thread, thread, input, options, s, o, capacity)
    }));
    result.map(|n| out[..n].to_vec())
}

/// The decoding of `stream` by a block of [`gpu_cascaded::DECODE_WARPS`] warps, as
/// [`block_decompress_with`].
fn block_decompress(stream: &[u8], capacity: usize, shift: usize) -> Result<Vec<u8>, Status> {
    block_decompress_with(gpu_cascaded::DECODE_WARPS, stream, capacity, shift)
}

/// The decoding of `stream` by a block of `warps` warps, `stream` placed `shift` bytes past an
/// aligned address (the allocation ending with it, for a sanitizer), into an output `shift` bytes
/// past one.
fn block_decompress_with(warps: u32, stream: &[u8], capacity: usize, shift: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity + shift];
    let mut placed = vec![0u8; stream.len() + shift].into_boxed_slice();
    placed[shift..].copy_from_slice(stream);
    let mut shared = vec![0u128; gpu_cascaded::decode_shared_bytes(warps).div_ceil(16)];
    let (i, o, f) =
        (placed[shift..].as_ptr() as usize, out[shift..].as_mut_ptr() as usize, shared.as_mut_ptr() as usize);
    let result = agreed(emulated::run_block(warps * 32, |thread| unsafe {
        gpu_cascaded::decompress_chunk(
            thread,
            thread,
            i as *const u8,
            stream.len(),
            o as *mut u8,
            capacity,
            f as *mut u8,
        )
    }));
    result.map(|n| out[shift..shift + n].to_vec())
}

fn scalar_compress(input: &[u8], options: &Options) -> Vec<u8> {
    let mut out = vec![0u8; cascaded::max_compressed_size(input.len())];
    let n = cascaded::compress(input, options, &mut out).unwrap();
    out.truncate(n);
    out
}

fn scalar_decompress(stream: &[u8], capacity: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity];
    cascaded::decompress(stream, &mut out).map(|n| out[..n].to_vec())
}

/// Elements of `width` bytes: runs of slowly changing values, then sorted offsets, then noise.
fn numbers(width: usize, seed: u64) -> Vec<u8> {
    let noise = random_bytes(600, seed);
    let mut out = Vec::new();
    let mut value = 7u64;
    for (k, &r) in noise.iter().enumerate().take(300) {
        value = value.wrapping_add(r as u64 % 5).wrapping_sub(2);
        for _ in 0..1 + (r as usize % 9) * (k % 3) {
            out.extend_from_slice(&value.to_le_bytes()[..width]);
        }
    }
    for (k, &r) in noise.iter().enumerate() {
        out.extend_from_slice(&((k * 40 + r as usize % 40) as u64).to_le_bytes()[..width]);
    }
    out.extend_from_slice(&noise[..301]);
    out
}

fn small_inputs() -> Vec<Vec<u8>> {
    // The last takes the block's warps two rounds, the second with fewer sub-blocks than warps.
    vec![Vec::new(), vec![9], vec![3; 5], text_bytes(SUB_BLOCK + 77, 5), text_bytes(4 * SUB_BLOCK + 901, 6)]
}

#[test]
fn block_compressor_writes_the_scalar_bytes() {
    for element in ElementType::ALL {
        let option_sets = [
            Options { element, ..Options::default() },
            Options { element, rles: 2, deltas: 1, bitpack: true, auto: false },
            Options { element, rles: 4, deltas: 0, bitpack: true, auto: false },
            Options { element, rles: 0, deltas: 3, bitpack: false, auto: false },
            Options { element, rles: 3, deltas: 2, bitpack: true, auto: true },
        ];
        // Every option set on numbers; the small and text inputs each with one, in turn.
        let numbers = numbers(element.width(), element as u64);
        let cases = option_sets.iter().map(|options| (&numbers, options));
        let small = small_inputs();
        let cases = cases.chain(small.iter().zip(option_sets.iter().cycle().skip(element as usize)));
        for (k, (input, options)) in cases.enumerate() {
            let expected = scalar_compress(input, options);
            let capacity = cascaded::max_compressed_size(input.len());
            let got = block_compress(input, options, k % 3, capacity).unwrap();
            assert_eq!(got, expected, "{} bytes, {options:?}", input.len());
            assert_eq!(block_decompress(&got, input.len(), k % 4).as_ref(), Ok(input), "{options:?}");
        }
    }
}

#[test]
fn block_compressor_reports_what_does_not_fit() {
    let input = numbers(4, 8);
    let options = Options::default();
    let capacity = scalar_compress(&input, &options).len() - 1;
    assert_eq!(block_compress(&input, &options, 0, capacity), Err(Status::OutputTooSmall));
}

#[test]
fn block_decoder_agrees_with_scalar_on_damaged_streams() {
    let mut noise = random_bytes(4096, 13).into_iter();
    for element in [ElementType::U8, ElementType::I32, ElementType::U64] {
        for options in
            [Options { element, ..Options::default() }, Options { element, rles: 3, auto: false, ..Options::default() }]
        {
            let input = numbers(element.width(), 6);
            let stream = scalar_compress(&input, &options);
            assert_eq!(block_decompress(&stream, input.len() - 1, 0), Err(Status::OutputTooSmall));
            assert_eq!(
                block_decompress(&stream[..stream.len() - 1], input.len(), 3),
                scalar_decompress(&stream[..stream.len() - 1], input.len())
            );
            for _ in 0..24 {
                let mut damaged = stream.clone();
                let at = (noise.next().unwrap() as usize * 256 + noise.next().unwrap() as usize) % stream.len();
                damaged[at] ^= 1 << (noise.next().unwrap() % 8);
                assert_eq!(
                    block_decompress(&damaged, input.len(), at % 4),
                    scalar_decompress(&damaged, input.len()),
                    "{options:?}, damaged at {at}"
                );
            }
        }
    }
}

/// Where sub-block `s` of `stream` starts (after the header and the size table).
fn sub_block_at(stream: &[u8], s: usize) -> usize {
    let parts = cascaded::sub_blocks(u32::from_le_bytes(stream[4..8].try_into().unwrap()) as usize);
    (0..s).fold(cascaded::HEADER_LEN + 2 * parts, |at, k| at + cascaded::sub_block_size(stream, k))
}

/// `stream` with the first byte of each sub-block `s` of `parts` set to `byte`.
fn with_first_bytes(stream: &[u8], parts: &[(usize, u8)]) -> Vec<u8> {
    let mut damaged = stream.to_vec();
    for &(s, byte) in parts {
        damaged[sub_block_at(stream, s)] = byte;
    }
    damaged
}

/// A layers byte past the most layers (malformed), and a stored mark on a coded size (truncated).
const MALFORMED: u8 = 0x0F;
const TRUNCATED: u8 = cascaded::STORED;

#[test]
fn block_decoder_reports_the_first_failing_sub_block() {
    // The sub-blocks go to whichever warp is free, so a later one may fail first in time, and in
    // a warp with a lower index; the first in the stream must win, whichever that is.
    let options = Options { element: ElementType::I32, ..Options::default() };
    let input: Vec<u8> = (0..40 * SUB_BLOCK / 4).flat_map(|i: usize| ((i / 3 + i % 7) as u32).to_le_bytes()).collect();
    let stream = scalar_compress(&input, &options);
    for first in 0..8 {
        for later in first + 1..first + 5 {
            for (a, b) in [(MALFORMED, TRUNCATED), (TRUNCATED, MALFORMED)] {
                let damaged = with_first_bytes(&stream, &[(later, b), (first, a)]);
                let expected = scalar_decompress(&damaged, input.len());
                assert_eq!(expected, Err(if a == MALFORMED { Status::Malformed } else { Status::Truncated }));
                assert_eq!(block_decompress(&damaged, input.len(), first % 4), expected, "{first}, {later}");
            }
        }
    }
}

#[test]
fn block_decoder_places_sub_blocks_a_round_at_a_time() {
    // 150 sub-blocks: the block places them 128 a round.
    let options = Options { element: ElementType::I32, ..Options::default() };
    let input: Vec<u8> = (0..150 * SUB_BLOCK / 4).flat_map(|i: usize| ((i / 3) as u32).to_le_bytes()).collect();
    let stream = scalar_compress(&input, &options);
    assert_eq!(block_decompress(&stream, input.len(), 1).as_ref(), Ok(&input));
    // A block of one warp places them 32 a round.
    assert_eq!(block_decompress_with(1, &stream, input.len(), 3).as_ref(), Ok(&input));
    let cases = [
        ([(131, MALFORMED), (140, TRUNCATED)], Status::Malformed),
        ([(149, TRUNCATED), (3, MALFORMED)], Status::Malformed),
        ([(127, TRUNCATED), (128, MALFORMED)], Status::Truncated),
    ];
    for (parts, status) in cases {
        let damaged = with_first_bytes(&stream, &parts);
        assert_eq!(scalar_decompress(&damaged, input.len()), Err(status));
        assert_eq!(block_decompress(&damaged, input.len(), 2), Err(status), "{parts:?}");
        assert_eq!(block_decompress_with(1, &damaged, input.len(), 0), Err(status), "{parts:?}");
    }
}

#[test]
fn blocks_of_any_size_code_alike() {
    // The host gives a batch of few chunks larger blocks, of up to an SM's worth of warps, both ways.
    for element in [ElementType::U8, ElementType::U16, ElementType::I32, ElementType::U64] {
        let options = Options { element, ..Options::default() };
        let mut input = numbers(element.width(), 9);
        input.extend_from_slice(&text_bytes(5 * SUB_BLOCK + 3, 9));
        let stream = scalar_compress(&input, &options);
        let capacity = cascaded::max_compressed_size(input.len());
        for (k, warps) in [1, 4, 12, gpu_cascaded::MAX_WARPS].into_iter().enumerate() {
            assert_eq!(
                block_compress_with(warps, &input, &options, k, capacity).as_ref(),
                Ok(&stream),
                "{warps} warps"
            );
            assert_eq!(block_decompress_with(warps, &stream, input.len(), k).as_ref(), Ok(&input), "{warps} warps");
        }
    }
}

#[test]
fn block_decoder_decodes_a_coding_as_long_as_stored() {
    // 16 bytes coded as one stream of 7-bit entries: 1 + 1 + 1 + 14 bytes, the size a stored
    // sub-block of 16 bytes takes, so that only its first byte tells them apart.
    let input: Vec<u8> = (0..16u32).map(|i| (100 + (i * 37) % 128) as u8).collect();
    let mut stream = vec![cascaded::VERSION, ElementType::U8 as u8, 0, 0, 16, 0, 0, 0, 17, 0];
    stream.extend_from_slice(&[0x00, 7, 100]);
    let mut packed = [0u8; 14];
    for (i, &value) in input.iter().enumerate() {
        ferrocomp_format::bitpack::write_bits(&mut packed, 7 * i, 7, (value - 100) as u64);
    }
    stream.extend_from_slice(&packed);
    assert_eq!(scalar_decompress(&stream, 16).as_ref(), Ok(&input));
    assert_eq!(block_decompress(&stream, 16, 1).as_ref(), Ok(&input));
    // The same size stored, and stored one byte short or long.
    let mut stored = stream[..10].to_vec();
    stored.push(cascaded::STORED);
    stored.extend_from_slice(&input);
    assert_eq!(block_decompress(&stored, 16, 3).as_ref(), Ok(&input));
    for (size, status) in [(16, Status::Truncated), (18, Status::Malformed)] {
        let mut wrong = stored.clone();
        wrong[8] = size;
        wrong.resize(10 + size as usize, 0);
        assert_eq!(scalar_decompress(&wrong, 16), Err(status));
        assert_eq!(block_decompress(&wrong, 16, 0), Err(status));
    }
}

//! The Bitcomp kernels' bodies on an emulated block of warps: the compressor writes the format
//! crate's bytes at every element type and option (lossy included), and the decoder gives the
//! scalar decoder's bytes or status on those streams, on misaligned ones and on damaged ones.

use ferrocomp_format::Status;
use ferrocomp_format::bitcomp::{self, ElementType, ErrorBound, Kind, Options, Tile};
use ferrocomp_format::bitpack::{deposit, extract};
use ferrocomp_kernels_gpu::bitpack::{Scatter32, Scatter64};
use ferrocomp_kernels_gpu::{bitcomp as gpu_bitcomp, emulated};
use ferrocomp_tests::{agreed, random_bytes, text_bytes};

/// Warps of the blocks the kernels run in: the fewest (a batch of many chunks), and more (a
/// batch of few: rounds of other sizes; compressing, a first round larger than the ranking's
/// sample), up to an SM's worth.
const SHAPES: [(u32, u32); 3] = [
    (gpu_bitcomp::COMPRESS_WARPS, gpu_bitcomp::DECODE_WARPS),
    (6, 10),
    (gpu_bitcomp::COMPRESS_WARPS_PER_SM, gpu_bitcomp::DECODE_WARPS_PER_SM),
];

/// A block of `warps` warps' stream of `input` placed `shift` bytes past an aligned address,
/// written `shift` bytes past one, into an output with room for `capacity` bytes.
fn block_compress(
    input: &[u8],
    options: &Options,
    shift: usize,
    capacity: usize,
    warps: u32,
) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity + shift];
    let mut placed = vec![0u8; input.len() + shift];
    placed[shift..].copy_from_slice(input);
    let mut shared = vec![0u128; gpu_bitcomp::compress_shared_bytes(warps).div_ceil(16)];
    let (i, o, s) =
        (placed[shift..].as_ptr() as usize, out[shift..].as_mut_ptr() as usize, shared.as_mut_ptr() as usize);
    let (n, o, s) = (input.len(), o as *mut u8, s as *mut u8);
    let result = agreed(emulated::run_block(warps * 32, |thread| unsafe {
        gpu_bitcomp::compress_chunk(thread, thread, i as *const u8, n, options, o, capacity, s)
    }));
    result.map(|n| out[shift..shift + n].to_vec())
}

/// A block of `warps` warps' decoding of `stream` placed `shift` bytes past an aligned address
/// (the allocation ending with it, for a sanitizer), into an output `shift` bytes past one.
fn block_decompress(stream: &[u8], capacity: usize, shift: usize, warps: u32) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity + shift];
    let mut placed = vec![0u8; stream.len() + shift].into_boxed_slice();
    placed[shift..].copy_from_slice(stream);
    let mut shared = vec![0u128; gpu_bitcomp::decode_shared_bytes(warps).div_ceil(16)];
    let (i, o, s) =
        (placed[shift..].as_ptr() as usize, out[shift..].as_mut_ptr() as usize, shared.as_mut_ptr() as usize);
    let result = agreed(emulated::run_block(warps * 32, |thread| unsafe {
        gpu_bitcomp::decompress_chunk(
            thread,
            thread,
            i as *const u8,
            stream.len(),
            o as *mut u8,
            capacity,
            s as *mut u8,
        )
    }));
    result.map(|n| out[shift..shift + n].to_vec())
}

fn scalar_compress(input: &[u8], options: &Options) -> Vec<u8> {
    let mut out = vec![0u8; bitcomp::max_compressed_size(input.len(), options)];
    let n = bitcomp::compress(input, options, &mut out).unwrap();
    out.truncate(n);
    out
}

fn scalar_decompress(stream: &[u8], capacity: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity];
    bitcomp::decompress(stream, &mut out).map(|n| out[..n].to_vec())
}

/// Elements of `width` bytes that take every tile coding: sorted offsets (deltas), mostly zeros
/// (sparse), a narrow range (frame of reference), noise; then a few odd bytes.
fn numbers(width: usize, seed: u64) -> Vec<u8> {
    let noise = random_bytes(2000, seed);
    let mut out = Vec::new();
    let mut push = |value: u64| out.extend_from_slice(&value.to_le_bytes()[..width]);
    for (k, &r) in noise.iter().enumerate().take(400) {
        push((k * 40 + r as usize % 40) as u64);
    }
    for &r in &noise[400..900] {
        push(if r < 20 { r as u64 * 3 + 1 } else { 0 });
    }
    for &r in &noise[900..1300] {
        push(1000 + r as u64 % 9);
    }
    for k in 0..300 {
        push(u64::from_le_bytes(noise[k..k + 8].try_into().unwrap()));
    }
    out.extend_from_slice(&noise[..width.saturating_sub(1)]);
    out
}

/// Floats of `width` bytes (`f32` or `f64`): a smooth field, zeros, and values no bound holds
/// (NaN, infinities, huge), so that every tile coding and the verbatim escape occur.
fn floats(width: usize, seed: u64) -> Vec<u8> {
    let noise = random_bytes(1200, seed);
    let mut out = Vec::new();
    for (k, &r) in noise.iter().enumerate() {
        let value = match k {
            300..600 if r > 12 => 0.0,
            700 => f64::NAN,
            701 => f64::INFINITY,
            702 => -1e300,
            _ => 280.0 + 20.0 * (k as f64 / 50.0).sin() + r as f64 / 1000.0,
        };
        if width == 4 {
            out.extend_from_slice(&(value as f32).to_le_bytes());
        } else {
            out.extend_from_slice(&value.to_le_bytes());
        }
    }
    out
}

fn option_sets(element: ElementType) -> Vec<Options> {
    let mut sets =
        vec![Options { element, ..Options::default() }, Options { element, sparse: true, error_bound: None }];
    if element.width() >= 4 {
        let error_bound = ErrorBound::new(1e-3);
        sets.push(Options { element, sparse: false, error_bound });
        sets.push(Options { element, sparse: true, error_bound });
    }
    sets
}

#[test]
fn block_compressor_writes_the_scalar_bytes() {
    for element in ElementType::ALL {
        let width = element.width();
        for (k, options) in option_sets(element).iter().enumerate() {
            let input = if options.error_bound.is_some() { floats(width, k as u64) } else { numbers(width, k as u64) };
            let small = [Vec::new(), vec![9], vec![3; 5], input[..width * 129 + 3].to_vec(), text_bytes(1000, 5)];
            for (s, input) in std::iter::once(&input).chain(&small).enumerate() {
                let expected = scalar_compress(input, options);
                let capacity = bitcomp::max_compressed_size(input.len(), options);
                let (compress_warps, decode_warps) = SHAPES[(k + s) % SHAPES.len()];
                let got = block_compress(input, options, (k + s) % 3, capacity, compress_warps).unwrap();
                assert_eq!(got, expected, "{} bytes, {options:?}, {compress_warps} warps", input.len());
                let decoded = block_decompress(&got, input.len(), s % 4, decode_warps);
                assert_eq!(decoded, scalar_decompress(&expected, input.len()), "{options:?}");
                if options.error_bound.is_none() {
                    assert_eq!(decoded.as_ref(), Ok(input), "{options:?}");
                }
            }
        }
    }
}

#[test]
fn block_compressor_reports_what_does_not_fit() {
    let input = numbers(4, 8);
    let options = Options { element: ElementType::U32, ..Options::default() };
    let capacity = bitcomp::max_compressed_size(input.len(), &options) - 1;
    assert_eq!(block_compress(&input, &options, 0, capacity, gpu_bitcomp::COMPRESS_WARPS), Err(Status::OutputTooSmall));
}

/// Flips `count` bits of `stream` (of `len` bytes decoded), three in four within its first `near`
/// bytes, where `noise` says; the block's decoding of each damaged stream is the scalar decoder's.
fn flips_agree(
    stream: &[u8],
    len: usize,
    count: usize,
    near: usize,
    noise: &mut impl Iterator<Item = u8>,
    options: &Options,
) {
    for _ in 0..count {
        let mut damaged = stream.to_vec();
        let span = if noise.next().unwrap() < 192 { stream.len().min(near) } else { stream.len() };
        let at = (noise.next().unwrap() as usize * 256 + noise.next().unwrap() as usize) % span;
        damaged[at] ^= 1 << (noise.next().unwrap() % 8);
        let (got, expected) =
            (block_decompress(&damaged, len, at % 4, gpu_bitcomp::DECODE_WARPS), scalar_decompress(&damaged, len));
        assert_eq!(got, expected, "{options:?}, damaged at {at}");
    }
}

#[test]
fn block_decoder_agrees_with_scalar_on_damaged_streams() {
    let mut noise = random_bytes(8192, 13).into_iter();
    for element in [ElementType::U8, ElementType::I16, ElementType::U32, ElementType::I64] {
        for options in option_sets(element) {
            let width = element.width();
            let input = if options.error_bound.is_some() { floats(width, 6) } else { numbers(width, 6) };
            let stream = scalar_compress(&input, &options);
            assert_eq!(
                block_decompress(&stream, input.len() - 1, 0, gpu_bitcomp::DECODE_WARPS),
                Err(Status::OutputTooSmall)
            );
            for cut in [1, 3, stream.len() / 2, stream.len() - bitcomp::HEADER_LEN + 1] {
                let short = &stream[..stream.len() - cut];
                assert_eq!(
                    block_decompress(short, input.len(), 3, gpu_bitcomp::DECODE_WARPS),
                    scalar_decompress(short, input.len()),
                    "cut {cut}"
                );
            }
            // Mostly the header and tile table, where a flip changes the layout.
            flips_agree(&stream, input.len(), 16, 400, &mut noise, &options);
        }
    }
}

#[test]
fn block_kernels_carry_across_warps_and_rounds() {
    // Two rounds and a part of every warp's groups: sorted offsets (delta tiles, each needing
    // the tile before's last element), broken now and then by noise (other codings); lossy, a
    // smooth field with values no bound holds now and then (verbatim tiles, whose last element
    // the next tile's deltas start from unquantised).
    let noise = random_bytes(1 << 16, 21);
    for element in [ElementType::U8, ElementType::U16, ElementType::U32, ElementType::U64] {
        let width = element.width();
        let count = (2 * gpu_bitcomp::COMPRESS_WARPS as usize * 4096 + 3000) / width;
        let mut value = 0u64;
        let mut numbers = Vec::new();
        let mut floats = Vec::new();
        for k in 0..count {
            value = value.wrapping_add(3 + noise[k % noise.len()] as u64 % 5);
            let element = if k % 1500 < 40 { u64::from_le_bytes(noise[k..k + 8].try_into().unwrap()) } else { value };
            numbers.extend_from_slice(&element.to_le_bytes()[..width]);
            let float = if k % 700 == 13 { f64::NAN } else { 1e3 * (k as f64 / 300.0).sin() };
            match width {
                4 => floats.extend_from_slice(&(float as f32).to_le_bytes()),
                8 => floats.extend_from_slice(&float.to_le_bytes()),
                _ => {}
            }
        }
        numbers.extend_from_slice(&noise[..width - 1]);
        for options in option_sets(element) {
            let input = if options.error_bound.is_some() { &floats } else { &numbers };
            let stream = scalar_compress(input, &options);
            let capacity = bitcomp::max_compressed_size(input.len(), &options);
            for (compress_warps, decode_warps) in SHAPES {
                let got = block_compress(input, &options, width % 3, capacity, compress_warps);
                assert_eq!(got.as_ref(), Ok(&stream), "{options:?}, {compress_warps} warps");
                let decoded = block_decompress(&stream, input.len(), width % 3, decode_warps);
                assert_eq!(decoded, scalar_decompress(&stream, input.len()), "{options:?}, {decode_warps} warps");
                if options.error_bound.is_none() {
                    assert_eq!(decoded.as_ref(), Ok(input), "{options:?}");
                }
            }
        }
    }
}

/// The kinds of the tiles of the chunk `stream`, and whether it is ranked.
fn layout(stream: &[u8]) -> (Vec<Kind>, bool) {
    let header = bitcomp::read_header(stream).unwrap();
    let geometry = header.geometry;
    let kinds = (0..geometry.tiles(header.size))
        .map(|t| Tile::parse(&stream[geometry.entry(t)..][..geometry.header], &geometry).unwrap().kind);
    (kinds.collect(), header.ranked)
}

#[test]
fn block_kernels_rank_bytes_and_code_masks() {
    // Text over two rounds and a part (ranked: the first round decides, the later rounds are
    // staged through the ranks), text within the first round, and elements whose varying bits
    // lie apart (the top and bottom bits of each width: mask tiles), at every width.
    let noise = random_bytes(1 << 16, 23);
    let mut flips = noise.iter().rev().copied();
    for element in [ElementType::U8, ElementType::U16, ElementType::U32, ElementType::U64] {
        let width = element.width();
        let top = 1u64 << (8 * width - 1);
        let masked: Vec<u8> = (0..5000)
            .flat_map(|k| {
                let r = noise[k] as u64;
                let value = ((r & 1) * top) | (r >> 1 & 3) | if width > 1 { 0x10 } else { 0 };
                value.to_le_bytes().into_iter().take(width)
            })
            .collect();
        let long_text = text_bytes(2 * gpu_bitcomp::COMPRESS_WARPS as usize * 4096 + 5001, width as u64);
        let short_text = text_bytes(12_003, 7);
        // Noise, then text: the sample (noise) says ranking does not pay, a larger first round would.
        let noise_then_text = [&noise[..bitcomp::RANKING_SAMPLE], &text_bytes(20_000, 3)].concat();
        let inputs = [
            (&long_text, true, false),
            (&short_text, true, false),
            (&noise_then_text, false, false),
            (&masked, false, true),
        ];
        for (input, ranked, mask) in inputs {
            for sparse in [false, true] {
                let options = Options { element, sparse, error_bound: None };
                let stream = scalar_compress(input, &options);
                let (kinds, is_ranked) = layout(&stream);
                assert_eq!(is_ranked, ranked, "{options:?}");
                // (Sparse chunks code some tiles of the masked elements, 1 in 8 of them zero, sparse.)
                let masks = kinds.iter().filter(|&&k| k == Kind::Mask).count();
                assert!(!mask || (masks == kinds.len() || sparse && 2 * masks > kinds.len()), "{options:?}: {kinds:?}");
                let capacity = bitcomp::max_compressed_size(input.len(), &options);
                for (compress_warps, decode_warps) in SHAPES {
                    let got = block_compress(input, &options, width % 3, capacity, compress_warps);
                    assert_eq!(got.as_ref(), Ok(&stream), "{options:?}, {compress_warps} warps");
                    let decoded = block_decompress(&stream, input.len(), 1, decode_warps);
                    assert_eq!(decoded.as_ref(), Ok(input), "{options:?}, {decode_warps} warps");
                }
                // The header, the ranks and the tile table, mostly.
                flips_agree(&stream, input.len(), 12, 600, &mut flips, &options);
            }
        }
    }
}

#[test]
fn scatter_networks_move_bits_as_deposit_and_extract() {
    let noise = random_bytes(24 * 1000, 29);
    for k in 0..1000 {
        let word = |j: usize| u64::from_le_bytes(noise[8 * (3 * k + j)..][..8].try_into().unwrap());
        let (value, dense, sparse) = (word(0), word(1), word(1) & word(2));
        for mask in [dense, sparse, sparse & 0xFFFF_0000_0000_FFFF, 0, u64::MAX, 1 << 63, 0x8080_8080_0101_0101] {
            let wide = Scatter64::new(mask);
            assert_eq!(wide.scatter(value), deposit(value, mask), "{value:#x} into {mask:#x}");
            assert_eq!(wide.gather(value), extract(value, mask), "{value:#x} from {mask:#x}");
            let (value, mask) = (value as u32, mask as u32);
            let narrow = Scatter32::new(mask);
            assert_eq!(narrow.scatter(value) as u64, deposit(value as u64, mask as u64), "{value:#x} into {mask:#x}");
            assert_eq!(narrow.gather(value) as u64, extract(value as u64, mask as u64), "{value:#x} from {mask:#x}");
        }
    }
}

//! The Bitcomp kernels' bodies on an emulated warp: the compressor writes the format crate's
//! bytes at every element type and option (lossy included), and the decoder gives the scalar
//! decoder's bytes or status on those streams, on misaligned ones and on damaged ones.

use ferrocomp_format::Status;
use ferrocomp_format::bitcomp::{self, ElementType, ErrorBound, Options};
use ferrocomp_kernels_gpu::{bitcomp as gpu_bitcomp, emulated};
use ferrocomp_tests::{agreed, random_bytes, text_bytes};

/// The warp's stream of `input` placed `shift` bytes past an aligned address, written `shift`
/// bytes past one.
fn warp_compress(input: &[u8], options: &Options, shift: usize) -> Result<Vec<u8>, Status> {
    let capacity = bitcomp::max_compressed_size(input.len(), options);
    let mut out = vec![0u8; capacity + shift];
    let mut placed = vec![0u8; input.len() + shift];
    placed[shift..].copy_from_slice(input);
    let (i, o) = (placed[shift..].as_ptr() as usize, out[shift..].as_mut_ptr() as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        gpu_bitcomp::compress_chunk(warp, i as *const u8, input.len(), options, o as *mut u8, capacity)
    }));
    result.map(|n| out[shift..shift + n].to_vec())
}

/// The warp's decoding of `stream` placed `shift` bytes past an aligned address (the allocation
/// ending with it, for a sanitizer), into an output `shift` bytes past one.
fn warp_decompress(stream: &[u8], capacity: usize, shift: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity + shift];
    let mut placed = vec![0u8; stream.len() + shift].into_boxed_slice();
    placed[shift..].copy_from_slice(stream);
    let (i, o) = (placed[shift..].as_ptr() as usize, out[shift..].as_mut_ptr() as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        gpu_bitcomp::decompress_chunk(warp, i as *const u8, stream.len(), o as *mut u8, capacity)
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
fn warp_compressor_writes_the_scalar_bytes() {
    for element in ElementType::ALL {
        let width = element.width();
        for (k, options) in option_sets(element).iter().enumerate() {
            let input = if options.error_bound.is_some() { floats(width, k as u64) } else { numbers(width, k as u64) };
            let small = [Vec::new(), vec![9], vec![3; 5], input[..width * 129 + 3].to_vec(), text_bytes(1000, 5)];
            for (s, input) in std::iter::once(&input).chain(&small).enumerate() {
                let expected = scalar_compress(input, options);
                let got = warp_compress(input, options, (k + s) % 3).unwrap();
                assert_eq!(got, expected, "{} bytes, {options:?}", input.len());
                let decoded = warp_decompress(&got, input.len(), s % 4);
                assert_eq!(decoded, scalar_decompress(&expected, input.len()), "{options:?}");
                if options.error_bound.is_none() {
                    assert_eq!(decoded.as_ref(), Ok(input), "{options:?}");
                }
            }
        }
    }
}

#[test]
fn warp_compressor_reports_what_does_not_fit() {
    let input = numbers(4, 8);
    let options = Options { element: ElementType::U32, ..Options::default() };
    let capacity = bitcomp::max_compressed_size(input.len(), &options) - 1;
    let mut out = vec![0u8; capacity];
    let (i, o) = (input.as_ptr() as usize, out.as_mut_ptr() as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        gpu_bitcomp::compress_chunk(warp, i as *const u8, input.len(), &options, o as *mut u8, capacity)
    }));
    assert_eq!(result, Err(Status::OutputTooSmall));
}

#[test]
fn warp_decoder_agrees_with_scalar_on_damaged_streams() {
    let mut noise = random_bytes(8192, 13).into_iter();
    for element in [ElementType::U8, ElementType::I16, ElementType::U32, ElementType::I64] {
        for options in option_sets(element) {
            let width = element.width();
            let input = if options.error_bound.is_some() { floats(width, 6) } else { numbers(width, 6) };
            let stream = scalar_compress(&input, &options);
            assert_eq!(warp_decompress(&stream, input.len() - 1, 0), Err(Status::OutputTooSmall));
            for cut in [1, 3, stream.len() / 2, stream.len() - bitcomp::HEADER_LEN + 1] {
                let short = &stream[..stream.len() - cut];
                assert_eq!(warp_decompress(short, input.len(), 3), scalar_decompress(short, input.len()), "cut {cut}");
            }
            for _ in 0..16 {
                let mut damaged = stream.clone();
                // Mostly the header and tile table, where a flip changes the layout.
                let span = if noise.next().unwrap() < 192 { stream.len().min(400) } else { stream.len() };
                let at = (noise.next().unwrap() as usize * 256 + noise.next().unwrap() as usize) % span;
                damaged[at] ^= 1 << (noise.next().unwrap() % 8);
                assert_eq!(
                    warp_decompress(&damaged, input.len(), at % 4),
                    scalar_decompress(&damaged, input.len()),
                    "{options:?}, damaged at {at}"
                );
            }
        }
    }
}

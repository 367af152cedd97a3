//! Bitcomp: a chunk's exact bytes for each tile coding, round trips at every element type, option
//! and chunk size, lossy error bounds element by element, the ratios the codings must reach, and
//! corrupt, truncated and lying streams.

use approx::assert_abs_diff_eq;
use ferrocomp_format::Status;
use ferrocomp_format::bitcomp::{
    self, ElementType, ErrorBound, Geometry, HEADER_LEN, Kind, MAX_CHUNK_SIZE, Options, SYMBOLS_LEN, Tile,
    max_compressed_size, max_decompressed_size,
};
mod common;
use common::{XorShift, random_bytes};

fn compress(input: &[u8], options: &Options) -> Vec<u8> {
    let mut out = vec![0; max_compressed_size(input.len(), options)];
    let size = bitcomp::compress(input, options, &mut out).unwrap();
    out.truncate(size);
    out
}

fn decompress(stream: &[u8], capacity: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0; capacity];
    bitcomp::decompress(stream, &mut out).map(|n| out[..n].to_vec())
}

fn round_trip(input: &[u8], options: &Options) -> Vec<u8> {
    let compressed = compress(input, options);
    assert_eq!(bitcomp::decompressed_size(&compressed), Ok(input.len()));
    assert!(decompress(&compressed, input.len()).unwrap() == input, "{options:?}, {} bytes differ", input.len());
    compressed
}

/// The kinds of the chunk's tiles.
fn kinds(stream: &[u8]) -> Vec<Kind> {
    let header = bitcomp::read_header(stream).unwrap();
    let geometry = header.geometry;
    (0..geometry.tiles(header.size))
        .map(|t| Tile::parse(&stream[geometry.entry(t)..][..geometry.header], &geometry).unwrap().kind)
        .collect()
}

/// Elements of `width` bytes: sorted offsets, mostly zeros, a narrow range, noise.
fn numbers(count: usize, width: usize, seed: u64) -> Vec<u8> {
    let mut rng = XorShift(seed);
    let mut value = 0u64;
    let quarter = count / 4;
    (0..count)
        .flat_map(|k| {
            let element = match k / quarter.max(1) {
                0 => (value, value += rng.below(50) as u64).0,
                1 if rng.below(10) == 0 => 1 + rng.below(200) as u64,
                1 => 0,
                2 => 5000 + rng.below(30) as u64,
                _ => rng.next(),
            };
            element.to_le_bytes().into_iter().take(width)
        })
        .collect()
}

/// `values` as `width`-byte floats.
fn floats(values: impl Iterator<Item = f64>, width: usize) -> Vec<u8> {
    values.flat_map(|v| if width == 4 { (v as f32).to_le_bytes().to_vec() } else { v.to_le_bytes().to_vec() }).collect()
}

fn lossy(element: ElementType, sparse: bool, bound: f32) -> Options {
    Options { element, sparse, error_bound: ErrorBound::new(bound) }
}

#[test]
fn a_frame_of_reference_tile_is_these_bytes() {
    let stream = compress(&[3, 3, 4, 5, 3], &Options { element: ElementType::U8, ..Options::default() });
    let mut expected = vec![2, 1, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 2, 3, 0, 0, 0x90];
    expected.resize(48, 0);
    assert_eq!(stream, expected);
}

#[test]
fn a_delta_tile_is_these_bytes() {
    let input: Vec<u8> = (0..32u32).flat_map(|i| (5 + 3 * i).to_le_bytes()).collect();
    let stream = compress(&input, &Options { element: ElementType::U32, ..Options::default() });
    let expected = [2, 5, 0, 0, 128, 0, 0, 0, 0, 0, 0, 0, 0x82, 3, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(stream, expected);
}

#[test]
fn a_sparse_tile_is_these_bytes() {
    let stream = compress(&[0, 0, 7, 0, 9], &Options { element: ElementType::U8, sparse: true, error_bound: None });
    let mut expected = vec![2, 1, 1, 0, 5, 0, 0, 0, 0, 0, 0, 0, 2, 2, 7, 0, 0x14];
    expected.resize(32, 0);
    expected.extend([8, 0, 0, 0]);
    assert_eq!(stream, expected);
}

/// 32 u32s of which bits 0, 1 and 24 vary.
fn masked_u32s() -> Vec<u8> {
    (0..32u32).flat_map(|i| (0x00AB_0000 | ((i & 1) << 24) | (i % 4)).to_le_bytes()).collect()
}

#[test]
fn a_mask_tile_is_these_bytes() {
    // Bits 0, 1 and 24 vary (entries of 3 bits: a frame of reference would take 25).
    let input = masked_u32s();
    let stream = compress(&input, &Options { element: ElementType::U32, ..Options::default() });
    let mut expected = vec![2, 5, 0, 0, 128, 0, 0, 0, 0, 0, 0, 0, 0x43, 0, 0, 0xAB, 0, 0, 0, 0, 3, 0, 0, 1];
    // Entry i: bit 0 and 1 of i % 4, then bit 24's (i & 1): 0, 5, 2, 7 repeating, 3 bits each.
    let bits = (0..32u128).fold(0u128, |bits, i| bits | ([0, 5, 2, 7][i as usize % 4] << (3 * i)));
    expected.extend_from_slice(&bits.to_le_bytes()[..12]);
    assert_eq!(stream, expected);
    assert_eq!(kinds(&stream), [Kind::Mask]);
    assert_eq!(decompress(&stream, input.len()).unwrap(), input);
}

#[test]
fn a_ranked_chunk_is_these_bytes() {
    // Half spaces, a quarter 'e', an eighth each newline and 'z': as they are, 7 bits a byte
    // (newline to 'z'); ranked, 2.
    let input: Vec<u8> = b" e \n e z".iter().copied().cycle().take(4096).collect();
    let stream = compress(&input, &Options::default());
    let mut expected = vec![2, 1, 4, 0, 0, 0x10, 0, 0, 0, 0, 0, 0];
    expected.extend_from_slice(b" e\nz");
    expected.extend((0..=255u8).filter(|b| !b" e\nz".contains(b)));
    for _ in 0..32 {
        expected.extend([2, 0]); // frames of reference of 2 bits from 0
    }
    // Ranks 0, 1, 0, 2, 0, 1, 0, 3 in 2 bits each: 0xC484 a period.
    for _ in 0..32 * 8 {
        expected.extend(0xC484_C484u32.to_le_bytes());
    }
    assert_eq!(stream, expected);
    assert_eq!(decompress(&stream, input.len()).unwrap(), input);
}

#[test]
fn version_1_chunks_are_still_read_and_version_2_fields_refused_in_them() {
    let input: Vec<u8> = (0..32u32).flat_map(|i| (5 + 3 * i).to_le_bytes()).collect();
    let mut stream = compress(&input, &Options { element: ElementType::U32, ..Options::default() });
    stream[0] = 1;
    assert_eq!(decompress(&stream, input.len()).unwrap(), input);
    let mut ranked = stream.clone();
    ranked[2] = bitcomp::RANKED;
    assert_eq!(decompress(&ranked, input.len()), Err(Status::Malformed));
    let mut masked = compress(&masked_u32s(), &Options { element: ElementType::U32, ..Options::default() });
    masked[0] = 1;
    assert_eq!(decompress(&masked, 128), Err(Status::Malformed));
}

#[test]
fn damaged_masks_and_ranks_give_statuses() {
    let input = masked_u32s();
    let stream = compress(&input, &Options { element: ElementType::U32, ..Options::default() });
    let with = |k: usize, byte: u8| {
        let mut s = stream.clone();
        s[k] = byte;
        decompress(&s, input.len())
    };
    // The mask's bit count not the mode's; a mask as wide as the element.
    assert_eq!(with(20, 7), Err(Status::Malformed));
    assert_eq!(with(HEADER_LEN, 0x40 + 32), Err(Status::Malformed));
    let bytes: Vec<u8> = b" e \n e z".iter().copied().cycle().take(5000).collect();
    let ranked = compress(&bytes, &Options::default());
    assert!(bitcomp::read_header(&ranked).unwrap().ranked);
    assert_eq!(decompress(&ranked[..HEADER_LEN + 100], bytes.len()), Err(Status::Truncated));
    let mut lossy = ranked.clone();
    lossy[2] |= bitcomp::LOSSY;
    assert_eq!(decompress(&lossy, bytes.len()), Err(Status::Malformed));
    // A byte of u8 elements' mask beyond the element.
    let narrow: Vec<u8> = (0..128u8).map(|i| 0x10 | ((i & 1) << 7) | (i % 2)).collect();
    let mut masked = compress(&narrow, &Options::default());
    assert_eq!(kinds(&masked), [Kind::Mask]);
    assert_eq!(decompress(&masked, 128).unwrap(), narrow);
    masked[17] = 1;
    assert_eq!(decompress(&masked, 128), Err(Status::Malformed));
}

#[test]
fn a_lossy_tile_is_these_bytes() {
    let input = floats([1.2, -2.7].into_iter(), 4);
    let stream = compress(&input, &lossy(ElementType::I32, false, 0.5));
    let mut expected = vec![2, 4, 2, 0, 8, 0, 0, 0, 0, 0, 0, 0x3F, 3, 0xFD, 0xFF, 0xFF, 0xFF, 0, 0, 0, 4];
    expected.resize(32, 0);
    assert_eq!(stream, expected);
    assert_eq!(decompress(&stream, 8).unwrap(), floats([1.0, -3.0].into_iter(), 4));
}

#[test]
fn round_trips_at_every_type_option_and_size() {
    for element in ElementType::ALL {
        let width = element.width();
        for sparse in [false, true] {
            let options = Options { element, sparse, error_bound: None };
            for count in [0, 1, 3, 31, 32, 127, 128, 129, 1000, 16385] {
                let input = numbers(count, width, count as u64);
                round_trip(&input, &options);
                // Sizes that are not a whole number of elements keep their tail.
                round_trip(&input[..input.len().saturating_sub(width / 2)], &options);
            }
        }
    }
}

#[test]
fn every_coding_occurs_and_is_the_smallest() {
    let input = numbers(4096, 4, 1);
    let dense = round_trip(&input, &Options { element: ElementType::U32, ..Options::default() });
    let sparse = round_trip(&input, &Options { element: ElementType::U32, sparse: true, error_bound: None });
    let (dense_kinds, sparse_kinds) = (kinds(&dense), kinds(&sparse));
    assert!(dense_kinds.contains(&Kind::Delta) && dense_kinds.contains(&Kind::Frame));
    assert!(sparse_kinds.iter().any(|k| matches!(k, Kind::Sparse { .. })));
    assert!(sparse.len() < dense.len());
    let field = floats((0..4096).map(|k| if k == 100 { f64::NAN } else { (k as f64 / 300.0).sin() }), 4);
    let coded = compress(&field, &lossy(ElementType::U32, false, 1e-3));
    assert!(kinds(&coded).contains(&Kind::Verbatim) && kinds(&coded).contains(&Kind::Delta));
}

#[test]
fn the_largest_chunk_round_trips_and_a_larger_is_refused() {
    let input = numbers(MAX_CHUNK_SIZE / 4, 4, 9);
    let options = Options { element: ElementType::U32, ..Options::default() };
    assert!(round_trip(&input, &options).len() < input.len() / 2);
    let mut out = vec![0; max_compressed_size(MAX_CHUNK_SIZE + 1, &options)];
    assert_eq!(bitcomp::compress(&vec![0; MAX_CHUNK_SIZE + 1], &options, &mut out), Err(Status::ChunkTooLarge));
}

#[test]
fn data_that_does_not_compress_stays_within_the_bound() {
    for element in [ElementType::U8, ElementType::U16, ElementType::U64] {
        for sparse in [false, true] {
            let options = Options { element, sparse, error_bound: None };
            let input = random_bytes(65536 + 5, 3);
            let compressed = round_trip(&input, &options);
            // At most a tile header a tile more (with the chunk header, the last tile's padding and,
            // in the bound, room for the ranks' table; random bytes are not ranked).
            let geometry = options.geometry();
            let bound = max_compressed_size(input.len(), &options);
            let unranked = input.len() + geometry.tiles(input.len()) * geometry.header + 16 + geometry.tile_bytes();
            assert!(compressed.len() <= unranked && bound <= unranked + SYMBOLS_LEN);
        }
    }
}

#[test]
fn lossy_values_are_within_the_bound_element_by_element() {
    let mut rng = XorShift(5);
    let values: Vec<f64> = (0..20000)
        .map(|k| match k % 1000 {
            0 => f64::NAN,
            1 => f64::NEG_INFINITY,
            2 => 3e38,
            3..300 => 0.0,
            _ => (k as f64 / 700.0).sin() * 10f64.powi(rng.below(12) as i32 - 6),
        })
        .collect();
    for (element, width) in [(ElementType::I32, 4), (ElementType::U64, 8)] {
        let input = floats(values.iter().copied(), width);
        for bound in [1e-6f32, 1e-3, 0.5, 1e3] {
            for sparse in [false, true] {
                let options = lossy(element, sparse, bound);
                let stream = compress(&input, &options);
                let decoded = decompress(&stream, input.len()).unwrap();
                for (original, decoded) in input.chunks(width).zip(decoded.chunks(width)) {
                    let (x, y) = if width == 4 {
                        let f = |b: &[u8]| f32::from_le_bytes(b.try_into().unwrap()) as f64;
                        (f(original), f(decoded))
                    } else {
                        let f = |b: &[u8]| f64::from_le_bytes(b.try_into().unwrap());
                        (f(original), f(decoded))
                    };
                    if x.is_finite() {
                        assert_abs_diff_eq!(x, y, epsilon = bound as f64);
                    } else {
                        assert_eq!(original, decoded, "non-finite values are kept exactly");
                    }
                }
            }
        }
    }
}

#[test]
fn lossy_needs_a_float_width_and_a_positive_finite_bound() {
    assert!(ErrorBound::new(0.0).is_none() && ErrorBound::new(f32::NAN).is_none() && ErrorBound::new(-1.0).is_none());
    let options = lossy(ElementType::U16, false, 0.1);
    assert!(!options.valid());
    assert_eq!(bitcomp::compress(&[0; 8], &options, &mut [0; 100]), Err(Status::Unsupported));
}

#[test]
fn ratios_on_typed_data() {
    let offsets: Vec<u8> = {
        let mut rng = XorShift(2);
        let mut value = 0u32;
        (0..1 << 16).flat_map(|_| (value, value += rng.below(50) as u32).0.to_le_bytes()).collect()
    };
    let ratio = |input: &[u8], options: &Options| input.len() as f64 / round_trip(input, options).len() as f64;
    assert!(ratio(&offsets, &Options { element: ElementType::I32, ..Options::default() }) > 4.0);
    let field = |width| floats((0..1 << 16).map(|k| 280.0 + 20.0 * (k as f64 / 900.0).sin()), width);
    let lossy_ratio = |input: &[u8], options: &Options| input.len() as f64 / compress(input, options).len() as f64;
    assert!(lossy_ratio(&field(4), &lossy(ElementType::I32, false, 1e-3)) > 2.0);
    assert!(lossy_ratio(&field(8), &lossy(ElementType::I64, false, 1e-3)) > 4.0);
    let mut rng = XorShift(4);
    let mostly_zeros: Vec<u8> = (0..1 << 16).map(|_| if rng.below(16) == 0 { rng.next() as u8 } else { 0 }).collect();
    let sparse = ratio(&mostly_zeros, &Options { sparse: true, ..Options::default() });
    assert!(sparse > ratio(&mostly_zeros, &Options::default()) && sparse > 3.0, "{sparse}");
}

#[test]
fn corrupt_truncated_and_lying_streams_give_statuses() {
    let options = Options { element: ElementType::U16, sparse: true, error_bound: None };
    let input = numbers(3000, 2, 7);
    let stream = compress(&input, &options);
    assert_eq!(decompress(&stream, input.len() - 1), Err(Status::OutputTooSmall));
    for cut in 0..stream.len() {
        assert!(decompress(&stream[..cut], input.len()).is_err(), "cut at {cut}");
    }
    let mut longer = stream.clone();
    longer.push(0);
    assert_eq!(decompress(&longer, input.len()), Err(Status::Malformed));
    let mut rng = XorShift(11);
    for _ in 0..3000 {
        let mut damaged = stream.clone();
        let at = rng.below(stream.len());
        damaged[at] ^= 1 << rng.below(8);
        let _ = decompress(&damaged, input.len()); // a status or bytes, never a panic
    }
    let with = |k: usize, byte: u8| {
        let mut s = stream.clone();
        s[k] = byte;
        decompress(&s, input.len())
    };
    assert_eq!(with(0, 3), Err(Status::Unsupported));
    assert_eq!(with(1, 9), Err(Status::Malformed));
    assert_eq!(with(2, 8), Err(Status::Malformed));
    assert_eq!(with(3, 1), Err(Status::Malformed));
    // A tile claiming more bits than its element has, or a sparse delta.
    assert_eq!(with(HEADER_LEN, 17), Err(Status::Malformed));
    assert_eq!(with(HEADER_LEN, 0x85).and(with(HEADER_LEN + 1, 3)).map(|_| ()), Err(Status::Malformed));
    // A size far past what the stream holds.
    let mut lying = stream.clone();
    lying[4..8].copy_from_slice(&(MAX_CHUNK_SIZE as u32).to_le_bytes());
    assert_eq!(decompress(&lying, MAX_CHUNK_SIZE), Err(Status::Truncated));
    assert!(max_decompressed_size(stream.len()) >= input.len());
    assert_eq!(decompress(&[], 10), Err(Status::Truncated));
}

#[test]
fn geometry_of_each_width() {
    assert_eq!(Geometry::new(1, false).elements, 128);
    assert_eq!(Geometry::new(2, true).header, 4);
    assert_eq!(Geometry::new(8, false).tile_bytes(), 256);
    assert_eq!(Geometry::new(4, false).payload_start(4 * 33), 24);
}

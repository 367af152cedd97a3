//! Cascaded: a sub-block's exact bytes, round trips at every element type and option and chunk
//! size, the ratios the layers must reach, and corrupt, truncated and lying streams.

use ferrocomp_format::Status;
use ferrocomp_format::cascaded::{
    self, ElementType, HEADER_LEN, MAX_CHUNK_SIZE, Options, SUB_BLOCK, max_compressed_size, max_decompressed_size,
};
mod common;
use common::{XorShift, random_bytes};

fn compress(input: &[u8], options: &Options) -> Vec<u8> {
    let mut out = vec![0; max_compressed_size(input.len())];
    let size = cascaded::compress(input, options, &mut out).unwrap();
    out.truncate(size);
    out
}

fn round_trip(input: &[u8], options: &Options) -> Vec<u8> {
    let compressed = compress(input, options);
    assert_eq!(cascaded::decompressed_size(&compressed), Ok(input.len()));
    let mut out = vec![0; input.len()];
    assert_eq!(cascaded::decompress(&compressed, &mut out), Ok(input.len()), "{options:?}, {} bytes", input.len());
    assert!(out == input, "{options:?}, {} bytes: decoded bytes differ", input.len());
    compressed
}

/// Sorted offsets as the bench's int32 set: steps of 0..50.
fn offsets(count: usize, seed: u64) -> Vec<u8> {
    let mut rng = XorShift(seed);
    let mut value = 0u32;
    (0..count).flat_map(|_| (value, value += rng.below(50) as u32).0.to_le_bytes()).collect()
}

/// Elements of `width` bytes in runs of random lengths (1 to 40) of slowly rising values.
fn runs(len: usize, width: usize, seed: u64) -> Vec<u8> {
    let mut rng = XorShift(seed);
    let mut out = Vec::new();
    let mut value = 1000u64;
    while out.len() < len {
        value = value.wrapping_add(rng.below(9) as u64).wrapping_sub(3);
        for _ in 0..1 + rng.below(40) {
            out.extend_from_slice(&value.to_le_bytes()[..width]);
        }
    }
    out.truncate(len);
    out
}

#[test]
fn a_sub_block_has_the_documented_bytes() {
    // Sixteen u16 elements, twelve 5s then four 7s: one run-length layer (runs 12 and 4 of
    // values 5 and 7), one delta layer (5 and 2), each stream packed from its least entry.
    let options = Options { element: ElementType::U16, rles: 1, deltas: 1, bitpack: true, auto: false };
    let input: Vec<u8> = [5u16; 12].iter().chain(&[7u16; 4]).flat_map(|v| v.to_le_bytes()).collect();
    #[rustfmt::skip]
    let expected = [
        1, 3, 0, 0, 32, 0, 0, 0, // version, element type, reserved, 32 bytes
        13, 0,                   // the sub-block's size
        0x11,                    // one run-length layer, one delta layer
        2, 0,                    // two runs
        4, 4, 0, 0b0000_1000,    // runs: 4 bits from base 4: 8, 0
        5, 0,                    // the delta layer's first entry
        2, 0, 0, 0b0000_1000,    // values 0, 2 after the delta: 2 bits from base 0
    ];
    assert_eq!(round_trip(&input, &options), expected);
    // Four of them (5 5 5 7) code to the same 13 bytes, more than stored: 0xFF and the bytes.
    let input = [5u8, 0, 5, 0, 5, 0, 7, 0];
    let stored = [&[1, 3, 0, 0, 8, 0, 0, 0, 9, 0, 0xFF][..], &input].concat();
    assert_eq!(round_trip(&input, &options), stored);
}

#[test]
fn every_element_type_and_layer_count_round_trips() {
    for element in ElementType::ALL {
        let width = element.width();
        let data = [runs(3 * SUB_BLOCK + 5, width, 1), random_bytes(SUB_BLOCK + 3, 2), offsets(3000, 3)];
        for input in &data {
            for rles in 0..=4 {
                for deltas in 0..=4 {
                    for bitpack in [true, false] {
                        round_trip(input, &Options { element, rles, deltas, bitpack, auto: false });
                    }
                }
            }
            round_trip(input, &Options { element, rles: 4, deltas: 4, ..Options::default() });
        }
    }
}

#[test]
fn chunk_sizes_from_zero_to_the_maximum_round_trip() {
    let options = Options { auto: false, ..Options::default() };
    for len in [0, 1, 2, 3, 4, 5, 7, 63, SUB_BLOCK - 1, SUB_BLOCK, SUB_BLOCK + 1, 65536, 65537] {
        round_trip(&runs(len, 4, len as u64), &options);
    }
    let compressed = round_trip(&[], &options);
    assert_eq!(compressed, [1, 5, 0, 0, 0, 0, 0, 0]); // U32
    let input = offsets(MAX_CHUNK_SIZE / 4, 7);
    round_trip(&input, &options);
    let mut out = vec![0; max_compressed_size(MAX_CHUNK_SIZE + 1)];
    let input = vec![0; MAX_CHUNK_SIZE + 1];
    assert_eq!(cascaded::compress(&input, &options, &mut out), Err(Status::ChunkTooLarge));
}

#[test]
fn data_that_does_not_compress_is_stored_within_the_bound() {
    for element in ElementType::ALL {
        let input = random_bytes(5 * SUB_BLOCK + 9, element as u64);
        let compressed = round_trip(&input, &Options { element, ..Options::default() });
        assert_eq!(compressed.len(), max_compressed_size(input.len()));
        let mut small = vec![0; compressed.len() - 1];
        let status = cascaded::compress(&input, &Options { element, ..Options::default() }, &mut small);
        assert_eq!(status, Err(Status::OutputTooSmall));
    }
}

#[test]
fn the_layers_reach_their_ratios() {
    // Offsets with steps below 50 pack into 6 bits after one delta layer; nvCOMP's layers (two
    // run-length layers always) add a bit an element for the rare runs.
    let input = offsets(1 << 16, 11);
    let ratio = |options: &Options| input.len() as f64 / round_trip(&input, options).len() as f64;
    let searched = ratio(&Options::default());
    assert!(searched > 5.19, "offsets, layers searched: ratio {searched:.3}");
    let exact = ratio(&Options { auto: false, ..Options::default() });
    assert!((4.2..4.6).contains(&exact), "offsets, nvCOMP's layers: ratio {exact:.3}");
    let unpacked = ratio(&Options { bitpack: false, auto: false, ..Options::default() });
    assert!(unpacked < 1.0, "without packing the layers only add streams: {unpacked:.3}");
    // Runs of equal elements: one run-length layer takes them.
    let input = runs(1 << 16, 4, 12);
    let none =
        input.len() as f64 / round_trip(&input, &Options { rles: 0, deltas: 0, ..Options::default() }).len() as f64;
    let one =
        input.len() as f64 / round_trip(&input, &Options { rles: 1, deltas: 1, ..Options::default() }).len() as f64;
    assert!(one > 4.0 * none, "runs: {one:.2} with a run-length layer, {none:.2} without");
}

#[test]
fn signed_data_packs_around_zero() {
    // Values -2..=2 as i32: 3 bits read signed, where read unsigned they span 32 bits.
    let mut rng = XorShift(5);
    let input: Vec<u8> = (0..1024).flat_map(|_| (rng.below(5) as i32 - 2).to_le_bytes()).collect();
    let options = Options { rles: 0, deltas: 0, ..Options::default() };
    let compressed = round_trip(&input, &options);
    assert_eq!(compressed.len(), HEADER_LEN + 2 + 1 + 1 + 4 + 1024 * 3 / 8);
}

#[test]
fn corrupt_and_lying_streams_give_statuses() {
    let input = runs(2 * SUB_BLOCK + 100, 4, 21);
    let compressed = compress(&input, &Options::default());
    let mut out = vec![0; input.len()];
    let decode = |bytes: &[u8], out: &mut [u8]| cascaded::decompress(bytes, out);
    for len in 0..compressed.len() {
        assert_ne!(decode(&compressed[..len], &mut out), Ok(input.len()), "truncated to {len}");
    }
    assert_eq!(decode(&compressed[..3], &mut out), Err(Status::Truncated));
    let mut bad = compressed.clone();
    bad[0] = 2;
    assert_eq!(decode(&bad, &mut out), Err(Status::Unsupported));
    let mut bad = compressed.clone();
    bad[1] = 8;
    assert_eq!(decode(&bad, &mut out), Err(Status::Malformed));
    // A size past the maximum chunk, and one that lies about the elements there are.
    let mut bad = compressed.clone();
    bad[4..8].copy_from_slice(&(MAX_CHUNK_SIZE as u32 + 1).to_le_bytes());
    assert_eq!(decode(&bad, &mut out), Err(Status::Malformed));
    let mut bad = compressed.clone();
    bad[4..8].copy_from_slice(&(input.len() as u32 - 4).to_le_bytes());
    assert_eq!(decode(&bad, &mut out), Err(Status::Malformed));
    assert_eq!(decode(&compressed, &mut out[..input.len() - 1]), Err(Status::OutputTooSmall));
    // Bytes after the last sub-block.
    let longer = [&compressed[..], &[0]].concat();
    assert_eq!(decode(&longer, &mut out), Err(Status::Malformed));
    // Every single-byte change decodes to a status or to some bytes, never a panic.
    let mut rng = XorShift(9);
    for _ in 0..20000 {
        let mut bad = compressed.clone();
        let at = rng.below(bad.len());
        bad[at] ^= 1 << rng.below(8);
        let _ = decode(&bad, &mut out);
        let _ = cascaded::decompressed_size(&bad);
    }
    assert_eq!(max_decompressed_size(HEADER_LEN + 3), SUB_BLOCK);
    assert!(max_decompressed_size(compressed.len()) >= input.len());
}

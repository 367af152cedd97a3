//! Deflate's kernel bodies on an emulated warp. The compressor, in every wrapper and at every
//! level, writes the format crate's streams byte for byte (and the same status when the output is
//! too small or the chunk too large), and zlib-rs decodes them; its code lengths are the format's.
//! The decoder gives the bytes and statuses of the format crate's scalar decoder, on our streams
//! and zlib-rs's (stored, fixed and dynamic blocks, gzip members), on short outputs, cut streams
//! and damaged ones; in a pair of warps, one writing what the other decodes, it writes the same
//! bytes, and staged in shared memory nothing of a stream that fails.

use ferrocomp_format::Status;
use ferrocomp_format::deflate::huffman::{self, LengthWork, MAX_CODE_LEN};
use ferrocomp_format::deflate::tables::{NUM_DIST, NUM_LITLEN};
use ferrocomp_format::deflate::{
    self, CompressScratch, DecodeTables, MAX_CHUNK_SIZE, MAX_LEVEL, PART_SIZE, Wrapper, max_compressed_size,
};
use ferrocomp_kernels_gpu::deflate::compress::{COMPRESS_SHARED_BYTES_PER_WARP, build_lengths, compress_chunk};
use ferrocomp_kernels_gpu::deflate::decode::{
    Output, PAIR_SHARED_BYTES, PAIR_WARPS, STAGED_OUTPUT, STAGED_SHARED_BYTES, decompress_chunk, decompress_in_pair,
};
use ferrocomp_kernels_gpu::deflate::rounds::InWarp;
use ferrocomp_kernels_gpu::emulated;
use ferrocomp_tests::{agreed, damaged_copies, garbage, int32_bytes, random_bytes, text_bytes};
use std::io::{Read, Write};

const WRAPPERS: [Wrapper; 3] = [Wrapper::Raw, Wrapper::Zlib, Wrapper::Gzip];

/// The warp compressor's stream of `input` in `capacity` bytes: the batch kernel's for a chunk of
/// one part, the parts kernel's for a longer one, as the host launches them.
fn warp_compress(input: &[u8], level: u8, wrapper: Wrapper, capacity: usize) -> Result<Vec<u8>, Status> {
    match input.len() > PART_SIZE {
        true => warp_compress_with::<true>(input, level, wrapper, capacity),
        false => warp_compress_with::<false>(input, level, wrapper, capacity),
    }
}

/// The stream of the batch kernel's compressor, or with `PARTS` the parts kernel's.
fn warp_compress_with<const PARTS: bool>(
    input: &[u8],
    level: u8,
    wrapper: Wrapper,
    capacity: usize,
) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity];
    let mut table = vec![0x5A5Au16; COMPRESS_SHARED_BYTES_PER_WARP / 2];
    let mut scratch = unsafe { garbage::<CompressScratch>() };
    let (i, n, o) = (input.as_ptr() as usize, input.len(), out.as_mut_ptr() as usize);
    let (t, s) = (table.as_mut_ptr() as usize, &mut *scratch as *mut CompressScratch as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        let (input, out, table) = (i as *const u8, o as *mut u8, t as *mut u16);
        compress_chunk::<_, PARTS>(warp, input, n, level, wrapper, s as *mut CompressScratch, table, out, capacity)
    }));
    result.map(|n| out[..n].to_vec())
}

fn scalar_compress(input: &[u8], level: u8, wrapper: Wrapper, capacity: usize) -> Result<Vec<u8>, Status> {
    let mut scratch = unsafe { garbage::<CompressScratch>() };
    let mut out = vec![0u8; capacity];
    deflate::compress(input, level, wrapper, &mut scratch, &mut out).map(|n| out[..n].to_vec())
}

fn zlib_rs_decode(stream: &[u8], wrapper: Wrapper) -> Vec<u8> {
    let mut out = Vec::new();
    match wrapper {
        Wrapper::Raw => flate2::read::DeflateDecoder::new(stream).read_to_end(&mut out),
        Wrapper::Zlib => flate2::read::ZlibDecoder::new(stream).read_to_end(&mut out),
        Wrapper::Gzip => flate2::read::GzDecoder::new(stream).read_to_end(&mut out),
    }
    .expect("zlib-rs decodes the stream");
    out
}

fn boxed_tables() -> Box<DecodeTables> {
    // SAFETY: any contents are a valid DecodeTables (the format crate's documentation).
    unsafe { Box::new_zeroed().assume_init() }
}

/// The warp's decode of `stream` into `capacity` bytes (or its count, with `None`).
fn warp_decode(stream: &[u8], wrapper: Wrapper, capacity: Option<usize>) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity.unwrap_or(0)];
    let mut tables = boxed_tables();
    let (s, o, t) = (stream.as_ptr() as usize, out.as_mut_ptr() as usize, &mut *tables as *mut DecodeTables as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        let output = match capacity {
            Some(capacity) => Output::to(o as *mut u8, capacity),
            None => Output::counting(),
        };
        decompress_chunk(warp, s as *const u8, stream.len(), wrapper, output, t as *mut DecodeTables, &mut InWarp)
    }));
    result.map(|n| if capacity.is_some() { out[..n].to_vec() } else { vec![0; n] })
}

/// The warp decodes `stream` as the scalar decoder does, into `capacity` bytes and counting.
fn assert_decodes_as_scalar(stream: &[u8], wrapper: Wrapper, capacity: usize, what: &str) {
    let mut out = vec![0u8; capacity];
    let expected = deflate::decompress(stream, wrapper, &mut out, &mut boxed_tables()).map(|n| out[..n].to_vec());
    assert_eq!(warp_decode(stream, wrapper, Some(capacity)), expected, "{what}");
    let size = deflate::decompressed_size(stream, wrapper, &mut boxed_tables());
    assert_eq!(warp_decode(stream, wrapper, None).map(|bytes| bytes.len()), size, "{what}: size");
}

fn zlib_rs_encode(input: &[u8], level: u32, wrapper: Wrapper) -> Vec<u8> {
    let level = flate2::Compression::new(level);
    let bytes = match wrapper {
        Wrapper::Raw => {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), level);
            e.write_all(input).unwrap();
            e.finish()
        }
        Wrapper::Zlib => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), level);
            e.write_all(input).unwrap();
            e.finish()
        }
        Wrapper::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), level);
            e.write_all(input).unwrap();
            e.finish()
        }
    };
    bytes.unwrap()
}

fn inputs() -> Vec<Vec<u8>> {
    // Text, noise (a stored block), a long run (matches cut at 258 bytes), text again.
    let mut mixed = text_bytes(20_000, 3);
    mixed.extend(random_bytes(9000, 4));
    mixed.extend(vec![b'z'; 30_000]);
    mixed.extend(text_bytes(6536, 5));
    vec![
        Vec::new(),
        vec![7],
        vec![1; 13],
        // A fixed block with literals of 9-bit codes (above 143), whose codewords follow the
        // 8-bit ones of all 288 symbols.
        (0..200u32).map(|i| 150 + (i % 7 + i / 60) as u8).collect(),
        text_bytes(100, 1),
        text_bytes(5001, 2),
        random_bytes(3001, 2),
        vec![0; PART_SIZE],
        int32_bytes(16_000),
        // Two parts, the second short: one stream of both parts' blocks.
        text_bytes(PART_SIZE + 5000, 7),
        text_bytes(24_000, 6),
        mixed,
    ]
}

#[test]
fn warp_compressor_writes_the_scalar_streams() {
    for (i, input) in inputs().iter().enumerate() {
        for level in 0..=MAX_LEVEL {
            for (w, wrapper) in WRAPPERS.into_iter().enumerate() {
                // Wrappers differ only around the stream, and levels 2 to 5 only in their
                // search's effort: small inputs take all, large ones one wrapper and one of
                // levels 2 to 5 each, in turn.
                let small = input.len() <= 6000;
                if !small && ((i + level as usize) % 3 != w || level >= 2 && level as usize != 2 + i % 4) {
                    continue;
                }
                let capacity = max_compressed_size(input.len(), wrapper);
                let expected = scalar_compress(input, level, wrapper, capacity).unwrap();
                let got = warp_compress(input, level, wrapper, capacity).unwrap();
                let what = format!("{} bytes, level {level}, {wrapper:?}", input.len());
                assert!(got == expected, "{what}: streams differ");
                assert!(zlib_rs_decode(&got, wrapper) == *input, "{what}: zlib-rs decodes something else");
            }
        }
    }
}

#[test]
fn the_parts_kernel_writes_the_batch_kernels_streams_which_takes_one_part() {
    for input in [text_bytes(5001, 2), vec![0; PART_SIZE]] {
        for level in [0, 1, 4] {
            let capacity = max_compressed_size(input.len(), Wrapper::Zlib);
            let batch = warp_compress_with::<false>(&input, level, Wrapper::Zlib, capacity);
            assert_eq!(warp_compress_with::<true>(&input, level, Wrapper::Zlib, capacity), batch, "level {level}");
        }
    }
    let two_parts = text_bytes(PART_SIZE + 1, 3);
    let capacity = max_compressed_size(two_parts.len(), Wrapper::Raw);
    assert_eq!(warp_compress_with::<false>(&two_parts, 1, Wrapper::Raw, capacity), Err(Status::ChunkTooLarge));
}

#[test]
fn warp_compressor_reports_what_the_scalar_one_does() {
    let input = text_bytes(3000, 8);
    for level in [0, 1, 4] {
        for wrapper in WRAPPERS {
            let need =
                scalar_compress(&input, level, wrapper, max_compressed_size(input.len(), wrapper)).unwrap().len();
            for capacity in [0, 5, need / 2, need - 1] {
                assert_eq!(scalar_compress(&input, level, wrapper, capacity), Err(Status::OutputTooSmall));
                let got = warp_compress(&input, level, wrapper, capacity);
                assert_eq!(got, Err(Status::OutputTooSmall), "level {level}, {wrapper:?}, capacity {capacity}");
            }
            assert_eq!(warp_compress(&input, level, wrapper, need).unwrap().len(), need);
        }
    }
    let too_large = vec![0; MAX_CHUNK_SIZE + 1];
    let capacity = max_compressed_size(too_large.len(), Wrapper::Raw);
    assert_eq!(warp_compress(&too_large, 1, Wrapper::Raw, capacity), Err(Status::ChunkTooLarge));
}

#[test]
fn warp_code_lengths_are_the_scalar_ones() {
    let skewed = |n: usize, seed: u64| -> Vec<u32> {
        random_bytes(n, seed).iter().map(|&b| if b < 40 { 0 } else { (b as u32 - 40).pow(3) }).collect()
    };
    let mut one = vec![0; NUM_LITLEN];
    one[77] = 5;
    let mut two = vec![0; NUM_DIST];
    (two[0], two[29]) = (1, 1 << 30);
    let cases = [
        vec![0; NUM_LITLEN],
        one,
        two,
        skewed(NUM_LITLEN, 1),
        skewed(NUM_DIST, 2),
        vec![3; NUM_LITLEN],
        (0..NUM_LITLEN as u32).map(|i| 1 << (i % 24)).collect(),
    ];
    for freqs in cases {
        let n = freqs.len();
        let mut work: Box<LengthWork> = unsafe { Box::new_zeroed().assume_init() };
        let mut expected = vec![9u8; n];
        huffman::build_lengths(&freqs, MAX_CODE_LEN, &mut expected, &mut work);
        let mut got = vec![9u8; n];
        let (f, l, w) = (freqs.as_ptr() as usize, got.as_mut_ptr() as usize, &mut *work as *mut LengthWork as usize);
        emulated::run(|warp| unsafe { build_lengths(warp, f as *const u32, n, l as *mut u8, w as *mut LengthWork) });
        assert_eq!(got, expected, "{n} symbols, {} used", freqs.iter().filter(|&&f| f != 0).count());
    }
}

#[test]
fn warp_decoder_reads_ours_and_zlib_rs_streams() {
    for (i, input) in inputs().iter().enumerate() {
        // Small inputs take every level, each in one wrapper, in turn; large ones (many rounds
        // on the emulated warp) one level.
        let small = input.len() <= 6000;
        for (w, wrapper) in WRAPPERS.into_iter().enumerate() {
            for level in 0..=MAX_LEVEL {
                if (i + level as usize) % 3 != w || !small && level as usize != i % 6 {
                    continue;
                }
                let ours = scalar_compress(input, level, wrapper, max_compressed_size(input.len(), wrapper)).unwrap();
                let zlib_rs = zlib_rs_encode(input, [0, 1, 6, 9, 3, 5][level as usize], wrapper);
                for (stream, whose) in [(ours, "ours"), (zlib_rs, "zlib-rs's")] {
                    let what = format!("{} bytes, level {level}, {wrapper:?}, {whose}", input.len());
                    assert!(warp_decode(&stream, wrapper, Some(input.len())) == Ok(input.clone()), "{what}");
                    assert_eq!(warp_decode(&stream, wrapper, None).map(|b| b.len()), Ok(input.len()), "{what}");
                }
            }
        }
    }
    // Two gzip members, decoded one after the other.
    let (first, second) = (text_bytes(3000, 11), random_bytes(700, 12));
    let mut members = zlib_rs_encode(&first, 6, Wrapper::Gzip);
    members.extend(zlib_rs_encode(&second, 0, Wrapper::Gzip));
    let both = [first, second].concat();
    assert_eq!(warp_decode(&members, Wrapper::Gzip, Some(both.len())), Ok(both), "two gzip members");
}

#[test]
fn warp_decoder_reports_what_the_scalar_decoder_reports() {
    let input = text_bytes(3000, 5);
    for wrapper in WRAPPERS {
        let good = scalar_compress(&input, 4, wrapper, max_compressed_size(input.len(), wrapper)).unwrap();
        for capacity in [0, 1, 100, input.len() - 1] {
            assert_decodes_as_scalar(&good, wrapper, capacity, &format!("{wrapper:?}, capacity {capacity}"));
        }
        for cut in [0, 1, 4, good.len() / 2, good.len() - 1] {
            assert_decodes_as_scalar(&good[..cut], wrapper, input.len(), &format!("{wrapper:?}, cut to {cut}"));
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert_decodes_as_scalar(&trailing, wrapper, input.len(), &format!("{wrapper:?}, a trailing byte"));
    }

    // Damage anywhere: flipped bits and overwritten bytes, in streams of every block type.
    let streams = [
        (scalar_compress(&input, 4, Wrapper::Raw, 8000).unwrap(), Wrapper::Raw),
        (zlib_rs_encode(&random_bytes(1500, 6), 0, Wrapper::Zlib), Wrapper::Zlib),
        (zlib_rs_encode(&text_bytes(1500, 7), 1, Wrapper::Gzip), Wrapper::Gzip),
        (scalar_compress(b"short and fixed", 2, Wrapper::Raw, 100).unwrap(), Wrapper::Raw),
        (zlib_rs_encode(&int32_bytes(800), 9, Wrapper::Raw), Wrapper::Raw),
    ];
    for (s, (stream, wrapper)) in streams.iter().enumerate() {
        for (round, damaged) in damaged_copies(stream, 24, 13 + s as u64).enumerate() {
            assert_decodes_as_scalar(&damaged, *wrapper, 4000, &format!("stream {s}, round {round}"));
        }
    }
}

/// The differential fuzzer's finding: two literal codes the warp reads as one (a pair entry)
/// cut after the first, with no room for the first literal, are `OutputTooSmall`, as the scalar
/// decoder says having read the first code alone; the warp said `Truncated`. Every cut of a
/// stream of short literal codes, at small rooms.
#[test]
fn cut_streams_fail_as_the_scalar_decoder_does_at_every_small_room() {
    let letters: Vec<u8> = random_bytes(300, 17).iter().map(|b| b'a' + b % 4).collect();
    for wrapper in WRAPPERS {
        let stream = scalar_compress(&letters, 4, wrapper, max_compressed_size(letters.len(), wrapper)).unwrap();
        // The cuts around the first literal's code: the first that leaves it whole.
        let first_literal = (1..stream.len())
            .find(|&cut| {
                deflate::decompress(&stream[..cut], wrapper, &mut [], &mut boxed_tables()) != Err(Status::Truncated)
            })
            .unwrap();
        for cut in first_literal - 1..first_literal + 4 {
            for room in 0..6 {
                assert_decodes_as_scalar(
                    &stream[..cut],
                    wrapper,
                    room,
                    &format!("{wrapper:?}, cut {cut}, room {room}"),
                );
            }
        }
    }
}

/// The paired decoder's result into `capacity` bytes, the output staged in shared memory or not,
/// and the whole output (every byte 0xA5 before).
fn pair_decode(stream: &[u8], wrapper: Wrapper, capacity: usize, stage: bool) -> (Result<usize, Status>, Vec<u8>) {
    let mut out = vec![0xA5u8; capacity];
    let shared_bytes = if stage { STAGED_SHARED_BYTES } else { PAIR_SHARED_BYTES };
    let mut shared = vec![0u128; shared_bytes.div_ceil(16)];
    let (s, o, sh) = (stream.as_ptr() as usize, out.as_mut_ptr() as usize, shared.as_mut_ptr() as usize);
    let mut results = emulated::run_block(PAIR_WARPS * 32, |thread| unsafe {
        let (input, out, shared) = (s as *const u8, o as *mut u8, sh as *mut u8);
        let decode = |output, tables, rounds: &mut _| {
            decompress_chunk(thread, input, stream.len(), wrapper, output, tables, rounds)
        };
        decompress_in_pair(thread, thread, out, capacity, shared, stage, decode)
    });
    results.truncate(32); // the decoding warp's
    (agreed(results), out)
}

#[test]
fn paired_decoder_writes_what_the_scalar_decoder_writes_and_staged_nothing_of_a_failed_stream() {
    let whole = text_bytes(STAGED_OUTPUT, 9);
    let good = text_bytes(3000, 5);
    for wrapper in WRAPPERS {
        let compress = |input: &[u8]| scalar_compress(input, 1, wrapper, max_compressed_size(input.len(), wrapper));
        let mut streams: Vec<(String, Vec<u8>, usize)> = inputs()
            .into_iter()
            .chain([whole.clone()])
            .enumerate()
            .map(|(i, input)| (format!("input {i}"), compress(&input).unwrap(), input.len()))
            .collect();
        let stream = compress(&good).unwrap();
        let damaged = damaged_copies(&stream, 12, 3).enumerate();
        streams.extend(damaged.map(|(i, damaged)| (format!("damaged {i}"), damaged, good.len())));
        streams.push(("cut".into(), stream[..stream.len() / 2].to_vec(), good.len()));
        for (what, stream, size) in streams {
            // Room for the output, too little, and more than is staged (decoded in place); staged
            // and written to the output directly.
            let rooms = [size, size.saturating_sub(1), STAGED_OUTPUT + 7];
            for (capacity, stage) in rooms.into_iter().flat_map(|c| [(c, true), (c, false)]) {
                let (result, out) = pair_decode(&stream, wrapper, capacity, stage);
                let what = format!("{wrapper:?} {what}, capacity {capacity}, staged {stage}");
                let mut expected = vec![0u8; capacity];
                match deflate::decompress(&stream, wrapper, &mut expected, &mut boxed_tables()) {
                    Ok(n) => {
                        assert_eq!(result, Ok(n), "{what}");
                        assert!(out[..n] == expected[..n], "{what}: bytes differ");
                    }
                    Err(status) => {
                        assert_eq!(result, Err(status), "{what}");
                        if capacity <= STAGED_OUTPUT && stage {
                            assert!(out.iter().all(|&b| b == 0xA5), "{what}: wrote");
                        }
                    }
                }
            }
        }
    }
}

//! GDeflate's warp kernels on an emulated warp: the compressor writes the format crate's pages
//! byte for byte (and its statuses); the decoder and the warp-built Huffman tables give the bytes
//! and statuses of the format crate's scalar decoder and tables, on our pages at every level, on
//! pages of every block type, and on damaged ones.

use ferrocomp_format::Status;
use ferrocomp_format::deflate::compress::FAST_RULES;
use ferrocomp_format::deflate::huffman::{self, Alphabet, DIST_ROOT, LITLEN_ROOT, PRECODE_ROOT};
use ferrocomp_format::deflate::{CompressScratch, DecodeTables, MAX_LEVEL, PART_SIZE};
use ferrocomp_format::gdeflate;
use ferrocomp_kernels_gpu::deflate::decode::{
    PAIR_SHARED_BYTES, PAIR_WARPS, STAGED_OUTPUT, STAGED_SHARED_BYTES, decompress_in_pair,
};
use ferrocomp_kernels_gpu::deflate::rounds::InWarp;
use ferrocomp_kernels_gpu::{deflate as gpu_deflate, emulated, gdeflate as gpu_gdeflate};
use ferrocomp_tests::{agreed, damaged_copies, garbage, int32_bytes, random_bytes, random_u64s, text_bytes};

fn boxed_tables() -> Box<DecodeTables> {
    // SAFETY: any contents are a valid DecodeTables (the format crate's documentation).
    unsafe { Box::new_zeroed().assume_init() }
}

fn page(input: &[u8], level: u8) -> Vec<u8> {
    scalar_compress(input, level, gdeflate::max_compressed_size(input.len())).unwrap()
}

fn scalar_compress(input: &[u8], level: u8, capacity: usize) -> Result<Vec<u8>, Status> {
    // SAFETY: the scratch is plain integers.
    let mut scratch = unsafe { garbage::<CompressScratch>() };
    let mut out = vec![0u8; capacity];
    gdeflate::compress(input, level, &mut scratch, &mut out).map(|n| out[..n].to_vec())
}

/// The warp's page of `input` in `capacity` bytes, written `misalign` bytes into its buffer: the
/// batch kernel's for a page of one part, the parts kernel's for a longer one, as the host
/// launches them.
fn warp_compress(input: &[u8], level: u8, capacity: usize, misalign: usize) -> Result<Vec<u8>, Status> {
    match input.len() > PART_SIZE {
        true => warp_compress_with::<true>(input, level, capacity, misalign),
        false => warp_compress_with::<false>(input, level, capacity, misalign),
    }
}

/// The page of the batch kernel's compressor, or with `PARTS` the parts kernel's.
fn warp_compress_with<const PARTS: bool>(
    input: &[u8],
    level: u8,
    capacity: usize,
    misalign: usize,
) -> Result<Vec<u8>, Status> {
    let mut out = vec![0xA5u8; capacity + misalign];
    let mut table = vec![0x5A5Au16; FAST_RULES.table_entries()];
    // SAFETY: the scratch is plain integers.
    let mut scratch = unsafe { garbage::<CompressScratch>() };
    let (i, n, o) = (input.as_ptr() as usize, input.len(), out[misalign..].as_mut_ptr() as usize);
    let (t, s) = (table.as_mut_ptr() as usize, &mut *scratch as *mut CompressScratch as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        let (input, out, table, scratch) = (i as *const u8, o as *mut u8, t as *mut u16, s as *mut CompressScratch);
        gpu_gdeflate::compress::compress_page::<_, PARTS>(warp, input, n, level, scratch, table, out, capacity)
    }));
    result.map(|n| out[misalign..misalign + n].to_vec())
}

/// The warp's decode into `capacity` bytes (or its count, with `None`).
fn warp_decode(page: &[u8], capacity: Option<usize>) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity.unwrap_or(0)];
    let mut tables = boxed_tables();
    let (p, o, t) = (page.as_ptr() as usize, out.as_mut_ptr() as usize, &mut *tables as *mut DecodeTables as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        let output = match capacity {
            Some(capacity) => gpu_gdeflate::Output::to(o as *mut u8, capacity),
            None => gpu_gdeflate::Output::counting(),
        };
        gpu_gdeflate::decompress_page(warp, p as *const u8, page.len(), output, t as *mut DecodeTables, &mut InWarp)
    }));
    result.map(|n| if capacity.is_some() { out[..n].to_vec() } else { vec![0; n] })
}

/// The paired decoder's result into `capacity` bytes, the output staged in shared memory or not,
/// and the whole output (every byte 0xA5 before).
fn pair_decode(page: &[u8], capacity: usize, stage: bool) -> (Result<usize, Status>, Vec<u8>) {
    let mut out = vec![0xA5u8; capacity];
    let shared_bytes = if stage { STAGED_SHARED_BYTES } else { PAIR_SHARED_BYTES };
    let mut shared = vec![0u128; shared_bytes.div_ceil(16)];
    let (p, o, s) = (page.as_ptr() as usize, out.as_mut_ptr() as usize, shared.as_mut_ptr() as usize);
    let mut results = emulated::run_block(PAIR_WARPS * 32, |thread| unsafe {
        let decode = |output, tables, rounds: &mut _| {
            gpu_gdeflate::decompress_page(thread, p as *const u8, page.len(), output, tables, rounds)
        };
        decompress_in_pair(thread, thread, o as *mut u8, capacity, s as *mut u8, stage, decode)
    });
    results.truncate(32); // the decoding warp's
    (agreed(results), out)
}

fn scalar_decode(page: &[u8], capacity: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity];
    gdeflate::decompress(page, &mut out, &mut boxed_tables()).map(|n| out[..n].to_vec())
}

/// The warp decodes `page` as the scalar decoder does, into `capacity` bytes and counting.
fn assert_agrees(page: &[u8], capacity: usize, what: &str) {
    let expected = scalar_decode(page, capacity);
    assert_eq!(warp_decode(page, Some(capacity)), expected, "{what}");
    let size = gdeflate::decompressed_size(page, &mut boxed_tables());
    assert_eq!(warp_decode(page, None).map(|bytes| bytes.len()), size, "{what}: size");
}

fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    let mut mixed = text_bytes(2000, 3);
    mixed.extend(random_bytes(1000, 4));
    mixed.extend(vec![b'z'; 1000]);
    mixed.extend(b"abcabcabcabd".repeat(100));
    let floats: Vec<u8> = (0..1000).flat_map(|i| ((i as f32 * 0.01).sin()).to_le_bytes()).collect();
    // Offsets: many short matches, each reading the one before it.
    let offsets: Vec<u8> = (0..1500u32).flat_map(|i| (i * 3 + i / 7).to_le_bytes()).collect();
    vec![
        ("empty", Vec::new()),
        ("one byte", vec![7]),
        // A fixed block with literals of 9-bit codes (above 143).
        ("high bytes", (0..200u32).map(|i| 150 + (i % 7 + i / 60) as u8).collect()),
        ("text", text_bytes(6000, 1)),
        ("random", random_bytes(3000, 2)),
        ("mixed", mixed),
        ("run", vec![b'a'; 5000]),
        ("floats", floats),
        ("offsets", offsets),
    ]
}

#[test]
fn warp_compressor_writes_the_scalar_pages() {
    // Whole pages too: noise (stored blocks), long runs (Deflate64's lengths), many blocks.
    let mut mixed = text_bytes(20_000, 3);
    mixed.extend(random_bytes(9000, 4));
    mixed.extend(vec![b'z'; 30_000]);
    mixed.extend(text_bytes(6536, 5));
    let large = [
        ("zeros", vec![0; PART_SIZE]),
        ("int32", int32_bytes(16_000)),
        ("mixed page", mixed),
        ("two parts", text_bytes(PART_SIZE + 5000, 7)),
    ];
    for (k, (what, input)) in inputs().into_iter().chain(large).enumerate() {
        // Levels 2 to 5 share their parse with Deflate's: each page takes two of them, in turn.
        for level in [0, 1, 2 + k as u8 % 4, 2 + (k as u8 + 2) % 4] {
            let expected = page(&input, level);
            let got = warp_compress(&input, level, gdeflate::max_compressed_size(input.len()), k % 4).unwrap();
            assert!(got == expected, "{what}, level {level}: pages differ");
            assert_eq!(scalar_decode(&got, input.len()), Ok(input.clone()), "{what}, level {level}: decoded");
        }
    }
}

#[test]
fn the_parts_kernel_writes_the_batch_kernels_pages_which_takes_one_part() {
    for input in [text_bytes(5001, 2), vec![0; PART_SIZE]] {
        for level in [0, 1, 4] {
            let capacity = gdeflate::max_compressed_size(input.len());
            let batch = warp_compress_with::<false>(&input, level, capacity, 0);
            assert_eq!(warp_compress_with::<true>(&input, level, capacity, 0), batch, "level {level}");
        }
    }
    let two_parts = text_bytes(PART_SIZE + 1, 3);
    let capacity = gdeflate::max_compressed_size(two_parts.len());
    assert_eq!(warp_compress_with::<false>(&two_parts, 1, capacity, 0), Err(Status::ChunkTooLarge));
}

#[test]
fn warp_compressor_reports_what_the_scalar_one_does() {
    let input = text_bytes(3000, 8);
    for level in [0, 1, 4] {
        let need = page(&input, level).len();
        for capacity in [0, 5, 128, need / 2, need - 1] {
            assert_eq!(scalar_compress(&input, level, capacity), Err(Status::OutputTooSmall));
            assert_eq!(warp_compress(&input, level, capacity, 0), Err(Status::OutputTooSmall), "capacity {capacity}");
        }
        assert_eq!(warp_compress(&input, level, need, 1).map(|page| page.len()), Ok(need));
    }
    let too_large = vec![0; gdeflate::MAX_CHUNK_SIZE + 1];
    let capacity = gdeflate::max_compressed_size(too_large.len());
    assert_eq!(warp_compress(&too_large, 1, capacity, 0), Err(Status::ChunkTooLarge));
}

#[test]
fn warp_decoder_reads_our_pages_at_every_level() {
    for (what, input) in inputs() {
        for level in [0, 1, 3, MAX_LEVEL] {
            let page = page(&input, level);
            assert_eq!(warp_decode(&page, Some(input.len())), Ok(input.clone()), "{what}, level {level}");
            assert_eq!(warp_decode(&page, None).map(|b| b.len()), Ok(input.len()), "{what}, level {level}: size");
        }
    }
}

#[test]
fn warp_decoder_reports_what_the_scalar_decoder_reports() {
    let input = text_bytes(3000, 5);
    let good = page(&input, 4);
    // A small output, and too few bytes, trailing bytes and padding.
    for capacity in [0, 1, 100, input.len() - 1] {
        assert_agrees(&good, capacity, &format!("capacity {capacity}"));
    }
    for cut in [0, 4, 127, 128, good.len() / 2, good.len() - 4] {
        assert_agrees(&good[..cut], input.len(), &format!("cut to {cut}"));
    }
    let mut padded = good.clone();
    padded.extend([0; 8]);
    assert_agrees(&padded, input.len(), "zero padding");
    padded.push(1);
    assert_agrees(&padded, input.len(), "a stray byte");

    // Damage anywhere: flipped bits and overwritten words, in pages of every block type.
    let pages = [good, page(&random_bytes(1500, 6), 4), page(&text_bytes(1500, 7), 1), page(b"short and fixed", 2)];
    for (p, page) in pages.iter().enumerate() {
        for (round, damaged) in damaged_copies(page, 24, 10 + p as u64).enumerate() {
            assert_agrees(&damaged, 4000, &format!("page {p}, round {round}"));
        }
    }
}

fn warp_table(lens: &[u8], root: u32, alphabet: Alphabet, size: usize) -> (Result<(), Status>, Vec<u32>) {
    let mut table = vec![0xDEAD_BEEF; size];
    let (l, t) = (lens.as_ptr() as usize, table.as_mut_ptr() as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        let lengths = gpu_deflate::lengths_at(warp, l as *const u8, lens.len());
        gpu_deflate::build_table(warp, t as *mut u32, size, root, lengths, lens.len(), alphabet)
    }));
    (result, table)
}

/// Code lengths of a Huffman code over `symbols` symbols drawn from `next`: a random complete
/// code (split a random leaf until there are enough), with some symbols unused.
fn complete_lengths(symbols: usize, max: u8, next: &mut impl FnMut() -> u64) -> Vec<u8> {
    let used = 2 + next() as usize % (symbols - 1);
    let mut leaves = vec![0u8];
    while leaves.len() < used {
        let splittable: Vec<usize> = (0..leaves.len()).filter(|&i| leaves[i] < max).collect();
        if splittable.is_empty() {
            break;
        }
        let i = splittable[next() as usize % splittable.len()];
        leaves[i] += 1;
        leaves.push(leaves[i]);
    }
    let mut lens = vec![0u8; symbols];
    let mut slots: Vec<usize> = (0..symbols).collect();
    for len in leaves {
        let slot = slots.swap_remove(next() as usize % slots.len());
        lens[slot] = len;
    }
    lens
}

#[test]
fn warp_built_tables_are_the_scalar_tables() {
    let mut next = random_u64s(11);
    let kinds = [
        (Alphabet::Precode, PRECODE_ROOT, 19, 7, huffman::PRECODE_TABLE),
        (Alphabet::LitLen { deflate64: true }, LITLEN_ROOT, 288, 15, huffman::LITLEN_TABLE),
        (Alphabet::LitLen { deflate64: false }, LITLEN_ROOT, 286, 15, huffman::LITLEN_TABLE),
        (Alphabet::Dist { deflate64: true }, DIST_ROOT, 32, 15, huffman::DIST_TABLE),
    ];
    let mut built = 0;
    for (alphabet, root, symbols, max, size) in kinds {
        for round in 0..40 {
            let mut lens = complete_lengths(symbols, max, &mut next);
            match round % 8 {
                5 => lens[next() as usize % symbols] = 0,                    // incomplete
                6 => lens[next() as usize % symbols] = 1 + next() as u8 % 3, // over-subscribed, mostly
                7 => {
                    lens.fill(0); // one codeword, or none
                    lens[next() as usize % symbols] = (round % 16 == 7) as u8;
                }
                _ => {}
            }
            let mut expected = vec![0xDEAD_BEEF; size];
            let expected_result = huffman::build_table(&mut expected, root, &lens, alphabet);
            let (result, table) = warp_table(&lens, root, alphabet, size);
            assert_eq!(result, expected_result, "{lens:?}");
            if result.is_ok() {
                assert!(table == expected, "{lens:?}");
                built += 1;
            }
        }
    }
    assert!(built > 100, "only {built} codes were valid");
}

#[test]
fn paired_decoder_writes_what_the_scalar_decoder_writes_and_staged_nothing_of_a_failed_page() {
    let mut pages: Vec<(String, Vec<u8>, usize)> = inputs()
        .into_iter()
        .chain([("whole page", text_bytes(PART_SIZE, 9)), ("two parts", text_bytes(PART_SIZE + 5000, 7))])
        .map(|(what, input)| (what.to_string(), page(&input, 1), input.len()))
        .collect();
    let good = page(&text_bytes(3000, 5), 4);
    pages.extend(damaged_copies(&good, 12, 3).enumerate().map(|(i, damaged)| (format!("damaged {i}"), damaged, 3000)));
    pages.push(("cut".into(), good[..good.len() / 2].to_vec(), 3000));
    for (what, page, size) in pages {
        // Room for the page, too little, and more than the stage holds (decoded in place); staged
        // and written to the output directly.
        let rooms = [size, size.saturating_sub(1), STAGED_OUTPUT + 7];
        for (capacity, stage) in rooms.into_iter().flat_map(|c| [(c, true), (c, false)]) {
            let (result, out) = pair_decode(&page, capacity, stage);
            let what = format!("{what}, capacity {capacity}, staged {stage}");
            match scalar_decode(&page, capacity) {
                Ok(bytes) => {
                    assert_eq!(result, Ok(bytes.len()), "{what}");
                    assert!(out[..bytes.len()] == bytes[..], "{what}: bytes differ");
                }
                Err(status) => {
                    assert_eq!(result, Err(status), "{what}");
                    if capacity <= STAGED_OUTPUT && stage {
                        assert!(out.iter().all(|&b| b == 0xA5), "{what}: a failed page wrote");
                    }
                }
            }
        }
    }
}

//! The ANS kernels' bodies on an emulated block of warps: the compressor writes the format crate's
//! bytes for bytes and 16-, 32- and 8-bit floats at every size that matters and on random skewed
//! chunks, and the decoder gives the scalar decoder's bytes or status on those streams, on
//! misaligned ones, on damaged ones and on versions 1's and 2's, and sub-blocks decoded by
//! different warps fail in the order the scalar decoder meets them.

use ferrocomp_format::Status;
use ferrocomp_format::ans::{self, DataType, Options, SUB_BLOCK, SUB_BLOCK_2};
use ferrocomp_kernels_gpu::{ans as gpu_ans, emulated};
use ferrocomp_tests::{agreed, random_bytes, text_bytes};

/// Threads of the block coding a chunk where a test does not say.
const BLOCK_THREADS: u32 = gpu_ans::BLOCK_WARPS * 32;

/// The block's stream of `input` placed `shift` bytes past an aligned address, into an output
/// with room for `capacity` bytes.
fn block_compress(input: &[u8], options: &Options, shift: usize, capacity: usize) -> Result<Vec<u8>, Status> {
    block_compress_at(input, options, shift, shift, capacity)
}

/// [`block_compress`] with the input `in_shift` and the output `out_shift` bytes past aligned
/// addresses.
fn block_compress_at(
    input: &[u8],
    options: &Options,
    in_shift: usize,
    out_shift: usize,
    capacity: usize,
) -> Result<Vec<u8>, Status> {
    warps_compress(BLOCK_THREADS / 32, input, options, in_shift, out_shift, capacity)
}

/// [`block_compress_at`] by a block of `warps` warps.
fn warps_compress(
    warps: u32,
    input: &[u8],
    options: &Options,
    in_shift: usize,
    out_shift: usize,
    capacity: usize,
) -> Result<Vec<u8>, Status> {
    // Aligned to 16, as device allocations.
    let mut out = vec![0u128; (capacity + out_shift).div_ceil(16)];
    let mut placed: Vec<u128> = vec![0; (input.len() + in_shift).div_ceil(16)];
    let i = placed.as_mut_ptr() as usize + in_shift;
    unsafe { core::ptr::copy_nonoverlapping(input.as_ptr(), i as *mut u8, input.len()) };
    let mut shared = vec![0u32; gpu_ans::compress_shared_bytes(warps) / 4];
    let (o, s) = (out.as_mut_ptr() as usize + out_shift, shared.as_mut_ptr() as usize);
    let (n, o, s) = (input.len(), o as *mut u8, s as *mut u32);
    let result = agreed(emulated::run_block(32 * warps, |thread| unsafe {
        let input = core::slice::from_raw_parts(i as *const u8, n);
        gpu_ans::compress_chunk(thread, thread, input, options, s, o, capacity)
    }));
    let out: Vec<u8> = out.iter().flat_map(|word| word.to_le_bytes()).collect();
    result.map(|n| out[out_shift..out_shift + n].to_vec())
}

/// The block's decoding of `stream` placed `shift` bytes past an aligned address (the allocation
/// ending with it, for a sanitizer), into an output `shift` bytes past one (so that only a shift
/// of 0 stores words).
fn block_decompress(stream: &[u8], capacity: usize, shift: usize) -> Result<Vec<u8>, Status> {
    block_decompress_at(stream, capacity, shift, shift)
}

/// [`block_decompress`] with the stream `in_shift` and the output `out_shift` bytes past aligned
/// addresses.
fn block_decompress_at(stream: &[u8], capacity: usize, in_shift: usize, out_shift: usize) -> Result<Vec<u8>, Status> {
    warps_decompress(BLOCK_THREADS / 32, stream, capacity, in_shift, out_shift)
}

/// [`block_decompress_at`] by a block of `warps` warps.
fn warps_decompress(
    warps: u32,
    stream: &[u8],
    capacity: usize,
    in_shift: usize,
    out_shift: usize,
) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u128; (capacity + out_shift).div_ceil(16)]; // aligned as a device allocation
    let mut placed = vec![0u8; stream.len() + in_shift].into_boxed_slice();
    placed[in_shift..].copy_from_slice(stream);
    let mut shared = vec![0u32; gpu_ans::decode_shared_bytes(warps) / 4];
    let o = out.as_mut_ptr() as usize + out_shift;
    let (i, s) = (placed[in_shift..].as_ptr() as usize, shared.as_mut_ptr() as usize);
    let result = agreed(emulated::run_block(32 * warps, |thread| unsafe {
        gpu_ans::decompress_chunk(thread, thread, i as *const u8, stream.len(), o as *mut u8, capacity, s as *mut u8)
    }));
    let out: Vec<u8> = out.iter().flat_map(|word| word.to_le_bytes()).collect();
    result.map(|n| out[out_shift..out_shift + n].to_vec())
}

fn scalar_compress(input: &[u8], options: &Options) -> Vec<u8> {
    let mut out = vec![0u8; ans::max_compressed_size(input.len())];
    let n = ans::compress(input, options, &mut out).unwrap();
    out.truncate(n);
    out
}

fn scalar_decompress(stream: &[u8], capacity: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity];
    ans::decompress(stream, &mut out).map(|n| out[..n].to_vec())
}

/// Text, then a run of one symbol, then some noise: a skewed table with rare symbols.
fn inputs() -> Vec<Vec<u8>> {
    let mut mixed = text_bytes(SUB_BLOCK + 3000, 1);
    mixed.extend(vec![b'q'; 5000]);
    mixed.extend(random_bytes(300, 2));
    vec![Vec::new(), vec![7], text_bytes(33, 3), vec![0; 4099], random_bytes(2000, 4), mixed]
}

#[test]
fn block_compressor_writes_the_scalar_bytes() {
    for data_type in [DataType::Bytes, DataType::Float16, DataType::Float32, DataType::Float8] {
        let options = Options { data_type };
        for (k, input) in inputs().iter().enumerate() {
            let expected = scalar_compress(input, &options);
            // Aligned to 16 (symbols loaded several at a time) and not (one by one).
            for shift in [0, 1 + k % 3] {
                let got = block_compress(input, &options, shift, ans::max_compressed_size(input.len())).unwrap();
                assert_eq!(got, expected, "{data_type:?}, {} bytes at {shift}", input.len());
            }
            assert_eq!(block_decompress(&expected, input.len(), k % 4).as_ref(), Ok(input), "{data_type:?}");
        }
    }
}

#[test]
fn float_low_bytes_are_written_at_every_output_alignment() {
    // Inputs aligned to 16 (the low bytes built from whole words), outputs at every alignment
    // (the low bytes stored 16 at a time where aligned), from 16 values to 4,099.
    for data_type in [DataType::Float16, DataType::Float32] {
        let options = Options { data_type };
        let width = data_type.width();
        for values in [16, 17, 19, 20, 21, 33, 35, 36, 1000, 4099] {
            let input = text_bytes(values * width + 1, values as u64);
            let expected = scalar_compress(&input, &options);
            for out_shift in 0..4 {
                let got = block_compress_at(&input, &options, 0, out_shift, ans::max_compressed_size(input.len()));
                assert_eq!(got.as_ref(), Ok(&expected), "{data_type:?}, {values} values, output at {out_shift}");
            }
        }
    }
}

#[test]
fn floats_decode_whole_values_at_every_alignment() {
    // Where the stream and the output fall decides whether lanes write words, values byte by
    // byte, or symbols with a pass for the stored bytes after: each must give the input back.
    let input = &inputs()[5];
    for data_type in [DataType::Float16, DataType::Float32] {
        let stream = scalar_compress(input, &Options { data_type });
        for (in_shift, out_shift) in (0..4).flat_map(|i| [(i, 0), (i, 1), (i, 2)]) {
            let got = block_decompress_at(&stream, input.len(), in_shift, out_shift);
            assert_eq!(got.as_ref(), Ok(input), "{data_type:?}, stream +{in_shift}, output +{out_shift}");
        }
    }
}

#[test]
fn floats_ending_a_whole_round_take_their_last_low_bytes_one_by_one() {
    // A chunk whose values end on a whole round: the last lane's low bytes end the chunk (with
    // at most three of its tail after them), too near its end for the words that hold them.
    for data_type in [DataType::Float16, DataType::Float32] {
        let width = data_type.width();
        for (values, tail) in [(128, 0), (128, 1), (384, 3), (2048 + 256, 2)] {
            let input = text_bytes(values * width + tail, values as u64);
            let stream = scalar_compress(&input, &Options { data_type });
            for in_shift in 0..4 {
                let got = block_decompress_at(&stream, input.len(), in_shift, 0);
                assert_eq!(got.as_ref(), Ok(&input), "{data_type:?}, {values} values, tail {tail}, at {in_shift}");
            }
        }
    }
}

#[test]
fn block_compressor_reports_what_does_not_fit() {
    let input = text_bytes(5000, 8);
    assert_eq!(block_compress(&input, &Options::default(), 0, 5000), Err(Status::OutputTooSmall));
}

#[test]
fn block_decoder_agrees_with_scalar_on_damaged_streams() {
    let mut noise = random_bytes(8192, 13).into_iter();
    for data_type in [DataType::Bytes, DataType::Float16, DataType::Float32] {
        let input = inputs().pop().unwrap();
        let stream = scalar_compress(&input, &Options { data_type });
        assert_eq!(block_decompress(&stream, input.len() - 1, 0), Err(Status::OutputTooSmall));
        for cut in [1, 3, 100, stream.len() / 2, stream.len() - 9] {
            let short = &stream[..stream.len() - cut];
            assert_eq!(block_decompress(short, input.len(), 3), scalar_decompress(short, input.len()), "cut {cut}");
        }
        // Cut in the header, the bitmap and the frequencies: the head is parsed as staged.
        for kept in [0, 5, 7, 8, 20, 40, 41, 44] {
            let short = &stream[..kept];
            let decoded = block_decompress(short, input.len(), 1);
            assert_eq!(decoded, Err(Status::Truncated), "{data_type:?}, {kept} bytes kept");
            assert_eq!(decoded, scalar_decompress(short, input.len()), "{data_type:?}, {kept} bytes kept");
        }
        for _ in 0..40 {
            let mut damaged = stream.clone();
            // Mostly the header and table, where a flip changes the layout.
            let span = if noise.next().unwrap() < 128 { 300 } else { stream.len() };
            let at = (noise.next().unwrap() as usize * 256 + noise.next().unwrap() as usize) % span;
            damaged[at] ^= 1 << (noise.next().unwrap() % 8);
            assert_eq!(
                block_decompress(&damaged, input.len(), at % 4),
                scalar_decompress(&damaged, input.len()),
                "{data_type:?}, damaged at {at}"
            );
        }
    }
}

/// Where each sub-block of a coded (not stored) `stream` starts, and where its word count is.
fn sub_block_layout(stream: &[u8], blocks: usize) -> Vec<(usize, usize)> {
    let (_, table_len) = ans::Table::read(&stream[ans::HEADER_LEN..]).unwrap();
    let sizes_at = ans::HEADER_LEN + table_len;
    let mut at = sizes_at + 2 * blocks;
    (0..blocks)
        .map(|b| {
            let start = at;
            at += 4 * ans::LANES
                + 2 * u16::from_le_bytes([stream[sizes_at + 2 * b], stream[sizes_at + 2 * b + 1]]) as usize;
            (start, sizes_at + 2 * b)
        })
        .collect()
}

#[test]
fn versions_1_and_2_streams_still_decode() {
    // Written by version 1's encoder (4cad569's `ans::compress`: lane `l` codes symbols `l`,
    // `l + 32`, …) and version 2's (1764dad's: sub-blocks of 16384 symbols).
    let streams: [(&[u8], DataType, u8); 4] = [
        (include_bytes!("../data/ans_v1_bytes.bin"), DataType::Bytes, ans::VERSION_1),
        (include_bytes!("../data/ans_v1_float16.bin"), DataType::Float16, ans::VERSION_1),
        (include_bytes!("../data/ans_v2_bytes.bin"), DataType::Bytes, ans::VERSION_2),
        (include_bytes!("../data/ans_v2_float16.bin"), DataType::Float16, ans::VERSION_2),
    ];
    for (stream, data_type, version) in streams {
        assert_eq!(stream[0], version);
        let input = text_bytes(2 * SUB_BLOCK_2 * data_type.width() + 1001, 48);
        assert_eq!(scalar_decompress(stream, input.len()).as_ref(), Ok(&input), "{data_type:?}");
        assert_eq!(block_decompress(stream, input.len(), 0).as_ref(), Ok(&input), "{data_type:?}");
        assert_eq!(block_decompress(stream, input.len(), 1).as_ref(), Ok(&input), "{data_type:?}");
        assert_eq!(scalar_compress(&input, &Options { data_type })[0], ans::VERSION);
    }
}

#[test]
fn sub_blocks_decoded_together_fail_as_the_scalar_decoder_meets_them() {
    // Nine sub-blocks: the block's eight warps decode one each, then the first the ninth.
    let warps = gpu_ans::BLOCK_WARPS as usize;
    let input = text_bytes(warps * SUB_BLOCK + 1234, 21);
    let options = Options { data_type: DataType::Bytes };
    let stream = scalar_compress(&input, &options);
    assert_eq!(block_compress(&input, &options, 1, ans::max_compressed_size(input.len())).as_ref(), Ok(&stream));
    assert_eq!(block_decompress(&stream, input.len(), 2).as_ref(), Ok(&input));
    let layout = sub_block_layout(&stream, warps + 1);
    // The fourth sub-block's words reach past the end: truncated, met after the first three.
    let mut lying = stream.clone();
    lying[layout[3].1..layout[3].1 + 2].copy_from_slice(&u16::MAX.to_le_bytes());
    assert_eq!(scalar_decompress(&lying, input.len()), Err(Status::Truncated));
    assert_eq!(block_decompress(&lying, input.len(), 0), Err(Status::Truncated));
    // A wrong word in the second sub-block, decoded alongside: malformed, met first.
    lying[layout[2].0 - 1] ^= 0x10;
    assert_eq!(scalar_decompress(&lying, input.len()), Err(Status::Malformed));
    assert_eq!(block_decompress(&lying, input.len(), 0), Err(Status::Malformed));
    // A state below the least in the ninth, the first warp's second.
    let mut low = stream.clone();
    low[layout[warps].0..layout[warps].0 + 4].copy_from_slice(&1u32.to_le_bytes());
    assert_eq!(scalar_decompress(&low, input.len()), Err(Status::Malformed));
    assert_eq!(block_decompress(&low, input.len(), 3), Err(Status::Malformed));
}

#[test]
fn a_sub_block_of_the_rarest_symbols_fits_its_stage() {
    // Seven sub-blocks of one symbol, then one of all the others in turn: each of those gets the
    // least frequency, 11 bits a symbol, as many words as a sub-block's coding can emit.
    let mut input = vec![b'a'; 7 * SUB_BLOCK];
    input.extend((0..SUB_BLOCK).map(|i| (b'a' as usize + 1 + i % 255) as u8));
    let options = Options { data_type: DataType::Bytes };
    let stream = scalar_compress(&input, &options);
    let (_, words_at) = sub_block_layout(&stream, 8)[7];
    let words = u16::from_le_bytes([stream[words_at], stream[words_at + 1]]) as usize;
    assert!(words >= SUB_BLOCK * 11 / 16 - 32, "{words} words");
    assert_eq!(block_compress(&input, &options, 0, ans::max_compressed_size(input.len())).as_ref(), Ok(&stream));
    assert_eq!(block_decompress(&stream, input.len(), 0).as_ref(), Ok(&input));
}

#[test]
fn a_chunk_of_more_sub_blocks_than_threads_decodes_its_later_rounds() {
    // The decoder places a round of sub-blocks a thread each from their word counts, read where the
    // chunk's head was staged in shared memory for the first round only: the warps' rings take
    // that place once they decode. A short table keeps every count in the staged head.
    let blocks = BLOCK_THREADS as usize + 40;
    let input = text_bytes(blocks * SUB_BLOCK - 100, 25);
    let stream = scalar_compress(&input, &Options { data_type: DataType::Bytes });
    let table: usize = stream[ans::HEADER_LEN..ans::HEADER_LEN + 32].iter().map(|b| b.count_ones() as usize).sum();
    assert!(ans::HEADER_LEN + 32 + 2 * table + 2 * blocks <= gpu_ans::HEAD_BYTES, "{table} symbols");
    assert_eq!(block_decompress(&stream, input.len(), 0).as_ref(), Ok(&input));
}

#[test]
fn a_chunk_found_stored_after_its_first_round_is_stored_whole() {
    // A round of 7-bit noise, smaller coded and copied out, then 8-bit noise that makes the chunk
    // larger coded than stored (the 7-bit symbols' frequencies raised make the others' costlier).
    let warps = gpu_ans::BLOCK_WARPS as usize;
    let seven_bits: Vec<u8> = random_bytes(warps * SUB_BLOCK, 23).iter().map(|b| b & 0x7F).collect();
    let input = [seven_bits, random_bytes(3 * warps * SUB_BLOCK, 24)].concat();
    let options = Options { data_type: DataType::Bytes };
    let stream = scalar_compress(&input, &options);
    assert_eq!(stream[2], ans::STORED);
    assert_eq!(block_compress(&input, &options, 0, ans::max_compressed_size(input.len())).as_ref(), Ok(&stream));
}

#[test]
fn the_block_compressor_writes_the_scalar_bytes_on_random_skewed_chunks() {
    // Sizes from nothing to past a round of eight sub-blocks, alphabets from one symbol to all,
    // skewed (the table's rare symbols coded at up to 11 bits), placed at every alignment.
    let mut next = ferrocomp_tests::random_u64s(31);
    for case in 0..16 {
        let data_type = [DataType::Bytes, DataType::Float16, DataType::Float32, DataType::Float8][case % 4];
        let len = (next() % (9 * SUB_BLOCK as u64 + 5000)) as usize;
        let alphabet = 1 + next() % 256;
        let input: Vec<u8> = (0..len)
            .map(|_| {
                let (a, b) = (next() % alphabet, next() % alphabet);
                a.min(b) as u8 // twice as likely to be low as high
            })
            .collect();
        let options = Options { data_type };
        let expected = scalar_compress(&input, &options);
        let got = block_compress(&input, &options, case / 4, ans::max_compressed_size(len));
        assert_eq!(got.as_ref(), Ok(&expected), "{data_type:?}, {len} bytes of {alphabet} symbols");
        assert_eq!(block_decompress(&expected, len, case % 4).as_ref(), Ok(&input), "{data_type:?}, {len} bytes");
    }
}

#[test]
fn blocks_of_any_warps_code_the_scalar_bytes() {
    // The host fits a block's warps to the chunks: one for a chunk of a sub-block, up to an SM's
    // worth for large ones in a short batch, any number where forced. Chunks of fewer sub-blocks
    // than warps (some idle), of more (taken in turns, the last part short), of each data type,
    // at misaligned addresses; and a wrong word in the second sub-block.
    let text = text_bytes(5 * SUB_BLOCK + 3000, 41);
    let floats: Vec<u8> = (0..3 * SUB_BLOCK / 4 + 11).flat_map(|i| (1.5f32 + i as f32 / 7.0).to_le_bytes()).collect();
    let (bytes, float32) = (Options { data_type: DataType::Bytes }, Options { data_type: DataType::Float32 });
    for warps in [1, 2, 3, 4, 16, 32] {
        for (input, options) in [(&text, &bytes), (&floats, &float32)] {
            let stream = scalar_compress(input, options);
            if warps <= gpu_ans::COMPRESS_WARPS_PER_SM {
                let got = warps_compress(warps, input, options, 1, 3, ans::max_compressed_size(input.len()));
                assert_eq!(got.as_ref(), Ok(&stream), "{warps} warps, {:?}", options.data_type);
            }
            let got = warps_decompress(warps, &stream, input.len(), 2, 0);
            assert_eq!(got.as_ref(), Ok(input), "{warps} warps, {:?}", options.data_type);
        }
        let mut lying = scalar_compress(&text, &bytes);
        let layout = sub_block_layout(&lying, 6);
        lying[layout[2].0 - 1] ^= 0x10;
        assert_eq!(scalar_decompress(&lying, text.len()), Err(Status::Malformed));
        assert_eq!(warps_decompress(warps, &lying, text.len(), 0, 0), Err(Status::Malformed), "{warps} warps");
    }
}

//! The ANS kernels' bodies on an emulated warp: the compressor writes the format crate's bytes for
//! bytes and 16-bit floats at every size that matters, and the decoder gives the scalar decoder's
//! bytes or status on those streams, on misaligned ones and on damaged ones, and sub-blocks
//! decoded together fail in the order the scalar decoder meets them.

use ferrocomp_format::Status;
use ferrocomp_format::ans::{self, DataType, Options, SUB_BLOCK};
use ferrocomp_kernels_gpu::{ans as gpu_ans, emulated};
use ferrocomp_tests::{agreed, random_bytes, text_bytes};

/// The warp's stream of `input` placed `shift` bytes past an aligned address.
fn warp_compress(input: &[u8], options: &Options, shift: usize) -> Result<Vec<u8>, Status> {
    let capacity = ans::max_compressed_size(input.len());
    let mut out = vec![0u8; capacity + shift];
    let mut placed = vec![0u8; input.len() + shift];
    placed[shift..].copy_from_slice(input);
    let mut shared = vec![0u32; gpu_ans::SHARED_BYTES_PER_WARP / 4];
    let (i, o, s) =
        (placed[shift..].as_ptr() as usize, out[shift..].as_mut_ptr() as usize, shared.as_mut_ptr() as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        gpu_ans::compress_chunk(warp, i as *const u8, input.len(), options, s as *mut u32, o as *mut u8, capacity)
    }));
    result.map(|n| out[shift..shift + n].to_vec())
}

/// The warp's decoding of `stream` placed `shift` bytes past an aligned address (the allocation
/// ending with it, for a sanitizer), into an output `shift` bytes past one.
fn warp_decompress(stream: &[u8], capacity: usize, shift: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity + shift];
    let mut placed = vec![0u8; stream.len() + shift].into_boxed_slice();
    placed[shift..].copy_from_slice(stream);
    let mut shared = vec![0u32; gpu_ans::SHARED_BYTES_PER_WARP / 4];
    let (i, o, s) =
        (placed[shift..].as_ptr() as usize, out[shift..].as_mut_ptr() as usize, shared.as_mut_ptr() as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        gpu_ans::decompress_chunk(warp, i as *const u8, stream.len(), o as *mut u8, capacity, s as *mut u32)
    }));
    result.map(|n| out[shift..shift + n].to_vec())
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
fn warp_compressor_writes_the_scalar_bytes() {
    for data_type in [DataType::Bytes, DataType::Float16] {
        let options = Options { data_type };
        for (k, input) in inputs().iter().enumerate() {
            let expected = scalar_compress(input, &options);
            let got = warp_compress(input, &options, k % 3).unwrap();
            assert_eq!(got, expected, "{data_type:?}, {} bytes", input.len());
            assert_eq!(warp_decompress(&got, input.len(), k % 4).as_ref(), Ok(input), "{data_type:?}");
        }
    }
}

#[test]
fn warp_compressor_reports_what_does_not_fit() {
    let input = text_bytes(5000, 8);
    let mut shared = vec![0u32; gpu_ans::SHARED_BYTES_PER_WARP / 4];
    let mut out = vec![0u8; input.len()];
    let (i, o, s) = (input.as_ptr() as usize, out.as_mut_ptr() as usize, shared.as_mut_ptr() as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        gpu_ans::compress_chunk(
            warp,
            i as *const u8,
            input.len(),
            &Options::default(),
            s as *mut u32,
            o as *mut u8,
            5000,
        )
    }));
    assert_eq!(result, Err(Status::OutputTooSmall));
}

#[test]
fn warp_decoder_agrees_with_scalar_on_damaged_streams() {
    let mut noise = random_bytes(8192, 13).into_iter();
    for data_type in [DataType::Bytes, DataType::Float16] {
        let input = inputs().pop().unwrap();
        let stream = scalar_compress(&input, &Options { data_type });
        assert_eq!(warp_decompress(&stream, input.len() - 1, 0), Err(Status::OutputTooSmall));
        for cut in [1, 3, 100, stream.len() / 2, stream.len() - 9] {
            let short = &stream[..stream.len() - cut];
            assert_eq!(warp_decompress(short, input.len(), 3), scalar_decompress(short, input.len()), "cut {cut}");
        }
        for _ in 0..40 {
            let mut damaged = stream.clone();
            // Mostly the header and table, where a flip changes the layout.
            let span = if noise.next().unwrap() < 128 { 300 } else { stream.len() };
            let at = (noise.next().unwrap() as usize * 256 + noise.next().unwrap() as usize) % span;
            damaged[at] ^= 1 << (noise.next().unwrap() % 8);
            assert_eq!(
                warp_decompress(&damaged, input.len(), at % 4),
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
fn sub_blocks_decoded_together_fail_as_the_scalar_decoder_meets_them() {
    // Five sub-blocks: the warp codes a group of four, then one.
    let input = text_bytes(4 * SUB_BLOCK + 1234, 21);
    let options = Options { data_type: DataType::Bytes };
    let stream = scalar_compress(&input, &options);
    assert_eq!(warp_compress(&input, &options, 1).as_ref(), Ok(&stream));
    assert_eq!(warp_decompress(&stream, input.len(), 2).as_ref(), Ok(&input));
    let layout = sub_block_layout(&stream, 5);
    // The fourth sub-block's words reach past the end: truncated, met after the first three.
    let mut lying = stream.clone();
    lying[layout[3].1..layout[3].1 + 2].copy_from_slice(&u16::MAX.to_le_bytes());
    assert_eq!(scalar_decompress(&lying, input.len()), Err(Status::Truncated));
    assert_eq!(warp_decompress(&lying, input.len(), 0), Err(Status::Truncated));
    // A wrong word in the second sub-block, decoded alongside: malformed, met first.
    lying[layout[2].0 - 1] ^= 0x10;
    assert_eq!(scalar_decompress(&lying, input.len()), Err(Status::Malformed));
    assert_eq!(warp_decompress(&lying, input.len(), 0), Err(Status::Malformed));
    // A state below the least in the fifth, decoded alone after the group.
    let mut low = stream.clone();
    low[layout[4].0..layout[4].0 + 4].copy_from_slice(&1u32.to_le_bytes());
    assert_eq!(scalar_decompress(&low, input.len()), Err(Status::Malformed));
    assert_eq!(warp_decompress(&low, input.len(), 3), Err(Status::Malformed));
}

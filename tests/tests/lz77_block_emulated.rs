//! LZ4's and Snappy's block decoder (`lz77::block`) on an emulated block: the scalar decoder's
//! bytes, in every thread (the block decoded the chunk itself, not its warp fallback), on our
//! streams and the reference libraries', at block sizes that cut the input into segments of 32
//! bytes and of several words; and the scalar decoder's bytes or status on damaged, cut and
//! oversized streams (which the first warp decodes).

use ferrocomp_format::lz4::HASH_ENTRIES;
use ferrocomp_format::{DataType, Status, lz4, snappy};
use ferrocomp_kernels_gpu::lz77::block::{MAX_OUTPUT, SHARED_BYTES};
use ferrocomp_kernels_gpu::{emulated, lz4 as gpu_lz4, snappy as gpu_snappy};
use ferrocomp_tests::{damaged_copies, int32_bytes, random_bytes, short_repeats_bytes, text_bytes};

#[derive(Clone, Copy, Debug)]
enum Codec {
    Lz4,
    Snappy,
}

/// Each thread's result of decoding `stream` (room for `capacity` bytes) with `threads` threads,
/// and the output.
fn block_decompress(
    codec: Codec,
    stream: &[u8],
    capacity: usize,
    threads: u32,
) -> (Vec<Result<usize, Status>>, Vec<u8>) {
    let mut out = vec![0u8; capacity];
    let mut shared = vec![0u32; SHARED_BYTES.div_ceil(4)];
    let exact: Box<[u8]> = stream.into(); // an allocation of the stream's size, for a sanitizer
    let (s, o, m) = (exact.as_ptr() as usize, out.as_mut_ptr() as usize, shared.as_mut_ptr() as usize);
    let results = emulated::run_block(threads, |thread| unsafe {
        let (input, output, shared) = (s as *const u8, o as *mut u8, m as *mut u8);
        match codec {
            Codec::Lz4 => {
                gpu_lz4::decompress_chunk_in_block(thread, thread, input, stream.len(), output, capacity, shared)
            }
            Codec::Snappy => {
                gpu_snappy::decompress_chunk_in_block(thread, thread, input, stream.len(), output, capacity, shared)
            }
        }
    });
    (results, out)
}

fn scalar_decompress(codec: Codec, stream: &[u8], capacity: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0u8; capacity];
    let n = match codec {
        Codec::Lz4 => lz4::decompress(stream, &mut out),
        Codec::Snappy => snappy::decompress(stream, &mut out),
    };
    n.map(|n| out[..n].to_vec())
}

/// Thread 0's result, which is the scalar decoder's.
fn first_thread_agrees(codec: Codec, stream: &[u8], capacity: usize, threads: u32) -> Vec<Result<usize, Status>> {
    let (results, out) = block_decompress(codec, stream, capacity, threads);
    let got = results[0].map(|n| out[..n].to_vec());
    assert_eq!(got, scalar_decompress(codec, stream, capacity), "{codec:?}, {} bytes in", stream.len());
    results
}

/// `n` incompressible bytes but for `repeats` 16-byte repeats spread through them from byte
/// 1000 on: a short first run of literals, an input nearly as long as its output, and few
/// sequences (or, with many repeats, more than the block copies in turn).
fn sparse_repeats(n: usize, repeats: usize, seed: u64) -> Vec<u8> {
    repeats_from(n, repeats, (n - 1016) / repeats, 500, seed)
}

/// As [`sparse_repeats`], `step` bytes apart from byte 1000 (or `back`) on, each repeating the
/// 16 bytes `back` bytes before it: with `back` the step, each repeats the one before (a match
/// of a match's bytes).
fn repeats_from(n: usize, repeats: usize, step: usize, back: usize, seed: u64) -> Vec<u8> {
    let mut data = random_bytes(n, seed);
    for at in (back.max(1000)..n - 16).step_by(step).take(repeats) {
        data.copy_within(at - back..at - back + 16, at);
    }
    data
}

/// `n` incompressible bytes but for `runs` runs of 40 equal bytes: matches one byte back,
/// overlapping themselves.
fn byte_runs(n: usize, runs: usize, seed: u64) -> Vec<u8> {
    let mut data = random_bytes(n, seed);
    for at in (1000..n - 40).step_by((n - 1040) / runs).take(runs) {
        let byte = data[at];
        data[at..at + 40].fill(byte);
    }
    data
}

fn inputs() -> Vec<Vec<u8>> {
    let mut mixed = text_bytes(20_000, 3);
    mixed.extend(random_bytes(3000, 4));
    mixed.extend(vec![b'z'; 9000]);
    mixed.extend(text_bytes(5000, 9));
    vec![
        vec![7],
        vec![1; 13],
        text_bytes(100, 1),
        text_bytes(65_536, 2),
        random_bytes(40_000, 2),
        mixed,
        int32_bytes(16_384),
        short_repeats_bytes(30_000, 5),
        vec![0; 65_536],
        sparse_repeats(65_536, 20, 6),
        sparse_repeats(65_536, 50, 8), // as Snappy spells it, over 64 sequences: a literal and a copy each
        sparse_repeats(65_536, 300, 7),
        // In turn: matches of earlier matches' bytes, of literals further back than the list
        // looks, of one byte repeated.
        repeats_from(65_536, 30, 2000, 2000, 10),
        repeats_from(65_536, 50, 1000, 12_000, 11),
        byte_runs(65_536, 30, 12),
        // Chains of a hundred matches of matches: up to a hundred hops from a byte to its literal.
        repeats_from(65_536, 100, 600, 600, 13),
    ]
}

fn compressed(codec: Codec, input: &[u8]) -> Vec<Vec<u8>> {
    match codec {
        Codec::Lz4 => {
            let mut ours = vec![0u8; lz4::max_compressed_size(input.len())];
            let n = lz4::compress(input, DataType::Char, &mut [0; HASH_ENTRIES], &mut ours).unwrap();
            let high = ::lz4::block::compress(input, Some(::lz4::block::CompressionMode::HIGHCOMPRESSION(9)), false);
            vec![ours[..n].to_vec(), lz4_flex::block::compress(input), high.unwrap()]
        }
        Codec::Snappy => {
            let mut ours = vec![0u8; snappy::max_compressed_size(input.len())];
            let n = snappy::compress(input, DataType::Char, &mut [0; HASH_ENTRIES], &mut ours).unwrap();
            vec![ours[..n].to_vec(), snap::raw::Encoder::new().compress_vec(input).unwrap()]
        }
    }
}

#[test]
fn the_block_decodes_every_stream_itself_in_every_thread() {
    for codec in [Codec::Lz4, Codec::Snappy] {
        for input in inputs() {
            for stream in compressed(codec, &input) {
                for threads in [64, 1024] {
                    let results = first_thread_agrees(codec, &stream, input.len(), threads);
                    let decoded_by_all = results.iter().all(|r| *r == Ok(input.len()));
                    assert!(decoded_by_all, "{codec:?}: {} bytes, {threads} threads left it to the warp", input.len());
                }
            }
        }
    }
}

#[test]
fn damaged_cut_and_oversized_streams_get_the_scalar_result() {
    for codec in [Codec::Lz4, Codec::Snappy] {
        for input in
            [text_bytes(30_000, 7), int32_bytes(4000), short_repeats_bytes(12_000, 8), sparse_repeats(9000, 6, 9)]
        {
            for stream in compressed(codec, &input) {
                for damaged in damaged_copies(&stream, 12, input.len() as u64) {
                    first_thread_agrees(codec, &damaged, input.len(), 128);
                }
                for cut in [1, stream.len() / 3, stream.len() - 1] {
                    first_thread_agrees(codec, &stream[..cut], input.len(), 128);
                }
                first_thread_agrees(codec, &stream, input.len() - 1, 128); // room too small
                first_thread_agrees(codec, &stream, input.len() + 3, 128); // room to spare
            }
        }
    }
    // Larger than the block decoder takes: the first warp decodes it.
    let input = text_bytes(MAX_OUTPUT as usize + 1000, 11);
    for codec in [Codec::Lz4, Codec::Snappy] {
        for stream in compressed(codec, &input) {
            let results = first_thread_agrees(codec, &stream, input.len(), 64);
            assert_eq!(results[40], Ok(0), "{codec:?}: the block took a chunk over its limit");
        }
    }
}

//! Criterion microbenchmarks of ferrocomp's GPU kernels: compress and decompress of LZ4, Snappy, Deflate level 1,
//! GDeflate level 1, Zstd levels 1 to 3, Cascaded (its defaults), Bitcomp (bytes, and sparse 32-bit integers), ANS
//! (bytes) and CRC-32, each one batched call over 64 MiB of text-like data in 64 KiB chunks, timed
//! with CUDA events.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ferrocomp::checksum::crc32_async;
use ferrocomp::{
    Ans, AnsDataType, Bitcomp, Cascaded, Chunks, DataType, Deflate, DeviceBuffer, ElementType, GDeflate, Gpu, Lz4,
    Options, Results, Snappy, Wrapper, Zstd,
};
use ferrocomp_bench::{BenchStream, Chunked, Timer, codec_name};
use std::time::Duration;

/// Bytes each call processes.
const LEN: usize = 64 << 20;
/// Uncompressed chunk size.
const CHUNK_SIZE: usize = 64 << 10;
/// The codecs benchmarked, each as `<codec>_compress` and `<codec>_decompress` (`zstd_level_1_compress`...).
const CODECS: [Options; 11] = [
    Options::Lz4(Lz4 { data_type: DataType::Char }),
    Options::Snappy(Snappy { data_type: DataType::Char }),
    Options::Deflate(Deflate { level: 1, wrapper: Wrapper::Raw }),
    Options::GDeflate(GDeflate { level: 1 }),
    Options::Zstd(Zstd { level: 1 }),
    Options::Zstd(Zstd { level: 2 }),
    Options::Zstd(Zstd { level: 3 }),
    Options::Cascaded(Cascaded { element: ElementType::U32, rles: 2, deltas: 1, bitpack: true, auto: true }),
    Options::Bitcomp(Bitcomp { element: ElementType::U8, sparse: false, error_bound: None }),
    Options::Bitcomp(Bitcomp { element: ElementType::U32, sparse: true, error_bound: None }),
    Options::Ans(Ans { data_type: AnsDataType::Bytes }),
];

/// Deterministic text-like bytes: words and numbers picked by a xorshift generator, so the codecs find matches.
fn text(len: usize) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "the", "chunk", "kernel", "stream", "device", "compress", "warp", "of", "and", "buffer", "match", "to", "a",
        "is", "block", "offset",
    ];
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut out = Vec::with_capacity(len + 32);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        match state >> 59 {
            0 => out.extend_from_slice(format!("{}\n", state % 10_000).as_bytes()),
            _ => out.extend_from_slice(WORDS[(state % 16) as usize].as_bytes()),
        }
        out.push(b' ');
    }
    out.truncate(len);
    out
}

fn kernels(c: &mut Criterion) {
    let gpu = match Gpu::new(0) {
        Ok(gpu) => gpu,
        Err(ferrocomp::Error::NoDevice) => {
            println!("no CUDA device: skipping the kernel benchmarks");
            return;
        }
        Err(e) => panic!("opening the GPU: {e}"),
    };
    let data = text(LEN);
    let input = Chunked::upload(&gpu, &data, CHUNK_SIZE).unwrap();
    let count = input.count();
    let mut decompressed = Chunked::new(&gpu, LEN, CHUNK_SIZE).unwrap();
    let mut crcs = gpu.alloc::<u32>(count).unwrap();
    let stream = BenchStream::new(&gpu).unwrap();
    let timer = Timer::new(&stream).unwrap();
    // `iters` calls between two events.
    let time = |iters: u64, enqueue: &mut dyn FnMut()| {
        let seconds = timer.time(&stream, || {
            (0..iters).for_each(|_| enqueue());
            Ok(())
        });
        Duration::from_secs_f64(seconds.unwrap())
    };

    let mut group = c.benchmark_group("kernels");
    group.throughput(Throughput::Bytes(LEN as u64));
    for options in CODECS {
        let (codec, name) = (options.codec(), codec_name(&options).to_lowercase().replace(' ', "_"));
        let slot = codec.max_compressed_chunk_size(CHUNK_SIZE).next_multiple_of(16);
        let mut compressed = Chunked::new(&gpu, count * slot, slot).unwrap();
        let scratch_bytes =
            codec.compress_scratch_size(count, CHUNK_SIZE).max(codec.decompress_scratch_size(count, CHUNK_SIZE));
        let mut scratch = gpu.alloc::<u8>(scratch_bytes).unwrap();
        let compress = |compressed: &mut Chunked, scratch: &mut DeviceBuffer<u8>| unsafe {
            let results = Results { sizes: compressed.sizes.view_mut(), statuses: compressed.statuses.view_mut() };
            let (inputs, outputs) = (input.chunks(), compressed.addresses.view());
            codec.compress_async(&gpu, inputs, outputs, slot, scratch.view_mut(), results, stream.ferrocomp()).unwrap();
        };
        let decompress = |compressed: &Chunked, decompressed: &mut Chunked, scratch: &mut DeviceBuffer<u8>| unsafe {
            let results = Results { sizes: decompressed.sizes.view_mut(), statuses: decompressed.statuses.view_mut() };
            let outputs = Chunks::new(decompressed.addresses.view(), input.sizes.view());
            let scratch = scratch.view_mut();
            codec
                .decompress_async(&gpu, compressed.chunks(), outputs, scratch, results, None, stream.ferrocomp())
                .unwrap();
        };

        // One checked round trip first, so decompression always has real input, whichever benchmarks run.
        decompressed.clear(&gpu).unwrap();
        compress(&mut compressed, &mut scratch);
        decompress(&compressed, &mut decompressed, &mut scratch);
        stream.synchronize().unwrap();
        let compressed_bytes: usize = gpu.download(compressed.sizes.view()).unwrap().iter().sum();
        assert!(gpu.download(decompressed.buffer.view()).unwrap() == data, "{name} round trip");
        println!(
            "{} MiB in {} KiB chunks, {name} ratio {:.3}",
            LEN >> 20,
            CHUNK_SIZE >> 10,
            LEN as f64 / compressed_bytes as f64
        );

        group.bench_function(format!("{name}_compress"), |b| {
            b.iter_custom(|iters| time(iters, &mut || compress(&mut compressed, &mut scratch)))
        });
        group.bench_function(format!("{name}_decompress"), |b| {
            b.iter_custom(|iters| time(iters, &mut || decompress(&compressed, &mut decompressed, &mut scratch)))
        });
    }
    group.bench_function("crc32", |b| {
        b.iter_custom(|iters| {
            time(iters, &mut || unsafe {
                crc32_async(&gpu, input.chunks(), crcs.view_mut(), stream.ferrocomp()).unwrap()
            })
        })
    });
    group.finish();
}

criterion_group!(benches, kernels);
criterion_main!(benches);

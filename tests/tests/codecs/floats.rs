//! Codecs of floats: ANS over float16, and lossy Bitcomp within its error bound on the CPU and the GPU.

use crate::support::{CHUNK, buffer_codec, cpu_compress, cpu_decompress, gpu_compress, gpu_decompress, lossy_bitcomp};
use ferrocomp::{Ans, AnsDataType, Bitstream, BufferCodec, ChecksumPolicy, Config, Error, Options, Status};
use ferrocomp_tests::gpu;

/// A smooth field of `width`-byte floats with zeros, a NaN and an infinity.
fn float_field(count: usize, width: usize) -> Vec<u8> {
    (0..count)
        .flat_map(|k| {
            let value = match k % 5000 {
                17 => f64::NAN,
                18 => f64::INFINITY,
                100..400 => 0.0,
                _ => 280.0 + 20.0 * (k as f64 / 700.0).sin() + (k % 7) as f64 * 0.013,
            };
            if width == 4 { (value as f32).to_le_bytes().to_vec() } else { value.to_le_bytes().to_vec() }
        })
        .collect()
}

/// Whether every element of `decoded` is within `bound` of `original`'s (non-finite ones equal).
fn within_bound(original: &[u8], decoded: &[u8], width: usize, bound: f32) -> bool {
    let value = |b: &[u8]| {
        if width == 4 {
            f32::from_le_bytes(b.try_into().unwrap()) as f64
        } else {
            f64::from_le_bytes(b.try_into().unwrap())
        }
    };
    original.len() == decoded.len()
        && original.chunks(width).zip(decoded.chunks(width)).all(|(x, y)| {
            let (x, y) = (value(x), value(y));
            if x.is_finite() {
                (x - y).abs() <= bound as f64
            } else {
                x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan()
            }
        })
}

#[test]
fn ans_float16_codes_half_floats_and_takes_even_chunk_sizes() {
    let data: Vec<u8> =
        (0..100_000).flat_map(|k| half::f16::from_f32((k as f32 / 500.0).cos()).to_le_bytes()).collect();
    let options = Options::Ans(Ans { data_type: AnsDataType::Float16 });
    let codec = buffer_codec(options, Bitstream::Native, gpu());
    let compressed = codec.compress(&data).unwrap();
    // The high bytes (sign, exponent, two mantissa bits) coded, the low bytes stored.
    assert!(compressed.len() < data.len() * 85 / 100, "{}", compressed.len());
    assert_eq!(codec.decompress(&compressed).unwrap(), data);
    let odd =
        Config { chunk_size: CHUNK + 1, bitstream: Bitstream::Native, checksum: ChecksumPolicy::NoComputeNoVerify };
    assert!(
        matches!(BufferCodec::new(options, odd, None), Err(Error::InvalidArgument(m)) if m.contains("2-byte values"))
    );
}

#[test]
fn lossy_bitcomp_decodes_within_its_bound_on_the_cpu() {
    for bound in [1e-4, 0.01, 2.0] {
        for codec in lossy_bitcomp(bound) {
            let width = codec.element.width();
            let data = float_field(3 * CHUNK / width + 5, width);
            let native = buffer_codec(Options::Bitcomp(codec), Bitstream::Native, None);
            let compressed = native.compress(&data).unwrap();
            assert!(within_bound(&data, &native.decompress(&compressed).unwrap(), width, bound), "{codec:?}");
            assert!(compressed.len() < data.len() / 2, "{codec:?}: {} bytes", compressed.len());
        }
    }
}

#[test]
fn gpu_lossy_bitcomp_writes_the_cpu_bytes_and_decodes_within_its_bound() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    for codec in lossy_bitcomp(0.001) {
        let width = codec.element.width();
        let data = float_field(4 * CHUNK / width, width);
        let pieces: Vec<&[u8]> = vec![&data[..0], &data[..width], &data[..1000 * width], &data[CHUNK..3 * CHUNK]];
        let on_gpu = gpu_compress(&gpu, &codec, &pieces, &stream);
        for (piece, ours) in pieces.iter().zip(&on_gpu) {
            assert_eq!(*ours, cpu_compress(&codec, piece), "{codec:?}, {} bytes", piece.len());
        }
        let streams: Vec<&[u8]> = on_gpu.iter().map(Vec::as_slice).collect();
        let capacities: Vec<usize> = pieces.iter().map(|p| p.len()).collect();
        for (i, (status, bytes)) in gpu_decompress(&gpu, &codec, &streams, &capacities, &stream).into_iter().enumerate()
        {
            assert_eq!(status, Status::Success, "{codec:?}");
            assert_eq!(bytes, cpu_decompress(&codec, streams[i], capacities[i]).unwrap(), "{codec:?}");
            assert!(within_bound(pieces[i], &bytes, width, 0.001), "{codec:?} chunk {i}");
        }
    }
}

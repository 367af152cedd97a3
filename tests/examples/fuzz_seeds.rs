//! Writes the seed corpora of the fuzz targets (`fuzz/corpus/<target>/`) from real producers:
//! liblz4 and lz4_flex, snappy, zlib and libdeflate at their levels, libzstd, c-blosc, and
//! ferrocomp's own encoders at every level and option. nvCOMP's chunks come from
//! `fuzz/nvcomp_seeds.py`, run on a GPU machine. Each seed is small (a few KiB), so the corpora
//! stay small in the repository; the fuzzer grows its own copies elsewhere (`scripts/fuzz.sh`).
//!
//! `cargo run -p ferrocomp-tests --example fuzz_seeds`

use ferrocomp::container::size_prefix;
use ferrocomp::{
    Algorithm, Ans, AnsDataType, Bitcomp, Bitstream, BufferCodec, ChecksumPolicy, Config, DataType, Deflate,
    ElementType, ErrorBound, GDeflate, Lz4, Options, Shuffle, Snappy, Wrapper, Zstd,
};
use ferrocomp_tests::{c_blosc, int32_bytes, random_bytes, short_repeats_bytes, text_bytes};
use std::io::Write;
use std::path::{Path, PathBuf};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let mut corpus = Corpus { root, written: 0, bytes: 0 };
    let samples = samples();
    let few = &samples[..4];

    for (name, data) in &samples {
        corpus.add("decode_lz4", &format!("liblz4-{name}"), &lz4::block::compress(data, None, false).unwrap());
        // liblz4's optimal parser reads through the dangling pointer of an empty slice.
        if !data.is_empty() {
            let hc = lz4::block::CompressionMode::HIGHCOMPRESSION(12);
            let chunk = lz4::block::compress(data, Some(hc), false).unwrap();
            corpus.add("decode_lz4", &format!("liblz4-hc12-{name}"), &chunk);
        }
        corpus.add("decode_lz4", &format!("lz4_flex-{name}"), &lz4_flex::compress(data));
        corpus.add("decode_snappy", &format!("snappy-{name}"), &snap::raw::Encoder::new().compress_vec(data).unwrap());
        corpus.add("decode_zstd", &format!("libzstd-3-{name}"), &zstd::bulk::compress(data, 3).unwrap());
        for (shuffle, typesize) in [(Shuffle::None, 1), (Shuffle::Byte, 4), (Shuffle::Bit, 8)] {
            for cname in ["blosclz", "lz4", "lz4hc", "zlib", "snappy", "zstd"] {
                let chunk = c_blosc::compress(data, typesize, shuffle, cname, 5, 0);
                corpus.add("decode_blosc", &format!("c-blosc-{cname}-{shuffle:?}-{typesize}-{name}"), &chunk);
            }
        }
    }
    for (name, data) in few {
        for level in [0, 1, 6, 9] {
            let compression = flate2::Compression::new(level);
            let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), compression);
            let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), compression);
            let mut gzip = flate2::GzBuilder::new().filename("seed").comment("fuzz").write(Vec::new(), compression);
            raw.write_all(data).unwrap();
            zlib.write_all(data).unwrap();
            gzip.write_all(data).unwrap();
            corpus.add("decode_deflate", &format!("zlib-{level}-{name}"), &raw.finish().unwrap());
            corpus.add("decode_zlib", &format!("zlib-{level}-{name}"), &zlib.finish().unwrap());
            let member = gzip.finish().unwrap();
            corpus.add("decode_gzip", &format!("gzip-{level}-{name}"), &member);
            corpus.add("decode_gzip", &format!("gzip-two-members-{level}-{name}"), &[&member[..], &member].concat());
        }
        for level in [1, 12] {
            let mut libdeflate = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(level).unwrap());
            let mut out = vec![0; libdeflate.deflate_compress_bound(data.len())];
            let n = libdeflate.deflate_compress(data, &mut out).unwrap();
            corpus.add("decode_deflate", &format!("libdeflate-{level}-{name}"), &out[..n]);
        }
        for level in [-5, 1, 9, 19] {
            corpus.add("decode_zstd", &format!("libzstd-{level}-{name}"), &zstd::bulk::compress(data, level).unwrap());
        }
        let mut checked = zstd::bulk::Compressor::new(1).unwrap();
        checked.include_checksum(true).unwrap();
        checked.include_contentsize(false).unwrap();
        let frame = checked.compress(data).unwrap();
        corpus.add("decode_zstd", &format!("libzstd-checksum-no-size-{name}"), &frame);
        let skippable = [&0x184D_2A50u32.to_le_bytes()[..], &4u32.to_le_bytes(), b"skip"].concat();
        corpus.add("decode_zstd", &format!("libzstd-two-frames-{name}"), &[&frame[..], &skippable, &frame].concat());
    }

    // ferrocomp's own chunks, at every level and over every option, for each decoder; the same
    // options, as the native header writes them, before the round-trip targets' inputs.
    for (index, options) in every_option().into_iter().enumerate() {
        let codec = options.codec();
        let algorithm = options.algorithm();
        let label = format!("{options:?}").replace(|c: char| !c.is_ascii_alphanumeric(), "");
        for (name, data) in few {
            let data = &data[..data.len() - data.len() % codec.value_width()];
            let mut chunk = vec![0; codec.max_compressed_chunk_size(data.len())];
            let n = codec.compress_cpu(data, &mut chunk).unwrap();
            chunk.truncate(n);
            corpus.add(decode_target(options), &format!("ferrocomp-{label}-{name}"), &chunk);
            let prefixed = [&options.to_bytes()[..], data].concat();
            corpus.add(&format!("roundtrip_{}", algorithm.name()), &format!("{label}-{name}"), &prefixed);
            if *name == "text" {
                let sized = [&[algorithm as u8][..], &options.to_bytes(), &size_prefix(data.len() as u64), &chunk];
                corpus.add("container_with_size", &format!("{label}-{name}"), &sized.concat());
            }
        }
        // The container with and without checksums, both versions, and the same as the input of
        // the native round trip.
        let (name, data) = &samples[0];
        let data = &data[..data.len() - data.len() % codec.value_width()];
        let (policy, checksum) = [ChecksumPolicy::NoComputeNoVerify, ChecksumPolicy::ComputeAndVerify]
            .into_iter()
            .enumerate()
            .nth(index % 2)
            .unwrap();
        let config = Config { chunk_size: 1024, bitstream: Bitstream::Native, checksum };
        let codec = BufferCodec::new(options, config, None).unwrap().with_segment_size(2048).unwrap();
        let mut streamed = Vec::new();
        codec.compress_stream(data, &mut streamed, &mut |_| {}).unwrap();
        corpus.add("container_native", &format!("v1-{label}-{policy}-{name}"), &codec.compress(data).unwrap());
        corpus.add("container_native", &format!("v2-{label}-{policy}-{name}"), &streamed);
        let head = [&[algorithm as u8, 4, policy as u8 * 4][..], &options.to_bytes(), data].concat();
        corpus.add("roundtrip_native", &format!("{label}-{policy}-{name}"), &head);
    }
    println!("wrote {} seeds, {} bytes, under {}", corpus.written, corpus.bytes, corpus.root.display());
}

/// The decode target that reads chunks of `options`.
fn decode_target(options: Options) -> &'static str {
    match options {
        Options::Lz4(_) => "decode_lz4",
        Options::Snappy(_) => "decode_snappy",
        Options::Deflate(Deflate { wrapper: Wrapper::Raw, .. }) => "decode_deflate",
        Options::Deflate(Deflate { wrapper: Wrapper::Zlib, .. }) => "decode_zlib",
        Options::Deflate(Deflate { wrapper: Wrapper::Gzip, .. }) => "decode_gzip",
        Options::GDeflate(_) => "decode_gdeflate",
        Options::Blosc(_) => "decode_blosc",
        Options::Zstd(_) => "decode_zstd",
        Options::Cascaded(_) => "decode_cascaded",
        Options::Bitcomp(_) => "decode_bitcomp",
        Options::Ans(_) => "decode_ans",
    }
}

/// Every level of every codec, and a spread of each codec's other options.
fn every_option() -> Vec<Options> {
    let mut all = Vec::new();
    for data_type in [DataType::Char, DataType::Int] {
        all.push(Options::Lz4(Lz4 { data_type }));
        all.push(Options::Snappy(Snappy { data_type }));
    }
    for level in Deflate::LEVELS {
        for wrapper in [Wrapper::Raw, Wrapper::Zlib, Wrapper::Gzip] {
            all.push(Options::Deflate(Deflate { level, wrapper }));
        }
        all.push(Options::GDeflate(GDeflate { level }));
    }
    all.extend(Zstd::LEVELS.map(|level| Options::Zstd(Zstd { level })));
    for (typesize, shuffle) in [(1, Shuffle::None), (4, Shuffle::Byte), (8, Shuffle::Bit)] {
        all.push(Options::Blosc(ferrocomp::Blosc { typesize, shuffle }));
    }
    for element in ElementType::ALL {
        all.push(Options::Cascaded(ferrocomp::Cascaded { element, ..Default::default() }));
        all.push(Options::Bitcomp(Bitcomp { element, sparse: element.width() > 2, error_bound: None }));
    }
    for (rles, deltas, bitpack, auto) in [(0, 0, true, false), (4, 4, true, false), (1, 2, false, true)] {
        all.push(Options::Cascaded(ferrocomp::Cascaded { element: ElementType::I16, rles, deltas, bitpack, auto }));
    }
    for element in [ElementType::U32, ElementType::I64] {
        let error_bound = ErrorBound::new(0.01);
        all.push(Options::Bitcomp(Bitcomp { element, sparse: false, error_bound }));
    }
    for data_type in [AnsDataType::Bytes, AnsDataType::Float16, AnsDataType::Float32, AnsDataType::Float8] {
        all.push(Options::Ans(Ans { data_type }));
    }
    assert!(Algorithm::ALL.iter().all(|&a| all.iter().any(|o| o.algorithm() == a)));
    all
}

/// Small inputs of the kinds the bench measures, the first four the most telling.
fn samples() -> Vec<(&'static str, Vec<u8>)> {
    let floats = (0..512).flat_map(|i| ((i as f32) / 40.0).sin().to_le_bytes()).collect();
    vec![
        ("text", text_bytes(2048, 1)),
        ("int32", int32_bytes(2048)),
        ("float32", floats),
        ("repeats", short_repeats_bytes(2048, 2)),
        ("zeros", vec![0; 1024]),
        ("random", random_bytes(512, 3)),
        ("one-byte", vec![b'x']),
        ("empty", Vec::new()),
    ]
}

/// The corpus directories being written.
struct Corpus {
    root: PathBuf,
    written: usize,
    bytes: usize,
}

impl Corpus {
    /// Writes `seed` as `target`'s seed `name`.
    fn add(&mut self, target: &str, name: &str, seed: &[u8]) {
        let dir = self.root.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), seed).unwrap();
        self.written += 1;
        self.bytes += seed.len();
    }
}

//! The checks behind the fuzz targets in `fuzz_targets/`: one target per decoder, container
//! parser and encoder, each naming its codec and calling one function here. Each panics on
//! anything a decoder must never do: disagree with itself, with the CPU library beside it, or
//! with the limits it states (docs/FORMAT.md, "Limits"). `scripts/fuzz.sh` runs them all.
//!
//! Inputs that choose options start with the 8 option bytes of the native header
//! ([`Options::from_bytes`]), so the fuzzer reaches every level and option the container can name.

use std::cell::Cell;
use std::sync::OnceLock;
use std::thread::LocalKey;

use ferrocomp::container::SIZE_PREFIX_LEN;
use ferrocomp::{
    Algorithm, Bitstream, BufferCodec, ChecksumPolicy, Config, Deflate, Options, Status, Wrapper, describe,
};

/// Every fuzz target: `fuzz_targets/<name>.rs` runs `<name>`, and `by_name` the one `$FUZZ_TARGET`
/// names.
pub const TARGETS: [(&str, Target); 23] = [
    ("container_native", native),
    ("container_with_size", with_size),
    ("decode_ans", |d| decode(Options::Ans(Default::default()), d)),
    ("decode_bitcomp", |d| decode(Options::Bitcomp(Default::default()), d)),
    ("decode_blosc", |d| decode(Options::Blosc(Default::default()), d)),
    ("decode_cascaded", |d| decode(Options::Cascaded(Default::default()), d)),
    ("decode_deflate", |d| decode(deflate(Wrapper::Raw), d)),
    ("decode_gdeflate", |d| decode(Options::GDeflate(Default::default()), d)),
    ("decode_gzip", |d| decode(deflate(Wrapper::Gzip), d)),
    ("decode_lz4", |d| decode(Options::Lz4(Default::default()), d)),
    ("decode_snappy", |d| decode(Options::Snappy(Default::default()), d)),
    ("decode_zlib", |d| decode(deflate(Wrapper::Zlib), d)),
    ("decode_zstd", |d| decode(Options::Zstd(Default::default()), d)),
    ("roundtrip_ans", |d| round_trip(Algorithm::Ans, d)),
    ("roundtrip_bitcomp", |d| round_trip(Algorithm::Bitcomp, d)),
    ("roundtrip_blosc", |d| round_trip(Algorithm::Blosc, d)),
    ("roundtrip_cascaded", |d| round_trip(Algorithm::Cascaded, d)),
    ("roundtrip_deflate", |d| round_trip(Algorithm::Deflate, d)),
    ("roundtrip_gdeflate", |d| round_trip(Algorithm::GDeflate, d)),
    ("roundtrip_lz4", |d| round_trip(Algorithm::Lz4, d)),
    ("roundtrip_native", native_round_trip),
    ("roundtrip_snappy", |d| round_trip(Algorithm::Snappy, d)),
    ("roundtrip_zstd", |d| round_trip(Algorithm::Zstd, d)),
];

/// A fuzz target: what it does with one input.
pub type Target = fn(&[u8]);

/// Runs target `name` on `data`.
pub fn run(name: &str, data: &[u8]) {
    target(name).unwrap_or_else(|| panic!("no fuzz target {name}"))(data)
}

/// The target called `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|&(_, f)| f)
}

/// Most bytes a decode target lets a chunk decode to. A larger declared size is still checked
/// against the codec's bound, and the chunk decoded into a smaller room.
const MAX_ROOM: usize = 1 << 24;

/// Room given to a chunk whose size walk failed: enough to see a decoder succeed where the walk
/// did not.
const ROOM_WITHOUT_SIZE: usize = 1 << 16;

/// Deflate in `wrapper`, at the default level.
pub fn deflate(wrapper: Wrapper) -> Options {
    Options::Deflate(Deflate { wrapper, ..Default::default() })
}

/// Decodes `data` as one chunk of `options` every way the CPU can. The size walk, the scalar
/// decoder (the GPU kernels' oracle) and the CPU library must agree, stay within the codec's
/// bound on output, and refuse a room one byte short.
pub fn decode(options: Options, data: &[u8]) {
    let codec = options.codec();
    let bound = codec.max_decompressed_size(data.len());
    let size = codec.decompressed_size_cpu(data);
    if let Ok(n) = size {
        assert!(n <= bound, "{} compressed bytes walk to {n}, over the bound {bound}", data.len());
    }
    let room = match size {
        Ok(n) if n <= MAX_ROOM => n,
        _ => bound.min(ROOM_WITHOUT_SIZE),
    };
    let (mut out, mut library_out) = (room_of(&OUT, room), room_of(&LIBRARY_OUT, room));
    let decoded = codec.decompress_scalar(data, &mut out);
    match decoded {
        Ok(n) => assert_eq!(size, Ok(n), "the size walk and the decoder disagree"),
        Err(Status::OutputTooSmall) => {
            assert!(!matches!(size, Ok(n) if n <= MAX_ROOM), "a room of the walked size is too small")
        }
        Err(_) => {}
    }
    if let Some(n) = codec.decompress_library(data, &mut library_out) {
        assert_eq!(decoded, Ok(n), "the library decodes what the scalar decoder does not");
        assert!(library_out[..n] == out[..n], "the library and the scalar decoder write different bytes");
    }
    if let Ok(n @ 1..) = decoded {
        let short = n - 1;
        assert_eq!(codec.decompress_scalar(data, &mut out[..short]), Err(Status::OutputTooSmall));
        assert_eq!(codec.decompress_library(data, &mut library_out[..short]), None);
    }
    OUT.set(out);
    LIBRARY_OUT.set(library_out);
}

thread_local! {
    /// The rooms [`decode`] decodes into, kept between inputs: a fresh mapping per input would
    /// cost more than the decoding. What they held before never shows: only the bytes a decoder
    /// reports writing are compared.
    static OUT: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    static LIBRARY_OUT: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// `room` bytes of the buffer kept in `kept`, taken out of it (and put back by the caller).
fn room_of(kept: &'static LocalKey<Cell<Vec<u8>>>, room: usize) -> Vec<u8> {
    let mut buffer = kept.take();
    buffer.resize(room, 0);
    buffer
}

/// Compresses the input after its 8 option bytes with `algorithm` on the CPU, and checks that
/// it fits the codec's bound, passes every check of [`decode`], and decodes to the input (or,
/// lossy, within the error bound).
pub fn round_trip(algorithm: Algorithm, data: &[u8]) {
    let Some((options, input)) = with_options(algorithm, data) else { return };
    let codec = options.codec();
    let input = &input[..input.len() - input.len() % codec.value_width()];
    if input.len() > codec.max_chunk_size() {
        return;
    }
    let mut compressed = vec![0; codec.max_compressed_chunk_size(input.len())];
    let n = codec
        .compress_cpu(input, &mut compressed)
        .unwrap_or_else(|status| panic!("compressing {} bytes with {options:?}: {status:?}", input.len()));
    let compressed = &compressed[..n];
    decode(options, compressed);
    let mut out = vec![0; input.len()];
    assert_eq!(codec.decompress_cpu(compressed, &mut out), Ok(input.len()));
    match options {
        Options::Bitcomp(bitcomp) if !codec.lossless() => {
            let bound = bitcomp.error_bound.expect("a lossy codec's bound").get();
            assert_within_bound(input, &out, bitcomp.element.width(), bound)
        }
        _ => assert!(out == input, "{options:?} decodes other bytes than it was given"),
    }
}

/// Decodes `data` as a native container (either version), whole and streamed, and checks that
/// both ways, the size from the headers and [`describe`] agree.
pub fn native(data: &[u8]) {
    static CODEC: OnceLock<BufferCodec> = OnceLock::new();
    let codec = CODEC.get_or_init(|| {
        BufferCodec::new(Options::default(), Config::default(), None)
            .and_then(|codec| codec.with_segment_size(1 << 16))
            .expect("a CPU codec")
    });
    let whole = codec.decompress(data);
    let mut streamed = Vec::new();
    let stream = codec.decompress_stream(data, &mut streamed, &mut |_| {});
    match &whole {
        Ok(out) => {
            let totals = stream.expect("the stream fails where the whole buffer decodes");
            assert!(streamed == *out && totals.uncompressed == out.len() as u64);
            assert_eq!(codec.decompressed_size(data).ok(), Some(out.len()));
            let description = describe(data).expect("a container that decodes is described");
            assert_eq!(description.uncompressed, out.len() as u64);
            assert_eq!(description.compressed, data.len() as u64);
        }
        Err(_) => assert!(stream.is_err(), "the stream decodes where the whole buffer fails"),
    }
}

/// Decodes the input after an algorithm id and 8 option bytes as nvCOMP's two single-chunk
/// bitstreams: with its size prefix (the uncompressed size, then reserved bytes) before it, and raw. Each must agree with [`decode`]'s
/// scalar decoder, and the size prefix with what decodes.
pub fn with_size(data: &[u8]) {
    let Some((&id, rest)) = data.split_first() else { return };
    let Some(algorithm) = Algorithm::from_id(id) else { return };
    let Some((options, stream)) = with_options(algorithm, rest) else { return };
    let single = |bitstream| {
        let config = Config { bitstream, ..Config::default() };
        BufferCodec::new(options, config, None).expect("a CPU codec").decompress(stream)
    };
    if let Ok(out) = single(Bitstream::WithUncompressedSize) {
        let declared = u64::from_le_bytes(stream[..8].try_into().unwrap());
        assert_eq!(out.len() as u64, declared, "decoded other than the size prefix says");
        assert_eq!(scalar(options, &stream[SIZE_PREFIX_LEN..], out.len()).as_deref(), Ok(out.as_slice()));
    }
    if let Ok(out) = single(Bitstream::Raw) {
        assert_eq!(scalar(options, stream, out.len()).as_deref(), Ok(out.as_slice()));
    }
}

/// Compresses the input after an algorithm id, 8 option bytes, a chunk size and a checksum
/// policy into the native container, whole (version 1) and streamed (version 2) in small
/// segments, and checks that both decode to the input. Reading containers every other way is
/// [`native`]'s work, which would slow this one down.
pub fn native_round_trip(data: &[u8]) {
    let Some((&[id, chunk_log, policy], rest)) = data.split_first_chunk::<3>() else { return };
    let Some(algorithm) = Algorithm::from_id(id) else { return };
    let Some((options, input)) = with_options(algorithm, rest) else { return };
    let codec = options.codec();
    let input = &input[..input.len() - input.len() % codec.value_width()];
    let policies = [
        ChecksumPolicy::NoComputeNoVerify,
        ChecksumPolicy::ComputeAndNoVerify,
        ChecksumPolicy::NoComputeAndVerifyIfPresent,
        ChecksumPolicy::ComputeAndVerifyIfPresent,
        ChecksumPolicy::ComputeAndVerify,
    ];
    let config = Config {
        chunk_size: 64 << (chunk_log % 10),
        bitstream: Bitstream::Native,
        checksum: policies[policy as usize % policies.len()],
    };
    let segment_size = config.chunk_size << (chunk_log / 10 % 4);
    let codec = BufferCodec::new(options, config, None)
        .and_then(|codec| codec.with_segment_size(segment_size))
        .expect("a CPU codec");
    let whole = codec.compress(input).expect("compressing a buffer");
    let mut streamed = Vec::new();
    codec.compress_stream(input, &mut streamed, &mut |_| {}).expect("compressing a stream");
    for compressed in [&whole, &streamed] {
        let out = codec.decompress(compressed).expect("decoding what was compressed");
        if options.codec().lossless() {
            assert!(out == input, "{options:?} decodes other bytes than it was given");
        } else {
            assert_eq!(out.len(), input.len());
        }
    }
}

/// The options the first 8 bytes of `data` name for `algorithm`, and the bytes after them.
fn with_options(algorithm: Algorithm, data: &[u8]) -> Option<(Options, &[u8])> {
    let (options, rest) = data.split_first_chunk::<8>()?;
    Some((Options::from_bytes(algorithm, *options).ok()?, rest))
}

/// What the scalar decoder makes of `chunk` in a room of `room` bytes.
fn scalar(options: Options, chunk: &[u8], room: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0; room];
    let n = options.codec().decompress_scalar(chunk, &mut out)?;
    out.truncate(n);
    Ok(out)
}

/// Panics unless every `width`-byte float of `decoded` is within `bound` of `original`'s
/// (non-finite ones kept as they were).
fn assert_within_bound(original: &[u8], decoded: &[u8], width: usize, bound: f32) {
    let value = |bytes: &[u8]| match width {
        4 => f32::from_le_bytes(bytes.try_into().unwrap()) as f64,
        _ => f64::from_le_bytes(bytes.try_into().unwrap()),
    };
    for (i, (x, y)) in original.chunks_exact(width).zip(decoded.chunks_exact(width)).enumerate() {
        let (x, y) = (value(x), value(y));
        let kept = if x.is_finite() {
            (x - y).abs() <= bound as f64
        } else {
            x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan()
        };
        assert!(kept, "element {i}: {x} decoded as {y}, outside the bound {bound}");
    }
    let tail = original.len() / width * width;
    assert!(original[tail..] == decoded[tail..], "the bytes after the last whole element changed");
}

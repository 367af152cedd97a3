//! The limits docs/FORMAT.md ("Limits") states, each tested at its edge and beyond: the most a
//! decoder produces from `n` compressed bytes, the largest chunk, and the memory the host path
//! allocates before it has checked a header.

use ferrocomp::container::{MAX_BLOCK_CHUNKS, SIZE_PREFIX_LEN, size_prefix};
use ferrocomp::{
    Ans, Bitcomp, Bitstream, BufferCodec, Cascaded, ChunkListCodec, Config, Deflate, Error, GDeflate, Options, Snappy,
    Wrapper, Zstd,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts the largest single allocation, on every thread.
struct Largest;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Largest {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Largest = Largest;

/// Held by each test, so that one test's allocations are not counted in another's.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The largest single allocation `f` makes, on any thread.
fn largest_allocation(f: impl FnOnce()) -> usize {
    LARGEST.store(0, Ordering::Relaxed);
    f();
    LARGEST.load(Ordering::Relaxed)
}

/// One codec of each algorithm, at its default options.
fn one_of_each() -> Vec<Options> {
    vec![
        Options::default(),
        Options::Snappy(Snappy::default()),
        Options::Deflate(Deflate::default()),
        Options::Deflate(Deflate { wrapper: Wrapper::Gzip, ..Deflate::default() }),
        Options::GDeflate(GDeflate::default()),
        Options::Blosc(Default::default()),
        Options::Zstd(Zstd::default()),
        Options::Cascaded(Cascaded::default()),
        Options::Bitcomp(Bitcomp::default()),
        Options::Ans(Ans::default()),
    ]
}

fn compress_chunk(options: Options, data: &[u8]) -> Vec<u8> {
    let codec = options.codec();
    let mut out = vec![0; codec.max_compressed_chunk_size(data.len())];
    let n = codec.compress_cpu(data, &mut out).unwrap();
    out.truncate(n);
    out
}

#[test]
fn the_most_compressible_chunks_of_every_producer_are_within_the_output_bound() {
    let _serial = ONE_AT_A_TIME.lock().unwrap();
    let mut chunks: Vec<(Options, Vec<u8>, &str, usize)> = Vec::new();
    for options in one_of_each() {
        // The largest chunk of zeros each encoder takes (Blosc's, 2 GiB, stands at 16 MiB).
        let n = options.codec().max_chunk_size().min(16 << 20);
        chunks.push((options, compress_chunk(options, &vec![0; n]), "ferrocomp", n));
    }
    let zeros = vec![0u8; 16 << 20];
    chunks.push((Options::default(), lz4_flex::block::compress(&zeros), "lz4_flex", zeros.len()));
    let snappy = snap::raw::Encoder::new().compress_vec(&zeros).unwrap();
    chunks.push((Options::Snappy(Snappy::default()), snappy, "snappy", zeros.len()));
    chunks.push((
        Options::Zstd(Zstd::default()),
        zstd::bulk::compress(&zeros, 19).unwrap(),
        "libzstd -19",
        zeros.len(),
    ));
    let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    deflate.write_all(&zeros[..64 << 10]).unwrap();
    chunks.push((Options::Deflate(Deflate::default()), deflate.finish().unwrap(), "zlib -9", 64 << 10));
    for (options, chunk, producer, n) in chunks {
        let codec = options.codec();
        let bound = codec.max_decompressed_size(chunk.len());
        assert!(n <= bound, "{producer}'s {options:?} chunk of {n} zeros is {} bytes, bound {bound}", chunk.len());
        assert_eq!(codec.decompressed_size_cpu(&chunk), Ok(n), "{producer} {options:?}");
    }
}

#[test]
fn chunks_over_the_largest_are_refused_and_the_largest_round_trips() {
    let _serial = ONE_AT_A_TIME.lock().unwrap();
    for options in one_of_each() {
        let codec = ChunkListCodec::new(options, Bitstream::Raw, None).unwrap();
        let max = codec.max_chunk_size();
        // Untouched zero pages: the input costs no memory until read, and it is never read.
        let over = vec![0u8; max + 1];
        let mut room = vec![0u8; 64];
        let refused = codec.compress_cpu(&[&over], &mut [&mut room]).remove(0);
        let expected = format!("chunk 0: {} bytes is over the {max}-byte chunk limit", max + 1);
        assert!(matches!(&refused, Err(Error::InvalidArgument(what)) if what.starts_with(&expected)), "{refused:?}");
        if max <= 16 << 20 {
            let largest: Vec<u8> = (0..max).map(|i| (i % 251) as u8).collect();
            let chunk = compress_chunk(options, &largest);
            let mut out = vec![0; max];
            assert_eq!(options.codec().decompress_cpu(&chunk, &mut out), Ok(max), "{options:?}");
            assert!(out == largest, "{options:?}");
        }
    }
}

#[test]
fn sizes_declared_over_the_bound_are_refused_before_decoding() {
    let _serial = ONE_AT_A_TIME.lock().unwrap();
    for options in one_of_each() {
        let chunk = compress_chunk(options, b"a few bytes, a few bytes, a few bytes");
        let bound = options.codec().max_decompressed_size(chunk.len()) as u64;
        let codec = |bitstream| BufferCodec::new(options, Config { bitstream, ..Config::default() }, None).unwrap();
        let with_size = codec(Bitstream::WithUncompressedSize);
        for declared in [bound + 1, u64::MAX] {
            let stream = [&size_prefix(declared)[..], &chunk].concat();
            let refused = with_size.decompress(&stream);
            let expected = format!("{} compressed bytes cannot hold {declared} bytes", chunk.len());
            assert!(matches!(&refused, Err(Error::Container(what)) if *what == expected), "{refused:?}");
        }
    }
}

/// The most the host allocates at once before it has checked the header it would size memory by
/// (docs/FORMAT.md, "Limits").
const BEFORE_A_HEADER_IS_CHECKED: usize = 64 << 10;

#[test]
fn the_host_allocates_little_before_it_has_checked_a_header() {
    let _serial = ONE_AT_A_TIME.lock().unwrap();
    let data = b"the host reads a header before it trusts it; ".repeat(64);
    for options in one_of_each() {
        let codec = |bitstream| {
            let config = Config { chunk_size: 1024, bitstream, ..Config::default() };
            BufferCodec::new(options, config, None).unwrap()
        };
        let (native, with_size, raw) =
            (codec(Bitstream::Native), codec(Bitstream::WithUncompressedSize), codec(Bitstream::Raw));
        let container = native.compress(&data).unwrap();
        let mut streamed = Vec::new();
        native.compress_stream(&data[..], &mut streamed, &mut |_| {}).unwrap();
        assert!(native.decompress(&container).unwrap() == data); // warm: thread pools and per-thread tables
        let chunk = &with_size.compress(&data).unwrap()[SIZE_PREFIX_LEN..];
        for (what, lying) in lying_containers(&container, &streamed) {
            let largest = largest_allocation(|| {
                assert!(native.decompress(&lying).is_err(), "{options:?} {what}");
                let mut sink = Vec::new();
                assert!(native.decompress_stream(&lying[..], &mut sink, &mut |_| {}).is_err(), "{options:?} {what}");
            });
            assert!(largest <= BEFORE_A_HEADER_IS_CHECKED, "{options:?} {what}: allocated {largest} bytes");
        }
        for declared in [u64::MAX, 1 << 40, data.len() as u64 + 1] {
            let lying = [&size_prefix(declared)[..], chunk].concat();
            let largest = largest_allocation(|| assert!(with_size.decompress(&lying).is_err()));
            assert!(largest <= BEFORE_A_HEADER_IS_CHECKED, "{options:?} declaring {declared}: {largest} bytes");
        }
        // A chunk's own header, where it has one: the size Snappy's preamble and Blosc's,
        // Cascaded's, Bitcomp's and ANS's headers state.
        let mut lying = chunk.to_vec();
        lying[..5].copy_from_slice(&[0xFF; 5]);
        lying[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        let mut decoded = 0;
        let largest = largest_allocation(|| decoded = raw.decompress(&lying).map_or(0, |out| out.len()));
        assert!(largest <= BEFORE_A_HEADER_IS_CHECKED.max(decoded), "{options:?} raw: {largest} bytes");
    }
}

/// Containers whose headers lie, each named: sizes, counts and tables past what the bytes hold.
fn lying_containers(native: &[u8], streamed: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let patch = |bytes: &[u8], at: usize, value: &[u8]| {
        let mut lying = bytes.to_vec();
        lying[at..at + value.len()].copy_from_slice(value);
        lying
    };
    let block_count = (MAX_BLOCK_CHUNKS as u32).to_le_bytes();
    vec![
        ("v1 total u64::MAX", patch(native, 16, &u64::MAX.to_le_bytes())),
        ("v1 chunk size u32::MAX", patch(native, 24, &u32::MAX.to_le_bytes())),
        ("v1 chunk count u32::MAX", patch(native, 28, &u32::MAX.to_le_bytes())),
        ("v1 first chunk u32::MAX bytes", patch(native, 32, &u32::MAX.to_le_bytes())),
        ("v2 chunk size u32::MAX", patch(streamed, 16, &u32::MAX.to_le_bytes())),
        ("v2 block of the most chunks", patch(streamed, 24, &block_count)),
        ("v2 block of u32::MAX chunks", patch(streamed, 24, &u32::MAX.to_le_bytes())),
        ("v2 last chunk u32::MAX bytes", patch(streamed, 28, &u32::MAX.to_le_bytes())),
        ("v2 first chunk u32::MAX bytes", patch(streamed, 32, &u32::MAX.to_le_bytes())),
    ]
}

//! The CPU path: containers, checksum policies, interop with lz4_flex and liblz4, bad input.

use ferrocomp::container::size_prefix;
use ferrocomp::{Bitstream, BufferCodec, ChecksumPart, ChecksumPolicy, Config, DataType, Error, Lz4, Options, Status};
use ferrocomp_tests::{random_bytes, text_bytes};

const CHUNK: usize = 4096;

fn codec(bitstream: Bitstream, checksum: ChecksumPolicy) -> BufferCodec {
    BufferCodec::new(Options::default(), Config { chunk_size: CHUNK, bitstream, checksum }, None).unwrap()
}

fn sizes() -> [usize; 7] {
    [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 17, 300_000]
}

#[test]
fn native_round_trips_at_chunk_edges() {
    let codec = codec(Bitstream::Native, ChecksumPolicy::ComputeAndVerify);
    for n in sizes() {
        for data in [random_bytes(n, 1), text_bytes(n, 2)] {
            let compressed = codec.compress(&data).unwrap();
            let frame = codec.read_frame(&compressed).unwrap();
            assert_eq!((frame.total_size, frame.count()), (n, n.div_ceil(CHUNK)));
            assert_eq!(codec.decompress(&compressed).unwrap(), data, "{n} bytes");
        }
    }
}

#[test]
fn single_chunk_bitstreams_are_plain_lz4_blocks() {
    for n in sizes() {
        let data = text_bytes(n, 3);
        let raw = codec(Bitstream::Raw, ChecksumPolicy::default()).compress(&data).unwrap();
        assert_eq!(lz4_flex::block::decompress(&raw, n).unwrap(), data);
        assert_eq!(lz4::block::decompress(&raw, Some(n as i32)).unwrap(), data);
        assert_eq!(codec(Bitstream::Raw, ChecksumPolicy::default()).decompress(&raw).unwrap(), data);

        let sized = codec(Bitstream::WithUncompressedSize, ChecksumPolicy::default()).compress(&data).unwrap();
        // nvCOMP 6's prefix: the size as a u64, then eight zero bytes.
        assert_eq!(sized[..8], (n as u64).to_le_bytes());
        assert_eq!(sized[8..16], [0; 8]);
        assert_eq!(sized[16..], raw[..]);
        assert_eq!(codec(Bitstream::WithUncompressedSize, ChecksumPolicy::default()).decompress(&sized).unwrap(), data);
    }
}

#[test]
fn cpu_libraries_blocks_decode_here() {
    let data = text_bytes(1 << 20, 4);
    let raw = codec(Bitstream::Raw, ChecksumPolicy::default());
    let blocks = [
        lz4_flex::block::compress(&data),
        lz4::block::compress(&data, None, false).unwrap(),
        lz4::block::compress(&data, Some(lz4::block::CompressionMode::FAST(8)), false).unwrap(),
        lz4::block::compress(&data, Some(lz4::block::CompressionMode::HIGHCOMPRESSION(9)), false).unwrap(),
    ];
    for block in blocks {
        assert_eq!(raw.decompress(&block).unwrap(), data);
    }
}

#[test]
fn checksum_policies_write_and_check_as_named() {
    let data = text_bytes(5 * CHUNK, 5);
    let with = codec(Bitstream::Native, ChecksumPolicy::ComputeAndNoVerify).compress(&data).unwrap();
    let without = codec(Bitstream::Native, ChecksumPolicy::NoComputeNoVerify).compress(&data).unwrap();
    assert_eq!(with.len(), without.len() + 2 * 4 * 5);
    let frame = codec(Bitstream::Native, ChecksumPolicy::default()).read_frame(&with).unwrap();
    let expected: Vec<u32> = data.chunks(CHUNK).map(crc32fast::hash).collect();
    assert_eq!(frame.checksums.uncompressed.as_deref(), Some(&expected[..]));

    // Chunk 3's stored uncompressed CRC, altered.
    let mut bad = with.clone();
    let at = ferrocomp::container::FIXED_HEADER_LEN + 4 * 5 + 4 * 3;
    bad[at] ^= 1;
    for policy in [ChecksumPolicy::ComputeAndVerify, ChecksumPolicy::NoComputeAndVerifyIfPresent] {
        match codec(Bitstream::Native, policy).decompress(&bad) {
            Err(Error::ChecksumMismatch { chunk: 3, part: ChecksumPart::Uncompressed, .. }) => {}
            other => panic!("{policy:?}: {other:?}"),
        }
    }
    assert_eq!(codec(Bitstream::Native, ChecksumPolicy::ComputeAndNoVerify).decompress(&bad).unwrap(), data);
    assert!(matches!(
        codec(Bitstream::Native, ChecksumPolicy::ComputeAndVerify).decompress(&without),
        Err(Error::ChecksumMissing(_))
    ));
    assert_eq!(codec(Bitstream::Native, ChecksumPolicy::ComputeAndVerifyIfPresent).decompress(&without).unwrap(), data);
}

#[test]
fn a_changed_compressed_byte_is_caught_and_named() {
    // Chunk 2 is incompressible, so it is all literals: changing one still decodes.
    let mut data = text_bytes(4 * CHUNK, 6);
    data[2 * CHUNK..3 * CHUNK].copy_from_slice(&random_bytes(CHUNK, 7));
    let codec = codec(Bitstream::Native, ChecksumPolicy::ComputeAndVerify);
    let mut compressed = codec.compress(&data).unwrap();
    let frame = codec.read_frame(&compressed).unwrap();
    let offsets = frame.compressed_offsets();
    compressed[offsets[2] + 100] ^= 0x40;
    match codec.decompress(&compressed) {
        Err(Error::ChecksumMismatch { chunk: 2, part: ChecksumPart::Compressed, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn data_types_align_matches_and_round_trip() {
    let values: Vec<u8> = (0..20_000u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
    for data_type in [DataType::Char, DataType::Short, DataType::Int, DataType::LongLong] {
        let options = Options::Lz4(Lz4 { data_type });
        let codec = BufferCodec::new(options, Config::default(), None).unwrap();
        let compressed = codec.compress(&values).unwrap();
        assert_eq!(codec.read_frame(&compressed).unwrap().options, options);
        // Native streams name their options: a default codec decodes them.
        let plain = BufferCodec::new(Options::default(), Config::default(), None).unwrap();
        assert_eq!(plain.decompress(&compressed).unwrap(), values, "{data_type:?}");
    }
}

#[test]
fn corrupt_and_lying_native_streams_are_refused() {
    let codec = codec(Bitstream::Native, ChecksumPolicy::default());
    let data = text_bytes(3 * CHUNK + 5, 8);
    let good = codec.compress(&data).unwrap();
    let container = |e: Result<Vec<u8>, Error>| matches!(e, Err(Error::Container(_)));

    assert!(container(codec.decompress(&[])));
    assert!(container(codec.decompress(&good[..20])));
    assert!(container(codec.decompress(&good[..good.len() - 1])), "truncated data");
    let mut magic = good.clone();
    magic[0] = b'X';
    assert!(container(codec.decompress(&magic)));
    let mut huge = good.clone();
    huge[16..24].copy_from_slice(&(1u64 << 50).to_le_bytes()); // total size
    assert!(container(codec.decompress(&huge)));
    let mut count = good.clone();
    count[28..32].copy_from_slice(&u32::MAX.to_le_bytes()); // chunk count
    assert!(container(codec.decompress(&count)));
    let mut chunk = good.clone();
    chunk[24..28].copy_from_slice(&0u32.to_le_bytes()); // chunk size
    assert!(container(codec.decompress(&chunk)));
    let mut table = good.clone();
    table[32..36].copy_from_slice(&1u32.to_le_bytes()); // first chunk's compressed size
    assert!(container(codec.decompress(&table)));
    let mut algorithm = good.clone();
    algorithm[5] = 200;
    assert!(container(codec.decompress(&algorithm)));
}

#[test]
fn corrupt_chunk_data_names_the_chunk() {
    let codec = codec(Bitstream::Native, ChecksumPolicy::default());
    let mut data = text_bytes(4 * CHUNK, 9);
    data[CHUNK..2 * CHUNK].copy_from_slice(&b"abcdefgh".repeat(CHUNK / 8));
    let good = codec.compress(&data).unwrap();
    let offsets = codec.read_frame(&good).unwrap().compressed_offsets();
    // Chunk 1 starts with 8 literals and a match: point the match before the chunk's start.
    let mut bad = good.clone();
    let token = bad[offsets[1]] as usize;
    let literals = token >> 4;
    assert_eq!(literals, 8);
    bad[offsets[1] + 1 + literals] = 0xFF;
    bad[offsets[1] + 2 + literals] = 0xFF;
    match codec.decompress(&bad) {
        Err(Error::Chunk { chunk: 1, status: Status::BadOffset }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn raw_streams_of_garbage_are_refused() {
    let raw = codec(Bitstream::Raw, ChecksumPolicy::default());
    assert!(matches!(raw.decompress(&[0xF0, 0xFF]), Err(Error::Chunk { chunk: 0, status: Status::Truncated })));
    let sized = codec(Bitstream::WithUncompressedSize, ChecksumPolicy::default());
    let lying = [&size_prefix(1 << 40)[..], &[0x10, b'a']].concat();
    let refused = sized.decompress(&lying);
    assert!(matches!(&refused, Err(Error::Container(what)) if what.contains("cannot hold")), "{refused:?}");
    let too_short = sized.decompress(&lying[..15]);
    assert!(matches!(&too_short, Err(Error::Container(what)) if what.contains("too short")), "{too_short:?}");
    let short = [&size_prefix(2)[..], &[0x10, b'a']].concat();
    assert!(matches!(sized.decompress(&short), Err(Error::ChunkSize { chunk: 0, expected: 2, actual: 1 })));
}

#[test]
fn oversized_single_chunk_input_is_refused() {
    let big = vec![0u8; (1 << 24) + 1];
    assert!(matches!(codec(Bitstream::Raw, ChecksumPolicy::default()).compress(&big), Err(Error::InvalidArgument(_))));
    assert!(matches!(
        BufferCodec::new(Options::default(), Config { chunk_size: (1 << 24) + 1, ..Config::default() }, None),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn max_compressed_size_bounds_every_bitstream() {
    for bitstream in [Bitstream::Native, Bitstream::Raw, Bitstream::WithUncompressedSize] {
        for checksum in [ChecksumPolicy::NoComputeNoVerify, ChecksumPolicy::ComputeAndVerify] {
            let codec = codec(bitstream, checksum);
            for n in sizes().into_iter().filter(|&n| bitstream == Bitstream::Native || n <= 1 << 16) {
                let bound = codec.max_compressed_size(n).unwrap();
                for data in [random_bytes(n, 4), text_bytes(n, 5)] {
                    assert!(codec.compress(&data).unwrap().len() <= bound, "{bitstream:?}, {n} bytes");
                }
                // Incompressible data comes within the chunks' headers of the bound.
                let random = codec.compress(&random_bytes(n, 4)).unwrap().len();
                assert!(bound - random <= 32 + n / 100, "{bitstream:?}, {n} bytes: {random} of {bound}");
            }
        }
    }
}

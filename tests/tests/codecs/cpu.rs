//! On the CPU: round trips of every codec, level and bitstream, interop with `flate2` and `snap`, and a
//! stream's own trailer naming a damaged chunk.

use crate::support::{
    CHUNK, WRAPPERS, all_options, buffer_codec, cpu_compress, cpu_decompress, flate2_compress, mixed_bytes,
};
use ferrocomp::{
    BatchCodec, Bitstream, BufferCodec, ChecksumPolicy, Config, Deflate, Error, Options, Snappy, Status, Wrapper,
};
use ferrocomp_tests::text_bytes;
use std::io::Write;

/// `stream` inflated by flate2 as `wrapper`.
fn flate2_decompress(stream: &[u8], wrapper: Wrapper) -> Vec<u8> {
    let mut out = Vec::new();
    match wrapper {
        Wrapper::Raw => flate2::write::DeflateDecoder::new(&mut out).write_all(stream).unwrap(),
        Wrapper::Zlib => flate2::write::ZlibDecoder::new(&mut out).write_all(stream).unwrap(),
        Wrapper::Gzip => flate2::write::GzDecoder::new(&mut out).write_all(stream).unwrap(),
    }
    out
}

#[test]
fn cpu_round_trips_every_codec_level_and_bitstream() {
    let data = mixed_bytes(5 * CHUNK + 123, 1);
    for options in all_options() {
        let native = buffer_codec(options, Bitstream::Native, None);
        let compressed = native.compress(&data).unwrap();
        assert_eq!(native.decompress(&compressed).unwrap(), data, "{options:?}");
        // A native stream names its codec: a codec built for LZ4 decodes it too.
        assert_eq!(buffer_codec(Options::default(), Bitstream::Native, None).decompress(&compressed).unwrap(), data);
        for bitstream in [Bitstream::Raw, Bitstream::WithUncompressedSize] {
            let single = buffer_codec(options, bitstream, None);
            for piece in [&data[..0], &data[..1], &data[..CHUNK]] {
                assert_eq!(single.decompress(&single.compress(piece).unwrap()).unwrap(), piece, "{options:?}");
            }
        }
    }
}

#[test]
fn deflate_chunks_open_with_flate2_and_flate2_streams_decode() {
    let data = text_bytes(CHUNK, 2);
    for wrapper in WRAPPERS {
        for level in 0..=5 {
            let codec = Deflate { level, wrapper };
            assert_eq!(flate2_decompress(&cpu_compress(&codec, &data), wrapper), data, "{codec:?}");
        }
        let big = mixed_bytes(3 << 20, 3);
        for level in [0, 1, 6, 9] {
            let stream = flate2_compress(&big, level, wrapper);
            let codec = Deflate { level: 1, wrapper };
            assert_eq!(codec.decompressed_size_cpu(&stream), Ok(big.len()), "{wrapper:?} level {level}");
            assert_eq!(cpu_decompress(&codec, &stream, big.len()).unwrap(), big, "{wrapper:?} level {level}");
        }
    }
}

#[test]
fn snappy_chunks_open_with_snap_and_snap_streams_decode() {
    let data = mixed_bytes(3 << 20, 4);
    let ours = cpu_compress(&Snappy::default(), &data);
    assert_eq!(snap::raw::Decoder::new().decompress_vec(&ours).unwrap(), data);
    let theirs = snap::raw::Encoder::new().compress_vec(&data).unwrap();
    assert_eq!(Snappy::default().decompressed_size_cpu(&theirs), Ok(data.len()));
    assert_eq!(cpu_decompress(&Snappy::default(), &theirs, data.len()).unwrap(), data);
}

#[test]
fn wrong_trailers_and_corrupt_chunks_name_the_chunk() {
    let data = text_bytes(3 * CHUNK, 5);
    for wrapper in [Wrapper::Zlib, Wrapper::Gzip] {
        // No container CRC-32s, so the stream's own trailer is what catches the damage.
        let config =
            Config { chunk_size: CHUNK, bitstream: Bitstream::Native, checksum: ChecksumPolicy::NoComputeNoVerify };
        let codec = BufferCodec::new(Options::Deflate(Deflate { level: 1, wrapper }), config, None).unwrap();
        let mut compressed = codec.compress(&data).unwrap();
        // The last byte of the stream is the last byte of chunk 2's trailer.
        *compressed.last_mut().unwrap() ^= 1;
        match codec.decompress(&compressed) {
            Err(Error::Chunk { chunk: 2, status: Status::BadChecksum }) => {}
            other => panic!("{wrapper:?}: {other:?}"),
        }
    }
}

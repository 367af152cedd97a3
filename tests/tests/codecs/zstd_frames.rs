//! libzstd's frames of every kind (levels, checksums, long-distance matching, skippable frames, a
//! dictionary) decoded on the CPU and the GPU, and ours read by libzstd.

use crate::support::{CHUNK, cpu_compress, cpu_decompress, gpu_decompress, mixed_bytes};
use ferrocomp::{BatchCodec, Status, Zstd};
use ferrocomp_tests::{gpu, random_bytes, text_bytes};

/// `data` compressed by libzstd at `level` with the frame options named: a content checksum, the
/// content size in the header, long-distance matching (with a 16 MiB window).
fn libzstd_compress(data: &[u8], level: i32, checksum: bool, content_size: bool, long: bool) -> Vec<u8> {
    use zstd::zstd_safe::CParameter;
    let mut compressor = zstd::bulk::Compressor::new(level).unwrap();
    compressor.set_parameter(CParameter::ChecksumFlag(checksum)).unwrap();
    compressor.set_parameter(CParameter::ContentSizeFlag(content_size)).unwrap();
    if long {
        compressor.set_parameter(CParameter::EnableLongDistanceMatching(true)).unwrap();
        compressor.set_parameter(CParameter::WindowLog(24)).unwrap();
    }
    compressor.compress(data).unwrap()
}

/// A skippable frame (magic 0x184D2A5?) of `len` bytes of user data.
fn skippable_frame(nibble: u8, len: usize) -> Vec<u8> {
    let mut frame = (0x184D_2A50u32 | nibble as u32).to_le_bytes().to_vec();
    frame.extend((len as u32).to_le_bytes());
    frame.extend(random_bytes(len, 3));
    frame
}

/// libzstd's frames of every kind the issue names, each with the bytes it decodes to: levels 1, 3,
/// 9, 19 and -5, with and without checksum and content size, long-distance matching, several
/// frames and skippable frames in one chunk, an empty frame.
fn libzstd_frames(data: &[u8]) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let mut frames = Vec::new();
    for level in [1, 3, 9, 19, -5] {
        for (checksum, content_size) in [(false, true), (true, true), (true, false), (false, false)] {
            let frame = libzstd_compress(data, level, checksum, content_size, false);
            frames.push((format!("level {level} checksum {checksum} size {content_size}"), frame, data.to_vec()));
        }
    }
    let long = [data, &text_bytes(data.len(), 77), data].concat();
    frames.push(("long-distance matching".into(), libzstd_compress(&long, 3, true, true, true), long));
    let (a, b) = data.split_at(data.len() / 3);
    let several = [
        skippable_frame(0, 10),
        libzstd_compress(a, 3, true, true, false),
        skippable_frame(15, 0),
        libzstd_compress(b, -1, false, false, false),
        libzstd_compress(&[], 1, false, true, false),
    ]
    .concat();
    frames.push(("several frames and skippable ones".into(), several, data.to_vec()));
    frames.push(("empty frame".into(), libzstd_compress(&[], 3, true, true, false), Vec::new()));
    frames
}

/// A frame naming dictionary 7 (a raw block of `data` after its header): decoding needs the dictionary.
fn frame_with_dictionary(data: &[u8]) -> Vec<u8> {
    assert!(data.len() < 256);
    // Single segment, a 1-byte dictionary id, a 1-byte content size; then one last raw block.
    let mut frame = vec![0x28, 0xB5, 0x2F, 0xFD, 0x21, 7, data.len() as u8];
    frame.extend(&((data.len() as u32) << 3 | 1).to_le_bytes()[..3]);
    frame.extend(data);
    frame
}

#[test]
fn zstd_chunks_open_with_libzstd_and_libzstd_frames_decode() {
    let data = mixed_bytes(3 * CHUNK + 5, 11);
    for level in Zstd::LEVELS {
        let codec = Zstd { level };
        for piece in [&data[..0], &data[..1], &data[..1000], &data[..CHUNK], &data[..]] {
            let ours = cpu_compress(&codec, piece);
            assert!(zstd::bulk::decompress(&ours, piece.len()).unwrap() == piece, "level {level}");
        }
    }
    for (what, frame, expected) in libzstd_frames(&data) {
        let codec = Zstd::default();
        assert_eq!(codec.decompressed_size_cpu(&frame), Ok(expected.len()), "{what}");
        assert!(cpu_decompress(&codec, &frame, expected.len()).unwrap() == expected, "{what}");
    }
    let codec = Zstd::default();
    assert_eq!(cpu_decompress(&codec, &frame_with_dictionary(b"abc"), 3), Err(Status::DictionaryRequired));
    let mut checked = libzstd_compress(&data, 3, true, true, false);
    let last = checked.len() - 1;
    checked[last] ^= 1;
    assert_eq!(cpu_decompress(&codec, &checked, data.len()), Err(Status::BadChecksum));
}

#[test]
fn gpu_decodes_libzstd_frames_of_every_kind() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = mixed_bytes(3 * CHUNK + 5, 12);
    let mut frames = libzstd_frames(&data);
    let big = mixed_bytes(16 << 20, 13);
    frames.push(("16 MiB chunk".into(), libzstd_compress(&big, 3, true, true, false), big));
    frames.push(("dictionary".into(), frame_with_dictionary(b"abc"), Vec::new()));
    let mut checked = libzstd_compress(&data, 3, true, true, false);
    let last = checked.len() - 1;
    checked[last] ^= 1;
    frames.push(("wrong checksum".into(), checked, Vec::new()));
    let streams: Vec<&[u8]> = frames.iter().map(|(_, frame, _)| frame.as_slice()).collect();
    let capacities: Vec<usize> = frames.iter().map(|(_, _, expected)| expected.len().max(data.len())).collect();
    let codec = Zstd::default();
    let decoded = gpu_decompress(&gpu, &codec, &streams, &capacities, &stream);
    for (i, ((what, _, expected), (status, bytes))) in frames.iter().zip(decoded).enumerate() {
        match what.as_str() {
            "dictionary" => assert_eq!(status, Status::DictionaryRequired),
            "wrong checksum" => assert_eq!(status, Status::BadChecksum),
            _ => assert!((status, bytes.as_slice()) == (Status::Success, expected.as_slice()), "{what}: {status:?}"),
        }
        let on_cpu = cpu_decompress(&codec, streams[i], capacities[i]).err().unwrap_or(Status::Success);
        assert_eq!(status, on_cpu, "{what}: the CPU decoder's status");
    }
}

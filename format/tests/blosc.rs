//! Blosc 1 chunks against c-blosc 1.21 itself (built from `blosc-src` with lz4, zlib, snappy and zstd):
//! its chunks for every compressor, shuffle and typesize decode to the original bytes, ours decode
//! with it and carry the header it writes, and on corrupt chunks our verdict and output are its
//! own. Plus the per-block API a GPU kernel uses, and exact statuses for truncated and lying chunks.

use blosc_src::{blosc_compress_ctx, blosc_decompress_ctx};
use ferrocomp_format::Status;
use ferrocomp_format::blosc::shuffle::{bitunshuffle_groups, unshuffle_elements};
use ferrocomp_format::blosc::{
    self, Compressor, FLAG_BITSHUFFLE, FLAG_DONT_SPLIT, FLAG_MEMCPYED, FLAG_RESERVED, FLAG_SHUFFLE, HEADER_LEN, Header,
    Shuffle, StreamTables, compress, compute_blocksize, decompress, decompress_block, decompressed_size,
    max_compressed_size,
};
use ferrocomp_format::lz4::{self, HASH_ENTRIES};
use std::ffi::CString;
mod common;
use common::XorShift;

const COMPRESSORS: [&str; 6] = ["blosclz", "lz4", "lz4hc", "zlib", "snappy", "zstd"];
const SHUFFLES: [Shuffle; 3] = [Shuffle::None, Shuffle::Byte, Shuffle::Bit];
const TYPESIZES: [usize; 7] = [1, 2, 4, 8, 3, 16, 24];

/// The data sets: float32 ramp, int64 counters, text, random bytes; each `len` bytes.
fn data_sets(len: usize) -> [(&'static str, Vec<u8>); 4] {
    let floats = (0..len / 4 + 1).flat_map(|i| (1000.0 + i as f32 * 0.125).to_le_bytes());
    let ints = (0..len / 8 + 1).flat_map(|i| (i as i64 * 3 - 50_000 + (i as i64 % 7)).to_le_bytes());
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let random = (0..len).map(|_| rng.next() as u8);
    [
        ("float32 ramp", floats.take(len).collect()),
        ("int64", ints.take(len).collect()),
        ("text", text(len)),
        ("random", random.collect()),
    ]
}

/// Text-like bytes: words from a small vocabulary, now and then a random byte.
fn text(len: usize) -> Vec<u8> {
    const WORDS: [&[u8]; 10] =
        [b"blosc ", b"chunk ", b"block ", b"shuffle ", b"stream ", b"\n", b"zarr ", b"lz4 ", b"0.125 ", b"typesize "];
    let mut rng = XorShift(7);
    let mut out = Vec::with_capacity(len + 16);
    while out.len() < len {
        let r = rng.next();
        if r.is_multiple_of(9) {
            out.push((r >> 8) as u8);
        } else {
            out.extend_from_slice(WORDS[(r >> 16) as usize % WORDS.len()]);
        }
    }
    out.truncate(len);
    out
}

fn tables() -> Box<StreamTables> {
    unsafe { Box::new_zeroed().assume_init() }
}

/// c-blosc's chunk of `data` (`blocksize` 0: its own choice, as numcodecs' default).
fn c_compress(data: &[u8], typesize: usize, shuffle: Shuffle, cname: &str, clevel: i32, blocksize: usize) -> Vec<u8> {
    let mut out = vec![0u8; data.len() + HEADER_LEN];
    let name = CString::new(cname).unwrap();
    let n = unsafe {
        blosc_compress_ctx(
            clevel,
            shuffle as i32,
            typesize,
            data.len(),
            data.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            out.len(),
            name.as_ptr(),
            blocksize,
            1,
        )
    };
    assert!(n >= HEADER_LEN as i32, "c-blosc {cname} failed: {n}");
    out.truncate(n as usize);
    out
}

/// What c-blosc decodes `chunk` to, if it decodes it to its full header size. The chunk must hold
/// its header's `cbytes` (c-blosc does not know the input length).
fn c_decompress(chunk: &[u8]) -> Option<Vec<u8>> {
    let nbytes = u32::from_le_bytes(chunk[4..8].try_into().unwrap()) as usize;
    let mut out = vec![0u8; nbytes];
    let n = unsafe { blosc_decompress_ctx(chunk.as_ptr().cast(), out.as_mut_ptr().cast(), nbytes, 1) };
    (n >= 0 && n as usize == nbytes).then_some(out)
}

/// Our decode of a whole chunk, with scratch sized from its header.
fn ours(chunk: &[u8]) -> Result<Vec<u8>, Status> {
    let header = Header::parse(chunk)?;
    let mut out = vec![0u8; decompressed_size(chunk)?];
    let mut tmp = vec![0u8; header.scratch_len()];
    let n = decompress(chunk, &mut out, &mut tmp, &mut tables())?;
    assert_eq!(n, out.len());
    Ok(out)
}

/// Our chunk of `data`.
fn our_compress(data: &[u8], typesize: usize, shuffle: Shuffle) -> Vec<u8> {
    let mut out = vec![0u8; max_compressed_size(data.len())];
    let mut tmp = vec![0u8; compute_blocksize(data.len(), typesize)];
    let mut table = [0u16; HASH_ENTRIES];
    let n = compress(data, typesize, shuffle, &mut out, &mut table, &mut tmp).unwrap();
    out.truncate(n);
    out
}

fn compressor_code(cname: &str) -> Compressor {
    match cname {
        "blosclz" => Compressor::BloscLz,
        "lz4" | "lz4hc" => Compressor::Lz4,
        "snappy" => Compressor::Snappy,
        "zlib" => Compressor::Zlib,
        "zstd" => Compressor::Zstd,
        _ => unreachable!(),
    }
}

/// Every compressor x shuffle x typesize, at c-blosc's own block size and at a small forced one,
/// on sizes that leave a partial last block and a partial last element: exact bytes back.
#[test]
fn c_blosc_chunks_decode_to_the_original_bytes() {
    let (mut split, mut memcpyed, mut raw_streams) = (0, 0, 0);
    // Forced block sizes are enlarged where blocks split (to at least 64 KiB): 512 gives 64 KiB
    // blocks for typesizes 1..=4 and 512-byte unsplit ones for 8 and 16.
    for (len, blocksize) in [(150_001, 0), (70_001, 512), (9_001, 1_000)] {
        for (name, data) in data_sets(len) {
            for cname in COMPRESSORS {
                for shuffle in SHUFFLES {
                    for typesize in TYPESIZES {
                        let chunk = c_compress(&data, typesize, shuffle, cname, 5, blocksize);
                        let what =
                            format!("{name} {len} {cname} {shuffle:?} typesize {typesize} blocksize {blocksize}");
                        let header = Header::parse(&chunk).expect(&what);
                        assert_eq!(ours(&chunk).expect(&what), data, "{what}");
                        assert_eq!(header.cbytes(), chunk.len(), "{what}");
                        if header.is_memcpyed() {
                            memcpyed += 1;
                            continue;
                        }
                        assert_eq!(header.compressor(), Some(compressor_code(cname)), "{what}");
                        for i in 0..header.block_count() {
                            let streams = header.block_streams(&chunk, i).unwrap();
                            assert_eq!(streams.as_slice().len(), header.streams_per_block(i), "{what}");
                            split += usize::from(streams.as_slice().len() > 1);
                            raw_streams += streams.as_slice().iter().filter(|s| s.is_raw()).count();
                        }
                    }
                }
            }
        }
    }
    // The corpus reaches every layout: split blocks, raw streams, memcpyed chunks.
    assert!(split > 300 && raw_streams > 300 && memcpyed > 300, "{split} {raw_streams} {memcpyed}");
}

/// Typesizes above 16 never split; a block of fewer than 128 elements per stream does not either
/// (c-blosc enlarges a forced block that would split to 64 KiB); the leftover last block is one
/// stream.
#[test]
fn streams_per_block_follow_c_blosc_split_rule() {
    let data = text(70_001);
    let cases = [(24, 24_000, 24_000, 1), (16, 2_032, 2_032, 1), (16, 2_048, 65_536, 16), (3, 3_000, 65_535, 3)];
    for (typesize, forced, blocksize, expect) in cases {
        let chunk = c_compress(&data, typesize, Shuffle::Byte, "lz4", 5, forced);
        let header = Header::parse(&chunk).unwrap();
        assert_eq!(header.blocksize(), blocksize);
        assert_eq!(header.flags() & FLAG_DONT_SPLIT != 0, expect == 1, "typesize {typesize}");
        let last = header.block_count() - 1;
        assert!(header.is_leftover(last));
        assert_eq!(header.streams_per_block(0), expect);
        assert_eq!(header.streams_per_block(last), 1);
        assert_eq!(header.block_streams(&chunk, last).unwrap().as_slice().len(), 1);
        assert_eq!(ours(&chunk).unwrap(), data);
    }
}

/// Our chunks decode with c-blosc (and with us), and carry the header c-blosc writes for lz4 at
/// clevel 5: version, flags, typesize, sizes and block size, memcpyed where it would be.
#[test]
fn our_chunks_decode_with_c_blosc_and_match_its_header() {
    for len in [0, 1, 100, 127, 128, 4_099, 65_537, 300_007] {
        for (name, data) in data_sets(len) {
            for shuffle in SHUFFLES {
                for typesize in TYPESIZES {
                    let what = format!("{name} {len} {shuffle:?} typesize {typesize}");
                    let chunk = our_compress(&data, typesize, shuffle);
                    assert!(chunk.len() <= max_compressed_size(len), "{what}");
                    assert_eq!(c_decompress(&chunk).as_deref(), Some(&data[..]), "{what}");
                    assert_eq!(ours(&chunk).unwrap(), data, "{what}");
                    let theirs = c_compress(&data, typesize, shuffle, "lz4", 5, 0);
                    let ignore_memcpyed = |h: &[u8]| [h[0], h[1], h[2] & !FLAG_MEMCPYED, h[3]];
                    assert_eq!(ignore_memcpyed(&chunk), ignore_memcpyed(&theirs), "{what}");
                    assert_eq!(chunk[4..12], theirs[4..12], "{what}");
                    if name == "random" || len < 128 {
                        assert_eq!(chunk[2] & FLAG_MEMCPYED, theirs[2] & FLAG_MEMCPYED, "{what}");
                    }
                }
            }
        }
    }
}

/// Inputs under 128 bytes, incompressible ones and clevel 0 are stored as they are.
#[test]
fn memcpyed_chunks_hold_the_data_after_the_header() {
    for (name, data) in data_sets(5_000) {
        let chunk = c_compress(&data, 4, Shuffle::Byte, "lz4", 0, 0);
        assert_ne!(chunk[2] & FLAG_MEMCPYED, 0, "{name}");
        assert_eq!(chunk[HEADER_LEN..], data[..]);
        assert_eq!(ours(&chunk).unwrap(), data);
    }
    let random = &data_sets(70_000)[3].1;
    for chunk in [our_compress(random, 8, Shuffle::Bit), c_compress(random, 8, Shuffle::Bit, "blosclz", 9, 0)] {
        assert_eq!(chunk.len(), random.len() + HEADER_LEN);
        assert_ne!(chunk[2] & FLAG_MEMCPYED, 0);
        assert_eq!(ours(&chunk).unwrap(), *random);
        // A memcpyed block is one raw stream in place.
        let header = Header::parse(&chunk).unwrap();
        let streams = header.block_streams(&chunk, 0).unwrap();
        let stream = streams.as_slice()[0];
        assert!(stream.is_raw());
        assert_eq!(stream.bytes(&chunk).unwrap(), &random[..header.block_len(0)]);
    }
    let empty = our_compress(&[], 4, Shuffle::Byte);
    assert_eq!(empty, c_compress(&[], 4, Shuffle::Byte, "lz4", 5, 0));
    assert_eq!(empty.len(), HEADER_LEN);
    assert_eq!(ours(&empty), Ok(Vec::new()));
}

/// A GPU warp's view: each block's streams decoded one by one with `lz4::decompress`, then
/// unshuffled by "lanes" over disjoint element ranges; the result is c-blosc's input.
#[test]
fn blocks_decode_stream_by_stream_and_unshuffle_in_disjoint_ranges() {
    let [_, (_, data), ..] = data_sets(160_001);
    for (shuffle, typesize) in [(Shuffle::Byte, 4), (Shuffle::Byte, 3), (Shuffle::Bit, 4), (Shuffle::Bit, 24)] {
        for chunk in [c_compress(&data, typesize, shuffle, "lz4", 5, 16_384), our_compress(&data, typesize, shuffle)] {
            let header = Header::parse(&chunk).unwrap();
            assert!(!header.is_memcpyed());
            assert_eq!(header.shuffle(), shuffle);
            let mut out = vec![0u8; header.nbytes()];
            for i in 0..header.block_count() {
                let len = header.block_len(i);
                let mut shuffled = vec![0u8; len];
                for stream in header.block_streams(&chunk, i).unwrap().as_slice() {
                    let dst = &mut shuffled[stream.decoded_at..stream.decoded_at + stream.decoded_len];
                    let src = stream.bytes(&chunk).unwrap();
                    if stream.is_raw() {
                        dst.copy_from_slice(src);
                    } else {
                        assert_eq!(lz4::decompress(src, dst), Ok(stream.decoded_len));
                    }
                }
                let block = &mut out[header.block_start(i)..header.block_start(i) + len];
                let elements = len / typesize;
                if shuffle == Shuffle::Byte {
                    for lane in 0..32 {
                        let range = elements * lane / 32..elements * (lane + 1) / 32;
                        unshuffle_elements(&shuffled, block, typesize, range).unwrap();
                    }
                    block[elements * typesize..].copy_from_slice(&shuffled[elements * typesize..]);
                } else if elements.is_multiple_of(8) {
                    let groups = elements / 8;
                    for lane in 0..32 {
                        bitunshuffle_groups(&shuffled, block, typesize, groups * lane / 32..groups * (lane + 1) / 32)
                            .unwrap();
                    }
                    block[elements * typesize..].copy_from_slice(&shuffled[elements * typesize..]);
                } else {
                    block.copy_from_slice(&shuffled);
                }
                let mut one = vec![0u8; len];
                let mut tmp = vec![0u8; header.scratch_len()];
                assert_eq!(decompress_block(&chunk, &header, i, &mut one, &mut tmp, &mut tables()), Ok(len));
                assert_eq!(&one[..], &block[..], "block {i}");
            }
            assert_eq!(out, data, "{shuffle:?} typesize {typesize}");
        }
    }
}

/// Bit shuffle leaves a block whose element count is not a multiple of 8 as it is, and bytes
/// past the last whole element in place, as c-blosc does.
#[test]
fn bit_shuffle_skips_blocks_of_uneven_element_counts() {
    let data = text(20_000 + 5);
    // Unsplit blocks of 63 and 64 elements of 24 bytes.
    for (blocksize, shuffled) in [(63 * 24, false), (64 * 24, true)] {
        let chunk = c_compress(&data, 24, Shuffle::Bit, "lz4", 5, blocksize);
        let header = Header::parse(&chunk).unwrap();
        let mut block = vec![0u8; blocksize];
        for stream in header.block_streams(&chunk, 0).unwrap().as_slice() {
            let dst = &mut block[stream.decoded_at..stream.decoded_at + stream.decoded_len];
            lz4::decompress(stream.bytes(&chunk).unwrap(), dst).unwrap();
        }
        assert_eq!(block == data[..blocksize], !shuffled, "blocksize {blocksize}");
        assert_eq!(ours(&chunk).unwrap(), data);
    }
}

/// Every prefix of a chunk is `Truncated`, whatever the compressor or layout.
#[test]
fn every_truncation_is_truncated() {
    let data = text(3_000);
    let chunks = [
        c_compress(&data, 4, Shuffle::Byte, "lz4", 5, 512),
        c_compress(&data, 2, Shuffle::Bit, "blosclz", 5, 0),
        c_compress(&data, 8, Shuffle::None, "zlib", 5, 1_024),
        c_compress(&data, 1, Shuffle::None, "snappy", 5, 0),
        c_compress(&data[..100], 1, Shuffle::None, "lz4", 5, 0),
        our_compress(&data, 4, Shuffle::Byte),
    ];
    for chunk in chunks {
        for len in 0..chunk.len() {
            let prefix = &chunk[..len];
            assert_eq!(Header::parse(prefix), Err(Status::Truncated), "{len}");
            assert_eq!(decompressed_size(prefix), Err(Status::Truncated), "{len}");
            let mut out = vec![0u8; data.len()];
            let mut tmp = vec![0u8; data.len()];
            assert_eq!(decompress(prefix, &mut out, &mut tmp, &mut tables()), Err(Status::Truncated), "{len}");
        }
        // Bytes after cbytes are not read.
        let mut longer = chunk.clone();
        longer.extend_from_slice(&[0xAB; 40]);
        assert_eq!(ours(&longer), ours(&chunk));
    }
}

/// Writes `value` as the little-endian u32 at `at`.
fn put_u32(chunk: &mut [u8], at: usize, value: u32) {
    chunk[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// A change made to a copy of a chunk.
type Edit<'a> = &'a dyn Fn(&mut Vec<u8>);

/// Lying and corrupt header fields, each with the status it determines.
#[test]
fn lying_headers_give_exact_statuses() {
    let data = text(150_007);
    let chunk = c_compress(&data, 4, Shuffle::Byte, "lz4", 5, 512);
    let header = Header::parse(&chunk).unwrap();
    assert_eq!((header.block_count(), header.blocksize(), header.streams_per_block(0)), (3, 65_536, 4));
    // Just enough 64 KiB blocks that their table no longer fits in cbytes.
    let too_many_blocks = ((chunk.len() - HEADER_LEN) / 4 + 1) as u32 * 65_536;
    let memcpyed = c_compress(&data, 4, Shuffle::Byte, "lz4", 0, 0);
    let edit = |chunk: &[u8], f: Edit| {
        let mut c = chunk.to_vec();
        f(&mut c);
        ours(&c)
    };
    let n = data.len() as u32;
    let cases: [(&str, &[u8], Edit, Status); 17] = [
        ("version 1", &chunk, &|c| c[0] = 1, Status::Unsupported),
        ("version 3", &chunk, &|c| c[0] = 3, Status::Unsupported),
        ("reserved flag", &chunk, &|c| c[2] |= FLAG_RESERVED, Status::Unsupported),
        ("lz4 blocks labelled zstd", &chunk, &|c| c[2] = c[2] & 0x1F | 4 << 5, Status::Malformed),
        ("compressor code 5", &chunk, &|c| c[2] = c[2] & 0x1F | 5 << 5, Status::Unsupported),
        ("codec version 2", &chunk, &|c| c[1] = 2, Status::Unsupported),
        ("typesize 0", &chunk, &|c| c[3] = 0, Status::Malformed),
        ("blocksize 0", &chunk, &|c| put_u32(c, 8, 0), Status::Malformed),
        ("huge blocksize", &chunk, &|c| put_u32(c, 8, u32::MAX), Status::ChunkTooLarge),
        ("blocksize above nbytes", &chunk, &|c| put_u32(c, 8, n + 1), Status::Malformed),
        ("huge nbytes", &chunk, &|c| put_u32(c, 4, u32::MAX), Status::ChunkTooLarge),
        ("nbytes past the block table", &chunk, &|c| put_u32(c, 4, too_many_blocks), Status::Malformed),
        // The last block (18935 bytes, one stream) decodes to one byte more or less than it says.
        ("nbytes one less", &chunk, &|c| put_u32(c, 4, n - 1), Status::Malformed),
        ("nbytes one more", &chunk, &|c| put_u32(c, 4, n + 1), Status::Malformed),
        ("cbytes below the header", &chunk, &|c| put_u32(c, 12, 15), Status::Malformed),
        ("memcpyed nbytes one more", &memcpyed, &|c| put_u32(c, 4, n + 1), Status::Malformed),
        ("memcpyed cbytes one less", &memcpyed, &|c| put_u32(c, 12, n + 15), Status::Malformed),
    ];
    for (what, chunk, f, status) in cases {
        assert_eq!(edit(chunk, f), Err(status), "{what}");
    }
    // A table entry or stream size reaching past cbytes.
    let cbytes = chunk.len() as u32;
    assert_eq!(edit(&chunk, &|c| put_u32(c, HEADER_LEN + 4, cbytes - 3)), Err(Status::Malformed));
    let first_stream = u32::from_le_bytes(chunk[HEADER_LEN..HEADER_LEN + 4].try_into().unwrap()) as usize;
    assert_eq!(edit(&chunk, &|c| put_u32(c, first_stream, cbytes)), Err(Status::Malformed));
    // The caller's limit.
    let mut short = vec![0u8; data.len() - 1];
    let mut tmp = vec![0u8; header.scratch_len()];
    assert_eq!(decompress(&chunk, &mut short, &mut tmp, &mut tables()), Err(Status::OutputTooSmall));
    let mut out = vec![0u8; data.len()];
    assert_eq!(decompress(&chunk, &mut out, &mut tmp[..100], &mut tables()), Err(Status::OutputTooSmall));
    // A memcpyed chunk decodes whatever compressor code it carries.
    assert_eq!(edit(&memcpyed, &|c| c[2] |= 7 << 5), Ok(data.clone()));
}

/// zstd chunks, c-blosc's own, decode block by block as whole: each stream a zstd frame.
#[test]
fn zstd_chunks_decode_block_by_block() {
    let data = text(300_000);
    let chunk = c_compress(&data, 4, Shuffle::Bit, "zstd", 5, 0);
    let header = Header::parse(&chunk).unwrap();
    assert_eq!(header.compressor(), Some(Compressor::Zstd));
    assert_eq!(ours(&chunk), Ok(data.clone()));
    let mut tmp = vec![0u8; header.scratch_len()];
    let mut out = vec![0u8; data.len()];
    for i in 0..header.block_count() {
        let block = &mut out[header.block_start(i)..];
        assert_eq!(decompress_block(&chunk, &header, i, block, &mut tmp, &mut tables()), Ok(header.block_len(i)));
    }
    assert!(out == data);
}

/// Our verdict on a corrupt chunk (of at least 16 bytes) is c-blosc's, and where both decode it
/// the bytes are equal. c-blosc is only asked where the chunk holds its claimed `cbytes` (it
/// cannot know the input length) and `nbytes` is small; it returns at once for `nbytes == 0`,
/// where we still check the rest of the header.
fn agrees_with_c_blosc(chunk: &[u8], what: &str) -> Verdict {
    let result = ours(chunk);
    let field = |at: usize| u32::from_le_bytes(chunk[at..at + 4].try_into().unwrap()) as usize;
    if field(12) > chunk.len() || field(4) > 1 << 24 {
        assert!(result.is_err(), "{what}");
        return Verdict::Rejected;
    }
    if field(4) == 0 {
        assert!(result.is_err() || result == Ok(Vec::new()), "{what}");
        return Verdict::Unasked;
    }
    let theirs = c_decompress(chunk);
    if result == Err(Status::BadOffset) && theirs.is_some() && has_lz4_offset_zero(chunk) {
        return Verdict::Unasked;
    }
    // Our zstd decoder refuses some damaged frames libzstd decodes (format/src/zstd checks every
    // Huffman stream's end and more): there only what we decode must be c-blosc's bytes.
    if chunk[2] >> 5 == Compressor::Zstd as u8 && result.is_err() {
        return Verdict::Rejected;
    }
    let same = result.as_ref().ok() == theirs.as_ref();
    assert!(same, "{what}: ours {:?}, c-blosc's {:?} bytes", result.map(|v| v.len()), theirs.map(|v| v.len()));
    if result.is_ok() { Verdict::Decoded } else { Verdict::Rejected }
}

/// How a damaged chunk fared: decoded by both to the same bytes, rejected by us (and by c-blosc
/// where it could be asked), or not comparable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Verdict {
    Decoded,
    Rejected,
    Unasked,
}

/// Counts the verdicts, to show the corpus reaches both outcomes.
fn tally(verdicts: impl Iterator<Item = Verdict>) -> [usize; 3] {
    let mut counts = [0; 3];
    for v in verdicts {
        counts[v as usize] += 1;
    }
    counts
}

/// Whether an LZ4 stream of `chunk` has a match at offset 0: invalid by the LZ4 spec and to us
/// (`BadOffset`), while liblz4's `LZ4_decompress_safe` copies whatever its output holds there.
fn has_lz4_offset_zero(chunk: &[u8]) -> bool {
    let header = Header::parse(chunk).unwrap();
    header.compressor() == Some(Compressor::Lz4)
        && (0..header.block_count()).filter_map(|i| header.block_streams(chunk, i).ok()).any(|streams| {
            streams.as_slice().iter().filter(|s| !s.is_raw()).any(|s| {
                let mut reader = lz4::Reader::new(s.bytes(chunk).unwrap());
                std::iter::from_fn(|| reader.next_sequence().ok().flatten())
                    .any(|seq| matches!(seq.matched, Some((0, _))))
            })
        })
}

/// Every header and block-table byte flipped, and stream bytes sampled, in chunks of every
/// compressor and shuffle.
#[test]
fn flipped_bytes_get_c_blosc_verdict() {
    let data = text(6_001);
    let mut verdicts = Vec::new();
    for cname in COMPRESSORS {
        for (shuffle, typesize) in [(Shuffle::Byte, 4), (Shuffle::Bit, 2), (Shuffle::None, 3)] {
            let chunk = c_compress(&data, typesize, shuffle, cname, 5, 1_024);
            let table_end = HEADER_LEN + 4 * Header::parse(&chunk).unwrap().block_count();
            let mut rng = XorShift(chunk.len() as u64 * 31 + typesize as u64);
            let positions = (0..table_end).chain((0..300).map(|_| table_end + rng.below(chunk.len() - table_end)));
            for at in positions {
                for mask in [0x01, 0x80, 0xFF] {
                    let mut corrupt = chunk.clone();
                    corrupt[at] ^= mask;
                    let what = format!("{cname} {shuffle:?} byte {at} ^ {mask:#x}");
                    verdicts.push(agrees_with_c_blosc(&corrupt, &what));
                }
            }
        }
    }
    let [decoded, rejected, unasked] = tally(verdicts.into_iter());
    eprintln!("flipped: {decoded} decoded, {rejected} rejected, {unasked} unasked");
    assert!(decoded > 1_000 && rejected > 5_000, "{decoded} {rejected} {unasked}");
}

/// Random multi-byte damage: c-blosc's verdict and bytes, never a panic.
#[test]
fn random_damage_gets_c_blosc_verdict() {
    let data = data_sets(4_000);
    let mut rng = XorShift(0xDEAD_BEEF);
    let verdicts = (0..3_000).map(|round| {
        let (_, input) = &data[round % 3];
        let cname = COMPRESSORS[round % COMPRESSORS.len()];
        let shuffle = SHUFFLES[round / 5 % 3];
        let mut chunk = c_compress(input, TYPESIZES[round % 7], shuffle, cname, 5, 512);
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(chunk.len());
            chunk[at] = rng.next() as u8;
        }
        agrees_with_c_blosc(&chunk, &format!("round {round}"))
    });
    let [decoded, rejected, unasked] = tally(verdicts);
    eprintln!("damaged: {decoded} decoded, {rejected} rejected, {unasked} unasked");
    assert!(decoded > 300 && rejected > 1_000, "{decoded} {rejected} {unasked}");
}

/// Garbage behind plausible headers (version 2, codec version 1, no reserved flag, a few blocks)
/// and block tables pointing at plausible stream sizes, some of them raw: c-blosc's verdict.
/// Shorter than a header: `Truncated`.
#[test]
fn garbage_gets_c_blosc_verdict() {
    let mut rng = XorShift(0x0123_4567_89AB_CDEF);
    for len in 0..HEADER_LEN {
        let garbage: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        assert_eq!(ours(&garbage), Err(Status::Truncated));
    }
    let verdicts = (0..5_000).map(|round| {
        let len = HEADER_LEN + 100 + rng.below(400);
        let mut garbage: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let nbytes = 1 + rng.below(300);
        let blocksize = nbytes.div_ceil(1 + rng.below(8));
        let flags = rng.next() as u8 & !FLAG_RESERVED;
        garbage[..4].copy_from_slice(&[2, 1, flags, 1 + rng.below(30) as u8]);
        put_u32(&mut garbage, 4, nbytes as u32);
        put_u32(&mut garbage, 8, blocksize as u32);
        put_u32(&mut garbage, 12, len as u32);
        for i in 0..nbytes.div_ceil(blocksize) {
            let at = HEADER_LEN + 4 * i + 4 + rng.below(40);
            put_u32(&mut garbage, HEADER_LEN + 4 * i, at as u32);
            let block_len = blocksize.min(nbytes - i * blocksize);
            let raw = flags & FLAG_DONT_SPLIT != 0 && at + 4 + block_len <= len && rng.below(4) != 0;
            put_u32(&mut garbage, at, if raw { block_len } else { rng.below(len - at - 3) } as u32);
        }
        agrees_with_c_blosc(&garbage, &format!("garbage {round}"))
    });
    let [decoded, rejected, unasked] = tally(verdicts);
    eprintln!("garbage: {decoded} decoded, {rejected} rejected, {unasked} unasked");
    assert!(decoded > 50 && rejected > 4_000, "{decoded} {rejected} {unasked}");
}

/// The shuffle functions on their own: inverse pairs for any typesize and length, with the
/// header flags that select them.
#[test]
fn shuffles_invert_for_any_typesize() {
    use ferrocomp_format::blosc::shuffle::{bitshuffle, bitunshuffle, shuffle, unshuffle};
    let data = text(1_000);
    for typesize in 1..=40 {
        for len in [0, 1, typesize, 8 * typesize - 1, 8 * typesize, 999] {
            let src = &data[..len];
            let (mut a, mut b) = (vec![0u8; len], vec![0u8; len]);
            shuffle(src, &mut a, typesize).unwrap();
            unshuffle(&a, &mut b, typesize).unwrap();
            assert_eq!(b, src);
            bitshuffle(src, &mut a, typesize).unwrap();
            bitunshuffle(&a, &mut b, typesize).unwrap();
            assert_eq!(b, src);
        }
    }
    assert_eq!(shuffle(&data, &mut [0u8; 10], 4), Err(Status::OutputTooSmall));
    assert_eq!(unshuffle(&data[..8], &mut [0u8; 8], 0), Err(Status::Malformed));
    let flags = |s: Shuffle| our_compress(&data, 4, s)[2] & (FLAG_SHUFFLE | FLAG_BITSHUFFLE);
    assert_eq!([flags(Shuffle::None), flags(Shuffle::Byte), flags(Shuffle::Bit)], [0, FLAG_SHUFFLE, FLAG_BITSHUFFLE]);
    assert!(blosc::splits(4, 512) && !blosc::splits(4, 511) && !blosc::splits(17, 1 << 20));
}

//! The Blosc kernel's pieces on an emulated warp: each stream decoded by a warp, and the
//! per-unit (un)shuffles a block's threads share, must rebuild exactly what the format crate's
//! scalar codec does, for every compressor inside, shuffle and element size.

use ferrocomp_format::Status;
use ferrocomp_format::blosc::{self, Header, Shuffle, StreamTables, shuffle};
use ferrocomp_format::lz4::HASH_ENTRIES;
use ferrocomp_kernels_gpu::blosc::{
    Direction, STREAM_SHARED_BYTES_PER_WARP, decode_stream, transpose_unit, transpose_units,
};
use ferrocomp_kernels_gpu::emulated;
use ferrocomp_tests::{c_blosc, random_bytes, text_bytes};

/// Numbers that shuffles help: a slow ramp of little-endian `u32`s, with some noise.
fn ramp(n: usize) -> Vec<u8> {
    let noise = random_bytes(n / 4 + 1, 11);
    (0..n / 4).flat_map(|i| (i as u32 * 3 + (noise[i] & 3) as u32).to_le_bytes()).chain([1, 2, 3]).take(n).collect()
}

/// Every unit of a block moved in `direction` by "threads" one after another.
fn transpose(direction: Direction, shuffle: Shuffle, typesize: usize, src: &[u8]) -> Vec<u8> {
    let mut dst = vec![0u8; src.len()];
    for unit in 0..transpose_units(shuffle, typesize, src.len()) {
        unsafe { transpose_unit(direction, shuffle, typesize, src.as_ptr(), dst.as_mut_ptr(), src.len(), unit) };
    }
    dst
}

/// Decodes `chunk` as the kernels do: each stream by an emulated warp into the output, then
/// (`blosc_unshuffle`) each block staged and unshuffled back unit by unit; the first failing
/// stream's status.
fn kernel_decompress(chunk: &[u8]) -> Result<Vec<u8>, Status> {
    let header = Header::parse(chunk)?;
    let mut out = vec![0u8; header.nbytes()];
    if header.is_memcpyed() {
        out.copy_from_slice(&chunk[blosc::HEADER_LEN..blosc::HEADER_LEN + header.nbytes()]);
        return Ok(out);
    }
    // The warp's shared memory (16-byte aligned), garbage first as a reused CTA's would be.
    let mut shared: Vec<u128> = (0..STREAM_SHARED_BYTES_PER_WARP.div_ceil(16) as u128)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835))
        .collect();
    let shared_at = shared.as_mut_ptr() as usize;
    for block in 0..header.block_count() {
        if header.compressor().is_none() {
            return Err(Status::Unsupported);
        }
        for stream in header.block_streams(chunk, block)?.as_slice() {
            let at = header.block_start(block) + stream.decoded_at;
            let dest = out[at..].as_mut_ptr() as usize;
            let input = chunk.as_ptr() as usize;
            let lanes = emulated::run(|warp| unsafe {
                decode_stream(
                    warp,
                    header.compressor(),
                    stream,
                    input as *const u8,
                    dest as *mut u8,
                    shared_at as *mut u8,
                )
            });
            assert!(lanes.iter().all(|lane| *lane == lanes[0]), "lanes disagree");
            lanes[0]?;
        }
    }
    if header.shuffle() != Shuffle::None {
        for block in 0..header.block_count() {
            let range = header.block_start(block)..header.block_start(block) + header.block_len(block);
            let staged = out[range.clone()].to_vec();
            out[range].copy_from_slice(&transpose(Direction::Unshuffle, header.shuffle(), header.typesize(), &staged));
        }
    }
    Ok(out)
}

fn scalar_decompress(chunk: &[u8]) -> Result<Vec<u8>, Status> {
    let header = Header::parse(chunk)?;
    let (mut out, mut tmp) = (vec![0u8; header.nbytes()], vec![0u8; header.scratch_len()]);
    let mut tables: Box<StreamTables> = unsafe { Box::new_zeroed().assume_init() };
    blosc::decompress(chunk, &mut out, &mut tmp, &mut tables).map(|_| out)
}

#[test]
fn unit_transposes_are_the_format_crates_shuffles() {
    let data = ramp(4099);
    for typesize in [1, 2, 3, 4, 8, 16, 24] {
        for len in [0, 1, 7, 64, 4096, 4099] {
            let block = &data[..len];
            let mut expected = vec![0u8; len];
            shuffle::shuffle(block, &mut expected, typesize).unwrap();
            let shuffled = transpose(Direction::Shuffle, Shuffle::Byte, typesize, block);
            assert_eq!(shuffled, expected, "byte shuffle, typesize {typesize}, {len} bytes");
            assert_eq!(transpose(Direction::Unshuffle, Shuffle::Byte, typesize, &shuffled), block);
            shuffle::bitshuffle(block, &mut expected, typesize).unwrap();
            let shuffled = transpose(Direction::Shuffle, Shuffle::Bit, typesize, block);
            assert_eq!(shuffled, expected, "bit shuffle, typesize {typesize}, {len} bytes");
            assert_eq!(transpose(Direction::Unshuffle, Shuffle::Bit, typesize, &shuffled), block);
        }
    }
}

#[test]
fn warps_decode_c_blosc_chunks_of_every_compressor() {
    let mut data = ramp(60_000);
    data.extend(text_bytes(20_000, 12));
    let every_shuffle = [(4, Shuffle::Byte), (8, Shuffle::Bit), (2, Shuffle::None), (24, Shuffle::Byte)];
    // zstd's warp decoder meets at the emulated warp's barrier for every batch of sequences: one case of 12 KiB in
    // 4 KiB blocks.
    let cases = ["lz4", "lz4hc", "blosclz", "zlib", "snappy"].map(|c| (c, &every_shuffle[..], &data[..], 0));
    let zstd = ("zstd", &every_shuffle[1..2], &data[50_000..62_288], 4096);
    for (compressor, shuffles, data, blocksize) in cases.into_iter().chain([zstd]) {
        for &(typesize, shuffle) in shuffles {
            let chunk = c_blosc::compress(data, typesize, shuffle, compressor, 5, blocksize);
            assert_eq!(kernel_decompress(&chunk).unwrap(), data, "{compressor} typesize {typesize} {shuffle:?}");
        }
    }
}

#[test]
fn warps_report_the_scalar_status_for_corrupt_chunks() {
    let mut damaged = Vec::new();
    // zstd's frames are slow under emulation (above): a smaller chunk, fewer places.
    for (compressor, data, blocksize, places) in [("lz4", ramp(70_000), 0, 23), ("zstd", ramp(12_000), 4096, 6)] {
        let chunk = c_blosc::compress(&data, 4, Shuffle::Byte, compressor, 5, blocksize);
        for at in (blosc::HEADER_LEN..chunk.len()).step_by(chunk.len() / places) {
            let mut bad = chunk.clone();
            bad[at] ^= 0xA5;
            damaged.push(bad);
        }
        damaged.push(chunk[..chunk.len() / 2].to_vec());
    }
    damaged.push(random_bytes(5000, 13));
    for (i, bad) in damaged.iter().enumerate() {
        assert_eq!(kernel_decompress(bad), scalar_decompress(bad), "damaged chunk {i}");
    }
}

#[test]
fn the_encoder_the_kernel_mirrors_is_read_by_c_blosc() {
    let data = ramp(500_000);
    for (typesize, shuffle) in [(4, Shuffle::Byte), (4, Shuffle::Bit), (1, Shuffle::None), (3, Shuffle::Byte)] {
        let mut out = vec![0u8; blosc::max_compressed_size(data.len())];
        let mut tmp = vec![0u8; blosc::compute_blocksize(data.len(), typesize)];
        let n = blosc::compress(&data, typesize, shuffle, &mut out, &mut [0u16; HASH_ENTRIES], &mut tmp).unwrap();
        assert_eq!(c_blosc::decompress(&out[..n]).as_ref(), Some(&data), "typesize {typesize} {shuffle:?}");
        assert_eq!(kernel_decompress(&out[..n]).unwrap(), data);
    }
}

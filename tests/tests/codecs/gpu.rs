//! On the GPU: the CPU's bytes written, streams from the CPU libraries and c-blosc decoded, Blosc's scratch
//! limits, and a status per corrupt chunk equal to the CPU decoder's.

use crate::support::{
    BITCOMP, BLOSC, CASCADED, CHUNK, WRAPPERS, all_options, buffer_codec, cpu_compress, cpu_decompress,
    flate2_compress, gpu_compress, gpu_decompress, lossy_bitcomp, mixed_bytes, scratch,
};
use ferrocomp::{
    Ans, AnsDataType, BatchCodec, Bitstream, Blosc, BufferCodec, ChecksumPolicy, Config, Deflate, GDeflate, Lz4,
    Options, Results, Shuffle, Snappy, Status, Wrapper, Zstd,
};
use ferrocomp_format::deflate::PART_SIZE;
use ferrocomp_tests::{DeviceChunks, c_blosc, gpu, int32_bytes, random_bytes, short_repeats_bytes, text_bytes};

#[test]
fn gpu_writes_the_cpu_bytes_and_reads_them_back() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = mixed_bytes(4 * CHUNK, 6);
    let pieces: Vec<&[u8]> = vec![&data[..0], &data[..1], &data[..1000], &data[..CHUNK], &data[CHUNK..3 * CHUNK / 2]];
    for options in all_options() {
        let codec = options.codec();
        let on_gpu = gpu_compress(&gpu, codec, &pieces, &stream);
        for (piece, ours) in pieces.iter().zip(&on_gpu) {
            assert_eq!(*ours, cpu_compress(codec, piece), "{options:?}, {} bytes", piece.len());
        }
        let streams: Vec<&[u8]> = on_gpu.iter().map(Vec::as_slice).collect();
        let capacities: Vec<usize> = pieces.iter().map(|p| p.len()).collect();
        for (i, (status, bytes)) in gpu_decompress(&gpu, codec, &streams, &capacities, &stream).into_iter().enumerate()
        {
            assert_eq!((status, bytes.as_slice()), (Status::Success, pieces[i]), "{options:?}");
        }
    }
}

#[test]
fn deflate_chunks_past_a_part_compress_as_on_the_cpu() {
    // nvCOMP's single-chunk bitstreams hold more than its 64 KiB chunks: a batch with one goes to
    // the parts kernels, which write the CPU's streams for every chunk of it.
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = mixed_bytes(200_000, 7);
    let pieces: Vec<&[u8]> = vec![&data[..1000], &data[..PART_SIZE], &data[..PART_SIZE + 1], &data[..]];
    for level in [0, 1, 4] {
        for options in
            [Options::Deflate(Deflate { level, wrapper: Wrapper::Gzip }), Options::GDeflate(GDeflate { level })]
        {
            let codec = options.codec();
            let on_gpu = gpu_compress(&gpu, codec, &pieces, &stream);
            for (piece, ours) in pieces.iter().zip(&on_gpu) {
                assert_eq!(*ours, cpu_compress(codec, piece), "{options:?}, {} bytes", piece.len());
            }
            let streams: Vec<&[u8]> = on_gpu.iter().map(Vec::as_slice).collect();
            let capacities: Vec<usize> = pieces.iter().map(|p| p.len()).collect();
            for (i, (status, bytes)) in
                gpu_decompress(&gpu, codec, &streams, &capacities, &stream).into_iter().enumerate()
            {
                assert_eq!((status, bytes.as_slice()), (Status::Success, pieces[i]), "{options:?}");
            }
        }
    }
}

#[test]
fn gpu_codes_a_lone_chunk_that_ends_its_buffer() {
    // Under memcheck, a read past the chunk's last byte is a read past its buffer's: one chunk of an
    // odd size (a partial last tile, warps of a block with nothing to code) in a buffer of its own.
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = mixed_bytes(CHUNK, 9);
    let piece = &data[..12 * 1024 + 777];
    for options in all_options() {
        let codec = options.codec();
        let on_gpu = gpu_compress(&gpu, codec, &[piece], &stream);
        assert_eq!(on_gpu[0], cpu_compress(codec, piece), "{options:?}");
        let decoded = gpu_decompress(&gpu, codec, &[&on_gpu[0]], &[piece.len()], &stream);
        assert_eq!(decoded[0], (Status::Success, piece.to_vec()), "{options:?}");
    }
}

#[test]
fn gpu_decodes_streams_from_the_cpu_libraries() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = mixed_bytes(2 << 20, 7);
    for wrapper in WRAPPERS {
        let streams: Vec<Vec<u8>> = [0, 1, 6, 9].map(|level| flate2_compress(&data, level, wrapper)).to_vec();
        let refs: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
        let codec = Deflate { level: 1, wrapper };
        for (status, bytes) in gpu_decompress(&gpu, &codec, &refs, &[data.len(); 4], &stream) {
            assert_eq!(status, Status::Success, "{wrapper:?}");
            assert!(bytes == data, "{wrapper:?}");
        }
    }
    let theirs = snap::raw::Encoder::new().compress_vec(&data).unwrap();
    let decoded = gpu_decompress(&gpu, &Snappy::default(), &[&theirs], &[data.len()], &stream);
    assert!(decoded[0].0 == Status::Success && decoded[0].1 == data);
}

#[test]
fn gpu_decodes_c_blosc_chunks_of_every_compressor_shuffle_and_size() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = mixed_bytes(3 << 20, 9);
    let mut chunks = Vec::new();
    for compressor in ["lz4", "lz4hc", "blosclz", "zlib", "snappy", "zstd"] {
        for (typesize, shuffle) in [(4, Shuffle::Byte), (8, Shuffle::Bit), (2, Shuffle::None), (24, Shuffle::Byte)] {
            for len in [0, 100, 70_000, data.len()] {
                chunks.push((c_blosc::compress(&data[..len], typesize, shuffle, compressor, 5, 0), len));
            }
        }
    }
    let streams: Vec<&[u8]> = chunks.iter().map(|(chunk, _)| chunk.as_slice()).collect();
    let capacities: Vec<usize> = chunks.iter().map(|&(_, len)| len).collect();
    let decoded = gpu_decompress(&gpu, &Blosc::default(), &streams, &capacities, &stream);
    for (i, (status, bytes)) in decoded.into_iter().enumerate() {
        assert_eq!(status, Status::Success, "c-blosc chunk {i}");
        assert!(bytes == data[..capacities[i]], "c-blosc chunk {i}");
    }
}

#[test]
fn gpu_blosc_keeps_a_chunk_exactly_as_long_as_a_memcpyed_one_laid_out() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let codec = Blosc { typesize: 4, shuffle: Shuffle::Byte };
    // Random bytes after a run of zeros: some run length makes the laid-out chunk exactly the
    // memcpyed size (n + 16) without the memcpyed flag.
    let random = random_bytes(CHUNK, 21);
    let chunk = (0..CHUNK)
        .map(|zeros| [vec![0u8; zeros], random[zeros..].to_vec()].concat())
        .find(|data| {
            let ours = cpu_compress(&codec, data);
            ours.len() == data.len() + 16 && ours[2] & 2 == 0
        })
        .expect("a chunk that lays out to the memcpyed size");
    let on_gpu = gpu_compress(&gpu, &codec, &[&chunk], &stream);
    assert!(on_gpu[0] == cpu_compress(&codec, &chunk), "the GPU wrote other bytes than the CPU");
    let decoded = gpu_decompress(&gpu, &codec, &[&on_gpu[0]], &[CHUNK], &stream);
    assert!(decoded[0].0 == Status::Success && decoded[0].1 == chunk);
}

#[test]
fn gpu_blosc_fails_a_shuffled_chunk_its_scratch_has_no_room_for_and_decodes_the_rest() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = mixed_bytes(16 * CHUNK, 22);
    let shuffled = Blosc { typesize: 4, shuffle: Shuffle::Byte };
    let plain = Blosc { typesize: 4, shuffle: Shuffle::None };
    let (small, large) = (&data[..CHUNK], &data[..]);
    let chunks = [cpu_compress(&shuffled, small), cpu_compress(&shuffled, large), cpu_compress(&plain, large)];
    let streams: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
    let inputs = DeviceChunks::upload(&gpu, &streams);
    let outputs = DeviceChunks::slots(&gpu, &[large.len(); 3]);
    let (mut sizes, mut statuses) = (gpu.alloc::<usize>(3).unwrap(), gpu.alloc::<u32>(3).unwrap());
    // Scratch for chunks of CHUNK bytes: the unshuffle has no room to stage the large one.
    let mut scratch = scratch(&gpu, shuffled.decompress_scratch_size(3, CHUNK));
    let results = Results { sizes: sizes.view_mut(), statuses: statuses.view_mut() };
    unsafe {
        shuffled.decompress_async(&gpu, inputs.chunks(), outputs.chunks(), scratch.view_mut(), results, None, &stream)
    }
    .unwrap();
    stream.synchronize().unwrap();
    let statuses: Vec<Status> = gpu.download(statuses.view()).unwrap().into_iter().map(Status::from_code).collect();
    assert_eq!(statuses, [Status::Success, Status::ChunkTooLarge, Status::Success]);
    let sizes = gpu.download(sizes.view()).unwrap();
    assert_eq!(sizes, [small.len(), 0, large.len()]);
    assert!(outputs.download(&gpu, 0, sizes[0]) == small && outputs.download(&gpu, 2, sizes[2]) == large);
}

/// Zstd on the GPU writes the CPU's frames at every level for chunks of a whole number of words,
/// the last ending where its buffer ends: under memcheck (`scripts/gpu-check.sh`), the search's
/// loads near a chunk's end stay inside it.
#[test]
fn zstd_chunks_ending_at_their_buffer_compress_as_on_the_cpu() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = text_bytes(3 * 16384, 12);
    let pieces: Vec<&[u8]> = data.chunks(16384).collect();
    for level in Zstd::LEVELS {
        let codec = Zstd { level };
        let frames = gpu_compress(&gpu, &codec, &pieces, &stream);
        for (i, (piece, frame)) in pieces.iter().zip(&frames).enumerate() {
            assert!(*frame == cpu_compress(&codec, piece), "level {level}, chunk {i}: the GPU wrote other bytes");
        }
    }
}

#[test]
fn corrupt_chunks_get_the_cpu_decoders_status_and_the_rest_decode() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let data = text_bytes(8 * CHUNK, 8);
    let pieces: Vec<&[u8]> = data.chunks(CHUNK).collect();
    for options in [
        Options::Snappy(Snappy::default()),
        Options::Deflate(Deflate { level: 1, wrapper: Wrapper::Raw }),
        Options::Deflate(Deflate { level: 4, wrapper: Wrapper::Zlib }),
        Options::Deflate(Deflate { level: 1, wrapper: Wrapper::Gzip }),
        Options::GDeflate(GDeflate { level: 1 }),
        Options::Blosc(BLOSC[1]),
        Options::Blosc(BLOSC[2]),
        Options::Zstd(Zstd { level: 1 }),
        Options::Zstd(Zstd { level: 2 }),
        Options::Cascaded(CASCADED[0]),
        Options::Cascaded(CASCADED[3]),
        Options::Bitcomp(BITCOMP[0]),
        Options::Bitcomp(BITCOMP[1]),
        Options::Bitcomp(lossy_bitcomp(0.01)[1]),
        Options::Ans(Ans { data_type: AnsDataType::Bytes }),
        Options::Ans(Ans { data_type: AnsDataType::Float16 }),
    ] {
        let codec = options.codec();
        let mut streams: Vec<Vec<u8>> = pieces.iter().map(|p| cpu_compress(codec, p)).collect();
        let half = streams[1].len() / 2;
        streams[1].truncate(half); // truncated
        streams[2].iter_mut().skip(40).step_by(97).for_each(|b| *b ^= 0x5A); // bit flips
        let last = streams[3].len() - 1;
        streams[3][last] ^= 0x80; // trailer or last symbols
        streams[4] = random_bytes(5000, 9); // garbage
        let mut capacities = vec![CHUNK; pieces.len()];
        capacities[5] = CHUNK - 1; // one byte too small
        let refs: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
        let decoded = gpu_decompress(&gpu, codec, &refs, &capacities, &stream);
        for (i, (status, bytes)) in decoded.into_iter().enumerate() {
            let expected = cpu_decompress(codec, refs[i], capacities[i]);
            assert_eq!(status, expected.as_ref().err().copied().unwrap_or(Status::Success), "{options:?} chunk {i}");
            if let Ok(expected) = expected {
                assert!(bytes == expected, "{options:?} chunk {i}");
            }
        }
        assert_ne!(cpu_decompress(codec, refs[1], CHUNK).err(), None, "{options:?}: truncation must fail");
        assert_eq!(cpu_decompress(codec, refs[5], CHUNK - 1).err(), Some(Status::OutputTooSmall), "{options:?}");
    }
}

/// The two decoders of LZ4, Snappy, Zstd, Deflate and GDeflate, for small batches (several warps
/// a chunk; GDeflate's with the output staged in shared memory in the smallest) and a warp a
/// chunk (Snappy's: a pair of warps), give the CPU decoder's bytes and statuses on the same chunks: whole, damaged, cut, too
/// large for LZ4's block decoder (for Deflate and GDeflate, whose chunks are 64 KiB at most, more
/// room than GDeflate's staging holds), and given too little room; batches of 16 chunks and of
/// the most the block decoder takes.
#[test]
fn small_batches_decode_alike_by_blocks_and_by_warps() {
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    for options in [
        Options::Lz4(Lz4::default()),
        Options::Snappy(Snappy::default()),
        Options::Zstd(Zstd { level: 1 }),
        Options::Zstd(Zstd { level: 2 }),
        Options::Deflate(Deflate { level: 1, wrapper: Wrapper::Raw }),
        Options::Deflate(Deflate { level: 1, wrapper: Wrapper::Gzip }),
        Options::GDeflate(GDeflate::default()),
        Options::Ans(Ans { data_type: AnsDataType::Bytes }),
        Options::Ans(Ans { data_type: AnsDataType::Float32 }),
    ] {
        let codec = options.codec();
        let sms = gpu.multiprocessors();
        let pages = matches!(options, Options::Deflate(_) | Options::GDeflate(_)); // chunks of 64 KiB at most
        // ANS chooses its decoder by the chunks' size too: every chunk within CHUNK, room for no more.
        let sized = matches!(options, Options::Ans(_));
        let block_decoder = |count| codec.block_decoder(count, Some(CHUNK), sms);
        let by_warps = (1..1 << 20).find(|&count| block_decoder(count).is_none()).unwrap();
        assert!(block_decoder(1).is_some(), "{options:?}: one chunk decodes by blocks");
        let mut chunks: Vec<Vec<u8>> = (0..by_warps as u64)
            .map(|i| match i % 6 {
                0 => text_bytes(CHUNK, i),
                1 => int32_bytes(CHUNK - i as usize),
                2 => short_repeats_bytes(CHUNK / 2, i),
                3 => vec![0; CHUNK],
                4 => random_bytes(CHUNK, i), // incompressible: copied in turn
                _ => mixed_bytes(CHUNK / 3, i),
            })
            .collect();
        if !pages && !sized {
            chunks[7] = text_bytes(3 * CHUNK, 7); // past the block decoder's limit
        }
        let mut streams: Vec<Vec<u8>> = chunks.iter().map(|c| cpu_compress(codec, c)).collect();
        let mut capacities: Vec<usize> = chunks.iter().map(Vec::len).collect();
        if pages {
            capacities[7] = 3 * CHUNK; // more room than is staged: decoded in place
        }
        let half = streams[1].len() / 2;
        streams[1].truncate(half);
        streams[2].iter_mut().skip(40).step_by(97).for_each(|b| *b ^= 0x5A);
        streams[4] = random_bytes(5000, 9);
        capacities[5] -= 1;
        let refs: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
        let small = 16;
        let in_blocks = gpu_decompress(&gpu, codec, &refs[..small], &capacities[..small], &stream);
        let most = by_warps - 1;
        let in_most_blocks = gpu_decompress(&gpu, codec, &refs[..most], &capacities[..most], &stream);
        let in_warps = gpu_decompress(&gpu, codec, &refs, &capacities, &stream);
        for (i, (status, bytes)) in in_warps.into_iter().enumerate() {
            let expected = cpu_decompress(codec, refs[i], capacities[i]);
            assert_eq!(status, expected.as_ref().err().copied().unwrap_or(Status::Success), "{options:?} chunk {i}");
            assert!(expected.as_ref().map_or(true, |e| *e == bytes), "{options:?} chunk {i} by warps");
            if let Some((block_status, block_bytes)) = in_blocks.get(i) {
                assert_eq!((*block_status, block_bytes), (status, &bytes), "{options:?} chunk {i} by blocks");
            }
            if let Some((block_status, block_bytes)) = in_most_blocks.get(i) {
                assert_eq!((*block_status, block_bytes), (status, &bytes), "{options:?} chunk {i} of {most} by blocks");
            }
        }
    }
}

#[test]
fn gpu_buffer_codec_round_trips_every_codec() {
    let Some(gpu) = gpu() else { return };
    let data = mixed_bytes(5 * CHUNK + 77, 10);
    for options in all_options() {
        let on_gpu = buffer_codec(options, Bitstream::Native, Some(gpu.clone()));
        let compressed = on_gpu.compress(&data).unwrap();
        assert_eq!(compressed, buffer_codec(options, Bitstream::Native, None).compress(&data).unwrap());
        assert_eq!(on_gpu.decompress(&compressed).unwrap(), data, "{options:?}");
    }
}

#[test]
fn gpu_ans_blocks_fitted_to_the_chunks_code_alike() {
    // The host fits ANS's blocks to the chunks it is told of (the native container tells its chunk
    // size): a warp for 4 KiB, two for 16 KiB, four for 24 KiB (three sub-blocks), and for 256 KiB
    // and 1 MiB in a batch this short an SM's worth. Each writes the CPU's bytes and reads them
    // back, bytes and float32.
    let Some(gpu) = gpu() else { return };
    let data = mixed_bytes((3 << 20) + 4, 14);
    for chunk_size in [4096, 16384, 24576, 256 << 10, 1 << 20] {
        for data_type in [AnsDataType::Bytes, AnsDataType::Float32] {
            let options = Options::Ans(Ans { data_type });
            let config =
                Config { chunk_size, bitstream: Bitstream::Native, checksum: ChecksumPolicy::ComputeAndVerify };
            let on_gpu = BufferCodec::new(options, config, Some(gpu.clone())).unwrap();
            let compressed = on_gpu.compress(&data).unwrap();
            let on_cpu = BufferCodec::new(options, config, None).unwrap();
            assert!(compressed == on_cpu.compress(&data).unwrap(), "{data_type:?}, chunks of {chunk_size}");
            assert!(on_gpu.decompress(&compressed).unwrap() == data, "{data_type:?}, chunks of {chunk_size}");
        }
    }
}

#[test]
fn gpu_ans_codes_chunks_of_many_sub_block_rounds() {
    // Past a block's eight sub-blocks a chunk is coded a round of them at a time, its stage reused:
    // the CPU's bytes at every data type; a chunk found larger than stored only in its last round
    // (7-bit noise, then 8-bit noise) stored whole; a sub-block of the rarest symbols, about the
    // most words a sub-block's coding emits.
    let Some(gpu) = gpu() else { return };
    let stream = gpu.stream().unwrap();
    let mixed = mixed_bytes(5 * CHUNK, 11);
    let seven_bits: Vec<u8> = random_bytes(CHUNK, 12).iter().map(|b| b & 0x7F).collect();
    let stored_late = [seven_bits, random_bytes(3 * CHUNK, 13)].concat();
    let mut rarest = vec![b'a'; 7 * CHUNK / 8];
    rarest.extend((0..CHUNK / 8).map(|i| (b'a' as usize + 1 + i % 255) as u8));
    let pieces: Vec<&[u8]> = vec![&mixed[..CHUNK + 1], &mixed[..5 * CHUNK - 3], &stored_late, &rarest];
    for data_type in [AnsDataType::Bytes, AnsDataType::Float16, AnsDataType::Float32, AnsDataType::Float8] {
        let codec = Ans { data_type };
        let on_gpu = gpu_compress(&gpu, &codec, &pieces, &stream);
        for (piece, ours) in pieces.iter().zip(&on_gpu) {
            assert_eq!(*ours, cpu_compress(&codec, piece), "{data_type:?}, {} bytes", piece.len());
        }
        let streams: Vec<&[u8]> = on_gpu.iter().map(Vec::as_slice).collect();
        let capacities: Vec<usize> = pieces.iter().map(|p| p.len()).collect();
        for (i, (status, bytes)) in gpu_decompress(&gpu, &codec, &streams, &capacities, &stream).into_iter().enumerate()
        {
            assert_eq!((status, bytes.as_slice()), (Status::Success, pieces[i]), "{data_type:?}, piece {i}");
        }
    }
    assert_eq!(cpu_compress(&Ans::default(), &stored_late)[2], 1, "stored");
}

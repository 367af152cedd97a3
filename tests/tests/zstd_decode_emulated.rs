//! The Zstandard decode kernel on an emulated warp (32 host threads in lockstep), and its team
//! form on an emulated block (warps writing chunks, one more reading the sequences for them all):
//! for libzstd's frames of every kind, hand-made ones and corrupt ones, both must write exactly
//! the bytes and report exactly the status of the format crate's scalar decoder.

use std::io::Write;

use ferrocomp_format::Status;
use ferrocomp_format::zstd::{self, DecodeTables, MAGIC};
use ferrocomp_kernels_gpu::block::Block;
use ferrocomp_kernels_gpu::emulated;
use ferrocomp_kernels_gpu::zstd::decode::{
    DECODE_SHARED_BYTES_PER_WARP, FullSequences, SIZES_SHARED_BYTES_PER_WARP, SequenceForm, TeamWriter, WalkedStates,
    decompress_chunk, decompressed_size, read_for_team,
};
use ferrocomp_tests::{agreed, random_bytes, text_bytes};

/// Shared memory of one warp (as much as either kernel takes), full of garbage as a reused
/// block's would be.
fn warp_shared() -> Vec<u128> {
    shared_of(1)
}

/// Shared memory of `warps` warps (16-byte aligned), full of garbage.
fn shared_of(warps: usize) -> Vec<u128> {
    let bytes = warps * DECODE_SHARED_BYTES_PER_WARP.max(SIZES_SHARED_BYTES_PER_WARP);
    (0..bytes.div_ceil(16)).map(|i| (i as u128).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835)).collect()
}

/// The kernel's result with room for `capacity` bytes.
fn warp_decompress(frames: &[u8], capacity: usize) -> Result<Vec<u8>, Status> {
    let mut shared = warp_shared();
    let mut out = vec![0xA5u8; capacity];
    let (i, o, s) = (frames.as_ptr() as usize, out.as_mut_ptr() as usize, shared.as_mut_ptr() as usize);
    let result = agreed(emulated::run(|warp| unsafe {
        decompress_chunk(warp, i as *const u8, frames.len(), o as *mut u8, capacity, s as *mut u8)
    }));
    result.map(|n| {
        out.truncate(n);
        out
    })
}

/// The team kernel's results for `chunks` (frames, and the room their output has), taken in
/// turns by a team of `writers` handing batches over in the form `F`: each chunk's, which the
/// lanes of its writer agree on.
fn team_decompress<F: SequenceForm>(chunks: &[(&[u8], usize)], writers: usize) -> Vec<Result<Vec<u8>, Status>> {
    let mut shared = shared_of(writers);
    let mut outs: Vec<Vec<u8>> = chunks.iter().map(|&(_, capacity)| vec![0xA5u8; capacity]).collect();
    let places: Vec<_> = chunks
        .iter()
        .zip(&mut outs)
        .map(|(&(i, _), o)| (i.as_ptr() as usize, i.len(), o.as_mut_ptr() as usize, o.len()))
        .collect();
    let s = shared.as_mut_ptr() as usize;
    let threads = emulated::run_block(32 * (writers as u32 + 1), |thread| unsafe {
        let warp = thread.thread() as usize / 32;
        if warp == writers {
            read_for_team::<_, _, F>(thread, thread, s as *mut u8);
            return vec![];
        }
        let mut writer = TeamWriter::<_, F>::new(thread, thread, s as *mut u8);
        let results: Vec<_> = (warp..places.len())
            .step_by(writers)
            .map(|k| {
                let (i, n, o, capacity) = places[k];
                writer.decompress(thread, i as *const u8, n, o as *mut u8, capacity)
            })
            .collect();
        writer.finish(thread);
        results
    });
    (0..chunks.len())
        .map(|k| {
            let (writer, turn) = (k % writers, k / writers);
            let lanes = threads[32 * writer..32 * (writer + 1)].iter().map(|results| results[turn]).collect();
            agreed(lanes).map(|n| outs[k][..n].to_vec())
        })
        .collect()
}

fn warp_size(frames: &[u8]) -> Result<usize, Status> {
    let mut shared = warp_shared();
    let (i, s) = (frames.as_ptr() as usize, shared.as_mut_ptr() as usize);
    agreed(emulated::run(|warp| unsafe { decompressed_size(warp, i as *const u8, frames.len(), s as *mut u8) }))
}

fn scalar_decompress(frames: &[u8], capacity: usize) -> Result<Vec<u8>, Status> {
    let mut tables: Box<DecodeTables> = unsafe { Box::new_zeroed().assume_init() };
    let mut out = vec![0u8; capacity];
    zstd::decompress(frames, &mut out, &mut tables).map(|n| {
        out.truncate(n);
        out
    })
}

fn scalar_size(frames: &[u8]) -> Result<usize, Status> {
    let mut tables: Box<DecodeTables> = unsafe { Box::new_zeroed().assume_init() };
    zstd::decompressed_size(frames, &mut tables)
}

/// The kernel's bytes and status equal the scalar decoder's, with room for `capacity` bytes;
/// returns them.
fn check_same(frames: &[u8], capacity: usize, what: &str) -> Result<Vec<u8>, Status> {
    let expected = scalar_decompress(frames, capacity);
    let got = warp_decompress(frames, capacity);
    let paired = team_decompress::<FullSequences>(&[(frames, capacity)], 1).remove(0);
    let walked = team_decompress::<WalkedStates>(&[(frames, capacity)], 1).remove(0);
    let len = |result: &Result<Vec<u8>, Status>| result.as_ref().map(Vec::len).map_err(|&status| status);
    assert!(got == expected, "{what}: kernel {:?} scalar {:?}", len(&got), len(&expected));
    assert!(paired == expected, "{what}: a team of one {:?} scalar {:?}", len(&paired), len(&expected));
    assert!(walked == expected, "{what}: a team of one, walked {:?} scalar {:?}", len(&walked), len(&expected));
    assert_eq!(warp_size(frames), scalar_size(frames), "{what}: sizes");
    got
}

/// libzstd's frame of `data` at `level`, with a checksum and content size as asked, and a window
/// of `1 << window_log` bytes (small windows make small blocks, so a small input has many).
fn libzstd(data: &[u8], level: i32, checksum: bool, content_size: bool, window_log: Option<u32>) -> Vec<u8> {
    let mut encoder = ::zstd::stream::Encoder::new(Vec::new(), level).unwrap();
    encoder.include_checksum(checksum).unwrap();
    encoder.include_contentsize(content_size).unwrap();
    if content_size {
        encoder.set_pledged_src_size(Some(data.len() as u64)).unwrap();
    }
    if let Some(log) = window_log {
        encoder.window_log(log).unwrap();
    }
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

/// Little-endian u32s of a slow ramp with noise: short repeat offsets (4, 8).
fn numbers(n: usize, seed: u64) -> Vec<u8> {
    let noise = random_bytes(n / 4 + 1, seed);
    (0..n / 4 + 1).flat_map(|i| (i as u32 / 3 + (noise[i] & 1) as u32).to_le_bytes()).take(n).collect()
}

/// Random bytes 0..13 (a small Huffman alphabet, weights written directly).
fn small_alphabet(n: usize, seed: u64) -> Vec<u8> {
    random_bytes(n, seed).into_iter().map(|b| b % 13).collect()
}

/// Runs of a few values with short random stretches between.
fn runs(n: usize, seed: u64) -> Vec<u8> {
    let noise = random_bytes(n.max(64), seed);
    let mut out = Vec::with_capacity(n + 600);
    let mut i = 0;
    while out.len() < n {
        out.extend(std::iter::repeat_n([0u8, 0xFF, b'a'][noise[i] as usize % 3], 1 + noise[i + 1] as usize * 2));
        out.extend(&noise[i + 2..i + 2 + noise[i + 3] as usize % 6]);
        i = (i + 8) % (noise.len() - 8);
    }
    out.truncate(n);
    out
}

/// Short stretches repeating a pattern of 1 to 40 random bytes, a few random bytes between:
/// short sequences whose matches read within themselves and within the writer's step.
fn periods(n: usize, seed: u64) -> Vec<u8> {
    let noise = random_bytes(n.max(64) + 64, seed);
    let mut out = Vec::with_capacity(n + 64);
    let mut i = 0;
    while out.len() < n {
        let period = 1 + noise[i] as usize % 40;
        let len = period + 3 + noise[i + 1] as usize % 24;
        let pattern = &noise[i + 2..i + 2 + period];
        out.extend(pattern.iter().cycle().take(len));
        out.extend(&noise[i + 44..i + 44 + noise[i + 3] as usize % 3]);
        i = (i + 7) % (noise.len() - 48);
    }
    out.truncate(n);
    out
}

type Generator = fn(usize, u64) -> Vec<u8>;
const KINDS: [(&str, Generator); 6] = [
    ("text", text_bytes),
    ("numbers", numbers),
    ("runs", runs),
    ("periods", periods),
    ("random", random_bytes),
    ("small", small_alphabet),
];

#[test]
fn libzstd_frames_decode_as_the_scalar_decoder_does() {
    // (The emulated warp meets at a host barrier for every warp operation: sizes stay small.)
    for (name, generate) in KINDS {
        for (i, size) in [0usize, 1, 200, 1500].into_iter().enumerate() {
            let data = generate(size, 40 + i as u64);
            for (level, checksum, content_size) in [(-5, true, false), (3, false, true), (19, true, true)] {
                let frame = libzstd(&data, level, checksum, content_size, None);
                let what = format!("{name} {size} level {level} checksum {checksum} size {content_size}");
                assert_eq!(check_same(&frame, size, &what).as_deref(), Ok(&data[..]), "{what}");
                if size > 0 && level == -5 {
                    assert_eq!(check_same(&frame, size - 1, &what), Err(Status::OutputTooSmall), "{what}");
                }
            }
        }
    }
}

#[test]
fn many_small_blocks_repeat_their_tables() {
    // A 1 KiB window makes 1 KiB blocks: treeless literals and repeat-mode tables follow.
    for (name, generate) in KINDS {
        let data = generate(6000, 7);
        let frame = libzstd(&data, 19, true, false, Some(10));
        let what = format!("{name} in 1 KiB blocks");
        assert_eq!(check_same(&frame, data.len(), &what).as_deref(), Ok(&data[..]), "{what}");
    }
}

#[test]
fn large_blocks_and_long_matches() {
    // Text, a long run, incompressible bytes (raw blocks), and the text again from 150 KB back:
    // full 128 KiB blocks and long matches, copied alone.
    let text = text_bytes(20_000, 3);
    let mut data = text.clone();
    data.extend(vec![b'x'; 30_000]);
    data.extend(random_bytes(100_000, 4));
    data.extend(&text);
    let frame = libzstd(&data, 3, true, true, None);
    assert_eq!(check_same(&frame, data.len(), "large").as_deref(), Ok(&data[..]));
}

#[test]
fn literals_wait_in_the_room_the_output_has_left() {
    // Two frames of many blocks, with and without a content size (whose room ends at the frame's
    // end): each block's literals are decoded at the end of its room, as close to their place as
    // the output allows (exactly), a few bytes on, or a block on; the sequences run on in batches
    // across blocks and frames. Text, and numbers and periods (short offsets, matches reading
    // the bytes just written).
    for (name, generate) in KINDS.into_iter().filter(|(name, _)| ["text", "numbers", "periods"].contains(name)) {
        let data = generate(2500, 9);
        for content_size in [false, true] {
            let one = libzstd(&data, 19, false, content_size, Some(10));
            let frames = [one.clone(), one].concat();
            let both = [&data[..], &data[..]].concat();
            for spare in [0, 3, 5000] {
                let what = format!("{name}, content size {content_size}, {spare} bytes spare");
                assert_eq!(check_same(&frames, both.len() + spare, &what).as_deref(), Ok(&both[..]), "{what}");
            }
            let what = format!("{name}, content size {content_size}, a byte short");
            assert_eq!(check_same(&frames, both.len() - 1, &what), Err(Status::OutputTooSmall), "{what}");
        }
    }
}

/// A skippable frame with `payload`.
fn skippable(payload: &[u8]) -> Vec<u8> {
    let mut frame = 0x184D_2A5Au32.to_le_bytes().to_vec();
    frame.extend((payload.len() as u32).to_le_bytes());
    frame.extend(payload);
    frame
}

/// A block header: `last`, `kind` (0 raw, 1 RLE, 2 compressed), `size`.
fn block(last: bool, kind: u32, size: usize, content: &[u8]) -> Vec<u8> {
    let v = ((size as u32) << 3) | (kind << 1) | last as u32;
    [&[v as u8, (v >> 8) as u8, (v >> 16) as u8][..], content].concat()
}

/// A frame with a 1 KiB window, content size `size` if given, and `blocks`.
fn frame(size: Option<u32>, blocks: &[Vec<u8>]) -> Vec<u8> {
    let mut frame = MAGIC.to_le_bytes().to_vec();
    frame.extend([if size.is_some() { 2 << 6 } else { 0 }, 0]);
    if let Some(size) = size {
        frame.extend(size.to_le_bytes());
    }
    frame.extend(blocks.concat());
    frame
}

#[test]
fn multiple_frames_and_hand_made_blocks() {
    let (a, b) = (text_bytes(3000, 1), runs(4000, 2));
    let mut frames = skippable(b"meta");
    frames.extend(libzstd(&a, 3, true, true, None));
    frames.extend(skippable(&[]));
    frames.extend(libzstd(&b, 1, false, false, None));
    frames.extend(libzstd(&[], 3, true, true, None));
    let expected = [a, b].concat();
    assert_eq!(check_same(&frames, expected.len(), "frames").as_deref(), Ok(&expected[..]));
    // Raw and RLE blocks; RLE literals with one sequence at repeat offset 1.
    let rle_literals = [&[(5 << 3) | 1, b'z'][..], &[1, 0b0101_0100, 5, 0, 2, 0x01]].concat();
    let hand = frame(
        Some(18),
        &[block(false, 0, 3, b"abc"), block(false, 1, 5, b"q"), block(true, 2, rle_literals.len(), &rle_literals)],
    );
    assert_eq!(check_same(&hand, 64, "hand").as_deref(), Ok(&b"abcqqqqqzzzzzzzzzz"[..]));
    // Offsets: 6 reaches before the frame; 1025 beyond the 1 KiB window; 1024 is fine.
    let before = [&[3 << 3][..], b"abc", &[1, 0b0101_0100, 3, 3, 0, 0b1001]].concat();
    let mut two = frame(Some(3), &[block(true, 0, 3, b"xyz")]);
    two.extend(frame(Some(6), &[block(true, 2, before.len(), &before)]));
    assert_eq!(check_same(&two, 64, "before the frame"), Err(Status::BadOffset));
    let raw = random_bytes(1100, 3);
    for (extra, expected) in [(4u8, Err(Status::BadOffset)), (3, Ok(1103))] {
        let far = [&[0u8, 1, 0b0101_0100, 0, 10, 0][..], &[extra, 0b100]].concat();
        let blocks = [block(false, 0, 1000, &raw[..1000]), block(false, 0, 100, &raw[1000..]), block(true, 2, 8, &far)];
        assert_eq!(check_same(&frame(None, &blocks), 2000, "window").map(|v| v.len()), expected);
    }
}

#[test]
fn corrupt_frames_fail_as_the_scalar_decoder_does() {
    let data = [text_bytes(500, 5), runs(300, 6), small_alphabet(200, 7)].concat();
    let sources = [libzstd(&data, 19, true, false, None), libzstd(&data, 1, false, true, Some(10))];
    // Truncated anywhere.
    for source in &sources {
        for len in (0..source.len()).step_by(7) {
            assert_eq!(check_same(&source[..len], data.len(), &format!("cut at {len}")), Err(Status::Truncated));
        }
    }
    // Mutated: whatever the status, the same.
    let noise = random_bytes(3 * 80, 99);
    for round in 0..80 {
        let mut frame = sources[round % 2].clone();
        let r = &noise[3 * round..3 * round + 3];
        let at = (r[0] as usize * 256 + r[1] as usize) % frame.len();
        frame[at] ^= 1 << (r[2] % 8);
        check_same(&frame, data.len() + 16, &format!("mutation {round} at {at}")).ok();
    }
}

#[test]
fn teams_take_chunks_in_turns() {
    // Writers whose chunks fail mid-way (truncated, damaged, short of room) go on to their next
    // ones while the others' are read: every chunk as the scalar decoder has it.
    let data = [text_bytes(3000, 8), runs(2000, 9), random_bytes(500, 10), periods(2500, 11)].concat();
    let (whole, small_blocks) = (libzstd(&data, 3, true, true, None), libzstd(&data, 19, false, false, Some(10)));
    let mut damaged = small_blocks.clone();
    damaged[small_blocks.len() / 2] ^= 0x10;
    let chunks: Vec<(&[u8], usize)> = vec![
        (&whole, data.len()),
        (&small_blocks, data.len()),
        (&whole[..whole.len() / 2], data.len()),
        (&damaged, data.len()),
        (&small_blocks, data.len() - 1),
        (&small_blocks, data.len()),
        (&whole, data.len()),
    ];
    let expected: Vec<_> = chunks.iter().map(|&(frames, capacity)| scalar_decompress(frames, capacity)).collect();
    assert_eq!(expected[0].as_deref(), Ok(&data[..]));
    for writers in [2, 3] {
        let full = team_decompress::<FullSequences>(&chunks, writers);
        let walked = team_decompress::<WalkedStates>(&chunks, writers);
        for (k, expected) in expected.iter().enumerate() {
            for (form, got) in [("full", &full[k]), ("walked", &walked[k])] {
                assert!(got == expected, "{writers} writers, {form}, chunk {k}: {:?}", got.as_ref().map(Vec::len));
            }
        }
    }
}

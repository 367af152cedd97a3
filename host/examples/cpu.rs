//! The CPU path: the same codecs and bitstreams with no GPU (`None` where a `Gpu` would go), on
//! all cores. Here Zstd with CRC-32s, streamed from a reader to a writer in bounded memory, a
//! decompression into a buffer the caller owns, and a plain .zst frame that libzstd reads.
use ferrocomp::{Bitstream, BufferCodec, ChecksumPolicy, Config, Options, Zstd};

fn main() -> ferrocomp::Result<()> {
    let config = Config { checksum: ChecksumPolicy::ComputeAndVerify, ..Config::default() };
    let codec = BufferCodec::new(Options::Zstd(Zstd { level: 2 }), config, None)?;
    let text: Vec<u8> = (0..200_000).flat_map(|i: u32| format!("line {i}: {}\n", i % 97).into_bytes()).collect();

    // Any `Read` to any `Write` (files, sockets, pipes); here slices and a Vec.
    let mut compressed = Vec::new();
    let totals = codec.compress_stream(&text[..], &mut compressed, &mut |_done| {})?;
    assert_eq!(totals.uncompressed as usize, text.len());

    let mut out = vec![0u8; codec.decompressed_size(&compressed)?];
    let written = codec.decompress_into(&compressed, &mut out)?;
    assert_eq!(&out[..written], &text[..]);

    println!(
        "{} bytes -> {} bytes (Zstd level 2, CRC-32 per chunk) and back, on the CPU",
        text.len(),
        compressed.len()
    );

    // The raw bitstream is one standard Zstandard frame: libzstd (the `zstd` crate) reads it.
    let raw = Config { bitstream: Bitstream::Raw, ..Config::default() };
    let frame = BufferCodec::new(Options::Zstd(Zstd::default()), raw, None)?.compress(&text)?;
    assert_eq!(zstd::decode_all(&frame[..])?, text);
    println!("and as one .zst frame of {} bytes, which libzstd decodes", frame.len());
    Ok(())
}

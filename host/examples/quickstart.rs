//! The README's example: host bytes through the first GPU, or the CPU where there is none.
use ferrocomp::{BufferCodec, Config, Gpu, Options};

fn main() -> ferrocomp::Result<()> {
    let gpu = Gpu::optional(0)?; // None on a machine without a GPU: the CPU writes the same bytes
    let codec = BufferCodec::new(Options::default(), Config::default(), gpu)?; // LZ4, 64 KiB chunks
    let data = b"ferrocomp compresses on the GPU. ".repeat(32_768);
    let compressed = codec.compress(&data)?;
    assert_eq!(codec.decompress(&compressed)?, data);
    let on = codec.gpu().map_or("the CPU", |gpu| gpu.name());
    println!("{} bytes -> {} bytes and back, on {on}", data.len(), compressed.len());
    Ok(())
}

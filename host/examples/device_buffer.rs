//! Compresses a buffer in device memory and decompresses it into device memory the caller owns:
//! no host copy of the data, one stream. Needs a GPU; `cpu.rs` shows the CPU path.
use ferrocomp::{BufferCodec, Config, Gpu, Options, Zstd};

fn main() -> ferrocomp::Result<()> {
    let Some(gpu) = Gpu::optional(0)? else {
        println!("no CUDA device: this example needs one (cpu.rs runs the same codecs on the CPU)");
        return Ok(());
    };
    let stream = gpu.stream()?;
    let codec = BufferCodec::new(Options::Zstd(Zstd::default()), Config::default(), Some(gpu.clone()))?;

    // Four million float32 values of a smooth signal, uploaded once: they stand for data that
    // is already on the GPU (memory of another library works too, through `DeviceView::from_raw`).
    let values: Vec<f32> = (0..1 << 22).map(|i| (i as f32 * 1e-3).sin()).collect();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let input = gpu.upload(&bytes)?;

    let compressed = codec.compress_device(input.view(), &stream)?;
    let mut restored = gpu.alloc::<u8>(bytes.len())?; // the caller's buffer
    let written = codec.decompress_device_into(compressed.view(), restored.view_mut(), &stream)?;
    stream.synchronize()?;

    assert_eq!(written, bytes.len());
    assert_eq!(gpu.download(restored.view())?, bytes);
    println!("{} bytes -> {} bytes and back on {}, all in device memory", bytes.len(), compressed.len(), gpu.name());
    Ok(())
}

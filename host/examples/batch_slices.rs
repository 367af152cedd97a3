//! A batch of pages (64 KiB each, as the pages of a ROOT cluster or the chunks of a Zarr array)
//! compressed in one call, then decompressed in one call into slices of a single output buffer:
//! no allocation per page and no copy. On the GPU when there is one, else the same on the CPU.
use ferrocomp::{Bitstream, ChunkListCodec, DeviceViewMut, Gpu, Options};

const PAGE: usize = 64 << 10;

fn main() -> ferrocomp::Result<()> {
    // 64 pages of little-endian u32 counters: 4 MiB.
    let data: Vec<u8> = (0u32..1 << 20).flat_map(|i| (i / 7).to_le_bytes()).collect();
    let codec = ChunkListCodec::new(Options::default(), Bitstream::Raw, Gpu::optional(0)?)?;
    let room = codec.max_compressed_size(PAGE);
    let restored = match codec.gpu().cloned() {
        Some(gpu) => on_gpu(&codec, &gpu, &data, room)?,
        None => on_cpu(&codec, &data, room)?,
    };
    assert_eq!(restored, data);
    let on = codec.gpu().map_or("the CPU", |gpu| gpu.name());
    println!("{} pages decompressed into one buffer on {on}", data.len() / PAGE);
    Ok(())
}

fn on_gpu(codec: &ChunkListCodec, gpu: &Gpu, data: &[u8], room: usize) -> ferrocomp::Result<Vec<u8>> {
    let stream = gpu.stream()?;
    let input = gpu.upload(data)?;
    let pages: Vec<_> = (0..data.len()).step_by(PAGE).map(|at| input.view().slice(at, PAGE)).collect();
    // The compressed pages go to slices of one buffer, `room` bytes apart.
    let mut compressed = gpu.alloc::<u8>(pages.len() * room)?;
    let outputs = split(compressed.view_mut(), &vec![room; pages.len()]);
    // Safety: every buffer named lives until `wait` returns, and the outputs are disjoint.
    let sizes = unsafe { codec.compress_async(&pages, &outputs, &stream)? }.wait()?;
    drop(outputs);

    let blocks: Vec<_> = sizes.iter().enumerate().map(|(i, &size)| compressed.view().slice(i * room, size)).collect();
    let mut out = gpu.alloc::<u8>(data.len())?;
    let slices = split(out.view_mut(), &vec![PAGE; blocks.len()]);
    let written = unsafe { codec.decompress_async(&blocks, &slices, &stream)? }.wait()?;
    assert!(written.iter().all(|&n| n == PAGE));
    drop(slices);
    gpu.download(out.view())
}

/// `buffer` cut into consecutive slices of `sizes` bytes.
fn split<'a>(mut buffer: DeviceViewMut<'a, u8>, sizes: &[usize]) -> Vec<DeviceViewMut<'a, u8>> {
    let mut slices = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let (slice, rest) = buffer.split_at(size);
        slices.push(slice);
        buffer = rest;
    }
    slices
}

fn on_cpu(codec: &ChunkListCodec, data: &[u8], room: usize) -> ferrocomp::Result<Vec<u8>> {
    let pages: Vec<&[u8]> = data.chunks(PAGE).collect();
    let mut compressed = vec![0u8; pages.len() * room];
    let mut outputs: Vec<&mut [u8]> = compressed.chunks_mut(room).collect();
    let sizes: Vec<usize> = codec.compress_cpu(&pages, &mut outputs).into_iter().collect::<Result<_, _>>()?;

    let blocks: Vec<&[u8]> = compressed.chunks(room).zip(&sizes).map(|(block, &size)| &block[..size]).collect();
    let mut out = vec![0u8; data.len()];
    let mut slices: Vec<&mut [u8]> = out.chunks_mut(PAGE).collect();
    let written: Vec<usize> = codec.decompress_cpu(&blocks, &mut slices).into_iter().collect::<Result<_, _>>()?;
    assert!(written.iter().all(|&n| n == PAGE));
    Ok(out)
}

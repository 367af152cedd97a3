//! ferrocomp on the caller's terms: work enqueued on a CUDA stream the caller created (and
//! keeps), and device memory taken from the caller's allocator, here one that counts. Needs a GPU.
use ferrocomp::alloc::DeviceAllocator;
use ferrocomp::gpu::CudaDeviceAllocator;
use ferrocomp::{BufferCodec, Config, Gpu, Options, Stream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Hands out `cuMemAlloc` memory, counting the calls and the bytes; a pool would go here.
#[derive(Default)]
struct Counting {
    calls: AtomicUsize,
    bytes: AtomicUsize,
}

impl DeviceAllocator for Counting {
    fn allocate(&self, bytes: usize) -> ferrocomp::Result<u64> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        CudaDeviceAllocator.allocate(bytes)
    }

    unsafe fn free(&self, address: u64) {
        unsafe { CudaDeviceAllocator.free(address) }
    }
}

fn main() -> ferrocomp::Result<()> {
    let Some(gpu) = Gpu::optional(0)? else {
        println!("no CUDA device: this example needs one (cpu.rs runs the same codecs on the CPU)");
        return Ok(());
    };
    let counting = Arc::new(Counting::default());
    gpu.set_device_allocator(counting.clone());

    // The caller's stream, from cudarc here (any CUDA stream of the device's primary context does).
    let own = cudarc::driver::CudaContext::new(0).and_then(|context| context.new_stream()).expect("a CUDA stream");
    // Safety: `own` is a stream of this context and outlives `stream`.
    let stream = unsafe { Stream::borrow_raw(own.cu_stream()) };

    let codec = BufferCodec::new(Options::default(), Config::default(), Some(gpu.clone()))?;
    let data = b"caller-owned streams and memory. ".repeat(65_536);
    let input = gpu.upload(&data)?;
    let compressed = codec.compress_device(input.view(), &stream)?;
    let restored = codec.decompress_device(compressed.view(), &stream)?;
    stream.synchronize()?;
    assert_eq!(gpu.download(restored.view())?, data);

    let (calls, bytes) = (counting.calls.load(Ordering::Relaxed), counting.bytes.load(Ordering::Relaxed));
    println!("{} bytes -> {} and back on the caller's stream;", data.len(), compressed.len());
    println!("the caller's allocator gave {calls} allocations, {bytes} bytes in all");
    assert!(calls >= 2, "the input's upload and the codec's buffers come from the caller's allocator");
    Ok(())
}

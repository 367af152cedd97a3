//! Helpers shared by the integration tests: deterministic data, the GPU (or a skip), batches.

use ferrocomp::{DeviceBuffer, Error, Gpu};
use std::io::Write;

/// Every lane's result of an emulated warp, which must all agree.
pub fn agreed<T: PartialEq + std::fmt::Debug>(mut lanes: Vec<T>) -> T {
    let first = lanes.remove(0);
    assert!(lanes.iter().all(|lane| *lane == first), "lanes disagree");
    first
}

/// A pseudo-random sequence (xorshift64) from `seed`.
pub fn random_u64s(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// Damaged copies of `stream` to decode, `rounds` of them (`FERROCOMP_DAMAGE_ROUNDS` instead, where
/// set, for a longer campaign by hand): round r flips a bit (even r) or overwrites a byte (odd r),
/// at 1 + r % 3 places drawn from `seed`.
pub fn damaged_copies(stream: &[u8], rounds: u32, seed: u64) -> impl Iterator<Item = Vec<u8>> {
    let rounds = std::env::var("FERROCOMP_DAMAGE_ROUNDS").ok().and_then(|n| n.parse().ok()).unwrap_or(rounds);
    let mut next = random_u64s(seed);
    let stream = stream.to_vec();
    (0..rounds).map(move |round| {
        let mut damaged = stream.clone();
        for _ in 0..1 + round % 3 {
            let at = next() as usize % damaged.len();
            if round % 2 == 0 {
                damaged[at] ^= 1 << (next() % 8);
            } else {
                damaged[at] = next() as u8;
            }
        }
        damaged
    })
}

/// `n` pseudo-random bytes (incompressible) from `seed`.
pub fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut next = random_u64s(seed);
    (0..n).map(|_| (next() >> 24) as u8).collect()
}

/// A `T` filled with garbage bytes, for scratch whose owner says any contents are a valid
/// starting state: neither side of a comparison may depend on what it held before.
///
/// # Safety
/// Every bit pattern must be a valid `T` (plain integers).
pub unsafe fn garbage<T>() -> Box<T> {
    let mut boxed: Box<T> = unsafe { Box::new_zeroed().assume_init() };
    let bytes = unsafe { std::slice::from_raw_parts_mut(&mut *boxed as *mut T as *mut u8, size_of::<T>()) };
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = (i.wrapping_mul(0x9E37_79B9) >> 13) as u8;
    }
    boxed
}

/// `n` bytes of short repeats from `seed`: patterns of 1 to 12 bytes, each repeated to 4 to 40
/// bytes, then a random byte, so that an LZ77 stream of them is mostly short matches whose
/// offsets are below a warp's 32 bytes, each reading the bytes just before it.
pub fn short_repeats_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut next = random_u64s(seed);
    let mut out = Vec::with_capacity(n + 64);
    while out.len() < n {
        let (period, len) = (1 + next() as usize % 12, 4 + next() as usize % 37);
        let pattern: Vec<u8> = (0..period).map(|_| (next() % 4) as u8).collect();
        out.extend(pattern.iter().cycle().take(len));
        out.push((next() >> 24) as u8);
    }
    out.truncate(n);
    out
}

/// `n` bytes (a multiple of 4) of cumulative sums of small random steps as little-endian int32,
/// as the bench's int32 set: short matches close together.
pub fn int32_bytes(n: usize) -> Vec<u8> {
    let steps = random_bytes(n / 4, 21);
    steps
        .iter()
        .scan(0u32, |sum, &step| Some(std::mem::replace(sum, *sum + (step % 50) as u32)))
        .flat_map(u32::to_le_bytes)
        .collect()
}

/// `n` bytes of text-like data (words drawn from a small vocabulary) from `seed`.
pub fn text_bytes(n: usize, seed: u64) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "the",
        "compressed",
        "chunk",
        "of",
        "GPU",
        "memory",
        "decodes",
        "into",
        "a",
        "slice",
        "while",
        "kernels",
        "warp",
        "lanes",
        "stream",
        "buffer",
    ];
    let picks = random_bytes(n, seed);
    let mut out = Vec::with_capacity(n + 16);
    for (i, &pick) in picks.iter().enumerate() {
        if out.len() >= n {
            break;
        }
        out.extend_from_slice(WORDS[(pick & 15) as usize].as_bytes());
        out.push(if i % 11 == 10 { b'\n' } else { b' ' });
    }
    out.truncate(n);
    out
}

/// The first GPU, or `None` (saying so) when the machine has no CUDA device. Any other failure
/// panics: on a machine with a GPU, the GPU tests must run. `FERROCOMP_REQUIRE_GPU=1` turns a
/// missing device into a failure too.
pub fn gpu() -> Option<Gpu> {
    match Gpu::new(0) {
        Ok(gpu) => Some(gpu),
        Err(Error::NoDevice) if std::env::var_os("FERROCOMP_REQUIRE_GPU").is_none() => {
            // Straight to the stream, past the test harness's capture, so the skip shows.
            let _ = writeln!(std::io::stderr(), "skipped: no CUDA device on this machine");
            None
        }
        Err(e) => panic!("GPU unavailable: {e}"),
    }
}

/// Chunks laid out back to back in one device buffer, with device arrays of their addresses
/// and sizes: the shape of a batched call.
pub struct DeviceChunks {
    /// The bytes of all chunks.
    pub data: DeviceBuffer<u8>,
    /// Device address of each chunk.
    pub addresses: DeviceBuffer<u64>,
    /// Byte count of each chunk.
    pub sizes: DeviceBuffer<usize>,
    /// Where each chunk starts in `data`.
    pub offsets: Vec<usize>,
}

impl DeviceChunks {
    /// `chunks` uploaded into one buffer.
    pub fn upload(gpu: &Gpu, chunks: &[&[u8]]) -> Self {
        let joined: Vec<u8> = chunks.concat();
        Self::layout(gpu, gpu.upload(&joined).unwrap(), chunks.iter().map(|c| c.len()).collect())
    }

    /// Slices of sizes `sizes` of one new device buffer, filled with 0xEE.
    pub fn slots(gpu: &Gpu, sizes: &[usize]) -> Self {
        let data = gpu.upload(&vec![0xEEu8; sizes.iter().sum()]).unwrap();
        Self::layout(gpu, data, sizes.to_vec())
    }

    fn layout(gpu: &Gpu, data: DeviceBuffer<u8>, sizes: Vec<usize>) -> Self {
        let mut offsets = Vec::with_capacity(sizes.len());
        let mut at = 0;
        for &size in &sizes {
            offsets.push(at);
            at += size;
        }
        let addresses: Vec<u64> = offsets.iter().map(|&o| data.address() + o as u64).collect();
        Self { addresses: gpu.upload(&addresses).unwrap(), sizes: gpu.upload(&sizes).unwrap(), data, offsets }
    }

    /// The batch description.
    pub fn chunks(&self) -> ferrocomp::Chunks<'_> {
        ferrocomp::Chunks::new(self.addresses.view(), self.sizes.view())
    }

    /// Chunk `i`'s bytes, `len` of them, downloaded.
    pub fn download(&self, gpu: &Gpu, i: usize, len: usize) -> Vec<u8> {
        gpu.download(self.data.view().slice(self.offsets[i], len)).unwrap()
    }
}

/// c-blosc 1.x itself (built from source by `blosc-src`): the reference Blosc chunks are checked against.
pub mod c_blosc {
    use blosc_src::{blosc_compress_ctx, blosc_decompress_ctx};
    use ferrocomp::Shuffle;
    use std::ffi::CString;

    /// c-blosc's chunk of `data` with compressor `cname` (`blocksize` 0: its own choice, as numcodecs').
    pub fn compress(
        data: &[u8],
        typesize: usize,
        shuffle: Shuffle,
        cname: &str,
        clevel: i32,
        blocksize: usize,
    ) -> Vec<u8> {
        let mut out = vec![0u8; data.len() + 16];
        let name = CString::new(cname).unwrap();
        let (input, output) = (data.as_ptr().cast(), out.as_mut_ptr().cast());
        let n = unsafe {
            blosc_compress_ctx(
                clevel,
                shuffle as i32,
                typesize,
                data.len(),
                input,
                output,
                out.len(),
                name.as_ptr(),
                blocksize,
                1,
            )
        };
        assert!(n >= 16, "c-blosc {cname} failed: {n}");
        out.truncate(n as usize);
        out
    }

    /// What c-blosc decodes `chunk` to (which must hold its header's `cbytes`), if it decodes it.
    pub fn decompress(chunk: &[u8]) -> Option<Vec<u8>> {
        let nbytes = u32::from_le_bytes(chunk[4..8].try_into().unwrap()) as usize;
        let mut out = vec![0u8; nbytes];
        let n = unsafe { blosc_decompress_ctx(chunk.as_ptr().cast(), out.as_mut_ptr().cast(), nbytes, 1) };
        (n >= 0 && n as usize == nbytes).then_some(out)
    }
}

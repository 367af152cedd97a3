//! The batched API every codec implements, in nvCOMP's shape: size the scratch, bound the
//! output, compress a batch, ask the decompressed sizes, decompress a batch with a status per
//! chunk. Batches are device arrays of chunk addresses and byte counts, so outputs may be any
//! caller-owned memory, slices of one buffer included; nothing is allocated per call and the
//! host never waits.

use crate::alloc::{DeviceView, DeviceViewMut};
use crate::error::Result;
use crate::gpu::{Gpu, Stream};
use ferrocomp_format::Status;

/// Device arrays describing `len` chunks: their addresses and byte counts.
#[derive(Clone, Copy, Debug)]
pub struct Chunks<'a> {
    /// Device address of each chunk.
    pub addresses: DeviceView<'a, u64>,
    /// Byte count of each chunk (for outputs: the room each has).
    pub sizes: DeviceView<'a, usize>,
}

impl<'a> Chunks<'a> {
    /// The batch of `addresses` and `sizes`, which must be equally long.
    pub fn new(addresses: DeviceView<'a, u64>, sizes: DeviceView<'a, usize>) -> Self {
        assert_eq!(addresses.len(), sizes.len(), "one size per chunk address");
        Self { addresses, sizes }
    }

    /// Number of chunks.
    pub fn len(&self) -> usize {
        self.addresses.len()
    }

    /// Whether there are no chunks.
    pub fn is_empty(&self) -> bool {
        self.addresses.is_empty()
    }
}

/// Per-chunk results a batched call writes on the device.
#[derive(Debug)]
pub struct Results<'a> {
    /// Bytes produced per chunk (0 where the chunk failed).
    pub sizes: DeviceViewMut<'a, usize>,
    /// A [`Status`] code per chunk.
    pub statuses: DeviceViewMut<'a, u32>,
}

/// A compression algorithm with its options: the batched GPU API plus the CPU path writing the
/// same bitstream.
pub trait BatchCodec: Send + Sync {
    /// Largest chunk the compressor accepts.
    fn max_chunk_size(&self) -> usize;

    /// Largest size `compressed_bytes` of a chunk can decode to (a guard against lying headers).
    fn max_decompressed_size(&self, compressed_bytes: usize) -> usize;

    /// Largest compressed size of a chunk of `chunk_bytes`.
    fn max_compressed_chunk_size(&self, chunk_bytes: usize) -> usize;

    /// Device scratch bytes [`BatchCodec::compress_async`] needs for `count` chunks of at most
    /// `max_chunk_bytes`.
    fn compress_scratch_size(&self, count: usize, max_chunk_bytes: usize) -> usize;

    /// Device scratch bytes [`BatchCodec::decompress_async`] needs.
    fn decompress_scratch_size(&self, count: usize, max_chunk_bytes: usize) -> usize;

    /// Enqueues compressing each chunk of `inputs` into `outputs` (each with room for
    /// [`BatchCodec::max_compressed_chunk_size`] of the largest input).
    ///
    /// # Safety
    /// Every address in the arrays must be valid device memory of its stated size until the
    /// stream has run the call, and outputs must not overlap inputs or each other.
    #[allow(clippy::too_many_arguments)]
    unsafe fn compress_async(
        &self,
        gpu: &Gpu,
        inputs: Chunks<'_>,
        outputs: DeviceView<'_, u64>,
        output_capacity: usize,
        scratch: DeviceViewMut<'_, u8>,
        results: Results<'_>,
        stream: &Stream,
    ) -> Result<()>;

    /// Enqueues finding the decompressed size of each chunk of `inputs`.
    ///
    /// # Safety
    /// As [`BatchCodec::compress_async`], for `inputs`.
    unsafe fn decompressed_sizes_async(
        &self,
        gpu: &Gpu,
        inputs: Chunks<'_>,
        results: Results<'_>,
        stream: &Stream,
    ) -> Result<()>;

    /// Enqueues decompressing each chunk of `inputs` into `outputs`; a chunk that is corrupt or
    /// does not fit gets an error status, and the others still decode. `first_failure`, if
    /// given, is lowered (atomically) to the index of the first failing chunk.
    ///
    /// # Safety
    /// As [`BatchCodec::compress_async`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn decompress_async(
        &self,
        gpu: &Gpu,
        inputs: Chunks<'_>,
        outputs: Chunks<'_>,
        scratch: DeviceViewMut<'_, u8>,
        results: Results<'_>,
        first_failure: Option<DeviceViewMut<'_, u32>>,
        stream: &Stream,
    ) -> Result<()>;

    /// Compresses one chunk on the CPU into `out`; returns the compressed size.
    fn compress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status>;

    /// Decompresses one chunk on the CPU into `out`; returns the decompressed size.
    fn decompress_cpu(&self, input: &[u8], out: &mut [u8]) -> Result<usize, Status>;

    /// The size one compressed chunk decompresses to, found on the CPU.
    fn decompressed_size_cpu(&self, input: &[u8]) -> Result<usize, Status>;
}

//! The device and pinned arrays a [`BufferCodec`](crate::BufferCodec) call on the GPU works in:
//! chunk tables, results, CRCs, compressed staging and the codec's scratch, kept from call to call.

use crate::alloc::{DeviceBuffer, PinnedBuffer};
use crate::error::Result;
use crate::gpu::Gpu;

/// Device and pinned arrays reused across calls, grown when a call needs more.
pub(crate) struct Scratch {
    chunks: usize,
    staging_bytes: usize,
    /// Chunk addresses: inputs in the first half, outputs in the second; each table beside the
    /// pinned copy it is uploaded from or downloaded to.
    pub(crate) addresses: DeviceBuffer<u64>,
    pub(crate) host_addresses: PinnedBuffer<u64>,
    /// Chunk sizes: inputs in the first half, output capacities in the second.
    pub(crate) sizes: DeviceBuffer<usize>,
    pub(crate) host_sizes: PinnedBuffer<usize>,
    pub(crate) result_sizes: DeviceBuffer<usize>,
    pub(crate) host_result_sizes: PinnedBuffer<usize>,
    pub(crate) statuses: DeviceBuffer<u32>,
    pub(crate) host_statuses: PinnedBuffer<u32>,
    pub(crate) first_failure: DeviceBuffer<u32>,
    pub(crate) host_first_failure: PinnedBuffer<u32>,
    pub(crate) crcs_uncompressed: DeviceBuffer<u32>,
    pub(crate) crcs_compressed: DeviceBuffer<u32>,
    /// Both CRC tables on the host, uncompressed first.
    pub(crate) host_crcs: PinnedBuffer<u32>,
    /// Where compressed chunks land, one bound apart.
    pub(crate) staging: DeviceBuffer<u8>,
    /// Where compressed chunks are packed before going to the host.
    pub(crate) packed: DeviceBuffer<u8>,
    /// The codec's own scratch.
    codec_bytes: usize,
    pub(crate) codec: DeviceBuffer<u8>,
}

impl Scratch {
    /// The scratch, grown to hold `chunks` chunks, `staging_bytes` of compressed staging and
    /// `packed_bytes` of packed output, and `codec_bytes` of the codec's scratch.
    pub(crate) fn ensure<'s>(
        gpu: &Gpu,
        slot: &'s mut Option<Scratch>,
        chunks: usize,
        staging_bytes: usize,
        packed_bytes: usize,
        codec_bytes: usize,
    ) -> Result<&'s mut Scratch> {
        let fits = slot.as_ref().is_some_and(|s| {
            s.chunks >= chunks && s.staging_bytes >= staging_bytes.max(packed_bytes) && s.codec_bytes >= codec_bytes
        });
        if !fits {
            // Free the old arrays before allocating larger ones.
            let (old_chunks, old_staging, old_codec) = match slot.take() {
                Some(Scratch { chunks, staging_bytes, codec_bytes, .. }) => (chunks, staging_bytes, codec_bytes),
                None => (0, 0, 0),
            };
            let (chunks, staging_bytes) = (chunks.max(old_chunks), staging_bytes.max(packed_bytes).max(old_staging));
            let codec_bytes = codec_bytes.max(old_codec);
            let pinned = gpu.allocators().pinned;
            *slot = Some(Scratch {
                chunks,
                staging_bytes,
                addresses: gpu.alloc(2 * chunks)?,
                host_addresses: PinnedBuffer::new(&pinned, 2 * chunks)?,
                sizes: gpu.alloc(2 * chunks)?,
                host_sizes: PinnedBuffer::new(&pinned, 2 * chunks)?,
                result_sizes: gpu.alloc(chunks)?,
                host_result_sizes: PinnedBuffer::new(&pinned, chunks)?,
                statuses: gpu.alloc(chunks)?,
                host_statuses: PinnedBuffer::new(&pinned, chunks)?,
                first_failure: gpu.alloc(1)?,
                host_first_failure: PinnedBuffer::new(&pinned, 1)?,
                crcs_uncompressed: gpu.alloc(chunks)?,
                crcs_compressed: gpu.alloc(chunks)?,
                host_crcs: PinnedBuffer::new(&pinned, 2 * chunks)?,
                staging: gpu.alloc(staging_bytes)?,
                packed: gpu.alloc(staging_bytes)?,
                codec_bytes,
                codec: gpu.alloc(codec_bytes)?,
            });
        }
        Ok(slot.as_mut().unwrap())
    }
}

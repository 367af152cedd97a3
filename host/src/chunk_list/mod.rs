//! Lists of caller chunks, one standard block each: compress, size or decompress them all in one
//! batched launch, reading and writing the caller's memory in place (outputs may be slices of one
//! buffer). This is what nvCOMP's `RAW` and `WITH_UNCOMPRESSED_SIZE` bitstreams do with a list of
//! arrays, and what `decode(srcs, out=[...])` needs: no copy, and no host wait.
//!
//! The chunk tables go up through a small pool of slots owned by the codec, each with pinned
//! staging, device tables, result arrays and a CUDA event recorded after the slot's last use. A
//! call takes a slot whose event has completed (asking the driver, never waiting), fills the
//! pinned tables, and enqueues one asynchronous upload, the launch and the read-back of the
//! results on the caller's stream. Once the pool is warm nothing is allocated per call.
//!
//! The same calls run on the CPU over host slices, on all cores.
//!
//! Here: the codec; `layout` says how chunks lie and how their outcomes read, `pool` holds the
//! slots and the [`ChunkResults`] that hold one, and `gpu` and `cpu` make the calls.

mod cpu;
mod gpu;
mod layout;
mod pool;

pub use crate::container::SIZE_PREFIX_LEN;
pub use pool::ChunkResults;

use crate::codec::Options;
use crate::container::Bitstream;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use layout::Layout;
use pool::Pool;
use std::sync::Arc;

/// Compresses, sizes and decompresses lists of chunks (one standard block each, size-prefixed
/// for [`Bitstream::WithUncompressedSize`]) in one batched call, on the GPU or the CPU.
///
/// ```
/// use ferrocomp::{Bitstream, ChunkListCodec, Options};
/// let codec = ChunkListCodec::new(Options::default(), Bitstream::Raw, None)?; // CPU
/// let chunks = [b"abcabcabcabcabcabc".as_slice(), b"xyzxyzxyzxyzxyz".as_slice()];
/// let mut room = vec![vec![0u8; codec.max_compressed_size(18)]; 2];
/// let mut outputs: Vec<&mut [u8]> = room.iter_mut().map(|r| r.as_mut_slice()).collect();
/// let sizes: Vec<usize> = codec.compress_cpu(&chunks, &mut outputs).into_iter().collect::<Result<_, _>>()?;
/// let blocks: Vec<&[u8]> = room.iter().zip(&sizes).map(|(r, &n)| &r[..n]).collect();
/// assert_eq!(codec.decompressed_sizes_cpu(&blocks)[1].as_ref().ok(), Some(&15));
/// # Ok::<(), ferrocomp::Error>(())
/// ```
pub struct ChunkListCodec {
    layout: Layout,
    gpu: Option<Gpu>,
    pool: Arc<Pool>,
}

impl ChunkListCodec {
    /// A codec for `options` writing `bitstream` (`Raw` or `WithUncompressedSize`) chunks, on
    /// `gpu` (or the CPU for `None`).
    pub fn new(options: Options, bitstream: Bitstream, gpu: Option<Gpu>) -> Result<Self> {
        let prefixed = match bitstream {
            Bitstream::Raw => false,
            Bitstream::WithUncompressedSize => true,
            Bitstream::Native => {
                return Err(Error::InvalidArgument(
                    "a chunk list holds one block per chunk; the native container is BufferCodec's".into(),
                ));
            }
        };
        Ok(Self { layout: Layout { options, prefixed }, gpu, pool: Arc::new(Pool::default()) })
    }

    /// The algorithm and its options.
    pub fn options(&self) -> Options {
        self.layout.options
    }

    /// The GPU it runs on, if any.
    pub fn gpu(&self) -> Option<&Gpu> {
        self.gpu.as_ref()
    }

    /// Bytes before each block: [`SIZE_PREFIX_LEN`] for `WithUncompressedSize`, else 0.
    pub fn prefix_len(&self) -> usize {
        self.layout.prefix_len()
    }

    /// Room a compressed chunk of `chunk_bytes` may need, its size prefix included.
    pub fn max_compressed_size(&self, chunk_bytes: usize) -> usize {
        self.prefix_len() + self.layout.options.codec().max_compressed_chunk_size(chunk_bytes)
    }

    /// Largest chunk the compressor accepts.
    pub fn max_chunk_size(&self) -> usize {
        self.layout.options.codec().max_chunk_size()
    }
}

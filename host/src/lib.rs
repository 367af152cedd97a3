//! # ferrocomp
//!
//! GPU compression in Rust. Kernels are written in Rust (`kernels-gpu`, compiled to PTX by
//! rustc's NVPTX backend) and launched through the CUDA driver, which is loaded at first GPU use
//! (cudarc's dynamic loading), so the CPU path runs where there is none. Every codec has:
//! - a batched API in nvCOMP's shape ([`BatchCodec`]): device arrays of chunk addresses and
//!   sizes in, compressed chunks, sizes and a status per chunk out, all asynchronous on a stream;
//! - a one-buffer codec over it ([`BufferCodec`]): chunking, the native container with
//!   optional CRC-32s, raw and size-prefixed bitstreams;
//! - a CPU path writing the same bitstream, used when there is no GPU.
//!
//! Codecs ([`Options`]): LZ4 blocks, Snappy raw streams, Deflate (raw, zlib or gzip, with
//! nvCOMP's six levels), GDeflate pages, Blosc 1 chunks and Zstandard frames. Their chunks are
//! the standard formats both ways: liblz4, `snap`, zlib/gzip, c-blosc, libzstd and nvCOMP read
//! what ferrocomp writes, and the reverse. Cascaded (run-length, delta and bit-packing layers
//! over integers), Bitcomp (bit-packed tiles of numbers, lossless or within an error bound) and ANS
//! (interleaved rANS over bytes or 16-bit floats), with nvCOMP's options, have ferrocomp's own
//! layouts, given in docs/FORMAT.md.
//!
//! Host bytes through the first GPU, or the CPU where there is none (`examples/quickstart.rs`):
//!
//! ```
#![doc = include_str!("../examples/quickstart.rs")]
//! ```
//!
//! More in `examples/`, each runnable with `cargo run --example NAME`: `device_buffer`
//! (device memory in and out), `batch_slices` (a batch decompressed into slices of one buffer),
//! `stream_allocator` (the caller's CUDA stream and allocator) and `cpu` (the CPU path, streams
//! and a standard .zst frame).
//!
//! The crate builds with stable Rust (see `rust-version`) and needs neither a CUDA toolkit nor a
//! driver: the kernels' PTX comes compiled with the `ferrocomp-kernels-gpu` crate, and the driver's
//! `libcuda` is opened when a [`Gpu`] is first asked for.

#![deny(missing_docs)]

pub mod alloc;
pub mod batch;
pub mod buffer_codec;
pub mod checksum;
pub mod chunk_list;
pub mod codec;
pub mod container;
pub mod error;
pub mod file_ranges;
pub mod gpu;
mod io;
mod parallel;
pub mod pipeline;
pub mod scatter;
mod scratch;
pub mod settings;

pub use alloc::{DeviceBuffer, DeviceView, DeviceViewMut};
pub use batch::{BatchCodec, Chunks, Results};
pub use buffer_codec::{BufferCodec, Config, DEFAULT_CHUNK_SIZE};
pub use checksum::ChecksumPolicy;
pub use chunk_list::{ChunkListCodec, ChunkResults};
pub use codec::{
    Ans, AnsDataType, Bitcomp, Blosc, Cascaded, Deflate, ElementType, ErrorBound, GDeflate, Lz4, Options, Snappy, Zstd,
};
pub use container::{Bitstream, Checksums, Description, Frame, NVCOMP_MAGIC, describe, is_nvcomp};
pub use error::{ChecksumPart, Error, Result};
pub use ferrocomp_format::blosc::Shuffle;
pub use ferrocomp_format::deflate::Wrapper;
pub use ferrocomp_format::{Algorithm, DataType, Status};
pub use file_ranges::{FileRange, RangeReader};
pub use gpu::{Gpu, RawStream, Stream};
pub use pipeline::{DEFAULT_SEGMENT_SIZE, Totals};

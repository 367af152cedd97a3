//! Blosc 1 chunks, as c-blosc 1.x and numcodecs (zarr v2's default compressor) write them
//! (docs/FORMAT.md, "Blosc"): a 16-byte [`Header`], then either the data as is (memcpyed) or a
//! table of `u32` block offsets and per block one stream, or one per byte of the element (split),
//! each a `u32` stored size and the stream, stored raw when that size equals the decoded size.
//! Blocks are byte- or bit-shuffled before compression ([`shuffle`]).
//!
//! Decoding: [`Header::parse`] checks everything the header and input length allow up front;
//! [`decompress_block`] decodes one block (a GPU warp's unit) and [`Header::block_streams`] lists
//! a block's streams for a kernel that decodes them itself; [`decompress`] runs every block.
//! BloscLZ ([`blosclz`]), LZ4/LZ4HC, Snappy, zlib and zstd streams are decoded. Encoding: [`compress`] writes LZ4 chunks laid out as c-blosc does.
//! Nothing here panics or loops without bound on any input.

pub mod blosclz;
mod decode;
mod encode;
mod header;
pub mod shuffle;
mod streams;

pub use decode::{LibraryFirst, StreamTables, decompress, decompress_block, decompress_with, decompressed_size};
pub use encode::{compress, compute_blocksize, lz4_header, max_compressed_size};
pub use header::{
    CODEC_VERSION, COMPRESSOR_SHIFT, Compressor, FLAG_BITSHUFFLE, FLAG_DONT_SPLIT, FLAG_MEMCPYED, FLAG_RESERVED,
    FLAG_SHUFFLE, HEADER_LEN, Header, MAX_BLOCKSIZE, MAX_BUFFERSIZE, MAX_EXPANSION, MAX_SPLITS, MAX_TYPESIZE,
    MIN_BUFFERSIZE, Shuffle, VERSION, splits,
};
pub use streams::{BlockStreams, Stream};

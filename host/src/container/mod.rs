//! The bitstream kinds: `Native` (a header naming the algorithm, with a chunk table and
//! optional CRC-32s; `docs/FORMAT.md` gives it byte by byte), `Raw` (one standard block, nothing
//! else) and `WithUncompressedSize` (nvCOMP's 16-byte size prefix, then one block).
//!
//! The native container has two versions: 1, one chunk table for the whole buffer, written when
//! the whole input is at hand; and 2, the streamed form, a table per block of chunks ahead of
//! them and an end marker, written and read block by block in bounded memory.
//!
//! `frame` holds the header's layout and [`Frame`], which writes and parses it; `reader` reads a
//! container from a `Read`, block by block; `nvcomp` reads nvCOMP 6's native streams as frames,
//! so that a native decode takes either (the first four bytes tell them apart).

mod frame;
mod nvcomp;
mod reader;

pub use frame::{
    Bitstream, Checksums, FIXED_HEADER_LEN, Frame, MAGIC, MAX_BLOCK_BYTES, MAX_BLOCK_CHUNKS, NVCOMP_UNCHECKED,
    SIZE_PREFIX_LEN, STREAM_HEADER_LEN, STREAM_VERSION, VERSION, is_streamed, native_header_len_from_fixed,
    size_prefix,
};
pub(crate) use nvcomp::read_stream as read_nvcomp_stream;
pub use nvcomp::{NVCOMP_HEADER_LEN, NVCOMP_MAGIC, is_nvcomp};
pub use reader::{Description, NVCOMP_VERSION, describe};
pub(crate) use reader::{NativeReader, head_of};

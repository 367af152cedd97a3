//! Bitcomp on the GPU: the format crate's bytes written and read (`ferrocomp_format::bitcomp`),
//! a block of warps a chunk both ways, a tile a lane: each warp takes a group of tiles (4 KiB of
//! elements) at a time, staged in shared memory a row a tile ([`Rows`]), and each lane codes its
//! own tile there in one pass, so that a step costs a few instructions a unit of 4 bytes rather
//! than a warp's reductions and shuffles a tile.

mod decode;
mod encode;

pub use decode::{decode_shared_bytes, decompress_chunk};
pub use encode::{compress_chunk, compress_shared_bytes};

use crate::copy::{Sink, Source};
use crate::raw::SharedBytes;
use ferrocomp_format::bitcomp::{Geometry, LANES, SYMBOLS_LEN};

/// Fewest warps of the block compressing a chunk: a batch of many chunks takes these, fewer
/// chunks more (the host chooses from the batch), up to [`COMPRESS_WARPS_PER_SM`]. Four hold the
/// chunk's byte counts and take the ranking's sample in their first round.
pub const COMPRESS_WARPS: u32 = 4;
/// Warps an SM holds compressing, whatever the blocks: as many as its registers hold at the 80
/// a thread ptxas gives the kernel (the shared memory of as many holds too).
pub const COMPRESS_WARPS_PER_SM: u32 = 24;
/// Fewest warps of the block decoding a chunk, as [`COMPRESS_WARPS`].
pub const DECODE_WARPS: u32 = 4;
/// Warps an SM holds decoding, whatever the blocks: as many as its registers hold at the 96 a
/// thread ptxas gives the kernel.
pub const DECODE_WARPS_PER_SM: u32 = 20;

/// A block's shared memory in either kernel: the block scan's scratch (65 words, to 16 bytes), a
/// 16-byte slot a warp for what its round leaves to the others, a ranked chunk's table (each
/// byte's rank compressing, each rank's byte decoding), then each warp's own `WARP_BYTES`.
#[derive(Clone, Copy)]
struct Layout<const WARP_BYTES: usize>(*mut u8);

impl<const WARP_BYTES: usize> Layout<WARP_BYTES> {
    const SCAN_BYTES: usize = 272;
    const SLOT_BYTES: u32 = 16;
    /// Most warps of a block, either kernel.
    const MAX_WARPS: u32 = larger(COMPRESS_WARPS_PER_SM as usize, DECODE_WARPS_PER_SM as usize) as u32;
    const TABLE_AT: usize = Self::SCAN_BYTES + (Self::SLOT_BYTES * Self::MAX_WARPS) as usize;
    const WARPS_AT: usize = Self::TABLE_AT + SYMBOLS_LEN;

    /// Bytes of the whole for a block of `warps` warps.
    const fn bytes(warps: u32) -> usize {
        Self::WARPS_AT + warps as usize * WARP_BYTES
    }

    /// Whether an SM holds `per_sm` warps in blocks of `warps`, each block's whole at most what a
    /// block may take.
    const fn fits(warps: u32, per_sm: u32) -> bool {
        let bytes = Self::bytes(warps);
        crate::blocks_per_sm(warps, bytes / warps as usize) * warps >= per_sm
            && bytes <= crate::MAX_SHARED_BYTES_PER_BLOCK
    }

    /// The layout of the shared memory at `at`.
    fn new(at: *mut u8) -> Self {
        Self(at)
    }

    /// The block scan's scratch.
    fn scratch(self) -> *mut u32 {
        self.0 as *mut u32
    }

    /// Offset of warp `w`'s slot in [`Layout::slots`].
    fn slot(w: usize) -> u32 {
        Self::SLOT_BYTES * w as u32
    }

    /// The slots.
    ///
    /// # Safety
    /// The layout must be shared memory.
    unsafe fn slots(self) -> SharedBytes {
        unsafe { SharedBytes::new(self.0.add(Self::SCAN_BYTES)) }
    }

    /// The ranked chunk's table.
    ///
    /// # Safety
    /// The layout must be shared memory.
    unsafe fn table(self) -> SharedBytes {
        unsafe { SharedBytes::new(self.0.add(Self::TABLE_AT)) }
    }

    /// Warp `index`'s own memory.
    ///
    /// # Safety
    /// The layout must be shared memory, `index` one of its warps.
    unsafe fn warp(self, index: usize) -> *mut u8 {
        unsafe { self.0.add(Self::WARPS_AT + index * WARP_BYTES) }
    }
}

/// The larger of `narrow` and `wide` (a warp's shared memory for the element widths that take
/// the most: 1 and 8 bytes).
const fn larger(narrow: usize, wide: usize) -> usize {
    if narrow > wide { narrow } else { wide }
}

/// `value`'s low `WIDTH` bytes repeated over a unit (4 bytes, or the one 8-byte element): a mask
/// tile's varying bits, or its base, for a unit's elements at once.
#[inline(always)]
fn repeat<const WIDTH: usize>(value: u64) -> u64 {
    match WIDTH {
        1 => value * 0x0101_0101,
        2 => value * 0x0001_0001,
        _ => value,
    }
}

/// Units of a tile: 4 bytes of its elements (or one 8-byte element) each.
const TILE_UNITS: usize = LANES;

/// Tiles of a group, which one warp takes at once: 4 KiB of elements, a tile a lane.
pub const fn group_tiles(width: usize) -> usize {
    4096 / Geometry::new(width, false).tile_bytes()
}

/// Bytes of a tile's largest payload: a sparse tile with every element set at full width.
pub const fn max_payload(width: usize) -> usize {
    let geometry = Geometry::new(width, true);
    4 * geometry.bitmap_words() + geometry.tile_bytes()
}

/// Bytes from one row of [`Rows`] to the next: a tile, then 16 bytes.
pub const fn row_bytes(width: usize) -> usize {
    Geometry::new(width, false).tile_bytes() + 16
}

/// A group's tiles of `WIDTH`-byte elements in shared memory, a row each, rows [`row_bytes`]
/// apart: the lanes' 16-byte accesses to the same piece of their rows fall in different banks
/// (four lanes a bank group, the fewest a 512-byte access can take). Read or written as the
/// group's bytes in order, by [`crate::copy::spread`].
#[derive(Clone, Copy)]
pub struct Rows<const WIDTH: usize>(SharedBytes);

impl<const WIDTH: usize> Rows<WIDTH> {
    const TILE_BYTES: u32 = Geometry::new(WIDTH, false).tile_bytes() as u32;

    /// The rows from `at` (shared memory, aligned to 16) on.
    ///
    /// # Safety
    /// `at` must be shared memory.
    pub unsafe fn new(at: *mut u8) -> Self {
        Self(unsafe { SharedBytes::new(at) })
    }

    /// Row `j`.
    #[inline(always)]
    pub fn row(self, j: usize) -> SharedBytes {
        self.0.at(j as u32 * row_bytes(WIDTH) as u32)
    }

    /// Where byte `i` of the group is.
    #[inline(always)]
    fn offset(&self, i: usize) -> u32 {
        let i = i as u32;
        i / Self::TILE_BYTES * row_bytes(WIDTH) as u32 + i % Self::TILE_BYTES
    }
}

impl<const WIDTH: usize> Source for Rows<WIDTH> {
    #[inline(always)]
    fn skew(&self) -> usize {
        0
    }

    #[inline(always)]
    unsafe fn byte(&self, i: usize) -> u8 {
        unsafe { self.0.u8(self.offset(i)) }
    }

    #[inline(always)]
    unsafe fn word(&self, k: usize) -> u32 {
        unsafe { self.0.u32(self.offset(4 * k)) }
    }
}

impl<const WIDTH: usize> Sink for Rows<WIDTH> {
    #[inline(always)]
    fn unit_skew(&self) -> usize {
        0
    }

    #[inline(always)]
    unsafe fn set_byte(&self, i: usize, value: u8) {
        unsafe { self.0.set_u8(self.offset(i), value) };
    }

    #[inline(always)]
    unsafe fn set_unit(&self, at: usize, words: [u32; 4]) {
        unsafe { self.0.set_u32x4(self.offset(at), words) };
    }
}

/// A source's bytes, each replaced by its entry in a table of [`SYMBOLS_LEN`] bytes in shared
/// memory: a ranked chunk's bytes (ranks to bytes decoding, bytes to ranks compressing).
#[derive(Clone, Copy)]
pub struct Mapped<S> {
    source: S,
    table: SharedBytes,
}

/// `word` with each byte replaced by its entry in `table` ([`SYMBOLS_LEN`] bytes of shared
/// memory).
///
/// # Safety
/// `table` must be shared memory.
#[inline(always)]
unsafe fn map_word(table: SharedBytes, word: u32) -> u32 {
    let map = |shift: u32| unsafe { table.u8(word >> shift & 0xFF) as u32 } << shift;
    map(0) | map(8) | map(16) | map(24)
}

impl<S: Source> Source for Mapped<S> {
    #[inline(always)]
    fn skew(&self) -> usize {
        self.source.skew()
    }

    #[inline(always)]
    unsafe fn byte(&self, i: usize) -> u8 {
        unsafe { self.table.u8(self.source.byte(i) as u32) }
    }

    #[inline(always)]
    unsafe fn word(&self, k: usize) -> u32 {
        unsafe { map_word(self.table, self.source.word(k)) }
    }
}

/// Words in shared memory, each 128-byte line's 16-byte quarters swapped by the line's place
/// (word `w` at `w ^ ((w >> 3) & 28)`): lanes at words 32 apart (payloads of 128 bytes, back to
/// back) fall in eight bank groups instead of one, and lanes 31 apart still spread. Read and
/// written as bytes in order by [`crate::copy::spread`], 16 bytes a store.
#[derive(Clone, Copy)]
pub struct Swizzled(SharedBytes);

impl Swizzled {
    /// The words from `at` (shared memory, aligned to 16) on.
    ///
    /// # Safety
    /// `at` must be shared memory.
    pub unsafe fn new(at: *mut u8) -> Self {
        Self(unsafe { SharedBytes::new(at) })
    }

    /// Where byte `i` is.
    #[inline(always)]
    fn offset(i: u32) -> u32 {
        i ^ ((i >> 3) & 0x70)
    }

    /// Word `w`.
    ///
    /// # Safety
    /// It must be inside the memory given.
    #[inline(always)]
    pub unsafe fn word(self, w: u32) -> u32 {
        unsafe { self.0.u32(Self::offset(4 * w)) }
    }

    /// Writes word `w`.
    ///
    /// # Safety
    /// It must be inside the memory given, this thread's alone until the next barrier.
    #[inline(always)]
    pub unsafe fn set_word(self, w: u32, value: u32) {
        unsafe { self.0.set_u32(Self::offset(4 * w), value) };
    }
}

impl Source for Swizzled {
    #[inline(always)]
    fn skew(&self) -> usize {
        0
    }

    #[inline(always)]
    unsafe fn byte(&self, i: usize) -> u8 {
        unsafe { self.0.u8(Self::offset(i as u32)) }
    }

    #[inline(always)]
    unsafe fn word(&self, k: usize) -> u32 {
        unsafe { Swizzled::word(*self, k as u32) }
    }
}

impl Sink for Swizzled {
    #[inline(always)]
    fn unit_skew(&self) -> usize {
        0
    }

    #[inline(always)]
    unsafe fn set_byte(&self, i: usize, value: u8) {
        unsafe { self.0.set_u8(Self::offset(i as u32), value) };
    }

    #[inline(always)]
    unsafe fn set_unit(&self, at: usize, words: [u32; 4]) {
        unsafe { self.0.set_u32x4(Self::offset(at as u32), words) };
    }
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use crate::batch::{Chunk, ChunkKernels, Lanes};
    use crate::gpu::{HardwareBlock, HardwareWarp, dynamic_shared_memory};
    use ferrocomp_format::bitcomp::{self, Options};
    use ferrocomp_format::{BatchArgs, Status};

    /// Bitcomp's kernels: a block per chunk both ways, a thread per chunk for the sizes.
    pub struct Bitcomp;

    impl ChunkKernels for Bitcomp {
        const COMPRESS: Lanes = Lanes::Block;
        const DECOMPRESS: Lanes = Lanes::Block;
        const SIZES: Lanes = Lanes::Thread;

        unsafe fn compress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let options = Options::from_word(args.options).ok_or(Status::Unsupported)?;
            let (input, n, shared) = (chunk.input, chunk.input_len, dynamic_shared_memory::<u8>());
            unsafe { compress_chunk(&HardwareBlock, warp, input, n, &options, chunk.output, chunk.capacity, shared) }
        }

        unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            let (input, len, shared) = (chunk.input, chunk.input_len, dynamic_shared_memory::<u8>());
            unsafe { decompress_chunk(&HardwareBlock, warp, input, len, chunk.output, chunk.capacity, shared) }
        }

        unsafe fn decompressed_size(_: &HardwareWarp, chunk: &Chunk, _: &BatchArgs) -> Result<usize, Status> {
            bitcomp::decompressed_size(unsafe { chunk.input() })
        }
    }

    crate::batch_kernels!(Bitcomp: bitcomp_compress, bitcomp_decompress, bitcomp_decompressed_sizes);
}

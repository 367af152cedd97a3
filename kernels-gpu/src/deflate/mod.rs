//! Deflate (raw, zlib or gzip) on the GPU: one warp per chunk. Compression ([`compress`]) writes
//! the format crate's streams, byte for byte, the lanes sharing the parse and the coding at
//! every level; its scratch lives in a device array, one slot per warp of the grid.
//! Decompression ([`decode`]) reads any stream as the format crate's decoder does, the lanes
//! decoding its symbols in step and writing them 32 at a time; the decoding tables of each warp
//! live in shared memory, where [`build_table`] lets the warp build them together (GDeflate's
//! decoder does). Batches that leave SMs idle decode each chunk with two warps, one copying the
//! matches the other decodes ([`rounds`], [`decode::decompress_in_pair`], GDeflate's too, whose
//! smallest batches also keep each page's output in shared memory until it is whole).

mod chains;
pub mod compress;
pub mod decode;
pub mod rounds;

use crate::SHARED_BYTES_PER_BLOCK;
use crate::lz77::{last_starting_by, scan_add};
use crate::raw::{SharedBytes, shared_u32};
use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::Status;
use ferrocomp_format::deflate::huffman::{
    Alphabet, DIST_ROOT, DIST_TABLE, INVALID, LITLEN_ROOT, LITLEN_TABLE, LengthCounts, MAX_CODE_LEN, check_counts,
    lookup_with, reverse, subtable_bits, subtable_pointer,
};
use ferrocomp_format::deflate::inflate::Lengths;
use ferrocomp_format::deflate::tables::{FIXED_DIST_LENS, FIXED_LITLEN_LENS};
use ferrocomp_format::deflate::{DecodeTables, Wrapper};

/// Bytes of shared memory each warp of the decompress kernels needs (its decoding tables).
pub const DECODE_SHARED_BYTES_PER_WARP: usize = size_of::<DecodeTables>();
/// Warps per block of the decompress and sizes kernels (Deflate's and GDeflate's): blocks of 4
/// fill an SM's shared memory with 8 of them, 32 warps, the one wave 4096 chunks make on 132 SMs
/// (blocks of 7, the most 48 KiB holds, would fit 4, 28 warps).
pub const DECODE_WARPS: u32 = 4;
/// Blocks per SM of the decompress kernels, which their launch bounds hold ptxas to (64
/// registers).
pub const DECOMPRESS_BLOCKS_PER_SM: u32 = 8;
const _: () = assert!(
    DECODE_WARPS as usize * DECODE_SHARED_BYTES_PER_WARP <= SHARED_BYTES_PER_BLOCK
        && DECOMPRESS_BLOCKS_PER_SM <= crate::blocks_per_sm(DECODE_WARPS, DECODE_SHARED_BYTES_PER_WARP)
);

/// The `n` low bits of `word` (`n` < 32): a code's extra bits.
#[inline(always)]
pub fn low_bits(word: u64, n: u32) -> u32 {
    word as u32 & ((1 << n) - 1)
}

/// The level and wrapper packed in a kernel's `options` word (level in bits 0..8, wrapper id in
/// bits 8..16).
pub fn unpack_options(options: u32) -> (u8, Wrapper) {
    (options as u8, Wrapper::from_id((options >> 8) as u8).unwrap_or_default())
}

/// Builds into `table[..table_len]` the decode table of `symbols` code lengths (`lens(chunk)`:
/// this lane's of the chunk of 32, see [`lengths_at`]) with `root` root bits: the table, and the
/// status, of the format crate's `huffman::build_table`. The warp shares the work: ballots count the lengths, each lane finds the codeword of its
/// symbol from its rank among the symbols of its length, and the root entries go out 32 a step.
/// Codewords longer than the root (few: the rare symbols) are placed one at a time in canonical
/// order, the warp writing each one's sub-table entries. Ends with the table visible to every lane.
///
/// # Safety
/// `table` must be writable for `table_len` entries (at least `1 << root`), by this warp alone,
/// and hold none of the lengths.
pub unsafe fn build_table<W: Warp>(
    warp: &W,
    table: *mut u32,
    table_len: usize,
    root: u32,
    lens: impl Fn(u32) -> u32,
    symbols: usize,
    alphabet: Alphabet,
) -> Result<(), Status> {
    let lane = warp.lane();
    let chunks = symbols.div_ceil(WARP_SIZE as usize) as u32;
    let len_in = |chunk: u32| lens(chunk).min(MAX_CODE_LEN);
    let my_count: u32 = (0..chunks).map(|chunk| of_lane_length(warp, len_in(chunk))).sum();
    let mut count: LengthCounts = [0; MAX_CODE_LEN as usize + 1];
    let mut used = 0;
    for l in 1..=MAX_CODE_LEN {
        let n = warp.shuffle(my_count, l);
        count[l as usize] = n as i32;
        used += n;
    }
    count[0] = (symbols - used as usize) as i32;
    let mut codewords = Codewords::new(warp, my_count);
    let root_size = 1 << root;
    if check_counts(&count, symbols, alphabet)? {
        warp.for_each_strided(root_size, |i| unsafe { *table.add(i) = INVALID });
        warp.sync();
    }

    // Root entries: a codeword of `len` ≤ `root` bits fills every entry its bits end.
    for chunk in 0..chunks {
        let len = len_in(chunk);
        let sym = (chunk * WARP_SIZE + lane) as usize;
        let code = codewords.take(warp, len);
        let short = len != 0 && len <= root;
        let rev = if short { reverse(code, len) } else { 0 };
        let entry = alphabet.entry(sym) | len;
        let fills = if short { 1 << (root - len) } else { 0 };
        let end = scan_add(warp, fills);
        let (start, total) = (end - fills, warp.shuffle(end, WARP_SIZE - 1));
        let mut step = 0;
        while step < total {
            let t = step + lane;
            let owner = last_starting_by(warp, start, t);
            let k = t - warp.shuffle(start, owner);
            let at = warp.shuffle(rev, owner) + (k << warp.shuffle(len, owner));
            let entry = warp.shuffle(entry, owner);
            if t < total {
                unsafe { *table.add(at as usize) = entry };
            }
            step += WARP_SIZE;
        }
    }

    // Longer codewords, in canonical order: each root prefix they share points to a sub-table.
    let (mut next_free, mut sub_prefix, mut sub_start, mut sub_bits) = (root_size, u32::MAX, 0, 0);
    for len in root + 1..=MAX_CODE_LEN {
        if count[len as usize] == 0 {
            continue;
        }
        let mut code = warp.shuffle(codewords.first, len);
        let mut placed = 0;
        for chunk in 0..chunks {
            let mut these = warp.ballot(len_in(chunk) == len);
            while these != 0 {
                let sym = (chunk * WARP_SIZE + these.trailing_zeros()) as usize;
                these &= these - 1;
                let rev = reverse(code, len);
                let prefix = rev & (root_size as u32 - 1);
                if prefix != sub_prefix {
                    let remaining = |l: u32| count[l as usize] - if l == len { placed } else { 0 };
                    sub_bits = subtable_bits(root, len, remaining);
                    (sub_prefix, sub_start) = (prefix, next_free);
                    next_free += 1 << sub_bits;
                    if next_free > table_len {
                        return Err(Status::Malformed);
                    }
                    if lane == 0 {
                        unsafe { *table.add(prefix as usize) = subtable_pointer(sub_start, sub_bits) };
                    }
                }
                let entry = alphabet.entry(sym) | len;
                let stride = 1 << (len - root);
                let mut i = (rev >> root) + lane * stride;
                while i < 1 << sub_bits {
                    unsafe { *table.add(sub_start + i as usize) = entry };
                    i += WARP_SIZE * stride;
                }
                placed += 1;
                code += 1;
            }
        }
    }
    warp.sync(); // the table is visible to every lane
    Ok(())
}

/// The code lengths `lens[..symbols]` as [`build_table`] reads them: in each lane, the length of
/// its symbol of a chunk of 32 (0 past the end).
///
/// # Safety
/// `lens` must be readable for `symbols` lengths while the table is built.
pub unsafe fn lengths_at<W: Warp, T: Copy + Into<u32>>(
    warp: &W,
    lens: *const T,
    symbols: usize,
) -> impl Fn(u32) -> u32 {
    let lane = warp.lane();
    move |chunk| {
        let sym = (chunk * WARP_SIZE + lane) as usize;
        if sym < symbols { unsafe { *lens.add(sym) }.into() } else { 0 }
    }
}

/// The format crate's `huffman::lookup` in a table that [`build_table`] built in shared memory:
/// the entry the low bits of `bits` index, or the sub-table entry it points to. Every index lies
/// within the table, as the builder placed each sub-table there.
///
/// # Safety
/// `table` must hold a table built with `root` root bits, in shared memory.
#[inline(always)]
pub unsafe fn lookup_shared(table: *const u32, root: u32, bits: u64) -> u32 {
    lookup_with(|i| unsafe { shared_u32(table.add(i)) }, root, bits)
}

/// [`lookup_shared`] through `table`'s 32-bit shared offsets (GDeflate measured 1% faster so, at
/// one step; Deflate 3-9% slower).
///
/// # Safety
/// As [`lookup_shared`], `table` at its start.
#[inline(always)]
pub unsafe fn lookup_at(table: SharedBytes, root: u32, bits: u64) -> u32 {
    lookup_with(|i| unsafe { table.u32(4 * i as u32) }, root, bits)
}

/// The fixed code's lengths, where its tables are built from.
static FIXED_LITLEN: [u8; 288] = FIXED_LITLEN_LENS;
static FIXED_DIST: [u8; 32] = FIXED_DIST_LENS;

/// The format crate's `inflate::build_block_tables`, warp-wide ([`build_table`]): a Huffman
/// block's tables from its code lengths (`deflate64`: GDeflate's meanings of the top symbols).
///
/// # Safety
/// `t` must be writable by this warp alone, its lengths written and visible to every lane for a
/// dynamic block.
pub unsafe fn build_block_tables<W: Warp>(
    warp: &W,
    t: *mut DecodeTables,
    lengths: Lengths,
    deflate64: bool,
) -> Result<(), Status> {
    let (litlen, dist) = unsafe { ((*t).litlen.as_mut_ptr(), (*t).dist.as_mut_ptr()) };
    let (lit, dis) = (Alphabet::LitLen { deflate64 }, Alphabet::Dist { deflate64 });
    unsafe {
        match lengths {
            Lengths::Fixed => {
                let (hlit, hdist) = (FIXED_LITLEN.len(), FIXED_DIST.len());
                let (lit_lens, dist_lens) =
                    (lengths_at(warp, FIXED_LITLEN.as_ptr(), hlit), lengths_at(warp, FIXED_DIST.as_ptr(), hdist));
                build_table(warp, litlen, LITLEN_TABLE, LITLEN_ROOT, lit_lens, hlit, lit)?;
                build_table(warp, dist, DIST_TABLE, DIST_ROOT, dist_lens, hdist, dis)
            }
            Lengths::Dynamic { hlit, hdist } => {
                // The lengths lie in `dist` (`DecodeTables::lens_and_precode`): each lane takes
                // its distance length (of at most 32) before that table is built over them.
                let lens = dist as *const u32;
                build_table(warp, litlen, LITLEN_TABLE, LITLEN_ROOT, lengths_at(warp, lens, hlit), hlit, lit)?;
                let mine = lengths_at(warp, lens.add(hlit), hdist)(0);
                warp.sync();
                let dist_lens = move |chunk: u32| if chunk == 0 { mine } else { 0 };
                build_table(warp, dist, DIST_TABLE, DIST_ROOT, dist_lens, hdist, dis)
            }
        }
    }
}

/// In lane l of 1..=15: how many of the lanes' 32 code lengths `len` are l.
fn of_lane_length<W: Warp>(warp: &W, len: u32) -> u32 {
    let mut mine = 0;
    for l in 1..=MAX_CODE_LEN {
        let n = warp.ballot(len == l).count_ones();
        if warp.lane() == l {
            mine = n;
        }
    }
    mine
}

/// Canonical codewords (RFC 1951, 3.2.2) handed out warp-wide, 32 symbols at a time in symbol
/// order: in lane l of 1..=15, the first codeword of length l and the next one not yet taken.
struct Codewords {
    first: u32,
    next: u32,
}

impl Codewords {
    /// The codewords of a code with, in lane l, `my_count` symbols of length l.
    fn new<W: Warp>(warp: &W, my_count: u32) -> Self {
        let (mut code, mut first) = (0, 0);
        for l in 1..=MAX_CODE_LEN {
            // A length's first codeword follows the shorter ones'.
            if warp.lane() == l {
                first = code;
            }
            code = (code + warp.shuffle(my_count, l)) << 1;
        }
        Self { first, next: first }
    }

    /// The codeword (MSB first) of this lane's symbol of the next 32, whose code length is `len`
    /// (meaningless for 0).
    fn take<W: Warp>(&mut self, warp: &W, len: u32) -> u32 {
        let same_before = warp.match_any(len) & ((1 << warp.lane()) - 1);
        let code = warp.shuffle(self.next, len) + same_before.count_ones();
        self.next += of_lane_length(warp, len);
        code
    }
}

/// The format crate's `huffman::canonical_codes` of the code lengths `lens[..symbols]` (each at
/// most `MAX_CODE_LEN`) into `codes`, warp-wide.
///
/// # Safety
/// `lens` must be readable for `symbols` bytes and `codes` writable for `symbols` codes, by this
/// warp alone.
pub unsafe fn canonical_codes<W: Warp>(warp: &W, lens: *const u8, symbols: usize, codes: *mut u16) {
    let chunks = symbols.div_ceil(WARP_SIZE as usize);
    let len_in = |chunk: usize| {
        let sym = chunk * WARP_SIZE as usize + warp.lane() as usize;
        if sym < symbols { unsafe { *lens.add(sym) as u32 } } else { 0 }
    };
    let my_count: u32 = (0..chunks).map(|chunk| of_lane_length(warp, len_in(chunk))).sum();
    let mut codewords = Codewords::new(warp, my_count);
    for chunk in 0..chunks {
        let (len, sym) = (len_in(chunk), chunk * WARP_SIZE as usize + warp.lane() as usize);
        let code = codewords.take(warp, len);
        if sym < symbols {
            unsafe { *codes.add(sym) = if len == 0 { 0 } else { reverse(code, len) as u16 } };
        }
    }
}

/// This warp's decoding tables, in the block's shared memory (Deflate's and GDeflate's kernels).
///
/// # Safety
/// The launch must give each warp [`DECODE_SHARED_BYTES_PER_WARP`] of dynamic shared memory.
#[cfg(target_arch = "nvptx64")]
pub(crate) unsafe fn shared_tables<'a>() -> &'a mut DecodeTables {
    unsafe { &mut *crate::batch::warp_shared::<DecodeTables>(1) }
}

/// The batched entry points (`deflate_compress`, `deflate_decompress`,
/// `deflate_decompressed_sizes`).
#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::decode::{Output, decompress_chunk, decompress_in_pair};
    use super::rounds::InWarp;
    use super::*;
    use crate::batch::{BlockDecompress, Chunk, ChunkKernels, Lanes, PartsCompress, scratch_slot, warp_shared};
    use crate::gpu::{HardwareBlock, HardwareWarp, dynamic_shared_memory};
    use ferrocomp_format::deflate::CompressScratch;
    use ferrocomp_format::deflate::compress::FAST_RULES;
    use ferrocomp_format::{BatchArgs, Status};

    /// A warp per chunk, in each direction: compressing with level 1's hash table in shared
    /// memory and a `CompressScratch` per warp of the grid, decoding with its tables in shared
    /// memory.
    pub struct Deflate;

    impl Deflate {
        /// Compresses `chunk`, which may be longer than a part where `PARTS`.
        #[inline(always)]
        unsafe fn compress_with<const PARTS: bool>(
            warp: &HardwareWarp,
            chunk: &Chunk,
            args: &BatchArgs,
        ) -> Result<usize, Status> {
            let (level, wrapper) = unpack_options(args.options as u32);
            unsafe {
                let scratch = scratch_slot::<CompressScratch>(args, chunk.slot);
                let table = warp_shared::<u16>(FAST_RULES.table_entries());
                let (input, n, output, capacity) = (chunk.input, chunk.input_len, chunk.output, chunk.capacity);
                compress::compress_chunk::<_, PARTS>(warp, input, n, level, wrapper, scratch, table, output, capacity)
            }
        }
    }

    impl ChunkKernels for Deflate {
        const COMPRESS: Lanes = Lanes::Warp;
        const DECOMPRESS: Lanes = Lanes::Warp;
        const SIZES: Lanes = Lanes::Warp;

        unsafe fn compress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            unsafe { Self::compress_with::<false>(warp, chunk, args) }
        }

        unsafe fn decompress(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let (_, wrapper) = unpack_options(args.options as u32);
            let output = Output::to(chunk.output, chunk.capacity);
            unsafe {
                decompress_chunk(warp, chunk.input, chunk.input_len, wrapper, output, shared_tables(), &mut InWarp)
            }
        }

        unsafe fn decompressed_size(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            let (_, wrapper) = unpack_options(args.options as u32);
            unsafe {
                let (input, n, output) = (chunk.input, chunk.input_len, Output::counting());
                decompress_chunk(warp, input, n, wrapper, output, shared_tables(), &mut InWarp)
            }
        }
    }

    crate::batch_kernels!(Deflate: deflate_compress, deflate_decompress, deflate_decompressed_sizes);

    impl PartsCompress for Deflate {
        unsafe fn compress_parts(warp: &HardwareWarp, chunk: &Chunk, args: &BatchArgs) -> Result<usize, Status> {
            unsafe { Self::compress_with::<true>(warp, chunk, args) }
        }
    }

    crate::compress_parts_kernel!(Deflate: deflate_compress_parts);

    /// A block of two warps a chunk, one decoding, one copying its matches.
    impl BlockDecompress for Deflate {
        unsafe fn decompress(
            block: &HardwareBlock,
            warp: &HardwareWarp,
            chunk: &Chunk,
            args: &BatchArgs,
        ) -> Result<usize, Status> {
            let (_, wrapper) = unpack_options(args.options as u32);
            let (input, n, shared) = (chunk.input, chunk.input_len, dynamic_shared_memory::<u8>());
            let decode = |output, tables, rounds: &mut _| unsafe {
                decompress_chunk(warp, input, n, wrapper, output, tables, rounds)
            };
            let (out, capacity) = (chunk.output, chunk.capacity);
            // Not staged: with a warp copying the matches, Deflate's chunks decode 3 to 5% faster
            // straight into the output (H200, 1 and 16 MiB of 64 KiB chunks).
            unsafe { decompress_in_pair(block, warp, out, capacity, shared, false, decode) }
        }
    }

    crate::block_decompress_kernel!(Deflate: deflate_decompress_blocks);
}

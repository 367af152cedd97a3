//! Deflate (raw, zlib or gzip) on the GPU: one warp per chunk, whose first lane runs the format
//! crate's codec (`ferrocomp_format::deflate`), so the GPU and the CPU write the same bytes.
//! Compression scratch lives in a device array, one slot per warp of the grid; the decoding
//! tables of each warp live in shared memory.

use ferrocomp_format::deflate::{DecodeTables, Wrapper};

/// Bytes of shared memory each warp of the decompress kernels needs (its decoding tables).
pub const DECODE_SHARED_BYTES_PER_WARP: usize = size_of::<DecodeTables>();

/// The level and wrapper packed in a kernel's `options` word (level in bits 0..8, wrapper id in
/// bits 8..16).
pub fn unpack_options(options: u32) -> (u8, Wrapper) {
    (options as u8, Wrapper::from_id((options >> 8) as u8).unwrap_or_default())
}

/// This warp's decoding tables, in the block's shared memory (Deflate's and GDeflate's kernels).
///
/// # Safety
/// The launch must give each warp [`DECODE_SHARED_BYTES_PER_WARP`] of dynamic shared memory.
#[cfg(target_arch = "nvptx64")]
pub(crate) unsafe fn shared_tables<'a>() -> &'a mut DecodeTables {
    use crate::gpu::{HardwareWarp, dynamic_shared_memory};
    unsafe { &mut *dynamic_shared_memory::<DecodeTables>().add(HardwareWarp::index_in_block() as usize) }
}

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use super::*;
    use crate::batch::{bytes, bytes_mut, finish, for_each_chunk, scratch_slot};
    use ferrocomp_format::deflate::{self, CompressScratch};

    /// Compresses chunk `i` of `count` into `outputs[i]` (room for `capacity` bytes), writing
    /// `out_sizes[i]` and `statuses[i]`. `scratch` holds a `CompressScratch` per warp of the grid.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn deflate_compress(
        inputs: *const *const u8,
        in_sizes: *const usize,
        outputs: *const *mut u8,
        capacity: usize,
        out_sizes: *mut usize,
        statuses: *mut u32,
        count: usize,
        scratch: *mut u8,
        options: u32,
    ) {
        let (level, wrapper) = unpack_options(options);
        for_each_chunk(count, true, |chunk, slot| unsafe {
            let input = bytes(*inputs.add(chunk), *in_sizes.add(chunk));
            let out = bytes_mut(*outputs.add(chunk), capacity);
            let scratch = scratch_slot::<CompressScratch>(scratch, slot);
            let result = deflate::compress(input, level, wrapper, scratch, out);
            finish(chunk, result, out_sizes, statuses, core::ptr::null_mut());
        });
    }

    /// Decompresses chunk `i` of `count` into `outputs[i]` (room for `capacities[i]` bytes),
    /// writing `out_sizes[i]` and `statuses[i]`; `first_failure`, if not null, is lowered to the
    /// index of the first chunk that failed.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn deflate_decompress(
        inputs: *const *const u8,
        in_sizes: *const usize,
        outputs: *const *mut u8,
        capacities: *const usize,
        out_sizes: *mut usize,
        statuses: *mut u32,
        count: usize,
        first_failure: *mut u32,
        _scratch: *mut u8,
        options: u32,
    ) {
        let (_, wrapper) = unpack_options(options);
        for_each_chunk(count, true, |chunk, _| unsafe {
            let input = bytes(*inputs.add(chunk), *in_sizes.add(chunk));
            let out = bytes_mut(*outputs.add(chunk), *capacities.add(chunk));
            let result = deflate::decompress(input, wrapper, out, shared_tables());
            finish(chunk, result, out_sizes, statuses, first_failure);
        });
    }

    /// Finds the decompressed size of chunk `i` of `count` by decoding it without writing.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn deflate_decompressed_sizes(
        inputs: *const *const u8,
        in_sizes: *const usize,
        out_sizes: *mut usize,
        statuses: *mut u32,
        count: usize,
        _scratch: *mut u8,
        options: u32,
    ) {
        let (_, wrapper) = unpack_options(options);
        for_each_chunk(count, true, |chunk, _| unsafe {
            let input = bytes(*inputs.add(chunk), *in_sizes.add(chunk));
            let result = deflate::decompressed_size(input, wrapper, shared_tables());
            finish(chunk, result, out_sizes, statuses, core::ptr::null_mut());
        });
    }
}

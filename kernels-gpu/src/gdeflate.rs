//! GDeflate on the GPU: one warp per chunk, whose first lane runs the format crate's codec
//! (`ferrocomp_format::gdeflate`), so the GPU and the CPU write the same bytes. Scratch and
//! decoding tables are placed as for Deflate (`crate::deflate`).

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use crate::batch::{bytes, bytes_mut, finish, for_each_chunk, scratch_slot};
    use crate::deflate::shared_tables;
    use ferrocomp_format::deflate::CompressScratch;
    use ferrocomp_format::gdeflate;

    /// Compresses chunk `i` of `count` into `outputs[i]` (room for `capacity` bytes) at level
    /// `options`, writing `out_sizes[i]` and `statuses[i]`. `scratch` holds a `CompressScratch`
    /// per warp of the grid.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn gdeflate_compress(
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
        for_each_chunk(count, true, |chunk, slot| unsafe {
            let input = bytes(*inputs.add(chunk), *in_sizes.add(chunk));
            let out = bytes_mut(*outputs.add(chunk), capacity);
            let scratch = scratch_slot::<CompressScratch>(scratch, slot);
            let result = gdeflate::compress(input, options as u8, scratch, out);
            finish(chunk, result, out_sizes, statuses, core::ptr::null_mut());
        });
    }

    /// Decompresses chunk `i` of `count` into `outputs[i]` (room for `capacities[i]` bytes),
    /// writing `out_sizes[i]` and `statuses[i]`; `first_failure`, if not null, is lowered to the
    /// index of the first chunk that failed.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn gdeflate_decompress(
        inputs: *const *const u8,
        in_sizes: *const usize,
        outputs: *const *mut u8,
        capacities: *const usize,
        out_sizes: *mut usize,
        statuses: *mut u32,
        count: usize,
        first_failure: *mut u32,
        _scratch: *mut u8,
        _options: u32,
    ) {
        for_each_chunk(count, true, |chunk, _| unsafe {
            let input = bytes(*inputs.add(chunk), *in_sizes.add(chunk));
            let out = bytes_mut(*outputs.add(chunk), *capacities.add(chunk));
            let result = gdeflate::decompress(input, out, shared_tables());
            finish(chunk, result, out_sizes, statuses, first_failure);
        });
    }

    /// Finds the decompressed size of chunk `i` of `count` by decoding it without writing.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn gdeflate_decompressed_sizes(
        inputs: *const *const u8,
        in_sizes: *const usize,
        out_sizes: *mut usize,
        statuses: *mut u32,
        count: usize,
        _scratch: *mut u8,
        _options: u32,
    ) {
        for_each_chunk(count, true, |chunk, _| unsafe {
            let input = bytes(*inputs.add(chunk), *in_sizes.add(chunk));
            let result = gdeflate::decompressed_size(input, shared_tables());
            finish(chunk, result, out_sizes, statuses, core::ptr::null_mut());
        });
    }
}

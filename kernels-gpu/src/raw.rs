//! Device memory, given as pointers and lengths, taken as slices.

/// The `len` bytes at `at` (which may be null when `len` is 0).
///
/// # Safety
/// `at` must be readable for `len` bytes, not written meanwhile.
#[inline(always)]
pub unsafe fn bytes<'a>(at: *const u8, len: usize) -> &'a [u8] {
    if len == 0 { &[] } else { unsafe { core::slice::from_raw_parts(at, len) } }
}

/// The `len` bytes at `at`, to write (`at` may be null when `len` is 0).
///
/// # Safety
/// `at` must be writable for `len` bytes, by this lane alone while the slice lives.
#[inline(always)]
pub unsafe fn bytes_mut<'a>(at: *mut u8, len: usize) -> &'a mut [u8] {
    if len == 0 { &mut [] } else { unsafe { core::slice::from_raw_parts_mut(at, len) } }
}

//! Device memory, given as pointers and lengths, taken as slices or read as the memory it is.

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

/// The word at `at`, in the block's shared memory, loaded as such (`ld.shared`): the generic load
/// a plain read compiles to must first find which memory the address is in.
///
/// # Safety
/// `at` must point to a readable `u32` in shared memory (on the host, anywhere).
#[inline(always)]
pub unsafe fn shared_u32(at: *const u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let value: u32;
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 a; cvta.to.shared.u64 a, {at}; ld.shared.u32 {value}, [a]; }}",
                at = in(reg64) at, value = out(reg32) value, options(pure, readonly, nostack)
            )
        };
        value
    }
    #[cfg(not(target_arch = "nvptx64"))]
    unsafe {
        *at
    }
}

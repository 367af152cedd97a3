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
/// a plain read compiles to must first find which memory the address is in. Deflate's and
/// GDeflate's table lookups read through it: through [`SharedBytes`]' 32-bit offsets Deflate
/// decoded 3 to 9% slower on an H200 (GDeflate 1% faster), measured side by side.
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

/// The byte at `at`, in the block's shared memory, loaded as such (as [`shared_u32`]).
///
/// # Safety
/// `at` must point to a readable byte in shared memory (on the host, anywhere).
#[inline(always)]
pub unsafe fn shared_u8(at: *const u8) -> u8 {
    #[cfg(target_arch = "nvptx64")]
    {
        let value: u32;
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 a; cvta.to.shared.u64 a, {at}; ld.shared.u8 {value}, [a]; }}",
                at = in(reg64) at, value = out(reg32) value, options(pure, readonly, nostack)
            )
        };
        value as u8
    }
    #[cfg(not(target_arch = "nvptx64"))]
    unsafe {
        *at
    }
}

/// Shared memory read and written at 32-bit offsets from a base: on the GPU, with the 32-bit
/// shared addresses the SM computes natively, where a generic pointer takes 64-bit sums and a
/// conversion at every access (a third of a table lookup's instructions).
#[derive(Clone, Copy)]
pub struct SharedBytes {
    #[cfg(target_arch = "nvptx64")]
    base: u32,
    #[cfg(not(target_arch = "nvptx64"))]
    base: *const u8,
}

impl SharedBytes {
    /// The shared memory from `at` on.
    ///
    /// # Safety
    /// `at` must point into shared memory (on the host, anywhere).
    #[inline(always)]
    pub unsafe fn new(at: *const u8) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            let base: u32;
            // The address is converted, not read through.
            #[allow(clippy::pointers_in_nomem_asm_block)]
            unsafe {
                core::arch::asm!(
                    "{{ .reg .u64 a; cvta.to.shared.u64 a, {at}; cvt.u32.u64 {base}, a; }}",
                    at = in(reg64) at, base = out(reg32) base, options(pure, nomem, nostack)
                )
            };
            Self { base }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        Self { base: at }
    }

    /// The byte at `offset`.
    ///
    /// # Safety
    /// It must be readable, and in the memory [`new`](Self::new) was given.
    #[inline(always)]
    pub unsafe fn u8(self, offset: u32) -> u8 {
        #[cfg(target_arch = "nvptx64")]
        {
            let value: u32;
            unsafe {
                core::arch::asm!(
                    "ld.shared.u8 {value}, [{at}];",
                    at = in(reg32) self.base + offset, value = out(reg32) value, options(pure, readonly, nostack)
                )
            };
            value as u8
        }
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe {
            *self.base.add(offset as usize)
        }
    }

    /// The `u16` at `offset` (a multiple of 2).
    ///
    /// # Safety
    /// As [`u8`](Self::u8), for its 2 bytes.
    #[inline(always)]
    pub unsafe fn u16(self, offset: u32) -> u16 {
        #[cfg(target_arch = "nvptx64")]
        {
            let value: u32;
            unsafe {
                core::arch::asm!(
                    "ld.shared.u16 {value}, [{at}];",
                    at = in(reg32) self.base + offset, value = out(reg32) value, options(pure, readonly, nostack)
                )
            };
            value as u16
        }
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe {
            (self.base.add(offset as usize) as *const u16).read()
        }
    }

    /// Writes the byte at `offset`.
    ///
    /// # Safety
    /// It must be writable, by this thread alone until the block's next barrier, and in the
    /// memory [`new`](Self::new) was given.
    #[inline(always)]
    pub unsafe fn set_u8(self, offset: u32, value: u8) {
        #[cfg(target_arch = "nvptx64")]
        unsafe {
            core::arch::asm!(
                "st.shared.u8 [{at}], {value};",
                at = in(reg32) self.base + offset, value = in(reg32) value as u32, options(nostack)
            )
        };
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe {
            (self.base as *mut u8).add(offset as usize).write(value)
        }
    }

    /// Writes the word at `offset` (a multiple of 4).
    ///
    /// # Safety
    /// As [`set_u8`](Self::set_u8), for its 4 bytes.
    #[inline(always)]
    pub unsafe fn set_u32(self, offset: u32, value: u32) {
        #[cfg(target_arch = "nvptx64")]
        unsafe {
            core::arch::asm!(
                "st.shared.u32 [{at}], {value};",
                at = in(reg32) self.base + offset, value = in(reg32) value, options(nostack)
            )
        };
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe {
            ((self.base as *mut u8).add(offset as usize) as *mut u32).write(value)
        }
    }

    /// Writes the `u16` at `offset` (a multiple of 2).
    ///
    /// # Safety
    /// As [`set_u8`](Self::set_u8), for its 2 bytes.
    #[inline(always)]
    pub unsafe fn set_u16(self, offset: u32, value: u16) {
        #[cfg(target_arch = "nvptx64")]
        unsafe {
            core::arch::asm!(
                "st.shared.u16 [{at}], {value};",
                at = in(reg32) self.base + offset, value = in(reg32) value as u32, options(nostack)
            )
        };
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe {
            ((self.base as *mut u8).add(offset as usize) as *mut u16).write(value)
        }
    }

    /// The word at `offset` (a multiple of 4).
    ///
    /// # Safety
    /// As [`u8`](Self::u8), for the word's 4 bytes.
    #[inline(always)]
    pub unsafe fn u32(self, offset: u32) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        {
            let value: u32;
            unsafe {
                core::arch::asm!(
                    "ld.shared.u32 {value}, [{at}];",
                    at = in(reg32) self.base + offset, value = out(reg32) value, options(pure, readonly, nostack)
                )
            };
            value
        }
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe {
            (self.base.add(offset as usize) as *const u32).read()
        }
    }
}

/// Adds `value` to the word at `at` in shared memory, atomically among the block's threads
/// (`red.shared`: a plain atomic on a generic pointer is a system-scope one, tens of times slower).
///
/// # Safety
/// `at` must point to a `u32` in shared memory (on the host, one only atomics touch meanwhile).
#[inline(always)]
pub unsafe fn shared_add(at: *mut u32, value: u32) {
    #[cfg(target_arch = "nvptx64")]
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 a; cvta.to.shared.u64 a, {at}; red.shared.add.u32 [a], {value}; }}",
            at = in(reg64) at, value = in(reg32) value, options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    unsafe {
        core::sync::atomic::AtomicU32::from_ptr(at).fetch_add(value, core::sync::atomic::Ordering::Relaxed);
    }
}

/// Adds `value` to the word at `at` in shared memory, atomically among the block's threads, and
/// returns the word before (`atom.shared`, as [`shared_add`]).
///
/// # Safety
/// As [`shared_add`].
#[inline(always)]
pub unsafe fn shared_fetch_add(at: *mut u32, value: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let old: u32;
        unsafe {
            core::arch::asm!(
                "{{ .reg .u64 a; cvta.to.shared.u64 a, {at}; atom.shared.add.u32 {old}, [a], {value}; }}",
                at = in(reg64) at, value = in(reg32) value, old = out(reg32) old, options(nostack)
            )
        };
        old
    }
    #[cfg(not(target_arch = "nvptx64"))]
    unsafe {
        core::sync::atomic::AtomicU32::from_ptr(at).fetch_add(value, core::sync::atomic::Ordering::Relaxed)
    }
}

/// ORs `value` into the word at `at` in shared memory, atomically among the block's threads
/// (`red.shared`, as [`shared_add`]).
///
/// # Safety
/// As [`shared_add`].
#[inline(always)]
pub unsafe fn shared_or(at: *mut u32, value: u32) {
    #[cfg(target_arch = "nvptx64")]
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 a; cvta.to.shared.u64 a, {at}; red.shared.or.b32 [a], {value}; }}",
            at = in(reg64) at, value = in(reg32) value, options(nostack)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    unsafe {
        core::sync::atomic::AtomicU32::from_ptr(at).fetch_or(value, core::sync::atomic::Ordering::Relaxed);
    }
}

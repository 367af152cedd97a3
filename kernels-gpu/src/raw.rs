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

/// Asks for the line holding `at`, in global memory, to be brought into L2, without waiting.
///
/// # Safety
/// `at` must be in global memory the kernel may read.
#[inline(always)]
pub unsafe fn prefetch_global(at: *const u8) {
    #[cfg(target_arch = "nvptx64")]
    unsafe {
        core::arch::asm!("prefetch.global.L2 [{at}];", at = in(reg64) at, options(readonly, nostack))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = at;
}

/// The word at `at` (a multiple of 4), in global memory, through the read-only path.
///
/// # Safety
/// It must be readable global memory, not written meanwhile.
#[inline(always)]
pub unsafe fn global_u32(at: *const u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let word: u32;
        unsafe {
            core::arch::asm!("ld.global.nc.u32 {word}, [{at}];", at = in(reg64) at, word = out(reg32) word,
                options(pure, readonly, nostack))
        };
        word
    }
    #[cfg(not(target_arch = "nvptx64"))]
    unsafe {
        at.read()
    }
}

/// The 16 bytes at `at` (a multiple of 16), in global memory, as four little-endian words, in one
/// load through the read-only path.
///
/// # Safety
/// They must be readable global memory, not written meanwhile.
#[inline(always)]
pub unsafe fn global_u32x4(at: *const u8) -> [u32; 4] {
    #[cfg(target_arch = "nvptx64")]
    {
        let (a, b, c, d): (u32, u32, u32, u32);
        unsafe {
            core::arch::asm!(
                "ld.global.nc.v4.u32 {{{a}, {b}, {c}, {d}}}, [{at}];",
                at = in(reg64) at, a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
                options(pure, readonly, nostack)
            )
        };
        [a, b, c, d]
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        debug_assert!((at as usize).is_multiple_of(16));
        core::array::from_fn(|k| u32::from_le_bytes(core::array::from_fn(|j| unsafe { *at.add(4 * k + j) })))
    }
}

/// A load of one width from a pointer into the block's shared memory, as such (`ld.shared`): the
/// generic load a plain read compiles to must first find which memory the address is in.
macro_rules! shared_load {
    ($(#[$doc:meta])* $name:ident, $ty:ty, $ptx:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `at` must point to a readable value in shared memory (on the host, anywhere).
        #[inline(always)]
        pub unsafe fn $name(at: *const $ty) -> $ty {
            #[cfg(target_arch = "nvptx64")]
            {
                let value: u32;
                unsafe {
                    core::arch::asm!(
                        concat!("{{ .reg .u64 a; cvta.to.shared.u64 a, {at}; ld.shared.", $ptx, " {value}, [a]; }}"),
                        at = in(reg64) at, value = out(reg32) value, options(pure, readonly, nostack)
                    )
                };
                value as $ty
            }
            #[cfg(not(target_arch = "nvptx64"))]
            unsafe {
                *at
            }
        }
    };
}

shared_load!(
    /// The word at `at`, in shared memory. Deflate's and GDeflate's general table lookups read
    /// through it: through [`SharedBytes`]' 32-bit offsets Deflate decoded 3 to 9% slower on an
    /// H200 (GDeflate 1% faster), measured side by side, before Deflate's literals and matches had
    /// paths of their own (which use those).
    shared_u32,
    u32,
    "u32"
);
shared_load!(
    /// The byte at `at`, in shared memory (the block decoder's staged input as parsed).
    shared_u8,
    u8,
    "u8"
);

/// A load and a store of one width through [`SharedBytes`]: `ld.shared` and `st.shared` at the
/// base plus a 32-bit offset (on the host, plain reads and writes).
macro_rules! widths {
    ($load:ident, $store:ident, $ty:ty, $ptx:literal, $what:literal) => {
        #[doc = concat!("The ", $what, " at `offset` (a multiple of its size).")]
        ///
        /// # Safety
        /// It must be readable, and in the memory [`new`](Self::new) was given.
        #[inline(always)]
        pub unsafe fn $load(self, offset: u32) -> $ty {
            #[cfg(target_arch = "nvptx64")]
            {
                let value: u32;
                unsafe {
                    core::arch::asm!(
                        concat!("ld.shared.", $ptx, " {value}, [{at}];"),
                        at = in(reg32) self.base + offset, value = out(reg32) value, options(pure, readonly, nostack)
                    )
                };
                value as $ty
            }
            #[cfg(not(target_arch = "nvptx64"))]
            unsafe {
                (self.base.add(offset as usize) as *const $ty).read()
            }
        }

        #[doc = concat!("Writes the ", $what, " at `offset` (a multiple of its size).")]
        ///
        /// # Safety
        /// It must be writable, by this thread alone until the block's next barrier, and in the
        /// memory [`new`](Self::new) was given.
        #[inline(always)]
        pub unsafe fn $store(self, offset: u32, value: $ty) {
            #[cfg(target_arch = "nvptx64")]
            unsafe {
                core::arch::asm!(
                    concat!("st.shared.", $ptx, " [{at}], {value};"),
                    at = in(reg32) self.base + offset, value = in(reg32) value as u32, options(nostack)
                )
            };
            #[cfg(not(target_arch = "nvptx64"))]
            unsafe {
                (self.base as *mut u8).add(offset as usize).cast::<$ty>().write(value)
            }
        }
    };
}

/// An atomic update of a word through [`SharedBytes`]: `red.shared` at the base plus a 32-bit
/// offset (on the host, the generic-pointer function `$host`).
macro_rules! reduction {
    ($name:ident, $ptx:literal, $host:ident, $what:literal) => {
        #[doc = concat!($what, " the word at `offset`, atomically among the block's threads (as [`", stringify!($host), "`]).")]
        ///
        /// # Safety
        /// It must be in the memory [`new`](Self::new) was given.
        #[inline(always)]
        pub unsafe fn $name(self, offset: u32, value: u32) {
            #[cfg(target_arch = "nvptx64")]
            unsafe {
                core::arch::asm!(
                    concat!("red.shared.", $ptx, " [{at}], {value};"),
                    at = in(reg32) self.base + offset, value = in(reg32) value, options(nostack)
                )
            };
            #[cfg(not(target_arch = "nvptx64"))]
            unsafe {
                $host(self.base.add(offset as usize) as *mut u32, value)
            }
        }
    };
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

    /// The shared memory `offset` bytes on.
    #[inline(always)]
    pub fn at(self, offset: u32) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            Self { base: self.base + offset }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        Self { base: self.base.wrapping_add(offset as usize) }
    }

    widths!(u8, set_u8, u8, "u8", "byte");
    widths!(u16, set_u16, u16, "u16", "`u16`");
    widths!(u32, set_u32, u32, "u32", "word");

    reduction!(add_u32, "add.u32", shared_add, "Adds `value` to");
    reduction!(or_u32, "or.b32", shared_or, "ORs `value` into");

    /// Word `index` (at `4 * index`); the address is formed in one shift-and-add (the compiler
    /// would fold a mask of `index` into the shift, making it three).
    ///
    /// # Safety
    /// It must be readable, and in the memory [`new`](Self::new) was given.
    #[inline(always)]
    pub unsafe fn word(self, index: u32) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        {
            let word: u32;
            unsafe {
                core::arch::asm!(
                    "{{ .reg .u32 at; shl.b32 at, {index}, 2; add.u32 at, at, {base}; ld.shared.u32 {word}, [at]; }}",
                    base = in(reg32) self.base, index = in(reg32) index, word = out(reg32) word,
                    options(pure, readonly, nostack)
                )
            };
            word
        }
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe {
            (self.base as *const u32).add(index as usize).read()
        }
    }

    /// Pair `index` of words (at `8 * index`), in one load; the address is formed in one
    /// shift-and-add (the compiler would fold a mask of `index` into the shift, making it three).
    ///
    /// # Safety
    /// They must be readable, and in the memory [`new`](Self::new) was given.
    #[inline(always)]
    pub unsafe fn pair(self, index: u32) -> [u32; 2] {
        #[cfg(target_arch = "nvptx64")]
        {
            let (a, b): (u32, u32);
            unsafe {
                core::arch::asm!(
                    "{{ .reg .u32 at; shl.b32 at, {index}, 3; add.u32 at, at, {base}; ld.shared.v2.u32 {{{a}, {b}}}, [at]; }}",
                    base = in(reg32) self.base, index = in(reg32) index, a = out(reg32) a, b = out(reg32) b,
                    options(pure, readonly, nostack)
                )
            };
            [a, b]
        }
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe {
            (self.base as *const [u32; 2]).add(index as usize).read()
        }
    }

    /// The four words at `offset` (a multiple of 16), in one load.
    ///
    /// # Safety
    /// They must be readable, and in the memory [`new`](Self::new) was given.
    #[inline(always)]
    pub unsafe fn u32x4(self, offset: u32) -> [u32; 4] {
        #[cfg(target_arch = "nvptx64")]
        {
            let (a, b, c, d): (u32, u32, u32, u32);
            unsafe {
                core::arch::asm!(
                    "ld.shared.v4.u32 {{{a}, {b}, {c}, {d}}}, [{at}];",
                    at = in(reg32) self.base + offset, a = out(reg32) a, b = out(reg32) b, c = out(reg32) c,
                    d = out(reg32) d, options(pure, readonly, nostack)
                )
            };
            [a, b, c, d]
        }
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe {
            (self.base.add(offset as usize) as *const [u32; 4]).read()
        }
    }

    /// Writes the four words at `offset` (a multiple of 16), in one store.
    ///
    /// # Safety
    /// They must be writable, by this thread alone until the block's next barrier, and in the
    /// memory [`new`](Self::new) was given.
    #[inline(always)]
    pub unsafe fn set_u32x4(self, offset: u32, [a, b, c, d]: [u32; 4]) {
        #[cfg(target_arch = "nvptx64")]
        unsafe {
            core::arch::asm!(
                "st.shared.v4.u32 [{at}], {{{a}, {b}, {c}, {d}}};",
                at = in(reg32) self.base + offset, a = in(reg32) a, b = in(reg32) b, c = in(reg32) c,
                d = in(reg32) d, options(nostack)
            )
        };
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe {
            (self.base as *mut u8).add(offset as usize).cast::<[u32; 4]>().write([a, b, c, d])
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

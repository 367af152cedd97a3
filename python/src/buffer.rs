//! Host buffers through the buffer protocol (`bytes`, `bytearray`, `memoryview`, `array`, numpy),
//! without a copy. The protocol joined the stable ABI in Python 3.11 with the layout it has had
//! since 3.3, so this 3.10 abi3 build declares `Py_buffer` and its two functions itself.

use crate::dtype::DType;
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{CStr, c_char, c_int, c_void};

/// `Py_buffer`, as in CPython's `Include/pybuffer.h`.
#[repr(C)]
struct RawBuffer {
    buf: *mut c_void,
    obj: *mut ffi::PyObject,
    len: ffi::Py_ssize_t,
    itemsize: ffi::Py_ssize_t,
    readonly: c_int,
    ndim: c_int,
    format: *mut c_char,
    shape: *mut ffi::Py_ssize_t,
    strides: *mut ffi::Py_ssize_t,
    suboffsets: *mut ffi::Py_ssize_t,
    internal: *mut c_void,
}

unsafe extern "C" {
    fn PyObject_GetBuffer(obj: *mut ffi::PyObject, view: *mut RawBuffer, flags: c_int) -> c_int;
    fn PyBuffer_Release(view: *mut RawBuffer);
}

/// `PyBUF_STRIDES | PyBUF_FORMAT`: shape, strides and item format, read-only allowed.
const RECORDS_RO: c_int = 0x0018 | 0x0004;
/// `PyBUF_WRITABLE`.
const WRITABLE: c_int = 0x0001;

/// A buffer held from an object, released on drop.
pub struct HeldBuffer {
    // On the heap, never moved: CPython may point `shape` into the struct itself.
    view: *mut RawBuffer,
}

// The view is only read, and released with the interpreter attached.
unsafe impl Send for HeldBuffer {}
unsafe impl Sync for HeldBuffer {}

/// What a buffer describes, in the array interfaces' terms.
pub struct BufferLayout {
    pub ptr: u64,
    pub shape: Vec<usize>,
    /// Byte strides.
    pub strides: Vec<isize>,
    pub dtype: DType,
    pub readonly: bool,
}

impl HeldBuffer {
    /// The buffer of `obj` (writable if it can be), or `None` if it has none.
    pub fn get(obj: &Bound<'_, PyAny>) -> Option<(Self, BufferLayout)> {
        let mut view = Box::new(RawBuffer {
            buf: std::ptr::null_mut(),
            obj: std::ptr::null_mut(),
            len: 0,
            itemsize: 0,
            readonly: 0,
            ndim: 0,
            format: std::ptr::null_mut(),
            shape: std::ptr::null_mut(),
            strides: std::ptr::null_mut(),
            suboffsets: std::ptr::null_mut(),
            internal: std::ptr::null_mut(),
        });
        let got = [RECORDS_RO | WRITABLE, RECORDS_RO].into_iter().any(|flags| {
            let status = unsafe { PyObject_GetBuffer(obj.as_ptr(), &mut *view, flags) };
            if status != 0 {
                drop(PyErr::take(obj.py()));
            }
            status == 0
        });
        if !got {
            return None;
        }
        let held = Self { view: Box::into_raw(view) };
        let layout = held.layout();
        Some((held, layout))
    }

    fn layout(&self) -> BufferLayout {
        let view = unsafe { &*self.view };
        let ndim = view.ndim as usize;
        let read = |values: *mut ffi::Py_ssize_t| -> Vec<isize> {
            if values.is_null() { Vec::new() } else { unsafe { std::slice::from_raw_parts(values, ndim) }.to_vec() }
        };
        let itemsize = view.itemsize.max(1) as usize;
        let shape: Vec<usize> = read(view.shape).into_iter().map(|d| d as usize).collect();
        let strides = read(view.strides);
        let format =
            if view.format.is_null() { "B" } else { unsafe { CStr::from_ptr(view.format) }.to_str().unwrap_or("") };
        // Indirect (suboffset) buffers read as non-contiguous: strides of zero never match.
        let strides = if view.suboffsets.is_null() { strides } else { vec![0; ndim] };
        BufferLayout {
            ptr: view.buf as u64,
            shape,
            strides,
            dtype: DType::from_buffer_format(format, itemsize),
            readonly: view.readonly != 0,
        }
    }
}

impl Drop for HeldBuffer {
    fn drop(&mut self) {
        let view = self.view;
        // At shutdown (no interpreter to attach to) the view is left to go with the process.
        Python::try_attach(|_| unsafe {
            PyBuffer_Release(view);
            drop(Box::from_raw(view));
        });
    }
}

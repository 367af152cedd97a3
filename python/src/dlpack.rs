//! DLPack both ways, zero-copy: capsules from `__dlpack__` (legacy and versioned) become arrays,
//! and arrays leave as legacy `dltensor` capsules that keep the array alive until the consumer
//! calls the deleter.

use crate::dtype::DType;
use crate::errors::value_error;
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{CStr, c_void};

/// DLPack's device types that ferrocomp reads and writes.
pub const DL_CPU: i32 = 1;
pub const DL_CUDA: i32 = 2;
const DL_CUDA_HOST: i32 = 3;
const DL_CUDA_MANAGED: i32 = 13;
/// DLPack 1.x's flag for a tensor the consumer must not write.
const FLAG_READ_ONLY: u64 = 1;

const LEGACY: &CStr = c"dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";
const USED_LEGACY: &CStr = c"used_dltensor";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

#[repr(C)]
struct DlPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DlManagedTensorVersioned {
    version: DlPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DlTensor,
}

/// A tensor taken from a capsule; its producer's deleter runs on drop.
pub struct ImportedTensor(Managed);

/// The two layouts a taken tensor can have.
enum Managed {
    Legacy(*mut DlManagedTensor),
    Versioned(*mut DlManagedTensorVersioned),
}

// The tensor is only read, and deleted with the interpreter attached.
unsafe impl Send for ImportedTensor {}
unsafe impl Sync for ImportedTensor {}

impl Drop for ImportedTensor {
    fn drop(&mut self) {
        // Producers' deleters may need the interpreter; at shutdown they are skipped.
        Python::try_attach(|_| unsafe {
            match self.0 {
                Managed::Legacy(managed) => {
                    if let Some(deleter) = (*managed).deleter {
                        deleter(managed)
                    }
                }
                Managed::Versioned(managed) => {
                    if let Some(deleter) = (*managed).deleter {
                        deleter(managed)
                    }
                }
            }
        });
    }
}

/// What a DLPack tensor describes, in the array interfaces' terms.
pub struct TensorLayout {
    pub ptr: u64,
    pub shape: Vec<usize>,
    /// Byte strides, or `None` for C order.
    pub strides: Option<Vec<isize>>,
    pub dtype: DType,
    /// `None` for host memory, else the CUDA device.
    pub device: Option<u32>,
    pub readonly: bool,
}

/// Takes the tensor out of a `dltensor` or `dltensor_versioned` capsule (marking it used).
pub fn take_capsule(capsule: &Bound<'_, PyAny>) -> PyResult<(ImportedTensor, TensorLayout)> {
    let raw = capsule.as_ptr();
    unsafe {
        if ffi::PyCapsule_IsValid(raw, LEGACY.as_ptr()) == 1 {
            let managed = ffi::PyCapsule_GetPointer(raw, LEGACY.as_ptr()) as *mut DlManagedTensor;
            let layout = read_tensor(&(*managed).dl_tensor, false);
            ffi::PyCapsule_SetName(raw, USED_LEGACY.as_ptr());
            let imported = ImportedTensor(Managed::Legacy(managed));
            return Ok((imported, layout?));
        }
        if ffi::PyCapsule_IsValid(raw, VERSIONED.as_ptr()) == 1 {
            let managed = ffi::PyCapsule_GetPointer(raw, VERSIONED.as_ptr()) as *mut DlManagedTensorVersioned;
            if (*managed).version.major != 1 {
                return Err(value_error(format!("DLPack version {} is not supported", (*managed).version.major)));
            }
            let layout = read_tensor(&(*managed).dl_tensor, (*managed).flags & FLAG_READ_ONLY != 0);
            ffi::PyCapsule_SetName(raw, USED_VERSIONED.as_ptr());
            let imported = ImportedTensor(Managed::Versioned(managed));
            return Ok((imported, layout?));
        }
    }
    Err(pyo3::exceptions::PyTypeError::new_err(
        "expected an unused DLPack capsule ('dltensor' or 'dltensor_versioned')",
    ))
}

/// Reads a tensor's description.
///
/// # Safety
/// `tensor` must be a valid DLPack tensor.
unsafe fn read_tensor(tensor: &DlTensor, readonly: bool) -> PyResult<TensorLayout> {
    let ndim = tensor.ndim.max(0) as usize;
    let read = |values: *mut i64| -> Vec<i64> {
        if values.is_null() || ndim == 0 {
            Vec::new()
        } else {
            unsafe { std::slice::from_raw_parts(values, ndim) }.to_vec()
        }
    };
    let dtype = DType::from_dlpack(tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes)?;
    let shape = read(tensor.shape).into_iter().map(|d| d as usize).collect();
    let strides = (!tensor.strides.is_null())
        .then(|| read(tensor.strides).into_iter().map(|s| s as isize * dtype.size as isize).collect());
    let device = match tensor.device.device_type {
        DL_CPU | DL_CUDA_HOST => None,
        DL_CUDA | DL_CUDA_MANAGED => Some(tensor.device.device_id as u32),
        other => return Err(value_error(format!("DLPack device type {other} is neither CPU nor CUDA memory"))),
    };
    let ptr = tensor.data as u64 + tensor.byte_offset;
    Ok(TensorLayout { ptr, shape, strides, dtype, device, readonly })
}

/// What an exported capsule keeps alive: the exporter, and the shape and strides it points to.
struct Export {
    _owner: Py<PyAny>,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

/// A `dltensor` capsule viewing `layout`'s memory, keeping `owner` alive until deleted.
pub fn export(py: Python<'_>, owner: Py<PyAny>, layout: &TensorLayout) -> PyResult<Py<PyAny>> {
    let (code, bits, lanes) = layout.dtype.to_dlpack()?;
    let item = layout.dtype.size as isize;
    let strides = match &layout.strides {
        Some(strides) if strides.iter().any(|s| s % item != 0) => {
            return Err(value_error("DLPack strides count elements; these byte strides are not whole elements"));
        }
        Some(strides) => strides.iter().map(|s| (s / item) as i64).collect(),
        None => Vec::new(),
    };
    let mut export =
        Box::new(Export { _owner: owner, shape: layout.shape.iter().map(|&d| d as i64).collect(), strides });
    let device = match layout.device {
        Some(id) => DlDevice { device_type: DL_CUDA, device_id: id as i32 },
        None => DlDevice { device_type: DL_CPU, device_id: 0 },
    };
    let tensor = DlTensor {
        data: layout.ptr as *mut c_void,
        device,
        ndim: export.shape.len() as i32,
        dtype: DlDataType { code, bits, lanes },
        shape: export.shape.as_mut_ptr(),
        strides: if export.strides.is_empty() { std::ptr::null_mut() } else { export.strides.as_mut_ptr() },
        byte_offset: 0,
    };
    let managed = Box::into_raw(Box::new(DlManagedTensor {
        dl_tensor: tensor,
        manager_ctx: Box::into_raw(export).cast(),
        deleter: Some(delete_export),
    }));
    let capsule = unsafe { ffi::PyCapsule_New(managed.cast(), LEGACY.as_ptr(), Some(drop_capsule)) };
    if capsule.is_null() {
        unsafe { delete_export(managed) };
        return Err(PyErr::fetch(py));
    }
    Ok(unsafe { Bound::from_owned_ptr(py, capsule) }.unbind())
}

/// The deleter of exported tensors: frees the tensor and releases the exporter.
unsafe extern "C" fn delete_export(managed: *mut DlManagedTensor) {
    let managed = unsafe { Box::from_raw(managed) };
    let export = unsafe { Box::from_raw(managed.manager_ctx as *mut Export) };
    // Consumers may call this on any thread; PyO3 defers the release if it cannot attach.
    Python::try_attach(|_| drop(export));
}

/// The destructor of exported capsules: deletes the tensor if no consumer took it.
unsafe extern "C" fn drop_capsule(capsule: *mut ffi::PyObject) {
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            let managed = ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr()) as *mut DlManagedTensor;
            delete_export(managed);
        }
    }
}

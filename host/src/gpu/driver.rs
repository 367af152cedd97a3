//! The CUDA driver API, resolved from `libcuda` at first use through cudarc's dynamic loading:
//! nothing links against the driver, so a machine without one builds, starts and runs the CPU
//! path. The driver's handles for a device: its primary context and a loaded module.

use crate::error::{Error, Result};
pub(crate) use cudarc::driver::sys as cu;
use std::ffi::{CString, c_void};
use std::sync::OnceLock;

/// Turns a raw driver result into a [`Result`], naming the call.
pub(crate) fn check(call: &'static str, result: cu::CUresult) -> Result<()> {
    match result {
        cu::CUresult::CUDA_SUCCESS => Ok(()),
        cu::CUresult::CUDA_ERROR_NO_DEVICE => Err(Error::NoDevice),
        other => Err(Error::Driver { call, code: other as u32 }),
    }
}

/// The value the driver call `call` (named so in errors) writes through its out-parameter,
/// which starts as `start`.
pub(crate) fn written<T>(call: &'static str, start: T, driver_call: impl FnOnce(&mut T) -> cu::CUresult) -> Result<T> {
    let mut value = start;
    check(call, driver_call(&mut value))?;
    Ok(value)
}

/// Loads and initialises the driver, once per process. Without a driver library (or a device),
/// [`Error::NoDevice`]; every other entry point of this module may be called only after a success.
pub(crate) fn init() -> Result<()> {
    static INIT: OnceLock<Option<cu::CUresult>> = OnceLock::new();
    // SAFETY: loading the library runs its initialisers, as linking against it would have.
    let result = *INIT.get_or_init(|| unsafe { cu::is_culib_present() }.then(|| unsafe { cu::cuInit(0) }));
    match result {
        None => Err(Error::NoDevice),
        Some(result) => check("cuInit", result),
    }
}

/// The number of devices the driver sees (0 without a driver).
pub(crate) fn device_count() -> Result<usize> {
    match init() {
        Err(Error::NoDevice) => return Ok(0),
        other => other?,
    }
    let mut count = 0;
    check("cuDeviceGetCount", unsafe { cu::cuDeviceGetCount(&mut count) })?;
    Ok(count as usize)
}

/// A device's primary context, retained while this lives.
pub(crate) struct PrimaryContext {
    device: cu::CUdevice,
    raw: cu::CUcontext,
}

impl PrimaryContext {
    /// Retains device `ordinal`'s primary context; [`Error::NoDevice`] past the last device.
    pub(crate) fn retain(ordinal: u32) -> Result<Self> {
        if device_count()? <= ordinal as usize {
            return Err(Error::NoDevice);
        }
        let mut device = 0;
        check("cuDeviceGet", unsafe { cu::cuDeviceGet(&mut device, ordinal as i32) })?;
        let mut raw = std::ptr::null_mut();
        check("cuDevicePrimaryCtxRetain", unsafe { cu::cuDevicePrimaryCtxRetain(&mut raw, device) })?;
        Ok(Self { device, raw })
    }

    /// The device's name, e.g. "NVIDIA H200".
    pub(crate) fn device_name(&self) -> Result<String> {
        let mut name = [0 as std::ffi::c_char; 256];
        check("cuDeviceGetName", unsafe { cu::cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, self.device) })?;
        Ok(unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned())
    }

    /// The device's streaming multiprocessors.
    pub(crate) fn multiprocessors(&self) -> Result<u32> {
        let attribute = cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
        let count = written("cuDeviceGetAttribute", 0, |count| unsafe {
            cu::cuDeviceGetAttribute(count, attribute, self.device)
        })?;
        Ok(count as u32)
    }

    /// Makes the context current on the calling thread.
    pub(crate) fn make_current(&self) -> Result<()> {
        check("cuCtxSetCurrent", unsafe { cu::cuCtxSetCurrent(self.raw) })
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        unsafe { cu::cuDevicePrimaryCtxRelease_v2(self.device) };
    }
}

/// A module loaded from PTX into the current context, unloaded on drop.
pub(crate) struct Module(cu::CUmodule);

impl Module {
    /// Compiles and loads `ptx`, capping registers per thread at `max_registers` when given.
    pub(crate) fn from_ptx(ptx: String, max_registers: Option<u32>) -> Result<Self> {
        let ptx = CString::new(ptx).map_err(|_| Error::InvalidArgument("PTX with a NUL byte".into()))?;
        let (mut options, mut values): (Vec<_>, Vec<_>) = max_registers
            .map(|registers| (cu::CUjit_option::CU_JIT_MAX_REGISTERS, registers as usize as *mut c_void))
            .into_iter()
            .unzip();
        let mut module = std::ptr::null_mut();
        check("cuModuleLoadDataEx", unsafe {
            cu::cuModuleLoadDataEx(
                &mut module,
                ptx.as_ptr().cast(),
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        })?;
        Ok(Self(module))
    }

    /// The kernel `name`.
    pub(crate) fn function(&self, name: &str) -> Result<cu::CUfunction> {
        let name = CString::new(name).expect("kernel names have no NUL");
        written("cuModuleGetFunction", std::ptr::null_mut(), |function| unsafe {
            cu::cuModuleGetFunction(function, self.0, name.as_ptr())
        })
    }
}

impl Module {
    /// The kernel `name`, allowed `shared_bytes` of dynamic shared memory (past the 48 KiB any
    /// kernel may use without asking).
    pub(crate) fn function_with_shared(&self, name: &str, shared_bytes: usize) -> Result<cu::CUfunction> {
        let function = self.function(name)?;
        let attribute = cu::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        check("cuFuncSetAttribute", unsafe { cu::cuFuncSetAttribute(function, attribute, shared_bytes as i32) })?;
        Ok(function)
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        unsafe { cu::cuModuleUnload(self.0) };
    }
}

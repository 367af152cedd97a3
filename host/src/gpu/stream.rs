//! CUDA streams (ferrocomp's own, or the caller's borrowed), the copies queued on them, and the
//! events that order them.

use super::driver::{self, check, cu, written};
use crate::error::Result;

/// A raw `CUstream` handle, as cudarc's `CudaStream::cu_stream` and CuPy's `Stream.ptr` give it.
pub type RawStream = cu::CUstream;

/// A CUDA stream: one of ferrocomp's own, or the caller's, borrowed.
pub struct Stream {
    raw: RawStream,
    owned: bool,
}

unsafe impl Send for Stream {}

impl Stream {
    /// A new non-blocking stream in the current context, destroyed on drop.
    pub(crate) fn new() -> Result<Self> {
        let flags = cu::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
        let raw = written("cuStreamCreate", std::ptr::null_mut(), |raw| unsafe { cu::cuStreamCreate(raw, flags) })?;
        Ok(Self { raw, owned: true })
    }

    /// Wraps the caller's stream; ferrocomp enqueues work on it and never destroys it.
    ///
    /// # Safety
    /// `raw` must be a valid stream of the device's primary context (or null, the legacy
    /// default stream) that outlives the returned value.
    pub unsafe fn borrow_raw(raw: RawStream) -> Self {
        Self { raw, owned: false }
    }

    /// The raw driver handle.
    pub fn as_raw(&self) -> RawStream {
        self.raw
    }

    /// Waits for all work enqueued on the stream.
    pub fn synchronize(&self) -> Result<()> {
        check("cuStreamSynchronize", unsafe { cu::cuStreamSynchronize(self.raw) })
    }

    /// Makes this stream wait (on the device, not the host) for the work queued on `producer` so
    /// far. Their device's context must be current.
    pub fn wait_for(&self, producer: &Stream) -> Result<()> {
        if self.raw == producer.raw {
            return Ok(());
        }
        // The wait holds on to the recorded work; the event can go as soon as it is queued.
        let event = Event::new()?;
        event.record(producer)?;
        check("cuStreamWaitEvent", unsafe { cu::cuStreamWaitEvent(self.raw, event.0, 0) })
    }

    /// The ordinal of the device whose context the stream belongs to.
    pub fn device(&self) -> Result<u32> {
        let mut context = std::ptr::null_mut();
        check("cuStreamGetCtx", unsafe { cu::cuStreamGetCtx(self.raw, &mut context) })?;
        check("cuCtxPushCurrent", unsafe { cu::cuCtxPushCurrent_v2(context) })?;
        let mut device = 0;
        let asked = check("cuCtxGetDevice", unsafe { cu::cuCtxGetDevice(&mut device) });
        unsafe { cu::cuCtxPopCurrent_v2(&mut context) };
        asked.map(|()| device as u32)
    }

    /// Enqueues a copy of `src` into the start of `dst`. `src` is pinned so the copy is
    /// asynchronous; it must not be dropped before the stream reaches the copy.
    pub(crate) fn copy_to_device<T: Copy>(&self, src: &[T], dst: u64) -> Result<()> {
        check("cuMemcpyHtoDAsync", unsafe {
            cu::cuMemcpyHtoDAsync_v2(dst, src.as_ptr().cast(), size_of_val(src), self.raw)
        })
    }

    /// Enqueues a copy of `len` bytes from device `src` to device `dst`.
    pub(crate) fn copy_on_device(&self, src: u64, dst: u64, len: usize) -> Result<()> {
        check("cuMemcpyDtoDAsync", unsafe { cu::cuMemcpyDtoDAsync_v2(dst, src, len, self.raw) })
    }

    /// Enqueues a copy from device `src` into `dst` (pinned; read it after synchronizing).
    pub(crate) fn copy_to_host<T: Copy>(&self, src: u64, dst: &mut [T]) -> Result<()> {
        check("cuMemcpyDtoHAsync", unsafe {
            cu::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), src, size_of_val(dst), self.raw)
        })
    }

    /// Enqueues a copy of `len` bytes from `src` to `dst`, each host or device memory (the
    /// driver tells which from the address).
    ///
    /// # Safety
    /// Both ranges must hold `len` bytes and stay valid, and `src` unchanged, until the stream
    /// reaches the copy.
    pub unsafe fn copy_async(&self, dst: u64, src: u64, len: usize) -> Result<()> {
        check("cuMemcpyAsync", unsafe { cu::cuMemcpyAsync(dst, src, len, self.raw) })
    }

    /// Enqueues setting `count` 32-bit words at device `dst` to `value`.
    pub(crate) fn fill_u32(&self, dst: u64, value: u32, count: usize) -> Result<()> {
        check("cuMemsetD32Async", unsafe { cu::cuMemsetD32Async(dst, value, count, self.raw) })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.owned {
            unsafe { cu::cuStreamDestroy_v2(self.raw) };
        }
    }
}

/// The device that owns memory at `address`, if the driver knows it (`None` without a driver).
pub fn device_of(address: u64) -> Option<u32> {
    driver::init().ok()?;
    let mut ordinal: i32 = -1;
    let attribute = cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL;
    let asked = unsafe { cu::cuPointerGetAttribute((&mut ordinal as *mut i32).cast(), attribute, address) };
    (asked == cu::CUresult::CUDA_SUCCESS && ordinal >= 0).then_some(ordinal as u32)
}

/// A CUDA event without timing, destroyed on drop.
pub(crate) struct Event(cu::CUevent);

// An event handle may be recorded, queried and waited on from any thread.
unsafe impl Send for Event {}
unsafe impl Sync for Event {}

impl Event {
    /// A new event in the current context; it reads as done until first recorded.
    pub(crate) fn new() -> Result<Self> {
        let flags = cu::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
        written("cuEventCreate", std::ptr::null_mut(), |event| unsafe { cu::cuEventCreate(event, flags) }).map(Self)
    }

    /// Marks the point `stream` has reached in its queue.
    pub(crate) fn record(&self, stream: &Stream) -> Result<()> {
        check("cuEventRecord", unsafe { cu::cuEventRecord(self.0, stream.as_raw()) })
    }

    /// Whether the stream has passed the recorded point, asked without waiting.
    pub(crate) fn is_done(&self) -> Result<bool> {
        match unsafe { cu::cuEventQuery(self.0) } {
            cu::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => check("cuEventQuery", other).map(|()| true),
        }
    }

    /// Waits on the host until the stream has passed the recorded point.
    pub(crate) fn synchronize(&self) -> Result<()> {
        check("cuEventSynchronize", unsafe { cu::cuEventSynchronize(self.0) })
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        unsafe { cu::cuEventDestroy_v2(self.0) };
    }
}

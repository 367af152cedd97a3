//! The default allocators on the CUDA driver, and the set a [`crate::Gpu`] uses.

use super::driver::{check, cu, init};
use crate::alloc::{DeviceAllocator, HostAllocator, PinnedAllocator, SystemHostAllocator};
use crate::error::Result;
use std::sync::Arc;

/// The default device allocator: `cuMemAlloc`.
#[derive(Debug, Default)]
pub struct CudaDeviceAllocator;

impl DeviceAllocator for CudaDeviceAllocator {
    fn allocate(&self, bytes: usize) -> Result<u64> {
        init()?;
        let mut address = 0;
        check("cuMemAlloc", unsafe { cu::cuMemAlloc_v2(&mut address, bytes) })?;
        Ok(address)
    }

    unsafe fn free(&self, address: u64) {
        unsafe { cu::cuMemFree_v2(address) };
    }
}

/// The default pinned allocator: `cuMemAllocHost`.
#[derive(Debug, Default)]
pub struct CudaPinnedAllocator;

impl PinnedAllocator for CudaPinnedAllocator {
    fn allocate(&self, bytes: usize) -> Result<*mut u8> {
        init()?;
        let mut ptr = std::ptr::null_mut();
        check("cuMemAllocHost", unsafe { cu::cuMemAllocHost_v2(&mut ptr, bytes) })?;
        Ok(ptr.cast())
    }

    unsafe fn free(&self, ptr: *mut u8) {
        unsafe { cu::cuMemFreeHost(ptr.cast()) };
    }
}

/// The three allocators a [`crate::Gpu`] uses.
#[derive(Clone)]
pub struct Allocators {
    /// For device buffers: scratch, compressed and decompressed buffers.
    pub device: Arc<dyn DeviceAllocator>,
    /// For the arrays staged between host and device.
    pub pinned: Arc<dyn PinnedAllocator>,
    /// For host-side working buffers (container headers read back from the device).
    pub host: Arc<dyn HostAllocator>,
}

impl Default for Allocators {
    fn default() -> Self {
        Self {
            device: Arc::new(CudaDeviceAllocator),
            pinned: Arc::new(CudaPinnedAllocator),
            host: Arc::new(SystemHostAllocator),
        }
    }
}

//! Allocators for device, pinned-host and host memory, a way to plug in the caller's own (as
//! nvCOMP's `set_device_allocator` and friends), and the owning buffer types built on them. The
//! defaults on the CUDA driver are the `gpu` module's.

use crate::error::Result;
use std::marker::PhantomData;
use std::sync::Arc;

/// Hands out device memory. Implement it to route ferrocomp's allocations to your own pool.
pub trait DeviceAllocator: Send + Sync {
    /// `bytes` of device memory (non-zero), as a device address.
    fn allocate(&self, bytes: usize) -> Result<u64>;
    /// Returns memory from [`DeviceAllocator::allocate`].
    ///
    /// # Safety
    /// `address` came from this allocator and is not used afterwards.
    unsafe fn free(&self, address: u64);
}

/// Hands out page-locked host memory, which asynchronous copies need.
pub trait PinnedAllocator: Send + Sync {
    /// `bytes` of pinned host memory (non-zero).
    fn allocate(&self, bytes: usize) -> Result<*mut u8>;
    /// Returns memory from [`PinnedAllocator::allocate`].
    ///
    /// # Safety
    /// `ptr` came from this allocator and is not used afterwards.
    unsafe fn free(&self, ptr: *mut u8);
}

/// Hands out ordinary host memory.
pub trait HostAllocator: Send + Sync {
    /// `bytes` of host memory (non-zero), aligned to 16.
    fn allocate(&self, bytes: usize) -> Result<*mut u8>;
    /// Returns memory from [`HostAllocator::allocate`].
    ///
    /// # Safety
    /// `ptr` came from this allocator with the same `bytes`, and is not used afterwards.
    unsafe fn free(&self, ptr: *mut u8, bytes: usize);
}

/// The default host allocator: Rust's global allocator.
#[derive(Debug, Default)]
pub struct SystemHostAllocator;

impl HostAllocator for SystemHostAllocator {
    fn allocate(&self, bytes: usize) -> Result<*mut u8> {
        let layout =
            std::alloc::Layout::from_size_align(bytes, 16).map_err(|e| crate::Error::InvalidArgument(e.to_string()))?;
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Ok(ptr)
    }

    unsafe fn free(&self, ptr: *mut u8, bytes: usize) {
        unsafe { std::alloc::dealloc(ptr, std::alloc::Layout::from_size_align_unchecked(bytes, 16)) };
    }
}

/// `address`, `len` and `is_empty` of the device-memory types ([`DeviceBuffer`], [`DeviceView`],
/// [`DeviceViewMut`]), each a range of `len` values at `address`.
macro_rules! device_range_accessors {
    () => {
        /// Device address of the first value.
        pub fn address(&self) -> u64 {
            self.address
        }

        /// Number of values.
        pub fn len(&self) -> usize {
            self.len
        }

        /// Whether it holds no values.
        pub fn is_empty(&self) -> bool {
            self.len == 0
        }
    };
}

/// Device memory holding `len` values of `T`, returned to its allocator on drop.
pub struct DeviceBuffer<T: Copy = u8> {
    address: u64,
    len: usize,
    allocator: Arc<dyn DeviceAllocator>,
    _type: PhantomData<T>,
}

impl<T: Copy> DeviceBuffer<T> {
    /// Room for `len` values from `allocator` (contents undefined).
    pub fn uninit(allocator: &Arc<dyn DeviceAllocator>, len: usize) -> Result<Self> {
        let bytes = (len * size_of::<T>()).max(1);
        let address = allocator.allocate(bytes)?;
        Ok(Self { address, len, allocator: allocator.clone(), _type: PhantomData })
    }

    device_range_accessors!();

    /// The whole buffer as a view.
    pub fn view(&self) -> DeviceView<'_, T> {
        DeviceView { address: self.address, len: self.len, _borrow: PhantomData }
    }

    /// The whole buffer as a mutable view.
    pub fn view_mut(&mut self) -> DeviceViewMut<'_, T> {
        DeviceViewMut { address: self.address, len: self.len, _borrow: PhantomData }
    }
}

impl<T: Copy> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        unsafe { self.allocator.free(self.address) };
    }
}

/// A borrowed range of device memory holding `T`s: a [`DeviceBuffer`]'s, or the caller's own.
#[derive(Clone, Copy, Debug)]
pub struct DeviceView<'a, T = u8> {
    address: u64,
    len: usize,
    _borrow: PhantomData<&'a [T]>,
}

impl<T> DeviceView<'_, T> {
    /// A view of `len` values at device `address`, e.g. memory another library allocated.
    ///
    /// # Safety
    /// The memory must hold `len` readable `T`s for as long as the view is used.
    pub unsafe fn from_raw(address: u64, len: usize) -> Self {
        Self { address, len, _borrow: PhantomData }
    }

    device_range_accessors!();

    /// The values `start..start + len`. Panics when out of range.
    pub fn slice(&self, start: usize, len: usize) -> Self {
        assert!(start.checked_add(len).is_some_and(|end| end <= self.len), "device slice out of range");
        Self { address: self.address + (start * size_of::<T>()) as u64, len, _borrow: PhantomData }
    }
}

/// A mutably borrowed range of device memory holding `T`s.
#[derive(Debug)]
pub struct DeviceViewMut<'a, T = u8> {
    address: u64,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

impl<'a, T> DeviceViewMut<'a, T> {
    /// A mutable view of `len` values at device `address`.
    ///
    /// # Safety
    /// The memory must hold `len` writable `T`s, used by nothing else while the view is.
    pub unsafe fn from_raw(address: u64, len: usize) -> Self {
        Self { address, len, _borrow: PhantomData }
    }

    device_range_accessors!();

    /// The values `..mid` and `mid..`, as two views that can be written at once (the outputs
    /// of a batch as slices of one buffer, say). Panics when `mid` is past the end.
    pub fn split_at(self, mid: usize) -> (DeviceViewMut<'a, T>, DeviceViewMut<'a, T>) {
        assert!(mid <= self.len, "device split past the end");
        let tail = self.address + (mid * size_of::<T>()) as u64;
        unsafe { (DeviceViewMut::from_raw(self.address, mid), DeviceViewMut::from_raw(tail, self.len - mid)) }
    }

    /// A shorter reborrow.
    pub fn reborrow(&mut self) -> DeviceViewMut<'_, T> {
        DeviceViewMut { address: self.address, len: self.len, _borrow: PhantomData }
    }

    /// The same memory, read-only.
    pub fn as_view(&self) -> DeviceView<'_, T> {
        DeviceView { address: self.address, len: self.len, _borrow: PhantomData }
    }
}

/// Pinned host memory for `len` values of `T`, returned to its allocator on drop.
pub struct PinnedBuffer<T: Copy> {
    ptr: *mut T,
    len: usize,
    allocator: Arc<dyn PinnedAllocator>,
}

unsafe impl<T: Copy + Send> Send for PinnedBuffer<T> {}

impl<T: Copy + Default> PinnedBuffer<T> {
    /// `len` default values in memory from `allocator`.
    pub fn new(allocator: &Arc<dyn PinnedAllocator>, len: usize) -> Result<Self> {
        let ptr = allocator.allocate((len * size_of::<T>()).max(1))?.cast::<T>();
        for i in 0..len {
            unsafe { ptr.add(i).write(T::default()) };
        }
        Ok(Self { ptr, len, allocator: allocator.clone() })
    }
}

impl<T: Copy> std::ops::Deref for PinnedBuffer<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T: Copy> std::ops::DerefMut for PinnedBuffer<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T: Copy> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        unsafe { self.allocator.free(self.ptr.cast()) };
    }
}

/// Host memory for `len` bytes from a [`HostAllocator`], returned to it on drop.
pub struct HostBuffer {
    ptr: *mut u8,
    len: usize,
    allocator: Arc<dyn HostAllocator>,
}

unsafe impl Send for HostBuffer {}

impl HostBuffer {
    /// `len` zeroed bytes from `allocator`.
    pub fn zeroed(allocator: &Arc<dyn HostAllocator>, len: usize) -> Result<Self> {
        let ptr = allocator.allocate(len.max(1))?;
        unsafe { ptr.write_bytes(0, len) };
        Ok(Self { ptr, len, allocator: allocator.clone() })
    }
}

impl std::ops::Deref for HostBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl std::ops::DerefMut for HostBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        unsafe { self.allocator.free(self.ptr, self.len.max(1)) };
    }
}

/// A heap value of all-zero bytes (a valid start state of the format crate's scratch types).
pub(crate) fn zeroed<T>() -> Box<T> {
    // SAFETY: the format crate documents any bytes, zeros included, as valid for these types.
    unsafe { Box::<T>::new_zeroed().assume_init() }
}

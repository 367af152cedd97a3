//! Checksum policies (nvCOMP's five) and CRC-32 of a batch of chunks on the GPU.

use crate::alloc::DeviceViewMut;
use crate::batch::Chunks;
use crate::error::Result;
use crate::gpu::{Gpu, Stream, blocks};
use std::ffi::c_void;

/// Whether CRC-32s are written when compressing and checked when decompressing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ChecksumPolicy {
    /// Neither compute nor verify (fastest). The default.
    #[default]
    NoComputeNoVerify,
    /// Store checksums; do not verify them.
    ComputeAndNoVerify,
    /// Store none; verify those a stream has.
    NoComputeAndVerifyIfPresent,
    /// Store checksums; verify those a stream has.
    ComputeAndVerifyIfPresent,
    /// Store checksums; require and verify them.
    ComputeAndVerify,
}

impl ChecksumPolicy {
    /// Whether compression stores checksums.
    pub fn computes(self) -> bool {
        matches!(self, Self::ComputeAndNoVerify | Self::ComputeAndVerifyIfPresent | Self::ComputeAndVerify)
    }

    /// Whether decompression checks the checksums a stream has.
    pub fn verifies(self) -> bool {
        matches!(self, Self::NoComputeAndVerifyIfPresent | Self::ComputeAndVerifyIfPresent | Self::ComputeAndVerify)
    }

    /// Whether decompression fails on a stream without checksums.
    pub fn requires(self) -> bool {
        self == Self::ComputeAndVerify
    }
}

/// Warps per block of the CRC-32 kernel.
const CRC_WARPS_PER_BLOCK: u32 = 8;

/// Enqueues writing the CRC-32 of each chunk of `chunks` into `crcs`.
///
/// # Safety
/// Every address in `chunks` must be valid device memory of its stated size until the stream
/// has run the call.
pub unsafe fn crc32_async(gpu: &Gpu, chunks: Chunks<'_>, crcs: DeviceViewMut<'_, u32>, stream: &Stream) -> Result<()> {
    let count = chunks.len();
    assert!(crcs.len() >= count, "one CRC per chunk");
    let (addresses, sizes, crcs) = (chunks.addresses.address(), chunks.sizes.address(), crcs.address());
    let args = [
        &addresses as *const _ as *mut c_void,
        &sizes as *const _ as *mut _,
        &crcs as *const _ as *mut _,
        &count as *const _ as *mut _,
    ];
    unsafe {
        gpu.launch(gpu.kernels().crc32, blocks(count, CRC_WARPS_PER_BLOCK), CRC_WARPS_PER_BLOCK * 32, 0, stream, &args)
    }
}

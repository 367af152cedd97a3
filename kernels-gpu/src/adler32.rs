//! Adler-32 on the GPU: each lane of a warp sums a stripe, the stripes' shares added up.

use crate::warp::{WARP_SIZE, Warp};
use ferrocomp_format::adler32::{from_shares, share, update};

/// Adler-32 of the `n` bytes at `data`, in every lane.
///
/// # Safety
/// `data` must be readable for `n` bytes.
pub unsafe fn adler32_chunk<W: Warp>(warp: &W, data: *const u8, n: usize) -> u32 {
    let stripe = n.div_ceil(WARP_SIZE as usize);
    let start = (warp.lane() as usize * stripe).min(n);
    let end = (start + stripe).min(n);
    let piece = update(0, unsafe { core::slice::from_raw_parts(data.add(start), end - start) });
    let (a, b) = share(piece, n - end);
    from_shares(warp.reduce_add(a), warp.reduce_add(b), n)
}

//! Zstandard on the GPU: a warp per chunk, its lanes sharing the work of each phase
//! ([`decode`], [`encode`]).

pub mod decode;
pub mod encode;

//! Snappy, Deflate (raw, zlib, gzip), GDeflate, Blosc, Zstd, Cascaded, Bitcomp and ANS through the batched API
//! and `BufferCodec`:
//! CPU round trips and interop with `flate2`, `snap`, c-blosc and libzstd everywhere; on the GPU, byte-exact agreement
//! with the CPU path, streams from the CPU libraries decoded in place, and a status per corrupt
//! chunk equal to the CPU decoder's. GPU tests say they skipped where there is no device.

mod cpu;
mod floats;
mod gpu;
mod support;
mod zstd_frames;

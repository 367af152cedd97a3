//! Zstandard compression on the GPU, a warp per chunk.

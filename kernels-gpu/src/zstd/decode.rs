//! Zstandard decompression on the GPU, a warp per chunk.

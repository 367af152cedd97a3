//! Zstandard compression: standard frames of compressed blocks.

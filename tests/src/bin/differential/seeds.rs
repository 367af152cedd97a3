//! The valid chunks batches are mutated from: a corpus's files, else samples ferrocomp compresses.

use ferrocomp::ChunkListCodec;
use ferrocomp_tests::{int32_bytes, random_bytes, text_bytes};
use std::path::{Path, PathBuf};

/// The valid chunks batches are mutated from.
pub struct Seeds {
    /// Every seed chunk.
    pub all: Vec<Vec<u8>>,
    /// The seeds the CPU decodes: the unmutated chunks of a batch.
    pub good: Vec<Vec<u8>>,
    /// The seeds (file name) the CPU refuses, and why.
    pub refused: Vec<(String, String)>,
}

impl Seeds {
    /// The files of `corpus/decode_<decoder>/`, else chunks `codec` (raw, CPU) compresses.
    pub fn load(decoder: &str, corpus: &Path, codec: &ChunkListCodec) -> Self {
        let dir = corpus.join(format!("decode_{decoder}"));
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|entries| entries.filter_map(|e| Some(e.ok()?.path())).filter(|p| p.is_file()).collect())
            .unwrap_or_default();
        files.sort();
        let named: Vec<(String, Vec<u8>)> = if files.is_empty() {
            eprintln!("{decoder}: no seeds in {}; using chunks ferrocomp compresses", dir.display());
            compressed_samples(decoder, codec)
        } else {
            let read = |path: &PathBuf| (path.display().to_string(), std::fs::read(path).unwrap_or_default());
            files.iter().map(read).collect()
        };
        let mut seeds = Self { all: Vec::new(), good: Vec::new(), refused: Vec::new() };
        for (name, chunk) in named {
            match decode_alone(codec, &chunk) {
                Ok(_) => seeds.good.push(chunk.clone()),
                Err(e) => seeds.refused.push((name, e.to_string())),
            }
            seeds.all.push(chunk);
        }
        seeds
    }
}

/// Chunk `chunk` decoded alone on the CPU into a room of its size.
fn decode_alone(codec: &ChunkListCodec, chunk: &[u8]) -> ferrocomp::Result<Vec<u8>> {
    let size = codec.decompressed_sizes_cpu(&[chunk]).remove(0)?;
    let mut out = vec![0u8; size];
    let n = codec.decompress_cpu(&[chunk], &mut [&mut out]).remove(0)?;
    out.truncate(n);
    Ok(out)
}

/// Sample buffers (text, integers, floats, zeros, random bytes; three sizes) compressed by
/// `codec`, named by what they hold.
fn compressed_samples(decoder: &str, codec: &ChunkListCodec) -> Vec<(String, Vec<u8>)> {
    let mut samples = Vec::new();
    for size in [1000, 4096, 65536].map(|n: usize| n.min(codec.max_chunk_size())) {
        let floats: Vec<u8> = (0..size / 4).flat_map(|i| (i as f32 * 0.01).sin().to_le_bytes()).collect();
        let kinds = [
            ("text", text_bytes(size, 1)),
            ("int32", int32_bytes(size)),
            ("floats", floats),
            ("zeros", vec![0; size]),
            ("random", random_bytes(size, 2)),
        ];
        for (kind, data) in kinds {
            let mut room = vec![0u8; codec.max_compressed_size(data.len())];
            match codec.compress_cpu(&[&data], &mut [&mut room]).remove(0) {
                Ok(n) => samples.push((format!("{kind}-{size}"), room[..n].to_vec())),
                Err(e) => eprintln!("{decoder}: cannot compress sample {kind}-{size}: {e}"),
            }
        }
    }
    samples
}

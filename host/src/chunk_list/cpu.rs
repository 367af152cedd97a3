//! The CPU calls: each chunk of a list compressed, sized or decoded on all cores.

use super::ChunkListCodec;
use super::layout::{Op, too_large};
use crate::container::size_prefix;
use crate::error::{Error, Result};
use crate::parallel::parallel_map;
use ferrocomp_format::Status;
use std::sync::Mutex;

impl ChunkListCodec {
    // ---- CPU ----

    /// Compresses each of `inputs` into the output of the same index, on all cores; each
    /// chunk's compressed size (prefix included) or why it failed.
    pub fn compress_cpu(&self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> Vec<Result<usize>> {
        let (max, layout) = (self.max_chunk_size(), self.layout);
        let prefix = layout.prefix_len();
        run_cpu(Op::Compress, inputs, outputs, |i, input, output| {
            if input.len() > max {
                return Err(too_large(i, input.len(), max));
            }
            if output.len() < prefix {
                return Err(Error::Chunk { chunk: i, status: Status::OutputTooSmall });
            }
            let (head, block) = output.split_at_mut(prefix);
            head.copy_from_slice(&size_prefix(input.len() as u64)[..prefix]);
            let status = layout.options.codec().compress_cpu(input, block);
            layout.outcome(Op::Compress, i, input.len(), status, 0)
        })
    }

    /// The size each of `inputs` decompresses to (or why it cannot), on all cores.
    pub fn decompressed_sizes_cpu(&self, inputs: &[&[u8]]) -> Vec<Result<usize>> {
        let layout = self.layout;
        run_cpu(Op::Sizes, inputs, &mut [], |i, input, _| {
            let status = match layout.read_prefix(i, input)? {
                Some(declared) => Ok(declared as usize),
                None => layout.options.codec().decompressed_size_cpu(input),
            };
            let declared = status.unwrap_or(0) as u64;
            layout.outcome(Op::Sizes, i, input.len(), status, declared)
        })
    }

    /// Decompresses each of `inputs` into the output of the same index, on all cores; each
    /// chunk's decompressed size or why it failed. Failing chunks do not stop the others.
    pub fn decompress_cpu(&self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> Vec<Result<usize>> {
        let layout = self.layout;
        run_cpu(Op::Decompress, inputs, outputs, |i, input, output| {
            let declared = layout.read_prefix(i, input)?.unwrap_or(0);
            let status = layout.options.codec().decompress_cpu(&input[layout.prefix_len()..], output);
            layout.outcome(Op::Decompress, i, input.len(), status, declared)
        })
    }
}

/// `f(chunk, input, output)` over the chunks on all cores (`Sizes` has no outputs); its errors
/// are the chunks' outcomes.
fn run_cpu(
    op: Op,
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
    f: impl Fn(usize, &[u8], &mut [u8]) -> Result<usize> + Sync,
) -> Vec<Result<usize>> {
    if op != Op::Sizes && inputs.len() != outputs.len() {
        let mismatch = || Error::InvalidArgument(format!("{} inputs but {} outputs", inputs.len(), outputs.len()));
        return inputs.iter().map(|_| Err(mismatch())).collect();
    }
    let mut jobs: Vec<Mutex<(&[u8], &mut [u8])>> = Vec::with_capacity(inputs.len());
    let mut outputs = outputs.iter_mut();
    for &input in inputs {
        let output: &mut [u8] = match outputs.next() {
            Some(output) => output,
            None => &mut [],
        };
        jobs.push(Mutex::new((input, output)));
    }
    let outcomes = parallel_map(&jobs, |i, job| {
        let mut job = job.lock().unwrap();
        let (input, ref mut output) = *job;
        Ok(f(i, input, output))
    });
    outcomes.expect("chunk jobs report their errors as outcomes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Options;
    use crate::codec::{Deflate, Lz4};
    use crate::container::Bitstream;
    use ferrocomp_format::deflate::Wrapper;

    fn text(n: usize, seed: usize) -> Vec<u8> {
        let words = b"the quick brown fox jumps over the lazy dog ";
        (0..n).map(|i| words[(i / 3 + seed) % words.len()]).collect()
    }

    fn compress_all(codec: &ChunkListCodec, inputs: &[&[u8]]) -> Vec<Vec<u8>> {
        let bound = codec.max_compressed_size(inputs.iter().map(|i| i.len()).max().unwrap_or(0));
        let mut room = vec![vec![0u8; bound]; inputs.len()];
        let mut outputs: Vec<&mut [u8]> = room.iter_mut().map(|r| r.as_mut_slice()).collect();
        let sizes: Vec<usize> = codec.compress_cpu(inputs, &mut outputs).into_iter().map(|s| s.unwrap()).collect();
        room.into_iter()
            .zip(sizes)
            .map(|(mut r, n)| {
                r.truncate(n);
                r
            })
            .collect()
    }

    #[test]
    fn cpu_round_trips_into_slices_of_one_buffer() {
        for bitstream in [Bitstream::Raw, Bitstream::WithUncompressedSize] {
            for options in
                [Options::Lz4(Lz4::default()), Options::Deflate(Deflate { level: 1, wrapper: Wrapper::Gzip })]
            {
                let codec = ChunkListCodec::new(options, bitstream, None).unwrap();
                let data: Vec<Vec<u8>> = [0, 1, 1000, 65536].iter().map(|&n| text(n, n)).collect();
                let inputs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
                let blocks = compress_all(&codec, &inputs);
                let blocks: Vec<&[u8]> = blocks.iter().map(|b| b.as_slice()).collect();
                let sizes: Vec<usize> = codec.decompressed_sizes_cpu(&blocks).into_iter().map(|s| s.unwrap()).collect();
                assert_eq!(sizes, [0, 1, 1000, 65536]);
                let mut all = vec![0u8; sizes.iter().sum()];
                let mut outputs = Vec::new();
                let mut rest = all.as_mut_slice();
                for &n in &sizes {
                    let (head, tail) = rest.split_at_mut(n);
                    outputs.push(head);
                    rest = tail;
                }
                let decoded: Vec<usize> =
                    codec.decompress_cpu(&blocks, &mut outputs).into_iter().map(|s| s.unwrap()).collect();
                assert_eq!(decoded, sizes);
                assert_eq!(all, data.concat());
            }
        }
    }

    #[test]
    fn cpu_names_each_failing_chunk_and_decodes_the_rest() {
        let codec = ChunkListCodec::new(Options::default(), Bitstream::WithUncompressedSize, None).unwrap();
        let data = [text(5000, 1), text(5000, 2), text(5000, 3)];
        let inputs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
        let mut blocks = compress_all(&codec, &inputs);
        blocks[0][0] ^= 1; // the prefix lies by one byte
        let cut = blocks[2].len() - 3;
        blocks[2].truncate(cut);
        let blocks: Vec<&[u8]> = blocks.iter().map(|b| b.as_slice()).collect();
        let mut room = vec![vec![0u8; 6000]; 3];
        let mut outputs: Vec<&mut [u8]> = room.iter_mut().map(|r| r.as_mut_slice()).collect();
        let outcomes = codec.decompress_cpu(&blocks, &mut outputs);
        assert!(matches!(outcomes[0], Err(Error::ChunkSize { chunk: 0, expected: 5001, actual: 5000 })));
        assert_eq!(outcomes[1].as_ref().ok(), Some(&5000));
        assert!(matches!(outcomes[2], Err(Error::Chunk { chunk: 2, status: Status::Truncated })));
        assert_eq!(room[1][..5000], data[1][..]);
        let mut huge = blocks[1].to_vec();
        huge[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(
            matches!(&codec.decompressed_sizes_cpu(&[&huge])[0], Err(Error::Container(what)) if what.starts_with("chunk 0:"))
        );
    }

    #[test]
    fn cpu_rejects_chunks_over_the_limit_and_outputs_too_small() {
        let codec = ChunkListCodec::new(Options::Deflate(Deflate::default()), Bitstream::Raw, None).unwrap();
        let big = vec![0u8; codec.max_chunk_size() + 1];
        let mut room = vec![0u8; 16];
        let outcomes = codec.compress_cpu(&[&big], &mut [&mut room]);
        assert!(matches!(&outcomes[0], Err(Error::InvalidArgument(what)) if what.starts_with("chunk 0:")));
        let lz4 = ChunkListCodec::new(Options::default(), Bitstream::Raw, None).unwrap();
        let random: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        let outcomes = lz4.compress_cpu(&[&random], &mut [&mut room]);
        assert!(matches!(outcomes[0], Err(Error::Chunk { chunk: 0, status: Status::OutputTooSmall })));
    }

    #[test]
    fn the_native_bitstream_is_not_a_chunk_list() {
        assert!(ChunkListCodec::new(Options::default(), Bitstream::Native, None).is_err());
    }
}

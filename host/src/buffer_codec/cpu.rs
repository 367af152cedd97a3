//! The CPU's work on a segment: its chunks compressed or decoded on all cores.

use super::{BufferCodec, Compressed, check_crc};
use crate::container::Frame;
use crate::error::{ChecksumPart, Error, Result};
use crate::parallel::parallel_map;
use ferrocomp_format::crc32::crc32;
use rayon::prelude::*;

impl BufferCodec {
    /// Compresses `segment`, whose chunks are numbered from `first_chunk`, appending them to `data`.
    pub(super) fn compress_segment_cpu(
        &self,
        segment: &[u8],
        first_chunk: usize,
        chunk_size: usize,
        data: &mut Vec<u8>,
    ) -> Result<Compressed> {
        let codec = self.options.codec();
        let inputs: Vec<&[u8]> = chunks_of(segment, chunk_size);
        let (uncompressed_crcs, compressed_crcs) = (self.stores_uncompressed_checksums(), self.stores_checksums());
        let outputs = parallel_map(&inputs, |i, input| {
            let mut out = vec![0u8; codec.max_compressed_chunk_size(input.len())];
            let chunk = first_chunk + i;
            let size = codec.compress_cpu(input, &mut out).map_err(|status| Error::Chunk { chunk, status })?;
            out.truncate(size);
            let crcs = (uncompressed_crcs.then(|| crc32(input)), compressed_crcs.then(|| crc32(&out)));
            Ok((out, crcs))
        })?;
        let mut compressed =
            Compressed { sizes: Vec::with_capacity(inputs.len()), checksums: self.new_checksums(inputs.len()) };
        for (output, (uncompressed, stored)) in &outputs {
            compressed.sizes.push(output.len());
            compressed.checksums.uncompressed.iter_mut().zip(uncompressed).for_each(|(crcs, &crc)| crcs.push(crc));
            compressed.checksums.compressed.iter_mut().zip(stored).for_each(|(crcs, &crc)| crcs.push(crc));
            data.extend_from_slice(output);
        }
        Ok(compressed)
    }

    /// Decodes the chunks of `segment` (numbered from `first_chunk`) in `compressed` into `out`.
    pub(super) fn decompress_segment_cpu(
        &self,
        segment: &Frame,
        first_chunk: usize,
        compressed: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        self.check_checksum_policy(segment)?;
        let codec = segment.options.codec();
        let offsets = segment.compressed_offsets();
        let (verify_uncompressed, verify_compressed) = self.checksums_to_verify(segment);
        // One output per chunk, an empty chunk's too: its bytes must still decode to nothing.
        let mut outputs = Vec::with_capacity(segment.count());
        let mut rest = out;
        for i in 0..segment.count() {
            let (output, after) = rest.split_at_mut(segment.uncompressed_size(i));
            outputs.push(output);
            rest = after;
        }
        let results: Vec<Result<()>> = outputs
            .into_par_iter()
            .enumerate()
            .map(|(i, out)| {
                let chunk = first_chunk + i;
                let input = &compressed[offsets[i]..offsets[i] + segment.compressed_sizes[i]];
                let sums = &segment.checksums;
                if let Some(crcs) = verify_compressed {
                    check_crc(chunk, ChecksumPart::Compressed, crcs[i], sums.of(ChecksumPart::Compressed, i, input))?;
                }
                let size = codec.decompress_cpu(input, out).map_err(|status| Error::Chunk { chunk, status })?;
                if size != out.len() {
                    return Err(Error::ChunkSize { chunk, expected: out.len(), actual: size });
                }
                if let Some(crcs) = verify_uncompressed {
                    check_crc(chunk, ChecksumPart::Uncompressed, crcs[i], sums.of(ChecksumPart::Uncompressed, i, out))?;
                }
                Ok(())
            })
            .collect();
        results.into_iter().collect()
    }
}

/// `data` cut into `chunk_size` pieces (one empty piece for empty data).
fn chunks_of(data: &[u8], chunk_size: usize) -> Vec<&[u8]> {
    if data.is_empty() { vec![data] } else { data.chunks(chunk_size).collect() }
}

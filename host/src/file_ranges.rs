//! Byte ranges of files (compressed chunks of a zarr store, pages of a ROOT file) read into one
//! packed buffer and decoded from there into the caller's memory.
//!
//! On the CPU, every range is read at once on all cores. Into device memory, ranges go through
//! two reused pinned slots of [`SEGMENT_SIZE`]: the cores read one segment while the previous one
//! is copied to the device, so reading runs at the page cache's (or the disk's) speed, with one
//! upload per segment and nothing allocated per call once the slots have grown.

use crate::alloc::{DeviceBuffer, DeviceView, DeviceViewMut, PinnedBuffer};
use crate::chunk_list::ChunkListCodec;
use crate::error::{Error, Result};
use crate::gpu::{Event, Gpu, Stream};
use rayon::prelude::*;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;

/// Bytes read per segment on the way to the device.
pub const SEGMENT_SIZE: usize = 32 << 20;

/// `len` bytes at `offset` of the file at `path`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileRange<'a> {
    /// The file.
    pub path: &'a Path,
    /// Where the range starts in it.
    pub offset: u64,
    /// Its length.
    pub len: usize,
}

/// Where each range starts once packed, and the total: range `i` at `offsets[i]`.
pub fn packed_offsets(ranges: &[FileRange<'_>]) -> (Vec<usize>, usize) {
    let mut total = 0;
    let offsets = ranges
        .iter()
        .map(|range| {
            let at = total;
            total += range.len;
            at
        })
        .collect();
    (offsets, total)
}

/// Reads every range into `dst`, packed in order, on all cores. `dst` must hold their total.
pub fn read_ranges(ranges: &[FileRange<'_>], dst: &mut [u8]) -> Result<()> {
    let (_, total) = packed_offsets(ranges);
    let len = dst.len();
    let dst = dst.get_mut(..total).ok_or_else(|| too_small(total, len))?;
    let files = open_all(ranges)?;
    let mut pieces = Vec::with_capacity(ranges.len());
    let mut rest = dst;
    for range in ranges {
        let (piece, tail) = std::mem::take(&mut rest).split_at_mut(range.len);
        pieces.push(piece);
        rest = tail;
    }
    ranges.par_iter().zip(pieces).try_for_each(|(range, piece)| read_one(&files, range, piece))
}

/// Reads ranges of files into device memory, through pinned slots it keeps between calls.
pub struct RangeReader {
    gpu: Gpu,
    slots: Mutex<[Slot; 2]>,
}

/// A pinned segment and the event after its upload.
struct Slot {
    staging: PinnedBuffer<u8>,
    uploaded: Event,
}

impl RangeReader {
    /// A reader for `gpu`; its slots are allocated at first use.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        gpu.make_current()?;
        let slot = || -> Result<Slot> {
            Ok(Slot { staging: PinnedBuffer::new(&gpu.allocators().pinned, 0)?, uploaded: Event::new()? })
        };
        Ok(Self { gpu: gpu.clone(), slots: Mutex::new([slot()?, slot()?]) })
    }

    /// Enqueues every range, packed in order, into `dst` on `stream`: segments are read on all
    /// cores while the previous one uploads. When this returns the reads are done and the
    /// uploads enqueued (later work on `stream` sees the bytes). `dst` must hold their total.
    pub fn read_to_device(&self, ranges: &[FileRange<'_>], dst: DeviceViewMut<'_, u8>, stream: &Stream) -> Result<()> {
        self.upload_segments(ranges, dst, stream, |_| Ok(()))
    }

    /// [`RangeReader::read_to_device`], calling `uploaded` with the indices of each segment's ranges once its
    /// upload is enqueued (work it enqueues on `stream` sees those bytes, while the cores read the next segment).
    fn upload_segments(
        &self,
        ranges: &[FileRange<'_>],
        dst: DeviceViewMut<'_, u8>,
        stream: &Stream,
        mut uploaded: impl FnMut(std::ops::Range<usize>) -> Result<()>,
    ) -> Result<()> {
        let (offsets, total) = packed_offsets(ranges);
        if dst.len() < total {
            return Err(too_small(total, dst.len()));
        }
        self.gpu.make_current()?;
        let files = open_all(ranges)?;
        let mut slots = self.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut start = 0;
        for (k, segment) in segments(ranges).enumerate() {
            let slot = &mut slots[k % 2];
            slot.uploaded.synchronize()?;
            let len = segment.iter().map(|range| range.len).sum::<usize>();
            if slot.staging.len() < len {
                slot.staging = PinnedBuffer::new(&self.gpu.allocators().pinned, len.next_multiple_of(1 << 20))?;
            }
            let base = offsets[start];
            let mut pieces = Vec::with_capacity(segment.len());
            let mut rest = &mut slot.staging[..len];
            for range in segment {
                let (piece, tail) = std::mem::take(&mut rest).split_at_mut(range.len);
                pieces.push(piece);
                rest = tail;
            }
            segment.par_iter().zip(pieces).try_for_each(|(range, piece)| read_one(&files, range, piece))?;
            stream.copy_to_device(&slot.staging[..len], dst.address() + base as u64)?;
            slot.uploaded.record(stream)?;
            uploaded(start..start + segment.len())?;
            start += segment.len();
        }
        Ok(())
    }

    /// Reads every range to the device and decodes range `i` into `outputs[i]` with `codec` (a
    /// RAW or size-prefixed chunk list on this reader's GPU), on `stream`: each segment's chunks
    /// decode as soon as it is uploaded, while the cores read the next, so reads, copies and
    /// kernels overlap (a segment's chunks are one launch: batches of large chunks fill the GPU
    /// less than one call of them all would). Waits for the decode and gives each chunk's decoded
    /// size, or the first failing chunk's error, numbered among all the ranges.
    ///
    /// # Safety
    /// `outputs` must be valid device memory, not overlapping, until this returns.
    pub unsafe fn decode_to_device(
        &self,
        codec: &ChunkListCodec,
        ranges: &[FileRange<'_>],
        outputs: &[DeviceViewMut<'_, u8>],
        stream: &Stream,
    ) -> Result<Vec<usize>> {
        if outputs.len() != ranges.len() {
            return Err(Error::InvalidArgument(format!("{} ranges but {} outputs", ranges.len(), outputs.len())));
        }
        let (offsets, total) = packed_offsets(ranges);
        let mut packed = DeviceBuffer::<u8>::uninit(&self.gpu.allocators().device, total.max(1))?;
        let at = packed.address();
        let inputs: Vec<_> = ranges
            .iter()
            .zip(&offsets)
            .map(|(range, &offset)| unsafe { DeviceView::from_raw(at + offset as u64, range.len) })
            .collect();
        let mut segments = Vec::new();
        let enqueued = self.upload_segments(ranges, packed.view_mut(), stream, |segment| {
            let results =
                unsafe { codec.decompress_async(&inputs[segment.clone()], &outputs[segment.clone()], stream)? };
            segments.push((segment.start, results));
            Ok(())
        });
        if enqueued.is_err() {
            stream.synchronize()?; // the segments enqueued before the failure still read `packed`
        }
        enqueued?;
        let mut sizes = Vec::with_capacity(ranges.len());
        for (first, results) in segments {
            sizes.extend(results.wait().map_err(|error| renumbered(error, first))?);
        }
        Ok(sizes)
    }
}

/// The ranges cut into consecutive segments of at most [`SEGMENT_SIZE`] bytes (a longer range alone).
fn segments<'r, 'a>(ranges: &'r [FileRange<'a>]) -> impl Iterator<Item = &'r [FileRange<'a>]> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start == ranges.len() {
            return None;
        }
        let (mut end, mut len) = (start, 0);
        while end < ranges.len() && (end == start || len + ranges[end].len <= SEGMENT_SIZE) {
            len += ranges[end].len;
            end += 1;
        }
        let segment = &ranges[start..end];
        start = end;
        Some(segment)
    })
}

/// Each distinct file of `ranges`, opened once (in parallel).
fn open_all<'a>(ranges: &[FileRange<'a>]) -> Result<HashMap<&'a Path, File>> {
    let mut paths: Vec<&Path> = ranges.iter().map(|range| range.path).collect();
    paths.sort_unstable();
    paths.dedup();
    paths.into_par_iter().map(|path| File::open(path).map(|file| (path, file)).map_err(|e| in_file(path, e))).collect()
}

/// Reads `range` into `piece` (exactly its length).
fn read_one(files: &HashMap<&Path, File>, range: &FileRange<'_>, piece: &mut [u8]) -> Result<()> {
    files[range.path].read_exact_at(piece, range.offset).map_err(|e| {
        let end = range.offset + range.len as u64;
        in_file(range.path, std::io::Error::new(e.kind(), format!("bytes {}..{end}: {e}", range.offset)))
    })
}

/// `error` about chunk `i` of a segment as one about chunk `first + i` of the whole call.
fn renumbered(error: Error, first: usize) -> Error {
    match error {
        Error::Chunk { chunk, status } => Error::Chunk { chunk: first + chunk, status },
        Error::ChunkSize { chunk, expected, actual } => Error::ChunkSize { chunk: first + chunk, expected, actual },
        other => other,
    }
}

/// `error` about the file at `path`, naming it.
pub(crate) fn in_file(path: &Path, error: std::io::Error) -> Error {
    Error::Io(std::io::Error::new(error.kind(), format!("{}: {error}", path.display())))
}

fn too_small(total: usize, len: usize) -> Error {
    Error::InvalidArgument(format!("the ranges hold {total} bytes, the destination {len}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_of_several_files_pack_in_order() {
        let dir = std::env::temp_dir().join(format!("ferrocomp-ranges-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::write(&a, b"0123456789").unwrap();
        std::fs::write(&b, b"abcdefghij").unwrap();
        let ranges = [
            FileRange { path: &b, offset: 2, len: 3 },
            FileRange { path: &a, offset: 0, len: 4 },
            FileRange { path: &b, offset: 9, len: 1 },
        ];
        let mut out = [0u8; 8];
        read_ranges(&ranges, &mut out).unwrap();
        assert_eq!(&out, b"cde0123j");
        let past_end = [FileRange { path: &a, offset: 8, len: 4 }];
        let error = read_ranges(&past_end, &mut out).unwrap_err().to_string();
        assert!(error.contains("bytes 8..12") && error.contains("/a"), "{error}");
        let missing = [FileRange { path: &dir.join("c"), offset: 0, len: 1 }];
        assert!(read_ranges(&missing, &mut out).unwrap_err().to_string().contains("/c"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn segments_hold_at_most_their_size() {
        let path = Path::new("x");
        let sizes = [SEGMENT_SIZE / 2, SEGMENT_SIZE / 2, 1, SEGMENT_SIZE * 2, 5];
        let ranges: Vec<_> = sizes.iter().map(|&len| FileRange { path, offset: 0, len }).collect();
        let lens: Vec<usize> = segments(&ranges).map(<[_]>::len).collect();
        assert_eq!(lens, [2, 1, 1, 1]);
    }
}

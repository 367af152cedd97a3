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
use crate::scatter::{StridedCopy, check_box, check_unit, copy_box};
use rayon::prelude::*;
use std::cell::RefCell;
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

/// Reads every range, decodes it with `codec` on the CPU and copies it into `out` by its box
/// (`copies[i]`, whose source offsets count from the chunk's first decoded byte; `unit` as
/// [`crate::scatter::Plan::widen`] chose): each chunk read, decoded and placed by one core while
/// it is in that core's cache, all cores at once, with nothing packed or decoded whole. Chunk
/// `i` must decode to `expected[i]` bytes. The first failing chunk's error, numbered among the
/// ranges (a read's names the file).
///
/// # Safety
/// No two boxes may write the same bytes of `out`.
pub unsafe fn decode_ranges_cpu(
    codec: &ChunkListCodec,
    ranges: &[FileRange<'_>],
    expected: &[usize],
    out: &mut [u8],
    copies: &[StridedCopy],
    unit: u64,
) -> Result<()> {
    if expected.len() != ranges.len() || copies.len() != ranges.len() {
        return Err(Error::InvalidArgument(format!(
            "{} ranges, {} expected sizes and {} boxes: one of each per chunk",
            ranges.len(),
            expected.len(),
            copies.len()
        )));
    }
    check_unit(unit)?;
    for (i, (copy, &len)) in copies.iter().zip(expected).enumerate() {
        check_box(i, len, out.len(), copy, unit)?;
    }
    let files = open_all(ranges)?;
    thread_local! {
        /// A chunk as read and as decoded, kept from chunk to chunk.
        static CHUNK: RefCell<(Vec<u8>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
    }
    let out = out.as_mut_ptr() as usize;
    let outcomes: Vec<Result<()>> = (0..ranges.len())
        .into_par_iter()
        .map(|i| {
            CHUNK.with(|chunk| {
                let (read, decoded) = &mut *chunk.borrow_mut();
                read.resize(ranges[i].len, 0);
                decoded.resize(expected[i], 0);
                read_one(&files, &ranges[i], read)?;
                let size = codec.decompress_cpu(&[read], &mut [decoded]).remove(0).map_err(|e| e.renumbered(i))?;
                if size != expected[i] {
                    return Err(Error::ChunkSize { chunk: i, expected: expected[i], actual: size });
                }
                // The box lies in both (checked above) and no other box writes its bytes (the caller's promise).
                unsafe { copy_box(decoded.as_ptr(), out as *mut u8, &copies[i], unit) };
                Ok(())
            })
        })
        .collect();
    outcomes.into_iter().collect()
}

/// Reads ranges of files into device memory, through pinned slots it keeps between calls.
pub struct RangeReader {
    gpu: Gpu,
    slots: Mutex<[UploadSlot; 2]>,
}

/// A pinned segment and the event after its upload.
struct UploadSlot {
    staging: PinnedBuffer<u8>,
    uploaded: Event,
}

impl RangeReader {
    /// A reader for `gpu`; its slots are allocated at first use.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        gpu.make_current()?;
        let slot = || -> Result<UploadSlot> {
            Ok(UploadSlot { staging: PinnedBuffer::new(&gpu.allocators().pinned, 0)?, uploaded: Event::new()? })
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
            sizes.extend(results.wait().map_err(|error| error.renumbered(first))?);
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

    /// Four 3x5 chunks of u16, compressed (LZ4) into one file in reverse order, read, decoded and
    /// placed into a 6x10 array in one call; a corrupt chunk and a chunk of the wrong size are
    /// numbered among the ranges.
    #[test]
    fn ranges_decode_into_their_boxes() {
        use crate::codec::Options;
        use crate::container::Bitstream;
        use crate::scatter::Plan;
        let codec = ChunkListCodec::new(Options::default(), Bitstream::Raw, None).unwrap();
        let chunks: Vec<Vec<u8>> =
            (0..4u16).map(|c| (0..15).flat_map(|v| (c * 100 + v).to_le_bytes()).collect()).collect();
        let mut file = Vec::new();
        let mut spans = [(0, 0); 4];
        for c in (0..4).rev() {
            let mut room = vec![0u8; codec.max_compressed_size(30)];
            let size = codec.compress_cpu(&[&chunks[c]], &mut [&mut room[..]]).remove(0).unwrap();
            spans[c] = (file.len() as u64, size);
            file.extend_from_slice(&room[..size]);
        }
        let path = std::env::temp_dir().join(format!("ferrocomp-decode-ranges-{}", std::process::id()));
        std::fs::write(&path, &file).unwrap();
        let ranges: Vec<_> = spans.iter().map(|&(offset, len)| FileRange { path: &path, offset, len }).collect();
        let plan = Plan { itemsize: 2, src_len: 30, dst_len: 120 };
        let mut copies: Vec<StridedCopy> = (0..4u64)
            .map(|c| plan.copy(0, (c / 2 * 30 + c % 2 * 5) * 2, &[3, 5], &[10, 2], &[20, 2]).unwrap())
            .collect();
        let unit = Plan::widen(&mut copies, 0, 0);
        let mut out = vec![0u8; 120];
        unsafe { decode_ranges_cpu(&codec, &ranges, &[30; 4], &mut out, &copies, unit).unwrap() };
        for r in 0..6usize {
            for c in 0..10usize {
                let value = u16::from_le_bytes([out[(r * 10 + c) * 2], out[(r * 10 + c) * 2 + 1]]);
                assert_eq!(value as usize, (r / 3 * 2 + c / 5) * 100 + r % 3 * 5 + c % 5);
            }
        }
        let short = unsafe { decode_ranges_cpu(&codec, &ranges, &[30, 30, 32, 30], &mut out, &copies, unit) };
        assert!(matches!(short, Err(Error::ChunkSize { chunk: 2, expected: 32, actual: 30 })), "{short:?}");
        let past = unsafe { decode_ranges_cpu(&codec, &ranges, &[30, 30, 28, 30], &mut out, &copies, unit) };
        assert!(past.unwrap_err().to_string().contains("box 2"));
        let mut damaged = ranges.clone();
        damaged[1].len -= 1;
        let error = unsafe { decode_ranges_cpu(&codec, &damaged, &[30; 4], &mut out, &copies, unit) }.unwrap_err();
        assert!(matches!(error, Error::Chunk { chunk: 1, .. }), "{error:?}");
        (damaged[1], damaged[3].offset) = (ranges[1], file.len() as u64);
        let error = unsafe { decode_ranges_cpu(&codec, &damaged, &[30; 4], &mut out, &copies, unit) }.unwrap_err();
        assert!(error.to_string().contains("decode-ranges"), "{error}");
        std::fs::remove_file(&path).unwrap();
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

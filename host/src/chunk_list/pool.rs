//! The pinned and device memory a GPU call's tables and results go through: a pool of slots
//! per codec, each held by the [`ChunkResults`] of one call until they are dropped.

use super::SIZE_PREFIX_LEN;
use super::layout::{Layout, Op};
use crate::alloc::{DeviceBuffer, DeviceView, PinnedBuffer};
use crate::error::Result;
use crate::gpu::{Event, Gpu};
use ferrocomp_format::Status;
use std::sync::{Arc, Mutex};

/// Slots a pool keeps; past that a call waits (on the host) for the oldest busy one.
const MAX_SLOTS: usize = 8;

// Device sizes are `usize` and share the one u64 table with the addresses.
const _: () = assert!(size_of::<usize>() == size_of::<u64>());

/// The sections of a slot's table, each `count` entries long, uploaded together.
#[derive(Clone, Copy)]
#[repr(usize)]
pub(super) enum Section {
    /// Address of each input block (after its size prefix).
    InputAt,
    /// Byte count of each input block.
    InputSize,
    /// Address of each output block (after its size prefix).
    OutputAt,
    /// Room of each output block.
    OutputSize,
    /// Where each size prefix is copied from.
    PrefixFrom,
    /// Where each size prefix is copied to.
    PrefixTo,
    /// Bytes of each size prefix copied.
    PrefixLen,
    /// The size prefixes themselves, as in the stream: [`PREFIX_WORDS`] entries each.
    Prefix,
}

/// Entries of a [`Section::Prefix`] entry.
pub(super) const PREFIX_WORDS: usize = SIZE_PREFIX_LEN / 8;
/// Entries of a slot's table per chunk: one in each section, [`PREFIX_WORDS`] in the last.
pub(super) const TABLE_WORDS: usize = Section::Prefix as usize + PREFIX_WORDS;

impl Section {
    /// Index in the table of chunk `i`'s entry, in a call of `count` chunks.
    pub(super) fn entry(self, count: usize, i: usize) -> usize {
        let width = if let Section::Prefix = self { PREFIX_WORDS } else { 1 };
        self as usize * count + i * width
    }
}

/// The results of a batched GPU call: per-chunk sizes and statuses, on the device while the
/// call runs. Holds its slot of the codec's pool until dropped; drop it so the slot can be reused.
pub struct ChunkResults {
    pub(super) slot: Option<TableSlot>,
    pub(super) pool: Arc<Pool>,
    pub(super) gpu: Gpu,
    pub(super) layout: Layout,
    pub(super) op: Op,
    pub(super) input_sizes: Vec<usize>,
}

impl ChunkResults {
    /// Number of chunks.
    pub fn len(&self) -> usize {
        self.input_sizes.len()
    }

    /// Whether the call had no chunks.
    pub fn is_empty(&self) -> bool {
        self.input_sizes.is_empty()
    }

    /// Device array of each chunk's result size (as [`BatchCodec`](crate::BatchCodec) writes
    /// them: for compression the block alone, without its size prefix; for sizes of
    /// `WithUncompressedSize` chunks, the prefixes). Empty for an empty call.
    pub fn sizes(&self) -> DeviceView<'_, usize> {
        self.slot.as_ref().map_or(unsafe { DeviceView::from_raw(0, 0) }, |s| s.sizes.view().slice(0, self.len()))
    }

    /// Device array of each chunk's [`Status`] code. Empty for an empty call.
    pub fn statuses(&self) -> DeviceView<'_, u32> {
        self.slot.as_ref().map_or(unsafe { DeviceView::from_raw(0, 0) }, |s| s.statuses.view().slice(0, self.len()))
    }

    /// Whether the call (and its read-back) has finished, asked without waiting.
    pub fn is_done(&self) -> Result<bool> {
        let Some(slot) = &self.slot else { return Ok(true) };
        self.gpu.make_current()?;
        slot.event.is_done()
    }

    /// Waits for the call (not for the rest of its stream); each chunk's size or why it failed.
    /// Compressed sizes include their size prefix; a decoded size other than its prefix, or a
    /// prefix more than its block can hold, is an error.
    pub fn outcomes(&self) -> Result<Vec<Result<usize>>> {
        let Some(slot) = &self.slot else { return Ok(Vec::new()) };
        self.gpu.make_current()?;
        slot.event.synchronize()?;
        Ok((0..self.len())
            .map(|i| {
                let status = match Status::from_code(slot.host_statuses[i]) {
                    Status::Success => Ok(slot.host_sizes[i]),
                    failure => Err(failure),
                };
                let declared =
                    if self.op == Op::Sizes { slot.host_sizes[i] as u64 } else { slot.host_prefixes[i * PREFIX_WORDS] };
                self.layout.outcome(self.op, i, self.input_sizes[i], status, declared)
            })
            .collect())
    }

    /// Waits for the call; each chunk's size, or the first failing chunk's error.
    pub fn wait(&self) -> Result<Vec<usize>> {
        self.outcomes()?.into_iter().collect()
    }
}

impl Drop for ChunkResults {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            self.pool.give_back(slot);
        }
    }
}

/// The slots of one codec that no call holds.
#[derive(Default)]
pub(super) struct Pool {
    state: Mutex<PoolState>,
}

#[derive(Default)]
struct PoolState {
    free: Vec<TableSlot>,
    /// Slots in existence, free or held.
    total: usize,
}

impl Pool {
    /// A slot for `count` chunks and `scratch_bytes` of codec scratch whose last call is done:
    /// a free one if one fits, else a new one (or, at [`MAX_SLOTS`], the oldest, waited for).
    pub(super) fn take(&self, gpu: &Gpu, count: usize, scratch_bytes: usize) -> Result<TableSlot> {
        let mut state = self.state.lock().unwrap();
        let mut fits_and_done = None;
        for (i, slot) in state.free.iter().enumerate() {
            if slot.event.is_done()? {
                if slot.capacity >= count && slot.scratch.len() >= scratch_bytes {
                    fits_and_done = Some(i);
                    break;
                }
                fits_and_done.get_or_insert(i); // done but small: replace it if nothing fits
            }
        }
        match fits_and_done {
            Some(i) => {
                let slot = state.free.swap_remove(i);
                if slot.capacity >= count && slot.scratch.len() >= scratch_bytes {
                    return Ok(slot);
                }
                state.total -= 1;
                drop(slot);
            }
            None if state.total >= MAX_SLOTS && !state.free.is_empty() => {
                let slot = state.free.remove(0);
                slot.event.synchronize()?;
                if slot.capacity >= count && slot.scratch.len() >= scratch_bytes {
                    return Ok(slot);
                }
                state.total -= 1;
            }
            None => {}
        }
        let slot = TableSlot::new(gpu, count.next_power_of_two(), scratch_bytes)?;
        state.total += 1;
        Ok(slot)
    }

    fn give_back(&self, slot: TableSlot) {
        self.state.lock().unwrap().free.push(slot);
    }
}

/// Pinned and device memory for one call of up to `capacity` chunks, and its event.
pub(super) struct TableSlot {
    capacity: usize,
    pub(super) event: Event,
    /// The tables as filled on the host: [`TABLE_WORDS`] entries per chunk of the call, section
    /// by section.
    pub(super) host_tables: PinnedBuffer<u64>,
    pub(super) tables: DeviceBuffer<u64>,
    pub(super) sizes: DeviceBuffer<usize>,
    pub(super) statuses: DeviceBuffer<u32>,
    pub(super) scratch: DeviceBuffer<u8>,
    pub(super) host_sizes: PinnedBuffer<usize>,
    pub(super) host_statuses: PinnedBuffer<u32>,
    pub(super) host_prefixes: PinnedBuffer<u64>,
}

// A slot is written only through `&mut` (while a call fills it); shared, it is only read.
unsafe impl Sync for TableSlot {}

impl TableSlot {
    fn new(gpu: &Gpu, capacity: usize, scratch_bytes: usize) -> Result<Self> {
        let pinned = gpu.allocators().pinned;
        Ok(Self {
            capacity,
            event: Event::new()?,
            host_tables: PinnedBuffer::new(&pinned, TABLE_WORDS * capacity)?,
            tables: gpu.alloc(TABLE_WORDS * capacity)?,
            sizes: gpu.alloc(capacity)?,
            statuses: gpu.alloc(capacity)?,
            scratch: gpu.alloc(scratch_bytes)?,
            host_sizes: PinnedBuffer::new(&pinned, capacity)?,
            host_statuses: PinnedBuffer::new(&pinned, capacity)?,
            host_prefixes: PinnedBuffer::new(&pinned, PREFIX_WORDS * capacity)?,
        })
    }
}

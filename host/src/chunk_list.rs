//! Lists of caller chunks, one standard block each: compress, size or decompress them all in one
//! batched launch, reading and writing the caller's memory in place (outputs may be slices of one
//! buffer). This is what nvCOMP's `RAW` and `WITH_UNCOMPRESSED_SIZE` bitstreams do with a list of
//! arrays, and what `decode(srcs, out=[...])` needs: no copy, and no host wait.
//!
//! The chunk tables go up through a small pool of slots owned by the codec, each with pinned
//! staging, device tables, result arrays and a CUDA event recorded after the slot's last use. A
//! call takes a slot whose event has completed (asking the driver, never waiting), fills the
//! pinned tables, and enqueues one asynchronous upload, the launch and the read-back of the
//! results on the caller's stream. Once the pool is warm nothing is allocated per call.
//!
//! The same calls run on the CPU over host slices, on all cores.

use crate::alloc::{DeviceBuffer, DeviceView, DeviceViewMut, PinnedBuffer};
use crate::batch::{Chunks, Results};
use crate::codec::Options;
use crate::container::{Bitstream, Frame};
use crate::error::{Error, Result};
use crate::gpu::{Event, Gpu, Stream};
use crate::parallel::parallel_map;
use crate::scatter::gather_async;
use ferrocomp_format::Status;
use std::sync::{Arc, Mutex};

/// Bytes of the size prefix before each `WithUncompressedSize` block.
pub const SIZE_PREFIX_LEN: usize = 8;
/// Slots a pool keeps; past that a call waits (on the host) for the oldest busy one.
const MAX_SLOTS: usize = 8;

// Device sizes are `usize` and share the one u64 table with the addresses.
const _: () = assert!(size_of::<usize>() == size_of::<u64>());

/// The sections of a slot's table, each `count` entries long, uploaded together.
#[derive(Clone, Copy)]
#[repr(usize)]
enum Section {
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
    /// [`SIZE_PREFIX_LEN`] for each chunk.
    PrefixLen,
    /// The size prefixes themselves.
    Prefix,
}

/// Number of [`Section`]s.
const SECTIONS: usize = 8;

/// What a call computes, which decides how its results read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Compress,
    Sizes,
    Decompress,
}

/// Compresses, sizes and decompresses lists of chunks (one standard block each, size-prefixed
/// for [`Bitstream::WithUncompressedSize`]) in one batched call, on the GPU or the CPU.
///
/// ```
/// use ferrocomp::{Bitstream, ChunkListCodec, Options};
/// let codec = ChunkListCodec::new(Options::default(), Bitstream::Raw, None)?; // CPU
/// let chunks = [b"abcabcabcabcabcabc".as_slice(), b"xyzxyzxyzxyzxyz".as_slice()];
/// let mut room = vec![vec![0u8; codec.max_compressed_size(18)]; 2];
/// let mut outputs: Vec<&mut [u8]> = room.iter_mut().map(|r| r.as_mut_slice()).collect();
/// let sizes: Vec<usize> = codec.compress_cpu(&chunks, &mut outputs).into_iter().collect::<Result<_, _>>()?;
/// let blocks: Vec<&[u8]> = room.iter().zip(&sizes).map(|(r, &n)| &r[..n]).collect();
/// assert_eq!(codec.decompressed_sizes_cpu(&blocks)[1].as_ref().ok(), Some(&15));
/// # Ok::<(), ferrocomp::Error>(())
/// ```
pub struct ChunkListCodec {
    layout: Layout,
    gpu: Option<Gpu>,
    pool: Arc<Pool>,
}

/// The algorithm and whether blocks carry a size prefix: how chunks are laid out and read.
#[derive(Clone, Copy)]
struct Layout {
    options: Options,
    prefixed: bool,
}

impl ChunkListCodec {
    /// A codec for `options` writing `bitstream` (`Raw` or `WithUncompressedSize`) chunks, on
    /// `gpu` (or the CPU for `None`).
    pub fn new(options: Options, bitstream: Bitstream, gpu: Option<Gpu>) -> Result<Self> {
        let prefixed = match bitstream {
            Bitstream::Raw => false,
            Bitstream::WithUncompressedSize => true,
            Bitstream::Native => {
                return Err(Error::InvalidArgument(
                    "a chunk list holds one block per chunk; the native container is BufferCodec's".into(),
                ));
            }
        };
        Ok(Self { layout: Layout { options, prefixed }, gpu, pool: Arc::new(Pool::default()) })
    }

    /// The algorithm and its options.
    pub fn options(&self) -> Options {
        self.layout.options
    }

    /// The GPU it runs on, if any.
    pub fn gpu(&self) -> Option<&Gpu> {
        self.gpu.as_ref()
    }

    /// Bytes before each block: [`SIZE_PREFIX_LEN`] for `WithUncompressedSize`, else 0.
    pub fn prefix_len(&self) -> usize {
        self.layout.prefix_len()
    }

    /// Room a compressed chunk of `chunk_bytes` may need, its size prefix included.
    pub fn max_compressed_size(&self, chunk_bytes: usize) -> usize {
        self.prefix_len() + self.layout.options.codec().max_compressed_chunk_size(chunk_bytes)
    }

    /// Largest chunk the compressor accepts.
    pub fn max_chunk_size(&self) -> usize {
        self.layout.options.codec().max_chunk_size()
    }

    // ---- GPU ----

    /// Enqueues compressing each of `inputs` into the output of the same index, on `stream`.
    /// Every output gets the room of the smallest; a chunk that does not fit gets
    /// [`Status::OutputTooSmall`]. [`ChunkResults::wait`] gives the bytes written to each output.
    ///
    /// # Safety
    /// All memory named must stay valid until the stream has run the call, and outputs must
    /// not overlap inputs or each other.
    pub unsafe fn compress_async(
        &self,
        inputs: &[DeviceView<'_, u8>],
        outputs: &[DeviceViewMut<'_, u8>],
        stream: &Stream,
    ) -> Result<ChunkResults> {
        self.check_outputs(inputs.len(), outputs.len())?;
        let max = self.max_chunk_size();
        if let Some((i, input)) = inputs.iter().enumerate().find(|(_, input)| input.len() > max) {
            return Err(too_large(i, input.len(), max));
        }
        unsafe { self.launch(Op::Compress, inputs, outputs, stream) }
    }

    /// Enqueues finding the size each of `inputs` decompresses to, on `stream`: the stored
    /// prefix for `WithUncompressedSize`, a walk of the block for `Raw`.
    ///
    /// # Safety
    /// All memory named must stay valid until the stream has run the call.
    pub unsafe fn decompressed_sizes_async(
        &self,
        inputs: &[DeviceView<'_, u8>],
        stream: &Stream,
    ) -> Result<ChunkResults> {
        unsafe { self.launch(Op::Sizes, inputs, &[], stream) }
    }

    /// Enqueues decompressing each of `inputs` into the output of the same index, on `stream`.
    /// A corrupt chunk, or one that does not fit its output, gets an error status; the others
    /// still decode.
    ///
    /// # Safety
    /// As [`ChunkListCodec::compress_async`].
    pub unsafe fn decompress_async(
        &self,
        inputs: &[DeviceView<'_, u8>],
        outputs: &[DeviceViewMut<'_, u8>],
        stream: &Stream,
    ) -> Result<ChunkResults> {
        self.check_outputs(inputs.len(), outputs.len())?;
        unsafe { self.launch(Op::Decompress, inputs, outputs, stream) }
    }

    fn check_outputs(&self, inputs: usize, outputs: usize) -> Result<()> {
        if inputs != outputs {
            return Err(Error::InvalidArgument(format!("{inputs} inputs but {outputs} outputs")));
        }
        Ok(())
    }

    /// Takes a slot, enqueues `op` with it and records the slot's event after.
    ///
    /// # Safety
    /// As [`ChunkListCodec::compress_async`].
    unsafe fn launch(
        &self,
        op: Op,
        inputs: &[DeviceView<'_, u8>],
        outputs: &[DeviceViewMut<'_, u8>],
        stream: &Stream,
    ) -> Result<ChunkResults> {
        let gpu = self.gpu.as_ref().ok_or(Error::NoDevice)?;
        let count = inputs.len();
        let mut results = ChunkResults {
            slot: None,
            pool: self.pool.clone(),
            gpu: gpu.clone(),
            layout: self.layout,
            op,
            input_sizes: inputs.iter().map(|input| input.len()).collect(),
        };
        if count == 0 {
            return Ok(results);
        }
        if count > u32::MAX as usize {
            return Err(Error::InvalidArgument(format!("{count} chunks is more than a batch can hold")));
        }
        let prefix = self.prefix_len();
        let short = match op {
            Op::Compress => outputs.iter().position(|output| output.len() < prefix),
            Op::Sizes | Op::Decompress => inputs.iter().position(|input| input.len() < prefix),
        };
        if let Some(chunk) = short {
            let status = if op == Op::Compress { Status::OutputTooSmall } else { Status::Truncated };
            return Err(Error::Chunk { chunk, status });
        }
        gpu.make_current()?;
        let codec = self.layout.options.codec();
        let largest = |sizes: &mut dyn Iterator<Item = usize>| sizes.max().unwrap_or(0);
        let scratch_bytes = match op {
            Op::Compress => codec.compress_scratch_size(count, largest(&mut inputs.iter().map(|i| i.len()))),
            Op::Decompress => codec.decompress_scratch_size(count, largest(&mut outputs.iter().map(|o| o.len()))),
            Op::Sizes => 0,
        };
        let slot = results.slot.insert(self.pool.take(gpu, count, scratch_bytes)?);
        // Recorded even when enqueueing fails part-way, so the slot is not reused under a copy.
        let enqueued = unsafe { self.enqueue(gpu, op, slot, inputs, outputs, stream) };
        slot.event.record(stream)?;
        enqueued?;
        Ok(results)
    }

    /// Fills `slot`'s tables and enqueues their upload, `op`, and the read-back of the results.
    ///
    /// # Safety
    /// As [`ChunkListCodec::compress_async`].
    unsafe fn enqueue(
        &self,
        gpu: &Gpu,
        op: Op,
        slot: &mut TableSlot,
        inputs: &[DeviceView<'_, u8>],
        outputs: &[DeviceViewMut<'_, u8>],
        stream: &Stream,
    ) -> Result<()> {
        let (count, prefix) = (inputs.len(), self.prefix_len());
        let tables_at = slot.tables.address();
        let entry_at = |section: Section, i: usize| tables_at + ((section as usize * count + i) * 8) as u64;
        let table = &mut slot.host_tables[..SECTIONS * count];
        let mut put = |section: Section, i: usize, value: u64| table[section as usize * count + i] = value;
        // Compression reads whole inputs and writes after the prefix; the others read past it.
        let (in_skip, out_skip) = if op == Op::Compress { (0, prefix) } else { (prefix, 0) };
        for (i, input) in inputs.iter().enumerate() {
            put(Section::InputAt, i, input.address() + in_skip as u64);
            put(Section::InputSize, i, (input.len() - in_skip) as u64);
            put(Section::PrefixLen, i, SIZE_PREFIX_LEN as u64);
            let (from, to) = match op {
                Op::Compress => (entry_at(Section::Prefix, i), outputs[i].address()),
                Op::Sizes => (input.address(), slot.sizes.address() + (i * 8) as u64),
                Op::Decompress => (input.address(), entry_at(Section::Prefix, i)),
            };
            put(Section::PrefixFrom, i, from);
            put(Section::PrefixTo, i, to);
            put(Section::Prefix, i, input.len() as u64);
        }
        for (i, output) in outputs.iter().enumerate() {
            put(Section::OutputAt, i, output.address() + out_skip as u64);
            put(Section::OutputSize, i, (output.len() - out_skip) as u64);
        }
        // Only compression uploads prefixes; the others gather them on the device.
        let sections = if op == Op::Compress { SECTIONS } else { Section::Prefix as usize };
        stream.copy_to_device(&slot.host_tables[..sections * count], tables_at)?;
        let view = |section: Section| unsafe { DeviceView::<u64>::from_raw(entry_at(section, 0), count) };
        let sizes_of = |section: Section| unsafe { DeviceView::<usize>::from_raw(entry_at(section, 0), count) };
        let inputs = Chunks::new(view(Section::InputAt), sizes_of(Section::InputSize));
        let results = Results { sizes: slot.sizes.view_mut(), statuses: slot.statuses.view_mut() };
        let (codec, scratch) = (self.layout.options.codec(), slot.scratch.view_mut());
        unsafe {
            if prefix > 0 {
                let (from, to) = (view(Section::PrefixFrom), view(Section::PrefixTo));
                gather_async(gpu, from, to, sizes_of(Section::PrefixLen), stream)?;
            }
            match op {
                Op::Compress => {
                    let capacity = outputs.iter().map(|o| o.len() - out_skip).min().unwrap_or(0);
                    codec.compress_async(gpu, inputs, view(Section::OutputAt), capacity, scratch, results, stream)?;
                }
                Op::Sizes if prefix > 0 => {
                    let statuses = results.statuses.address();
                    stream.fill_u32(statuses, 0, count)?;
                }
                Op::Sizes => codec.decompressed_sizes_async(gpu, inputs, results, stream)?,
                Op::Decompress => {
                    let outputs = Chunks::new(view(Section::OutputAt), sizes_of(Section::OutputSize));
                    codec.decompress_async(gpu, inputs, outputs, scratch, results, None, stream)?;
                }
            }
        }
        stream.copy_to_host(slot.sizes.address(), &mut slot.host_sizes[..count])?;
        stream.copy_to_host(slot.statuses.address(), &mut slot.host_statuses[..count])?;
        if prefix > 0 && op == Op::Decompress {
            stream.copy_to_host(entry_at(Section::Prefix, 0), &mut slot.host_prefixes[..count])?;
        }
        Ok(())
    }

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
            head.copy_from_slice(&(input.len() as u64).to_le_bytes()[..prefix]);
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

impl Layout {
    fn prefix_len(&self) -> usize {
        if self.prefixed { SIZE_PREFIX_LEN } else { 0 }
    }

    /// The size prefix of a `WithUncompressedSize` chunk, or `None` for `Raw`.
    fn read_prefix(&self, chunk: usize, input: &[u8]) -> Result<Option<u64>> {
        if !self.prefixed {
            return Ok(None);
        }
        let prefix = input.first_chunk::<SIZE_PREFIX_LEN>().ok_or(Error::Chunk { chunk, status: Status::Truncated })?;
        Ok(Some(u64::from_le_bytes(*prefix)))
    }

    /// One chunk's outcome from its status and size; `declared` is its size prefix, if any.
    /// A prefix is checked against what the block can hold, and against the decoded size.
    fn outcome(
        &self,
        op: Op,
        chunk: usize,
        input_len: usize,
        status: Result<usize, Status>,
        declared: u64,
    ) -> Result<usize> {
        let size = status.map_err(|status| Error::Chunk { chunk, status })?;
        if !self.prefixed {
            return Ok(size);
        }
        match op {
            Op::Compress => Ok(SIZE_PREFIX_LEN + size),
            Op::Sizes => Frame::parse_with_size(self.options, &declared.to_le_bytes(), input_len)
                .map(|frame| frame.total_size)
                .map_err(|e| match e {
                    Error::Container(what) => Error::Container(format!("chunk {chunk}: {what}")),
                    other => other,
                }),
            Op::Decompress if size as u64 != declared => {
                Err(Error::ChunkSize { chunk, expected: declared as usize, actual: size })
            }
            Op::Decompress => Ok(size),
        }
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

/// The error for a chunk over the compressor's limit.
fn too_large(chunk: usize, len: usize, max: usize) -> Error {
    Error::InvalidArgument(format!(
        "chunk {chunk}: {len} bytes is over the {max}-byte chunk limit of a single-block bitstream; use the native one"
    ))
}

/// The results of a batched GPU call: per-chunk sizes and statuses, on the device while the
/// call runs. Holds its slot of the codec's pool until dropped; drop it so the slot can be reused.
pub struct ChunkResults {
    slot: Option<TableSlot>,
    pool: Arc<Pool>,
    gpu: Gpu,
    layout: Layout,
    op: Op,
    input_sizes: Vec<usize>,
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
                let declared = if self.op == Op::Sizes { slot.host_sizes[i] as u64 } else { slot.host_prefixes[i] };
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
struct Pool {
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
    fn take(&self, gpu: &Gpu, count: usize, scratch_bytes: usize) -> Result<TableSlot> {
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
struct TableSlot {
    capacity: usize,
    event: Event,
    /// The tables as filled on the host: [`SECTIONS`] sections of the call's chunk count.
    host_tables: PinnedBuffer<u64>,
    tables: DeviceBuffer<u64>,
    sizes: DeviceBuffer<usize>,
    statuses: DeviceBuffer<u32>,
    scratch: DeviceBuffer<u8>,
    host_sizes: PinnedBuffer<usize>,
    host_statuses: PinnedBuffer<u32>,
    host_prefixes: PinnedBuffer<u64>,
}

// A slot is written only through `&mut` (while a call fills it); shared, it is only read.
unsafe impl Sync for TableSlot {}

impl TableSlot {
    fn new(gpu: &Gpu, capacity: usize, scratch_bytes: usize) -> Result<Self> {
        let pinned = gpu.allocators().pinned;
        Ok(Self {
            capacity,
            event: Event::new()?,
            host_tables: PinnedBuffer::new(&pinned, SECTIONS * capacity)?,
            tables: gpu.alloc(SECTIONS * capacity)?,
            sizes: gpu.alloc(capacity)?,
            statuses: gpu.alloc(capacity)?,
            scratch: gpu.alloc(scratch_bytes)?,
            host_sizes: PinnedBuffer::new(&pinned, capacity)?,
            host_statuses: PinnedBuffer::new(&pinned, capacity)?,
            host_prefixes: PinnedBuffer::new(&pinned, capacity)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{Deflate, Lz4};
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

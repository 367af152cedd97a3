//! The GPU calls: a list's tables filled in a pool slot, uploaded, and the batched kernels and
//! the read-back of the results enqueued on the caller's stream.

use super::ChunkListCodec;
use super::layout::{Op, too_large};
use super::pool::{ChunkResults, PREFIX_WORDS, Section, TABLE_WORDS, TableSlot};
use crate::alloc::{DeviceView, DeviceViewMut};
use crate::batch::{Chunks, Results};
use crate::container::{SIZE_PREFIX_LEN, size_prefix};
use crate::error::{Error, Result};
use crate::gpu::{Gpu, Stream};
use crate::scatter::gather_async;
use ferrocomp_format::Status;

impl ChunkListCodec {
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
        let entry_at = |section: Section, i: usize| tables_at + (section.entry(count, i) * 8) as u64;
        let table = &mut slot.host_tables[..TABLE_WORDS * count];
        let mut put = |section: Section, i: usize, value: u64| table[section.entry(count, i)] = value;
        // Compression reads whole inputs and writes after the prefix; the others read past it.
        let (in_skip, out_skip) = if op == Op::Compress { (0, prefix) } else { (prefix, 0) };
        let (mut largest_input, mut largest_output) = (0, 0);
        for (i, input) in inputs.iter().enumerate() {
            largest_input = largest_input.max(input.len() - in_skip);
            put(Section::InputAt, i, input.address() + in_skip as u64);
            put(Section::InputSize, i, (input.len() - in_skip) as u64);
            // Sizes gathers the size alone; compression writes whole prefixes, decompression reads them.
            let (from, to, len) = match op {
                Op::Compress => (entry_at(Section::Prefix, i), outputs[i].address(), SIZE_PREFIX_LEN),
                Op::Sizes => (input.address(), slot.sizes.address() + (i * 8) as u64, 8),
                Op::Decompress => (input.address(), entry_at(Section::Prefix, i), SIZE_PREFIX_LEN),
            };
            put(Section::PrefixFrom, i, from);
            put(Section::PrefixTo, i, to);
            put(Section::PrefixLen, i, len as u64);
        }
        for (i, output) in outputs.iter().enumerate() {
            largest_output = largest_output.max(output.len() - out_skip);
            put(Section::OutputAt, i, output.address() + out_skip as u64);
            put(Section::OutputSize, i, (output.len() - out_skip) as u64);
        }
        if op == Op::Compress {
            for (i, input) in inputs.iter().enumerate() {
                let at = Section::Prefix.entry(count, i);
                let prefix = size_prefix(input.len() as u64);
                let (words, _) = prefix.as_chunks::<8>();
                for (entry, word) in table[at..at + PREFIX_WORDS].iter_mut().zip(words) {
                    *entry = u64::from_le_bytes(*word);
                }
            }
        }
        // Only compression uploads prefixes; the others gather them on the device.
        let words = if op == Op::Compress { TABLE_WORDS } else { Section::Prefix as usize };
        stream.copy_to_device(&slot.host_tables[..words * count], tables_at)?;
        let view = |section: Section| unsafe { DeviceView::<u64>::from_raw(entry_at(section, 0), count) };
        let sizes_of = |section: Section| unsafe { DeviceView::<usize>::from_raw(entry_at(section, 0), count) };
        let inputs = Chunks::new(view(Section::InputAt), sizes_of(Section::InputSize)).with_largest(largest_input);
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
                    let outputs = Chunks::new(view(Section::OutputAt), sizes_of(Section::OutputSize))
                        .with_largest(largest_output);
                    codec.decompress_async(gpu, inputs, outputs, scratch, results, None, stream)?;
                }
            }
        }
        stream.copy_to_host(slot.sizes.address(), &mut slot.host_sizes[..count])?;
        stream.copy_to_host(slot.statuses.address(), &mut slot.host_statuses[..count])?;
        if prefix > 0 && op == Op::Decompress {
            stream.copy_to_host(entry_at(Section::Prefix, 0), &mut slot.host_prefixes[..PREFIX_WORDS * count])?;
        }
        Ok(())
    }
}

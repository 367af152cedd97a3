//! The two sides that decode a batch, the CPU path and the GPU (or the scalar decoders), each into a
//! sentinel-filled output, and what is wrong where they disagree or write past a room.

use crate::batch::{Batch, Outcome};
use ferrocomp::{ChunkListCodec, DeviceView, DeviceViewMut, Options, Stream};

/// A byte of the pattern every output buffer is filled with before decoding.
fn sentinel(at: usize) -> u8 {
    0xA5 ^ (at % 251) as u8
}

fn sentinel_filled(len: usize) -> Vec<u8> {
    (0..len).map(sentinel).collect()
}

/// One side's results for a batch, and its output buffer.
pub struct Run {
    pub sizes: Vec<Outcome>,
    pub decoded: Vec<Outcome>,
    pub output: Vec<u8>,
}

/// The CPU path (decoding with the libraries where they vouch for the result).
pub fn run_cpu(codec: &ChunkListCodec, batch: &Batch) -> Run {
    let mut output = sentinel_filled(batch.output_len);
    let decoded = codec.decompress_cpu(&batch.inputs(), &mut batch.split_rooms(&mut output));
    Run { sizes: batch.sizes.clone(), decoded: decoded.into_iter().map(Outcome::from).collect(), output }
}

/// What the CPU path is checked against.
pub enum Other<'a> {
    /// The GPU's batched calls, with a codec per bitstream (raw, size-prefixed).
    Gpu { stream: &'a Stream, codecs: [ChunkListCodec; 2] },
    /// The scalar decoders of these options, one chunk at a time.
    Scalar(Options),
}

impl Other<'_> {
    pub fn name(&self) -> &'static str {
        match self {
            Self::Gpu { .. } => "GPU",
            Self::Scalar(_) => "scalar",
        }
    }

    pub fn run(&self, prefixed: bool, batch: &Batch) -> ferrocomp::Result<Run> {
        match self {
            Self::Gpu { stream, codecs } => run_gpu(&codecs[prefixed as usize], stream, batch),
            Self::Scalar(options) => Ok(run_scalar(*options, prefixed, batch)),
        }
    }
}

/// The GPU: inputs in one device buffer, outputs slices of another, one stream.
fn run_gpu(codec: &ChunkListCodec, stream: &Stream, batch: &Batch) -> ferrocomp::Result<Run> {
    let gpu = codec.gpu().expect("a GPU codec");
    let inputs = gpu.upload(&batch.inputs)?;
    let outputs = gpu.upload(&sentinel_filled(batch.output_len))?;
    // An upload from pageable memory may return before its DMA ends; a download after it may not.
    gpu.download(outputs.view().slice(0, 1))?;
    let input_views: Vec<DeviceView<'_>> =
        batch.input_at.iter().map(|r| inputs.view().slice(r.start, r.len())).collect();
    // SAFETY: the rooms lie in `outputs` and do not overlap; both buffers outlive the calls,
    // whose outcomes are waited for.
    let output_views: Vec<DeviceViewMut<'_>> = batch
        .rooms
        .iter()
        .map(|r| unsafe { DeviceViewMut::from_raw(outputs.address() + r.start as u64, r.len()) })
        .collect();
    let sizes = unsafe { codec.decompressed_sizes_async(&input_views, stream)? }.outcomes()?;
    let decoded = unsafe { codec.decompress_async(&input_views, &output_views, stream)? }.outcomes()?;
    Ok(Run {
        sizes: sizes.into_iter().map(Outcome::from).collect(),
        decoded: decoded.into_iter().map(Outcome::from).collect(),
        output: gpu.download(outputs.view())?,
    })
}

/// The scalar decoders, chunk by chunk, with the size-prefix check `ChunkListCodec` makes. Sizes
/// have one CPU implementation: the batch's.
fn run_scalar(options: Options, prefixed: bool, batch: &Batch) -> Run {
    let mut output = sentinel_filled(batch.output_len);
    let prefix = if prefixed { ferrocomp::chunk_list::SIZE_PREFIX_LEN } else { 0 };
    let decoded = batch
        .inputs()
        .into_iter()
        .zip(batch.split_rooms(&mut output))
        .enumerate()
        .map(|(chunk, (input, room))| {
            let declared = input.first_chunk().map_or(0, |prefix| u64::from_le_bytes(*prefix));
            match options.codec().decompress_scalar(&input[prefix..], room) {
                Ok(actual) if prefixed && actual as u64 != declared => {
                    Outcome::SizeMismatch { chunk, expected: declared as usize, actual }
                }
                Ok(n) => Outcome::Ok(n),
                Err(status) => Outcome::Refused { chunk, status },
            }
        })
        .collect();
    Run { sizes: batch.sizes.clone(), decoded, output }
}

/// What is wrong with chunk `i`: how the CPU path (`ours`) and the other side disagree (results,
/// bytes, a good chunk that fails), and which of them wrote into the guard gap after its room.
pub fn check_chunk(batch: &Batch, i: usize, ours: &Run, theirs: &Run, other: &str) -> (Vec<String>, Vec<String>) {
    let mut disagreements = Vec::new();
    if ours.sizes[i] != theirs.sizes[i] {
        disagreements.push(format!("sizes: CPU {:?} vs {other} {:?}", ours.sizes[i], theirs.sizes[i]));
    }
    let room = &batch.rooms[i];
    match (&ours.decoded[i], &theirs.decoded[i]) {
        (a, b) if a != b => disagreements.push(format!("decoded: CPU {a:?} vs {other} {b:?}")),
        (&Outcome::Ok(n), _) if n > room.len() => {
            disagreements.push(format!("decoded {n} bytes into a room of {}", room.len()))
        }
        (&Outcome::Ok(n), _) => {
            let (ours, theirs) = (&ours.output[room.start..room.start + n], &theirs.output[room.start..room.start + n]);
            if let Some(at) = (0..n).find(|&k| ours[k] != theirs[k]) {
                disagreements.push(format!("decoded bytes differ from byte {at} of {n}"));
            }
        }
        _ => {}
    }
    if batch.good[i] && !matches!((&ours.decoded[i], &theirs.decoded[i]), (Outcome::Ok(_), Outcome::Ok(_))) {
        disagreements.push("an unmutated seed chunk does not decode".into());
    }
    let gap = batch.gap(i);
    let guard_violations = [("CPU", ours), (other, theirs)]
        .into_iter()
        .filter_map(|(side, run)| {
            let at = gap.clone().find(|&at| run.output[at] != sentinel(at))?;
            Some(format!("{side} wrote into the guard gap, {} bytes past the room", at - gap.start))
        })
        .collect();
    (disagreements, guard_violations)
}

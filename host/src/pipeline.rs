//! The pipelined host path's machinery: host data moves in segments through reused slots (host
//! staging, pinned where a GPU copies it, and on the GPU a stream with its own device memory),
//! and reading, processing (transfers and kernels, or the CPU's cores) and writing run at once on
//! different segments. A reader thread fills slots, workers process them, and the calling thread
//! writes them out in order and hands them back to the reader; memory stays that of the slots.

use crate::alloc::{DeviceBuffer, PinnedBuffer};
use crate::error::Result;
use crate::gpu::{Gpu, Stream};
use crate::io::read_full;
use crate::scratch::Scratch;
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};

/// Default bytes of host data per segment (and per block of a streamed container): 256 chunks
/// of 64 KiB, enough to keep two streams of kernels busy while the slots of a pipeline stay
/// near 100 MiB.
pub const DEFAULT_SEGMENT_SIZE: usize = 16 << 20;
/// Workers on a GPU, each with its own stream, so one segment's copies overlap another's kernels.
pub(crate) const GPU_WORKERS: usize = 2;

/// Bytes in and out of a stream call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Uncompressed bytes.
    pub uncompressed: u64,
    /// Compressed bytes, headers included.
    pub compressed: u64,
}

/// Host memory a segment passes through: pinned where a GPU copies it, so copies are asynchronous.
pub(crate) enum Staging {
    Pinned { buffer: PinnedBuffer<u8>, len: usize, gpu: Gpu },
    Heap(Vec<u8>),
}

impl Staging {
    fn new(gpu: Option<&Gpu>) -> Result<Self> {
        Ok(match gpu {
            Some(gpu) => {
                Self::Pinned { buffer: PinnedBuffer::new(&gpu.allocators().pinned, 0)?, len: 0, gpu: gpu.clone() }
            }
            None => Self::Heap(Vec::new()),
        })
    }

    /// Its bytes, `len` of them from now on (contents unspecified), growing it if needed.
    pub(crate) fn resize(&mut self, new_len: usize) -> Result<&mut [u8]> {
        match self {
            Self::Pinned { buffer, len, gpu } => {
                if buffer.len() < new_len {
                    gpu.make_current()?;
                    // Grown in whole MiB, so compressed segments of varying size rarely reallocate.
                    *buffer = PinnedBuffer::new(&gpu.allocators().pinned, new_len.next_multiple_of(1 << 20))?;
                }
                *len = new_len;
                Ok(&mut buffer[..new_len])
            }
            Self::Heap(vec) => {
                vec.resize(new_len, 0);
                Ok(vec)
            }
        }
    }

    /// Its bytes from now on: what `input` has, up to `max`; returns how many (short only at
    /// the input's end). Heap memory grows as bytes arrive, so a small input costs little.
    pub(crate) fn read_from(&mut self, input: &mut impl Read, max: usize) -> Result<usize> {
        if let Self::Heap(vec) = self {
            vec.clear();
            return Ok(input.take(max as u64).read_to_end(vec)?);
        }
        let got = read_full(input, self.resize(max)?)?;
        self.resize(got)?;
        Ok(got)
    }

    /// Its bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Self::Pinned { buffer, len, .. } => &buffer[..*len],
            Self::Heap(vec) => vec,
        }
    }
}

/// One segment's buffers, reused segment after segment.
pub(crate) struct SegmentSlot {
    /// What was read: uncompressed bytes to compress, or compressed chunks to decode.
    pub(crate) input: Staging,
    /// What processing made, to be written out.
    pub(crate) output: Staging,
    /// On a GPU: the stream and device memory this slot is processed with.
    pub(crate) device: Option<DeviceSide>,
}

impl SegmentSlot {
    pub(crate) fn new(gpu: Option<&Gpu>) -> Result<Self> {
        let device = match gpu {
            Some(gpu) => Some(DeviceSide {
                stream: gpu.stream()?,
                scratch: None,
                input: Growing::default(),
                output: Growing::default(),
                _gpu: gpu.clone(),
            }),
            None => None,
        };
        Ok(Self { input: Staging::new(gpu)?, output: Staging::new(gpu)?, device })
    }
}

/// A slot's device side: the stream it is processed on, and the device memory it uses there.
pub(crate) struct DeviceSide {
    pub(crate) stream: Stream,
    pub(crate) scratch: Option<Scratch>,
    /// The slot's input, uploaded.
    pub(crate) input: Growing,
    /// The slot's output, before it is downloaded.
    pub(crate) output: Growing,
    /// Last, so that the stream and memory above go while their context lives.
    _gpu: Gpu,
}

/// A device buffer that grows to the largest size asked of it.
#[derive(Default)]
pub(crate) struct Growing(Option<DeviceBuffer<u8>>);

impl Growing {
    /// The address of at least `len` bytes.
    pub(crate) fn ensure(&mut self, gpu: &Gpu, len: usize) -> Result<u64> {
        if self.0.as_ref().is_none_or(|buffer| buffer.len() < len) {
            self.0 = None;
            self.0 = Some(gpu.alloc(len)?);
        }
        Ok(self.0.as_ref().unwrap().address())
    }
}

/// A segment read and waiting, or done, with its sequence number.
type Job<T> = (usize, SegmentSlot, T);

/// Runs segments through `fill` (a reader thread), `process` (`workers` threads) and `drain`
/// (the calling thread, in order) with `slots`, and returns the slots for reuse, whatever
/// happened, with the first error in stream order. `fill` returns `None` after the last segment.
/// Without `overlap` (or with one slot) the three take turns on the calling thread, which spares
/// small inputs the threads.
pub(crate) fn run<T: Send, D: Send>(
    mut slots: Vec<SegmentSlot>,
    workers: usize,
    overlap: bool,
    mut fill: impl FnMut(&mut SegmentSlot) -> Result<Option<T>> + Send,
    process: impl Fn(&mut SegmentSlot, &T) -> Result<D> + Sync,
    mut drain: impl FnMut(&SegmentSlot, T, D) -> Result<()>,
) -> (Vec<SegmentSlot>, Result<()>) {
    if !overlap || slots.len() == 1 {
        slots.truncate(1);
        let slot = &mut slots[0];
        let mut turn = || -> Result<bool> {
            let Some(task) = fill(slot)? else { return Ok(false) };
            let done = process(slot, &task)?;
            drain(slot, task, done)?;
            Ok(true)
        };
        let result = loop {
            match turn() {
                Ok(true) => {}
                Ok(false) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        return (slots, result);
    }
    let (work_tx, work_rx) = channel::<Job<T>>();
    let work_rx = Mutex::new(work_rx);
    // Set once a segment fails: the reader stops and the slots come home.
    let failed = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (free_tx, free_rx) = channel::<SegmentSlot>();
        let (done_tx, done_rx) = channel::<(Job<T>, Result<D>)>();
        slots.into_iter().for_each(|slot| free_tx.send(slot).expect("the receiver is here"));
        let failed = &failed;
        let reader = scope.spawn(move || {
            let mut result = Ok(());
            let mut held = None;
            for seq in 0.. {
                let mut slot = free_rx.recv().expect("the writer holds a sender");
                if failed.load(Ordering::Relaxed) {
                    held = Some(slot);
                    break;
                }
                match fill(&mut slot) {
                    Ok(Some(task)) => work_tx.send((seq, slot, task)).expect("the workers outlive the reader"),
                    Ok(None) => {
                        held = Some(slot);
                        break;
                    }
                    Err(e) => {
                        (result, held) = (Err(e), Some(slot));
                        break;
                    }
                }
            }
            (result, held, free_rx)
        });
        for _ in 0..workers {
            let (work_rx, done_tx, process) = (&work_rx, done_tx.clone(), &process);
            scope.spawn(move || {
                loop {
                    let job = work_rx.lock().unwrap().recv();
                    let Ok((seq, mut slot, task)) = job else { break };
                    let done = process(&mut slot, &task);
                    done_tx.send(((seq, slot, task), done)).expect("the writer drains until the workers end");
                }
            });
        }
        drop(done_tx);
        let written = drain_in_order(done_rx, &free_tx, failed, &mut drain);
        drop(free_tx);
        let (read, held, free_rx) = reader.join().expect("the reader thread panicked");
        let slots = held.into_iter().chain(free_rx.try_iter()).collect();
        (slots, written.and(read))
    })
}

/// Drains finished segments in sequence order as they arrive and hands their slots back; after
/// the first failure (returned), only hands them back, with `failed` set.
fn drain_in_order<T, D>(
    done: Receiver<(Job<T>, Result<D>)>,
    free: &Sender<SegmentSlot>,
    failed: &AtomicBool,
    drain: &mut impl FnMut(&SegmentSlot, T, D) -> Result<()>,
) -> Result<()> {
    let mut pending = BTreeMap::new();
    let mut next = 0;
    let mut outcome = Ok(());
    for ((seq, slot, task), result) in done {
        if outcome.is_err() {
            let _ = free.send(slot);
            continue;
        }
        pending.insert(seq, (slot, task, result));
        while let Some((slot, task, result)) = pending.remove(&next) {
            if outcome.is_ok() {
                outcome = result.and_then(|done| drain(&slot, task, done));
                failed.store(outcome.is_err(), Ordering::Relaxed);
            }
            next += 1;
            // The reader may have finished; then the slot waits in the channel to be collected.
            let _ = free.send(slot);
        }
        if outcome.is_err() {
            pending.into_values().for_each(|(slot, ..)| {
                let _ = free.send(slot);
            });
            pending = BTreeMap::new();
        }
    }
    outcome
}

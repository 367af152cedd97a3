//! Who decodes a block's sequences for the warp that writes them. FSE decoding is serial, one
//! lane's work: the writing warp's first lane does it, a batch before the warp writes it
//! ([`InLane0`]), or a team's reader warp does it a batch ahead of the writing warp, so the two
//! overlap ([`TeamWriter`]): a block of warps each writing a chunk, and one more whose lane i reads
//! the sequences of writer i ([`serve_team`]), so that one instruction of the serial loop serves
//! as many chunks as the team has writers. Both use the format crate's decoder: the bytes and
//! statuses are the same. A team hands its batches over in either form (see `handoff`); one
//! warp a chunk in full sequences.
//!
//! The team's protocol, per writer, through its [`Mailbox`]: the writer's first lane fills it,
//! stores the command in slot `posted % 2` and releases `posted + 1`; the reader's lane acquires
//! that, carries the command out and releases `served`. A writer waits for the command before
//! the one it posts to be served (its results may then be read); it posts [`DONE`] after its
//! last chunk, even after a failure, and its reader lane stops.

use super::execute::write_batch_checked;
use super::handoff::{FullSequences, SequenceForm};
use super::{BATCH, Job, WarpShared};
use crate::block::Block;
use crate::raw::bytes;
use crate::warp::{WARP_SIZE, Warp, first_lane};
use core::marker::PhantomData;
use ferrocomp_format::Status;
use ferrocomp_format::zstd::SequenceTables;
use ferrocomp_format::zstd::sequences::{self, Cursor, RepeatOffsets, SequenceDecoder, SequencesHeader};

/// Starts a block's sequences: read its tables, decode its first batch.
pub(super) const START: u32 = 1;
/// Decodes the block's next batch.
pub(super) const NEXT: u32 = 2;
/// Nothing to do: the writer only waits for the last command's results.
pub(super) const WAIT: u32 = 3;
/// The writer has no more chunks; its reader lane stops.
pub(super) const DONE: u32 = 4;

/// What the writing warp tells the reader, and what the reader answers, in shared memory.
#[repr(C)]
pub(super) struct Mailbox {
    /// Commands posted (the writer's count, released).
    pub posted: u32,
    /// Commands carried out (the reader's count, released).
    pub served: u32,
    /// The commands posted, the n-th in slot n % 2.
    pub commands: [u32; 2],
    /// [`START`]'s block: the address of its sequences section (low word first: the mailbox
    /// keeps to 4-byte alignment) and the section's length.
    pub section: [u32; 2],
    pub section_len: u32,
    /// The section's header: sequences, modes byte and length.
    pub count: u32,
    pub modes: u32,
    pub header_len: u32,
    /// Whether the block is the first with sequences in its frame (fresh repeat offsets, no
    /// tables to repeat).
    pub first_of_frame: u32,
    /// [`START`]'s status: reading the tables and the decoder's initial states (0: success).
    pub status: u32,
    /// After the block's last batch: whether its bitstream was read exactly to its start.
    pub finished: u32,
}

/// A reader lane's state: the block's decoder and the frame's repeat offsets (where the form
/// `F` resolves them here).
struct Reader<'a, F> {
    decoder: Option<SequenceDecoder<'a>>,
    reps: RepeatOffsets,
    count: u32,
    decoded: u32,
    form: PhantomData<F>,
}

impl<F: SequenceForm> Reader<'_, F> {
    fn new() -> Self {
        Self { decoder: None, reps: RepeatOffsets::START, count: 0, decoded: 0, form: PhantomData }
    }

    /// Carries out `command` (in one lane).
    ///
    /// # Safety
    /// `shared` must be the writer's shared memory, the mailbox filled for `command` (the
    /// section readable), and no other lane reading or writing the tables, the mailbox's answers
    /// or the batch being decoded.
    #[inline(never)] // apart from the batches' loop (see `decode_batch`)
    unsafe fn serve(&mut self, shared: *mut WarpShared, command: u32) {
        let mailbox = unsafe { &mut (*shared).mailbox };
        if command == START {
            let tables = unsafe { &mut (*shared).sequences };
            if mailbox.first_of_frame != 0 {
                (self.reps, tables.repeatable) = (RepeatOffsets::START, 0);
            }
            let address = (mailbox.section[1] as u64) << 32 | mailbox.section[0] as u64;
            let section = unsafe { bytes(address as *const u8, mailbox.section_len as usize) };
            let tables_at = section.get(mailbox.header_len as usize..).unwrap_or(&[]);
            let started = sequences::read_tables(mailbox.modes as u8, tables_at, tables)
                .and_then(|used| SequenceDecoder::new(tables_at.get(used..).unwrap_or(&[]), tables));
            (self.count, self.decoded) = (mailbox.count, 0);
            (self.decoder, mailbox.status) = match started {
                Ok(decoder) => (Some(decoder), 0),
                Err(status) => (None, status as u32),
            };
        }
        if command == START || command == NEXT {
            unsafe { self.decode_batch(shared) };
        }
    }

    /// Decodes the block's next batch into its half of the double buffer. The decoder and the
    /// repeat offsets are taken out of `self` for the batch: left there, each sequence stored
    /// them back to memory, as its stores to the batch might have changed them. A function of
    /// its own, so that ptxas allocates the loop's registers apart from the tables' reading:
    /// inlined into `serve`, the states in registers made int32 offsets decode 12-17% slower
    /// (H200, 16 and 48 MiB), outlined as fast as with the states in memory, the other sets
    /// faster still.
    #[inline(never)]
    unsafe fn decode_batch(&mut self, shared: *mut WarpShared) {
        let Some(mut decoder) = self.decoder.take() else { return };
        let mut reps = self.reps;
        let len = (self.count - self.decoded).min(BATCH as u32);
        let tables = unsafe { &(*shared).sequences };
        let batch = unsafe { &mut *F::batch(&raw mut (*shared).batches, batch_half(self.decoded)) };
        let last = self.decoded + len == self.count;
        F::read(&mut decoder, tables, &mut reps, &mut batch[..len as usize], last);
        self.decoded += len;
        if last {
            unsafe { (*shared).mailbox.finished = decoder.finished() as u32 };
        }
        (self.decoder, self.reps) = (Some(decoder), reps);
    }
}

/// The half of the double buffer that holds the batch starting at sequence `first`.
fn batch_half(first: u32) -> usize {
    (first / BATCH as u32 % 2) as usize
}

/// A compressed block's sequences section, with its header, as the writing warp found it.
pub(super) struct SequencesJob<'a> {
    pub section: &'a [u8],
    pub header: SequencesHeader,
    /// Whether the block is the first with sequences in its frame.
    pub first_of_frame: bool,
}

/// The writing warp's view of its reader.
pub(super) trait Sequencer {
    /// Whether it reads a block's sequences ahead, from before its literals decode.
    const READS_AHEAD: bool;

    /// Starts reading `job`'s sequences, where it reads ahead (before the literals decode).
    ///
    /// # Safety
    /// `chunk`'s shared memory must be the block's.
    unsafe fn start<W: Warp>(&mut self, _warp: &W, _chunk: &Job, _job: &SequencesJob) {}

    /// Checks and writes `job`'s sequences (started) from `cursor`, their literals at
    /// `literals`; returns how many literals they took.
    ///
    /// # Safety
    /// As [`write_batch_checked`].
    unsafe fn run<W: Warp>(
        &mut self,
        warp: &W,
        chunk: &Job,
        job: &SequencesJob,
        literals: *const u8,
        cursor: &mut Cursor,
    ) -> Result<usize, Status>;
}

/// The writing warp's first lane reads the sequences in full, each batch before the warp writes
/// it; it keeps the frame's repeat offsets between blocks.
pub(super) struct InLane0 {
    reps: RepeatOffsets,
}

impl Default for InLane0 {
    fn default() -> Self {
        Self { reps: RepeatOffsets::START }
    }
}

impl Sequencer for InLane0 {
    const READS_AHEAD: bool = false;

    unsafe fn run<W: Warp>(
        &mut self,
        warp: &W,
        chunk: &Job,
        job: &SequencesJob,
        literals: *const u8,
        cursor: &mut Cursor,
    ) -> Result<usize, Status> {
        let tables_at = job.section.get(job.header.len..).unwrap_or(&[]);
        let tables: *mut SequenceTables = unsafe { &raw mut (*chunk.shared).sequences };
        if job.first_of_frame {
            self.reps = RepeatOffsets::START;
        }
        let used = first_lane(warp, || {
            if job.first_of_frame {
                unsafe { (*tables).repeatable = 0 };
            }
            sequences::read_tables(job.header.modes, tables_at, unsafe { &mut *tables })
        })?;
        let tables = unsafe { &*tables };
        // Every lane starts the decoder (the same bytes, the same result); lane 0 runs it.
        let mut decoder = SequenceDecoder::new(tables_at.get(used..).unwrap_or(&[]), tables)?;
        let (count, mut reps) = (job.header.count, self.reps);
        let batch = unsafe { &mut *FullSequences::batch(&raw mut (*chunk.shared).batches, 0) };
        let (mut written, mut literal_at) = (0, 0);
        while written < count {
            let len = (count - written).min(BATCH as u32);
            if warp.lane() == 0 {
                decoder.decode_resolved(tables, &mut reps, &mut batch[..len as usize], written + len == count);
            }
            warp.sync(); // the batch is visible to every lane
            let literals = unsafe { literals.add(literal_at) };
            literal_at += unsafe {
                write_batch_checked::<W, FullSequences>(warp, chunk, batch, len, &mut reps, literals, cursor)?
            };
            written += len;
        }
        self.reps = reps;
        if warp.ballot(warp.lane() == 0 && !decoder.finished()) != 0 {
            return Err(Status::Malformed); // the bitstream has bits left
        }
        Ok(literal_at)
    }
}

/// A writing warp of a team (see [`super::read_for_team`]) taking batches in the form `F`: its
/// shared memory, the commands it posted and the frame's repeat offsets (where `F` resolves them
/// here).
pub struct TeamWriter<'b, B: Block, F> {
    block: &'b B,
    /// Its share of the block's shared memory.
    pub(super) shared: *mut WarpShared,
    posted: u32,
    reps: RepeatOffsets,
    form: PhantomData<F>,
}

impl<'b, B: Block, F: SequenceForm> TeamWriter<'b, B, F> {
    /// Joins the team of `block` as the writer `warp` is (any warp but the last), with its share
    /// of the block's shared memory `shared` (16-byte aligned, [`super::DECODE_SHARED_BYTES_PER_WARP`]
    /// a writer): a barrier every warp of the block meets.
    ///
    /// # Safety
    /// As [`super::read_for_team`], which the block's last warp runs.
    pub unsafe fn new<W: Warp>(block: &'b B, warp: &W, shared: *mut u8) -> Self {
        let shared = unsafe { (shared as *mut WarpShared).add((block.thread() / WARP_SIZE) as usize) };
        if warp.lane() == 0 {
            unsafe { ((*shared).mailbox.posted, (*shared).mailbox.served) = (0, 0) };
        }
        block.sync_threads(); // the mailboxes are empty before the reader looks
        Self { block, shared, posted: 0, reps: RepeatOffsets::START, form: PhantomData }
    }

    /// Posts `command` (the mailbox's other fields written by lane 0 before) and waits until the
    /// command before it is carried out, whose results every lane may read after this.
    ///
    /// # Safety
    /// As [`TeamWriter::new`].
    pub(super) unsafe fn post<W: Warp>(&mut self, warp: &W, command: u32) {
        let mailbox = unsafe { &raw mut (*self.shared).mailbox };
        warp.sync(); // the lanes are done with the batch the reader may decode into next
        if warp.lane() == 0 {
            unsafe {
                (*mailbox).commands[self.posted as usize % 2] = command;
                self.block.store_release(&raw mut (*mailbox).posted, self.posted + 1);
            }
        }
        unsafe { self.wait_served(warp, self.posted) };
        self.posted += 1;
    }

    /// Waits until the reader has carried out the first `count` commands posted.
    ///
    /// # Safety
    /// As [`TeamWriter::new`].
    unsafe fn wait_served<W: Warp>(&self, warp: &W, count: u32) {
        let served = unsafe { &raw const (*self.shared).mailbox.served };
        self.block.wait_until(warp, || unsafe { self.block.load_acquire(served) } >= count);
    }

    /// Leaves the team after the writer's last chunk: its reader lane stops.
    ///
    /// # Safety
    /// As [`TeamWriter::new`].
    pub unsafe fn finish<W: Warp>(mut self, warp: &W) {
        unsafe { self.post(warp, DONE) }
    }
}

impl<B: Block, F: SequenceForm> Sequencer for TeamWriter<'_, B, F> {
    const READS_AHEAD: bool = true;

    unsafe fn start<W: Warp>(&mut self, warp: &W, _chunk: &Job, job: &SequencesJob) {
        if job.first_of_frame {
            self.reps = RepeatOffsets::START;
        }
        // The reader is done with the mailbox's fields: a START whose chunk failed before its
        // sequences (in its literals) may still be reading them.
        unsafe { self.wait_served(warp, self.posted) };
        if warp.lane() == 0 {
            let mailbox = unsafe { &mut (*self.shared).mailbox };
            let address = job.section.as_ptr() as u64;
            mailbox.section = [address as u32, (address >> 32) as u32];
            mailbox.section_len = job.section.len() as u32;
            (mailbox.count, mailbox.modes) = (job.header.count, job.header.modes as u32);
            (mailbox.header_len, mailbox.first_of_frame) = (job.header.len as u32, job.first_of_frame as u32);
        }
        unsafe { self.post(warp, START) };
    }

    /// Each batch, the reader goes on to the next while the warp checks and writes this one.
    unsafe fn run<W: Warp>(
        &mut self,
        warp: &W,
        chunk: &Job,
        job: &SequencesJob,
        literals: *const u8,
        cursor: &mut Cursor,
    ) -> Result<usize, Status> {
        let (shared, count) = (self.shared, job.header.count);
        let (mut written, mut literal_at) = (0, 0);
        while written < count {
            let len = (count - written).min(BATCH as u32);
            unsafe { self.post(warp, if written + len < count { NEXT } else { WAIT }) };
            if written == 0 {
                status(unsafe { (*shared).mailbox.status })?; // the tables' and the decoder's start
            }
            let batch = unsafe { &*F::batch(&raw mut (*shared).batches, batch_half(written)) };
            let literals = unsafe { literals.add(literal_at) };
            literal_at +=
                unsafe { write_batch_checked::<W, F>(warp, chunk, batch, len, &mut self.reps, literals, cursor)? };
            written += len;
        }
        if unsafe { (*shared).mailbox.finished } == 0 {
            return Err(Status::Malformed); // the bitstream has bits left
        }
        Ok(literal_at)
    }
}

/// The team's reader warp, handing batches over in the form `F`: lane i serves writer i (of `writers`, their shares of the block's
/// shared memory one after another from `shared`) until each has posted [`DONE`]. A lane carries
/// out the command its writer posted, if any; lanes that took commands together decode their
/// batches in the same instructions.
///
/// # Safety
/// `shared` must be the block's shared memory; the block is the writers' warps and this one,
/// whose threads meet the barrier of [`TeamWriter::new`] here.
pub(super) unsafe fn serve_team<B: Block, W: Warp, F: SequenceForm>(
    block: &B,
    warp: &W,
    writers: u32,
    shared: *mut WarpShared,
) {
    block.sync_threads(); // the writers emptied their mailboxes
    let lane = warp.lane();
    let mine = unsafe { shared.add(lane.min(writers - 1) as usize) };
    let mailbox = unsafe { &raw mut (*mine).mailbox };
    let mut reader = Reader::<F>::new();
    let (mut taken, mut done) = (0, lane >= writers);
    loop {
        let posted = if done { taken } else { unsafe { block.load_acquire(&raw const (*mailbox).posted) } };
        let serving = posted != taken;
        if serving {
            let command = unsafe { (*mailbox).commands[taken as usize % 2] };
            taken += 1;
            done = command == DONE;
            unsafe { reader.serve(mine, command) };
            unsafe { block.store_release(&raw mut (*mailbox).served, taken) };
        }
        if warp.ballot(!done) == 0 {
            return;
        }
        if warp.ballot(serving) == 0 {
            block.pause();
        }
    }
}

/// Where a status sits in the mailbox.
fn status(code: u32) -> Result<(), Status> {
    match Status::from_code(code) {
        Status::Success => Ok(()),
        status => Err(status),
    }
}

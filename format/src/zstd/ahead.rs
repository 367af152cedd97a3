//! A chunk's sequences decoded ahead of its blocks: the GPU's first decompression pass.
//!
//! FSE decoding is serial within a block, so the GPU runs it a lane per chunk (several chunks
//! to a warp) before a warp per chunk writes the blocks. [`decode_sequences`] walks the chunk's
//! frames and blocks as the decoder does, reads only the sequences sections, and stores every
//! sequence with its offset resolved. Where it stops short, the [`Stop`] tells the writer the
//! status to report and when: at the point the scalar decoder fails, unless the writer fails
//! there first (the pass checks a part of what the decoder checks, in the same order).

use super::SequenceTables;
use super::frame::{BlockKind, for_each_frame, read_block_header, read_literals_header};
use super::sequences::{self, RepeatOffsets, Sequence, SequenceDecoder};
use crate::Status;

/// Bits of a stored sequence's literal length (at most 131071) and match length (131074).
const LITERAL_BITS: u32 = 17;
const MATCH_BITS: u32 = 18;
/// Largest stored offset; larger ones are stored as this, which fails the same checks (the
/// frame's start and the window) in any chunk decoding to less.
pub const MAX_STORED_OFFSET: u32 = (1 << (64 - LITERAL_BITS - MATCH_BITS)) - 1;

/// Words of a chunk's slot for chunks decoding to at most `max_chunk_bytes`: the stop, then one
/// per sequence the writer may need (each writes at least 3 bytes, so the one past
/// `max_chunk_bytes / 3` fails its checks before any later one is read).
pub const fn slot_words(max_chunk_bytes: usize) -> usize {
    1 + max_chunk_bytes / 3 + 1
}

/// A sequence as stored: its literal length, match length and resolved offset in one word.
#[inline(always)]
pub fn pack(literals: u32, match_len: u32, offset: u32) -> u64 {
    literals as u64
        | (match_len as u64) << LITERAL_BITS
        | (offset.min(MAX_STORED_OFFSET) as u64) << (LITERAL_BITS + MATCH_BITS)
}

/// The literal length, match length and offset of a stored sequence.
#[inline(always)]
pub fn unpack(word: u64) -> [u32; 3] {
    let literals = word as u32 & ((1 << LITERAL_BITS) - 1);
    let match_len = (word >> LITERAL_BITS) as u32 & ((1 << MATCH_BITS) - 1);
    [literals, match_len, (word >> (LITERAL_BITS + MATCH_BITS)) as u32]
}

/// Where the pass stopped short of the chunk's end, counted in sequences from the chunk's first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// It did not: every sequence is stored.
    No,
    /// Before the sequences of the block whose first is `at` (its tables or bitstream are bad),
    /// or at a failure the writer meets first.
    Before {
        /// Index of the block's first sequence.
        at: u32,
        /// The status the writer reports there.
        status: Status,
    },
    /// After the sequences of the block whose last ends at `at` (its bitstream has bits left).
    After {
        /// Index one past the block's last sequence.
        at: u32,
        /// Why the block fails.
        status: Status,
    },
    /// At sequence `at`, which the slot has no room for: `ChunkTooLarge` (the chunk decodes to
    /// more than the scratch was sized for).
    Unstored {
        /// Index of the first sequence not stored.
        at: u32,
    },
}

impl Stop {
    /// The status of [`Stop::Unstored`].
    pub const UNSTORED_STATUS: Status = Status::ChunkTooLarge;

    /// The stop as one word (for the slot).
    pub fn to_word(self) -> u64 {
        let (kind, at, status) = match self {
            Self::No => (0, 0, Status::Success),
            Self::Before { at, status } => (1, at, status),
            Self::After { at, status } => (2, at, status),
            Self::Unstored { at } => (3, at, Self::UNSTORED_STATUS),
        };
        kind | (status as u64) << 8 | (at as u64) << 32
    }

    /// The stop a word holds.
    pub fn from_word(word: u64) -> Self {
        let (at, status) = ((word >> 32) as u32, Status::from_code((word >> 8) as u32 & 0xFF));
        match word & 3 {
            0 => Self::No,
            1 => Self::Before { at, status },
            2 => Self::After { at, status },
            _ => Self::Unstored { at },
        }
    }

    /// For the writer before the sequences of a block whose first is `first`.
    #[inline(always)]
    pub fn before(self, first: u32) -> Result<(), Status> {
        match self {
            Self::Before { at, status } if at == first => Err(status),
            _ => Ok(()),
        }
    }

    /// For the writer after the sequences of a block whose last ends at `end`.
    #[inline(always)]
    pub fn after(self, end: u32) -> Result<(), Status> {
        match self {
            Self::After { at, status } if at == end => Err(status),
            _ => Ok(()),
        }
    }

    /// How many sequences are stored, at most.
    #[inline(always)]
    pub fn stored(self) -> u32 {
        match self {
            Self::Unstored { at } => at,
            _ => u32::MAX,
        }
    }
}

/// Decodes the sequences of every block of the chunk `input` into `stored`, with `tables` to
/// build the FSE tables in (any bytes); returns where it stopped short.
pub fn decode_sequences(input: &[u8], tables: &mut SequenceTables, stored: &mut [u64]) -> Stop {
    let mut pass = Pass { stored, count: 0, stop: Stop::No };
    let walked = for_each_frame(input, |ip, op, header| {
        tables.repeatable = 0;
        pass.frame(input, ip, header.block_max(), tables).map(|ip| {
            let ip = if header.checksum { ip + 4 } else { ip };
            (ip.min(input.len()), op)
        })
    });
    match (walked, pass.stop) {
        (Err(status), Stop::No) => Stop::Before { at: pass.count, status },
        (_, stop) => stop,
    }
}

/// The pass over one chunk.
struct Pass<'a> {
    stored: &'a mut [u64],
    /// Sequences stored so far.
    count: u32,
    /// Where the pass stopped, when the writer must be told more than a status.
    stop: Stop,
}

impl Pass<'_> {
    /// Decodes the sequences of the blocks of a frame starting at input position `ip`; returns
    /// the position after its last block.
    fn frame(
        &mut self,
        input: &[u8],
        mut ip: usize,
        block_max: usize,
        tables: &mut SequenceTables,
    ) -> Result<usize, Status> {
        let mut reps = RepeatOffsets::START;
        loop {
            let block = read_block_header(input.get(ip..).unwrap_or(&[]), block_max)?;
            let content = input.get(ip + 3..ip + 3 + block.content_len()).ok_or(Status::Truncated)?;
            ip += 3 + content.len();
            if block.kind == BlockKind::Compressed {
                self.block(content, &mut reps, tables)?;
            }
            if block.last {
                return Ok(ip);
            }
        }
    }

    /// Decodes the sequences of a compressed block's `content`.
    fn block(&mut self, content: &[u8], reps: &mut RepeatOffsets, tables: &mut SequenceTables) -> Result<(), Status> {
        let literals = read_literals_header(content)?;
        let section = content.get(literals.len + literals.stored..).ok_or(Status::Malformed)?;
        let header = sequences::read_header(section)?;
        if header.count == 0 {
            return Ok(());
        }
        let tables_at = section.get(header.len..).unwrap_or(&[]);
        let stream = tables_at.get(sequences::read_tables(header.modes, tables_at, tables)?..).unwrap_or(&[]);
        let mut decoder = SequenceDecoder::new(stream, tables)?;
        let mut store = |slot: &mut u64, sequence: Sequence| {
            let offset = reps.resolve(sequence.offset_value, sequence.literals);
            *slot = pack(sequence.literals, sequence.match_len, offset);
        };
        // The block's sequences that fit the slot, the last (which moves no state) on its own.
        let slots = self.stored.get_mut(self.count as usize..).unwrap_or(&mut []);
        let fits = slots.len().min(header.count as usize);
        let last = fits == header.count as usize;
        let (body, end) = slots[..fits].split_at_mut(fits - last as usize);
        // Each sequence is stored while the next one's cells load: a GPU lane issues in order,
        // and the store's work (the repeat offsets, the packing) fills the loads' latency.
        if let Some((first, rest)) = body.split_first_mut() {
            let (mut pending, mut pending_slot) = (decoder.next(tables, false), first);
            for slot in rest {
                let cells = decoder.cells(tables);
                store(pending_slot, pending);
                (pending, pending_slot) = (decoder.next_from(cells, false), slot);
            }
            store(pending_slot, pending);
        }
        if let Some(slot) = end.first_mut() {
            store(slot, decoder.next(tables, true));
        }
        self.count += fits as u32;
        if !last {
            self.stop = Stop::Unstored { at: self.count };
            return Err(Status::ChunkTooLarge);
        }
        if !decoder.finished() {
            self.stop = Stop::After { at: self.count, status: Status::Malformed };
            return Err(Status::Malformed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_pack_to_one_word() {
        for (literals, match_len, offset) in [(0, 3, 1), (131_071, 131_074, 1 << 24), (5, 40, 0)] {
            assert_eq!(unpack(pack(literals, match_len, offset)), [literals, match_len, offset]);
        }
        assert_eq!(unpack(pack(1, 3, u32::MAX)), [1, 3, MAX_STORED_OFFSET]);
    }

    #[test]
    fn stops_round_trip_through_a_word() {
        let stops = [
            Stop::No,
            Stop::Before { at: 7, status: Status::Truncated },
            Stop::After { at: u32::MAX, status: Status::Malformed },
            Stop::Unstored { at: 12 },
        ];
        for stop in stops {
            assert_eq!(Stop::from_word(stop.to_word()), stop);
        }
        let before = Stop::Before { at: 7, status: Status::Malformed };
        assert_eq!((before.before(7), before.before(6), before.after(7)), (Err(Status::Malformed), Ok(()), Ok(())));
        assert_eq!((Stop::Unstored { at: 12 }.stored(), Stop::No.stored()), (12, u32::MAX));
    }
}

//! One block's sequences and literals, gathered from a parse ([`Collector`]), and the
//! compressed block they make ([`write_compressed_body`]): the literals section, then the
//! sequences section.

use super::huffman::HuffmanCode;
use super::literals::{histogram, write_literals};
use super::sequences::{RepeatOffsets, Sequence, SequenceTables, count_codes, sequence, write_sequences};
use crate::Status;
use crate::lz4::SequenceSink;

/// Largest block the compressor writes (so every length and offset fits 16 bits).
pub const MAX_BLOCK_SIZE: usize = 1 << 16;
/// Most sequences a block holds: every match covers at least 4 bytes.
pub const MAX_SEQUENCES: usize = MAX_BLOCK_SIZE / 4;

/// A block's literals and sequences, as a parse finds them. Any bytes are a valid starting state.
#[repr(C)]
pub struct BlockScratch {
    /// The literals, back to back.
    pub literals: [u8; MAX_BLOCK_SIZE],
    /// The sequences.
    pub sequences: [Sequence; MAX_SEQUENCES],
}

/// Where the entropy coders work. Any bytes are a valid starting state.
#[repr(C)]
pub struct EntropyScratch {
    /// Histogram of the block's literals.
    pub literal_counts: [u32; 256],
    /// The literals' Huffman code.
    pub huffman: HuffmanCode,
    /// The sequences' code tables.
    pub sequences: SequenceTables,
}

/// Gathers a parse's sequences into a [`BlockScratch`], with the offsets as zstd codes them.
pub struct Collector<'a> {
    /// Where the sequences and literals go.
    pub block: &'a mut BlockScratch,
    /// The repeat offsets after the sequences so far.
    pub repeats: RepeatOffsets,
    /// Literals gathered.
    pub literal_count: usize,
    /// Sequences gathered.
    pub sequence_count: usize,
}

impl<'a> Collector<'a> {
    /// An empty block, after sequences that left `repeats`.
    pub fn new(block: &'a mut BlockScratch, repeats: RepeatOffsets) -> Self {
        Self { block, repeats, literal_count: 0, sequence_count: 0 }
    }

    /// Appends `literals` to the literal buffer.
    fn push_literals(&mut self, literals: &[u8]) -> Result<(), Status> {
        let end = self.literal_count + literals.len();
        self.block.literals.get_mut(self.literal_count..end).ok_or(Status::ChunkTooLarge)?.copy_from_slice(literals);
        self.literal_count = end;
        Ok(())
    }
}

impl SequenceSink for Collector<'_> {
    fn sequence(&mut self, literals: &[u8], offset: usize, match_len: usize) -> Result<(), Status> {
        self.push_literals(literals)?;
        let slot = self.block.sequences.get_mut(self.sequence_count).ok_or(Status::ChunkTooLarge)?;
        *slot = sequence(&mut self.repeats, literals.len(), offset as u32, match_len);
        self.sequence_count += 1;
        Ok(())
    }

    fn last_literals(&mut self, literals: &[u8]) -> Result<(), Status> {
        self.push_literals(literals)
    }
}

/// Writes a compressed block's content (literals section, sequences section) for the first
/// `literal_count` literals and `sequence_count` sequences of `block` at the start of `out`;
/// returns its size.
pub fn write_compressed_body(
    block: &BlockScratch,
    literal_count: usize,
    sequence_count: usize,
    entropy: &mut EntropyScratch,
    out: &mut [u8],
) -> Result<usize, Status> {
    let literals = &block.literals[..literal_count];
    histogram(literals, &mut entropy.literal_counts);
    let at = write_literals(literals, &entropy.literal_counts, &mut entropy.huffman, out)?;
    let sequences = &block.sequences[..sequence_count];
    count_codes(sequences, &mut entropy.sequences);
    let len = write_sequences(sequences, &mut entropy.sequences, out.get_mut(at..).ok_or(Status::OutputTooSmall)?)?;
    Ok(at + len)
}

//! The LZ4 block format (lz4's `lz4_Block_format.md`): sequences of
//! `token | literal length+ | literals | offset (u16 LE) | match length+`, the last one literals only.
//!
//! [`parse`] is the scalar twin of the GPU's warp-cooperative match finder: it looks for
//! matches [`BATCH`] element positions at a time exactly as a warp's lanes do, so the CPU and
//! the GPU write the same bytes. [`compress`] writes its sequences as LZ4; Snappy's encoder
//! (`crate::snappy`) writes the same parse. [`decompress`] and [`decompressed_size`] check
//! every read, write and offset, and report problems as a [`Status`].

use crate::{DataType, Status};

/// Shortest match the format can express.
pub const MIN_MATCH: usize = 4;
/// Shortest match the compressor takes. A 4-byte match saves about a byte but costs a whole
/// sequence to decode. On text (bench/RESULTS.md), 4 gives ratio 2.55 with 6100 sequences per
/// 64 KiB, 5 gives 2.60 with 4700 (a better ratio: a 4-byte match often hides a longer one a
/// byte later), 6 gives 2.52 with 3800.
pub const MIN_MATCH_TAKEN: usize = 5;
/// The last bytes of a block are always literals.
pub const LAST_LITERALS: usize = 5;
/// A match may not start in the last `MATCH_FIND_LIMIT` bytes of a block.
pub const MATCH_FIND_LIMIT: usize = 12;
/// Largest distance a match can reach back.
pub const MAX_OFFSET: usize = 65535;
/// Largest chunk the batched compressor accepts, as nvCOMP's (16 MiB).
pub const MAX_CHUNK_SIZE: usize = 1 << 24;
/// Hash table entries (positions modulo 2^16), per chunk being compressed, under the default
/// [`MatchRules`].
pub const HASH_ENTRIES: usize = 1 << HASH_BITS;
const HASH_BITS: u32 = 12;
/// Positions examined together: one per lane of a warp.
pub const BATCH: usize = 32;

/// Largest compressed size of a `len`-byte chunk (incompressible data, all literals).
pub const fn max_compressed_size(len: usize) -> usize {
    len + len / 255 + 16
}

/// Largest size `compressed_len` bytes of LZ4 can decode to: a guard against lying headers.
pub const fn max_decompressed_size(compressed_len: usize) -> usize {
    // Each input byte adds at most 255 to a length; a token alone decodes to at most 19 bytes.
    compressed_len.saturating_mul(255).saturating_add(19)
}

/// The earlier position a table entry points to, seen from `position`, if it is a usable one.
/// Entries hold positions modulo 2^16, so any entry names a position within the window.
#[inline(always)]
pub fn candidate(position: usize, entry: u16) -> Option<usize> {
    let distance = (position as u16).wrapping_sub(entry) as usize;
    (distance != 0 && distance <= position).then(|| position - distance)
}

/// Shape of the matches the compressor looks for, from the element type.
#[derive(Clone, Copy, Debug)]
pub struct MatchRules {
    /// Element width: match starts, ends and offsets are multiples of it.
    pub width: usize,
    /// Bytes checked before a candidate counts as a match.
    pub min_len: usize,
    /// Bytes that must follow a match start (`n - guard` is the last start).
    pub guard: usize,
    /// Farthest a match may reach back (at most [`MAX_OFFSET`]).
    pub max_offset: usize,
    /// The hash table has `1 << table_bits` entries.
    pub table_bits: u32,
}

impl MatchRules {
    /// The rules for elements of `data_type`.
    pub const fn new(data_type: DataType) -> Self {
        let width = 1 << (data_type as u8);
        let min_len = if width > MIN_MATCH_TAKEN { width } else { MIN_MATCH_TAKEN };
        let guard = if LAST_LITERALS + min_len > MATCH_FIND_LIMIT { LAST_LITERALS + min_len } else { MATCH_FIND_LIMIT };
        Self { width, min_len, guard, max_offset: MAX_OFFSET, table_bits: HASH_BITS }
    }

    /// These rules with a hash table of `1 << table_bits` entries (at most 16 bits).
    pub const fn table_bits(self, table_bits: u32) -> Self {
        Self { table_bits, ..self }
    }

    /// Entries of the hash table.
    pub const fn table_entries(&self) -> usize {
        1 << self.table_bits
    }

    /// Hash-table slot of the four bytes `v`.
    #[inline(always)]
    pub fn slot(&self, v: u32) -> usize {
        (v.wrapping_mul(2_654_435_761) >> (32 - self.table_bits)) as usize
    }

    /// These rules for a format whose matches reach at most `max_offset` back.
    pub const fn within(self, max_offset: usize) -> Self {
        Self { max_offset, ..self }
    }

    /// Whether `c` may be the match candidate of position `p`.
    #[inline(always)]
    pub fn reaches(&self, p: usize, c: usize) -> bool {
        p - c <= self.max_offset
    }

    /// The last position that may start a match in an `n`-byte chunk, if any may.
    #[inline(always)]
    pub fn last_start(&self, n: usize) -> Option<usize> {
        n.checked_sub(self.guard)
    }
}

/// Bytes of one sequence header before its literals: token and literal-length bytes.
#[inline(always)]
pub const fn literal_header_len(literals: usize) -> usize {
    1 + if literals >= 15 { (literals - 15) / 255 + 1 } else { 0 }
}

/// Bytes after the literals of a sequence: offset and match-length bytes.
#[inline(always)]
pub const fn match_trailer_len(match_len: usize) -> usize {
    let code = match_len - MIN_MATCH;
    2 + if code >= 15 { (code - 15) / 255 + 1 } else { 0 }
}

/// Writes a token and its literal-length bytes at `out[0..]`; returns the bytes written.
/// `match_len` is 0 for the final, literals-only sequence.
#[inline(always)]
pub fn write_literal_header(out: &mut [u8], literals: usize, match_len: usize) -> usize {
    let match_code = if match_len == 0 { 0 } else { (match_len - MIN_MATCH).min(15) };
    out[0] = ((literals.min(15) << 4) | match_code) as u8;
    write_length_bytes(&mut out[1..], literals) + 1
}

/// Writes a match's offset and match-length bytes at `out[0..]`; returns the bytes written.
#[inline(always)]
pub fn write_match_trailer(out: &mut [u8], offset: usize, match_len: usize) -> usize {
    out[0] = offset as u8;
    out[1] = (offset >> 8) as u8;
    write_length_bytes(&mut out[2..], match_len - MIN_MATCH) + 2
}

/// The bytes that extend a length whose nibble is 15: runs of 255 then the remainder.
#[inline(always)]
fn write_length_bytes(out: &mut [u8], len: usize) -> usize {
    if len < 15 {
        return 0;
    }
    let mut rest = len - 15;
    let mut i = 0;
    while rest >= 255 {
        out[i] = 255;
        rest -= 255;
        i += 1;
    }
    out[i] = rest as u8;
    i + 1
}

#[inline(always)]
fn read_u32(data: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]])
}

/// Receives the sequences of a parse, in order: what [`parse`] produces and an encoder writes.
pub trait SequenceSink {
    /// `literals`, then a match of `match_len` bytes at distance `offset` (1..=[`MAX_OFFSET`]).
    fn sequence(&mut self, literals: &[u8], offset: usize, match_len: usize) -> Result<(), Status>;
    /// The literals after the last match (possibly none); called once, last.
    fn last_literals(&mut self, literals: &[u8]) -> Result<(), Status>;
}

/// Finds the matches of `input` as the GPU compressor does and hands them to `sink`; the first
/// error the sink returns stops the parse. Matches end [`LAST_LITERALS`] bytes before the end
/// and follow `rules`; `table` (at least [`MatchRules::table_entries`]) is cleared first.
pub fn parse<S: SequenceSink>(input: &[u8], rules: MatchRules, table: &mut [u16], sink: &mut S) -> Result<(), Status> {
    let table = &mut table[..rules.table_entries()];
    table.fill(0);
    let n = input.len();
    let mut anchor = 0;
    if let Some(last_start) = rules.last_start(n) {
        let mut pos = 0;
        while pos <= last_start {
            // Every lane reads its slot, then the lanes write theirs: the highest lane wins.
            let mut matches = [None; BATCH];
            let mut slots = [0usize; BATCH];
            for (lane, found) in matches.iter_mut().enumerate() {
                let p = pos + lane * rules.width;
                if p > last_start {
                    break;
                }
                slots[lane] = rules.slot(read_u32(input, p));
                *found = candidate(p, table[slots[lane]])
                    .filter(|&c| rules.reaches(p, c) && input[c..c + rules.min_len] == input[p..p + rules.min_len]);
            }
            for (lane, &slot) in slots.iter().enumerate() {
                let p = pos + lane * rules.width;
                if p > last_start {
                    break;
                }
                table[slot] = p as u16;
            }
            // Emit this batch's matches in order, each starting after the previous one ends.
            let mut cursor = pos;
            for (lane, found) in matches.iter().enumerate() {
                let p = pos + lane * rules.width;
                let Some(c) = *found else { continue };
                if p < cursor {
                    continue;
                }
                let forward = common_forward(input, p, c, n - LAST_LITERALS);
                let len = forward - forward % rules.width;
                let back = common_backward(input, p, c, anchor);
                let back = back - back % rules.width;
                sink.sequence(&input[anchor..p - back], p - c, len + back)?;
                cursor = p + len;
                anchor = cursor;
            }
            pos = cursor.max(pos + BATCH * rules.width);
        }
    }
    sink.last_literals(&input[anchor..])
}

/// Compresses `input` into one LZ4 block in `out`; returns the compressed size, or
/// `Status::OutputTooSmall` if `out` is shorter than what is needed
/// (it never is at [`max_compressed_size`]).
pub fn compress(
    input: &[u8],
    data_type: DataType,
    table: &mut [u16; HASH_ENTRIES],
    out: &mut [u8],
) -> Result<usize, Status> {
    if input.len() > MAX_CHUNK_SIZE {
        return Err(Status::ChunkTooLarge);
    }
    let mut writer = Writer { out, len: 0 };
    parse(input, MatchRules::new(data_type), table, &mut writer)?;
    Ok(writer.len)
}

/// Length of the common run of `data[p..]` and `data[c..]`, not reaching `end`.
fn common_forward(data: &[u8], p: usize, c: usize, end: usize) -> usize {
    let mut len = 0;
    while p + len < end && data[p + len] == data[c + len] {
        len += 1;
    }
    len
}

/// Length of the common run ending before `p` and `c`, not reaching before `anchor` or 0.
fn common_backward(data: &[u8], p: usize, c: usize, anchor: usize) -> usize {
    let limit = (p - anchor).min(c);
    let mut len = 0;
    while len < limit && data[p - 1 - len] == data[c - 1 - len] {
        len += 1;
    }
    len
}

/// Appends sequences to an output slice, checking its end.
struct Writer<'a> {
    out: &'a mut [u8],
    len: usize,
}

impl SequenceSink for Writer<'_> {
    fn sequence(&mut self, literals: &[u8], offset: usize, match_len: usize) -> Result<(), Status> {
        let header = literal_header_len(literals.len());
        let need = header + literals.len() + match_trailer_len(match_len);
        let out = self.out.get_mut(self.len..self.len + need).ok_or(Status::OutputTooSmall)?;
        write_literal_header(out, literals.len(), match_len);
        out[header..header + literals.len()].copy_from_slice(literals);
        write_match_trailer(&mut out[header + literals.len()..], offset, match_len);
        self.len += need;
        Ok(())
    }

    fn last_literals(&mut self, literals: &[u8]) -> Result<(), Status> {
        let header = literal_header_len(literals.len());
        let need = header + literals.len();
        let out = self.out.get_mut(self.len..self.len + need).ok_or(Status::OutputTooSmall)?;
        write_literal_header(out, literals.len(), 0);
        out[header..].copy_from_slice(literals);
        self.len += need;
        Ok(())
    }
}

/// One decoded sequence header, as [`Reader::next_sequence`] yields it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sequence {
    /// Where the literals start in the compressed block.
    pub literals_at: usize,
    /// Number of literal bytes.
    pub literals: usize,
    /// Match offset and length; `None` for the final literals-only sequence.
    pub matched: Option<(usize, usize)>,
}

/// Walks the sequences of a block, checking that every field lies inside it; it does not
/// know the output, so offsets are checked by the caller.
pub struct Reader<'a> {
    block: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `block`.
    pub fn new(block: &'a [u8]) -> Self {
        Self { block, at: 0 }
    }

    /// The next sequence; `Ok(None)` once the block is consumed.
    #[inline(always)]
    pub fn next_sequence(&mut self) -> Result<Option<Sequence>, Status> {
        if self.at == self.block.len() {
            return Ok(None);
        }
        let token = self.byte()? as usize;
        let literals = self.length(token >> 4)?;
        let literals_at = self.at;
        if literals > self.block.len() - self.at {
            return Err(Status::Truncated);
        }
        self.at += literals;
        if self.at == self.block.len() {
            return Ok(Some(Sequence { literals_at, literals, matched: None }));
        }
        let offset = self.byte()? as usize | (self.byte()? as usize) << 8;
        let match_len = self.length(token & 15)? + MIN_MATCH;
        Ok(Some(Sequence { literals_at, literals, matched: Some((offset, match_len)) }))
    }

    #[inline(always)]
    fn byte(&mut self) -> Result<u8, Status> {
        let b = *self.block.get(self.at).ok_or(Status::Truncated)?;
        self.at += 1;
        Ok(b)
    }

    #[inline(always)]
    fn length(&mut self, nibble: usize) -> Result<usize, Status> {
        let mut len = nibble;
        if nibble == 15 {
            loop {
                let b = self.byte()?;
                len += b as usize;
                if b != 255 {
                    break;
                }
            }
        }
        Ok(len)
    }
}

/// Decompresses one LZ4 block into `out`; returns the decompressed size.
pub fn decompress(block: &[u8], out: &mut [u8]) -> Result<usize, Status> {
    let mut reader = Reader::new(block);
    let mut written = 0;
    let mut ended = false;
    while let Some(seq) = reader.next_sequence()? {
        let lit_end = written + seq.literals;
        if lit_end > out.len() {
            return Err(Status::OutputTooSmall);
        }
        out[written..lit_end].copy_from_slice(&block[seq.literals_at..seq.literals_at + seq.literals]);
        written = lit_end;
        let Some((offset, len)) = seq.matched else {
            ended = true;
            break;
        };
        if offset == 0 || offset > written {
            return Err(Status::BadOffset);
        }
        if len > out.len() - written {
            return Err(Status::OutputTooSmall);
        }
        for i in written..written + len {
            out[i] = out[i - offset];
        }
        written += len;
    }
    if ended { Ok(written) } else { Err(Status::Truncated) }
}

/// The size `block` decompresses to, found by walking its sequences without writing.
pub fn decompressed_size(block: &[u8]) -> Result<usize, Status> {
    let mut reader = Reader::new(block);
    let mut size = 0usize;
    while let Some(seq) = reader.next_sequence()? {
        size += seq.literals;
        let Some((offset, len)) = seq.matched else {
            return Ok(size);
        };
        if offset == 0 || offset > size {
            return Err(Status::BadOffset);
        }
        size += len;
    }
    Err(Status::Truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(input: &[u8], data_type: DataType) -> usize {
        let mut table = [0u16; HASH_ENTRIES];
        let mut out = [0u8; 4096];
        let n = compress(input, data_type, &mut table, &mut out[..max_compressed_size(input.len())]).unwrap();
        let mut back = [0u8; 2048];
        assert_eq!(decompressed_size(&out[..n]), Ok(input.len()));
        assert_eq!(decompress(&out[..n], &mut back[..input.len()]), Ok(input.len()));
        assert_eq!(&back[..input.len()], input);
        n
    }

    #[test]
    fn empty_block_is_one_zero_token() {
        let mut table = [0u16; HASH_ENTRIES];
        let mut out = [0xAAu8; 16];
        assert_eq!(compress(&[], DataType::Char, &mut table, &mut out), Ok(1));
        assert_eq!(out[0], 0);
        assert_eq!(decompress(&out[..1], &mut []), Ok(0));
    }

    #[test]
    fn repetitive_input_shrinks_and_round_trips() {
        let input: [u8; 2000] = core::array::from_fn(|i| b"abcdefgh"[i % 8]);
        for data_type in [DataType::Char, DataType::Short, DataType::Int, DataType::LongLong] {
            assert!(roundtrip(&input, data_type) < 100, "{data_type:?}");
        }
    }

    #[test]
    fn long_literal_and_match_lengths_encode_exactly() {
        let mut header = [0u8; 8];
        assert_eq!(write_literal_header(&mut header, 15 + 255 + 3, 0), 3);
        assert_eq!(header[..3], [0xF0, 255, 3]);
        let mut trailer = [0u8; 8];
        assert_eq!(write_match_trailer(&mut trailer, 0x1234, 4 + 15 + 254), 3);
        assert_eq!(trailer[..3], [0x34, 0x12, 254]);
    }

    #[test]
    fn malformed_blocks_give_statuses() {
        let mut out = [0u8; 64];
        assert_eq!(decompress(&[], &mut out), Err(Status::Truncated));
        assert_eq!(decompress(&[0x30, b'a'], &mut out), Err(Status::Truncated));
        // One literal, then a match at offset 2 before one byte of output.
        assert_eq!(decompress(&[0x10, b'a', 2, 0, 0x00], &mut out), Err(Status::BadOffset));
        assert_eq!(decompress(&[0x10, b'a', 0, 0, 0x00], &mut out), Err(Status::BadOffset));
        assert_eq!(decompress(&[0x20, b'a', b'b'], &mut out[..1]), Err(Status::OutputTooSmall));
        assert_eq!(decompress(&[0xF0, 255, 255], &mut out), Err(Status::Truncated));
        assert_eq!(decompressed_size(&[0x10, b'a', 1, 0, 0x00]), Ok(5));
    }
}

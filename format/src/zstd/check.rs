//! The frame checker: what libzstd checks less than [`decompress`](super::decompress) does, for
//! the host to check before it hands a frame to libzstd. Every Huffman tree is read, and every
//! Huffman-coded literals section decoded again, its symbols dropped, to check that its streams
//! end with their last symbols.

use super::decode::huffman_streams;
use super::frame::{BlockKind, FrameHeader, LiteralsKind, read_block_header, read_literals_header};
use super::huffman::{self, HUFFMAN_CELLS};
use super::tables::MAX_HUFFMAN_BITS;
use super::{DecodeTables, HuffmanTables};
use crate::Status;

/// Walks the blocks of the frame with `header`, from input position `ip` (after the header),
/// checking every Huffman tree and every Huffman-coded literals section. Returns where the frame
/// ends.
pub fn check_blocks(
    input: &[u8],
    mut ip: usize,
    header: &FrameHeader,
    tables: &mut DecodeTables,
) -> Result<usize, Status> {
    tables.start_frame();
    loop {
        let block = read_block_header(input.get(ip..).unwrap_or(&[]), header.block_max())?;
        let content = input.get(ip + 3..ip + 3 + block.content_len()).ok_or(Status::Truncated)?;
        ip += 3 + content.len();
        if block.kind == BlockKind::Compressed {
            check_literals(content, tables)?;
        }
        if block.last {
            return Ok(ip + 4 * header.checksum as usize);
        }
    }
}

/// Checks the Huffman-coded literals at the start of the compressed block `content` as the
/// scalar decoder reads them: the tree (or the frame's last one, for treeless literals), then
/// the streams ([`check_streams`]). Raw and RLE literals need no check.
fn check_literals(content: &[u8], tables: &mut DecodeTables) -> Result<(), Status> {
    let header = read_literals_header(content)?;
    let section = content.get(header.len..header.len + header.stored).ok_or(Status::Malformed)?;
    let streams = match header.kind {
        LiteralsKind::Raw | LiteralsKind::Rle => return Ok(()),
        LiteralsKind::Compressed | LiteralsKind::Treeless => huffman_streams(header.kind, section, tables)?,
    };
    check_huffman(streams, header.four_streams, header.regenerated, &tables.literals)
}

/// Checks Huffman-coded literals as [`huffman::decode_literals`] decodes them into
/// `regenerated` bytes, without keeping them: `Malformed` where it fails (with whatever status).
fn check_huffman(
    streams: &[u8],
    four_streams: bool,
    regenerated: usize,
    literals: &HuffmanTables,
) -> Result<(), Status> {
    let log = u32::from(literals.log).clamp(1, MAX_HUFFMAN_BITS);
    let fits = if four_streams {
        // As `huffman::decode_literals` splits them.
        let (sizes, segment) = huffman::split_streams(streams, regenerated)?;
        let mut rest = streams.get(6..).unwrap_or(&[]);
        let symbols = [segment, segment, segment, regenerated - 3 * segment];
        let mut four = [0, 1, 2, 3].map(|_| None);
        for (stream, (size, symbols)) in four.iter_mut().zip(sizes.into_iter().zip(symbols)) {
            let (bytes, after) = rest.split_at_checked(size).ok_or(Status::Malformed)?;
            (*stream, rest) = (HuffmanStream::new(bytes, symbols), after);
        }
        match four {
            [Some(a), Some(b), Some(c), Some(d)] => check_streams([a, b, c, d], &literals.cells, log),
            _ => false,
        }
    } else {
        HuffmanStream::new(streams, regenerated).is_some_and(|stream| check_streams([stream], &literals.cells, log))
    };
    if fits { Ok(()) } else { Err(Status::Malformed) }
}

/// Bits a load of the 8 bytes below a stream position holds of the stream at least, where that
/// position is at least this many bits from the stream's start.
const LOAD_BITS: isize = 57;

/// One Huffman stream of literals, read only to check it, as [`huffman::decode_stream`] reads it:
/// from below its end marker towards its start, the next `log` bits indexing the decode table
/// (bits past the start reading as zeros) and the cell's code length consumed, symbol after
/// symbol; the stream passes if its bits end exactly with its last symbol. `decode_stream`'s
/// refills always hold the bits a symbol peeks at, so what it reads is exactly that.
struct HuffmanStream<'a> {
    bytes: &'a [u8],
    /// Bits left to read: below zero once more were read than the stream holds.
    bits: isize,
    /// Symbols left to decode.
    symbols: usize,
}

impl<'a> HuffmanStream<'a> {
    /// The stream of `bytes`, holding `symbols` symbols; `None` without an end marker (empty, or
    /// a last byte of 0), as `decode_stream` refuses it.
    fn new(bytes: &'a [u8], symbols: usize) -> Option<Self> {
        let last = *bytes.last().filter(|&&byte| byte != 0)?;
        Some(Self { bytes, bits: (8 * bytes.len() - 1 - last.leading_zeros() as usize) as isize, symbols })
    }

    /// Whether four symbols are left and one load holds their bits (at most 4 × 11 of its 57).
    fn can_take_four(&self) -> bool {
        self.bits >= LOAD_BITS && self.symbols >= 4
    }

    /// The 8 bytes below the next bit to read (which needs [`LOAD_BITS`] left), shifted so that
    /// bit is the top one.
    fn load(&self) -> u64 {
        let bits = self.bits as usize;
        // The bytes end at or below the stream's last (`bits` is below its end marker).
        let at = (bits - LOAD_BITS as usize) / 8;
        let mut word = [0; 8];
        word.copy_from_slice(&self.bytes[at..at + 8]);
        u64::from_le_bytes(word) << (64 - (bits - 8 * at))
    }

    /// Decodes four symbols from one load.
    fn take_four(&mut self, cells: &[u16; HUFFMAN_CELLS], log: u32) {
        let mut window = self.load();
        for _ in 0..4 {
            let len = cells[(window >> (64 - log)) as usize & (HUFFMAN_CELLS - 1)] >> 8;
            window <<= len;
            self.bits -= len as isize;
        }
        self.symbols -= 4;
    }

    /// Decodes one symbol, the stream's start near or passed.
    fn take_one(&mut self, cells: &[u16; HUFFMAN_CELLS], log: u32) {
        let next = if self.bits >= LOAD_BITS {
            self.load() >> (64 - log)
        } else {
            let mut first = [0; 8];
            let held = self.bytes.len().min(8);
            first[..held].copy_from_slice(&self.bytes[..held]);
            let (first, bits) = (u64::from_le_bytes(first), self.bits.max(0) as u32);
            if bits >= log { first >> (bits - log) } else { first << (log - bits) }
        };
        self.bits -= (cells[next as usize & ((1 << log) - 1)] >> 8) as isize;
        self.symbols -= 1;
    }
}

/// Whether each of `streams` holds its symbols' codes and nothing more, in the table `cells` of
/// log `log`. The streams take turns four symbols at a time, so that their chains of decoding
/// overlap, then each finishes on its own.
fn check_streams<const N: usize>(mut streams: [HuffmanStream<'_>; N], cells: &[u16; HUFFMAN_CELLS], log: u32) -> bool {
    while streams.iter().all(HuffmanStream::can_take_four) {
        for stream in &mut streams {
            stream.take_four(cells, log);
        }
    }
    for stream in &mut streams {
        while stream.symbols > 0 {
            if stream.can_take_four() { stream.take_four(cells, log) } else { stream.take_one(cells, log) }
        }
    }
    streams.iter().all(|stream| stream.bits == 0)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::boxed::Box;
    use std::vec;
    use std::vec::Vec;

    /// A pseudo-random sequence (xorshift64).
    fn random(seed: u64) -> impl FnMut() -> u64 {
        let mut state = seed | 1;
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// A Huffman stream of `symbols` in the code of `literals`, with `extra` random bits after
    /// them (or, below 0, that many of their last bits missing).
    fn stream(literals: &HuffmanTables, symbols: &[u8], extra: isize, next: &mut impl FnMut() -> u64) -> Vec<u8> {
        let log = u32::from(literals.log);
        let mut codes = [(0, 0); 256];
        for index in (0..1usize << log).rev() {
            let cell = literals.cells[index];
            let len = u32::from(cell >> 8);
            codes[usize::from(cell & 255)] = (index >> (log - len), len);
        }
        // The bits in reading order, first read first.
        let mut bits: Vec<bool> = symbols
            .iter()
            .flat_map(|&symbol| {
                let (code, len) = codes[usize::from(symbol)];
                (0..len).rev().map(move |bit| code >> bit & 1 == 1)
            })
            .collect();
        bits.resize_with((bits.len() as isize + extra).max(0) as usize, || next() & 1 == 1);
        let mut bytes = vec![0u8; (bits.len() + 1).div_ceil(8)];
        for (i, bit) in (0..=bits.len()).rev().zip([true].into_iter().chain(bits)) {
            bytes[i / 8] |= (bit as u8) << (i % 8);
        }
        bytes
    }

    #[test]
    fn huffman_checks_agree_with_the_decoder() {
        let mut next = random(7);
        let mut tables: Box<DecodeTables> = unsafe { Box::new_zeroed().assume_init() };
        let (mut codes, mut accepted) = (0, 0);
        let mut out = vec![0; 1024];
        while codes < 300 {
            // Weights listed directly, some symbols absent.
            let listed = 2 + next() as usize % 100;
            let mut description = vec![127 + listed as u8];
            description.extend(
                (0..listed.div_ceil(2)).map(|_| if next().is_multiple_of(3) { 0 } else { next() as u8 % 0xBC }),
            );
            if huffman::read_table(&description, &mut tables.literals).is_err() {
                continue;
            }
            codes += 1;
            let literals = &tables.literals;
            let present: Vec<u8> = (0..1 << literals.log).map(|index| literals.cells[index] as u8).collect();
            for _ in 0..100 {
                let four = next().is_multiple_of(2);
                let regenerated = 6 * four as usize + next() as usize % 400;
                let symbols: Vec<u8> = (0..regenerated).map(|_| present[next() as usize % present.len()]).collect();
                // Per stream: exact, bits to spare, or bits missing.
                let extras: Vec<isize> = (0..4)
                    .map(|_| [0, 0, 1 + next() as isize % 9, -1 - next() as isize % 9][next() as usize % 4])
                    .collect();
                let mut streams = if four {
                    let segment = regenerated.div_ceil(4);
                    let part =
                        |i: usize| &symbols[(i * segment).min(regenerated)..((i + 1) * segment).min(regenerated)];
                    let parts: Vec<Vec<u8>> = (0..4).map(|i| stream(literals, part(i), extras[i], &mut next)).collect();
                    let jump = parts[..3].iter().flat_map(|part| (part.len() as u16).to_le_bytes());
                    jump.chain(parts.concat()).collect()
                } else {
                    stream(literals, &symbols, extras[0], &mut next)
                };
                if next().is_multiple_of(4) {
                    let at = next() as usize % streams.len();
                    streams[at] ^= 1 << (next() % 8);
                }
                let decoded = huffman::decode_literals(&streams, four, literals, &mut out[..regenerated]).is_ok();
                assert_eq!(check_huffman(&streams, four, regenerated, literals).is_ok(), decoded);
                accepted += decoded as usize;
            }
        }
        assert!(accepted > 5000, "{accepted} of 30000 accepted");
    }
}

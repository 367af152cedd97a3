//! Huffman codes for literals (RFC 8878 §4.2): code lengths of at most 11 bits from a histogram,
//! Zstandard's code assignment (longest codes take the smallest values), the tree description
//! (4-bit weights, or weights compressed with FSE), and one stream encoded at a time, so four
//! GPU lanes can write the four streams of a block at once.

use super::bits::BitWriter;
use super::fse::{self, FseTable, MAX_WEIGHT_SYMBOLS};
use crate::Status;
use crate::deflate::huffman::{LengthWork, build_lengths};
use crate::zstd::tables::{MAX_HUFFMAN_BITS, MAX_WEIGHT_LOG};

/// Most weights a direct (4 bits each) description holds.
const MAX_DIRECT_WEIGHTS: usize = 128;
/// Largest FSE-compressed description body (its size must fit the header byte, below 128).
const MAX_FSE_DESCRIPTION: usize = 127;

/// A literal alphabet's Huffman code and the work space that builds it. Any bytes are a valid
/// starting state: [`HuffmanCode::build`] sets every field it later reads.
#[repr(C)]
pub struct HuffmanCode {
    /// Code length of each byte value (0: unused).
    pub lens: [u8; 256],
    /// Codeword of each byte value, written as a `lens`-bit number.
    pub codes: [u16; 256],
    /// Longest code length (the table log).
    pub max_bits: u32,
    /// Highest byte value in use: its weight is implied by the others'.
    pub last_symbol: u32,
    work: LengthWork,
    weights: WeightScratch,
}

/// Work space for compressing the weights with FSE.
#[repr(C)]
struct WeightScratch {
    weights: [u8; 256],
    counts: [u32; MAX_WEIGHT_SYMBOLS],
    normalized: [i16; MAX_WEIGHT_SYMBOLS],
    table: FseTable<{ 1 << MAX_WEIGHT_LOG }, MAX_WEIGHT_SYMBOLS>,
}

impl HuffmanCode {
    /// Builds the code for a histogram of byte values; `false` if fewer than two are used (a
    /// Huffman code needs two symbols).
    pub fn build(&mut self, counts: &[u32; 256]) -> bool {
        if counts.iter().filter(|&&c| c != 0).count() < 2 {
            return false;
        }
        build_lengths(counts, MAX_HUFFMAN_BITS, &mut self.lens, &mut self.work);
        self.max_bits = self.lens.iter().copied().max().unwrap_or(0) as u32;
        self.last_symbol = self.lens.iter().rposition(|&len| len != 0).unwrap_or(0) as u32;
        // Codes go out by weight (longest codes first), then by byte value: each weight-`w`
        // code spans 2^(w-1) slots of the table of 2^max_bits.
        let mut start = [0u32; MAX_HUFFMAN_BITS as usize + 2];
        for &len in &self.lens {
            if len != 0 {
                let weight = self.max_bits + 1 - len as u32;
                start[weight as usize + 1] += 1 << (weight - 1);
            }
        }
        for weight in 1..start.len() {
            start[weight] += start[weight - 1];
        }
        for (len, code) in self.lens.iter().zip(self.codes.iter_mut()) {
            *code = 0;
            if *len != 0 {
                let weight = self.max_bits + 1 - *len as u32;
                *code = (start[weight as usize] >> (weight - 1)) as u16;
                start[weight as usize] += 1 << (weight - 1);
            }
        }
        true
    }

    /// The weight of byte value `symbol` (0 when unused).
    #[inline(always)]
    fn weight(&self, symbol: usize) -> u8 {
        let len = self.lens[symbol];
        if len == 0 { 0 } else { (self.max_bits + 1 - len as u32) as u8 }
    }

    /// Writes the tree description (header byte and weights of byte values below
    /// [`HuffmanCode::last_symbol`]) at the start of `out`, FSE-compressed when that is smaller
    /// or there are too many weights to write directly; returns its size, or `None` if it can be
    /// written neither way (the literals then go raw) or `out` is too small.
    pub fn write_description(&mut self, out: &mut [u8]) -> Option<usize> {
        let n = self.last_symbol as usize;
        let direct = (n <= MAX_DIRECT_WEIGHTS).then_some(1 + n.div_ceil(2));
        let compressed = self.write_compressed_weights(out);
        match (direct, compressed) {
            (Some(direct), Some(compressed)) if compressed < direct => Some(compressed),
            (Some(direct), _) => {
                let out = out.get_mut(..direct)?;
                out[0] = (127 + n) as u8;
                for (i, byte) in out[1..].iter_mut().enumerate() {
                    let second = if 2 * i + 1 < n { self.weight(2 * i + 1) } else { 0 };
                    *byte = self.weight(2 * i) << 4 | second;
                }
                Some(direct)
            }
            (None, compressed) => compressed,
        }
    }

    /// The weights compressed with FSE after a header byte, written at the start of `out`:
    /// the description's size, or `None` if FSE cannot describe them (one weight value only)
    /// or the body exceeds 127 bytes.
    fn write_compressed_weights(&mut self, out: &mut [u8]) -> Option<usize> {
        let n = self.last_symbol as usize;
        let w = &mut self.weights;
        w.counts.fill(0);
        for symbol in 0..n {
            let len = self.lens[symbol];
            let weight = if len == 0 { 0 } else { (self.max_bits + 1 - len as u32) as u8 };
            w.weights[symbol] = weight;
            w.counts[weight as usize] += 1;
        }
        if n < 2 || w.counts.iter().filter(|&&c| c != 0).count() < 2 {
            return None;
        }
        let log = fse::table_log(n as u32, MAX_WEIGHT_SYMBOLS as u32 - 1, MAX_WEIGHT_LOG);
        fse::normalize(&w.counts, n as u32, log, &mut w.normalized);
        let body = out.get_mut(1..1 + MAX_FSE_DESCRIPTION)?;
        let head = fse::write_description(&w.normalized, log, body).ok()?;
        w.table.build(&w.normalized, log);
        let stream = w.table.encode_interleaved(&w.weights[..n], &mut body[head..]).ok()?;
        out[0] = (head + stream) as u8;
        Some(1 + head + stream)
    }

    /// Bits the codes of `literals` take (without the stream's end marker).
    #[inline(always)]
    pub fn stream_bits(&self, literals: &[u8]) -> u32 {
        literals.iter().map(|&b| self.lens[b as usize] as u32).sum()
    }

    /// Encodes `literals` as one stream at the start of `out` (read backward, so the last
    /// literal goes first); returns its size, `stream_len` of its [`HuffmanCode::stream_bits`].
    pub fn encode_stream(&self, literals: &[u8], out: &mut [u8]) -> Result<usize, Status> {
        let mut w = BitWriter::new(out);
        for &b in literals.iter().rev() {
            w.add(self.codes[b as usize] as u32, self.lens[b as usize] as u32);
        }
        w.finish_backward()
    }
}

/// Bytes a stream of `bits` bits takes, its end marker included.
#[inline(always)]
pub const fn stream_len(bits: u32) -> usize {
    bits as usize / 8 + 1
}

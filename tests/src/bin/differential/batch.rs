//! Batches of chunks mutated from seeds, drawn from a seeded generator, each laid out with an output room and a
//! guard gap after it; and a chunk's outcome, with errors reduced to what both sides must agree on.

use crate::seeds::Seeds;
use ferrocomp::{ChunkListCodec, Error, Status};
use ferrocomp_tests::random_u64s;
use std::ops::Range;

/// Largest output room given for a size the CPU reports (declared sizes may be huge).
const MAX_ROOM: usize = 1 << 20;

/// Bytes after every output room that no decoder may write.
const GUARD: usize = 64;

/// A deterministic pseudo-random source.
pub struct Rng(Box<dyn FnMut() -> u64>);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(Box::new(random_u64s(seed)))
    }

    /// A number below `n` (0 for `n` = 0).
    fn below(&mut self, n: usize) -> usize {
        ((self.0)() >> 11) as usize % n.max(1)
    }

    fn byte(&mut self) -> u8 {
        ((self.0)() >> 32) as u8
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }
}

/// The seed of batch `batch` of `decoder` in the run of `seed` (FNV-1a, stable across builds).
pub fn batch_seed(seed: u64, decoder: &str, batch: usize) -> u64 {
    let bytes = seed.to_le_bytes().into_iter().chain(decoder.bytes()).chain((batch as u64).to_le_bytes());
    bytes.fold(0xcbf2_9ce4_8422_2325, |hash, byte| (hash ^ byte as u64).wrapping_mul(0x100_0000_01b3))
}

/// Applies one to three mutations to `chunk`, splicing with `seeds`.
fn mutate(chunk: &mut Vec<u8>, seeds: &[Vec<u8>], rng: &mut Rng) {
    for _ in 0..1 + rng.below(3) {
        let len = chunk.len();
        // An empty chunk can only grow.
        match if len == 0 { 5 } else { rng.below(9) } {
            0 => (0..1 + rng.below(8)).for_each(|_| chunk[rng.below(len)] ^= 1 << rng.below(8)),
            1 => (0..1 + rng.below(8)).for_each(|_| chunk[rng.below(len)] = rng.byte()),
            // An interesting value, often among the header's declared sizes.
            2 | 3 => {
                let at = if rng.below(2) == 0 { rng.below(len.min(32)) } else { rng.below(len) };
                let value = interesting(rng);
                let n = value.len().min(len - at);
                chunk[at..at + n].copy_from_slice(&value[..n]);
            }
            4 => chunk.truncate(if rng.below(4) == 0 { rng.below(2) } else { rng.below(len + 1) }),
            5 => {
                let n = 1 + rng.below(64);
                chunk.extend(rng.bytes(n));
            }
            // Splice: a prefix of this chunk and a suffix of a seed.
            6 => {
                let other = &seeds[rng.below(seeds.len())];
                chunk.truncate(rng.below(len + 1));
                chunk.extend_from_slice(&other[rng.below(other.len() + 1)..]);
            }
            // Duplicate a range to a random place, or delete it.
            _ => {
                let start = rng.below(len);
                let range = start..start + 1 + rng.below((len - start).min(256));
                if rng.below(2) == 0 {
                    let copy = chunk[range].to_vec();
                    let at = rng.below(len + 1);
                    chunk.splice(at..at, copy);
                } else {
                    chunk.drain(range);
                }
            }
        }
    }
}

/// A little-endian integer of 1, 2, 4 or 8 bytes at an extreme or a small value.
fn interesting(rng: &mut Rng) -> Vec<u8> {
    let width = [1, 2, 4, 8][rng.below(4)];
    let max = u64::MAX >> (64 - 8 * width);
    let value = match rng.below(6) {
        0 => 0,
        1 => max,
        2 => max >> 1,
        3 => (max >> 1) + 1,
        4 => 1 + rng.below(64) as u64,
        _ => max - rng.below(16) as u64,
    };
    value.to_le_bytes()[..width].to_vec()
}

/// The size prefix of a chunk whose block decodes to `size` (if it does): that size, or for
/// three in ten mutated chunks a lie.
fn size_prefix(size: Option<usize>, good: bool, rng: &mut Rng) -> u64 {
    let size = size.unwrap_or_else(|| rng.below(1 << 16)) as u64;
    if good || rng.below(10) < 7 {
        return size;
    }
    [0, size.wrapping_add(1), size.wrapping_sub(1), 1 << 40, u64::MAX][rng.below(5)]
}

/// The output room of a chunk whose CPU size result is `size`: a good chunk's size or more; a
/// mutated chunk's (at most [`MAX_ROOM`]) exactly, too small by 1 to 16 bytes, or larger; a few
/// KiB or nothing where the size is an error.
fn room(size: &Outcome, good: bool, rng: &mut Rng) -> usize {
    match *size {
        Outcome::Ok(n) if good => n + [0, 1 + rng.below(64)][rng.below(2)],
        Outcome::Ok(n) => {
            let n = n.min(MAX_ROOM);
            [n, n.saturating_sub(1 + rng.below(16)), n + 1 + rng.below(4096)][rng.below(3)]
        }
        _ => [0, rng.below(4096)][rng.below(2)],
    }
}

/// A chunk's result, with errors reduced to what both sides must agree on.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Ok(usize),
    Refused { chunk: usize, status: Status },
    SizeMismatch { chunk: usize, expected: usize, actual: usize },
    Other(String),
}

impl From<ferrocomp::Result<usize>> for Outcome {
    fn from(result: ferrocomp::Result<usize>) -> Self {
        match result {
            Ok(n) => Self::Ok(n),
            Err(Error::Chunk { chunk, status }) => Self::Refused { chunk, status },
            Err(Error::ChunkSize { chunk, expected, actual }) => Self::SizeMismatch { chunk, expected, actual },
            Err(other) => Self::Other(other.to_string()),
        }
    }
}

/// One batch: inputs back to back at random small offsets in one buffer, and output rooms each
/// followed by a guard gap in another.
pub struct Batch {
    pub inputs: Vec<u8>,
    pub input_at: Vec<Range<usize>>,
    /// Where each chunk's output room is in the output buffer.
    pub rooms: Vec<Range<usize>>,
    pub output_len: usize,
    /// Whether each chunk is an unmutated seed.
    pub good: Vec<bool>,
    /// The CPU's size result for each chunk.
    pub sizes: Vec<Outcome>,
}

impl Batch {
    /// `count` chunks for `codec`, a tenth of them unmutated seeds; `raw` finds the true sizes
    /// the prefixes of a `WithUncompressedSize` codec state (or lie about).
    pub fn new(codec: &ChunkListCodec, raw: &ChunkListCodec, seeds: &Seeds, count: usize, rng: &mut Rng) -> Self {
        let (mut chunks, mut good) = (Vec::with_capacity(count), Vec::with_capacity(count));
        for _ in 0..count {
            let is_good = !seeds.good.is_empty() && rng.below(10) == 0;
            let chunk = if is_good {
                seeds.good[rng.below(seeds.good.len())].clone()
            } else {
                let mut chunk = seeds.all[rng.below(seeds.all.len())].clone();
                mutate(&mut chunk, &seeds.all, rng);
                chunk
            };
            chunks.push(chunk);
            good.push(is_good);
        }
        if codec.prefix_len() > 0 {
            let blocks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
            let sizes = raw.decompressed_sizes_cpu(&blocks);
            for ((chunk, size), &good) in chunks.iter_mut().zip(sizes).zip(&good) {
                chunk.splice(0..0, size_prefix(size.ok(), good, rng).to_le_bytes());
            }
        }
        let slices: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
        let sizes: Vec<Outcome> = codec.decompressed_sizes_cpu(&slices).into_iter().map(Outcome::from).collect();
        let (mut inputs, mut input_at) = (Vec::new(), Vec::with_capacity(count));
        for chunk in &chunks {
            let lead = rng.below(16);
            inputs.extend(rng.bytes(lead));
            input_at.push(inputs.len()..inputs.len() + chunk.len());
            inputs.extend_from_slice(chunk);
        }
        let (mut rooms, mut output_len) = (Vec::with_capacity(count), 0);
        for (size, &good) in sizes.iter().zip(&good) {
            let room = room(size, good, rng);
            rooms.push(output_len..output_len + room);
            output_len += room + GUARD + rng.below(16);
        }
        Self { inputs, input_at, rooms, output_len, good, sizes }
    }

    pub fn input(&self, i: usize) -> &[u8] {
        &self.inputs[self.input_at[i].clone()]
    }

    pub fn inputs(&self) -> Vec<&[u8]> {
        (0..self.input_at.len()).map(|i| self.input(i)).collect()
    }

    /// The gap after chunk `i`'s room, up to the next room.
    pub fn gap(&self, i: usize) -> Range<usize> {
        self.rooms[i].end..self.rooms.get(i + 1).map_or(self.output_len, |next| next.start)
    }

    /// The rooms of `output` (a buffer of `output_len` bytes).
    pub fn split_rooms<'a>(&self, mut output: &'a mut [u8]) -> Vec<&'a mut [u8]> {
        let mut at = 0;
        let mut rooms = Vec::with_capacity(self.rooms.len());
        for range in &self.rooms {
            let (room, rest) = std::mem::take(&mut output)[range.start - at..].split_at_mut(range.len());
            rooms.push(room);
            (output, at) = (rest, range.end);
        }
        rooms
    }
}

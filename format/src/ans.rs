//! ANS: order-0 entropy coding of bytes (or of the high bytes of 16- and 32-bit floats) with 32
//! interleaved rANS states, in ferrocomp's own layout (docs/FORMAT.md gives it byte by byte),
//! after DietGPU's: the 32 states of a sub-block are a warp's lanes, so a warp decodes 32 symbols
//! a step, and the 16-bit words the states refill from are stored in the order the lanes read
//! them (a ballot's prefix gives each lane its word). Lane `l` codes symbols `4l .. 4l + 4` of
//! each 128 ([`symbol_index`]), so that it stores a 32-bit word every four steps. Version 3
//! (written) cuts a chunk into sub-blocks of 8192 bytes' values (8192 symbols of bytes, 2048 of
//! float32), so that a chunk has at least twice the independent chains of lookups (a GPU's warps)
//! of version 2's 16384 symbols (still read); version 1 (still read) gave lane `l` symbols `l`,
//! `l + 32`, ….
//!
//! This module is the CPU path and the oracle: [`compress`] and [`decompress`] emulate the 32
//! lanes one after another; [`decompress`] checks the table, every refill and that every state
//! ends where encoding began, and never panics.

use crate::Status;

/// The format version [`compress`] writes; [`decompress`] reads it, [`VERSION_2`] and [`VERSION_1`].
pub const VERSION: u8 = 3;
/// The second version: sub-blocks of [`SUB_BLOCK_2`] symbols.
pub const VERSION_2: u8 = 2;
/// The first version: as the second, but lane `l` coding symbols `l`, `l + 32`, ….
pub const VERSION_1: u8 = 1;
/// Symbols a lane codes in a row from [`VERSION_2`] on: lane `l` codes symbols `4l .. 4l + 4` of
/// each [`ROUND`].
pub const RUN: usize = 4;
/// Symbols of a sub-block the 32 lanes code in [`RUN`] steps.
pub const ROUND: usize = RUN * LANES;
/// The chunk header: version, data type, flags ([`STORED`]), a reserved byte, the uncompressed
/// size (u32).
pub const HEADER_LEN: usize = 8;
/// Largest chunk [`compress`] accepts (16 MiB, as LZ4's).
pub const MAX_CHUNK_SIZE: usize = 1 << 24;
/// Header flag: the chunk's bytes follow as they are.
pub const STORED: u8 = 1;
/// Bits of the symbol frequencies' total.
pub const PROB_BITS: u32 = 11;
/// The frequencies' total.
pub const TOTAL: u32 = 1 << PROB_BITS;
/// States per sub-block: a warp's lanes.
pub const LANES: usize = 32;
/// Bytes of values per sub-block in [`VERSION`] (a symbol a value), each sub-block coded with its
/// own states (so sub-blocks decode in parallel).
pub const SUB_BLOCK: usize = 8192;
/// Symbols per sub-block in [`VERSION_2`] and [`VERSION_1`].
pub const SUB_BLOCK_2: usize = 16384;
/// The least state; coding starts and must end there.
pub const LOWER: u32 = 1 << 16;
/// Bytes of a coded chunk's symbol bitmap.
const BITMAP_LEN: usize = 32;

/// What the symbols are.
#[repr(u8)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DataType {
    /// Every byte a symbol (nvCOMP's `uchar`, the default).
    #[default]
    Bytes = 0,
    /// 16-bit floats: each value's high byte (sign, exponent, two mantissa bits) a symbol, its low
    /// byte stored as it is (nvCOMP's `float16`).
    Float16 = 1,
    /// 32-bit floats: each value's high byte (sign, seven exponent bits) a symbol, its three low
    /// bytes stored as they are (nvCOMP's `float32`).
    Float32 = 2,
    /// 8-bit floats (e4m3: sign, four exponent bits, three mantissa bits): each value one symbol,
    /// coded whole, with the joint frequencies of its exponent and mantissa (nvCOMP's `float8`).
    Float8 = 3,
}

impl DataType {
    /// The data type with id `id`, if there is one.
    pub fn from_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(Self::Bytes),
            1 => Some(Self::Float16),
            2 => Some(Self::Float32),
            3 => Some(Self::Float8),
            _ => None,
        }
    }

    /// Bytes per value: each value has one symbol.
    pub const fn width(self) -> usize {
        match self {
            Self::Bytes | Self::Float8 => 1,
            Self::Float16 => 2,
            Self::Float32 => 4,
        }
    }
}

/// ANS's options: the data type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Options {
    /// What the symbols are.
    pub data_type: DataType,
}

/// Largest compressed size of an `n`-byte chunk: the header and the bytes stored.
pub const fn max_compressed_size(n: usize) -> usize {
    HEADER_LEN + n
}

/// Largest size `compressed_len` bytes can decode to: a sub-block of up to [`SUB_BLOCK_2`]
/// symbols of up to 4 bytes takes at least its 32 states and its word count (a guard against
/// lying headers).
pub const fn max_decompressed_size(compressed_len: usize) -> usize {
    let bound = (compressed_len / (4 * LANES + 2) + 1) * SUB_BLOCK_2 * 4;
    if bound > MAX_CHUNK_SIZE { MAX_CHUNK_SIZE } else { bound }
}

/// A symbol's frequency and the sum of those before it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Symbol {
    /// The frequency, out of [`TOTAL`]; 0 for a symbol not used.
    pub freq: u32,
    /// The sum of the frequencies of the symbols below it: the first of its slots.
    pub cum: u32,
}

/// The coding table: each symbol's frequency (summing to [`TOTAL`]) and cumulative frequency,
/// and the symbol of each of the [`TOTAL`] slots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// Each byte value's frequency and cumulative frequency.
    pub symbols: [Symbol; 256],
    /// The symbol of each slot (a state's low [`PROB_BITS`] bits), for decoding.
    pub slots: [u8; TOTAL as usize],
}

impl Table {
    /// The frequencies of `counts` scaled to [`TOTAL`]: each counted symbol at least 1, the
    /// rounding made up on (or taken from) the most frequent, the lowest symbol on a tie.
    pub fn of_counts(counts: &[u32; 256]) -> Self {
        let total: u64 = counts.iter().map(|&c| c as u64).sum();
        let mut freqs = [0u32; 256];
        for (freq, &count) in freqs.iter_mut().zip(counts) {
            if count > 0 {
                *freq = ((count as u64 * TOTAL as u64 / total.max(1)) as u32).max(1);
            }
        }
        let mut sum: u32 = freqs.iter().sum();
        while sum != TOTAL {
            let largest = (0..256).fold(0, |best, s| if freqs[s] > freqs[best] { s } else { best });
            if sum < TOTAL {
                freqs[largest] += TOTAL - sum;
                sum = TOTAL;
            } else {
                let take = (freqs[largest] - 1).min(sum - TOTAL);
                freqs[largest] -= take;
                sum -= take;
            }
        }
        Self::of_freqs(&freqs)
    }

    /// The table of frequencies `freqs` (which sum to [`TOTAL`]).
    fn of_freqs(freqs: &[u32; 256]) -> Self {
        let mut symbols = [Symbol::default(); 256];
        let mut slots = [0u8; TOTAL as usize];
        let mut cum = 0;
        for (s, (symbol, &freq)) in symbols.iter_mut().zip(freqs).enumerate() {
            *symbol = Symbol { freq, cum };
            slots[cum as usize..(cum + freq) as usize].fill(s as u8);
            cum += freq;
        }
        Self { symbols, slots }
    }

    /// Bytes of the table as stored.
    pub fn stored_len(&self) -> usize {
        BITMAP_LEN + 2 * self.symbols.iter().filter(|symbol| symbol.freq > 0).count()
    }

    /// Writes the table at the start of `out`: a bitmap of the symbols with a frequency, then
    /// each such frequency (u16).
    fn write(&self, out: &mut [u8]) {
        out[..BITMAP_LEN].fill(0);
        let mut at = BITMAP_LEN;
        for (s, symbol) in self.symbols.iter().enumerate().filter(|(_, symbol)| symbol.freq > 0) {
            out[s / 8] |= 1 << (s % 8);
            out[at..at + 2].copy_from_slice(&(symbol.freq as u16).to_le_bytes());
            at += 2;
        }
    }

    /// The table stored at the start of `bytes`, checked, and its length.
    pub fn read(bytes: &[u8]) -> Result<(Self, usize), Status> {
        let bitmap = bytes.get(..BITMAP_LEN).ok_or(Status::Truncated)?;
        let mut freqs = [0u32; 256];
        let mut at = BITMAP_LEN;
        for (s, freq) in freqs.iter_mut().enumerate() {
            if bitmap[s / 8] >> (s % 8) & 1 == 1 {
                let pair = bytes.get(at..at + 2).ok_or(Status::Truncated)?;
                *freq = u16::from_le_bytes([pair[0], pair[1]]) as u32;
                if *freq == 0 {
                    return Err(Status::Malformed);
                }
                at += 2;
            }
        }
        if freqs.iter().sum::<u32>() != TOTAL {
            return Err(Status::Malformed);
        }
        Ok((Self::of_freqs(&freqs), at))
    }
}

/// `x / freq` for the `freq`, and the `x`, [`encode`] divides: as a multiply by `u32::MAX / freq`
/// (the `reciprocal`), the quotient it gives at most one short (`u32::MAX / freq` is within 1 of
/// `2^32 / freq`, so the product falls short of `x / freq` by less than `x / 2^32`), corrected
/// by the remainder. A GPU divides by a sequence some ten times as long.
#[inline(always)]
pub fn divide(x: u32, freq: u32, reciprocal: u32) -> (u32, u32) {
    let quotient = ((x as u64 * reciprocal as u64) >> 32) as u32;
    let remainder = x - quotient * freq;
    if remainder >= freq { (quotient + 1, remainder - freq) } else { (quotient, remainder) }
}

/// The `reciprocal` [`divide`] takes for `freq` (from 1 to [`TOTAL`]).
pub const fn reciprocal(freq: u32) -> u32 {
    u32::MAX / freq
}

/// Whether coding a symbol of frequency `freq` into the state `x` takes a word out of `x` first
/// (`x` at least `freq << (32 - PROB_BITS)`, where coding would leave the states' range).
#[inline(always)]
pub fn emits(x: u32, freq: u32) -> bool {
    x >> (32 - PROB_BITS) >= freq
}

/// Codes `symbol` (whose frequency's [`reciprocal`] is `reciprocal`) into the state `x`, which has
/// room for it (not [`emits`]).
#[inline(always)]
pub fn code(x: u32, symbol: Symbol, reciprocal: u32) -> u32 {
    let (quotient, remainder) = divide(x, symbol.freq, reciprocal);
    (quotient << PROB_BITS) + remainder + symbol.cum
}

/// Codes `symbol` (whose frequency's [`reciprocal`] is `reciprocal`) into the state `x`: the word
/// to store first, if any, and the new state.
#[inline(always)]
pub fn encode(x: u32, symbol: Symbol, reciprocal: u32) -> (Option<u16>, u32) {
    if emits(x, symbol.freq) {
        (Some(x as u16), code(x >> 16, symbol, reciprocal))
    } else {
        (None, code(x, symbol, reciprocal))
    }
}

/// Decodes a symbol from the state `x` (at least [`LOWER`]): the symbol, and the state, which
/// takes a word where it falls below [`LOWER`].
#[inline(always)]
pub fn decode(x: u32, table: &Table) -> (u8, u32) {
    let slot = x & (TOTAL - 1);
    let symbol = table.slots[slot as usize];
    let Symbol { freq, cum } = table.symbols[symbol as usize];
    (symbol, freq * (x >> PROB_BITS) + slot - cum)
}

/// A chunk's header, as [`read_header`] checks it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// [`VERSION_1`], [`VERSION_2`] or [`VERSION`].
    pub version: u8,
    /// What the symbols are.
    pub data_type: DataType,
    /// The chunk's bytes follow as they are.
    pub stored: bool,
    /// The uncompressed size.
    pub n: usize,
}

/// A chunk's header, checked.
pub fn read_header(input: &[u8]) -> Result<Header, Status> {
    let header = input.get(..HEADER_LEN).ok_or(Status::Truncated)?;
    let version = header[0];
    if !(VERSION_1..=VERSION).contains(&version) {
        return Err(Status::Unsupported);
    }
    let data_type = DataType::from_id(header[1]).ok_or(Status::Malformed)?;
    let n = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if header[2] & !STORED != 0 || header[3] != 0 || n > MAX_CHUNK_SIZE {
        return Err(Status::Malformed);
    }
    Ok(Header { version, data_type, stored: header[2] == STORED, n })
}

/// The uncompressed size of the chunk `input`, from its header, if its bytes can hold it.
pub fn decompressed_size(input: &[u8]) -> Result<usize, Status> {
    crate::declared_size(read_header(input)?.n, max_decompressed_size(input.len()))
}

/// Steps a lane takes over a sub-block of `len` symbols in `version` (in the last, some lanes
/// may have no symbol).
pub const fn steps(version: u8, len: usize) -> usize {
    if version == VERSION_1 { len.div_ceil(LANES) } else { RUN * len.div_ceil(ROUND) }
}

/// The sub-block's index of the symbol lane `lane` codes at step `k` in `version` (past the
/// sub-block's end where the lane has none).
#[inline(always)]
pub const fn symbol_index(version: u8, k: usize, lane: usize) -> usize {
    if version == VERSION_1 { k * LANES + lane } else { k / RUN * ROUND + lane * RUN + k % RUN }
}

/// Symbols of an `n`-byte chunk of `data_type`.
pub const fn symbols(n: usize, data_type: DataType) -> usize {
    n / data_type.width()
}

/// Symbols per sub-block of `data_type` in `version`.
pub const fn sub_block_symbols(version: u8, data_type: DataType) -> usize {
    if version == VERSION { SUB_BLOCK / data_type.width() } else { SUB_BLOCK_2 }
}

/// Sub-blocks of `symbols` symbols of `data_type` in `version`.
pub const fn sub_blocks(version: u8, data_type: DataType, symbols: usize) -> usize {
    symbols.div_ceil(sub_block_symbols(version, data_type))
}

/// Sub-block `b`'s symbols of `symbols` symbols of `data_type` in `version`.
pub fn sub_block(version: u8, data_type: DataType, b: usize, symbols: usize) -> core::ops::Range<usize> {
    let len = sub_block_symbols(version, data_type);
    b * len..((b + 1) * len).min(symbols)
}

/// Symbol `i` of `input`: byte `i`, or the high byte of value `i`.
fn symbol(input: &[u8], i: usize, data_type: DataType) -> u8 {
    input[i * data_type.width() + data_type.width() - 1]
}

/// The bytes of `values` values of `width` bytes that are not symbols: each value's low
/// `width - 1` bytes, stored in order after the sub-blocks.
pub const fn raw_bytes(values: usize, width: usize) -> usize {
    values * (width - 1)
}

/// Where the `i`-th of the [`raw_bytes`] of `width`-byte values is in the values.
#[inline(always)]
pub const fn raw_byte_source(i: usize, width: usize) -> usize {
    i / (width - 1) * width + i % (width - 1)
}

/// Compresses `input` into `out`, returning the compressed size.
pub fn compress(input: &[u8], options: &Options, out: &mut [u8]) -> Result<usize, Status> {
    let n = input.len();
    if n > MAX_CHUNK_SIZE {
        return Err(Status::ChunkTooLarge);
    }
    let out = out.get_mut(..max_compressed_size(n)).ok_or(Status::OutputTooSmall)?;
    let data_type = options.data_type;
    let count = symbols(n, data_type);
    let mut counts = [0u32; 256];
    for i in 0..count {
        counts[symbol(input, i, data_type) as usize] += 1;
    }
    let table = Table::of_counts(&counts);
    let blocks = sub_blocks(VERSION, data_type, count);
    let block = |b: usize| sub_block(VERSION, data_type, b, count);
    // The coded size, from each sub-block's word count (a first encoding that writes nothing).
    let sizes_at = HEADER_LEN + table.stored_len();
    let raw = n - count;
    let mut size = sizes_at + 2 * blocks + raw;
    let mut words = [0usize; MAX_CHUNK_SIZE / SUB_BLOCK];
    for (b, words) in words.iter_mut().enumerate().take(blocks) {
        *words = encode_sub_block(input, block(b), data_type, &table, &mut []).1;
        size += 4 * LANES + 2 * *words;
    }
    out[4..HEADER_LEN].copy_from_slice(&(n as u32).to_le_bytes());
    if size >= out.len() {
        out[..4].copy_from_slice(&[VERSION, data_type as u8, STORED, 0]);
        out[HEADER_LEN..].copy_from_slice(input);
        return Ok(out.len());
    }
    out[..4].copy_from_slice(&[VERSION, data_type as u8, 0, 0]);
    table.write(&mut out[HEADER_LEN..sizes_at]);
    let mut at = sizes_at + 2 * blocks;
    for (b, &words) in words.iter().enumerate().take(blocks) {
        out[sizes_at + 2 * b..sizes_at + 2 * b + 2].copy_from_slice(&(words as u16).to_le_bytes());
        let (states, coded) = out[at..at + 4 * LANES + 2 * words].split_at_mut(4 * LANES);
        let (finals, _) = encode_sub_block(input, block(b), data_type, &table, coded);
        for (lane, state) in finals.iter().enumerate() {
            states[4 * lane..4 * lane + 4].copy_from_slice(&state.to_le_bytes());
        }
        at += 4 * LANES + 2 * words;
    }
    let width = data_type.width();
    for (i, byte) in out[at..at + raw_bytes(count, width)].iter_mut().enumerate() {
        *byte = input[raw_byte_source(i, width)];
    }
    at += raw_bytes(count, width);
    out[at..size].copy_from_slice(&input[count * width..]);
    Ok(size)
}

/// Encodes the symbols `range`, lane `l` coding those [`symbol_index`] gives it, in reverse:
/// returns the final states and the number of refill words, written to `words` (where it has room for them)
/// in the order decoding reads them.
fn encode_sub_block(
    input: &[u8],
    range: core::ops::Range<usize>,
    data_type: DataType,
    table: &Table,
    words: &mut [u8],
) -> ([u32; LANES], usize) {
    let reciprocals = table.symbols.map(|symbol| if symbol.freq > 0 { reciprocal(symbol.freq) } else { 0 });
    let mut states = [LOWER; LANES];
    let mut emitted = 0;
    let len = range.len();
    let total = words.len() / 2;
    for k in (0..steps(VERSION, len)).rev() {
        for lane in (0..LANES).rev() {
            let i = symbol_index(VERSION, k, lane);
            if i >= len {
                continue;
            }
            let s = symbol(input, range.start + i, data_type) as usize;
            let (word, x) = encode(states[lane], table.symbols[s], reciprocals[s]);
            if let Some(word) = word {
                // Read last first: the word emitted e-th is the (total - 1 - e)-th read.
                if let Some(at) = total.checked_sub(emitted + 1) {
                    words[2 * at..2 * at + 2].copy_from_slice(&word.to_le_bytes());
                }
                emitted += 1;
            }
            states[lane] = x;
        }
    }
    (states, emitted)
}

/// Decompresses the chunk `input` into `out`, returning the uncompressed size.
pub fn decompress(input: &[u8], out: &mut [u8]) -> Result<usize, Status> {
    let Header { version, data_type, stored, n } = read_header(input)?;
    let out = out.get_mut(..n).ok_or(Status::OutputTooSmall)?;
    if stored {
        if input.len() != HEADER_LEN + n {
            return Err(if input.len() < HEADER_LEN + n { Status::Truncated } else { Status::Malformed });
        }
        out.copy_from_slice(&input[HEADER_LEN..]);
        return Ok(n);
    }
    let (table, table_len) = Table::read(&input[HEADER_LEN..])?;
    let count = symbols(n, data_type);
    let blocks = sub_blocks(version, data_type, count);
    let sizes_at = HEADER_LEN + table_len;
    let sizes = input.get(sizes_at..sizes_at + 2 * blocks).ok_or(Status::Truncated)?;
    let mut at = sizes_at + 2 * blocks;
    for b in 0..blocks {
        let words = u16::from_le_bytes([sizes[2 * b], sizes[2 * b + 1]]) as usize;
        let block = input.get(at..at + 4 * LANES + 2 * words).ok_or(Status::Truncated)?;
        let range = sub_block(version, data_type, b, count);
        decode_sub_block(block, &table, version, range, data_type, out)?;
        at += block.len();
    }
    let raw = n - count;
    if input.len() != at + raw {
        return Err(if input.len() < at + raw { Status::Truncated } else { Status::Malformed });
    }
    let width = data_type.width();
    for (i, &byte) in input[at..at + raw_bytes(count, width)].iter().enumerate() {
        out[raw_byte_source(i, width)] = byte;
    }
    let tail = n - count * width;
    out[n - tail..].copy_from_slice(&input[input.len() - tail..]);
    Ok(n)
}

/// Decodes the sub-block `block` (its states, then its words) of `version` into symbols `range`
/// of `out`.
fn decode_sub_block(
    block: &[u8],
    table: &Table,
    version: u8,
    range: core::ops::Range<usize>,
    data_type: DataType,
    out: &mut [u8],
) -> Result<(), Status> {
    let mut states = [0u32; LANES];
    for (lane, state) in states.iter_mut().enumerate() {
        *state = u32::from_le_bytes(block[4 * lane..4 * lane + 4].try_into().unwrap_or_default());
        if *state < LOWER {
            return Err(Status::Malformed);
        }
    }
    let words = &block[4 * LANES..];
    let mut next = 0;
    let len = range.len();
    for k in 0..steps(version, len) {
        for (lane, state) in states.iter_mut().enumerate() {
            let i = symbol_index(version, k, lane);
            if i >= len {
                continue;
            }
            let (s, mut x) = decode(*state, table);
            if x < LOWER {
                let word = words.get(2 * next..2 * next + 2).ok_or(Status::Malformed)?;
                x = x << 16 | u16::from_le_bytes([word[0], word[1]]) as u32;
                next += 1;
            }
            *state = x;
            out[(range.start + i) * data_type.width() + data_type.width() - 1] = s;
        }
    }
    if 2 * next != words.len() || states.iter().any(|&state| state != LOWER) {
        return Err(Status::Malformed);
    }
    Ok(())
}

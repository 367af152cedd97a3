//! ANS: round trips of bytes and 16-, 32- and 8-bit floats at every size that matters, the ratio on text, the
//! stored fallback, the table's scaling, the reciprocal division, and corrupt, truncated and lying streams.

use ferrocomp_format::Status;
use ferrocomp_format::ans::{
    self, DataType, HEADER_LEN, LANES, LOWER, MAX_CHUNK_SIZE, Options, STORED, SUB_BLOCK, TOTAL, Table,
    max_compressed_size, max_decompressed_size,
};
mod common;
use common::{XorShift, random_bytes};

const BYTES: Options = Options { data_type: DataType::Bytes };
const FLOAT16: Options = Options { data_type: DataType::Float16 };

fn compress(input: &[u8], options: &Options) -> Vec<u8> {
    let mut out = vec![0; max_compressed_size(input.len())];
    let size = ans::compress(input, options, &mut out).unwrap();
    out.truncate(size);
    out
}

fn decompress(stream: &[u8], capacity: usize) -> Result<Vec<u8>, Status> {
    let mut out = vec![0; capacity];
    ans::decompress(stream, &mut out).map(|n| out[..n].to_vec())
}

fn round_trip(input: &[u8], options: &Options) -> Vec<u8> {
    let compressed = compress(input, options);
    assert_eq!(ans::decompressed_size(&compressed), Ok(input.len()));
    assert!(decompress(&compressed, input.len()).unwrap() == input, "{options:?}, {} bytes differ", input.len());
    compressed
}

/// Skewed bytes: mostly a few letters, sometimes anything (an entropy near 3 bits).
fn skewed(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = XorShift(seed);
    (0..n).map(|_| if rng.below(8) == 0 { rng.next() as u8 } else { b"etaoin s"[rng.below(8)] }).collect()
}

/// 16-bit floats of a smooth field, little-endian.
fn halves(count: usize) -> Vec<u8> {
    (0..count).flat_map(|k| half::f16::from_f32(1.5 + (k as f32 / 300.0).sin()).to_le_bytes()).collect()
}

#[test]
fn bytes_round_trip_at_every_size() {
    for n in [0, 1, 2, 31, 32, 33, 1000, SUB_BLOCK - 1, SUB_BLOCK, SUB_BLOCK + 1, 3 * SUB_BLOCK + 17, 65536] {
        round_trip(&skewed(n, n as u64), &BYTES);
    }
}

#[test]
fn float16_round_trips_odd_sizes_keep_their_tail() {
    for count in [0, 1, 31, 33, SUB_BLOCK + 5, 40000] {
        let data = halves(count);
        let compressed = round_trip(&data, &FLOAT16);
        if count > 1000 {
            assert!(compressed.len() < data.len() * 3 / 4, "{count}: {}", compressed.len());
        }
        let mut odd = data.clone();
        odd.push(0x5A);
        round_trip(&odd, &FLOAT16);
    }
}

/// 32-bit floats of a smooth field, little-endian.
fn singles(count: usize) -> Vec<u8> {
    (0..count).flat_map(|k| (1.5 + (k as f32 / 300.0).sin()).to_le_bytes()).collect()
}

#[test]
fn float32_codes_high_bytes_and_keeps_the_rest_in_order() {
    let float32 = Options { data_type: DataType::Float32 };
    for count in [0, 1, 33, SUB_BLOCK + 5, 16000] {
        for tail in 0..4 {
            let mut data = singles(count);
            data.extend(&[0xA5, 0x5A, 0x3C][..tail]);
            let compressed = round_trip(&data, &float32);
            if count > 1000 {
                // The high bytes of values near 1.5 take a few bits; the three low bytes stay.
                assert!(compressed.len() < data.len() * 4 / 5, "{count}: {}", compressed.len());
                let raw = ans::raw_bytes(count, 4);
                let at = compressed.len() - tail - raw;
                let lows: Vec<u8> = data.as_chunks::<4>().0.iter().flat_map(|v| v[..3].to_vec()).collect();
                assert_eq!(&compressed[at..at + raw], &lows[..]);
            }
        }
    }
}

#[test]
fn float8_codes_each_value_whole() {
    // e4m3 values of a narrow range: few exponents, so a skewed table.
    let data: Vec<u8> = skewed(50_000, 5).iter().map(|&b| 0x30 | b & 0x0F).collect();
    let float8 = round_trip(&data, &Options { data_type: DataType::Float8 });
    let bytes = round_trip(&data, &BYTES);
    assert_eq!((float8[1], &float8[2..]), (DataType::Float8 as u8, &bytes[2..]));
}

#[test]
fn the_largest_chunk_round_trips_and_a_larger_is_refused() {
    let input = skewed(MAX_CHUNK_SIZE, 4);
    assert!(round_trip(&input, &BYTES).len() < input.len() * 6 / 10);
    let mut out = vec![0; max_compressed_size(MAX_CHUNK_SIZE + 1)];
    assert_eq!(ans::compress(&vec![0; MAX_CHUNK_SIZE + 1], &BYTES, &mut out), Err(Status::ChunkTooLarge));
}

#[test]
fn one_symbol_costs_almost_nothing_and_noise_is_stored() {
    // One symbol codes to nothing: the header, the table of one frequency, and each sub-block's
    // word count (0) and states.
    let zeros = round_trip(&[0; 100_000], &BYTES);
    assert_eq!(
        zeros.len(),
        HEADER_LEN + 32 + 2 + ans::sub_blocks(ans::VERSION, DataType::Bytes, 100_000) * (2 + 4 * LANES)
    );
    let noise = round_trip(&random_bytes(50_000, 3), &BYTES);
    assert_eq!((noise.len(), noise[2]), (HEADER_LEN + 50_000, STORED));
}

#[test]
fn the_ratio_nears_the_entropy() {
    let data = skewed(1 << 20, 7);
    let mut counts = [0u64; 256];
    data.iter().for_each(|&b| counts[b as usize] += 1);
    let entropy: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / data.len() as f64;
            -p * p.log2()
        })
        .sum();
    // The words take no more than the entropy; the rest is the layout's: the header, the table,
    // and each sub-block's word count and states (which also carry some of the information).
    let table = 32 + 2 * counts.iter().filter(|&&c| c > 0).count();
    let layout = HEADER_LEN + table + ans::sub_blocks(ans::VERSION, DataType::Bytes, data.len()) * (2 + 4 * LANES);
    let bits = 8.0 * compress(&data, &BYTES).len() as f64 / data.len() as f64;
    let bound = entropy + 8.0 * layout as f64 / data.len() as f64;
    assert!(bits < bound, "{bits} bits a byte against an entropy of {entropy} and the layout's {bound}");
}

#[test]
fn the_table_sums_to_its_total_and_keeps_every_symbol() {
    let mut counts = [0u32; 256];
    counts[0] = 1_000_000;
    for (s, count) in counts.iter_mut().enumerate().skip(1) {
        *count = s as u32 % 3; // many rare symbols: each must keep a slot
    }
    let table = Table::of_counts(&counts);
    assert_eq!(table.symbols.iter().map(|s| s.freq).sum::<u32>(), TOTAL);
    assert!(counts.iter().zip(&table.symbols).all(|(&c, s)| (c > 0) == (s.freq > 0)));
    assert_eq!(table.symbols[0].freq, TOTAL - counts.iter().skip(1).filter(|&&c| c > 0).count() as u32);
}

#[test]
fn the_reciprocal_divides_exactly() {
    let mut rng = XorShift(0x2545_F491_4F6C_DD1D);
    for freq in 1..=TOTAL {
        let reciprocal = ans::reciprocal(freq);
        // Random states, the multiples of `freq` and their neighbours at both ends, and the top.
        let mut xs: Vec<u32> = (0..500).map(|_| rng.next() as u32).collect();
        for k in [0, 1, 2, u32::MAX / freq - 1, u32::MAX / freq] {
            let multiple = k * freq;
            xs.extend([multiple, multiple.saturating_sub(1), multiple.saturating_add(1)]);
        }
        xs.extend([u32::MAX, u32::MAX - 1, (freq << 21).wrapping_sub(1)]);
        for x in xs {
            assert_eq!(ans::divide(x, freq, reciprocal), (x / freq, x % freq), "{x} / {freq}");
        }
    }
}

#[test]
fn corrupt_truncated_and_lying_streams_give_statuses() {
    let input = skewed(3 * SUB_BLOCK + 100, 9);
    let stream = compress(&input, &BYTES);
    assert_eq!(decompress(&stream, input.len() - 1), Err(Status::OutputTooSmall));
    for cut in (0..stream.len()).step_by(97) {
        assert!(decompress(&stream[..cut], input.len()).is_err(), "cut at {cut}");
    }
    let mut rng = XorShift(12);
    let mut caught = 0;
    for _ in 0..2000 {
        let mut damaged = stream.clone();
        let at = rng.below(stream.len());
        damaged[at] ^= 1 << rng.below(8);
        // A status or bytes, never a panic; most flips are caught by the table's sum, the
        // states' end check or a refill past the words (the container's checksums catch the rest).
        if decompress(&damaged, input.len()).is_err() {
            caught += 1;
        }
    }
    assert!(caught > 1500, "{caught} of 2000 flips caught");
    let with = |k: usize, byte: u8| {
        let mut s = stream.clone();
        s[k] = byte;
        decompress(&s, input.len())
    };
    assert_eq!(with(0, ans::VERSION + 1), Err(Status::Unsupported));
    assert_eq!(with(0, 0), Err(Status::Unsupported));
    assert_eq!(with(1, 7), Err(Status::Malformed));
    assert_eq!(with(2, 4), Err(Status::Malformed));
    assert_eq!(with(3, 1), Err(Status::Malformed));
    let mut lying = stream.clone();
    lying[4..8].copy_from_slice(&(MAX_CHUNK_SIZE as u32).to_le_bytes());
    assert!(decompress(&lying, MAX_CHUNK_SIZE).is_err());
    assert!(max_decompressed_size(stream.len()) >= input.len());
    assert_eq!(decompress(&[], 10), Err(Status::Truncated));
    // A state below the least is refused.
    let (_, table_len) = Table::read(&stream[HEADER_LEN..]).unwrap();
    let states_at = HEADER_LEN + table_len + 2 * ans::sub_blocks(ans::VERSION, DataType::Bytes, input.len());
    let mut low = stream.clone();
    low[states_at..states_at + 4].copy_from_slice(&(LOWER - 1).to_le_bytes());
    assert_eq!(decompress(&low, input.len()), Err(Status::Malformed));
    assert_eq!(LANES, 32);
}

//! What a file of raw deflate streams back to back (`ferrocomp-bench --keep` writes one per codec
//! and data set) costs a decoder: blocks by kind, literals and matches, and the trips a
//! table-driven symbol loop makes, where one lookup gives a literal/length symbol or two literals
//! whose codes together fit the table's root bits (the GPU decoder's pair entries, 10 bits), and
//! what wider roots would save. Run on ours and nvCOMP's chunks of the same data, it says where
//! one decodes slower (issue 48). Usage: `deflate-anatomy FILE...`, a Markdown table on stdout.

use ferrocomp_format::Status;
use ferrocomp_format::deflate::DecodeTables;
use ferrocomp_format::deflate::huffman::{
    DIST_ROOT, KIND_BASE, KIND_END, KIND_LITERAL, LITLEN_ROOT, entry_extra, entry_kind, entry_len, entry_value, lookup,
};
use ferrocomp_format::deflate::inflate::{
    BitReader, BitSource, Block, Lengths, build_block_tables, read_block_lengths,
};

/// Root bits whose symbol loop trips are counted: the GPU decoder's, and two wider ones.
const ROOTS: [u32; 3] = [LITLEN_ROOT, 11, 12];

/// Counts over every stream of a file.
#[derive(Default)]
struct Anatomy {
    streams: u64,
    /// Blocks: stored, fixed Huffman, dynamic Huffman.
    blocks: [u64; 3],
    stored_bytes: u64,
    literals: u64,
    /// Literals whose code is longer than the root (a second lookup).
    long_literals: u64,
    matches: u64,
    match_bytes: u64,
    /// Symbol loop trips with pair entries at each of [`ROOTS`].
    trips: [u64; 3],
}

/// Pairs literals greedily as pair entries do: a literal whose code and the next literal's fit
/// `root` bits take one trip; every other symbol one.
#[derive(Clone, Copy, Default)]
struct Pairing {
    /// Code length of a literal not yet paired (0: none).
    pending: u32,
    trips: u64,
}

impl Pairing {
    fn literal(&mut self, len: u32, root: u32) {
        if self.pending != 0 && self.pending + len <= root {
            (self.pending, self.trips) = (0, self.trips + 1);
        } else {
            self.flush();
            self.pending = len;
        }
    }

    fn other(&mut self) {
        self.flush();
        self.trips += 1;
    }

    fn flush(&mut self) {
        if self.pending != 0 {
            (self.pending, self.trips) = (0, self.trips + 1);
        }
    }
}

fn anatomy(input: &[u8]) -> Result<Anatomy, Status> {
    // Any contents are valid tables (the format crate's documentation).
    let mut tables = unsafe { Box::<DecodeTables>::new_zeroed().assume_init() };
    let mut a = Anatomy::default();
    let mut at = 0;
    while at < input.len() {
        let mut src: BitReader = BitReader::new(&input[at..]);
        let mut pairing = [Pairing::default(); 3];
        loop {
            let (block, last, lengths) = read_block_lengths(&mut src, &mut tables)?;
            match (block, lengths) {
                (Block::Stored, _) => {
                    a.blocks[0] += 1;
                    a.stored_bytes += src.stored()?.len() as u64;
                    pairing.iter_mut().for_each(Pairing::flush);
                }
                (Block::Huffman, lengths) => {
                    a.blocks[1 + matches!(lengths, Lengths::Dynamic { .. }) as usize] += 1;
                    build_block_tables(&mut tables, lengths, false)?;
                    huffman_block(&mut src, &tables, &mut a, &mut pairing)?;
                }
            }
            if last {
                break;
            }
        }
        if src.overran() {
            return Err(Status::Truncated);
        }
        for (trips, pairing) in a.trips.iter_mut().zip(&mut pairing) {
            pairing.flush();
            *trips += pairing.trips;
        }
        a.streams += 1;
        at += src.consumed_bytes();
    }
    Ok(a)
}

/// Counts a Huffman block's symbols through its end-of-block symbol.
fn huffman_block(
    src: &mut BitReader,
    t: &DecodeTables,
    a: &mut Anatomy,
    pairing: &mut [Pairing; 3],
) -> Result<(), Status> {
    loop {
        if src.overran() {
            return Err(Status::Truncated);
        }
        let entry = lookup(&t.litlen, LITLEN_ROOT, src.peek());
        let len = entry_len(entry);
        src.skip(len);
        match entry_kind(entry) {
            KIND_LITERAL => {
                a.literals += 1;
                a.long_literals += (len > LITLEN_ROOT) as u64;
                for (pairing, root) in pairing.iter_mut().zip(ROOTS) {
                    pairing.literal(len, root);
                }
            }
            KIND_BASE => {
                a.matches += 1;
                a.match_bytes += (entry_value(entry) + src.take_held(entry_extra(entry))) as u64;
                let dist = lookup(&t.dist, DIST_ROOT, src.peek());
                if entry_kind(dist) != KIND_BASE {
                    return Err(Status::Malformed);
                }
                src.skip(entry_len(dist));
                src.take_held(entry_extra(dist));
                pairing.iter_mut().for_each(Pairing::other);
            }
            KIND_END => {
                pairing.iter_mut().for_each(Pairing::other);
                return Ok(());
            }
            _ => return Err(Status::Malformed),
        }
    }
}

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!(
            "usage: deflate-anatomy FILE... (raw deflate streams back to back, as ferrocomp-bench --keep writes)"
        );
        std::process::exit(2);
    }
    println!(
        "| file | streams | decoded bytes | ratio | blocks stored / fixed / dynamic | literals | literals past the root \
         | matches | match bytes a match | loop trips (10-bit pairs) | with 11 / 12-bit pairs |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut failed = false;
    for file in files {
        let anatomy = std::fs::read(&file).map_err(|e| e.to_string()).and_then(|input| {
            let a = anatomy(&input).map_err(|status| format!("not raw deflate streams back to back ({status:?})"))?;
            Ok((a, input.len()))
        });
        let (a, stored) = match anatomy {
            Ok(counted) => counted,
            Err(error) => {
                eprintln!("deflate-anatomy: {file}: {error}");
                failed = true;
                continue;
            }
        };
        let decoded = a.literals + a.match_bytes + a.stored_bytes;
        let per = |n: u64, d: u64| n as f64 / d.max(1) as f64;
        println!(
            "| {file} | {} | {decoded} | {:.3} | {} / {} / {} | {} | {:.2}% | {} | {:.2} | {} | {:.3} / {:.3} |",
            a.streams,
            per(decoded, stored as u64),
            a.blocks[0],
            a.blocks[1],
            a.blocks[2],
            a.literals,
            100.0 * per(a.long_literals, a.literals),
            a.matches,
            per(a.match_bytes, a.matches),
            a.trips[0],
            per(a.trips[1], a.trips[0]),
            per(a.trips[2], a.trips[0]),
        );
    }
    if failed {
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocomp_format::deflate::{self, CompressScratch, Wrapper};

    #[test]
    fn counts_streams_back_to_back_as_they_decode() {
        let mut scratch = unsafe { Box::<CompressScratch>::new_zeroed().assume_init() };
        let text: Vec<u8> =
            (0..20_000u32).map(|i| b"the quick brown fox "[(i % 20) as usize] ^ (i / 997) as u8).collect();
        let mut file = Vec::new();
        for (level, part) in [(1, &text[..9000]), (0, &text[9000..9100]), (4, &text[9100..])] {
            let mut out = vec![0u8; deflate::max_compressed_size(part.len(), Wrapper::Raw)];
            let n = deflate::compress(part, level, Wrapper::Raw, &mut scratch, &mut out).unwrap();
            file.extend_from_slice(&out[..n]);
        }
        let a = anatomy(&file).unwrap();
        assert_eq!(a.streams, 3);
        assert_eq!(a.literals + a.match_bytes + a.stored_bytes, text.len() as u64);
        // Every symbol (end-of-block ones too) is one trip without pairs; a pair merges two literals.
        let symbols = a.literals + a.matches + a.blocks[1] + a.blocks[2];
        assert!(a.trips[0] <= symbols && a.trips[0] >= symbols - a.literals / 2, "{} of {symbols}", a.trips[0]);
        assert!(a.trips[2] <= a.trips[1] && a.trips[1] <= a.trips[0]);
        assert!(anatomy(&file[..file.len() - 1]).is_err(), "a cut stream is refused");
    }
}

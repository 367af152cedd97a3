//! What a file of Zstandard frames back to back (`ferrocomp-bench --keep` writes one per codec and
//! data set) costs a decoder: blocks by kind, literals by coding, sequences and their lengths,
//! the sequence tables' modes. Run on ours and nvCOMP's chunks of the same data, it says where
//! one decodes slower at the same ratio (issue 48). Usage: `zstd-anatomy FILE...`, a Markdown
//! table on stdout.

use ferrocomp_format::Status;
use ferrocomp_format::zstd::DecodeTables;
use ferrocomp_format::zstd::frame::{BlockKind, LiteralsKind, for_each_frame, read_block_header, read_literals_header};
use ferrocomp_format::zstd::sequences::{self, SequenceDecoder};

/// Largest block content RFC 8878 allows.
const BLOCK_MAX: usize = 128 << 10;

/// Counts over every frame of a file.
#[derive(Default, Debug, PartialEq)]
struct Anatomy {
    frames: u64,
    /// Blocks: raw, RLE, compressed.
    blocks: [u64; 3],
    /// Compressed blocks' literals by coding: raw, RLE, Huffman with a tree, Huffman reusing one.
    literals_kinds: [u64; 4],
    /// Huffman-coded literal sections in four streams.
    four_streams: u64,
    /// Literal bytes of compressed blocks, and the bytes they are stored in.
    literals: u64,
    literals_stored: u64,
    sequences: u64,
    /// Bytes the matches copy.
    match_bytes: u64,
    /// Matches of fewer than 8 bytes.
    short_matches: u64,
    /// Sequence tables by mode (predefined, RLE, FSE-coded, repeat) for literal lengths, offsets
    /// and match lengths.
    modes: [[u64; 4]; 3],
    /// Bytes the frames decode to.
    decoded: u64,
}

fn anatomy(input: &[u8]) -> Result<Anatomy, Status> {
    // Any bytes are a valid start for the tables (each frame forgets the last one's).
    let mut tables = unsafe { Box::<DecodeTables>::new_zeroed().assume_init() };
    let mut counts = Anatomy::default();
    for_each_frame(input, |mut ip, op, _| {
        counts.frames += 1;
        tables.start_frame();
        let mut decoded = 0;
        loop {
            let block = read_block_header(input.get(ip..).unwrap_or(&[]), BLOCK_MAX)?;
            let content = input.get(ip + 3..ip + 3 + block.content_len()).ok_or(Status::Truncated)?;
            ip += 3 + content.len();
            decoded += match block.kind {
                BlockKind::Raw => (counts.blocks[0] += 1, block.size).1,
                BlockKind::Rle => (counts.blocks[1] += 1, block.size).1,
                BlockKind::Compressed => {
                    counts.blocks[2] += 1;
                    compressed_block(content, &mut tables, &mut counts)?
                }
            };
            if block.last {
                break;
            }
        }
        counts.decoded += decoded as u64;
        Ok((ip, op + decoded))
    })?;
    Ok(counts)
}

/// Counts a compressed block's literals and sequences; returns the bytes it decodes to.
fn compressed_block(content: &[u8], tables: &mut DecodeTables, counts: &mut Anatomy) -> Result<usize, Status> {
    let header = read_literals_header(content)?;
    let kind = match header.kind {
        LiteralsKind::Raw => 0,
        LiteralsKind::Rle => 1,
        LiteralsKind::Compressed => 2,
        LiteralsKind::Treeless => 3,
    };
    counts.literals_kinds[kind] += 1;
    counts.four_streams += (kind >= 2 && header.four_streams) as u64;
    counts.literals += header.regenerated as u64;
    counts.literals_stored += header.stored as u64;
    let section = content.get(header.len + header.stored..).ok_or(Status::Malformed)?;
    let seq_header = sequences::read_header(section)?;
    let mut match_bytes = 0;
    if seq_header.count > 0 {
        for (table, mode) in [6, 4, 2].into_iter().enumerate() {
            counts.modes[table][(seq_header.modes >> mode & 3) as usize] += 1;
        }
        let tables_at = section.get(seq_header.len..).unwrap_or(&[]);
        let tables = &mut tables.sequences;
        let stream = tables_at.get(sequences::read_tables(seq_header.modes, tables_at, tables)?..).unwrap_or(&[]);
        let mut decoder = SequenceDecoder::new(stream, tables)?;
        for i in 0..seq_header.count {
            let sequence = decoder.next(tables, i + 1 == seq_header.count);
            match_bytes += sequence.match_len as usize;
            counts.short_matches += (sequence.match_len < 8) as u64;
        }
    }
    counts.sequences += seq_header.count as u64;
    counts.match_bytes += match_bytes as u64;
    Ok(header.regenerated + match_bytes)
}

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: zstd-anatomy FILE... (Zstandard frames back to back, as ferrocomp-bench --keep writes)");
        std::process::exit(2);
    }
    println!(
        "| file | frames | decoded bytes | ratio | blocks raw / RLE / compressed | literals raw / RLE / tree / treeless \
         (4 streams) | literal share | literals stored / regenerated | sequences | bytes a sequence | match bytes \
         a match | matches under 8 | LL / OF / ML tables predefined-RLE-FSE-repeat |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut failed = false;
    for file in files {
        let input = match std::fs::read(&file) {
            Ok(input) => input,
            Err(error) => {
                eprintln!("zstd-anatomy: {file}: {error}");
                failed = true;
                continue;
            }
        };
        let a = match anatomy(&input) {
            Ok(a) => a,
            Err(status) => {
                eprintln!("zstd-anatomy: {file}: not Zstandard frames back to back ({status:?})");
                failed = true;
                continue;
            }
        };
        let per = |n: u64, d: u64| n as f64 / d.max(1) as f64;
        let modes = a.modes.map(|m| format!("{}-{}-{}-{}", m[0], m[1], m[2], m[3])).join(" / ");
        println!(
            "| {file} | {} | {} | {:.3} | {} / {} / {} | {} / {} / {} / {} ({}) | {:.3} | {:.3} | {} | {:.2} | {:.2} | \
             {:.3} | {modes} |",
            a.frames,
            a.decoded,
            per(a.decoded, input.len() as u64),
            a.blocks[0],
            a.blocks[1],
            a.blocks[2],
            a.literals_kinds[0],
            a.literals_kinds[1],
            a.literals_kinds[2],
            a.literals_kinds[3],
            a.four_streams,
            per(a.literals, a.decoded),
            per(a.literals_stored, a.literals),
            a.sequences,
            per(a.decoded, a.sequences),
            per(a.match_bytes, a.sequences),
            per(a.short_matches, a.sequences),
        );
    }
    if failed {
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrocomp_format::zstd::encode::{CompressScratch, compress, max_compressed_size};

    /// Our frames of `input` at `level`, and what the scalar decoder makes of them.
    fn ours(input: &[u8], level: u8) -> Vec<u8> {
        let mut out = vec![0; max_compressed_size(input.len())];
        let mut scratch = unsafe { Box::<CompressScratch>::new_zeroed().assume_init() };
        let n = compress(input, level, &mut scratch, &mut out).unwrap();
        out.truncate(n);
        out
    }

    #[test]
    fn bytes_add_up_to_the_decoded_size_for_ours_and_libzstd() {
        let text: Vec<u8> =
            (0..300_000u32).flat_map(|i| format!("line {} of {}\n", i % 977, i / 13).into_bytes()).collect();
        let mut frames = ours(&text, 1);
        frames.extend(ours(&text, 2));
        frames.extend(zstd::bulk::compress(&text, 3).unwrap());
        let a = anatomy(&frames).unwrap();
        assert_eq!((a.frames, a.decoded), (3, 3 * text.len() as u64));
        // Every compressed block's bytes are its literals and its matches.
        assert_eq!(a.literals + a.match_bytes, a.decoded - raw_and_rle_bytes(&frames));
        assert!(a.sequences > 0 && a.blocks[2] > 0);
    }

    #[test]
    fn damaged_frames_give_a_status() {
        let text: Vec<u8> = (0..50_000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
        let frames = ours(&text, 2);
        assert_eq!(anatomy(&frames[..frames.len() / 2]), Err(Status::Truncated));
        assert_eq!(anatomy(&[]), Err(Status::Truncated));
    }

    /// Bytes of the raw and RLE blocks of `frames`.
    fn raw_and_rle_bytes(frames: &[u8]) -> u64 {
        let mut bytes = 0;
        for_each_frame(frames, |mut ip, op, _| {
            loop {
                let block = read_block_header(&frames[ip..], BLOCK_MAX)?;
                ip += 3 + block.content_len();
                bytes += if block.kind == BlockKind::Compressed { 0 } else { block.size as u64 };
                if block.last {
                    return Ok((ip, op));
                }
            }
        })
        .unwrap();
        bytes
    }
}

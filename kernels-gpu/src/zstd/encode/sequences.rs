//! The sequences section's codes: counted into their tables, then the FSE bitstream coded 32
//! units at a time ([`encode_stream`]).

use super::SequenceStage;
use crate::entropy::{BitStream, count};
use crate::warp::{WARP_SIZE, Warp};
use core::mem::offset_of;
use core::ptr::addr_of_mut;
use ferrocomp_format::Status;
use ferrocomp_format::zstd::encode::fse::SymbolCoding;
use ferrocomp_format::zstd::encode::sequences::{Field, Sequence, SequenceTables, codes, extra_fields, state_field};
use ferrocomp_format::zstd::tables::{LITERAL_LENGTH_CODES, MATCH_LENGTH_CODES, OFFSET_CODES};

/// Encodes the sequences' bitstream at `out` (room for `capacity` bytes), as the format
/// crate's `write_sequences` does after the header; returns its size. Its units (the last
/// sequence's extra bits; each sequence before it, last to first, with the state field moving
/// the FSE states to it; the final states and end marker) go 32 at a time, a lane each. Each
/// lane puts its unit's three symbol codings into `steps` (shared, 96 words); the three FSE
/// states are stepped through the window's codings (the serial part) by lanes 0, 1 and 2
/// together, one table each, each step's field replacing its coding; then each lane gathers its
/// unit's state field, places its unit's fields by a prefix sum of their bits and the lanes
/// write the window's words together.
pub(super) unsafe fn encode_stream<W: Warp>(
    warp: &W,
    sequences: &[Sequence],
    tables: &SequenceTables,
    out: *mut u8,
    capacity: usize,
    steps: *mut u32,
) -> Result<usize, Status> {
    let lane = warp.lane() as usize;
    let n = sequences.len();
    let units = n + 1;
    let steppers = tables.steppers();
    let mut state = 0;
    // Safety: the caller's `out` is writable for `capacity` bytes.
    let mut stream = unsafe { BitStream::new(out, capacity) };
    for base in (0..units).step_by(WARP_SIZE as usize) {
        let unit = base + lane;
        let seq = (unit < n).then(|| sequences[n - 1 - unit]);
        // Each lane's unit's codings, one table after another, where its steps will go: the
        // stepping lanes load them ahead of their states.
        let symbols = seq.map(|seq| codes(&seq));
        for (table, stepper) in steppers.iter().enumerate() {
            let coding = symbols.map_or(0, |(ll, of, ml)| stepper.coding([ll, of, ml][table]).0);
            unsafe { *steps.add(3 * lane + table) = coding };
        }
        warp.sync(); // the codings are visible to the stepping lanes
        if lane < 3 {
            // This window's sequences, each coding loaded a step ahead of its use.
            let (stepper, stepped) = (steppers[lane], n.saturating_sub(base).min(WARP_SIZE as usize) as u32);
            let mut coding = unsafe { *steps.add(lane) };
            for k in 0..stepped {
                let slot = unsafe { steps.add(3 * k as usize + lane) };
                let next = if k + 1 < stepped { unsafe { *slot.add(3) } } else { 0 };
                let (value, bits) = if base == 0 && k == 0 {
                    state = stepper.first_state_coded(SymbolCoding(coding));
                    (0, 0)
                } else {
                    stepper.step_coded(&mut state, SymbolCoding(coding))
                };
                unsafe { *slot = value | bits << 16 };
                coding = next;
            }
        }
        let finals = [0, 1, 2].map(|table| warp.shuffle(state, table));
        warp.sync(); // the steps are visible to every lane
        let unit_fields: [Field; 4] = match seq {
            Some(seq) => {
                let step = |table: usize| {
                    let packed = unsafe { *steps.add(3 * lane + table) };
                    (packed & 0xFFFF, packed >> 16)
                };
                let [lengths, offset] = extra_fields(&seq);
                [state_field([step(0), step(1), step(2)]), lengths, offset, (0, 0)]
            }
            None if unit == n => tables.final_fields(finals),
            None => [(0, 0); 4],
        };
        warp.sync(); // every lane has read its steps before the next window's are written
        stream.write(warp, unit_fields);
    }
    stream.finish(warp)
}

/// Counts the sequences' literal-length, offset and match-length codes into their code tables
/// in shared memory, as `count_codes` does.
pub(super) unsafe fn count_sequence_codes<W: Warp>(warp: &W, sequences: &[Sequence], stage: *mut SequenceStage) {
    // Where each kind's counts are, in words from the tables' start.
    const LITERAL_LENGTHS: usize = offset_of!(SequenceTables, literal_lengths.counts) / 4;
    const OFFSETS: usize = offset_of!(SequenceTables, offsets.counts) / 4;
    const MATCH_LENGTHS: usize = offset_of!(SequenceTables, match_lengths.counts) / 4;
    let tables = unsafe { addr_of_mut!((*stage).tables) } as *mut u32;
    for (at, codes) in
        [(LITERAL_LENGTHS, LITERAL_LENGTH_CODES), (OFFSETS, OFFSET_CODES), (MATCH_LENGTHS, MATCH_LENGTH_CODES)]
    {
        warp.for_each_strided(codes, |b| unsafe { *tables.add(at + b) = 0 });
    }
    warp.sync();
    let bins = |i: usize| {
        let (ll, of, ml) = codes(&sequences[i]);
        [LITERAL_LENGTHS + ll as usize, OFFSETS + of as usize, MATCH_LENGTHS + ml as usize].map(|bin| bin as u32)
    };
    unsafe { count(warp, sequences.len(), bins, tables) };
}

//! Reading from a [`Read`](std::io::Read) until a buffer is full.

use std::io::{ErrorKind, Read};

/// Reads from `input` into `buffer` until it is full or the input ends, retrying interrupted
/// reads; returns how many bytes it read (short only at the input's end).
pub(crate) fn read_full(input: &mut impl Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buffer.len() {
        match input.read(&mut buffer[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

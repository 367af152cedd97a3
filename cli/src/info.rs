//! `ferrocomp info`: what a native file holds, from its headers.

use crate::files::is_dash;
use crate::options::describe;
use anyhow::{Context, Result};
use ferrocomp::container::{self, Description};
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Describes each file on stdout; reports each failure on stderr and goes on.
pub fn run(files: &[PathBuf]) -> ExitCode {
    let mut status = ExitCode::SUCCESS;
    for file in files {
        match read(file) {
            Ok(description) => print!("{}", format(file, &description)),
            Err(e) => status = crate::failure(&e),
        }
    }
    status
}

/// The description of the native stream in `path` (`-`: standard input).
fn read(path: &Path) -> Result<Description> {
    let input: Box<dyn Read> = match is_dash(path) {
        true => Box::new(io::stdin()),
        false => Box::new(File::open(path).with_context(|| path.display().to_string())?),
    };
    container::describe(BufReader::with_capacity(1 << 20, input)).with_context(|| format!("reading {}", path.display()))
}

/// `description` of `path`, a line a field.
fn format(path: &Path, description: &Description) -> String {
    let Description {
        version,
        options,
        chunk_size,
        chunks,
        blocks,
        uncompressed,
        compressed,
        uncompressed_checksums,
        compressed_checksums,
    } = description;
    let nvcomp = *version == container::NVCOMP_VERSION;
    let sum = if nvcomp { "nvCOMP's checksum" } else { "CRC-32" };
    let checksums = match (uncompressed_checksums, compressed_checksums) {
        (true, true) => format!("{sum} of each chunk's uncompressed and compressed bytes"),
        (true, false) => format!("{sum} of each chunk's uncompressed bytes"),
        (false, true) => format!("{sum} of each chunk's compressed bytes"),
        (false, false) => "none".into(),
    };
    let ratio = *uncompressed as f64 / (*compressed).max(1) as f64;
    let mut fields = vec![
        ("container version", if nvcomp { "nvCOMP 6 native stream".into() } else { version.to_string() }),
        ("algorithm", describe(options)),
        ("chunk size", format!("{chunk_size} bytes")),
        ("chunks", chunks.to_string()),
    ];
    // Version 1 and nvCOMP's streams hold one chunk table, no blocks.
    if *version == container::STREAM_VERSION {
        fields.push(("blocks", blocks.to_string()));
    }
    fields.extend([
        ("uncompressed", format!("{uncompressed} bytes")),
        ("compressed", format!("{compressed} bytes")),
        ("ratio", format!("{ratio:.3}")),
        ("checksums", checksums),
    ]);
    let lines = fields.iter().map(|(field, value)| format!("  {field}: {value}\n"));
    format!("{}\n{}", path.display(), lines.collect::<String>())
}

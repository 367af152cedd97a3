//! Prints the kernels' PTX as the host loads it: the shipped file (or the variant named on the
//! command line, as `FERROCOMP_PTX` would load it) with each kernel's launch bounds written in.
//! `scripts/sass_audit.py` compiles it to see what ptxas makes of each kernel.

use ferrocomp_kernels_gpu::{PTX, with_launch_bounds};
use std::process::ExitCode;

fn main() -> ExitCode {
    let ptx = match std::env::args_os().nth(1) {
        Some(path) => match std::fs::read_to_string(&path) {
            Ok(ptx) => ptx,
            Err(error) => {
                eprintln!("bounded-ptx: {}: {error}", path.to_string_lossy());
                return ExitCode::FAILURE;
            }
        },
        None => PTX.to_owned(),
    };
    print!("{}", with_launch_bounds(&ptx));
    ExitCode::SUCCESS
}

//! Runs the `ferrocomp` binary (on the CPU) as a user types it, in temporary directories.

mod algorithms;
mod files;
mod native;
mod subcommands;
mod support;

#![no_main]
//! The target `$FUZZ_TARGET` names: every target in one binary, to carry to a machine without cargo.

use std::sync::OnceLock;

static TARGET: OnceLock<ferrocomp_fuzz::Target> = OnceLock::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| TARGET.get_or_init(|| {
    let name = std::env::var("FUZZ_TARGET").expect("FUZZ_TARGET names the target to run");
    ferrocomp_fuzz::target(&name).unwrap_or_else(|| panic!("no fuzz target {name}"))
})(data));

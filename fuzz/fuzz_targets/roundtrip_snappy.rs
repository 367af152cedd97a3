#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ferrocomp_fuzz::run("roundtrip_snappy", data));

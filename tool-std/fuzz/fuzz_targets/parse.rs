//! The parser on arbitrary text: no panic, and a round trip through the canonical form.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| patch_checks::parse_target(data));

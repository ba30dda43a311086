//! Parse, plan and apply on an in-memory file set: no panic, and the report matches the change.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| patch_checks::apply_target(data));

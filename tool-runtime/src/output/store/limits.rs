//! The time to live and size cap of the output stores: defaults, and the environment variables
//! that change them.

use std::time::Duration;

use crate::output::usage::StoreLimits;

/// The time to live of stored outputs by default: 24 hours since last use. An output is worth
/// keeping while the conversation that made it goes on, and few go on for longer without a pause
/// long enough to run the tool again.
pub const DEFAULT_OUTPUT_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// The size cap of a store of outputs by default: 256 MiB (268,435,456 bytes). Room for
/// thousands of typical outputs and for hundreds of the large ones worth a ref, small beside the
/// disk of a cache directory and affordable in memory for a [`crate::output::MemoryStore`].
pub const DEFAULT_OUTPUT_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// The environment variable overriding [`DEFAULT_OUTPUT_TTL`], in whole seconds.
pub const OUTPUT_TTL_ENV: &str = "TOOL_OUTPUT_TTL_SECS";

/// The environment variable overriding [`DEFAULT_OUTPUT_MAX_BYTES`], in bytes.
pub const OUTPUT_MAX_BYTES_ENV: &str = "TOOL_OUTPUT_MAX_BYTES";

/// The default limits of an output store: [`DEFAULT_OUTPUT_TTL`] and [`DEFAULT_OUTPUT_MAX_BYTES`].
pub const DEFAULT_OUTPUT_LIMITS: StoreLimits = StoreLimits::new(DEFAULT_OUTPUT_TTL, DEFAULT_OUTPUT_MAX_BYTES);

/// [`DEFAULT_OUTPUT_LIMITS`] with `TOOL_OUTPUT_TTL_SECS` and `TOOL_OUTPUT_MAX_BYTES` applied.
///
/// # Errors
/// A message naming the variable when one is set but not a positive integer.
pub fn output_limits_from_env() -> Result<StoreLimits, String> {
    limits_from_env(DEFAULT_OUTPUT_LIMITS, OUTPUT_TTL_ENV, OUTPUT_MAX_BYTES_ENV)
}

/// `defaults` with the time to live (whole seconds) of `ttl_var` and the size cap (bytes) of
/// `bytes_var` applied, when they are set.
///
/// # Errors
/// A message naming the variable when one is set but not a positive integer.
pub fn limits_from_env(defaults: StoreLimits, ttl_var: &str, bytes_var: &str) -> Result<StoreLimits, String> {
    let read = |var: &str| -> Result<Option<u64>, String> {
        match std::env::var(var) {
            Err(_) => Ok(None),
            Ok(v) => match v.trim().parse::<u64>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => {
                    Err(format!("{var}={v:?} is not a positive integer; set it to a whole number above 0 or unset it"))
                }
            },
        }
    };
    let mut limits = defaults;
    if let Some(secs) = read(ttl_var)? {
        limits.ttl = Duration::from_secs(secs);
    }
    if let Some(bytes) = read(bytes_var)? {
        limits.max_bytes = bytes;
    }
    Ok(limits)
}

/// Bytes a [`crate::output::MemoryStore`] counts for each output beside its data: its slots in the store's map
/// and usage index (an estimate of their memory), so that a cap bounds the memory of many small
/// outputs too.
pub const MEMORY_ENTRY_OVERHEAD: u64 = 256;

/// Bytes a `FileStore` counts for each output beside its files: its directory (one 4 KiB block
/// on common file systems) and its slot in the usage index, so that a cap bounds the disk and the
/// index of many small outputs too (256 MiB holds at most 65,536 outputs).
pub const FILE_ENTRY_OVERHEAD: u64 = 4096;

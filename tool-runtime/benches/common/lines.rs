//! Streamed log-like input for the output cache benchmarks: no buffer of the whole size.

use std::io::Read;

/// Streams `total` bytes of log-like lines (45 to 110 bytes each); every `needle_every`-th line
/// ends with ` NEEDLE_7f3a ERR4821Z`, the literal and the regex the benchmarks search for.
pub(crate) struct Lines {
    total: u64,
    needle_every: u64,
    produced: u64,
    i: u64,
    pending: Vec<u8>,
}

impl Lines {
    /// `total` bytes, a needle line every `needle_every` lines.
    pub(crate) fn new(total: u64, needle_every: u64) -> Self {
        Self { total, needle_every, produced: 0, i: 0, pending: Vec::new() }
    }
}

impl Read for Lines {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.pending.is_empty() && self.produced < self.total {
            let i = self.i;
            self.i += 1;
            let tail = if i % self.needle_every == self.needle_every - 1 { " NEEDLE_7f3a ERR4821Z" } else { "" };
            let line = format!(
                "2026-11-29T19:00:00Z INFO worker={} step={i} {}{tail}\n",
                i % 16,
                "x".repeat((i * 7919 % 60) as usize)
            );
            self.pending.extend_from_slice(line.as_bytes());
            self.produced += line.len() as u64;
        }
        let n = buf.len().min(self.pending.len());
        buf[..n].copy_from_slice(&self.pending[..n]);
        self.pending.drain(..n);
        Ok(n)
    }
}

//! The wall clock a tool reads through [`ToolContext::now`](crate::ToolContext::now).

use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// A source of the current wall-clock time. The default is [`SystemClock`]; tests install a
/// [`FixedClock`] with [`ToolContextBuilder::clock`](crate::ToolContextBuilder::clock) so that
/// timestamps a tool writes (an `updated_at`, a log line) are exact.
///
/// Durations and time limits do not use this clock: they use tokio's clock, which tests pause with
/// `tokio::time::pause()`.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> SystemTime;
}

/// The operating system's clock ([`SystemTime::now`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that says what it was told: it starts at a given time and moves only when
/// [`set`](FixedClock::set) or [`advance`](FixedClock::advance) is called.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use tool_runtime::{Clock, FixedClock};
///
/// let clock = FixedClock::new(UNIX_EPOCH + Duration::from_secs(1_700_000_000));
/// clock.advance(Duration::from_secs(5));
/// assert_eq!(clock.now(), UNIX_EPOCH + Duration::from_secs(1_700_000_005));
/// ```
pub struct FixedClock {
    now: Mutex<SystemTime>,
}

impl FixedClock {
    /// A clock standing at `now`.
    pub fn new(now: SystemTime) -> Self {
        Self { now: Mutex::new(now) }
    }

    /// Moves the clock to `now` (backwards too).
    pub fn set(&self, now: SystemTime) {
        *self.now.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = now;
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut now = self.now.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *now += by;
    }
}

impl Clock for FixedClock {
    fn now(&self) -> SystemTime {
        *self.now.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl fmt::Debug for FixedClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FixedClock").field("now", &self.now()).finish()
    }
}

//! The progress bars `toolbox call` and `toolbox run` draw on standard error.
//!
//! Rules: bars are drawn only when standard error is a terminal (nothing at all otherwise, so a
//! redirected or captured stderr sees only logs and errors). A call gets its bar at its first
//! progress report, labelled with its tool name and call id: a spinner with the count while the
//! total is unknown, a bar `done/total` once a report gives the total. Every bar is cleared
//! before the result is printed; standard output never carries a bar.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use tool_runtime::{Progress, ToolContextBuilder};

/// The bars of one command, one per reporting call.
#[derive(Clone)]
pub(crate) struct Bars {
    multi: MultiProgress,
    bars: Arc<Mutex<HashMap<String, ProgressBar>>>,
}

impl Bars {
    /// Bars on standard error when it is a terminal, else `None`.
    pub(crate) fn for_stderr() -> Option<Self> {
        std::io::stderr().is_terminal().then(|| Self::new(ProgressDrawTarget::stderr()))
    }

    fn new(target: ProgressDrawTarget) -> Self {
        Self { multi: MultiProgress::with_draw_target(target), bars: Arc::default() }
    }

    /// `builder` with a progress listener drawing on these bars.
    pub(crate) fn listen(&self, builder: ToolContextBuilder) -> ToolContextBuilder {
        let bars = self.clone();
        builder.on_progress(move |progress: Progress| bars.report(&progress))
    }

    /// Draws one report.
    fn report(&self, progress: &Progress) {
        let Ok(mut bars) = self.bars.lock() else { return };
        let bar = bars.entry(progress.tool_call_id.clone()).or_insert_with(|| {
            let bar = self.multi.add(ProgressBar::no_length());
            bar.set_style(spinner_style());
            bar.set_prefix(format!("{} {}", progress.tool_name, progress.tool_call_id));
            bar
        });
        if let Some(total) = progress.total
            && bar.length() != Some(total)
        {
            bar.set_length(total);
            bar.set_style(bar_style());
        }
        bar.set_position(progress.done);
        bar.set_message(progress.message.clone());
    }

    /// Clears every bar (before the result is printed).
    pub(crate) fn clear(&self) {
        if let Ok(bars) = self.bars.lock() {
            for bar in bars.values() {
                bar.finish_and_clear();
            }
        }
        let _ = self.multi.clear();
    }

    /// The position, length and message of the bar of `call_id`, when it has one.
    #[cfg(test)]
    fn state(&self, call_id: &str) -> Option<(u64, Option<u64>, String)> {
        let bars = self.bars.lock().unwrap();
        bars.get(call_id).map(|bar| (bar.position(), bar.length(), bar.message()))
    }
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {prefix}: {msg}").unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{prefix}: [{bar:30}] {pos}/{len} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

#[cfg(test)]
mod tests {
    use tool_runtime::ToolContext;

    use super::*;

    #[test]
    fn a_report_without_a_total_makes_a_spinner_and_a_total_makes_it_a_bar() {
        let bars = Bars::new(ProgressDrawTarget::hidden());
        let ctx = bars.listen(ToolContext::builder()).build();
        ctx.progress(1, None, "1 file searched");
        assert_eq!(bars.state(""), Some((1, None, "1 file searched".to_owned())));
        ctx.progress(40, Some(40), "40 files searched");
        assert_eq!(bars.state(""), Some((40, Some(40), "40 files searched".to_owned())));
    }
}

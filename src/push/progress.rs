//! Progress on stderr while blobs move: one bar per blob at a terminal, nothing otherwise.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::output::Printer;

/// All the bars of one push; a no-op when stderr is not a terminal.
pub struct Progress {
    bars: Option<MultiProgress>,
}

/// One blob's bar; cheap to clone into the task that streams it.
#[derive(Clone)]
pub struct BlobProgress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(printer: &Printer) -> Self {
        let bars = printer
            .interactive()
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(10)));
        Self { bars }
    }

    /// No bars at all, whatever the terminal.
    #[cfg(test)]
    pub fn hidden() -> Self {
        Self { bars: None }
    }

    /// A bar for a blob of `total` bytes, labelled like `layer 2/4 sha256:ab12cd34ef56`.
    pub fn blob(&self, label: String, total: u64) -> BlobProgress {
        let bar = self.bars.as_ref().map(|bars| {
            let style = ProgressStyle::with_template(
                "{prefix:.bold} {bar:30.cyan/blue} {decimal_bytes:>9}/{decimal_total_bytes:<9} {decimal_bytes_per_sec:>11} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
            bars.add(ProgressBar::new(total).with_style(style).with_prefix(label))
        });
        BlobProgress { bar }
    }
}

impl BlobProgress {
    pub fn advance(&self, bytes: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(bytes);
        }
    }

    /// Ends the bar with a word on what happened (`pushed`, `exists`, `mounted`).
    pub fn finish(&self, outcome: &'static str) {
        if let Some(bar) = &self.bar {
            if let Some(total) = bar.length() {
                bar.set_position(total);
            }
            bar.finish_with_message(outcome);
        }
    }

    pub fn abandon(&self) {
        if let Some(bar) = &self.bar {
            bar.abandon_with_message("failed");
        }
    }
}

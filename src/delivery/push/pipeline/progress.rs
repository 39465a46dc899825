//! Progress on stderr while blobs move: one bar per blob at a terminal, nothing otherwise.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::plumbing::output::Printer;

/// All the bars of one push; a no-op when stderr is not a terminal.
pub(crate) struct Progress {
    bars: Option<MultiProgress>,
    /// Draws its lines around the bars while they are on screen.
    printer: Printer,
}

impl Drop for Progress {
    fn drop(&mut self) {
        if self.bars.is_some() {
            self.printer.detach_bars();
        }
    }
}

/// One blob's bar; cheap to clone into the task that streams it.
#[derive(Clone)]
pub(crate) struct BlobProgress {
    bar: Option<ProgressBar>,
}

impl Progress {
    pub(crate) fn new(printer: &Printer) -> Self {
        let bars = printer
            .interactive()
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(10)));
        if let Some(bars) = &bars {
            printer.attach_bars(bars);
        }
        Self {
            bars,
            printer: printer.clone(),
        }
    }

    /// No bars at all, whatever the terminal.
    #[cfg(test)]
    pub(crate) fn hidden() -> Self {
        Self {
            bars: None,
            printer: Printer::new(0, false, false),
        }
    }

    /// A bar for a blob of `total` bytes, labelled like `layer 2/4 sha256:ab12cd34ef56`.
    pub(crate) fn blob(&self, label: String, total: u64) -> BlobProgress {
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
    pub(crate) fn advance(&self, bytes: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(bytes);
        }
    }

    /// Back to zero, for a new attempt that sends the blob from its start.
    pub(crate) fn rewind(&self) {
        if let Some(bar) = &self.bar {
            bar.set_position(0);
        }
    }

    /// Ends the bar with a word on what happened (`pushed`, `exists`, `mounted`).
    pub(crate) fn finish(&self, outcome: &'static str) {
        if let Some(bar) = &self.bar {
            if let Some(total) = bar.length() {
                bar.set_position(total);
            }
            bar.finish_with_message(outcome);
        }
    }

    pub(crate) fn abandon(&self) {
        if let Some(bar) = &self.bar {
            bar.abandon_with_message("failed");
        }
    }
}

//! The live progress line (stderr, terminals only; not with -q).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rtick::measure::Progress;
use rtick::Nanos;

use super::fmt_latency;

/// Progress over the whole run.
#[derive(Debug)]
pub struct LiveLine {
    bar: ProgressBar,
    nsecs: bool,
}

impl LiveLine {
    /// A bar over `total` (duration-bounded runs) or a spinner; hidden when
    /// stderr is not a terminal or `quiet` is set.
    pub fn new(quiet: bool, total: Option<Nanos>, nsecs: bool) -> Self {
        let target = if quiet { ProgressDrawTarget::hidden() } else { ProgressDrawTarget::stderr_with_hz(10) };
        let bar = match total {
            Some(t) => {
                let b = ProgressBar::with_draw_target(Some(t.as_ns().max(1) as u64 / 1_000_000), target);
                b.set_style(
                    ProgressStyle::with_template("{elapsed:>4} / {len_s} [{bar:20}] {msg}")
                        .expect("valid template")
                        .with_key("len_s", |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                            let _ = write!(w, "{}s", s.len().unwrap_or(0).div_ceil(1000));
                        })
                        .progress_chars("=> "),
                );
                b
            }
            None => {
                let b = ProgressBar::with_draw_target(None, target);
                b.set_style(ProgressStyle::with_template("{elapsed:>4} {msg}").expect("valid template"));
                b
            }
        };
        LiveLine { bar, nsecs }
    }

    /// Shows a progress snapshot.
    pub fn update(&self, p: &Progress<'_>) {
        if self.bar.is_hidden() {
            return;
        }
        self.bar.set_position((p.elapsed.as_ns() / 1_000_000) as u64);
        let f = |n: Nanos| fmt_latency(n.as_ns(), self.nsecs);
        let threads: Vec<String> = p
            .threads
            .iter()
            .enumerate()
            .take(4)
            .map(|(i, t)| format!("T{i} n {} min {} avg {} max {}", t.count, f(t.min), f(t.avg), f(t.max)))
            .collect();
        let more = if p.threads.len() > 4 {
            format!(" (+{})", rtick::text::count((p.threads.len() - 4) as u64, "thread"))
        } else {
            String::new()
        };
        self.bar.set_message(format!(
            "{} ({}/{}) {}{more} {}",
            p.mechanism,
            p.mechanism_index + 1,
            p.mechanisms,
            threads.join(" | "),
            super::unit(self.nsecs)
        ));
    }

    /// Removes the line.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

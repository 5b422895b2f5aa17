//! The live progress line (stderr, terminals only; not with -q).

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rtick::measure::Progress;
use rtick::Nanos;

use super::fmt_latency;

/// Progress over the whole run.
#[derive(Debug)]
pub struct LiveLine {
    bar: ProgressBar,
    per_mechanism: Option<Nanos>,
    nsecs: bool,
    loops: Option<u64>,
}

impl LiveLine {
    /// A bar over `total` (duration-bounded runs) or a spinner; hidden when
    /// stderr is not a terminal or `quiet` is set.
    pub fn new(
        quiet: bool,
        total: Option<Nanos>,
        per_mechanism: Option<Nanos>,
        loops: Option<u64>,
        nsecs: bool,
    ) -> Self {
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
        LiveLine { bar, per_mechanism, nsecs, loops }
    }

    /// Shows a progress snapshot.
    pub fn update(&self, p: &Progress<'_>) {
        if self.bar.is_hidden() {
            return;
        }
        let done_before = self.per_mechanism.map_or(0, |d| d.as_ns() / 1_000_000 * p.mechanism_index as i64);
        let within = match (self.per_mechanism, self.loops) {
            (Some(d), _) => p.elapsed.as_ns().min(d.as_ns()) / 1_000_000,
            _ => 0,
        };
        self.bar.set_position((done_before + within) as u64);
        let f = |n: Nanos| fmt_latency(n.as_ns(), self.nsecs);
        let threads: Vec<String> = p
            .threads
            .iter()
            .enumerate()
            .take(4)
            .map(|(i, t)| format!("T{i} n {} min {} avg {} max {}", t.count, f(t.min), f(t.avg), f(t.max)))
            .collect();
        let more = if p.threads.len() > 4 { format!(" (+{} threads)", p.threads.len() - 4) } else { String::new() };
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

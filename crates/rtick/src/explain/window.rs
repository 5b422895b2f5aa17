//! The largest latency over a sliding window, for the
//! `rtick_wakeup_latency_max_seconds` gauge (a histogram loses the maximum).
//!
//! A fixed ring of one-second sub-windows, each keeping its second and its
//! maximum: memory stays the same however long the monitor runs, and the
//! window slides by whole seconds.

/// The window's length in seconds (stated in the gauge's HELP).
pub const WINDOW_SECS: usize = 60;

/// Maxima of the last [`WINDOW_SECS`] seconds.
#[derive(Debug, Clone)]
pub struct WindowMax {
    /// (second, largest value seen in it); a slot is reused when its
    /// second is a whole window old.
    slots: [Option<(u64, i64)>; WINDOW_SECS],
}

impl Default for WindowMax {
    fn default() -> Self {
        WindowMax { slots: [None; WINDOW_SECS] }
    }
}

impl WindowMax {
    /// Records a value seen in second `sec` (seconds since any fixed start).
    pub fn record(&mut self, sec: u64, value: i64) {
        let slot = &mut self.slots[(sec % WINDOW_SECS as u64) as usize];
        *slot = match *slot {
            Some((s, max)) if s == sec => Some((s, max.max(value))),
            _ => Some((sec, value)),
        };
    }

    /// The largest value of the seconds `now − WINDOW_SECS + 1 ..= now`;
    /// `None` when nothing was recorded in them.
    pub fn max(&self, now: u64) -> Option<i64> {
        let oldest = now.saturating_sub(WINDOW_SECS as u64 - 1);
        self.slots.iter().flatten().filter(|(s, _)| (oldest..=now).contains(s)).map(|&(_, m)| m).max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_maximum_leaves_the_window_after_sixty_seconds() {
        let mut w = WindowMax::default();
        assert_eq!(w.max(0), None);
        w.record(10, 500);
        w.record(10, 300);
        w.record(11, 200);
        assert_eq!(w.max(11), Some(500));
        assert_eq!(w.max(69), Some(500), "second 10 is still in the window 10..=69");
        assert_eq!(w.max(70), Some(200), "second 10 left; 11 is in");
        assert_eq!(w.max(71), None);
        // A slot is reused a window later: the old second's maximum is gone.
        w.record(70, 100);
        assert_eq!(w.max(70), Some(200));
        w.record(130, -5);
        assert_eq!(w.max(130), Some(-5), "early wake-ups (negative latency) are values too");
    }
}

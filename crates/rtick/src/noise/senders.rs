//! Who sent a source's IPIs ([`SentBy`]): the senders the trace named,
//! counted per sender, a bounded number of them apart.

use crate::ktrace::Sender;

/// Senders counted apart per source; later ones are counted together.
pub const MAX_SENDERS: usize = 8;

/// The senders of one source's IPIs inside gaps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SentBy {
    /// The first [`MAX_SENDERS`] distinct senders (CPU, task, function), each with its count.
    kept: Vec<(Sender, u64)>,
    /// IPIs of senders past those kept.
    others: u64,
}

impl SentBy {
    /// Counts one IPI sent by `s`.
    pub fn add(&mut self, s: &Sender) {
        if let Some((_, n)) = self.kept.iter_mut().find(|(k, _)| k == s) {
            *n += 1;
        } else if self.kept.len() < MAX_SENDERS {
            self.kept.push((s.clone(), 1));
        } else {
            self.others += 1;
        }
    }

    /// The sender of the most of them, and how many it sent (the first kept on a tie).
    pub fn top(&self) -> Option<(&Sender, u64)> {
        let mut top: Option<(&Sender, u64)> = None;
        for (s, n) in &self.kept {
            if top.is_none_or(|(_, m)| *n > m) {
                top = Some((s, *n));
            }
        }
        top
    }

    /// The IPIs whose sender was named, all senders together.
    pub fn named(&self) -> u64 {
        self.kept.iter().map(|(_, n)| n).sum::<u64>() + self.others
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(cpu: usize, pid: i32) -> Sender {
        Sender { cpu, pid, comm: None, work: 0xf1 }
    }

    #[test]
    fn the_top_sender_is_the_most_frequent_and_the_senders_kept_are_bounded() {
        let mut s = SentBy::default();
        assert_eq!(s.top(), None);
        s.add(&from(0, 7));
        s.add(&from(0, 42));
        s.add(&from(0, 42));
        assert_eq!(s.top().map(|(x, n)| (x.pid, n)), Some((42, 2)));
        // The same task on another CPU, or running another function, is another sender.
        s.add(&from(2, 42));
        s.add(&Sender { work: 0xd0, ..from(0, 42) });
        assert_eq!(s.top().map(|(x, n)| (x.cpu, x.pid, n)), Some((0, 42, 2)));
        for pid in 1000..1100 {
            s.add(&from(1, pid));
        }
        assert_eq!(s.kept.len(), MAX_SENDERS);
        assert_eq!(s.named(), 105, "every IPI counted, past the senders kept too");
        assert_eq!(s.top().map(|(x, n)| (x.pid, n)), Some((42, 2)));
    }
}

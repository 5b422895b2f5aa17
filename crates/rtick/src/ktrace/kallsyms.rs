//! Kernel addresses by name: `/proc/kallsyms`, read once when something is
//! first named, its text symbols sorted by address and searched by bisection.

use std::fmt;
use std::sync::OnceLock;

const PATH: &str = "/proc/kallsyms";
/// An address further than this past the nearest symbol is not in it.
const MAX_OFFSET: u64 = 1 << 20;

/// The kernel's text symbols, sorted by address.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    syms: Vec<(u64, String)>,
}

/// Why addresses cannot be named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unavailable {
    /// Every address reads as 0: `kernel.kptr_restrict` hides them from this user.
    Hidden,
    /// The file could not be read or held no symbol.
    Unreadable(String),
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::Hidden => match std::fs::read_to_string("/proc/sys/kernel/kptr_restrict") {
                // 2 hides them from root as well.
                Ok(v) if v.trim() == "2" => write!(
                    f,
                    "{PATH} shows every address as 0 (kernel.kptr_restrict is 2: sysctl kernel.kptr_restrict=1 shows them to root)"
                ),
                _ => write!(f, "{PATH} shows every address as 0 (kernel.kptr_restrict; run as root to name it)"),
            },
            Unavailable::Unreadable(why) => write!(f, "{PATH}: {why}"),
        }
    }
}

impl Kallsyms {
    /// Parses the text of `/proc/kallsyms` (`ADDRESS TYPE NAME [MODULE]`),
    /// keeping the text (code) symbols.
    pub fn parse(text: &str) -> Result<Kallsyms, Unavailable> {
        let (mut syms, mut lines) = (Vec::new(), 0usize);
        for line in text.lines() {
            let mut it = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (it.next(), it.next(), it.next()) else { continue };
            let Ok(addr) = u64::from_str_radix(addr, 16) else { continue };
            lines += 1;
            if addr != 0 && matches!(kind, "t" | "T" | "w" | "W") {
                syms.push((addr, name.to_string()));
            }
        }
        if syms.is_empty() {
            return Err(if lines > 0 { Unavailable::Hidden } else { Unavailable::Unreadable("no symbols".into()) });
        }
        syms.sort_unstable();
        Ok(Kallsyms { syms })
    }

    /// Reads and parses `/proc/kallsyms`.
    pub fn load() -> Result<Kallsyms, Unavailable> {
        let text = std::fs::read_to_string(PATH).map_err(|e| Unavailable::Unreadable(e.to_string()))?;
        Kallsyms::parse(&text)
    }

    /// The symbol `addr` is in and the offset into it.
    pub fn resolve(&self, addr: u64) -> Option<(&str, u64)> {
        let i = self.syms.partition_point(|s| s.0 <= addr);
        let (start, name) = self.syms.get(i.checked_sub(1)?)?;
        let offset = addr - start;
        (offset < MAX_OFFSET).then_some((name.as_str(), offset))
    }

    /// The address of the function `name`.
    pub fn address(&self, name: &str) -> Option<u64> {
        self.syms.iter().find(|s| s.1 == name).map(|s| s.0)
    }

    /// `name`, or `name+0xOFFSET` inside a function.
    pub fn name(&self, addr: u64) -> Option<String> {
        self.resolve(addr).map(|(n, o)| if o == 0 { n.to_string() } else { format!("{n}+{o:#x}") })
    }
}

/// The running kernel's symbols, loaded on the first call (and kept: what
/// the trigger of [`stack`](super::stack) was set from names its stacks).
pub fn system() -> Result<&'static Kallsyms, &'static Unavailable> {
    static SYMS: OnceLock<Result<Kallsyms, Unavailable>> = OnceLock::new();
    SYMS.get_or_init(Kallsyms::load).as_ref()
}

/// `addr` named from the running kernel's symbols ([`system`]), else the
/// address and why it has no name.
pub fn describe(addr: u64) -> String {
    match system() {
        Ok(k) => k.name(addr).unwrap_or_else(|| format!("{addr:#x} (in no kernel symbol)")),
        Err(why) => format!("{addr:#x} (unnamed: {why})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "ffffffff81000000 T _stext\n\
                        ffffffff8141e4a0 t tick_sched_timer\n\
                        ffffffff81200000 T hrtimer_wakeup\n\
                        ffffffff81300000 D some_data\n\
                        ffffffffc0001000 t mod_fn\t[some_mod]\n";

    #[test]
    fn names_exact_and_inside_addresses() {
        let k = Kallsyms::parse(TEXT).unwrap();
        assert_eq!(k.name(0xffffffff81200000).as_deref(), Some("hrtimer_wakeup"));
        assert_eq!(k.address("hrtimer_wakeup"), Some(0xffffffff81200000));
        assert_eq!(k.address("nothing"), None);
        assert_eq!(k.name(0xffffffff8141e4b0).as_deref(), Some("tick_sched_timer+0x10"));
        assert_eq!(k.name(0xffffffffc0001004).as_deref(), Some("mod_fn+0x4"));
        // Data symbols are not functions: 1 MiB past one is in none; nor is below the first.
        assert_eq!(k.name(0xffffffff81300000), None);
        assert_eq!(k.name(0x1000), None);
    }

    #[test]
    fn zero_addresses_are_hidden_not_names() {
        let hidden = "0000000000000000 T _stext\n0000000000000000 t tick_sched_timer\n";
        assert_eq!(Kallsyms::parse(hidden).unwrap_err(), Unavailable::Hidden);
        assert!(Unavailable::Hidden.to_string().contains("kptr_restrict"));
        assert!(matches!(Kallsyms::parse(""), Err(Unavailable::Unreadable(_))));
    }

    #[test]
    fn the_running_kernel_names_its_own_functions() {
        let k = Kallsyms::load().expect("root reads /proc/kallsyms");
        let text = std::fs::read_to_string(PATH).unwrap();
        let line = text.lines().find(|l| l.ends_with(" hrtimer_wakeup")).expect("hrtimer_wakeup in kallsyms");
        let addr = u64::from_str_radix(line.split(' ').next().unwrap(), 16).unwrap();
        assert_eq!(k.name(addr).as_deref(), Some("hrtimer_wakeup"));
        assert_eq!(describe(addr + 3), "hrtimer_wakeup+0x3");
        let culprit = crate::explain::Culprit::Hrtimer { hrtimer: 0, function: addr };
        assert_eq!(culprit.to_string(), "hrtimer callback hrtimer_wakeup");
    }
}

//! The kernel's preemption model — none, voluntary, full, lazy or
//! PREEMPT_RT — whether it can be switched (PREEMPT_DYNAMIC), and which file
//! said so. The one reading of this fact: the audit and `rtick measure`'s
//! header both use it.
//!
//! The model is taken from the most authoritative source readable: a
//! PREEMPT_RT build first (nothing switches it off), then PREEMPT_DYNAMIC's
//! current mode in debugfs, then `preempt=` on the command line, then the
//! build configuration. When none of them names a model the model is unknown;
//! `uname -v` alone is not used to name one, since its `PREEMPT` flag stands
//! for full or lazy alike.

use std::fmt;

use super::KernelConfig;
use super::{boot_param, SysRoot};

/// The run-time preemption mode (`/sys/kernel/debug/sched/preempt`).
pub const DEBUGFS_PREEMPT: &str = "/sys/kernel/debug/sched/preempt";

/// A preemption model.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Preempt {
    /// No forced preemption (server).
    None,
    /// Voluntary preemption points (desktop).
    Voluntary,
    /// Preemptible kernel (low-latency desktop).
    Full,
    /// Preemption of SCHED_OTHER tasks deferred to the tick (6.13 and later).
    Lazy,
    /// PREEMPT_RT: fully preemptible, threaded interrupts, sleeping locks.
    Rt,
}

impl Preempt {
    /// The kernel's name for it (`preempt=` and debugfs), `rt` for PREEMPT_RT.
    pub fn name(self) -> &'static str {
        match self {
            Preempt::None => "none",
            Preempt::Voluntary => "voluntary",
            Preempt::Full => "full",
            Preempt::Lazy => "lazy",
            Preempt::Rt => "rt",
        }
    }

    /// The mode named `s` as `preempt=` and debugfs name them; `None` for
    /// any other word (the kernel ignores an unknown `preempt=`).
    pub fn from_mode(s: &str) -> Option<Preempt> {
        [Preempt::None, Preempt::Voluntary, Preempt::Full, Preempt::Lazy].into_iter().find(|m| m.name() == s)
    }
}

impl fmt::Display for Preempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where the model was read.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PreemptSource {
    /// `<option>=y` in the kernel build configuration; on a PREEMPT_DYNAMIC
    /// kernel, the default mode.
    Config(&'static str),
    /// `/sys/kernel/realtime` is 1 (PREEMPT_RT kernels).
    Realtime,
    /// `uname -v` (`/proc/sys/kernel/version`) names PREEMPT_RT.
    Version,
    /// The current mode in [`DEBUGFS_PREEMPT`].
    Debugfs,
    /// `preempt=` on the kernel command line (PREEMPT_DYNAMIC kernels).
    Cmdline,
    /// Nothing readable names the model.
    Unknown,
}

/// The kernel's preemption model.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PreemptModel {
    /// The model; `None` when nothing readable names it.
    pub model: Option<Preempt>,
    /// Whether the kernel is built with PREEMPT_DYNAMIC (the mode can be
    /// chosen at boot and changed at run time).
    pub dynamic: bool,
    /// Where `model` was read.
    pub source: PreemptSource,
}

/// What the model is read from, each `None` when missing or unreadable.
#[derive(Copy, Clone, Debug, Default)]
pub struct PreemptInputs<'a> {
    /// `/proc/sys/kernel/version` (`uname -v`).
    pub version: Option<&'a str>,
    /// `/sys/kernel/realtime`.
    pub realtime: Option<&'a str>,
    /// [`DEBUGFS_PREEMPT`].
    pub debugfs: Option<&'a str>,
    /// `/proc/cmdline`.
    pub cmdline: Option<&'a str>,
    /// The kernel build configuration.
    pub config: Option<&'a KernelConfig>,
}

/// The build options that choose a model, in the order they are checked.
const CONFIG_MODELS: [(&str, Preempt); 5] = [
    ("CONFIG_PREEMPT_RT", Preempt::Rt),
    ("CONFIG_PREEMPT", Preempt::Full),
    ("CONFIG_PREEMPT_LAZY", Preempt::Lazy),
    ("CONFIG_PREEMPT_VOLUNTARY", Preempt::Voluntary),
    ("CONFIG_PREEMPT_NONE", Preempt::None),
];

impl PreemptModel {
    /// Reads the model under `root`; `cmdline` and `config` as the caller
    /// already read them (`/proc/cmdline`, [`KernelConfig::read`]).
    pub fn read(root: &SysRoot, cmdline: Option<&str>, config: Option<&KernelConfig>) -> PreemptModel {
        let version = root.read("/proc/sys/kernel/version");
        let realtime = root.read("/sys/kernel/realtime");
        let debugfs = root.read(DEBUGFS_PREEMPT);
        PreemptModel::from_inputs(&PreemptInputs {
            version: version.as_deref(),
            realtime: realtime.as_deref(),
            debugfs: debugfs.as_deref(),
            cmdline,
            config,
        })
    }

    /// The model the inputs give.
    pub fn from_inputs(i: &PreemptInputs<'_>) -> PreemptModel {
        let flags: Vec<&str> = i.version.map(|v| v.split_whitespace().collect()).unwrap_or_default();
        let built = |key: &str| i.config.is_some_and(|c| c.is_y(key));
        let dynamic = flags.contains(&"PREEMPT_DYNAMIC") || built("CONFIG_PREEMPT_DYNAMIC");
        let found = |model, source| PreemptModel { model: Some(model), dynamic, source };
        if built("CONFIG_PREEMPT_RT") {
            return found(Preempt::Rt, PreemptSource::Config("CONFIG_PREEMPT_RT"));
        }
        if i.realtime.map(str::trim) == Some("1") {
            return found(Preempt::Rt, PreemptSource::Realtime);
        }
        // Kernels before 5.x with the RT patch say "PREEMPT RT".
        if flags.contains(&"PREEMPT_RT") || flags.windows(2).any(|w| w == ["PREEMPT", "RT"]) {
            return found(Preempt::Rt, PreemptSource::Version);
        }
        if let Some(m) = i.debugfs.and_then(debugfs_mode) {
            return found(m, PreemptSource::Debugfs);
        }
        // Only PREEMPT_DYNAMIC kernels take preempt=.
        let boot = i.cmdline.filter(|_| dynamic).and_then(|c| boot_param(c, "preempt")).and_then(Preempt::from_mode);
        if let Some(m) = boot {
            return found(m, PreemptSource::Cmdline);
        }
        if let Some(&(key, m)) = CONFIG_MODELS.iter().find(|(key, _)| built(key)) {
            return found(m, PreemptSource::Config(key));
        }
        PreemptModel { model: None, dynamic, source: PreemptSource::Unknown }
    }

    /// Whether the kernel is PREEMPT_RT.
    pub fn is_rt(&self) -> bool {
        self.model == Some(Preempt::Rt)
    }
}

/// `none (PREEMPT_DYNAMIC)`, `rt`, `unknown` …
impl fmt::Display for PreemptModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.model {
            Some(m) => write!(f, "{m}")?,
            None => f.write_str("unknown")?,
        }
        if self.dynamic {
            f.write_str(" (PREEMPT_DYNAMIC)")?;
        }
        Ok(())
    }
}

/// The current mode in debugfs, the one word in parentheses:
/// `none voluntary (full) lazy` → full. `None` unless exactly one known
/// mode is marked.
pub fn debugfs_mode(text: &str) -> Option<Preempt> {
    let mut marked = text.split_whitespace().filter_map(|w| w.strip_prefix('(')?.strip_suffix(')'));
    let mode = marked.next()?;
    if marked.next().is_some() {
        return None;
    }
    Preempt::from_mode(mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(i: PreemptInputs<'_>) -> PreemptModel {
        PreemptModel::from_inputs(&i)
    }

    fn config(text: &str) -> KernelConfig {
        KernelConfig::parse(text, "test")
    }

    #[test]
    fn debugfs_marks_one_mode() {
        assert_eq!(debugfs_mode("none voluntary (full) lazy\n"), Some(Preempt::Full));
        assert_eq!(debugfs_mode("(none) voluntary full"), Some(Preempt::None));
        assert_eq!(debugfs_mode("none voluntary full (lazy)"), Some(Preempt::Lazy));
        assert_eq!(debugfs_mode("none voluntary full"), None, "nothing marked");
        assert_eq!(debugfs_mode("(none) (full)"), None, "two marked");
        assert_eq!(debugfs_mode("none (turbo)"), None, "an unknown mode");
        assert_eq!(debugfs_mode("none (full"), None, "unbalanced");
        assert_eq!(debugfs_mode(""), None);
    }

    #[test]
    fn rt_from_any_of_its_signs() {
        let rt = |source| PreemptModel { model: Some(Preempt::Rt), dynamic: false, source };
        let c = config("CONFIG_PREEMPT_RT=y\n");
        assert_eq!(
            model(PreemptInputs { config: Some(&c), realtime: Some("1"), ..Default::default() }),
            rt(PreemptSource::Config("CONFIG_PREEMPT_RT"))
        );
        assert_eq!(model(PreemptInputs { realtime: Some("1\n"), ..Default::default() }), rt(PreemptSource::Realtime));
        assert_eq!(
            model(PreemptInputs { version: Some("#1 SMP PREEMPT_RT Debian 6.1.76-1"), ..Default::default() }),
            rt(PreemptSource::Version)
        );
        assert_eq!(
            model(PreemptInputs { version: Some("#1 SMP PREEMPT RT Debian 4.19"), ..Default::default() }),
            rt(PreemptSource::Version)
        );
        // Not RT: realtime 0, a flag that only contains the words.
        let no =
            model(PreemptInputs { realtime: Some("0"), version: Some("#1 SMP PREEMPT_RTX"), ..Default::default() });
        assert_eq!(no, PreemptModel { model: None, dynamic: false, source: PreemptSource::Unknown });
    }

    #[test]
    fn dynamic_mode_from_debugfs_then_cmdline_then_config() {
        let c = config("CONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_PREEMPT_DYNAMIC=y\n");
        let base = PreemptInputs {
            version: Some("#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1"),
            cmdline: Some("root=/dev/sda1 preempt=none ro"),
            debugfs: Some("none voluntary (full) lazy"),
            config: Some(&c),
            ..Default::default()
        };
        let dyn_model = |m, source| PreemptModel { model: Some(m), dynamic: true, source };
        assert_eq!(model(base), dyn_model(Preempt::Full, PreemptSource::Debugfs));
        assert_eq!(model(PreemptInputs { debugfs: None, ..base }), dyn_model(Preempt::None, PreemptSource::Cmdline));
        assert_eq!(
            model(PreemptInputs { debugfs: Some("garbage"), cmdline: Some("preempt=turbo"), ..base }),
            dyn_model(Preempt::Voluntary, PreemptSource::Config("CONFIG_PREEMPT_VOLUNTARY")),
            "a malformed debugfs file and an unknown preempt= fall back to the built-in default"
        );
        assert_eq!(model(base).to_string(), "full (PREEMPT_DYNAMIC)");
    }

    #[test]
    fn cmdline_counts_only_on_dynamic_kernels() {
        let c = config("CONFIG_PREEMPT_NONE=y\n");
        let m = model(PreemptInputs {
            version: Some("#1 SMP"),
            cmdline: Some("preempt=full"),
            config: Some(&c),
            ..Default::default()
        });
        assert_eq!(
            m,
            PreemptModel {
                model: Some(Preempt::None),
                dynamic: false,
                source: PreemptSource::Config("CONFIG_PREEMPT_NONE")
            }
        );
        assert_eq!(m.to_string(), "none");
    }

    #[test]
    fn config_names_each_model() {
        for (text, m, key) in [
            ("CONFIG_PREEMPT=y\nCONFIG_PREEMPT_BUILD=y\n", Preempt::Full, "CONFIG_PREEMPT"),
            ("CONFIG_PREEMPT_LAZY=y\n", Preempt::Lazy, "CONFIG_PREEMPT_LAZY"),
            (
                "# CONFIG_PREEMPT_RT is not set\nCONFIG_PREEMPT_VOLUNTARY=y\n",
                Preempt::Voluntary,
                "CONFIG_PREEMPT_VOLUNTARY",
            ),
            ("CONFIG_PREEMPT_NONE=y\n", Preempt::None, "CONFIG_PREEMPT_NONE"),
        ] {
            let c = config(text);
            let got = model(PreemptInputs { config: Some(&c), ..Default::default() });
            assert_eq!(
                got,
                PreemptModel { model: Some(m), dynamic: false, source: PreemptSource::Config(key) },
                "{text}"
            );
        }
    }

    #[test]
    fn nothing_readable_is_unknown() {
        let unknown = PreemptModel { model: None, dynamic: false, source: PreemptSource::Unknown };
        assert_eq!(model(PreemptInputs::default()), unknown);
        assert_eq!(unknown.to_string(), "unknown");
        // uname -v's PREEMPT stands for full or lazy: it names no model alone.
        assert_eq!(model(PreemptInputs { version: Some("#1 SMP PREEMPT Tue"), ..Default::default() }), unknown);
        let dynamic = model(PreemptInputs { version: Some("#1 SMP PREEMPT_DYNAMIC @0"), ..Default::default() });
        assert_eq!(dynamic, PreemptModel { dynamic: true, ..unknown });
        assert_eq!(dynamic.to_string(), "unknown (PREEMPT_DYNAMIC)");
    }
}

//! The idle state a CPU was in when its timer interrupt came late, and
//! whether that state explains the delay.
//!
//! `power:cpu_idle` says which state (its cpuidle index) the CPU entered;
//! sysfs (`cpuN/cpuidle/stateK/latency`) says how long leaving it takes at
//! worst. A delay the exit latency explains is an idle-state exit, with its
//! remedy; a delay far beyond it is the host (or firmware) holding the CPU.
//! Without a cpuidle driver (most VMs) the kernel idles in HLT, which a
//! CPU leaves in about a microsecond.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::rt::IdleStates;
use crate::system::SysRoot;
use crate::time::Nanos;

/// An idle state, by its sysfs name and exit latency.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CState {
    /// Its name (`C6`, `haltpoll idle`; `halt` without a cpuidle driver).
    pub name: String,
    /// Its exit latency (the `latency` file).
    pub exit_latency: Nanos,
}

impl CState {
    /// The state without a cpuidle driver: the kernel's default idle, HLT.
    pub fn halt() -> CState {
        CState { name: "halt (no cpuidle driver)".into(), exit_latency: Nanos::from_us(1) }
    }

    /// The longest interrupt delay this state explains: twice its exit
    /// latency and 20 µs for the interrupt's own path. Beyond it, something
    /// outside Linux held the CPU.
    pub fn explains(&self) -> Nanos {
        self.exit_latency * 2 + Nanos::from_us(20)
    }
}

impl std::fmt::Display for CState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (exit latency {})", self.name, self.exit_latency)
    }
}

/// The idle states of each CPU, by index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CStates(HashMap<u32, Vec<CState>>);

impl CStates {
    /// The states of `cpu`, for tests and callers that read them elsewhere.
    pub fn with(mut self, cpu: u32, states: Vec<CState>) -> CStates {
        self.0.insert(cpu, states);
        self
    }

    /// This machine's states (sysfs, read once per process); none for a
    /// CPU without a cpuidle driver.
    pub fn system() -> &'static CStates {
        static STATES: OnceLock<CStates> = OnceLock::new();
        STATES.get_or_init(|| {
            let cpus: Vec<usize> = (0..crate::sys::sched::online_cpus().max(1)).collect();
            let mut out = CStates::default();
            for cpu in cpus {
                if let Ok(s) = IdleStates::read(&SysRoot::default(), &[cpu]) {
                    let states = s.cpus().iter().flat_map(|(_, st)| st.iter());
                    let states = states.map(|st| CState {
                        name: st.name.clone(),
                        exit_latency: Nanos::from_us(st.exit_latency_us as i64),
                    });
                    out.0.insert(cpu as u32, states.collect());
                }
            }
            out
        })
    }

    /// The deepest state of `cpu` (the longest exit latency), else HLT (no
    /// cpuidle driver): what bounds an idle exit whose state is not traced.
    pub fn deepest(&self, cpu: u32) -> CState {
        let states = self.0.get(&cpu).into_iter().flatten();
        states.max_by_key(|s| s.exit_latency).cloned().unwrap_or_else(CState::halt)
    }

    /// State `index` of `cpu`: from its table, else HLT (no cpuidle driver).
    pub fn state(&self, cpu: u32, index: u32) -> CState {
        match self.0.get(&cpu) {
            Some(states) => states.get(index as usize).cloned().unwrap_or_else(|| CState {
                name: format!("state{index}"),
                exit_latency: states.iter().map(|s| s.exit_latency).max().unwrap_or(Nanos::ZERO),
            }),
            None => CState::halt(),
        }
    }
}

//! The CFS throttling of the cgroups of threads followed as they come and
//! go (`rtick attach`, `monitor --attach`): each thread's cpu cgroup, read
//! from `/proc/TID/cgroup` when it is first followed, watched with a
//! [`CfsWatch`] (one per distinct cgroup, at most [`MAX_CGROUPS`]), all
//! sampled from the caller's thread as it reads the trace.

use std::collections::{BTreeMap, HashMap};

use super::{CfsRun, CfsWatch, Throttling};
use crate::system::SysRoot;
use crate::time::Time;

/// The most distinct cgroups watched at once: a process's threads share
/// one as a rule; the threads of further cgroups are not matched with
/// throttling (and a note says so).
pub const MAX_CGROUPS: usize = 8;

/// The watched cgroups of the threads followed.
#[derive(Debug)]
pub struct CfsWatches {
    root: SysRoot,
    /// Each watched cgroup, by its directory.
    watches: BTreeMap<String, CfsWatch>,
    /// Each followed thread in a watched cgroup: its directory.
    of: HashMap<i32, String>,
    /// Threads whose cgroup was not watched: beyond [`MAX_CGROUPS`].
    unwatched: usize,
}

impl CfsWatches {
    /// Watches nothing yet; reads `/proc` and the cgroups under `root`.
    pub fn new(root: SysRoot) -> CfsWatches {
        CfsWatches { root, watches: BTreeMap::new(), of: HashMap::new(), unwatched: 0 }
    }

    /// Follows `tids` too: each one's cgroup is watched from now on, unless
    /// it has no bandwidth control (the root, no cpu controller), or
    /// [`MAX_CGROUPS`] others are watched already.
    pub fn follow(&mut self, tids: &[i32]) {
        for &tid in tids {
            let Some(cg) = crate::cgroup::cpu_cgroup_of(&self.root, &tid.to_string()) else { continue };
            if !self.watches.contains_key(&cg.dir) {
                if self.watches.len() >= MAX_CGROUPS {
                    self.unwatched += 1;
                    continue;
                }
                let Some(w) = CfsWatch::start(self.root.clone(), &cg) else { continue };
                self.watches.insert(cg.dir.clone(), w);
            }
            self.of.insert(tid, cg.dir);
        }
    }

    /// Stops following `tids` (threads that exited); their cgroups stay
    /// watched, within the bound.
    pub fn forget(&mut self, tids: &[i32]) {
        for t in tids {
            self.of.remove(t);
        }
    }

    /// Reads each watched cgroup's throttled time now.
    pub fn sample(&mut self) {
        self.watches.values_mut().for_each(CfsWatch::sample);
    }

    /// Forgets the samples no spike planned at `from` or later needs
    /// ([`CfsWatch::forget_before`]).
    pub fn forget_before(&mut self, from: Time) {
        self.watches.values_mut().for_each(|w| w.forget_before(from));
    }

    /// The samples of thread `tid`'s cgroup so far, if it is watched.
    pub fn run_of(&self, tid: i32) -> Option<&CfsRun> {
        self.watches.get(self.of.get(&tid)?).map(CfsWatch::run)
    }

    /// The cgroups watched.
    pub fn watched(&self) -> usize {
        self.watches.len()
    }

    /// Why some threads' waits were not matched with throttling, if so.
    pub fn note(&self) -> Option<String> {
        (self.unwatched > 0).then(|| {
            format!(
                "{} in cgroups beyond the {MAX_CGROUPS} whose CFS throttling rtick watches: their waits are not matched with it",
                crate::text::count(self.unwatched as u64, "thread")
            )
        })
    }

    /// Samples a last time; each watched cgroup's counts over the run, and
    /// its ancestors' with a quota (each once).
    pub fn finish(self) -> Vec<Throttling> {
        let mut out: Vec<Throttling> = Vec::new();
        for t in self.watches.into_values().flat_map(|w| w.finish().throttling) {
            if !out.iter().any(|o| o.path == t.path) {
                out.push(t);
            }
        }
        out
    }
}

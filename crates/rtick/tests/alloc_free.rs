//! `Periodic::wait` allocates nothing, for every mechanism: a counting global
//! allocator watches 50 waits of each. A test without the libtest harness
//! (`harness = false`): it runs in the main thread, which blocks the timer
//! signals before any other thread exists, as an application does, and
//! nothing else allocates meanwhile.

use rtick::periodic::Periodic;
use rtick::wait::{HybridSlack, KINDS};
use rtick::{Error, Nanos};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[path = "support/skip.rs"]
mod skip;
use skip::{kernel_lacks, skip};

#[global_allocator]
static GLOBAL: &StatsAlloc<std::alloc::System> = &INSTRUMENTED_SYSTEM;

fn main() {
    wait_allocates_nothing();
    println!("test result: ok. 1 passed; 0 failed (alloc_free: wait() allocated nothing)");
}

fn wait_allocates_nothing() {
    rtick::wait::block_timer_signals().unwrap();
    let mut checked = 0;
    for k in KINDS.iter().filter(|k| !k.relative) {
        let built = Periodic::builder()
            .period(Nanos::from_us(300))
            .mechanism(k.mechanism)
            .hybrid_slack(HybridSlack::Fixed(Nanos::from_us(50)))
            .mock(rtick::wait::MockScript { latencies: vec![100, 200], step: None })
            .build();
        let mut lp = match built {
            Ok(lp) => lp,
            Err(Error::Unavailable { reason, .. }) => {
                skip(&format!("{}: {reason}", k.name), kernel_lacks(k.name));
                continue;
            }
            Err(e) => panic!("{}: {e}", k.name),
        };
        lp.wait().unwrap();
        let region = Region::new(GLOBAL);
        for _ in 0..50 {
            lp.wait().unwrap();
        }
        let c = region.change();
        assert_eq!((c.allocations, c.reallocations), (0, 0), "{} allocated in wait()", k.name);
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} mechanisms checked");
}

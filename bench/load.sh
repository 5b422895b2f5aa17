#!/usr/bin/env bash
# Latency without and with load: clock_nanosleep and hybrid on CPU $CPU
# (SCHED_FIFO 90, memory locked), `--phases idle,loaded` with each built-in
# load kind on every CPU (the measured one included), then the built-in
# `cpu` load beside `stress-ng --cpu N` through `--load-cmd` (N = CPUs).
# Prints per kind: the load's rate, the CPUs' busy share in each phase,
# and the ratio loaded/idle per percentile of each mechanism.
# Usage: bench/load.sh      (SECS=5 CPU=1; needs root; installs stress-ng when missing)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-5}
CPU=${CPU:-1}
if ! command -v stress-ng >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng >/dev/null
fi
cargo build --release -q --bin rtick
out=$(mktemp -d)
n=$(nproc)
echo "machine: $n CPUs, $(uname -r), $(date -u +%Y-%m-%d); measured CPU $CPU; ${SECS} s per mechanism and phase; results in $out"
run() { # name, load options…
  local name=$1; shift
  target/release/rtick measure -m clock_nanosleep,hybrid -a "$CPU" -p 90 -q \
    --phases "idle=${SECS}s,loaded=${SECS}s" --json "$out/$name.json" "$@" >/dev/null
}
for kind in cpu memory io net sched timers; do
  run "$kind" --load "$kind"
done
run stress-ng --load-cmd "stress-ng --cpu $n --quiet"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def busy(p):
    b = p["cpu_busy"]
    return "/".join(f"{c['busy_percent']:.0f}" for c in b)
print(f"{'load':<10}{'rate':>24}  {'busy % idle → loaded (per CPU)':<32}{'mechanism':<17}{'p50×':>6}{'p99×':>9}{'p99.9×':>8}{'max×':>7}   idle p50/p99/max → loaded (µs)")
for name in ["cpu", "memory", "io", "net", "sched", "timers", "stress-ng"]:
    j = json.load(open(f"{out}/{name}.json"))
    load = j["load"]
    if load["kinds"]:
        k = load["kinds"][0]
        rate = f"{k['rate_per_s']:.3g} {k['unit'].split()[0]}/s"
    else:
        c = load["command"]
        rate = f"exit {c['exit_code'] if c['exit_code'] is not None else 'sig ' + str(c['exit_signal'])}"
    ph = j["phases"]
    rows = {(r["mechanism"], r["phase"]): r for r in j["results"]}
    for i, ratio in enumerate(j["phase_ratios"]):
        m = ratio["mechanism"]
        f = lambda v: "-" if v is None else f"{v:.2f}"
        lat = lambda r: "/".join(f"{v/1000:.1f}" for v in (r["percentiles_ns"]["50"], r["percentiles_ns"]["99"], r["max_ns"]))
        head = (f"{name:<10}{rate:>24}  {busy(ph[0]) + ' → ' + busy(ph[1]):<32}") if i == 0 else " " * 68
        print(f"{head}{m:<17}{f(ratio['50']):>6}{f(ratio['99']):>9}{f(ratio['99.9']):>8}{f(ratio['max']):>7}   "
              f"{lat(rows[(m, 'idle')])} → {lat(rows[(m, 'loaded')])}")
PY

#!/usr/bin/env bash
# What --explain costs, measured inside one run (--explain-ab): tracing
# switched off and on every PERIOD on the measured CPU, traced against plain
# stretches (same CPU, same load), RUNS runs of SECS each; then the same
# mechanisms side by side with --compare. Last, whether switching the
# events off (what --explain-ab does: the tracepoints disabled) differs from
# stopping only the ring buffer (tracing_on 0, the probes still run): one
# --explain run whose instance's tracing_on this script toggles every
# PERIOD; its wake-ups with phases were recorded, those without were not.
# Usage: bench/explain-ab.sh   (RUNS=3 SECS=20 PERIOD=1s CPU=1; needs root and tracefs)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
SECS=${SECS:-20}
PERIOD=${PERIOD:-1s}
CPU=${CPU:-1}
TRACEFS=${TRACEFS:-/sys/kernel/tracing}
cargo build --release -q --bin rtick
rtick=target/release/rtick
out=$(mktemp -d)
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d), load $(cut -d' ' -f1-3 /proc/loadavg); CPU $CPU; results in $out"
for i in $(seq 1 "$RUNS"); do
  $rtick measure -a "$CPU" -p 90 -D "$SECS" -q --explain --explain-ab "$PERIOD" --json "$out/ab-$i.json" >/dev/null
done
$rtick measure -m clock_nanosleep,timerfd,posix-timer --compare -a "$CPU" -p 90 -D "$SECS" -q \
  --explain --explain-ab --json "$out/ab-compare.json" >/dev/null

# tracing_on toggled from outside: recorded (phases) against buffer off (none).
$rtick measure -a "$CPU" -p 90 -D "$SECS" -q --explain --trace "$out/buffer.csv" >/dev/null &
pid=$!
inst="$TRACEFS/instances/rtick-$pid"
while [ ! -d "$inst" ] && kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
on=1
while kill -0 "$pid" 2>/dev/null; do
  sleep "${PERIOD%s}"
  on=$((1 - on))
  { echo "$on" >"$inst/tracing_on"; } 2>/dev/null || break   # gone: the run ended
done
wait "$pid"

python3 - "$out" "$RUNS" <<'PY'
import csv, json, math, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def q(v, p):  # nearest rank, as rtick's stats::percentile
    v = sorted(v); return v[max(1, math.ceil(p * len(v))) - 1]
def show(label, r):
    t, p, s = r["traced"], r["plain"], r["at_switches"]
    print(f"{label:<28}{t['wakeups']:>7}{t['p50_ns']:>8}{t['p99_ns']:>8}{p['wakeups']:>8}{p['p50_ns']:>8}{p['p99_ns']:>8}"
          f"   p50 ×{r['ratio_p50']:.2f}  p99 ×{r['ratio_p99']:.2f}   switches: {s['wakeups']} near, p99 {s['p99_ns']}")
print(f"{'run / mechanism':<28}{'traced':>7}{'p50':>8}{'p99':>8}{'plain':>8}{'p50':>8}{'p99':>8}   (ns)")
r50, r99, took = [], [], []
for i in range(1, runs + 1):
    ab = json.load(open(f"{out}/ab-{i}.json"))["explain"]["ab"]
    r = ab["results"][0]; r50.append(r["ratio_p50"]); r99.append(r["ratio_p99"])
    took += [s["done_ns"] - s["began_ns"] for s in ab["switches"]]
    show(f"{i} {r['mechanism']}", r)
print(f"median over the runs: p50 ×{statistics.median(r50):.2f}, p99 ×{statistics.median(r99):.2f}; "
      f"a switch takes {statistics.median(took)/1e3:.0f} µs (median), {max(took)/1e3:.0f} µs at most")
ab = json.load(open(f"{out}/ab-compare.json"))["explain"]["ab"]
print(f"--compare, stretches of {ab['period_ns']/1e6:.0f} ms:")
for r in ab["results"]:
    show(f"  {r['mechanism']}", r)
rows = list(csv.DictReader(open(f"{out}/buffer.csv")))
kind = [bool(r["irq_delay_ns"]) for r in rows]
lat = [int(r["latency_ns"]) for r in rows]
# Away from a change of state (5 wake-ups either side), as --explain-ab's guard.
keep = [i for i in range(len(rows)) if len(set(kind[max(0, i - 5):i + 6])) == 1]
rec = [lat[i] for i in keep if kind[i]]; off = [lat[i] for i in keep if not kind[i]]
print(f"tracing_on toggled from outside: recorded {len(rec)} p50 {q(rec, .5)} p99 {q(rec, .99)}, "
      f"buffer off (probes still run) {len(off)} p50 {q(off, .5)} p99 {q(off, .99)}: "
      f"p50 ×{q(rec, .5)/q(off, .5):.2f}, p99 ×{q(rec, .99)/q(off, .99):.2f}")
PY

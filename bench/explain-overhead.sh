#!/usr/bin/env bash
# What --explain costs: clock_nanosleep on one CPU (SCHED_FIFO 90, memory
# locked), runs alternating without and with --explain (PAIRS pairs of SECS
# each, same CPU), p50/p99 of each and the ratio; and the kernel events
# handled per second at 1 kHz and 20 kHz with the count of lost events
# (target: none lost).
# Usage: bench/explain-overhead.sh      (PAIRS=3 SECS=10 CPU=1; needs root and tracefs)
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-3}
SECS=${SECS:-10}
CPU=${CPU:-1}
cargo build --release -q --bin rtick
out=$(mktemp -d)
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d); CPU $CPU; results in $out"
for i in $(seq 1 "$PAIRS"); do
  target/release/rtick measure -a "$CPU" -p 90 -D "$SECS" -q --json "$out/plain-$i.json" >/dev/null
  target/release/rtick measure -a "$CPU" -p 90 -D "$SECS" -q --explain --json "$out/explain-$i.json" >/dev/null
done
target/release/rtick measure -a "$CPU" -p 90 -D "$SECS" -q --explain --json "$out/rate-1k.json" >/dev/null
target/release/rtick measure -a "$CPU" -p 90 -i 50us -D "$SECS" -q --explain --json "$out/rate-20k.json" >/dev/null
python3 - "$out" "$PAIRS" "$SECS" <<'PY'
import json, statistics, sys
out, pairs, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
print(f"{'pair':<6}{'plain p50':>11}{'p99':>9}{'explain p50':>13}{'p99':>9}   (ns)")
r50, r99 = [], []
for i in range(1, pairs + 1):
    a = json.load(open(f"{out}/plain-{i}.json"))["results"][0]["percentiles_ns"]
    b = json.load(open(f"{out}/explain-{i}.json"))["results"][0]["percentiles_ns"]
    r50.append(b["50"] / a["50"]); r99.append(b["99"] / a["99"])
    print(f"{i:<6}{a['50']:>11}{a['99']:>9}{b['50']:>13}{b['99']:>9}")
print(f"median ratio explain/plain: p50 {statistics.median(r50):.2f}, p99 {statistics.median(r99):.2f}")
for name in ("rate-1k", "rate-20k"):
    j = json.load(open(f"{out}/{name}.json"))
    e = j["explain"]
    wakes = j["results"][0]["count"]
    print(f"{name}: {e['events']} events in {secs:.0f} s = {e['events'] / secs:,.0f}/s for {wakes} wake-ups, lost {e['lost_events']}")
PY

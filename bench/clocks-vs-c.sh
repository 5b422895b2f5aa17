#!/usr/bin/env bash
# `rtick clocks` CLOCK_MONOTONIC read cost vs a minimal C loop (bench/c/clock_cost.c)
# using the same method (median over 200 batches of 1000 reads), alternating
# A B A B. Target: the medians agree within 10 %.
# Usage: bench/clocks-vs-c.sh     (RUNS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
cargo build --release -q --bin rtick
out=$(mktemp -d)
gcc -O2 -Wall -Werror -o "$out/clock_cost" bench/c/clock_cost.c
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d), clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
for i in $(seq 1 "$RUNS"); do
  c=$("$out/clock_cost")
  target/release/rtick clocks --json "$out/r.json" --rounds 1 >/dev/null
  r=$(python3 -c "import json,sys; print([c['cost_ns_median'] for c in json.load(open('$out/r.json'))['clocks'] if c['name']=='CLOCK_MONOTONIC'][0])")
  echo "$c $r"
done >"$out/rows"
python3 - "$out/rows" <<'PY'
import statistics, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
print(f"{'run':<5}{'C loop':>10}{'rtick':>10}{'ratio':>8}   (CLOCK_MONOTONIC ns per read, median over batches)")
for i, (c, r) in enumerate(rows, 1):
    print(f"{i:<5}{c:>10.2f}{r:>10.2f}{r / c:>8.3f}")
mc, mr = statistics.median(c for c, _ in rows), statistics.median(r for _, r in rows)
verdict = "within" if abs(mr / mc - 1) <= 0.10 else "OUTSIDE"
print(f"median C {mc:.2f} ns, rtick {mr:.2f} ns, ratio {mr / mc:.3f}: {verdict} 10 %")
PY

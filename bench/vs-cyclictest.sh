#!/usr/bin/env bash
# rtick measure vs cyclictest, identical settings: SCHED_FIFO 95, 1 ms interval,
# memory locked, /dev/cpu_dma_latency held at 0, clock_nanosleep(TIMER_ABSTIME).
# Both are pinned to the same CPU (CPU=0 by default): noise differs between
# CPUs (on the development VM, CPU 1 has host stalls of ~1 ms about once a
# second), and an unpinned thread of each tool may land on different ones.
# Runs alternate A B A B … so that machine noise hits both alike. Both tools
# write cyclictest's histogram format (µs buckets) and one parser computes the
# percentiles of both, so the comparison is like for like.
#
# Then a second measurement for the hybrid target: rtick hybrid vs
# clock_nanosleep in one run (p50 from rtick's ns-resolution JSON).
#
# Usage: bench/vs-cyclictest.sh            (PAIRS=3 SECS=10 CPU=0 by default; needs root)
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${PAIRS:-3}
SECS=${SECS:-10}
HMAX=${HMAX:-5000}
CPU=${CPU:-0}

. bench/rt-tests.sh cyclictest
echo "machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d); both tools on CPU $CPU; results in $out"

for i in $(seq 1 "$PAIRS"); do
  cyclictest -m -p 95 -i 1000 -D "$SECS" -q -h "$HMAX" -a "$CPU" >"$out/cyclictest-$i.hist"
  "$RTICK" measure -m clock_nanosleep -p 95 -i 1000 -D "$SECS" --dma-latency 0 -q -a "$CPU" \
    --histogram "$out/rtick-$i.hist" --histogram-max "$HMAX" >/dev/null
done
"$RTICK" measure -m clock_nanosleep,hybrid -p 95 -i 1000 -D "$SECS" --dma-latency 0 -q -a "$CPU" \
  --json "$out/hybrid.json" >/dev/null

python3 - "$out" "$PAIRS" <<'PY'
import json, statistics, sys
out, pairs = sys.argv[1], int(sys.argv[2])

def load(path):
    counts, overflow = [], 0
    for line in open(path):
        if line.startswith("# Histogram Overflows:"):
            overflow = int(line.split(":")[1].split()[0])
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        counts.append(int(f[1]))
    return counts, overflow

def pct(counts, overflow, q):
    n = sum(counts) + overflow
    rank = max(1, -(-int(q * n * 1000) // 1000))  # ceil(q·n)
    seen = 0
    for i, c in enumerate(counts):
        seen += c
        if seen >= rank:
            return i
    return float("inf")

qs = [(0.5, "p50"), (0.99, "p99"), (0.999, "p99.9")]
ratios = {k: [] for _, k in qs}
print(f"{'run':<14}{'count':>8}" + "".join(f"{k:>9}" for _, k in qs) + "   (µs, floor of bucket)")
for i in range(1, pairs + 1):
    row = {}
    for tool in ("cyclictest", "rtick"):
        c, o = load(f"{out}/{tool}-{i}.hist")
        row[tool] = {k: pct(c, o, q) for q, k in qs}
        print(f"{tool + '-' + str(i):<14}{sum(c) + o:>8}" + "".join(f"{row[tool][k]:>9}" for _, k in qs))
    for _, k in qs:
        a, b = row["cyclictest"][k], row["rtick"][k]
        ratios[k].append(b / a if a else float("nan"))
print()
for _, k in qs:
    r = ratios[k]
    print(f"rtick/cyclictest {k:<6} ratios {', '.join(f'{x:.2f}' for x in r)}  median {statistics.median(r):.2f}")

j = json.load(open(f"{out}/hybrid.json"))
by = {r["mechanism"]: r for r in j["results"]}
cn, hy = by["clock_nanosleep"], by["hybrid"]
print()
for r in (cn, hy):
    p = r["percentiles_ns"]
    print(f"{r['mechanism']:<16} p50 {p['50']:>7} ns  p99 {p['99']:>7} ns  max {r['max_ns']:>8} ns  CPU {r['cpu_percent']:.1f} %"
          + (f"  slack {r['hybrid_slack_ns']} ns" if r.get('hybrid_slack_ns') else ""))
h, c = hy["percentiles_ns"]["50"], cn["percentiles_ns"]["50"]
print(f"hybrid p50 / clock_nanosleep p50 = {h}/{c} = {h / c if c else float('nan'):.4f} (target ≤ 0.02)")
PY

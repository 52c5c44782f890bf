#!/usr/bin/env bash
# Runs tessera-schedule's search on every Tessel placement at the memory
# limits of bench/workloads/tessel/README.md and prints a Markdown table of
# P, W, peak memory, makespan at 128 micro-batches and search time, beside
# Tessel's published figures. Each case runs twice: the two SCHEDULE.json
# files must be identical (determinism), and the faster search time is kept.
#
# usage: bench/schedule/run_bench.sh [TOOL] [WORKLOADS_DIR] [> results]
#   TOOL           default: build/bin/tessera-schedule
#   WORKLOADS_DIR  default: bench/workloads/tessel
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TOOL="${1:-$ROOT/build/bin/tessera-schedule}"
WORK="${2:-$ROOT/bench/workloads/tessel}"
MICRO=128
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

if [ ! -x "$TOOL" ]; then
  echo "run_bench.sh: tool not found: $TOOL (build tessera-schedule first)" >&2
  exit 1
fi

# placement file | memory | Tessel (README) | Tessel makespan@128
CASES=(
  "vshape-d4|4|P=4, 1.2 s (K=4); fast: fails|526"
  "vshape-d4|6|fast: P=4, 1.4 s|-"
  "xshape-d4|4|P=8, 14 s (K=3); fast: fails|1036"
  "xshape-d4|7|fast: P=8, 35 s|-"
  "mshape-d4|6|P=6, 55 s (K=6); fast: P=6, 5.9 s|780"
  "nnshape-d4|6|P=10, 60 s (K=4); fast: P=8, 12.5 s|1044 (fast)"
  "kshape-d4|6|P=6, 3.6 s (K=3); fast: P=6, 0.9 s|773"
  "vshape-d8|8|timed out at 180 s|-"
  "xshape-d8|20|timed out (120-300 s)|-"
  "mshape-d8|20|timed out (120-300 s)|-"
  "nnshape-d8|20|timed out (120-300 s)|-"
  "kshape-d8|20|timed out (120-300 s)|-"
)

echo "| placement | devs | memory | W | P | peak memory per device | makespan@$MICRO | search time | deterministic | Tessel (README) | Tessel makespan@$MICRO |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for c in "${CASES[@]}"; do
  IFS='|' read -r name mem tessel tmk <<<"$c"
  file="$WORK/$name.json"
  out1="$TMP/$name-$mem.1"
  out2="$TMP/$name-$mem.2"
  if ! "$TOOL" "$file" --memory "$mem" --micro-batches "$MICRO" \
      --timeline-width 0 -o "$out1.json" >"$out1.txt" 2>&1; then
    echo "| ${name%-d*} | ${name##*-d} | $mem | - | failed: $(tail -1 "$out1.txt") | | | | | $tessel | $tmk |"
    continue
  fi
  "$TOOL" "$file" --memory "$mem" --micro-batches "$MICRO" \
    --timeline-width 0 -o "$out2.json" >"$out2.txt" 2>&1
  field() { sed -n "s/^$1: //p" "$2" | head -1; }
  P=$(field "period P" "$out1.txt")
  W=$(field "lower bound W" "$out1.txt")
  peak=$(field "peak memory" "$out1.txt")
  mk=$(sed -n "s/^makespan ($MICRO micro-batches): //p" "$out1.txt")
  t1=$(field "search time" "$out1.txt" | cut -d' ' -f1)
  t2=$(field "search time" "$out2.txt" | cut -d' ' -f1)
  t=$(awk -v a="$t1" -v b="$t2" 'BEGIN { print (a < b ? a : b) }')
  if cmp -s "$out1.json" "$out2.json"; then det=yes; else det=NO; fi
  echo "| ${name%-d*} | ${name##*-d} | $mem | $W | $P | $peak | $mk | $t s | $det | $tessel | $tmk |"
done

#!/usr/bin/env bash
# Planner benchmark on Piper's inputs (bench/planner/results.md).
#
#   bench/planner/run_bench.sh [path/to/tessera-plan] [workloads dir]
#
# For each k, runs tessera-plan in the Piper-compatible mode (exact stage
# knapsack) and with Piper's greedy knapsack (our reimplementation of Piper's
# search, for reference), plus the default iteration objective, and prints a
# Markdown table: time per sample, plan shape, CPU seconds, peak RSS.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
plan="${1:-$repo/build/bin/tessera-plan}"
workloads="${2:-$repo/bench/workloads}"
ks="${KS:-8 16 32 64 128 256 512 1024 2048}"

summary() {
  # Prints: time_per_sample | stages (t x d : nodes, R = recomputed) | cpu | rss
  python3 -c '
import json, sys
j = json.load(sys.stdin)
shape = " ".join("%dx%d:%d%s" % (s["t"], s["d"], len(s["nodes"]),
                 ("R%d" % len(s["recompute"])) if s["recompute"] else "")
                 for s in j["stages"])
print("%.7g | %.6g | %s | %d/%d | %.4f | %.1f" % (
    j["time_per_sample"], j["iteration_time"], shape, j["devices_used"],
    j["max_devices"], j["cpu_seconds"], j["peak_rss_kib"] / 1024.0))
'
}

run() {
  local name="$1" mem="$2" n="$3"; shift 3
  echo
  echo "### $name, $mem GiB, N=$n, 25 GiB/s"
  echo
  echo "| k | mode | time/sample (s) | iteration (s) | stages t x d : nodes (R = recomputed) | devices | CPU s | peak RSS MiB |"
  echo "|---|---|---|---|---|---|---|---|"
  for k in $ks; do
    for mode in "piper exact" "piper greedy" "iteration exact"; do
      set -- $mode
      local out
      if out=$("$plan" --piper-json "$workloads/piper/$name.json" --devices "$k" \
          --memory-gib "$mem" --micro-batches "$n" --bandwidth-gibps 25 \
          --objective "$1" --knapsack "$2" --json 2>&1); then
        echo "| $k | $1/$2 | $(echo "$out" | summary) |"
      else
        echo "| $k | $1/$2 | failed: $(echo "$out" | tail -1) | | | | | |"
      fi
    done
  done
}

echo "machine: $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; date: $(date -u +%Y-%m-%d)"
run bert32a100 8 1920
run resnet 4 7680

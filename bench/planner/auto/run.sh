#!/usr/bin/env bash
# --plan auto on GPT-shaped training steps (bench/planner/auto/results.md).
#
#   bench/planner/auto/run.sh [build dir]
#
# Generates GPT-2 124M and a 96-layer GPT-3 (175B) forward without weights
# (gen_gpt.py), makes the AdamW training step with tessera-opt, and plans it
# with dist-plan plan=auto on 8, 64, 256 and 1024 H100s (80 GiB each). Only
# the planning runs (no partition). Prints each step's wall time and the
# plan reports.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
build="${1:-$repo/build}"
opt="$build/bin/tessera-opt"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
devices="${DEVICES:-8 64 256 1024}"

seconds() { # seconds(cmd...): runs cmd, prints its wall seconds on stderr
  local start end
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  echo "  wall $(echo "$end - $start" | bc) s: ${*:1:2}" >&2
}

model() { # model NAME gen_gpt.py-args...
  local name=$1
  shift
  echo "== $name ($*)" >&2
  seconds /usr/bin/python3 "$here/gen_gpt.py" "$@" -o "$work/$name.mlir"
  seconds "$opt" "$work/$name.mlir" -tsr-autodiff -tsr-decompose-means \
    -tsr-optimizer=optimizer=adamw -inline -symbol-dce -canonicalize -cse \
    -mlir-print-debuginfo -o "$work/$name.step.mlir"
  for n in $devices; do
    echo "-- $name on $n x h100" >&2
    seconds "$opt" "$work/$name.step.mlir" -o /dev/null \
      -dist-plan="plan=auto devices=$n device-spec=h100 memory-gib=80 report=true" ||
      true # an infeasible size is reported, not fatal
  done
}

model gpt2-124m --layers 12 --width 768 --heads 12 --context 1024 \
  --vocab 50257 --batch 512
model gpt3-175b --layers 96 --width 12288 --heads 96 --context 2048 \
  --vocab 50257 --batch 1536

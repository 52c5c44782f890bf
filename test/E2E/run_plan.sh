#!/bin/sh
# Compiles MODEL with a plan, trains it for the steps of the equivalence
# tests, and leaves OUT/train.jsonl and OUT/final.safetensors.
#   run_plan.sh TESSERA_COMPILE MODEL DATA OUT [tessera-compile flags...]
set -e
compile=$1 model=$2 data=$3 out=$4
shift 4
rm -rf "$out"
"$compile" "$model" -o "$out" --quiet "$@"
"$out/run" --data "$data" --steps 5 --optimizer adamw --lr 1e-3 \
  --save "$out/final.safetensors" > "$out/train.jsonl" 2> "$out/train.err" ||
  { cat "$out/train.err"; exit 1; }

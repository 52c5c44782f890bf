#!/bin/sh
# Compiles MODEL with a plan and runs what check_equivalence.py compares:
#   OUT/train.jsonl, OUT/final.safetensors   5 AdamW steps (lr 1e-3)
#   OUT/probe.jsonl, OUT/probe.safetensors   1 SGD step with lr 2^20 and no
#                                            weight decay: the first-step
#                                            gradient, read back exactly
#                                            (check_equivalence.py)
#   run_plan.sh TESSERA_COMPILE MODEL DATA OUT [tessera-compile flags...]
set -e
compile=$1 model=$2 data=$3 out=$4
shift 4
rm -rf "$out"
"$compile" "$model" -o "$out" --quiet "$@"
"$out/run" --data "$data" --steps 5 --optimizer adamw --lr 1e-3 \
  --save "$out/final.safetensors" > "$out/train.jsonl" 2> "$out/train.err" ||
  { cat "$out/train.err"; exit 1; }
"$out/run" --data "$data" --steps 1 --optimizer sgd --lr 1048576 \
  --weight-decay 0 --save "$out/probe.safetensors" \
  > "$out/probe.jsonl" 2> "$out/probe.err" ||
  { cat "$out/probe.err"; exit 1; }

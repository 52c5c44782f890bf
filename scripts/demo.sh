#!/usr/bin/env bash
# The main job, end to end on CPU. Today: build Tessera, show a transformer
# block in the tsr dialect, check it, and print every op's dimension
# annotation with the local shapes of a tensor-parallel split.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/build.sh
OPT=build/bin/tessera-opt
MODEL=examples/tsr/mlp_block.mlir

echo "== $MODEL (verified and canonicalized by tessera-opt)"
"$OPT" "$MODEL" -canonicalize
echo
echo "== dimension annotations ('+' reduced, '^' never split) and splits"
"$OPT" "$MODEL" -tsr-test-annotation -o /dev/null

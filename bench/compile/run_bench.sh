#!/usr/bin/env bash
# Compile-time benchmark: GPT-2 124M (12 layers, 12 heads, width 768,
# context 1024, vocab 50257) to 8 ranks, end to end, C++ build included
# (bench/compile/README.md has the results).
#
#   bench/compile/run_bench.sh [MODEL_DIR] [PLAN] [tessera-compile flags...]
#
# MODEL_DIR holds model.onnx and init.safetensors as examples/gpt/export.py
# writes them; without it the model is exported once into
# build/bench-gpt2-124m (Debian's python3-torch; minutes). PLAN defaults to
# tp2xpp4 (8 ranks; the default export has batch 1, so no dp: export with
# --batch 8 for dp8 or dp2xtp2xpp2). Prints one line per measurement: the
# emission alone, the C++ build of the emitted programs, tessera-compile end
# to end, and the baseline in the same invocation: end to end with one
# program per rank (--share-ranks=false).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
compile="${TESSERA_COMPILE:-$repo/build/bin/tessera-compile}"
model="${1:-$repo/build/bench-gpt2-124m}"
plan="${2:-tp2xpp4}"
shift $(( $# < 2 ? $# : 2 ))
jobs="$(nproc)"

if [ ! -f "$model/model.onnx" ]; then
  echo "exporting GPT-2 124M into $model (once)" >&2
  /usr/bin/python3 "$repo/examples/gpt/export.py" --layers 12 --heads 12 \
    --width 768 --context 1024 --batch 1 --vocab 50257 --seed 1 \
    --no-final --steps 1 --out "$model" --quiet
fi

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
seconds() { # seconds COMMAND...: runs it, prints its wall time in seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1
  t1=$(date +%s.%N)
  python3 -c "print('%.1f' % ($t1 - $t0))"
}

emit=$(seconds "$compile" "$model/model.onnx" -o "$out/emit" --devices 8 \
  --plan "$plan" "$@" --no-build --quiet)
src=$(cat "$out"/emit/prog_*/program.cpp | wc -c)
echo "emission (tessera-compile --no-build): $emit s; $(ls -d "$out"/emit/prog_* | wc -l) programs for 8 ranks, $((src / 1024)) KiB of C++"
t=$(seconds bash -c "cmake -S '$out/emit' -B '$out/emit/build' -G Ninja \
  -DCMAKE_BUILD_TYPE=Release && cmake --build '$out/emit/build' -j$jobs")
echo "C++ build of the emitted programs: $t s"
total=$(seconds "$compile" "$model/model.onnx" -o "$out/all" --devices 8 \
  --plan "$plan" "$@" --quiet)
echo "tessera-compile end to end (default, build included): $total s"
base=$(seconds "$compile" "$model/model.onnx" -o "$out/base" --devices 8 \
  --plan "$plan" "$@" --share-ranks=false --quiet)
echo "baseline, one program per rank (--share-ranks=false), end to end: $base s ($(ls -d "$out"/base/prog_* | wc -l) programs)"
python3 -c "print('ratio baseline / default: %.2f' % ($base / $total))"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1 /proc/loadavg)"

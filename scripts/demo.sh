#!/usr/bin/env bash
# The main job, end to end on CPU: build Tessera, compile the bundled GPT
# (examples/gpt/tiny/model.onnx, exported from PyTorch) into the training
# programs of 4 ranks (data parallel x pipeline, 2 micro-batches), and train
# it on the bundled text under mpirun; the loss falls.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/build.sh
OUT=${TESSERA_DEMO_OUT:-demo-out}
MODEL=examples/gpt/tiny/model.onnx
DATA=examples/gpt/data/train.bin
STEPS=${TESSERA_DEMO_STEPS:-200}

PLAN=${TESSERA_DEMO_PLAN:-dp2xpp2}
DEVICES=${TESSERA_DEMO_DEVICES:-4}
echo "== compiling $MODEL for $DEVICES ranks (plan $PLAN) in $OUT/"
rm -rf "$OUT"
build/bin/tessera-compile "$MODEL" -o "$OUT" --devices "$DEVICES" \
  --plan "$PLAN" --micro-batches 2
echo
echo "== the model's dimension annotations (first ops of $OUT/model.mlir)"
build/bin/tessera-opt "$OUT/model.mlir" -tsr-test-annotation -o /dev/null \
  > "$OUT/annotations.txt"
sed -n 1,10p "$OUT/annotations.txt"
echo
echo "== training $STEPS AdamW steps on $DATA with $OUT/run (mpirun, $DEVICES ranks;"
echo "   learning rate: 20 warm-up steps, then cosine decay from 3e-3 to 3e-4)"
"$OUT/run" --data "$DATA" --steps "$STEPS" --optimizer adamw --lr 3e-3 \
  --warmup-steps 20 --lr-decay cosine --min-lr 3e-4 \
  --log "$OUT/train.jsonl" > /dev/null
first=$(head -n 1 "$OUT/train.jsonl")
last=$(tail -n 1 "$OUT/train.jsonl")
echo "first step: $first"
echo "last step:  $last"
/usr/bin/python3 - "$OUT/train.jsonl" <<'PY'
import json, sys
losses = [json.loads(l)["loss"] for l in open(sys.argv[1]) if l.strip()]
head = sum(losses[:5]) / 5
tail = sum(losses[-5:]) / 5
print(f"mean loss of the first 5 steps {head:.4f}, of the last 5 {tail:.4f}")
if not tail < head:
    sys.exit("the loss did not fall")
PY

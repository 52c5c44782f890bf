#!/usr/bin/env bash
# The main job, end to end on CPU: build Tessera, compile the bundled GPT
# (examples/gpt/tiny/model.onnx, exported from PyTorch) into the training
# programs of 4 ranks (data parallel x pipeline, 2 micro-batches), and train
# it on the bundled text under mpirun with warm-up and cosine decay,
# validation and checkpoints, resuming once halfway; the training and the
# validation loss fall.
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
VAL=examples/gpt/data/val.bin
HALF=$((STEPS / 2))
EVERY=$(( STEPS / 4 > 0 ? STEPS / 4 : 1 ))
# The same schedule in both halves: warm-up, then cosine decay to step STEPS.
TRAIN=(--data "$DATA" --optimizer adamw --lr 3e-3 --warmup-steps 20
  --lr-decay cosine --lr-decay-steps "$STEPS" --min-lr 3e-4
  --val-data "$VAL" --eval-every "$EVERY" --eval-steps 5
  --checkpoint-dir "$OUT/checkpoints" --checkpoint-every "$EVERY"
  --log "$OUT/train.jsonl")
echo "== training steps 1-$HALF of $STEPS (AdamW; 20 warm-up steps, cosine decay"
echo "   3e-3 -> 3e-4; validation on $VAL and a checkpoint every $EVERY steps)"
"$OUT/run" "${TRAIN[@]}" --steps "$HALF" > /dev/null
echo "   checkpoints: $(ls "$OUT/checkpoints" | tr '\n' ' ')"
echo "== resuming from the newest checkpoint for steps $((HALF + 1))-$STEPS"
"$OUT/run" "${TRAIN[@]}" --steps "$STEPS" --resume "$OUT/checkpoints" \
  > /dev/null 2> "$OUT/resume.err"
grep '^resuming' "$OUT/resume.err"
first=$(head -n 1 "$OUT/train.jsonl")
last=$(tail -n 1 "$OUT/train.jsonl")
echo "first step: $first"
echo "last step:  $last"
/usr/bin/python3 - "$OUT/train.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
losses = [j["loss"] for j in lines]
steps = [j["step"] for j in lines]
if steps != list(range(len(steps))):
    sys.exit("the log's steps are not 0..N-1 once each (resume lost or repeated a step)")
head = sum(losses[:5]) / 5
tail = sum(losses[-5:]) / 5
print(f"mean loss of the first 5 steps {head:.4f}, of the last 5 {tail:.4f}")
val = [(j["step"], j["val_loss"]) for j in lines if "val_loss" in j]
print("validation loss: " + ", ".join(f"{v:.4f} after step {s + 1}" for s, v in val))
if not tail < head:
    sys.exit("the loss did not fall")
if len(val) < 2 or not val[-1][1] < val[0][1]:
    sys.exit("the validation loss did not fall")
PY

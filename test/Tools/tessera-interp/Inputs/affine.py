"""Writes inputs for affine.mlir (mode 'make') or checks tessera-interp's
outputs against numpy (mode 'check')."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "..", "examples", "gpt"))
import numpy as np  # noqa: E402
from safetensors_io import load_file, save_file  # noqa: E402

rng = np.random.default_rng(7)
w = rng.standard_normal((3, 2)).astype(np.float32)
x = rng.standard_normal((4, 3)).astype(np.float32)
t = np.array([0, 1, 1, 0], dtype=np.int64)

if sys.argv[1] == "make":
    save_file({"w": w, "x": x, "t": t}, sys.argv[2])
    sys.exit(0)

out = load_file(sys.argv[2])
y = x.astype(np.float64) @ w.astype(np.float64)
logp = y - np.log(np.exp(y).sum(axis=1, keepdims=True))
loss = -logp[np.arange(4), t].mean()
err_y = np.abs(out["y"] - y).max() / np.abs(y).max()
err_l = abs(float(out["loss"]) - loss) / abs(loss)
print(f"y relative error {err_y:.2e}, loss relative error {err_l:.2e}")
sys.exit(0 if err_y < 1e-6 and err_l < 1e-6 else 1)

#!/usr/bin/python3
"""Checks that a parallel plan computes the same training as a reference run.

  check_equivalence.py REF_DIR PLAN_DIR --exact
  check_equivalence.py REF_DIR PLAN_DIR --model MODEL_DIR

Each directory is what run_plan.sh leaves: train.jsonl and final.safetensors
(5 AdamW steps), probe.jsonl and probe.safetensors (one SGD step with lr 2^20
and no weight decay), init.safetensors and memory.json (tessera-compile's
predicted peak tensor memory per rank). MODEL_DIR is examples/gpt/export.py's
--out (reference.json gives the model's sizes).

Two rules, chosen by what the plan changes in the arithmetic:

--exact: the plan performs the same float32 operations in the same order as
  the reference, so everything is compared bit for bit: every step's loss
  and every saved parameter. This holds for pipeline stages and every
  pipeline schedule (a stage runs the reference's ops on the same
  micro-batches), for data parallelism against the reference with as many
  micro-batches (the runtime's all_reduce folds the ranks' values in rank
  order, as gradient accumulation folds micro-batches) and for ZeRO-1
  (elementwise updates on shards).
  With --norm-from-shards (ZeRO-2: each rank sums the squares of its
  gradient shards and the partial sums are all-reduced) the logged global
  norm re-associates its sum and is compared by a bound instead: both
  programs evaluate the same sum S of n positive terms in float32, each
  within gamma_n S of it (gamma_n = n u / (1 - n u), u = 2^-24), so the
  norms sqrt(S) differ by at most (gamma_n + 2u) relative (the square root
  halves the relative error and rounds once in each), n the number of
  parameter elements. Losses and parameters must still be bit-identical:
  with clipping off the norm feeds nothing else.

bounded (default): the plan changes the order of float32 sums (tensor
  parallelism splits reductions; data parallelism with micro-batches, or
  micro-batches against one batch, re-associate the batch sum). Then only
  quantities with an error bound are compared:
  * first-step gradients, per parameter, norm-wise:
        ||g_plan - g_ref|| <= tau * max(||g_ref||, tau ||G_ref||)
    where G_ref is all of the reference's gradients: a gradient below
    tau ||G_ref|| is rounding noise of the upstream values (a bias that
    batch norm cancels has the exact gradient 0), so its error is bounded
    by theirs, not by its own size.
    The gradient is read back from the probe: w1 = fl(w0 - 2^20 g) is one
    rounding (2^20 g is exact), so g = (w0 - w1) / 2^20 in float64 is within
    u (1 + |w0| / (2^20 |g|)) of the program's gradient, u = 2^-24: about u
    for these models (two programs: 2u).
    tau = 2 D gamma_N + 2u (fp32_bound.py: two float32 evaluations of a
    gradient through D reductions of at most N terms each).
  * the loss of step t (0-based) of the 5 AdamW steps within (t + 1) tau,
    relative: each step's forward adds at most tau, to first order.
  * weights after 5 AdamW steps are printed, not compared: AdamW divides a
    gradient near eps by its own square root, which turns float32 rounding
    of a gradient element of about 1e-8 into an O(lr) change of a weight
    (the bound there is lr per step, no better than the weights'
    own change), so it is no equivalence test for reordered sums.

Both rules also check that each rank's measured peak tensor memory is within
--memory-rtol (10 %) of the prediction. Exit 1 on any failure, with what was
compared.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "gpt"))
sys.path.insert(0, HERE)
import numpy as np  # noqa: E402
from safetensors_io import load_file  # noqa: E402
from fp32_bound import gamma, load_config, reductions, two_programs  # noqa: E402

PROBE_LR = 2.0 ** 20     # run_plan.sh's probe learning rate


def losses(path, key="loss"):
    with open(path) as f:
        return [json.loads(l).get(key) for l in f if l.strip()]


def tolerance(model_dir):
    config = load_config(model_dir)
    n, d = reductions(config)
    return two_programs(config), n, d


def probe_gradients(run_dir):
    w0 = load_file(os.path.join(run_dir, "init.safetensors"))
    w1 = load_file(os.path.join(run_dir, "probe.safetensors"))
    return {k: (np.asarray(w0[k], np.float64) - np.asarray(w1[k], np.float64))
            / PROBE_LR for k in w1}


def check_memory(dirs, rtol, failures):
    worst = 0.0
    for d in dirs:
        with open(os.path.join(d, "memory.json")) as f:
            predicted = json.load(f)["adamw"]
        with open(os.path.join(d, "train.jsonl")) as f:
            last = json.loads([l for l in f if l.strip()][-1])
        measured = last.get("peak_bytes_per_rank", [last["peak_bytes"]])
        if len(measured) != len(predicted):
            failures.append(f"{d}: {len(measured)} measured peaks, "
                            f"{len(predicted)} predicted")
            continue
        for p, m in zip(predicted, measured):
            worst = max(worst, abs(p - m) / m)
    if worst > rtol:
        failures.append(f"memory prediction off by {worst:.1%}")
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("plan")
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--model", help="export.py's --out (bounded rule)")
    ap.add_argument("--memory-rtol", type=float, default=0.10)
    ap.add_argument("--norm-from-shards", action="store_true",
                    help="with --exact: grad_norm within its derived bound")
    args = ap.parse_args()
    if not args.exact and not args.model:
        ap.error("the bounded rule needs --model (or pass --exact)")
    name = os.path.basename(os.path.normpath(args.plan))
    failures = []

    ref_l = losses(os.path.join(args.reference, "train.jsonl"))
    got_l = losses(os.path.join(args.plan, "train.jsonl"))
    if len(got_l) != len(ref_l) or not ref_l:
        failures.append(f"{len(got_l)} steps logged, {len(ref_l)} expected")
    ref_w = load_file(os.path.join(args.reference, "final.safetensors"))
    got_w = load_file(os.path.join(args.plan, "final.safetensors"))
    if sorted(ref_w) != sorted(got_w):
        failures.append(f"saved parameters differ: missing "
                        f"{sorted(set(ref_w) - set(got_w))}, extra "
                        f"{sorted(set(got_w) - set(ref_w))}")
    common = [k for k in ref_w if k in got_w]

    def weight_diff():
        worst, worst_name = 0.0, "-"
        for k in common:
            a = np.asarray(got_w[k], np.float64)
            b = np.asarray(ref_w[k], np.float64)
            if a.shape != b.shape:
                failures.append(f"{k}: shape {a.shape} vs {b.shape}")
                continue
            rel = np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)
            if rel > worst:
                worst, worst_name = rel, k
        return worst, worst_name

    if args.exact:
        for t, (a, b) in enumerate(zip(got_l, ref_l)):
            if a != b:
                failures.append(f"step {t}: loss {a!r} vs {b!r} (not "
                                f"bit-identical)")
        for t, (a, b) in enumerate(zip(
                losses(os.path.join(args.plan, "train.jsonl"), "grad_norm"),
                losses(os.path.join(args.reference, "train.jsonl"),
                       "grad_norm"))):
            if args.norm_from_shards:
                n = sum(np.asarray(ref_w[k]).size for k in common)
                u = 2.0 ** -24
                bound = n * u / (1 - n * u) + 2 * u
                if abs(a - b) > bound * abs(b):
                    failures.append(f"step {t}: grad_norm {a!r} vs {b!r} "
                                    f"(beyond the bound {bound:.2e})")
                continue
            if a != b:
                failures.append(f"step {t}: grad_norm {a!r} vs {b!r} (not "
                                f"bit-identical)")
        differing = []
        for k in common:
            a, b = np.asarray(got_w[k]), np.asarray(ref_w[k])
            if a.dtype != b.dtype or a.shape != b.shape or \
                    a.tobytes() != b.tobytes():
                differing.append(k)
        if differing:
            worst, worst_name = weight_diff()
            failures.append(f"{len(differing)} parameters not bit-identical "
                            f"(first {differing[0]}; worst relative "
                            f"difference {worst:.2e} in {worst_name})")
        mem = check_memory((args.reference, args.plan), args.memory_rtol,
                           failures)
        status = "FAIL" if failures else "ok"
        print(f"{status} {name}: {len(got_l)} steps "
              f"{'not ' if failures else ''}bit-identical to "
              f"{os.path.basename(os.path.normpath(args.reference))} "
              f"(losses and {len(common)} parameters), memory prediction "
              f"within {mem:.2%}")
    else:
        tau, n, d = tolerance(args.model)
        g_ref = probe_gradients(args.reference)
        g_got = probe_gradients(args.plan)
        worst_g, worst_g_name = 0.0, "-"
        scale = np.sqrt(sum(float(np.sum(np.asarray(b, np.float64) ** 2))
                            for b in g_ref.values()))
        for k, b in g_ref.items():
            if k not in g_got or g_got[k].shape != b.shape:
                failures.append(f"gradient of {k} missing or misshapen")
                continue
            # A gradient that is rounding noise itself (a bias before batch
            # norm: exactly zero in exact arithmetic) is compared against
            # the global norm, as check_training.py does.
            ref = max(np.linalg.norm(b), tau * scale, 1e-30)
            rel = np.linalg.norm(g_got[k] - b) / ref
            if rel > worst_g:
                worst_g, worst_g_name = rel, k
        if worst_g > tau:
            failures.append(f"first-step gradient of {worst_g_name} differs "
                            f"by {worst_g:.2e} > tau {tau:.2e}")
        # The first step's gradient norm: the per-parameter differences
        # above (each within tau of its norm, or of tau ||G|| for the k
        # noise-level ones) bound the norms' difference by
        # tau ||G|| sqrt(1 + k tau^2); each norm's own float32 evaluation
        # (sums of squares over at most M elements, then P parameters)
        # adds gamma_M + gamma_P, relative.
        norm = (losses(os.path.join(args.plan, "probe.jsonl"), "grad_norm") +
                [None])[0]
        norm_ref = (losses(os.path.join(args.reference, "probe.jsonl"),
                           "grad_norm") + [None])[0]
        if norm is not None or norm_ref is not None:
            k = sum(1 for b in g_ref.values()
                    if np.linalg.norm(b) < tau * scale)
            largest = max(int(np.asarray(b).size) for b in g_ref.values())
            bound = scale * (tau * np.sqrt(1 + k * tau * tau) +
                             2 * (gamma(largest) + gamma(len(g_ref))))
            if norm is None or norm_ref is None or \
                    not abs(norm - norm_ref) <= bound:
                failures.append(f"first-step grad_norm {norm!r} vs "
                                f"{norm_ref!r} (bound {bound:.2e})")
        first = (losses(os.path.join(args.plan, "probe.jsonl")) +
                 [float("nan")])[0]
        first_ref = (losses(os.path.join(args.reference, "probe.jsonl")) +
                     [float("nan")])[0]
        if not abs(first - first_ref) <= tau * abs(first_ref):
            failures.append(f"first loss {first!r} vs {first_ref!r}")
        worst_l = 0.0
        for t, (a, b) in enumerate(zip(got_l, ref_l)):
            rel = abs(a - b) / abs(b)
            worst_l = max(worst_l, rel / (t + 1))
            if not rel <= (t + 1) * tau:
                failures.append(f"step {t}: loss {a!r} vs {b!r}: relative "
                                f"{rel:.2e} > {(t + 1) * tau:.2e}")
        worst_w, worst_w_name = weight_diff()
        mem = check_memory((args.reference, args.plan), args.memory_rtol,
                           failures)
        status = "FAIL" if failures else "ok"
        print(f"{status} {name}: first-step gradients within {worst_g:.1e} "
              f"({worst_g_name}), losses within {worst_l:.1e} per step, "
              f"bound tau {tau:.2e} (N {n}, D {d}); weights after "
              f"{len(got_l)} AdamW steps differ by {worst_w:.1e} "
              f"({worst_w_name}, not compared); memory prediction within "
              f"{mem:.2%}")
    for f in failures:
        print(f"  {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""check_spec.py SPEC PROFILE RANKS: what a calibration must satisfy on any
machine (the values themselves are the machine's)."""
import json
import sys

spec = json.load(open(sys.argv[1]))
prof = json.load(open(sys.argv[2]))
ranks = int(sys.argv[3])


def need(cond, what):
    if not cond:
        sys.exit(f"FAIL: {what}")


need(spec["devices_per_node"] == ranks, "devices_per_node is the rank count")
need(1 <= spec["compute_slots"] <= ranks, "compute_slots in [1, ranks]")
need(spec["op_overhead"] > 0, "an op call costs something")
# One slowdown per count of busy ranks. Whatever the machine, ranks busy at
# once can never share more cores than there are: k = ranks busy on fewer
# cores than ranks is slower than one rank alone (a third at least, the
# measurement's noise well inside it: N ranks on N/2 cores run at 2x).
import os
need(len(spec["contention"]) == ranks and all(x > 0 for x in spec["contention"]),
     "contention: one positive slowdown per count of busy ranks")
if (os.cpu_count() or ranks) < ranks:
    need(spec["contention"][-1] > 1.3, "all ranks busy on fewer cores are slower")
# What a pipeline block loses at its start after a receive: seconds, at
# least 0, and less than a scheduler slice (it is a cache refill, not a
# wait for a core).
need(0 <= spec["block_start"] < 1e-3, "block_start in [0, 1 ms)")
for dtype in ("fp32", "fp64"):
    need(spec["peak_flops"][dtype] > 0, f"peak_flops {dtype} > 0")
need(spec["memory_bandwidth"] > 0, "memory bandwidth > 0")
need(spec["intra_node"]["bandwidth"] > 0 and spec["intra_node"]["latency"] >= 0,
     "a link")
need(spec["inter_node"] == spec["intra_node"], "one host: one link")
rate = {e["op"]: e for e in prof["entries"]}
need(prof["device"] == spec["name"], "the database names the spec")
for op in ("add", "sub", "mul", "div", "neg", "exp", "log", "erf", "tanh",
           "matmul", "softmax", "log_softmax", "reduce_max", "reduce_sum",
           "softmax_cross_entropy", "softmax_cross_entropy_grad"):
    need(op in rate and rate[op]["dtype"] == "fp32", f"a rate for {op}")
    need(rate[op]["seconds_per_flop"] > 0 and rate[op]["seconds"] >= 0,
         f"{op}'s rate is positive")
# A transcendental per element costs several times an add (a polynomial
# or table evaluation against one instruction); a matmul FLOP, blocked in
# registers, costs less than an add's, which streams memory.
need(rate["exp"]["seconds_per_flop"] > rate["add"]["seconds_per_flop"],
     "exp dearer per element than add")
need(rate["matmul"]["seconds_per_flop"] < rate["add"]["seconds_per_flop"],
     "a matmul FLOP cheaper than an add's")
# The cross-entropy and its gradient take an exponential per logit: dearer
# per logit than an add per element (the roofline's one FLOP per element
# would price them as an add).
for op in ("softmax_cross_entropy", "softmax_cross_entropy_grad", "softmax"):
    need(rate[op]["seconds_per_flop"] > rate["add"]["seconds_per_flop"],
         f"{op} dearer per element than add")
print(f"ok: spec '{spec['name']}'")

#!/usr/bin/python3
"""Predicted vs measured step time of every plan of a model on N ranks.

    bench/plans/run.py [--build DIR] [--model ONNX] [--rounds R] [--launches L]
                       [--steps S]
                       [--spec FILE --profile-db FILE] [--out results.md]
                       [--keep DIR | --replay DIR]

Calibrates this machine for the ranks (tessera-calibrate --ranks N, unless
--spec is given), compiles each plan of PLANS, then runs the plans in R
rounds (default 10), rotating the order each round, S training steps each
(default 100); without
--spec each round calibrates again, and the spec the predictions use has
each number the median over the rounds' calibrations. Unless
--no-op-profile, each round first times the model's ops in one-device
programs (--profile-ops) at 1/m of the batch for every m the plans split it
into; each op's median over the rounds joins the calibration's profile
database, and so does the driver's time per step outside the step function
(the "driver" entry, docs/planner.md). Then each plan's predicted step time and `--plan auto`'s choice
come from the calibrated spec and that database.
A plan's measured step is the median of its per-step times (elapsed_s
differences after the first 10 steps) in a launch, then the median over
its launches: L per round (--launches, default 3), each round launching
every plan once in its rotated order, L times over. Prints a table,
Spearman's rank correlation between predicted and measured, where auto's
choice lands (a choice outside PLANS is compiled and measured in as many
launches again, alternating with the fastest of PLANS) and each rank's
work per step (the step less its time blocked on the others,
wait_s_per_rank); with --out, writes it as markdown with the machine and
the date. --keep DIR saves the run's spec, op profile and measured steps
(and works) in DIR; --replay DIR predicts again from them (after a change
to the cost model) and compares with the recorded measurements, running
nothing (with --pool DIR..., with those runs' measurements and its own
together);
--agreement DIR DIR... prints how alike recorded runs order the plans by
their measurements alone (the rank correlation of each two), the ceiling
this machine puts on any model's.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# The four-rank plans of the bundled GPT (2 heads, batch 4): every mesh
# dp x tp x pp with tp dividing the heads, with one micro-batch and, for
# pipelines, as many micro-batches as stages.
PLANS = [("dp4", 1), ("dp2xtp2", 1), ("dp2xpp2", 1), ("dp2xpp2", 2),
         ("pp4", 1), ("pp4", 4), ("tp2xpp2", 1), ("tp2xpp2", 2)]


def spearman(xs, ys):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                r[order[k]] = (i + j) / 2 + 1
            i = j + 1
        return r
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return num / den if den else float("nan")


def seconds(text):
    m = re.search(r"predicted step ([0-9.]+) (us|ms|s)\b", text)
    if not m:
        return None
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[m.group(2)]


def step_time(out, a, work, works=None):
    """The median step of one run of the program in OUT (elapsed_s
    differences after the first 10 steps). With `works` (a list), appends
    each rank's median work per step: the step less the rank's time
    blocked on the others (wait_s_per_rank)."""
    log = os.path.join(work, "log.jsonl")
    if os.path.exists(log):
        os.remove(log)
    subprocess.run([os.path.join(out, "run"), "--data", a.data,
                    "--steps", str(a.steps), "--log", log],
                   capture_output=True, check=True)
    lines = [json.loads(l) for l in open(log) if l.strip()]
    e = [l["elapsed_s"] for l in lines]
    d = [y - x for x, y in zip(e, e[1:])][10:]
    if works is not None and "wait_s_per_rank" in lines[-1]:
        ranks = len(lines[-1]["wait_s_per_rank"])
        works.append([statistics.median(step - l["wait_s_per_rank"][r]
                                        for step, l in zip(d, lines[11:]))
                      for r in range(ranks)])
    return statistics.median(d)


def keep(folder, spec, prof, plans, outside):
    """Saves what --replay reads: the spec, the op profile and the measured
    steps (of PLANS, and of auto's choice outside them)."""
    os.makedirs(folder, exist_ok=True)
    shutil.copy(spec, os.path.join(folder, "spec.json"))
    if prof:
        shutil.copy(prof, os.path.join(folder, "ops.json"))
    json.dump({"plans": {p["plan"]: p["times"] for p in plans}, "outside": outside,
               "works": {p["plan"]: p.get("works", []) for p in plans}},
              open(os.path.join(folder, "measured.json"), "w"), indent=1)


def median_spec(specs):
    """The first spec with each number the median of that number over all
    of them (the same keys: one tool wrote them)."""
    def merge(values):
        first = values[0]
        if isinstance(first, dict):
            return {k: merge([v[k] for v in values]) for k in first}
        if isinstance(first, list):
            return [merge([v[i] for v in values]) for i in range(len(first))]
        if isinstance(first, int) and not isinstance(first, bool):
            return statistics.median_low(values)
        if isinstance(first, float):
            return statistics.median(values)
        return first
    return merge(specs)


def measure(a, binDir, work):
    """Calibrates, compiles PLANS and runs them in rounds; returns the spec,
    the op profile (merged over the rounds) and the plans with their times."""
    spec, prof = a.spec, a.profile_db
    # This VM's sharing of its cores drifts as its speed does (all 4 ranks
    # busy: 1.7 to 3.5 x slower than one alone in calibrations minutes
    # apart), so without --spec the machine is calibrated once per round as
    # well, and the spec's every number is the median over the rounds.
    specs = []
    calibrate = not spec

    def calibrated(out, db=None):
        cal = subprocess.run([os.path.join(binDir, "tessera-calibrate"), "-o", out,
                              "--ranks", str(a.ranks)] + (["--profile-db", db] if db else []),
                             capture_output=True, text=True, check=True)
        return cal.stderr

    if calibrate:
        spec = os.path.join(work, "spec.json")
        prof = os.path.join(work, "profile.json")
        sys.stderr.write(calibrated(spec, prof))
    compile_ = os.path.join(binDir, "tessera-compile")
    # The model's own ops, timed where a one-device program runs them,
    # at each batch piece the plans run (1/m of the batch). They are
    # timed once per round, between the plans' runs, so that the
    # profile sees the machine as the measurements do (this VM's speed
    # drifts by a third within minutes); each op's time is the median
    # over the rounds, added to the calibration's profile database.
    profilers = []
    if prof and not a.no_op_profile:
        for m in sorted({mb * dp for dp in (1, 2, 4) for mb in (1, 2, 4)
                         if mb * dp <= a.ranks}):
            out = os.path.join(work, f"profile-m{m}")
            subprocess.run([compile_, a.model, "-o", out, "--devices", "1",
                            "--profile-ops"] +
                           (["--plan", "dp1", "--micro-batches", str(m)] if m > 1 else []),
                           capture_output=True, text=True, check=True)
            profilers.append(out)
    plans = []
    for name, mb in PLANS:
        out = os.path.join(work, f"{name}-mb{mb}")
        r = subprocess.run([compile_, a.model, "-o", out, "--devices", str(a.ranks),
                            "--plan", name, "--micro-batches", str(mb), "--quiet"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"compiling {name} mb{mb} failed:\n{r.stderr}")
        plans.append({"plan": f"{name} mb{mb}", "name": name, "mb": mb, "dir": out,
                      "times": [], "works": []})
    rounds = []
    for rnd in range(a.rounds):
        if profilers:
            db = os.path.join(work, f"ops-{rnd}.json")
            shutil.copy(prof, db)
            # With a step log as the plans' runs have (step_time): the
            # driver's time per step, which the database gets too, then
            # includes writing it.
            for out in profilers:
                subprocess.run([os.path.join(out, "run"), "--data", a.data, "--steps",
                                str(a.profile_steps), "--profile-ops", db,
                                "--log", os.path.join(work, "profile-log.jsonl")],
                               capture_output=True, check=True)
            rounds.append(json.load(open(db)))
        if calibrate:
            out = os.path.join(work, f"spec-{rnd}.json")
            calibrated(out)
            specs.append(json.load(open(out)))
        # Each launch places the ranks on the cores anew and keeps that
        # placement to its end, which moves a plan's step by up to 2x; a
        # plan's launches within a round are therefore interleaved with the
        # other plans' (the rotated order, `launches` times over), so that
        # the median over all of them sees many placements at the speed the
        # machine had in every part of the round.
        k = rnd % len(plans)
        for _ in range(a.launches):
            for p in plans[k:] + plans[:k]:
                p["times"].append(step_time(p["dir"], a, work, p["works"]))
        sys.stderr.write(f"round {rnd + 1}/{a.rounds} done\n")
    if rounds:
        times = {}
        for db in rounds:
            for e in db["entries"]:
                if "shapes" in e:
                    key = json.dumps([e["op"], e["dtype"], e["shapes"]])
                    times.setdefault(key, []).append(e["seconds"])
        merged = json.load(open(prof))
        merged["entries"] = [e for e in merged["entries"] if "shapes" not in e]
        for key, ts in times.items():
            op, dtype, shapes = json.loads(key)
            merged["entries"].append({"op": op, "dtype": dtype, "shapes": shapes,
                                      "seconds": statistics.median(ts)})
        prof = os.path.join(work, "ops.json")
        json.dump(merged, open(prof, "w"))
        sys.stderr.write(f"op profile: {len(times)} ops, medians over {len(rounds)} "
                         "rounds\n")
    if specs:
        merged = median_spec(specs)
        spec = os.path.join(work, "spec-median.json")
        json.dump(merged, open(spec, "w"), indent=2)
        sys.stderr.write(f"spec: medians over {len(specs)} calibrations: contention "
                         f"{merged.get('contention')}, compute_slots "
                         f"{merged.get('compute_slots')}, core_wait {merged.get('core_wait')}\n")
    return spec, prof, plans


def agreement(folders):
    """Prints Spearman's rank correlation between the measured steps (the
    medians over rounds) of each two recorded runs: what a model that knew
    one run's measurements exactly would score against the other's."""
    runs = []
    for d in folders:
        plans = json.load(open(os.path.join(d, "measured.json")))["plans"]
        runs.append((os.path.basename(os.path.normpath(d)),
                     [statistics.median(plans[f"{n} mb{mb}"]) for n, mb in PLANS]))
    if len(runs) < 2:
        sys.exit("--agreement needs two runs or more")
    rhos = []
    print("| run | run | Spearman of the measured steps |")
    print("|---|---|---|")
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            rho = spearman(runs[i][1], runs[j][1])
            rhos.append(rho)
            print(f"| {runs[i][0]} | {runs[j][0]} | {rho:.2f} |")
    print(f"\n{len(rhos)} pairs: mean {statistics.mean(rhos):.2f}, least "
          f"{min(rhos):.2f}, {sum(r >= 0.8 for r in rhos)} at 0.8 or more")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--model", default=os.path.join(REPO, "examples/gpt/tiny/model.onnx"))
    ap.add_argument("--data", default=os.path.join(REPO, "examples/gpt/data/train.bin"))
    ap.add_argument("--ranks", type=int, default=4)
    # As the recorded runs were made (bench/plans/recorded, from
    # 2026-11-28 on): more rounds of fewer steps see more placements of the
    # ranks, whose spread the medians are there to damp.
    ap.add_argument("--rounds", type=int, default=10)
    # Launches of each plan per round (each one time in the plan's list):
    # the measured order of the plans settles with the number of launches
    # (recorded 10-launch runs agree with one another at Spearman 0.78 on
    # average, pooled 30-launch medians at 0.87; bench/plans/results.md).
    ap.add_argument("--launches", type=int, default=3)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--spec")
    ap.add_argument("--profile-db")
    ap.add_argument("--out")
    ap.add_argument("--no-op-profile", action="store_true",
                    help="price the ops from the calibration's rates alone "
                         "(no one-device --profile-ops runs)")
    ap.add_argument("--profile-steps", type=int, default=60)
    ap.add_argument("--keep", help="save the spec, op profile and measured steps here")
    ap.add_argument("--replay", help="predict from a --keep folder; run nothing")
    ap.add_argument("--agreement", nargs="+", metavar="DIR",
                    help="how well --keep folders' measurements order the plans "
                         "alike (Spearman between each two runs); run nothing")
    ap.add_argument("--pool", nargs="+", metavar="DIR",
                    help="with --replay: measure each plan by the median over the "
                         "launches of the replayed run and of these recorded runs")
    a = ap.parse_args()
    if a.pool and not a.replay:
        sys.exit("--pool goes with --replay")
    if a.rounds < 1 or a.launches < 1 or a.steps < 12:
        sys.exit("--rounds and --launches must be >= 1 and --steps >= 12 (the "
                 "first 10 steps are not timed)")
    if a.agreement:
        agreement(a.agreement)
        return
    if a.keep and a.replay:
        sys.exit("--keep and --replay exclude each other")
    binDir = os.path.join(a.build, "bin")
    work = tempfile.mkdtemp(prefix="tessera-bench-plans-")
    try:
        recorded = None
        if a.replay:
            spec = os.path.join(a.replay, "spec.json")
            prof = os.path.join(a.replay, "ops.json")
            if not os.path.exists(prof):
                prof = None
            recorded = json.load(open(os.path.join(a.replay, "measured.json")))
            plans = [{"plan": f"{name} mb{mb}", "name": name, "mb": mb,
                      "times": recorded["plans"][f"{name} mb{mb}"],
                      "works": recorded.get("works", {}).get(f"{name} mb{mb}", [])}
                     for name, mb in PLANS]
            # --pool: the measurements of other recorded runs join this
            # run's (the predictions stay this run's).
            for d in a.pool or []:
                other = json.load(open(os.path.join(d, "measured.json")))["plans"]
                for p in plans:
                    p["times"] = p["times"] + other[p["plan"]]
        else:
            spec, prof, plans = measure(a, binDir, work)
            if a.keep:
                keep(a.keep, spec, prof, plans, {})
        compile_ = os.path.join(binDir, "tessera-compile")
        # Predictions after the rounds, from the spec and the profile.
        extra = ["--device-spec", spec] + (["--profile-db", prof] if prof else [])
        for p in plans:
            r = subprocess.run([compile_, a.model, "-o", os.path.join(work, "predict"),
                                "--devices", str(a.ranks), "--plan", p["name"],
                                "--micro-batches", str(p["mb"]), "--no-build"] + extra,
                               capture_output=True, text=True, check=True)
            p["predicted"] = seconds(r.stderr)
        r = subprocess.run([compile_, a.model, "-o", os.path.join(work, "auto"),
                            "--devices", str(a.ranks), "--plan", "auto", "--no-build"] + extra,
                           capture_output=True, text=True)
        m = re.search(r"mesh \[dp = (\d+), tp = (\d+), pp = (\d+)\], (\d+) micro-batch", r.stderr)
        auto = None
        if m:
            dp, tp, pp, mb = map(int, m.groups())
            parts = [f"{ax}{n}" for ax, n in (("dp", dp), ("tp", tp), ("pp", pp)) if n > 1]
            auto = f"{'x'.join(parts) or 'dp1'} mb{mb}"
            auto_policy, auto_mb = "x".join(parts) or "dp1", mb
        auto_pred = seconds(r.stderr)
        for p in plans:
            p["measured"] = statistics.median(p["times"])
        # auto's choice outside the plans above: compiled, and measured in
        # as many rounds again alternating with the fastest of them, so
        # that both see the machine at the same speed.
        head_to_head = None
        if auto and all(p["plan"] != auto for p in plans):
            best = min(plans, key=lambda p: p["measured"])
            known = (recorded or {}).get("outside", {}).get(auto)
            if known and known["against"] == best["plan"]:
                mine, theirs = known["mine"], known["theirs"]
            elif a.replay:
                mine = theirs = None
                print(f"auto's choice {auto} was not measured in the recorded run")
            else:
                out = os.path.join(work, "auto-run")
                r = subprocess.run([compile_, a.model, "-o", out, "--devices", str(a.ranks),
                                    "--plan", auto_policy, "--micro-batches", str(auto_mb),
                                    "--quiet"], capture_output=True, text=True)
                if r.returncode != 0:
                    sys.exit(f"compiling auto's choice {auto} failed:\n{r.stderr}")
                mine, theirs = [], []
                for rnd in range(a.rounds * a.launches):
                    pair = [(out, mine), (best["dir"], theirs)]
                    for d, ts in (pair if rnd % 2 == 0 else pair[::-1]):
                        ts.append(step_time(d, a, work))
            if mine:
                head_to_head = (best["plan"], statistics.median(mine),
                                statistics.median(theirs), len(mine))
                outside = {auto: {"against": best["plan"], "mine": mine, "theirs": theirs}}
        if a.keep:
            keep(a.keep, spec, prof, plans, outside if head_to_head else {})
        pred = [p["predicted"] for p in plans]
        meas = [p["measured"] for p in plans]
        rho = spearman(pred, meas)
        fastest = min(meas)
        lines = ["| plan | predicted | measured (median) | predicted / measured | measured rank |",
                 "|---|---|---|---|---|"]
        order = sorted(range(len(plans)), key=lambda i: meas[i])
        rank = {i: r + 1 for r, i in enumerate(order)}
        for i, p in enumerate(plans):
            lines.append(f"| {p['plan']}{' (auto)' if p['plan'] == auto else ''} | "
                         f"{p['predicted'] * 1e3:.3f} ms | {p['measured'] * 1e3:.3f} ms | "
                         f"{p['predicted'] / p['measured']:.2f} | {rank[i]} |")
        # Each run places the ranks on the cores anew, and which of them
        # share a core moves a plan's step by up to 2x (per-round steps of
        # one plan: 4.3 to 9.1 ms), so the median over rounds can flip
        # between the modes; the mean over rounds is the expectation over
        # placements the model predicts.
        means = [statistics.mean(p["times"]) for p in plans]
        summary = [f"Spearman (predicted vs measured): {rho:.2f} (against the means over "
                   f"rounds: {spearman(pred, means):.2f})",
                   f"auto's choice: {auto or 'none'}"]
        for p in plans:
            if p["plan"] == auto:
                # Three decimals: "within 10 %" is decided on them (1.097
                # passes, 1.104 does not; both print 1.10 at two).
                summary.append(f"auto's choice measures {p['measured'] / fastest:.3f} x the fastest "
                               f"({p['measured'] * 1e3:.3f} vs {fastest * 1e3:.3f} ms); predicted / "
                               f"measured {p['predicted'] / p['measured']:.2f}")
        if head_to_head:
            name, mine, theirs, count = head_to_head
            summary.append(f"auto's choice ({auto}, predicted {auto_pred * 1e3:.3f} ms) measures "
                           f"{mine * 1e3:.3f} ms against {theirs * 1e3:.3f} ms for the fastest "
                           f"above ({name}) in {count} alternating launches each: "
                           f"{mine / theirs:.2f} x; predicted / measured "
                           f"{auto_pred / mine:.2f}")
        # Each rank's work per step (the step less its time blocked on the
        # others), the median over the launches: where a plan's time goes.
        works = []
        if any(p.get("works") for p in plans):
            works = ["", "| plan | measured work per rank (step less its waits) |", "|---|---|"]
            for p in plans:
                if p.get("works"):
                    per = [statistics.median(w[r] for w in p["works"])
                           for r in range(len(p["works"][0]))]
                    works.append(f"| {p['plan']} | " +
                                 ", ".join(f"{x * 1e3:.3f}" for x in per) + " ms |")
        text = "\n".join(lines + [""] + summary + works) + "\n"
        print(text)
        if a.out:
            head = (f"machine: {platform.machine()}, {os.cpu_count()} CPU(s), "
                    f"{platform.node()}; date: {datetime.date.today()}; "
                    f"{a.ranks} ranks, {a.rounds} rounds of {a.launches} launch(es) "
                    f"of {a.steps} steps\n\n")
            with open(a.out, "w") as f:
                f.write(head + text)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

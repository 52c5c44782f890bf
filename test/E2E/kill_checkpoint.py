#!/usr/bin/python3
"""Kills a checkpointing run with SIGKILL at random moments and checks that
the newest complete checkpoint always loads.

  kill_checkpoint.py RUN DATA DIR --rounds N [--seed S]

Each round starts `RUN --data DATA --steps 1000000 --checkpoint-dir DIR
--checkpoint-every 1 --resume DIR` (the first round without --resume),
kills it (its whole process group) after a random delay, and then resumes
one more step from DIR, checkpointing into DIR: that run must succeed and
say which checkpoint it resumed from, and its checkpoint removes the
temporary directory the kill may have left. Rounds whose kill came before the first checkpoint are
counted apart. Exit 1 on a failed resume.
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import time


def newest_step(ckpt):
    steps = [int(n[5:]) for n in os.listdir(ckpt) if n.startswith("step-")
             and os.path.exists(os.path.join(ckpt, n, "index.json"))] if os.path.isdir(ckpt) else []
    return max(steps) if steps else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("data")
    ap.add_argument("dir")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    resumed = 0
    for r in range(a.rounds):
        cmd = [a.run, "--data", a.data, "--steps", "1000000", "--checkpoint-dir", a.dir,
               "--checkpoint-every", "1"]
        if newest_step(a.dir) is not None:
            cmd += ["--resume", a.dir]
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        time.sleep(rng.uniform(0.2, 0.8))
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        step = newest_step(a.dir)
        if step is None:
            print(f"round {r}: killed before the first checkpoint")
            continue
        check = subprocess.run([a.run, "--data", a.data, "--steps", str(step + 1), "--resume",
                                a.dir, "--checkpoint-dir", a.dir], capture_output=True, text=True)
        if check.returncode != 0 or "resuming from" not in check.stderr:
            print(f"FAIL round {r}: resuming after the kill failed:\n{check.stderr}")
            return 1
        resumed += 1
    left = [n for n in os.listdir(a.dir) if n.startswith(".tmp-")]
    print(f"{resumed} of {a.rounds} kills left a checkpoint that resumes")
    print(f"temporary directories left after the last resume's checkpoint: {len(left)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

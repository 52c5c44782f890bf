#!/usr/bin/python3
"""Stops one rank of a running job and reports how the job ends.

  stop_rank.py OUT RANK LIMIT -- OUT/run ARGS...

Starts the command, waits until it has logged two steps (so every rank is in
the training loop), sends SIGSTOP to the process of rank RANK (the one
running OUT/rank_RANK/program), and waits up to LIMIT seconds for the whole
job to end. Prints "job ended with exit code N after S s" and the job's
stderr, and exits 0 when the job ended non-zero within LIMIT; otherwise it
kills everything it started (the stopped rank too) and exits 1. Either way
no process is left behind.
"""
import os
import signal
import subprocess
import sys
import time


def rank_pids(out_dir, rank):
    """PIDs whose executable is OUT/rank_RANK/program."""
    target = os.path.realpath(os.path.join(out_dir, f"rank_{rank}", "program"))
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.path.realpath(f"/proc/{entry}/exe") == target:
                pids.append(int(entry))
        except OSError:
            pass
    return pids


def kill_all(out_dir, proc):
    for rank in range(64):
        for pid in rank_pids(out_dir, rank):
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def main():
    out_dir, rank, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    cmd = sys.argv[sys.argv.index("--") + 1:]
    err_path = os.path.join(out_dir, "stop_rank.err")
    with open(err_path, "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err,
                                text=True)
    try:
        steps = 0
        while steps < 2:
            line = proc.stdout.readline()
            if not line:
                print("the job ended before its second step")
                print(open(err_path).read())
                return 1
            steps += line.startswith("{")
        pids = rank_pids(out_dir, rank)
        if len(pids) != 1:
            print(f"expected one process of rank {rank}, found {pids}")
            return 1
        os.kill(pids[0], signal.SIGSTOP)
        stopped = time.monotonic()
        # Keep reading stdout so the job never blocks on a full pipe.
        proc.stdout.close()
        try:
            rc = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            print(f"the job still runs {limit:g} s after rank {rank} stopped")
            return 1
        took = time.monotonic() - stopped
        print(f"job ended with exit code {rc} after {took:.1f} s")
        print(open(err_path).read())
        return 0 if rc != 0 else 1
    finally:
        kill_all(out_dir, proc)


if __name__ == "__main__":
    sys.exit(main())

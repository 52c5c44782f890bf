#!/usr/bin/python3
"""Stops one rank of a running job and reports how the job ends.

  stop_rank.py OUT RANK LIMIT -- OUT/run ARGS...

Starts the command, waits until it has logged two steps (so every rank is in
the training loop), sends SIGSTOP to the process of rank RANK (the program
under OUT whose OMPI_COMM_WORLD_RANK is RANK: ranks may share one program
binary), and waits up to LIMIT seconds for the whole
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


def job_pids(out_dir):
    """{pid: MPI rank} of the processes running a program under OUT."""
    root = os.path.realpath(out_dir) + os.sep
    pids = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if not os.path.realpath(f"/proc/{entry}/exe").startswith(root):
                continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except OSError:
            continue
        rank = -1
        for var in env:
            if var.startswith(b"OMPI_COMM_WORLD_RANK="):
                rank = int(var.split(b"=", 1)[1])
        pids[int(entry)] = rank
    return pids


def rank_pids(out_dir, rank):
    """PIDs of the processes of MPI rank RANK running a program under OUT."""
    return [pid for pid, r in job_pids(out_dir).items() if r == rank]


def kill_all(out_dir, proc):
    for pid in job_pids(out_dir):
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

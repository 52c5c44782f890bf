#!/usr/bin/python3
"""Starts the ranks of a job by environment variables alone, as torchrun does.

  launch_env.py [options] -- OUT/run ARGS...

Starts one process per rank running the command, with RANK, WORLD_SIZE,
LOCAL_RANK (--style torchrun, the default) or SLURM_PROCID, SLURM_NTASKS,
SLURM_LOCALID, SLURM_STEP_ID (--style slurm: an srun step without PMI), and
MASTER_ADDR=127.0.0.1 and MASTER_PORT (a free port) set and nothing of
mpirun's, and waits for them. Rank 0's standard output becomes
this script's; every rank's standard error follows on this script's, rank by
rank. Exits 0 when every rank exited 0, else 1.

Options:
  --ranks N          ranks to start (default 2)
  --world-size W     WORLD_SIZE to give them (default N)
  --only R[,R...]    start only these ranks (the others never come; a rank
                     given twice starts two processes that claim it)
  --kill R           once rank 0 has logged a step, SIGKILL rank R; then
                     print "rank r exit CODE" for every rank
  --limit S          seconds the job may take (default 120); after that
                     every rank is killed, "job hung" is printed and the
                     script exits 2. No process is ever left behind.
"""
import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--style", choices=["torchrun", "slurm"],
                        default="torchrun")
    parser.add_argument("--world-size", type=int)
    parser.add_argument("--only")
    parser.add_argument("--kill", type=int)
    parser.add_argument("--limit", type=float, default=120)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    world = args.world_size or args.ranks
    only = ([int(r) for r in args.only.split(",")] if args.only
            else list(range(args.ranks)))

    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("OMPI_", "PMIX_", "PMI_", "SLURM_"))}
    base = {k: v for k, v in base.items()
            if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    base.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    if args.style == "torchrun":
        base.update(WORLD_SIZE=str(world))
    else:
        base.update(SLURM_NTASKS=str(world), SLURM_STEP_ID="0")
    tmp = tempfile.mkdtemp(prefix="launch-env-")
    procs = []  # (rank, process), in start order
    for index, rank in enumerate(only):
        if args.style == "torchrun":
            env = dict(base, RANK=str(rank), LOCAL_RANK=str(rank))
        else:
            env = dict(base, SLURM_PROCID=str(rank), SLURM_LOCALID=str(rank))
        out = open(os.path.join(tmp, f"{index}.out"), "wb")
        err = open(os.path.join(tmp, f"{index}.err"), "wb")
        procs.append((rank, subprocess.Popen(command, env=env, stdout=out,
                                             stderr=err,
                                             start_new_session=True)))
    first = dict(reversed([(rank, i) for i, (rank, _) in enumerate(procs)]))

    deadline = time.time() + args.limit
    if args.kill is not None:
        # Every rank is in the training loop once rank 0 has logged a step.
        log = os.path.join(tmp, f"{first[0]}.err")
        while time.time() < deadline and procs[first[0]][1].poll() is None:
            with open(log, "rb") as f:
                if b"step " in f.read():
                    break
            time.sleep(0.05)
        procs[first[args.kill]][1].send_signal(signal.SIGKILL)

    hung = False
    for _, proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            hung = True
    for _, proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    if 0 in first:
        with open(os.path.join(tmp, f"{first[0]}.out"), "rb") as f:
            sys.stdout.buffer.write(f.read())
    for index in range(len(procs)):
        with open(os.path.join(tmp, f"{index}.err"), "rb") as f:
            sys.stderr.buffer.write(f.read())
    if args.kill is not None:
        for rank, proc in procs:
            print(f"rank {rank} exit {proc.returncode}")
    sys.stdout.flush()
    if hung:
        print("job hung", flush=True)
        return 2
    return 0 if all(p.returncode == 0 for _, p in procs) else 1


if __name__ == "__main__":
    sys.exit(main())

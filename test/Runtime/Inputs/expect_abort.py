#!/usr/bin/python3
"""Runs a command that must fail fast: prints its output, then
"exit code N in time" and exits 0 when it ended non-zero within LIMIT
seconds; exits 1 when it succeeded or had to be killed (a hang).

usage: expect_abort.py LIMIT COMMAND...
"""
import subprocess
import sys
import time

limit = float(sys.argv[1])
start = time.monotonic()
try:
    proc = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=limit)
except subprocess.TimeoutExpired as e:
    sys.stdout.write((e.output or b"").decode(errors="replace"))
    print("still running after %g s: killed" % limit)
    sys.exit(1)
sys.stdout.write(proc.stdout.decode(errors="replace"))
print("exit code %d %s" % (proc.returncode,
                           "in time" if proc.returncode else "(expected non-zero)"))
print("took %.1f s" % (time.monotonic() - start), file=sys.stderr)
sys.exit(0 if proc.returncode != 0 else 1)

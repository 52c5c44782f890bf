"""Fails, naming file and line, when a file that tests, benchmarks, scripts
or the build read refers to ../shared or to an absolute path of a machine
(/work/, /home/, /root/, /tmp/ inside a source tree)."""
import os
import re
import sys

root = sys.argv[1]
dirs = ["test", "unittests", "bench", "scripts", "cmake", "tools", "lib",
        "runtime", "include", "examples", ".ci"]
outside = re.compile(r"\.\./shared\b|/work/|/home/|/root/")
found = []
for d in dirs:
    for base, _, files in os.walk(os.path.join(root, d)):
        if "__pycache__" in base:
            continue
        for name in files:
            path = os.path.join(base, name)
            if name.endswith((".onnx", ".safetensors", ".bin")) or \
                    path.endswith("self-contained.test.py"):
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        if outside.search(line):
                            found.append(f"{os.path.relpath(path, root)}:"
                                         f"{number}: {line.strip()}")
            except UnicodeDecodeError:
                continue
for line in found:
    print(line)
print(f"{len(found)} reference(s) outside the repository")
sys.exit(1 if found else 0)

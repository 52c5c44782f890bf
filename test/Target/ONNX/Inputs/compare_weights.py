#!/usr/bin/python3
"""Compares two safetensors files: names, order, dtypes, shapes, values."""
import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    header.pop("__metadata__", None)
    out = []
    for name, info in header.items():  # JSON object order = file order
        b, e = info["data_offsets"]
        out.append((name, info["dtype"], info["shape"], data[b:e]))
    return out


a, b = read(sys.argv[1]), read(sys.argv[2])
if a != b:
    for x, y in zip(a, b):
        if x != y:
            print("first difference:", x[:3], "vs", y[:3])
            break
    print(f"{len(a)} vs {len(b)} tensors: files differ")
    sys.exit(1)
print(f"{len(a)} tensors, same names, order, dtypes, shapes and values")

#!/usr/bin/python3
"""Swaps the names of two tensors in a safetensors file's header, in place.

  swap_tensor_names.py FILE NAME_A NAME_B

The data stays where it is, so NAME_A then holds B's values and shape, and
NAME_B A's: a file that is well formed but holds the wrong tensors, for
tests of what readers check. The two names must have the same length (the
header keeps its size).
"""
import json
import struct
import sys


def main():
    path, a, b = sys.argv[1:4]
    if len(a) != len(b):
        sys.exit("the names must have the same length")
    with open(path, "rb") as f:
        data = f.read()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    header[a], header[b] = header[b], header[a]
    text = json.dumps(header, separators=(",", ":")).encode()
    if len(text) > size:
        sys.exit("the rewritten header is longer than the original")
    text += b" " * (size - len(text))
    with open(path, "wb") as f:
        f.write(data[:8] + text + data[8 + size:])


if __name__ == "__main__":
    main()

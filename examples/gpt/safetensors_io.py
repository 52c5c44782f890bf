#!/usr/bin/python3
"""A small, dependency-free reader and writer of the safetensors format (numpy only).

Debian bookworm has no ``python3-safetensors``, so the examples write the format
themselves. The layout (https://github.com/huggingface/safetensors, "Format"):

    bytes [0, 8)        N, the header length: unsigned 64-bit little-endian
    bytes [8, 8+N)      a UTF-8 JSON object:
                          {"<name>": {"dtype": "F32", "shape": [d0, d1, ...],
                                      "data_offsets": [begin, end]}, ...,
                           "__metadata__": {"<key>": "<string value>", ...}}   (optional)
                        padded at the end with spaces (0x20) so that 8+N is a multiple of 8
    bytes [8+N, EOF)    the tensor data: raw little-endian, row-major (C order);
                        [begin, end) are relative to 8+N; tensors are contiguous,
                        without gaps or overlaps, in the order they were given.

The writer keeps the names and the order it is given (the examples pass
``state_dict`` order). Run this file to execute its round-trip self-test.
"""

from __future__ import annotations

import json
import struct
from typing import Dict, Mapping, Optional, Tuple

import numpy as np

# safetensors dtype name <-> numpy dtype (always little-endian on disk).
_DTYPES = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U64": np.dtype("<u8"),
    "U32": np.dtype("<u4"),
    "U16": np.dtype("<u2"),
    "U8": np.dtype("u1"),
    "BOOL": np.dtype("?"),
}
_NAMES = {(dt.kind, dt.itemsize): name for name, dt in _DTYPES.items()}

_MAX_HEADER = 100 * 1024 * 1024  # same limit as the reference implementation


def _dtype_name(dtype: np.dtype) -> str:
    try:
        return _NAMES[(dtype.kind, dtype.itemsize)]
    except KeyError:
        raise TypeError(f"dtype {dtype} has no safetensors equivalent here") from None


def save_file(tensors: Mapping[str, np.ndarray], path: str,
              metadata: Optional[Mapping[str, str]] = None) -> None:
    """Write ``tensors`` (name -> numpy array, or anything ``np.asarray`` accepts,
    e.g. a CPU torch tensor) to ``path``."""
    header: Dict[str, object] = {}
    if metadata:
        for k, v in metadata.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError("__metadata__ must map strings to strings")
        header["__metadata__"] = dict(metadata)
    blobs = []
    offset = 0
    for name, value in tensors.items():
        if name == "__metadata__":
            raise ValueError("'__metadata__' is reserved")
        arr = np.asarray(value)
        dt = _DTYPES[_dtype_name(arr.dtype)]
        data = np.ascontiguousarray(arr, dtype=dt).tobytes()
        header[name] = {"dtype": _dtype_name(arr.dtype), "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def load_file_with_metadata(path: str) -> Tuple[Dict[str, np.ndarray], Dict[str, str]]:
    """Read a safetensors file: (name -> numpy array in file order, metadata)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > _MAX_HEADER or 8 + n > len(raw):
        raise ValueError(f"{path}: bad header length {n}")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", None) or {}
    data = memoryview(raw)[8 + n:]
    out: Dict[str, np.ndarray] = {}
    spans = []
    for name, info in header.items():
        dt = _DTYPES[info["dtype"]]
        shape = tuple(int(d) for d in info["shape"])
        begin, end = (int(x) for x in info["data_offsets"])
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= begin <= end <= len(data) or end - begin != count * dt.itemsize:
            raise ValueError(f"{path}: tensor {name!r} has bad data_offsets {begin, end}")
        out[name] = np.frombuffer(data[begin:end], dtype=dt).reshape(shape).copy()
        spans.append((begin, end))
    spans.sort()
    pos = 0
    for begin, end in spans:
        if begin != pos:
            raise ValueError(f"{path}: tensor data is not contiguous at byte {pos}")
        pos = end
    if pos != len(data):
        raise ValueError(f"{path}: {len(data) - pos} trailing bytes after the tensor data")
    return out, metadata


def load_file(path: str) -> Dict[str, np.ndarray]:
    """Read a safetensors file: name -> numpy array, in file order."""
    return load_file_with_metadata(path)[0]


def self_test() -> None:
    """Round-trip every supported dtype, odd shapes and metadata through a file."""
    import os
    import tempfile

    rng = np.random.default_rng(0)
    tensors = {
        "a.weight": rng.standard_normal((3, 5)).astype(np.float32),
        "scalar": np.array(1.5, dtype=np.float32),
        "empty": np.zeros((0, 4), dtype=np.float32),
        "ids": rng.integers(-5, 5, size=(7,)).astype(np.int64),
        "tokens": rng.integers(0, 65535, size=(9,)).astype(np.uint16),
        "mask": rng.integers(0, 2, size=(2, 3)).astype(bool),
        "half": rng.standard_normal((2, 2)).astype(np.float16),
        "double": rng.standard_normal((1, 3)),
    }
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.safetensors")
        save_file(tensors, path, metadata={"format": "pt", "note": "self-test"})
        back, meta = load_file_with_metadata(path)
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
        assert (8 + n) % 8 == 0, "header is not padded to 8 bytes"
    assert meta == {"format": "pt", "note": "self-test"}, meta
    assert list(back) == list(tensors), (list(back), list(tensors))
    for name, arr in tensors.items():
        assert back[name].dtype == arr.dtype and back[name].shape == arr.shape, name
        assert np.array_equal(back[name], arr), name
    print("safetensors_io self-test: OK")


if __name__ == "__main__":
    self_test()

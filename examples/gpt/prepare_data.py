#!/usr/bin/python3
"""Turn a text file into character-level token data for the example GPT.

Writes, into --out:

    vocab.json   the character vocabulary (see README.md for the format)
    train.bin    the first (1 - val_fraction) of the text, one uint16 per character
    val.bin      the rest

The .bin files are nanoGPT's format: raw little-endian uint16 token ids, no header.
The vocabulary is the sorted set of characters of the WHOLE text (after
--start-marker), so cutting the text with --max-chars does not change it.

The bundled demo data (examples/gpt/data/) was made from "The Devil's Dictionary"
by Ambrose Bierce (public domain), as shipped by Debian's package dict-devil:

    /usr/bin/python3 examples/gpt/prepare_data.py /usr/share/dictd/devil.dict.dz \\
        --start-marker "The Internet Wiretap" --max-chars 145000 --out examples/gpt/data

Compressed inputs (.gz, and dictd's .dz, which is gzip) are read transparently.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys

import numpy as np


def read_text(path: str) -> str:
    """Read a (possibly gzip/dictzip-compressed) UTF-8 text, with '\\n' line ends."""
    opener = gzip.open if path.endswith((".gz", ".dz")) else open
    with opener(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def cut_at_newline(text: str, limit: int) -> int:
    """The largest index <= limit just after a newline (or limit if there is none)."""
    if limit >= len(text):
        return len(text)
    i = text.rfind("\n", 0, limit)
    return i + 1 if i > 0 else limit


def build_vocab(text: str) -> list:
    return sorted(set(text))


def encode(text: str, stoi: dict) -> np.ndarray:
    ids = np.fromiter((stoi[c] for c in text), dtype=np.int64, count=len(text))
    return ids.astype("<u2")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input", help="text file (.gz/.dz read as gzip)")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--start-marker", default=None,
                    help="drop everything before the first occurrence of this string")
    ap.add_argument("--max-chars", type=int, default=0,
                    help="keep at most this many characters (cut at a line end); 0 = all")
    ap.add_argument("--val-fraction", type=float, default=0.1,
                    help="fraction of the kept text that goes to val.bin (cut at a line end)")
    ap.add_argument("--source", default=None, help="source description stored in vocab.json")
    args = ap.parse_args(argv)

    text = read_text(args.input)
    if args.start_marker is not None:
        i = text.find(args.start_marker)
        if i < 0:
            ap.error(f"--start-marker {args.start_marker!r} not found in {args.input}")
        text = text[i:]
    chars = build_vocab(text)
    if len(chars) > 65536:
        ap.error(f"{len(chars)} distinct characters do not fit uint16")
    stoi = {c: i for i, c in enumerate(chars)}

    if args.max_chars > 0:
        text = text[:cut_at_newline(text, args.max_chars)]
    split = cut_at_newline(text, int(round(len(text) * (1.0 - args.val_fraction))))
    parts = {"train": text[:split], "val": text[split:]}

    os.makedirs(args.out, exist_ok=True)
    sizes = {}
    for name, part in parts.items():
        ids = encode(part, stoi)
        ids.tofile(os.path.join(args.out, f"{name}.bin"))
        sizes[name] = int(ids.size)
        print(f"{name}.bin: {ids.size} tokens ({ids.nbytes} bytes)")

    vocab = {
        "format": "char",
        "vocab_size": len(chars),
        "itos": chars,
        "token_dtype": "uint16-le",
        "tokens": sizes,
        "source": args.source or os.path.basename(args.input),
        "start_marker": args.start_marker,
        "max_chars": args.max_chars,
        "val_fraction": args.val_fraction,
    }
    with open(os.path.join(args.out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, indent=1, ensure_ascii=True)
        f.write("\n")
    print(f"vocab.json: {len(chars)} characters")

    # Self-check: decoding the .bin files gives back the text.
    itos = vocab["itos"]
    for name, part in parts.items():
        ids = np.fromfile(os.path.join(args.out, f"{name}.bin"), dtype="<u2")
        assert "".join(itos[i] for i in ids) == part, f"{name}.bin does not decode to its text"
    return 0


if __name__ == "__main__":
    sys.exit(main())

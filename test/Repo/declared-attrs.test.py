"""Fails, naming file and line, where C++ under lib/ or tools/ spells a
discardable attribute as a string literal ("dist.stage", "tsr.param") instead
of using its generated helper (dist::DistDialect::StageAttrHelper)."""
import os
import re
import sys

root = sys.argv[1]
literal = re.compile(r'"(dist|tsr)\.[a-z_]+"')
# Op names, not attributes.
ops = {'"dist.send"', '"dist.recv"', '"dist.comm"'}
found = []
for d in ["lib", "tools"]:
    for base, _, files in os.walk(os.path.join(root, d)):
        for name in files:
            if not name.endswith((".cpp", ".h")):
                continue
            path = os.path.join(base, name)
            with open(path, encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    hits = [m.group(0) for m in literal.finditer(line)
                            if m.group(0) not in ops]
                    if hits:
                        found.append(f"{os.path.relpath(path, root)}:{number}:"
                                     f" {', '.join(hits)}: {line.strip()}")
for line in found:
    print(line)
print(f"{len(found)} attribute literal(s)")
sys.exit(1 if found else 0)

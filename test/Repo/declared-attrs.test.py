"""Fails, naming file and line, where C++ under lib/ or tools/ spells a
discardable attribute as a string literal ("dist.stage", "tsr.param") instead
of using its generated helper (dist::DistDialect::StageAttrHelper), or finds
a function's role by matching its name (train_step_, _rank<r>, grad_step)
instead of by the attributes that carry it."""
import os
import re
import sys

root = sys.argv[1]
literal = re.compile(r'"(dist|tsr)\.[a-z_]+"')
# Op names, not attributes.
ops = {'"dist.send"', '"dist.recv"', '"dist.comm"'}
# A function's role is an attribute (tsr.train_step, tsr.grad_step,
# dist.rank, dist.origin): its name may be made from these pieces, never
# matched against them.
protocol = re.compile(
    r'(starts_with|ends_with|drop_front|drop_back|lookupSymbol\w*|==|!=)'
    r'[^;]*"(train_step_\w*|_rank|grad_step|_grad)"')
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
                    m = protocol.search(line)
                    if m:
                        hits.append(m.group(2) + " (name matched)")
                    if hits:
                        found.append(f"{os.path.relpath(path, root)}:{number}:"
                                     f" {', '.join(hits)}: {line.strip()}")
for line in found:
    print(line)
print(f"{len(found)} attribute literal(s) or name match(es)")
sys.exit(1 if found else 0)

#!/usr/bin/env python3
"""How far L0 follows MLIR on MLIR's own regression tests (issue 10).

Usage: benches/mlir_tests.py DIR [--l0 PATH] [--mlir-opt PATH] [-v]

DIR holds copies of MLIR's test files, by their path under `mlir/test/`:
`Dialect/Arith/canonicalize.mlir`, `Dialect/SCF/canonicalize.mlir`,
`Transforms/canonicalize.mlir`, `Transforms/cse.mlir`,
`Transforms/inlining.mlir` and `Dialect/MemRef/canonicalize.mlir` (any
that are missing are skipped). They are not
part of this repository.

Each file is split at `// -----` into parts. For canonicalize and cse
every function of a part is a case of its own; for inlining, the whole part
(functions call each other). A case counts only when it uses nothing but
`func`, `arith`, `math` and `scf` ops on scalars (no `vector`, `tensor`
or `memref` types) and mlir-opt-16 accepts it. Then:

- *parsed*: `l0-opt` reads it (and verifies it);
- *as far*: after the pass, L0 leaves at most as many ops as mlir-opt-16
  leaves after its pass (ops counted in each tool's generic form, the
  functions' own ops, terminators included).

Prints one line per file and the totals; `-v` lists every case that L0
does not parse or leaves less simplified, with the reason. `--round2` also
counts the cases that use `cf`, `ub` and `memref` ops and `memref` types
(issue 45's constructs), as the issue measured them.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

FILES = [
    ("Dialect/Arith/canonicalize.mlir", "canonicalize", "function"),
    ("Dialect/SCF/canonicalize.mlir", "canonicalize", "function"),
    ("Transforms/canonicalize.mlir", "canonicalize", "function"),
    ("Transforms/cse.mlir", "cse", "function"),
    ("Transforms/inlining.mlir", "inline", "part"),
    # Only with --round2 (memref types).
    ("Dialect/MemRef/canonicalize.mlir", "canonicalize", "function"),
]
ALLOWED = ("func.", "arith.", "math.", "scf.")
# Shaped types (vectors, tensors, memrefs) are outside what L0 shares with MLIR.
SHAPED = re.compile(r"\b(vector|tensor|memref)<")
OP_NAME = re.compile(r'"([A-Za-z_][\w$]*\.[\w$.]+)"\s*\(')
CUSTOM_OP = re.compile(r"(?:^|=)\s*([A-Za-z_][\w$]*\.[\w$.]+)\b")
BARE = re.compile(r"^\s*(return|call)\b")


def matching(text, i):
    """The index of the brace closing the one at `i`."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


def functions(part):
    """The top-level `func.func` ops of a part that have a body, as text
    (declarations are left out)."""
    out = []
    starts = [m.start() for m in re.finditer(r"^\s*func\.func\b", part, re.M)]
    for k, s0 in enumerate(starts):
        limit = starts[k + 1] if k + 1 < len(starts) else len(part)
        i = part.find("{", s0, limit)
        if i >= 0 and part[s0:i].rstrip().endswith("attributes"):
            i = part.find("{", matching(part, i) + 1, limit)
        if i < 0:
            continue
        out.append(part[s0:matching(part, i) + 1])
    return out


def ops_used(text):
    """Op names written in a case (custom and generic forms)."""
    names = set(OP_NAME.findall(text))
    for line in text.splitlines():
        line = line.split("//")[0]
        m = CUSTOM_OP.search(line)
        if m:
            names.add(m.group(1))
        if BARE.match(line):
            names.add("func." + BARE.match(line).group(1))
    return names


def count_ops(generic):
    """Ops inside the functions of a generic-form module (not the module and
    functions themselves)."""
    names = OP_NAME.findall(generic)
    return sum(1 for n in names if n not in ("builtin.module", "func.func"))


def run(cmd, text):
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(text)
        path = f.name
    try:
        p = subprocess.run(cmd + [path], capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", "timeout"
    finally:
        os.unlink(path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--l0", default=os.path.join(os.path.dirname(__file__), "..", "target", "release", "l0-opt"))
    ap.add_argument("--mlir-opt", default="/usr/lib/llvm-16/bin/mlir-opt")
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--round2", action="store_true")
    a = ap.parse_args()
    allowed = ALLOWED + (("cf.", "ub.", "memref.") if a.round2 else ())
    shaped = re.compile(r"\b(vector|tensor)<") if a.round2 else SHAPED
    totals = [0, 0, 0]
    for rel, pass_, unit in FILES:
        path = os.path.join(a.dir, rel)
        if not os.path.exists(path):
            print(f"{rel}: missing, skipped")
            continue
        text = open(path, encoding="utf-8").read()
        parts = re.split(r"^// -----\s*$", text, flags=re.M)
        cases = []
        for k, part in enumerate(parts):
            if unit == "part":
                if "func.func" in part:
                    cases.append((f"part {k}", part))
            else:
                for fn in functions(part):
                    name = re.search(r"@([\w$.]+)", fn)
                    cases.append((name.group(1) if name else f"part {k}", fn))
        n = parsed = far = 0
        for name, case in cases:
            used = ops_used(case)
            if any(not u.startswith(allowed) for u in used) or shaped.search(case):
                continue
            rc, mout, _ = run([a.mlir_opt, f"--{pass_}", "--mlir-print-op-generic"], case)
            if rc != 0:
                continue
            n += 1
            rc, lout, lerr = run([a.l0, f"--pass={pass_}", "--print-generic"], case)
            if rc != 0:
                if a.v:
                    first = (lerr.strip().splitlines() or ["?"])[0]
                    print(f"  not parsed: {rel} @{name}: {first}")
                continue
            parsed += 1
            cl, cm = count_ops(lout), count_ops(mout)
            if cl <= cm:
                far += 1
            elif a.v:
                print(f"  less simplified: {rel} @{name}: {cl} ops left, mlir-opt {cm}")
        print(f"{rel} ({pass_}): {n} cases in these dialects, {parsed} parsed, {far} simplified as far")
        totals[0] += n
        totals[1] += parsed
        totals[2] += far
    print(f"total: {totals[0]} cases, {totals[1]} parsed, {totals[2]} simplified as far as mlir-opt-16")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Generate the second CSE + canonicalize benchmark shape: one long dependency
chain (MLIR generic syntax, also valid L0 IR).

    python3 benches/gen_chain.py [-n N] [--params P] [--seed S] [-o FILE]

Writes one function whose N `arith.addf`/`arith.mulf` ops form a single chain:
every op takes the previous step's value and one parameter,

    %c0 = "arith.addf"(%x0, %x3) : (f64, f64) -> f64
    %c1 = "arith.mulf"(%c0, %x7) : (f64, f64) -> f64
    ...

so nothing can run in parallel and the use lists stay short (the opposite of
`gen_cse_bench.py`'s wide DAG). Steps are, in shuffled order:

  * n_dup = N // 3: a repeat of the step before (same op, same operands); the
    chain goes on from the repeat, so CSE replaces it by the original;
  * n_one = N // 6: `"arith.mulf"(%prev, %one)`, which canonicalize folds to
    %prev;
  * the rest fresh steps, none equal to another even after the above.

A repeat never directly follows a `x * 1.0` step (its original would fold away
too). Expected after `cse,canonicalize`: n_fresh = N - n_dup - n_one addf/mulf
and no constant, printed on stderr in the same format as gen_cse_bench.py.
Deterministic for a given (N, P, seed).
"""
import argparse
import random
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=1_000_000, help="number of addf/mulf ops")
    ap.add_argument("--params", type=int, default=16, help="number of f64 parameters")
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    args = ap.parse_args()
    n, p = args.n, args.params
    if n < 3 or p < 2:
        sys.exit("need n >= 3 and params >= 2")
    rng = random.Random(args.seed)
    n_dup, n_one = n // 3, n // 6
    n_fresh = n - n_dup - n_one
    # Schedule: a repeat only follows a fresh step (each fresh step at most
    # once), so pair every repeat with a fresh step before shuffling.
    units = [["f", "d"]] * n_dup + [["o"]] * n_one + [["f"]] * (n_fresh - n_dup)
    if n_fresh < n_dup:
        sys.exit("internal error: too few fresh steps")
    rng.shuffle(units)
    cats = ["f"] + [c for u in units for c in u]
    cats = cats[:n] if len(cats) > n else cats
    # The leading extra "f" replaces one plain fresh unit: drop one.
    if len(cats) > n:
        cats = cats[:n]
    lines = []
    prev = "%x0"
    last_fresh = None  # (op, a, b) of the step before, when fresh
    counts = {"f": 0, "d": 0, "o": 0}
    for i, c in enumerate(cats):
        name = f"%c{i}"
        if c == "d" and last_fresh is not None:
            op, a, b = last_fresh
            last_fresh = None
        elif c == "o":
            op, a, b = "mulf", prev, "%one"
            last_fresh = None
        else:
            c = "f"
            op = "addf" if rng.random() < 0.5 else "mulf"
            a, b = prev, f"%x{rng.randrange(p)}"
            last_fresh = (op, a, b)
        counts[c] += 1
        lines.append(f'    {name} = "arith.{op}"({a}, {b}) : (f64, f64) -> f64\n')
        prev = name
    out = open(args.output, "w") if args.output != "-" else sys.stdout
    w = out.write
    w(
        f"// gen_chain.py n={n} params={p} seed={args.seed}\n"
        f"// one chain of {n} addf/mulf = {counts['f']} fresh + {counts['d']} repeats + "
        f"{counts['o']} x*1.0, plus 1 arith.constant\n"
        f"// expected after cse,canonicalize: {counts['f']} addf/mulf, 0 arith.constant\n"
    )
    w("module {\n")
    w("  func.func @bench(" + ", ".join(f"%x{i}: f64" for i in range(p)) + ") -> f64 {\n")
    w('    %one = "arith.constant"() {value = 1.0 : f64} : () -> f64\n')
    w("".join(lines))
    w(f'    "func.return"({prev}) : (f64) -> ()\n')
    w("  }\n}\n")
    if out is not sys.stdout:
        out.close()
    print(
        f"ops={n} fresh={counts['f']} duplicates={counts['d']} mul_by_one={counts['o']} constants=1\n"
        f"expected_after_cse_canonicalize: addf_mulf={counts['f']} constant=0",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()

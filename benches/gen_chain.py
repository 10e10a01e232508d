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
import random
import sys

from gen_cse_bench import parse_args, write_bench


def main():
    args = parse_args(__doc__.split("\n")[0])
    n, p = args.n, args.params
    rng = random.Random(args.seed)
    n_dup, n_one = n // 3, n // 6
    n_fresh = n - n_dup - n_one
    # Schedule: a repeat only follows a fresh step (each fresh step at most
    # once), so pair every repeat with a fresh step before shuffling.
    units = [["f", "d"]] * n_dup + [["o"]] * n_one + [["f"]] * (n_fresh - n_dup)
    if n_fresh < n_dup:
        sys.exit("internal error: too few fresh steps")
    rng.shuffle(units)
    # A leading fresh step, then the units: one step more than n, so the last
    # is dropped.
    cats = (["f"] + [c for u in units for c in u])[:n]
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
    header = [
        f"gen_chain.py n={n} params={p} seed={args.seed}",
        f"one chain of {n} addf/mulf = {counts['f']} fresh + {counts['d']} repeats + "
        f"{counts['o']} x*1.0, plus 1 arith.constant",
    ]
    write_bench(args, header, lines, prev, counts["f"], counts["d"], counts["o"])


if __name__ == "__main__":
    main()

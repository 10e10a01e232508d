#!/usr/bin/env python3
"""Generate a CSE + canonicalize benchmark in MLIR generic syntax (also valid L0 IR).

    python3 benches/gen_cse_bench.py [-n N] [--params P] [--seed S] [-o FILE]

Writes one function

    func.func @bench(%x0: f64, ..., %x{P-1}: f64) -> f64 {
      %one = "arith.constant"() {value = 1.0 : f64} : () -> f64
      %v0 = "arith.addf"(%x3, %x7) : (f64, f64) -> f64
      ...
      "func.return"(%vLAST) : (f64) -> ()
    }

with exactly N `arith.addf`/`arith.mulf` ops (plus the one constant and the return):

  * n_dup   = N // 3  ops are exact textual duplicates (same op name, same operand
    names) of an earlier *fresh* op -> CSE removes every one of them;
  * n_one   = N // 6  ops are `"arith.mulf"(%x, %one)` -> canonicalize folds every one
    of them to %x (and the constant then becomes dead and is removed too);
  * n_fresh = N - n_dup - n_one ops are "fresh": no two fresh ops are equal, even
    after duplicates are replaced by their originals and `x * 1.0` by `x`, and even
    up to commutation of operands.  So neither pass order, nor repeating CSE after
    canonicalize, nor commutative operand sorting can remove any fresh op.

Nothing is dead: every op result has at least one use.  Fresh ops and `x * 1.0`
ops take their operands preferentially from a queue of not-yet-used values (so the
whole function is a big reduction DAG ending in the returned value); a duplicate
re-uses operands that are already used.  Since every value has a use and uses only
point forward, every op transitively feeds the returned value, so DCE alone removes
nothing and op counts before/after are directly comparable.  The first op and the
last 64 ops are fresh (the tail drains the queue of unused values into the returned
value); the kinds in between are shuffled.

Expected result of `cse,canonicalize` (in either order, any number of rounds):
    arith.addf + arith.mulf ops:  n_fresh   (= N - N//3 - N//6)
    arith.constant ops:           0
The script prints these numbers on stderr and in a `//` comment at the top of the file.
Deterministic for a given (N, P, seed).
"""
import argparse
import random
import sys
from collections import deque


def generate(n, p, rng, tail):
    """Return the op lines (without header/return) and the returned value, or None if
    the unused-value queue did not drain into the last op (only happens for tiny n)."""
    n_dup = n // 3
    n_one = n // 6
    n_fresh = n - n_dup - n_one
    tail = max(0, min(tail, n_fresh - 1))

    # Category schedule: the first op is fresh (a duplicate needs an earlier fresh op);
    # the last `tail` ops are fresh so that the queue of unused values drains into the
    # returned value; everything in between is shuffled.
    mid = ["d"] * n_dup + ["o"] * n_one + ["f"] * (n_fresh - 1 - tail)
    rng.shuffle(mid)
    cats = ["f"] + mid + ["f"] * tail

    params = [f"%x{i}" for i in range(p)]
    resolve = {x: x for x in params}  # value -> what it becomes after cse+canonicalize
    values = list(params)  # operand pool (never %one)
    used = set(params)  # params count as "used" (they are not ops)
    unused = deque()  # op results that have no use yet, oldest first
    fresh_ops = []  # (op, a, b, result) of fresh ops, for duplication
    fresh_keys = set()  # (op, *sorted resolved operands)
    lines = []

    def take(from_queue=True):
        """An operand: the oldest unused value if any, else a (mostly recent) value."""
        while from_queue and unused:
            v = unused.popleft()
            if v not in used:
                return v
        if rng.random() < 0.8:
            lo = max(0, len(values) - 64)
            return values[rng.randrange(lo, len(values))]
        return values[rng.randrange(len(values))]

    for i, c in enumerate(cats):
        name = f"%v{i}"
        if c == "d":
            op, a, b, orig = fresh_ops[rng.randrange(len(fresh_ops))]
            resolve[name] = orig
        elif c == "o":
            op, a, b = "mulf", take(), "%one"
            resolve[name] = resolve[a]
        else:
            for attempt in range(10000):
                op = "addf" if rng.random() < 0.5 else "mulf"
                a, b = take(), take(attempt == 0)
                if rng.random() < 0.5:
                    a, b = b, a
                key = (op,) + tuple(sorted((resolve[a], resolve[b])))
                if key not in fresh_keys:
                    break
                for v in (b, a):  # collision: give unused picks back
                    if v not in used:
                        unused.appendleft(v)
            else:
                sys.exit("could not find a fresh op; use more --params")
            fresh_keys.add(key)
            fresh_ops.append((op, a, b, name))
            resolve[name] = name
        lines.append(f'    {name} = "arith.{op}"({a}, {b}) : (f64, f64) -> f64\n')
        used.add(a)
        used.add(b)
        values.append(name)
        unused.append(name)

    last = f"%v{len(cats) - 1}"
    if any(v not in used and v != last for v in values):
        return None
    assert len(lines) == n and len(fresh_keys) == n_fresh
    return lines, last


def parse_args(description):
    """The command line both generators take: -n, --params, --seed, -o."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("-n", type=int, default=1_000_000, help="number of addf/mulf ops")
    ap.add_argument("--params", type=int, default=16, help="number of f64 parameters")
    ap.add_argument("--seed", type=int, default=12345)
    ap.add_argument("-o", "--output", default="-", help="output file (default stdout)")
    args = ap.parse_args()
    if args.n < 3 or args.params < 2:
        sys.exit("need n >= 3 and params >= 2")
    return args


def write_bench(args, header, lines, last, fresh, dups, ones):
    """Writes `func.func @bench` (the `%one` constant, `lines`, a return of
    `last`) after the `//` comment lines `header` and the expected counts, to
    args.output; prints the counts on stderr in the format cse_vs_mlir.sh reads."""
    out = open(args.output, "w") if args.output != "-" else sys.stdout
    w = out.write
    w("".join(f"// {h}\n" for h in header))
    w(f"// expected after cse,canonicalize: {fresh} addf/mulf, 0 arith.constant\n")
    w("module {\n")
    w("  func.func @bench(" + ", ".join(f"%x{i}: f64" for i in range(args.params)) + ") -> f64 {\n")
    w('    %one = "arith.constant"() {value = 1.0 : f64} : () -> f64\n')
    w("".join(lines))
    w(f'    "func.return"({last}) : (f64) -> ()\n')
    w("  }\n}\n")
    if out is not sys.stdout:
        out.close()
    print(
        f"ops={args.n} fresh={fresh} duplicates={dups} mul_by_one={ones} constants=1\n"
        f"expected_after_cse_canonicalize: addf_mulf={fresh} constant=0",
        file=sys.stderr,
    )


def main():
    args = parse_args(__doc__.split("\n")[1])
    n, p = args.n, args.params
    n_dup = n // 3
    n_one = n // 6
    n_fresh = n - n_dup - n_one

    # Deterministic retries (never needed for n >= ~1000): longer fresh tails.
    for attempt in range(200):
        rng = random.Random(f"{args.seed}/{attempt}")
        r = generate(n, p, rng, 64 * (attempt + 1))
        if r is not None:
            break
    else:
        sys.exit("internal error: could not build a function without dead ops")
    lines, last = r
    header = [
        f"gen_cse_bench.py n={n} params={p} seed={args.seed}",
        f"{n} addf/mulf = {n_fresh} fresh + {n_dup} duplicates + {n_one} x*1.0, "
        "plus 1 arith.constant; no dead ops",
    ]
    write_bench(args, header, lines, last, n_fresh, n_dup, n_one)


if __name__ == "__main__":
    main()

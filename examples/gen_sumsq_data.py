#!/usr/bin/env python3
"""Write a 1-D float64 .npy for the sum-of-squares benchmark and print the expected sum.

    python3 examples/gen_sumsq_data.py OUTDIR [-n 10000000] [--seed 7]

Writes OUTDIR/sumsq_x.npy (uniform in [-1, 1)) and prints `expected=<sum of x*x>`,
correctly rounded (math.fsum of the exactly rounded squares).  Any summation order
(eight accumulators: ~1e-14 relative) agrees within 1e-10 relative at n = 10^7.
"""
import argparse
import math
import os
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("-n", type=int, default=10_000_000)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    x = np.random.default_rng(a.seed).uniform(-1.0, 1.0, a.n).astype("<f8")
    path = os.path.join(a.outdir, "sumsq_x.npy")
    np.save(path, x)
    sq = x * x
    print(f"n={a.n} seed={a.seed} file={path}", file=sys.stderr)
    print(f"expected={math.fsum(sq.tolist())!r}")
    print(f"expected_numpy_sum={float(np.sum(sq))!r}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write Black-Scholes inputs as four 1-D float64 .npy files and print the checksum.

    python3 examples/gen_blackscholes_data.py OUTDIR [-n 1000000] [--seed 42]

Writes OUTDIR/bs_s.npy (spot, uniform in [10, 100]), bs_k.npy (strike, [10, 100]),
bs_t.npy (time to expiry in years, [0.1, 2]), bs_v.npy (volatility, [0.05, 0.6]) and
prints `checksum=<sum of call prices>` (rate r = 0.02), computed in numpy float64 with
exactly the formula and operation order of examples/blackscholes.ir, benches/c/blackscholes.c
and PARSEC's BlkSchlsEqEuroNoDiv/CNDF.  The checksum is summed with math.fsum (correctly
rounded); a strict left-to-right f64 sum of the 10^6 prices (as in benches/c/blackscholes.c)
differs by about 1e-10 relative (1e-9 is a safe tolerance); exp/log ulp differences are
negligible next to that.
"""
import argparse
import math
import os
import sys

import numpy as np

R = 0.02
INV_SQRT_2PI = 0.39894228040143270286
A1, A2, A3, A4, A5 = 0.319381530, -0.356563782, 1.781477937, -1.821255978, 1.330274429


def cnd(x):
    """PARSEC CNDF (Abramowitz-Stegun 26.2.17), same operation order."""
    neg = x < 0.0
    ax = np.abs(x)
    npx = np.exp((-0.5 * ax) * ax) * INV_SQRT_2PI
    k = 1.0 / (1.0 + 0.2316419 * ax)
    k2 = k * k
    k3 = k2 * k
    k4 = k3 * k
    k5 = k4 * k
    l1 = k * A1
    l2 = k2 * A2
    l3 = k3 * A3
    l2 = l2 + l3
    l3 = k4 * A4
    l2 = l2 + l3
    l3 = k5 * A5
    l2 = l2 + l3
    l1 = l2 + l1
    pos = 1.0 - l1 * npx
    return np.where(neg, 1.0 - pos, pos)


def call_prices(s, k, t, v, r=R):
    """PARSEC BlkSchlsEqEuroNoDiv for calls, same operation order."""
    sqrt_t = np.sqrt(t)
    log_term = np.log(s / k)
    pow_ = (v * v) * 0.5
    d1 = ((r + pow_) * t + log_term) / (v * sqrt_t)
    den = v * sqrt_t
    d2 = d1 - den
    fv = k * np.exp((-r) * t)
    return s * cnd(d1) - fv * cnd(d2)


def make(n, seed):
    rng = np.random.default_rng(seed)
    s = rng.uniform(10.0, 100.0, n)
    k = rng.uniform(10.0, 100.0, n)
    t = rng.uniform(0.1, 2.0, n)
    v = rng.uniform(0.05, 0.6, n)
    return s, k, t, v


def checksum(prices):
    return math.fsum(prices.tolist())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("-n", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    arrays = make(a.n, a.seed)
    for name, arr in zip("sktv", arrays):
        np.save(os.path.join(a.outdir, f"bs_{name}.npy"), np.ascontiguousarray(arr, "<f8"))
    prices = call_prices(*arrays)
    print(f"n={a.n} seed={a.seed} files={a.outdir}/bs_{{s,k,t,v}}.npy", file=sys.stderr)
    print(f"checksum={checksum(prices)!r}")
    print(f"checksum_numpy_sum={float(np.sum(prices))!r}")


if __name__ == "__main__":
    main()

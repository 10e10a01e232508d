#!/usr/bin/env python3
"""Write the small example inputs in examples/data/ and print the expected outputs.

    python3 examples/make_example_data.py [--check]

The inputs of sumsq/mean_var/filter_sum are short dyadic vectors (multiples of 1/8 with
few significant bits, length 16), so every sum is exact in f64 whatever the summation
order: the expected outputs are exact and must match bit for bit.  Black-Scholes uses
8 random options; its expected output is correctly rounded (math.fsum) and an
implementation may differ in the last bits (exp/log ulps, summation order).
Outputs are printed the way `l0-opt --run` prints them (Rust's shortest round-trip
`Display`: `10`, `2.5`, never an exponent).
"""
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
from gen_blackscholes_data import call_prices, make  # noqa: E402

DATA = os.path.join(HERE, "data")


def rust(x):
    """Rust's `{}` for f64: shortest round-trip digits, positional, no trailing `.0`."""
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return np.format_float_positional(x, unique=True, trim="-")


def save(name, arr):
    np.save(os.path.join(DATA, name), np.ascontiguousarray(arr, "<f8"))


def main():
    os.makedirs(DATA, exist_ok=True)
    results = {}

    x = np.array([1.5, -2.0, 3.25, 0.0, -0.5, 4.0, 2.5, -1.25,
                  0.75, 10.0, -3.0, 0.125, 6.0, -7.5, 8.0, 0.25])
    save("sumsq_x.npy", x)
    results["sumsq"] = [math.fsum((x * x).tolist())]

    m = np.array([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0,
                  -1.5, 3.5, 0.25, 6.75, 12.0, -4.0, 8.5, 2.75])
    save("mean_var_x.npy", m)
    n = float(len(m))
    s = math.fsum(m.tolist())
    ss = math.fsum((m * m).tolist())
    mean = s / n
    var = ss / n - mean * mean
    assert var == float(np.var(m)), (var, np.var(m))  # exact data: same as two-pass
    results["mean_var"] = [mean, var]

    f = np.array([3.0, -1.0, 0.0, 2.5, -0.0, -7.25, 4.125, 1.0,
                  -2.0, 0.5, 9.0, -0.125, 6.0, -3.5, 0.25, 11.0])
    save("filter_sum_x.npy", f)
    results["filter_sum"] = [math.fsum(f[f > 0.0].tolist())]

    s_, k_, t_, v_ = make(8, 2024)
    for name, arr in zip("sktv", (s_, k_, t_, v_)):
        save(f"bs_{name}.npy", arr)
    prices = call_prices(s_, k_, t_, v_)
    results["blackscholes"] = [math.fsum(prices.tolist())]
    # per-option detail for debugging
    d1 = ((0.02 + v_ * v_ * 0.5) * t_ + np.log(s_ / k_)) / (v_ * np.sqrt(t_))
    print("# blackscholes per option (s, k, t, v, d1, price):", file=sys.stderr)
    for row in zip(s_, k_, t_, v_, d1, prices):
        print("#   " + " ".join(rust(z) for z in row), file=sys.stderr)

    # Complex numbers (struct-of-arrays: one file per field); dyadic, so
    # the real part of sum(2.5 * z) is exact.
    z_re = np.array([1.5, -2.0, 0.25, 3.0, -0.5, 4.0, 2.5, -1.25])
    z_im = np.array([0.5, 1.0, -3.0, 2.0, 0.75, -1.5, 0.0, 6.0])
    save("complex_re.npy", z_re)
    save("complex_im.npy", z_im)
    results["complex"] = [math.fsum((2.5 * z_re).tolist())]

    # Records: price (f64), qty (i64), weight (f64); total price of the
    # orders with qty >= 3.
    price = np.array([9.5, 20.0, 3.25, 7.0, 15.5, 1.125, 30.0, 4.75])
    qty = np.array([1, 5, 3, 2, 8, 3, 0, 12], dtype="<i8")
    weight = np.array([0.5, 2.0, 1.25, 0.75, 3.0, 0.125, 6.0, 1.5])
    save("records_price.npy", price)
    np.save(os.path.join(DATA, "records_qty.npy"), qty)
    save("records_weight.npy", weight)
    results["records"] = [math.fsum(price[qty >= 3].tolist())]

    # Argmin: the least value (-2.5, three times) first at index 3.
    am = np.array([3.5, 1.25, 7.0, -2.5, 4.0, -2.5, 9.0, 0.5,
                   -1.0, 6.25, 2.0, -2.5, 8.0, 0.75, 5.5, 1.0])
    save("argmin_x.npy", am)
    results["argmin"] = [float(am.min()), int(np.argmin(am))]

    # Histogram: 16 dyadic values in [0, 1), counted into 4 bins.
    hx = np.array([0.125, 0.5, 0.875, 0.25, 0.625, 0.0, 0.75, 0.375,
                   0.9375, 0.0625, 0.5, 0.25, 0.6875, 0.8125, 0.125, 0.4375])
    save("histogram_x.npy", hx)
    results["histogram"] = ["[" + ", ".join(str(int(k)) for k in np.bincount((hx * 4).astype(int), minlength=4)) + "]"]

    # Tridiagonal system (diagonally dominant): a[0] and c[7] are not read.
    ta = np.array([0.0, 1.0, -0.5, 2.0, 1.0, 0.5, -1.0, 1.5])
    tb = np.array([4.0, 5.0, 4.5, 6.0, 5.0, 4.0, 5.5, 6.0])
    tc = np.array([1.0, -1.0, 0.5, 1.0, 2.0, -0.5, 1.0, 0.0])
    ty = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    for name, arr in zip("abcy", (ta, tb, tc, ty)):
        save(f"tridag_{name}.npy", arr)
    mat = np.diag(tb) + np.diag(ta[1:], -1) + np.diag(tc[:-1], 1)
    results["tridag"] = ["[" + ", ".join(rust(v) for v in np.linalg.solve(mat, ty)) + "]"]

    for name, vals in results.items():
        print(f"{name}: " + " ".join(v if isinstance(v, str) else rust(v) for v in vals))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The fixed cost of small CPU calls: tally's numpy functions against numpy's own on 16, 100 and
1000 samples (issue 42: within 2x numpy's time).

    python3 bench/small_calls.py [--out OUT.json] [--calls 1000] [--rounds 7] [--sizes 16 100 1000]

Each row is one call on a numpy array of int64, float64 or float32 samples (seeded uniform data):
bincount (int64 samples only; numpy refuses floats), bincount with float64 weights, histogram with
10 bins and a range, with 10 bins and no range (the data's extremes), with an array of 11 edges,
and histc (torch.histc's signature over numpy arrays; numpy's nearest call, histogram with a range,
beside it). A call's time is the best over `rounds` of a loop of `calls` back-to-back calls, in
microseconds a call; tally's and numpy's loops alternate round by round so that both see the same
machine. Every row checks first that tally's result equals numpy's. Prints a table and writes JSON
(--out): the machine, the versions, and per row both times and their ratio."""

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

import tally

DTYPES = ("int64", "float64", "float32")
SIZES = (16, 100, 1000)
BINS = 10


def samples(rng, n, dtype):
    """n samples of `dtype`: integers 0..n-1 (bincount's values), floats uniform in [0, 1)."""
    if dtype == "int64":
        return rng.integers(0, n, n).astype(np.int64)
    return rng.random(n).astype(dtype)


def rows(rng, n, dtype):
    """(name, tally call, numpy call, compare) for samples of `dtype`; compare(t, n) says whether
    tally's result `t` equals numpy's `n`."""
    x = samples(rng, n, dtype)
    lo, hi = (0, n) if dtype == "int64" else (0.0, 1.0)
    edges = np.linspace(lo, hi, BINS + 1)
    w = rng.random(n)
    pair = lambda t, r: np.array_equal(t[0], r[0]) and np.array_equal(t[1], r[1]) and t[1].dtype == r[1].dtype
    same = lambda t, r: np.array_equal(t, r) and t.dtype == r.dtype
    out = []
    if dtype == "int64":
        out += [("bincount(x)", lambda: tally.bincount(x), lambda: np.bincount(x), same),
                ("bincount(x, weights=w)", lambda: tally.bincount(x, weights=w), lambda: np.bincount(x, weights=w),
                 same)]
    out += [(f"histogram(x, {BINS}, range)", lambda: tally.histogram(x, BINS, range=(lo, hi)),
             lambda: np.histogram(x, BINS, range=(lo, hi)), pair),
            (f"histogram(x, {BINS})", lambda: tally.histogram(x, BINS), lambda: np.histogram(x, BINS), pair),
            ("histogram(x, edges)", lambda: tally.histogram(x, edges), lambda: np.histogram(x, edges), pair),
            (f"histc(x, {BINS}, lo, hi)", lambda: tally.histc(x, BINS, lo, hi),
             lambda: np.histogram(x, BINS, range=(lo, hi)),
             lambda t, r: np.array_equal(t, r[0].astype(t.dtype)))]
    return out


def best_us(fn, calls, rounds):
    """Best over `rounds` of the mean time of `calls` back-to-back calls, in microseconds."""
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t) / calls)
    return best * 1e6


def measure(calls, rounds, sizes):
    rng = np.random.default_rng(42)
    results = []
    for n in sizes:
        for dtype in DTYPES:
            for name, ours, theirs, compare in rows(rng, n, dtype):
                if not compare(ours(), theirs()):
                    raise AssertionError(f"{name}, n={n}, {dtype}: tally's result differs from numpy's")
                for _ in range(max(calls // 10, 10)):  # warm-up: caches made, code paths touched
                    ours()
                    theirs()
                t_best = n_best = float("inf")
                for _ in range(rounds):  # alternate, so that both see the same machine
                    t_best = min(t_best, best_us(ours, calls, 1))
                    n_best = min(n_best, best_us(theirs, calls, 1))
                results.append(dict(call=name, n=n, dtype=dtype, tally_us=round(t_best, 3),
                                    numpy_us=round(n_best, 3), ratio=round(t_best / n_best, 2)))
                print(f"{name:28s} {n:5d} {dtype:8s} tally {t_best:8.2f} us  numpy {n_best:8.2f} us  "
                      f"ratio {t_best / n_best:6.2f}", flush=True)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--calls", type=int, default=1000, help="calls a timed loop (default 1000)")
    parser.add_argument("--rounds", type=int, default=7, help="timed loops per call, best kept (default 7)")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="sample counts (16 100 1000)")
    args = parser.parse_args()
    results = measure(args.calls, args.rounds, args.sizes)
    within = sum(r["ratio"] <= 2.0 for r in results)
    print(f"{within} of {len(results)} calls within 2x numpy's time")
    if args.out:
        report = dict(machine=platform.machine(), processor=platform.processor(), cpus=os.cpu_count(),
                      python=sys.version.split()[0], numpy=np.__version__,
                      tally=getattr(tally, "__version__", "?"), calls=args.calls, rounds=args.rounds,
                      results=results)
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()

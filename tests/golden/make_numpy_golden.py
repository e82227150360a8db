#!/usr/bin/env python3
"""Writes numpy_golden.json: inputs and numpy's own outputs (counts, edges, weighted sums, density)
for numpy.histogram / numpy.bincount / numpy.histogramdd, which numpy_golden_test.cpp checks tally
against bit for bit. Run with numpy installed: python3 tests/golden/make_numpy_golden.py
"""
import json
import os

import numpy as np

MASK = (1 << 64) - 1


def lcg(seed, n):
    """The generator numpy_golden_test.cpp repeats: 64-bit LCG, top 53 bits as a double in [0, 1)."""
    out = np.empty(n)
    s = seed & MASK
    for i in range(n):
        s = (s * 6364136223846793005 + 1442695040888963407) & MASK
        out[i] = (s >> 11) * 2.0 ** -53
    return out


def as_list(a):
    """Exact doubles; NaN and infinities as the strings "nan", "inf", "-inf" (JSON has none)."""
    out = []
    for v in np.asarray(a, dtype=np.float64).ravel():
        v = float(v)
        out.append(v if np.isfinite(v) else ("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")))
    return out


def regular_cases(rng):
    cases = []
    ranges = [(0.0, 1.0), (0.0, 0.3), (-1.7, 2.3), (0.1, 0.7), (1e-3, 1e3), (-5.0, 5.0), (3.0, 200.0)]
    for dtype in ("float64", "float32", "float16", "int32", "uint8", "int64"):
        for bins in (1, 2, 3, 7, 10, 255, 256, 257, 1000):
            lo, hi = ranges[rng.integers(len(ranges))]
            if dtype == "uint8":
                lo, hi = (3.0, 200.0)
            if dtype == "float16" and bins > 300:
                continue  # numpy itself refuses: float16 edges collide
            span = hi - lo
            x = rng.uniform(lo - 0.1 * span, hi + 0.1 * span, 200)
            edges64 = np.linspace(lo, hi, bins + 1)
            picks = edges64[rng.integers(0, bins + 1, 40)]
            x = np.concatenate([x, picks, np.nextafter(picks, np.inf), np.nextafter(picks, -np.inf)])
            if dtype.startswith("float"):
                x = np.concatenate([x, [np.nan, np.inf, -np.inf]])
                x = x.astype(dtype)
                # also each edge exactly as numpy's own (dtype) edges
                _, e = np.histogram(np.zeros(1, dtype), bins=bins, range=(lo, hi))
                x = np.concatenate([x, e.astype(dtype)])
            else:
                info = np.iinfo(dtype)
                x = np.clip(np.round(x), info.min, info.max).astype(dtype)
            with np.errstate(invalid="ignore"):
                counts, edges = np.histogram(x, bins=bins, range=(lo, hi))
                density, _ = np.histogram(x, bins=bins, range=(lo, hi), density=True)
            cases.append({"kind": "regular", "dtype": dtype, "bins": bins, "lo": lo, "hi": hi,
                          "x": as_list(x), "counts": counts.tolist(), "edges": as_list(edges),
                          "edge_dtype": str(edges.dtype), "density": as_list(density)})
    return cases


def variable_cases(rng):
    cases = []
    for dtype in ("float64", "float32", "int32"):
        for bins in (1, 2, 5, 64, 300):
            edges = np.unique(np.round(rng.uniform(-3, 3, bins + 1), 3))
            x = rng.uniform(-4, 4, 300)
            x = np.concatenate([x, edges, np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf)])
            x = x.astype(dtype) if dtype.startswith("float") else np.round(x).astype(dtype)
            counts, _ = np.histogram(x, bins=edges)
            cases.append({"kind": "variable", "dtype": dtype, "edges": as_list(edges),
                          "x": as_list(x), "counts": counts.tolist()})
    return cases


def bincount_cases(rng):
    cases = []
    for n, top in ((1, 1), (50, 7), (1000, 300), (500, 70000)):
        x = rng.integers(0, top, n)
        cases.append({"kind": "bincount", "x": x.tolist(), "minlength": int(top + 3),
                      "counts": np.bincount(x, minlength=top + 3).tolist()})
    return cases


def weighted_cases():
    """Regular axes, f64 weights, n over several of numpy's 65536-sample blocks."""
    cases = []
    for seed, n, bins, lo, hi in ((1, 200003, 256, 0.0, 1.0), (2, 140000, 7, 0.1, 0.9),
                                  (3, 70000, 1000, 0.0, 0.3)):
        u = lcg(seed, 2 * n)
        x = u[:n]
        w = (u[n:] * 2.0 - 1.0) * 1e3
        sums, _ = np.histogram(x, bins=bins, range=(lo, hi), weights=w)
        cases.append({"kind": "weighted", "seed": seed, "n": n, "bins": bins, "lo": lo, "hi": hi,
                      "weight_scale": 1e3, "sums": as_list(sums)})
    return cases


def nd_cases(rng):
    cases = []
    for shape in ((3, 4), (5, 2, 3)):
        d = len(shape)
        ranges = [(-1.0, 1.0), (0.0, 0.3), (2.0, 5.0)][:d]
        x = np.stack([rng.uniform(a - 0.2, b + 0.2, 400) for a, b in ranges], axis=1)
        h, _ = np.histogramdd(x, bins=shape, range=ranges)
        dens, _ = np.histogramdd(x, bins=shape, range=ranges, density=True)
        cases.append({"kind": "nd", "bins": list(shape), "ranges": [list(r) for r in ranges],
                      "x": as_list(x), "counts": [int(c) for c in h.ravel()], "density": as_list(dens)})
    return cases


ESTIMATORS = ("auto", "fd", "doane", "rice", "scott", "sqrt", "stone", "sturges")


def estimator_samples(shape, dtype, seed, n):
    """The samples numpy_golden_test.cpp makes again from lcg(): shapes by +, * and floor only
    (the same bits in C++), as floats or, for integer types, floored."""
    u = [lcg(seed + k, n) for k in range(4)]
    byte = dtype == "uint8"
    if shape == "uniform":
        x = u[0] * 256.0 if byte else u[0] * 200.0 - 100.0
    elif shape == "skewed":
        x = (u[0] * u[0]) * (u[0] * u[0]) * (256.0 if byte else 1000.0)
    elif shape == "hot":  # nine in ten samples on one value
        x = np.where(u[0] < 0.9, 17.25, u[1] * (256.0 if byte else 100.0))
    elif shape in ("normal", "sorted"):  # a sum of four uniforms
        x = ((u[0] + u[1]) + (u[2] + u[3])) * 64.0 if byte else (((u[0] + u[1]) + (u[2] + u[3])) - 2.0) * 10.0
        if shape == "sorted":
            x = np.sort(x)
    else:  # constant
        x = np.full(n, 5.0)
    return np.floor(x).astype(dtype) if dtype != "float64" else x


def estimator_cases():
    """numpy's bin estimators: the number of equal bins histogram_bin_edges makes for each name,
    over several shapes, sizes (one, a few, past the 8192-value buffers of integer means) and
    ranges, and whether stone's search warned that it ended at its bound."""
    import warnings
    cases = []
    seed = 100
    for dtype, ranges in (("float64", (None, (-20.0, 30.0))), ("int64", (None, (-3.0, 40.0))),
                          ("uint8", (None, (10.0, 200.0)))):
        for shape in ("uniform", "skewed", "hot", "normal", "sorted", "constant"):
            for n in (1, 2, 3, 7, 50, 1000, 20000):
                for rng_ in ranges:
                    seed += 1
                    x = estimator_samples(shape, dtype, seed, n)
                    bins, warned = {}, False
                    for name in ESTIMATORS:
                        with warnings.catch_warnings(record=True) as caught:
                            warnings.simplefilter("always")
                            bins[name] = len(np.histogram_bin_edges(x, name, rng_)) - 1
                        warned |= name == "stone" and any("suboptimal" in str(w.message) for w in caught)
                    cases.append({"kind": "estimator", "dtype": dtype, "shape": shape, "seed": seed, "n": n,
                                  "range": list(rng_) if rng_ else None, "bins": bins, "stone_warns": warned})
    return cases


def main():
    rng = np.random.default_rng(20261122)
    cases = (regular_cases(rng) + variable_cases(rng) + bincount_cases(rng) + weighted_cases() + nd_cases(rng)
             + estimator_cases())
    path = os.path.join(os.path.dirname(__file__), "numpy_golden.json")
    with open(path, "w") as f:
        json.dump({"numpy": np.__version__, "cases": cases}, f, separators=(",", ":"))
    print(f"{len(cases)} cases from numpy {np.__version__} -> {path} ({os.path.getsize(path)} bytes)")


if __name__ == "__main__":
    main()

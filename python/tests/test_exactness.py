"""numpy's answers at the bin rule's corners, each a case that once crashed or miscounted: ranges
so narrow that bins / (hi - lo) overflows, 64-bit integers beyond 2^53 against integer ranges and
edges, a value one ulp above a repeated last edge, and weighted infinities in infinite bins. On
the host, and on CUDA tensors where torch finds a GPU (skipped elsewhere)."""

import re

import numpy as np
import pytest

import tally
from conftest import assert_same_array

T = 1_700_000_000_000_000_000  # nanoseconds in 2023: doubles there are 256 apart
TS = np.array([T + 1, T + 300, T + 600])

# (samples, histogram keywords): numpy's result is the expected one.
CASES = {
    "subnormal_range": (np.array([1e-320, 2e-320, 3e-320]), dict(bins=1)),
    "narrow_range_weighted": (np.linspace(0, 1e-308, 1000), dict(bins=10, weights=np.ones(1000))),
    "narrow_range": (np.linspace(-1e-310, 1e-310, 777), dict(bins=7)),
    "int_edges": (TS, dict(bins=[T - 1000, T + 2, T + 1000])),
    "int_range": (TS, dict(bins=2, range=(T + 2, T + 599))),
    "int_range_weighted": (TS, dict(bins=2, range=(T + 2, T + 599), weights=np.array([1.5, 2.5, 4.0]))),
    "uint64_edges": (np.array([2**64 - 1, 2**64 - 2, 0], np.uint64), dict(bins=np.array([0, 2**64 - 2], np.uint64))),
    "uint64_range": (np.array([2**64 - 1, 2**63, 5], np.uint64), dict(bins=3, range=(np.uint64(2**63), np.uint64(2**64 - 2)))),
    "int64_limits": (np.array([-2**63, 2**63 - 1, 0, -1], np.int64), dict(bins=4, range=(-2**63 + 1, 2**63 - 2))),
    "repeated_last_edge": (np.array([1.0000000000000002, 1.0, 0.5]), dict(bins=[0., 1., 1.])),
    "repeated_edges": (np.array([0.0, 1.0, 1.0, 1.5, 2.0, 2.0]), dict(bins=[0., 1., 1., 2., 2.])),
    "inf_weighted": (np.array([np.inf]), dict(bins=[0, np.inf], weights=[-5.0])),
    "inf_density": (np.array([np.inf, 3.0, -np.inf]), dict(bins=[-np.inf, 0, np.inf], weights=[-5.0, 2.0, 1.0], density=True)),
    "inf_both_ends": (np.array([np.inf, -np.inf, 0.0, 7.0]), dict(bins=[-np.inf, -np.inf, 0, np.inf, np.inf])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_numpy_corner(case):
    a, kw = CASES[case]
    want, want_edges = np.histogram(a, **kw)
    got, edges = tally.histogram(a, **kw)
    assert_same_array(got, want)
    assert_same_array(edges, want_edges)


@pytest.mark.parametrize("case", sorted(c for c in CASES if not CASES[c][1].get("density")))
def test_numpy_corner_streaming(case):
    """tally.Histogram over the same axes (counts; weights where the case has them)."""
    a, kw = CASES[case]
    want = np.histogram(a, **kw)[0]
    bins = kw["bins"]
    if np.ndim(bins) == 1:
        e = np.asarray(bins)
        axis = tally.axis.variable(e) if e.dtype.kind == "f" else tally._tally.Axis.variable_integers(e)
    else:
        lo, hi = kw.get("range", (a.min(), a.max()))
        axis = tally.axis.regular(bins, lo, hi)
        if "range" in kw and a.dtype.kind in "iu":
            axis = tally._edges.exact_range(axis, tally._arrays.Source(a), lo, hi)
    weights = kw.get("weights")
    h = tally.Histogram(axis, weighted=weights is not None)
    if weights is None:
        h.fill(a)
    else:
        h.fill(a, weight=np.asarray(weights, np.float64))
    np.testing.assert_array_equal(h.values(), want)


@pytest.mark.parametrize("y", [np.array([T, T + 3, -5, T + 2]), np.array([np.inf, -np.inf, 0.5, 3.0])])
def test_histogramdd_integer_and_infinite_edges(y):
    """numpy compares integer columns with integer edges exactly, unless a float column makes
    the whole sample float64 (then all of them after rounding)."""
    x = np.array([T + 1, T + 300, T + 600, T + 2])
    bins = [np.array([T - 1000, T + 2, T + 1000]),
            [-np.inf, 0, np.inf] if y.dtype.kind == "f" else np.array([T, T + 2, T + 3])]
    for sample in ([x, y], np.stack([x, y], axis=1)):
        want, _ = np.histogramdd(sample, bins=bins)
        got, _ = tally.histogramdd(sample, bins=bins)
        assert_same_array(got, want)


@pytest.mark.parametrize("case", sorted(CASES))
def test_numpy_corner_torch_cuda(case):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or not any(b["name"] == "cuda" and b["usable"] for b in tally.backends()):
        pytest.skip("no CUDA device for tally and torch")
    a, kw = CASES[case]
    if a.dtype == np.uint64:
        pytest.skip("torch has no uint64 CUDA tensors for these values")
    want = np.histogram(a, **kw)[0]
    kw = dict(kw)
    if kw.get("weights") is not None:
        kw["weights"] = torch.as_tensor(np.asarray(kw["weights"], np.float64), device="cuda")
    got, _ = tally.histogram(torch.as_tensor(a, device="cuda"), **kw)
    np.testing.assert_array_equal(got.cpu().numpy(), want)


def _dyadic_samples(rng, hi, bins):
    """f32 samples over [0, hi): uniform ones, every 97th edge and its neighbours below and above,
    and the ends and beyond (-0, the smallest subnormal, hi and just past it, NaN, infinities)."""
    edges = np.linspace(0, hi, bins + 1).astype(np.float32)[::97]
    near = np.concatenate([edges, np.nextafter(edges, np.float32(-1)), np.nextafter(edges, np.float32(2 * hi))])
    ends = np.array([0.0, -0.0, 1e-45, -1e-45, hi, np.nextafter(np.float32(hi), np.float32(2 * hi)),
                     np.nan, np.inf, -np.inf], np.float32)
    return np.concatenate([rng.random(50_000, dtype=np.float32) * np.float32(hi), near, ends])


# Ranges from 0 whose edges are exactly k * 2^e (the f32 rule then takes the product's integer
# part), and one whose edges are not (the checked rule).
DYADIC = [(1.0, 2**20), (1.0, 256), (64.0, 64), (0.5, 1024), (2.0**-60, 2**10), (1.0, 1000)]


@pytest.mark.parametrize("hi, bins", DYADIC)
def test_f32_edges_of_dyadic_ranges(rng, hi, bins):
    a = _dyadic_samples(rng, hi, bins)
    want, want_edges = np.histogram(a, bins=bins, range=(0, hi))
    got, edges = tally.histogram(a, bins=bins, range=(0, hi))
    assert_same_array(got, want)
    assert_same_array(edges, want_edges)


@pytest.mark.parametrize("hi, bins", DYADIC)
def test_f32_edges_of_dyadic_ranges_torch_cuda(torch, rng, hi, bins):
    a = _dyadic_samples(rng, hi, bins)
    want = np.histogram(a, bins=bins, range=(0, hi))[0]
    got, _ = tally.histogram(torch.as_tensor(a, device="cuda"), bins=bins, range=(0, hi))
    np.testing.assert_array_equal(got.cpu().numpy(), want)


# f32 samples without a range: numpy's edges are a float32 linspace from the data's extremes,
# which the CPU bins by the f32 estimate over their line (variable_line32) and one edge. Samples
# on every edge and one f32 step either side, at bin counts from 1 to 2^20.
@pytest.mark.parametrize("bins", [1, 7, 100, 1000, 4096, 65537, 2**20])
@pytest.mark.parametrize("spread", ["uniform", "normal", "offset"])
def test_f32_edges_from_the_data_on_and_beside_every_edge(rng, bins, spread):
    x = {"uniform": lambda: rng.random(20_000), "normal": lambda: rng.normal(size=20_000),
         "offset": lambda: 100 + rng.random(20_000) * 37}[spread]().astype(np.float32)
    edges = np.histogram_bin_edges(x, bins)[:: max(1, bins // 5000)]
    near = np.concatenate([edges, np.nextafter(edges, np.float32(-np.inf)), np.nextafter(edges, np.float32(np.inf))])
    a = np.concatenate([x, near[(near >= x.min()) & (near <= x.max())]])
    want, want_edges = np.histogram(a, bins)
    got, got_edges = tally.histogram(a, bins)
    assert_same_array(got_edges, want_edges)
    assert_same_array(got, want)


# numpy's answers where tally once raised or differed: (function, args, keywords).
NUMPY_BEHAVIOUR = {
    "bincount_uint64_beyond_int64": ("bincount", (np.array([2**63], np.uint64),), {}),
    "bincount_minlength_str": ("bincount", ([0],), dict(minlength="a")),
    "bincount_minlength_float": ("bincount", ([0],), dict(minlength=2.0)),
    "big_endian_f8": ("histogram", (np.arange(50, dtype=">f8"),), dict(bins=7)),
    "big_endian_i4_edges": ("histogram", (np.arange(50, dtype=">i4"),), dict(bins=[0, 10, 49])),
    "bogus_estimator_weighted": ("histogram", ([1.0, 2.0],), dict(bins="bogus", weights=[1.0, 1.0])),
    "histogramdd_list_of_scalars": ("histogramdd", ([1, 2, 3],), {}),
    "histogramdd_one_edge": ("histogramdd", (np.array([[1.0, 2.0]]),), dict(bins=[np.array([0.0]), 2])),
    "histogramdd_infinite_edges": ("histogramdd", (np.array([[np.inf, 0.5], [1.0, -np.inf]]),),
                                   dict(bins=[[0, 1, np.inf], [-np.inf, 0, 1]])),
    "nan_last_edge": ("histogram", (np.array([0.5, 1.0, 3.0]),), dict(bins=[1, np.nan])),
    "nan_inner_edge_weighted": ("histogram", (np.array([0.5, 1.0, 3.0]),),
                                dict(bins=[0, np.nan, 2], weights=[1.0, 2.0, 3.0])),
    "inf_inf_edges": ("histogram", (np.array([1.0, np.inf]),), dict(bins=[np.inf, np.inf])),
    "weights_int64": ("histogram", (np.arange(20.0),), dict(bins=3, weights=np.arange(20))),
    "weights_uint8_edges": ("histogram", (np.arange(20.0),), dict(bins=[0, 5, 19], weights=np.arange(20, dtype=np.uint8))),
    "weights_float32": ("histogram", (np.arange(20.0),), dict(bins=4, weights=np.full(20, 0.1, np.float32))),
    "weights_complex": ("histogram", (np.arange(20.0),), dict(bins=4, weights=np.arange(20) * (1 + 2j))),
    "weights_object": ("histogram", (np.arange(4.0),), dict(bins=2, weights=np.array([1, 2.5, 3, 4], object))),
    "weights_bool": ("histogram", (np.arange(4.0),), dict(bins=2, weights=np.array([True, False, True, True]))),
    "longdouble_edges": ("histogram", (np.array([1.0, 1.0 + 2**-52, 2.0]),),
                         dict(bins=np.array([1.0, 1.0 + np.longdouble(2)**-60, 3], np.longdouble))),
    "longdouble_range": ("histogram", (np.array([1.0, 1.0 + 2**-52, 2.0]),),
                         dict(bins=2, range=(np.longdouble(1) + np.longdouble(2)**-60, np.longdouble(3)))),
    "bin_edges": ("histogram_bin_edges", (np.array([0.0, 1, 2], np.float32),), dict(bins=3)),
    "bin_edges_estimator": ("histogram_bin_edges", (np.arange(100.0),), dict(bins="fd")),
}


@pytest.mark.parametrize("case", sorted(NUMPY_BEHAVIOUR))
def test_numpy_behaviour(case):
    name, args, kw = NUMPY_BEHAVIOUR[case]
    try:
        want = getattr(np, name)(*args, **kw)
    except Exception as e:  # noqa: BLE001: numpy's error is the expected answer
        with pytest.raises(type(e), match=re.escape(str(e))):
            getattr(tally, name)(*args, **kw)
        return
    got = getattr(tally, name)(*args, **kw)
    want, got = (want, got) if isinstance(want, tuple) else ((want,), (got,))
    for g, w in zip(got, want):
        if isinstance(w, list):
            for gi, wi in zip(g, w):
                np.testing.assert_array_equal(gi, wi)
        else:
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_array_equal(g, w)

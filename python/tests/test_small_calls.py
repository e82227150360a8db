"""Small calls on numpy arrays: the kept host calls (_call_cache.HostCall), the extension's
extremes and fill_into, and the CPU backend's straight count of few samples, against numpy on
fresh seeded data, each call made twice (the first makes what the second keeps)."""

import numpy as np
import pytest

import tally
from conftest import DISTRIBUTIONS, INT_TYPES, NP, NUMPY_TYPES, assert_same_array, samples
from tally import _call_cache, _tally

SIZES = [1, 16, 100, 1000, 5000]  # 5000: past the CPU backend's straight count (4096 samples)


def twice(call, reference):
    """call() equals reference() on a first call and on a second (a kept call's)."""
    want = reference()
    for _ in range(2):
        got = call()
        if isinstance(want, tuple):
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert_same_array(g, w)
        else:
            assert_same_array(got, want)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("type_name", NUMPY_TYPES)
def test_histogram_small(rng, type_name, distribution, n):
    x = samples(rng, type_name, n, distribution)
    lo, hi = (-1.5, 6.25) if type_name.startswith("f") else (-7, 4000)
    edges = np.sort(rng.uniform(-2, 7, 9))
    twice(lambda: tally.histogram(x, 12, range=(lo, hi)), lambda: np.histogram(x, 12, range=(lo, hi)))
    twice(lambda: tally.histogram(x, 7), lambda: np.histogram(x, 7))
    twice(lambda: tally.histogram(x, edges), lambda: np.histogram(x, edges))
    for w in (rng.random(n), rng.random(n).astype(np.float32)):
        twice(lambda: tally.histogram(x, 5, range=(lo, hi), weights=w),
              lambda: np.histogram(x, 5, range=(lo, hi), weights=w))
        # numpy sums over edges in sorted order: weights whose sums are exact in any order
        w = (rng.integers(0, 64, n) / 8).astype(w.dtype)
        twice(lambda: tally.histogram(x, edges, weights=w), lambda: np.histogram(x, edges, weights=w))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("type_name", INT_TYPES)
def test_bincount_small(rng, type_name, distribution, n):
    x = samples(rng, type_name, n, distribution, 0, 120)  # within int8
    w = rng.uniform(-1, 1, n)
    twice(lambda: tally.bincount(x), lambda: np.bincount(x))
    twice(lambda: tally.bincount(x, minlength=400), lambda: np.bincount(x, minlength=400))
    twice(lambda: tally.bincount(x, weights=w), lambda: np.bincount(x, weights=w))
    twice(lambda: tally.bincount(x, weights=w.astype(np.float32)), lambda: np.bincount(x, weights=w.astype(np.float32)))
    twice(lambda: tally.bincount(x[::-1], weights=w), lambda: np.bincount(x[::-1], weights=w))  # a reversed view


@pytest.mark.parametrize("n", [300, 5000])  # 5000: numpy's extremes, not the extension's
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("type_name", ["u8", "i32", "u64", "i64", "f32", "f64"])
def test_histc_small(rng, type_name, distribution, n):
    x = samples(rng, type_name, n, distribution)
    out = np.float32 if type_name in INT_TYPES else NP[type_name]
    twice(lambda: tally.histc(x, 9, -2.5, 7.5), lambda: np.histogram(x, 9, range=(-2.5, 7.5))[0].astype(out))
    lo, hi = float(x.min()), float(x.max())
    twice(lambda: tally.histc(x, 9), lambda: np.histogram(x, 9, range=(lo, hi))[0].astype(out))


def test_kept_calls_follow_the_data_and_the_edges(rng):
    """A kept call keeps what its arguments give, never the samples or a caller's edges."""
    edges = np.array([0.0, 0.25, 0.5, 1.0])
    for _ in range(3):
        x = rng.random(50)
        twice(lambda: tally.histogram(x, 4, range=(0, 1)), lambda: np.histogram(x, 4, range=(0, 1)))
        twice(lambda: tally.histogram(x, edges), lambda: np.histogram(x, edges))
        edges[1:-1] = np.sort(rng.random(2))  # changed in place: a new key, new edges returned
    counts, got = tally.histogram(x, edges)
    got[0] = 99.0  # the caller's copy: the kept edges stay as they were
    assert_same_array(tally.histogram(x, edges)[1], edges)


def test_kept_calls_count_with_tally(rng, monkeypatch):
    """A second call is a kept call's: the extension's fill_into counts it, not numpy and not
    the full path's fill_and_take."""
    x, w = rng.random(64), rng.random(64)
    e = np.linspace(0, 1, 5)
    calls = [lambda: tally.histogram(x, 8, range=(0, 1)), lambda: tally.histogram(x, 8),
             lambda: tally.histogram(x, e, weights=w), lambda: tally.histc(x, 8, 0, 1),
             lambda: tally.bincount((x * 10).astype(np.int64), weights=w)]
    want = [c() for c in calls]
    monkeypatch.setattr(_tally, "fill_and_take", None)
    for name in ("histogram", "bincount"):
        monkeypatch.setattr(np, name, None)
    for call, expected in zip(calls, want):
        got = call()
        for g, w_ in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple)
                         else (expected,)):
            assert_same_array(g, w_)


@pytest.mark.parametrize("type_name", NUMPY_TYPES)
def test_extremes(rng, type_name):
    x = samples(rng, type_name, 777, "skewed")
    got = _tally.extremes(x)
    if type_name == "f16":  # numpy's own reduction answers
        assert got is None
        return
    assert got == (x.min().item(), x.max().item())
    assert _tally.extremes(x[::-3]) == (x[::-3].min().item(), x[::-3].max().item())
    assert _tally.extremes(x[:0]) is None
    if type_name.startswith("f"):
        x[500] = np.nan
        assert all(np.isnan(_tally.extremes(x)))


def test_small_call_errors_as_numpy(rng):
    x = rng.integers(-3, 5, 20)
    with pytest.raises(ValueError, match="negative"):
        tally.bincount(x)
    with pytest.raises(ValueError, match="negative"):
        tally.bincount(x, minlength=10)
    y = rng.random(20)
    tally.histogram(y, 5)
    y[3] = np.nan
    with pytest.raises(ValueError, match="not finite"):
        tally.histogram(y, 5)
    y[3] = 0.5
    tally.histogram(y, 5, range=(0, 1))
    with pytest.raises(ValueError, match="same shape"):
        tally.histogram(y, 5, range=(0, 1), weights=np.ones(19))
    with pytest.raises(ValueError, match="strategy"):
        tally.histogram(y, 5, range=(0, 1), strategy="no such strategy")
    out = np.empty(5, np.int32)
    with pytest.raises(ValueError, match="out must hold"):
        _tally.fill_into(_tally.Axis.regular(5, 0.0, 1.0, "f64"), y, None, out, "automatic", False, 65536)


def test_signed_zero_ends_and_layouts(rng):
    """Extremes of a signed zero are numpy's own; strided and transposed samples and weights
    give numpy's results."""
    x = rng.random(40) + 0.5
    for zero in (-0.0, 0.0, -0.0):  # equal extremes but for the sign of the first edge
        x[7] = zero
        twice(lambda: tally.histogram(x, 6), lambda: np.histogram(x, 6))
        twice(lambda: tally.histogram(-x, 6), lambda: np.histogram(-x, 6))
        twice(lambda: tally.histc(x, 6), lambda: np.histogram(x, 6, range=(float(x.min()), float(x.max())))[0]
              .astype(np.float64))
    m = rng.random((30, 20))
    w = rng.random((30, 20))
    for view in (m[::2, ::3], m.T, m[::-1]):
        twice(lambda: tally.histogram(view, 5, range=(0, 1)), lambda: np.histogram(view, 5, range=(0, 1)))
    twice(lambda: tally.histogram(m.T, 5, range=(0, 1), weights=w.T),
          lambda: np.histogram(m.T, 5, range=(0, 1), weights=w.T))


def test_many_bins_take_the_full_path(rng):
    """Calls of more than HOST_CELLS_MAX bins take the histogram's storage: numpy's results."""
    many = _call_cache.HOST_CELLS_MAX + 3
    y = rng.random(100)
    twice(lambda: tally.histogram(y, many, range=(0, 1)), lambda: np.histogram(y, many, range=(0, 1)))
    twice(lambda: tally.histogram(y, np.linspace(0, 1, many)), lambda: np.histogram(y, np.linspace(0, 1, many)))
    twice(lambda: tally.histc(y, many, 0, 1), lambda: np.histogram(y, many, range=(0, 1))[0].astype(np.float64))
    x = rng.integers(0, 3 * _call_cache.HOST_CELLS_MAX, 100)
    twice(lambda: tally.bincount(x), lambda: np.bincount(x))
    twice(lambda: tally.bincount(x, weights=x * 0.5), lambda: np.bincount(x, weights=x * 0.5))
    twice(lambda: tally.bincount(x[:0]), lambda: np.bincount(x[:0]))
    twice(lambda: tally.bincount(x[:5], minlength=2 * _call_cache.HOST_CELLS_MAX),
          lambda: np.bincount(x[:5], minlength=2 * _call_cache.HOST_CELLS_MAX))


def test_host_calls_are_listed_and_cleared(rng):
    x = rng.random(30)
    tally.clear_caches()
    twice(lambda: tally.histogram(x, 5, range=(0, 1)), lambda: np.histogram(x, 5, range=(0, 1)))
    sizes = {c["name"]: c["size"] for c in tally.caches()}
    assert sizes["host calls"] == 1
    tally.clear_caches()
    assert {c["name"]: c["size"] for c in tally.caches()}["host calls"] == 0
    twice(lambda: tally.histogram(x, 5, range=(0, 1)), lambda: np.histogram(x, 5, range=(0, 1)))

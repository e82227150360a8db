"""numpy's edge rules in the core (tally/edges.hpp) against numpy.linspace itself: every float
type as arithmetic and as edge type, ranges of every magnitude, equal ends, signed zeros. And
numpy's bin estimators ('auto', 'fd', ...), which the core computes (tally::estimate_bins), against
numpy's own: every sample type, data of several shapes, ranges of Python and numpy numbers."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tally
from conftest import assert_same_array, counts_by_edges

_tally = tally._tally
TYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def test_linspace_edges_are_numpys_bit_for_bit(rng):
    for _ in range(3000):
        arithmetic, edge_type = rng.choice(list(TYPES)), rng.choice(list(TYPES))
        scale = 10.0 ** int(rng.integers(-3, 4) if arithmetic == "f16" else rng.integers(-30, 30))
        lo = rng.normal() * scale
        hi = lo + abs(rng.normal()) * scale * rng.choice([1, 1e-3, 1e-7, 0])
        n = int(rng.choice([1, 2, 3, 7, 10, 64, 100, 1000, 4097]))
        first, last = TYPES[arithmetic](lo), TYPES[arithmetic](hi)
        with warnings.catch_warnings():  # numpy's overflow warnings for float16 ranges
            warnings.simplefilter("ignore")
            want = np.linspace(first, last, n + 1, dtype=TYPES[edge_type]).astype(np.float64)
        got = _tally.linspace_edges(n, float(first), float(last), arithmetic, edge_type)
        assert_same_array(got, want)


@pytest.mark.parametrize("first, last", [(-1.0, -0.0), (-0.0, 1.0), (-2.0, -0.0), (-0.0, 1e-300)])
def test_signed_zeros_keep_their_sign(first, last):
    want = np.linspace(first, last, 9)
    assert_same_array(_tally.linspace_edges(8, first, last, "f64", "f64"), want)
    axis = _tally.equal_bins(8, first, last, "f64", "f64")
    assert_same_array(axis.edges, want)  # the axis' edges are what histogram returns


def test_equal_bins_refuses_as_numpy():
    with pytest.raises(ValueError, match="Too many bins for data range. Cannot create 100 finite-sized bins."):
        _tally.equal_bins(100, 1.0, float(np.nextafter(np.float32(1), np.float32(2))), "f32", "f32")
    with pytest.raises(ValueError):
        _tally.equal_bins(4, -60000.0, 60000.0, "f16", "f16")  # numpy's edges: nan, inf, inf, inf, 60000
    a = np.array([1, 2], np.float16)
    for call in (np.histogram, tally.histogram):
        with pytest.raises(ValueError, match="Too many bins"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(a, 3, (np.float16(-6e4), np.float16(6e4)))


def test_float32_data_take_float32_arithmetic():
    """A float32 range from the data is numpy's float32 linspace, which float64 linspace rounded
    to float32 is not: numpy's edges, and the samples on them in numpy's bins."""
    a = np.array([-13.031572, -3.977014], np.float32)
    want_counts, want_edges = np.histogram(np.concatenate([a, np.linspace(a[0], a[1], 7, dtype=np.float32)]), 6)
    got_counts, got_edges = tally.histogram(np.concatenate([a, np.linspace(a[0], a[1], 7, dtype=np.float32)]), 6)
    assert_same_array(got_edges, want_edges)
    assert_same_array(got_counts, want_counts)
    assert not np.array_equal(want_edges, np.linspace(float(a[0]), float(a[1]), 7).astype(np.float32))


def test_edges_that_overflow_to_infinity_are_numpys():
    """A Python-int range of int64's extremes over float16 samples: numpy computes the edges in
    float64 and rounds them to float16, [-inf, inf]. numpy.histogram then fails on its own index
    (IndexError) where there are samples; tally counts them by numpy's edges."""
    r = (-2**63, 2**63 - 1)
    empty = np.zeros(0, np.float16)
    assert_same_array(tally.histogram(empty, 1, r)[1], np.histogram(empty, 1, r)[1])
    assert_same_array(tally.histogram(empty, 1, r)[0], np.histogram(empty, 1, r)[0])
    a = np.array([-3.5, 0.0, 60000.0], np.float16)
    with pytest.raises(IndexError):
        np.histogram(a, 1, r)
    counts, edges = tally.histogram(a, 1, r)
    assert_same_array(edges, np.histogram_bin_edges(a, 1, r))
    assert_same_array(counts, np.array([3]))


# ---- bin estimators ----

ESTIMATORS = ("auto", "fd", "doane", "rice", "scott", "sqrt", "stone", "sturges")
SAMPLE_TYPES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float16", "float32",
                "float64")
SHAPES = ("uniform", "normal", "hot", "skewed", "sorted", "constant", "narrow", "wide")


def shaped(rng, dtype, shape, n):
    """n samples of `dtype`: uniform, normal, one hot value (nine in ten), lognormal, sorted,
    all equal, a narrow span (few distinct float16 values), or spread wide (int64's large values)."""
    dtype = np.dtype(dtype)
    x = {"uniform": lambda: rng.uniform(-100, 100, n), "normal": lambda: rng.normal(3, 20, n),
         "hot": lambda: np.where(rng.random(n) < 0.9, 17.25, rng.uniform(0, 100, n)),
         "skewed": lambda: rng.lognormal(0, 1.5, n) * 10, "sorted": lambda: np.sort(rng.normal(0, 30, n)),
         "constant": lambda: np.full(n, 5.5), "narrow": lambda: 1000 + rng.uniform(0, 3, n),
         "wide": lambda: rng.normal(0, 1e4, n)}[shape]()
    if dtype.kind == "f":
        return x.astype(dtype)
    info = np.iinfo(dtype)
    x = np.clip(np.round(x + (100 if dtype.kind == "u" else 0)), info.min, info.max).astype(dtype)
    if dtype.itemsize == 8 and shape == "wide":  # past float64's integers
        x = (x >> 2) * 2**40 + rng.integers(0, 1000, n).astype(dtype)
    return x


def ranges_for(rng, x):
    """No range, Python floats inside the data, numpy scalars of the samples' type, Python ints."""
    f = x.astype(np.float64)
    lo, hi = np.quantile(f, [0.1, 0.8]) if f.size else (0.0, 1.0)
    scalar = x.dtype.type if x.dtype.kind == "f" else np.int64
    return [None, (float(lo), float(hi) + 0.37), (scalar(lo), scalar(hi)), (int(lo), int(hi) + 1)]


def numpy_count(x, name, range_):
    """numpy's own number of bins (its _get_bin_edges up to linspace, which huge counts would
    make numpy allocate), or its exception."""
    from numpy.lib import _histograms_impl as impl
    first, last = impl._get_outer_edges(x, range_)
    if range_ is not None:
        x = x[(x >= first) & (x <= last)]
    if x.size == 0:
        return 1
    width = impl._hist_bin_selectors[name](x, (first, last))
    if not width:
        return 1
    if np.issubdtype(x.dtype, np.integer) and width < 1:
        width = 1
    return int(np.ceil(impl._unsigned_subtract(last, first) / width))


def tally_count(x, name, range_):
    from tally import _functions
    return _functions._estimated_bins(_functions._histogram_input(x), name, range_)


def outcome(function, *args):
    """(result or exception type, stone's warning given) of a call."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        try:
            result = function(*args)
        except Exception as e:  # noqa: BLE001 - the class is the outcome compared
            result = type(e)
    return result, any("suboptimal" in str(w.message) for w in caught)


def check_estimate(x, name, range_):
    """tally's number of bins is numpy's, and so are its warning and its exception; where the
    count is moderate, histogram_bin_edges' edges and histogram's counts are numpy's too."""
    want = outcome(numpy_count, x, name, range_)
    assert outcome(tally_count, x, name, range_) == want, (x.dtype, x.size, name, range_)
    if not isinstance(want[0], int) or not 0 < want[0] <= 5000:
        return
    want_edges = outcome(np.histogram_bin_edges, x, name, range_)[0]
    if isinstance(want_edges, type):  # numpy's own edges fail (too many bins for the range)
        assert outcome(tally.histogram_bin_edges, x, name, range_)[0] is want_edges
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # stone's warning, compared above
        assert_same_array(tally.histogram_bin_edges(x, name, range_), want_edges)
        counts, edges = tally.histogram(x, name, range_)
    assert_same_array(edges, want_edges)
    # numpy's float16 arithmetic can put a sample a bin off its own edges: tally bins by them.
    assert_same_array(counts, counts_by_edges(x[(x >= edges[0]) & (x <= edges[-1])], edges))


@pytest.mark.parametrize("dtype", SAMPLE_TYPES)
def test_estimators_are_numpys_for_every_type_and_shape(dtype, rng):
    for shape in SHAPES:
        for n in (1, 2, 3, 17, 300):
            x = shaped(rng, dtype, shape, n)
            for range_ in ranges_for(rng, x):
                for name in ESTIMATORS:
                    check_estimate(x, name, range_)


@pytest.mark.parametrize("dtype", SAMPLE_TYPES)
def test_estimators_past_numpys_buffers_and_stones_first_hundred(dtype, rng):
    """9000 samples: integer and float16 means summed through numpy's 8192-value buffers, pairwise
    sums in several blocks; 12000: stone's search past 100 candidates (sqrt(n))."""
    for shape, n in (("normal", 9000), ("skewed", 9000), ("wide", 12000)):
        x = shaped(rng, dtype, shape, n)
        for range_ in ranges_for(rng, x)[:2]:
            for name in ESTIMATORS:
                check_estimate(x, name, range_)


@settings(max_examples=150)
@given(seed=st.integers(0, 2**32 - 1), dtype=st.sampled_from(SAMPLE_TYPES), shape=st.sampled_from(SHAPES),
       n=st.sampled_from([1, 2, 3, 4, 5, 8, 9, 40, 129, 700]), which=st.integers(0, 3),
       name=st.sampled_from(ESTIMATORS))
def test_estimates_are_numpys_on_random_data(seed, dtype, shape, n, which, name):
    rng = np.random.default_rng(seed)
    x = shaped(rng, dtype, shape, n)
    check_estimate(x, name, ranges_for(rng, x)[which])


@pytest.mark.parametrize("x, name, range_", [
    (np.array([-40000.0, 40000.0, 0.0], np.float16), "sqrt", None),  # float16 ptp inf / inf: NaN
    (np.array([-40000.0, 40000.0, 0.0, 1.0], np.float16), "fd", None),  # an infinite count
    (np.array([1000.0, 1000.5, 1001.0, 1003.5, 1002.0, 1007.5, 1010.0, 1004.0], np.float16), "stone", None),
    (np.array([62, -128, 67], np.int8), "fd", None),  # int8 percentiles wrap: 195 bins
    (np.array([2**64 - 5, 2**64 - 3, 2**64 - 2], np.uint64), "sturges", (0, 2**64 - 1)),  # int64's OverflowError
    (np.array([1.0, 2.0, 7.0], np.float16), "rice", (np.float16(1), np.uint16(7))),  # float16 / uint16: float32
])
def test_estimators_fail_and_succeed_where_numpy_does(x, name, range_):
    want, got = outcome(np.histogram_bin_edges, x, name, range_), outcome(tally.histogram_bin_edges, x, name, range_)
    if isinstance(want[0], type):
        assert got == want
    else:
        assert_same_array(got[0], want[0])
        assert got[1] == want[1]


def test_a_constant_sample_can_estimate_many_bins_as_numpy():
    """float32 and float64 constants whose sum rounds: the mean is off the value, the std is not
    0, and scott's width is tiny (numpy then fails to make its edges: too many bins, or memory)."""
    for dtype, want in ((np.float32, 192243280), (np.float64, 206419647065786080)):
        x = np.full(1000, 0.1, dtype)
        assert outcome(numpy_count, x, "scott", None) == (want, False)
        assert outcome(tally_count, x, "scott", None) == (want, False)
    assert outcome(tally_count, np.full(1000, 0.5, np.float32), "scott", None) == (1, False)


def test_an_estimator_never_calls_numpy(monkeypatch):
    """The core estimates: numpy's estimators and histogram_bin_edges are not called."""
    from numpy.lib import _histograms_impl as impl
    x = np.random.default_rng(3).normal(size=500).astype(np.float32)
    want = {name: np.histogram_bin_edges(x, name) for name in ESTIMATORS}

    def refuse(*_, **__):
        raise AssertionError("numpy was called")

    monkeypatch.setattr(impl, "_hist_bin_selectors", {name: refuse for name in ESTIMATORS})
    monkeypatch.setattr(np, "histogram_bin_edges", refuse)
    monkeypatch.setattr(np, "percentile", refuse)
    monkeypatch.setattr(np, "std", refuse)
    for name in ESTIMATORS:
        assert_same_array(tally.histogram_bin_edges(x, name), want[name])


def test_stones_warning_is_numpys():
    x = ((np.arange(4000) % 150) * 10).astype(np.int16)  # 150 spikes: the search ends at its bound
    with pytest.warns(RuntimeWarning, match="The number of bins estimated may be suboptimal."):
        want = np.histogram_bin_edges(x, "stone")
    with pytest.warns(RuntimeWarning, match="The number of bins estimated may be suboptimal.") as caught:
        got = tally.histogram_bin_edges(x, "stone")
    assert_same_array(got, want)
    assert caught[0].filename == __file__  # the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tally.histogram_bin_edges(((np.arange(4000) % 200) * 10).astype(np.int16), "stone")  # 82: no warning


@pytest.mark.parametrize("call, error", [
    (lambda f: f([1.0, 2.0], "auto", weights=[1.0, 1.0]), TypeError),
    (lambda f: f([1.0, 2.0], "Auto"), ValueError),
    (lambda f: f([1.0, 2.0], "fd", range=(0.0, np.inf)), ValueError),
    (lambda f: f([1.0, 2.0], "fd", range=(np.nan, 1.0)), ValueError),
    (lambda f: f([1.0, np.nan], "fd"), ValueError),
    (lambda f: f([1.0, 2.0], "fd", range=(2.0, 1.0)), ValueError),
    (lambda f: f([0.0, 0.5, 1.0], "sqrt", range=(False, True)), TypeError),  # two bools do not subtract
])
def test_estimator_errors_are_numpys(call, error):
    for function in (np.histogram_bin_edges, np.histogram):
        with pytest.raises(error) as want:
            call(function)
        with pytest.raises(error) as got:
            call(getattr(tally, function.__name__))
        assert str(got.value) == str(want.value)


def test_bfloat16_samples_are_estimated_as_their_float32_values():
    torch = pytest.importorskip("torch")
    x = torch.randn(3000, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16)
    for name in ESTIMATORS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = np.histogram_bin_edges(x.float().numpy(), name)
            got = tally.histogram_bin_edges(x, name)
        assert got.dtype == torch.bfloat16 and got.numel() == want.size

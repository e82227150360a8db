"""Calls as numpy users write them: numpy's signatures and positional order, mixed column dtypes,
masked arrays and other array-likes, numpy's summation order in bincount, numpy's result dtypes
in the corners, and numpy's __array_function__ dispatch. Each case compares with numpy itself."""

import inspect
import warnings

import numpy as np
import pytest

import tally

FUNCTIONS = ["histogram", "histogram2d", "histogramdd", "bincount", "histogram_bin_edges"]


def _same(got, want):
    """Equal values, bit for bit where floating, and numpy's exact dtype object."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.dtype.char == want.dtype.char, (got.dtype.char, want.dtype.char)
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "f":
        assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("name", FUNCTIONS)
def test_signature_is_numpys_then_tallys_keywords(name):
    ours = list(inspect.signature(getattr(tally, name)).parameters.values())
    theirs = list(inspect.signature(getattr(np, name)).parameters.values())
    assert ours[:len(theirs)] == theirs
    assert all(p.kind == p.KEYWORD_ONLY for p in ours[len(theirs):])


def test_histc_signature_is_torchs():
    params = list(inspect.signature(tally.histc).parameters.values())
    want = inspect.Signature([
        inspect.Parameter("input", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        inspect.Parameter("bins", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=100),
        inspect.Parameter("min", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=0),
        inspect.Parameter("max", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=0),
        inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None)])
    assert params[:5] == list(want.parameters.values())
    assert all(p.kind == p.KEYWORD_ONLY for p in params[5:])


def test_histc_out_takes_the_result():
    x = np.random.default_rng(1).normal(size=1000).astype(np.float32)
    out = np.empty(7, np.float32)
    got = tally.histc(x, 7, -2, 2, out=out)
    assert got is out
    np.testing.assert_array_equal(out, tally.histc(x, 7, -2, 2))
    with pytest.raises(ValueError, match="shape"):
        tally.histc(x, 7, -2, 2, out=np.empty(6, np.float32))


def test_positional_arguments_are_numpys():
    a, w = np.array([1.0]), np.array([5.0])
    for got, want in [(tally.histogram(a, 3, None, None, w), np.histogram(a, 3, None, None, w)),
                      (tally.histogram(a, 3, None, True, w), np.histogram(a, 3, None, True, w))]:
        _same(got[0], want[0])
    x, y = np.array([0.1, 0.5, 0.9]), np.array([0.2, 0.2, 0.7])
    w3 = np.array([1.0, 2.0, 4.0])
    got, want = tally.histogram2d(x, y, 2, None, None, w3), np.histogram2d(x, y, 2, None, None, w3)
    _same(got[0], want[0])
    got, want = tally.histogramdd(np.stack([x, y], 1), 2, None, None, w3), np.histogramdd(np.stack([x, y], 1), 2, None, None, w3)
    _same(got[0], want[0])
    _same(tally.bincount([0, 2, 2], [1.5, 2.0, 0.25], 5), np.bincount([0, 2, 2], [1.5, 2.0, 0.25], 5))


def test_columns_of_different_dtypes_take_numpys_common_type():
    x, y = np.zeros(3, np.int32), np.array([-5, 2, -4.3], np.float32)
    got, want = tally.histogram2d(x, y, 10), np.histogram2d(x, y, 10)
    for g, e in zip(got, want):
        _same(g, e)
    rng = np.random.default_rng(5)
    columns = [rng.integers(-100, 100, 500).astype(np.int16), rng.normal(size=500).astype(np.float16),
               rng.integers(0, 2**40, 500)]
    got, want = tally.histogramdd(columns, 7), np.histogramdd(columns, 7)
    _same(got[0], want[0])
    for g, e in zip(got[1], want[1]):
        _same(g, e)


def test_float16_edges_that_overflow_are_numpys():
    sample = [np.array([0, 1], np.uint8), np.array([-6e4, 6e4], np.float16)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = np.histogramdd(sample, 1)
        got = tally.histogramdd(sample, 1)
    _same(got[0], want[0])
    for g, e in zip(got[1], want[1]):
        np.testing.assert_array_equal(g, e)


def test_masked_arrays_are_read_as_numpy_reads_them():
    m = np.ma.masked_array([1, 5], mask=[0, 1])
    _same(tally.bincount(m), np.bincount(m))
    x = np.ma.masked_array([0.5, 9.0, 2.0, 3.5], mask=[0, 1, 0, 0])
    w = np.ma.masked_array([1.0, 2.0, 3.0, 4.0], mask=[1, 0, 0, 0])
    for got, want in [(tally.histogram(x, 4), np.histogram(x, 4)),
                      (tally.histogram(x, 4, weights=w), np.histogram(x, 4, weights=w)),
                      (tally.histogram2d(x, x, 3), np.histogram2d(x, x, 3)),
                      (tally.histogramdd([x, x], 3), np.histogramdd([x, x], 3))]:
        _same(got[0], want[0])
    _same(tally.histogram_bin_edges(x, 4), np.histogram_bin_edges(x, 4))


class _ArrayLike:
    def __init__(self, values):
        self.values = np.asarray(values)

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)


def test_other_array_likes_are_read_as_numpy_reads_them():
    values = np.array([3, 1, 4, 1, 5, 9, 2, 6], np.int64)
    likes = [_ArrayLike(values), memoryview(values), values.tolist()]
    pandas = pytest.importorskip("pandas")
    likes.append(pandas.Series(values))
    for like in likes:
        _same(tally.bincount(like), np.bincount(values))
        _same(tally.histogram(like, 4)[0], np.histogram(values, 4)[0])


def test_bincount_adds_weights_in_input_order():
    x = np.zeros(65538, np.int64)
    w = np.zeros(65538)
    w[0], w[65536], w[65537] = 1.0, 1e16, -1e16
    _same(tally.bincount(x, w), np.bincount(x, w))
    _same(tally.bincount([0, 0], [1e308, 1e308]), np.bincount([0, 0], [1e308, 1e308]))
    _same(tally.bincount([0, 0, 0], [-1e308, -1e308, 1e308]), np.bincount([0, 0, 0], [-1e308, -1e308, 1e308]))
    rng = np.random.default_rng(9)
    x = rng.integers(0, 50, 300_000)
    w = rng.normal(size=x.size) * 10.0 ** rng.integers(-8, 8, x.size)
    _same(tally.bincount(x, w), np.bincount(x, w))


def test_density_of_float32_weights_is_numpys():
    x, w = np.array([1, 2, 3], np.int32), np.array([0.1, 0.2, 0.7], np.float32)
    _same(tally.histogram(x, density=True, weights=w)[0], np.histogram(x, density=True, weights=w)[0])
    rng = np.random.default_rng(2)
    x, w = rng.normal(size=5000), rng.random(5000).astype(np.float32)
    _same(tally.histogram(x, 30, density=True, weights=w)[0], np.histogram(x, 30, density=True, weights=w)[0])


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning")  # numpy's, both
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint32, np.int64, np.uint64])
def test_integer_weights_whose_sums_leave_their_dtype_are_numpys(dtype):
    """numpy sums integer weights in their dtype, wrapping around (and rounds float64 blocks of
    them for equal bins): the sums and their dtype are numpy's, near the dtype's limits too."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(4)
    x = rng.integers(0, 4, 70_000)
    for w in (np.array([info.max, info.max, info.max // 3 + 1] * 3, dtype),  # wraps in any order
              rng.integers(max(info.min, -2**62), min(info.max, 2**62), x.size, dtype=dtype, endpoint=True),
              rng.integers(0, 3, x.size, dtype=dtype)):  # small sums: tally's own fill
        xs = x[:w.size]
        for bins in (3, [0, 1, 2.5, 4]):
            _same(tally.histogram(xs, bins, weights=w)[0], np.histogram(xs, bins, weights=w)[0])


def test_result_dtypes_are_numpys():
    counts, edges = tally.histogram([1, 2, 2], 3)
    assert isinstance(counts[0], np.int64) and counts.dtype.char == np.dtype(np.int64).char
    _same(tally.bincount([0, 1, 1, 3]), np.bincount([0, 1, 1, 3]))
    _same(tally.histogramdd([[1.0, 2.0]], 2)[0], np.histogramdd([[1.0, 2.0]], 2)[0])
    # Fewer than two edges, with weights: the weights' dtype.
    for w in ([1.0], np.array([1.0], np.float32), np.array([2], np.int64)):
        _same(tally.histogram([1.0], bins=[1.0], weights=w)[0], np.histogram([1.0], bins=[1.0], weights=w)[0])
    # Empty x with weights: numpy's int64 zeros.
    for minlength in (0, 3):
        _same(tally.bincount(np.array([], int), np.array([], np.float32), minlength),
              np.bincount(np.array([], int), np.array([], np.float32), minlength))


def _outcome(call):
    """What a call gives: ('raises', the exception's class) or ('gives', result, warning classes)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except Exception as e:  # noqa: BLE001 - the class is the outcome compared
            return "raises", type(e)
    return "gives", result, sorted({w.category.__name__ for w in caught})


def test_bincount_arguments_as_numpys():
    # A list of floats: numpy 2.1+ casts it with a DeprecationWarning, older numpy refuses it.
    want, got = _outcome(lambda: np.bincount([1.0, 2.0, 1.5])), _outcome(lambda: tally.bincount([1.0, 2.0, 1.5]))
    assert got[0] == want[0] and got[-1] == want[-1]
    if want[0] == "gives":
        _same(got[1], want[1])
    for minlength, error in [(True, TypeError), (None, TypeError), (2.0, TypeError), (-1, ValueError)]:
        with pytest.raises(error):
            np.bincount([1], minlength=minlength)
        with pytest.raises(error):
            tally.bincount([1], minlength=minlength)
    _same(tally.bincount([1], minlength=np.int8(3)), np.bincount([1], minlength=np.int8(3)))


def test_an_estimate_of_no_bins_is_numpys():
    a = np.array([-1.49979879e+208, -6.36840290e-123])  # Scott's width overflows: 0 bins
    with np.errstate(over="ignore"):
        want = np.histogram_bin_edges(a, "scott")
        assert want.size == 1
        _same(tally.histogram_bin_edges(a, "scott"), want)
        # numpy.histogram itself fails on these edges (an index of -1); tally counts no bins.
        hist, edges = tally.histogram(a, "scott")
    _same(hist, np.zeros(0, np.int64))
    _same(edges, want)


class _Dispatches:
    def __array_function__(self, function, types, args, kwargs):
        return function, types, args, kwargs


@pytest.mark.parametrize("name, args, kwargs", [
    ("histogram", (_Dispatches(),), {}),
    ("histogram", ([1, 2],), {"weights": _Dispatches()}),
    ("histogram_bin_edges", ([1, 2], _Dispatches()), {}),
    ("histogram2d", ([1, 2], _Dispatches()), {}),
    ("histogram2d", ([1, 2], [1, 2]), {"bins": [_Dispatches(), 5]}),
    ("histogramdd", ([[1, 2], _Dispatches()],), {}),
    ("bincount", (_Dispatches(),), {"minlength": 2}),
])
def test_numpys_array_function_protocol_is_honoured(name, args, kwargs):
    function, types, got_args, got_kwargs = getattr(tally, name)(*args, **kwargs)
    assert function is getattr(np, name)
    assert types == (_Dispatches,) and got_args == args and got_kwargs == kwargs
    with pytest.raises(TypeError, match="strategy"):
        getattr(tally, name)(*args, **kwargs, strategy="automatic")

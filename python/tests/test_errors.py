"""Every bad argument raises the exception class numpy raises for it (ValueError for bad bins,
ranges and lengths, TypeError for bad types), and tally's own errors are clear."""

import numpy as np
import pytest

import tally

X = np.random.default_rng(7).uniform(-1, 5, 1000)


def same_error(name, *args, **kw):
    with pytest.raises(Exception) as numpy_error:
        getattr(np, name)(*args, **kw)
    with pytest.raises(numpy_error.type):
        getattr(tally, name)(*args, **kw)
    return numpy_error.type


@pytest.mark.parametrize("kw", [
    dict(bins=0), dict(bins=-3), dict(bins=2.5), dict(bins="nope"), dict(bins=[[0, 1], [2, 3]]),
    dict(bins=[0, 2, 1]), dict(range=(1, 0)), dict(range=(0, np.nan)), dict(range=(np.nan, 1)),
    dict(range=(0, np.inf)), dict(range=(0, 1, 2)), dict(weights=np.ones(999)),
    dict(bins="auto", weights=np.ones(1000)), dict(bins=10**5, range=(1.0, 1.0 + 1e-12)),
])
def test_histogram_errors(kw):
    assert same_error("histogram", X, **kw) in (ValueError, TypeError)


def test_histogram_nan_data_without_range():
    x = X.copy()
    x[10] = np.nan
    assert same_error("histogram", x, bins=4) is ValueError
    tally.histogram(x, bins=4, range=(0, 1))  # with a range, NaN is dropped as by numpy


@pytest.mark.parametrize("args, kw", [
    ((np.array([1, -1, 2]),), {}), ((np.array([1.5, 2.0]),), {}), ((np.ones((2, 2), int),), {}),
    ((np.array([1, 2]),), dict(minlength=-1)), ((np.array([1, 2]),), dict(weights=[1.0])),
    ((np.int64(3),), {}), ((np.array([], np.float64),), {}),
])
def test_bincount_errors(args, kw):
    same_error("bincount", *args, **kw)


@pytest.mark.parametrize("kw", [
    dict(bins=[3, 4]), dict(range=[(0, 1)]), dict(bins=0), dict(bins=[2, [3, 1, 2], 2]),
    dict(bins=[2, 2, [[1, 2]]]), dict(range=[(0, 1), (2, 1), None]), dict(bins=(2, 2.5, 2)),
])
def test_histogramdd_errors(kw):
    same_error("histogramdd", X.reshape(-1, 4)[:, :3], **kw)


def test_histogram2d_errors():
    same_error("histogram2d", X, X[:-1])
    same_error("histogram2d", X, X, bins=[1])


def test_unsupported_types_are_type_errors():
    with pytest.raises(TypeError):
        tally.histogram(X.astype(np.complex128))
    with pytest.raises(TypeError):
        tally.histogram(np.array(["a", "b"]))
    with pytest.raises(TypeError):
        tally.histc(X.astype(np.complex64))


def test_tally_keywords():
    with pytest.raises(ValueError, match="strategy"):
        tally.histogram(X, strategy="fastest")
    with pytest.raises(ValueError, match="device"):
        tally.histogram(X, device="tpu")
    cuda_usable = any(b["name"] == "cuda" and b["usable"] for b in tally.backends())
    if not cuda_usable:
        with pytest.raises(ValueError, match="cuda"):
            tally.histogram(X, device="cuda")
    with pytest.raises(ValueError):
        tally.histc(X, bins=0)
    with pytest.raises(ValueError):
        tally.histc(X, min=2, max=1)
    with pytest.raises(ValueError):
        tally.histc(np.array([np.nan, 1.0]))


def test_streaming_errors():
    with pytest.raises(ValueError, match="bins"):
        tally.axis.regular(0, 0, 1)
    with pytest.raises(ValueError, match="lo"):
        tally.axis.regular(4, 1, 0)
    with pytest.raises(ValueError, match="decrease"):
        tally.axis.variable([0, 2, 1])
    with pytest.raises(ValueError):
        tally.axis.integer(3, 3)
    h = tally.Histogram([tally.axis.regular(4, 0, 1), tally.axis.regular(2, 0, 1)])
    with pytest.raises(ValueError):
        h.fill(X)
    with pytest.raises(ValueError):
        h.fill(X, X[:-1])
    with pytest.raises(ValueError, match="unweighted"):
        h.fill(X, X, weight=X)
    with pytest.raises(ValueError, match="flow"):
        h.flow


BAD_CALLS = {
    "axis_integer_beyond_int64": (lambda: tally.axis.integer(0, 2**70), OverflowError),
    "axis_regular_bins_beyond_int64": (lambda: tally.axis.regular(2**70, 0, 1), OverflowError),
    "axis_regular_bins_str": (lambda: tally.axis.regular("a", 0, 1), TypeError),
    "histogram_object_not_axes": (lambda: tally.Histogram(3), TypeError),
    "histogram_threads_str": (lambda: tally.Histogram(tally.axis.regular(3, 0, 1), threads="x"), TypeError),
    "histogram_strategy_int": (lambda: tally.histogram([1.0, 2.0], strategy=3), TypeError),
    "bincount_minlength_beyond_int64": (lambda: tally.bincount([1], minlength=2**70), OverflowError),
    "small_bincount_minlength_beyond_int64": (lambda: tally.bincount(np.array([1]), minlength=2**70), OverflowError),
    "histc_bins_beyond_int64": (lambda: tally.histc(np.array([1.0, 2.0]), bins=2**70), OverflowError),
    "histogram_bins_float": (lambda: tally.histogram([1.0], bins=2.5), TypeError),
    "plan_dtype": (lambda: tally.plan(dtype="zz", n=5), ValueError),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_public_entry_points_validate_first(case):
    """Every public entry point checks its arguments itself: numpy's error classes, and never
    the extension's own "incompatible function arguments"."""
    call, kind = BAD_CALLS[case]
    with pytest.raises(kind) as info:
        call()
    assert "incompatible function arguments" not in str(info.value)


_UNDER_A_LIMIT = """
import resource, sys
import numpy as np
import tally
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
x = np.zeros(10**8, np.uint8)
h = tally.Histogram(tally.axis.regular(4, 0, 1), threads=1000)
h.fill(x)
assert h.values()[0] == 10**8, h.values()
try:
    tally.bincount([2**31])  # 16 GiB of cells: tally's MemoryError, not std::bad_alloc's
except MemoryError as e:
    assert "bad_alloc" not in str(e), e
    print("ok", e)
"""


def test_many_threads_and_huge_results_under_a_memory_limit_are_clean():
    # 1000 threads asked for under a 4 GiB address space: the planner takes at most the machine's
    # (more ended the process in libgomp's thread creation).
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-c", _UNDER_A_LIMIT], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("ok"), run.stdout + run.stderr

"""Dask's own tests of its histogram functions, run against tally.dask: every test of the installed
dask's dask/array/tests/test_routines.py whose name holds "histogram" or "bincount" (what
``pytest -k "histogram or bincount"`` selects there) is imported from that module, not copied,
and collected here, one result a test (a parametrized test's cases each). While each runs, the
module's global ``da`` (it calls ``da.histogram``, ``da.histogram2d``, ``da.histogramdd`` and
``da.bincount``) is a stand-in for dask.array whose four functions are tally.dask's; all else is
dask.array's. dask.array itself is left alone, so the tests' references, ``np.histogram`` of a
Dask array and the like, still come from dask's own code through numpy's dispatch.

Where tally.dask differs from dask.array on purpose, the test is in DIFFERENCES with its reason,
a strict xfail (it must fail, and only by the error dask raises not being raised); the last
tests here check what tally.dask answers instead. docs/scale.md lists the same differences."""

import inspect
import types

import numpy as np
import pytest

from conftest import assert_same_array

da = pytest.importorskip("dask.array")
routines = pytest.importorskip("dask.array.tests.test_routines")
import tally.dask as td  # noqa: E402  (after the skips: needs dask)

FUNCTIONS = ("histogram", "histogram2d", "histogramdd", "bincount")
SELECTED = {name: f for name, f in vars(routines).items()
            if name.startswith("test_") and inspect.isfunction(f) and ("histogram" in name or "bincount" in name)}
globals().update(SELECTED)

# dask.array refuses these, where numpy (and so tally.dask) answers.
_RANGE = "no range: tally.dask reads the data's minimum and maximum, as numpy (dask.array asks for a range)"
_ALIGN = ("tally.dask rechunks the columns and weights to the first column's chunks, as chunked data need "
          "no particular chunks for numpy's answer (dask.array asks for the same chunks)")
DIFFERENCES = {
    "test_histogram_bin_range_raises[10-None]": _RANGE,
    "test_histogramdd_raises_incompat_sample_chunks":
        "tally.dask reads an (N, D) sample chunked along either axis (dask.array: along the first only)",
    "test_histogramdd_raises_incompat_multiarg_chunks": _ALIGN,
    "test_histogramdd_raises_incompat_weight_chunks": _ALIGN,
    "test_histogramdd_raise_incompat_shape":
        "a 1-D sample is N samples of one dimension, as numpy reads it (dask.array refuses it; a 3-D "
        "sample gets dask's error)",
}


class _DaskArrayWithTally(types.ModuleType):
    """dask.array, but for its histogram functions, which are tally.dask's."""

    def __init__(self):
        super().__init__("dask.array")
        for name in FUNCTIONS:
            setattr(self, name, getattr(td, name))

    def __getattr__(self, name):
        return getattr(da, name)


@pytest.fixture(autouse=True)
def _tally_as_dask(request, monkeypatch):
    monkeypatch.setattr(routines, "da", _DaskArrayWithTally())
    reason = DIFFERENCES.get(request.node.name)
    if reason:
        # Failing only by pytest.raises' "DID NOT RAISE": tally.dask answered where dask raises.
        request.node.add_marker(pytest.mark.xfail(reason=reason, strict=True, raises=pytest.fail.Exception))


def test_dask_calls_the_functions_as_this_file_expects():
    # Else the tests would run dask.array's functions, not tally's: fail loudly instead.
    assert len(SELECTED) >= 20, sorted(SELECTED)
    source = "".join(inspect.getsource(f) for f in SELECTED.values())
    for name in FUNCTIONS:
        assert f"da.{name}(" in source, name
    assert {key.partition("[")[0] for key in DIFFERENCES} <= set(SELECTED)


# ---- the differences: what tally.dask answers where dask.array raises ----

def test_no_range_reads_the_data():
    v = np.random.default_rng(1).random(10)
    hist, edges = td.histogram(da.from_array(v, chunks=2), bins=10)
    want, want_edges = np.histogram(v, bins=10)
    assert_same_array(hist.compute(), want)
    assert_same_array(edges, want_edges)


def test_chunks_of_columns_and_weights_need_not_match():
    rng = np.random.default_rng(2)
    s, w = rng.random((100, 3)), rng.random(100)
    want, want_edges = np.histogramdd(s, bins=(3, 4, 5), range=((0, 1),) * 3, weights=w)
    for sample in (da.from_array(s, chunks=(30, 1)),  # chunked along both axes
                   [da.from_array(s[:, 0], chunks=10), da.from_array(s[:, 1], chunks=25),
                    da.from_array(s[:, 2], chunks=50)]):
        H, edges = td.histogramdd(sample, bins=(3, 4, 5), range=((0, 1),) * 3, weights=da.from_array(w, chunks=40))
        np.testing.assert_allclose(H.compute(), want, rtol=1e-14)
        for e, we in zip(edges, want_edges):
            assert_same_array(e, we)


def test_1d_sample_is_one_dimension_and_3d_gets_dasks_error():
    v = np.random.default_rng(3).random(10)
    H, (edges,) = td.histogramdd(da.from_array(v, chunks=2), bins=4, range=((-3, 3),))
    want, (want_edges,) = np.histogramdd(v, bins=4, range=((-3, 3),))
    assert_same_array(H.compute(), want)
    assert_same_array(edges, want_edges)
    with pytest.raises(ValueError, match="Single array input to histogramdd should be columnar"):
        td.histogramdd(da.ones((4, 4, 4), chunks=2), bins=4, range=((-3, 3),))

"""Category axes with no categories, as boost-histogram allows them: ``StrCategory([], growth=True)``
(hist's usual dataset or systematic axis), which the first fill grows, and ``IntCategory([])``,
whose samples all go to the overflow. Every read of a still-empty histogram, first fills of fresh
samples of several distributions into every storage, merges with filled histograms, pickling and
the conversions are compared with boost-histogram doing the same; CUDA fills equal the CPU's."""

import pickle

import numpy as np
import pytest

import tally
from conftest import DISTRIBUTIONS, assert_same_array, samples
from test_axes import categories_like

bh = pytest.importorskip("boost_histogram")
A = tally.axis

# tally's category class, boost-histogram's name for it, and the categories the samples draw from.
KINDS = {"str": (A.StrCategory, "StrCategory", ["mc", "data", "sys_up", "sys_down", "other"]),
         "int": (A.IntCategory, "IntCategory", [7, -3, 12, 0, 5])}
STORAGES = {"int64": "Int64", "double": "Double", "weight": "Weight", "mean": "Mean", "weighted_mean": "WeightedMean"}
EXACT_FIELDS = {"value", "variance", "count", "sum_of_weights", "sum_of_weights_squared"}  # sums of quarters


def made(kind, storage, *, growth=True, ndim=2, flow=False, device=None):
    """A tally histogram and boost-histogram's over a category axis of no categories (then a
    Regular(4, 0, 1) axis for 2-D); tally's with flow bins for counts, as boost's always has."""
    cls, name, _ = KINDS[kind]
    t_axes, b_axes = [cls([], growth=growth)], [getattr(bh.axis, name)([], growth=growth)]
    if ndim == 2:
        t_axes.append(A.Regular(4, 0, 1))
        b_axes.append(bh.axis.Regular(4, 0, 1))
    t = tally.Histogram(t_axes, storage=getattr(tally.storage, STORAGES[storage])(), flow=flow, device=device)
    return t, bh.Histogram(*b_axes, storage=getattr(bh.storage, STORAGES[storage])())


def fill_data(rng, kind, storage, distribution, n, ndim=2):
    """The columns and the fill's keywords (weights in quarters, so their sums are exact in any
    order; samples for the means) of n fresh samples."""
    cols = [categories_like(rng, distribution, n, KINDS[kind][2])]
    if ndim == 2:
        cols.append(samples(rng, "f64", n, distribution, -0.5, 1.5))
    kw = {}
    if storage in ("double", "weight", "weighted_mean"):
        kw["weight"] = rng.integers(1, 9, n) * 0.25
    if storage in ("mean", "weighted_mean"):
        kw["sample"] = samples(rng, "f64", n, distribution, -2.0, 3.0)
    return cols, kw


def assert_same_cells(t, b, flow=False):
    """tally's cells equal boost-histogram's: counts, sums of weights and of their squares bit for
    bit; the means and their spreads to rounding (boost updates a mean sample by sample, tally
    keeps sums)."""
    got, want = t.view(flow=flow), np.asarray(b.view(flow=flow))
    if want.dtype.names is None:
        assert_same_array(np.asarray(got), want)
        return
    assert got.dtype.names == want.dtype.names and got.shape == want.shape, (got.dtype, want.dtype)
    for field in want.dtype.names:
        if field in EXACT_FIELDS and not (t.kind == "MEAN" and field in ("value", "variance")):
            assert_same_array(np.asarray(got[field]), np.asarray(want[field]))
        else:
            np.testing.assert_allclose(got[field], want[field], rtol=1e-9, atol=1e-9)


def assert_same_total(got, want):
    """Totals (h.sum(), h[::sum]) of any storage: numbers, or accumulators compared field by field
    (but a Mean total's variance, which boost-histogram leaves NaN for no samples)."""
    if isinstance(want, (int, float, np.number)):
        assert float(got) == float(want)
        return
    for field in ("value", "variance", "count", "sum_of_weights", "sum_of_weights_squared"):
        if hasattr(want, field) and not (field == "variance" and hasattr(want, "count") and want.count < 2):
            np.testing.assert_allclose(getattr(got, field), getattr(want, field), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("ndim", [1, 2])
@pytest.mark.parametrize("growth", [True, False])
@pytest.mark.parametrize("storage", list(STORAGES))
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_still_empty_histogram_reads_as_boost_histograms(kind, storage, growth, ndim):
    t, b = made(kind, storage, growth=growth, ndim=ndim, flow=storage == "int64")
    for ta, ba in zip(t.axes, b.axes):
        assert (ta.size, ta.extent, len(ta), list(ta)) == (ba.size, ba.extent, len(ba), list(ba))
        assert all(getattr(ta.traits, f) == getattr(ba.traits, f) for f in ("underflow", "overflow", "growth"))
        for what in ("edges", "centers", "widths"):
            assert_same_array(np.asarray(getattr(ta, what), np.float64), np.asarray(getattr(ba, what), np.float64))
    assert t.axes[0].size == 0 and t.shape == b.shape == t.values().shape
    assert_same_cells(t, b)
    if storage == "int64":  # the flow bins: (0, 6) growing, (1, 6) with the overflow bin of a fixed axis
        assert_same_cells(t, b, flow=True)
    for ours, theirs in ((t.variances(), b.variances()), (t.counts(), b.counts())):
        assert (ours is None) == (theirs is None) or storage == "double"  # tally's Double: no variances
        if ours is not None and theirs is not None:
            assert np.shape(ours) == np.shape(theirs)
    assert_same_total(t.sum(), b.sum())
    assert t.empty() and t.empty(flow=True) and b.empty(flow=True)
    for keep in ([(0,), (1,), (1, 0)] if ndim == 2 else [(0,)]):
        assert_same_cells(t.project(*keep), b.project(*keep))
    rest = (slice(None),) * (ndim - 1)  # boost-histogram takes one entry per axis
    assert_same_total(t[(slice(None, None, sum),) * ndim], b[(slice(None, None, sum),) * ndim])
    assert_same_cells(t[(slice(None),) + rest], b[(slice(None),) + rest])
    if ndim == 2:
        assert_same_cells(t[sum, :], b[sum, :])
        assert_same_cells(t[:, sum], b[:, sum])
        assert_same_cells(t[:, 1:3], b[:, 1:3])
    for key in (0, -1, slice(0, 0)):
        for h in (t, b):
            with pytest.raises(IndexError, match="out of range|bins"):
                h[(key,) + rest]
    if storage in ("int64", "double", "weight"):  # scaling, as boost-histogram's
        for got, want in ((t * 2, b * 2), (t / 4, b / 4)):
            assert got.values().shape == want.values().shape
    assert t.copy() == t and pickle.loads(pickle.dumps(t)) == t
    assert f"(tally.axis.{KINDS[kind][1]}([]" in repr(t).replace("[tally", "tally") and str(t).startswith(repr(t))
    assert "<svg" in t._repr_html_()
    # Both conversions: boost's empty axis and tally's are each other's.
    tb = t.to_boost()
    assert type(tb.axes[0]) is type(b.axes[0]) and tb.axes[0].traits.growth == growth
    assert_same_cells(t, tb, flow=storage == "int64")
    back = tally.Histogram.from_boost(b)
    assert back.axes == t.axes and back.storage_type is t.storage_type
    assert_same_cells(back, b)


@pytest.mark.parametrize("storage", list(STORAGES))
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_first_fills_grow_an_empty_axis_as_boost_histograms(rng, distribution, kind, storage):
    t, b = made(kind, storage, flow=storage == "int64")
    n = 3000
    cols, kw = fill_data(rng, kind, storage, distribution, n)
    chunks = [slice(0, 0), slice(0, n // 3), slice(n // 3, n)]  # an empty fill grows nothing
    for s in chunks:
        part = {k: v[s] for k, v in kw.items()}
        for h in (t, b):
            h.fill(*(c[s] for c in cols), **part)
        assert t.axes[0].categories == list(b.axes[0])
    assert t.axes[0].size > 1 and t.samples == n
    assert_same_cells(t, b)
    if storage == "int64":
        assert_same_cells(t, b, flow=True)
        assert int(t.sum(flow=True)) == n
    assert_same_total(t.sum(), b.sum())
    assert pickle.loads(pickle.dumps(t)) == t and t.copy() == t
    back = tally.Histogram.from_boost(t.to_boost())
    assert back.axes == t.axes
    assert_same_cells(back, b)


@pytest.mark.parametrize("ndim", [1, 2])
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_an_empty_axis_without_growth_counts_every_sample_as_overflow(rng, distribution, kind, ndim):
    n = 2000
    cols, _ = fill_data(rng, kind, "int64", distribution, n, ndim)
    t, b = made(kind, "int64", growth=False, ndim=ndim, flow=True)
    t.fill(*cols)
    b.fill(*cols)
    assert t.values().shape == b.values().shape and t.axes[0].size == 0
    assert_same_cells(t, b, flow=True)  # the axis' overflow bin holds them all
    assert t.flow == {"underflow": 0, "overflow": n, "nan": 0} and t.samples == n
    assert_same_cells(tally.Histogram.from_boost(b), b, flow=True)
    assert_same_cells(t + t, b + b, flow=True)
    w = rng.integers(1, 9, n) * 0.25
    d, bd = made(kind, "double", growth=False, ndim=ndim)
    d.fill(*cols, weight=w)
    bd.fill(*cols, weight=w)
    # The sum of the bins, none; boost-histogram's sum() of an axis of no bins adds its overflow bin
    # (sum(flow=False) equals sum(flow=True) there), which tally's flow=True histogram gives.
    assert d.sum() == bd.values().sum() == 0 and d.samples == n
    assert t.sum() == 0 and t.sum(flow=True) == b.sum(flow=True) == n
    assert_same_cells(d, bd)


@pytest.mark.parametrize("storage", ["int64", "double", "weight", "mean"])
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_merging_an_empty_histogram_with_filled_ones_is_boost_histograms_union(rng, distribution, kind, storage):
    flow = storage == "int64"
    made_pairs = [made(kind, storage, flow=flow) for _ in range(3)]  # (tally, boost): empty, f, g
    for (t, b), n in zip(made_pairs[1:], (800, 1200)):
        cols, kw = fill_data(rng, kind, storage, distribution, n)
        t.fill(*cols, **kw)
        b.fill(*cols, **kw)
    (e, be), (f, bf), (g, bg) = made_pairs
    for got, want in ((e + f, be + bf), (f + e, bf + be), (e + e, be + be), (f + g, bf + bg),
                      (sum([e, f, g]), sum([be, bf, bg]))):
        assert got.axes[0].categories == list(want.axes[0])
        assert_same_cells(got, want)
        if flow:
            assert_same_cells(got, want, flow=True)
    assert e.axes[0].size == 0  # + leaves its operands as they were
    e += f
    be += bf
    assert e.axes[0].categories == list(be.axes[0]) and e == f
    assert_same_cells(e, be)


def test_hist_users_dataset_axis_round_trips():
    hist = pytest.importorskip("hist")
    rng = np.random.default_rng(40)
    names = categories_like(rng, "skewed", 500, KINDS["str"][2])
    x = rng.uniform(-0.2, 1.2, 500)
    w = rng.integers(1, 9, 500) * 0.25
    theirs = hist.Hist.new.StrCat([], growth=True, name="dataset").Reg(4, 0, 1, name="x").Weight()
    ours = tally.Histogram(A.StrCategory([], growth=True, name="dataset"), A.Regular(4, 0, 1, name="x"),
                           storage=tally.storage.Weight())
    assert tally.Histogram.from_hist(theirs) == ours
    assert ours.to_hist().axes[0].name == "dataset" and ours.to_hist().values().shape == (0, 4)
    theirs.fill(dataset=names, x=x, weight=w)
    ours.fill(names, x, weight=w)
    assert_same_cells(ours, theirs)
    back = tally.Histogram.from_hist(theirs, flow=False)  # its flow bins hold weights
    assert back.axes == ours.axes and back.axes[0].name == "dataset"
    assert_same_cells(back, theirs)
    assert_same_cells(ours, ours.to_hist())


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_cuda_first_fills_of_an_empty_axis_equal_the_cpus(rng, torch, distribution, kind):
    n = 20000
    cols, kw = fill_data(rng, kind, "weight", distribution, n)
    made_on = {}
    for device in ("cpu", "cuda"):
        counts, _ = made(kind, "int64", flow=True, device=device)
        weights, _ = made(kind, "weight", device=device)
        fixed, _ = made(kind, "int64", growth=False, flow=True, device=device)
        on = list(cols) + [kw["weight"]]
        if device == "cuda":  # strings are mapped on the host; every other column is on the GPU
            on = [c if c.dtype.kind == "U" else torch.from_numpy(np.ascontiguousarray(c)).cuda() for c in on]
        x, w = on[:2], on[2]
        for h in (counts, weights, fixed):
            h.fill(*(c[:0] for c in x), **({"weight": w[:0]} if h is weights else {}))
            h.fill(*x, **({"weight": w} if h is weights else {}))
        made_on[device] = (counts, weights, fixed)
    for got, want in zip(made_on["cuda"], made_on["cpu"]):
        assert got.axes[0].categories == want.axes[0].categories
        assert got.samples == want.samples == n
        if got.storage_type is tally.storage.Weight:
            assert_same_array(np.asarray(got.view().value), np.asarray(want.view().value))
            assert_same_array(np.asarray(got.view().variance), np.asarray(want.view().variance))
        else:
            assert_same_array(got.values(flow=True), want.values(flow=True))


@pytest.mark.parametrize("storage", ["int64", "weight"])
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_two_empty_axes_grow_one_after_the_other_as_boost_histograms(rng, distribution, storage):
    n = 2500
    names = categories_like(rng, distribution, n, KINDS["str"][2])
    codes = categories_like(rng, distribution, n, KINDS["int"][2])
    x = samples(rng, "f64", n, distribution, -0.5, 1.5)
    kw = {"weight": rng.integers(1, 9, n) * 0.25} if storage == "weight" else {}
    t = tally.Histogram(A.StrCategory([], growth=True), A.IntCategory([], growth=True), A.Regular(4, 0, 1),
                        storage=getattr(tally.storage, STORAGES[storage])(), flow=storage == "int64")
    b = bh.Histogram(bh.axis.StrCategory([], growth=True), bh.axis.IntCategory([], growth=True),
                     bh.axis.Regular(4, 0, 1), storage=getattr(bh.storage, STORAGES[storage])())
    assert t.values().shape == b.values().shape == (0, 0, 4)
    for s in (slice(0, n // 2), slice(n // 2, n)):
        for h in (t, b):
            h.fill(names[s], codes[s], x[s], **{k: v[s] for k, v in kw.items()})
    assert (t.axes[0].categories, t.axes[1].categories) == (list(b.axes[0]), list(b.axes[1]))
    assert_same_cells(t, b)
    if storage == "int64":
        assert_same_cells(t, b, flow=True)
    assert_same_cells(t.project(2, 1), b.project(2, 1))
    assert pickle.loads(pickle.dumps(t)) == t

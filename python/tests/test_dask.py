"""tally.dask on a process-based dask.distributed LocalCluster: histograms of chunked data equal
numpy's on the concatenated data (counts and edges bit for bit, any chunking), lazily; weighted
sums exact, equal to one exact tally fill bit for bit (and to numpy's where every partial sum is
exact); DataFrame columns; numpy's errors."""

import numpy as np
import pytest

from conftest import assert_same_array, samples

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
import tally  # noqa: E402
import tally.dask as td  # noqa: E402  (after the skips: needs dask)


@pytest.fixture(scope="module")
def client():
    # Worker processes inherit the environment (PYTHONPATH finds the built package).
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


def chunked(a, rng, pieces):
    """A dask array of `a` in `pieces` chunks of random, uneven sizes (some may be empty)."""
    cuts = np.sort(rng.integers(0, a.size + 1, pieces - 1))
    sizes = tuple(int(s) for s in np.diff(np.concatenate([[0], cuts, [a.size]])))
    return da.from_array(a, chunks=(sizes,))


KINDS = ["uniform", "hot", "skewed", "sorted"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("t", ["f32", "f64", "i32", "u8"])
def test_histogram_equals_numpy(client, rng, t, kind):
    a = samples(rng, t, 20011, kind)
    x = chunked(a, rng, 7)
    for bins, range_ in ((37, None), (16, (float(np.min(a)), float(np.max(a)) + 1)), (5, (0, 3))):
        hist, edges = td.histogram(x, bins=bins, range=range_)
        assert isinstance(hist, da.Array)  # lazy until computed
        want, want_edges = np.histogram(a, bins=bins, range=range_)
        assert_same_array(edges, want_edges)
        assert_same_array(hist.compute(), want)


def test_histogram_edges_and_int64_beyond_2_53(client, rng):
    a = samples(rng, "f64", 30000, "skewed")
    edges = np.sort(rng.random(12))
    hist, e = td.histogram(chunked(a, rng, 5), bins=edges)
    assert_same_array(hist.compute(), np.histogram(a, bins=edges)[0])
    assert_same_array(e, edges)
    # 64-bit integers beyond 2^53 compare with an integer range exactly, as in numpy.
    big = (2**54 + rng.integers(-8, 520, 5000)).astype(np.int64)
    hist, e = td.histogram(chunked(big, rng, 4), bins=8, range=(2**54, 2**54 + 512))
    want, want_e = np.histogram(big, bins=8, range=(2**54, 2**54 + 512))
    assert_same_array(hist.compute(), want)
    assert_same_array(e, want_e)


def test_weighted_sums(client, rng):
    a = samples(rng, "f32", 40000, "hot")
    x = chunked(a, rng, 6)
    # Whole-number weights: every partial sum is exact, so the sums equal numpy's bit for bit.
    w = rng.integers(-50, 50, a.size).astype(np.float64)
    hist, _ = td.histogram(x, bins=20, range=(0, 1), weights=da.from_array(w, chunks=x.chunks))
    want = np.histogram(a, bins=20, range=(0, 1), weights=w)[0]
    assert hist.dtype == want.dtype
    assert_same_array(hist.compute(), want)
    # Random f32 weights: exact sums, within rounding of numpy's one pass, in numpy's result dtype.
    w32 = rng.random(a.size, dtype=np.float32)
    hist, _ = td.histogram(x, bins=20, range=(0, 1), weights=da.from_array(w32, chunks=3000))
    want = np.histogram(a, bins=20, range=(0, 1), weights=w32)[0]
    got = hist.compute()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("weight_type", [np.float64, np.float32])
def test_weighted_sums_equal_one_exact_fill_for_any_chunking(client, rng, weight_type):
    a = samples(rng, "f64", 30000, "skewed")
    # Magnitudes 2^-60 .. 2^60 of both signs: float64 sums of the chunks' sums would depend on
    # the chunking.
    w = (rng.uniform(1, 2, a.size) * 2.0 ** rng.integers(-60, 61, a.size) * rng.choice([-1.0, 1.0], a.size))
    w = w.astype(weight_type)
    one = tally.Histogram(tally.axis.regular(16, -3, 7), weighted=True, exact_sums=True)
    one.fill(a, weight=w)
    want = one.values().astype(weight_type)
    for pieces, split_every in ((7, 8), (5, 2), (11, 3)):
        x = chunked(a, rng, pieces)
        hist, _ = td.histogram(x, bins=16, range=(-3, 7), weights=da.from_array(w, chunks=x.chunks),
                               split_every=split_every)
        assert_same_array(hist.compute(), want)


def test_density(client, rng):
    a = samples(rng, "f64", 10000, "skewed")
    hist, _ = td.histogram(chunked(a, rng, 3), bins=13, density=True)
    np.testing.assert_allclose(hist.compute(), np.histogram(a, bins=13, density=True)[0], rtol=1e-13)


def test_dask_arrays_as_bins_and_range(client, rng):
    # dask.array.histogram's arguments computed by the graph: a range of 0-d Dask arrays (one may be
    # a number), a Dask number of bins, Dask edges (returned as given). The edges are then lazy, and
    # numpy's bit for bit; whole-number weights make every sum exact, so densities are numpy's too.
    a = samples(rng, "f32", 20011, "skewed")
    x = chunked(a, rng, 7)
    w = rng.integers(0, 9, a.size).astype(np.float64)
    wd = da.from_array(w, chunks=5000)
    lo, hi = a.min(), a.max()
    half, two = np.float32(0.5), np.float32(2)
    for bins, range_, want_range, density in ((37, (x.min(), x.max()), (lo, hi), True),
                                              (da.array(37), (x.min(), x.max()), (lo, hi), False),
                                              (da.array(16), (half, x.max()), (half, hi), False),
                                              (16, da.stack([x.min(), da.array(two)]), (lo, two), True)):
        hist, edges = td.histogram(x, bins=bins, range=range_, weights=wd, density=density)
        assert isinstance(hist, da.Array) and isinstance(edges, da.Array)
        want, want_edges = np.histogram(a, bins=int(np.asarray(bins)), range=want_range, weights=w, density=density)
        assert edges.dtype == want_edges.dtype
        assert_same_array(edges.compute(), want_edges)
        assert_same_array(hist.compute(), want)
    given = da.from_array(np.sort(rng.random(9)), chunks=4)
    hist, edges = td.histogram(x, bins=given, density=True)
    assert edges is given
    assert_same_array(hist.compute(), np.histogram(a, bins=given.compute(), density=True)[0])
    with pytest.raises(ValueError, match="monotonically"):  # checked where the graph computes them
        td.histogram(x, bins=given[::-1])[0].compute()


@pytest.mark.parametrize("kind", KINDS)
def test_histogramdd_and_2d(client, rng, kind):
    s = np.stack([samples(rng, "f64", 15000, kind), samples(rng, "f64", 15000, "uniform")], axis=1)
    sample = da.from_array(s, chunks=(4000, 2))
    bins = (7, np.linspace(0.1, 0.9, 6))
    H, edges = td.histogramdd(sample, bins=bins)
    want, want_edges = np.histogramdd(s, bins=bins)
    assert_same_array(H.compute(), want)
    for e, we in zip(edges, want_edges):
        assert_same_array(e, we)
    x, y = chunked(s[:, 0].copy(), rng, 5), da.from_array(s[:, 1].copy(), chunks=2500)
    w = rng.integers(0, 9, 15000).astype(np.float64)
    H, xe, ye = td.histogram2d(x, y, bins=9, range=[(0, 1), (0, 1)], weights=da.from_array(w, chunks=6000),
                               density=True)
    want, wxe, wye = np.histogram2d(s[:, 0], s[:, 1], bins=9, range=[(0, 1), (0, 1)], weights=w, density=True)
    np.testing.assert_allclose(H.compute(), want, rtol=1e-13)
    assert_same_array(xe, wxe)
    assert_same_array(ye, wye)


def test_bincount(client, rng):
    a = samples(rng, "i32", 30000, "skewed", 0, 500)
    x = chunked(a, rng, 6)
    assert_same_array(td.bincount(x).compute(), np.bincount(a))
    assert_same_array(td.bincount(x, minlength=900).compute(), np.bincount(a, minlength=900))
    w = rng.random(a.size)
    np.testing.assert_allclose(td.bincount(x, weights=da.from_array(w, chunks=7000)).compute(),
                               np.bincount(a, weights=w), rtol=1e-13)
    assert td.bincount(da.from_array(np.zeros(0, np.int64), chunks=1)).compute().size == 0
    with pytest.raises(ValueError, match="negative"):
        td.bincount(da.from_array(np.array([3, -1, 2]), chunks=2))


def test_dataframe_columns(client, rng):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"x": samples(rng, "f64", 12000, "hot"), "y": samples(rng, "i32", 12000, "uniform", 0, 50)})
    df = dd.from_pandas(frame, npartitions=4)
    hist, edges = td.histogram(df["x"], bins=11, range=(0, 1))
    assert_same_array(hist.compute(), np.histogram(frame["x"].to_numpy(), bins=11, range=(0, 1))[0])
    H, _ = td.histogramdd([df["x"], df["y"]], bins=(4, 5))
    assert_same_array(H.compute(), np.histogramdd([frame["x"].to_numpy(), frame["y"].to_numpy()], bins=(4, 5))[0])
    assert_same_array(td.bincount(df["y"]).compute(), np.bincount(frame["y"].to_numpy()))


def test_fill_gives_mergeable_histograms(client, rng):
    a = samples(rng, "i32", 20000, "uniform", -10, 110)
    h = td.fill(tally.Histogram(tally.axis.integer(0, 100), flow=True), chunked(a, rng, 5), split_every=2).compute()
    assert_same_array(h.values(), np.bincount(a[(a >= 0) & (a < 100)], minlength=100))
    assert h.flow == {"underflow": int((a < 0).sum()), "overflow": int((a >= 100).sum()), "nan": 0}


def test_errors(client, rng):
    with pytest.raises(TypeError, match="dask array"):
        td.histogram(np.arange(5))
    x = da.from_array(np.arange(10.0), chunks=3)
    with pytest.raises(ValueError, match="same shape"):
        td.histogram(x, weights=da.from_array(np.ones(9), chunks=3))
    with pytest.raises(ValueError, match="max must be larger than min"):
        td.histogram(x, bins=3, range=(2, 1))
    with pytest.raises(ValueError, match="autodetected range"):
        td.histogram(da.from_array(np.array([1.0, np.inf]), chunks=1))
    with pytest.raises(ValueError, match="monotonically"):
        td.histogram(x, bins=[0, 2, 1])
    with pytest.raises(TypeError, match="Cannot cast"):
        td.bincount(x)
    with pytest.raises(ValueError, match="split_every"):
        td.histogram(x, bins=3, split_every=1)
    # dask.array's errors: a Dask number of bins has no density; Dask bins or range in histogramdd
    with pytest.raises(NotImplementedError, match="scalar Dask object"):
        td.histogram(x, bins=da.array(3), range=(0, 1), density=True)
    with pytest.raises(NotImplementedError, match="dask collections"):
        td.histogramdd([x], bins=3, range=[(x.min(), 1)])
    with pytest.raises(TypeError, match="from_delayed"):  # a Delayed's shape and dtype are unknown
        td.histogram(x, bins=dask.delayed(3), range=(0, 1))

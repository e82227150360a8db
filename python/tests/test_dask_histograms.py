"""tally.dask.fill: a tally.Histogram of any axes and storage filled from Dask arrays and DataFrame
columns, chunk by chunk. Every axis kind (growing ones included) and every storage, on fresh data of
several distributions in several chunkings, against one tally fill of the concatenated data (counts
and exact sums bit for bit, float64 sums within rounding) and boost-histogram's histogram of the
same data, view for view; categories grown apart by the chunks; DataFrames; errors before anything
is computed; the template left as it is. GPU cases (cupy chunks) skip where no GPU is."""

import doctest
import math

import numpy as np
import pytest

from conftest import DISTRIBUTIONS, samples, spread_weights

dask = pytest.importorskip("dask")
from dask.delayed import Delayed  # noqa: E402
da = pytest.importorskip("dask.array")
bh = pytest.importorskip("boost_histogram")
import tally  # noqa: E402
import tally.dask as td  # noqa: E402  (after the skips: needs dask)
from dask_gpu_chunks import gpu_chunks, on_gpu  # noqa: E402,F401  (on_gpu: a fixture)

A = tally.axis
N = 3001
STORAGES = ["int64", "double", "weight", "mean", "weighted_mean"]
BOOST_STORAGE = {"int64": bh.storage.Int64, "double": bh.storage.Double, "weight": bh.storage.Weight,
                 "mean": bh.storage.Mean, "weighted_mean": bh.storage.WeightedMean}
WEIGHTED = {"double", "weight", "weighted_mean"}
SAMPLED = {"mean", "weighted_mean"}
STRINGS = np.array([f"s{k}" for k in range(12)])


@pytest.fixture(autouse=True)
def threads_scheduler():
    """Dask's threaded scheduler: the tasks run at once on several threads, nothing is pickled
    (the LocalCluster test below pickles)."""
    with dask.config.set(scheduler="threads"):
        yield


# Each axis kind: tally's axis, boost-histogram's, and the samples of one distribution it bins.
def _floats(rng, n, dist):
    return samples(rng, "f64", n, dist)  # in [-3, 7]


def _ints(rng, n, dist):
    return samples(rng, "i32", n, dist, -3, 30)


def _strings(rng, n, dist):
    return STRINGS[samples(rng, "i32", n, dist, 0, 12)]


AXES = {
    "regular": (lambda: A.Regular(20, -4, 6), lambda: bh.axis.Regular(20, -4, 6), _floats),
    "regular_log": (lambda: A.Regular(16, 0.2, 50, transform=A.transform.log),
                    lambda: bh.axis.Regular(16, 0.2, 50, transform=bh.axis.transform.log),
                    lambda rng, n, dist: np.exp(0.6 * _floats(rng, n, dist))),
    "variable": (lambda: A.Variable([-4, -1.5, 0, 0.25, 2, 5.5, 6]),
                 lambda: bh.axis.Variable([-4, -1.5, 0, 0.25, 2, 5.5, 6]), _floats),
    "integer": (lambda: A.Integer(-2, 25), lambda: bh.axis.Integer(-2, 25), _ints),
    "integer_growth": (lambda: A.Integer(0, 1, growth=True), lambda: bh.axis.Integer(0, 1, growth=True), _ints),
    "int_category": (lambda: A.IntCategory([3, 1, 4, 15]), lambda: bh.axis.IntCategory([3, 1, 4, 15]), _ints),
    "int_category_growth": (lambda: A.IntCategory([7], growth=True),
                            lambda: bh.axis.IntCategory([7], growth=True), _ints),
    "str_category": (lambda: A.StrCategory(["s3", "s0", "s7"]), lambda: bh.axis.StrCategory(["s3", "s0", "s7"]),
                     _strings),
    "str_category_growth": (lambda: A.StrCategory(["s5"], growth=True),
                            lambda: bh.axis.StrCategory(["s5"], growth=True), _strings),
    "boolean": (lambda: A.Boolean(), lambda: bh.axis.Boolean(),
                lambda rng, n, dist: samples(rng, "i32", n, dist, 0, 2).astype(bool)),
}
GROWING = [k for k in AXES if k.endswith("growth")]


def template(kinds, storage, **options):
    """An empty tally histogram over the kinds' axes: flow counters where the storage has them."""
    flow = storage not in SAMPLED
    return tally.Histogram([AXES[k][0]() for k in kinds], storage=None if storage == "int64" else storage,
                           flow=flow, **options)


def boost_of(kinds, storage):
    return bh.Histogram(*[AXES[k][1]() for k in kinds], storage=BOOST_STORAGE[storage]())


def extras(rng, storage, n, whole):
    """The fill's weight= and sample= for the storage: whole numbers (every partial sum exact) or
    fractions (sums that depend on their order)."""
    out = {}
    if storage in WEIGHTED:  # negative weights too, but for the means
        signs = np.ones(n) if storage in SAMPLED else rng.choice([-1.0, 1.0], n, p=[0.2, 0.8])
        out["weight"] = signs * (rng.integers(1, 60, n).astype(np.float64) if whole else rng.uniform(0.5, 2.0, n))
    if storage in SAMPLED:
        out["sample"] = rng.integers(-50, 100, n).astype(np.float64) if whole else rng.normal(3.0, 2.0, n)
    return out


def chunkings(rng, n):
    """Chunk sizes: uneven (some empty), one chunk, many equal ones."""
    cuts = np.sort(rng.integers(0, n + 1, 6))
    uneven = tuple(int(s) for s in np.diff(np.concatenate([[0], cuts, [n]])))
    return [uneven, (n,), n // 23 + 1]


def lazy(a, chunks):
    return da.from_array(a, chunks=(chunks,) if isinstance(chunks, tuple) else chunks)


def assert_close_views(got, want, exact):
    """tally's view against another's (tally's or boost-histogram's), field by field: equal, or
    within float64 rounding of sums of many terms."""
    got, want = np.asarray(got), np.asarray(want)
    fields = got.dtype.names or [None]
    for f in fields:
        g = got if f is None else got[f]
        w = want if f is None else want[f]
        if exact or g.dtype.kind in "iu":
            np.testing.assert_array_equal(g, w, err_msg=str(f))
        else:
            scale = float(np.max(np.abs(w), initial=1.0))
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12 * scale, err_msg=str(f))


def assert_like_one_fill(got, want, exact):
    """The Dask fill against one fill of all the data: the same histogram (axes, categories in
    order, flow counters, samples), cells bit for bit or within rounding."""
    if exact:
        assert got == want
        return
    assert got.axes == want.axes and got.samples == want.samples
    if want._flow:
        assert got.flow == want.flow
    assert_close_views(got.view(), want.view(), exact=False)


def check(kinds, storage, rng, dist, whole, split_every=8):
    columns = [AXES[k][2](rng, N, dist) for k in kinds]
    more = extras(rng, storage, N, whole)
    h = template(kinds, storage)
    want = h.copy().fill(*columns, **more)
    boost = boost_of(kinds, storage).fill(*columns, **more)
    for chunks in chunkings(rng, N):
        lazy_more = {k: lazy(v, chunks) for k, v in more.items()}
        result = td.fill(h, *[lazy(c, chunks) for c in columns], **lazy_more, split_every=split_every)
        assert isinstance(result, Delayed)  # lazy until computed
        got = result.compute()
        assert_like_one_fill(got, want, exact=whole or storage == "int64")
        for ours, theirs in zip(got.axes, boost.axes):  # categories in boost's order, boost's edges
            if ours.kind == "category":
                assert list(ours) == list(theirs)
            else:
                np.testing.assert_allclose(ours.edges, theirs.edges, rtol=1e-14, atol=1e-14)
        assert_close_views(got.view(), boost.view(), exact=storage == "int64")
    assert h == template(kinds, storage)  # the template stays empty, its axes as they were


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("kind", sorted(AXES))
def test_every_axis_and_storage_equals_one_fill_and_boost(kind, storage, dist, rng):
    check([kind], storage, rng, dist, whole=dist != "uniform")


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("kinds", [("str_category_growth", "regular", "integer_growth"),
                                   ("boolean", "int_category_growth"), ("variable", "regular_log")])
def test_n_dimensions(kinds, storage, rng):
    for dist in DISTRIBUTIONS:
        check(list(kinds), storage, rng, dist, whole=dist == "sorted", split_every=2)


@pytest.mark.parametrize("kind", GROWING)
def test_chunks_that_grow_apart_merge_to_one_fills_axis(kind, rng):
    # Sorted samples: each chunk meets other categories (another integer range), so every merge of
    # the tree adds categories; they come out in the order one fill meets them, as boost's.
    a = np.sort(AXES[kind][2](rng, 4000, "uniform"))[::-1].copy()
    h = template([kind], "weight")
    w = rng.uniform(0, 1, a.size)
    for split_every in (2, 3, 8):
        got = td.fill(h, lazy(a, 150), weight=lazy(w, 150), split_every=split_every).compute()
        want = h.copy().fill(a, weight=w)
        assert got.axes == want.axes and list(got.axes[0]) != list(h.axes[0])
        assert_like_one_fill(got, want, exact=False)
        boost = boost_of([kind], "weight").fill(a, weight=w)
        assert list(got.axes[0]) == list(boost.axes[0])
        assert_close_views(got.view(), boost.view(), exact=False)


def test_the_union_merge_itself(rng):
    # The tree's merge: histograms whose growing axes grew apart add into their union, as boost-
    # histogram's (Histogram.__iadd__), both operands left as they were.
    pieces = [np.array(["b", "a"]), np.array(["c", "c", "a"]), np.array(["d", "b"])]
    hs = [tally.Histogram(A.StrCategory(["a"], growth=True)).fill(p) for p in pieces]
    bs = [bh.Histogram(bh.axis.StrCategory(["a"], growth=True), storage=bh.storage.Int64()).fill(p) for p in pieces]
    got, boost = hs[2] + (hs[1] + hs[0]), bs[2] + (bs[1] + bs[0])
    assert got.axes[0].categories == list(boost.axes[0]) == ["a", "d", "b", "c"]
    assert got.values().tolist() == boost.values().tolist() and got.samples == 7
    assert [h.axes[0].categories for h in hs] == [["a", "b"], ["a", "c"], ["a", "d", "b"]]


def test_exact_sums_equal_one_fill_and_fsum(rng):
    # A template with exact sums: any chunking and tree, the correctly rounded sum of each cell.
    a = samples(rng, "i32", 5000, "skewed", 0, 40)
    w = spread_weights(rng, a.size, specials=False)
    h = tally.Histogram(A.Integer(0, 40), weighted=True, exact_sums=True)
    want = h.copy().fill(a, weight=w)
    fsums = np.array([math.fsum(w[a == k]) for k in range(40)])
    np.testing.assert_array_equal(want.values(), fsums)
    for chunks in chunkings(rng, a.size):
        got = td.fill(h, lazy(a, chunks), weight=lazy(w, chunks), split_every=2).compute()
        assert got == want and got.exact_sums
    plain = td.fill(tally.Histogram(A.Integer(0, 40), weighted=True), lazy(a, 97), weight=lazy(w, 97)).compute()
    assert not np.array_equal(plain.values(), fsums)  # these weights' f64 sums depend on the order


def test_template_contents_kept_and_left_unchanged(rng):
    # The result is the template's contents plus the data's, the template as it was when the graph
    # was made; computing it leaves the template as it is.
    x0, x1 = samples(rng, "f64", 700, "hot"), samples(rng, "f64", 900, "uniform")
    c0, c1 = _strings(rng, 700, "skewed"), _strings(rng, 900, "sorted")
    w0, w1 = rng.integers(1, 4, 700).astype(np.float64), rng.integers(1, 4, 900).astype(np.float64)
    h = tally.Histogram([A.Regular(10, -3, 7), A.StrCategory(["s1"], growth=True)], storage="weight", label="t")
    h.fill(x0, c0, weight=w0)
    want = h.copy().fill(x1, c1, weight=w1)
    result = td.fill(h, lazy(x1, 100), lazy(c1, 100), weight=lazy(w1, 100))
    h.fill(x0[:5], c0[:5], weight=w0[:5])  # after the graph is made: not in it
    kept = h.copy()
    got = result.compute()
    assert got == want and got.label == "t" and got.samples == 1600
    assert h == kept and h.samples == 705


def test_one_nd_array_and_many_dimensional_samples(rng):
    # An (N, D) array for D axes, chunked along both axes; a 1-D histogram of a 2-D array.
    xy = np.stack([samples(rng, "f64", 2000, "skewed"), samples(rng, "f64", 2000, "hot")], axis=1)
    h = tally.Histogram([A.Regular(8, -3, 7), A.Variable([-3, 0, 0.7, 0.8, 7])], flow=True)
    got = td.fill(h, da.from_array(xy, chunks=(300, 1))).compute()
    assert got == h.copy().fill(xy)
    grid = samples(rng, "i32", 60 * 50, "uniform", 0, 20).reshape(60, 50)
    w = rng.integers(1, 5, grid.shape).astype(np.float64)
    h1 = tally.Histogram(A.Integer(0, 20), weighted=True)
    got = td.fill(h1, da.from_array(grid, chunks=(7, 13)), weight=da.from_array(w, chunks=(20, 20))).compute()
    assert got == h1.copy().fill(grid, weight=w)
    np.testing.assert_array_equal(got.values(), np.bincount(grid.ravel(), w.ravel(), 20))


def test_channels(rng):
    pixels = samples(rng, "u8", 3 * 4000, "skewed", 0, 16).reshape(4000, 3)
    h = tally.Histogram(A.Integer(0, 16), channels=3)
    got = td.fill(h, da.from_array(pixels, chunks=(333, 2))).compute()
    np.testing.assert_array_equal(got.values(), np.stack([np.bincount(pixels[:, c], minlength=16) for c in range(3)]))


@pytest.mark.filterwarnings("ignore:Dask currently has limited support for converting pandas extension dtypes")
def test_dataframe_columns_and_frames(rng):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    n = 5000
    frame = pd.DataFrame({"x": samples(rng, "f64", n, "skewed"), "name": _strings(rng, n, "sorted"),
                          "k": _ints(rng, n, "hot"), "w": rng.integers(1, 9, n).astype(np.float64)})
    df = dd.from_pandas(frame, npartitions=5)
    h = tally.Histogram([A.Regular(12, -3, 7), A.StrCategory(["s2"], growth=True), A.Integer(0, 10, growth=True)],
                        storage="weight")
    want = h.copy().fill(frame["x"].to_numpy(), frame["name"].to_numpy(), frame["k"].to_numpy(),
                         weight=frame["w"].to_numpy())
    assert td.fill(h, df["x"], df["name"], df["k"], weight=df["w"]).compute() == want
    assert td.fill(h, df[["x", "name", "k"]], weight=df["w"], split_every=2).compute() == want
    # A column beside a Dask array of other chunks: the column's sizes are computed, then rechunked.
    w = da.from_array(frame["w"].to_numpy(), chunks=777)
    assert td.fill(h, df["x"], df["name"], df["k"], weight=w).compute() == want
    m = tally.Histogram(A.IntCategory([0], growth=True), storage="mean")
    got = td.fill(m, df["k"], sample=df["x"]).compute()
    assert_like_one_fill(got, m.copy().fill(frame["k"].to_numpy(), sample=frame["x"].to_numpy()), exact=False)


def test_errors_before_anything_is_computed(rng):
    x = da.from_array(samples(rng, "f64", 100, "uniform"), chunks=30)
    h = tally.Histogram(A.Regular(4, 0, 1))
    with pytest.raises(TypeError, match="dask array"):
        td.fill(h, np.arange(5.0))
    with pytest.raises(TypeError, match="dask array"):
        td.fill(tally.Histogram(A.Regular(4, 0, 1), weighted=True), x, weight=np.ones(100))
    with pytest.raises(TypeError, match="tally.Histogram"):
        td.fill(bh.Histogram(bh.axis.Regular(4, 0, 1)), x)
    with pytest.raises(TypeError, match="needs data"):
        td.fill(h)
    with pytest.raises(ValueError, match="unweighted"):
        td.fill(h, x, weight=x)
    with pytest.raises(ValueError, match="needs sample="):
        td.fill(tally.Histogram(A.Regular(4, 0, 1), storage="mean"), x)
    with pytest.raises(ValueError, match="sample= is for"):
        td.fill(h, x, sample=x)
    with pytest.raises(ValueError, match="takes 2 arrays"):
        td.fill(tally.Histogram([A.Regular(4, 0, 1)] * 2), x, x, x)
    with pytest.raises(TypeError, match="unsupported dtype"):
        td.fill(h, da.from_array(np.array(["a", "b"]), chunks=1))
    with pytest.raises(ValueError, match="100 and 99 samples"):
        td.fill(tally.Histogram([A.Regular(4, 0, 1)] * 2), x, x[1:])
    with pytest.raises(ValueError, match="split_every"):
        td.fill(h, x, split_every=1)
    with pytest.raises(ValueError, match="one dask array of interleaved pixels"):
        td.fill(tally.Histogram(A.Integer(0, 4), channels=3), x, x)


def test_chunk_layout_is_the_templates_with_one_thread():
    # Each chunk fills an empty histogram of the template's axes and options, one CPU thread.
    ones = np.ones(3)
    for options, fill in ((dict(), {}), (dict(storage="weight", flow=True), dict(weight=ones)),
                          (dict(storage="weighted_mean"), dict(weight=ones, sample=ones)),
                          (dict(weighted=True, exact_sums=True, count_bits=32, device="cpu", strategy="cpu_private"),
                           dict(weight=ones)),
                          (dict(channels=3, count_bits=32), None)):
        h = tally.Histogram(A.Integer(0, 4), threads=2, **options)
        h.fill(np.array([[1, 2, 3]] * 3)) if fill is None else h.fill(np.arange(3), **fill)
        empty = h.copy()
        empty.reset()
        part = td._Layout(h).empty()
        assert part == empty and repr(part) == repr(empty)
        plan, want = part.plan(np.int32, 10**7), empty.plan(np.int32, 10**7)
        assert plan["strategy"] == want["strategy"] and plan["threads"] == 1


def test_on_a_process_cluster(rng):
    # Workers in other processes: the layout, the blocks and the partial histograms are pickled.
    distributed = pytest.importorskip("distributed")
    a, names = samples(rng, "f32", 20000, "skewed"), _strings(rng, 20000, "sorted")
    w = rng.integers(0, 10, a.size).astype(np.float64)
    h = tally.Histogram([A.Regular(30, -3, 7, edge_type=np.float32), A.StrCategory(["s9"], growth=True)],
                        storage="weight", flow=True)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        got = client.compute(td.fill(h, lazy(a, 1500), lazy(names, 2500), weight=lazy(w, 1000))).result()
    assert got == h.copy().fill(a, names, weight=w)


def test_docstring_example_runs():
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    for test in doctest.DocTestFinder().find(td.fill, "fill", globs={}):
        runner.run(test)
    failed, attempted = runner.summarize(verbose=False)
    assert attempted > 0 and failed == 0


# ---- cupy chunks on a GPU, as a dask-cuda worker holds them (skipped where no GPU is) ----

@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("kinds", [("regular",), ("regular_log", "int_category_growth"), ("integer_growth", "boolean"),
                                   ("variable", "int_category")])
def test_cupy_chunks_fill_on_the_gpu(cupy, on_gpu, kinds, storage, rng):
    # Threads of this process as the workers (dask-cuda runs a GPU's tasks on threads too).
    for dist in DISTRIBUTIONS:
        columns = [AXES[k][2](rng, 20011, dist) for k in kinds]
        more = extras(rng, storage, 20011, whole=True)
        h = template(kinds, storage)
        got = td.fill(h, *[gpu_chunks(cupy, c, rng, 6) for c in columns],
                      **{k: gpu_chunks(cupy, v, rng, 4) for k, v in more.items()}).compute()
        assert got == h.copy().fill(*columns, **more)
    assert on_gpu and set(on_gpu) == {"cupy"}

"""tally.Histogram as boost-histogram users handle one: fill returns the histogram, arithmetic by
scalars and histograms, sum() of a list, sum(), view() and np.asarray, each compared with
boost-histogram's own result on the same fills (Int64 storage for counts, Double for sums)."""

import pickle

import numpy as np
import pytest

import tally
from conftest import DISTRIBUTIONS, assert_same_array, require_cuda_backend, samples

bh = pytest.importorskip("boost_histogram")

AXIS = (16, -3.0, 7.0)


def both(rng, distribution, weighted=False, flow=True):
    """A tally histogram and a boost-histogram one, filled with the same fresh samples."""
    x = samples(rng, "f64", 5000, distribution, -4.0, 8.0)  # some beyond the axis, both sides
    w = rng.uniform(-1, 3, x.size) if weighted else None
    h = tally.Histogram(tally.axis.regular(*AXIS), weighted=weighted, flow=flow)
    b = bh.Histogram(bh.axis.Regular(*AXIS), storage=bh.storage.Double() if weighted else bh.storage.Int64())
    if weighted:
        assert h.fill(x, weight=w) is h
        b.fill(x, weight=w)
    else:
        assert h.fill(x) is h
        b.fill(x)
    return h, b


def same(h, b):
    """h holds b's cells, as int64 counts or float64 sums. Where boost-histogram keeps Int64
    (a difference of counts, which may be negative), tally gives Double: tally's counts are
    unsigned."""
    want = b.values()
    assert_same_array(h.values(), want.astype(np.float64 if h._hists[0].weighted else np.int64))


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_scalar_arithmetic_matches_boost_histogram(rng, distribution, weighted):
    h, b = both(rng, distribution, weighted)
    for k in (3, 2.5, -0.75):
        same(h * k, b * k)
        same(k * h, k * b)
        same(h / k, b / k)
    # numpy scalars: on the left, numpy defers to tally's operators (boost-histogram's becomes
    # an array there).
    same(h * np.float32(1.5), b * np.float32(1.5))
    same(np.float64(2.5) * h, b * 2.5)
    same(np.int64(2) * h, b * 2)
    with np.errstate(divide="ignore", invalid="ignore"):  # inf and nan, as boost-histogram's
        same(h / 0.0, b / 0.0)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_histogram_arithmetic_matches_boost_histogram(rng, distribution):
    (h1, b1), (h2, b2) = both(rng, distribution), both(rng, "uniform")
    same(h1 - h2, b1 - b2)
    same(h1 * h2, b1 * b2)
    same(h1 / h2, b1 / b2)
    same(sum([h1, h2, h1]), sum([b1, b2, b1]))
    (w1, c1), (w2, c2) = both(rng, distribution, True), both(rng, "hot", True)
    same(w1 - w2, c1 - c2)
    same(w1 / w2, c1 / c2)
    same(sum([w1, w2]), sum([c1, c2]))


def test_counts_times_an_integer_stay_counts(rng):
    h, _ = both(rng, "skewed")
    tripled = h * 3
    assert not tripled._hists[0].weighted
    assert_same_array(tripled.values(), h.values() * 3)
    assert tripled.flow == {k: 3 * v for k, v in h.flow.items()} and tripled.samples == 3 * h.samples
    assert (h * 0).sum() == 0
    with pytest.raises(ValueError, match="unsigned"):
        h * -2
    big = tally.Histogram(tally.axis.integer(0, 2)).fill(np.zeros(3, np.int64))
    with pytest.raises(OverflowError):
        big * (2**63)
    doubled = h * 2.0  # a float: Double, without flow counters or samples (boost-histogram's Double)
    assert doubled._hists[0].weighted and doubled.samples == 0
    with pytest.raises(ValueError, match="flow=True"):
        doubled.flow


def test_arithmetic_refuses_what_it_cannot_do(rng):
    h, _ = both(rng, "uniform")
    other = tally.Histogram(tally.axis.regular(16, -3.0, 7.5)).fill(np.array([0.0]))
    for op in (lambda: h - other, lambda: h * other, lambda: h / other):
        with pytest.raises(ValueError, match="axes differ"):
            op()
    with pytest.raises(TypeError):
        h - 1.0
    with pytest.raises(TypeError):
        h * "2"
    with pytest.raises(TypeError):
        sum([h], 1)
    with pytest.raises(TypeError):
        np.zeros(16) + h
    rgb = tally.Histogram(tally.axis.integer(0, 4), channels=3).fill(np.array([[0, 1, 3], [1, 1, 2]], np.uint8))
    assert_same_array((rgb * 2).values(), rgb.values() * 2)
    with pytest.raises(ValueError, match="channel"):
        rgb * 0.5


def test_exact_sums_scale_as_their_rounded_values(rng):
    x = samples(rng, "f64", 3000, "hot", -3.0, 7.0)
    w = rng.uniform(-1, 1, x.size) * 2.0 ** rng.integers(-40, 40, x.size)
    h = tally.Histogram(tally.axis.regular(*AXIS), weighted=True, exact_sums=True).fill(x, weight=w)
    assert_same_array((h * 0.1).values(), h.values() * 0.1)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_sum_view_and_asarray(rng, distribution):
    h, b = both(rng, distribution)
    assert h.sum() == b.sum() and isinstance(h.sum(), int)
    assert h.sum(flow=True) == b.sum(flow=True) == h.samples
    assert_same_array(h.view(), h.values())
    assert_same_array(np.asarray(h), h.values())
    assert np.asarray(h, np.float64).dtype == np.float64
    assert h.view(flow=True).sum() == h.samples  # 1-D counts: the flow counters as flow bins
    w, c = both(rng, distribution, weighted=True)
    assert w.sum() == pytest.approx(c.sum(), rel=1e-12) and isinstance(w.sum(), float)
    with pytest.raises(ValueError, match="samples, not"):
        w.sum(flow=True)
    no_flow, _ = both(rng, distribution, flow=False)
    with pytest.raises(ValueError, match="flow=True"):
        no_flow.sum(flow=True)
    rgb = tally.Histogram(tally.axis.integer(0, 4), channels=3).fill(np.array([[0, 1, 3], [1, 1, 2]], np.uint8))
    assert rgb.sum().tolist() == [2, 2, 2]


def test_fill_returns_the_histogram_for_chaining(rng):
    x = samples(rng, "f32", 1000, "sorted")
    h = tally.Histogram(tally.axis.regular(8, -3, 7))
    assert h.fill(x).fill(x) is h and h.samples == 2000
    rgb = tally.Histogram(tally.axis.integer(0, 256), channels=3)
    assert rgb.fill(rng.integers(0, 256, (10, 3), dtype=np.uint8)) is rgb


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_cuda_histograms_combine_as_cpu_ones(rng, distribution):
    require_cuda_backend()
    x, y = samples(rng, "f32", 100_000, distribution), samples(rng, "f32", 50_000, "uniform")
    made = {d: [tally.Histogram(tally.axis.regular(*AXIS), flow=True, device=d).fill(v) for v in (x, y)]
            for d in ("cpu", "cuda")}
    for op in (lambda a, b: a * 3, lambda a, b: a * 0.5, lambda a, b: a - b, lambda a, b: a / b,
               lambda a, b: sum([a, b])):
        gpu, cpu = op(*made["cuda"]), op(*made["cpu"])
        assert_same_array(gpu.values(), cpu.values())
        assert gpu.samples == cpu.samples
    assert made["cuda"][0].sum(flow=True) == x.size


# ---- Weight storage: sums of weights and of their squares ----

def weight_pair(rng, distribution, dyadic, exact_sums=False, n=4000):
    """A tally Weight histogram and boost-histogram's, filled alike. Dyadic weights (k / 8) sum
    exactly in any order, so every cell compares bit for bit; others compare within rounding."""
    x = samples(rng, "f64", n, distribution, -4.0, 8.0)
    w = rng.integers(-16, 40, n) / 8 if dyadic else rng.normal(1.0, 0.7, n)
    h = tally.Histogram(tally.axis.regular(*AXIS), storage="weight", exact_sums=exact_sums)
    b = bh.Histogram(bh.axis.Regular(*AXIS, underflow=False, overflow=False), storage=bh.storage.Weight())
    assert h.fill(x, weight=w) is h
    b.fill(x, weight=w)
    return h, b, x, w


def same_weight(h, b, exact=True):
    got = (h.values(), h.variances())
    want = (b.values(), b.variances())
    for g, v in zip(got, want):
        if exact:
            assert_same_array(g, v)
        else:
            np.testing.assert_allclose(g, v, rtol=1e-12)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_weight_storage_matches_boost_histogram(rng, distribution):
    h, b, x, w = weight_pair(rng, distribution, dyadic=True)
    same_weight(h, b)
    # The sums of squares against a brute-force reference, and UHI's effective counts.
    cells = np.floor((x - AXIS[1]) / (AXIS[2] - AXIS[1]) * AXIS[0]).astype(int)
    inside = (cells >= 0) & (cells < AXIS[0])
    want = np.bincount(cells[inside], (w * w)[inside], AXIS[0])
    assert_same_array(h.variances(), want)
    sw, sw2 = h.values(), h.variances()
    assert_same_array(h.counts(), np.divide(sw * sw, sw2, out=np.zeros_like(sw), where=sw2 != 0))
    assert h.kind == "COUNT" and h.sum() == tally.WeightedSum(sw.sum(), sw2.sum())
    view = h.view()
    assert view.dtype.names == ("value", "variance") and np.array_equal(np.asarray(h), view)
    assert_same_array(view["value"], sw)
    # Arithmetic as boost-histogram's: sums, scaling (variances by the square), no -, *, / of two.
    same_weight(h + h, b + b)
    same_weight(sum([h, h, h]), sum([b, b, b]))
    same_weight(h * 2.5, b * 2.5)
    same_weight(3 * h, 3 * b)
    same_weight(h / 4, b / 4)
    for op in (lambda: h - h, lambda: h * h, lambda: h / h):
        with pytest.raises(TypeError, match="Weight storage"):
            op()
    # boost-histogram and back, copies, pickles.
    same_weight(h, h.to_boost())
    back = tally.Histogram.from_boost(b)  # boost-histogram's Weight counts no samples
    same_weight(back, b)
    assert back.samples == 0 and back.to_boost() == b
    assert h.copy() == h and pickle.loads(pickle.dumps(h)) == h
    h2 = h.copy().fill(x[:10], weight=w[:10])
    assert h2 != h and h2.samples == h.samples + 10


def test_weight_storage_of_arbitrary_weights_in_parts_merges_exactly(rng):
    """With exact sums, Weight fills of parts merged in any order equal one fill bit for bit,
    and equal boost-histogram's within its own (sequential) rounding."""
    h, b, x, w = weight_pair(rng, "skewed", dyadic=False, exact_sums=True)
    same_weight(h, b, exact=False)
    parts = [tally.Histogram(tally.axis.regular(*AXIS), storage="weight", exact_sums=True).fill(xs, weight=ws)
             for xs, ws in zip(np.array_split(x, 5), np.array_split(w, 5))]
    assert sum(parts[::-1]) == h
    f32 = tally.Histogram(tally.axis.regular(*AXIS), storage="weight").fill(x, weight=w.astype(np.float32))
    w32 = w.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(f32.variances().sum(), np.sum(w32[(x >= AXIS[1]) & (x <= AXIS[2])] ** 2),
                               rtol=1e-12)


def test_weight_storage_without_weights_and_errors(rng):
    x = samples(rng, "f32", 1000, "hot")
    h = tally.Histogram(tally.axis.regular(*AXIS), storage="weight").fill(x)  # weight 1 each
    assert_same_array(h.values(), h.variances())
    assert_same_array(h.values(), tally.histogram(x, AXIS[0], AXIS[1:])[0].astype(np.float64))
    assert "storage='weight'" in repr(h)
    with pytest.raises(ValueError, match="storage"):
        tally.Histogram(tally.axis.regular(*AXIS), storage="median")
    with pytest.raises(ValueError, match="weight"):
        h += tally.Histogram(tally.axis.regular(*AXIS), weighted=True)
    with pytest.raises(ValueError, match="samples, not"):
        tally.Histogram(tally.axis.regular(*AXIS), storage="weight", flow=True).fill(x).sum(flow=True)
    with pytest.raises(ValueError, match="unweighted"):
        tally.Histogram(tally.axis.regular(*AXIS)).fill(x, weight=x)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_cuda_weight_storage_equals_the_cpus(rng, torch, distribution):
    """Squares of f32 weights taken on the GPU (torch, in float64) and summed exactly give the
    CPU's cells bit for bit."""
    require_cuda_backend()
    x = samples(rng, "f32", 200_000, distribution)
    w = (rng.normal(size=x.size) * 2.0 ** rng.integers(-20, 20, x.size)).astype(np.float32)
    make = lambda device: tally.Histogram(tally.axis.regular(*AXIS), storage="weight", exact_sums=True, device=device)
    cpu = make("cpu").fill(x, weight=w)
    gpu = make("cuda").fill(torch.from_numpy(x).cuda(), weight=torch.from_numpy(w).cuda())
    assert_same_array(gpu.values(), cpu.values())
    assert_same_array(gpu.variances(), cpu.variances())


# ---- UHI indexing and projections, against boost-histogram on axes without flow bins ----

def nd_pair(rng, distribution, storage):
    """A 3-D tally histogram and boost-histogram's (no flow bins: tally keeps counters)."""
    cols = [samples(rng, "f64", 6000, distribution, -1.0, 9.0), rng.integers(-1, 5, 6000),
            rng.uniform(0, 1, 6000) ** 2]
    w = rng.integers(-8, 24, 6000) / 4  # dyadic: sums exact in any order
    no_flow = dict(underflow=False, overflow=False)
    axes = [tally.axis.Regular(8, 0, 8, **no_flow), tally.axis.Integer(0, 4, **no_flow),
            tally.axis.Variable([0, 0.1, 0.3, 0.35, 0.9, 1], **no_flow)]
    baxes = [bh.axis.Regular(8, 0, 8, **no_flow), bh.axis.Integer(0, 4, **no_flow),
             bh.axis.Variable([0, 0.1, 0.3, 0.35, 0.9, 1], **no_flow)]
    bstorage = {None: bh.storage.Int64(), "double": bh.storage.Double(), "weight": bh.storage.Weight()}[storage]
    h = tally.Histogram(axes, storage=storage, flow=storage is None)
    b = bh.Histogram(*baxes, storage=bstorage)
    if storage is None:
        h.fill(*cols)
        b.fill(*cols)
    else:
        h.fill(*cols, weight=w)
        b.fill(*cols, weight=w)
    return h, b


KEYS = [
    (3, 1, 0), (-1, 0, -2), (bh.loc(2.5), 2, bh.loc(0.31)),
    (slice(2, 6), 1, slice(None)), (slice(None), slice(1, 3), slice(None, None, sum)),
    (slice(None, None, bh.rebin(2)), ..., slice(None, None, sum)), (slice(1, 8, bh.rebin(3)), 0, 1),
    ({2: slice(None, None, sum), 0: 4}), (..., 2), (slice(None, None, sum), slice(None, None, sum), 1),
    (slice(bh.loc(1.5), bh.loc(6.5)), slice(None, None, sum), slice(None, None, sum)),
    (slice(2, 7, sum), 1, slice(None, None, sum)),
]


def same_cells(got, want, counting):
    if isinstance(want, bh.Histogram):
        assert isinstance(got, tally.Histogram)
        for g, b in zip(got.axes, want.axes):  # boost-histogram's regular edges round differently
            np.testing.assert_allclose(g.edges, b.edges, rtol=1e-15, atol=1e-15)
        same_weight(got, want) if want.storage_type is bh.storage.Weight else same(got, want)
    elif hasattr(want, "variance"):
        assert got == tally.WeightedSum(want.value, want.variance)
    else:  # a count comes back an int (boost-histogram's sums of Int64 cells are floats)
        assert got == want and isinstance(got, int if counting else float), (got, want)


@pytest.mark.parametrize("storage", [None, "double", "weight"])
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_uhi_indexing_matches_boost_histogram(rng, distribution, storage):
    h, b = nd_pair(rng, distribution, storage)
    counting = storage is None
    for key in KEYS:
        same_cells(h[key], b[key], counting)
    for axes in [(0,), (2,), (1, 2), (2, 0), (2, 1, 0), (0, 1, 2)]:
        same_cells(h.project(*axes), b.project(*axes), counting)
    same_cells(h[::4j, 3, 2], b[::bh.rebin(4), 3, 2], counting)  # hist's rebin by a complex step


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_slices_of_counts_move_what_they_leave_out_to_the_flow_bins(rng, distribution):
    cols = [samples(rng, "f64", 6000, distribution, -1.0, 9.0), rng.integers(-1, 5, 6000), rng.uniform(-0.2, 1.2, 6000)]
    cols[0][::101] = np.nan
    h = tally.Histogram([tally.axis.Regular(8, 0, 8), tally.axis.Integer(0, 4),
                         tally.axis.Variable([0, 0.1, 0.3, 0.35, 0.9, 1])], flow=True).fill(*cols)
    b = bh.Histogram(bh.axis.Regular(8, 0, 8), bh.axis.Integer(0, 4), bh.axis.Variable([0, 0.1, 0.3, 0.35, 0.9, 1]),
                     storage=bh.storage.Int64()).fill(*cols)
    assert_same_array(h.values(flow=True), b.values(flow=True).astype(np.int64))  # NaN in overflow, as boost's
    for key in [(slice(2, 6), sum, sum), (slice(1, 8, bh.rebin(3)), slice(None), sum), (sum, slice(1, 3), 2),
                (1, slice(None), slice(None)), (bh.underflow, bh.overflow, slice(None)), (slice(None), sum, sum)]:
        got, want = h[key], b[key]
        assert_same_array(got.values(flow=True), want.values(flow=True).astype(np.int64))
    inside = h[2:6, ::sum, ::sum]  # every sample kept: in the bins or the flow bins
    assert inside.sum(flow=True) == h.sum(flow=True) == h.samples == inside.samples
    integer = h[::sum, 1:3, ::sum]
    assert integer.axes[0].kind == "integer" and integer.axes[0].edges.tolist() == [1, 2, 3]


def test_indexing_errors(rng):
    h, _ = nd_pair(rng, "uniform", None)
    with pytest.raises(IndexError, match="bin 8"):
        h[8, 0, 0]
    with pytest.raises(IndexError, match="flow bins"):
        h[bh.underflow, 0, 0]
    with pytest.raises(IndexError, match="flow bins"):
        h[bh.loc(99.0), 0, 0]
    with pytest.raises(IndexError, match="too many"):
        h[0, 0, 0, 0]
    with pytest.raises(IndexError, match="step"):
        h[::2]
    with pytest.raises(ValueError, match="distinct axes"):
        h.project(0, 0)
    with pytest.raises(ValueError, match="distinct axes"):
        h.project(3)
    with pytest.raises(TypeError, match="channel"):
        tally.Histogram(tally.axis.integer(0, 4), channels=3)[0]


@pytest.mark.parametrize("storage", [None, "double", "weight"])
def test_setting_cells_matches_boost_histogram(rng, storage):
    h, b = nd_pair(rng, "uniform", storage)
    pair = storage == "weight"
    keys = [(3, 1, 0), (slice(2, 5), 0, slice(None)), (bh.loc(6.5), ..., 4), ({1: 2}), (...,)]
    for n, key in enumerate(keys):
        picked = h[key]
        shape = picked.values().shape if isinstance(picked, tally.Histogram) else ()
        value = np.full(shape + ((2,) if pair else ()), n + 1.5 if storage else n + 2)
        h[key] = value
        b[key] = value
        same_cells(h, b, storage is None)
    assert h.samples == 6000
    with pytest.raises(IndexError, match="without a step"):
        h[::bh.rebin(2), 0, 0] = 1
    if storage is None:
        with pytest.raises(ValueError, match="non-negative"):
            h[0, 0, 0] = -1
        with pytest.raises(ValueError, match="integers"):
            h[0, 0, 0] = 0.5


def test_locators_use_half_open_bins_and_selections_move_counts_to_the_flow_counters():
    t = tally.Histogram(tally.axis.integer(0, 4), flow=True).fill(np.array([0, 1, 2, 3]))
    b = bh.Histogram(bh.axis.Integer(0, 4), storage=bh.storage.Int64()).fill(np.array([0, 1, 2, 3]))
    same_cells(t[bh.loc(1):bh.loc(4)], b[bh.loc(1):bh.loc(4)], True)
    with pytest.raises(IndexError, match="flow bins"):
        t[bh.loc(4)]
    r = tally.Histogram(tally.axis.regular(4, 0, 4)).fill(np.array([0.5, 1.5, 2.5, 3.5]))
    assert r[:bh.loc(4.0)].values().tolist() == [1, 1, 1, 1]
    # Selecting a row leaves the others out; a slice of one row moves them to the flow bins.
    x, y = np.array([-5, 0.5, 1.5]), np.array([0.5, 0.5, 0.5])
    two = tally.Histogram([tally.axis.regular(2, 0, 2)] * 2, flow=True).fill(x, y)
    assert two[1, :].flow == {"underflow": 0, "overflow": 0, "nan": 0} and two[1, :].samples == 1
    assert two[1:2, ::sum].flow == {"underflow": 2, "overflow": 0, "nan": 0}
    assert two[1:2, ::sum].sum(flow=True) == two.samples == 3


def test_concurrent_fills_keep_every_sample_and_weight_pairs_together():
    import threading
    h = tally.Histogram(tally.axis.integer(0, 2))
    x = np.ones(1000, np.int64)

    def fills():
        for _ in range(300):
            h.fill(x)

    def sets():
        for _ in range(300):
            h[0] = 0

    threads = [threading.Thread(target=fills), threading.Thread(target=sets)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert h.values()[1] == 300 * 1000 and h.samples == 300 * 1000
    w = tally.Histogram(tally.axis.integer(0, 2), storage="weight")
    copies = []
    filler = threading.Thread(target=lambda: [w.fill(x, weight=np.full(1000, 2.0)) for _ in range(200)])
    filler.start()
    while filler.is_alive():
        copies.append(w.copy())
    filler.join()
    assert all(np.array_equal(c.variances(), 2 * c.values()) for c in copies)


def test_bad_cell_values_and_odd_cells_print():
    h = tally.Histogram(tally.axis.integer(0, 4))
    for bad in (1e20, np.inf, np.nan, -1, 0.5):
        with pytest.raises(ValueError, match="integers"):
            h[1] = bad
    assert h.values().tolist() == [0, 0, 0, 0]
    odd = tally.Histogram(tally.axis.regular(3, 0, 3), weighted=True)
    odd.fill(np.array([0.5, 1.5, 2.5]), weight=np.array([np.inf, 5e306, np.nan]))
    text = str(odd)
    assert text.splitlines()[1].endswith("inf") and "nan" in text.splitlines()[3]
    assert "<svg" in odd._repr_html_()
    grid = tally.Histogram([tally.axis.integer(0, 2)] * 2, weighted=True)
    grid.fill(np.array([0, 1]), np.array([0, 1]), weight=np.array([np.nan, 1.0]))
    assert grid._repr_html_().count("<rect") == 4 + 1

"""tally.Histogram as a UHI PlottableHistogram (checked with the uhi package's runtime protocols)
and its conversions to and from boost-histogram, compared with boost-histogram filled with the
same data."""

import pickle

import numpy as np
import pytest

import tally
from conftest import DISTRIBUTIONS, assert_same_array, samples

uhi_plottable = pytest.importorskip("uhi.typing.plottable")
bh = pytest.importorskip("boost_histogram")


def test_histogram_and_axes_satisfy_the_plottable_protocol(rng):
    x = rng.normal(0.5, 0.4, 5000)
    for h in (tally.Histogram(tally.axis.regular(20, 0, 1)),
              tally.Histogram([tally.axis.variable([0, 0.1, 0.5, 1]), tally.axis.integer(-2, 3)], weighted=True)):
        if h.ndim == 1:
            h.fill(x)
        else:
            h.fill(x, np.floor(x * 4), weight=x)
        assert isinstance(h, uhi_plottable.PlottableHistogram)
        assert h.kind == "COUNT"
        assert len(h.axes) == h.values().ndim
        for a, n in zip(h.axes, h.values().shape):
            assert isinstance(a, uhi_plottable.PlottableAxisGeneric)
            assert isinstance(a.traits, uhi_plottable.PlottableTraits)
            assert len(a) == n
        from uhi.numpy_plottable import ensure_plottable_histogram
        assert ensure_plottable_histogram(h) is h


def test_unweighted_counts_and_variances_are_the_counts(rng):
    h = tally.Histogram(tally.axis.regular(30, -3, 3))
    x = samples(rng, "f64", 4000, "skewed", -3.0, 3.0)
    h.fill(x)
    want, _ = np.histogram(x, bins=30, range=(-3, 3))
    np.testing.assert_array_equal(h.counts(), want)
    np.testing.assert_array_equal(h.variances(), want)
    np.testing.assert_array_equal(h.values(), want)


def test_weighted_histograms_have_no_variances_or_counts(rng):
    h = tally.Histogram(tally.axis.regular(10, 0, 1), weighted=True)
    h.fill(rng.random(100), weight=rng.random(100))
    assert h.variances() is None and h.counts() is None
    assert h.values().sum() > 0


def test_axis_bins_as_uhi_reads_them():
    edges = np.array([-1.5, 0.0, 0.25, 4.0])
    v = tally.axis.variable(edges)
    assert len(v) == 3
    assert v[0] == (-1.5, 0.0) and v[2] == (0.25, 4.0) and v[-1] == (0.25, 4.0)
    assert list(v) == [(-1.5, 0.0), (0.0, 0.25), (0.25, 4.0)]
    assert not v.traits.discrete and not v.traits.circular
    r = tally.axis.regular(7, 0.1, 0.8, "f32")
    pairs = list(r)
    e = r.edges
    assert pairs == [(e[i], e[i + 1]) for i in range(7)]  # exactly the edges the bin rule uses
    i = tally.axis.integer(-3, 2)
    assert i.traits.discrete and list(i) == [-3, -2, -1, 0, 1] and i[-1] == 1
    for bad in (3, -4):
        with pytest.raises(IndexError):
            v[bad]
    # The old interface is unchanged.
    assert_same_array(v.edges, edges)
    assert v.kind == "variable" and v.bins == 3
    # boost-histogram's axes read the same way.
    assert list(bh.axis.Integer(-3, 2)) == list(i)
    assert list(bh.axis.Variable(edges)) == list(v)


def same_data_in_both(rng, distribution, weighted):
    """A 2-D tally histogram and a boost-histogram one (Regular x Integer) of the same samples."""
    x = samples(rng, "f64", 5000, distribution, -1.0, 2.0)
    y = rng.integers(-3, 9, x.size)
    w = rng.standard_normal(x.size) if weighted else None
    t = tally.Histogram([tally.axis.variable(bh.axis.Regular(12, 0, 1).edges), tally.axis.integer(0, 6)],
                        weighted=weighted)
    t.fill(x, y.astype(np.float64), weight=w)
    b = bh.Histogram(bh.axis.Regular(12, 0, 1), bh.axis.Integer(0, 6),
                     storage=bh.storage.Double() if weighted else bh.storage.Int64())
    b.fill(x, y, weight=w) if weighted else b.fill(x, y)
    return t, b


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_to_and_from_boost_against_boost_filled_with_the_same_data(rng, distribution, weighted):
    t, b = same_data_in_both(rng, distribution, weighted)
    assert b.values().sum() != 0
    # tally -> boost: no flow bins where tally has no flow counters.
    tb = t.to_boost()
    assert tb.storage_type is (bh.storage.Double if weighted else bh.storage.Int64)
    assert all(not a.traits.underflow and not a.traits.overflow for a in tb.axes)
    if weighted:
        np.testing.assert_allclose(tb.values(), b.values(), rtol=1e-12, atol=1e-9)
    else:
        np.testing.assert_array_equal(tb.values(), b.values())
    np.testing.assert_array_equal(tb.axes[0].edges, b.axes[0].edges)
    np.testing.assert_array_equal(tb.axes[1].edges, b.axes[1].edges)
    # boost -> tally: the inner cells; boost's flow bins become the flow counters (unweighted).
    if weighted:
        with pytest.raises(ValueError, match="pass flow=False"):
            tally.Histogram.from_boost(b)
        back = tally.Histogram.from_boost(b, flow=False)
        assert_same_array(back.values(), np.asarray(b.values()))
        return
    back = tally.Histogram.from_boost(b)
    assert_same_array(back.values(), np.asarray(b.values()))
    assert back.samples == 5000
    full = b.values(flow=True)
    # Each cell in a flow bin counts once, under the first axis on whose flow bin it lies.
    want_under = full[0, :].sum() + full[1:-1, 0].sum()
    want_over = full[-1, :].sum() + full[1:-1, -1].sum()
    assert back.flow == {"underflow": want_under, "overflow": want_over, "nan": 0}
    assert want_under > 0 and want_over > 0


def test_1d_flow_round_trip_with_boost(rng):
    x = samples(rng, "f64", 3000, "uniform", -0.5, 1.5)
    x[::97] = np.nan
    t = tally.Histogram(tally.axis.regular(10, 0, 1), flow=True)
    t.fill(x)
    b = bh.Histogram(bh.axis.Regular(10, 0, 1))
    b.fill(x)
    tb = t.to_boost()
    np.testing.assert_array_equal(tb.values(flow=True), b.values(flow=True))  # NaN in overflow, as boost
    back = tally.Histogram.from_boost(tb)
    assert_same_array(back.values(), t.values())
    f = t.flow
    assert back.flow == {"underflow": f["underflow"], "overflow": f["overflow"] + f["nan"], "nan": 0}
    # An integer axis and u32 counts convert too; tally's own edges come back exactly.
    ti = tally.Histogram(tally.axis.integer(-2, 5), flow=True, count_bits=32)
    ti.fill(rng.integers(-4, 7, 500))
    back = tally.Histogram.from_boost(ti.to_boost(), count_bits=32)
    assert back == ti


def test_narrow_edges_convert_as_variable_axes_with_the_exact_edges():
    t = tally.Histogram(tally.axis.regular(9, 0.1, 0.7, "f16"))
    t.fill(np.linspace(0, 1, 101, dtype=np.float16))
    b = t.to_boost()
    assert isinstance(b.axes[0], bh.axis.Variable)
    assert_same_array(np.asarray(b.axes[0].edges), t.axes[0].edges)
    back = tally.Histogram.from_boost(b, flow=False)
    assert_same_array(back.values(), t.values())


def test_conversions_that_do_not_map_raise():
    with pytest.raises(ValueError, match="Unlimited storage"):
        tally.Histogram.from_boost(bh.Histogram(bh.axis.Regular(3, 0, 1), storage=bh.storage.Unlimited()))
    with pytest.raises(ValueError, match="growing Regular"):
        tally.Histogram.from_boost(bh.Histogram(bh.axis.Regular(3, 0, 1, growth=True)))
    with pytest.raises(TypeError, match="boost_histogram.Histogram"):
        tally.Histogram.from_boost(np.zeros(3))
    neg = bh.Histogram(bh.axis.Integer(0, 3), storage=bh.storage.Int64())
    neg[1] = -2
    with pytest.raises(ValueError, match="negative counts"):
        tally.Histogram.from_boost(neg)
    big = bh.Histogram(bh.axis.Integer(0, 3), storage=bh.storage.Int64())
    big[2] = 2**32
    with pytest.raises(ValueError, match="does not fit a 32-bit count"):
        tally.Histogram.from_boost(big, count_bits=32)
    with pytest.raises(ValueError, match="repeat|ascending"):
        tally.Histogram(tally.axis.variable([0, 1, 1, 2])).to_boost()
    nd = tally.Histogram([tally.axis.integer(0, 2), tally.axis.integer(0, 2)], weighted=True, flow=True)
    with pytest.raises(ValueError, match="pass flow=False"):  # flow counters of samples, not sums
        nd.to_boost()
    assert nd.to_boost(flow=False).values().shape == (2, 2)
    with pytest.raises(ValueError, match="channel"):
        tally.Histogram(tally.axis.integer(0, 4), channels=3).to_boost()


def test_axis_edges_centers_and_widths_are_arrays_as_boost_histograms():
    """boost-histogram's axes give edges, centers and widths as properties; tally's too, the
    centers each bin's midpoint computed without overflow (e_k + (e_k+1 - e_k) / 2)."""
    rng = np.random.default_rng(7)
    edges = np.sort(rng.uniform(-1e300, 1e300, 9))
    pairs = [(tally.axis.regular(7, -2.5, 4.0), bh.axis.Regular(7, -2.5, 4.0)),
             (tally.axis.variable(edges), bh.axis.Variable(edges)),
             (tally.axis.integer(-3, 5), bh.axis.Integer(-3, 5))]
    for t, b in pairs:
        assert_same_array(t.centers, t.edges[:-1] + (t.edges[1:] - t.edges[:-1]) / 2)
        assert_same_array(t.widths, np.diff(t.edges))
        scale = 1e-14 * np.abs(b.edges).max()  # the libraries round a bin's midpoint differently
        for got, want in [(t.edges, b.edges), (t.centers, b.centers), (t.widths, b.widths)]:
            np.testing.assert_allclose(got, want, rtol=1e-14, atol=scale)
    assert np.isfinite(pairs[1][0].centers).all()
    assert pairs[2][0].centers.tolist() == [k + 0.5 for k in range(-3, 5)]


def test_a_channel_histogram_is_not_plottable_but_each_channel_is(rng):
    pixels = rng.integers(0, 8, (500, 3)).astype(np.uint8)
    rgb = tally.Histogram(tally.axis.integer(0, 8), channels=3, flow=True).fill(pixels)
    assert not isinstance(rgb, uhi_plottable.PlottableHistogram)
    with pytest.raises(AttributeError, match="channel"):
        rgb.kind
    for c in range(3):
        one = rgb.channel(c)
        assert isinstance(one, uhi_plottable.PlottableHistogram)
        assert_same_array(one.values(), np.bincount(pixels[:, c], minlength=8))
        assert one.samples == 500 and one.flow == {"underflow": 0, "overflow": 0, "nan": 0}
    assert rgb.channel(-1) == rgb.channel(2)
    with pytest.raises(IndexError):
        rgb.channel(3)
    with pytest.raises(ValueError, match="not a channel"):
        tally.Histogram(tally.axis.integer(0, 8)).channel(0)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_one_dimensional_flow_bins_are_boost_histograms(rng, distribution):
    x = samples(rng, "f64", 3000, distribution, -2.0, 12.0)
    x[::97] = np.nan
    h = tally.Histogram(tally.axis.Regular(10, 0, 10), flow=True).fill(x)
    b = bh.Histogram(bh.axis.Regular(10, 0, 10), storage=bh.storage.Int64()).fill(x)
    want = b.values(flow=True).astype(np.int64)
    want[-2] += int(np.count_nonzero(x == 10.0))  # tally's last bin holds its right edge
    want[-1] -= int(np.count_nonzero(x == 10.0))
    for got in (h.values(flow=True), h.view(flow=True), h.counts(flow=True), h.variances(flow=True)):
        assert_same_array(got, want)
    for refused in (tally.Histogram(tally.axis.Regular(10, 0, 10)),
                    tally.Histogram([tally.axis.Integer(0, 2)] * 2, weighted=True, flow=True),
                    tally.Histogram(tally.axis.Regular(10, 0, 10), weighted=True, flow=True)):
        with pytest.raises(ValueError, match="flow bins"):
            refused.values(flow=True)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_n_dimensional_flow_bins_are_boost_histograms(rng, distribution):
    n = 5000
    x = samples(rng, "f64", n, distribution, -2.0, 12.0)
    x[::97] = np.nan
    k = rng.integers(-3, 6, n)
    names = np.array(["data", "mc", "other"])[rng.integers(0, 3, n)]
    flag = rng.random(n) < 0.3
    h = tally.Histogram([tally.axis.Regular(10, 0, 10), tally.axis.Integer(0, 3), tally.axis.StrCategory(["data", "mc"]),
                         tally.axis.Boolean()], flow=True)
    b = bh.Histogram(bh.axis.Regular(10, 0, 10), bh.axis.Integer(0, 3), bh.axis.StrCategory(["data", "mc"]),
                     bh.axis.Boolean(), storage=bh.storage.Int64())
    half = n // 2
    for part in (slice(0, half), slice(half, n)):
        h.fill(x[part], k[part], names[part], flag[part])
        b.fill(x[part], k[part], names[part], flag[part])
    assert not (x == 10.0).any()  # tally's last bin holds its right edge, boost's overflow does
    want = b.values(flow=True).astype(np.int64)
    assert_same_array(h.values(flow=True), want)
    assert_same_array(h.values(), b.values().astype(np.int64))
    assert_same_array(h.project(0, 2).values(flow=True), b.project(0, 2).values(flow=True).astype(np.int64))
    assert_same_array(h.to_boost().values(flow=True), want)
    assert_same_array(tally.Histogram.from_boost(b).values(flow=True), want)
    assert h.samples == n and h.sum(flow=True) == n
    # The totals count a sample under the first axis it falls outside, as the counters do.
    reasons = np.select([np.isnan(x), x < 0, x > 10, k < 0, k >= 3, ~np.isin(names, ["data", "mc"])],
                        ["nan", "underflow", "overflow", "underflow", "overflow", "overflow"], "")
    assert h.flow == {r: int(np.count_nonzero(reasons == r)) for r in ("underflow", "overflow", "nan")}
    assert pickle.loads(pickle.dumps(h)) == h and h.copy() == h
    assert_same_array((h + h).values(flow=True), 2 * h.values(flow=True))


def test_flow_bins_of_growing_axes_move_with_their_bins(rng):
    names = np.array(["b", "a", "c"])[rng.integers(0, 3, 400)]
    y = rng.normal(1.5, 1.5, 400)
    h = tally.Histogram([tally.axis.StrCategory(["a"], growth=True), tally.axis.Regular(6, 0, 3)], flow=True)
    b = bh.Histogram(bh.axis.StrCategory(["a"], growth=True), bh.axis.Regular(6, 0, 3), storage=bh.storage.Int64())
    for hist in (h, b):
        hist.fill(names[:200], y[:200]).fill(names[200:], y[200:]).fill(["z"], [9.0])
    assert h.axes[0].categories == list(b.axes[0])
    assert_same_array(h.values(flow=True), b.values(flow=True).astype(np.int64))


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_cuda_flow_bins_equal_the_cpus(rng, torch, distribution):
    n = 30000
    x = samples(rng, "f32", n, distribution, -2.0, 12.0)
    x[::97] = np.nan
    y = samples(rng, "f64", n, distribution, -1.0, 4.0)
    made = {}
    for device in ("cpu", "cuda"):
        h = tally.Histogram([tally.axis.Regular(10, 0, 10), tally.axis.Variable([0, 1, 2.5, 3])], flow=True,
                            device=device)
        cols = (x, y) if device == "cpu" else (torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda())
        made[device] = h.fill(*cols)
    assert_same_array(made["cuda"].values(flow=True), made["cpu"].values(flow=True))
    assert made["cuda"].flow == made["cpu"].flow and made["cuda"].samples == n

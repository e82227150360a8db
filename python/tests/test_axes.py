"""tally.axis' boost-histogram axes: IntCategory, StrCategory, Boolean, growth, transforms,
circular axes, labels and metadata. Each is filled with fresh samples of several distributions
and compared with boost-histogram's histogram of the same samples (its own binning, computed
independently), converted both ways, pickled, sliced, merged; CUDA fills equal the CPU's."""

import pickle

import numpy as np
import pytest

import tally
from conftest import DISTRIBUTIONS, assert_same_array, samples

bh = pytest.importorskip("boost_histogram")
A = tally.axis


def values_of(b):
    """boost-histogram's cells without flow bins, as tally's int64 counts."""
    return b.values().astype(np.int64)


def categories_like(rng, distribution, n, pool):
    """n draws from `pool` with the distribution's shape (a hot value, a skew, sorted)."""
    k = len(pool)
    if distribution == "hot":
        idx = np.where(rng.random(n) < 0.9, 0, rng.integers(0, k, n))
    elif distribution == "skewed":
        idx = np.minimum(rng.geometric(0.3, n) - 1, k - 1)
    else:
        idx = rng.integers(0, k, n)
        if distribution == "sorted":
            idx = np.sort(idx)
    return np.asarray(pool)[idx]


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_int_categories_count_as_boost_histograms(rng, distribution):
    pool = [7, -3, 12, 0, 5, 99]
    x = categories_like(rng, distribution, 4000, pool)
    h = tally.Histogram(A.IntCategory([5, 7, -3]), flow=True).fill(x)
    b = bh.Histogram(bh.axis.IntCategory([5, 7, -3]), storage=bh.storage.Int64()).fill(x)
    assert_same_array(h.values(), values_of(b))
    assert h.flow["overflow"] == int(b.values(flow=True)[-1]) and h.samples == x.size
    grown = tally.Histogram(A.IntCategory([5], growth=True)).fill(x)
    bg = bh.Histogram(bh.axis.IntCategory([5], growth=True), storage=bh.storage.Int64()).fill(x)
    assert grown.axes[0].categories == list(bg.axes[0])
    assert_same_array(grown.values(), values_of(bg))


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_string_categories_grow_in_boost_histograms_order(rng, distribution):
    pool = ["mc", "data", "sys_up", "sys_down", "other"]
    x = categories_like(rng, distribution, 3000, pool)
    h = tally.Histogram(A.StrCategory(["data", "mc"]), flow=True).fill(x)
    b = bh.Histogram(bh.axis.StrCategory(["data", "mc"]), storage=bh.storage.Int64()).fill(x)
    assert_same_array(h.values(), values_of(b))
    assert h.flow["overflow"] == int(b.values(flow=True)[-1])
    grown = tally.Histogram(A.StrCategory(["sys_up"], growth=True))
    bg = bh.Histogram(bh.axis.StrCategory(["sys_up"], growth=True), storage=bh.storage.Int64())
    for part in np.array_split(x, 3):  # growing across fills keeps the earlier cells
        grown.fill(list(part))
        bg.fill(part)
    assert grown.axes[0].categories == list(bg.axes[0])
    assert_same_array(grown.values(), values_of(bg))


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_two_dimensions_with_categories_and_weights_match_boost(rng, distribution):
    n = 5000
    x = samples(rng, "f64", n, distribution, -1.0, 11.0)
    c = categories_like(rng, distribution, n, ["a", "b", "c"])
    flag = rng.random(n) < 0.3
    w = rng.uniform(-1, 3, n)
    h = tally.Histogram([A.Regular(8, 0, 10), A.StrCategory(["b"], growth=True), A.Boolean()], storage="weight")
    b = bh.Histogram(bh.axis.Regular(8, 0, 10), bh.axis.StrCategory(["b"], growth=True), bh.axis.Boolean(),
                     storage=bh.storage.Weight())
    h.fill(x, list(c), flag, weight=w)
    b.fill(x, c, flag, weight=w)
    np.testing.assert_allclose(h.values(), b.values(), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(h.variances(), b.variances(), rtol=1e-12, atol=1e-9)
    assert h.axes[1].categories == list(b.axes[1])


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("transform", ["log", "sqrt", "pow"])
def test_transformed_regular_axes_bin_as_boost_histograms(rng, distribution, transform):
    x = samples(rng, "f64", 6000, distribution, 0.5, 120.0)
    ours = {"log": A.transform.log, "sqrt": A.transform.sqrt, "pow": A.transform.Pow(0.5)}[transform]
    theirs = {"log": bh.axis.transform.log, "sqrt": bh.axis.transform.sqrt, "pow": bh.axis.transform.Pow(0.5)}[transform]
    h = tally.Histogram(A.Regular(12, 1, 100, transform=ours)).fill(x)
    b = bh.Histogram(bh.axis.Regular(12, 1, 100, transform=theirs), storage=bh.storage.Int64()).fill(x)
    np.testing.assert_allclose(h.axes[0].edges, b.axes[0].edges, rtol=1e-13)
    np.testing.assert_allclose(h.axes[0].centers, b.axes[0].centers, rtol=1e-13)
    got, want = h.values(), values_of(b)
    # The one difference: tally's last bin holds its right edge (numpy's rule), boost's overflow does.
    want[-1] += int(np.count_nonzero(x == 100.0))
    assert_same_array(got, want)


def test_a_function_transform_bins_on_the_host():
    t = A.transform.Function(np.log10, lambda y: 10.0**y)
    h = tally.Histogram(A.Regular(3, 1, 1000, transform=t)).fill(np.array([2.0, 20, 200, 999, 5000]))
    assert h.values().tolist() == [1, 1, 2]
    np.testing.assert_allclose(h.axes[0].edges, [1, 10, 100, 1000])
    with pytest.raises(ValueError, match="compiled functions"):
        h.to_boost()


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_circular_axes_wrap_as_boost_histograms(rng, distribution):
    x = samples(rng, "f64", 5000, distribution, -720.0, 720.0)
    for ours, theirs in ((A.Regular(12, 0, 360, circular=True), bh.axis.Regular(12, 0, 360, circular=True)),
                         (A.Variable([0, 30, 100, 360], circular=True), bh.axis.Variable([0, 30, 100, 360], circular=True))):
        h = tally.Histogram(ours).fill(x)
        b = bh.Histogram(theirs, storage=bh.storage.Int64()).fill(x)
        assert_same_array(h.values(), values_of(b))
    k = np.floor(x).astype(np.int64)
    h = tally.Histogram(A.Integer(-2, 5, circular=True)).fill(k)
    assert_same_array(h.values(), np.bincount((k + 2) % 7, minlength=7))


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_a_growing_integer_axis_holds_every_integer(rng, distribution):
    x = np.floor(samples(rng, "f64", 3000, distribution, -50.0, 80.0)).astype(np.int64)
    h = tally.Histogram(A.Integer(0, 10, growth=True), flow=True)
    for part in np.array_split(x, 4):
        h.fill(part)
    lo, hi = min(0, int(x.min())), max(10, int(x.max()) + 1)
    assert (h.axes[0].lo, h.axes[0].hi) == (lo, hi)
    assert_same_array(h.values(), np.bincount(x - lo, minlength=hi - lo))
    assert h.samples == x.size and h.flow == {"underflow": 0, "overflow": 0, "nan": 0}


def test_boolean_axes_count_truth():
    x = np.array([0.0, 1.0, -2.5, np.nan, 0.0])
    assert tally.Histogram(A.Boolean()).fill(x).values().tolist() == [2, 3]
    assert tally.Histogram(A.Boolean()).fill(x != 0).values().tolist() == [2, 3]
    assert list(A.Boolean()) == [False, True] and A.Boolean().index(True) == 1


def test_labels_names_and_metadata_travel_everywhere():
    axes = [A.Regular(4, 0, 1, label="energy [GeV]", metadata={"unit": "GeV"}),
            A.StrCategory(["a", "b"], name="dataset"), A.IntCategory([1, 2], growth=True), A.Boolean(label="pass")]
    h = tally.Histogram(axes, label="hist", metadata=[1, 2])
    h.fill(np.array([0.1, 0.6]), ["a", "b"], np.array([2, 3]), np.array([True, False]))
    assert [a.label for a in h.axes] == ["energy [GeV]", "dataset", "", "pass"]
    assert h.axes[1].name == "dataset" and h.axes[0].metadata == {"unit": "GeV"}
    for other in (pickle.loads(pickle.dumps(h)), h.copy()):
        assert other == h and [a.label for a in other.axes] == [a.label for a in h.axes]
        assert other.metadata == [1, 2] and other.label == "hist" and other.axes[2].categories == [1, 2, 3]
    b = h.to_boost()
    assert b.axes[0].label == "energy [GeV]" and b.axes[0].metadata == {"unit": "GeV"}
    back = tally.Histogram.from_boost(b)
    assert back == h and back.axes[1].name == "dataset"
    assert "label='energy [GeV]'" in repr(h.axes[0]) and "name='dataset'" in repr(h.axes[1])
    assert pickle.loads(pickle.dumps(h.axes[2])) == h.axes[2]


def test_conversions_of_every_axis_round_trip_through_boost(rng):
    axes = [A.Regular(5, 1, 50, transform=A.transform.log), A.Regular(6, 0, 6, circular=True),
            A.Variable([0, 1, 5]), A.Integer(0, 3, growth=True), A.IntCategory([4, 2]),
            A.StrCategory(["x", "y"]), A.Boolean()]
    for ax in axes:
        h = tally.Histogram(ax)
        back = tally.Histogram.from_boost(h.to_boost(flow=False), flow=False).axes[0]
        if getattr(ax, "transform", None) is None:
            assert back == ax, ax
        else:  # boost keeps the transformed range; its edges back in x agree to rounding
            assert back.transform == ax.transform and back.bins == ax.bins
            np.testing.assert_allclose(back.edges, ax.edges, rtol=1e-14)


def test_category_axes_slice_select_and_project():
    h = tally.Histogram([A.StrCategory(["a", "b", "c"]), A.Integer(0, 3)])
    h.fill(["a", "b", "b", "c", "c", "c"], np.array([0, 1, 1, 2, 0, 2]))
    assert h[bh.loc("b"), :].values().tolist() == [0, 2, 0]
    sub = h[1:, :]
    assert sub.axes[0].categories == ["b", "c"] and sub.values().tolist() == [[0, 2, 0], [1, 0, 2]]
    assert h.project(0).values().tolist() == [1, 2, 3]
    with pytest.raises(IndexError, match="rebinned"):
        h[::2j, :]


def test_merging_grown_axes_takes_their_union_as_boost_histogram():
    # Growing axes that grew apart merge into their union: the left one's bins, then the right
    # one's new ones, as boost-histogram's merge; fixed axes must still be the same.
    a = tally.Histogram(A.StrCategory(["a"], growth=True)).fill(["a", "b"])
    b = tally.Histogram(A.StrCategory(["a"], growth=True)).fill(["a", "c", "c", "b"])
    ba = bh.Histogram(bh.axis.StrCategory(["a"], growth=True), storage=bh.storage.Int64()).fill(["a", "b"])
    bb = bh.Histogram(bh.axis.StrCategory(["a"], growth=True), storage=bh.storage.Int64()).fill(["a", "c", "c", "b"])
    for got, want in ((a + b, ba + bb), (b + a, bb + ba)):
        assert got.axes[0].categories == list(want.axes[0])
        assert got.values().tolist() == want.values().tolist() and got.samples == 6
    assert a.axes[0].categories == ["a", "b"] and b.axes[0].categories == ["a", "c", "b"]  # + leaves them
    c = tally.Histogram([A.Integer(0, 2, growth=True), A.IntCategory([5], growth=True)], storage="weight")
    d = c.copy()
    c.fill(np.array([0, 5]), np.array([5, 7]), weight=np.array([1.5, 2.0]))
    d.fill(np.array([-3, 1]), np.array([9, 7]), weight=np.array([0.5, 3.0]))
    whole = tally.Histogram([A.Integer(0, 2, growth=True), A.IntCategory([5], growth=True)], storage="weight")
    whole.fill(np.array([0, 5, -3, 1]), np.array([5, 7, 9, 7]), weight=np.array([1.5, 2.0, 0.5, 3.0]))
    c += d
    assert c == whole and c.axes[0] == A.Integer(-3, 6, growth=True) and c.axes[1].categories == [5, 7, 9]
    with pytest.raises(ValueError, match="axis 0 differs"):
        tally.Histogram(A.StrCategory(["a", "b"])) + tally.Histogram(A.StrCategory(["a", "c"]))
    with pytest.raises(ValueError, match="axis 0 differs"):
        a + tally.Histogram(A.StrCategory(["a"], growth=True, label="other")).fill(["c"])


def test_bad_axes_raise_clear_errors():
    with pytest.raises(ValueError, match="distinct"):
        A.IntCategory([1, 1])
    with pytest.raises(TypeError, match="integers"):
        A.IntCategory([1.5])
    with pytest.raises(TypeError, match="strings"):
        A.StrCategory([1])
    with pytest.raises(ValueError, match="growth"):
        A.Regular(4, 0, 1, growth=True)
    with pytest.raises(ValueError, match="not finite"):
        A.Regular(4, 0, 1, transform=A.transform.log)
    with pytest.raises(TypeError, match="transform"):
        A.Regular(4, 1, 2, transform=np.log)
    with pytest.raises(ValueError, match="channels"):
        tally.Histogram(A.IntCategory([1, 2]), channels=3)
    with pytest.raises(ValueError, match="exact sums"):
        tally.Histogram(A.Integer(0, 2, growth=True), weighted=True, exact_sums=True)
    with pytest.raises(TypeError, match="strings"):
        tally.Histogram(A.StrCategory(["a"])).fill(np.array([1, 2]))
    with pytest.raises(TypeError, match="tally.axis"):
        tally.Histogram("x")


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_cuda_fills_of_the_new_axes_equal_the_cpus(rng, torch, distribution):
    n = 20000
    cats = categories_like(rng, distribution, n, [3, 8, -1, 40])
    x = samples(rng, "f64", n, distribution, 0.5, 200.0)
    flag = rng.random(n) < 0.5
    ang = samples(rng, "f32", n, distribution, -400.0, 400.0)
    made = {}
    for device in ("cpu", "cuda"):
        axes = [A.IntCategory([8], growth=True), A.Regular(6, 1, 150, transform=A.transform.log), A.Boolean(),
                A.Regular(4, 0, 360, circular=True)]
        h = tally.Histogram(axes, device=device)
        cols = (cats, x, flag, ang)
        if device == "cuda":
            cols = [torch.from_numpy(np.ascontiguousarray(c)).cuda() for c in cols]
        made[device] = h.fill(*cols)
    assert made["cuda"].axes[0].categories == made["cpu"].axes[0].categories
    assert_same_array(made["cuda"].values(), made["cpu"].values())


def test_hist_users_convert_both_ways(rng):
    hist = pytest.importorskip("hist")
    x, c = rng.uniform(0, 10, 500), rng.choice(["mc", "data"], 500)
    t = hist.Hist.new.Reg(5, 0, 10, name="x", label="x [cm]").StrCat([], growth=True, name="ds").Weight()
    t.fill(x=x, ds=c, weight=np.full(500, 0.5))
    h = tally.Histogram.from_hist(t)
    assert [a.name for a in h.axes] == ["x", "ds"] and h.axes[0].label == "x [cm]"
    np.testing.assert_array_equal(h.values(), t.values())
    np.testing.assert_array_equal(h.variances(), t.variances())
    back = h.to_hist()
    assert isinstance(back, hist.Hist) and back.axes[0].label == "x [cm]" and list(back.axes[1]) == list(t.axes[1])
    np.testing.assert_array_equal(back.values(), t.values())


def _as_weight_view(h):
    """A Weight histogram's (values, variances), tally's or boost-histogram's."""
    return np.asarray(h.values()), np.asarray(h.variances())


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_scalars_broadcast_over_the_other_columns_as_boost_histograms(rng, distribution):
    n = 3000
    x = samples(rng, "f64", n, distribution, -1.0, 11.0)
    k = categories_like(rng, distribution, n, [0, 1, 2, 5])
    w = samples(rng, "f64", n, distribution, -2.0, 3.0)
    h = tally.Histogram([A.StrCategory(["ttbar"], growth=True), A.Regular(10, 0, 10), A.Integer(0, 4)],
                        storage=tally.storage.Weight())
    b = bh.Histogram(bh.axis.StrCategory(["ttbar"], growth=True), bh.axis.Regular(10, 0, 10), bh.axis.Integer(0, 4),
                     storage=bh.storage.Weight())
    for name, cut in (("ttbar", slice(0, 1000)), ("wjets", slice(1000, 2500)), ("ttbar", slice(2500, n))):
        for hist in (h, b):
            hist.fill(name, x[cut], k[cut], weight=w[cut])  # a scalar category beside arrays
            hist.fill(name, x[cut], 3, weight=0.5)  # and a scalar integer and a scalar weight
    assert h.axes[0].categories == list(b.axes[0])
    for got, want in zip(_as_weight_view(h), _as_weight_view(b)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert h.samples == 2 * n
    p = tally.Histogram([A.StrCategory(["a", "b"]), A.Regular(10, 0, 10)], storage="mean")
    bp = bh.Histogram(bh.axis.StrCategory(["a", "b"]), bh.axis.Regular(10, 0, 10), storage=bh.storage.Mean())
    for hist in (p, bp):
        hist.fill("b", x, sample=w).fill("a", 5.0, sample=2.0)  # every column a scalar: one sample
    np.testing.assert_allclose(p.view()["value"], bp.view()["value"], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(p.view()["count"], bp.view()["count"])
    # Only 0-d arrays broadcast; arrays of other shapes still must match.
    with pytest.raises(ValueError, match="differ in shape"):
        h.fill("ttbar", x, k[:10])


@pytest.mark.parametrize("storage", [None, "double", "weight", "mean", "weighted_mean"])
def test_zero_dimensional_histograms_are_boost_histograms(rng, storage):
    kinds = {None: bh.storage.Int64, "double": bh.storage.Double, "weight": bh.storage.Weight,
             "mean": bh.storage.Mean, "weighted_mean": bh.storage.WeightedMean}
    h, b = tally.Histogram([], storage=storage), bh.Histogram(storage=kinds[storage]())
    for _ in range(5):
        kw = {}
        if storage in ("double", "weight", "weighted_mean"):
            kw["weight"] = float(rng.normal())
            if storage == "weighted_mean":  # tally keeps a weighted mean's squared deltas >= 0
                kw["weight"] = abs(kw["weight"]) + 0.1
        if storage in ("mean", "weighted_mean"):
            kw["sample"] = float(rng.normal())
        h.fill(**kw)
        b.fill(**kw)
    assert h.ndim == 0 and h.axes == () and h.samples == 5 and np.asarray(h).shape == ()
    got, want = h.view(), b.view()
    for field in (want.dtype.names or [None]):
        g, w = (got, want) if field is None else (got[field], want[field])
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=1e-12, atol=1e-12)
    assert np.shape(h.values()) == np.shape(b.values()) == ()
    assert h.to_boost() == b or storage in ("mean", "weighted_mean")  # boost updates means sample by sample
    back = tally.Histogram.from_boost(h.to_boost())
    assert back.view().tolist() == h.view().tolist()
    assert pickle.loads(pickle.dumps(h)) == h
    with pytest.raises(TypeError, match="0-D"):
        h.fill(np.array([1.0]))


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_projecting_every_axis_away_leaves_a_zero_dimensional_total(rng, distribution):
    x, y = (samples(rng, "f64", 2000, distribution, 0.0, 3.9) for _ in range(2))  # no flow: boost sums it
    w = samples(rng, "f64", 2000, distribution, 0.0, 2.0)
    h = tally.Histogram([A.Regular(4, 0, 4), A.Variable([0, 1, 3, 4])], storage="weight").fill(x, y, weight=w)
    b = bh.Histogram(bh.axis.Regular(4, 0, 4), bh.axis.Variable([0, 1, 3, 4]), storage=bh.storage.Weight())
    total, want = h.project(), b.fill(x, y, weight=w).project()
    assert total.ndim == 0
    np.testing.assert_allclose(total.values(), want.values(), rtol=1e-12)
    np.testing.assert_allclose(total.variances(), want.variances(), rtol=1e-12)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_cuda_fills_broadcast_scalars_and_map_strings_as_the_cpu(rng, torch, distribution):
    n = 20000
    x = samples(rng, "f32", n, distribution, -1.0, 11.0)
    # Weights in steps of 2^-10: every partial sum exact, so the GPU's correctly rounded sums and
    # the CPU's sums in order have the same bits (as docs/cpp.md says they do then).
    w = (np.round(samples(rng, "f32", n, distribution, 0.0, 2.0) * 1024) / 1024).astype(np.float32)
    names = categories_like(rng, distribution, n, ["a", "b", "c"])
    made = {}
    for device in ("cpu", "cuda"):
        h = tally.Histogram([A.StrCategory(["a"], growth=True), A.Regular(10, 0, 10), A.Integer(0, 3)],
                            storage="weight", device=device)
        xs, ws = (x, w) if device == "cpu" else (torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda())
        h.fill("b", xs, 2, weight=ws).fill(names, xs, 1, weight=0.25)  # strings mapped on the host, moved
        made[device] = h
    assert made["cuda"].axes[0].categories == made["cpu"].axes[0].categories
    for got, want in zip(_as_weight_view(made["cuda"]), _as_weight_view(made["cpu"])):
        assert_same_array(got, want)

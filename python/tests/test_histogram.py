"""tally.histogram against numpy.histogram on the same inputs: counts, edges (bit for bit,
dtype included), weighted sums and density, for every sample type and several distributions."""

import numpy as np
import pytest

import tally
from conftest import (DISTRIBUTIONS, FLOAT_TYPES, NP, NUMPY_TYPES, assert_same_array,
                      counts_by_edges, samples, ulp_distance)

N = 20011  # not a multiple of any vector width


def check_like_numpy(a, **kw):
    got_h, got_e = tally.histogram(a, **kw)
    want_h, want_e = np.histogram(a, **kw)
    assert_same_array(got_e, want_e)
    if kw.get("density"):
        assert got_h.dtype == np.float64
        assert ulp_distance(got_h, want_h).max() <= 1
    elif np.asarray(a).dtype == np.float16 and not np.array_equal(got_h, want_h):
        # numpy estimates a float16 sample's bin in float16 arithmetic and corrects it by one
        # bin at most; with many bins the estimate can be further off, and numpy's counts then
        # disagree with its own edges. tally counts by the edges numpy returns.
        reference = counts_by_edges(a, want_e)
        assert not np.array_equal(want_h, reference)
        assert_same_array(got_h, reference)
    else:
        assert_same_array(got_h, want_h)
    return got_h


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("type_name", NUMPY_TYPES)
@pytest.mark.parametrize("bins", [1, 7, 64, 1000])
def test_int_bins_data_range(rng, type_name, distribution, bins):
    a = samples(rng, type_name, N, distribution)
    h = check_like_numpy(a, bins=bins)
    assert h.sum() == N  # range=None: every sample is inside


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("type_name", NUMPY_TYPES)
@pytest.mark.parametrize("range_", [(0.1, 0.7), (-2.5, 3.3), (1, 100), (-1000.0, 4096.5)])
def test_int_bins_awkward_ranges(rng, type_name, distribution, range_):
    a = samples(rng, type_name, N, distribution)
    if NP[type_name](0).dtype.kind == "f":
        a[:50] = np.asarray(range_[0], a.dtype)  # samples exactly on the first and last edge
        a[50:100] = np.asarray(range_[1], a.dtype)
    for bins in (3, 10, 255):
        check_like_numpy(a, bins=bins, range=range_)


@pytest.mark.parametrize("type_name", FLOAT_TYPES)
@pytest.mark.parametrize("bins", [5, 10, 100, 333])
def test_values_on_every_edge(rng, type_name, bins):
    """Samples equal to each of numpy's edges (and their neighbours) land where numpy puts them."""
    dtype = NP[type_name]
    for range_ in [(0.1, 0.7), (-1.3, 2.9), None]:
        base = samples(rng, type_name, 1000, "uniform", -1.5, 3.0)
        edges = np.histogram_bin_edges(base, bins=bins, range=range_)
        near = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)])
        a = np.concatenate([base, near.astype(dtype)])
        check_like_numpy(a, bins=bins, range=range_)


@pytest.mark.parametrize("type_name", NUMPY_TYPES)
def test_linspace_edges_take_the_regular_rule(rng, type_name):
    """float64 edges that are numpy.linspace's (histogramdd's, or a user's) bin by the regular
    rule, by arithmetic, and still as numpy: samples on every edge and one step either side."""
    from tally import _edges
    a = samples(rng, type_name, N, "skewed")
    lo, hi = float(a.min()), float(a.max()) + 1
    for edges in [np.linspace(lo, hi, 9), np.linspace(lo - 0.37, hi + 1.3, 1001), np.linspace(-1e-3, 3e-3, 65)]:
        axis = _edges.from_array(edges, tally._tally.sample_type(a))
        wide = a.dtype.itemsize == 8 and a.dtype.kind in "iu"
        assert axis.kind == ("variable" if wide else "regular")
        assert np.array_equal(axis.edges, edges)
        near = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)])
        with np.errstate(over="ignore", invalid="ignore"):
            on_edges = near.astype(a.dtype) if a.dtype.kind == "f" else near[np.isfinite(near)].round().astype(a.dtype)
        check_like_numpy(np.concatenate([a, on_edges]), bins=edges)
        got = tally.histogramdd(np.stack([a, a[::-1]], axis=1).astype(np.float64), bins=(edges, 5))[0]
        assert_same_array(got, np.histogramdd(np.stack([a, a[::-1]], axis=1).astype(np.float64), bins=(edges, 5))[0])
    assert _edges.from_array(np.array([0.0, 0.5, 2.0])).kind == "variable"


@pytest.mark.parametrize("distribution", ["uniform", "normal", "hot"])
def test_many_float32_bins_from_the_data_range(rng, distribution):
    """float32 data with the range from the data get numpy's float32-arithmetic edges, which are
    not tally's regular ones: from 2^16 bins they take the variable axis' line rule. Counts and
    edges as numpy's, with samples on every edge and one float32 step either side."""
    from tally import _arrays, _edges
    n = 200003
    kinds = set()
    if distribution == "normal":
        base = rng.standard_normal(n).astype(np.float32)
    else:
        base = rng.random(n).astype(np.float32)
        if distribution == "hot":
            base[rng.random(n) < 0.8] = np.float32(0.37)
    for bins in [1 << 16, (1 << 17) + 3]:
        edges = np.histogram_bin_edges(base, bins=bins).astype(np.float32)
        near = np.concatenate([edges, np.nextafter(edges, np.float32(-np.inf)), np.nextafter(edges, np.float32(np.inf))])
        a = np.concatenate([base, np.clip(near, base.min(), base.max())])
        rng.shuffle(a)
        check_like_numpy(a, bins=bins)
        kinds.add(_edges.regular(_arrays.Source(a), bins, None)[2].kind)
    assert "variable" in kinds  # numpy's float32 edges, not tally's regular ones: the line rule


@pytest.mark.parametrize("type_name", NUMPY_TYPES)
def test_edges_array(rng, type_name):
    a = samples(rng, type_name, N, "uniform")
    lo, hi = float(a.min()), float(a.max())
    for edges in [np.sort(rng.uniform(lo - 5, hi + 5, 17)),
                  np.linspace(lo, hi, 9),
                  np.array([lo, (lo + hi) / 3, hi]),
                  np.unique(a[:40]).astype(np.float64),  # sample values as edges
                  np.arange(int(lo), int(hi) + 2, max(1, int(hi - lo) // 7)),
                  np.array([lo])]:  # one edge: no bins  # integer edges: numpy keeps their dtype
        check_like_numpy(a, bins=edges)
        check_like_numpy(a, bins=list(edges))


def test_repeated_and_infinite_edges(rng):
    a = samples(rng, "f64", N, "uniform")
    a[:10] = 2.0
    a[10:12] = [np.inf, -np.inf]
    for edges in [[0, 1, 1, 2], [-3, 0, 2, 2], [0, 2, 2, 2], [-np.inf, 0, 1, np.inf],
                  [-np.inf, -np.inf, 0], [0, 1, np.inf, np.inf], [2, 2], [-1, 0, 0, 0, 5]]:
        check_like_numpy(a, bins=edges)


@pytest.mark.parametrize("rule", ["auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt"])
def test_string_bin_rules(rng, rule):
    a = samples(rng, "f32", 5000, "skewed")
    check_like_numpy(a, bins=rule)
    check_like_numpy(a, bins=rule, range=(0.1, 2.7))


@pytest.mark.parametrize("type_name", NUMPY_TYPES)
@pytest.mark.parametrize("weight_type", ["f32", "f64"])
def test_weights_regular(rng, type_name, weight_type):
    """Equal bins: numpy sums weights per block of 65536 in input order, as tally does, so the
    float64 sums are equal bit for bit (f32 weights compared with numpy on their f64 values,
    with sum_dtype=float64). In the weights' dtype (the default, as numpy): float64 the same;
    float32 numpy adds the blocks' sums in float32, tally in float64 and rounds once, so the two
    differ by float32 roundings of the three blocks here (equal for one block)."""
    a = samples(rng, type_name, 150001, "hot")
    w = rng.normal(1.0, 3.0, a.size).astype(NP[weight_type])
    for kw in [dict(bins=10), dict(bins=37, range=(0.1, 0.7)), dict(bins=256, range=(-1, 40))]:
        got, got_e = tally.histogram(a, weights=w, sum_dtype=np.float64, **kw)
        want, want_e = np.histogram(a, weights=w.astype(np.float64), **kw)
        assert_same_array(got, want)
        assert_same_array(got_e, want_e)
        got, want = tally.histogram(a, weights=w, **kw)[0], np.histogram(a, weights=w, **kw)[0]
        assert got.dtype == want.dtype == w.dtype
        eps = np.finfo(w.dtype).eps  # each rounding within eps of the largest sum (cancellation)
        np.testing.assert_allclose(got, want, rtol=4 * eps, atol=4 * eps * np.abs(want).max())
        one = slice(0, 65536)  # one block: the same bits
        assert_same_array(tally.histogram(a[one], weights=w[one], **kw)[0], np.histogram(a[one], weights=w[one], **kw)[0])


def test_weights_edges_array(rng):
    """Array edges: numpy sums weights through cumulative sums, in another order: close."""
    a = samples(rng, "f64", 100000, "uniform")
    w = rng.random(a.size)
    edges = np.sort(rng.uniform(-3, 7, 20))
    got, _ = tally.histogram(a, bins=edges, weights=w)
    want, _ = np.histogram(a, bins=edges, weights=w)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("type_name", NUMPY_TYPES)
def test_density(rng, type_name):
    a = samples(rng, type_name, N, "skewed")
    check_like_numpy(a, bins=13, density=True)
    check_like_numpy(a, bins=[-1.0, 0.5, 2, 60, 4000], density=True)
    w = rng.random(a.size)
    got, _ = tally.histogram(a, bins=9, weights=w, density=True)
    want, _ = np.histogram(a, bins=9, weights=w, density=True)
    assert ulp_distance(got, want).max() <= 1


def test_nan_and_inf_in_data(rng):
    a = samples(rng, "f64", N, "uniform")
    a[::97] = np.nan
    a[5] = np.inf
    a[6] = -np.inf
    h = check_like_numpy(a, bins=11, range=(-2, 6))  # dropped, as numpy
    assert h.sum() < N
    check_like_numpy(a, bins=[-np.inf, 0, np.inf])
    for bad in [np.nan, np.inf, -np.inf]:
        b = samples(np.random.default_rng(1), "f32", 100, "uniform")
        b[3] = bad
        with pytest.raises(ValueError):  # numpy: autodetected range of [...] is not finite
            np.histogram(b, bins=5)
        with pytest.raises(ValueError):
            tally.histogram(b, bins=5)


@pytest.mark.parametrize("type_name", ["u8", "i32", "f32", "f64"])
def test_strided_and_transposed_views(rng, type_name):
    a = samples(rng, type_name, 3 * 4001, "uniform")
    m = a.reshape(3, 4001)
    for view in [a[::3], a[1::7], a[::-1], a[::-5], m.T, m[:, ::2], m[::2, ::3], m.T[::-1],
                 np.broadcast_to(a[:7], (5, 7))]:
        check_like_numpy(view, bins=17)
        w = np.ones(view.shape) * 0.5
        got, _ = tally.histogram(view, bins=17, weights=w)
        want, _ = np.histogram(view, bins=17, weights=w)
        assert_same_array(got, want)


def test_multidimensional_input_is_flattened(rng):
    a = samples(rng, "f32", 4 * 5 * 6, "uniform").reshape(4, 5, 6)
    check_like_numpy(a, bins=8)


@pytest.mark.parametrize("type_name", NUMPY_TYPES)
def test_empty_input(type_name):
    a = np.empty(0, NP[type_name])
    check_like_numpy(a, bins=4)
    check_like_numpy(a, bins=4, range=(0.1, 0.7))
    check_like_numpy(a, bins=[0, 1, 2])


def test_single_value_and_constant_data():
    for a in [np.array([3.5]), np.full(100, 7, np.int16), np.full(10, np.float32(1e8))]:
        for bins in (1, 5):
            try:
                want = np.histogram(a, bins=bins)
            except ValueError:
                with pytest.raises(ValueError):
                    tally.histogram(a, bins=bins)
                continue
            got = tally.histogram(a, bins=bins)
            assert_same_array(got[0], want[0])
            assert_same_array(got[1], want[1])


def test_range_given_as_numpy_scalars(rng):
    """numpy's edge dtype follows the range's types (strong float64 scalars widen f32 edges)."""
    a = samples(rng, "f32", N, "uniform")
    for range_ in [(np.float64(0.1), np.float64(0.7)), (np.float32(0.1), np.float32(0.7)),
                   (np.float16(0.1), 0.7), (0, 5)]:
        check_like_numpy(a, bins=9, range=range_)


def test_large_integers_compare_as_float64(rng):
    """int64/uint64 beyond 2^53 are compared after rounding to float64, as numpy does."""
    a = (rng.integers(0, 2**40, N) + 2**62).astype(np.int64)
    check_like_numpy(a, bins=5)
    u = (rng.integers(0, 2**40, N).astype(np.uint64) + np.uint64(2**63 + 2**62))
    check_like_numpy(u, bins=7)


def test_bool_input_is_read_as_uint8():
    a = np.array([True, False, True, True])
    with pytest.warns(RuntimeWarning):
        got = tally.histogram(a, bins=2)
    with pytest.warns(RuntimeWarning):
        want = np.histogram(a, bins=2)
    assert_same_array(got[0], want[0])
    assert_same_array(got[1], want[1])


def test_sequences_and_lists():
    """Python sequences are read as numpy.asarray reads them (numpy's docstring examples)."""
    for a, kw in [([1, 2, 1], dict(bins=[0, 1, 2, 3])), (np.arange(4), dict(bins=np.arange(5), density=True)),
                  ([[1, 2, 1], [1, 0, 1]], dict(bins=[0, 1, 2, 3])), ([0.5, 1.5, 2.5], dict(bins=3))]:
        got = tally.histogram(a, **kw)
        want = np.histogram(a, **kw)
        assert_same_array(got[0], want[0])
        assert_same_array(got[1], want[1])


@pytest.mark.parametrize("strategy", ["automatic", "cpu_private"])
def test_strategies_agree(rng, strategy):
    a = samples(rng, "i32", N, "hot")
    got, _ = tally.histogram(a, bins=100, range=(0, 5000), strategy=strategy)
    assert_same_array(got, np.histogram(a, bins=100, range=(0, 5000))[0])


def test_ranges_ending_at_signed_zeros_keep_numpys_edges():
    """-0.0 == 0.0, but numpy's edges keep a zero's sign: ranges that differ only in it (given
    one after the other, so that the second could find the first one's cached edges) each give
    numpy's edges and counts."""
    for a in (np.linspace(-1, 1, 101), np.linspace(-1, 1, 101).astype(np.float32)):
        for first, last in [(-1.0, 0.0), (-1.0, -0.0), (-1.0, 0.0), (np.float64(-1), np.float64(-0.0)),
                            (np.float32(-1), np.float32(-0.0)), (np.float32(-1), np.float32(0.0)),
                            (-0.0, 1.0), (0.0, 1.0), (-0.0, 1.0)]:
            h, e = tally.histogram(a, 16, (first, last))
            want_h, want_e = np.histogram(a, 16, (first, last))
            assert_same_array(e, want_e)
            assert_same_array(h, want_h)

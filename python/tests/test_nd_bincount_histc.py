"""tally.histogram2d / histogramdd / bincount / histc against numpy (histc: torch's range rule,
numpy's bin rule) on seeded random inputs."""

import numpy as np
import pytest

import tally
from conftest import DISTRIBUTIONS, INT_TYPES, NP, NUMPY_TYPES, assert_same_array, samples, ulp_distance


def check_dd(sample, **kw):
    got_h, got_e = tally.histogramdd(sample, **kw)
    want_h, want_e = np.histogramdd(sample, **kw)
    assert len(got_e) == len(want_e)
    for g, w in zip(got_e, want_e):
        assert_same_array(g, w)
    if kw.get("density"):
        assert got_h.dtype == np.float64 and got_h.shape == want_h.shape
        assert ulp_distance(got_h, want_h).max() <= 1
    else:
        assert_same_array(got_h, want_h)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("type_name", NUMPY_TYPES)
def test_histogramdd_matrix(rng, type_name, distribution):
    m = samples(rng, type_name, 3 * 7001, distribution).reshape(7001, 3)
    check_dd(m, bins=5)
    check_dd(m, bins=(3, 4, 6), range=[(0.1, 0.7), None, (-2, 40.5)])
    check_dd(m, bins=[np.array([-5.0, 0, 1, 2, 100]), 4, [0, 10, 20, 5000]])
    check_dd(m.T.copy().T, bins=4)  # Fortran order: columns read with their strides
    check_dd(m[::3], bins=4)


@pytest.mark.parametrize("type_name", ["i16", "f32", "f64"])
def test_histogramdd_sequence_weights_density(rng, type_name):
    cols = [samples(rng, type_name, 5000, d) for d in ("uniform", "skewed", "hot")]
    check_dd(cols, bins=6)
    check_dd(cols, bins=6, density=True)
    w = rng.random(5000)
    # One block of samples: numpy's bincount sums in input order, as tally: the same bits.
    check_dd(cols, bins=(2, 3, 4), weights=w)
    check_dd(cols, bins=(2, 3, 4), weights=w.astype(np.float32).astype(np.float64))
    got, _ = tally.histogramdd(cols, bins=7, weights=w, density=True)
    want, _ = np.histogramdd(cols, bins=7, weights=w, density=True)
    assert ulp_distance(got, want).max() <= 2  # sums in another order, then two divisions


def test_histogramdd_many_weights_close(rng):
    cols = [samples(rng, "f64", 300000, "uniform") for _ in range(2)]
    w = rng.random(300000)
    got, _ = tally.histogramdd(cols, bins=8, weights=w)
    want, _ = np.histogramdd(cols, bins=8, weights=w)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_histogramdd_one_column_and_repeated_edges(rng):
    x = samples(rng, "f64", 3000, "uniform")
    check_dd(x, bins=9)
    check_dd([x, x[::-1]], bins=[[0, 1, 1, 2], [-3, 0, 7, 7]])


@pytest.mark.parametrize("type_name", NUMPY_TYPES)
def test_histogram2d(rng, type_name):
    x = samples(rng, type_name, 9001, "uniform")
    y = samples(rng, type_name, 9001, "skewed")
    for kw in [dict(bins=10), dict(bins=(3, 17)), dict(bins=[0, 1, 2.5, 6, 30]),
               dict(bins=[[0, 1, 2], [-1, 3, 9, 4000]]), dict(bins=4, range=[[0.1, 0.7], [1, 5]]),
               dict(bins=5, density=True), dict(bins=6, weights=rng.random(9001))]:
        got = tally.histogram2d(x, y, **kw)
        want = np.histogram2d(x, y, **kw)
        if kw.get("density"):
            assert ulp_distance(got[0], want[0]).max() <= 1
        else:
            assert_same_array(got[0], want[0])
        assert_same_array(got[1], want[1])
        assert_same_array(got[2], want[2])


def test_histogram2d_lists():
    """Python lists, as numpy's docstring passes them."""
    x, y = [0, 1, 1, 2, 5, 6], [0, 1, 2, 3, 4, 5]
    for bins in ([[0, 3, 6], [0, 3, 6]], 3, (2, 4)):
        got = tally.histogram2d(x, y, bins=bins)
        want = np.histogram2d(x, y, bins=bins)
        for g, w in zip(got, want):
            assert_same_array(g, w)


@pytest.mark.parametrize("type_name", INT_TYPES + ["bool"])
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_bincount(rng, type_name, distribution):
    if type_name == "bool":
        x = rng.random(10007) < 0.3
    else:
        x = samples(rng, type_name, 10007, distribution, 0, 3000 if np.iinfo(NP[type_name]).max > 3000 else 127)
    assert_same_array(tally.bincount(x), np.bincount(x))
    assert_same_array(tally.bincount(x, minlength=5000), np.bincount(x, minlength=5000))
    assert_same_array(tally.bincount(x[::3]), np.bincount(x[::3]))
    for w in [rng.random(x.size), rng.random(x.size).astype(np.float32), rng.integers(0, 9, x.size)]:
        assert_same_array(tally.bincount(x, weights=w), np.bincount(x, weights=w))


def test_bincount_empty_and_large_values(rng):
    for x in [np.array([], np.uint8), [], np.array([2**40], np.int64)[:0]]:
        assert_same_array(tally.bincount(x, minlength=2), np.bincount(x, minlength=2))
    x = rng.integers(2**20 - 50, 2**20, 1000)
    assert_same_array(tally.bincount(x), np.bincount(x))


def test_bincount_guesses_the_length_from_the_last_call(rng):
    """Unweighted bincount of host data of at least the guessed length (the last call's, a power
    of two) counts into it in one pass and cuts the result after its last nonzero count; data
    beyond the guess are counted again at their own length (shorter data find their maximum
    first). Lengths that grow, shrink, sit on a power of two or below minlength give numpy's
    results."""
    for top in [3, 5000, 5000, 2**12, 2**12 + 1, 70000, 10, 2**20 + 7, 1, 2**16, 2**16 - 1, 0]:
        x = rng.integers(0, top + 1, max(5001, 2 * top + 2))
        x[rng.integers(0, x.size)] = top  # the maximum is there
        for minlength in (0, 1, top + 1, top + 2, 3000):
            assert_same_array(tally.bincount(x, minlength=minlength), np.bincount(x, minlength=minlength))
    # The maximum at the end of the guess, just beyond it, and counts whose last bins are zero.
    tally.bincount(np.full(2**14, 5000))
    for last in (8191, 8192, 7):
        x = np.zeros(2**14, np.int64)
        x[-1] = last
        assert_same_array(tally.bincount(x), np.bincount(x))
    for x in (np.array([8191]), np.array([0, 0, 7])):  # fewer samples than the guess
        assert_same_array(tally.bincount(x), np.bincount(x))


def test_bincount_of_narrow_types_guesses_within_their_values(rng):
    """8- and 16-bit samples count into at most their type's non-negative values (a guess cut to
    256 for u8), whatever the last call's length: numpy's results at every maximum."""
    for name in ("uint8", "int8", "uint16", "int16"):
        top = np.iinfo(name).max
        for last_top in (70000, 3, top):
            tally.bincount(rng.integers(0, last_top + 1, 2 * last_top + 5002))  # sets the next guess
            for most in (top, top - 1, 5, 0):
                x = rng.integers(0, most + 1, 6000).astype(name)
                x[rng.integers(0, x.size)] = most
                assert_same_array(tally.bincount(x), np.bincount(x))


def test_bincount_lists():
    """Python lists and small arrays, as numpy's docstring passes them."""
    x = [0, 1, 1, 2, 2, 2]
    w = [0.3, 0.5, 0.2, 0.7, 1., -0.6]
    assert_same_array(tally.bincount(x), np.bincount(x))
    assert_same_array(tally.bincount(x, weights=w), np.bincount(x, weights=w))
    assert_same_array(tally.bincount(np.arange(5)), np.bincount(np.arange(5)))
    assert_same_array(tally.bincount(np.array([], np.int64), minlength=3),
                      np.bincount(np.array([], np.int64), minlength=3))


@pytest.mark.parametrize("type_name", NUMPY_TYPES)
def test_histc(rng, type_name):
    """torch.histc's range (the data's min and max when min == max), counts in the input's
    float type (float32 for integers), binned by numpy's rule for that type and range."""
    a = samples(rng, type_name, 20011, "skewed")
    out = np.dtype(NP[type_name]) if type_name.startswith("f") else np.dtype(np.float32)
    lo, hi = float(a.min()), float(a.max())
    for bins, mn, mx in [(100, 0, 0), (7, lo, hi), (16, 0.1, 0.7), (50, -1, 2.5)]:
        got = tally.histc(a, bins=bins, min=mn, max=mx)
        rng_ = (lo, hi) if mn == mx else (mn, mx)
        want = np.histogram(a, bins=bins, range=rng_)[0]
        assert got.dtype == out
        assert np.array_equal(got, want.astype(out))
    # torch: constant data and min == max: the range is [c - 1, c + 1]
    c = samples(rng, type_name, 1, "uniform")[0]
    got = tally.histc(np.full(10, c), bins=4)
    assert np.array_equal(got, np.histogram(np.full(10, c), bins=4, range=(float(c) - 1, float(c) + 1))[0].astype(out))


def test_bincount_of_huge_values_costs_the_cells_it_touches():
    """numpy.bincount([2**29]) allocates 2**29 zeros that cost memory only where written; so
    does tally (it grew to gigabytes, or was killed). Too large for the machine: MemoryError."""
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    x = np.array([2**29, 3, 2**29])
    got = tally.bincount(x)
    assert got.shape == (2**29 + 1,) and got[-1] == 2 and got[3] == 1 and got[:10].sum() == 1
    del got
    got = tally.bincount(x, weights=[0.5, 1.0, 0.25])
    assert got[-1] == 0.75 and got[3] == 1.0
    del got
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 512 * 1024  # KiB
    with pytest.raises(MemoryError):
        tally.bincount(np.array([2**50]))
    with pytest.raises(MemoryError):
        tally.Histogram(tally.axis.integer(0, 2**50))


def test_bincount_minlength_below_the_data_and_bad_values(rng):
    """minlength's bins are counted first, in one pass; samples beyond them make tally find the
    maximum and count again, and negatives (and uint64 values numpy reads as negative int64)
    raise numpy's error whatever the minlength."""
    x = rng.integers(0, 1000, 5000)
    w = rng.random(x.size)
    for m in [1, 998, 999, 1000, 1001, 4096]:
        assert_same_array(tally.bincount(x, minlength=m), np.bincount(x, minlength=m))
        assert_same_array(tally.bincount(x, w, minlength=m), np.bincount(x, w, minlength=m))
    for bad in [np.array([3, -1, 2]), np.array([5, 2**63], np.uint64), np.array([2**63 - 1, -5])]:
        with pytest.raises(ValueError, match="negative"):
            tally.bincount(bad)
        for m in [1, 10, 2**20]:
            with pytest.raises(ValueError, match="negative"):
                tally.bincount(bad, minlength=m)


@pytest.mark.parametrize("type_name", INT_TYPES)
def test_histogram_of_integers_over_unit_integer_edges(rng, type_name):
    """Integer samples over a range of unit integer edges take tally's integer rule (v - lo, the
    range's end in the last bin): numpy's counts at every edge, at the type's limits too."""
    info = np.iinfo(NP[type_name])
    for lo, hi in [(0, 256), (-5, 5), (int(info.min), int(info.min) + 10), (int(info.max) - 10, int(info.max)),
                   (-(2**53), -(2**53) + 7)]:
        a, b = max(lo - 3, int(info.min)), min(hi + 3, int(info.max))
        if a > b:
            continue
        x = np.concatenate([rng.integers(a, b, 5000, dtype=NP[type_name], endpoint=True),
                            np.array([a, b, max(min(hi, b), a), max(min(lo, b), a)], NP[type_name])])
        for kw in [dict(bins=hi - lo, range=(lo, hi)), dict(bins=hi - lo, range=(float(lo), float(hi)))]:
            try:
                want, want_edges = np.histogram(x, **kw)
            except ValueError:  # edges beyond 2^53 that float64 cannot tell apart
                with pytest.raises(ValueError):
                    tally.histogram(x, **kw)
                continue
            got, edges = tally.histogram(x, **kw)
            assert_same_array(got, want)
            assert_same_array(edges, want_edges)
        if abs(lo) > 2**53 or abs(hi) > 2**53:
            continue
        wts = rng.integers(-3, 4, x.size).astype(np.float64)
        assert_same_array(tally.histogram(x, hi - lo, (lo, hi), weights=wts)[0],
                          np.histogram(x, hi - lo, (lo, hi), weights=wts)[0])

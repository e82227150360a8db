"""Mean and WeightedMean storages (profiles): each cell's mean and variance of `sample=`,
compared with boost-histogram's own accumulators on fresh data of several distributions;
merged parts equal one fill, slices and projections add the cells, conversions and pickles keep
them, CUDA fills equal the CPU's."""

import pickle

import numpy as np
import pytest

import tally
from conftest import DISTRIBUTIONS, samples

bh = pytest.importorskip("boost_histogram")
A = tally.axis
STORAGES = {"mean": bh.storage.Mean, "weighted_mean": bh.storage.WeightedMean}


def data(rng, distribution, n=6000):
    x = samples(rng, "f64", n, distribution, -1.0, 11.0)
    s = rng.normal(3.0, 2.0, n) + 0.1 * x  # a profile that depends on x
    w = rng.uniform(0.1, 3.0, n)
    return x, s, w


def filled(storage, x, s, w, axis=(10, 0, 10)):
    h = tally.Histogram(A.Regular(*axis), storage=storage)
    b = bh.Histogram(bh.axis.Regular(*axis), storage=STORAGES[storage]())
    if storage == "mean":
        h.fill(x, sample=s)
        b.fill(x, sample=s)
    else:
        h.fill(x, sample=s, weight=w)
        b.fill(x, sample=s, weight=w)
    return h, b


def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("storage", sorted(STORAGES))
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_profiles_match_boost_histograms_accumulators(rng, storage, distribution):
    x, s, w = data(rng, distribution)
    h, b = filled(storage, x, s, w)
    assert h.kind == b.kind == "MEAN"
    close(h.values(), b.values())
    close(h.variances(), b.variances())
    close(h.counts(), b.counts())
    view, want = h.view(), b.view()
    for field in want.dtype.names:
        close(view[field], want[field])
    total, their = h.sum(), b.sum()
    close(np.array(total), np.array([getattr(their, f) for f in total._fields]))
    cell = h[3]
    close(np.array(cell), np.array([getattr(b[3], f) for f in cell._fields]))


@pytest.mark.parametrize("storage", sorted(STORAGES))
def test_parts_merged_equal_one_fill_and_slices_add_cells(rng, storage):
    x, s, w = data(rng, "skewed")
    one, b = filled(storage, x, s, w)
    parts = [filled(storage, x[k::3], s[k::3], w[k::3])[0] for k in range(3)]
    merged = parts[0] + parts[1] + parts[2]
    close(merged.values(), one.values())
    close(merged.variances(), one.variances())
    rebinned, theirs = one[::2j], b[::bh.rebin(2)]
    close(rebinned.values(), theirs.values())
    close(rebinned.variances(), theirs.variances())
    h2 = tally.Histogram([A.Regular(5, 0, 10), A.Integer(0, 3)], storage=storage)
    b2 = bh.Histogram(bh.axis.Regular(5, 0, 10), bh.axis.Integer(0, 3), storage=STORAGES[storage]())
    k = rng.integers(0, 3, x.size)
    inside = rng.uniform(0, 10, x.size)  # boost's projections add its flow bins; tally keeps none
    extra = {} if storage == "mean" else {"weight": w}
    h2.fill(inside, k, sample=s, **extra)
    b2.fill(inside, k, sample=s, **extra)
    close(h2.project(1).values(), b2.project(1).values())
    close(h2.project(1).variances(), b2.project(1).variances())


@pytest.mark.parametrize("storage", sorted(STORAGES))
def test_profiles_convert_pickle_and_set_cells(rng, storage):
    x, s, w = data(rng, "uniform", 500)
    h, b = filled(storage, x, s, w)
    with pytest.raises(ValueError, match="flow bins hold means"):
        tally.Histogram.from_boost(b)
    back = tally.Histogram.from_boost(b, flow=False)
    close(back.values(), h.values())
    close(back.variances(), h.variances())
    there = h.to_boost()
    close(there.values(), b.values())
    close(there.variances(), b.variances())
    assert pickle.loads(pickle.dumps(h)) == h
    fields = len(h.view().dtype.names)
    cell = [4.0, 2.5, 1.5] if fields == 3 else [4.0, 6.0, 2.5, 1.5]
    h[2] = cell
    close(h.values()[2], 2.5)
    close(np.array(h[2]), np.array(cell))


def test_profiles_refuse_what_they_cannot_hold(rng):
    h = tally.Histogram(A.Integer(0, 3), storage="mean")
    with pytest.raises(ValueError, match="needs sample="):
        h.fill(np.array([0, 1]))
    with pytest.raises(ValueError, match="weights given"):
        h.fill(np.array([0, 1]), sample=np.array([1.0, 2.0]), weight=np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match="as many sample"):
        h.fill(np.array([0, 1]), sample=np.array([1.0]))
    with pytest.raises(ValueError, match="sample= is for"):
        tally.Histogram(A.Integer(0, 3)).fill(np.array([0]), sample=np.array([1.0]))
    with pytest.raises(TypeError, match="adds to another"):
        h * 2
    with pytest.raises(ValueError, match="no flow"):
        tally.Histogram(A.Integer(0, 3), storage="mean", flow=True)
    with pytest.raises(ValueError, match="merge"):
        h + tally.Histogram(A.Integer(0, 3), storage="weighted_mean")


@pytest.mark.parametrize("storage", sorted(STORAGES))
def test_cuda_profiles_equal_the_cpus(rng, torch, storage):
    x, s, w = data(rng, "hot", 50000)
    made = {}
    for device in ("cpu", "cuda"):
        h = tally.Histogram([A.Regular(8, 0, 10), A.IntCategory([2, 0])], storage=storage,
                            device=device, exact_sums=True)
        k = (x > 5).astype(np.int64) * 2
        cols = [x, k, s, w]
        if device == "cuda":
            cols = [torch.from_numpy(c).cuda() for c in cols]
        extra = {} if storage == "mean" else {"weight": cols[3]}
        made[device] = h.fill(cols[0], cols[1], sample=cols[2], **extra)
    # Exact sums: the GPU's cells are the CPU's bit for bit.
    np.testing.assert_array_equal(made["cuda"].view(), made["cpu"].view())

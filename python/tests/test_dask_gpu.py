"""tally.dask over cupy chunks, as on a GPU Dask worker (one worker process a GPU, its tasks on
threads, as dask-cuda runs them): every chunk is filled where it lives, on the GPU, and the results
equal numpy's on the concatenated host data. Skipped where cupy, Dask or tally's CUDA backend finds
no device (as in CI); scripts/gpu_check runs them on the GPU machine."""

import numpy as np
import pytest

from conftest import DISTRIBUTIONS, assert_same_array, samples

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
import tally.dask as td  # noqa: E402  (after the skips: needs dask)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=4, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


from dask_gpu_chunks import gpu_chunks, on_gpu  # noqa: E402,F401  (on_gpu: a fixture)


@pytest.mark.parametrize("kind", DISTRIBUTIONS)
@pytest.mark.parametrize("t", ["f32", "f64", "i32", "u8"])
def test_histogram_of_cupy_chunks_equals_numpy(client, cupy, on_gpu, rng, t, kind):
    a = samples(rng, t, 200_003, kind)
    x = gpu_chunks(cupy, a, rng, 7)
    for bins, range_ in ((37, None), (256, (float(np.min(a)), float(np.max(a)) + 1)), (5, (0, 3))):
        hist, edges = td.histogram(x, bins=bins, range=range_)
        want, want_edges = np.histogram(a, bins=bins, range=range_)
        assert_same_array(edges, want_edges)
        assert_same_array(hist.compute(), want)
    assert on_gpu and set(on_gpu) == {"cupy"}


def test_weighted_2d_and_bincount_of_cupy_chunks(client, cupy, on_gpu, rng):
    a = samples(rng, "f32", 300_007, "skewed")
    b = samples(rng, "f64", 300_007, "uniform")
    # Columns and weights chunked differently: tally.dask aligns them to the first column's chunks.
    x = gpu_chunks(cupy, a, rng, 6)
    y = da.from_array(cupy.asarray(b), chunks=70_000, asarray=False)
    # Whole-number weights: every partial sum is exact, so the sums equal numpy's bit for bit.
    w = rng.integers(-50, 50, a.size).astype(np.float64)
    wd = da.from_array(cupy.asarray(w), chunks=70_000, asarray=False)
    hist, _ = td.histogram(x, bins=64, range=(0, 1), weights=wd)
    assert_same_array(hist.compute(), np.histogram(a, bins=64, range=(0, 1), weights=w)[0])
    H, xe, ye = td.histogram2d(x, y, bins=(9, 17), range=[(0, 1), (0, 1)])
    want, wxe, wye = np.histogram2d(a, b, bins=(9, 17), range=[(0, 1), (0, 1)])
    assert_same_array(H.compute(), want)
    assert_same_array(xe, wxe)
    assert_same_array(ye, wye)
    k = samples(rng, "i32", 250_001, "hot", 0, 3000)
    assert_same_array(td.bincount(gpu_chunks(cupy, k, rng, 5)).compute(), np.bincount(k))
    assert on_gpu and set(on_gpu) == {"cupy"}

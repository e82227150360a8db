"""tally.distributed: all_reduce over a torch.distributed process group of one rank (gloo on CPU
tensors, NCCL on CUDA ones; skipped without torch, or without CUDA for NCCL), and
sharded_histogram against numpy.histogram of the concatenated shards (numpy shards on the CPU
always; torch shards on every visible GPU where there are)."""

import os
import tempfile

import numpy as np
import pytest

import tally
from tally import distributed


def _cuda_usable():
    return any(b["name"] == "cuda" and b["usable"] for b in tally.backends())


@pytest.fixture(params=["gloo", "nccl"])
def group(request):
    """The default process group of one rank, on a file store of its own."""
    torch = pytest.importorskip("torch")
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed is not available in this torch")
    if request.param == "nccl" and not (torch.cuda.is_available() and dist.is_nccl_available() and _cuda_usable()):
        pytest.skip("NCCL needs a CUDA device (and tally's CUDA backend)")
    if dist.is_initialized():
        dist.destroy_process_group()
    with tempfile.TemporaryDirectory() as tmp:
        dist.init_process_group(request.param, init_method="file://" + os.path.join(tmp, "store"),
                                rank=0, world_size=1)
        try:
            yield request.param
        finally:
            dist.destroy_process_group()


def test_all_reduce_of_a_tensor_of_counts_is_exact(group, rng):
    torch = pytest.importorskip("torch")
    x = rng.integers(0, 1 << 20, 10_000)
    counts, _ = np.histogram(x, 4096, (0, 1 << 20))
    counts[7] = (1 << 62) + 1  # beyond float64's exact integers
    t = torch.from_numpy(counts.copy())
    if group == "nccl":
        t = t.cuda()
    out = distributed.all_reduce(t)
    assert out is t
    np.testing.assert_array_equal(t.cpu().numpy(), counts)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("channels", [None, 3])
def test_all_reduce_of_a_histogram_keeps_cells_flow_and_samples(group, rng, weighted, channels):
    if weighted and channels:
        pytest.skip("channels are counted, not weighted")
    h = tally.Histogram(tally.axis.regular(100, -1.0, 1.0), weighted=weighted, channels=channels, flow=True)
    shape = (5000, channels) if channels else (5000,)
    x = rng.normal(0, 0.7, shape)
    x.flat[::97] = np.nan
    if weighted:
        h.fill(x, weight=rng.integers(-50, 50, 5000).astype(np.float64))
    else:
        h.fill(x)
    want = h.copy()
    assert distributed.all_reduce(h) is h
    assert h == want
    assert h.flow["nan"] > 0 and h.flow["underflow"] > 0


def test_all_reduce_rejects_what_it_cannot_sum(group):
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="torch tensor or a tally.Histogram"):
        distributed.all_reduce(np.zeros(3))
    with pytest.raises(TypeError, match="counts or sums"):
        distributed.all_reduce(torch.zeros(3, dtype=torch.bool))


def test_all_reduce_needs_an_initialised_group():
    dist = pytest.importorskip("torch.distributed")
    if dist.is_available() and dist.is_initialized():
        pytest.skip("a process group is initialised")
    with pytest.raises(RuntimeError, match="init_process_group"):
        distributed.all_reduce(tally.Histogram(tally.axis.regular(4, 0.0, 1.0)))


@pytest.mark.parametrize("weighted", [False, True])
def test_sharded_histogram_of_host_shards_equals_numpy(rng, weighted):
    x = rng.normal(0, 1, 30_001)
    w = rng.integers(-9, 9, x.size).astype(np.float64) if weighted else None
    cuts = [0, 1, 7000, 7000, 30_001]
    shards = [x[a:b] for a, b in zip(cuts, cuts[1:])]
    weights = None if w is None else [w[a:b] for a, b in zip(cuts, cuts[1:])]
    hist, edges = distributed.sharded_histogram(shards, 64, (-3.0, 3.0), weights=weights)
    want, want_edges = np.histogram(x, 64, (-3.0, 3.0), weights=w)
    np.testing.assert_array_equal(hist, want)
    np.testing.assert_array_equal(edges, want_edges)
    assert hist.dtype == want.dtype


def test_sharded_histogram_on_every_gpu_equals_numpy(rng):
    torch = pytest.importorskip("torch")
    if not (torch.cuda.is_available() and _cuda_usable()):
        pytest.skip("needs a CUDA device")
    x = rng.integers(-100, 1000, 100_003).astype(np.int32)
    parts = np.array_split(x, max(2, torch.cuda.device_count()))
    shards = [torch.from_numpy(p).to(f"cuda:{i % torch.cuda.device_count()}") for i, p in enumerate(parts)]
    hist, _ = distributed.sharded_histogram(shards, 256, (0, 900))
    assert hist.device == shards[0].device
    np.testing.assert_array_equal(hist.cpu().numpy(), np.histogram(x, 256, (0, 900))[0])


def test_sharded_histogram_rejects_bad_arguments():
    x = np.zeros(4)
    with pytest.raises(ValueError, match="no shards"):
        distributed.sharded_histogram([], 4, (0, 1))
    with pytest.raises(ValueError, match="give range"):
        distributed.sharded_histogram([x], 4, None)
    with pytest.raises(ValueError, match="1 shards but 2 weight"):
        distributed.sharded_histogram([x], 4, (0, 1), weights=[x, x])

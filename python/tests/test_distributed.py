"""tally.distributed: all_reduce over a torch.distributed process group of one rank, and of two
ranks in two processes (this file run as a script) against one histogram of all the data (gloo
on CPU tensors, NCCL on CUDA ones; skipped without torch, or without CUDA for NCCL, two GPUs for
two ranks), and sharded_histogram against numpy.histogram of the concatenated shards (numpy
shards on the CPU always; torch shards on every visible GPU where there are)."""

import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import tally
from conftest import samples, spread_weights
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


@pytest.mark.parametrize("weighted, exact_sums, channels",
                         [(False, False, None), (False, False, 3), (True, False, None), (True, True, None)])
def test_all_reduce_of_a_histogram_keeps_cells_flow_and_samples(group, rng, weighted, exact_sums, channels):
    h = tally.Histogram(tally.axis.regular(100, -1.0, 1.0), weighted=weighted, exact_sums=exact_sums,
                        channels=channels, flow=True)
    shape = (5000, channels) if channels else (5000,)
    x = rng.normal(0, 0.7, shape)
    x.flat[::97] = np.nan
    if exact_sums:
        h.fill(x, weight=spread_weights(rng, 5000, specials=True))
    elif weighted:
        h.fill(x, weight=rng.integers(-50, 50, 5000).astype(np.float64))
    else:
        h.fill(x)
    want = h.copy()
    assert distributed.all_reduce(h) is h
    assert h == want
    np.testing.assert_array_equal(h.values(), want.values())
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


@pytest.mark.parametrize("backend", ["gloo", "nccl"])
def test_all_reduce_over_two_ranks_equals_one_histogram_of_all_the_data(backend, rng, tmp_path):
    """Two processes, each filling with its shard of the data; every case's checks run in both
    (_two_rank_checks) and their failures come back as the exit code and output."""
    torch = pytest.importorskip("torch")
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch.distributed is not available in this torch")
    if backend == "nccl" and not (torch.cuda.device_count() >= 2 and dist.is_nccl_available() and _cuda_usable()):
        pytest.skip("NCCL over two ranks needs two CUDA devices, torch's NCCL and tally's CUDA backend")
    seed = int(rng.integers(1 << 31))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    logs = [tmp_path / f"rank{rank}.log" for rank in range(2)]
    ranks = []
    for rank, log in enumerate(logs):
        with open(log, "w") as out:
            ranks.append(subprocess.Popen([sys.executable, __file__, backend, str(rank), str(tmp_path / "store"),
                                           str(seed)], stdout=out, stderr=subprocess.STDOUT, env=env))
    # Until both exit, or one fails (the other would wait in a collective for ever), or 120 s pass.
    deadline, timed_out = time.monotonic() + 120, False
    while any(r.poll() is None for r in ranks) and not any(r.poll() for r in ranks):
        if time.monotonic() > deadline:
            timed_out = True
            break
        time.sleep(0.05)
    for r in ranks:
        if r.poll() is None:
            r.kill()
        r.wait()
    report = "\n".join(f"rank {rank} exited {r.returncode}:\n{log.read_text()}"
                       for rank, (r, log) in enumerate(zip(ranks, logs)))
    assert not timed_out, "the ranks ran past 120 s\n" + report
    assert all(r.returncode == 0 for r in ranks), report


def _two_rank_checks(backend, rank, store, seed):
    """One rank of the two-rank test: each case's data made whole from the same seed on both
    ranks, this rank's part of it filled (from torch tensors on the rank's device) and
    all-reduced, then compared with one fill of all of it."""
    import torch
    import torch.distributed as dist

    device = "cpu"
    if backend == "nccl":
        torch.cuda.set_device(rank)
        device = f"cuda:{rank}"
    dist.init_process_group(backend, init_method="file://" + store, rank=rank, world_size=2)
    try:
        put = lambda a: torch.from_numpy(np.ascontiguousarray(a)).to(device)
        for case, check in enumerate([_counts_of_uniform_samples, _channel_counts_of_a_hot_bin,
                                      _plain_sums_of_skewed_samples, _exact_sums_with_specials,
                                      _torch_counts]):
            rng = np.random.default_rng([seed, case])
            n = 20_000
            cut = int(rng.integers(n // 4, 3 * n // 4))  # the same cut on both ranks
            check(rng, n, [slice(0, cut), slice(cut, n)], rank, put)
    finally:
        dist.destroy_process_group()


def _assert_reduced_equals(reduced, want):
    assert reduced == want
    np.testing.assert_array_equal(reduced.values(), want.values())
    assert reduced.flow == want.flow and reduced.samples == want.samples


def _counts_of_uniform_samples(rng, n, parts, rank, put):
    x = rng.uniform(-1.2, 1.2, n)
    x[::53] = np.nan
    make = lambda: tally.Histogram(tally.axis.regular(64, -1.0, 1.0), flow=True)
    h, want = make(), make()
    h.fill(put(x[parts[rank]]))
    want.fill(x)
    _assert_reduced_equals(distributed.all_reduce(h), want)
    assert want.flow["nan"] > 0 and want.flow["underflow"] > 0 and want.flow["overflow"] > 0


def _channel_counts_of_a_hot_bin(rng, n, parts, rank, put):
    pixels = samples(rng, "u8", 3 * n, "hot").reshape(n, 3)
    make = lambda: tally.Histogram([tally.axis.regular(40, 0, 256), tally.axis.integer(80, 120),
                                    tally.axis.regular(40, 10, 100)], channels=3, flow=True)
    h, want = make(), make()
    h.fill(put(pixels[parts[rank]]))
    want.fill(pixels)
    _assert_reduced_equals(distributed.all_reduce(h), want)


def _plain_sums_of_skewed_samples(rng, n, parts, rank, put):
    """float64 sums: two ranks' all-reduce adds the two parts' sums once, so it equals the
    merge of both parts' histograms (filled on the host on one thread: the same on every run)."""
    x = samples(rng, "f64", n, "skewed", -1.0, 5.0)
    w = spread_weights(rng, n, specials=False)
    make = lambda: tally.Histogram(tally.axis.variable(np.linspace(0.0, 2.0, 31) ** 2), weighted=True,
                                   flow=True, threads=1)
    shards = [make(), make()]
    for h, p in zip(shards, parts):
        h.fill(x[p], weight=w[p])
    h = shards[rank].copy()
    _assert_reduced_equals(distributed.all_reduce(h), shards[0] + shards[1])
    want = make()
    want.fill(x, weight=w)
    assert h.flow == want.flow and h.samples == n


def _exact_sums_with_specials(rng, n, parts, rank, put):
    """Exact sums (infinities and a NaN among the weights) equal one fill of all the data bit
    for bit, where the float64 merge of the same parts differs from one fill."""
    x = samples(rng, "f64", n, "hot", -1.0, 3.0)
    w = spread_weights(rng, n, specials=True)
    x[7], w[7] = 2.0, np.inf  # an infinity out of the hot bin, where the other specials may make NaN
    make = lambda exact: tally.Histogram(tally.axis.regular(40, -0.5, 2.5), weighted=True, exact_sums=exact,
                                         flow=True, threads=1)
    h, want = make(True), make(True)
    h.fill(put(x[parts[rank]]), weight=put(w[parts[rank]]))
    want.fill(x, weight=w)
    _assert_reduced_equals(distributed.all_reduce(h), want)
    assert np.isnan(want.values()).any() and np.isinf(want.values()).any()
    plain_parts, plain_whole = [make(False), make(False)], make(False)
    for q, p in zip(plain_parts, parts):
        q.fill(x[p], weight=w[p])
    plain_whole.fill(x, weight=w)
    merged, whole = (plain_parts[0] + plain_parts[1]).values(), plain_whole.values()
    finite = np.isfinite(whole)
    assert (merged[finite] != whole[finite]).any(), "float64 sums of the parts equal one fill: no test of exactness"


def _torch_counts(rng, n, parts, rank, put):
    x = samples(rng, "i32", n, "skewed", -100, 2000)
    counts, _ = tally.histogram(put(x[parts[rank]]), 128, (0, 1000))
    assert distributed.all_reduce(counts) is counts
    want = tally.histogram(x, 128, (0, 1000))[0]
    np.testing.assert_array_equal(counts.cpu().numpy(), want)
    np.testing.assert_array_equal(want, np.histogram(x, 128, (0, 1000))[0])


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


if __name__ == "__main__":
    _two_rank_checks(sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]))

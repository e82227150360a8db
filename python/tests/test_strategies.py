"""The strategy registry (tally::strategies(), tally.strategies()) as Python sees it: every
registered strategy is listed in tally.STRATEGIES, benchmarked (a row of the committed H100
results), and reachable from Python: asked for by name on a fill it applies to, it is the plan's
choice and counts as numpy does (the CUDA ones on a GPU; skipped elsewhere)."""

import glob
import json
import os

import numpy as np
import pytest

import tally
from conftest import assert_same_array, samples

RESULTS = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "results")


def test_every_registered_strategy_is_listed_with_its_row():
    rows = tally.strategies()
    assert tally.STRATEGIES == tuple(row["name"] for row in rows)
    assert rows[0]["name"] == "automatic" and "partitioned" in tally.STRATEGIES
    for row in rows:
        assert row["backend"] in ("cpu", "cuda", "auto")
        assert all(row[key] for key in ("technique", "applies", "chosen_when")), row


def test_every_cuda_strategy_is_benchmarked():
    runs = sorted(glob.glob(os.path.join(RESULTS, "*-h100-gpu-*.json")))
    if not runs:
        pytest.skip("no committed GPU benchmark results beside this test (an installed package)")
    with open(runs[-1]) as f:
        measured = {row["who"] for row in json.load(f)["rows"]}
    for row in tally.strategies():
        if row["backend"] == "cuda":
            assert f"tally {row['name']}" in measured, (row["name"], runs[-1])


def test_cpu_strategies_are_planned_and_count_as_numpy(rng):
    a = samples(rng, "i32", 50_000, "hot", 0, 16)
    for row in tally.strategies():
        if row["backend"] == "cuda":
            continue
        assert tally.plan(a, 16, (0, 16), strategy=row["name"])["strategy"] == "cpu_private"
        assert_same_array(tally.histogram(a, 16, (0, 16), strategy=row["name"])[0],
                          np.histogram(a, 16, (0, 16))[0])
    with pytest.raises(ValueError, match="does not run on the CPU"):
        tally.histogram(a, 16, (0, 16), strategy="shared")


@pytest.mark.parametrize("distribution", ["uniform", "hot", "sorted"])
def test_cuda_strategies_are_planned_and_count_as_numpy(torch, rng, distribution):
    """One contiguous column of i32 into 16 bins: a fill every CUDA strategy takes."""
    a = samples(rng, "i32", 300_001, distribution, -2, 18)
    x = torch.from_numpy(a).cuda()
    want = np.histogram(a, 16, (0, 16))[0]
    for row in tally.strategies():
        if row["backend"] != "cuda":
            continue
        assert tally.plan(x, 16, (0, 16), strategy=row["name"])["strategy"] == row["name"]
        got = tally.histogram(x, 16, (0, 16), strategy=row["name"])[0]
        assert_same_array(got.cpu().numpy(), want)


def test_cpu_threads_follow_omp_num_threads():
    """A fill's threads (0: OpenMP's limit) honour OMP_NUM_THREADS, as Dask's nanny sets it for
    its workers, and threadpoolctl's limit where it is installed."""
    import subprocess
    import sys
    probe = ("import numpy as np, tally; print(tally.plan(np.zeros(1 << 24), bins=16)['threads'])")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1", out
    threadpoolctl = pytest.importorskip("threadpoolctl")
    x = np.zeros(1 << 24)
    with threadpoolctl.threadpool_limits(1, user_api="openmp"):
        assert tally.plan(x, bins=16)["threads"] == 1

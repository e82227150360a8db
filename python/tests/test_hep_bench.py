"""bench/hep_bench.py on the CPU: a tiny --quick run writes its rows and checks, and the checks
(tally against boost-histogram on the same events) pass; the events keep the properties the
checks rely on, and the checks fail on results that differ."""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import tally

bh = pytest.importorskip("boost_histogram")  # the checks' reference

BENCH = pathlib.Path(__file__).resolve().parents[2] / "bench" / "hep_bench.py"


def bench_module():
    spec = importlib.util.spec_from_file_location("hep_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_run_on_the_cpu(tmp_path):
    out = tmp_path / "hep.json"
    # The run imports the tally this test imports, wherever it is installed or built.
    path = os.pathsep.join(p for p in (str(pathlib.Path(tally.__file__).parents[1]), os.environ.get("PYTHONPATH")) if p)
    run = subprocess.run([sys.executable, str(BENCH), "--quick", "--events", "20000", "--device", "cpu",
                          "--out", str(out)], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=path))
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(out.read_text())
    assert result["meta"]["events"] == 20000 and sum(result["meta"]["datasets"].values()) == 20000
    rows = {(r["histogram"], r["row"]) for r in result["rows"]}
    cpus = os.cpu_count()
    for kind in ("weight", "profile"):
        for row in (f"tally (numpy, all {cpus} threads)", "tally (numpy, 1 thread)",
                    "boost-histogram (numpy, 1 thread)"):
            assert (kind, row) in rows
    assert all(r["device"] == "cpu" and r["seconds"] > 0 and r["gbs"] > 0 for r in result["rows"])
    against_boost = [c for c in result["checks"] if c["row"].startswith("tally") and c["against"].startswith("boost")]
    assert {c["histogram"] for c in against_boost} == {"weight", "profile"}
    assert result["checks_passed"] and all(c["passed"] for c in result["checks"]), result["checks"]
    assert {t["target"] for t in result["targets"]} == {"cpu_vs_boost_1_thread"}


@pytest.mark.parametrize("seed", [2, 3])
def test_events_keep_their_sums_exact(seed):
    hep = bench_module()
    columns, counts, moved = hep.events(50000, seed)
    assert sum(counts) == 50000 and all(c > 0 for c in counts)
    w, mass = columns["weight"].astype(np.float64), columns["mass"].astype(np.float64)
    # Weights in steps of 2^-10 below 4 (squares exact in float32), some negative, data's all 1.
    assert np.array_equal(w, np.rint(w / hep.WEIGHT_STEP) * hep.WEIGHT_STEP) and np.abs(w).max() < 4
    assert (w < 0).any() and np.all(w[:counts[0]] == 1)
    assert np.array_equal(mass, np.rint(mass / hep.MASS_STEP) * hep.MASS_STEP) and 0 <= mass.min() < mass.max() < 256
    assert np.isnan(columns["eta"]).any() and (columns["pt"] > hep.PT[2]).any()
    # Already off the edges: nothing left to move.
    assert hep.off_edges(columns["pt"].copy(), *hep.PT) == 0 and hep.off_edges(columns["eta"].copy(), *hep.ETA) == 0


def test_off_edges_makes_boost_and_tally_agree():
    hep = bench_module()
    bins, lo, hi = hep.PT
    edges = np.linspace(lo, hi, bins + 1).astype(np.float32)
    rng = np.random.default_rng(4)
    x = np.concatenate([edges, rng.uniform(lo - 10, hi + 10, 1000).astype(np.float32)])
    assert hep.off_edges(x, bins, lo, hi) == bins + 1
    b = bh.Histogram(bh.axis.Regular(bins, lo, hi)).fill(x)
    t = tally.Histogram(tally.axis.Regular(bins, lo, hi)).fill(x)
    assert np.array_equal(t.values(), b.values())
    assert np.array_equal(np.histogram(x, bins, (lo, hi))[0], b.values())


def test_checks_fail_on_results_that_differ():
    hep = bench_module()
    rng = np.random.default_rng(5)
    value = rng.normal(10, 3, (5, 100)).round(3)
    want = {"value": value, "variance": np.abs(value) + 1}
    assert hep.same_bits({k: v.copy() for k, v in want.items()}, want)[0]
    off = {k: v.copy() for k, v in want.items()}
    off["variance"][2, 7] = np.nextafter(off["variance"][2, 7], np.inf)
    assert not hep.same_bits(off, want)[0]
    count = rng.integers(2, 10**6, (5, 100)).astype(np.float64)
    profile = {"count": count, "value": 91 + rng.normal(0, 1, (5, 100)),
               "variance": rng.uniform(1, 9, (5, 100)) / count}
    near = {k: v.copy() for k, v in profile.items()}
    near["value"] *= 1 + 1e-15
    assert hep.within(near, profile)[0]
    for field, factor in (("value", 1 + 1e-6), ("variance", 1 + 1e-3)):
        far = {k: v.copy() for k, v in profile.items()}
        far[field][3, 3] *= factor
        assert not hep.within(far, profile)[0]
    fewer = {k: v.copy() for k, v in profile.items()}
    fewer["count"][0, 0] -= 1
    assert not hep.within(fewer, profile)[0]

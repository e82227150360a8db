"""The seed scripts of examples/seeds/ run with --quick and --out: exit status 0, the seeds' own
results printed (LeetCUDA's [0..9] example, the CUB seed's 100 samples, PMPP's letter counts, the
sigmoid's first outputs, the CuPy patterns on the CPU backend), every tally row equal to numpy's
or within its documented bound of a float64 reference. Where torch and tally's CUDA backend find
a device the scripts run their quick timed experiments too, and the rows must be timed;
elsewhere they must say "skipped: no CUDA device" after their CPU checks."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

import tally

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEEDS = ROOT / "examples" / "seeds"
PACKAGE = pathlib.Path(tally.__file__).resolve().parents[1]  # the folder holding the built package


def _gpu():
    """The scripts' own test: torch finds a CUDA device and tally's CUDA backend is usable."""
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available() and any(b["name"] == "cuda" and b["usable"] for b in tally.backends())


GPU = _gpu()


def _run(script, tmp_path):
    """Run a seed script with --quick; its stdout and its --out JSON."""
    out = tmp_path / "rows.json"
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join([str(PACKAGE), *(p for p in sys.path if p)]))
    run = subprocess.run([sys.executable, str(SEEDS / script), "--quick", "--out", str(out)], cwd=tmp_path,
                         env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{script} exited {run.returncode}\n{run.stdout[-6000:]}\n{run.stderr[-4000:]}"
    result = json.loads(out.read_text())
    assert result["seed"] == script[:3] and result["quick"] is True
    assert not result["failures"] and "FAIL" not in run.stdout, run.stdout[-6000:]
    checked = [r for r in result["rows"] if r["kind"] == "tally" and r["ok"] is not None]
    assert checked and all(r["ok"] for r in checked)
    if GPU:
        assert result["skipped"] is None and "skipped" not in run.stdout
        assert result["copy_gbps"] > 0
        timed = [r for r in result["rows"] if r["ms"] is not None]
        assert timed and all(r["ms"] > 0 and r["gbps"] > 0 and r["fraction"] > 0 for r in timed)
    else:
        assert result["skipped"] and "skipped: no CUDA device" in run.stdout
        assert all(r["ms"] is None for r in result["rows"])
    return run.stdout, result["rows"]


def _timed(rows, **match):
    return [r for r in rows if r["ms"] is not None and all(r[k] == v for k, v in match.items())]


def test_leetcuda_example_and_kernels(tmp_path):
    stdout, rows = _run("000_leetcuda_histogram.py", tmp_path)
    assert "[0..9] x 1000 -> 1000 each: ok" in stdout
    if GPU:
        for kernel in ("i32", "i32x4"):  # the seed's printout, from tally's counts
            assert all(f"h_{kernel} {i}: 1000\n" in stdout for i in range(10)), stdout[:3000]
        for strategy in ("global_atomic", "global_atomic_vec", "automatic"):
            assert _timed(rows, strategy=strategy, bins=256, distribution="uniform")
        assert _timed(rows, row="torch.bincount(x)")


def test_cub_vs_atomics(tmp_path):
    stdout, rows = _run("001_cub_vs_atomics.py", tmp_path)
    assert "ok   hotspot: 100 0 0 0 0 0 0 0 0 0\n" in stdout  # the seed's one-hot run
    assert "ok   bins=9 (CUB num_levels=10), edges: 0, 1.111, 2.222, 3.333, ...\n" in stdout
    if GPU:
        for bins in (10, 256, 4096):
            for distribution in ("uniform", "hotspot", "skewed"):
                assert _timed(rows, strategy="automatic", bins=bins, distribution=distribution, n=1 << 24)
                assert _timed(rows, strategy="global_atomic", bins=bins, distribution=distribution, n=100)
        assert _timed(rows, strategy="register", bins=10)
        assert not _timed(rows, strategy="register", bins=256)  # n/a beyond 29 bins
        assert max(r["n"] for r in rows if r["n"]) == 1 << 24
        assert any(r["row"].startswith("torch.bincount") for r in _timed(rows, kind="peer"))


def test_pmpp_chapter_9(tmp_path):
    stdout, rows = _run("003_pmpp_ch9.py", tmp_path)
    assert "PMPP letters: a-d 5, e-h 5, i-l 6, m-p 10, q-t 10, u-x 1, y-z 1\n" in stdout
    for name in ("group codes, tally.bincount", "byte codes, tally.histogram(bins=edges)",
                 "RGB, tally.Histogram(..., channels=3)", "weighted, float32 sums",
                 "R x G, tally.histogram2d, 64 x 64 bins"):
        assert f"ok   {name}: " in stdout
    if GPU:
        for kind in ("random", "realistic", "black"):
            for strategy in ("global_atomic", "shared", "warp_aggregated", "shared_replicated", "automatic"):
                assert _timed(rows, experiment="ladder", strategy=strategy, distribution=kind, n=1920 * 1080)
        for experiment in ("letters", "rgb", "weighted", "2-D"):
            assert _timed(rows, experiment=experiment, strategy="automatic")
        assert "speed-up over step 1 (global_atomic)" in stdout


def test_leetcuda_sigmoid(tmp_path):
    stdout, rows = _run("002_sigmoid.py", tmp_path)
    assert "ok   the ladder's strategies are tally's: " in stdout
    for dtype in ("f32", "f16"):  # the seed's printout of its first two outputs, from tally's CPU backend
        assert f"ok   {dtype}: tally.sigmoid(x), CPU backend: out_{dtype}: [" in stdout
    if GPU:
        ladder = {"f32": ("scalar", "packed128", "x4", "automatic"),
                  "f16": ("scalar", "x2", "x8", "packed128", "automatic")}
        for dtype, strategies in ladder.items():
            for n in (1024 * 1024, 4096 * 4096):  # the quick shapes
                for strategy in strategies:
                    assert _timed(rows, experiment=dtype, strategy=strategy, n=n)
                assert _timed(rows, experiment=dtype, kind="peer", n=n, row=f"{dtype}_th: torch.sigmoid(x, out=y)")
        assert all(r["ok"] for r in _timed(rows, kind="tally"))


def test_cupy_patterns(tmp_path):
    stdout, rows = _run("004_cupy_patterns.py", tmp_path)
    for name in ("a / (b + epsilon): tally.div(a, tally.add(b, 1e-8))",
                 "array_2d + a[:, None]: tally.add, (10^4, 100)", "tally.sum(x)",
                 "ReductionKernel(x, a + b), callables", "tally.matmul(A, B), CPU backend", "tally.sigmoid(x)",
                 "ElementwiseKernel, a callable", "tally.bincount(data, minlength=256), int32"):
        assert f"ok   {name}: " in stdout
    if any(b["name"] == "cuda" and b["compiled"] for b in tally.backends()):  # NVRTC, with or without a device
        for kernel in ("reduce_sum", "matmul_tiled", "parallel_map", "histogram", "histogram_u8"):
            assert f"ok   {kernel}: tally.RawKernel(...).compile(arch=90): compiles\n" in stdout
    if GPU:
        for experiment in ("elementwise", "broadcasting", "reduction", "matmul", "map", "histogram"):
            assert _timed(rows, experiment=experiment, kind="tally")
            assert _timed(rows, experiment=experiment, kind="peer")
        for row in ("reduce_sum (the seed's): tally.RawKernel + tally.sum",
                    "matmul_tiled (the seed's): tally.RawKernel",
                    "parallel_map (the seed's): tally.RawKernel",
                    "histogram (the seed's): tally.RawModule",
                    "__shared__ 256 bins, u8: tally.RawKernel",
                    "tally.ElementwiseKernel(y = 1 / (1 + expf(-x)))",
                    "tally.ReductionKernel(x, a + b)",
                    "b + epsilon: tally.add(b, 1e-8)"):
            assert _timed(rows, row=row)
        for strategy in tally.patterns.MATMUL_STRATEGIES:
            assert _timed(rows, experiment="matmul", strategy=strategy, n=1024)
        assert all(r["TFLOP/s"] > 0 for r in _timed(rows, experiment="matmul"))
        assert _timed(rows, row="torch: matmul(A, B), TF32 off")


@pytest.mark.parametrize("script", sorted(p.name for p in SEEDS.glob("[0-9]*.py")))
def test_every_script_is_listed_and_documented(script):
    assert script in (SEEDS / "README.md").read_text()
    assert f"examples/seeds/{script}" in (ROOT / "docs" / "seeds.md").read_text()

"""`tally hist --bins NAME`: numpy's bin estimators (auto, fd, doane, rice, scott, sqrt, stone,
sturges) computed by tally's core (tally::estimate_bins), checked through the tool against
numpy.histogram(x, NAME, range) on random data of several shapes: the same edges and counts for
samples of every type (NaN left out, as the tool leaves it out of every histogram; bfloat16 as its
float32 values), each channel its own estimate, and clear errors where numpy refuses (weights, an
estimator's failure) or the name is unknown.

The tool is found as test_fuzz_cli.py finds it (build/python -> build/cli/tally, or $TALLY_CLI);
without it the tests are skipped."""

import json
import os
import pathlib
import subprocess
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tally

CLI = pathlib.Path(os.environ.get("TALLY_CLI") or pathlib.Path(tally.__file__).resolve().parents[2] / "cli" / "tally")
pytestmark = pytest.mark.skipif(not CLI.is_file(), reason=f"the command-line tool is not built ({CLI})")

ESTIMATORS = ["auto", "fd", "doane", "rice", "scott", "sqrt", "stone", "sturges"]


def run(*args):
    return subprocess.run([str(CLI), "hist", *map(str, args)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60)


def histograms(directory, x, *args):
    """The tool's histograms (edges, counts) of x saved as .npy, and its stderr."""
    path = pathlib.Path(directory)
    np.save(path / "x.npy", x)
    p = run(path / "x.npy", "--out", path / "out.json", "--no-bars", *args)
    assert p.returncode == 0, p.stderr
    return [(np.array(h["axes"][0]["edges"] if "axes" in h else h["edges"]), np.array(h["counts"]))
            for h in json.loads((path / "out.json").read_text())["histograms"]], p.stderr


def numpy_histogram(x, name, range_):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        counts, edges = np.histogram(x, name, range_)
    return edges, counts, any("suboptimal" in str(w.message) for w in caught)


def shaped(rng, shape, n):
    if shape == "uniform":
        return rng.uniform(-50, 50, n)
    if shape == "normal":
        return rng.normal(3, 7, n)
    if shape == "skewed":
        return rng.lognormal(0, 1.5, n)
    if shape == "hot":  # nine in ten samples on one value
        return np.where(rng.random(n) < 0.9, 2.5, rng.uniform(0, 10, n))
    return np.sort(rng.normal(0, 1, n))  # sorted


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.sampled_from([1, 2, 5, 30, 1000, 20_000]),
       shape=st.sampled_from(["uniform", "normal", "skewed", "hot", "sorted"]),
       dtype=st.sampled_from(["float64", "float32", "float16", "int64", "int32", "uint8", "int16", "int8",
                              "uint16", "uint32", "uint64"]),
       ranged=st.booleans(), name=st.sampled_from(ESTIMATORS))
def test_every_estimator_gives_numpys_edges_and_counts(tmp_path_factory, seed, n, shape, dtype, ranged, name):
    rng = np.random.default_rng(seed)
    x = shaped(rng, shape, n)
    if dtype.startswith("float"):
        x = x.astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = np.clip(np.floor(x * 3 + (0 if dtype.startswith("int") else 100)), info.min, info.max).astype(dtype)
    range_ = None
    if ranged:
        lo, hi = np.quantile(x.astype(np.float64), [0.1, 0.8]).tolist()
        range_ = (float(np.floor(lo)), float(np.floor(hi)) + 1.0)
    args = ["--bins", name] + (["--range", f"{range_[0]!r},{range_[1]!r}"] if range_ else [])
    path = tmp_path_factory.mktemp("bins")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            want_edges = np.histogram_bin_edges(x, name, range_)
        except ValueError as e:  # numpy's estimator fails (float16 edges that collide): so does the tool
            np.save(path / "x.npy", x)
            p = run(path / "x.npy", "--no-bars", *args)
            assert p.returncode == 1 and str(e) in p.stderr, p.stderr
            return
    warns = any("suboptimal" in str(w.message) for w in caught)
    if want_edges.size < 2:  # an estimate of no bins (numpy.histogram fails on it): the tool refuses
        np.save(path / "x.npy", x)
        p = run(path / "x.npy", "--no-bars", *args)
        assert p.returncode == 1 and "the estimate is 0 bins" in p.stderr, p.stderr
        return
    [(edges, counts)], stderr = histograms(path, x, *args)
    np.testing.assert_array_equal(edges, want_edges)
    try:
        want_counts = numpy_histogram(x, name, range_)[1]
    except (ValueError, IndexError):  # numpy's float16 arithmetic fails on its own index
        want_counts = None
    if want_counts is None or dtype == "float16":  # (or counts a sample a bin off its own edges)
        inside = x[(x >= want_edges[0]) & (x <= want_edges[-1])].astype(np.float64)
        want_counts = np.histogram(inside, want_edges.astype(np.float64))[0]
    np.testing.assert_array_equal(counts, want_counts)
    assert ("may be suboptimal" in stderr) == warns


def test_bfloat16_samples_are_estimated_as_their_float32_values(tmp_path):
    x = np.random.default_rng(6).normal(5, 3, 3000).astype(np.float32)
    bf16 = (x.view(np.uint32) >> 16).astype(np.uint16)  # truncated to bfloat16: exact float32 values
    (tmp_path / "x.bf16").write_bytes(bf16.tobytes())
    values = (bf16.astype(np.uint32) << 16).view(np.float32)
    for name in ESTIMATORS:
        [(edges, counts)], _ = histograms(tmp_path, values, "--bins", name)  # float32 samples
        p = run(tmp_path / "x.bf16", "--dtype", "bf16", "--out", tmp_path / "bf.json", "--no-bars", "--bins", name)
        assert p.returncode == 0, p.stderr
        h = json.loads((tmp_path / "bf.json").read_text())["histograms"][0]
        assert len(h["counts"]) == len(counts) == len(np.histogram_bin_edges(values, name)) - 1


def test_nan_is_left_out_and_each_channel_has_its_own_estimate(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1, 5000)
    x[::7] = np.nan
    [(edges, counts)], _ = histograms(tmp_path, x, "--bins", "fd")
    want_counts, want_edges = np.histogram(x[~np.isnan(x)], "fd")
    np.testing.assert_array_equal(edges, want_edges)
    np.testing.assert_array_equal(counts, want_counts)
    # Two interleaved channels of different spreads: two estimates, each numpy's of its column.
    rows = np.stack([rng.normal(0, 1, 3000), rng.uniform(0, 1000, 3000)], axis=1)
    got, _ = histograms(tmp_path, rows.ravel(), "--channels", "2", "--bins", "auto")
    for (edges, counts), column in zip(got, rows.T):
        want_counts, want_edges = np.histogram(column, "auto")
        np.testing.assert_array_equal(edges, want_edges)
        np.testing.assert_array_equal(counts, want_counts)
    assert len(got[0][1]) != len(got[1][1])


def test_an_estimate_at_stones_bound_warns_as_numpy_does(tmp_path):
    x = shaped(np.random.default_rng(4), "hot", 1000)  # one hot value: stone wants every bin it may try
    edges, _, warns = numpy_histogram(x, "stone", None)
    assert warns
    [(got, _)], stderr = histograms(tmp_path, x, "--bins", "stone")
    np.testing.assert_array_equal(got, edges)
    assert "tally: warning: the number of bins estimated may be suboptimal" in stderr


@pytest.mark.parametrize("args, message", [
    (["--bins", "auto", "--weights", "w.npy"], "--bins auto estimates from unweighted data"),
    (["--bins", "Auto"], "or one of numpy's estimators auto, fd, doane, rice, scott, sqrt, stone, sturges"),
    (["--bins", "auto,fd"], "'auto' is not a number of bins"),
    (["--bins", "sturges", "--integer"], "--integer makes one bin per integer; it does not go with --bins"),
])
def test_refusals_are_clear(tmp_path, args, message):
    np.save(tmp_path / "x.npy", np.arange(10.0))
    np.save(tmp_path / "w.npy", np.ones(10))
    p = run(tmp_path / "x.npy", *[tmp_path / a if a.endswith(".npy") else a for a in args])
    assert p.returncode == 2, p.stderr
    assert message in p.stderr

"""tally.Histogram filled chunk by chunk equals one numpy call over all the data; channels, N-D,
flow counters, reset; tally.plan and the package's metadata."""

import re
from pathlib import Path

import numpy as np
import pytest

import tally
from conftest import assert_same_array, samples


def test_chunks_equal_one_call(rng):
    a = samples(rng, "f32", 100003, "skewed")
    h = tally.Histogram(tally.axis.regular(50, 0.1, 0.7, np.float32))
    for chunk in np.array_split(a, 7):
        h.fill(chunk)
    want, want_e = np.histogram(a, bins=50, range=(0.1, 0.7))
    assert_same_array(h.values(), want)
    assert_same_array(h.edges.astype(np.float32), want_e)
    assert h.samples == a.size
    assert np.array_equal(h.density(), np.histogram(a, bins=50, range=(0.1, 0.7), density=True)[0])
    h.reset()
    assert h.samples == 0 and not h.values().any()


def test_weighted_variable_and_integer_axes(rng):
    a = samples(rng, "i32", 50000, "hot", 0, 300)
    w = rng.random(a.size)
    edges = [0, 3, 10, 70.5, 150, 299]
    h = tally.Histogram(tally.axis.variable(edges), weighted=True)
    h.fill(a[:20000], weight=w[:20000])
    h.fill(a[20000:], weight=w[20000:])
    np.testing.assert_allclose(h.values(), np.histogram(a, bins=edges, weights=w)[0], rtol=1e-12)
    g = tally.Histogram(tally.axis.integer(0, 300))
    g.fill(a)
    assert_same_array(g.values(), np.bincount(a, minlength=300))


def test_nd_columns_and_matrix(rng):
    m = samples(rng, "f64", 3 * 30000, "uniform").reshape(-1, 3)
    axes = [tally.axis.regular(4, -3, 7), tally.axis.variable([-3, 0, 1, 7]), tally.axis.integer(-3, 7)]
    h = tally.Histogram(axes)
    h.fill(m[:10000])
    h.fill(m[10000:, 0], m[10000:, 1], m[10000:, 2])
    want, _ = np.histogramdd(np.column_stack([m[:, 0], m[:, 1], np.floor(m[:, 2])]),
                             bins=[np.linspace(-3, 7, 5), [-3, 0, 1, 7], np.arange(-3, 8)])
    assert_same_array(h.values(), want.astype(np.int64))
    assert [e.size for e in h.edges] == [5, 4, 11]


def test_channels(rng):
    pixels = rng.integers(0, 256, (64, 48, 4), dtype=np.uint8)
    h = tally.Histogram(tally.axis.integer(0, 256), channels=4)
    h.fill(pixels)
    for c in range(4):
        assert_same_array(h.values()[c], np.bincount(pixels[..., c].ravel(), minlength=256))
    rgb = tally.Histogram([tally.axis.regular(8, 0, 256), tally.axis.integer(0, 256)], channels=2)
    rgb.fill(pixels[:, ::2, :2])  # a strided view: copied once to interleaved memory
    assert_same_array(rgb.values()[1], np.bincount(pixels[:, ::2, 1].ravel(), minlength=256))


def test_flow_and_32_bit_counts(rng):
    a = samples(rng, "f64", 10000, "uniform")
    a[:7] = np.nan
    h = tally.Histogram(tally.axis.regular(10, 0, 1), flow=True, count_bits=32)
    h.fill(a)
    inside = ((a >= 0) & (a <= 1)).sum()
    assert h.values().sum() == inside
    assert h.flow == dict(underflow=int((a < 0).sum()), overflow=int((a > 1).sum()), nan=7)


def test_plan_is_the_planners_choice(rng):
    p = tally.plan(samples(rng, "f32", 1000, "uniform"), bins=64)
    assert p["backend"] == "cpu" and p["strategy"] == "cpu_private" and p["reasons"]
    q = tally.plan(dtype=np.int32, n=2**28, bins=256, strategy="cpu_private")
    assert q["threads"] >= 1 and "cpu_private" in q["description"]
    assert tally.Histogram(tally.axis.integer(0, 8)).plan("u8", 100)["backend"] == "cpu"
    assert set(tally.STRATEGIES) >= {"automatic", "cpu_private", "shared_replicated"}


def test_version_has_one_source():
    cmake = (Path(__file__).resolve().parents[2] / "CMakeLists.txt").read_text()
    assert tally.__version__ == re.search(r"project\(tally VERSION ([0-9.]+)", cmake).group(1)
    assert any(b["name"] == "cpu" and b["usable"] for b in tally.backends())


@pytest.mark.parametrize("kind", ["counts", "weighted", "channels"])
def test_fills_from_many_threads_lose_nothing(rng, kind):
    """Fills (which run without the GIL) and reads of one Histogram from 8 threads at once: every
    sample counted once, as one fill of all of them."""
    import threading
    chunks = [rng.integers(0, 64, size=(50_000, 3) if kind == "channels" else 50_000, dtype=np.int32)
              for _ in range(8)]
    weights = [rng.integers(-3, 4, size=c.shape[0]).astype(np.float64) for c in chunks]
    axis = tally.axis.integer(0, 64)
    h = tally.Histogram(axis, weighted=kind == "weighted", channels=3 if kind == "channels" else None)
    errors = []

    def work(i):
        try:
            for _ in range(6):
                if kind == "weighted":
                    h.fill(chunks[i], weight=weights[i])
                else:
                    h.fill(chunks[i])
                h.values()
        except Exception as e:  # noqa: BLE001 (reported below, in the main thread)
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    allx = np.concatenate(chunks * 6)
    if kind == "channels":
        want = np.stack([np.bincount(allx[:, c], minlength=64) for c in range(3)])
    elif kind == "weighted":
        want = np.bincount(allx, weights=np.concatenate(weights * 6), minlength=64)
    else:
        want = np.bincount(allx, minlength=64)
    np.testing.assert_array_equal(h.values(), want)


def test_reset_from_another_thread_leaves_whole_fills(rng):
    """A reset racing fills leaves the counts of whole fills: the total is a multiple of the
    chunk, and equals the samples counter."""
    import threading
    x = rng.integers(0, 16, size=100_000, dtype=np.int32)
    h = tally.Histogram(tally.axis.integer(0, 16))
    done = threading.Event()

    def fill():
        for _ in range(30):
            h.fill(x)
        done.set()

    t = threading.Thread(target=fill)
    t.start()
    while not done.is_set():
        h.reset()
    t.join()
    total = int(h.values().sum())
    assert total % x.size == 0
    assert total == h.samples

"""The package's caches in one list (tally.caches()): each described, filled by the calls that
use it, emptied by tally.clear_caches(), after which the same calls give numpy's answers again."""

import numpy as np

import tally
from conftest import assert_same_array


def _calls(a):
    return [tally.histogram(a, 16, (0.0, 1.0)), tally.histogram(a, 7), tally.bincount((a * 50).astype(np.int64))]


def test_caches_are_listed_filled_and_cleared(rng):
    a = rng.random(1000)
    want = [np.histogram(a, 16, (0.0, 1.0)), np.histogram(a, 7), np.bincount((a * 50).astype(np.int64))]
    first = _calls(a)
    listed = tally.caches()
    names = [c["name"] for c in listed]
    assert len(names) == len(set(names))
    assert {"calls", "regular edges", "device edges", "integer axes"} <= set(names)
    for c in listed:
        assert c["keeps"] and c["key"] and c["bound"] and c["size"] >= 0, c
    sizes = {c["name"]: c["size"] for c in listed}
    assert sizes["regular edges"] > 0  # (the others fill on CUDA arrays)
    tally.clear_caches()
    assert all(c["size"] == 0 for c in tally.caches()), tally.caches()
    for got in (first, _calls(a)):
        for g, w in zip(got, want):
            if isinstance(w, tuple):
                assert_same_array(g[0], w[0])
                assert_same_array(g[1], w[1])
            else:
                assert_same_array(g, w)

"""numpy's edge rules in the core (tally/edges.hpp) against numpy.linspace itself: every float
type as arithmetic and as edge type, ranges of every magnitude, equal ends, signed zeros."""

import warnings

import numpy as np
import pytest

import tally
from conftest import assert_same_array

_tally = tally._tally
TYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def test_linspace_edges_are_numpys_bit_for_bit(rng):
    for _ in range(3000):
        arithmetic, edge_type = rng.choice(list(TYPES)), rng.choice(list(TYPES))
        scale = 10.0 ** int(rng.integers(-3, 4) if arithmetic == "f16" else rng.integers(-30, 30))
        lo = rng.normal() * scale
        hi = lo + abs(rng.normal()) * scale * rng.choice([1, 1e-3, 1e-7, 0])
        n = int(rng.choice([1, 2, 3, 7, 10, 64, 100, 1000, 4097]))
        first, last = TYPES[arithmetic](lo), TYPES[arithmetic](hi)
        with warnings.catch_warnings():  # numpy's overflow warnings for float16 ranges
            warnings.simplefilter("ignore")
            want = np.linspace(first, last, n + 1, dtype=TYPES[edge_type]).astype(np.float64)
        got = _tally.linspace_edges(n, float(first), float(last), arithmetic, edge_type)
        assert_same_array(got, want)


@pytest.mark.parametrize("first, last", [(-1.0, -0.0), (-0.0, 1.0), (-2.0, -0.0), (-0.0, 1e-300)])
def test_signed_zeros_keep_their_sign(first, last):
    want = np.linspace(first, last, 9)
    assert_same_array(_tally.linspace_edges(8, first, last, "f64", "f64"), want)
    axis = _tally.equal_bins(8, first, last, "f64", "f64")
    assert_same_array(axis.edges, want)  # the axis' edges are what histogram returns


def test_equal_bins_refuses_as_numpy():
    with pytest.raises(ValueError, match="Too many bins for data range. Cannot create 100 finite-sized bins."):
        _tally.equal_bins(100, 1.0, float(np.nextafter(np.float32(1), np.float32(2))), "f32", "f32")
    with pytest.raises(ValueError):
        _tally.equal_bins(4, -60000.0, 60000.0, "f16", "f16")  # numpy's edges: nan, inf, inf, inf, 60000
    a = np.array([1, 2], np.float16)
    for call in (np.histogram, tally.histogram):
        with pytest.raises(ValueError, match="Too many bins"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(a, 3, (np.float16(-6e4), np.float16(6e4)))


def test_float32_data_take_float32_arithmetic():
    """A float32 range from the data is numpy's float32 linspace, which float64 linspace rounded
    to float32 is not: numpy's edges, and the samples on them in numpy's bins."""
    a = np.array([-13.031572, -3.977014], np.float32)
    want_counts, want_edges = np.histogram(np.concatenate([a, np.linspace(a[0], a[1], 7, dtype=np.float32)]), 6)
    got_counts, got_edges = tally.histogram(np.concatenate([a, np.linspace(a[0], a[1], 7, dtype=np.float32)]), 6)
    assert_same_array(got_edges, want_edges)
    assert_same_array(got_counts, want_counts)
    assert not np.array_equal(want_edges, np.linspace(float(a[0]), float(a[1]), 7).astype(np.float32))


def test_edges_that_overflow_to_infinity_are_numpys():
    """A Python-int range of int64's extremes over float16 samples: numpy computes the edges in
    float64 and rounds them to float16, [-inf, inf]. numpy.histogram then fails on its own index
    (IndexError) where there are samples; tally counts them by numpy's edges."""
    r = (-2**63, 2**63 - 1)
    empty = np.zeros(0, np.float16)
    assert_same_array(tally.histogram(empty, 1, r)[1], np.histogram(empty, 1, r)[1])
    assert_same_array(tally.histogram(empty, 1, r)[0], np.histogram(empty, 1, r)[0])
    a = np.array([-3.5, 0.0, 60000.0], np.float16)
    with pytest.raises(IndexError):
        np.histogram(a, 1, r)
    counts, edges = tally.histogram(a, 1, r)
    assert_same_array(edges, np.histogram_bin_edges(a, 1, r))
    assert_same_array(counts, np.array([3]))

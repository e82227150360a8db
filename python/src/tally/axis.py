"""Axes for tally.Histogram: each maps a sample to a bin under tally's one bin rule (bins are
[e_k, e_k+1), the last one also holds its right edge; values outside and NaN are dropped)."""

import numpy as np

from . import _tally
from ._arrays import int64_arg, to_host

Axis = _tally.Axis


def regular(bins, lo, hi, edge_type="f64"):
    """``bins`` equal bins over [lo, hi]: the edges are numpy.linspace(lo, hi, bins + 1) rounded
    to ``edge_type`` ('f64', 'f32', 'f16', 'bf16' or a numpy float type), the edges
    numpy.histogram uses for samples of that type with ``range=(lo, hi)``."""
    if not isinstance(edge_type, str):
        edge_type = np.dtype(edge_type).name
    return _tally.Axis.regular(int64_arg(bins, "bins"), float(lo), float(hi), edge_type)


def variable(edges):
    """Arbitrary edges: at least two, non-decreasing, not NaN (the outer ones may be infinite)."""
    e = np.ascontiguousarray(to_host(edges), dtype=np.float64)
    if e.ndim != 1:
        raise ValueError("variable axis: edges must be 1-D")
    return _tally.Axis.variable(e)


def integer(lo, hi):
    """One bin per integer in [lo, hi), as numpy.bincount's bins (integer(0, n))."""
    return _tally.Axis.integer(int64_arg(lo, "lo"), int64_arg(hi, "hi"))

"""numpy's bin edges, bit for bit, and the tally axis that bins by them.

numpy.histogram with an integer number of bins computes ``linspace(first, last, n + 1,
dtype=bin_type)``, where ``first, last`` are the range (or the data's min and max as scalars of the
data's type, widened by 0.5 each side when equal) and ``bin_type = result_type(first, last, a)``,
float64 for integers. So float32 data get float32 edges, computed in float64 when the range is
given as Python floats but in float32 arithmetic when it comes from the data. The edges are
therefore computed here with numpy itself; tally's regular axis (linspace in float64 rounded to
the edge type) is used when its edges are the same, else a variable axis over numpy's edges,
which bins identically ("the bin whose edges hold x"), only slower on the GPU.
"""

import functools

import numpy as np

from . import _tally

_EDGE_TYPES = {"float16": "f16", "float32": "f32", "float64": "f64"}


def outer_edges(src, range):
    """numpy's _get_outer_edges: the first and last edge from `range` or the data."""
    if range is not None:
        first, last = range
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
    elif src.size == 0:
        first, last = 0, 1
    else:
        first, last = src.min_max()
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
    if first == last:
        first = first - 0.5
        last = last + 0.5
    return first, last


def regular(src, n, range):
    """numpy.histogram's edges for `n` equal bins, and the axis that bins by them.
    Returns (host edges, output dtype name or None, tally axis)."""
    first, last = outer_edges(src, range)
    if src.type == "bf16":
        # numpy has no bfloat16: the edges are linspace in float64 rounded to bf16 (tally's rule).
        axis = _tally.Axis.regular(n, float(first), float(last), "bf16")
        return axis.edges(), "bfloat16", axis
    bin_type = np.result_type(first, last, np.empty(0, src.np_dtype))
    if np.issubdtype(bin_type, np.integer) or bin_type == np.bool_:
        bin_type = np.result_type(bin_type, float)
    return _regular_cached(n, _key(first), _key(last), bin_type.str)


def _key(value):
    """A hashable stand-in for a range value that keeps its numpy type (it decides the
    arithmetic of numpy's linspace)."""
    if isinstance(value, np.generic):
        return (value.dtype.str, value.item())
    return (type(value).__name__, value)


def _value(key):
    kind, v = key
    return np.dtype(kind).type(v) if kind not in ("int", "float", "bool") else v


@functools.lru_cache(maxsize=256)
def _regular_cached(n, first_key, last_key, bin_type_str):
    first, last = _value(first_key), _value(last_key)
    bin_type = np.dtype(bin_type_str)
    edges = np.linspace(first, last, n + 1, endpoint=True, dtype=bin_type)
    if np.any(edges[:-1] >= edges[1:]):
        raise ValueError(f"Too many bins for data range. Cannot create {n} finite-sized bins.")
    edges.flags.writeable = False
    axis = None
    edge_type = _EDGE_TYPES.get(bin_type.name)
    if edge_type is not None and np.isfinite(edges[0]) and np.isfinite(edges[-1]):
        try:
            candidate = _tally.Axis.regular(n, float(first), float(last), edge_type)
            if np.array_equal(candidate.edges(), edges.astype(np.float64)):
                axis = candidate
        except ValueError:
            pass
    if axis is None:
        axis, fix = from_array(edges)
        if fix is not None:
            raise ValueError(f"tally: the edges of {n} bins over [{first}, {last}] overflow "
                             f"{bin_type.name}")
    return edges, None, axis


def check_monotonic(edges, message):
    edges = np.asarray(edges)
    if edges.size > 1 and np.any(edges[:-1] > edges[1:]):
        raise ValueError(message)
    return edges


class Fixup:
    """How the cells of an axis built from numpy edges map back to numpy's bins: numpy allows
    repeated edges (empty bins, except a repeated last edge, whose bin holds the values equal to
    it) and an infinite first or last edge; tally's axes need finite, strictly increasing edges.
    An infinite end edge becomes the largest finite double, and the infinite samples, which then
    fall outside, are taken from the flow counters (so only 1-D histograms may have them)."""

    __slots__ = ("take", "keep", "add_underflow", "add_overflow")

    def __init__(self, take, keep, add_underflow, add_overflow):
        self.take, self.keep = take, keep
        self.add_underflow, self.add_overflow = add_underflow, add_overflow

    @property
    def needs_flow(self):
        return self.add_underflow or self.add_overflow

    def apply(self, values, axis=0, flow=None):
        """numpy's bins along `axis` of host `values` from tally's cells (and flow counts)."""
        shape = [1] * values.ndim
        shape[axis] = self.keep.size
        out = np.take(values, self.take, axis=axis) * self.keep.reshape(shape).astype(values.dtype)
        if self.add_underflow:
            out[np.argmax(self.keep)] += flow[0]
        if self.add_overflow:
            out[-1] += flow[1]
        return out


def from_array(edges):
    """A tally axis for numpy edges (non-decreasing, any dtype): (axis, Fixup or None)."""
    e = np.asarray(edges, dtype=np.float64)
    if e.ndim != 1 or e.size < 2:
        raise ValueError("`bins` must have at least 2 edges, when an array")
    if np.isnan(e).any():
        raise ValueError("tally: bin edges must not be NaN")
    if np.all(np.isfinite(e)) and np.all(e[:-1] < e[1:]):
        return _tally.Axis.variable(np.ascontiguousarray(e)), None
    largest = np.finfo(np.float64).max
    add_underflow, add_overflow = bool(e[0] == -np.inf), bool(e[-1] == np.inf)
    inner = np.clip(e, -largest, largest)  # monotonic: inner infinities repeat an end edge
    unique = np.unique(inner)
    keep = inner[:-1] < inner[1:]
    take = np.searchsorted(unique, inner[:-1])
    if inner[-2] == inner[-1]:
        if add_overflow:
            keep[-1] = False  # the bin [inf, inf]: only the overflow (x == inf) goes there
        else:
            # A last bin [e, e] holds exactly the values equal to e: give it a cell of its own.
            unique = np.append(unique, np.nextafter(unique[-1], np.inf))
            take[-1], keep[-1] = unique.size - 2, True
    if unique.size < 2:
        unique = np.append(unique, np.nextafter(unique[-1], np.inf))
    take = np.minimum(take, unique.size - 2)
    return _tally.Axis.variable(unique), Fixup(take, keep, add_underflow, add_overflow)

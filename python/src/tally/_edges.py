"""numpy's bin edges, bit for bit, and the tally axis that bins by them.

numpy.histogram with an integer number of bins computes ``linspace(first, last, n + 1,
dtype=bin_type)``, where ``first, last`` are the range (or the data's min and max as scalars of the
data's type, widened by 0.5 each side when equal) and ``bin_type = result_type(first, last, a)``,
float64 for integers. So float32 data get float32 edges, computed in float64 when the range is
given as Python floats but in float32 arithmetic when it comes from the data. numpy's own type
promotion (of this numpy version) names the two types here; the core computes numpy's linspace in
them and picks the axis (tally::equal_bins): the regular axis where its edges are numpy's, else a
variable axis over numpy's edges, which bins identically.
"""

import functools
import math
import weakref

import numpy as np

from . import _caches, _tally

_EDGE_TYPES = {"float16": "f16", "float32": "f32", "float64": "f64"}


def outer_edges(src, range, extremes=None):
    """numpy's _get_outer_edges: the first and last edge from `range` or the data (`extremes`,
    a callable giving (min, max), stands for src.min_max() where numpy reads other values)."""
    if range is not None:
        # 0-d arrays are numpy's scalars to numpy's arithmetic (integers compare exactly)
        first, last = (v[()] if isinstance(v, np.ndarray) and v.ndim == 0 else v for v in range)
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
    elif src.size == 0:
        first, last = 0, 1
    else:
        first, last = src.min_max() if extremes is None else extremes()
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
        return axis.edges, "bfloat16", axis
    edges, out_dtype, axis = _regular_cached(n, range_key(first), range_key(last), _bin_type(src, first, last).str)
    return edges, out_dtype, exact_range(axis, src, first, last)


def _bin_type(src, first, last):
    """numpy's bin type: result_type(first, last, a), float64 for integers."""
    bin_type = np.result_type(first, last, np.empty(0, src.np_dtype))
    if np.issubdtype(bin_type, np.integer) or bin_type == np.bool_:
        bin_type = np.result_type(bin_type, float)
    return bin_type


def no_bins(src, n, range):
    """numpy's edges for an estimate of n < 1 bins, linspace(first, last, n + 1) in its bin type:
    one edge for 0 bins, none for -1, numpy's ValueError below. Returns (edges, output dtype)."""
    first, last = outer_edges(src, range)
    if src.type == "bf16":
        return np.linspace(float(first), float(last), n + 1), "bfloat16"
    return np.linspace(first, last, n + 1, endpoint=True, dtype=_bin_type(src, first, last)), None


# numpy's integer and float scalar types as the extension names them, for estimator ranges.
_SCALAR_TYPES = {np.dtype(name): t for name, t in (
    ("uint8", "u8"), ("int8", "i8"), ("uint16", "u16"), ("int16", "i16"), ("uint32", "u32"), ("int32", "i32"),
    ("uint64", "u64"), ("int64", "i64"), ("float16", "f16"), ("float32", "f32"), ("float64", "f64"))}
if np.finfo(np.longdouble).nmant == np.finfo(np.float64).nmant:  # longdouble as float64 (e.g. Windows)
    _SCALAR_TYPES[np.dtype(np.longdouble)] = "f64"


def estimator_end(value):
    """A range end (outer_edges') as the extension's estimate_bins reads it, keeping what numpy's
    promotion reads of it: (kind, value, negative, magnitude, beyond), kind 'int' or 'float' for
    a Python number (NEP 50's weak scalars), else the numpy scalar's tally type name; integers
    exactly (magnitude), or `beyond` 2**64. A bool promotes as a Python int does."""
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if isinstance(value, np.generic):
        kind = _SCALAR_TYPES.get(value.dtype)
        if kind is None:
            raise TypeError(f"tally: a range of {value.dtype} with a bin estimator: numpy computes it in "
                            f"{value.dtype}, which tally does not (it takes Python numbers and numpy's "
                            "integer, float16, float32 and float64 scalars)")
        if value.dtype.kind == "f":
            return kind, float(value), False, 0, False
        value = int(value)
        return kind, float(value), value < 0, abs(value), False
    if isinstance(value, float):
        return "float", value, False, 0, False
    if isinstance(value, int):
        if abs(value) < 2**64:
            return "int", float(value), value < 0, abs(value), False
        return "int", float(value) if abs(value) < 2**1024 else math.copysign(math.inf, value), value < 0, 2**64 - 1, True
    raise TypeError(f"tally: a range of {type(value).__name__} values with a bin estimator: tally takes Python "
                    "numbers and numpy's integer and float scalars")


def range_key(value):
    """A hashable stand-in for a range value that keeps its numpy type (it decides the
    arithmetic of numpy's linspace) and the sign of a zero (-0.0 == 0.0, but an edge keeps it).
    Plain ints and floats first: the kept calls key every call's range by it."""
    kind = type(value)
    if kind is int:
        return "int", value, False
    if kind is float:
        return "float", value, value == 0 and math.copysign(1.0, value) < 0
    kind, v = (value.dtype.str, value.item()) if isinstance(value, np.generic) else (kind.__name__, value)
    return kind, v, isinstance(v, float) and v == 0 and math.copysign(1.0, v) < 0


def _value(key):
    kind, v, _ = key
    return np.dtype(kind).type(v) if kind not in ("int", "float", "bool") else v


@functools.lru_cache(maxsize=256)
def _regular_cached(n, first_key, last_key, bin_type_str):
    first, last = _value(first_key), _value(last_key)
    bin_type = np.dtype(bin_type_str)
    # numpy.linspace computes in the range's own result type, made inexact: ask numpy itself,
    # whose promotion rules differ between its versions.
    arithmetic = np.linspace(first, last, 0).dtype
    if arithmetic.name not in _EDGE_TYPES or bin_type.name not in _EDGE_TYPES:
        raise ValueError(f"tally: numpy's edges in {arithmetic.name} rounded to {bin_type.name} are not "
                         "computed by tally (it takes float16, float32 and float64)")
    try:
        axis = _tally.equal_bins(n, float(first), float(last), _EDGE_TYPES[arithmetic.name],
                                 _EDGE_TYPES[bin_type.name])
    except (MemoryError, TypeError):  # more edges than memory (or int64) holds: numpy's own error
        np.linspace(first, last, n + 1, dtype=bin_type)
        raise
    edges = axis.edges.astype(bin_type)
    edges.flags.writeable = False
    _kept[id(edges)] = edges
    return edges, None, axis


_caches.register("regular edges", "numpy's edges for equal bins and the axis that bins by them",
                 "(bins, first, last, bin type)", "256; least recently used first",
                 lambda: _regular_cached.cache_info().currsize, _regular_cached.cache_clear)

# The edges _regular_cached made, by id: read-only and never changed, so a device copy of them
# (Source.edges_result) stays right. A user's read-only array may still change through a view.
_kept = weakref.WeakValueDictionary()


def is_kept(edges):
    """Whether `edges` are regular edges tally made and keeps unchanged."""
    return _kept.get(id(edges)) is edges


def check_monotonic(edges, message):
    edges = np.asarray(edges)
    if edges.size > 1 and np.any(edges[:-1] > edges[1:]):
        raise ValueError(message)
    return edges


_WIDE_INTEGERS = ("i64", "u64")
_U64_MAX = (1 << 64) - 1


def _is_integer(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def exact_range(axis, src, first, last):
    """numpy compares 64-bit integer samples with an integer range exactly, before rounding
    them to float64: the axis whose range does so (its edges are the same)."""
    if src.type not in _WIDE_INTEGERS or axis.kind != "regular" or not (_is_integer(first) and _is_integer(last)):
        return axis
    lo, hi = int(first), int(last)
    return _tally.Axis.regular_exact(axis.bins, lo < 0, min(abs(lo), _U64_MAX), hi < 0, min(abs(hi), _U64_MAX))


def from_array(edges, sample_type=None):
    """A tally axis for numpy edges (non-decreasing, any dtype; repeated and infinite edges
    are binned as numpy bins them). Integer edges compare exactly with 64-bit integer samples
    where numpy compares them as integers (the result type of the two is an integer type)."""
    e = np.asarray(edges)
    if e.ndim != 1 or e.size < 2:
        raise ValueError("`bins` must have at least 2 edges, when an array")
    if (sample_type in _WIDE_INTEGERS and e.dtype.kind in "iu"
            and np.result_type(e.dtype, np.dtype(_NUMPY_INTEGERS[sample_type])).kind in "iu"):
        return _tally.Axis.variable_integers(np.ascontiguousarray(e, np.uint64 if e.dtype.kind == "u" else np.int64))
    as_f64 = np.ascontiguousarray(e, dtype=np.float64)
    if np.isnan(as_f64).any():
        raise ValueError("tally: bin edges must not be NaN")
    if e.dtype == np.float64 and sample_type not in _WIDE_INTEGERS:
        # numpy's linspace edges (histogramdd's) bin by the regular axis' arithmetic.
        return _tally.axis_of_edges(as_f64)
    return _tally.Axis.variable(as_f64)


_NUMPY_INTEGERS = {"i64": "int64", "u64": "uint64"}

"""numpy's histogram functions over Dask arrays (and Dask DataFrame columns), counted by tally on
the workers: each chunk fills a tally.Histogram where it lives (numpy chunks on the worker's CPU,
cupy chunks on their GPU), the partial histograms are added in a tree, and the result stays lazy
until ``.compute()``.

The results equal numpy's on the concatenated data: the edges bit for bit, the counts exactly
(any chunking, any order of the tree). Sums of weights are kept exactly (``exact_sums``) in every
chunk and merge, so they equal one tally fill of all the data bit for bit, the correctly rounded
sums (``math.fsum``'s), whatever the chunking, the tree or the devices; numpy's one pass in
float64 may differ from them in the last bits. ``range=None`` (and ``bincount``'s length)
reads the data's minimum and maximum with Dask first, as dask-histogram does, before the lazy
result is built. Needs ``dask``.

The functions also stand in for dask.array's: they take its ``normed`` keyword, a range of 0-d
Dask arrays and a Dask array of bins (edges, or a number) as dask.array.histogram does, lazily
(the edges then come back as a Dask array; Dask bins come back as given), and raise its errors;
dask's own tests of them pass (python/tests/test_dask_suite.py). Where dask.array refuses what
numpy answers (no range, columns or weights chunked differently, a 1-D histogramdd sample),
these answer as numpy does: docs/scale.md lists the differences.
"""

import builtins
import functools
import operator

import dask
import dask.array as da
import numpy as np
from dask.delayed import Delayed

from . import _edges, _tally
from ._arrays import Source, int64_arg, operator_index, to_host
from ._functions import bins_2d, dd_bins_and_ranges, dd_edges
from ._histogram import Histogram

__all__ = ["bincount", "fill", "histogram", "histogram2d", "histogramdd"]

_range = builtins.range


def _as_dask_array(x, what):
    """A Dask array from a Dask array or a Dask DataFrame column (its values, chunk sizes
    unknown until computed, which no fill needs); anything else is an error."""
    if hasattr(x, "to_dask_array"):
        x = x.to_dask_array()
    if not isinstance(x, da.Array):
        raise TypeError(f"tally.dask: {what} must be a dask array or a dask dataframe column, got "
                        f"{type(x).__name__} (use tally.histogram for in-memory arrays)")
    return x


def _meta_source(dtype, what):
    """A Source of no samples and the given dtype: the sample type that the edges and axes depend
    on, without touching the data."""
    return Source(np.empty(0, dtype), what)


def _aligned(arrays):
    """The 1-D arrays with the first one's chunks (computing unknown chunk sizes first)."""
    if any(np.isnan(a.shape[0]) or any(np.isnan(c) for c in a.chunks[0]) for a in arrays):
        arrays = [a.compute_chunk_sizes() for a in arrays]
    n = arrays[0].shape[0]
    for a in arrays[1:]:
        if a.shape[0] != n:
            raise ValueError(f"tally.dask: arrays of {n} and {a.shape[0]} samples")
    return [arrays[0]] + [a.rechunk(arrays[0].chunks) for a in arrays[1:]]


def _min_max(arrays):
    """numpy's min and max of each array (scalars of its type; cupy's come to the host), in one
    Dask computation."""
    flat = [v.get()[()] if hasattr(v, "get") else v
            for v in dask.compute(*[op(a) for a in arrays for op in (da.min, da.max)])]
    return [(flat[2 * i], flat[2 * i + 1]) for i in _range(len(arrays))]


# ---- the recipe of a histogram: axes rebuilt on each worker (tally's axes do not pickle) ----

def _regular(dtype, n, range):
    """numpy.histogram's (edges, output dtype, tally axis) for `n` equal bins over `range`, for
    samples of `dtype`. `n` and the range may be values a graph computed (0-d arrays)."""
    n = operator.index(n)
    if n < 1:
        raise ValueError("`bins` must be positive, when an integer")
    return _edges.regular(_meta_source(np.dtype(dtype), "a"), n, range)


def _axes_of(recipe):
    axes = []
    for part in recipe:
        if part[0] == "regular":
            axes.append(_regular(*part[1:])[2])
        elif part[0] == "edges":  # checked again: edges a graph computed were not checked before
            edges = _edges.check_monotonic(part[1], "`bins` must increase monotonically, when an array")
            axes.append(_edges.from_array(edges, part[2]))
        else:  # integer
            axes.append(_tally.Axis.integer(part[1], part[2]))
    return axes


def _fill_chunk(recipe, weighted, flow, *blocks):
    """One chunk's histogram: blocks are the columns, then the weights where weighted. One CPU
    thread: Dask runs a task on each of a worker's threads."""
    h = Histogram(_axes_of(recipe), weighted=weighted, flow=flow, threads=1, exact_sums=weighted)
    columns, weights = (blocks[:-1], blocks[-1]) if weighted else (blocks, None)
    h.fill(*columns, weight=weights)
    return h


def _sum(*hists):
    return functools.reduce(operator.add, hists)


def fill(recipe, columns, weights=None, *, flow=False, split_every=8):
    """The delayed tally.Histogram of 1-D Dask columns of one length (and weights): one fill a
    chunk, on the chunk's worker and device, added in a tree of `split_every` histograms a node
    (8 where None). Columns and weights chunked differently are rechunked to the first column's
    chunks. `recipe` lists the axes, each ``("regular", dtype, bins, (first, last))``
    (numpy.histogram's edges for samples of dtype; `first`, `last` as numpy's range),
    ``("edges", edges, sample_type)`` (a tally sample type such as 'i64', or None) or
    ``("integer", lo, hi)``: axes are rebuilt from it on each worker. Its values may be Delayed
    (histogram's Dask bins and range are), computed when the graph runs."""
    parts = [_as_dask_array(c, "column") for c in columns]
    if weights is not None:
        parts.append(_as_dask_array(weights, "weights"))
    blocks = [a.to_delayed().ravel() for a in _aligned(parts)]
    level = [dask.delayed(_fill_chunk, pure=True)(recipe, weights is not None, flow, *b) for b in zip(*blocks)]
    split_every = 8 if split_every is None else operator_index(split_every, "split_every must be an integer")
    if split_every < 2:
        raise ValueError("split_every must be at least 2")
    while len(level) > 1:
        level = [dask.delayed(_sum, pure=True)(*level[i:i + split_every])
                 for i in _range(0, len(level), split_every)]
    return level[0]


def _values(h, dtype, density_edges=None):
    """The histogram's values as numpy's result: in `dtype`, or its density over the edges of
    each dimension, computed in numpy's order of operations (so to numpy's bits)."""
    values = np.asarray(h.values()).astype(dtype, copy=False)
    if density_edges is None:
        return values
    total = values.sum()
    for i, e in enumerate(density_edges):
        widths = np.diff(e).astype(np.float64)
        values = values / widths.reshape([widths.size if j == i else 1 for j in _range(values.ndim)])
    return values / total


def _lazy_values(h, shape, dtype, density_edges=None):
    """The lazy result: `h`'s values in `dtype`, or (given the edges, which may be Delayed) their
    float64 density."""
    value = dask.delayed(_values, pure=True)(h, dtype, density_edges)
    return da.from_delayed(value, shape=shape, dtype=np.float64 if density_edges is not None else dtype)


def _weights(weights, shape=None, message=None):
    """1-D f32 or f64 weights (of `shape`, else ValueError(message)), and their own dtype (numpy's
    result's)."""
    if weights is None:
        return None, None
    w = _as_dask_array(weights, "weights")
    if shape is not None and w.shape != shape:
        raise ValueError(message)
    given = np.dtype(w.dtype)
    if given.kind not in "iuf" or given.itemsize > 8:
        raise TypeError(f"tally.dask: weights of dtype {given} (numeric weights only)")
    if w.ndim != 1:
        w = w.ravel()
    if given not in (np.float32, np.float64):
        w = w.astype(np.float64)
    return w, given


# ---- arguments computed by the graph: Dask arrays as bins and range (dask.array's API) ----

def _lazy(value):
    return dask.is_dask_collection(value)


def _lazy_array(value, what, ndim):
    """A Dask collection given as `what`, checked: a Dask array of `ndim` dimensions (a tuple),
    whose shape and dtype say the result's (a Delayed's are unknown until computed)."""
    if not isinstance(value, da.Array):
        hint = " (make it one: dask.array.from_delayed(value, shape, dtype))" if isinstance(value, Delayed) else ""
        raise TypeError(f"tally.dask: {what} must be a number, an array or a dask array, got "
                        f"{type(value).__name__}{hint}")
    if value.ndim not in ndim:
        raise ValueError(f"`{what}` must be a dask array of {' or '.join(map(str, ndim))} dimensions, "
                         f"got shape {value.shape}")
    return value


def _range_pair(range):
    """histogram's `range`: None, or its first and last value, each a number or a 0-d Dask array
    (a Dask array's two elements are)."""
    if range is None:
        return None
    if _lazy(range):
        _lazy_array(range, "range", (1,))
    if isinstance(range, (da.Array, np.ndarray)) and range.shape != (2,):
        raise ValueError(f"range must be a pair (first, last), got an array of shape {range.shape}")
    try:
        count = len(range)
    except TypeError:
        raise TypeError(f"range must be a pair (first, last), got {range!r}") from None
    if count != 2:
        raise ValueError(f"range must be a pair (first, last), got {count} values")
    first, last = range
    for v in (first, last):
        if _lazy(v):
            _lazy_array(v, "range", (0,))
    return first, last


def _like(value, k):
    """k in `value`'s type (a Dask array's dtype), which numpy's edges take their dtype from."""
    if isinstance(value, (da.Array, np.ndarray, np.generic)):
        return value.dtype.type(k)
    return type(value)(k)


def _host_value(blocks):
    """A Dask array's value from its blocks, as a numpy array (cupy blocks come to the host)."""
    parts = [to_host(b) for b in blocks]
    return parts[0] if parts[0].ndim == 0 else np.concatenate(parts)


def _delayed_of(array):
    """One Delayed of a Dask array's value, a numpy array. (Dask arrays given to delayed calls
    directly make graphs that fail Dask's own checks, dask.array.utils.assert_eq's.)"""
    return dask.delayed(_host_value, pure=True)(list(array.to_delayed().ravel()))


def _lazy_range(dtype, range):
    """A range with a value computed by the graph: the range to give the recipe (Delayed values)
    and the dtype of numpy's edges over it for samples of `dtype`, from the range's types. Where
    the values decide the dtype too (equal integers widen to floats), the range is computed now."""
    dtypes = {_regular(dtype, 1, (_like(range[0], 0), _like(range[1], k)))[0].dtype for k in (0, 1)}
    if len(dtypes) > 1:
        range = dask.compute(*range)
        return range, _regular(dtype, 1, range)[0].dtype
    return tuple(_delayed_of(v) if _lazy(v) else v for v in range), dtypes.pop()


def histogram(a, bins=10, range=None, density=None, weights=None, *, normed=None, split_every=8):
    """numpy.histogram over a Dask array: ``(hist, bin_edges)`` with ``hist`` a lazy Dask array
    (int64 counts, sums in the weights' dtype as numpy's, or the density) and ``bin_edges``
    numpy's edges as a numpy array. ``bins`` is a number of bins or an array of edges.

    As dask.array.histogram, ``bins`` may also be a Dask array (edges, returned as given, or a
    0-d number of bins, then not with ``density``) and ``range`` a pair of 0-d Dask arrays (or a
    Dask array of two): computed when the graph runs, the edges then a Dask array. ``normed`` is
    refused, as there."""
    if normed is not None:
        raise ValueError("The normed= keyword of histogram is deprecated (numpy has removed it): "
                         "use density= instead")
    a = _as_dask_array(a, "a")
    x = a.ravel() if a.ndim != 1 else a
    meta = _meta_source(x.dtype, "a")
    w, given = _weights(weights, a.shape, "weights should have the same shape as a.")
    dtype = np.int64 if w is None else given
    range = _range_pair(range)
    lazy_bins = _lazy_array(bins, "bins", (0, 1)) if _lazy(bins) else None
    ndim = np.ndim(bins) if lazy_bins is None else lazy_bins.ndim  # np.ndim would compute a Dask array
    if ndim == 0:
        if lazy_bins is None:
            n = operator_index(bins, "`bins` must be an integer or an array")
        elif density:
            raise NotImplementedError("tally.dask.histogram: `bins` cannot be a scalar Dask object when "
                                      "`density` is True (the density needs the edges' count): give a number "
                                      "or the edges")
        elif lazy_bins.dtype.kind not in "iu":
            raise TypeError(f"`bins` must be an integer or an array, got a dask array of {lazy_bins.dtype}")
        else:
            n = _delayed_of(lazy_bins)
        if range is None:
            (first, last), = _min_max([x])
            if not (np.isfinite(first) and np.isfinite(last)):
                raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
            range = (first, last)
        if lazy_bins is not None or _lazy(range[0]) or _lazy(range[1]):
            range, edge_dtype = _lazy_range(x.dtype, range)
            edges_value = dask.delayed(_regular, pure=True)(x.dtype.str, n, range)[0]
            edges = da.from_delayed(edges_value, shape=(np.nan if lazy_bins is not None else n + 1,),
                                    dtype=edge_dtype)
        else:
            edges = edges_value = _regular(x.dtype, n, range)[0]
        recipe = [("regular", x.dtype.str, n, tuple(range))]
        shape = (np.nan if lazy_bins is not None else n,)
    elif ndim == 1:
        if lazy_bins is not None:
            edges, edges_value = bins, _delayed_of(lazy_bins)
        else:
            edges = edges_value = _edges.check_monotonic(np.asarray(bins),
                                                         "`bins` must increase monotonically, when an array")
        if edges.shape[0] < 2:  # no bins, as numpy
            return da.zeros(0, np.float64 if density else dtype), edges
        recipe = [("edges", edges_value, meta.type)]
        shape = (edges.shape[0] - 1,)
    else:
        raise ValueError("`bins` must be 1d, when an array")
    h = fill(recipe, [x], w, split_every=split_every)
    return _lazy_values(h, shape, dtype, [edges_value] if density else None), edges


def _holds_lazy(value):
    return _lazy(value) or (isinstance(value, (list, tuple)) and any(_holds_lazy(v) for v in value))


def _is_pair(value):
    try:
        return len(value) == 2
    except TypeError:
        return False


def histogramdd(sample, bins=10, range=None, density=None, weights=None, *, normed=None, split_every=8):
    """numpy.histogramdd over Dask data: ``(H, edges)``, ``H`` a lazy float64 Dask array and
    ``edges`` numpy's edges per dimension. ``sample`` is an (N, D) Dask array (chunked along
    either axis), a 1-D one (N samples of one dimension, as numpy reads it) or a sequence of D
    1-D Dask arrays (or DataFrame columns) of one length. ``normed`` is ``density``'s other
    name, as in dask.array.histogramdd (one of the two at most); Dask arrays as ``bins`` or
    ``range`` are refused, as there."""
    if normed is not None:
        if density is not None:
            raise TypeError("Cannot specify both 'normed' and 'density'")
        density = normed
    if _holds_lazy(bins) or _holds_lazy(range):
        raise NotImplementedError("tally.dask.histogramdd: dask collections as bins or range are not "
                                  "supported (as in dask.array.histogramdd): compute them first")
    if isinstance(sample, (list, tuple)):
        columns = [_as_dask_array(c, "sample") for c in sample]
        if any(c.ndim != 1 for c in columns):
            raise ValueError("tally.dask.histogramdd: every column of the sample must be 1-D")
    else:
        s = _as_dask_array(sample, "sample")
        if s.ndim == 1:
            columns = [s]
        elif s.ndim == 2:
            columns = [s[:, i] for i in _range(s.shape[1])]
        else:
            raise ValueError(f"Single array input to histogramdd should be columnar: (N, D), got shape {s.shape}")
    d = len(columns)
    if d == 0:
        raise ValueError("tally.dask.histogramdd: the sample has no dimensions")
    w, _ = _weights(weights)
    if range is not None:  # dask.array's checks and messages
        if len(range) != d:
            raise ValueError("range argument requires one entry, a min max pair, per dimension.")
        if not all(r is None or _is_pair(r) for r in range):
            raise ValueError("range argument should be a sequence of pairs")
    bins, range = dd_bins_and_ranges(bins, range, d)
    # numpy reads a sequence of columns as one array of their common type: its edges and bins.
    common = np.result_type(*[c.dtype for c in columns])
    meta = _meta_source(common, "sample")
    missing = [i for i in _range(d) if np.ndim(bins[i]) == 0 and range[i] is None]
    found = dict(zip(missing, _min_max([columns[i] for i in missing]))) if missing else {}

    def outer_edges_of(i):
        if range[i] is not None:
            return _edges.outer_edges(meta, range[i])
        first, last = (common.type(v) for v in found[i])  # a column's extremes in the common type
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
        return _edges.outer_edges(meta, (first, last))

    edges = dd_edges(bins, outer_edges_of)
    shape = tuple(max(e.size - 1, 0) for e in edges)
    if any(e.size < 2 for e in edges):  # a dimension of one edge has no bins: empty, as numpy
        return da.zeros(shape), edges
    sample_type = meta.type
    recipe = [("edges", e, sample_type) for e in edges]
    if w is not None and w.shape[0] != columns[0].shape[0]:
        raise ValueError("The weights and list don't have the same length.")
    h = fill(recipe, columns, w, split_every=split_every)
    return _lazy_values(h, shape, np.float64, edges if density else None), edges


def histogram2d(x, y, bins=10, range=None, density=None, weights=None, *, normed=None, split_every=8):
    """numpy.histogram2d over two Dask arrays: ``(H, xedges, yedges)``; ``normed`` as in
    :func:`histogramdd`."""
    hist, edges = histogramdd([x, y], bins_2d(bins), range, density, weights, normed=normed,
                              split_every=split_every)
    return hist, edges[0], edges[1]


def bincount(x, /, weights=None, minlength=0, *, split_every=8):
    """numpy.bincount over a 1-D Dask array of non-negative integers: a lazy Dask array of
    max(max(x) + 1, minlength) counts (or float64 sums of ``weights``). The minimum and maximum
    are computed first."""
    x = _as_dask_array(x, "x")
    if x.ndim != 1:
        raise ValueError("object too deep for desired array" if x.ndim > 1
                         else "object of too small depth for desired array")
    if np.dtype(x.dtype).kind not in "iub":
        raise TypeError(f"Cannot cast array data from dtype('{x.dtype}') to dtype('int64') "
                        "according to the rule 'safe'")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    if x.dtype == np.bool_:
        x = x.astype(np.uint8)
    w, _ = _weights(weights, x.shape, "The weights and list don't have the same length.")
    length = minlength
    if x.shape[0] != 0:
        (lo, hi), = _min_max([x])
        if lo < 0 or (x.dtype == np.uint64 and int(hi) >= 2**63):
            raise ValueError("'list' argument must have no negative elements")
        length = max(int(hi) + 1, minlength)
    dtype = np.int64 if w is None else np.float64
    if length == 0:
        return da.zeros(0, dtype)
    length = int64_arg(length, "minlength")
    h = fill([("integer", 0, length)], [x], w, split_every=split_every)
    return _lazy_values(h, (length,), dtype)

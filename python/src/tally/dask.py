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
"""

import builtins
import functools
import operator

import dask
import dask.array as da
import numpy as np

from . import _edges, _tally
from ._arrays import Source, int64_arg, operator_index
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

def _axes_of(recipe):
    axes = []
    for part in recipe:
        if part[0] == "regular":
            _, dtype, n, range = part
            axes.append(_edges.regular(_meta_source(np.dtype(dtype), "a"), n, range)[2])
        elif part[0] == "edges":
            axes.append(_edges.from_array(part[1], part[2]))
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
    chunk, on the chunk's worker and device, added in a tree of `split_every` histograms a node.
    `recipe` lists the axes, each ``("regular", dtype, bins, (first, last))`` (numpy.histogram's
    edges for samples of dtype; `first`, `last` as numpy's range), ``("edges", edges,
    sample_type)`` (a tally sample type such as 'i64', or None) or ``("integer", lo, hi)``:
    axes are rebuilt from it on each worker."""
    parts = [_as_dask_array(c, "column") for c in columns]
    if weights is not None:
        parts.append(_as_dask_array(weights, "weights"))
    blocks = [a.to_delayed().ravel() for a in _aligned(parts)]
    level = [dask.delayed(_fill_chunk, pure=True)(recipe, weights is not None, flow, *b) for b in zip(*blocks)]
    split_every = operator_index(split_every, "split_every must be an integer")
    if split_every < 2:
        raise ValueError("split_every must be at least 2")
    while len(level) > 1:
        level = [dask.delayed(_sum, pure=True)(*level[i:i + split_every])
                 for i in _range(0, len(level), split_every)]
    return level[0]


def _values(h, dtype):
    return np.asarray(h.values()).astype(dtype, copy=False)


def _lazy_values(h, shape, dtype):
    return da.from_delayed(dask.delayed(_values, pure=True)(h, dtype), shape=shape, dtype=dtype)


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


def histogram(a, bins=10, range=None, density=None, weights=None, *, split_every=8):
    """numpy.histogram over a Dask array: ``(hist, bin_edges)`` with ``hist`` a lazy Dask array
    (int64 counts, sums in the weights' dtype as numpy's, or the density) and ``bin_edges``
    numpy's edges as a numpy array. ``bins`` is a number of bins or an array of edges."""
    a = _as_dask_array(a, "a")
    x = a.ravel() if a.ndim != 1 else a
    meta = _meta_source(x.dtype, "a")
    w, given = _weights(weights, a.shape, "weights should have the same shape as a.")
    dtype = np.int64 if w is None else given
    if np.ndim(bins) == 0:
        n = operator_index(bins, "`bins` must be an integer or an array")
        if n < 1:
            raise ValueError("`bins` must be positive, when an integer")
        if range is None:
            (first, last), = _min_max([x])
            if not (np.isfinite(first) and np.isfinite(last)):
                raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
            range = (first, last)
        edges = _edges.regular(meta, n, range)[0]
        recipe = [("regular", np.dtype(x.dtype).str, n, tuple(range))]
    elif np.ndim(bins) == 1:
        edges = _edges.check_monotonic(np.asarray(bins), "`bins` must increase monotonically, when an array")
        if edges.size < 2:  # no bins, as numpy
            return da.zeros(0, np.float64 if density else dtype), edges
        recipe = [("edges", edges, meta.type)]
    else:
        raise ValueError("`bins` must be 1d, when an array")
    h = fill(recipe, [x], w, split_every=split_every)
    shape = (edges.size - 1,)
    if density:
        values = _lazy_values(h, shape, np.float64)
        return values / np.diff(edges).astype(float) / values.sum(), edges
    return _lazy_values(h, shape, dtype), edges


def histogramdd(sample, bins=10, range=None, density=None, weights=None, *, split_every=8):
    """numpy.histogramdd over Dask data: ``(H, edges)``, ``H`` a lazy float64 Dask array and
    ``edges`` numpy's edges per dimension. ``sample`` is an (N, D) Dask array or a sequence of
    D 1-D Dask arrays (or DataFrame columns) of one length."""
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
            raise ValueError(f"tally.dask.histogramdd: sample has shape {s.shape}")
    d = len(columns)
    if d == 0:
        raise ValueError("tally.dask.histogramdd: the sample has no dimensions")
    w, _ = _weights(weights)
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
    values = _lazy_values(h, shape, np.float64)
    if density:
        total = values.sum()
        for i, e in enumerate(edges):
            widths = np.diff(e).reshape([e.size - 1 if j == i else 1 for j in _range(d)])
            values = values / widths
        values = values / total
    return values, edges


def histogram2d(x, y, bins=10, range=None, density=None, weights=None, *, split_every=8):
    """numpy.histogram2d over two Dask arrays: ``(H, xedges, yedges)``."""
    hist, edges = histogramdd([x, y], bins_2d(bins), range, density, weights, split_every=split_every)
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

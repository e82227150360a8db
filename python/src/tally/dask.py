"""tally.Histogram fills and numpy's histogram functions over Dask arrays (and Dask DataFrame
columns), counted by tally on the workers: each chunk fills a tally.Histogram where it lives (numpy
chunks on the worker's CPU, cupy chunks on their GPU), the partial histograms are added in a tree,
and the result stays lazy until ``.compute()``.

``fill(h, *data, weight=..., sample=...)`` fills a copy of any tally.Histogram (every axis kind,
growing ones included, and every storage), as dask-histogram's ``factory(*data, histref=h)``
fills a boost-histogram; the rest of this docstring is about the numpy functions.

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
import operator

import dask
import dask.array as da
import numpy as np
from dask.delayed import Delayed
from dask.utils import is_dataframe_like

from . import _edges, _tally
from ._arrays import Source, int64_arg, operator_index, to_host
from ._functions import bins_2d, dd_bins_and_ranges, dd_edges
from ._histogram import Histogram

__all__ = ["bincount", "fill", "histogram", "histogram2d", "histogramdd"]

_range = builtins.range


def _as_dask_array(x, what, instead="tally.histogram"):
    """A Dask array from a Dask array or a Dask DataFrame column (its values, chunk sizes
    unknown until computed, which no fill needs); anything else is an error."""
    if hasattr(x, "to_dask_array"):
        x = x.to_dask_array()
    if not isinstance(x, da.Array):
        raise TypeError(f"tally.dask: {what} must be a dask array or a dask dataframe column, got "
                        f"{type(x).__name__} (use {instead} for in-memory arrays)")
    return x


def _meta_source(dtype, what):
    """A Source of no samples and the given dtype: the sample type that the edges and axes depend
    on, without touching the data."""
    return Source(np.empty(0, dtype), what)


def _unknown_chunks(a):
    return any(np.isnan(c) for sizes in a.chunks for c in sizes)


def _aligned(arrays):
    """The arrays, of one shape, with the first one's chunks. Arrays whose chunk sizes are all
    unknown (Dask DataFrame columns) in as many blocks are paired block by block as they are (one
    frame's partitions; blocks of different lengths fail their fill); otherwise unknown chunk
    sizes are computed first."""
    unknown = [_unknown_chunks(a) for a in arrays]
    if any(unknown):
        if all(unknown) and all(a.numblocks == arrays[0].numblocks for a in arrays):
            return arrays
        arrays = [a.compute_chunk_sizes() if u else a for a, u in zip(arrays, unknown)]
    first = arrays[0]
    for a in arrays[1:]:
        if a.shape != first.shape:
            both_1d = a.ndim == first.ndim == 1
            raise ValueError(f"tally.dask: arrays of {first.shape[0]} and {a.shape[0]} samples" if both_1d
                             else f"tally.dask: arrays of shapes {first.shape} and {a.shape}")
    return [first] + [a.rechunk(first.chunks) for a in arrays[1:]]


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


# ---- the layouts of the chunks' histograms, and the tree that fills and adds them ----

class _Recipe:
    """The numpy functions' histograms: axes rebuilt from a recipe on each worker, sums of weights
    kept exactly."""

    def __init__(self, recipe, weighted, flow):
        self.recipe, self.weighted, self.flow = recipe, weighted, flow

    def empty(self):
        return Histogram(_axes_of(self.recipe), weighted=self.weighted, flow=self.flow, threads=1,
                         exact_sums=self.weighted)


class _Layout:
    """A template's axes and options without its cells: what travels to the workers, where each
    chunk fills an empty histogram of them."""

    def __init__(self, h):
        # Histogram keeps these options to itself; the tests check empty() against h.copy() reset.
        weighted, strategy, counts32, _, exact_sums = h._options
        self.axes = h.axes
        self.options = dict(storage=None if h._storage == "int64" else h._storage, channels=h._channels,
                            flow=h._flow, count_bits=32 if counts32 else 64, strategy=strategy,
                            device=h._backend, exact_sums=exact_sums)

    def empty(self, **changes):
        """An empty histogram of these axes and options, filling with one CPU thread (Dask runs a
        task on each of a worker's threads)."""
        return Histogram(self.axes, **{**self.options, "threads": 1, **changes})


def _fill_chunk(layout, weighted, sampled, *blocks):
    """One chunk's histogram: an empty one of `layout` filled with the blocks, which are the
    columns, then the weights where weighted, then the samples where sampled. (test_dask_gpu.py
    wraps this function: three arguments before the blocks.)"""
    h = layout.empty()
    n = len(blocks) - weighted - sampled
    h.fill(*blocks[:n], weight=blocks[n] if weighted else None, sample=blocks[-1] if sampled else None)
    return h


def _sum(*hists):
    """The histograms added, in order (growing axes to their union, the first one's bins first);
    the first one is copied, not changed."""
    out = hists[0].copy()
    for h in hists[1:]:
        out += h
    return out


def _split_every(value):
    value = 8 if value is None else operator_index(value, "split_every must be an integer")
    if value < 2:
        raise ValueError("split_every must be at least 2")
    return value


def _tree(layout, arrays, weighted, sampled, split_every):
    """The delayed sum of the chunks' histograms: one fill a block of the arrays (of one chunking),
    on the block's worker and device, added `split_every` a node. `layout` is a Delayed."""
    split_every = _split_every(split_every)
    blocks = [a.to_delayed().ravel() for a in arrays]
    level = [dask.delayed(_fill_chunk, pure=True)(layout, weighted, sampled, *b) for b in zip(*blocks)]
    while len(level) > 1:
        level = [dask.delayed(_sum, pure=True)(*level[i:i + split_every])
                 for i in _range(0, len(level), split_every)]
    return level[0]


def _fill_recipe(recipe, columns, weights=None, *, flow=False, split_every=8):
    """The delayed tally.Histogram of 1-D Dask columns of one length (and weights), for the numpy
    functions. Columns and weights chunked differently are rechunked to the first column's
    chunks. `recipe` lists the axes, each ``("regular", dtype, bins, (first, last))``
    (numpy.histogram's edges for samples of dtype; `first`, `last` as numpy's range),
    ``("edges", edges, sample_type)`` (a tally sample type such as 'i64', or None) or
    ``("integer", lo, hi)``: axes are rebuilt from it on each worker. Its values may be Delayed
    (histogram's Dask bins and range are), computed when the graph runs."""
    parts = [_as_dask_array(c, "column") for c in columns]
    if weights is not None:
        parts.append(_as_dask_array(weights, "weights"))
    layout = dask.delayed(_Recipe, pure=True)(recipe, weights is not None, flow)
    return _tree(layout, _aligned(parts), weights is not None, False, split_every)


def _data_columns(h, data):
    """fill's data as Dask arrays: DataFrames as their columns, an (N, D) array of an N-D
    histogram as its D columns, a channel histogram's pixels with their channels in one chunk."""
    arrays = []
    for x in data:
        if dask.is_dask_collection(x) and is_dataframe_like(x):  # a Dask DataFrame
            arrays.extend(_as_dask_array(x[c], "data", "Histogram.fill") for c in x.columns)
        else:
            arrays.append(_as_dask_array(x, "data", "Histogram.fill"))
    if h._channels is not None:
        if len(arrays) != 1:
            raise ValueError("tally.dask.fill: a channel histogram takes one dask array of interleaved pixels")
        x = arrays[0]
        return [x.rechunk({x.ndim - 1: -1}) if x.ndim > 1 else x]
    if len(arrays) == 1 and h.ndim > 1 and arrays[0].ndim == 2:
        x = arrays[0]
        return [x[:, i] for i in _range(x.shape[1])]
    return arrays


def _empty_like(x):
    """A host array of no samples like a block of `x` (its dtype, its channels)."""
    shape = (0, x.shape[-1]) if x.ndim > 1 else (0,)
    return np.empty(shape, x.dtype)


def _finish(template, total):
    """The template's contents plus the data's histogram, in a new histogram."""
    out = template.copy()
    out += total
    return out


def fill(h, *data, weight=None, sample=None, split_every=8):
    """Fill a copy of a tally.Histogram from Dask arrays, lazily, chunk by chunk on the workers.

    Any histogram: every axis kind (Regular, with transforms, Variable, Integer, IntCategory,
    StrCategory, Boolean; growing ones included) and storage (Int64, Double, Weight, Mean,
    WeightedMean), N-D or channels. Each chunk fills an empty histogram of `h`'s axes and
    options (one CPU thread a task) where the chunk lives: numpy chunks on the worker's CPU,
    cupy chunks on its GPU. The chunks' histograms are added in a tree, growing axes to the
    union of what each chunk grew, in the data's order, so the categories come out as one fill
    of all the data puts them. As dask-histogram's ``factory(*data, histref=h)``, but the result
    keeps `h`'s contents too and `h` stays as it is.

    Counts and the flow counters equal one fill of all the data exactly, whatever the chunking.
    Sums of weights (Double, Weight, and the Mean storages' sums) are float64 sums of the
    chunks' sums, added in the tree's order: equal to one fill's where every partial sum is
    exact (whole-number weights), else within float64 rounding of it; a template made with
    ``exact_sums=True`` keeps them exact, equal to one fill bit for bit.

    Parameters
    ----------
    h : Histogram
        The template: its axes, storage and options, and the contents the data add to.
    *data : dask.array.Array or dask.dataframe.Series or dask.dataframe.DataFrame
        One array per axis, all of one shape (a 1-D histogram: one array of any shape); or one
        (N, D) array for D axes; or DataFrames, each standing for its columns. A channel
        histogram takes one (..., C) array of interleaved pixels. Arrays chunked differently
        are rechunked to the first one's chunks.
    weight : dask.array.Array or dask.dataframe.Series, optional
        Keyword only. One weight per sample, for a weighted storage.
    sample : dask.array.Array or dask.dataframe.Series, optional
        Keyword only. The values whose mean each cell keeps, for the Mean storages.
    split_every : int, optional
        Keyword only. The histograms added at each node of the tree (default 8; None: 8).

    Returns
    -------
    dask.delayed.Delayed
        Computes to a new Histogram: `h`'s contents plus the data's.

    Raises
    ------
    TypeError
        `h` not a tally.Histogram; data, weights or samples that are not Dask collections;
        what :meth:`Histogram.fill` refuses of their types.
    ValueError
        Arrays of different shapes; `split_every` below 2; what :meth:`Histogram.fill` refuses
        (the number of arrays, weights or samples its storage does not take), checked before
        anything is computed.

    See Also
    --------
    Histogram.fill : The same fill of in-memory arrays.

    Examples
    --------
    >>> import dask.array as da, numpy as np, tally, tally.dask
    >>> x = da.from_array(np.array([0.5, 1.5, 1.5, 2.5, 9.0]), chunks=2)
    >>> h = tally.Histogram(tally.axis.Regular(4, 0, 4))
    >>> lazy = tally.dask.fill(h, x)
    >>> lazy.compute(scheduler="synchronous").values(), h.samples  # h unchanged
    (array([1, 2, 1, 0]), 0)

    Categories that the chunks grow apart, weighted:

    >>> names = da.from_array(np.array(["mc", "data", "mc", "sim"]), chunks=2)
    >>> w = da.from_array(np.array([1.0, 2.0, 0.5, 4.0]), chunks=2)
    >>> t = tally.Histogram(tally.axis.StrCategory(["mc"], growth=True), storage="weight")
    >>> out = tally.dask.fill(t, names, weight=w).compute(scheduler="synchronous")
    >>> out.axes[0].categories, out.view()["value"]
    (['mc', 'data', 'sim'], array([1.5, 2. , 4. ]))
    """
    if not isinstance(h, Histogram):
        raise TypeError(f"tally.dask.fill: the template must be a tally.Histogram, got {type(h).__name__}")
    if not data:
        raise TypeError("tally.dask.fill() needs data: dask arrays or dask dataframe columns")
    columns = _data_columns(h, data)
    extras = [_as_dask_array(v, what, "Histogram.fill") for v, what in ((weight, "weight"), (sample, "sample"))
              if v is not None]
    split_every = _split_every(split_every)
    template = h.copy()  # as it is now: the graph keeps its own
    layout = _Layout(template)
    # Histogram.fill's checks (arrays per axis, dtypes, weights and samples for the storage) on
    # no samples, before anything is computed; on the CPU, whatever the template's device.
    layout.empty(device=None).fill(*[_empty_like(c) for c in columns],
                                   weight=None if weight is None else _empty_like(extras[0]),
                                   sample=None if sample is None else _empty_like(extras[-1]))
    total = _tree(dask.delayed(layout, pure=True), _aligned(columns + extras), weight is not None,
                  sample is not None, split_every)
    return dask.delayed(_finish, pure=True)(template, total)


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
    h = _fill_recipe(recipe, [x], w, split_every=split_every)
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
    h = _fill_recipe(recipe, columns, w, split_every=split_every)
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
    h = _fill_recipe([("integer", 0, length)], [x], w, split_every=split_every)
    return _lazy_values(h, (length,), dtype)

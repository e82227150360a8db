"""numpy's and torch's histogram functions, computed by tally: histogram, histogram2d,
histogramdd, bincount, histc, and plan (what the planner would pick for such a call)."""

import builtins
import functools
import math
import operator
import warnings

import numpy as np

from . import _caches, _call_cache, _devices, _edges, _tally
from ._arrays import Source, backend_for, int64_arg, operator_index, same_device, strategy_arg, to_host
from ._devices import _cupy, _torch, device_of, require_cuda
from ._types import _NATIVE, FLOAT_TYPES, NUMPY_NAMES

_range = builtins.range

# tally's own keywords, beside numpy's: a call that numpy hands to an override cannot take them.
_TALLY_KEYWORDS = ("sum_dtype", "strategy", "device")


def _numpy_protocol(np_function, relevant):
    """Honours numpy's __array_function__ protocol as `np_function` does: where an argument that
    numpy consults (``relevant(*args, **kwargs)``, numpy's dispatcher) is of a type that overrides
    numpy's functions (dask and xarray arrays, user types; not numpy's own, nor cupy's, which
    tally reads), the call is numpy's, which hands it to the override."""
    def wrap(function):
        @functools.wraps(function)
        def call(*args, **kwargs):
            # Arguments all of types that override nothing and hold nothing (no sequences): no
            # dispatcher to ask.
            for v in (*args, *kwargs.values()) if kwargs else args:
                if type(v) not in _SCALAR_TYPES:
                    break
            else:
                return function(*args, **kwargs)
            if _overridden(relevant(*args, **kwargs)):
                own = [k for k in _TALLY_KEYWORDS if k in kwargs]
                if own:
                    raise TypeError(f"tally.{function.__name__}: an argument overrides numpy's functions "
                                    f"(__array_function__), so numpy's {np_function.__name__} answers, "
                                    f"which takes no {', '.join(own)}")
                return np_function(*args, **kwargs)
            return function(*args, **kwargs)
        return call
    return wrap


_NDARRAY_FUNCTION = np.ndarray.__array_function__
# Types of the common arguments, which override nothing (looked up before any attribute): those
# that hold no other arguments, and the sequences (numpy's dispatchers look into them).
_SCALAR_TYPES = frozenset((type(None), np.ndarray, int, float, bool, str))
_PLAIN_TYPES = _SCALAR_TYPES | {tuple, list}


def _overridden(values):
    for v in values:
        if type(v) in _PLAIN_TYPES:
            continue
        method = getattr(type(v), "__array_function__", None)
        if method is None or method is _NDARRAY_FUNCTION:
            continue
        cupy = _cupy()
        if cupy is not None and isinstance(v, cupy.ndarray):
            continue
        return True
    return False


def fill(axes, columns, weights, src, strategy, device, flow=False, sum_block=65536):
    """The one place that runs a one-shot fill: a histogram over `axes` from `columns`
    (Sources, one per axis) and optional `weights`; returns the values as src's library and
    device. Counts int64, weighted sums float64, on the CPU in blocks of `sum_block` samples
    (numpy.histogram's 65536; 0: input order, numpy.bincount's). With `flow`, returns (values,
    (underflow, overflow, nan)), the samples the axes dropped, read back to the host.

    torch and cupy arrays in CUDA memory are counted by tally::device_histogram on the caller's
    current stream, without a host wait (but for the flow counts' read-back), and the cells
    come back in place as a tensor of that library on that device. Other inputs go through
    tally::histogram, whose storage on the host becomes the result without a copy."""
    backend = backend_for(device, src)
    if src.on_cuda and backend != "cpu" and src.lib in ("torch", "cupy"):
        return _fill_on_stream(axes, columns, weights, src, strategy_arg(strategy), flow)
    require_cuda(src)
    with device_of(src, wait=True):
        values, dropped = _in_layout(lambda c, w: _tally.fill_and_take(
            axes, c, w, strategy_arg(strategy), backend, flow, sum_block), columns, weights)
    values = src.result(values)
    return (values, dropped) if flow else values


def _fill_on_stream(axes, columns, weights, src, strategy, flow):
    require_cuda(src)
    with device_of(src, wait=False) as stream:
        c = columns[0]
        if len(columns) == 1 and weights is None and _devices.tensor_key(c.obj):
            return _call_cache.fill_once(c.lib, c.obj, axes, c.type, c.index, stream, strategy, flow)
        out = _in_layout(
            lambda c, w: _tally.fill_on_stream(axes, c, w, strategy, stream, src.index, flow), columns, weights)
        return _call_cache.wrapped(src.lib, out, flow)


def fill_into(h, columns, weights, src):
    """Fills the extension's histogram `h` from Sources, on the input's device."""
    require_cuda(src)
    with device_of(src, wait=True):
        _in_layout(h.fill, columns, weights)


def _in_layout(call, columns, weights):
    """call(column arrays, weights array or None), and again on contiguous copies where an input
    is not one strided sequence of memory (e.g. a[::2, ::3]): the only copy of an input made."""
    try:
        return call([c.obj for c in columns], None if weights is None else weights.obj)
    except _tally.LayoutError:
        columns = [c.contiguous() for c in columns]
        weights = None if weights is None else weights.contiguous()
        return call([c.obj for c in columns], None if weights is None else weights.obj)


def _weights_of(weights, src, message):
    if weights is None:
        return None
    w = Source(weights, "weights")
    if w.shape != src.shape:
        raise ValueError(message)
    same_device(src, w)
    return w.as_weights()


def _host_bins(bins):
    """bins for numpy itself: arrays on the host, a count or a name as given (a 0-d bool array
    is no count to numpy)."""
    return bins if isinstance(bins, (str, int, np.integer)) else to_host(bins)


def _host_weights(weights, src):
    """bincount's and histogramdd's weights as numpy's bincount reads them: cast safely to
    float64 (bool ones are, complex and object ones raise numpy's TypeError), after its check
    for negative samples (`src`, a bincount's)."""
    kind = _host_weight_kind(weights)
    if kind not in ("b", "c", "O"):
        return weights
    if kind != "b" and src is not None and src.size and src.min_max()[0] < 0:
        raise ValueError(_NEGATIVE)
    return np.asarray(weights).astype(np.float64, casting="safe")


def _histogram_input(a):
    src = Source(a)
    if src.type == "bool":
        warnings.warn("Converting input from bool to <class 'numpy.uint8'> for compatibility.",
                      RuntimeWarning, stacklevel=3)
        src = src.bool_as_u8()
    return src


_ESTIMATORS = ("stone", "auto", "doane", "fd", "rice", "scott", "sqrt", "sturges")


def _inexact_longdouble(bins, range):
    """Edges or a range in longdouble that float64 cannot hold: numpy compares in longdouble,
    which tally's float64 rule cannot, so numpy answers them itself."""
    if np.longdouble == np.float64:
        return False
    values = [] if range is None else list(range)
    if not isinstance(bins, (str, int)) and np.ndim(bins) == 1:
        values.append(np.asarray(to_host(bins)))
    for v in values:
        if isinstance(v, (int, float)):  # Python numbers: never longdouble
            continue
        v = np.asarray(v)
        if v.dtype == np.longdouble:
            with np.errstate(over="ignore"):
                if not np.array_equal(v.astype(np.float64).astype(np.longdouble), v, equal_nan=True):
                    return True
    return False


def _has_nan_edges(bins):
    """Edges with NaN among them, which numpy sorts above every number: its answer for them is
    its own arithmetic on cumulative counts, computed by numpy itself here."""
    if isinstance(bins, (str, int)) or np.ndim(bins) != 1:
        return False
    e = np.asarray(to_host(bins))
    return e.dtype.kind in "fc" and bool(np.isnan(e).any())


def _estimated_bins(src, name, range):
    """numpy's number of equal bins for the estimator `name` (its _get_bin_edges with a str):
    tally::estimate_bins over the samples on the host (a copy for samples in device memory), with
    numpy's checks of the range first, its warning and its errors."""
    first, last = _edges.outer_edges(src, range)
    ends = None if range is None else (_edges.estimator_end(first), _edges.estimator_end(last))
    samples = np.ascontiguousarray(src.host()).reshape(-1)  # numpy's ravel order; bfloat16 as float32
    estimate, at_bound, failed, message, width = _tally.estimate_bins(name, samples, ends)
    if width != 0 and all(isinstance(v, (bool, np.bool_)) for v in (first, last)):
        # two bools promote as two Python ints but do not subtract: numpy's error where it does
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the bitwise_xor, "
                        "the `^` operator, or the logical_xor function instead.")
    if at_bound:
        warnings.warn("The number of bins estimated may be suboptimal.", RuntimeWarning, stacklevel=5)
    if failed is not None:
        raise {"ValueError": ValueError, "IndexError": IndexError, "OverflowError": OverflowError}[failed](message)
    return int(estimate)


def _edges_for(src, bins, range, weights):
    """numpy's _get_bin_edges: (host edges, output dtype, axis)."""
    if isinstance(bins, str):
        # numpy's estimators ('auto', 'fd', 'sturges', ...) read every sample: the core's
        # (tally::estimate_bins) give the number of equal bins, which then take the path below.
        if bins not in _ESTIMATORS:
            raise ValueError(f"{bins!r} is not a valid estimator for `bins`")
        if weights is not None:
            raise TypeError("Automated estimation of the number of bins is not supported for "
                            "weighted data")
        bins = _estimated_bins(src, bins, range)
        if bins < 1:  # an estimate of no bins (a width beyond the range): numpy's edges
            edges, out_dtype = _edges.no_bins(src, bins, range)
            return edges, out_dtype, None
    if np.ndim(bins) == 0:
        n = operator_index(bins, "`bins` must be an integer, a string, or an array")
        if n < 1:
            raise ValueError("`bins` must be positive, when an integer")
        return _edges.regular(src, n, range)  # the edges read-only, as cached
    if np.ndim(bins) == 1:
        edges = _edges.check_monotonic(to_host(bins), "`bins` must increase monotonically, when an array")
        if edges.size < 2:
            return edges, None, None
        return edges, None, _edges.from_array(edges, src.type)
    raise ValueError("`bins` must be 1d, when an array")


def _host_weight_kind(weights):
    """The dtype kind of weights that are not a torch or cupy array ('b', 'c', 'O' are answered
    by numpy on the host), or None."""
    torch, cupy = _torch(), _cupy()
    if weights is None or (torch is not None and isinstance(weights, torch.Tensor)) or (
            cupy is not None and isinstance(weights, cupy.ndarray)):
        return None
    return np.asarray(weights).dtype.kind


def _sums_may_wrap(w):
    """Whether sums of integer weights `w` (a Source from _weights_of) may leave their dtype or
    float64's exact integers. numpy then wraps its integer sums and rounds its float64 blocks of
    them in its own order, which only numpy reproduces; else tally's float64 sums are exact and
    numpy's. The bound: samples x the largest weight's magnitude."""
    if w is None or w.given_dtype.kind not in "iu" or w.size == 0:
        return False
    lo, hi = w.min_max()  # of the float64 copy: exact to 2^53, and >= 2^53 beyond it
    limit = min(int(np.iinfo(w.given_dtype).max), 2**53 - 1)
    return w.size * int(max(-lo, hi)) > limit


def _as_sum_dtype(values, lib, dtype):
    """Sums (float64) as numpy's result dtype for them, in the input's library."""
    if dtype == np.float64:
        return values
    if lib == "torch":
        return values.to(getattr(_torch(), dtype.name))
    return values.astype(dtype)


@_numpy_protocol(np.histogram, lambda a, bins=None, range=None, density=None, weights=None, **_: (a, bins, weights))
def histogram(a, bins=10, range=None, density=None, weights=None, *, sum_dtype=None,
              strategy="automatic", device=None):
    """Compute the histogram of a dataset: numpy.histogram, counted by tally.

    The signature and results of ``numpy.histogram``: the counts equal numpy's and the edges are
    numpy's, bit for bit and of numpy's dtype. `a` may be a numpy, torch (CPU or CUDA) or cupy
    array, anything with ``__dlpack__`` or the buffer protocol, or a sequence; it is read in
    place (strided views too), and the results come back in the same library on the same
    device. torch and cupy arrays in CUDA memory are counted on the caller's current stream.

    Arguments that override numpy's functions (``__array_function__``: dask and xarray arrays,
    user types; not cupy arrays, which tally reads) get numpy's own call, which hands them to
    their override; such a call takes none of `sum_dtype`, `strategy` and `device`.

    Parameters
    ----------
    a : array_like
        The samples, of any shape (all of them count). Integer and float dtypes of 8 to 64 bits
        (bfloat16 through torch); bool is read as uint8, with numpy's RuntimeWarning; numpy
        datetime64 and timedelta64 samples with edges of those types.
    bins : int or sequence of scalars or str, optional
        The number of equal-width bins over `range` (default 10); or the bin edges, increasing
        monotonically (the last bin holds its right edge); or one of numpy's estimator names
        ('auto', 'fd', 'doane', 'rice', 'scott', 'sqrt', 'stone', 'sturges'), which tally's
        core computes as numpy does for the samples' dtype (bfloat16 as its float32 values),
        from a host copy of samples in device memory.
    range : (float, float), optional
        The lower and upper edge of equal-width bins; by default ``(a.min(), a.max())``.
        Samples outside it and NaN are not counted.
    density : bool, optional
        If True, return numpy's density, ``hist / bin widths / hist.sum()``.
    weights : array_like, optional
        One weight per sample, of `a`'s shape; each sample adds its weight to its bin. The
        sums are of the weights' dtype, as numpy's (int32 weights give int32 sums, float32
        ones float32): tally sums in float64 and rounds once. bool, complex and object
        weights, and integer weights whose sums may leave their dtype (where numpy wraps them
        around), are summed by numpy on a host copy.
    sum_dtype : dtype, optional
        Keyword only, tally's own. The dtype of the sums of weights in place of the weights'
        dtype: ``numpy.float64`` keeps tally's float64 sums.
    strategy : str, optional
        Keyword only. One of ``tally.STRATEGIES`` (:func:`strategies` describes each);
        'automatic' (default) lets the planner choose (see :func:`plan`).
    device : {None, 'auto', 'cpu', 'cuda'}, optional
        Keyword only. None or 'auto' (default None): count where the data are; 'cpu' or
        'cuda' ('cuda:N', a torch.device) insist on that backend.

    Returns
    -------
    hist : array
        int64 counts; with `weights`, their sums (of the weights' dtype, or `sum_dtype`);
        with ``density=True``, numpy's float64 density.
    bin_edges : array
        The ``len(hist) + 1`` edges, numpy's bit for bit and of numpy's dtype (float32 for
        float32 samples with `bins` an integer, float64 for integer samples).

    Raises
    ------
    ValueError
        `bins` not positive, not increasing, not 1-D or not an estimator's name; a range
        whose maximum is below its minimum or that is not finite; `weights` not of `a`'s
        shape or on another device; an unknown strategy or device; 'cuda' where CUDA is not
        usable. Where numpy's estimator fails on the data (a NaN width, edges it cannot make),
        numpy's ValueError, IndexError or OverflowError (an infinite count).
    TypeError
        `bins` not an integer, a string or an array; an estimator with `weights`; samples of
        an unsupported dtype; a `strategy` that is not a str; an estimator with a range of a
        type other than Python numbers and numpy's integer and float scalars (longdouble).

    See Also
    --------
    numpy.histogram : The function this one computes.
    histogram_bin_edges : The edges alone.
    histogramdd : Histograms of several dimensions.
    Histogram : A histogram filled chunk by chunk.
    plan : What the planner picks for a call.

    Examples
    --------
    >>> import numpy as np, tally
    >>> x = np.array([0.5, 1.5, 1.5, 2.5, 3.0, 7.0])
    >>> tally.histogram(x, 4)
    (array([3, 2, 0, 1]), array([0.5  , 2.125, 3.75 , 5.375, 7.   ]))
    >>> tally.histogram(x, bins=[0, 1, 2, 8], weights=np.ones(6, np.float32))[0]
    array([1., 2., 3.], dtype=float32)

    Equal to numpy, edges of numpy's dtype:

    >>> y = np.random.default_rng(0).normal(size=10_000).astype(np.float32)
    >>> hist, edges = tally.histogram(y, 64, range=(-4, 4))
    >>> np.array_equal(hist, np.histogram(y, 64, range=(-4, 4))[0]), edges.dtype
    (True, dtype('float32'))
    """
    key = edges_key = host_key = None
    if type(a) is np.ndarray and not density and sum_dtype is None and device is None and type(strategy) is str:
        host_key = _host_histogram_key(a, bins, range)
        kept = None if host_key is None else _call_cache.host_get(host_key)
        if kept is not None:
            result = _histogram_on_host(kept, a, weights, strategy)
            if result is not None:
                return result
    elif not density and (weights is None or sum_dtype is None) and device is None:
        if type(bins) is int and type(range) in (tuple, list):
            key = _kept_key("histogram", a, bins, range, strategy, weights)
        elif type(bins) is np.ndarray and range is None:
            array = _devices.tensor_key(a)
            edges_key = None if array is None else _edges_key(bins)
            key = None if edges_key is None else _kept_key("histogram", a, edges_key, None, strategy, weights, array)
            if key is None:
                edges_key = None
        kept = _call_cache.get(key)
        if kept is not None:
            values = kept.fill(a, strategy, weights=weights)
            if values is not None:
                if weights is not None:  # numpy's sums are of the weights' dtype
                    values = _as_sum_dtype(values, kept.lib, np.dtype(NUMPY_NAMES[kept.weight_type]))
                return values, kept.edges_copy()
    if isinstance(a, np.ndarray) and a.dtype.kind in "Mm":
        return _histogram_of_times(a, bins, range, weights, density, strategy, device)
    src = _histogram_input(a)
    if _host_weight_kind(weights) in ("b", "c", "O"):
        hist, edges = np.histogram(src.host(), _host_bins(bins), range=range, density=density,
                                   weights=np.asarray(weights))
        return src.result(hist), src.result(edges)
    w = _weights_of(weights, src, "weights should have the same shape as a.")
    if _has_nan_edges(bins) or _inexact_longdouble(bins, range) or (sum_dtype is None and _sums_may_wrap(w)):
        hist, edges = np.histogram(src.host(), _host_bins(bins), range=range, density=density,
                                   weights=None if w is None else to_host(weights))  # the weights' dtype
        return src.result(hist), src.result(edges)
    edges, out_dtype, axis = _edges_for(src, bins, range, w)
    if axis is None:  # fewer than two edges: no bins, as numpy (its dtypes: the weights')
        empty = np.zeros(0, np.float64 if density else np.int64 if w is None else w.given_dtype)
        return src.result(empty), src.edges_result(edges, out_dtype)
    values = fill([axis], [src], w, src, strategy, device)
    if host_key is not None and out_dtype is None:
        _call_cache.host_keep(host_key, _call_cache.HostCall(axis, _read_only(edges)))
    if edges_key is not None and not _call_cache.seen_before(key):
        key = edges_key = None  # an array of edges is kept from its second call: changing edges keep nothing
    edges_out = src.edges_result(edges, out_dtype, edges_key)
    if key is not None:
        kept = src.kept_edges(edges, out_dtype, edges_key)
        if kept is not None:
            _call_cache.keep(key, _call_cache.CachedCall(src.lib, src.index, src.type, [axis], edges=kept,
                                           weight_type=None if w is None else w.type))
    if w is not None:
        values = _as_sum_dtype(values, src.lib, np.dtype(sum_dtype) if sum_dtype is not None else w.given_dtype)
    if density:  # numpy's n / db / n.sum(), n of the weights' dtype
        widths = src.result(np.array(np.diff(edges), float))
        return values / widths / values.sum(), edges_out
    return values, edges_out


# Weights a kept host call sums: numpy's float32 and float64 (native byte order).
_FLOAT_WEIGHTS = (np.dtype(np.float64), np.dtype(np.float32))


def _host_histogram_key(a, bins, range):
    """The key of a histogram call's kept parts on the host (_call_cache.HostCall), or None:
    `a` a numpy array of a numeric dtype but bool (which warns on every call), and `bins` a count
    with `range` two plain Python numbers or None (the samples' extremes, _data_ends), or a numpy
    array of edges (_edges_key) with no range; at most HOST_CELLS_MAX bins."""
    dtype = a.dtype
    if _NATIVE.get(dtype, "bool") == "bool":
        return None
    if type(bins) is int and bins <= _call_cache.HOST_CELLS_MAX:
        if range is None:
            ends = _data_ends(a)
        elif type(range) in (tuple, list) and len(range) == 2:
            ends = _call_cache.number_key(range[0]), _call_cache.number_key(range[1])
        else:
            return None
        return None if ends is None or None in ends else ("histogram", bins, ends, dtype)
    if type(bins) is np.ndarray and range is None and bins.size <= _call_cache.HOST_CELLS_MAX + 1:
        edges = _edges_key(bins)
        return None if edges is None else ("histogram", edges, dtype)
    return None


# The most samples whose extremes the extension finds in one scalar pass (tally/plan.hpp); numpy's
# reductions answer larger arrays.
_EXTREMES_MAX = _tally.host_call_max_samples


def _data_ends(a):
    """A key for numpy's a.min() and a.max() (scalars of a's dtype, which the key names), from
    the extension's one pass over the samples: ('data', min, max) as Python numbers; None where
    numpy's own reduction answers: no samples or _EXTREMES_MAX or more, float16, NaN, or a
    float zero (whose sign numpy's reduction picks)."""
    if a.size >= _EXTREMES_MAX:
        return None
    try:
        ends = _tally.extremes(a)
    except _tally.LayoutError:
        return None
    if ends is None:
        return None
    lo, hi = ends
    if type(lo) is float and (lo != lo or lo == 0 or hi == 0):
        return None
    return "data", lo, hi


def _histogram_on_host(kept, a, weights, strategy):
    """histogram's counts of numpy array `a` (or sums of float weights of a's shape, of their
    dtype) over a kept call's axis, and a copy of its edges; None where the full path answers:
    other weights, or a layout that needs a copy."""
    if weights is None:
        out = np.empty(kept.bins, np.int64)
    elif type(weights) is np.ndarray and weights.dtype in _FLOAT_WEIGHTS and weights.shape == a.shape:
        out = np.empty(kept.bins, weights.dtype)
    else:
        return None
    try:
        _tally.fill_into(kept.axis, a, weights, out, strategy, False, 65536)
    except _tally.LayoutError:
        return None
    return out, kept.edges.copy()


def _read_only(edges):
    """Edges to keep: tally's cached regular edges as they are (read-only), else a read-only copy
    (a caller's array may change)."""
    if _edges.is_kept(edges):
        return edges
    edges = np.array(edges)
    edges.flags.writeable = False
    return edges


def _kept_key(function, a, bins, range, strategy, weights=None, array=None):
    """The key of a call's kept parts (_call_cache): None unless `a` is a contiguous CUDA array of
    torch or cupy, `range` two plain Python numbers (or None, where `bins` is an _edges_key),
    and `weights` None or float32 or float64 of a's library, device and shape, contiguous
    (_call_cache.weights_key). `array`: a's _devices.tensor_key where the caller has it."""
    if type(strategy) is not str:
        return None
    if range is None:
        ends = None
    else:
        if len(range) != 2:
            return None
        ends = _call_cache.number_key(range[0]), _call_cache.number_key(range[1])
        if None in ends:
            return None
    if array is None:
        array = _devices.tensor_key(a)
        if array is None:
            return None
    if weights is None:
        return function, bins, ends, strategy, array
    w = _call_cache.weights_key(array, a, weights)
    return None if w is None else (function, bins, ends, strategy, array, w)


# Edge arrays up to this many edges are kept by their bytes (the key holds them).
_KEPT_EDGES_MAX = 4097


def _edges_key(bins):
    """A key for a numpy array of edges, by its dtype and bytes (equal keys: equal edges, bit for
    bit), or None: not 1-D numbers, or more than _KEPT_EDGES_MAX of them."""
    if bins.ndim != 1 or bins.dtype.kind not in "fiu" or bins.size > _KEPT_EDGES_MAX:
        return None
    return "edges", bins.dtype.str, bins.tobytes()


def _histogram_of_times(a, bins, range, weights, density, strategy, device):
    """datetime64 / timedelta64 samples with datetime64 / timedelta64 edges: numpy compares them
    as the 64-bit integers they are, so do their int64 views (edges in the samples' unit); the
    edges come back as given. Other bins (a count, which numpy's linspace cannot make for
    times) are answered by numpy itself."""
    if np.ndim(bins) == 1 and np.asarray(bins).dtype.kind in "Mm":
        edges = np.asarray(bins)
        hist, _ = histogram(a.view(np.int64), edges.astype(a.dtype).view(np.int64), range, density, weights,
                            strategy=strategy, device=device)
        return hist, edges
    return np.histogram(a, bins, range, density=density, weights=weights)


@_numpy_protocol(np.histogram_bin_edges, lambda a, bins=None, range=None, weights=None, **_: (a, bins, weights))
def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """Compute the bin edges a histogram uses: numpy.histogram_bin_edges, computed by tally.

    The edges :func:`histogram` would use for the same arguments, numpy's bit for bit and of
    numpy's dtype, returned in the input's library on its device. Arguments that override
    numpy's functions (``__array_function__``) get numpy's own call, as in :func:`histogram`.

    Parameters
    ----------
    a : array_like
        The samples, of any shape, as :func:`histogram` reads them. They set the edges where
        `range` is None or `bins` is an estimator's name.
    bins : int or sequence of scalars or str, optional
        The number of equal-width bins (default 10), the edges themselves (checked to
        increase monotonically), or one of numpy's estimator names ('auto', 'fd', 'sturges',
        ...), computed as numpy computes them for the samples' dtype (:func:`histogram`).
    range : (float, float), optional
        The lower and upper edge; by default ``(a.min(), a.max())``.
    weights : array_like, optional
        Read only for its shape, which must be `a`'s, as numpy reads it; the estimators take
        no weights.

    Returns
    -------
    bin_edges : array
        The edges, numpy's bit for bit and of numpy's dtype (float32 for float32 samples with
        `bins` an integer, float64 for integer samples).

    Raises
    ------
    ValueError
        `bins` not positive, not increasing, not 1-D or not an estimator's name; a range
        whose maximum is below its minimum or that is not finite; `weights` not of `a`'s
        shape. Where numpy's estimator fails on the data, numpy's ValueError, IndexError or
        OverflowError, as in :func:`histogram`.
    TypeError
        `bins` not an integer, a string or an array; an estimator with `weights`; samples of
        an unsupported dtype; an estimator with a range that is not Python numbers or numpy's
        integer and float scalars.

    See Also
    --------
    numpy.histogram_bin_edges : The function this one computes.
    histogram : The counts and these edges.

    Examples
    --------
    >>> import numpy as np, tally
    >>> x = np.array([0.1, 0.4, 0.4, 0.9])
    >>> tally.histogram_bin_edges(x, 4)
    array([0.1, 0.3, 0.5, 0.7, 0.9])
    >>> x32 = x.astype(np.float32)
    >>> edges = tally.histogram_bin_edges(x32, "sturges")
    >>> np.array_equal(edges, np.histogram_bin_edges(x32, "sturges")), edges.dtype
    (True, dtype('float32'))
    """
    src = _histogram_input(a)
    if _host_weight_kind(weights) in ("b", "c", "O"):  # numpy reads them only for their shape
        if np.shape(weights) != src.shape:
            raise ValueError("weights should have the same shape as a.")
        w = weights
    else:
        w = _weights_of(weights, src, "weights should have the same shape as a.")
    if _has_nan_edges(bins):
        return src.result(np.asarray(to_host(bins)))
    edges, out_dtype = _edges_for(src, bins, range, w)[:2]
    return src.edges_result(edges, out_dtype)


def _histogramdd_relevant(sample, bins=None, range=None, density=None, weights=None, **_):
    """The arguments numpy's histogramdd hands to __array_function__ overrides."""
    yield from ((sample,) if hasattr(sample, "shape") else sample)
    try:
        yield from bins
    except TypeError:
        pass
    yield weights


@_numpy_protocol(np.histogramdd, _histogramdd_relevant)
def histogramdd(sample, bins=10, range=None, density=None, weights=None, *,
                strategy="automatic", device=None):
    """Compute the multidimensional histogram of a sample: numpy.histogramdd, by tally.

    The signature and results of ``numpy.histogramdd``: ``H`` is float64 as numpy's (counts,
    sums of weights, or the density) and the edges are numpy's. Inputs of any library and
    device as :func:`histogram` reads them; the results come back in the input's library on
    its device. Columns of different dtypes are binned in their common type, as numpy converts
    them. Arguments that override numpy's functions (``__array_function__``) get numpy's own
    call, as in :func:`histogram`.

    Parameters
    ----------
    sample : (N, D) array_like or sequence of D (N,) arrays
        The N samples of D coordinates: an (N, D) array, whose columns are read in place (any
        strides), or a sequence of D 1-D arrays of length N. A 1-D array is one dimension.
    bins : sequence or int, optional
        A number of equal bins for every dimension (default 10), or one entry per dimension:
        a number of bins or an array of increasing edges.
    range : sequence, optional
        One ``(min, max)`` or None per dimension, for bins given as numbers; None (the
        default, or an entry) takes that dimension's minimum and maximum.
    density : bool, optional
        If True, return numpy's density: the values over the bin volumes and the total.
    weights : (N,) array_like, optional
        One weight per sample; ``H`` then holds their sums.
    strategy : str, optional
        Keyword only, as in :func:`histogram`.
    device : {None, 'auto', 'cpu', 'cuda'}, optional
        Keyword only, as in :func:`histogram`.

    Returns
    -------
    H : array
        float64 counts, sums of weights or the density, of shape ``(nx0, nx1, ...)``: the
        bins of each dimension, row-major.
    edges : list of arrays
        numpy's edges of each dimension.

    Raises
    ------
    ValueError
        Columns of different lengths or not 1-D; `bins` or `range` without one entry per
        dimension; bins not positive or not increasing; `weights` of another length; cells
        more than numpy can index.

    See Also
    --------
    numpy.histogramdd : The function this one computes.
    histogram2d : Two dimensions.
    Histogram : An N-D histogram filled chunk by chunk.

    Examples
    --------
    >>> import numpy as np, tally
    >>> sample = np.random.default_rng(0).normal(size=(100, 3))
    >>> H, edges = tally.histogramdd(sample, bins=(4, 3, 2))
    >>> H.shape, H.dtype, len(edges)
    ((4, 3, 2), dtype('float64'), 3)
    >>> np.array_equal(H, np.histogramdd(sample, bins=(4, 3, 2))[0])
    True
    """
    columns, src = _columns_of(sample)
    columns = _in_common_type(columns)
    d = len(columns)
    given_bins = bins
    bins, range = dd_bins_and_ranges(bins, range, d)
    masked = _masked_sample(sample)

    def outer_edges(i):
        if masked is not None and range[i] is None:  # numpy's range: the unmasked values'
            column = masked[:, i]
            return _edges.outer_edges(column, None, lambda: (column.min(), column.max()))
        return _edges.outer_edges(columns[i], range[i])
    with np.errstate(over="ignore", invalid="ignore"):  # numpy's linspace may overflow to NaN edges
        edges = dd_edges(bins, outer_edges)
    if any(e.dtype.kind in "fc" and (np.isnan(e).any() or (e.size > 1 and e[-2] > e[-1])) for e in edges):
        # NaN edges (float16 ranges whose linspace overflows) or a last edge below the one before
        # (numpy computes a linspace in the sample's type, whose rounded step may overshoot the
        # end): numpy's searchsorted answers them, computed by numpy itself on a host copy.
        host = np.stack([c.host() for c in columns], axis=1) if masked is None else sample
        hist, edges = np.histogramdd(host, given_bins, range, density=density,
                                     weights=None if weights is None else to_host(weights))
        return src.result(hist), [src.result(e) for e in edges]
    numpy_cells = math.prod(e.size + 1 for e in edges)  # numpy counts outliers too, in intp
    if numpy_cells > np.iinfo(np.intp).max:
        raise ValueError("invalid dims: array size defined by dims is larger than the maximum possible size.")
    cells = tuple(max(e.size - 1, 0) for e in edges)
    if any(e.size == 0 for e in edges):  # numpy's own IndexError: no bins, as numpy.histogram's
        return src.result(np.zeros(cells)), [src.result(e) for e in edges]
    w = None
    if weights is not None and d and columns[0].size:  # read last, as numpy's bincount reads them
        # (and not at all for no samples)
        w = Source(_host_weights(weights, None), "weights")
        same_device(src, w)
        if w.ndim != 1:
            raise ValueError("object too deep for desired array")
        w = w.as_weights()
    if w is not None and w.size != (columns[0].size if d else 0):
        raise ValueError("The weights and list don't have the same length.")
    if numpy_cells > np.iinfo(np.intp).max // np.dtype(np.intp).itemsize:  # numpy's bincount
        # allocates its cells after it has read the weights
        raise ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than the maximum possible size.")
    if masked is not None:
        columns, w = _drop_masked_on_last_edges(masked, columns, w, edges)
    if any(e.size == 1 for e in edges):  # an axis of one edge has no bins: an empty result
        return src.result(np.zeros(cells)), [src.result(e) for e in edges]
    axes = [_edges.from_array(e, columns[0].type) for e in edges]
    values = fill(axes, columns, w, src, strategy, device).reshape(cells)
    values = values.double() if src.lib == "torch" else values.astype(np.float64)
    if density:
        total = values.sum()
        for i, e in enumerate(edges):
            shape = [1] * d
            shape[i] = e.size - 1
            values = values / src.result(np.diff(e).reshape(shape))
        values = values / total
    return values, [src.result(e) for e in edges]


def _masked_sample(sample):
    """An (N, D) view of a masked array that numpy.histogramdd reads as one array, keeping its
    mask (not a sequence of columns, which it reads as plain data), else None. numpy then takes
    the range from the unmasked values and counts all of them, but for masked samples on a
    dimension's last edge, which it drops."""
    if isinstance(sample, np.ma.MaskedArray) and sample.ndim in (1, 2) and np.ma.is_masked(sample):
        return sample.reshape(len(sample), -1)
    return None


def _drop_masked_on_last_edges(masked, columns, w, edges):
    """numpy moves a sample on a dimension's last edge into the last bin only where it is not
    masked (a masked comparison is False): (columns, weights) without the masked ones there."""
    drop = np.zeros(len(masked), bool)
    for i, e in enumerate(edges):
        if e.size:
            drop |= np.ma.getmaskarray(masked[:, i]) & (np.asarray(masked[:, i]) == e[-1])
    if not drop.any():
        return columns, w
    keep = ~drop
    columns = [c._derived(np.asarray(c.obj)[keep]) for c in columns]
    return columns, None if w is None else Source(np.asarray(to_host(w.obj))[keep], "weights").as_weights()


def dd_bins_and_ranges(bins, range, d):
    """numpy.histogramdd's reading of `bins` and `range`: one entry per dimension each."""
    try:
        if len(bins) != d:
            raise ValueError("The dimension of bins must be equal to the dimension of the sample x.")
    except TypeError:
        bins = d * [bins]
    if range is None:
        range = (None,) * d
    elif len(range) != d:
        raise ValueError("range argument must have one entry per dimension")
    return bins, range


def dd_edges(bins, outer_edges_of):
    """numpy.histogramdd's edges of each dimension: linspace over outer_edges_of(i), the first
    and last edge, for a number of bins, else the edges given (checked)."""
    edges = []
    for i, b in enumerate(bins):
        if np.ndim(b) == 0:
            if b < 1:
                raise ValueError(f"`bins[{i}]` must be positive, when an integer")
            first, last = outer_edges_of(i)
            n = operator_index(b, f"`bins[{i}]` must be an integer, when a scalar")
            edges.append(np.linspace(first, last, n + 1))
        elif np.ndim(b) == 1:
            edges.append(_edges.check_monotonic(to_host(b), f"`bins[{i}]` must be monotonically increasing, "
                                                "when an array"))
        else:
            raise ValueError(f"`bins[{i}]` must be a scalar or 1d array")
    return edges


def _in_common_type(columns):
    """numpy reads a sequence of columns as one array of their common type (asarray's, which
    promotes pair by pair: int16, uint16, float32 make float64 where result_type says float32;
    float32 stands for bfloat16, which numpy lacks): the columns converted to it where their
    types differ (copies, as numpy's), so that the edges and the binning are the common type's."""
    if len({c.type for c in columns}) == 1:
        return columns
    common = np.asarray([np.zeros(1, np.float32 if c.np_dtype is None else c.np_dtype) for c in columns]).dtype
    return [c if c.np_dtype == common else c.converted(common) for c in columns]


def _columns_of(sample):
    """numpy's reading of histogramdd's sample: an (N, D) array, else a sequence of D arrays."""
    shape = getattr(sample, "shape", None)
    if shape is not None and len(shape) == 2:
        src = Source(sample, "sample")
        return [src.column(i) for i in _range(shape[1])], src
    if shape is not None and len(shape) == 1:
        src = Source(sample, "sample")
        return [src], src
    if shape is not None:
        raise ValueError(f"too many values to unpack (expected 2): sample has shape {tuple(shape)}")
    if all(np.ndim(c) == 0 for c in sample):  # a list of scalars: one column, as numpy reads it
        src = Source(np.asarray(sample), "sample")
        return [src], src
    columns = [Source(c, "sample") for c in sample]
    if not columns:
        raise ValueError("histogramdd: the sample has no dimensions")
    for c in columns[1:]:
        same_device(columns[0], c, "other columns")
    if any(c.ndim != 1 or c.size != columns[0].size for c in columns):
        raise ValueError("histogramdd: every column of the sample must be 1-D and of one length")
    return columns, columns[0]


def _histogram2d_relevant(x, y, bins=None, range=None, density=None, weights=None, **_):
    """The arguments numpy's histogram2d hands to __array_function__ overrides."""
    yield x
    yield y
    try:
        n = len(bins)
    except TypeError:
        n = 1
    yield from (bins if n == 2 else (bins,))
    yield weights


@_numpy_protocol(np.histogram2d, _histogram2d_relevant)
def histogram2d(x, y, bins=10, range=None, density=None, weights=None, *,
                strategy="automatic", device=None):
    """Compute the two-dimensional histogram of two samples: numpy.histogram2d, by tally.

    The signature and results of ``numpy.histogram2d`` (``H`` is float64, as numpy's), computed
    as :func:`histogramdd` of ``[x, y]``: inputs of any library and device as
    :func:`histogram` reads them, the results in the input's library on its device.

    Parameters
    ----------
    x, y : array_like
        The first and second coordinates of the N samples: two 1-D arrays of one length.
    bins : int or [int, int] or array_like or [array, array], optional
        As numpy's: one number of bins for both axes (default 10), a number for each, one
        edges array for both, an edges array for each, or a number and an edges array.
    range : array_like, shape (2, 2), optional
        ``[[xmin, xmax], [ymin, ymax]]`` for bins given as numbers; by default each
        coordinate's minimum and maximum.
    density : bool, optional
        If True, return numpy's density: the values over the bin areas and the total.
    weights : array_like, shape (N,), optional
        One weight per sample; ``H`` then holds their sums.
    strategy : str, optional
        Keyword only, as in :func:`histogram`.
    device : {None, 'auto', 'cpu', 'cuda'}, optional
        Keyword only, as in :func:`histogram`.

    Returns
    -------
    H : array, shape (nx, ny)
        float64 counts, sums of weights, or the density; `x` along the first dimension.
    xedges : array, shape (nx + 1,)
        numpy's edges of the first dimension.
    yedges : array, shape (ny + 1,)
        numpy's edges of the second dimension.

    Raises
    ------
    ValueError
        `x` and `y` of different lengths; bins or a range that numpy refuses; `weights` of
        another length.

    See Also
    --------
    numpy.histogram2d : The function this one computes.
    histogramdd : Any number of dimensions.

    Examples
    --------
    >>> import numpy as np, tally
    >>> x = np.array([0.1, 0.4, 0.4, 0.9])
    >>> y = np.array([0.2, 0.3, 0.8, 0.8])
    >>> H, xedges, yedges = tally.histogram2d(x, y, bins=2)
    >>> H
    array([[2., 1.],
           [0., 1.]])
    >>> np.array_equal(H, np.histogram2d(x, y, bins=2)[0]), yedges
    (True, array([0.2, 0.5, 0.8]))
    """
    if len(x) != len(y):
        raise ValueError("x and y must have the same length.")
    hist, edges = histogramdd([x, y], bins_2d(bins), range, density, weights, strategy=strategy, device=device)
    return hist, edges[0], edges[1]


def bins_2d(bins):
    """numpy.histogram2d's `bins` as histogramdd's: one edges array is both axes' edges."""
    try:
        n = len(bins)
    except TypeError:
        n = 1
    return [bins, bins] if n != 1 and n != 2 else bins


@_numpy_protocol(np.bincount, lambda x, weights=None, minlength=None, **_: (x, weights))
def bincount(x, /, weights=None, minlength=0, *, strategy="automatic", device=None):
    """Count the occurrences of each value in an array of non-negative integers: numpy.bincount.

    The signature and results of ``numpy.bincount``, computed by tally: the count (or the sum
    of `weights`) of each value 0 .. max(x), at least `minlength` bins. Inputs of any library
    and device as :func:`histogram` reads them; the result comes back in the input's library
    on its device. Arguments that override numpy's functions (``__array_function__``) get
    numpy's own call, as in :func:`histogram`.

    Parameters
    ----------
    x : array_like, 1-D, of non-negative integers
        Positional only. The values to count; bool is read as uint8. Host array-likes (lists,
        buffers) of floats are answered by numpy itself, which casts or refuses them.
    weights : array_like, optional
        One weight per value, of `x`'s length. The sums are float64, the weights added in
        input order as numpy's, so their bits on the CPU.
    minlength : int, optional
        The least number of bins of the result (default 0).
    strategy : str, optional
        Keyword only, as in :func:`histogram`.
    device : {None, 'auto', 'cpu', 'cuda'}, optional
        Keyword only, as in :func:`histogram`.

    Returns
    -------
    out : array, 1-D
        int64 counts, or float64 sums of `weights`, of length ``max(max(x) + 1, minlength)``
        (`minlength` int64 zeros for an empty `x`).

    Raises
    ------
    ValueError
        A negative value; `x` not 1-D; a negative `minlength`; `weights` of another length.
    TypeError
        An array of floats (numpy's cast refused); `minlength` None or not an integer.

    See Also
    --------
    numpy.bincount : The function this one computes.
    histogram : Counts in bins of any width.

    Examples
    --------
    >>> import numpy as np, tally
    >>> x = np.array([0, 1, 1, 3, 2, 1, 7])
    >>> tally.bincount(x)
    array([1, 3, 1, 1, 0, 0, 0, 1])
    >>> tally.bincount(x, weights=np.linspace(0, 3, 7), minlength=10)
    array([0. , 4. , 2. , 1.5, 0. , 0. , 0. , 3. , 0. , 0. ])
    >>> np.array_equal(tally.bincount(x, minlength=10), np.bincount(x, minlength=10))
    True
    """
    key = None
    if type(x) is np.ndarray and device is None and type(minlength) is int and minlength >= 0 and \
            type(strategy) is str:
        values = _bincount_on_host(x, weights, minlength, strategy)
        if values is not None:
            return values
    elif device is None and type(minlength) is int and minlength >= 0 and type(strategy) is str:
        array = _devices.tensor_key(x)
        key = None if array is None or array[3] != 1 else ("bincount", minlength, strategy, array)
        if key is not None and weights is not None:  # sums: kept with minlength only (no maximum to find)
            wkey = _call_cache.weights_key(array, x, weights) if minlength > 0 else None
            key = None if wkey is None else key + (wkey,)
        kept = _call_cache.get(key)
        if kept is not None and minlength > 0:
            out = kept.fill(x, strategy, flow=True, weights=weights)
            if out is not None:
                values, (below, beyond, _) = out
                if below:
                    raise ValueError(_NEGATIVE)
                if not beyond:
                    return values
                if weights is None:
                    return _bincount_by_max(Source(x, "x"), None, minlength, strategy, device, False)
                # Weighted samples beyond minlength: the full path below.
        elif kept is not None and 0 < (n := _devices.size(kept.lib, x)) and \
                _tally.plan_bincount(True, n, kept.type, 0, False)[0] == 0:  # the maximum first
            values = _bincount_kept_by_max(kept, x, strategy)
            if values is not None:
                return values
    src = Source(x, "x")
    if src.ndim != 1:
        raise ValueError("object too deep for desired array" if src.ndim > 1
                         else "object of too small depth for desired array")
    if src.lib == "numpy" and not isinstance(x, np.ndarray) and (
            src.type in FLOAT_TYPES or (src.size == 0 and not np.can_cast(src.np_dtype, np.intp))):
        # Host array-likes of floats (or none of another type intp cannot hold): numpy casts some
        # (lists, sequences; deprecated) and refuses others (buffers, __array__ objects without a
        # length) by rules of its own: it answers them.
        return np.bincount(x, weights, minlength)
    if src.type in FLOAT_TYPES:
        raise TypeError(f"Cannot cast array data from dtype('{src.dtype_name}') to dtype('int64') "
                        "according to the rule 'safe'")
    src = src.bool_as_u8()
    if minlength is None:
        raise TypeError("use 0 instead of None for minlength")
    if isinstance(minlength, (bool, np.bool_)):
        raise TypeError("an integer is required")
    minlength = operator.index(minlength)  # numpy's TypeError and message
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    if src.size == 0:  # numpy's int64 zeros, whatever the weights
        return src.zeros(minlength, False)
    w = _weights_of(_host_weights(weights, src), src, "The weights and list don't have the same length.")
    # One pass where a length covers the data, or the maximum first: tally's plan_bincount
    # (tally/bincount.hpp) says which, and whether the result's length is learned.
    guess, learn = _tally.plan_bincount(src.on_cuda, src.size, src.type, int64_arg(minlength, "minlength"),
                                        w is not None)
    if guess > 0:
        axis = _tally.Axis.integer(0, guess)
        values, (below, beyond, _) = fill([axis], [src], w, src, strategy, device, flow=True, sum_block=0)
        if key is not None and not learn:
            _call_cache.keep(key, _call_cache.CachedCall(src.lib, src.index, src.type, [axis],
                                           weight_type=None if w is None else w.type))
        if below:
            raise ValueError(_NEGATIVE)
        if not beyond:
            if not learn:
                return values
            used = src.bins_used(values)
            _tally.remember_bincount_length(used)
            if used == guess:
                return values
            cut = values[:used]  # copied: a view would keep the guess's cells alive
            return cut.clone() if src.lib == "torch" else cut.copy()
    if key is not None and minlength == 0 and not learn:
        _call_cache.keep(key, _call_cache.CachedCall(src.lib, src.index, src.type, None))  # the axis from the maximum
    return _bincount_by_max(src, w, minlength, strategy, device, learn)


# numpy's integer dtypes (native byte order) whose bincount _bincount_on_host counts.
_INTEGER_DTYPES = frozenset(d for d, t in _NATIVE.items()
                            if t in ("u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64"))

def _bincount_on_host(x, weights, minlength, strategy):
    """bincount of a small 1-D numpy array of integers (and float weights of its shape): one
    extension call (small_bincount) finds the extremes and writes the counts into a new array;
    None where the full path answers: other arrays, weights or strategies, and what
    small_bincount leaves to it (many samples or bins, negative values: numpy's error)."""
    if x.ndim != 1 or strategy != "automatic" or x.dtype not in _INTEGER_DTYPES or \
            minlength > _call_cache.HOST_CELLS_MAX:
        return None
    if weights is not None and not (type(weights) is np.ndarray and weights.dtype in _FLOAT_WEIGHTS and
                                    weights.shape == x.shape):
        return None
    return _tally.small_bincount(x, weights, minlength)


def _bincount_kept_by_max(kept, x, strategy):
    """_bincount_by_max of a kept call: None where the device is not current or torch cannot
    reduce the type (the full path then switches devices, or reads the maximum on the host)."""
    if _devices.current_stream(kept.lib, kept.index) is None:
        return None
    try:
        lo, hi = _devices.min_max(kept.lib, x)
    except (RuntimeError, NotImplementedError):
        return None
    return kept.fill(x, strategy, axes=[_integer_axis(_bincount_length(lo, hi, 0))])


@functools.lru_cache(maxsize=64)
def _integer_axis(length):
    return _tally.Axis.integer(0, length)


_caches.register("integer axes", "bincount's axes", "length", "64; least recently used first",
                 lambda: _integer_axis.cache_info().currsize, _integer_axis.cache_clear)


_NEGATIVE = "'list' argument must have no negative elements"


def _bincount_length(lo, hi, minlength):
    """bincount's length for samples in [lo, hi]: ValueError for negative ones (and for uint64
    from 2^63, which numpy reads as int64), OverflowError past int64."""
    if lo < 0 or int(hi) >= 2**63:
        raise ValueError(_NEGATIVE)
    return int64_arg(max(int(hi) + 1, minlength), "minlength")


def _bincount_by_max(src, w, minlength, strategy, device, learn):
    """bincount's counts over 0 .. max(x), at least minlength bins, the maximum found first."""
    lo, hi = src.min_max()
    length = _bincount_length(lo, hi, minlength)
    axis = _tally.Axis.integer(0, length)
    values = fill([axis], [src], w, src, strategy, device, sum_block=0)
    if learn:
        _tally.remember_bincount_length(length)
    return values


_caches.register("bincount's guess", "the length of the last unweighted bincount of many samples (C++)",
                 "(one value)", "a power of two in 2^12..2^20", lambda: int(_tally.bincount_guess() != 1 << 12),
                 _tally.reset_bincount_guess)


def histc(input, bins=100, min=0, max=0, *, out=None, strategy="automatic", device=None):
    """Count samples in equal bins over [min, max]: torch.histc, computed by tally.

    The signature of ``torch.histc``, for arrays of any library and device as
    :func:`histogram` reads them; the result comes back in the input's library on its device,
    in the input's float dtype. Samples are binned by numpy's rule against the edges
    ``linspace(min, max, bins + 1)`` rounded to the input's float type, so a sample within
    rounding of an edge may land one bin away from torch.histc's arithmetic estimate.

    Parameters
    ----------
    input : array_like
        The samples, of any shape (all of them count); bool is read as uint8. Samples
        outside [min, max] and NaN are ignored.
    bins : int, optional
        The number of equal bins (default 100).
    min, max : float, optional
        The range of the bins. Where ``min == max`` (the default 0, 0), the data's own
        minimum and maximum; where those are equal too, widened by 1 on each side.
    out : array, optional
        Keyword only, as torch's: an array of the input's library that takes the result and
        is returned. torch resizes a tensor of another shape; a numpy or cupy `out` must
        have the result's shape and dtype.
    strategy : str, optional
        Keyword only, as in :func:`histogram`.
    device : {None, 'auto', 'cpu', 'cuda'}, optional
        Keyword only, as in :func:`histogram`.

    Returns
    -------
    out : array, shape (bins,)
        The counts in the input's float dtype: float32 for integer inputs (and for bfloat16
        outside torch).

    Raises
    ------
    ValueError
        `bins` below 1; a range that is not finite or whose `max` is not above `min`; a
        numpy or cupy `out` of another shape or dtype.
    TypeError
        `bins` not an integer; a torch `out` for an input that is not a torch tensor.
    RuntimeError
        A torch `out` of another dtype than the result's.

    See Also
    --------
    torch.histc : The function this one computes.
    histogram : numpy's histogram, with int64 counts and the edges.

    Examples
    --------
    >>> import numpy as np, tally
    >>> x = np.array([1.0, 2.0, 1.0, 4.0, 2.5])
    >>> tally.histc(x, bins=4, min=0, max=4)
    array([0., 2., 2., 1.])
    >>> tally.histc(np.array([1, 2, 1, 4]), bins=3)  # min == max: the data's range
    array([2., 1., 1.], dtype=float32)
    """
    if out is not None:
        return _into(out, histc(input, bins, min, max, strategy=strategy, device=device))
    key = host_key = None
    if type(input) is np.ndarray and device is None and type(bins) is int and type(min) in (int, float) and \
            type(max) in (int, float) and type(strategy) is str:
        values, host_key = _histc_on_host(input, bins, min, max, strategy)
        if values is not None:
            return values
    elif device is None and type(bins) is int:
        key = _kept_key("histc", input, bins, (min, max), strategy)
        if key is not None and min == max:  # the range comes from the data
            key = None
        kept = _call_cache.get(key)
        if kept is not None:
            values = kept.fill(input, strategy, out_type=_histc_type(kept.lib, kept.type))
            if values is not None:
                return values
    src = Source(input, "input").bool_as_u8()
    bins = operator_index(bins, "histc: bins must be an integer")
    if bins < 1:
        raise ValueError(f"torch.histc: bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo == hi and src.size > 0:
        lo, hi = (float(v) for v in src.min_max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    if not lo < hi:
        raise ValueError("torch.histc: max must be larger than min")
    edge_type = src.type if src.type in FLOAT_TYPES else "f64"
    axis = _tally.Axis.regular(int64_arg(bins, "bins"), lo, hi, edge_type)
    values = fill([axis], [src], None, src, strategy, device)
    if key is not None:
        _call_cache.keep(key, _call_cache.CachedCall(src.lib, src.index, src.type, [axis]))
    if host_key is not None:
        _call_cache.host_keep(host_key, _call_cache.HostCall(axis))
    return _histc_result(values, src.lib, src.type)


def _histc_on_host(input, bins, min, max, strategy):
    """histc of a numpy array (of a numeric dtype but bool and float16) over a kept call's axis,
    the counts written into a new array of the result's dtype; (counts or None, the call's key
    or None). The key: the bins, the range (where min == max the samples' extremes, as
    _data_ends finds them: none for NaN, a float zero, or _EXTREMES_MAX samples or more) and
    the dtype. No key for other inputs, more than HOST_CELLS_MAX bins, or an empty input
    with min == max."""
    sample_type = _NATIVE.get(input.dtype, "bool")
    if sample_type in ("bool", "f16") or bins > _call_cache.HOST_CELLS_MAX:
        return None, None
    lo, hi = float(min), float(max)
    if lo == hi:
        if input.size >= _EXTREMES_MAX:
            return None, None
        try:
            ends = _tally.extremes(input)
        except _tally.LayoutError:
            return None, None
        if ends is None:
            return None, None
        if type(ends[0]) is float and (ends[0] != ends[0] or ends[0] == 0 or ends[1] == 0):
            return None, None
        lo, hi = float(ends[0]), float(ends[1])
    key = "histc", bins, _edges.range_key(lo), _edges.range_key(hi), input.dtype
    kept = _call_cache.host_get(key)
    if kept is None:
        return None, key
    out = np.empty(kept.bins, NUMPY_NAMES[_histc_type("numpy", sample_type)])
    try:
        _tally.fill_into(kept.axis, input, None, out, strategy, False, 65536)
    except _tally.LayoutError:
        return None, None
    return out, key


def _into(out, result):
    """`result` written into the caller's `out` array (torch resizes it, as torch's out= does)."""
    torch = _torch()
    if torch is not None and isinstance(out, torch.Tensor):
        if not isinstance(result, torch.Tensor):
            raise TypeError(f"histc: out is a torch tensor but the input is not; got {type(result).__name__}")
        if out.dtype != result.dtype:
            raise RuntimeError(f"histc: out has dtype {out.dtype}, the result {result.dtype}")
        return out.resize_(result.shape).copy_(result)
    if getattr(out, "shape", None) != tuple(result.shape) or getattr(out, "dtype", None) != result.dtype:
        raise ValueError(f"histc: out must be an array of shape {tuple(result.shape)} and dtype {result.dtype}")
    out[...] = result
    return out


def _histc_type(lib, sample_type):
    """torch.histc's result type: the input's float type (float32 for integers, and for bfloat16
    outside torch)."""
    if sample_type not in FLOAT_TYPES or (sample_type == "bf16" and lib != "torch"):
        return "f32"
    return sample_type


def _histc_result(counts, lib, sample_type):
    """torch.histc's result: the counts in the input's float dtype (_histc_type)."""
    out = NUMPY_NAMES[_histc_type(lib, sample_type)]
    return counts.to(getattr(_torch(), out)) if lib == "torch" else counts.astype(out)


def plan(a=None, bins=10, range=None, weights=None, *, dtype=None, n=None,
         strategy="automatic", device=None):
    """Tell what the planner would pick for a histogram call, without counting.

    The planner's choice for ``histogram(a, bins, range, weights, strategy=, device=)``: the
    backend, the strategy, the launch shape, and the measured reason for each choice. Without
    `a`, give `dtype` and `n`; the plan is then for contiguous samples on the CPU, unless
    ``device='cuda'``.

    Parameters
    ----------
    a : array_like, optional
        The samples, as :func:`histogram` takes them; their dtype, size and device count.
    bins : int or sequence of scalars or str, optional
        As in :func:`histogram` (default 10). Without `a`: a number of bins or an array of
        edges.
    range : (float, float), optional
        As in :func:`histogram`. Without `a`, equal bins span it, by default (0, 1).
    weights : array_like, optional
        As in :func:`histogram`: plan a weighted fill. Without `a`, any value but None plans
        a fill with float64 weights.
    dtype : str or dtype, optional
        Keyword only, with `n` in place of `a`: the samples' type, a tally type name such as
        'f32' or a numpy type such as numpy.float32.
    n : int, optional
        Keyword only, with `dtype` in place of `a`: the number of samples.
    strategy : str, optional
        Keyword only, as in :func:`histogram`.
    device : {None, 'auto', 'cpu', 'cuda'}, optional
        Keyword only, as in :func:`histogram`.

    Returns
    -------
    Plan
        A dict: 'backend', 'strategy', the launch shape ('threads', 'replicas', 'block',
        'grid_blocks', ...), 'reasons' (a list of str, the measured reason for each choice)
        and 'description' (all of it as printable text, which is also its repr).

    Raises
    ------
    ValueError
        Neither `a` nor both `dtype` and `n`; arguments :func:`histogram` refuses.

    See Also
    --------
    histogram : The call planned.
    strategies : The strategies the planner picks from.
    Histogram.plan : The plan of a Histogram's fill.

    Examples
    --------
    >>> import numpy as np, tally
    >>> p = tally.plan(np.array([0.5, 1.5, 2.5]), bins=4)
    >>> p["backend"], p["strategy"]
    ('cpu', 'cpu_private')
    >>> tally.plan(dtype=np.float32, n=10**6, bins=64)["backend"]
    'cpu'
    >>> p                                                   # doctest: +ELLIPSIS
    tally plan:
    backend    cpu
    strategy   cpu_private
    ...
    """
    if a is not None:
        src = _histogram_input(a)
        sample_type, count = src.type, src.size
        w = _weights_of(weights, src, "weights should have the same shape as a.")
        axis = _edges_for(src, bins, range, w)[2]
    else:
        if dtype is None or n is None:
            raise ValueError("tally.plan: give an array, or dtype= and n=")
        sample_type = _tally.sample_type(np.empty(0, dtype)) if not isinstance(dtype, str) else dtype
        count, src, w = int(n), None, weights
        if np.ndim(bins) == 1:
            axis = _edges.from_array(to_host(bins), sample_type)
        else:
            lo, hi = (0.0, 1.0) if range is None else range
            axis = _tally.Axis.regular(operator_index(bins, "`bins` must be an integer"), lo, hi)
    backend = backend_for(device, src)
    if backend == "auto":
        backend = "cuda" if src is not None and src.on_cuda else "cpu"
    h = _tally.Hist([axis], w is not None, strategy_arg(strategy), backend)
    weight_type = w.type if isinstance(w, Source) else "f64"  # f32 weights sum exactly on the GPU
    return Plan(h.plan(sample_type, count, weight_type))


class Plan(dict):
    """The planner's choice for a fill (:func:`plan`, :meth:`Histogram.plan`): a dict of its
    fields, shown as the planner's own description (the strategy, the launch shape and why)."""

    def __repr__(self):
        return "tally plan:\n" + self["description"].rstrip("\n")

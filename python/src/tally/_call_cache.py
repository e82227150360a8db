"""Small calls on CUDA tensors at the cost of the fill: what a call derives from its arguments
alone, kept, and samples passed by address.

A 1-D call (histogram, histc, bincount) on a contiguous torch or cupy CUDA array whose other
arguments are plain Python numbers (or, for histogram, a numpy array of edges, keyed by its dtype
and bytes and kept from its second call) derives everything but the counts from them and the
array's dtype and device: the sample type, numpy's edges, the axis, the edges' device copy. The
full path makes them once and keeps them here by (function, arguments, dtype, device); a later
equal call checks the array's layout and fills (CachedCall.fill). One contiguous column is handed
to the extension by its data pointer, not by a DLPack export, which costs a third of a small
fill. Either call (the first through _functions, a kept one through CachedCall.fill) is one
extension call, fill_once, whose plan decides where the counts go: into a new array of the
caller's library written by tally::count_into (a small fill's one launch, histc's float types),
or the histogram's own cells in place (larger fills, weights, flow counts). The current stream,
new arrays and addresses come from _devices.

Small calls on numpy arrays keep their argument-derived parts too (HostCall): the axis and
numpy's edges by (function, bins, range or edges, dtype), so that a later equal call checks the
array's type and fills (_tally.fill_into: the counts written into a new numpy array).
"""

from . import _caches, _edges, _tally
from ._devices import address, allocator, current_stream, dlpack_reader, size, tensor_key
from ._types import type_of_dtype

_calls = {}
_CALLS_MAX = 1024  # distinct kept calls; beyond, the table starts again


def weights_key(array, a, w):
    """The key of weights `w` beside samples `a` whose tensor_key is `array`: that of a
    C-contiguous float32 or float64 array of a's library, device and shape, else None (such
    weights take the full path)."""
    key = tensor_key(w)
    if key is None or key[0] != array[0] or key[2] != array[2] or type_of_dtype(key[1]) not in ("f32", "f64"):
        return None
    return key if w.shape == a.shape else None


def number_key(value):
    """A key for a plain Python int or float (the sign of a zero kept: numpy's edges keep it),
    else None: other numbers take the full path. The regular edges' cache key (_edges.range_key)."""
    return _edges.range_key(value) if type(value) in (int, float) else None


def get(key):
    return None if key is None else _calls.get(key)


_seen = set()  # hashes of keys asked about by seen_before


def seen_before(key):
    """Whether `key` was asked about before (a hash collision only answers yes early); records
    it. The set starts again past _CALLS_MAX keys."""
    h = hash(key)
    if h in _seen:
        return True
    if len(_seen) >= _CALLS_MAX:
        _seen.clear()
    _seen.add(h)
    return False


def keep(key, call):
    if len(_calls) >= _CALLS_MAX:
        _calls.clear()
    _calls[key] = call


def _clear_calls():
    _calls.clear()
    _seen.clear()


_caches.register("calls", "what a 1-D call on a contiguous CUDA array derives from its arguments (CachedCall)",
                 "(function, arguments, dtype, device)", f"{_CALLS_MAX}; emptied whole when full",
                 lambda: len(_calls), _clear_calls)


def fill_once(lib, a, axes, sample_type, index, stream, strategy, flow, out_type="i64", weights=None,
              weight_type="", allocate=None, wrap=None):
    """The extension's one-shot fill of contiguous `a` (and contiguous `weights` of `weight_type`:
    float64 sums) on `stream` of device `index` (current): the counts as `out_type` (tally's
    name: 'i64', or histc's float types), an array of `lib` on that device (with flow: and the
    flow counts, read back once the values are wrapped). Where they go is the planner's choice.
    `allocate` and `wrap`: allocator(lib, index) and dlpack_reader(lib), where the caller keeps them."""
    out = _tally.fill_once(axes, address(lib, a), size(lib, a), sample_type, strategy, stream, index, flow,
                           0 if weights is None else address(lib, weights), weight_type, out_type,
                           allocate or allocator(lib, index), wrap or dlpack_reader(lib))
    return (out[0], out[1].read()) if flow else out


def wrapped(lib, out, flow):
    """The extension's fill_on_stream result `out` as an array of `lib` (torch or cupy) in place;
    with flow, (values, flow counts): the values are wrapped while the fill runs, then its one
    wait reads the counts."""
    wrap = dlpack_reader(lib)
    if not flow:
        return wrap(out)
    values = wrap(out[0])
    return values, out[1].read()


_host_calls = {}
# Distinct kept host calls (their edges at most HOST_CELLS_MAX + 1); beyond, the table starts again.
_HOST_CALLS_MAX = 256
# The most cells a kept host call writes into a new array (the planner's limit, tally/plan.hpp).
HOST_CELLS_MAX = _tally.host_call_max_cells


def host_get(key):
    return _host_calls.get(key)


def host_keep(key, call):
    if len(_host_calls) >= _HOST_CALLS_MAX:
        _host_calls.clear()
    _host_calls[key] = call


_caches.register("host calls", "what a 1-D call on a numpy array derives from its arguments (HostCall)",
                 "(function, bins, range or edges, dtype)", f"{_HOST_CALLS_MAX}; emptied whole when full",
                 lambda: len(_host_calls), _host_calls.clear)


class HostCall:
    """One host call's argument-derived parts: the axis, its bins, and numpy's edges (read-only,
    returned as a copy; None for calls that return none)."""

    __slots__ = ("axis", "bins", "edges")

    def __init__(self, axis, edges=None):
        self.axis, self.bins, self.edges = axis, axis.bins, edges


class CachedCall:
    """One call's argument-derived parts: the array's library, device and sample type, the axes
    (None where each call's axis depends on the data), the edges' kept device copy where the
    call returns edges (never written: returned as a copy), and the weights' type name where the
    call is weighted."""

    __slots__ = ("lib", "index", "type", "axes", "edges", "weight_type", "allocate", "wrap")

    def __init__(self, lib, index, sample_type, axes, edges=None, weight_type=None):
        self.lib, self.index, self.type, self.axes, self.edges = lib, index, sample_type, axes, edges
        self.weight_type = weight_type or ""
        self.allocate, self.wrap = allocator(lib, index), dlpack_reader(lib)

    def fill(self, a, strategy, flow=False, axes=None, out_type="i64", weights=None):
        """The counts of `a` on the current stream (over `axes` instead of the kept ones where
        given) as `out_type` (with flow: int64 counts and the flow counts), or the float64 sums
        of `weights` (of the kept weight type, checked by weights_key): fill_once. None where its
        device is not the current one (the full path switches devices)."""
        stream = current_stream(self.lib, self.index)
        if stream is None:
            return None
        return fill_once(self.lib, a, self.axes if axes is None else axes, self.type, self.index, stream, strategy,
                         flow, out_type, weights, self.weight_type, self.allocate, self.wrap)

    def edges_copy(self):
        return self.edges.clone() if self.lib == "torch" else self.edges.copy()

"""Small calls on CUDA tensors at the cost of the fill: what a call derives from its arguments
alone, kept, and samples passed by address.

A 1-D call (histogram, histc, bincount) on a contiguous torch or cupy CUDA array whose other
arguments are plain Python numbers (or, for histogram, a numpy array of edges, keyed by its dtype
and bytes and kept from its second call) derives everything but the counts from them and the
array's dtype and device: the sample type, numpy's edges, the axis, the edges' device copy. The
full path makes them once and keeps them here by (function, arguments, dtype, device); a later
equal call checks the array's layout and fills (KeptCall.fill). One contiguous column is handed
to the extension by its data pointer, not by a DLPack export, which costs a third of a small
fill; its counts are written by tally::count_into (count_address) into an array of the caller's
library, one launch for a small fill, or come back as the histogram's own cells (fill_address)
where they are int64 counts of a larger one or flow counts are wanted. The pieces the other
small-call paths share (user kernels' plans, the
patterns' activations) live here too: the current stream, a new array, an array's address, a
min/max read back once.
"""

import functools
import sys

from . import _edges, _tally
from ._types import EXTREME_TYPES, NUMPY_NAMES, type_of_dtype

_calls = {}
_CALLS_MAX = 1024  # distinct kept calls; beyond, the table starts again
# The planner's write_once limits: count_into's one launch.
_WRITE_ONCE_SAMPLES, _WRITE_ONCE_CELLS = _tally.write_once_max_samples, _tally.write_once_max_cells


def _torch():
    """torch where the process has imported it (tally never imports it itself), else None."""
    return sys.modules.get("torch")


def _cupy():
    """cupy where the process has imported it, else None."""
    return sys.modules.get("cupy")


def tensor_key(a):
    """(library, dtype, device index, dimensions) of a C-contiguous torch or cupy array in CUDA
    memory, else None. Not bool arrays (numpy warns on every call of them) nor torch's negative views
    (a flag, not negated memory)."""
    torch = _torch()
    if torch is not None and isinstance(a, torch.Tensor):
        if not a.is_cuda or a.dtype is torch.bool or not a.is_contiguous() or a.is_neg() or not raw_stream(torch):
            return None
        return "torch", a.dtype, a.get_device(), a.dim()
    cupy = _cupy()
    if cupy is not None and isinstance(a, cupy.ndarray):
        if a.dtype.kind == "b" or not a.flags.c_contiguous:
            return None
        return "cupy", a.dtype, a.data.device_id, a.ndim
    return None


def weights_key(array, a, w):
    """The key of weights `w` beside samples `a` whose tensor_key is `array`: that of a
    C-contiguous float32 or float64 array of a's library, device and shape, else None (such
    weights take the full path)."""
    key = tensor_key(w)
    if key is None or key[0] != array[0] or key[2] != array[2] or type_of_dtype(key[1]) not in ("f32", "f64"):
        return None
    return key if w.shape == a.shape else None


def raw_stream(torch):
    """Whether torch has the raw current-stream handle KeptCall.fill reads."""
    return hasattr(torch._C, "_cuda_getCurrentRawStream")


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


def current_stream(lib, index):
    """The current stream's handle of `lib` (torch or cupy) where device `index` is the current
    device, else None."""
    if lib == "torch":
        torch = _torch()
        if torch._C._cuda_getDevice() != index:
            return None
        return torch._C._cuda_getCurrentRawStream(index)
    cuda = _cupy().cuda
    if cuda.runtime.getDevice() != index:
        return None
    return cuda.get_current_stream().ptr


_torch_kinds = {}  # (device index, dtype name) -> an empty tensor of that kind, made once


def new_array(lib, index, shape, name):
    """A new array of `lib` (torch or cupy) on CUDA device `index`, from its library's memory
    pool on that device's current stream; `name` numpy's name of its dtype (or 'bfloat16')."""
    if lib == "torch":
        kind = _torch_kinds.get((index, name))
        if kind is None:  # new_empty of a tensor of the kind parses no dtype or device keywords
            torch = _torch()
            kind = _torch_kinds[index, name] = torch.empty(0, dtype=getattr(torch, name),
                                                           device=torch.device("cuda", index))
        return kind.new_empty(shape)
    cupy = _cupy()
    with cupy.cuda.Device(index):  # cupy allocates on the current device
        return cupy.empty(shape, name)


def size(lib, a):
    """The number of elements of a torch or cupy array."""
    return a.numel() if lib == "torch" else a.size


def new_like(lib, a):
    """A new C-contiguous array of a's shape and dtype, `a` a torch or cupy array of the current
    device (whatever a's strides, as new_array: empty_like alone would keep a channels_last
    layout, say)."""
    if lib == "torch":
        torch = _torch()
        return torch.empty_like(a, memory_format=torch.contiguous_format)
    return _cupy().empty_like(a, order="C")


def address(lib, a):
    """The data address of an array of `lib` (torch or cupy), its offset into its memory included."""
    return a.data_ptr() if lib == "torch" else a.data.ptr


def fill_address(lib, a, axes, sample_type, index, stream, strategy, flow, weights=None, weight_type=""):
    """The extension's one-shot fill of contiguous `a` (and contiguous `weights` of `weight_type`,
    float64 sums) on `stream` of device `index` (current), the result as an array of `lib` in
    place (with flow: and the flow counts, read back once the result is wrapped)."""
    out = _tally.fill_address(axes, address(lib, a), size(lib, a), sample_type, strategy, stream, index, flow,
                              0 if weights is None else address(lib, weights), weight_type)
    return wrapped(lib, out, flow)


def wrapped(lib, out, flow):
    """The extension's one-shot fill result `out` as an array of `lib` (torch or cupy) in place;
    with flow, (values, flow counts): the values are wrapped while the fill runs, then its one
    wait reads the counts."""
    from_dlpack = _torch().from_dlpack if lib == "torch" else _cupy().from_dlpack
    if not flow:
        return from_dlpack(out)
    values = from_dlpack(out[0])
    return values, out[1].read()


def count_address(lib, a, n, axes, bins, sample_type, index, stream, strategy, out_type):
    """The counts of contiguous `a` (n samples) over the 1-D `axes` of `bins` bins on `stream` of
    device `index` (current), written by the extension's count_into as `out_type` (tally's name:
    'i64' for counts, or histc's float types) into a new array of `lib` from its library's
    memory pool: a small fill is one launch (or a memset and one), nothing allocated by tally."""
    out = new_array(lib, index, (bins,), NUMPY_NAMES[out_type])
    _tally.count_address(axes, address(lib, a), n, sample_type, strategy, stream, address(lib, out), out_type)
    return out


@functools.lru_cache(maxsize=1)
def cuda_usable():
    """Whether tally's CUDA backend is usable here (asked once: it does not change within a process)."""
    return any(name == "cuda" and usable for name, _, usable, _ in _tally.backends())


_TORCH_WITHOUT_AMINMAX = ("u16", "u32", "u64")


def min_max(lib, a):
    """[min, max] of a torch or cupy array (not empty) as Python numbers, read back once. torch:
    torch.aminmax into one two-element array (one pass over the data). cupy, and torch's unsigned
    types wider than 8 bits (which aminmax lacks on CUDA in some versions): a C-contiguous array of the current device of a
    type tally reduces, by two launches of tally's reduction into one two-element array of its
    type (cupy's min, max and stack cost 3 launches from Python and two passes); else by torch,
    or by cupy."""
    key = tensor_key(a)
    type_name = type_of_dtype(key[1]) if key is not None else None
    if key is not None and (lib == "cupy" or type_name in _TORCH_WITHOUT_AMINMAX):
        stream = current_stream(lib, key[2]) if type_name in EXTREME_TYPES and cuda_usable() else None
        if stream is not None:
            both = new_array(lib, key[2], (2,), NUMPY_NAMES[type_name])
            x, n, at = address(lib, a), size(lib, a), address(lib, both)
            _tally.reduce_address("min", type_name, x, 1, n, False, type_name, at, stream)
            _tally.reduce_address("max", type_name, x, 1, n, False, type_name, at + both.nbytes // 2, stream)
            return both.tolist() if lib == "torch" else both.get().tolist()
    if lib == "torch":
        torch = _torch()
        both = torch.empty(2, dtype=a.dtype, device=a.device)
        torch.aminmax(a, out=(both[0], both[1]))
        return both.tolist()
    cupy = _cupy()  # its reductions into views (out=) fail on its CUB path: cupy 14
    with cupy.cuda.Device(a.data.device_id):
        return cupy.stack([a.min(), a.max()]).get().tolist()


class KeptCall:
    """One call's argument-derived parts: the array's library, device and sample type, the axes
    (None where each call's axis depends on the data), the edges' kept device copy where the
    call returns edges (never written: returned as a copy), and the weights' type name where the
    call is weighted."""

    __slots__ = ("lib", "index", "type", "axes", "bins", "edges", "weight_type")

    def __init__(self, lib, index, sample_type, axes, edges=None, weight_type=None):
        self.lib, self.index, self.type, self.axes, self.edges = lib, index, sample_type, axes, edges
        self.bins = None if axes is None else axes[0].bins
        self.weight_type = weight_type

    def fill(self, a, strategy, flow=False, axes=None, out_type="i64", weights=None):
        """The counts of `a` on the current stream (over `axes` instead of the kept ones where
        given), as `out_type` (count_address; with flow: int64 counts and the flow counts), or
        the float64 sums of `weights` (of the kept weight type, checked by weights_key), or
        None where its device is not the current one (the full path switches devices)."""
        stream = current_stream(self.lib, self.index)
        if stream is None:
            return None
        axes, bins = (self.axes, self.bins) if axes is None else (axes, axes[0].bins)
        if weights is not None:
            return fill_address(self.lib, a, axes, self.type, self.index, stream, strategy, flow, weights,
                                self.weight_type)
        n = size(self.lib, a)
        if flow or (out_type == "i64" and not (strategy == "automatic" and n <= _WRITE_ONCE_SAMPLES and
                                               bins <= _WRITE_ONCE_CELLS)):
            # int64 counts that count_into would not write in one launch are the histogram's own
            # cells, handed over with no second buffer and no conversion.
            return fill_address(self.lib, a, axes, self.type, self.index, stream, strategy, flow)
        return count_address(self.lib, a, n, axes, bins, self.type, self.index, stream, strategy, out_type)

    def edges_copy(self):
        return self.edges.clone() if self.lib == "torch" else self.edges.copy()

"""Arrays in and out: which library an input comes from, where it lives, and results back in kind.

numpy, torch and cupy arrays are recognised by type; anything else with ``__dlpack__`` or the
buffer protocol is read through the extension (DLPack or the buffer protocol) and answered with
numpy arrays; plain sequences go through ``numpy.asarray`` as numpy.histogram does.
"""

import operator

import numpy as np

from . import _caches, _devices, _edges, _tally
from ._devices import _cupy, _torch
from ._types import _NAMES, _NATIVE, NUMPY_NAMES


class Source:
    """One input array: the object handed to the extension, its library, type and device."""

    __slots__ = ("obj", "lib", "type", "np_dtype", "shape", "device", "index", "given_dtype")

    def __init__(self, obj, what="a"):
        torch, cupy = _torch(), _cupy()
        if isinstance(obj, np.ndarray):
            # numpy's functions read subclasses (masked arrays, matrices) as plain arrays: asarray.
            self._from_numpy(obj if type(obj) is np.ndarray else np.asarray(obj))
        elif torch is not None and isinstance(obj, torch.Tensor):
            if obj.requires_grad:  # read as data, as torch.histc reads it (DLPack refuses it)
                obj = obj.detach()
            self.obj, self.lib = obj, "torch"
            self.type = _NAMES.get(str(obj.dtype).replace("torch.", ""))
            self.np_dtype = None if self.type in (None, "bf16") else np.dtype(str(obj.dtype)[6:])
            self.shape = tuple(obj.shape)
            self.device = obj.device.type
            self.index = obj.device.index
        elif cupy is not None and isinstance(obj, cupy.ndarray):
            self.obj, self.lib = obj, "cupy"
            self.np_dtype = obj.dtype
            self.type = _NAMES.get(obj.dtype.name)
            self.shape = obj.shape
            self.device, self.index = "cuda", obj.device.id
        elif hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
            kind, index = obj.__dlpack_device__()
            if int(kind) in (1, 3):  # CPU or CUDA host memory: numpy reads it without a copy
                self._from_numpy(np.from_dlpack(obj))
            else:
                self.obj, self.lib = obj, "other"
                self.type = _tally.sample_type(obj)
                self.np_dtype = None if self.type == "bf16" else np.dtype(NUMPY_NAMES[self.type])
                self.shape = tuple(obj.shape)
                self.device, self.index = "cuda", int(index)
        else:
            self._from_numpy(np.asarray(obj))
        if self.type is None:
            raise TypeError(f"tally: {what} has an unsupported dtype {self.dtype_name}; supported: "
                            "uint8 int8 uint16 int16 uint32 int32 uint64 int64 float16 bfloat16 "
                            "float32 float64")

    def _from_numpy(self, a):
        self.type = _NATIVE.get(a.dtype)
        if self.type is None and not a.dtype.isnative and a.dtype.name in _NAMES:  # big-endian: a native copy
            a = a.astype(a.dtype.newbyteorder("="))
            self.type = _NATIVE.get(a.dtype)
        self.obj, self.lib = a, "numpy"
        self.np_dtype = a.dtype
        self.shape = a.shape
        self.device, self.index = "cpu", None

    @property
    def dtype_name(self):
        return str(getattr(self.obj, "dtype", "?"))

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def on_cuda(self):
        return self.device == "cuda"

    def where(self):
        return f"cuda:{self.index}" if self.on_cuda else "cpu"

    # ---- views and copies of the input (new Source objects, same library) ----
    def _derived(self, obj):
        s = Source.__new__(Source)
        s.obj, s.lib, s.type, s.np_dtype = obj, self.lib, self.type, self.np_dtype
        s.shape, s.device, s.index = tuple(obj.shape), self.device, self.index
        return s

    def bool_as_u8(self):
        """A bool array read as its bytes (0 or 1), without a copy."""
        if self.type != "bool":
            return self
        if self.lib == "torch":
            s = self._derived(self.obj.view(_torch().uint8))
        elif self.lib == "cupy":
            s = self._derived(self.obj.view(_cupy().uint8))
        else:
            s = self._derived(np.asarray(self.obj).view(np.uint8))
        s.type, s.np_dtype = "u8", np.dtype(np.uint8)
        return s

    def contiguous(self):
        """A C-contiguous copy, for layouts that are not one strided sequence of memory."""
        if self.lib == "torch":
            return self._derived(self.obj.contiguous())
        if self.lib == "cupy":
            return self._derived(_cupy().ascontiguousarray(self.obj))
        if self.lib == "numpy":
            return self._derived(np.asarray(self.obj, order="C"))  # keeps 0-d arrays 0-d
        raise ValueError("tally: this array's layout needs a copy, which tally cannot make for "
                         f"{type(self.obj).__name__}; pass a contiguous array")

    def column(self, i):
        """Column i of an (N, D) array, as a strided view."""
        return self._derived(self.obj[:, i])

    def converted(self, dtype, what="this array"):
        """A copy converted to numpy dtype `dtype`, in the same library and on the same device."""
        dtype = np.dtype(dtype)
        if self.lib == "torch":
            s = self._derived(self.obj.to(getattr(_torch(), dtype.name)))
        elif self.lib in ("cupy", "numpy"):
            s = self._derived(self.obj.astype(dtype))
        else:
            raise TypeError(f"tally: {what} must be converted to {dtype.name}, which tally cannot do for "
                            f"{type(self.obj).__name__}; pass a numpy, torch or cupy array")
        s.type, s.np_dtype = _NATIVE.get(dtype), dtype
        if s.type is None:
            raise TypeError(f"tally: {what} has an unsupported dtype {dtype.name}")
        return s

    def as_weights(self):
        """f32 and f64 weights as they are; other numeric types converted to f64 (a copy).
        given_dtype keeps the weights' own numpy dtype (numpy.histogram's result dtype; float64
        for bfloat16, which numpy lacks)."""
        self.given_dtype = np.dtype(np.float64) if self.np_dtype is None else np.dtype(self.np_dtype)
        if self.type in ("f32", "f64"):
            return self
        s = self.converted(np.float64, "the weights")
        s.given_dtype = self.given_dtype
        return s

    def squared(self):
        """The weights squared in float64, in the same library and on the same device (exact
        for float32 and narrower weights, whose squares float64 holds)."""
        f = self.converted(np.float64, "the weights").obj
        s = self._derived(f * f)
        s.type, s.np_dtype = "f64", np.dtype(np.float64)
        return s

    # ---- reductions and host copies ----
    def min_max(self):
        """numpy's a.min(), a.max(): scalars of the array's own type (NaN if any is NaN).
        bf16 gives Python floats (numpy has no bf16)."""
        if self.lib in ("torch", "cupy"):
            try:
                values = _devices.min_max(self.lib, self.obj)
            except (RuntimeError, NotImplementedError):  # torch lacks aminmax for some uint types
                a = self.host()
                return a.min(), a.max()
        elif self.lib == "numpy":
            return self.obj.min(), self.obj.max()
        else:
            return self.host().min(), self.host().max()
        if self.np_dtype is None:
            return float(values[0]), float(values[1])
        return self.np_dtype.type(values[0]), self.np_dtype.type(values[1])

    def bins_used(self, values):
        """1 + the index of the last nonzero element of `values` (a 1-D result in this input's
        library), 0 if all are zero: read back to the host."""
        if self.lib == "torch":
            nonzero = _torch().nonzero(values)
            return int(nonzero[-1]) + 1 if nonzero.numel() else 0
        lib = _cupy() if self.lib == "cupy" else np
        nonzero = lib.flatnonzero(values)
        return int(nonzero[-1]) + 1 if nonzero.size else 0

    def host(self):
        """The samples as a numpy array on the host (a copy for device memory)."""
        return to_host(self.obj)

    # ---- results ----
    def result(self, host_array, dtype=None):
        """A host numpy result as this input's library and device, optionally cast (dtype may
        be 'bfloat16', which only torch results hold; numpy results then use float32)."""
        if self.lib == "torch":
            torch = _torch()
            t = torch.from_numpy(np.ascontiguousarray(host_array))
            if self.on_cuda:  # from pinned memory, ordered on the current stream, no host wait
                t = t.pin_memory().to(f"cuda:{self.index}", non_blocking=True)
            return t if dtype is None else t.to(getattr(torch, dtype))
        if dtype == "bfloat16":
            dtype = "float32"
        out = host_array if dtype is None else host_array.astype(dtype)
        if self.lib == "cupy":
            with _cupy().cuda.Device(self.index):
                return _cupy().asarray(out)
        return out

    def edges_result(self, edges, dtype=None, content=None):
        """Edges as this input's library and device, like result(), always a new array: a copy
        of kept_edges() where there is one (cloned on the current stream)."""
        kept = self.kept_edges(edges, dtype, content)
        if kept is None:
            return self.result(np.array(edges), dtype)
        return kept.clone() if self.lib == "torch" else kept.copy()

    def kept_edges(self, edges, dtype=None, content=None):
        """The device copy of edges that tally keeps, or None for other edges and inputs: edges
        of tally's cache of regular edges (_edges.is_kept: read-only), or a user's edges whose
        `content` key (their dtype and bytes) is given. It is copied to a CUDA device once, on a
        stream of its own, so that later calls clone it on the current stream: no pinned staging
        and host copy a call (8 MiB for 2^20 bins), and no wait for the caller's stream. The
        device copies are kept for the process's lifetime (never freed, so no clone in flight
        can outlive them), up to _DEVICE_EDGES_BYTES a device, and at most
        _DEVICE_EDGES_CONTENT of them by content. Never to be written."""
        if not self.on_cuda or self.lib not in ("torch", "cupy") or (content is None and not _edges.is_kept(edges)):
            return None
        key = (id(edges) if content is None else content, self.lib, self.index, dtype)
        hit = _device_edges.get(key)
        if hit is None:
            place = (self.lib, self.index)
            used, by_content = _device_edges_used.get(place, (0, 0))
            if used + edges.nbytes > _DEVICE_EDGES_BYTES or (content is not None and by_content >= _DEVICE_EDGES_CONTENT):
                return None
            # result()'s copy, made current on a side stream and waited for there.
            if self.lib == "torch":
                torch = _torch()
                side = torch.cuda.Stream(self.index, priority=-1)  # not the pool callers draw from
                current = torch.cuda.stream(side)
            else:
                with _cupy().cuda.Device(self.index):
                    side = _cupy().cuda.Stream(non_blocking=True)
                current = side
            with current:
                on_device = self.result(np.array(edges), dtype)
            side.synchronize()
            _device_edges_used[place] = used + edges.nbytes, by_content + (content is not None)
            # An id key holds `edges`, so that the id stays unique; a content key holds its bytes.
            hit = _device_edges[key] = (edges if content is None else None, on_device)
        return hit[1]

    def zeros(self, n, weighted):
        return self.result(np.zeros(n, np.float64 if weighted else np.int64))


# Device copies of kept edges: (the host array's id, or a content key; lib, device, dtype) ->
# (host array or None, device array); and per (lib, device) the bytes kept and how many by content.
_device_edges = {}
_device_edges_used = {}
_DEVICE_EDGES_BYTES = 64 << 20
_DEVICE_EDGES_CONTENT = 256


def _clear_device_edges():
    _device_edges.clear()
    _device_edges_used.clear()


_caches.register("device edges", "device copies of the edges calls return, per library and device",
                 "(host edges' id or bytes, library, device, dtype)",
                 f"{_DEVICE_EDGES_BYTES >> 20} MiB and {_DEVICE_EDGES_CONTENT} by bytes a device; then not kept",
                 lambda: len(_device_edges), _clear_device_edges)


def to_host(obj):
    """Any array (numpy, torch CPU/CUDA, cupy, DLPack, sequence) as a numpy array."""
    torch, cupy = _torch(), _cupy()
    if torch is not None and isinstance(obj, torch.Tensor):
        t = obj.detach().cpu()
        return t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    if cupy is not None and isinstance(obj, cupy.ndarray):
        return obj.get()
    if not isinstance(obj, np.ndarray) and hasattr(obj, "__dlpack__"):
        try:
            return np.from_dlpack(obj)
        except (BufferError, RuntimeError, TypeError):
            pass
    return np.asarray(obj)


def same_device(a, b, what="weights"):
    if (a.device, a.index) != (b.device, b.index):
        raise ValueError(f"tally: the samples are on {a.where()} and the {what} on {b.where()}; "
                         "put both on one device")


def backend_for(device, src):
    """The extension's backend name for the device= keyword: None/'auto' picks where the data
    are; 'cpu' or 'cuda' ('cuda:N', torch.device) insist."""
    if device is None:
        return "auto"
    text = str(device)
    if text == "auto":
        return "auto"
    if text == "cpu":
        return "cpu"
    if text == "cuda" or text.startswith("cuda:"):
        if ":" in text and src is not None and src.on_cuda and int(text.split(":")[1]) != src.index:
            raise ValueError(f"tally: device={text!r} but the samples are on {src.where()}")
        return "cuda"
    raise ValueError(f"tally: device must be None, 'auto', 'cpu' or 'cuda[:N]', got {device!r}")


def operator_index(value, message):
    try:
        return operator.index(value)
    except TypeError as e:
        raise TypeError(message) from e


_INT64 = (-(2**63), 2**63 - 1)


def int64_arg(value, what):
    """An integer argument the extension takes as a 64-bit integer: numpy's OverflowError where
    it does not fit (never the extension's own message)."""
    v = operator.index(value)
    if not _INT64[0] <= v <= _INT64[1]:
        raise OverflowError(f"{what}: Python int too large to convert to C long ({v})")
    return v


def strategy_arg(strategy):
    if not isinstance(strategy, str):
        raise TypeError(f"strategy must be a strategy's name (a str, see tally.STRATEGIES), got {strategy!r}")
    return strategy

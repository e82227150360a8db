"""Devices, streams and memory of the caller's array libraries: torch and cupy where the process
has imported them, whether tally's CUDA backend is usable, the input's device made current and
its current stream, new arrays from the library's memory pool, an array's address and size, and
its minimum and maximum read back once. The package's modules share these (the full paths, the
cached calls of _call_cache, the patterns and user kernels); this module imports nothing of the
package but the extension and _types.
"""

import functools
import sys

import numpy as np

from . import _caches, _tally
from ._types import EXTREME_TYPES, NUMPY_NAMES, type_of_dtype


def _torch():
    """torch where the process has imported it (tally never imports it itself), else None."""
    return sys.modules.get("torch")


def _cupy():
    """cupy where the process has imported it, else None."""
    return sys.modules.get("cupy")


def raw_stream(torch):
    """Whether torch has the raw current-stream handle that current_stream reads."""
    return hasattr(torch._C, "_cuda_getCurrentRawStream")


def tensor_key(a):
    """(library, dtype, device index, dimensions) of a C-contiguous torch or cupy array in CUDA
    memory, else None: such an array is handed to the extension by its address. Not bool arrays
    (numpy warns on every call of them) nor torch's negative views (a flag, not negated memory)."""
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


@functools.lru_cache(maxsize=1)
def cuda_usable():
    """Whether tally's CUDA backend is usable here (asked once: it does not change within a process)."""
    return any(name == "cuda" and usable for name, _, usable, _ in _tally.backends())


_caches.register("CUDA usable", "whether tally's CUDA backend is usable here", "(one value)", "one",
                 lambda: cuda_usable.cache_info().currsize, cuda_usable.cache_clear)


def require_cuda(src):
    """A ValueError where the Source `src` is in CUDA memory and tally cannot run there."""
    if src.on_cuda and not cuda_usable():
        raise ValueError(f"tally: the samples are in CUDA memory ({src.where()}) but this build of "
                         "tally has no usable CUDA backend; copy them to the host")


class device_of:
    """Makes the input's CUDA device current and gives the caller's current stream (a handle,
    0 for host inputs); with wait=True, waits for that stream first (the synchronous fill reads
    the samples on its own stream)."""

    def __init__(self, src, wait):
        self.src, self.wait, self.context = src, wait, None

    def __enter__(self):
        if not self.src.on_cuda or self.src.lib not in ("torch", "cupy"):
            return 0
        if self.src.lib == "torch":
            torch = _torch()
            # The device switch and the stream object cost more than a small fill: where the
            # input's device is current, its raw stream handle alone (torch's own fast path).
            raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
            if raw is not None and torch.cuda.current_device() == self.src.index:
                handle = raw(self.src.index)
                if self.wait:
                    torch.cuda.current_stream(self.src.index).synchronize()
                return handle
            cuda = torch.cuda
            self.context = cuda.device(self.src.index)
            self.context.__enter__()
            stream = cuda.current_stream()
            handle = stream.cuda_stream
        else:
            cuda = _cupy().cuda
            self.context = cuda.Device(self.src.index)
            self.context.__enter__()
            stream = cuda.get_current_stream()
            handle = stream.ptr
        if self.wait:
            stream.synchronize()
        return handle

    def __exit__(self, *exc):
        if self.context is not None:
            self.context.__exit__(*exc)
        return False


def current_stream(lib, index):
    """The current stream's handle of `lib` (torch or cupy) where device `index` is the current
    device, else None (the caller then takes its full path, which switches devices)."""
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
_caches.register("torch kinds", "an empty torch tensor of each dtype and device, which new arrays are made like",
                 "(device, dtype)", "one a device and dtype", lambda: len(_torch_kinds), _torch_kinds.clear)


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


def empty(src, shape, type_name):
    """A new array of `shape` and tally type `type_name` in the Source `src`'s library on its
    device (numpy for host inputs)."""
    name = NUMPY_NAMES[type_name]
    if src.lib in ("torch", "cupy"):
        return new_array(src.lib, src.index, shape, name)
    return np.empty(shape, name)


def new_like(lib, a):
    """A new C-contiguous array of a's shape and dtype, `a` a torch or cupy array of the current
    device (whatever a's strides, as new_array: empty_like alone would keep a channels_last
    layout, say)."""
    if lib == "torch":
        torch = _torch()
        return torch.empty_like(a, memory_format=torch.contiguous_format)
    return _cupy().empty_like(a, order="C")


def size(lib, a):
    """The number of elements of a torch or cupy array."""
    return a.numel() if lib == "torch" else a.size


def address(lib, a):
    """The data address of an array of `lib` (torch or cupy), its offset into its memory included."""
    return a.data_ptr() if lib == "torch" else a.data.ptr


_allocators = {}  # (library, device index) -> allocate, made once
_caches.register("allocators", "fill_once's allocate function of each library and device", "(library, device)",
                 "one a library and device", lambda: len(_allocators), _allocators.clear)


def allocator(lib, index):
    """allocate(n, type_name) -> (array, address): a new 1-D array of n elements of tally type
    `type_name` of `lib` on device `index` (new_array), and its data address; what the extension's
    fill_once writes counts into."""
    allocate = _allocators.get((lib, index))
    if allocate is None:
        def allocate(n, type_name):
            out = new_array(lib, index, (n,), NUMPY_NAMES[type_name])
            return out, address(lib, out)
        _allocators[lib, index] = allocate
    return allocate


def dlpack_reader(lib):
    """`lib`'s from_dlpack (torch or cupy): device cells the extension hands over, in place."""
    return _torch().from_dlpack if lib == "torch" else _cupy().from_dlpack


_TORCH_WITHOUT_AMINMAX = ("u16", "u32", "u64")


def min_max(lib, a):
    """[min, max] of a torch or cupy array (not empty) as Python numbers, read back once. torch:
    torch.aminmax into one two-element array (one pass over the data). cupy, and torch's unsigned
    types wider than 8 bits (which aminmax lacks on CUDA in some versions): a C-contiguous array
    of the current device of a type tally reduces, by two launches of tally's reduction into one
    two-element array of its type (cupy's min, max and stack cost 3 launches from Python and two
    passes); else by torch, or by cupy."""
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

"""tally.RawKernel and tally.RawModule: CuPy's raw kernels. The user writes the whole CUDA C++
source (extern "C" __global__ kernels); NVRTC compiles it at the first launch for the device's
architecture, in the extension's cache of the generated kernels (once per source, options and
architecture in a process), and a call launches one kernel with the user's grid, block, dynamic
shared memory and arguments on the caller's current torch/cupy stream, or the stream given.

Everything about a call that can be checked without a device is checked first (the launch
shape, the stream, each argument's kind and device), so those errors are the same on every
machine."""

import re
import struct
import types

import numpy as np

from .. import _tally
from .._devices import _cupy, _torch, cuda_usable, device_of
from .parse import check_name

_GRID_MAX = (2**31 - 1, 65535, 65535)
_BLOCK_MAX = (1024, 1024, 64)
_THREADS_MAX = 1024
# Compiled with NVRTC's defaults and C++17 (unless the options name a standard): not the
# generated kernels' --fmad=false or --device-as-default-execution-space.
_STD = "--std=c++17"


def _options(options):
    """The user's NVRTC options as a tuple of str, checked; and the options compiled with."""
    if isinstance(options, str) or not isinstance(options, (tuple, list)):
        raise TypeError(f"tally: options must be a tuple of str, got {options!r}")
    options = tuple(options)
    for o in options:
        if not isinstance(o, str):
            raise TypeError(f"tally: options must be a tuple of str, got {o!r} in it")
        if o.startswith(("-arch", "--gpu-architecture")):
            raise ValueError(f"tally: the option {o!r} is tally's to give: it compiles for the launching device's "
                             "architecture")
    standard = any(o.startswith(("-std", "--std")) for o in options)
    return options, list(options) if standard else [*options, _STD]


def _dims(value, what, kernel, most):
    """A grid or block (an int or a tuple of 1 to 3 ints) as (x, y, z), each from 1 to most[d]."""
    dims = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if not 1 <= len(dims) <= 3 or any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) for d in dims):
        raise TypeError(f"tally: {kernel}: {what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    if any(not 1 <= d <= m for d, m in zip(dims, most)):
        raise ValueError(f"tally: {kernel}: {what} {value!r}: each dimension (x, y, z) must be from 1 to {most}")
    return dims


def _stream(stream, kernel):
    """(handle, (library, device index) or None) of stream=: None (no handle), an int handle
    (0: the legacy default stream), or a torch or cupy stream object (its device too)."""
    if stream is None:
        return None, None
    if isinstance(stream, (int, np.integer)) and not isinstance(stream, bool) and stream >= 0:
        return int(stream), None
    if hasattr(stream, "cuda_stream"):  # torch.cuda.Stream
        return int(stream.cuda_stream), ("torch", stream.device.index)
    if hasattr(stream, "ptr"):  # cupy.cuda.Stream, ExternalStream (device_id: cupy 12 and later)
        device = getattr(stream, "device_id", None)
        return int(stream.ptr), None if device is None else ("cupy", device)
    raise TypeError(f"tally: {kernel}: stream must be None, a torch or cupy stream, or a cudaStream_t handle (an "
                    f"int >= 0), got {stream!r}")


def _scalar_bytes(value, k, kernel):
    """The bytes of a scalar argument, as CuPy passes it: a numpy scalar as its own type, a
    Python bool as bool, int as long long (unsigned long long from 2^63 to 2^64), float as
    double, complex as complex<double>; None where `value` is not a scalar."""
    if isinstance(value, np.generic):
        if value.dtype.kind not in "biufc":
            raise TypeError(f"tally: {kernel}: argument {k} is a numpy {value.dtype} scalar; scalars are numbers")
        return value.tobytes()
    if isinstance(value, bool):
        return struct.pack("<?", value)
    if isinstance(value, int):
        if -2**63 <= value < 2**63:
            return struct.pack("<q", value)
        if 2**63 <= value < 2**64:
            return struct.pack("<Q", value)
        raise OverflowError(f"tally: {kernel}: argument {k}, {value}, fits neither long long nor unsigned long long")
    if isinstance(value, float):
        return struct.pack("<d", value)
    if isinstance(value, complex):
        return struct.pack("<dd", value.real, value.imag)
    return None


def _arguments(args, kernel):
    """Each argument's bytes, and the (library, device index) of the arrays'."""
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"tally: {kernel}: args must be a tuple of the kernel's arguments, got {type(args).__name__}")
    torch, cupy = _torch(), _cupy()
    packed, where = [], None
    for k, value in enumerate(args):
        if torch is not None and isinstance(value, torch.Tensor):
            if not value.is_cuda:
                raise TypeError(f"tally: {kernel}: argument {k} is a torch tensor on {value.device}; a kernel's arrays "
                                "must be in CUDA memory")
            at, lib, index = value.data_ptr(), "torch", value.get_device()
        elif cupy is not None and isinstance(value, cupy.ndarray):
            at, lib, index = value.data.ptr, "cupy", value.data.device_id
        elif isinstance(value, np.ndarray):
            raise TypeError(f"tally: {kernel}: argument {k} is a numpy array, in host memory; a kernel's arrays must "
                            "be torch or cupy arrays in CUDA memory")
        else:
            scalar = _scalar_bytes(value, k, kernel)
            if scalar is None:
                raise TypeError(f"tally: {kernel}: argument {k} is a {type(value).__name__}; a kernel takes torch or "
                                "cupy CUDA arrays (passed as pointers) and Python or numpy scalars")
            packed.append(scalar)
            continue
        if where is None:
            where = (lib, index)
        elif where != (lib, index):
            raise ValueError(f"tally: {kernel}: argument {k} is a {lib} array on cuda:{index}, the arrays before "
                             f"it {where[0]} arrays on cuda:{where[1]}; pass arrays of one library on one device")
        packed.append(struct.pack("<Q", at))
    return packed, where


class _Source:
    """CUDA source and its NVRTC options, compiled at run time (RawModule's and RawKernel's)."""

    def __init__(self, what, code, options, backend, unsupported):
        if backend != "nvrtc":
            raise ValueError(f"tally: {what}: backend must be 'nvrtc' (tally compiles with NVRTC), got {backend!r}")
        if unsupported:
            raise TypeError(f"tally: {what} does not support {sorted(unsupported)} (CuPy options outside tally's "
                            "subset; see docs/patterns.md)")
        if not isinstance(code, str):
            raise TypeError(f"tally: {what} takes the CUDA source as a str, got {type(code).__name__}")
        self.code = code
        self.options, self._compile_options = _options(options)

    def compile(self, arch=None):
        """Compiles the source now instead of at the first launch.

        Parameters
        ----------
        arch : int, optional
            A compute capability such as 90: compiled for it to PTX with no device, which checks
            that the source compiles (and for a RawKernel, that the kernel is one of its
            ``extern "C"`` functions). None (the default): compiled for the current device and
            loaded, as a launch would (needs a device).

        Returns
        -------
        None

        Examples
        --------
        >>> import tally
        >>> broken = tally.RawModule(code='extern "C" __global__ void k(int* x) { *x = y; }')
        >>> broken.compile(arch=90)
        Traceback (most recent call last):
            ...
        ValueError: tally: the kernel does not compile (NVRTC, compute_90):
        tally_user_kernel.cu(1): error: identifier "y" is undefined
        ...
        >>> misnamed = tally.RawKernel('extern "C" __global__ void k(int* x) { *x = 1; }', "j")
        >>> misnamed.compile(arch=90)
        Traceback (most recent call last):
            ...
        ValueError: tally: the source has no kernel named j (its kernels: k); a kernel is an
        extern "C" __global__ function: C++ names are mangled
        """
        if arch is None:
            _require_device("compiling a raw kernel for the device")
            self._load()
        else:
            self._check(self._ptx(arch))

    def _ptx(self, arch):
        """The source compiled for compute capability `arch` (no device needed)."""
        if isinstance(arch, bool) or not isinstance(arch, (int, np.integer)):
            raise TypeError(f"tally: arch must be an int such as 90, got {arch!r}")
        return _tally.runtime_compile(self.code, int(arch), self._compile_options)

    def _load(self):
        """Compiles and loads the source for the current device."""
        _tally.runtime_load(self.code, self._compile_options)

    def _check(self, ptx):
        """Checks the source's PTX, compiled by compile(arch=...): it compiled, which is all a
        module asks."""


def _require_device(what):
    if not cuda_usable():
        raise ValueError(f"tally: {what} needs tally's CUDA backend and a CUDA device, which this machine or build "
                         "lacks")


class RawModule(_Source):
    """CUDA C++ source of one or more kernels, compiled with NVRTC at run time (CuPy's RawModule).

    The source is compiled at the first launch of one of its kernels (or at ``get_function``
    where a device is present) for the current device's architecture, once per source, options
    and architecture in a process.

    Parameters
    ----------
    code : str
        Complete CUDA C++ source: its kernels are ``extern "C" __global__`` functions (a C++
        name is mangled and cannot be found by its name).
    options : tuple of str, optional
        NVRTC options, such as ``("-DN=256", "--use_fast_math")``. ``--std=c++17`` is added
        unless a standard is named; the architecture is the device's (an ``-arch`` option is an
        error). NVRTC's defaults hold otherwise (fused multiply-add on, unlike tally's own
        kernels: pass ``--fmad=false`` for results rounded as numpy's).
    backend : {'nvrtc'}, optional
        Only NVRTC (CuPy's other keywords, such as ``path`` or ``name_expressions``, are a
        TypeError).

    See Also
    --------
    RawKernel : One kernel of a source; ``get_function`` gives them.

    Examples
    --------
    >>> import tally
    >>> module = tally.RawModule(code=r'''
    ... extern "C" __global__ void scale(float* x, float a, int n) {
    ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
    ...     if (i < n) x[i] *= a;
    ... }
    ... extern "C" __global__ void shift(float* x, float b, int n) {
    ...     int i = blockIdx.x * blockDim.x + threadIdx.x;
    ...     if (i < n) x[i] += b;
    ... }''')
    >>> module.compile(arch=90)  # checks that it compiles, with no device (NVRTC's log if not)
    >>> module.get_function("scale")
    <tally.RawKernel scale>
    """

    def __init__(self, code=None, *, options=(), backend="nvrtc", **unsupported):
        super().__init__("RawModule", code, options, backend, unsupported)

    def __repr__(self):
        return f"<tally.RawModule of {len(self.code)} characters>"

    def get_function(self, name):
        """The kernel `name` of the source.

        Parameters
        ----------
        name : str
            The name of one of the source's ``extern "C" __global__`` functions. Where tally's
            CUDA backend finds a device, the source is compiled and loaded now and an unknown
            name is a ValueError; otherwise at the kernel's launch.

        Returns
        -------
        RawKernel
            The kernel, sharing this module's source and its compilation.

        Examples
        --------
        >>> import tally
        >>> module = tally.RawModule(code='extern "C" __global__ void k(int* x) { *x = 1; }')
        >>> module.get_function("k")
        <tally.RawKernel k>
        """
        kernel = RawKernel(self.code, name, self.options)
        if cuda_usable():
            kernel._kernel(_tally.runtime_device()[0])
        return kernel


class RawKernel(_Source):
    """A kernel of CUDA C++ source compiled with NVRTC at run time (CuPy's RawKernel).

    Compiled at the first launch for the launching device's architecture (once per source,
    options and architecture in a process) and launched by calling it:
    ``kernel(grid, block, args, shared_mem=0, stream=None)``.

    Parameters
    ----------
    code : str
        Complete CUDA C++ source, holding ``extern "C" __global__ void name(...)``.
    name : str
        The kernel's name.
    options : tuple of str, optional
        NVRTC options, as :class:`RawModule` takes them.
    backend : {'nvrtc'}, optional
        Only NVRTC.

    See Also
    --------
    RawModule : Several kernels of one source.
    ElementwiseKernel : One element's operation, broadcast, its outputs allocated.

    Notes
    -----
    A launch passes ``args`` as the kernel's parameters, in order, without checking them against
    its signature (as CuPy): torch and cupy CUDA arrays as their data pointers (of one library
    and one device, whose device runs the kernel); numpy scalars as their own type's bytes;
    Python scalars as CuPy passes them: bool as ``bool``, int as ``long long`` (``unsigned long
    long`` from 2**63 to 2**64), float as ``double``, complex as ``complex<double>`` (so a
    ``float`` or ``int`` parameter takes ``numpy.float32(x)`` or ``numpy.int32(n)``). numpy
    arrays (host memory) are a TypeError. ``grid`` and ``block`` are ints or tuples of up to
    three ints: at most (2**31 - 1, 65535, 65535) blocks of at most (1024, 1024, 64) and 1024
    threads (and what the kernel's registers allow). ``shared_mem`` bytes of dynamic shared
    memory are given each block; beyond 48 KiB (with the kernel's static shared memory) the
    kernel is allowed more for the device, up to what the device lets a block opt in to (227 KiB
    on an H100) less its static shared memory. The kernel runs on ``stream`` (a torch or cupy
    stream, or a ``cudaStream_t`` as an int) or by default on the arrays' library's current
    stream on their device, and the call returns without waiting for it.

    Examples
    --------
    >>> import numpy as np, tally
    >>> saxpy = tally.RawKernel(r'''
    ... extern "C" __global__ void saxpy(float a, const float* x, float* y, long long n) {
    ...     long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    ...     if (i < n) y[i] = a * x[i] + y[i];
    ... }''', "saxpy")
    >>> saxpy
    <tally.RawKernel saxpy>
    >>> x = np.ones(1000, np.float32)
    >>> saxpy((4,), (256,), (np.float32(2), x, x, 1000))
    Traceback (most recent call last):
        ...
    TypeError: tally: saxpy: argument 1 is a numpy array, in host memory; a kernel's arrays must be
    torch or cupy arrays in CUDA memory
    """

    def __init__(self, code, name, options=(), backend="nvrtc", **unsupported):
        super().__init__("RawKernel", code, options, backend, unsupported)
        self.name = check_name(name)
        self._handles = {}  # CUDA device ordinal -> the kernel's handle (a cudaKernel_t) for its architecture

    def __repr__(self):
        return f"<tally.RawKernel {self.name}>"

    def _load(self):
        self._kernel(_tally.runtime_device()[0])

    def _check(self, ptx):
        entries = re.findall(r"\.entry\s+([A-Za-z_$][\w$]*)", ptx)
        if self.name not in entries:
            raise ValueError(f"tally: the source has no kernel named {self.name} (its kernels: "
                             f"{', '.join(entries) or 'none'}); a kernel is an extern \"C\" __global__ function: C++ "
                             "names are mangled")

    def _kernel(self, device):
        """The kernel's handle, for the current device, whose ordinal is `device`."""
        kernel = self._handles.get(device)
        if kernel is None:
            kernel = self._handles[device] = _tally.runtime_kernel(self.code, self.name, self._compile_options)
        return kernel

    def __call__(self, grid, block, args, *, shared_mem=0, stream=None):
        """Launches the kernel (compiled for the device at its first launch there).

        Parameters
        ----------
        grid, block : int or tuple of int
            The blocks of the grid and the threads of a block, (x, y, z) with y and z 1 where
            left out (limits in the class's Notes).
        args : tuple
            The kernel's arguments: torch or cupy CUDA arrays (their pointers) and Python or
            numpy scalars (their bytes, as the class's Notes say).
        shared_mem : int, optional
            Bytes of dynamic shared memory a block (``extern __shared__``).
        stream : optional
            A torch or cupy stream or a ``cudaStream_t`` handle (an int); by default the arrays'
            library's current stream on their device.

        Returns
        -------
        None
            The call returns without waiting for the kernel.

        Examples
        --------
        >>> import numpy as np, tally
        >>> code = 'extern "C" __global__ void fill(float* x) { x[0] = 1; }'
        >>> fill = tally.RawKernel(code, "fill")
        >>> fill((1, 1), (32, 32, 2), (np.float32(1),), stream=0)
        Traceback (most recent call last):
            ...
        ValueError: tally: fill: block (32, 32, 2) has 2048 threads; a block has at most 1024
        """
        name = self.name
        grid = _dims(grid, "grid", name, _GRID_MAX)
        block = _dims(block, "block", name, _BLOCK_MAX)
        if block[0] * block[1] * block[2] > _THREADS_MAX:
            raise ValueError(f"tally: {name}: block {block} has {block[0] * block[1] * block[2]} threads; a block "
                             f"has at most {_THREADS_MAX}")
        if isinstance(shared_mem, bool) or not isinstance(shared_mem, (int, np.integer)) or shared_mem < 0:
            raise ValueError(f"tally: {name}: shared_mem must be an int >= 0 (bytes), got {shared_mem!r}")
        handle, stream_where = _stream(stream, name)
        packed, where = _arguments(args, name)
        if where is None and handle is None:
            raise TypeError(f"tally: {name}: no array among the arguments to take the device and stream from; pass "
                            "stream=")
        if where is not None and stream_where is not None and stream_where[1] != where[1]:
            raise ValueError(f"tally: {name}: the stream is of cuda:{stream_where[1]}, the arrays on cuda:{where[1]}")
        _require_device(f"{name}: launching a raw kernel")
        where = where or stream_where
        if where is None:  # a stream handle and no arrays: the current device
            _tally.runtime_launch_raw(self._kernel(_tally.runtime_device()[0]), grid, block, int(shared_mem), packed,
                                      handle)
            return
        # The device of the arrays (or of the stream) made current; by default its current stream.
        with device_of(types.SimpleNamespace(on_cuda=True, lib=where[0], index=where[1]), wait=False) as current:
            _tally.runtime_launch_raw(self._kernel(where[1]), grid, block, int(shared_mem), packed,
                                      current if handle is None else handle)

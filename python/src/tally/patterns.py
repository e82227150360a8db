"""tally.patterns: the parallel patterns with numpy's semantics: activations, broadcasting
arithmetic, reductions and matmul over numpy arrays (CPU) and torch/cupy arrays (CUDA on the
caller's current stream), and user-defined kernels (ElementwiseKernel, ReductionKernel,
RawKernel, RawModule: CuPy's API, compiled at run time). Outputs are allocated here, in the
input's library on its device, and written by the extension. The package's top level exports
the same functions."""

import numpy as np

from . import _devices, _tally
from ._arrays import Source, same_device
from ._devices import _cupy, _torch, device_of, empty, require_cuda
from ._types import EXTREME_TYPES, NUMPY_NAMES, type_of_dtype
from ._user_kernels import ElementwiseKernel, RawKernel, RawModule, ReductionKernel

__all__ = ["ElementwiseKernel", "RawKernel", "RawModule", "ReductionKernel", "add", "div", "gelu", "matmul", "max",
           "mean", "min", "mul", "relu", "sigmoid", "silu", "sub", "sum", "tanh"]

_TYPES = ("f16", "bf16", "f32")
# The C++ planner's strategy names (automatic first): the activations' map strategies
# (tally::map_strategy) and matmul's kernels (tally::matmul_strategy).
UNARY_STRATEGIES = tuple(_tally.unary_strategies())
MATMUL_STRATEGIES = tuple(_tally.matmul_strategies())


def _strategy(what, strategy, valid):
    """Checks `strategy` against the planner's names `valid`."""
    if not isinstance(strategy, str):
        raise TypeError(f"tally: {what}: strategy must be a str, got {type(strategy).__name__}")
    if strategy not in valid:
        raise ValueError(f"tally: {what}: unknown strategy {strategy!r}; expected one of "
                         + ", ".join(repr(v) for v in valid))


def _operand(x, what="x", types=_TYPES):
    src = Source(x, what)
    if src.type not in types:
        expected = "float16, bfloat16, float32 or an integer type" if types is EXTREME_TYPES else \
            "float16, bfloat16 or float32"
        raise TypeError(f"tally: {what} has dtype {src.dtype_name}; expected {expected}")
    if src.lib == "other":
        raise TypeError(f"tally: {what} must be a numpy, torch or cupy array, got {type(x).__name__}")
    return src


def _cast(lib, obj, type_name):
    """obj (an array of `lib`) converted to tally type `type_name`."""
    if lib == "torch":
        return obj.to(getattr(_torch(), NUMPY_NAMES[type_name]))
    return obj.astype(NUMPY_NAMES[type_name])


def _run(src, call):
    """call(stream) with src's CUDA device current; stream is the caller's current stream (0 for
    host memory)."""
    require_cuda(src)
    with device_of(src, wait=False) as stream:
        return call(stream)


def _unary(op, x, out, strategy, what=None):
    if strategy != "automatic":
        _strategy(what or op, strategy, UNARY_STRATEGIES)
    y = _unary_by_address(op, x, out, strategy)
    if y is not None:
        return y
    src = _operand(x).contiguous()
    if out is not None:
        o = Source(out, "out")
        same_device(src, o, "out")
        if o.type != src.type:
            raise TypeError(f"tally: out has dtype {o.dtype_name}, expected {src.dtype_name}")
        if o.shape != src.shape:
            raise ValueError(f"tally: out has shape {o.shape}, expected {src.shape}")

    def call(stream):
        y = empty(src, src.shape, src.type) if out is None else out
        if _devices.tensor_key(src.obj) and _devices.tensor_key(y):  # contiguous CUDA arrays: by address
            _tally.unary_address(op, src.type, _devices.address(src.lib, src.obj), _devices.address(src.lib, y),
                                 src.size, stream, strategy)
        else:
            _tally.unary(op, src.obj, y, stream, strategy)
        return y
    return _run(src, call)


def _by_address(x, types=_TYPES):
    """(key, type name, stream) of a C-contiguous torch/cupy CUDA array of a pattern's type on the
    current device (the usual case), which the patterns hand to the extension by address with no
    Source and no device switch (key: _devices.tensor_key's); None otherwise: the full path then
    takes the call (and its errors)."""
    key = _devices.tensor_key(x)
    if key is None:
        return None
    type_name = type_of_dtype(key[1])
    if type_name not in types:
        return None
    stream = _devices.current_stream(key[0], key[2])
    if stream is None or not _devices.cuda_usable():
        return None
    return key, type_name, stream


def _unary_by_address(op, x, out, strategy):
    """The activation of x by address (_by_address): into a new C-contiguous array, or into `out`
    where it is alike x (the same library, dtype, device and shape, C-contiguous); else None."""
    found = _by_address(x)
    if found is None:
        return None
    key, type_name, stream = found
    if out is not None and (_devices.tensor_key(out) != key or out.shape != x.shape):
        return None
    lib = key[0]
    y = _devices.new_like(lib, x) if out is None else out
    _tally.unary_address(op, type_name, _devices.address(lib, x), _devices.address(lib, y), _devices.size(lib, x),
                         stream, strategy)
    return y


_ACTIVATION_PARAMETERS = """
    Parameters
    ----------
    x : array_like
        A numpy array (the CPU backend) or a torch or cupy CUDA array (the CUDA backend, on the
        caller's current stream), of float16, bfloat16 or float32.
    out : array, optional
        Where to write the result: an array of x's library, device, dtype and shape (x itself
        computes in place). By default a new C-contiguous array.
    strategy : str, optional
        How the CUDA backend maps the elements, one of ``tally.patterns.UNARY_STRATEGIES``:
        'automatic' (the default: 'packed128'), 'scalar', 'x2', 'x4', 'x8', 'packed128',
        'packed128_resident'. Every strategy gives the same bits; they differ in speed only. The
        CPU backend takes 'automatic' only (another name is a ValueError there).

    Returns
    -------
    array
        The activation of each element, of x's dtype and shape, in x's library on its device
        (`out` where given). Computed in float32 and rounded once.
"""


def _activation(summary, result):
    """Gives an activation its numpydoc docstring: `summary`, the parameters every activation
    shares, and a doctest of x = [-2, 0, 3] in float32 showing `result`."""
    def document(function):
        function.__doc__ = (f"{summary}\n{_ACTIVATION_PARAMETERS}\n    Examples\n    --------\n"
                            f"    >>> import numpy as np, tally\n"
                            f"    >>> tally.{function.__name__}(np.array([-2.0, 0.0, 3.0], np.float32))\n"
                            f"    {result}\n")
        return function
    return document


@_activation("1 / (1 + exp(-x)), elementwise.", "array([0.11920292, 0.5       , 0.95257413], dtype=float32)")
def sigmoid(x, out=None, strategy="automatic"):
    return _unary("sigmoid", x, out, strategy)


@_activation("max(x, 0), elementwise.", "array([0., 0., 3.], dtype=float32)")
def relu(x, out=None, strategy="automatic"):
    return _unary("relu", x, out, strategy)


@_activation("x * sigmoid(x), elementwise.", "array([-0.23840584,  0.        ,  2.8577223 ], dtype=float32)")
def silu(x, out=None, strategy="automatic"):
    return _unary("silu", x, out, strategy)


@_activation("The hyperbolic tangent, elementwise.", "array([-0.9640276,  0.       ,  0.9950548], dtype=float32)")
def tanh(x, out=None, strategy="automatic"):
    return _unary("tanh", x, out, strategy)


def gelu(x, approximate="none", out=None, strategy="automatic"):
    """torch.nn.functional.gelu: x * Phi(x), or its tanh approximation.

    Parameters
    ----------
    x : array_like
        A numpy array (the CPU backend) or a torch or cupy CUDA array (the CUDA backend, on the
        caller's current stream), of float16, bfloat16 or float32.
    approximate : {'none', 'tanh'}, optional
        'none' (the default): x * Phi(x) by erfc; 'tanh': torch's tanh approximation.
    out : array, optional
        Where to write the result, as in :func:`sigmoid`.
    strategy : str, optional
        How the CUDA backend maps the elements, as in :func:`sigmoid`.

    Returns
    -------
    array
        The activation of each element, of x's dtype and shape, in x's library on its device.

    Examples
    --------
    >>> import numpy as np, tally
    >>> tally.gelu(np.array([-2.0, 0.0, 3.0], np.float32))
    array([-0.04550027,  0.        ,  2.9959502 ], dtype=float32)
    """
    if approximate not in ("none", "tanh"):
        raise ValueError(f"tally: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _unary("gelu_erf" if approximate == "none" else "gelu_tanh", x, out, strategy, "gelu")


def _is_python_scalar(v):
    """A Python bool, int or float (numpy's float64 scalars are floats too, but not Python's)."""
    return isinstance(v, (bool, int, float)) and not isinstance(v, np.generic)


def _scalar_array(ref, value, type_name):
    """A 0-d array of tally type `type_name` holding `value` (converted as numpy converts it to
    that type), in the Source `ref`'s library on its device, as a Source."""
    if type_name == "bf16":  # numpy has no bfloat16: float32 first, then torch rounds (as torch.full does)
        value = float(np.float32(value))
    else:
        value = np.array(value, NUMPY_NAMES[type_name])
        if ref.lib == "numpy":
            return Source(value)
        value = value.item()
    if ref.lib == "torch":
        torch = _torch()
        return Source(torch.full((), value, dtype=getattr(torch, NUMPY_NAMES[type_name]), device=ref.obj.device))
    if ref.lib == "cupy":
        cupy = _cupy()
        with cupy.cuda.Device(ref.index):
            return Source(cupy.full((), value, NUMPY_NAMES[type_name]))
    raise TypeError(f"tally: a scalar beside a {type(ref.obj).__name__} array; pass numpy, torch or cupy arrays")


def _binary_operands(op, a, b):
    """The Sources of a binary operation's operands. A Python scalar takes the other operand's
    type (numpy 2's weak scalars); a host 0-d array or numpy scalar beside a CUDA array keeps
    its own type and is copied to that array's device."""
    weak_a, weak_b = _is_python_scalar(a), _is_python_scalar(b)
    if weak_a and weak_b:
        raise TypeError(f"tally: {op} takes at least one array, got the Python scalars {a!r} and {b!r}")
    sa = None if weak_a else _operand(a, "a")
    sb = None if weak_b else _operand(b, "b")
    if weak_a:
        return _scalar_array(sb, a, sb.type), sb
    if weak_b:
        return sa, _scalar_array(sa, b, sa.type)
    if sb.on_cuda and not sa.on_cuda and sa.ndim == 0:
        sa = _scalar_array(sb, sa.obj.item(), sa.type)
    elif sa.on_cuda and not sb.on_cuda and sb.ndim == 0:
        sb = _scalar_array(sa, sb.obj.item(), sb.type)
    return sa, sb


def _binary(op, a, b):
    sa, sb = _binary_operands(op, a, b)
    same_device(sa, sb, "b")
    shape = np.broadcast_shapes(sa.shape, sb.shape)
    type_name = sa.type if sa.type == sb.type else "f32"

    def call(stream):
        out = empty(sa, shape, type_name)
        _tally.binary(op, sa.obj, sb.obj, out, stream)
        return out
    return _run(sa, call)


_BINARY_PARAMETERS = """
    Parameters
    ----------
    a, b : array_like or scalar
        numpy arrays (the CPU backend) or torch or cupy CUDA arrays of one device (the CUDA
        backend, on the caller's current stream), of float16, bfloat16 or float32, which
        broadcast together as numpy's do. One of them may be a scalar:

        - a Python bool, int or float takes the array's dtype (numpy 2's rule for Python
          scalars: float32 and 2.0 give float32);
        - a numpy scalar or a 0-d array keeps its own dtype (numpy's rule: float16 and
          numpy.float32(2) give float32; a float64 one is refused, as a float64 array is) and
          is copied to the other operand's device where that one is a CUDA array.

    Returns
    -------
    array
        The result, correctly rounded, of numpy's result type (the common dtype, float32 for a
        mix), in the arrays' library on their device.

    Examples
    --------
    >>> import numpy as np, tally
    >>> x = np.array([1.0, 2.0, 4.0], np.float32)
"""


def _binary_function(summary, example):
    """Gives a binary function its numpydoc docstring: `summary`, the parameters and result they
    share, and the doctest `example` (after x = [1, 2, 4] in float32)."""
    def document(function):
        function.__doc__ = f"{summary}\n{_BINARY_PARAMETERS}    >>> {example}\n"
        return function
    return document


@_binary_function("a + b, elementwise, with numpy's broadcasting and type promotion.",
                  "tally.add(x, np.ones((2, 1), np.float32))\n"
                  "    array([[2., 3., 5.],\n           [2., 3., 5.]], dtype=float32)")
def add(a, b):
    return _binary("add", a, b)


@_binary_function("a - b, elementwise, as add.", "tally.sub(x, 1)\n    array([0., 1., 3.], dtype=float32)")
def sub(a, b):
    return _binary("sub", a, b)


@_binary_function("a * b, elementwise, as add.", "tally.mul(2, x)\n    array([2., 4., 8.], dtype=float32)")
def mul(a, b):
    return _binary("mul", a, b)


@_binary_function("a / b, elementwise, as add.", "tally.div(x, tally.add(x, 1e-3))\n"
                  "    array([0.99900097, 0.9995003 , 0.9997501 ], dtype=float32)")
def div(a, b):
    return _binary("div", a, b)


def _reduce(op, a, axis):
    # min and max take integers too (numpy's: the result in the input's type).
    types = EXTREME_TYPES if op in ("min", "max") else _TYPES
    result = _reduce_by_address(op, a, axis, types)
    if result is not None:
        return result
    src = _operand(a, "a", types).contiguous()
    if axis is None:
        shape = ()
    elif src.ndim > 0 and axis in (-1, src.ndim - 1) and not isinstance(axis, bool):
        shape = src.shape[:-1]
    else:
        raise ValueError(f"tally: {op}: axis must be None or the last axis, got {axis!r} for {src.ndim} "
                         "dimensions")
    # sum and mean accumulate in float32 and answer in the input's type, as numpy.
    result_type = "f32" if op in ("sum", "mean") else src.type

    def call(stream):
        out = empty(src, shape, result_type)
        _tally.reduce(op, src.obj, axis is not None, out, stream)
        return out if result_type == src.type else _cast(src.lib, out, src.type)
    result = _run(src, call)
    return result[()] if src.lib == "numpy" and shape == () else result


def _reduce_by_address(op, a, axis, types):
    """_reduce of `a` (of one of `types`) by address (_by_address); None where that does not hold
    or the axis is not None or the last one as a plain int (the full path takes the call and its
    errors)."""
    found = _by_address(a, types)
    if found is None:
        return None
    (lib, _, index, ndim), type_name, stream = found
    if axis is None:
        shape = ()
    elif type(axis) is int and ndim > 0 and axis in (-1, ndim - 1):
        shape = tuple(a.shape[:-1])
    else:
        return None
    result_type = "f32" if op in ("sum", "mean") else type_name
    out = _devices.new_array(lib, index, shape, NUMPY_NAMES[result_type])
    cols = _devices.size(lib, a) if axis is None else a.shape[-1]
    _tally.reduce_address(op, type_name, _devices.address(lib, a), _devices.size(lib, out), cols, axis is not None,
                          result_type, _devices.address(lib, out), stream)
    return out if result_type == type_name else _cast(lib, out, type_name)


def sum(a, axis=None):
    """numpy.sum over the whole array (axis=None) or along the last axis; accumulated in float32
    in a fixed order (the same bits on every run)."""
    return _reduce("sum", a, axis)


def min(a, axis=None):
    """numpy.min of float16, bfloat16, float32 or integer arrays (NaN if any element is NaN; an
    empty reduction is a ValueError)."""
    return _reduce("min", a, axis)


def max(a, axis=None):
    """numpy.max, as min."""
    return _reduce("max", a, axis)


def mean(a, axis=None):
    """numpy.mean (NaN for an empty array), accumulated in float32."""
    return _reduce("mean", a, axis)


def matmul(a, b, strategy="automatic"):
    """a @ b for 2-D float32 matrices, accumulated in float32.

    Parameters
    ----------
    a, b : array_like
        (m, k) and (k, n) float32 matrices: numpy arrays (the CPU backend) or torch or cupy CUDA
        arrays of one device (the CUDA backend, on the caller's current stream).
    strategy : str, optional
        The CUDA kernel, one of ``tally.patterns.MATMUL_STRATEGIES``: 'automatic' (the default:
        'warptiled' with its default tiling, 'blocked128' where its blocks would not fill the
        device), 'tiled16' (the textbook shared-memory kernel),
        'blocked128' (register-blocked, double-buffered), 'warptiled' (warp tiles, a cp.async
        pipeline). Each sums every output's k products in order with fused multiply-adds, so all
        give the same bits. The CPU backend takes 'automatic' only.

    Returns
    -------
    array
        The (m, n) float32 product, in the inputs' library on their device.

    Examples
    --------
    >>> import numpy as np, tally
    >>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> tally.matmul(a, a.T)
    array([[ 5., 14.],
           [14., 50.]], dtype=float32)
    """
    _strategy("matmul", strategy, MATMUL_STRATEGIES)
    sa, sb = _operand(a, "a"), _operand(b, "b")
    same_device(sa, sb, "b")
    if sa.type != "f32" or sb.type != "f32":
        raise TypeError(f"tally: matmul takes float32 matrices, got {sa.dtype_name} and {sb.dtype_name}")
    if sa.ndim != 2 or sb.ndim != 2 or sa.shape[1] != sb.shape[0]:
        raise ValueError(f"tally: matmul: shapes {sa.shape} and {sb.shape} are not (m, k) and (k, n)")
    sa, sb = sa.contiguous(), sb.contiguous()

    def call(stream):
        out = empty(sa, (sa.shape[0], sb.shape[1]), "f32")
        _tally.matmul(sa.obj, sb.obj, out, stream, strategy)
        return out
    return _run(sa, call)

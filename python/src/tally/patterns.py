"""tally.patterns: the parallel patterns with numpy's semantics: activations, broadcasting
arithmetic, reductions and matmul over numpy arrays (CPU) and torch/cupy arrays (CUDA on the
caller's current stream), and user-defined kernels (ElementwiseKernel, ReductionKernel, CuPy's
API, compiled at run time). Outputs are allocated here, in the input's library on its device, and
written by the extension. The package's top level exports the same functions."""

import numpy as np

from . import _devices, _tally
from ._arrays import Source, same_device
from ._devices import _torch, device_of, empty, require_cuda
from ._types import EXTREME_TYPES, NUMPY_NAMES, type_of_dtype
from ._user_kernels import ElementwiseKernel, ReductionKernel

__all__ = ["ElementwiseKernel", "ReductionKernel", "add", "div", "gelu", "matmul", "max", "mean", "min", "mul",
           "relu", "sigmoid", "silu", "sub", "sum", "tanh"]

_TYPES = ("f16", "bf16", "f32")


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


def _unary(op, x, out):
    y = _unary_by_address(op, x, out)
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
                                 src.size, stream)
        else:
            _tally.unary(op, src.obj, y, stream)
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


def _unary_by_address(op, x, out):
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
                         stream)
    return y


def sigmoid(x, out=None):
    """1 / (1 + exp(-x)), computed in float32 and rounded once (float16, bfloat16, float32)."""
    return _unary("sigmoid", x, out)


def relu(x, out=None):
    """max(x, 0)."""
    return _unary("relu", x, out)


def silu(x, out=None):
    """x * sigmoid(x)."""
    return _unary("silu", x, out)


def gelu(x, approximate="none", out=None):
    """torch.nn.functional.gelu: x * Phi(x) ('none') or its tanh approximation ('tanh')."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"tally: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _unary("gelu_erf" if approximate == "none" else "gelu_tanh", x, out)


def tanh(x, out=None):
    """The hyperbolic tangent."""
    return _unary("tanh", x, out)


def _binary(op, a, b):
    sa, sb = _operand(a, "a"), _operand(b, "b")
    same_device(sa, sb, "b")
    shape = np.broadcast_shapes(sa.shape, sb.shape)
    type_name = sa.type if sa.type == sb.type else "f32"

    def call(stream):
        out = empty(sa, shape, type_name)
        _tally.binary(op, sa.obj, sb.obj, out, stream)
        return out
    return _run(sa, call)


def add(a, b):
    """a + b with numpy's broadcasting and type promotion (float16, bfloat16, float32; a mix
    gives float32), correctly rounded."""
    return _binary("add", a, b)


def sub(a, b):
    """a - b, as add."""
    return _binary("sub", a, b)


def mul(a, b):
    """a * b, as add."""
    return _binary("mul", a, b)


def div(a, b):
    """a / b, as add."""
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


def matmul(a, b):
    """a @ b for 2-D float32 matrices, accumulated in float32."""
    sa, sb = _operand(a, "a"), _operand(b, "b")
    same_device(sa, sb, "b")
    if sa.type != "f32" or sb.type != "f32":
        raise TypeError(f"tally: matmul takes float32 matrices, got {sa.dtype_name} and {sb.dtype_name}")
    if sa.ndim != 2 or sb.ndim != 2 or sa.shape[1] != sb.shape[0]:
        raise ValueError(f"tally: matmul: shapes {sa.shape} and {sb.shape} are not (m, k) and (k, n)")
    sa, sb = sa.contiguous(), sb.contiguous()

    def call(stream):
        out = empty(sa, (sa.shape[0], sb.shape[1]), "f32")
        _tally.matmul(sa.obj, sb.obj, out, stream)
        return out
    return _run(sa, call)

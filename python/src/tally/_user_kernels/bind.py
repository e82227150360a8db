"""A call's arguments bound to a kernel's parameters: the placeholders' types (from the arrays,
then from Python scalars), the arrays' broadcasting and the dimensions every array walks alike
(merged), a reduction's axes, and the outputs (given, allocated, or a host callable's result)."""

import numpy as np

from .._arrays import Source
from .._devices import cuda_usable, empty
from .._types import NUMPY_NAMES, SIZES
from .parse import TYPE_NAMES

# Bytes of an element of each type (tally's type names): the core's table.
ITEMSIZE = SIZES


def is_scalar(value):
    return isinstance(value, (bool, int, float, np.generic))


def _scalar_type(values):
    """The tally type numpy gives these Python or numpy scalars together (int -> int64, float ->
    float64)."""
    dtype = np.result_type(*[np.asarray(v) for v in values])
    t = TYPE_NAMES.get(dtype.name)
    if t is None:
        raise TypeError(f"tally: unsupported scalar type {dtype}")
    return t


def np_dtype(t):
    """numpy's dtype for a tally type (float32 stands in for bfloat16 where numpy decides casts)."""
    return np.dtype("float32" if t == "bf16" else NUMPY_NAMES[t])


class Bound:
    """One call's arguments bound to a kernel's parameters: types, arrays and scalars."""

    def __init__(self, kernel, args, allow_raw):
        self.kernel = kernel
        n_in, n_out = len(kernel.in_params), len(kernel.out_params)
        if len(args) not in (n_in, n_in + n_out):
            raise TypeError(f"tally: {kernel.name}: takes {n_in} inputs, or {n_in} inputs and {n_out} outputs; "
                            f"got {len(args)} arguments")
        params = kernel.in_params + kernel.out_params
        self.params = params
        self.values = list(args) + [None] * (n_in + n_out - len(args))
        self.sources = [None] * len(params)  # Source of each array argument
        for k, (p, v) in enumerate(zip(params, self.values)):
            if p.raw and not allow_raw:
                raise TypeError(f"tally: {kernel.name}: raw parameters are supported by ElementwiseKernel only")
            if v is None:
                continue
            if is_scalar(v):
                if p.output or p.raw:
                    raise TypeError(f"tally: {kernel.name}: {p.name} takes an array, got the scalar {v!r}")
                continue
            self.sources[k] = Source(v, p.name)
        self._bind_types()

    def _bind_types(self):
        name = self.kernel.name
        bound, origin = {}, {}
        for p, src in zip(self.params, self.sources):
            if src is None:
                continue
            if p.placeholder:
                if bound.setdefault(p.placeholder, src.type) != src.type:
                    raise TypeError(f"tally: {name}: the placeholder {p.placeholder} is {NUMPY_NAMES[bound[p.placeholder]]} "
                                    f"from {origin[p.placeholder]} but {p.name} is {NUMPY_NAMES[src.type]}")
                origin.setdefault(p.placeholder, p.name)
            elif p.output and src.type != p.type:
                raise TypeError(f"tally: {name}: the output {p.name} is {NUMPY_NAMES[p.type]} but the array given "
                                f"is {NUMPY_NAMES[src.type]}")
            elif not p.output and src.type != p.type and not np.can_cast(np_dtype(src.type), np_dtype(p.type),
                                                                         "same_kind"):
                raise TypeError(f"tally: {name}: {p.name} is {NUMPY_NAMES[p.type]}; an array of "
                                f"{NUMPY_NAMES[src.type]} does not convert to it (numpy's same_kind rule)")
        scalars = {}
        for p, v, src in zip(self.params, self.values, self.sources):
            if v is not None and src is None and p.placeholder and p.placeholder not in bound:
                scalars.setdefault(p.placeholder, []).append(v)
        for placeholder, values in scalars.items():
            bound[placeholder] = _scalar_type(values)
        self.placeholders = bound
        self.types = []
        for p in self.params:
            t = p.type or bound.get(p.placeholder)
            if t is None:
                raise TypeError(f"tally: {name}: cannot tell the type {p.placeholder} of the output {p.name} from "
                                "the inputs; pass the output array")
            self.types.append(t)

    # ---- the arrays ----
    def arrays(self):
        return [(k, s) for k, s in enumerate(self.sources) if s is not None]

    def reference(self):
        """The first array argument: its library and device take the call."""
        for _, s in self.arrays():
            return s
        raise TypeError(f"tally: {self.kernel.name}: needs at least one array argument")

    def check_cuda(self):
        """C source runs on CUDA arrays of one library, on one device."""
        ref = self.reference()
        for k, s in self.arrays():
            if s.lib == "numpy" or not s.on_cuda:
                raise TypeError(f"tally: {self.kernel.name}: a kernel of C source runs on CUDA arrays (torch or "
                                f"cupy); {self.params[k].name} is on the host. Pass CUDA arrays, or give the "
                                "operation as a Python callable to evaluate it with numpy")
            if s.lib not in ("torch", "cupy"):
                raise TypeError(f"tally: {self.kernel.name}: {self.params[k].name} must be a torch or cupy array")
            if (s.lib, s.index) != (ref.lib, ref.index):
                raise ValueError(f"tally: {self.kernel.name}: the arrays are on {ref.lib} {ref.where()} and "
                                 f"{s.lib} {s.where()}; pass arrays of one library on one device")
        if not cuda_usable():
            raise ValueError("tally: this build of tally has no usable CUDA backend for run-time kernels")
        return ref


def broadcast_strides(shape, strides, target):
    """strides of an array of `shape` read as `target` (numpy broadcasting): 0 where stretched."""
    pad = len(target) - len(shape)
    return [0] * pad + [0 if size == 1 else stride for size, stride in zip(shape, strides)]


def merge_dims(shape, stride_lists):
    """Drops dimensions of length 1 and merges neighbours that every array walks as one (the outer
    stride is the inner stride times the inner length). Returns (shape, stride lists), rank >= 1."""
    merged, out = [], [[] for _ in stride_lists]
    for d, size in enumerate(shape):
        if size == 1:
            continue
        if merged and all(o[-1] == s[d] * size for o, s in zip(out, stride_lists)):
            merged[-1] *= size
            for o, s in zip(out, stride_lists):
                o[-1] = s[d]
        else:
            merged.append(size)
            for o, s in zip(out, stride_lists):
                o.append(s[d])
    if not merged:
        return [1], [[0] for _ in stride_lists]
    return merged, out


def reduction_axes(name, axis, ndim):
    """axis (None, an int or a tuple of ints; negative counts from the end) as a set."""
    if axis is None:
        return set(range(ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    axes = set()
    for a in items:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"tally: {name}: axis must be None, an int or a tuple of ints, got {axis!r}")
        if not -ndim <= a < ndim:
            raise ValueError(f"tally: {name}: axis {a} is out of bounds for {ndim} dimensions")
        d = int(a) % ndim
        if d in axes:
            raise ValueError(f"tally: {name}: axis {a} repeats")
        axes.add(d)
    return axes


def allocate_outputs(bound, ref, n_in, shape):
    """Allocates the outputs not given, in ref's library as `shape` (their Sources into bound),
    and returns per output what a Plan allocates: None where given, else (shape, numpy dtype
    name)."""
    allocate = []
    for k in range(n_in, len(bound.params)):
        if bound.sources[k] is not None:
            allocate.append(None)
            continue
        allocate.append((shape, NUMPY_NAMES[bound.types[k]]))
        bound.sources[k] = Source(empty(ref, shape, bound.types[k]), bound.params[k].name)
    return allocate


def output_arrays(bound, n_in):
    """The call's outputs: each given one as the caller's own object (not the detached view a
    Source reads of a tensor that requires grad), each new one as allocated."""
    return [bound.values[k] if bound.values[k] is not None else bound.sources[k].obj
            for k in range(n_in, len(bound.params))]


def host_outputs(bound, result, shape, what):
    """A callable's result (one value, or a tuple of one per output) written into the given
    outputs, or new numpy arrays of `shape`, converted to the outputs' types as C would."""
    kernel = bound.kernel
    n_in, n_out = len(kernel.in_params), len(kernel.out_params)
    results = tuple(result) if n_out > 1 else (result,)
    if len(results) != n_out:
        raise ValueError(f"tally: {kernel.name}: {what} returned {len(results)} values for {n_out} outputs")
    outs = []
    for k, value in enumerate(results, n_in):
        out = bound.sources[k].obj if bound.sources[k] is not None else np.empty(shape, NUMPY_NAMES[bound.types[k]])
        out[...] = np.asarray(value).astype(out.dtype, copy=False)
        outs.append(out)
    return outs

"""tally.ElementwiseKernel and tally.ReductionKernel: kernels written by the user as CuPy's are,
compiled at run time with NVRTC for the input's device and launched on the caller's current
torch/cupy stream. A Python callable in place of the C source is evaluated with numpy instead
(the host fallback). The supported subset of CuPy's API is in the README ("User-defined
kernels"); everything else raises a clear error.

How a call runs: the parameters were parsed when the kernel was made; the call binds the
arguments to them (type placeholders such as T from the arrays, then from Python scalars),
broadcasts the non-raw arrays, allocates the missing outputs in the inputs' library, merges the
dimensions that every array walks the same way, generates the CUDA source for the bound types
(_user_kernels.cuh in front), and launches it. Sources are kept per bound signature here and
compiled once per architecture by the extension. What a call launches, as far as its arguments'
types, shapes and strides decide it, is kept too (_Plan, by _layout_key): a later call with
arguments alike binds nothing and only reads its arrays' addresses.
"""

import math
import re
import struct
from pathlib import Path

import numpy as np

from . import _kept, _tally
from ._arrays import Source, _cupy, _torch
from ._types import NUMPY_NAMES
from ._functions import _device_of
from ._kept import cuda_usable as _cuda_usable  # a name of this module: tests stand in for it

__all__ = ["ElementwiseKernel", "ReductionKernel"]

# C types of the element types (tally's type names); the 16-bit floats are _user_kernels.cuh's.
_CTYPES = {"bool": "bool", "i8": "signed char", "u8": "unsigned char", "i16": "short", "u16": "unsigned short",
           "i32": "int", "u32": "unsigned int", "i64": "long long", "u64": "unsigned long long",
           "f16": "tally_float16", "bf16": "tally_bfloat16", "f32": "float", "f64": "double"}
_ITEMSIZE = {"bool": 1, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8,
             "f16": 2, "bf16": 2, "f32": 4, "f64": 8}
# Type names a parameter may give (numpy's, plus bfloat16), as tally type names.
_TYPE_NAMES = {name: t for t, name in NUMPY_NAMES.items()}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# C++ words that cannot name a parameter or a placeholder ('float', 'int', ...: use numpy's names).
_CXX_WORDS = frozenset(
    "auto bool break case char class const continue default delete do double else enum extern false float for "
    "goto if inline int long namespace new operator private protected public register return short signed sizeof "
    "static struct switch template this true typedef typename union unsigned using virtual void volatile while "
    "half".split())
_THREADS = 256
_MAX_DIMS = 8
_PRELUDE_PATH = Path(__file__).with_name("_user_kernels.cuh")


def _prelude():
    return _PRELUDE_PATH.read_text()


class _Param:
    """One parameter: `[raw] TYPE NAME`. type is a tally type name, or None for a placeholder."""

    __slots__ = ("name", "type", "placeholder", "raw", "output")

    def __init__(self, text, output, kernel):
        words = text.split()
        raw = len(words) == 3 and words[0] == "raw"
        if len(words) != 2 + raw:
            raise ValueError(f"tally: {kernel}: cannot parse the parameter {text!r}; expected '[raw] TYPE NAME'")
        type_word, name = words[raw:]
        if not _IDENTIFIER.match(name) or name in _CXX_WORDS:
            raise ValueError(f"tally: {kernel}: {name!r} is not a parameter name")
        if name in ("i", "n") or name.startswith("_"):
            raise ValueError(f"tally: {kernel}: the parameter name {name!r} is reserved (i, n and names "
                             "starting with _ are the kernel's own)")
        self.name, self.raw, self.output = name, raw, output
        self.type = _TYPE_NAMES.get(type_word)
        self.placeholder = None
        if self.type is None:
            if type_word.startswith("complex"):
                raise TypeError(f"tally: {kernel}: complex types are not supported ({text!r})")
            if not _IDENTIFIER.match(type_word) or type_word in _CXX_WORDS or type_word.startswith("_"):
                raise ValueError(f"tally: {kernel}: {type_word!r} in {text!r} is neither a type name "
                                 "(bool, int8 ... uint64, float16, bfloat16, float32, float64) nor a "
                                 "placeholder name such as T")
            self.placeholder = type_word


def _parse_params(text, output, kernel):
    if not isinstance(text, str):
        raise TypeError(f"tally: {kernel}: parameters must be a str such as 'T x, T y', got {text!r}")
    return [_Param(p.strip(), output, kernel) for p in text.split(",")] if text.strip() else []


def _check_names(kernel, params):
    names = [p.name for p in params]
    placeholders = {p.placeholder for p in params if p.placeholder}
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"tally: {kernel}: the parameter name {name!r} appears twice")
        if name in placeholders:
            raise ValueError(f"tally: {kernel}: {name!r} names both a parameter and a type placeholder")


def _check_name(name):
    if not isinstance(name, str) or not _IDENTIFIER.match(name) or name in _CXX_WORDS:
        raise ValueError(f"tally: a kernel's name must be a C identifier, got {name!r}")
    return name


def _is_scalar(value):
    return isinstance(value, (bool, int, float, np.generic))


def _scalar_type(values):
    """The tally type numpy gives these Python or numpy scalars together (int -> int64, float ->
    float64)."""
    dtype = np.result_type(*[np.asarray(v) for v in values])
    t = _TYPE_NAMES.get(dtype.name)
    if t is None:
        raise TypeError(f"tally: unsupported scalar type {dtype}")
    return t


def _np_dtype(t):
    """numpy's dtype for a tally type (float32 stands in for bfloat16 where numpy decides casts)."""
    return np.dtype("float32" if t == "bf16" else NUMPY_NAMES[t])


def _scalar_bytes(value, t):
    """A scalar's bytes as the kernel's parameter of type t (numpy's conversion; OverflowError for
    an integer out of range)."""
    if t == "bf16":
        bits = int(np.array(value, np.float32).view(np.uint32))
        if (bits & 0x7FFFFFFF) > 0x7F800000:
            return struct.pack("<H", (bits >> 16) | 0x40)
        return struct.pack("<H", ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF)
    return np.array(value, _np_dtype(t)).tobytes()


def _layout(src):
    """(address, strides in elements) of a torch or cupy array."""
    if src.lib == "torch":
        return src.obj.data_ptr(), tuple(src.obj.stride())
    a = src.obj
    if any(s % a.itemsize for s in a.strides):
        raise ValueError("tally: an array's strides are not whole elements")
    return a.data.ptr, tuple(s // a.itemsize for s in a.strides)


def _span(address, shape, strides, itemsize):
    """The bytes [lo, hi) an array touches (empty for no elements)."""
    if any(s == 0 for s in shape):
        return address, address
    lo = hi = 0
    for size, stride in zip(shape, strides):
        reach = (size - 1) * stride * itemsize
        lo, hi = (lo + reach, hi) if reach < 0 else (lo, hi + reach)
    return address + lo, address + hi + itemsize


def _broadcast_strides(shape, strides, target):
    """strides of an array of `shape` read as `target` (numpy broadcasting): 0 where stretched."""
    pad = len(target) - len(shape)
    return [0] * pad + [0 if size == 1 else stride for size, stride in zip(shape, strides)]


def _merge_dims(shape, stride_lists):
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


def _shape_bytes(shape):
    n = math.prod(shape)
    return np.array([len(shape), n, *shape, *[0] * (_MAX_DIMS - len(shape))], np.int64).tobytes()


def _strides_bytes(strides):
    return np.array([*strides, *[0] * (_MAX_DIMS - len(strides))], np.int64).tobytes()


def _pointer(address):
    return struct.pack("<Q", address)


def _int64(value):
    return struct.pack("<q", value)


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _reads_before_writing(code, name):
    """Whether `code` may read the output `name` before writing all of it, so that its old value
    must be loaded: false only where its first mention starts a top-level statement `name = ...`
    (not ==) with no return or goto before it."""
    code = _COMMENT.sub(" ", code)
    first = re.search(rf"\b{re.escape(name)}\b", code)
    if first is None:
        return False
    before, after = code[:first.start()], code[first.end():]
    if re.search(r"\b(return|goto)\b", before) or not re.match(r"\s*=(?!=)", after):
        return True
    depth, start = 0, 0
    for k, c in enumerate(before):
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        if depth == 0 and c in ";}":
            start = k + 1
    return depth != 0 or before[start:].strip() != ""


class _Bound:
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
            if _is_scalar(v):
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
            elif not p.output and src.type != p.type and not np.can_cast(_np_dtype(src.type), _np_dtype(p.type),
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
        if not _cuda_usable():
            raise ValueError("tally: this build of tally has no usable CUDA backend for run-time kernels")
        return ref


def _host_outputs(bound, result, shape, what):
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


def _check_overlaps(kernel_name, items):
    """items: (name, is_output, address, shape, strides, itemsize, raw). An output may share memory
    with an input only by being the same array (same address, shape, strides and element size:
    in place); any other overlap with an input or another output is an error."""
    for a in range(len(items)):
        for b in range(a + 1, len(items)):
            x, y = items[a], items[b]
            if not (x[1] or y[1]):
                continue
            lo_x, hi_x = _span(*x[2:6])
            lo_y, hi_y = _span(*y[2:6])
            if lo_x >= hi_y or lo_y >= hi_x:
                continue
            same = x[2:6] == y[2:6] and not (x[6] or y[6]) and not (x[1] and y[1])
            if not same:
                raise ValueError(f"tally: {kernel_name}: {x[0]} and {y[0]} overlap in memory without being the "
                                 "same array (an output may only be one of the inputs itself, for in place)")


class ElementwiseKernel:
    """CuPy's ElementwiseKernel: `operation` (CUDA C++ statements) runs once per element of the
    broadcast non-raw arrays, with the parameters as variables, `i` the element's index (C order)
    and `_ind.size()` the element count.

        squared_diff = tally.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")
        z = squared_diff(x, y)              # torch or cupy CUDA arrays; broadcasting
        squared_diff(x, y, z)               # into a given output (may be x or y: in place)

    With a Python callable as `operation`, numpy arrays are computed on the host: the callable
    takes the (broadcast) inputs and returns the output(s)."""

    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True, preamble="",
                 no_return=False, return_tuple=False, **unsupported):
        if unsupported:
            raise TypeError(f"tally: ElementwiseKernel does not support {sorted(unsupported)} (CuPy options "
                            "outside tally's subset; see the README)")
        self.name = _check_name(name)
        self.in_params = _parse_params(in_params, False, name)
        self.out_params = _parse_params(out_params, True, name)
        if not self.out_params:
            raise ValueError(f"tally: {name}: needs at least one output parameter")
        _check_names(name, self.in_params + self.out_params)
        if not (isinstance(operation, str) or callable(operation)):
            raise TypeError(f"tally: {name}: operation must be C source (str) or a Python callable")
        if not isinstance(preamble, str):
            raise TypeError(f"tally: {name}: preamble must be a str")
        if not isinstance(reduce_dims, bool):
            raise TypeError(f"tally: {name}: reduce_dims must be a bool")
        self.operation, self.preamble = operation, preamble
        self.no_return, self.return_tuple = no_return, return_tuple
        self._sources = {}  # signature -> source
        self._plans = {}  # _layout_key -> _Plan

    def __repr__(self):
        return f"<tally.ElementwiseKernel {self.name}>"

    # ---- the call ----
    def __call__(self, *args, size=None):
        key = None if callable(self.operation) or not (size is None or type(size) is int) else _layout_key(args, size)
        plan = _kept_plan(self._plans, key)
        outs = None if plan is None else plan.call(self.name, args)
        if outs is None:
            bound = _Bound(self, args, allow_raw=True)
            if callable(self.operation):
                outs = self._numpy_call(bound, size)
            else:
                outs = self._cuda_call(bound, size, key)
        if self.no_return:
            return None
        return tuple(outs) if self.return_tuple or len(outs) > 1 else outs[0]

    def _shape(self, bound, size):
        """The broadcast shape of the non-raw arrays (or (size,) where all arrays are raw)."""
        shapes = [s.shape for k, s in bound.arrays() if not bound.params[k].raw]
        if shapes:
            if size is not None:
                raise ValueError(f"tally: {self.name}: size= is only for kernels whose arrays are all raw")
            try:
                return tuple(np.broadcast_shapes(*shapes))
            except ValueError:
                raise ValueError(f"tally: {self.name}: the shapes {shapes} do not broadcast together") from None
        if size is None:
            raise ValueError(f"tally: {self.name}: every array is raw; pass size= for the number of elements")
        if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
            raise ValueError(f"tally: {self.name}: size must be an int >= 0, got {size!r}")
        return (int(size),)

    def _check_outputs(self, bound, shape):
        for k, p in enumerate(bound.params):
            src = bound.sources[k]
            if p.output and src is not None and not p.raw and tuple(src.shape) != shape:
                raise ValueError(f"tally: {self.name}: the output {p.name} has shape {tuple(src.shape)}, "
                                 f"expected the broadcast shape {shape}")
            if p.output and p.raw and src is None:
                raise ValueError(f"tally: {self.name}: the raw output {p.name} must be given")

    def _cuda_call(self, bound, size, key):
        ref = bound.check_cuda()
        shape = self._shape(bound, size)
        self._check_outputs(bound, shape)
        n_in = len(self.in_params)
        given = tuple(bound.sources[k] is not None for k in range(n_in, len(bound.params)))
        items = _items_of(bound)
        source = self._source_of(bound, given, items)
        allocate = _allocate_outputs(bound, ref, n_in, shape)
        copied = False
        for k, p in enumerate(bound.params):
            s = bound.sources[k]
            if p.raw and s is not None and not _is_c_contiguous(s):
                if p.output:
                    raise ValueError(f"tally: {self.name}: the raw output {p.name} must be C-contiguous")
                bound.sources[k] = s.contiguous()
                copied = True
        outs = _outputs(bound, n_in)
        n = math.prod(shape)
        if n == 0:
            return outs
        plan, layouts, addresses = _Plan.of(self.name, ref, bound, n_in, allocate, all_raw=False)
        strided = [k for k in layouts if not bound.params[k].raw]
        merged, strides = _merge_dims(shape, [
            _broadcast_strides(bound.sources[k].shape, layouts[k][1], shape) for k in strided])
        if len(merged) > _MAX_DIMS:
            raise ValueError(f"tally: {self.name}: {len(merged)} dimensions after merging; at most {_MAX_DIMS}")
        strides = dict(zip(strided, strides))
        contiguous = len(merged) == 1 and all(s == [1] for s in strides.values())
        align = {k: _ITEMSIZE[bound.sources[k].type] * items for k in strided}
        parts = []  # per parameter: ("scalar", type), ("raw", count bytes) or ("array", strides bytes)
        for k, p in enumerate(bound.params):
            s = bound.sources[k]
            if s is None:
                parts.append(("scalar", bound.types[k]))
            elif p.raw:
                parts.append(("raw", _int64(math.prod(s.shape))))
            else:
                parts.append(("array", b"" if contiguous else _strides_bytes(strides[k])))
        if contiguous:
            kernel = f"{self.name}_contiguous"
            head = _int64(n)
            work = -(-n // items)
        else:
            kernel = f"{self.name}_strided"
            head = _shape_bytes(merged)
            work = n

        def build(addresses, values):
            args = [head]
            if contiguous:
                args.append(struct.pack("<i", int(all(addresses[k] % a == 0 for k, a in align.items()))))
            for k, (kind, extra) in enumerate(parts):
                if kind == "scalar":
                    args.append(_scalar_bytes(values[k], extra))
                elif kind == "raw":
                    args.append(_pointer(addresses[k]) + extra)
                else:
                    args.append(_pointer(addresses[k]))
                    if extra:
                        args.append(extra)
            return args

        plan.add_launch(ref, source, kernel, work, build)
        with _device_of(ref, wait=False) as stream:
            plan.run(addresses, bound.values, stream)
        if key is not None and not copied:
            _keep_plan(self._plans, key, plan)
        return outs

    def _numpy_call(self, bound, size):
        for k, s in bound.arrays():
            if s.lib != "numpy":
                raise TypeError(f"tally: {self.name}: a Python callable runs on numpy arrays; "
                                f"{bound.params[k].name} is a {s.lib} array. Give the operation as C source "
                                "for CUDA arrays")
        shape = self._shape(bound, size)
        self._check_outputs(bound, shape)
        n_in = len(self.in_params)
        inputs = []
        for k in range(n_in):
            p, s, t = bound.params[k], bound.sources[k], bound.types[k]
            if s is None:
                inputs.append(np.array(bound.values[k], NUMPY_NAMES[t])[()])
            elif p.raw:
                inputs.append(np.ascontiguousarray(s.obj, NUMPY_NAMES[t]).ravel())
            else:
                inputs.append(np.broadcast_to(np.asarray(s.obj, NUMPY_NAMES[t]), shape))
        return _host_outputs(bound, self.operation(*inputs), shape, "operation")

    # ---- the generated source ----
    def source(self, *args, size=None):
        """The CUDA source a call with these arguments compiles (numpy arrays may stand in for the
        CUDA arrays: only their types matter)."""
        if callable(self.operation):
            raise TypeError(f"tally: {self.name}: a Python callable has no CUDA source")
        bound = _Bound(self, args, allow_raw=True)
        given = tuple(bound.sources[k] is not None for k in range(len(self.in_params), len(bound.params)))
        return self._source_of(bound, given, _items_of(bound))

    def _signature(self, bound, given, items):
        storage = tuple(s.type if s is not None else None for s in bound.sources)
        return (tuple(bound.types), storage, tuple(sorted(bound.placeholders.items())), given, items)

    def _source_of(self, bound, given, items):
        key = self._signature(bound, given, items)
        source = self._sources.get(key)
        if source is None:
            source = self._sources[key] = self._generate(bound, given, items)
        return source

    def _generate(self, bound, given, items):
        n_in = len(self.in_params)
        name = self.name
        op_params, call_args, kernel_params, contiguous_params = [], [], [], []
        loads, loads_vec, loads_elem, stores, stores_vec, stores_elem, packs = [], [], [], [], [], [], []
        pack_stores = []
        offsets_strided = []
        for k, p in enumerate(bound.params):
            vt = _CTYPES[bound.types[k]]
            src = bound.sources[k]
            st = _CTYPES[src.type] if src is not None else (vt if p.output else None)
            if p.raw:
                qual = "" if p.output else "const "
                op_params.append(f"const tally_rt::raw<{qual}{st}>& {p.name}")
                kernel_params.append(f"const tally_rt::raw<{qual}{st}> {p.name}")
                contiguous_params.append(kernel_params[-1])
                call_args.append(p.name)
                continue
            if st is None:  # a scalar input
                op_params.append(f"const {vt} {p.name}")
                kernel_params.append(f"const {vt} {p.name}")
                contiguous_params.append(kernel_params[-1])
                call_args.append(p.name)
                continue
            v, ptr = f"_v_{p.name}", f"_p_{p.name}"
            call_args.append(v)
            if p.output:
                preload = k >= n_in and given[k - n_in] and _reads_before_writing(self.operation, p.name)
                op_params.append(f"{vt}& {p.name}")
                kernel_params += [f"{st}* const {ptr}", f"const tally_rt::strides _s_{p.name}"]
                contiguous_params.append(f"{st}* const {ptr}")
                offsets_strided.append(f"const long long _o_{p.name} = tally_rt::dot(_shape, _s_{p.name}, _c);")
                loads.append(f"{vt} {v}" + (f" = {ptr}[_o_{p.name}];" if preload else ";"))
                loads_elem.append(f"{vt} {v}" + (f" = {ptr}[_i];" if preload else ";"))
                packs.append(f"tally_rt::pack<{st}, {items}> _k_{p.name}" +
                             (f" = *reinterpret_cast<const tally_rt::pack<{st}, {items}>*>({ptr} + _i0);"
                              if preload else ";"))
                loads_vec.append(f"{vt} {v}" + (f" = _k_{p.name}.v[_j];" if preload else ";"))
                stores.append(f"{ptr}[_o_{p.name}] = {v};")
                stores_elem.append(f"{ptr}[_i] = {v};")
                stores_vec.append(f"_k_{p.name}.v[_j] = {v};")
                pack_stores.append(f"*reinterpret_cast<tally_rt::pack<{st}, {items}>*>({ptr} + _i0) = _k_{p.name};")
            else:
                op_params.append(f"const {vt} {p.name}")
                kernel_params += [f"const {st}* const {ptr}", f"const tally_rt::strides _s_{p.name}"]
                contiguous_params.append(f"const {st}* const {ptr}")
                offsets_strided.append(f"const long long _o_{p.name} = tally_rt::dot(_shape, _s_{p.name}, _c);")
                loads.append(f"const {vt} {v} = static_cast<{vt}>({ptr}[_o_{p.name}]);")
                loads_elem.append(f"const {vt} {v} = static_cast<{vt}>({ptr}[_i]);")
                packs.append(f"const tally_rt::pack<{st}, {items}> _k_{p.name} = "
                             f"*reinterpret_cast<const tally_rt::pack<{st}, {items}>*>({ptr} + _i0);")
                loads_vec.append(f"const {vt} {v} = static_cast<{vt}>(_k_{p.name}.v[_j]);")
        call = f"{name}_op(_i, _ind, {', '.join(call_args)});"
        call_vec = f"{name}_op(_i0 + _j, _ind, {', '.join(call_args)});"
        n4, n6 = "\n    ", "\n      "
        return f"""{_prelude()}
{_typedefs(bound.placeholders)}
{self.preamble}

__device__ __forceinline__ void {name}_op(const long long i, const tally_rt::index& _ind, {', '.join(op_params)}) {{
{self.operation}
;
}}

// Any layout: each element's offsets from its C-order index.
extern "C" __global__ void __launch_bounds__({_THREADS}) {name}_strided(const tally_rt::shape _shape, {', '.join(kernel_params)}) {{
  const tally_rt::index _ind{{_shape.n}};
  const long long _step = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long _i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; _i < _shape.n; _i += _step) {{
    long long _c[tally_rt::max_dims];
    tally_rt::unravel(_shape, _i, _c);
    {n4.join(offsets_strided)}
    {n4.join(loads)}
    {call}
    {n4.join(stores)}
  }}
}}

// Every array contiguous: {items} neighbouring elements per thread and step, as one 16-byte vector
// of the widest type where every array is aligned for it (_vectors), the tail one by one.
extern "C" __global__ void __launch_bounds__({_THREADS}) {name}_contiguous(const long long _n, const int _vectors, {', '.join(contiguous_params)}) {{
  const tally_rt::index _ind{{_n}};
  const long long _step = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long _first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long _chunks = _vectors ? _n / {items} : 0;
  for (long long _chunk = _first; _chunk < _chunks; _chunk += _step) {{
    const long long _i0 = _chunk * {items};
    {n4.join(packs)}
#pragma unroll
    for (int _j = 0; _j < {items}; ++_j) {{
      {n6.join(loads_vec)}
      {call_vec}
      {n6.join(stores_vec)}
    }}
    {n4.join(pack_stores)}
  }}
  for (long long _i = _chunks * {items} + _first; _i < _n; _i += _step) {{
    {n4.join(loads_elem)}
    {call}
    {n4.join(stores_elem)}
  }}
}}
"""


def _allocate_outputs(bound, ref, n_in, shape):
    """Allocates the outputs not given, in ref's library as `shape` (their Sources into bound),
    and returns per output what a _Plan allocates: None where given, else (shape, numpy dtype
    name)."""
    from .patterns import _empty
    allocate = []
    for k in range(n_in, len(bound.params)):
        if bound.sources[k] is not None:
            allocate.append(None)
            continue
        allocate.append((shape, NUMPY_NAMES[bound.types[k]]))
        bound.sources[k] = Source(_empty(ref, shape, bound.types[k]), bound.params[k].name)
    return allocate


def _outputs(bound, n_in):
    """The call's outputs: each given one as the caller's own object (not the detached view a
    Source reads of a tensor that requires grad), each new one as allocated."""
    return [bound.values[k] if bound.values[k] is not None else bound.sources[k].obj
            for k in range(n_in, len(bound.params))]


def _items_of(bound):
    """Elements a thread takes per step on the contiguous path: one 16-byte vector of the widest
    non-raw array's type (outputs not given count with their bound type)."""
    sizes = [_ITEMSIZE[s.type if s is not None else t] for p, s, t in zip(bound.params, bound.sources, bound.types)
             if not p.raw and (s is not None or p.output)]
    return 16 // max(sizes or [1])


def _typedefs(placeholders):
    return "\n".join(f"typedef {_CTYPES[t]} {name};" for name, t in sorted(placeholders.items()))


def _is_c_contiguous(src):
    if src.lib == "torch":
        return src.obj.is_contiguous()
    return bool(src.obj.flags.c_contiguous)


_devices = {}  # (library, device index) -> (ordinal, arch, multiprocessors)


def _multiprocessors(ref):
    """The multiprocessors of ref's device (asked once per device)."""
    key = (ref.lib, ref.index)
    if key not in _devices:
        with _device_of(ref, wait=False):
            _devices[key] = _tally.runtime_device()
    return _devices[key][2]


class _Plan:
    """What a call launches, as far as its arguments' library, device, types, shapes and strides
    decide it (not their addresses or the scalars' values): the outputs to allocate, the arrays'
    layouts (for the overlap check), scratch memory, and the kernels with their launch shapes and
    argument builders. The full call makes one and runs it; the kernel keeps it by _layout_key,
    so that a later call with arguments alike runs it again (call)."""

    __slots__ = ("lib", "index", "n_in", "allocate", "layouts", "scratch", "launches")

    def __init__(self, ref, n_in, allocate, layouts, scratch=0):
        self.lib, self.index, self.n_in = ref.lib, ref.index, n_in
        self.allocate = allocate  # per output: None where given, else (shape, numpy dtype name) of a new array
        self.layouts = layouts  # per array parameter: (name, output, shape, strides, itemsize, raw)
        self.scratch = scratch  # bytes of scratch memory a call allocates (its address: addresses[None])
        self.launches = []

    @classmethod
    def of(cls, name, ref, bound, n_in, allocate, all_raw):
        """The plan of a full call's bound arrays, their overlaps checked: (plan, each array's
        (address, strides), each array's address). all_raw: every array checked as raw (its whole
        span), else as its parameter says."""
        layouts = {k: _layout(s) for k, s in bound.arrays()}
        plan = cls(ref, n_in, allocate, {
            k: (p.name, p.output, tuple(bound.sources[k].shape), layouts[k][1], _ITEMSIZE[bound.sources[k].type],
                all_raw or p.raw)
            for k, p in enumerate(bound.params) if k in layouts})
        addresses = {k: layout[0] for k, layout in layouts.items()}
        plan.check_overlaps(name, addresses)
        return plan, layouts, addresses

    def add_launch(self, ref, source, kernel, work, build, threads=_THREADS):
        """A kernel of `source` for `work` items of `threads` threads each: enough blocks, at most
        32 a multiprocessor (the kernels loop over the rest); build(addresses, values) gives its
        arguments' bytes. Compiled (once per source and architecture) on ref's device."""
        sms = _multiprocessors(ref)
        with _device_of(ref, wait=False):
            handle = _tally.runtime_kernel(source, kernel)
        self.launches.append((handle, max(1, min(-(-work // threads), 32 * sms)), threads, build))

    def check_overlaps(self, name, addresses):
        _check_overlaps(name, [(n, out, addresses[k], shape, strides, size, raw)
                               for k, (n, out, shape, strides, size, raw) in self.layouts.items()])

    def run(self, addresses, values, stream):
        """Launches the kernels on `stream` of the plan's device (the current one), with the
        plan's scratch memory (its address: addresses[None]), freed when this returns: the
        library's pool reuses it only for work enqueued after the kernels."""
        scratch = None
        if self.scratch:
            scratch = _kept.new_array(self.lib, self.index, (self.scratch,), "uint8")
            addresses = {**addresses, None: _kept.address(self.lib, scratch)}
        for handle, blocks, threads, build in self.launches:
            _tally.runtime_launch(handle, blocks, threads, build(addresses, values), stream)

    def call(self, name, args):
        """The call of `args`, which are alike the arguments the plan was made from: its outputs,
        or None where the plan's device is not the current one (the full call switches)."""
        stream = _kept.current_stream(self.lib, self.index)
        if stream is None:
            return None
        values = list(args) + [None] * (self.n_in + len(self.allocate) - len(args))
        outs = []
        for k, new in enumerate(self.allocate, self.n_in):
            if values[k] is None:
                values[k] = _kept.new_array(self.lib, self.index, *new)
            outs.append(values[k])
        addresses = {k: _kept.address(self.lib, values[k]) for k in self.layouts}
        if any(new is None for new in self.allocate):  # a new output overlaps nothing
            self.check_overlaps(name, addresses)
        self.run(addresses, values, stream)
        return outs


def _layout_key(args, extra):
    """A key for a call's arguments as a _Plan depends on them: each array's library, type,
    device, shape and strides, each scalar's type (and for an int, whether int64 holds it), and
    `extra` (the call's keywords); None where an argument is of another kind."""
    torch, cupy = _torch(), _cupy()
    parts = [extra]
    for v in args:
        if torch is not None and isinstance(v, torch.Tensor):
            if not v.is_cuda or not _kept.raw_stream(torch):
                return None
            parts.append((v.dtype, v.get_device(), tuple(v.shape), v.stride()))
        elif cupy is not None and isinstance(v, cupy.ndarray):
            parts.append((v.dtype, v.data.device_id, v.shape, v.strides))
        elif type(v) is int:
            if not -2**63 <= v < 2**63:
                return None
            parts.append(int)
        elif type(v) in (float, bool) or isinstance(v, np.generic):
            parts.append(type(v))
        else:
            return None
    return tuple(parts)


_PLANS_MAX = 256  # plans a kernel keeps; beyond, it starts again


def _kept_plan(plans, key):
    return None if key is None else plans.get(key)


def _keep_plan(plans, key, plan):
    if len(plans) >= _PLANS_MAX:
        plans.clear()
    plans[key] = plan


class ReductionKernel:
    """CuPy's ReductionKernel: each output element is post_map_expr of the fold, with reduce_expr
    (over `a` and `b`, starting from `identity`), of map_expr over the inputs' elements that
    reduce into it (along `axis`: all axes by default).

        l2norm = tally.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
        y = l2norm(x, axis=1)

    reduce_expr must be associative and commutative (the fold's order is fixed but not
    sequential) and `identity` its neutral element. With Python callables (map_expr and
    post_map_expr, reduce_expr a numpy ufunc such as numpy.add), numpy arrays are computed on the
    host instead."""

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                 name="reduce_kernel", reduce_type=None, reduce_dims=True, preamble="", options=()):
        self.name = _check_name(name)
        self.in_params = _parse_params(in_params, False, name)
        self.out_params = _parse_params(out_params, True, name)
        if not self.out_params:
            raise ValueError(f"tally: {name}: needs at least one output parameter")
        for p in self.in_params + self.out_params:
            if p.raw:
                raise TypeError(f"tally: {name}: raw parameters are not supported by ReductionKernel")
        _check_names(name, self.in_params + self.out_params)
        if options:
            raise TypeError(f"tally: {name}: NVRTC options are not supported (options={options!r})")
        if not isinstance(reduce_dims, bool):
            raise TypeError(f"tally: {name}: reduce_dims must be a bool")
        self.host = callable(map_expr)
        if self.host:
            if not (hasattr(reduce_expr, "reduce") and (post_map_expr is None or callable(post_map_expr))):
                raise TypeError(f"tally: {name}: with a callable map_expr, reduce_expr must be a numpy ufunc "
                                "(numpy.add, numpy.maximum, ...) and post_map_expr a callable or None")
        else:
            for what, expr in (("map_expr", map_expr), ("reduce_expr", reduce_expr),
                               ("post_map_expr", post_map_expr), ("identity", identity)):
                if not isinstance(expr, str) or not expr.strip():
                    raise TypeError(f"tally: {name}: {what} must be C source (a non-empty str), got {expr!r}")
        if reduce_type is not None and not isinstance(reduce_type, str):
            raise TypeError(f"tally: {name}: reduce_type must be a type name or placeholder, got {reduce_type!r}")
        if not isinstance(preamble, str):
            raise TypeError(f"tally: {name}: preamble must be a str")
        self.map_expr, self.reduce_expr, self.post_map_expr = map_expr, reduce_expr, post_map_expr
        self.identity, self.reduce_type, self.preamble = identity, reduce_type, preamble
        self._sources = {}
        self._plans = {}  # _layout_key -> _Plan

    def __repr__(self):
        return f"<tally.ReductionKernel {self.name}>"

    def __call__(self, *args, axis=None, keepdims=False):
        key = None
        if not self.host and (axis is None or type(axis) is int or
                              (type(axis) is tuple and all(type(a) is int for a in axis))):
            key = _layout_key(args, (axis, bool(keepdims)))
        plan = _kept_plan(self._plans, key)
        outs = None if plan is None else plan.call(self.name, args)
        if outs is None:
            outs = self._full_call(args, axis, keepdims, key)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _full_call(self, args, axis, keepdims, key):
        bound = _Bound(self, args, allow_raw=False)
        shapes = [s.shape for k, s in bound.arrays() if k < len(self.in_params)]
        if not shapes:
            raise TypeError(f"tally: {self.name}: needs at least one input array")
        try:
            shape = tuple(np.broadcast_shapes(*shapes))
        except ValueError:
            raise ValueError(f"tally: {self.name}: the shapes {shapes} do not broadcast together") from None
        axes = _axes(self.name, axis, len(shape))
        out_shape = tuple(1 if d in axes else s for d, s in enumerate(shape) if keepdims or d not in axes)
        for k, p in enumerate(bound.params):
            src = bound.sources[k]
            if p.output and src is not None and tuple(src.shape) != out_shape:
                raise ValueError(f"tally: {self.name}: the output {p.name} has shape {tuple(src.shape)}, "
                                 f"expected {out_shape}")
        if self.host:
            return self._numpy_call(bound, shape, axes, keepdims, out_shape)
        return self._cuda_call(bound, shape, axes, out_shape, key)

    def _reduce_type(self, bound):
        if self.reduce_type is None:
            return bound.types[len(self.in_params)]
        t = _TYPE_NAMES.get(self.reduce_type) or bound.placeholders.get(self.reduce_type)
        if t is None:
            raise TypeError(f"tally: {self.name}: reduce_type {self.reduce_type!r} is neither a type name nor a "
                            "bound placeholder")
        return t

    def _numpy_call(self, bound, shape, axes, keepdims, out_shape):
        for k, s in bound.arrays():
            if s.lib != "numpy":
                raise TypeError(f"tally: {self.name}: Python callables run on numpy arrays; "
                                f"{bound.params[k].name} is a {s.lib} array. Give C source for CUDA arrays")
        n_in = len(self.in_params)
        inputs = []
        for k in range(n_in):
            s, t = bound.sources[k], NUMPY_NAMES[bound.types[k]]
            inputs.append(np.array(bound.values[k], t)[()] if s is None
                          else np.broadcast_to(np.asarray(s.obj, t), shape))
        mapped = np.broadcast_to(np.asarray(self.map_expr(*inputs), NUMPY_NAMES[self._reduce_type(bound)]), shape)
        kw = {} if self.identity is None else {"initial": self.identity}
        reduced = self.reduce_expr.reduce(mapped, axis=tuple(sorted(axes)), keepdims=keepdims, **kw)
        result = reduced if self.post_map_expr is None else self.post_map_expr(reduced)
        return _host_outputs(bound, result, out_shape, "post_map_expr")

    def _cuda_call(self, bound, shape, axes, out_shape, key):
        ref = bound.check_cuda()
        n_in = len(self.in_params)
        given = tuple(bound.sources[k] is not None for k in range(n_in, len(bound.params)))
        allocate = _allocate_outputs(bound, ref, n_in, out_shape)
        outs = _outputs(bound, n_in)
        kept_dims = [d for d in range(len(shape)) if d not in axes]
        outputs_count = math.prod(shape[d] for d in kept_dims)
        if outputs_count == 0:
            return outs
        plan, layouts, addresses = _Plan.of(self.name, ref, bound, n_in, allocate, all_raw=True)
        inputs = [k for k in layouts if k < n_in]
        outputs = list(range(n_in, len(bound.params)))
        full = {k: _broadcast_strides(bound.sources[k].shape, layouts[k][1], shape) for k in inputs}
        # An output's strides over the kept dimensions (keepdims' ones have length 1 and drop out).
        out_strides = {}
        for k in outputs:
            s = [st for size, st in zip(bound.sources[k].shape, layouts[k][1])]
            if len(s) != len(kept_dims):
                s = [st for d, st in enumerate(s) if d not in axes]
            out_strides[k] = s
        kept_shape = [shape[d] for d in kept_dims]
        kept, kept_strides = _merge_dims(kept_shape, [[full[k][d] for d in kept_dims] for k in inputs] +
                                         [out_strides[k] for k in outputs])
        red_shape = [shape[d] for d in sorted(axes)]
        red, red_strides = _merge_dims(red_shape, [[full[k][d] for d in sorted(axes)] for k in inputs])
        if math.prod(red_shape) == 0:
            red = [0]
            red_strides = [[0] for _ in inputs]
        if len(kept) > _MAX_DIMS or len(red) > _MAX_DIMS:
            raise ValueError(f"tally: {self.name}: more than {_MAX_DIMS} dimensions after merging")
        kept_in = {k: _strides_bytes(st) for k, st in zip(inputs, kept_strides[:len(inputs)])}
        kept_out = {k: _strides_bytes(st) for k, st in zip(outputs, kept_strides[len(inputs):])}
        red_in = {k: _strides_bytes(st) for k, st in zip(inputs, red_strides)}
        reduce_type = self._reduce_type(bound)
        source = self._source_of(bound, given, reduce_type)

        elements = math.prod(red)
        sms = _multiprocessors(ref)
        warp_groups = elements < 2048
        flat = len(red) == 1
        splits = 1
        if not warp_groups and outputs_count < 4 * sms:
            # Few long reductions: each split into blocks, 8192 elements at least, as many in all
            # as one wave holds (the flat kernel's 4 a multiprocessor; a second, partial wave of
            # blocks would leave most of the device idle while it runs).
            splits = max(1, min(4 * sms // outputs_count, elements // 8192))
        if splits > 1:
            # Partial results in scratch memory from the library's pool on the current stream.
            plan.scratch = outputs_count * splits * _ITEMSIZE[reduce_type]
        scalar_types = [(k, bound.types[k]) for k in range(n_in) if bound.sources[k] is None]
        kept_bytes, red_bytes = _shape_bytes(kept), _shape_bytes(red)

        def scalars_and_outputs(addresses, values):
            args = [_scalar_bytes(values[k], t) for k, t in scalar_types]
            for k in outputs:
                args += [_pointer(addresses[k]), kept_out[k]]
            return args

        def reduce_args(addresses, values):
            args = [kept_bytes, red_bytes, _int64(splits), struct.pack("<i", int(warp_groups))]
            for k in inputs:
                args += [_pointer(addresses[k]), kept_in[k], red_in[k]]
            return args + scalars_and_outputs(addresses, values) + [_pointer(addresses.get(None, 0))]

        def finish_args(addresses, values):
            return ([kept_bytes, _int64(splits), _pointer(addresses[None])] + scalars_and_outputs(addresses, values) +
                    [_int64(elements)])

        groups = outputs_count * splits
        plan.add_launch(ref, source, f"{self.name}_reduce_flat" if flat else f"{self.name}_reduce",
                        groups * (32 if warp_groups else _THREADS), reduce_args)
        if splits > 1:
            plan.add_launch(ref, source, f"{self.name}_finish", outputs_count * 32, finish_args)
        with _device_of(ref, wait=False) as stream:
            plan.run(addresses, bound.values, stream)
        if key is not None:
            _keep_plan(self._plans, key, plan)
        return outs

    def source(self, *args):
        """The CUDA source a call with these arguments compiles (numpy arrays may stand in)."""
        if self.host:
            raise TypeError(f"tally: {self.name}: Python callables have no CUDA source")
        bound = _Bound(self, args, allow_raw=False)
        given = tuple(bound.sources[k] is not None for k in range(len(self.in_params), len(bound.params)))
        return self._source_of(bound, given, self._reduce_type(bound))

    def _source_of(self, bound, given, reduce_type):
        storage = tuple(s.type if s is not None else None for s in bound.sources[:len(self.in_params)])
        key = (tuple(bound.types), storage, tuple(sorted(bound.placeholders.items())), given, reduce_type)
        source = self._sources.get(key)
        if source is None:
            source = self._sources[key] = self._generate(bound, given, reduce_type)
        return source

    def _generate(self, bound, given, reduce_type):
        name, n_in = self.name, len(self.in_params)
        map_params, map_args, scalar_params, scalar_args = [], [], [], []
        in_params, loads_fast, loads_general, bases = [], [], [], []
        out_params, out_kernel, out_loads, out_stores, out_args, offsets = [], [], [], [], [], []
        for k, p in enumerate(bound.params):
            vt = _CTYPES[bound.types[k]]
            src = bound.sources[k]
            if k < n_in and src is None:
                scalar_params.append(f"const {vt} {p.name}")
                scalar_args.append(p.name)
                map_params.append(f"const {vt} {p.name}")
                map_args.append(p.name)
            elif k < n_in:
                st = _CTYPES[src.type]
                ptr = f"_p_{p.name}"
                map_params.append(f"const {vt} {p.name}")
                map_args.append(f"_v_{p.name}")
                in_params += [f"const {st}* const {ptr}", f"const tally_rt::strides _sk_{p.name}",
                              f"const tally_rt::strides _sr_{p.name}"]
                bases.append(f"const long long _b_{p.name} = tally_rt::dot(_kept, _sk_{p.name}, _c);")
                loads_fast.append(f"const {vt} _v_{p.name} = static_cast<{vt}>({ptr}[_b_{p.name} + _r * _sr_{p.name}.s[0]]);")
                loads_general.append(f"const {vt} _v_{p.name} = static_cast<{vt}>({ptr}[_b_{p.name} + tally_rt::dot(_red, _sr_{p.name}, _d)]);")
            else:
                preload = given[k - n_in] and _reads_before_writing(self.post_map_expr, p.name)
                out_params.append(f"{vt}& {p.name}")
                out_kernel += [f"{vt}* const _p_{p.name}", f"const tally_rt::strides _s_{p.name}"]
                at = f"_at_{p.name}"
                offsets.append(f"const long long {at} = tally_rt::dot(_kept, _s_{p.name}, _c);")
                out_loads.append(f"{vt} _v_{p.name}" + (f" = _p_{p.name}[{at}];" if preload else ";"))
                out_stores.append(f"_p_{p.name}[{at}] = _v_{p.name};")
                out_args.append(f"_v_{p.name}")
        rt = _CTYPES[reduce_type]
        post_args = ", ".join(["_acc", "_in_ind", "_out_ind"] + scalar_args + out_args)
        n4, n6, n8, n10 = "\n    ", "\n      ", "\n        ", "\n          "
        reduce_params = ", ".join(["const tally_rt::shape _kept", "const tally_rt::shape _red", "const long long _splits",
                                   "const int _warp_groups"] + in_params + scalar_params + out_kernel +
                                  ["_type_reduce* const _partials"])
        reduce_args = ", ".join(p.split()[-1] for p in reduce_params.split(", "))
        write = f"""{n6.join(out_loads)}
      {name}_post({post_args});
      {n6.join(out_stores)}"""
        return f"""{_prelude()}
{_typedefs(bound.placeholders)}
typedef {rt} _type_reduce;
{self.preamble}

__device__ __forceinline__ _type_reduce {name}_map(const tally_rt::index& _in_ind, const tally_rt::index& _out_ind{''.join(', ' + m for m in map_params)}) {{
  return static_cast<_type_reduce>({self.map_expr});
}}
__device__ __forceinline__ _type_reduce {name}_combine(const _type_reduce& a, const _type_reduce& b) {{
  return static_cast<_type_reduce>({self.reduce_expr});
}}
__device__ __forceinline__ void {name}_post(const _type_reduce& a, const tally_rt::index& _in_ind, const tally_rt::index& _out_ind{''.join(', ' + s for s in scalar_params + out_params)}) {{
{self.post_map_expr}
;
}}
struct {name}_fold {{
  __device__ _type_reduce operator()(const _type_reduce& a, const _type_reduce& b) const {{ return {name}_combine(a, b); }}
}};
__device__ __forceinline__ _type_reduce {name}_identity() {{ return static_cast<_type_reduce>({self.identity}); }}

// Output o's elements (split s of _splits) are folded by one group of lanes: a warp
// (_warp_groups) or the block; with one split the group writes post_map of the fold, else its
// partial fold to _partials[o * _splits + s] for {name}_finish. _flat: the reduced dimensions
// merged into one (the loop without index arithmetic), else any rank.
template <bool _flat>
__device__ __forceinline__ void {name}_reduce_body({reduce_params}) {{
  const tally_rt::index _in_ind{{_kept.n * _red.n}}, _out_ind{{_kept.n}};
  const int _group = _warp_groups ? 32 : blockDim.x;
  const long long _lane = threadIdx.x % _group;
  const long long _per_block = blockDim.x / _group;
  const long long _work = _kept.n * _splits;
  const long long _chunk = (_red.n + _splits - 1) / _splits;
  const {name}_fold _fold;
  for (long long _w = blockIdx.x * _per_block + threadIdx.x / _group; _w < _work; _w += gridDim.x * _per_block) {{
    const long long _o = _w / _splits, _s = _w - _o * _splits;
    long long _c[tally_rt::max_dims];
    tally_rt::unravel(_kept, _o, _c);
    {n4.join(bases + offsets)}
    const long long _lo = _s * _chunk, _hi = _lo + _chunk < _red.n ? _lo + _chunk : _red.n;
    _type_reduce _acc = {name}_identity();
    if (_flat) {{
      // Tiles of 8 elements a lane, all loaded before any is folded (8 loads in flight), folded
      // in order; then the rest one by one.
      long long _r0 = _lo + _lane;
      for (; _r0 + 7 * _group < _hi; _r0 += 8 * _group) {{
        _type_reduce _t[8];
#pragma unroll
        for (int _u = 0; _u < 8; ++_u) {{
          const long long _r = _r0 + _u * _group;
          {n10.join(loads_fast)}
          _t[_u] = {name}_map(_in_ind, _out_ind{''.join(', ' + a for a in map_args)});
        }}
#pragma unroll
        for (int _u = 0; _u < 8; ++_u) _acc = {name}_combine(_acc, _t[_u]);
      }}
      for (long long _r = _r0; _r < _hi; _r += _group) {{
        {n8.join(loads_fast)}
        _acc = {name}_combine(_acc, {name}_map(_in_ind, _out_ind{''.join(', ' + a for a in map_args)}));
      }}
    }} else {{
      for (long long _r = _lo + _lane; _r < _hi; _r += _group) {{
        long long _d[tally_rt::max_dims];
        tally_rt::unravel(_red, _r, _d);
        {n8.join(loads_general)}
        _acc = {name}_combine(_acc, {name}_map(_in_ind, _out_ind{''.join(', ' + a for a in map_args)}));
      }}
    }}
    _acc = _warp_groups ? tally_rt::warp_fold(_acc, _fold) : tally_rt::block_fold(_acc, _fold, {name}_identity());
    if (_lane != 0) continue;
    if (_splits > 1) {{
      _partials[_w] = _acc;
    }} else {{
      {write}
    }}
  }}
}}

// Each its own kernel, for its own registers: the flat loop fits 64 (4 blocks a multiprocessor,
// the launch's one wave).
extern "C" __global__ void __launch_bounds__({_THREADS}, 4) {name}_reduce_flat({reduce_params}) {{
  {name}_reduce_body<true>({reduce_args});
}}
extern "C" __global__ void __launch_bounds__({_THREADS}) {name}_reduce({reduce_params}) {{
  {name}_reduce_body<false>({reduce_args});
}}

// The partial folds of each output, one warp an output, then post_map.
extern "C" __global__ void __launch_bounds__({_THREADS}) {name}_finish(const tally_rt::shape _kept, const long long _splits, const _type_reduce* const _partials, {''.join(s + ', ' for s in scalar_params + out_kernel)}const long long _elements) {{
  const tally_rt::index _in_ind{{_kept.n * _elements}}, _out_ind{{_kept.n}};
  const long long _lane = threadIdx.x % 32;
  const long long _warps = static_cast<long long>(gridDim.x) * (blockDim.x / 32);
  const {name}_fold _fold;
  for (long long _o = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32; _o < _kept.n; _o += _warps) {{
    _type_reduce _acc = {name}_identity();
    for (long long _k = _lane; _k < _splits; _k += 32) _acc = {name}_combine(_acc, _partials[_o * _splits + _k]);
    _acc = tally_rt::warp_fold(_acc, _fold);
    if (_lane == 0) {{
      long long _c[tally_rt::max_dims];
      tally_rt::unravel(_kept, _o, _c);
      {n6.join(offsets)}
      {write}
    }}
  }}
}}
"""


def _axes(name, axis, ndim):
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

"""tally.ElementwiseKernel: CuPy's, compiled at run time for CUDA arrays, or a Python callable
evaluated with numpy on the host."""

import math
import struct

import numpy as np

from .._devices import device_of
from .._types import NUMPY_NAMES
from .bind import ITEMSIZE, Bound, allocate_outputs, broadcast_strides, host_outputs, merge_dims, output_arrays
from .codegen import MAX_DIMS, elementwise_source, items_of
from .launch import (Plan, int64, is_c_contiguous, keep_plan, kept_plan, layout_key, pointer, scalar_bytes,
                     shape_bytes, strides_bytes)
from .parse import check_name, check_names, parse_params


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
                            "outside tally's subset; see docs/patterns.md)")
        self.name = check_name(name)
        self.in_params = parse_params(in_params, False, name)
        self.out_params = parse_params(out_params, True, name)
        if not self.out_params:
            raise ValueError(f"tally: {name}: needs at least one output parameter")
        check_names(name, self.in_params + self.out_params)
        if not (isinstance(operation, str) or callable(operation)):
            raise TypeError(f"tally: {name}: operation must be C source (str) or a Python callable")
        if not isinstance(preamble, str):
            raise TypeError(f"tally: {name}: preamble must be a str")
        if not isinstance(reduce_dims, bool):
            raise TypeError(f"tally: {name}: reduce_dims must be a bool")
        self.operation, self.preamble = operation, preamble
        self.no_return, self.return_tuple = no_return, return_tuple
        self._sources = {}  # signature -> source
        self._plans = {}  # layout_key -> Plan

    def __repr__(self):
        return f"<tally.ElementwiseKernel {self.name}>"

    # ---- the call ----
    def __call__(self, *args, size=None):
        key = None if callable(self.operation) or not (size is None or type(size) is int) else layout_key(args, size)
        plan = kept_plan(self._plans, key)
        outs = None if plan is None else plan.call(self.name, args)
        if outs is None:
            bound = Bound(self, args, allow_raw=True)
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
        """The call on CUDA arrays: the missing outputs allocated, the plan made (the contiguous
        kernel or the strided one over the merged dimensions), run on the caller's stream, and
        kept by `key` (the call's layout_key)."""
        ref = bound.check_cuda()
        shape = self._shape(bound, size)
        self._check_outputs(bound, shape)
        n_in = len(self.in_params)
        given = tuple(bound.sources[k] is not None for k in range(n_in, len(bound.params)))
        items = items_of(bound)
        source = self._source_of(bound, given, items)
        allocate = allocate_outputs(bound, ref, n_in, shape)
        copied = False
        for k, p in enumerate(bound.params):
            s = bound.sources[k]
            if p.raw and s is not None and not is_c_contiguous(s):
                if p.output:
                    raise ValueError(f"tally: {self.name}: the raw output {p.name} must be C-contiguous")
                bound.sources[k] = s.contiguous()
                copied = True
        outs = output_arrays(bound, n_in)
        n = math.prod(shape)
        if n == 0:
            return outs
        plan, layouts, addresses = Plan.of(self.name, ref, bound, n_in, allocate, all_raw=False)
        strided = [k for k in layouts if not bound.params[k].raw]
        merged, strides = merge_dims(shape, [
            broadcast_strides(bound.sources[k].shape, layouts[k][1], shape) for k in strided])
        if len(merged) > MAX_DIMS:
            raise ValueError(f"tally: {self.name}: {len(merged)} dimensions after merging; at most {MAX_DIMS}")
        strides = dict(zip(strided, strides))
        contiguous = len(merged) == 1 and all(s == [1] for s in strides.values())
        align = {k: ITEMSIZE[bound.sources[k].type] * items for k in strided}
        parts = []  # per parameter: ("scalar", type), ("raw", count bytes) or ("array", strides bytes)
        for k, p in enumerate(bound.params):
            s = bound.sources[k]
            if s is None:
                parts.append(("scalar", bound.types[k]))
            elif p.raw:
                parts.append(("raw", int64(math.prod(s.shape))))
            else:
                parts.append(("array", b"" if contiguous else strides_bytes(strides[k])))
        if contiguous:
            kernel = f"{self.name}_contiguous"
            head = int64(n)
            work = -(-n // items)
        else:
            kernel = f"{self.name}_strided"
            head = shape_bytes(merged)
            work = n

        def build(addresses, values):
            args = [head]
            if contiguous:
                args.append(struct.pack("<i", int(all(addresses[k] % a == 0 for k, a in align.items()))))
            for k, (kind, extra) in enumerate(parts):
                if kind == "scalar":
                    args.append(scalar_bytes(values[k], extra))
                elif kind == "raw":
                    args.append(pointer(addresses[k]) + extra)
                else:
                    args.append(pointer(addresses[k]))
                    if extra:
                        args.append(extra)
            return args

        plan.add_launch(ref, source, kernel, work, build)
        with device_of(ref, wait=False) as stream:
            plan.run(addresses, bound.values, stream)
        if key is not None and not copied:
            keep_plan(self._plans, key, plan)
        return outs

    def _numpy_call(self, bound, size):
        """The host fallback: the Python callable on the broadcast numpy inputs."""
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
        return host_outputs(bound, self.operation(*inputs), shape, "operation")

    # ---- the generated source ----
    def source(self, *args, size=None):
        """The CUDA source a call with these arguments compiles (numpy arrays may stand in for the
        CUDA arrays: only their types matter)."""
        if callable(self.operation):
            raise TypeError(f"tally: {self.name}: a Python callable has no CUDA source")
        bound = Bound(self, args, allow_raw=True)
        given = tuple(bound.sources[k] is not None for k in range(len(self.in_params), len(bound.params)))
        return self._source_of(bound, given, items_of(bound))

    def _signature(self, bound, given, items):
        storage = tuple(s.type if s is not None else None for s in bound.sources)
        return (tuple(bound.types), storage, tuple(sorted(bound.placeholders.items())), given, items)

    def _source_of(self, bound, given, items):
        key = self._signature(bound, given, items)
        source = self._sources.get(key)
        if source is None:
            source = self._sources[key] = elementwise_source(self, bound, given, items)
        return source

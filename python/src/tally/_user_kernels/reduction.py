"""tally.ReductionKernel: CuPy's, compiled at run time for CUDA arrays, or Python callables
(map_expr, post_map_expr) and a numpy ufunc evaluated with numpy on the host."""

import math
import struct

import numpy as np

from .._devices import device_of
from .._types import NUMPY_NAMES
from .bind import (ITEMSIZE, Bound, allocate_outputs, broadcast_strides, host_outputs, merge_dims, output_arrays,
                   reduction_axes)
from .codegen import MAX_DIMS, THREADS, reduction_source
from .launch import (Plan, int64, keep_plan, kept_plan, layout_key, multiprocessors, pointer, scalar_bytes,
                     shape_bytes, strides_bytes)
from .parse import TYPE_NAMES, check_name, check_names, parse_params


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
        self.name = check_name(name)
        self.in_params = parse_params(in_params, False, name)
        self.out_params = parse_params(out_params, True, name)
        if not self.out_params:
            raise ValueError(f"tally: {name}: needs at least one output parameter")
        for p in self.in_params + self.out_params:
            if p.raw:
                raise TypeError(f"tally: {name}: raw parameters are not supported by ReductionKernel")
        check_names(name, self.in_params + self.out_params)
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
        self._plans = {}  # layout_key -> Plan

    def __repr__(self):
        return f"<tally.ReductionKernel {self.name}>"

    def __call__(self, *args, axis=None, keepdims=False):
        key = None
        if not self.host and (axis is None or type(axis) is int or
                              (type(axis) is tuple and all(type(a) is int for a in axis))):
            key = layout_key(args, (axis, bool(keepdims)))
        plan = kept_plan(self._plans, key)
        outs = None if plan is None else plan.call(self.name, args)
        if outs is None:
            outs = self._full_call(args, axis, keepdims, key)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _full_call(self, args, axis, keepdims, key):
        bound = Bound(self, args, allow_raw=False)
        shapes = [s.shape for k, s in bound.arrays() if k < len(self.in_params)]
        if not shapes:
            raise TypeError(f"tally: {self.name}: needs at least one input array")
        try:
            shape = tuple(np.broadcast_shapes(*shapes))
        except ValueError:
            raise ValueError(f"tally: {self.name}: the shapes {shapes} do not broadcast together") from None
        axes = reduction_axes(self.name, axis, len(shape))
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
        t = TYPE_NAMES.get(self.reduce_type) or bound.placeholders.get(self.reduce_type)
        if t is None:
            raise TypeError(f"tally: {self.name}: reduce_type {self.reduce_type!r} is neither a type name nor a "
                            "bound placeholder")
        return t

    def _numpy_call(self, bound, shape, axes, keepdims, out_shape):
        """The host fallback: map_expr on the broadcast numpy inputs, the ufunc's reduce, then
        post_map_expr."""
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
        return host_outputs(bound, result, out_shape, "post_map_expr")

    def _cuda_call(self, bound, shape, axes, out_shape, key):
        """The call on CUDA arrays: the missing outputs allocated, the plan made (the kept and
        reduced dimensions merged, long reductions split over one wave of blocks), run on the
        caller's stream, and kept by `key` (the call's layout_key)."""
        ref = bound.check_cuda()
        n_in = len(self.in_params)
        given = tuple(bound.sources[k] is not None for k in range(n_in, len(bound.params)))
        allocate = allocate_outputs(bound, ref, n_in, out_shape)
        outs = output_arrays(bound, n_in)
        kept_dims = [d for d in range(len(shape)) if d not in axes]
        outputs_count = math.prod(shape[d] for d in kept_dims)
        if outputs_count == 0:
            return outs
        plan, layouts, addresses = Plan.of(self.name, ref, bound, n_in, allocate, all_raw=True)
        inputs = [k for k in layouts if k < n_in]
        outputs = list(range(n_in, len(bound.params)))
        full = {k: broadcast_strides(bound.sources[k].shape, layouts[k][1], shape) for k in inputs}
        # An output's strides over the kept dimensions (keepdims' ones have length 1 and drop out).
        out_strides = {}
        for k in outputs:
            s = [st for size, st in zip(bound.sources[k].shape, layouts[k][1])]
            if len(s) != len(kept_dims):
                s = [st for d, st in enumerate(s) if d not in axes]
            out_strides[k] = s
        kept_shape = [shape[d] for d in kept_dims]
        kept, kept_strides = merge_dims(kept_shape, [[full[k][d] for d in kept_dims] for k in inputs] +
                                        [out_strides[k] for k in outputs])
        red_shape = [shape[d] for d in sorted(axes)]
        red, red_strides = merge_dims(red_shape, [[full[k][d] for d in sorted(axes)] for k in inputs])
        if math.prod(red_shape) == 0:
            red = [0]
            red_strides = [[0] for _ in inputs]
        if len(kept) > MAX_DIMS or len(red) > MAX_DIMS:
            raise ValueError(f"tally: {self.name}: more than {MAX_DIMS} dimensions after merging")
        kept_in = {k: strides_bytes(st) for k, st in zip(inputs, kept_strides[:len(inputs)])}
        kept_out = {k: strides_bytes(st) for k, st in zip(outputs, kept_strides[len(inputs):])}
        red_in = {k: strides_bytes(st) for k, st in zip(inputs, red_strides)}
        reduce_type = self._reduce_type(bound)
        source = self._source_of(bound, given, reduce_type)

        elements = math.prod(red)
        sms = multiprocessors(ref)
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
            plan.scratch = outputs_count * splits * ITEMSIZE[reduce_type]
        scalar_types = [(k, bound.types[k]) for k in range(n_in) if bound.sources[k] is None]
        kept_bytes, red_bytes = shape_bytes(kept), shape_bytes(red)

        def scalars_and_outputs(addresses, values):
            args = [scalar_bytes(values[k], t) for k, t in scalar_types]
            for k in outputs:
                args += [pointer(addresses[k]), kept_out[k]]
            return args

        def reduce_args(addresses, values):
            args = [kept_bytes, red_bytes, int64(splits), struct.pack("<i", int(warp_groups))]
            for k in inputs:
                args += [pointer(addresses[k]), kept_in[k], red_in[k]]
            return args + scalars_and_outputs(addresses, values) + [pointer(addresses.get(None, 0))]

        def finish_args(addresses, values):
            return ([kept_bytes, int64(splits), pointer(addresses[None])] + scalars_and_outputs(addresses, values) +
                    [int64(elements)])

        groups = outputs_count * splits
        plan.add_launch(ref, source, f"{self.name}_reduce_flat" if flat else f"{self.name}_reduce",
                        groups * (32 if warp_groups else THREADS), reduce_args)
        if splits > 1:
            plan.add_launch(ref, source, f"{self.name}_finish", outputs_count * 32, finish_args)
        with device_of(ref, wait=False) as stream:
            plan.run(addresses, bound.values, stream)
        if key is not None:
            keep_plan(self._plans, key, plan)
        return outs

    def source(self, *args):
        """The CUDA source a call with these arguments compiles (numpy arrays may stand in)."""
        if self.host:
            raise TypeError(f"tally: {self.name}: Python callables have no CUDA source")
        bound = Bound(self, args, allow_raw=False)
        given = tuple(bound.sources[k] is not None for k in range(len(self.in_params), len(bound.params)))
        return self._source_of(bound, given, self._reduce_type(bound))

    def _source_of(self, bound, given, reduce_type):
        storage = tuple(s.type if s is not None else None for s in bound.sources[:len(self.in_params)])
        key = (tuple(bound.types), storage, tuple(sorted(bound.placeholders.items())), given, reduce_type)
        source = self._sources.get(key)
        if source is None:
            source = self._sources[key] = reduction_source(self, bound, given, reduce_type)
        return source

"""What a call launches, and its reuse: the arrays' layouts and overlaps, the kernels' argument
bytes, the device's multiprocessors, and the plan (Plan) a kernel keeps by its arguments'
layout_key, so that a later call with arguments alike binds nothing and only reads their
addresses."""

import math
import struct

import numpy as np

from .. import _caches, _tally
from .._devices import _cupy, _torch, address, current_stream, device_of, new_array, raw_stream
from .bind import ITEMSIZE, np_dtype
from .codegen import MAX_DIMS, THREADS


def _layout(src):
    """(address, strides in elements) of a torch or cupy array."""
    if src.lib == "torch":
        return src.obj.data_ptr(), tuple(src.obj.stride())
    a = src.obj
    if any(s % a.itemsize for s in a.strides):
        raise ValueError("tally: an array's strides are not whole elements")
    return a.data.ptr, tuple(s // a.itemsize for s in a.strides)


def is_c_contiguous(src):
    if src.lib == "torch":
        return src.obj.is_contiguous()
    return bool(src.obj.flags.c_contiguous)


def _span(start, shape, strides, itemsize):
    """The bytes [lo, hi) an array at `start` touches (empty for no elements)."""
    if any(s == 0 for s in shape):
        return start, start
    lo = hi = 0
    for size, stride in zip(shape, strides):
        reach = (size - 1) * stride * itemsize
        lo, hi = (lo + reach, hi) if reach < 0 else (lo, hi + reach)
    return start + lo, start + hi + itemsize


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


def shape_bytes(shape):
    n = math.prod(shape)
    return np.array([len(shape), n, *shape, *[0] * (MAX_DIMS - len(shape))], np.int64).tobytes()


def strides_bytes(strides):
    return np.array([*strides, *[0] * (MAX_DIMS - len(strides))], np.int64).tobytes()


def pointer(at):
    return struct.pack("<Q", at)


def int64(value):
    return struct.pack("<q", value)


def scalar_bytes(value, t):
    """A scalar's bytes as the kernel's parameter of type t (numpy's conversion; OverflowError for
    an integer out of range)."""
    if t == "bf16":
        bits = int(np.array(value, np.float32).view(np.uint32))
        if (bits & 0x7FFFFFFF) > 0x7F800000:
            return struct.pack("<H", (bits >> 16) | 0x40)
        return struct.pack("<H", ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF)
    return np.array(value, np_dtype(t)).tobytes()


_device_properties = {}  # (library, device index) -> (ordinal, arch, multiprocessors)
_caches.register("device properties", "each CUDA device's ordinal, architecture and multiprocessors (user kernels)",
                 "(library, device)", "one a device", lambda: len(_device_properties), _device_properties.clear)


def multiprocessors(ref):
    """The multiprocessors of ref's device (asked once per device)."""
    key = (ref.lib, ref.index)
    if key not in _device_properties:
        with device_of(ref, wait=False):
            _device_properties[key] = _tally.runtime_device()
    return _device_properties[key][2]


class Plan:
    """What a call launches, as far as its arguments' library, device, types, shapes and strides
    decide it (not their addresses or the scalars' values): the outputs to allocate, the arrays'
    layouts (for the overlap check), scratch memory, and the kernels with their launch shapes and
    argument builders. The full call makes one and runs it; the kernel keeps it by layout_key,
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
            k: (p.name, p.output, tuple(bound.sources[k].shape), layouts[k][1], ITEMSIZE[bound.sources[k].type],
                all_raw or p.raw)
            for k, p in enumerate(bound.params) if k in layouts})
        addresses = {k: layout[0] for k, layout in layouts.items()}
        plan.check_overlaps(name, addresses)
        return plan, layouts, addresses

    def add_launch(self, ref, source, kernel, work, build, threads=THREADS):
        """A kernel of `source` for `work` items of `threads` threads each: enough blocks, at most
        32 a multiprocessor (the kernels loop over the rest); build(addresses, values) gives its
        arguments' bytes. Compiled (once per source and architecture) on ref's device."""
        sms = multiprocessors(ref)
        with device_of(ref, wait=False):
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
            scratch = new_array(self.lib, self.index, (self.scratch,), "uint8")
            addresses = {**addresses, None: address(self.lib, scratch)}
        for handle, blocks, threads, build in self.launches:
            _tally.runtime_launch(handle, blocks, threads, build(addresses, values), stream)

    def call(self, name, args):
        """The call of `args`, which are alike the arguments the plan was made from: its outputs,
        or None where the plan's device is not the current one (the full call switches)."""
        stream = current_stream(self.lib, self.index)
        if stream is None:
            return None
        values = list(args) + [None] * (self.n_in + len(self.allocate) - len(args))
        outs = []
        for k, new in enumerate(self.allocate, self.n_in):
            if values[k] is None:
                values[k] = new_array(self.lib, self.index, *new)
            outs.append(values[k])
        addresses = {k: address(self.lib, values[k]) for k in self.layouts}
        if any(new is None for new in self.allocate):  # a new output overlaps nothing
            self.check_overlaps(name, addresses)
        self.run(addresses, values, stream)
        return outs


def layout_key(args, extra):
    """A key for a call's arguments as a Plan depends on them: each array's library, type,
    device, shape and strides, each scalar's type (and for an int, whether int64 holds it), and
    `extra` (the call's keywords); None where an argument is of another kind."""
    torch, cupy = _torch(), _cupy()
    parts = [extra]
    for v in args:
        if torch is not None and isinstance(v, torch.Tensor):
            if not v.is_cuda or not raw_stream(torch):
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


def kept_plan(plans, key):
    return None if key is None else plans.get(key)


def keep_plan(plans, key, plan):
    if len(plans) >= _PLANS_MAX:
        plans.clear()
    plans[key] = plan

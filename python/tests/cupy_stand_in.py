"""A stand-in for cupy on machines without a GPU: arrays over numpy memory with what tally reads
of a cupy array (dtype, shape, strides, data.ptr, device, flags), a caching allocator's reuse of
memory, and the cuda namespace's device, stream and runtime calls. test_user_kernel_plans.py and
bench/user_kernels_overhead.py install it with the extension's compile and launch entry points
replaced."""

import types

import numpy as np


class _Memory:
    def __init__(self, a):
        self.ptr, self.device_id = a.ctypes.data, 0


class _Device:
    id = 0

    def __init__(self, index=0):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _Stream:
    ptr = 7  # a handle the launches must carry

    def synchronize(self):
        pass


class StandInArray:
    """What tally reads of a cupy array, over a numpy array (its addresses are real)."""

    def __init__(self, a):
        self.a = a

    dtype = property(lambda self: self.a.dtype)
    shape = property(lambda self: self.a.shape)
    strides = property(lambda self: self.a.strides)
    itemsize = property(lambda self: self.a.itemsize)
    size = property(lambda self: self.a.size)
    ndim = property(lambda self: self.a.ndim)
    data = property(lambda self: _Memory(self.a))
    device = property(lambda self: _Device())
    flags = property(lambda self: self.a.flags)

    def __getitem__(self, index):
        return StandInArray(self.a[index])


class Allocator:
    """Hands out the same memory to the n-th allocation of every call (as a caching allocator
    hands a freed block back), so that two calls' new outputs have the same addresses."""

    def __init__(self):
        self.blocks, self.next = [], 0

    def empty(self, shape, dtype):
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        if self.next == len(self.blocks):
            self.blocks.append({})
        blocks, key = self.blocks[self.next], (shape, np.dtype(dtype))
        if key not in blocks:
            blocks[key] = StandInArray(np.empty(shape, dtype))
        self.next += 1
        return blocks[key]

    def new_call(self):
        self.next = 0


def module(allocator):
    """A module to put in sys.modules["cupy"]."""
    cupy = types.ModuleType("cupy")
    cupy.ndarray = StandInArray
    cupy.empty = allocator.empty
    cupy.ascontiguousarray = lambda x: StandInArray(np.ascontiguousarray(x.a))
    cupy.cuda = types.SimpleNamespace(Device=_Device, get_current_stream=_Stream,
                                      runtime=types.SimpleNamespace(getDevice=lambda: 0))
    return cupy


def stub_runtime(setattr_, user_kernels, extension, launches):
    """Replaces, with setattr_(object, name, value), the extension's runtime entry points (a
    launch is appended to `launches` as (kernel, blocks, threads, argument bytes, stream)), the
    user kernels' check for a usable CUDA backend and their cache of device properties
    (`user_kernels`: the package tally._user_kernels)."""
    setattr_(user_kernels.bind, "cuda_usable", lambda: True)
    setattr_(user_kernels.launch, "_device_properties", {})
    setattr_(extension, "runtime_device", lambda: (0, 90, 132))
    setattr_(extension, "runtime_kernel", lambda source, name: hash((source, name)) & 0xFFFFFFFF)
    setattr_(extension, "runtime_launch", lambda kernel, blocks, threads, args, stream:
             launches.append((kernel, blocks, threads, [bytes(a) for a in args], stream)))

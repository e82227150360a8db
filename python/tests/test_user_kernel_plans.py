"""The plans of user-defined kernels (tally._user_kernels.launch.Plan), checked on the host: a call that
reuses the plan of an earlier call with arguments alike launches exactly what a full call with
the same arguments launches (kernel, blocks, threads, argument bytes, stream), for elementwise and
reduction kernels of several layouts, and binds nothing. cupy is stood in for (cupy_stand_in.py)
and the extension's compile and launch entry points by recorders, so this runs without a GPU;
test_user_kernels.py runs the kernels themselves on one."""

import sys

import numpy as np
import pytest

import cupy_stand_in
import tally
from tally import _tally, _user_kernels


_allocator = cupy_stand_in.Allocator()
FakeArray = cupy_stand_in.StandInArray


@pytest.fixture
def fake_cupy(monkeypatch):
    """cupy replaced by its stand-in and the extension's runtime entry points by recorders; yields
    the list the launches go to."""
    monkeypatch.setitem(sys.modules, "cupy", cupy_stand_in.module(_allocator))
    launches = []
    cupy_stand_in.stub_runtime(monkeypatch.setattr, _user_kernels, _tally, launches)
    return launches


def _data(rng, shape, dtype):
    return FakeArray((rng.random(shape) * 100).astype(dtype))


def _shifting(n, dtype):
    """A maker of two arrays of n elements, the first one's offset into its memory 1, 0, 1, ...
    elements at successive calls: its alignment changes while its layout key does not."""
    calls = [0]

    def make(rng):
        calls[0] += 1
        offset = calls[0] % 2
        return _data(rng, n + 1, dtype)[offset:offset + n], _data(rng, n, dtype)
    return make


ELEMENTWISE = [
    (("T x, T y", "T z", "z = x - y"), _shifting(4096, np.float32)),
    # (parameters in, out, operation), argument maker
    (("T x, T y", "T z", "z = (x - y) * (x - y)"), lambda r: (_data(r, 1000, np.float32), _data(r, 1000, np.float32))),
    (("T x, T y", "T z", "z = x + y"), lambda r: (_data(r, (37, 1), np.float64), _data(r, (1, 23), np.float64))),
    (("T x, T y", "T z", "z = x + y"), lambda r: (_data(r, (40, 30), np.float32)[::2, ::3], _data(r, 10, np.float32))),
    (("T x, float32 s", "T z", "z = x * s + i"), lambda r: (_data(r, 777, np.int32), 2.5)),
    (("T x, T s", "T z", "z = x * s"), lambda r: (_data(r, 500, np.float32), np.float32(3))),
    (("T x, raw T r", "T z", "z = x + r[0]"), lambda r: (_data(r, 100, np.float64), _data(r, 7, np.float64))),
    (("T x", "T z", "z += x"), lambda r: (_data(r, 333, np.float32),)),  # reads its output
    (("T x", "T z, T w", "z = x; w = 2 * x"), lambda r: (_data(r, 64, np.float16),)),
]


def _calls(kernel_of, make, rng, launches):
    """(launches of a reusing call, launches of a full call with the same arguments)."""
    first = kernel_of()
    first(*make(rng))  # the full call; its plan is kept
    again = make(rng)  # arguments alike: other addresses and values
    bindings = []
    original = _user_kernels.Bound.__init__

    def counting(self, *a, **kw):
        bindings.append(1)
        original(self, *a, **kw)

    del launches[:]
    _user_kernels.Bound.__init__ = counting
    _allocator.new_call()
    try:
        out_reused = first(*again)
    finally:
        _user_kernels.Bound.__init__ = original
    reused = list(launches)
    assert not bindings, "the second call bound its arguments instead of reusing the plan"
    del launches[:]
    _allocator.new_call()
    out_full = kernel_of()(*again)  # a new kernel object: no plan
    return reused, list(launches), out_reused, out_full


@pytest.mark.parametrize("case", range(len(ELEMENTWISE)))
def test_elementwise_plan_launches_what_the_full_call_launches(fake_cupy, rng, case):
    params, make = ELEMENTWISE[case]
    reused, full, out_reused, out_full = _calls(lambda: tally.ElementwiseKernel(*params, "k"), make, rng, fake_cupy)
    assert reused and reused == full
    outs_r = out_reused if isinstance(out_reused, tuple) else (out_reused,)
    outs_f = out_full if isinstance(out_full, tuple) else (out_full,)
    assert [o.a.ctypes.data for o in outs_r] == [o.a.ctypes.data for o in outs_f]
    # With every output given (other memory than the new ones'), a new key and again the same.
    given = [FakeArray(np.empty(o.shape, o.dtype)) for o in outs_f]
    reused, full, _, _ = _calls(lambda: tally.ElementwiseKernel(*params, "k"), _with_outputs(make, given), rng,
                                fake_cupy)
    assert reused and reused == full


def _with_outputs(make, outs):
    """make's arguments followed by the given output arrays (the same ones at every call)."""
    return lambda rng: tuple(make(rng)) + tuple(outs)


REDUCTIONS = [
    # (axis, keepdims, shape)
    (None, False, (5000,)),
    (None, False, (300000,)),  # split into partial reductions: scratch memory and a second kernel
    (1, False, (64, 3000)),
    (0, True, (64, 30)),
    ((0, 2), False, (6, 5, 4)),
]


@pytest.mark.parametrize("case", range(len(REDUCTIONS)))
@pytest.mark.parametrize("with_output", [False, True])
def test_reduction_plan_launches_what_the_full_call_launches(fake_cupy, rng, case, with_output):
    axis, keepdims, shape = REDUCTIONS[case]
    params = ("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    kernel_of = lambda: tally.ReductionKernel(*params)
    x = _data(rng, shape, np.float32)
    outs = ()
    if with_output:
        outs = (FakeArray(np.empty(kernel_of()(x, axis=axis, keepdims=keepdims).shape, np.float32)),)
    first = kernel_of()
    first(_data(rng, shape, np.float32), *outs, axis=axis, keepdims=keepdims)  # the full call keeps its plan
    reused, full = _both_ways(first, kernel_of, (x,) + outs, axis, keepdims, fake_cupy)
    assert len(reused) == (2 if case == 1 else 1)  # split: partial sums in scratch, then a second kernel
    assert reused == full


def _both_ways(first, kernel_of, args, axis, keepdims, launches):
    """The launches of `first` (which reuses its plan: it must bind nothing) and of a new kernel
    object's full call, on the same arguments."""
    result = []
    original = _user_kernels.Bound.__init__
    bindings = []

    def counting(self, *a, **kw):
        bindings.append(1)
        original(self, *a, **kw)

    for kernel in (first, kernel_of()):
        del launches[:]
        _allocator.new_call()
        if kernel is first:
            _user_kernels.Bound.__init__ = counting
        try:
            kernel(*args, axis=axis, keepdims=keepdims)
        finally:
            _user_kernels.Bound.__init__ = original
        result.append(list(launches))
    assert not bindings, "the second call bound its arguments instead of reusing the plan"
    return result


def test_a_plan_is_not_reused_for_other_layouts_or_overlaps(fake_cupy, rng):
    """Arguments of another type, shape or stride take the full call; an output given over part
    of an input is refused by the reusing call as by the full one."""
    k = tally.ElementwiseKernel("T x", "T z", "z = x", "copy")
    a = _data(rng, 100, np.float32)
    k(a)
    assert len(k._plans) == 1
    k(_data(rng, 101, np.float32))
    k(_data(rng, 100, np.float64))
    k(_data(rng, 200, np.float32)[::2])
    assert len(k._plans) == 4
    base = _data(rng, 200, np.float32)
    k(base[:100], _data(rng, 100, np.float32))
    with pytest.raises(ValueError, match="overlap"):
        k(base[:100], base[50:150])

"""The parallel patterns against numpy and float64 references, within the bounds of docs/patterns.md; the
torch/cupy CUDA cases (against the same references on host copies) skip where no GPU is present."""

import doctest
import inspect
import io
import math

import numpy as np
import pytest

import tally
from test_docstrings import _sections
from test_gpu import host

SHAPES = [(0,), (1,), (7,), (1031,), (3, 5), (2, 0), (4, 33, 9)]
EPS32 = 2.0 ** -24


def _ulp32(r):
    a = np.abs(r)
    e = np.frexp(np.maximum(a, 2.0 ** -126))[1]
    return np.ldexp(1.0, e - 24)


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


_ERFC = np.frompyfunc(math.erfc, 1, 1)
C = 2 * math.sqrt(2 / math.pi)

# name, call, f64 reference, bound in f32 ulps, error from rounding the inner argument.
ACTIVATIONS = [
    ("sigmoid", tally.sigmoid, _sigmoid, 1.5, None),
    ("relu", tally.relu, lambda x: np.maximum(x, 0), 0, None),
    ("silu", tally.silu, lambda x: x * _sigmoid(x), 2, None),
    ("tanh", tally.tanh, np.tanh, 3, None),
    ("gelu_tanh", lambda x, **kw: tally.gelu(x, approximate="tanh", **kw),
     lambda x: x * _sigmoid(C * (x + 0.044715 * x**3)), 4,
     lambda x: np.abs(x * _sigmoid(C * (x + 0.044715 * x**3)) * (1 - _sigmoid(C * (x + 0.044715 * x**3)))
                      * C * (x + 0.044715 * x**3)) * 4 * EPS32),
    ("gelu_erf", tally.gelu, lambda x: 0.5 * x * _ERFC(-x / math.sqrt(2)).astype(np.float64), 6,
     lambda x: np.abs(x / math.sqrt(math.pi) * np.exp(-x * x / 2) * x / math.sqrt(2)) * 4 * EPS32),
]


def _round(values, dtype):
    """float64 values rounded to a tally type ('bf16' through torch)."""
    if dtype == "bf16":
        import torch as t
        return t.from_numpy(np.asarray(values, np.float64)).to(t.bfloat16).double().numpy()
    return np.asarray(values, np.float64).astype(dtype).astype(np.float64)


def check_activation(case, x, got, dtype):
    """f32 within the bound; f16/bf16 the correct rounding of an f32 value within it."""
    _, _, exact, ulps, argument = case
    x = np.asarray(x, np.float64)
    want = exact(x)
    tol = ulps * _ulp32(want) + (argument(x) if argument else 0)
    got = np.asarray(got, np.float64)
    assert got.shape == x.shape
    if dtype == np.float32:
        assert np.all(np.abs(got - want) <= tol), np.max(np.abs(got - want) / _ulp32(want))
    else:
        assert np.all((_round(want - tol, dtype) <= got) & (got <= _round(want + tol, dtype)))


def values(rng, shape, dtype, width=8.0):
    return rng.uniform(-width, width, shape).astype(dtype)


@pytest.mark.parametrize("case", ACTIVATIONS, ids=[c[0] for c in ACTIVATIONS])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape", SHAPES)
def test_activations(rng, case, dtype, shape):
    x = values(rng, shape, dtype)
    y = case[1](x)
    assert isinstance(y, np.ndarray) and y.dtype == dtype
    check_activation(case, x, y, dtype)


def test_activation_views_and_out(rng):
    x = values(rng, (40, 30), np.float32)
    view = x[::3, 1::2]  # not contiguous: copied once
    check_activation(ACTIVATIONS[0], view, tally.sigmoid(view), np.float32)
    out = np.empty_like(x)
    assert tally.silu(x, out=out) is out
    check_activation(ACTIVATIONS[2], x, out, np.float32)
    want = tally.tanh(x)
    assert tally.tanh(x, out=x) is x  # in place
    np.testing.assert_array_equal(x, want)
    s = np.float32(0.5)  # a scalar: a 0-d array, as numpy
    assert tally.relu(s).shape == () and tally.add(s, s).shape == ()


BINARY = [(tally.add, np.add), (tally.sub, np.subtract), (tally.mul, np.multiply), (tally.div, np.divide)]
BROADCASTS = [((0,), (0,)), ((1,), (1,)), ((7,), (7,)), ((5, 3), (3,)), ((4, 1), (1, 6)), ((), (3, 2)),
              ((2, 1, 5), (3, 1)), ((1031,), ())]


@pytest.mark.parametrize("ops", BINARY, ids=["add", "sub", "mul", "div"])
@pytest.mark.parametrize("shapes", BROADCASTS)
@pytest.mark.parametrize("types", [(np.float32, np.float32), (np.float16, np.float16), (np.float16, np.float32)])
def test_binary_equals_numpy(rng, ops, shapes, types):
    a = values(rng, shapes[0], types[0])
    b = values(rng, shapes[1], types[1])
    got = ops[0](a, b)
    want = ops[1](a, b)
    assert isinstance(got, np.ndarray) and got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # correctly rounded, as numpy


def test_binary_strided_views(rng):
    a = values(rng, (9, 12), np.float32)
    b = values(rng, (12, 9), np.float32)
    for x, y in [(a[::2, ::3], b[:10:2, ::-3][:, :1]), (a.T, b), (a[:, ::-1], np.broadcast_to(b[0, :1], (9, 12)))]:
        np.testing.assert_array_equal(tally.mul(x, y), x * y)


def check_sum(got, x, n_axis, mean=False):
    x64 = np.asarray(x, np.float64)
    axis = None if got.ndim == 0 else -1
    want = x64.sum(axis=axis)
    bound = (n_axis + 1) * EPS32 * np.abs(x64).sum(axis=axis)
    if mean:
        want, bound = want / n_axis, bound / n_axis + EPS32 * np.abs(want / n_axis)
    if x.dtype == np.float16:  # the float32 accumulation rounded once to float16
        bound = bound + np.abs(want) * 2.0 ** -11
    assert np.all(np.abs(np.asarray(got, np.float64) - want) <= bound)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("shape", [(1,), (7,), (1031,), (3, 5), (17, 1000), (2, 0), (4, 3, 9)])
@pytest.mark.parametrize("axis", [None, -1])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's mean of an empty slice
def test_reductions(rng, dtype, shape, axis):
    x = values(rng, shape, dtype, 3.0)
    for op, ref in [(tally.sum, np.sum), (tally.mean, np.mean), (tally.min, np.min), (tally.max, np.max)]:
        if ref in (np.min, np.max) and 0 in shape:
            continue  # an error, tested below
        got = op(x, axis=axis)
        want = ref(x, axis=axis)
        assert type(got) is type(want) and got.dtype == want.dtype and np.shape(got) == np.shape(want)
        if op in (tally.min, tally.max):
            np.testing.assert_array_equal(got, want)
        elif shape[-1] > 0:
            check_sum(got, x, x.size if axis is None else shape[-1], op is tally.mean)
    x = values(rng, (6, 8), dtype)[:, ::2]  # not contiguous: copied once
    np.testing.assert_array_equal(tally.max(x, axis=1), x.max(axis=1))


def test_reduction_special_values():
    assert tally.sum(np.zeros(0, np.float32)) == 0 and np.isnan(tally.mean(np.zeros(0, np.float32)))
    x = np.array([1, np.nan, -2], np.float32)
    assert np.isnan(tally.min(x)) and np.isnan(tally.max(x))
    assert tally.min(np.array([3, -1, 2], np.float32)) == np.float32(-1)


INTEGER_TYPES = [np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.uint64, np.int64]


def integers(rng, shape, dtype):
    """Integers over dtype's whole range, its two limits included."""
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    x.flat[0], x.flat[-1] = info.min, info.max
    return x


@pytest.mark.parametrize("dtype", INTEGER_TYPES)
def test_integer_extremes(rng, dtype):
    """min and max of integers: numpy's values, in the input's type, whole and along rows."""
    x = integers(rng, (5, 1031), dtype)
    for op, ref in [(tally.min, np.min), (tally.max, np.max)]:
        for axis in (None, -1):
            got, want = op(x, axis=axis), ref(x, axis=axis)
            assert type(got) is type(want) and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
    one = np.full(3, np.iinfo(dtype).max, dtype)  # the fold starts from the other limit
    assert tally.min(one) == one[0] and tally.max(one[:1] * 0) == 0


@pytest.mark.parametrize("mnk", [(0, 3, 4), (1, 1, 1), (5, 7, 0), (17, 33, 65), (130, 129, 31)])
def test_matmul(rng, mnk):
    m, n, k = mnk
    a = values(rng, (m, k), np.float32, 1.0)
    b = values(rng, (k, n), np.float32, 1.0)
    c = tally.matmul(a, b)
    assert isinstance(c, np.ndarray) and c.dtype == np.float32 and c.shape == (m, n)
    want = a.astype(np.float64) @ b.astype(np.float64)
    bound = (k + 1) * EPS32 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    assert np.all(np.abs(c - want) <= bound)
    np.testing.assert_array_equal(tally.matmul(a.T.copy().T, b), c)


@pytest.mark.parametrize("call", [
    lambda: tally.sigmoid(np.ones(3)), lambda: tally.relu(np.ones(3, np.int32)), lambda: tally.gelu([1.0]),
    lambda: tally.add(np.ones(3, np.float32), np.ones(3)), lambda: tally.sum(np.ones(3, np.int64)),
    lambda: tally.matmul(np.ones((2, 2), np.float16), np.ones((2, 2), np.float16)),
    lambda: tally.silu(np.ones(3, np.float32), out=np.ones(3, np.float16)),
    lambda: tally.min(np.ones(3)), lambda: tally.max(np.ones(3, bool)),  # float64, bool: no extreme kernel
])
def test_type_errors(call):
    with pytest.raises(TypeError):
        call()


@pytest.mark.parametrize("call", [
    lambda: tally.add(np.ones(3, np.float32), np.ones(4, np.float32)),
    lambda: tally.div(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)),
    lambda: tally.matmul(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32)),
    lambda: tally.matmul(np.ones(3, np.float32), np.ones(3, np.float32)),
    lambda: tally.min(np.zeros(0, np.float32)), lambda: tally.max(np.zeros((2, 0), np.float32), axis=1),
    lambda: tally.sum(np.ones((2, 3), np.float32), axis=0), lambda: tally.mean(np.float32(1), axis=-1),
    lambda: tally.gelu(np.ones(3, np.float32), approximate="fast"),
    lambda: tally.relu(np.ones(3, np.float32), out=np.ones(4, np.float32)),
    lambda: tally.relu(np.ones(4, np.float32), out=np.ones(8, np.float32)[::2]),
    lambda: tally.add(np.ones((3,) * 9, np.float32), np.ones(1, np.float32)),
])
def test_value_errors(call):
    with pytest.raises(ValueError):
        call()


# ---- CUDA: torch and cupy on the current stream, results in kind, against host references ----

def _on_gpu(lib, x):
    return lib.from_numpy(x).cuda() if hasattr(lib, "from_numpy") else lib.asarray(x)


@pytest.mark.parametrize("lib_name", ["torch", "cupy"])
def test_cuda_patterns(request, rng, lib_name):
    lib = request.getfixturevalue(lib_name)
    x = values(rng, (33, 1031), np.float32)
    g = _on_gpu(lib, x)
    for case in ACTIVATIONS:
        y = case[1](g)
        assert type(y) is type(g) and y.device == g.device and y.dtype == g.dtype
        check_activation(case, x, host(y), np.float32)
    b = values(rng, (33, 1), np.float16)
    for ops in BINARY:
        got = ops[0](g, _on_gpu(lib, b))
        assert type(got) is type(g) and got.device == g.device
        np.testing.assert_array_equal(host(got), ops[1](x, b))
    for op, ref in [(tally.min, np.min), (tally.max, np.max)]:
        np.testing.assert_array_equal(host(op(g)), ref(x))
        np.testing.assert_array_equal(host(op(g, axis=-1)), ref(x, axis=-1))
    for axis in (None, -1):
        check_sum(host(tally.sum(g, axis=axis)), x, x.size if axis is None else x.shape[1])
        check_sum(host(tally.mean(g, axis=axis)), x, x.size if axis is None else x.shape[1], mean=True)
    a, m = values(rng, (130, 70), np.float32, 1.0), values(rng, (70, 129), np.float32, 1.0)
    c = host(tally.matmul(_on_gpu(lib, a), _on_gpu(lib, m)))
    bound = 71 * EPS32 * (np.abs(a).astype(np.float64) @ np.abs(m).astype(np.float64))
    assert np.all(np.abs(c - a.astype(np.float64) @ m.astype(np.float64)) <= bound)


@pytest.mark.parametrize("lib_name", ["torch", "cupy"])
def test_cuda_activations_into_out_in_place_and_views(request, rng, lib_name):
    """Activations of CUDA arrays (contiguous ones go to the extension by address) into a given
    output, in place, of a strided view (copied once) and of a view offset by one element."""
    lib = request.getfixturevalue(lib_name)
    x = values(rng, (40, 30), np.float32)
    g = _on_gpu(lib, x)
    out = _on_gpu(lib, np.zeros_like(x))
    assert tally.silu(g, out=out) is out
    check_activation(ACTIVATIONS[2], x, host(out), np.float32)
    check_activation(ACTIVATIONS[0], x[::3, 1::2], host(tally.sigmoid(g[::3, 1::2])), np.float32)
    check_activation(ACTIVATIONS[0], x.ravel()[1:], host(tally.sigmoid(g.reshape(-1)[1:])), np.float32)
    want = host(tally.tanh(g))
    assert tally.tanh(g, out=g) is g
    np.testing.assert_array_equal(host(g), want)


@pytest.mark.parametrize("lib_name", ["torch", "cupy"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_cuda_reductions_by_address_equal_the_full_path(request, rng, lib_name, dtype):
    """Reductions of contiguous CUDA arrays (by address) give the full path's bits (the same
    values as a strided view, copied once to aligned memory, then reduced by the full path), of
    the input's type and shape; an offset view's results within numpy's; errors as the full
    path's."""
    lib = request.getfixturevalue(lib_name)
    x = values(rng, (37, 515), dtype)
    g = _on_gpu(lib, x)
    wide = _on_gpu(lib, np.stack([x, -x], axis=-1))  # x is wide[..., 0]: a strided view
    strided = wide[..., 0]
    for op in (tally.sum, tally.mean, tally.min, tally.max):
        for axis in (None, -1, 1):
            got, full = op(g, axis=axis), op(strided, axis=axis)
            assert type(got) is type(g) and got.dtype == g.dtype and tuple(got.shape) == tuple(full.shape)
            np.testing.assert_array_equal(host(got), host(full))
    # Contiguous and offset by one element (the fold's order depends on the address's alignment,
    # so against numpy: min and max exactly, sums within their bounds).
    offset, rest = g.reshape(-1)[1:], x.reshape(-1)[1:]
    np.testing.assert_array_equal(host(tally.min(offset)), rest.min())
    np.testing.assert_array_equal(host(tally.max(offset)), rest.max())
    check_sum(host(tally.sum(offset)), rest, rest.size)
    check_sum(host(tally.mean(offset)), rest, rest.size, mean=True)
    check_sum(host(tally.sum(g)), x, x.size)
    check_sum(host(tally.mean(g, axis=-1)), x, x.shape[1], mean=True)
    with pytest.raises(ValueError):
        tally.min(g[:0])
    with pytest.raises(ValueError):
        tally.sum(g, axis=0)
    assert float(host(tally.sum(g[:0]))) == 0.0


@pytest.mark.parametrize("lib_name", ["torch", "cupy"])
def test_cuda_integer_extremes(request, rng, lib_name):
    """min and max of integer CUDA arrays, by address and strided, equal numpy's."""
    lib = request.getfixturevalue(lib_name)
    types = [np.uint8, np.int16, np.int32, np.int64] + ([np.uint16, np.uint32, np.uint64] if lib_name == "cupy" else [])
    for dtype in types:
        x = integers(rng, (9, 2049), dtype)
        g = _on_gpu(lib, x)
        for op, ref in [(tally.min, np.min), (tally.max, np.max)]:
            got = op(g)
            assert type(got) is type(g) and tuple(got.shape) == ()
            np.testing.assert_array_equal(host(got), ref(x))
            np.testing.assert_array_equal(host(op(g, axis=-1)), ref(x, axis=-1))
            np.testing.assert_array_equal(host(op(g[:, 1::2])), ref(x[:, 1::2]))


def test_patterns_submodule_and_top_level_names():
    import tally.patterns
    assert sorted(tally.patterns.__all__) == ["ElementwiseKernel", "RawKernel", "RawModule", "ReductionKernel", "add",
                                              "div", "gelu", "matmul", "max", "mean", "min", "mul", "relu",
                                              "sigmoid", "silu", "sub", "sum", "tanh"]
    for name in tally.patterns.__all__:
        assert getattr(tally, name) is getattr(tally.patterns, name) and name in tally.__all__


def test_torch_activation_of_a_channels_last_tensor_is_c_contiguous(torch, rng):  # noqa: F811 (fixture)
    """A tensor both contiguous and channels_last (one channel) gets a C-contiguous result, as
    the full path's new array is."""
    x = values(rng, (2, 1, 3, 3), np.float32)
    g = torch.from_numpy(x).cuda().to(memory_format=torch.channels_last)
    assert g.is_contiguous() and g.stride() != (9, 9, 3, 1)
    y = tally.sigmoid(g)
    assert y.stride() == (9, 9, 3, 1)
    check_activation(ACTIVATIONS[0], x, host(y), np.float32)


def test_torch_bfloat16_and_stream(torch, rng):  # noqa: F811 (fixture)
    x = values(rng, (4097,), np.float32)
    g = torch.from_numpy(x).cuda().to(torch.bfloat16)
    xb = g.float().cpu().numpy()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        y = tally.sigmoid(g)
        s = tally.add(g, g[:1])
    stream.synchronize()
    assert y.dtype == torch.bfloat16 and s.dtype == torch.bfloat16
    check_activation(ACTIVATIONS[0], xb, y.float().cpu().numpy(), "bf16")
    np.testing.assert_array_equal(s.float().cpu().numpy(), _round(xb.astype(np.float64) + xb[0], "bf16"))
    with pytest.raises(ValueError):
        tally.add(g, torch.from_numpy(xb))  # different devices


# ---- scalars beside arrays ----

PYTHON_SCALARS = [2.0, 0.1, -3, True, 1e-3, 7, -0.0, 1e30]


@pytest.mark.parametrize("ops", BINARY, ids=["add", "sub", "mul", "div"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_python_scalars_take_the_arrays_type(rng, ops, dtype):
    """A Python scalar on either side has the array's type, as numpy 2's Python scalars (a float16
    array and 1e30: infinity, with numpy's overflow warning)."""
    x = values(rng, (5, 33), dtype)
    for s in PYTHON_SCALARS:
        with np.errstate(divide="ignore", over="ignore"):
            cases = [(ops[0](x, s), ops[1](x, s)), (ops[0](s, x), ops[1](s, x))]
        for got, want in cases:
            assert isinstance(got, np.ndarray) and got.dtype == want.dtype == dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    with pytest.warns(RuntimeWarning, match="overflow"):
        tally.add(np.ones(3, np.float16), 1e6)


def test_numpy_scalars_and_0d_arrays_keep_their_type(rng):
    x = values(rng, (40,), np.float16)
    for s in (np.float32(0.1), np.array(-2.5, np.float32), np.float16(3), np.array(0.1, np.float16)):
        for got, want in [(tally.mul(x, s), x * s), (tally.sub(s, x), s - x), (tally.div(s, x), s / x)]:
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError, match="float64"):
        tally.add(x, np.float64(2))  # numpy's result is float64, which the patterns do not take
    with pytest.raises(TypeError, match="int32"):
        tally.add(x, np.int32(2))
    with pytest.raises(TypeError, match="at least one array, got the Python scalars 2.0 and 3"):
        tally.add(2.0, 3)
    with pytest.raises(TypeError, match="complex128"):
        tally.add(x, 1j)
    with pytest.raises(OverflowError):
        tally.mul(x, 10**400)


@pytest.mark.parametrize("lib_name", ["torch", "cupy"])
def test_cuda_scalars_beside_arrays(request, rng, lib_name):
    """Python scalars (the array's type), numpy scalars and host 0-d arrays (their own type,
    copied to the device) beside CUDA arrays: results in kind, equal to numpy's."""
    lib = request.getfixturevalue(lib_name)
    x, y = values(rng, (33, 257), np.float32), values(rng, (257,), np.float32)
    g = _on_gpu(lib, x)
    for ops in BINARY:
        for s in (2.0, -3, True, 0.1):
            for got, want in [(ops[0](g, s), ops[1](x, s)), (ops[0](s, g), ops[1](s, x))]:
                assert type(got) is type(g) and got.device == g.device and got.dtype == g.dtype
                np.testing.assert_array_equal(host(got), want)
    eps = 1e-3
    np.testing.assert_array_equal(host(tally.div(g, tally.add(_on_gpu(lib, y), eps))), x / (y + np.float32(eps)))
    h = _on_gpu(lib, x.astype(np.float16))
    for s in (np.float32(0.1), np.array(-2.5, np.float32), np.float16(3), np.array(0.5, np.float16)):
        for got, want in [(tally.mul(h, s), x.astype(np.float16) * s), (tally.sub(s, h), s - x.astype(np.float16))]:
            assert type(got) is type(g) and str(got.dtype).endswith(want.dtype.name)
            np.testing.assert_array_equal(host(got), want)
    with pytest.raises(TypeError, match="float64"):
        tally.add(g, np.float64(1))
    with pytest.raises(ValueError):
        tally.add(g, np.ones(1, np.float32))  # not 0-d: host memory beside device memory


def test_torch_bfloat16_with_python_scalars(torch, rng):  # noqa: F811 (fixture)
    """A Python scalar beside a bfloat16 tensor is rounded to bfloat16 first (numpy's rule; torch
    keeps it in float32), then the operation is rounded once."""
    g = torch.from_numpy(values(rng, (4097,), np.float32)).cuda().to(torch.bfloat16)
    xb = g.float().cpu().numpy().astype(np.float64)
    for s in (0.1, -3, 2.5):
        sb = float(torch.tensor(s, dtype=torch.float32).to(torch.bfloat16))
        got = tally.add(g, s)
        assert got.dtype == torch.bfloat16
        np.testing.assert_array_equal(got.float().cpu().numpy(), _round(xb + sb, "bf16"))
        np.testing.assert_array_equal(tally.mul(s, g).float().cpu().numpy(), _round(xb * sb, "bf16"))


# ---- strategies ----

UNARY = [case[1] for case in ACTIVATIONS]
UNARY_IDS = [case[0] for case in ACTIVATIONS]


def test_strategy_names_are_the_planners():
    assert tally.patterns.UNARY_STRATEGIES == ("automatic", "scalar", "x2", "x4", "x8", "packed128",
                                               "packed128_resident")
    assert tally.patterns.MATMUL_STRATEGIES == ("automatic", "tiled16", "blocked128", "warptiled")


@pytest.mark.parametrize("activation", UNARY, ids=UNARY_IDS)
def test_activation_strategies_on_the_cpu(rng, activation):
    """'automatic' gives the default's bits on the CPU backend; the CUDA strategies are refused
    there, and unknown names everywhere, naming the planner's strategies."""
    x = values(rng, (1031,), np.float32)
    np.testing.assert_array_equal(activation(x, strategy="automatic"), activation(x))
    for name in tally.patterns.UNARY_STRATEGIES[1:]:
        with pytest.raises(ValueError, match=f"strategy {name} is a CUDA strategy"):
            activation(x, strategy=name)
    expected = "expected one of 'automatic', 'scalar', 'x2', 'x4', 'x8', 'packed128', 'packed128_resident'"
    with pytest.raises(ValueError, match=f"unknown strategy 'fast'; {expected}"):
        activation(x, strategy="fast")
    with pytest.raises(TypeError, match="strategy must be a str"):
        activation(x, strategy=None)


def test_matmul_strategies_on_the_cpu(rng):
    a, b = values(rng, (17, 33), np.float32, 1.0), values(rng, (33, 9), np.float32, 1.0)
    np.testing.assert_array_equal(tally.matmul(a, b, strategy="automatic"), tally.matmul(a, b))
    for name in tally.patterns.MATMUL_STRATEGIES[1:]:
        with pytest.raises(ValueError, match=f"strategy {name} is a CUDA strategy"):
            tally.matmul(a, b, strategy=name)
    with pytest.raises(ValueError, match="unknown strategy 'cublas'; expected one of 'automatic', 'tiled16', "
                                         "'blocked128', 'warptiled'"):
        tally.matmul(a, b, strategy="cublas")


@pytest.mark.parametrize("lib_name", ["torch", "cupy"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_cuda_activation_strategies_give_the_default_bits(request, rng, lib_name, dtype):
    """Every map strategy gives the default's bits, aligned or not, by address or into out=, for
    sizes below one vector up to several blocks of them; the default within its bound."""
    lib = request.getfixturevalue(lib_name)
    for n in (1, 7, 4099, (1 << 20) + 5):
        x = values(rng, (n + 1,), dtype)
        g = _on_gpu(lib, x)
        for view, xs in [(g[:n], x[:n]), (g[1:], x[1:])]:  # 16-byte aligned, then one element past
            for case in ACTIVATIONS:
                want = host(case[1](view))
                check_activation(case, xs, want, dtype)
                for name in tally.patterns.UNARY_STRATEGIES:
                    np.testing.assert_array_equal(host(case[1](view, strategy=name)), want)
                out = _on_gpu(lib, np.zeros(n, dtype))
                assert case[1](view, out=out, strategy="x4") is out
                np.testing.assert_array_equal(host(out), want)


def test_torch_bfloat16_activation_strategies(torch, rng):  # noqa: F811 (fixture)
    g = torch.from_numpy(values(rng, (70001,), np.float32)).cuda().to(torch.bfloat16)
    for activation in UNARY:
        want = activation(g).float().cpu().numpy()
        for name in tally.patterns.UNARY_STRATEGIES:
            np.testing.assert_array_equal(activation(g[1:], strategy=name).float().cpu().numpy(),
                                          activation(g[1:]).float().cpu().numpy())
            np.testing.assert_array_equal(activation(g, strategy=name).float().cpu().numpy(), want)


@pytest.mark.parametrize("lib_name", ["torch", "cupy"])
def test_cuda_matmul_strategies_give_the_default_bits(request, rng, lib_name):
    """Every kernel sums each output's products in order with fused multiply-adds: the default's
    bits, within the float32 bound of the float64 product."""
    lib = request.getfixturevalue(lib_name)
    for m, n, k in [(1, 1, 1), (130, 129, 31), (257, 300, 513)]:
        a, b = values(rng, (m, k), np.float32, 1.0), values(rng, (k, n), np.float32, 1.0)
        ga, gb = _on_gpu(lib, a), _on_gpu(lib, b)
        want = host(tally.matmul(ga, gb))
        bound = (k + 1) * EPS32 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
        assert np.all(np.abs(want - a.astype(np.float64) @ b.astype(np.float64)) <= bound)
        for name in tally.patterns.MATMUL_STRATEGIES:
            got = tally.matmul(ga, gb, strategy=name)
            assert type(got) is type(ga)
            np.testing.assert_array_equal(host(got), want)


# ---- docstrings ----

DOCUMENTED = [tally.sigmoid, tally.relu, tally.silu, tally.tanh, tally.gelu, tally.add, tally.sub, tally.mul,
              tally.div, tally.matmul]


@pytest.mark.parametrize("member", DOCUMENTED, ids=lambda m: m.__name__)
def test_numpydoc_sections(member):
    """The functions with strategies and scalars have numpydoc sections, as test_docstrings.py
    asks of the package's top level."""
    sections = _sections(member.__doc__)
    assert {"Parameters", "Returns", "Examples"} <= sections, sections
    lines = inspect.cleandoc(member.__doc__).splitlines()
    assert lines[0].strip() and not lines[1].strip() and max(4 + len(line) for line in lines) <= 100


def test_doctests():
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    out = io.StringIO()
    for test in finder.find(tally.patterns, "tally.patterns", globs={}):
        runner.run(test, out=out.write)
    failed, attempted = runner.summarize(verbose=False)
    assert attempted >= len(DOCUMENTED) and failed == 0, out.getvalue()

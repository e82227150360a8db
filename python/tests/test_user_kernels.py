"""User-defined kernels (tally.ElementwiseKernel, tally.ReductionKernel): argument parsing,
errors, the numpy fallback of Python callables, the generated source (compiled with NVRTC where
the build has it; no GPU needed) and its cache run everywhere. The CUDA cases against numpy on
fresh random data run on torch/cupy CUDA arrays and skip where no GPU is present."""

import numpy as np
import pytest

import tally
from tally import _tally
from tally._user_kernels import merge_dims, reads_before_writing
from test_gpu import host

SQUARED_DIFF = ("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")


def _nvrtc():
    if not _tally.runtime_kernels_compiled():
        pytest.skip("this build of tally has no CUDA backend (NVRTC)")


def _f32(rng, shape):
    return rng.uniform(-3, 3, shape).astype(np.float32)


# ---- parsing and errors (no device) ----

@pytest.mark.parametrize("params, error, match", [
    ("T", ValueError, "cannot parse"),
    ("raw raw T x", ValueError, "cannot parse"),
    ("T i", ValueError, "reserved"),
    ("T _x", ValueError, "reserved"),
    ("float x", ValueError, "neither a type name"),
    ("complex64 x", TypeError, "complex"),
    ("T x, T x", ValueError, "appears twice"),
    ("T T", ValueError, "both a parameter and a type placeholder"),
    ("T 1x", ValueError, "not a parameter name"),
])
def test_bad_parameters(params, error, match):
    with pytest.raises(error, match=match):
        tally.ElementwiseKernel(params, "T z", "z = 1", "k")


def test_bad_kernel_arguments():
    with pytest.raises(ValueError, match="C identifier"):
        tally.ElementwiseKernel("T x", "T z", "z = x", "my-kernel")
    with pytest.raises(ValueError, match="at least one output"):
        tally.ElementwiseKernel("T x", "", "z = x", "k")
    with pytest.raises(TypeError, match="loop_prep"):
        tally.ElementwiseKernel("T x", "T z", "z = x", "k", loop_prep="int a;")
    with pytest.raises(TypeError, match="C source"):
        tally.ElementwiseKernel("T x", "T z", 3, "k")
    with pytest.raises(TypeError, match="raw parameters"):
        tally.ReductionKernel("raw T x", "T y", "x", "a + b", "y = a", "0", "r")
    with pytest.raises(TypeError, match="options"):
        tally.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "r", options=("-G",))
    with pytest.raises(TypeError, match="identity"):
        tally.ReductionKernel("T x", "T y", "x", "a + b", "y = a", None, "r")
    with pytest.raises(TypeError, match="numpy ufunc"):
        tally.ReductionKernel("T x", "T y", lambda x: x, "a + b", None, 0, "r")


def test_c_source_refuses_host_arrays():
    k = tally.ElementwiseKernel(*SQUARED_DIFF)
    with pytest.raises(TypeError, match="runs on CUDA arrays.*Python callable"):
        k(np.ones(3, np.float32), np.ones(3, np.float32))
    r = tally.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "total")
    with pytest.raises(TypeError, match="runs on CUDA arrays"):
        r(np.ones(3, np.float32))


def test_type_binding_errors():
    k = tally.ElementwiseKernel(*SQUARED_DIFF)
    with pytest.raises(TypeError, match="placeholder T is float32 from x but y is float64"):
        k.source(np.ones(3, np.float32), np.ones(3))
    with pytest.raises(TypeError, match="takes 2 inputs"):
        k.source(np.ones(3, np.float32))
    free = tally.ElementwiseKernel("T x", "U z", "z = x", "free")
    with pytest.raises(TypeError, match="cannot tell the type U of the output z"):
        free.source(np.ones(3, np.float32))
    fixed = tally.ElementwiseKernel("int32 x", "float32 z", "z = x", "fixed")
    with pytest.raises(TypeError, match="does not convert"):
        fixed.source(np.ones(3, np.float32))
    with pytest.raises(TypeError, match="output z is float32 but the array given is float64"):
        fixed.source(np.ones(3, np.int16), np.ones(3))
    with pytest.raises(TypeError, match="takes an array"):
        fixed.source(np.ones(3, np.int32), 2.0)


def test_axis_errors():
    r = tally.ReductionKernel("T x", "T y", lambda x: x, np.add, None, 0, "total")
    a = np.ones((2, 3))
    with pytest.raises(ValueError, match="out of bounds"):
        r(a, axis=2)
    with pytest.raises(ValueError, match="repeats"):
        r(a, axis=(0, -2))
    with pytest.raises(TypeError, match="axis must be"):
        r(a, axis=1.0)
    with pytest.raises(ValueError, match=r"has shape \(2,\), expected \(3,\)"):
        r(a, np.empty(2), axis=0)


# ---- the numpy fallback (Python callables) ----

def test_callable_elementwise_broadcast_mixed_types(rng):
    k = tally.ElementwiseKernel("T x, int32 y, float64 s", "T z, float64 w",
                                lambda x, y, s: (x * y + s, x - s), "mixed")
    x, y = _f32(rng, (4, 1, 5)), rng.integers(-9, 9, (3, 5)).astype(np.int32)
    z, w = k(x, y, 0.25)
    assert z.dtype == np.float32 and w.dtype == np.float64 and z.shape == (4, 3, 5)
    np.testing.assert_array_equal(z, (x * y + np.float64(0.25)).astype(np.float32))
    np.testing.assert_array_equal(w, np.broadcast_to(x.astype(np.float64) - 0.25, (4, 3, 5)))


def test_callable_elementwise_in_place(rng):
    k = tally.ElementwiseKernel("T x, T y", "T z", lambda x, y: x * 2 + y, "twice")
    x, y = _f32(rng, 50), _f32(rng, 50)
    want = x * 2 + y
    assert k(x, y, x) is x
    np.testing.assert_array_equal(x, want)


def test_callable_reduction(rng):
    r = tally.ReductionKernel("T x", "T y", lambda x: x * x, np.add, np.sqrt, 0, "l2norm")
    x = rng.uniform(-1, 1, (6, 7, 8))
    np.testing.assert_allclose(r(x, axis=1), np.sqrt((x * x).sum(axis=1)), rtol=1e-12)
    np.testing.assert_allclose(r(x, axis=(0, 2), keepdims=True),
                               np.sqrt((x * x).sum(axis=(0, 2), keepdims=True)), rtol=1e-12)
    biggest = tally.ReductionKernel("T x", "T y", lambda x: x, np.maximum, None, -np.inf, "biggest")
    assert biggest(x) == x.max()
    assert biggest(np.empty((0, 3)), axis=0).tolist() == [-np.inf] * 3


# ---- the generated source and its cache ----

def test_reads_before_writing():
    assert not reads_before_writing("z = x + y", "z")
    assert not reads_before_writing("T d = x - y; z = d * d; z += 1", "z")
    assert reads_before_writing("z += x", "z")
    assert reads_before_writing("if (x > 0) z = x", "z")
    assert reads_before_writing("{ z = x; }", "z")
    assert reads_before_writing("if (x < 0) return; z = x", "z")
    assert reads_before_writing("z == x ? 1 : 0", "z")
    assert not reads_before_writing("// z += 1\nz = x", "z")
    assert not reads_before_writing("w = x", "z")


def test_merge_dims():
    # C-contiguous (2, 3, 4) with a (3, 4) operand broadcast along the first dimension.
    shape, strides = merge_dims([2, 3, 4], [[12, 4, 1], [0, 4, 1]])
    assert shape == [2, 12] and strides == [[12, 1], [0, 1]]
    assert merge_dims([2, 1, 4], [[4, 4, 1]]) == ([8], [[1]])
    assert merge_dims([1, 1], [[5, 1]]) == ([1], [[0]])
    assert merge_dims([3, 4], [[1, 3]]) == ([3, 4], [[1, 3]])  # transposed: no merge


def test_source_cache_and_types():
    k = tally.ElementwiseKernel(*SQUARED_DIFF)
    a32, b32 = np.ones(3, np.float32), np.zeros((2, 3), np.float32)
    first = k.source(a32, a32)
    assert k.source(b32, b32) is first  # same types: the cached string
    assert "typedef float T;" in first and "squared_diff_contiguous" in first and "squared_diff_strided" in first
    half = k.source(np.ones(3, np.float16), np.ones(3, np.float16))
    assert half is not first and "typedef tally_float16 T;" in half
    assert "tally_rt::pack<tally_float16, 8>" in half and "tally_rt::pack<float, 4>" in first
    # A given output that the operation reads (z += ...) is loaded first; a fresh one is not.
    acc = tally.ElementwiseKernel("T x", "T z", "z += x", "acc")
    assert "_v_z = _p_z[_o_z];" in acc.source(a32, a32)
    assert "_v_z = _p_z[_o_z];" not in k.source(a32, a32, a32)


@pytest.mark.parametrize("types", [("float16", "float16"), ("bfloat16", "float32"), ("float64", "int32"),
                                   ("int8", "uint64"), ("bool", "float32")])
def test_generated_source_compiles(types):
    _nvrtc()
    t, u = types
    k = tally.ElementwiseKernel(f"{t} x, raw {u} r, {u} s", f"{u} z, {t} w",
                                "z = x * s + r[i % r.size()]; w = x; w += 1", "mixed")
    a = np.zeros(3, "float32" if t == "bfloat16" else t)
    ptx = _tally.runtime_compile(k.source(a, np.zeros(3, "float32" if u == "bfloat16" else u), 2), 90)
    assert "mixed_contiguous" in ptx and "mixed_strided" in ptx
    r = tally.ReductionKernel(f"{t} x, {u} s", f"{u} y", "x * s", "max(a, b)", "y = a", "-INFINITY", "biggest",
                              reduce_type="float64")
    ptx = _tally.runtime_compile(r.source(a, 3), 90)
    assert "biggest_reduce" in ptx and "biggest_finish" in ptx


def test_compile_error_carries_the_log():
    _nvrtc()
    k = tally.ElementwiseKernel("T x", "T z", "z = undefined_name(x)", "broken")
    with pytest.raises(ValueError, match="(?s)does not compile.*undefined_name"):
        _tally.runtime_compile(k.source(np.ones(2, np.float32)), 90)


# ---- CUDA: torch ----

def _t(torch, a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
def test_torch_squared_diff_broadcast(torch, rng, dtype):
    k = tally.ElementwiseKernel(*SQUARED_DIFF)
    x = (rng.uniform(-50, 50, (5, 1, 33)) if dtype != "int32" else rng.integers(-999, 999, (5, 1, 33))).astype(dtype)
    y = (rng.uniform(-50, 50, (7, 33)) if dtype != "int32" else rng.integers(-999, 999, (7, 33))).astype(dtype)
    z = k(_t(torch, x), _t(torch, y))
    assert isinstance(z, torch.Tensor) and z.is_cuda and z.shape == (5, 7, 33) and str(z.dtype) == f"torch.{dtype}"
    # float16 computes in float32 and rounds once (as CuPy's float16).
    wide = "float32" if dtype == "float16" else dtype
    d = x.astype(wide) - y.astype(wide)
    np.testing.assert_array_equal(host(z), (d * d).astype(dtype))


def test_torch_contiguous_sizes_and_alignment(torch, rng):
    k = tally.ElementwiseKernel("T x, float32 s", "T z", "z = x * s + i", "affine")
    for n in (1, 7, 4096 + 3, 1 << 20):
        x = _f32(rng, n + 1)
        got = k(_t(torch, x)[1:], np.float32(1.5))  # [1:]: not 16-byte aligned, element path
        np.testing.assert_array_equal(host(got), x[1:] * np.float32(1.5) + np.arange(n, dtype=np.float32))
        got = k(_t(torch, x[:n]), 1.5)
        np.testing.assert_array_equal(host(got), x[:n] * np.float32(1.5) + np.arange(n, dtype=np.float32))


def test_torch_mixed_types_and_two_outputs(torch, rng):
    k = tally.ElementwiseKernel("float32 x, int32 y, T s", "float64 z, T w",
                                "z = x * y; w = s + y", "mixed")
    x, y = _f32(rng, (64, 9)), rng.integers(-100, 100, (9,)).astype(np.int32)
    z, w = k(_t(torch, x), _t(torch, y), np.int64(7))
    # float32 * int32 is a float32 product in C (numpy would give float64).
    np.testing.assert_array_equal(host(z), (x * y.astype(np.float32)).astype(np.float64))
    assert w.dtype == torch.int64
    np.testing.assert_array_equal(host(w), np.broadcast_to(7 + y.astype(np.int64), (64, 9)))


def test_torch_bfloat16_and_fixed_type_conversion(torch, rng):
    k = tally.ElementwiseKernel("T x, float32 y", "T z", "z = x * y", "scale")
    x = torch.from_numpy(_f32(rng, 1000)).cuda().to(torch.bfloat16)
    y = _f32(rng, 1000)
    got = k(x, _t(torch, y).half())  # float16 y converts to the float32 parameter
    assert got.dtype == torch.bfloat16
    # The f32 product, rounded once to bfloat16.
    want = (x.float().cpu() * torch.from_numpy(y).half().float()).to(torch.bfloat16)
    assert torch.equal(got.cpu(), want)


def test_torch_in_place_and_accumulate(torch, rng):
    x, y = _f32(rng, (300, 40)), _f32(rng, (300, 40))
    tx, ty = _t(torch, x), _t(torch, y)
    k = tally.ElementwiseKernel(*SQUARED_DIFF)
    assert k(tx, ty, tx) is tx
    np.testing.assert_array_equal(host(tx), (x - y) * (x - y))
    acc = tally.ElementwiseKernel("T x", "T z", "z += x", "accumulate")
    acc(ty, tx)  # z is read: the given output's values are loaded first
    np.testing.assert_array_equal(host(tx), (x - y) * (x - y) + y)
    with pytest.raises(ValueError, match="overlap in memory"):
        k(tx[:, 1:], ty[:, 1:], tx[:, :-1])


def test_torch_non_contiguous_inputs(torch, rng):
    k = tally.ElementwiseKernel("T x, T y", "T z", "z = x - 2 * y", "strided")
    x, y = _f32(rng, (40, 60)), _f32(rng, (60, 40))
    got = k(_t(torch, x)[::2, 1::3], _t(torch, y).T[::2, 1::3])
    np.testing.assert_array_equal(host(got), x[::2, 1::3] - 2 * y.T[::2, 1::3])
    out = torch.empty((40, 60), device="cuda").T  # a transposed output
    k(_t(torch, x).T, _t(torch, y), out)
    np.testing.assert_array_equal(host(out), x.T - 2 * y)


def test_torch_raw_argument_and_size(torch, rng):
    reverse = tally.ElementwiseKernel("T x, raw T y", "T z", "z = x + y[_ind.size() - i - 1]", "add_reverse")
    x, y = _f32(rng, 1001), _f32(rng, 1001)
    np.testing.assert_array_equal(host(reverse(_t(torch, x), _t(torch, y))), x + y[::-1])
    fill = tally.ElementwiseKernel("raw T x", "raw T z", "z[i] = x[2 * i]", "every_other")
    out = torch.zeros(500, device="cuda")
    fill(_t(torch, x), out, size=500)
    np.testing.assert_array_equal(host(out), x[:1000:2])


def test_torch_current_stream_and_cache(torch, rng):
    k = tally.ElementwiseKernel("T x", "T z", "z = x * x", "square_on_stream")
    x = _f32(rng, 1 << 16)
    tx = _t(torch, x)
    before = _tally.runtime_compilations()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        outs = [k(tx) for _ in range(3)]
    stream.synchronize()
    assert _tally.runtime_compilations() == before + 1  # compiled once for the three calls
    for z in outs:
        np.testing.assert_array_equal(host(z), x * x)


def test_torch_empty(torch):
    k = tally.ElementwiseKernel(*SQUARED_DIFF)
    z = k(torch.empty((0, 3), device="cuda"), torch.empty(3, device="cuda"))
    assert z.shape == (0, 3)


L2NORM = ("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")


@pytest.mark.parametrize("shape, axis", [((1 << 21) + 5, None), ((37, 3001), 1), ((37, 3001), 0),
                                         ((6, 50, 7), (0, 2)), ((2, 3), ()), ((5, 0), 1), ((5, 0), 0)])
def test_torch_l2norm(torch, rng, shape, axis):
    r = tally.ReductionKernel(*L2NORM, reduce_type="float64")
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    got = r(_t(torch, x), axis=axis)
    want = np.sqrt((x.astype(np.float64) ** 2).sum(axis=axis))
    assert got.dtype == torch.float32 and tuple(got.shape) == want.shape
    np.testing.assert_allclose(host(got), want.astype(np.float32), rtol=2e-7, atol=0)


def test_torch_reduction_custom_identity_keepdims(torch, rng):
    biggest = tally.ReductionKernel("T x", "T y", "x", "(a > b ? a : b)", "y = a", "-INFINITY", "biggest")
    x = rng.uniform(-1e4, 1e4, (9, 4000, 3)).astype(np.float16)
    got = biggest(_t(torch, x), axis=1, keepdims=True)
    assert tuple(got.shape) == (9, 1, 3)
    np.testing.assert_array_equal(host(got), x.max(axis=1, keepdims=True))
    np.testing.assert_array_equal(host(biggest(_t(torch, x[:, :0]), axis=1)), np.full((9, 3), -np.inf, np.float16))


def test_torch_reduction_mean_post_map_and_scalars(torch, rng):
    # mean of (x - shift), the count from _in_ind and _out_ind as CuPy's kernels take it.
    mean = tally.ReductionKernel("T x, float64 shift", "float64 y", "x - shift", "a + b",
                                 "y = a / (_in_ind.size() / _out_ind.size())", "0", "shifted_mean")
    x = rng.integers(-1000, 1000, (33, 1500)).astype(np.int32)
    got = mean(_t(torch, x), 2.5, axis=1)
    np.testing.assert_allclose(host(got), (x - 2.5).mean(axis=1), rtol=1e-13)
    total = tally.ReductionKernel("T x", "int64 y", "x", "a + b", "y = a", "0", "int_total", reduce_type="int64")
    big = rng.integers(-2**31, 2**31 - 1, 1 << 20).astype(np.int32)
    assert int(total(_t(torch, big))) == int(big.astype(np.int64).sum())  # exact: many splits
    out = torch.zeros(33, dtype=torch.int64, device="cuda")
    total(_t(torch, x), out, axis=1)
    np.testing.assert_array_equal(host(out), x.astype(np.int64).sum(axis=1))


def test_torch_reduction_two_inputs_broadcast_non_contiguous(torch, rng):
    dot = tally.ReductionKernel("T x, T y", "T z", "x * y", "a + b", "z = a", "0", "dot", reduce_type="float64")
    x, y = rng.uniform(-1, 1, (64, 2, 300)), rng.uniform(-1, 1, (300,))
    got = dot(_t(torch, x)[:, 1, ::3], _t(torch, y)[1::3], axis=-1)  # strided views, y broadcast
    np.testing.assert_allclose(host(got), (x[:, 1, ::3] * y[1::3]).sum(axis=-1), rtol=1e-13)
    got = dot(_t(torch, x).transpose(0, 2), _t(torch, y)[:, None, None], axis=(0, 2))
    # 19200 terms that cancel: another order of the sum differs by rounding of the terms' size.
    scale = np.einsum("abc,c->b", np.abs(x), np.abs(y))
    np.testing.assert_allclose(host(got), np.einsum("abc,c->b", x, y), rtol=0, atol=1e-14 * scale.max())


@pytest.mark.parametrize("lib", ["torch", "cupy"])
def test_repeated_calls_reuse_the_first_calls_plan(request, rng, lib):
    """Calls with arguments alike reuse the first call's plan (_user_kernels.launch.Plan): fresh data,
    scalars, alignments and given outputs at every call, every result equal to numpy's."""
    mod = request.getfixturevalue(lib)
    dev = (lambda a: _t(mod, a)) if lib == "torch" else (lambda a: mod.asarray(np.ascontiguousarray(a)))
    affine = tally.ElementwiseKernel("T x, float32 s", "T z", "z = x * s + i", "affine_again")
    l2 = tally.ReductionKernel(*L2NORM, reduce_type="float64")
    rows = tally.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "row_sums", reduce_type="float64")
    for call in range(4):
        x = _f32(rng, (64, 514))
        line = _f32(rng, 4097)
        s = float(rng.uniform(-2, 2))
        view = dev(line)[call % 2:4096 + call % 2]  # its alignment alternates, its layout does not
        want = line[call % 2:4096 + call % 2] * np.float32(s) + np.arange(4096, dtype=np.float32)
        np.testing.assert_array_equal(host(affine(view, s)), want)
        out = dev(np.zeros(4096, np.float32))
        assert affine(view, np.float32(s), out) is out
        np.testing.assert_array_equal(host(out), want)
        strided = dev(x)[:, 1:]  # a layout of its own: the strided kernel
        want = x[:, 1:] * np.float32(s) + np.arange(64 * 513, dtype=np.float32).reshape(64, 513)
        np.testing.assert_array_equal(host(affine(strided, s)), want)
        big = rng.uniform(-1, 1, 1 << 21).astype(np.float32)  # split: scratch memory and a second kernel
        np.testing.assert_allclose(host(l2(dev(big))), np.sqrt((big.astype(np.float64) ** 2).sum()),
                                   rtol=2e-7, atol=0)
        np.testing.assert_allclose(host(rows(dev(x), axis=1)), x.astype(np.float64).sum(axis=1).astype(np.float32),
                                   rtol=2e-7, atol=0)
    assert len(affine._plans) == 3 and len(l2._plans) == 1 and len(rows._plans) == 1
    if lib == "torch":  # a given output that requires grad is returned as itself, every call
        out = mod.zeros(4096, device="cuda", requires_grad=True)
        assert affine(view, np.float32(1), out) is out and affine(view, np.float32(1), out) is out


# ---- CUDA: cupy ----

def test_cupy_elementwise_and_reduction(cupy, rng):
    k = tally.ElementwiseKernel(*SQUARED_DIFF)
    x, y = _f32(rng, (65, 129)), _f32(rng, (129,))
    z = k(cupy.asarray(x), cupy.asarray(y))
    assert isinstance(z, cupy.ndarray) and z.dtype == np.float32
    np.testing.assert_array_equal(host(z), (x - y) * (x - y))
    r = tally.ReductionKernel(*L2NORM, reduce_type="float64")
    with cupy.cuda.Stream(non_blocking=True) as stream:  # the kernel runs on this current stream
        got = r(cupy.asarray(x), axis=0)
        stream.synchronize()
    np.testing.assert_allclose(host(got), np.sqrt((x.astype(np.float64) ** 2).sum(axis=0)).astype(np.float32),
                               rtol=2e-7, atol=0)

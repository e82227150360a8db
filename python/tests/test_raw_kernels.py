"""Raw kernels (tally.RawKernel, tally.RawModule): construction, the launch's checks made before
anything touches CUDA (grid, block, shared memory, stream, arguments), and the argument bytes
and launch shape a call hands the extension (cupy stood in for, the extension's runtime stubbed)
run everywhere; every kernel source of the GPU cases compiles with NVRTC where the build has it
(no GPU needed). The CUDA cases, against numpy on fresh random data, run on torch/cupy CUDA arrays
and skip where no GPU is present."""

import doctest
import inspect
import io
import struct
import sys

import numpy as np
import pytest

import cupy_stand_in
import tally
from conftest import samples
from tally import _tally
from tally._user_kernels import raw
from test_docstrings import _sections
from test_gpu import host

HISTOGRAM = r'''
// The seed's shared-memory histogram: each block counts its share of the samples into a
// privatized histogram in dynamic shared memory, then adds it to the global one.
extern "C" __global__ void histogram_u8(const unsigned char* x, long long n, unsigned int* counts) {
    extern __shared__ unsigned int bins[];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) bins[b] = 0;
    __syncthreads();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        atomicAdd(&bins[x[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (bins[b]) atomicAdd(&counts[b], bins[b]);
}
'''

WIDE_HISTOGRAM = r'''
// BINS bins of 16-bit values (BINS a power of two): more shared memory than 48 KiB.
extern "C" __global__ void histogram_u16(const unsigned short* x, int n, unsigned int* counts) {
    extern __shared__ unsigned int bins[];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) bins[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&bins[x[i] & (BINS - 1)], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        if (bins[b]) atomicAdd(&counts[b], bins[b]);
}
'''

SCALARS = r'''
extern "C" __global__ void saxpy_f32(float a, const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" __global__ void saxpy_f64(double a, const double* x, const double* y, double* out, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
extern "C" __global__ void offset_i32(const int* x, int k, bool negate, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = negate ? -(x[i] + k) : x[i] + k;
}
// The bits of each scalar as received: a numpy float16 (2 bytes), a Python int >= 2^63 (an
// unsigned long long), a Python float (a double) and a Python bool.
extern "C" __global__ void echo(unsigned short h, unsigned long long u, double d, bool b, unsigned long long* out) {
    out[0] = h;
    out[1] = u;
    out[2] = __double_as_longlong(d);
    out[3] = b;
}
'''

MODULE = r'''
extern "C" __global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
extern "C" __global__ void shift(float* x, float b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += b;
}
'''

SHAPES = r'''
// out[z][y][x] = x + 1000 y + 1000000 z over a 3-D grid of 3-D blocks (bounds-checked).
extern "C" __global__ void coordinates(int* out, int nx, int ny, int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x < nx && y < ny && z < nz) out[((long long)z * ny + y) * nx + x] = x + 1000 * y + 1000000 * z;
}
// A transposed copy of a rows x cols matrix, one element a thread of a 2-D grid.
extern "C" __global__ void transpose(const float* a, float* t, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) t[(long long)c * rows + r] = a[(long long)r * cols + c];
}
'''

BOUNDED = r'''
extern "C" __global__ void __launch_bounds__(128) bounded(float* x) { x[threadIdx.x] = 1.0f; }
'''

SOURCES = [(HISTOGRAM, ()), (WIDE_HISTOGRAM, ("-DBINS=32768",)), (SCALARS, ("--fmad=false",)), (MODULE, ()),
           (SHAPES, ()), (BOUNDED, ())]


def _nvrtc():
    if not _tally.runtime_kernels_compiled():
        pytest.skip("this build of tally has no CUDA backend (NVRTC)")


def _no_device():
    if any(b["name"] == "cuda" and b["usable"] for b in tally.backends()):
        pytest.skip("a CUDA device is present: the launch runs")


KERNEL = tally.RawKernel('extern "C" __global__ void k(float* x) { x[0] = 1; }', "k")


# ---- construction (no device) ----

def test_construction_errors():
    with pytest.raises(ValueError, match="C identifier"):
        tally.RawKernel(HISTOGRAM, "histogram-u8")
    with pytest.raises(TypeError, match="CUDA source as a str"):
        tally.RawKernel(b"code", "k")
    with pytest.raises(TypeError, match="CUDA source as a str"):
        tally.RawModule()
    with pytest.raises(TypeError, match="tuple of str"):
        tally.RawKernel(HISTOGRAM, "histogram_u8", options="-DX=1")
    with pytest.raises(TypeError, match="tuple of str"):
        tally.RawModule(code=MODULE, options=("-DX=1", 3))
    with pytest.raises(ValueError, match="tally's to give"):
        tally.RawKernel(HISTOGRAM, "histogram_u8", options=("-arch=sm_80",))
    with pytest.raises(ValueError, match="tally's to give"):
        tally.RawModule(code=MODULE, options=["--gpu-architecture=compute_90"])
    with pytest.raises(ValueError, match="backend must be 'nvrtc'"):
        tally.RawKernel(HISTOGRAM, "histogram_u8", backend="nvcc")
    with pytest.raises(TypeError, match="jitify"):
        tally.RawKernel(HISTOGRAM, "histogram_u8", jitify=True)
    with pytest.raises(TypeError, match="name_expressions"):
        tally.RawModule(code=MODULE, name_expressions=["scale"])


def test_attributes_and_compile_options():
    k = tally.RawKernel(HISTOGRAM, "histogram_u8", options=["-DX=1"])
    assert (k.code, k.name, k.options) == (HISTOGRAM, "histogram_u8", ("-DX=1",)) and repr(k) == \
        "<tally.RawKernel histogram_u8>"
    assert k._compile_options == ["-DX=1", "--std=c++17"]  # C++17 unless a standard is named
    assert tally.RawModule(code=MODULE, options=("-std=c++20",))._compile_options == ["-std=c++20"]
    assert tally.RawModule(code=MODULE).get_function("shift").options == ()


# ---- the launch's checks before CUDA (no device) ----

@pytest.mark.parametrize("grid, block, error, match", [
    (1.5, 32, TypeError, "grid must be an int or a tuple"),
    ((1, 1, 1, 1), 32, TypeError, "grid must be"),
    ((), 32, TypeError, "grid must be"),
    ((True,), 32, TypeError, "grid must be"),
    ("4", 32, TypeError, "grid must be"),
    (0, 32, ValueError, r"grid 0: each dimension \(x, y, z\) must be from 1 to \(2147483647, 65535, 65535\)"),
    ((-1, 1), 32, ValueError, "grid"),
    ((1, 65536), 32, ValueError, "grid"),
    (2**31, 32, ValueError, "grid"),
    (1, (32, 1.0), TypeError, "block must be an int or a tuple"),
    (1, 0, ValueError, r"block 0: each dimension \(x, y, z\) must be from 1 to \(1024, 1024, 64\)"),
    (1, 1025, ValueError, "block"),
    (1, (1, 1, 65), ValueError, "block"),
    (1, (32, 32, 2), ValueError, r"block \(32, 32, 2\) has 2048 threads; a block has at most 1024"),
])
def test_bad_launch_shapes(grid, block, error, match):
    with pytest.raises(error, match=match):
        KERNEL(grid, block, (3,), stream=0)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(shared_mem=-1), ValueError, "shared_mem must be an int >= 0"),
    (dict(shared_mem=1.0), ValueError, "shared_mem"),
    (dict(shared_mem=True), ValueError, "shared_mem"),
    (dict(stream="default"), TypeError, "stream must be None, a torch or cupy stream"),
    (dict(stream=-1), TypeError, "stream must be"),
])
def test_bad_shared_memory_and_streams(kwargs, error, match):
    with pytest.raises(error, match=match):
        KERNEL(1, 32, (3,), **{"stream": 0, **kwargs})


@pytest.mark.parametrize("args, error, match", [
    ([np.ones(3, np.float32)], TypeError, "argument 0 is a numpy array, in host memory"),
    ((1, np.zeros(())), TypeError, "argument 1 is a numpy array"),
    (("text",), TypeError, "argument 0 is a str; a kernel takes torch or cupy CUDA arrays"),
    ((None,), TypeError, "argument 0 is a NoneType"),
    (([1.0, 2.0],), TypeError, "argument 0 is a list"),
    ((np.str_("a"),), TypeError, "numpy <U1 scalar"),
    ((2**64,), OverflowError, "fits neither long long nor unsigned long long"),
    ((-2**63 - 1,), OverflowError, "fits neither"),
])
def test_bad_arguments(args, error, match):
    with pytest.raises(error, match=match):
        KERNEL(1, 32, args, stream=0)


def test_args_must_be_a_sequence_and_a_launch_needs_a_device_or_stream():
    with pytest.raises(TypeError, match="args must be a tuple"):
        KERNEL(1, 32, np.float32(1), stream=0)
    with pytest.raises(TypeError, match="no array among the arguments.*pass stream="):
        KERNEL(1, 32, (np.float32(1),))


def test_launch_without_a_device_says_so():
    _no_device()
    with pytest.raises(ValueError, match="launching a raw kernel needs tally's CUDA backend and a CUDA device"):
        KERNEL(1, 32, (np.float32(1),), stream=0)
    with pytest.raises(ValueError, match="needs tally's CUDA backend and a CUDA device"):
        KERNEL.compile()
    with pytest.raises(ValueError, match="needs tally's CUDA backend and a CUDA device"):
        tally.RawModule(code=MODULE).compile()


# ---- what a call hands the extension (cupy stood in for, the runtime stubbed; no device) ----

class _OtherDevice(cupy_stand_in.StandInArray):
    """A stand-in array that says it is on cuda:1."""

    data = property(lambda self: type("Memory", (), {"ptr": self.a.ctypes.data, "device_id": 1})())


class _Launches(list):
    compiled: list

    def __init__(self):
        super().__init__()
        self.compiled = []


@pytest.fixture
def launches(monkeypatch):
    """The raw launches of the test, as (kernel handle, grid, block, shared_mem, argument bytes,
    stream); kernel handles are counted by (source, name, options) in `launches.compiled`."""
    monkeypatch.setitem(sys.modules, "cupy", cupy_stand_in.module(cupy_stand_in.Allocator()))
    monkeypatch.setattr(raw, "cuda_usable", lambda: True)
    recorded = _Launches()

    def kernel(source, name, options):
        recorded.compiled.append((source, name, tuple(options)))
        return 1000 + len(recorded.compiled)

    monkeypatch.setattr(_tally, "runtime_kernel", kernel)
    monkeypatch.setattr(_tally, "runtime_device", lambda: (0, 90, 132))
    monkeypatch.setattr(_tally, "runtime_launch_raw", lambda k, grid, block, shared, args, stream:
                        recorded.append((k, grid, block, shared, [bytes(a) for a in args], stream)))
    return recorded


def test_argument_bytes_launch_shape_and_stream(launches, rng):
    x = cupy_stand_in.StandInArray(rng.integers(0, 256, 1000).astype(np.uint8))
    counts = cupy_stand_in.StandInArray(np.zeros(256, np.uint32))
    k = tally.RawKernel(HISTOGRAM, "histogram_u8")
    k(7, (256,), (x, 1000, counts), shared_mem=1024)
    k((3, 2), [16, 8], (x, np.int32(-5), np.float16(1.5), np.float32(0.25), 2.5, True, np.bool_(False), 2**63, -7,
                        1 + 2j, counts), shared_mem=np.int64(0), stream=11)
    pointer = lambda a: struct.pack("<Q", a.data.ptr)  # noqa: E731
    assert launches == [
        (1001, (7, 1, 1), (256, 1, 1), 1024, [pointer(x), struct.pack("<q", 1000), pointer(counts)], 7),
        (1001, (3, 2, 1), (16, 8, 1), 0,
         [pointer(x), struct.pack("<i", -5), np.float16(1.5).tobytes(), struct.pack("<f", 0.25),
          struct.pack("<d", 2.5), b"\x01", b"\x00", struct.pack("<Q", 2**63), struct.pack("<q", -7),
          struct.pack("<dd", 1, 2), pointer(counts)], 11),
    ]
    # Compiled (asked for) once, with C++17 added to the options.
    assert launches.compiled == [(HISTOGRAM, "histogram_u8", ("--std=c++17",))]


def test_stream_objects_devices_and_modules(launches, rng):
    x = cupy_stand_in.StandInArray(rng.uniform(-1, 1, 64).astype(np.float32))
    module = tally.RawModule(code=MODULE, options=("--fmad=false",))
    scale, shift = module.get_function("scale"), module.get_function("shift")
    assert launches.compiled == [(MODULE, "scale", ("--fmad=false", "--std=c++17")),
                                 (MODULE, "shift", ("--fmad=false", "--std=c++17"))]  # loaded by get_function
    stream = type("Stream", (), {"ptr": 99, "device_id": 0})()  # a cupy stream's attributes
    scale(1, 64, (x, np.float32(2), np.int32(64)), stream=stream)
    shift(1, 64, (x, np.float32(1), np.int32(64)))
    assert [(k, s) for k, _, _, _, _, s in launches] == [(1001, 99), (1002, 7)]
    assert len(launches.compiled) == 2  # the handles kept by get_function
    with pytest.raises(ValueError, match="the stream is of cuda:1, the arrays on cuda:0"):
        scale(1, 64, (x,), stream=type("Stream", (), {"ptr": 99, "device_id": 1})())
    with pytest.raises(ValueError, match="argument 1 is a cupy array on cuda:1.*one library on one device"):
        scale(1, 64, (x, _OtherDevice(np.ones(4, np.float32))))
    # No arrays: a stream object's device, or a handle on the current device.
    scale(2, 32, (np.float32(1),), stream=stream)
    scale(2, 32, (np.uint64(x.data.ptr), np.float32(1), np.int32(64)), stream=0)
    assert [s for *_, s in launches[2:]] == [99, 0]


# ---- every GPU case's source compiles (NVRTC, no device) ----

@pytest.mark.parametrize("source, options", SOURCES, ids=["histogram", "wide_histogram", "scalars", "module",
                                                         "shapes", "bounded"])
def test_sources_compile_with_nvrtc(source, options):
    _nvrtc()
    module = tally.RawModule(code=source, options=options)
    module.compile(arch=90)
    for name in ("histogram_u8", "histogram_u16", "saxpy_f32", "echo", "scale", "transpose", "bounded"):
        if f" {name}(" in source:
            tally.RawKernel(source, name, options).compile(arch=80)


def test_compile_errors_carry_nvrtc_log_and_kernel_names():
    _nvrtc()
    with pytest.raises(ValueError, match="(?s)does not compile.*identifier \"BINS\" is undefined"):
        tally.RawModule(code=WIDE_HISTOGRAM).compile(arch=90)  # the define is an option
    with pytest.raises(ValueError, match="(?s)does not compile.*undefined_name"):
        tally.RawKernel('extern "C" __global__ void k(float* x) { x[0] = undefined_name; }', "k").compile(arch=90)
    with pytest.raises(ValueError, match="no kernel named scales \\(its kernels: scale, shift\\)"):
        tally.RawKernel(MODULE, "scales").compile(arch=90)
    mangled = tally.RawKernel('__global__ void k(float* x) { x[0] = 1; }', "k")
    with pytest.raises(ValueError, match="no kernel named k.*C\\+\\+ names are mangled"):
        mangled.compile(arch=90)
    with pytest.raises(TypeError, match="arch must be an int"):
        tally.RawModule(code=MODULE).compile(arch="sm_90")


def test_options_reach_nvrtc():
    """NVRTC's defaults hold (a * x + y fused), and options change them."""
    _nvrtc()
    fused = tally.RawKernel(SCALARS, "saxpy_f32")._ptx(90)
    rounded = tally.RawKernel(SCALARS, "saxpy_f32", ("--fmad=false",))._ptx(90)
    assert "fma.rn.f32" in fused and "fma.rn.f32" not in rounded and "mul.rn.f32" in rounded


# ---- CUDA: torch and cupy, against numpy ----

def _on_gpu(lib, a):
    return lib.from_numpy(np.ascontiguousarray(a)).cuda() if hasattr(lib, "from_numpy") else lib.asarray(a)


def _zeros(lib, shape, dtype):
    return _on_gpu(lib, np.zeros(shape, dtype))


@pytest.mark.parametrize("lib_name", ["torch", "cupy"])
@pytest.mark.parametrize("distribution", ["uniform", "hot", "skewed"])
def test_shared_memory_histogram_equals_bincount(request, rng, lib_name, distribution):
    lib = request.getfixturevalue(lib_name)
    kernel = tally.RawKernel(HISTOGRAM, "histogram_u8")
    for n in (1, 1000, (1 << 20) + 3):
        x = samples(rng, "u8", n, distribution)
        counts = _zeros(lib, 256, np.int32)  # the kernel's unsigned counts: the same bits below 2^31
        kernel((min(-(-n // 256), 264),), (256,), (_on_gpu(lib, x), n, counts), shared_mem=256 * 4)
        np.testing.assert_array_equal(host(counts), np.bincount(x, minlength=256))


@pytest.mark.parametrize("lib_name", ["torch", "cupy"])
def test_more_than_48_kib_of_dynamic_shared_memory(request, rng, lib_name):
    lib = request.getfixturevalue(lib_name)
    kernel = tally.RawKernel(WIDE_HISTOGRAM, "histogram_u16", options=("-DBINS=32768",))
    x = rng.integers(0, 65536, 3 << 20).astype(np.uint16)
    counts = _zeros(lib, 32768, np.int32)
    kernel(264, 512, (_on_gpu(lib, x), np.int32(x.size), counts), shared_mem=32768 * 4)  # 128 KiB
    np.testing.assert_array_equal(host(counts), np.bincount(x & 32767, minlength=32768))
    with pytest.raises(ValueError, match="shared_mem 1048576 bytes; device .* allows this kernel at most"):
        kernel(1, 512, (_on_gpu(lib, x), np.int32(x.size), counts), shared_mem=1 << 20)


@pytest.mark.parametrize("lib_name", ["torch", "cupy"])
def test_saxpy_and_scalar_types(request, rng, lib_name):
    lib = request.getfixturevalue(lib_name)
    module = tally.RawModule(code=SCALARS, options=("--fmad=false",))  # rounded as numpy's a * x + y
    n = 100003
    x32, y32 = rng.uniform(-10, 10, n).astype(np.float32), rng.uniform(-10, 10, n).astype(np.float32)
    a32 = np.float32(rng.uniform(-3, 3))
    out = _zeros(lib, n, np.float32)
    module.get_function("saxpy_f32")(-(-n // 256), 256, (a32, _on_gpu(lib, x32), _on_gpu(lib, y32), out, np.int32(n)))
    np.testing.assert_array_equal(host(out), a32 * x32 + y32)
    # Python float and int: double and long long.
    x64, y64 = rng.uniform(-10, 10, n), rng.uniform(-10, 10, n)
    a64 = float(rng.uniform(-3, 3))
    out = _zeros(lib, n, np.float64)
    module.get_function("saxpy_f64")((-(-n // 128), 1, 1), (128, 1, 1), (a64, _on_gpu(lib, x64), _on_gpu(lib, y64),
                                                                          out, n))
    np.testing.assert_array_equal(host(out), a64 * x64 + y64)
    # numpy int32 and a Python bool.
    xi = rng.integers(-10**6, 10**6, n).astype(np.int32)
    k = np.int32(rng.integers(-1000, 1000))
    out = _zeros(lib, n, np.int32)
    for negate in (False, True):
        module.get_function("offset_i32")(-(-n // 256), 256, (_on_gpu(lib, xi), k, negate, out, np.int32(n)))
        np.testing.assert_array_equal(host(out), -(xi + k) if negate else xi + k)
    # Each scalar's bits as the kernel received them.
    h, u, d = np.float16(rng.uniform(-100, 100)), 2**63 + int(rng.integers(0, 2**62)), float(rng.normal())
    got = _zeros(lib, 4, np.int64)
    module.get_function("echo")(1, 1, (h, u, d, True, got))
    assert host(got).view(np.uint64).tolist() == [int(h.view(np.uint16)), u, int(np.float64(d).view(np.uint64)), 1]


@pytest.mark.parametrize("lib_name", ["torch", "cupy"])
def test_fused_multiply_add_by_default(request, rng, lib_name):
    """Without --fmad=false NVRTC fuses a * x + y: within half an ulp of the exact value."""
    lib = request.getfixturevalue(lib_name)
    kernel = tally.RawKernel(SCALARS, "saxpy_f32")
    n = 4097
    x = rng.uniform(-10, 10, n).astype(np.float32)
    y = (rng.uniform(1, 10, n) * rng.choice([-1, 1], n)).astype(np.float32)  # a * x + y exact in float64
    a = np.float32(1.75)
    out = _zeros(lib, n, np.float32)
    kernel(-(-n // 128), 128, (a, _on_gpu(lib, x), _on_gpu(lib, y), out, np.int32(n)))
    exact = np.float64(a) * x.astype(np.float64) + y.astype(np.float64)
    np.testing.assert_array_equal(host(out), exact.astype(np.float32))  # fma rounds the exact value once


@pytest.mark.parametrize("lib_name", ["torch", "cupy"])
def test_module_of_two_kernels(request, rng, lib_name):
    lib = request.getfixturevalue(lib_name)
    before = _tally.runtime_compilations()
    module = tally.RawModule(code=MODULE, options=(f"-DLIBRARY_{lib_name}=1",))  # a compilation of its own
    module.compile()
    scale, shift = module.get_function("scale"), module.get_function("shift")
    assert _tally.runtime_compilations() == before + 1  # one compilation for the module's kernels
    n = 5000
    x = rng.uniform(-5, 5, n).astype(np.float32)
    a, b = np.float32(rng.uniform(0.5, 2)), np.float32(rng.uniform(-1, 1))
    g = _on_gpu(lib, x)
    scale(-(-n // 128), 128, (g, a, np.int32(n)))
    shift(-(-n // 128), 128, (g, b, np.int32(n)))
    np.testing.assert_array_equal(host(g), x * a + b)
    with pytest.raises(ValueError, match="no kernel named missing"):
        module.get_function("missing")
    with pytest.raises(ValueError, match="no kernel named scales"):
        tally.RawKernel(MODULE, "scales")(1, 32, (g, a, np.int32(n)))


@pytest.mark.parametrize("lib_name", ["torch", "cupy"])
def test_two_and_three_dimensional_grids_and_blocks(request, rng, lib_name):
    lib = request.getfixturevalue(lib_name)
    module = tally.RawModule(code=SHAPES)
    nz, ny, nx = 6, 21, 50
    out = _on_gpu(lib, np.full((nz, ny, nx), -1, np.int32))
    block = (16, 4, 2)
    grid = (-(-nx // block[0]), -(-ny // block[1]), -(-nz // block[2]))
    module.get_function("coordinates")(grid, block, (out, np.int32(nx), np.int32(ny), np.int32(nz)))
    z, y, x = np.indices((nz, ny, nx))
    np.testing.assert_array_equal(host(out), x + 1000 * y + 1000000 * z)
    rows, cols = 333, 77
    a = rng.uniform(-1, 1, (rows, cols)).astype(np.float32)
    t = _zeros(lib, (cols, rows), np.float32)
    module.get_function("transpose")((-(-cols // 32), -(-rows // 8)), (32, 8), (_on_gpu(lib, a), t, np.int32(rows),
                                                                              np.int32(cols)))
    np.testing.assert_array_equal(host(t), a.T)


def test_torch_streams_and_launch_errors(torch, rng):  # noqa: F811 (fixture)
    kernel = tally.RawKernel(MODULE, "scale")
    n = 1 << 20
    x = rng.uniform(-1, 1, n).astype(np.float32)
    a = np.float32(3)
    for use_argument in (False, True):
        g = torch.from_numpy(x).cuda()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        if use_argument:
            kernel(-(-n // 256), 256, (g, a, np.int32(n)), stream=stream)
        else:
            with torch.cuda.stream(stream):  # the current stream by default
                kernel(-(-n // 256), 256, (g, a, np.int32(n)))
        stream.synchronize()
        np.testing.assert_array_equal(g.cpu().numpy(), x * a)
    with pytest.raises(TypeError, match="argument 0 is a torch tensor on cpu"):
        kernel(1, 32, (torch.from_numpy(x), a, np.int32(n)))
    bounded = tally.RawKernel(BOUNDED, "bounded")
    g = torch.zeros(1024, device="cuda")
    with pytest.raises(ValueError, match="block \\(256, 1, 1\\) has 256 threads; this kernel takes at most 128"):
        bounded(1, 256, (g,))
    bounded(1, 128, (g,))
    assert g.cpu().numpy().sum() == 128
    with pytest.raises(ValueError, match="(?s)does not compile.*undefined_name"):
        tally.RawKernel('extern "C" __global__ void k(float* x) { x[0] = undefined_name; }', "k")(1, 1, (g,))


def test_cupy_stream_argument(cupy, rng):  # noqa: F811 (fixture)
    kernel = tally.RawKernel(MODULE, "shift")
    n = 70000
    x = rng.uniform(-1, 1, n).astype(np.float32)
    g = cupy.asarray(x)
    b = np.float32(rng.uniform(-1, 1))
    stream = cupy.cuda.Stream(non_blocking=True)
    cupy.cuda.get_current_stream().synchronize()  # g's copy is done before the other stream reads it
    kernel(-(-n // 256), 256, (g, b, np.int32(n)), stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(g.get(), x + b)


# ---- docstrings ----

@pytest.mark.parametrize("member", [tally.RawKernel, tally.RawModule, tally.RawKernel.__call__, tally.RawKernel.compile,
                                    tally.RawModule.get_function], ids=lambda m: m.__qualname__)
def test_numpydoc_sections(member):
    """numpydoc sections, as test_docstrings.py asks of the package's top level."""
    want = {"Parameters", "Examples"} | (set() if inspect.isclass(member) else {"Returns"})
    assert want <= _sections(member.__doc__)
    lines = inspect.cleandoc(member.__doc__).splitlines()
    indent = 4 if inspect.isclass(member) else 8
    assert lines[0].strip() and not lines[1].strip() and max(indent + len(line) for line in lines) <= 100


def test_doctests():
    """The examples compile with NVRTC (no device needed) and show the errors a launch raises
    before CUDA."""
    _nvrtc()
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    out = io.StringIO()
    for test in finder.find(raw, raw.__name__, globs={}):
        runner.run(test, out=out.write)
    failed, attempted = runner.summarize(verbose=False)
    assert attempted > 0 and failed == 0, out.getvalue()

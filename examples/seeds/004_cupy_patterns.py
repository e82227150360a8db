"""Seed 004, the CuPy/PyCUDA parallel patterns, reproduced with tally.

The seed writes five patterns: elementwise arithmetic on CuPy arrays (a + b, a - b, a * b,
a / (b + epsilon) over 10^7 float32, and array_2d + a[:, None] broadcast over (10^7, 100)), a
shared-memory sum reduction (PyCUDA, reduce_sum, 2^20 float32), a shared-memory tiled matmul
(PyCUDA, matmul_tiled, TILE_SIZE 32, N = 1024), a parallel map of the sigmoid (PyCUDA,
parallel_map, 10^7 float32) and a shared-memory histogram (a CuPy RawModule, 10^7 int32 in 256
bins). Here each runs as the seed writes it, its CUDA source in tally.RawKernel / RawModule
(launched as CuPy launches: kernel(grid, block, args, shared_mem=)), and with tally's own
equivalent, beside torch and, where cupy is installed, cupy running the same source:

  the seed's pattern               tally                                   peers, same run
  a + b, a - b, a * b (CuPy)       tally.add / sub / mul(a, b)             torch, cupy operators
  b + epsilon, a / (b + epsilon)   tally.add(b, 1e-8) (a Python scalar     torch, cupy operators
                                   takes float32), tally.div; fused: an
                                   ElementwiseKernel z = a / (b + eps)     cupy.ElementwiseKernel
  array_2d + a[:, None]            tally.add(array_2d, a[:, None])         torch, cupy
  reduce_sum (PyCUDA)              tally.RawKernel of its source, then     cupy.RawKernel + sum;
                                   tally.sum of the partial sums;          torch.sum, cupy.sum,
                                   ReductionKernel(x, a + b); tally.sum    cupy.ReductionKernel
  matmul_tiled (PyCUDA)            tally.RawKernel of its source;          cupy.RawKernel;
                                   tally.matmul with each strategy         torch.matmul and
                                   (tiled16 is the textbook tiled kernel,  cupy.matmul (cuBLAS,
                                   16 x 16 tiles where the seed's are 32)  TF32 off)
  parallel_map sigmoid (PyCUDA)    tally.RawKernel of its source;          cupy.RawKernel,
                                   ElementwiseKernel of its formula;       cupy.ElementwiseKernel,
                                   tally.sigmoid                           torch.sigmoid
  histogram (CuPy RawModule)       tally.RawModule of its source (int32);  cupy.RawModule;
                                   a __shared__ 256-bin u8 RawKernel;      cupy.RawKernel (u8);
                                   tally.bincount / tally.histogram        torch/cupy.bincount

PyCUDA's kernels are launched with tally's and cupy's RawKernel (PyCUDA is not used: its
SourceModule wraps the source in extern "C" itself, so the two sources that lack it get it here).
Every row is checked before it is timed: arithmetic and counts equal numpy's (tally's arithmetic
is correctly rounded); sums within (n + 1) eps sum |x| of a float64 sum and products within
(K + 1) eps |A| |B| of a float64 product (docs/patterns.md's bounds; TF32 would break the
second); tally.sigmoid within 1.5 ulp of a float64 sigmoid; the user kernels' sigmoid as the
seed checks it, numpy.allclose(atol=1e-6). GB/s: bytes a call must read and write (matmul:
A, B and C once; its TFLOP/s in the note). Without a CUDA device every pattern runs on tally's
CPU backend (numpy arrays; the user kernels as Python callables), the CUDA sources are compiled
with NVRTC for compute_90, and the timing is skipped.

    python examples/seeds/004_cupy_patterns.py [--quick] [--out FILE.json]
"""

import os

os.environ["CUPY_TF32"] = "0"  # cupy's float32 matmul without TF32 (its default), read when cupy is imported

import numpy as np  # noqa: E402

import tally  # noqa: E402
from _timing import (EPS32, SigmoidReference, close, import_cupy, main, sum_bound, with_bits,  # noqa: E402
                     within)

EPSILON = 1e-8  # the seed's a / (b + epsilon)
ARITHMETIC = (("a + b", tally.add, lambda p, q: p + q), ("a - b", tally.sub, lambda p, q: p - q),
              ("a * b", tally.mul, lambda p, q: p * q))

# The seed's PyCUDA reduction, as it writes it.
REDUCE_SUM = r"""
extern "C"
__global__ void reduce_sum(float *g_idata, float *g_odata, int n)
{
    extern __shared__ float sdata[];
    unsigned int tid = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    float sum = 0;
    if (i < n)
        sum += g_idata[i];
    if (i + blockDim.x < n)
        sum += g_idata[i + blockDim.x];
    sdata[tid] = sum;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) {
            sdata[tid] += sdata[tid + s];
        }
        __syncthreads();
    }
    if (tid == 0) {
        g_odata[blockIdx.x] = sdata[0];
    }
}
"""

# The seed's tiled matmul (its f-string with TILE_SIZE = 32); extern "C" as PyCUDA adds it.
TILE_SIZE = 32
MATMUL_TILED = r"""
#define TILE_SIZE 32
extern "C" __global__ void matmul_tiled(float *A, float *B, float *C, int N)
{
    __shared__ float sA[TILE_SIZE][TILE_SIZE];
    __shared__ float sB[TILE_SIZE][TILE_SIZE];
    int row = blockIdx.y * TILE_SIZE + threadIdx.y;
    int col = blockIdx.x * TILE_SIZE + threadIdx.x;
    float sum = 0.0f;
    for (int t = 0; t < N / TILE_SIZE; ++t) {
        sA[threadIdx.y][threadIdx.x] = A[row * N + t * TILE_SIZE + threadIdx.x];
        sB[threadIdx.y][threadIdx.x] = B[(t * TILE_SIZE + threadIdx.y) * N + col];
        __syncthreads();
        for (int k = 0; k < TILE_SIZE; ++k) {
            sum += sA[threadIdx.y][k] * sB[k][threadIdx.x];
        }
        __syncthreads();
    }
    C[row * N + col] = sum;
}
"""

# The seed's parallel map; extern "C" as PyCUDA adds it.
PARALLEL_MAP = r"""
extern "C" __global__ void parallel_map(const float *input, float *output, int n)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx < n)
    {
        float x = input[idx];
        output[idx] = 1.0f / (1.0f + expf(-x));
    }
}
"""
# The same map as an ElementwiseKernel (tally's and cupy's arguments).
SIGMOID_KERNEL = ("float32 x", "float32 y", "y = 1.0f / (1.0f + expf(-x))", "parallel_map")
DIV_KERNEL = ("float32 a, float32 b, float32 eps", "float32 z", "z = a / (b + eps)", "div_eps")
SUM_KERNEL = ("T x", "T y", "x", "a + b", "y = a", "0", "reduce_sum")

# The seed's CuPy histogram, as it writes it (int32 data, nbins bins in dynamic shared memory).
HISTOGRAM = r"""
extern "C" __global__
void histogram(const int *data, int *hist, int N, int nbins)
{
    extern __shared__ int s_hist[];
    int tid = threadIdx.x;
    int gid = blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = tid; i < nbins; i += blockDim.x)
        s_hist[i] = 0;
    __syncthreads();
    if (gid < N) {
        int bin = data[gid];
        if (bin >= 0 && bin < nbins)
            atomicAdd(&s_hist[bin], 1);
    }
    __syncthreads();
    for (int i = tid; i < nbins; i += blockDim.x)
        atomicAdd(&hist[i], s_hist[i]);
}
"""
# Its u8 form: a __shared__ 256-bin histogram a block over a grid-strided loop, merged with atomicAdd.
HISTOGRAM_U8 = r"""
extern "C" __global__ void histogram_u8(const unsigned char *data, unsigned int *hist, long long n)
{
    __shared__ unsigned int s_hist[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
        s_hist[i] = 0;
    __syncthreads();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        atomicAdd(&s_hist[data[i]], 1u);
    __syncthreads();
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
        if (s_hist[i])
            atomicAdd(&hist[i], s_hist[i]);
}
"""
RAW_SOURCES = (("reduce_sum", REDUCE_SUM), ("matmul_tiled", MATMUL_TILED), ("parallel_map", PARALLEL_MAP),
               ("histogram", HISTOGRAM), ("histogram_u8", HISTOGRAM_U8))
NBINS = 256


def product_check(a, b):
    """The float64 product of a and b and a compare= within (K + 1) eps |a| |b| of it."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = a64 @ b64
    absolute = want if (a64 >= 0).all() and (b64 >= 0).all() else np.abs(a64) @ np.abs(b64)
    return want, within((a.shape[1] + 1) * EPS32 * absolute, "(K + 1) eps |A||B|")


# ---- on the CPU: numpy arrays, tally's CPU backend, the user kernels as Python callables ----
def checks(report, torch):
    rng = np.random.default_rng(4)
    n = 1 << 20
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    print(f"\n== elementwise arithmetic, {n} float32, tally's CPU backend against numpy")
    for text, function, op in ARITHMETIC:
        report.check("elementwise", f"{text}: tally.{function.__name__}(a, b)", function(a, b), op(a, b), n=n)
    report.check("elementwise", "b + epsilon: tally.add(b, 1e-8)", tally.add(b, EPSILON), b + EPSILON, n=n)
    want = a / (b + EPSILON)  # numpy 2: the Python float takes float32, as tally's
    report.check("elementwise", "a / (b + epsilon): tally.div(a, tally.add(b, 1e-8))",
                 tally.div(a, tally.add(b, EPSILON)), want, n=n)
    divide = tally.ElementwiseKernel(*DIV_KERNEL[:2], lambda p, q, eps: p / (q + eps), DIV_KERNEL[3])
    report.check("elementwise", "a / (b + epsilon): ElementwiseKernel, a callable", divide(a, b, np.float32(EPSILON)),
                 want, n=n)
    array_2d = rng.random((10_000, 100), dtype=np.float32)
    report.check("broadcasting", "array_2d + a[:, None]: tally.add, (10^4, 100)", tally.add(array_2d, a[:10_000, None]),
                 array_2d + a[:10_000, None], n=array_2d.size)

    print("\n== reduction, 2^20 float32 (the seed's size): within (n + 1) eps sum |x| of a float64 sum")
    compare = within(sum_bound(a), "(n + 1) eps sum|x|")
    exact = a.astype(np.float64).sum()
    report.check("reduction", "tally.sum(x)", tally.sum(a), exact, n=n, compare=compare)
    reduce_sum = tally.ReductionKernel(*SUM_KERNEL[:2], lambda x: x, np.add, lambda s: s, 0, SUM_KERNEL[6])
    report.check("reduction", "ReductionKernel(x, a + b), callables", reduce_sum(a), exact, n=n, compare=compare)
    print(f"  the seed's printout: sum {float(tally.sum(a)):.9g} (tally), CPU reference {a.sum():.9g} (numpy)")

    size = 1024  # the seed's N
    print(f"\n== matmul, N = {size} (the seed's): within (K + 1) eps |A||B| of a float64 product")
    ma, mb = rng.random((size, size), dtype=np.float32), rng.random((size, size), dtype=np.float32)
    want, compare = product_check(ma, mb)
    c = tally.matmul(ma, mb)
    report.check("matmul", "tally.matmul(A, B), CPU backend", c, want, n=size, compare=compare)
    print(f"  the seed's check, np.allclose(C, np.dot(A, B), atol=1e-3): {np.allclose(c, ma @ mb, atol=1e-3)}")

    x = rng.standard_normal(n).astype(np.float32)
    sigmoid_np = 1.0 / (1.0 + np.exp(-x))  # the seed's reference
    print(f"\n== parallel map (sigmoid), {n} float32")
    report.check("map", "tally.sigmoid(x)", tally.sigmoid(x), None, n=n, compare=SigmoidReference(x))
    parallel_map = tally.ElementwiseKernel(*SIGMOID_KERNEL[:2], lambda v: 1.0 / (1.0 + np.exp(-v)), SIGMOID_KERNEL[3])
    report.check("map", "ElementwiseKernel, a callable", parallel_map(x), sigmoid_np, n=n, compare=close(atol=1e-6))

    data = rng.integers(0, NBINS, n, dtype=np.int32)
    want = np.histogram(data, bins=NBINS, range=(0, NBINS))[0]  # the seed's reference
    print(f"\n== histogram, {n} values in {NBINS} bins")
    report.check("histogram", "tally.bincount(data, minlength=256), int32", tally.bincount(data, minlength=NBINS),
                 want, n=n)
    report.check("histogram", "tally.histogram(data, 256, (0, 256)), u8",
                 tally.histogram(data.astype(np.uint8), bins=NBINS, range=(0, NBINS))[0], want, n=n)

    if any(b["name"] == "cuda" and b["compiled"] for b in tally.backends()):
        print("\n== the CUDA sources, compiled with NVRTC for compute_90 (no device needed)")
        for name, source in RAW_SOURCES:
            kernel = tally.RawKernel(source, name)
            report.check_call("sources", f"{name}: tally.RawKernel(...).compile(arch=90)",
                              lambda k=kernel: k.compile(arch=90) is None, True, show="compiles")
    else:
        print("\n(this build of tally has no CUDA backend: the CUDA sources are not compiled here)")


# ---- on the GPU ----
def peers(report, experiment, text, op, torch_args, cupy_args, want, **common):
    """op(*args) timed on torch's arrays and, where cupy is there, on cupy views of the same
    memory: the peers' rows of a pattern written as a Python expression."""
    report.timed(experiment, f"torch: {text}", lambda: op(*torch_args), want, kind="peer", **common)
    if report.cupy is not None:
        report.timed(experiment, f"cupy: {text}", lambda: op(*cupy_args), want, kind="peer", lib="cupy", **common)


def views(cupy, *tensors):
    """cupy arrays of the tensors' memory (None where cupy is missing)."""
    return tuple(cupy.asarray(t) for t in tensors) if cupy is not None else (None,) * len(tensors)


def elementwise(report, torch, gen, n, rows):
    cupy = report.cupy
    a, b = torch.rand(n, device="cuda", generator=gen), torch.rand(n, device="cuda", generator=gen)
    ah, bh = a.cpu().numpy(), b.cpu().numpy()
    ac, bc = views(cupy, a, b)
    report.section(f"elementwise arithmetic, {n} float32 (CuPy's operators)",
                   "tally's results equal numpy's (correctly rounded); GB/s: bytes read + written")
    common = dict(n=n, bins=None, distribution="rand f32")
    for text, function, op in ARITHMETIC:
        want = op(ah, bh)
        report.timed("elementwise", f"{text}: tally.{function.__name__}(a, b)", lambda f=function: f(a, b), want,
                     nbytes=12 * n, **common)
        peers(report, "elementwise", text, op, (a, b), (ac, bc), want, nbytes=12 * n, **common)
    want = bh + EPSILON
    report.timed("elementwise", "b + epsilon: tally.add(b, 1e-8)", lambda: tally.add(b, EPSILON), want,
                 nbytes=8 * n, **common)
    peers(report, "elementwise", "b + epsilon", lambda q: q + EPSILON, (b,), (bc,), want, nbytes=8 * n, **common)
    want = ah / (bh + EPSILON)
    report.timed("elementwise", "a / (b + eps): tally.div(a, tally.add(b, eps))",
                 lambda: tally.div(a, tally.add(b, EPSILON)), want, nbytes=12 * n,
                 note="two kernels, as torch's and cupy's", **common)
    peers(report, "elementwise", "a / (b + epsilon)", lambda p, q: p / (q + EPSILON), (a, b), (ac, bc), want,
          nbytes=12 * n, **common)
    divide = tally.ElementwiseKernel(*DIV_KERNEL)
    report.timed("elementwise", "a / (b + eps): tally.ElementwiseKernel, fused",
                 lambda: divide(a, b, np.float32(EPSILON)), want, nbytes=12 * n, **common)
    if cupy is not None:
        cupy_divide = cupy.ElementwiseKernel(*DIV_KERNEL)
        report.timed("elementwise", "a / (b + eps): cupy.ElementwiseKernel, fused",
                     lambda: cupy_divide(ac, bc, np.float32(EPSILON)), want, kind="peer", lib="cupy", nbytes=12 * n,
                     **common)

    array_2d = torch.rand((rows, 100), device="cuda", generator=gen)
    column = a[:rows, None]
    want = array_2d.cpu().numpy() + ah[:rows, None]
    report.section(f"broadcasting: array_2d ({rows}, 100) + a[:, None], float32",
                   "GB/s: array_2d and a read, the result written")
    common = dict(n=rows * 100, bins=None, distribution="rand f32", nbytes=4 * (2 * rows * 100 + rows))
    report.timed("broadcasting", "tally.add(array_2d, a[:, None])", lambda: tally.add(array_2d, column), want,
                 **common)
    array_c, column_c = views(cupy, array_2d, a[:rows])
    peers(report, "broadcasting", "array_2d + a[:, None]", lambda p, q: p + q, (array_2d, column),
          (array_c, None if cupy is None else column_c[:, None]), want, **common)


def reduction(report, torch, gen, n):
    cupy = report.cupy
    x = torch.rand(n, device="cuda", generator=gen)
    xh = x.cpu().numpy()
    (xc,) = views(cupy, x)
    exact, compare = xh.astype(np.float64).sum(), within(sum_bound(xh), "(n + 1) eps sum|x|")
    threads = 512  # the seed's launch: 512 threads, 2 elements a thread, a partial sum a block
    blocks = (n + threads * 2 - 1) // (threads * 2)
    launch = dict(shared_mem=threads * 4)
    partial = torch.empty(blocks, device="cuda")
    seed_kernel = tally.RawKernel(REDUCE_SUM, "reduce_sum")

    def seed_way():
        seed_kernel((blocks,), (threads,), (x, partial, np.int32(n)), **launch)
        return tally.sum(partial)  # the seed sums the partial sums on the host
    report.section(f"sum reduction, {n} float32 (the seed's reduce_sum: {blocks} blocks of {threads})",
                   "check: within (n + 1) eps sum |x| of a float64 sum; GB/s: bytes read")
    common = dict(n=n, bins=None, distribution="rand f32", nbytes=4 * n, compare=compare,
                  reference="the float64 sum by more than (n + 1) eps sum|x|")
    report.timed("reduction", "reduce_sum (the seed's): tally.RawKernel + tally.sum", seed_way, exact, **common)
    print(f"  the seed's printout: GPU {partial.cpu().numpy().sum():.9g} (its partial sums, summed on the host), "
          f"CPU reference {xh.sum():.9g}")
    reduce_sum = tally.ReductionKernel(*SUM_KERNEL)
    report.timed("reduction", "tally.ReductionKernel(x, a + b)", lambda: reduce_sum(x), exact, **common)
    report.timed("reduction", "tally.sum(x)", lambda: tally.sum(x), exact, **common)
    peers(report, "reduction", "x.sum()", lambda v: v.sum(), (x,), (xc,), exact, **common)
    if cupy is not None:
        cupy_kernel = cupy.RawKernel(REDUCE_SUM, "reduce_sum")
        cupy_partial = cupy.empty(blocks, np.float32)

        def cupy_seed_way():
            cupy_kernel((blocks,), (threads,), (xc, cupy_partial, np.int32(n)), **launch)
            return cupy_partial.sum()
        report.timed("reduction", "reduce_sum (the seed's): cupy.RawKernel + sum", cupy_seed_way, exact, kind="peer",
                     lib="cupy", **common)
        cupy_reduce = cupy.ReductionKernel(*SUM_KERNEL)
        report.timed("reduction", "cupy.ReductionKernel(x, a + b)", lambda: cupy_reduce(xc), exact, kind="peer",
                     lib="cupy", **common)


def matmul(report, torch, gen, size):
    cupy = report.cupy
    a = torch.rand((size, size), device="cuda", generator=gen)
    b = torch.rand((size, size), device="cuda", generator=gen)
    ah, bh = a.cpu().numpy(), b.cpu().numpy()
    ac, bc = views(cupy, a, b)
    want, bound = product_check(ah, bh)
    default = tally.matmul(a, b).cpu().numpy()  # tally's automatic bits, which the strategies should all give
    compare = with_bits(bound, {"tally.matmul": default})
    grid, block = (size // TILE_SIZE, size // TILE_SIZE, 1), (TILE_SIZE, TILE_SIZE, 1)  # the seed's launch
    c = torch.zeros((size, size), device="cuda")
    tiled = tally.RawKernel(MATMUL_TILED, "matmul_tiled")

    def seed_way():
        tiled(grid, block, (a, b, c, np.int32(size)))
        return c
    report.section(f"matmul, N = {size}, float32 (the seed's matmul_tiled: TILE_SIZE {TILE_SIZE})",
                   "check: within (K + 1) eps |A||B| of a float64 product; GB/s: A, B read and C written once")
    common = dict(n=size, bins=None, distribution="rand f32", nbytes=12 * size * size, compare=compare,
                  reference="the float64 product by more than (K + 1) eps |A||B|",
                  extra={"TFLOP/s": lambda ms: 2 * size ** 3 / ms / 1e9})
    report.timed("matmul", "matmul_tiled (the seed's): tally.RawKernel", seed_way, want, **common)
    for strategy in tally.patterns.MATMUL_STRATEGIES:
        report.timed("matmul", f"tally.matmul(A, B, strategy='{strategy}')",
                     lambda s=strategy: tally.matmul(a, b, strategy=s), want, strategy=strategy, **common)
    peers(report, "matmul", "matmul(A, B), TF32 off", lambda p, q: p @ q, (a, b), (ac, bc), want, **common)
    if cupy is not None:
        cupy_tiled = cupy.RawKernel(MATMUL_TILED, "matmul_tiled")
        cupy_c = cupy.zeros((size, size), np.float32)

        def cupy_seed_way():
            cupy_tiled(grid, block, (ac, bc, cupy_c, np.int32(size)))
            return cupy_c
        report.timed("matmul", "matmul_tiled (the seed's): cupy.RawKernel", cupy_seed_way, want, kind="peer",
                     lib="cupy", **common)


def parallel_map(report, torch, gen, n):
    cupy = report.cupy
    x = torch.randn(n, device="cuda", generator=gen)
    y = torch.empty_like(x)
    xh = x.cpu().numpy()
    (xc,) = views(cupy, x)
    sigmoid_np = 1.0 / (1.0 + np.exp(-xh))  # the seed's reference and its check, allclose(atol=1e-6)
    seed_check = dict(compare=close(atol=1e-6), reference="numpy's sigmoid beyond allclose(atol=1e-6)")
    bound = dict(compare=SigmoidReference(xh), reference="the float64 sigmoid by more than 1.5 ulp")
    threads = 256  # the seed's launch
    blocks = (n + threads - 1) // threads
    raw = tally.RawKernel(PARALLEL_MAP, "parallel_map")

    def seed_way():
        raw((blocks,), (threads,), (x, y, np.int32(n)))
        return y
    report.section(f"parallel map (sigmoid), {n} float32, into a given output",
                   "check: the seed's allclose(atol=1e-6) for the user kernels, 1.5 ulp for tally.sigmoid; "
                   "GB/s: bytes read + written")
    common = dict(n=n, bins=None, distribution="randn f32", nbytes=8 * n)
    elementwise_map = tally.ElementwiseKernel(*SIGMOID_KERNEL)
    rows = [("parallel_map (the seed's): tally.RawKernel", seed_way, "tally", "torch", seed_check),
            ("tally.ElementwiseKernel(y = 1 / (1 + expf(-x)))", lambda: elementwise_map(x, y), "tally", "torch",
             seed_check),
            ("tally.sigmoid(x, out=y)", lambda: tally.sigmoid(x, out=y), "tally", "torch", bound),
            ("torch.sigmoid(x, out=y)", lambda: torch.sigmoid(x, out=y), "peer", "torch", bound)]
    if cupy is not None:
        yc = cupy.empty_like(xc)
        cupy_raw, cupy_map = cupy.RawKernel(PARALLEL_MAP, "parallel_map"), cupy.ElementwiseKernel(*SIGMOID_KERNEL)

        def cupy_seed_way():
            cupy_raw((blocks,), (threads,), (xc, yc, np.int32(n)))
            return yc
        rows += [("parallel_map (the seed's): cupy.RawKernel", cupy_seed_way, "peer", "cupy", seed_check),
                 ("cupy.ElementwiseKernel(y = 1 / (1 + expf(-x)))", lambda: cupy_map(xc, yc), "peer", "cupy",
                  seed_check)]
    for name, call, kind, lib, check in rows:
        if lib == "cupy":  # as the seed's out.fill_(0): a row that writes nothing fails
            yc.fill(0)
        else:
            y.zero_()
        report.timed("map", name, call, sigmoid_np, kind=kind, lib=lib, **check, **common)


def histogram(report, torch, gen, n):
    cupy = report.cupy
    data = torch.randint(0, NBINS, (n,), device="cuda", dtype=torch.int32, generator=gen)
    data_u8 = data.to(torch.uint8)
    (datac, datac_u8) = views(cupy, data, data_u8)
    want = np.histogram(data.cpu().numpy(), bins=NBINS, range=(0, NBINS))[0]  # the seed's reference
    threads, blocks = 256, (n + 255) // 256  # the seed's launch: a thread a value
    grid = torch.cuda.get_device_properties(data.device).multi_processor_count * 8  # the u8 kernel strides
    seed_launch = dict(shared_mem=NBINS * 4)
    hist, hist_u8 = torch.zeros(NBINS, device="cuda", dtype=torch.int32), torch.zeros(NBINS, device="cuda",
                                                                                      dtype=torch.int32)
    seed_kernel = tally.RawModule(code=HISTOGRAM).get_function("histogram")
    u8_kernel = tally.RawKernel(HISTOGRAM_U8, "histogram_u8")

    def seed_way():
        hist.zero_()
        seed_kernel((blocks,), (threads,), (data, hist, np.int32(n), np.int32(NBINS)), **seed_launch)
        return hist

    def u8_way():
        hist_u8.zero_()
        u8_kernel((grid,), (threads,), (data_u8, hist_u8, np.int64(n)))
        return hist_u8
    report.section(f"histogram, {n} values in {NBINS} bins (the seed's RawModule, int32; its u8 form)",
                   "counts equal numpy's; GB/s: bytes of the values read (4 a value in int32, 1 in u8)")
    i32, u8 = dict(n=n, bins=NBINS, distribution="uniform i32", nbytes=4 * n), dict(n=n, bins=NBINS,
                                                                                   distribution="uniform u8", nbytes=n)
    report.timed("histogram", "histogram (the seed's): tally.RawModule", seed_way, want, **i32)
    report.timed("histogram", "__shared__ 256 bins, u8: tally.RawKernel", u8_way, want, **u8)
    report.timed("histogram", "tally.bincount(data, minlength=256)", lambda: tally.bincount(data, minlength=NBINS),
                 want, strategy="automatic", **i32)
    report.timed("histogram", "tally.histogram(data_u8, 256, (0, 256))",
                 lambda: tally.histogram(data_u8, bins=NBINS, range=(0, NBINS))[0], want, strategy="automatic", **u8)
    report.timed("histogram", "torch.bincount(data, minlength=256)", lambda: torch.bincount(data, minlength=NBINS),
                 want, kind="peer", **i32)
    if cupy is not None:
        cupy_seed = cupy.RawModule(code=HISTOGRAM).get_function("histogram")
        cupy_u8 = cupy.RawKernel(HISTOGRAM_U8, "histogram_u8")
        cupy_hist = cupy.zeros(NBINS, np.int32)

        def cupy_seed_way():
            cupy_hist.fill(0)
            cupy_seed((blocks,), (threads,), (datac, cupy_hist, np.int32(n), np.int32(NBINS)), **seed_launch)
            return cupy_hist

        def cupy_u8_way():
            cupy_hist.fill(0)
            cupy_u8((grid,), (threads,), (datac_u8, cupy_hist, np.int64(n)))
            return cupy_hist
        report.timed("histogram", "histogram (the seed's): cupy.RawModule", cupy_seed_way, want, kind="peer",
                     lib="cupy", **i32)
        report.timed("histogram", "__shared__ 256 bins, u8: cupy.RawKernel", cupy_u8_way, want, kind="peer",
                     lib="cupy", **u8)
        report.timed("histogram", "cupy.bincount(data, minlength=256)",
                     lambda: cupy.bincount(datac, minlength=NBINS), want, kind="peer", lib="cupy", **i32)


def tf32_off(torch):
    """torch's float32 matmul in full float32: allow_tf32 = False (torch 2.9 on calls it a legacy
    flag and warns; where it is gone, the flag that replaces it)."""
    import warnings
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.backends.cuda.matmul.allow_tf32 = False
        return "torch.backends.cuda.matmul.allow_tf32 = False"
    except (AttributeError, RuntimeError):
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        return "torch.backends.cuda.matmul.fp32_precision = 'ieee'"


def timing(report, torch):
    report.cupy = import_cupy()
    print(f"torch: {tf32_off(torch)}; "
          + (f"cupy {report.cupy.__version__}, CUPY_TF32={os.environ['CUPY_TF32']}" if report.cupy is not None
             else "cupy: not installed or no device; its rows are left out"))
    gen = torch.Generator(device="cuda").manual_seed(4)
    quick = report.quick
    elementwise(report, torch, gen, 10_000_000, 1_000_000 if quick else 10_000_000)
    for n in ((1 << 20,) if quick else (1 << 20, 1 << 28)):
        reduction(report, torch, gen, n)
    for size in ((1024,) if quick else (1024, 2048, 4096)):
        matmul(report, torch, gen, size)
    parallel_map(report, torch, gen, 10_000_000)
    histogram(report, torch, gen, 10_000_000)


if __name__ == "__main__":
    main(__doc__, "004", "CuPy/PyCUDA patterns: elementwise, reduction, tiled matmul, map, histogram", checks,
         timing, verdict="equal numpy's results or are within docs/patterns.md's bounds of float64 ones (the user "
         "kernels' sigmoid: within the seed's allclose)")

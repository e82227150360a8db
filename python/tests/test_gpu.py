"""CUDA inputs (torch and cupy) against numpy on host copies, and the results' library, device,
dtype and stream. Every test here is skipped where torch/cupy, a CUDA device or tally's CUDA
backend is missing (as in CI); scripts/gpu_check runs them on the GPU machine."""

import numpy as np
import pytest

import tally
from conftest import NP, NUMPY_TYPES, assert_same_array, counts_by_edges, samples, ulp_distance


def host(t):
    return t.cpu().numpy() if hasattr(t, "cpu") else t.get()


TORCH_TYPES = {"u8": "uint8", "i8": "int8", "u16": "uint16", "i16": "int16", "u32": "uint32",
               "i32": "int32", "u64": "uint64", "i64": "int64", "f16": "float16", "f32": "float32",
               "f64": "float64"}


@pytest.mark.parametrize("type_name", NUMPY_TYPES)
@pytest.mark.parametrize("distribution", ["uniform", "hot", "sorted"])
def test_torch_cuda_histogram(torch, rng, type_name, distribution):
    a = samples(rng, type_name, 100003, distribution)
    x = torch.from_numpy(a).cuda()
    for kw in [dict(bins=10), dict(bins=64, range=(0.1, 0.7)), dict(bins=[-5, 0, 0.5, 3, 4000]),
               dict(bins=7, density=True)]:
        h, e = tally.histogram(x, **kw)
        want_h, want_e = np.histogram(a, **kw)
        assert isinstance(h, torch.Tensor) and h.device == x.device and e.device == x.device
        assert_same_array(host(e), want_e)
        if kw.get("density"):
            assert h.dtype == torch.float64 and ulp_distance(host(h), want_h).max() <= 1
        else:
            assert h.dtype == torch.int64
            assert_same_array(host(h), counts_by_edges(a, want_e) if a.dtype == np.float16 else want_h)


@pytest.mark.parametrize("distribution", ["uniform", "normal", "hot"])
def test_torch_many_float32_bins_from_the_data_range(torch, rng, distribution):
    """numpy's float32 edges of a range from the data, not tally's regular ones, at 2^16 .. 2^20
    bins (the variable axis' line rule, over the edges' float32 copy): counts and edges as
    numpy's, with samples on every edge and one float32 step either side."""
    n = 1 << 20
    base = rng.standard_normal(n).astype(np.float32) if distribution == "normal" else rng.random(n).astype(np.float32)
    if distribution == "hot":
        base[rng.random(n) < 0.8] = np.float32(0.37)
    for bins in [1 << 16, 1 << 20]:
        edges = np.histogram_bin_edges(base, bins=bins).astype(np.float32)
        near = np.concatenate([edges, np.nextafter(edges, np.float32(-np.inf)), np.nextafter(edges, np.float32(np.inf))])
        a = np.concatenate([base, np.clip(near, base.min(), base.max())])
        rng.shuffle(a)
        h, e = tally.histogram(torch.from_numpy(a).cuda(), bins=bins)
        want_h, want_e = np.histogram(a, bins=bins)
        assert_same_array(host(e), want_e)
        assert_same_array(host(h), want_h)


def test_torch_bfloat16(torch, rng):
    x = torch.from_numpy(samples(rng, "f32", 50001, "skewed")).cuda().to(torch.bfloat16)
    a = x.float().cpu().numpy()
    h, e = tally.histogram(x, bins=33, range=(0.1, 5.7))
    assert e.dtype == torch.bfloat16 and h.dtype == torch.int64
    assert_same_array(host(e.double()), tally.axis.regular(33, 0.1, 5.7, "bf16").edges)
    assert_same_array(host(h), counts_by_edges(a, host(e.double())))
    h, e = tally.histogram(x, bins=12)
    assert float(e[0]) == a.min() and float(e[-1]) == a.max()
    assert_same_array(host(h), counts_by_edges(a, host(e.double())))
    c = tally.histc(x, bins=12)
    assert c.dtype == torch.bfloat16 and float(c.float().sum()) == pytest.approx(a.size, rel=1e-2)


def test_torch_weights_strides_and_nd(torch, rng):
    a = samples(rng, "f32", 3 * 40001, "uniform")
    x = torch.from_numpy(a).cuda()
    w = torch.from_numpy(rng.integers(-3, 9, a.size).astype(np.float64)).cuda()
    # Integer-valued weights: every partial sum is exact, so any order gives numpy's bits.
    h, _ = tally.histogram(x, bins=20, weights=w)
    assert h.dtype == torch.float64
    assert_same_array(host(h), np.histogram(a, bins=20, weights=host(w))[0])
    wr = torch.rand(a.size, device="cuda", dtype=torch.float64)
    h, _ = tally.histogram(x, bins=20, weights=wr)
    np.testing.assert_allclose(host(h), np.histogram(a, bins=20, weights=host(wr))[0], rtol=1e-12)
    m = x.reshape(-1, 3)
    for view in [x[::3], x.flip(0)[::7], m.t(), m[:, 1], m[::2, ::2]]:
        h, e = tally.histogram(view, bins=9)
        assert_same_array(host(h), np.histogram(host(view), bins=9)[0])
    H, edges = tally.histogramdd(m, bins=(3, 4, 5))
    want, want_edges = np.histogramdd(host(m), bins=(3, 4, 5))
    assert H.device == x.device and H.dtype == torch.float64
    assert_same_array(host(H), want)
    for g, e in zip(edges, want_edges):
        assert_same_array(host(g), e)


def test_torch_bincount_and_histc(torch, rng):
    x = torch.randint(0, 5000, (1 << 20,), device="cuda")
    assert torch.equal(tally.bincount(x), torch.bincount(x))
    assert torch.equal(tally.bincount(x, minlength=9000), torch.bincount(x, minlength=9000))
    w = torch.ones(x.numel(), device="cuda", dtype=torch.float32)
    assert torch.equal(tally.bincount(x, weights=w), torch.bincount(x, weights=w).double())
    f = torch.rand(1 << 20, device="cuda")
    c = tally.histc(f, bins=100)
    assert c.dtype == torch.float32 and c.device == f.device
    lo, hi = float(f.min()), float(f.max())
    assert np.array_equal(host(c), np.histogram(host(f), bins=100, range=(lo, hi))[0].astype(np.float32))
    # torch.histc estimates bins arithmetically: within rounding of an edge it may differ by one.
    assert np.abs(host(c) - host(torch.histc(f, bins=100))).sum() <= 0.001 * f.numel()


def test_torch_bincount_of_bytes_in_one_pass(torch):
    """A large bincount of 8-bit samples in CUDA memory counts into the type's 256 values in one
    pass (the guess cut to them) and returns torch.bincount's length: after a longer call, and
    with a maximum below 255, at 255 and of one hot value."""
    n = 1 << 24  # the one-pass path's size in CUDA memory
    tally.bincount(torch.randint(0, 70000, (n,), device="cuda"))  # a long guess for the next call
    for top in (255, 200, 0):
        x = torch.randint(0, top + 1, (n,), device="cuda", dtype=torch.uint8)
        x[n // 3] = top
        got = tally.bincount(x)
        assert got.dtype == torch.int64 and torch.equal(got, torch.bincount(x))


def test_torch_current_stream(torch):
    """Samples written on a side stream are read after that stream's work, and the result is
    ordered on the caller's current stream."""
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x = torch.empty(1 << 24, device="cuda")
        x.uniform_(0, 10)
        x.mul_(0.5)
        h, e = tally.histogram(x, bins=16, range=(0, 5))
        total = h.sum()
    s.synchronize()
    assert int(total) == x.numel()
    assert np.array_equal(host(h), np.histogram(host(x), bins=16, range=(0, 5))[0])


def test_torch_call_does_not_wait_for_the_gpu(torch, rng):
    """With the range given, nothing of the result needs the host: the call enqueues its work on
    the current stream and returns while that stream is still busy, and the results are right
    once the stream reaches them."""
    a = samples(rng, "f32", 1 << 22, "hot", 0, 1)
    w = rng.random(a.size)
    x, wx = torch.from_numpy(a).cuda(), torch.from_numpy(w).cuda()
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(1 << 30)  # about half a second of one busy stream
        h, e = tally.histogram(x, bins=64, range=(0.1, 0.9))
        hw, _ = tally.histogram(x, bins=[0, 0.25, 0.5, 1], weights=wx)
        d, _ = tally.histogram(x[::2], bins=5, range=(0, 1), density=True)
        H, _ = tally.histogramdd(x.reshape(-1, 2), bins=3, range=[(0, 1), (0, 1)])
        busy = not s.query()
    assert busy, "a call waited for its stream"
    s.synchronize()
    assert h.device == x.device and h.dtype == torch.int64
    assert_same_array(host(h), np.histogram(a, bins=64, range=(0.1, 0.9))[0])
    assert_same_array(host(e), np.histogram(a, bins=64, range=(0.1, 0.9))[1])
    np.testing.assert_allclose(host(hw), np.histogram(a, bins=[0, 0.25, 0.5, 1], weights=w)[0], rtol=1e-12)
    assert ulp_distance(host(d), np.histogram(a[::2], bins=5, range=(0, 1), density=True)[0]).max() <= 1
    assert_same_array(host(H), np.histogramdd(a.reshape(-1, 2), bins=3, range=[(0, 1), (0, 1)])[0])


def test_torch_no_input_copy(torch):
    x = torch.rand(1 << 24, device="cuda")
    torch.cuda.synchronize()
    for view in [x, x[::2]]:
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        tally.histogram(view, bins=256, range=(0, 1))
        assert torch.cuda.max_memory_allocated() - base < view.numel() * view.element_size() // 4


def test_torch_devices(torch, rng):
    x = torch.rand(1000, device="cuda")
    with pytest.raises(ValueError, match="cuda"):
        tally.histogram(x, device="cpu")
    with pytest.raises(ValueError):
        tally.histogram(x, weights=torch.rand(1000))  # weights on the host, samples on a GPU
    if torch.cuda.device_count() < 2:
        pytest.skip("one GPU: the two-device cases need two")
    y = torch.rand(1000, device="cuda:1")
    h, e = tally.histogram(y, bins=4)
    assert h.device == y.device and e.device == y.device
    with pytest.raises(ValueError, match="cuda:0.*cuda:1"):
        tally.histogram(x, weights=torch.rand(1000, device="cuda:1"))


def test_torch_cpu_tensors(rng):
    torch = pytest.importorskip("torch")
    a = samples(rng, "f32", 10001, "uniform")
    h, e = tally.histogram(torch.from_numpy(a), bins=11)
    assert isinstance(h, torch.Tensor) and h.device.type == "cpu"
    assert_same_array(h.numpy(), np.histogram(a, bins=11)[0])
    assert_same_array(e.numpy(), np.histogram(a, bins=11)[1])


@pytest.mark.parametrize("type_name", ["u8", "i32", "i64", "f16", "f32", "f64"])
def test_cupy(cupy, rng, type_name):
    a = samples(rng, type_name, 100003, "skewed")
    x = cupy.asarray(a)
    h, e = tally.histogram(x, bins=50)
    want_h, want_e = np.histogram(a, bins=50)
    assert isinstance(h, cupy.ndarray) and h.device.id == x.device.id
    assert_same_array(host(e), want_e)
    assert_same_array(host(h), counts_by_edges(a, want_e) if a.dtype == np.float16 else want_h)
    assert_same_array(host(tally.histogram(x[::3], bins=[0, 1, 2, 50])[0]),
                      np.histogram(a[::3], bins=[0, 1, 2, 50])[0])
    if type_name in ("u8", "i32", "i64"):
        k = x[x >= 0]  # bincount takes non-negative values
        assert_same_array(host(tally.bincount(k)), host(cupy.bincount(k)))


def test_cupy_current_stream(cupy):
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        x = cupy.random.random(1 << 24, dtype=cupy.float32) * 4
        h, _ = tally.histogram(x, bins=8, range=(0, 4))
        total = int(h.sum())
    assert total == x.size


def test_cupy_weights_nd_and_bincount(cupy, rng):
    a = samples(rng, "f64", 3 * 20001, "skewed")
    w = rng.integers(-2, 7, a.size).astype(np.float64)  # integer-valued: exact in any order
    x, wx = cupy.asarray(a), cupy.asarray(w)
    h, _ = tally.histogram(x, bins=12, weights=wx)
    assert isinstance(h, cupy.ndarray) and h.dtype == np.float64
    assert_same_array(host(h), np.histogram(a, bins=12, weights=w)[0])
    m = x.reshape(-1, 3)
    H, edges = tally.histogramdd(m, bins=(2, 3, 4), density=True)
    want, want_edges = np.histogramdd(a.reshape(-1, 3), bins=(2, 3, 4), density=True)
    assert ulp_distance(host(H), want).max() <= 1
    for g, e in zip(edges, want_edges):
        assert_same_array(host(g), e)
    k = cupy.asarray(rng.integers(0, 700, a.size))
    assert_same_array(host(tally.bincount(k, weights=wx[:k.size])),
                      np.bincount(host(k), weights=w[:k.size]))


def test_streaming_histogram_from_cuda_chunks(torch, rng):
    """tally.Histogram keeps its cells on the host and takes chunks from any device."""
    a = samples(rng, "i32", 200003, "skewed", 0, 1000)
    x = torch.from_numpy(a).cuda()
    h = tally.Histogram(tally.axis.integer(0, 1000))
    for chunk in x.split(30000):
        h.fill(chunk)
    h.fill(a[:1000])  # and a host chunk
    # samples reach 1000 (clipped), which integer(0, 1000) drops as overflow
    assert_same_array(h.values(), np.bincount(np.concatenate([a, a[:1000]]), minlength=1001)[:1000])
    w = rng.random(a.size)
    g = tally.Histogram(tally.axis.regular(20, 0, 1000), weighted=True)
    g.fill(x, weight=torch.from_numpy(w).cuda())
    np.testing.assert_allclose(g.values(), np.histogram(a, bins=20, range=(0, 1000), weights=w)[0],
                               rtol=1e-12)


def test_torch_plan_says_how_the_weights_sum(torch):
    """tally.plan with weights plans for their type: f32 weights sum exactly on the GPU."""
    x = torch.randint(0, 256, (1 << 20,), device="cuda", dtype=torch.int32)
    w = torch.rand(1 << 20, device="cuda")
    assert tally.plan(x, bins=256, range=(0, 256), weights=w)["exact_sums"]
    assert not tally.plan(x, bins=256, range=(0, 256), weights=w.double())["exact_sums"]


@pytest.mark.parametrize("lib", ["torch", "cupy"])
@pytest.mark.parametrize("n", [1000, 200_000, 3_000_000])
def test_first_and_repeated_calls_are_one_extension_fill(request, rng, monkeypatch, lib, n):
    """A 1-D call on a contiguous CUDA array is one call of the extension's fill_once, the first
    (full path) and the repeated (kept) alike; the planner, not Python, decides where the counts
    go (small fills: count_into's one launch; larger: the histogram's cells), so sizes on either
    side of count_into's limits count as numpy, as int64 counts or histc's float type."""
    mod = request.getfixturevalue(lib)
    a = samples(rng, "f32", n, "hot", 0.0, 1.0)
    x = mod.from_numpy(a).cuda() if lib == "torch" else mod.asarray(a)
    fills = []
    real = tally._tally.fill_once
    monkeypatch.setattr(tally._tally, "fill_once", lambda *args: fills.append(args[2]) or real(*args))
    where = (0.0, float(rng.random()) + 1.0)  # a new range: the first call takes the full path
    for call in range(2):
        fills.clear()
        h, e = tally.histogram(x, 16, where)
        assert fills == [n], (call, fills)
        want_h, want_e = np.histogram(a, 16, where)
        assert_same_array(host(e), want_e)
        assert_same_array(host(h), want_h)
    for call in range(2):
        fills.clear()
        c = tally.histc(x, 9, -1, 1)
        assert len(fills) == 1, (call, fills)
        assert_same_array(host(c), counts_by_edges(a, np.linspace(-1, 1, 10).astype(np.float32)).astype(np.float32))


@pytest.mark.parametrize("lib", ["torch", "cupy"])
def test_repeated_calls_reuse_their_arguments_parts(request, rng, lib):
    """Calls with equal arguments on contiguous CUDA arrays reuse what they derive from the
    arguments (tally._call_cache): every call on fresh data still equals numpy's, the edges come back
    as new arrays, and inputs beyond minlength, negative ones and bool arrays behave as the
    first call did."""
    mod = request.getfixturevalue(lib)
    to_device = (lambda a: mod.from_numpy(a).cuda()) if lib == "torch" else mod.asarray
    for distribution in ["uniform", "hot", "skewed", "sorted"] * 2:
        for type_name in ["u8", "u32", "i32", "i64", "f32", "f64"]:
            a = samples(rng, type_name, int(rng.integers(1, 3000)), distribution)
            x = to_device(a)
            for bins, where in [(16, (0.0, 1.0)), (16, (-0.0, 1.0)), (16, (-1.0, 0.0)), (16, (-1.0, -0.0)),
                                (7, (-2, 200)), (5, (3, 3)), (4, [1.5, 2.5])]:
                h, e = tally.histogram(x, bins, where)
                want_h, want_e = np.histogram(a, bins, where)
                assert_same_array(host(e), want_e)
                assert_same_array(host(h), want_h)
                e[0] = 123  # the next equal call's edges are a new array
            c = tally.histc(x, 9, -1, 100)
            edges = np.linspace(-1, 100, 10).astype(a.dtype if a.dtype.kind == "f" else np.float64)
            want_type = a.dtype if a.dtype.kind == "f" else np.float32
            assert_same_array(host(c), counts_by_edges(a, edges).astype(want_type))
            if a.dtype.kind in "iu":
                nonnegative = to_device(np.abs(a))
                for minlength in (0, 1, 64, 6000):
                    assert_same_array(host(tally.bincount(nonnegative, minlength=minlength)),
                                      np.bincount(np.abs(a).astype(np.int64), minlength=minlength))
                if a.min() < 0:
                    for minlength in (0, 64):
                        with pytest.raises(ValueError, match="negative"):
                            tally.bincount(x, minlength=minlength)
    flags = to_device(rng.random(100) < 0.3)
    for _ in range(2):
        with pytest.warns(RuntimeWarning, match="bool"):
            h, _ = tally.histogram(flags, 2, (0, 2))
        assert_same_array(host(h), np.bincount(host(flags).astype(np.int64), minlength=2))


@pytest.mark.parametrize("lib", ["torch", "cupy"])
def test_repeated_weighted_calls_reuse_their_arguments_parts(request, rng, lib):
    """Weighted histogram and bincount calls with equal arguments on contiguous CUDA arrays reuse
    their parts too, the weights read by address: each repeated call equals the first one (the
    full path) bit for bit, in numpy's dtype, and numpy's sums (exactly for integer-valued
    weights); weights of another shape or type, samples beyond minlength and negative samples
    behave as on the first call."""
    mod = request.getfixturevalue(lib)
    to_device = (lambda a: mod.from_numpy(a).cuda()) if lib == "torch" else mod.asarray
    for distribution in ["uniform", "hot", "skewed", "sorted"]:
        k = np.abs(samples(rng, "i32", int(rng.integers(1, 6000)), distribution)) % 64
        x = to_device(k)
        for wtype in (np.float32, np.float64):
            for integral in (True, False):
                w_host = (rng.integers(-3, 9, k.size) if integral else rng.random(k.size)).astype(wtype)
                w = to_device(w_host)
                (first, first_edges), (again, edges) = [tally.histogram(x, 64, (0, 64), weights=w) for _ in range(2)]
                want, want_edges = np.histogram(k, 64, (0, 64), weights=w_host)
                assert_same_array(host(again), host(first))
                assert_same_array(host(edges), want_edges)
                once, twice = [tally.bincount(x, w, minlength=64) for _ in range(2)]
                assert_same_array(host(twice), host(once))
                counted = np.bincount(k, weights=w_host, minlength=64)
                if integral:
                    assert_same_array(host(again), want)
                    assert_same_array(host(twice), counted)
                else:
                    assert host(again).dtype == want.dtype
                    np.testing.assert_allclose(host(again), want, rtol=1e-6)
                    np.testing.assert_allclose(host(twice), counted, rtol=1e-12)
        with pytest.raises(ValueError, match="same shape"):
            tally.histogram(x, 64, (0, 64), weights=w[1:])
        with pytest.raises(ValueError, match="same length"):
            tally.bincount(x, w[1:], minlength=64)
        w16 = to_device(w_host.astype(np.float16))
        h16, _ = tally.histogram(x, 64, (0, 64), weights=w16)
        assert host(h16).dtype == np.float16
        beyond = to_device(np.append(k, 100).astype(np.int32))
        wb_host = np.append(rng.integers(-3, 9, k.size), 5).astype(np.float64)  # integer-valued: exact sums
        assert_same_array(host(tally.bincount(beyond, to_device(wb_host), minlength=64)),
                          np.bincount(np.append(k, 100), weights=wb_host, minlength=64))
        with pytest.raises(ValueError, match="negative"):
            tally.bincount(to_device(np.append(k, -1).astype(np.int32)), to_device(wb_host), minlength=64)


@pytest.mark.parametrize("lib", ["torch", "cupy"])
def test_repeated_calls_with_an_array_of_edges_reuse_their_parts(request, rng, lib):
    """histogram calls whose bins are a numpy array of edges keep their parts by the edges'
    dtype and bytes, from their second call: repeated calls, an equal copy of the array, the array changed in place, edges
    of another dtype with equal values, -0.0 against 0.0 and weights all give numpy's result;
    the edges come back as new arrays; arrays past the kept size and decreasing ones behave as on
    the first call."""
    mod = request.getfixturevalue(lib)
    to_device = (lambda a: mod.from_numpy(a).cuda()) if lib == "torch" else mod.asarray
    for distribution in ["uniform", "hot", "skewed", "sorted"]:
        for type_name in ["u8", "i32", "f32", "f64"]:
            a = samples(rng, type_name, int(rng.integers(1, 6000)), distribution)
            x = to_device(a)
            lo, hi = float(a.min()), float(a.max())
            edges = np.unique(rng.uniform(lo - 1, hi + 1, int(rng.integers(2, 300))))
            edges = np.concatenate([edges[:1], edges, [-0.0, 0.0] if lo < 0 < hi else []])
            edges.sort(kind="stable")
            for bins in (edges, edges, edges.copy(), edges.astype(np.float32), np.round(edges).astype(np.int64)):
                for _ in range(3):  # kept from the second call, taken from the third
                    h, e = tally.histogram(x, bins)
                    want_h, want_e = np.histogram(a, bins)
                    assert_same_array(host(e), want_e)
                    assert_same_array(host(h), want_h)
                    e[0] = 123  # the next call's edges are a new array
            edges[len(edges) // 2:] += 0.5  # in place: a new key, numpy's new result
            assert_same_array(host(tally.histogram(x, edges)[0]), np.histogram(a, edges)[0])
            w_host = rng.integers(-3, 9, a.size).astype(np.float32)  # integer-valued: exact sums
            for _ in range(3):
                h, _ = tally.histogram(x, edges, weights=to_device(w_host))
                assert_same_array(host(h), np.histogram(a, edges, weights=w_host)[0])
    a = samples(rng, "f32", 5000, "uniform")
    many = np.linspace(0, 1, 5001)  # past the kept size: the full path every call
    for _ in range(2):
        assert_same_array(host(tally.histogram(to_device(a), many)[0]), np.histogram(a, many)[0])
    for _ in range(2):
        with pytest.raises(ValueError, match="monotonically"):
            tally.histogram(to_device(a), np.array([0.0, 1.0, 0.5]))


def test_torch_tensors_that_require_grad(torch, rng):
    """Tensors of an autograd graph are read as data, contiguous or strided, on the GPU and the
    CPU, as samples and as weights (torch's DLPack export refuses them; torch.histc reads them)."""
    a = samples(rng, "f32", 4001, "skewed")
    w = rng.random(a.size).astype(np.float32)
    for device in ("cuda", "cpu"):
        x = torch.from_numpy(a).to(device).requires_grad_()
        weights = torch.from_numpy(w).to(device).requires_grad_()
        for view, want in [(x, a), (x[::3], a[::3])]:
            h, e = tally.histogram(view, 12, (0.0, 4.0))
            want_h, want_e = np.histogram(want, 12, (0.0, 4.0))
            assert_same_array(host(h), want_h)
            assert_same_array(host(e), want_e)
        h, _ = tally.histogram(x, 12, (0.0, 4.0), weights=weights, sum_dtype=np.float64)
        assert_same_array(host(h), tally.histogram(a, 12, (0.0, 4.0), weights=w, sum_dtype=np.float64)[0])
        c = tally.histc(x, 9, 0, 3)
        assert host(c).sum() == np.count_nonzero((a >= 0) & (a <= 3))


def test_kept_histc_counts_in_the_inputs_float_type(torch, rng):
    """A repeated histc call writes its counts straight in the input's float type (one launch of a
    block up to 4096 samples, of a cluster up to 2^17; beyond, a memset and a launch, or a fill and
    a conversion into float16 and bfloat16): the first call's values and dtype, and the int64
    counts of numpy's rule against the edges in the input's type, converted by torch, for float16
    counts past float16's integers (2048) too."""
    for k, n in enumerate((100, 4096, 4097, 30000, 131072, 131073)):
        bins = 13 + k  # a first call (the full path) for every size
        a = samples(rng, "f32", n, "hot")
        for dtype, want_type in [(torch.float16, torch.float16), (torch.bfloat16, torch.bfloat16),
                                 (torch.float64, torch.float64), (torch.int32, torch.float32)]:
            x = torch.from_numpy(a).cuda().to(dtype)
            first, again = tally.histc(x, bins, 0, 3), tally.histc(x, bins, 0, 3)
            assert first.dtype == want_type and again.dtype == want_type
            assert torch.equal(first, again), (n, dtype)
            edges = torch.from_numpy(np.linspace(0, 3, bins + 1))
            if dtype.is_floating_point:
                edges = edges.to(dtype)
            counts = counts_by_edges(x.double().cpu().numpy(), edges.double().numpy())
            want = torch.from_numpy(counts).cuda().to(want_type)
            assert torch.equal(again, want), (n, dtype)
            if n > 2048 and dtype is torch.float16:
                assert counts.max() > 2048  # a count that float16 rounds


def test_kept_calls_on_views_and_empty_tensors(torch, rng):
    """A repeated call on a contiguous view (an offset into its storage) and on an empty tensor
    gives numpy's answer, as the first call did."""
    a = samples(rng, "i32", 5000, "uniform")
    x = torch.from_numpy(a).cuda()
    for _ in range(2):
        for view, want in [(x[7:], a[7:]), (x[:0], a[:0]), (x[100:900], a[100:900])]:
            h, e = tally.histogram(view, 20, (-1000, 5000))
            assert_same_array(host(h), np.histogram(want, 20, (-1000, 5000))[0])
            assert_same_array(host(e), np.histogram(want, 20, (-1000, 5000))[1])
            nonnegative = view.abs()
            assert_same_array(host(tally.bincount(nonnegative, minlength=10)),
                              np.bincount(np.abs(want).astype(np.int64), minlength=10))
            assert_same_array(host(tally.bincount(nonnegative)), np.bincount(np.abs(want).astype(np.int64)))

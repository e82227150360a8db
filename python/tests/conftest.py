"""Shared helpers: seeded random samples of several distributions, and exact comparisons."""

import zlib

import numpy as np
import pytest

import tally

INT_TYPES = ["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64"]
FLOAT_TYPES = ["f16", "f32", "f64"]
NUMPY_TYPES = INT_TYPES + FLOAT_TYPES  # bf16 has no numpy dtype: it is tested through torch
NP = {"u8": np.uint8, "i8": np.int8, "u16": np.uint16, "i16": np.int16, "u32": np.uint32,
      "i32": np.int32, "u64": np.uint64, "i64": np.int64, "f16": np.float16, "f32": np.float32,
      "f64": np.float64}
DISTRIBUTIONS = ["uniform", "hot", "skewed", "sorted"]


def samples(rng, type_name, n, distribution, lo=None, hi=None):
    """n random samples of a tally type name, never all equal: uniform over [lo, hi), one hot
    value (80%), skewed (exponential), or sorted uniform."""
    dtype = np.dtype(NP[type_name])
    if lo is None:
        if dtype.kind == "f":
            lo, hi = -3.0, 7.0
        else:
            info = np.iinfo(dtype)
            lo, hi = max(info.min, -1000), min(info.max, 5000)
    if distribution == "skewed":
        x = lo + rng.exponential((hi - lo) / 12, n)
    else:
        x = rng.uniform(lo, hi, n)
    if distribution == "hot":
        x[rng.random(n) < 0.8] = lo + (hi - lo) * 0.37
    x = np.clip(x, lo, hi)
    if distribution == "sorted":
        x.sort()
    if dtype.kind in "iu":
        x = np.floor(x)
    return x.astype(dtype)


def spread_weights(rng, n, specials):
    """Weights whose float64 sums depend on the order: magnitudes 2^-60 .. 2^60 of both signs, one
    in eight the negation of the one before; with `specials`, two infinities and a NaN."""
    w = rng.uniform(1, 2, n) * 2.0 ** rng.integers(-60, 61, n) * rng.choice([-1.0, 1.0], n)
    cancel = np.flatnonzero(rng.integers(0, 8, n) == 0)
    cancel = cancel[cancel > 0]
    w[cancel] = -w[cancel - 1]
    if specials:
        w[n // 4], w[n // 2], w[3 * n // 4] = np.inf, -np.inf, np.nan
    return w


def assert_same_array(got, want):
    """Same dtype, shape and bits (so edges compare bit for bit, -0.0 and NaN included)."""
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if not np.array_equal(np.ascontiguousarray(got).view(np.uint8),
                          np.ascontiguousarray(want).view(np.uint8)):
        raise AssertionError(_first_difference(got, want))


def _first_difference(got, want):
    diff = np.flatnonzero(np.asarray(got != want).ravel())
    if diff.size == 0:
        return "equal values, different bits"
    k = diff[0]
    return f"{diff.size} differ; first at {k}: got {got.ravel()[k]!r}, want {want.ravel()[k]!r}"


def bins_by_edges(a, edges):
    """Brute-force reference: each sample's bin of [e_k, e_k+1) (last bin closed), and whether it
    is in one."""
    x = np.asarray(a).ravel().astype(np.float64)
    e = np.asarray(edges, np.float64)
    idx = np.searchsorted(e, x, side="right") - 1
    idx[x == e[-1]] = e.size - 2
    inside = (idx >= 0) & (idx < e.size - 1) & ~np.isnan(x)
    return idx, inside


def counts_by_edges(a, edges):
    """Brute-force reference: the count of samples in each [e_k, e_k+1) (last bin closed)."""
    idx, inside = bins_by_edges(a, edges)
    return np.bincount(idx[inside], minlength=np.asarray(edges).size - 1).astype(np.int64)


def ulp_distance(a, b):
    """Units in the last place between float64 arrays (0 where both are equal, NaN included)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    ia = a.view(np.int64)
    ib = b.view(np.int64)
    # Map the sign-magnitude bits onto a monotonic integer line.
    ia = np.where(ia < 0, np.int64(-(2**63)) - ia, ia)
    ib = np.where(ib < 0, np.int64(-(2**63)) - ib, ib)
    d = np.abs(ia.astype(object) - ib.astype(object)).astype(np.float64)
    d[np.isnan(a) & np.isnan(b)] = 0
    return d


@pytest.fixture
def rng(request):
    """A generator seeded by the test's name, so every case has its own reproducible data."""
    seed = zlib.crc32(request.node.nodeid.encode())
    return np.random.default_rng(seed)


def require_cuda_backend():
    """Skips the test where tally's CUDA backend is not compiled in or finds no device."""
    if not any(b["name"] == "cuda" and b["usable"] for b in tally.backends()):
        pytest.skip("tally's CUDA backend is not compiled in or finds no device")


@pytest.fixture
def torch():
    """torch, on a machine where it and tally's CUDA backend find a device (else skipped)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch finds no CUDA device")
    require_cuda_backend()
    return torch


@pytest.fixture
def cupy():
    """cupy, on a machine where it and tally's CUDA backend find a device (else skipped)."""
    cupy = pytest.importorskip("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("cupy finds no CUDA device")
    except cupy.cuda.runtime.CUDARuntimeError:
        pytest.skip("cupy finds no CUDA device")
    require_cuda_backend()
    return cupy


try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the fuzz tests skip themselves without it
    pass
else:
    # The fuzz tests' profiles: "tally-ci" (the test suite: the same cases every run, no example
    # database) unless TALLY_FUZZ_EXAMPLES asks for a long run ("tally-long": random seeds).
    _quiet = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
    settings.register_profile("tally-ci", derandomize=True, database=None, deadline=None, print_blob=True,
                              suppress_health_check=_quiet)
    settings.register_profile("tally-long", database=None, deadline=None, print_blob=True,
                              suppress_health_check=_quiet)
    import os as _os
    settings.load_profile("tally-long" if _os.environ.get("TALLY_FUZZ_EXAMPLES") else "tally-ci")

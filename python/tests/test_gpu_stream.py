"""Histogram.fill_streamed: host arrays (and memory-mapped files) streamed through the GPU in
rounds of small buffers, so that the data take many rounds; compared with a CPU Histogram of the
same data and with numpy. Every test is skipped where tally's CUDA backend finds no device."""

import numpy as np
import pytest

import tally
from conftest import assert_same_array, require_cuda_backend, samples

SMALL = 1 << 20  # 1 MiB buffers: tens of MiB of samples take tens of rounds


@pytest.fixture(autouse=True)
def _cuda_backend():
    require_cuda_backend()


def _pair(axes, **options):
    """A CUDA histogram and its CPU twin."""
    return (tally.Histogram(axes, device="cuda", flow=True, **options),
            tally.Histogram(axes, device="cpu", flow=True, **options))


@pytest.mark.parametrize("type_name", ["u8", "i32", "f32", "f64"])
@pytest.mark.parametrize("distribution", ["uniform", "hot", "skewed", "sorted"])
def test_streamed_equals_the_cpu_backend_and_numpy(rng, type_name, distribution):
    a = samples(rng, type_name, 3_000_017, distribution, 0, 250)
    # numpy bins float32 samples by float32 edges
    edges = tally.axis.regular(256, 10, 240, np.float32) if type_name == "f32" else tally.axis.regular(256, 10, 240)
    h, want = _pair(edges)
    h.fill_streamed(a, buffer_bytes=SMALL)
    want.fill(a)
    assert h == want
    assert h.flow == want.flow and h.samples == a.size
    assert_same_array(h.values(), np.histogram(a, bins=256, range=(10, 240))[0])


@pytest.mark.parametrize("buffers", [2, 3])
def test_two_dimensions_with_weights_and_strided_columns(rng, buffers):
    xy = samples(rng, "f32", 2_400_014, "skewed", -1, 4).reshape(-1, 2)
    w = rng.integers(-255, 256, len(xy)) / 4  # multiples of 1/4: every partial sum exact
    h, want = _pair([tally.axis.regular(30, 0, 3), tally.axis.variable([-1, 0, 0.5, 1, 4])], weighted=True)
    h.fill_streamed(xy, weight=w, buffer_bytes=SMALL, buffers=buffers)
    want.fill(xy, weight=w)
    assert h == want


def test_a_memory_mapped_file_and_two_streamed_fills_accumulate(rng, tmp_path):
    a = samples(rng, "i16", 6_000_001, "hot", -100, 3000)
    path = tmp_path / "samples.i16"
    a.tofile(path)
    mapped = np.memmap(path, dtype=np.int16, mode="r")
    h, want = _pair(tally.axis.integer(0, 2048))
    h.fill_streamed(mapped[:1_000_003], buffer_bytes=SMALL)
    h.fill_streamed(mapped[1_000_003:], buffer_bytes=SMALL)
    want.fill(a)
    assert h == want
    del mapped


def test_fill_streams_large_host_arrays_of_a_cuda_histogram(rng):
    a = samples(rng, "u8", 70 << 20, "uniform", 0, 255)  # above fill's 64 MiB streaming threshold
    h = tally.Histogram(tally.axis.integer(0, 256), device="cuda")
    h.fill(a)
    assert_same_array(h.values(), np.bincount(a, minlength=256).astype(np.int64))


def test_bad_arguments_raise(rng):
    a = samples(rng, "f32", 1000, "uniform")
    h = tally.Histogram(tally.axis.regular(10, 0, 1), device="cuda")
    with pytest.raises(Exception, match="buffers must be 2 or more"):
        h.fill_streamed(a, buffers=1)
    with pytest.raises(Exception, match="buffer_bytes must be positive"):
        h.fill_streamed(a, buffer_bytes=0)
    with pytest.raises(ValueError, match="channel histogram"):
        tally.Histogram(tally.axis.regular(10, 0, 1), channels=3).fill_streamed(a.reshape(-1, 4)[:, :3])
    assert h.samples == 0 and not h.values().any()

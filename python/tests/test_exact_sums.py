"""Exact sums of weights (``Histogram(..., weighted=True, exact_sums=True)``): fills of parts of
the data merged in any order (+, +=, pickle, copy) equal one fill bit for bit, and every cell is
the correctly rounded sum of its weights (math.fsum, with IEEE's infinities and NaN)."""

import copy
import math
import pickle

import numpy as np
import pytest

import tally
from conftest import DISTRIBUTIONS, assert_same_array, bins_by_edges, samples, spread_weights

AXES = {
    "regular": (lambda: tally.axis.regular(37, -1.3, 2.7), -2.0, 3.5),
    "variable": (lambda: tally.axis.variable(np.sort(np.r_[-1.3, 2.7, np.linspace(-1, 2.5, 21) + 0.01])), -2.0, 3.5),
    "integer": (lambda: tally.axis.integer(-7, 23), -12, 30),
}


def correctly_rounded(weights):
    """IEEE's result for non-finite weights, else math.fsum's correctly rounded sum."""
    w = np.asarray(weights, np.float64)
    if np.isnan(w).any() or (np.isposinf(w).any() and np.isneginf(w).any()):
        return math.nan
    if np.isinf(w).any():
        return float(w[np.isinf(w)][0])
    return math.fsum(w)


def reference(columns, weights, edges, last_closed=True):
    """Each cell's correctly rounded sum, cells row-major over the axes' edges (the last bin
    closed, as numpy's, or open, as an integer axis' bins of integers)."""
    shape = [e.size - 1 for e in edges]
    flat = np.zeros(len(weights), np.int64)
    inside = np.ones(len(weights), bool)
    for x, e, bins in zip(columns, edges, shape):
        idx, ok = bins_by_edges(x, e)
        inside &= ok & (last_closed | (np.asarray(x, np.float64) != e[-1]))
        flat = flat * bins + np.where(ok, idx, 0)
    out = np.zeros(int(np.prod(shape)))
    w = np.asarray(weights, np.float64)
    for c in range(out.size):
        out[c] = correctly_rounded(w[inside & (flat == c)])
    return out.reshape(shape)


def parts_of(n, k, rng):
    """k random slices of range(n) (some may be empty), in a random order."""
    cuts = np.sort(np.r_[0, n, rng.integers(0, n + 1, k - 1)])
    return [slice(cuts[i], cuts[i + 1]) for i in rng.permutation(k)]


@pytest.mark.parametrize("kind", list(AXES))
@pytest.mark.parametrize("weight_type", [np.float64, np.float32])
def test_parts_merged_in_any_order_equal_one_fill_and_the_correctly_rounded_sums(rng, kind, weight_type):
    make, lo, hi = AXES[kind]
    order_dependent = 0
    for k in range(2, 6):
        n = 4000
        x = samples(rng, "f64" if kind != "integer" else "i16", n, DISTRIBUTIONS[k % 4], lo, hi)
        w = spread_weights(rng, n, specials=k % 2 == 0).astype(weight_type)
        whole = tally.Histogram(make(), weighted=True, exact_sums=True, flow=True)
        whole.fill(x, weight=w)
        assert whole.exact_sums
        assert_same_array(whole.values(), reference([x], w, [whole.edges], kind != "integer"))
        plain_whole = tally.Histogram(make(), weighted=True, flow=True)
        plain_whole.fill(x, weight=w)
        parts, plain = [], tally.Histogram(make(), weighted=True, flow=True)
        for i, p in enumerate(parts_of(n, k, rng)):
            h = tally.Histogram(make(), weighted=True, exact_sums=True, flow=True, threads=1 + i % 2)
            h.fill(x[p], weight=w[p])
            parts.append(h)
            q = tally.Histogram(make(), weighted=True, flow=True)
            q.fill(x[p], weight=w[p])
            plain += q
        order_dependent += plain != plain_whole
        merged = parts[0].copy()
        for h in parts[1:]:
            merged += h
        assert merged == whole
        assert_same_array(merged.values(), whole.values())
        assert merged.flow == whole.flow and merged.samples == n
        assert sum(parts[1:], parts[0]) == whole  # +
        reversed_merge = copy.deepcopy(parts[-1])
        for h in reversed(parts[:-1]):
            reversed_merge += pickle.loads(pickle.dumps(h))
        assert reversed_merge == whole
    assert order_dependent > 0, "the weights never made float64 sums depend on the order"


def test_two_dimensions_with_flow(rng):
    axes = [tally.axis.regular(9, 0, 1), tally.axis.variable([0.0, 0.1, 0.5, 0.55, 1.0])]
    n = 20000
    x, y = samples(rng, "f64", n, "skewed", -0.2, 1.2), samples(rng, "f64", n, "uniform", -0.2, 1.2)
    w = spread_weights(rng, n, specials=True)
    whole = tally.Histogram(axes, weighted=True, exact_sums=True, flow=True, threads=2)
    whole.fill(x, y, weight=w)
    assert_same_array(whole.values(), reference([x, y], w, whole.edges))
    merged = tally.Histogram(axes, weighted=True, exact_sums=True, flow=True)
    for p in parts_of(n, 4, rng):
        h = tally.Histogram(axes, weighted=True, exact_sums=True, flow=True)
        h.fill(np.stack([x[p], y[p]], axis=1), weight=w[p])
        merged += h
    assert merged == whole


def test_summed_digits_of_parts_assigned_equal_one_fill(rng):
    """What tally.distributed.all_reduce does with exact sums: the parts' exact_digits added as
    plain integers (no carries) and assigned back equal one fill bit for bit."""
    make, lo, hi = AXES["variable"]
    n = 6000
    x = samples(rng, "f64", n, "hot", lo, hi)
    w = spread_weights(rng, n, specials=True)
    whole = tally.Histogram(make(), weighted=True, exact_sums=True, flow=True)
    whole.fill(x, weight=w)
    digits, flow = 0, np.zeros(3, np.uint64)
    for p in parts_of(n, 3, rng):
        part = tally.Histogram(make(), weighted=True, exact_sums=True, flow=True)._hists[0]
        part.fill([x[p]], w[p])
        d = part.exact_digits()
        assert d.dtype == np.uint64 and d.shape == (make().bins, 71)
        digits = digits + d
        flow += np.array(part.flow(), np.uint64)
    reduced = tally.Histogram(make(), weighted=True, exact_sums=True, flow=True)
    reduced._hists[0].assign_exact_digits(digits, tuple(flow.tolist()), n)
    assert reduced == whole
    assert_same_array(reduced.values(), whole.values())
    assert np.isnan(whole.values()).any()  # the specials reached the cells


def test_exact_digits_need_exact_sums_and_their_count():
    exact = tally.Histogram(tally.axis.integer(0, 4), weighted=True, exact_sums=True)._hists[0]
    digits = exact.exact_digits()
    with pytest.raises(ValueError, match="71 a cell"):
        exact.assign_exact_digits(digits.ravel()[1:], (0, 0, 0), 0)
    plain = tally.Histogram(tally.axis.integer(0, 4), weighted=True)._hists[0]
    with pytest.raises(ValueError, match="keeps no exact sums"):
        plain.exact_digits()
    with pytest.raises(ValueError, match="keeps no exact sums"):
        plain.assign_exact_digits(digits, (0, 0, 0), 0)


def test_exact_and_plain_sums_do_not_mix():
    exact = tally.Histogram(tally.axis.integer(0, 4), weighted=True, exact_sums=True)
    plain = tally.Histogram(tally.axis.integer(0, 4), weighted=True)
    with pytest.raises(ValueError, match="exact sums of weights against f64 sums of weights"):
        exact += plain
    with pytest.raises(ValueError, match="f64 sums of weights against exact sums of weights"):
        plain + exact
    assert exact != plain
    with pytest.raises(ValueError, match="exact_sums keeps sums of weights"):
        tally.Histogram(tally.axis.integer(0, 4), exact_sums=True)


def test_plan_says_exact():
    h = tally.Histogram(tally.axis.integer(0, 4), weighted=True, exact_sums=True, device="cpu")
    assert any("exact sums" in r for r in h.plan("i64", 1 << 20)["reasons"])


@pytest.mark.parametrize("weight_type", [np.float64, np.float32])
def test_cpu_and_cuda_parts_merge_to_one_cpu_fill(rng, weight_type):
    """Host arrays filled by the CUDA backend (device="cuda") and the CPU, merged: one CPU fill."""
    if not any(b["name"] == "cuda" and b["usable"] for b in tally.backends()):
        pytest.skip("tally's CUDA backend is not compiled in or finds no device")
    for axis, lo, hi in ((tally.axis.regular(64, -1.3, 2.7), -2.0, 3.5), (tally.axis.integer(-7, 4000), -12, 4010)):
        n = 200000
        x = samples(rng, "f32" if lo == -2.0 else "i32", n, "hot", lo, hi)
        w = spread_weights(rng, n, specials=True).astype(weight_type)
        cpu = tally.Histogram(axis, weighted=True, exact_sums=True, flow=True, device="cpu")
        cpu.fill(x, weight=w)
        gpu = tally.Histogram(axis, weighted=True, exact_sums=True, flow=True, device="cuda")
        gpu.fill(x, weight=w)
        assert gpu == cpu
        merged = tally.Histogram(axis, weighted=True, exact_sums=True, flow=True, device="cuda")
        for i, p in enumerate(parts_of(n, 5, rng)):
            h = tally.Histogram(axis, weighted=True, exact_sums=True, flow=True, device="cuda" if i % 2 else "cpu")
            h.fill(x[p], weight=w[p])
            merged += h
        assert merged == cpu
        assert_same_array(merged.values(), cpu.values())

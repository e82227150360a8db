"""Merging (+, +=), comparing (==), copying and pickling tally.Histogram: histograms filled with
parts of the data and merged in any order equal one fill of all of it (counts bit for bit; sums
of weights are the float64 sums of the parts' sums, equal to one fill where those are exact)."""

import copy
import pickle
import threading
import time

import numpy as np
import pytest

import tally
from conftest import DISTRIBUTIONS, assert_same_array, counts_by_edges, samples

Axis = tally._tally.Axis


def every_axis_kind():
    """(name, axis, sample type, lo, hi): each axis kind with samples that fill it."""
    return [
        ("regular", tally.axis.regular(37, -1.3, 2.7), "f64", -2.0, 3.5),
        ("regular_f32_edges", tally.axis.regular(50, -1.3, 2.7, "f32"), "f32", -2.0, 3.5),
        ("regular_unit_integer_edges", tally.axis.regular(20, -5, 15), "i32", -10, 20),
        ("regular_exact", Axis.regular_exact(16, True, 1000, False, 3000), "i64", -1500, 3500),
        ("variable", tally.axis.variable(np.sort(np.r_[-1.3, 2.7, np.linspace(-1, 2.5, 21) + 0.01])), "f32",
         -2.0, 3.5),
        ("variable_integers", Axis.variable_integers(np.array([-50, -10, 0, 3, 3, 40, 100], np.int64)), "i64",
         -80, 130),
        ("variable_integers_unsigned", Axis.variable_integers(np.array([0, 5, 17, 100, 1000], np.uint64)), "u64",
         0, 1200),
        ("integer", tally.axis.integer(-7, 23), "i16", -12, 30),
    ]


KIND_NAMES = [k[0] for k in every_axis_kind()]


def kind_named(name):
    """Built per test: extension objects held at module level would outlive the extension."""
    return next(k for k in every_axis_kind() if k[0] == name)


def reference_counts(axis, x):
    """Brute-force counts: by the edges (last bin closed), or floor(x) - lo for an integer axis."""
    if axis.kind != "integer":
        return counts_by_edges(x, axis.edges)
    idx = np.floor(np.asarray(x, np.float64)) - axis.lo
    inside = (idx >= 0) & (idx < axis.bins)
    return np.bincount(idx[inside].astype(np.int64), minlength=axis.bins)


def parts_of(n, k, rng):
    """k contiguous parts of range(n) at random cut points (some may be empty), in random order."""
    cuts = np.sort(np.r_[0, rng.integers(0, n + 1, k - 1), n])
    parts = [slice(cuts[i], cuts[i + 1]) for i in range(k)]
    return [parts[i] for i in rng.permutation(k)]


def merged(histograms, use_add):
    out = histograms[0].copy()
    for h in histograms[1:]:
        if use_add:
            out = out + h
        else:
            out += h
    return out


@pytest.mark.parametrize("kind", KIND_NAMES)
@pytest.mark.parametrize("count_bits", [64, 32])
@pytest.mark.parametrize("flow", [True, False])
def test_parts_merged_in_any_order_equal_one_fill(rng, kind, count_bits, flow):
    name, axis, type_name, lo, hi = kind_named(kind)
    for k in range(2, 6):
        x = samples(rng, type_name, 3000 + 17 * k, DISTRIBUTIONS[k % 4], lo, hi)
        whole = tally.Histogram(axis, count_bits=count_bits, flow=flow)
        whole.fill(x)
        np.testing.assert_array_equal(whole.values(), reference_counts(axis, x))
        assert whole.values().sum() > 0
        parts = []
        for p in parts_of(x.size, k, rng):
            h = tally.Histogram(axis, count_bits=count_bits, flow=flow)
            h.fill(x[p])
            parts.append(h)
        m = merged(parts, use_add=k % 2 == 0)
        assert m == whole
        assert_same_array(m.values(), whole.values())
        assert m.samples == x.size
        if flow:
            assert m.flow == whole.flow


@pytest.mark.parametrize("dims", [2, 3])
def test_nd_parts_equal_one_fill(rng, dims):
    kinds = [every_axis_kind()[i] for i in (0, 4, 7)[:dims]]
    axes = [k[1] for k in kinds]
    ranges = [k[3:] for k in kinds]
    for k in range(2, 6):
        cols = [rng.uniform(lo, hi, 4000) for lo, hi in ranges]
        whole = tally.Histogram(axes, flow=True)
        whole.fill(*cols)
        want, _ = np.histogramdd(np.stack(cols, axis=1), bins=[a.edges for a in axes])
        np.testing.assert_array_equal(whole.values(), want.astype(np.int64))
        parts = []
        for p in parts_of(4000, k, rng):
            h = tally.Histogram(axes, flow=True)
            h.fill(np.stack([c[p] for c in cols], axis=1))  # the (N, D) form
            parts.append(h)
        assert merged(parts, use_add=k % 2 == 1) == whole


def dyadic_weights(rng, n):
    """Multiples of 2^-8 below 2^8 in magnitude: every partial sum is exact in float64."""
    return rng.integers(-(1 << 16), 1 << 16, n) * 2.0**-8


@pytest.mark.parametrize("kind", KIND_NAMES)
@pytest.mark.parametrize("weight_type", [np.float64, np.float32])
def test_weighted_merge_is_the_float64_sum_of_the_parts(rng, kind, weight_type):
    name, axis, type_name, lo, hi = kind_named(kind)
    for exact in (True, False):
        for k in range(2, 6):
            n = 3000
            x = samples(rng, type_name, n, DISTRIBUTIONS[k % 4], lo, hi)
            w = dyadic_weights(rng, n) if exact else rng.standard_normal(n) * 2.0 ** rng.integers(-30, 30, n)
            w = w.astype(weight_type)
            whole = tally.Histogram(axis, weighted=True, flow=True)
            whole.fill(x, weight=w)
            parts = []
            order = parts_of(n, k, rng)
            for p in order:
                h = tally.Histogram(axis, weighted=True, flow=True)
                h.fill(x[p], weight=w[p])
                parts.append(h)
            m = merged(parts, use_add=False)
            # Always: each cell is the float64 sum of the parts' cells, added in merge order.
            folded = parts[0].values().copy()
            for h in parts[1:]:
                folded += h.values()
            assert_same_array(m.values(), folded)
            assert m.samples == n and m.flow == whole.flow
            if exact:  # and then it is one fill's sums, bit for bit
                assert m == whole
            else:  # within the rounding of the additions
                np.testing.assert_allclose(m.values(), whole.values(), rtol=1e-12, atol=1e-3)


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_channel_histograms_merge_per_channel(rng, channels):
    for k in range(2, 6):
        pixels = rng.integers(0, 256, (2001, channels), dtype=np.uint8)
        pixels[rng.random(2001) < 0.5, 0] = 37  # one hot value in channel 0
        whole = tally.Histogram(tally.axis.integer(0, 256), channels=channels, count_bits=32)
        whole.fill(pixels)
        for c in range(channels):
            np.testing.assert_array_equal(whole.values()[c], np.bincount(pixels[:, c], minlength=256))
        parts = []
        for p in parts_of(2001, k, rng):
            h = tally.Histogram(tally.axis.integer(0, 256), channels=channels, count_bits=32)
            h.fill(pixels[p])
            parts.append(h)
        m = merged(parts, use_add=k % 2 == 0)
        assert m == whole
        h2 = pickle.loads(pickle.dumps(m))
        assert h2 == whole and h2._channels == channels


def test_self_merge_doubles():
    h = tally.Histogram(tally.axis.regular(10, 0, 1), flow=True)
    x = np.random.default_rng(3).normal(0.5, 0.3, 1000)
    h.fill(x)
    want = 2 * h.values()
    h += h
    np.testing.assert_array_equal(h.values(), want)
    assert h.samples == 2000


def test_plus_leaves_both_operands_unchanged():
    a = tally.Histogram(tally.axis.integer(0, 5))
    b = tally.Histogram(tally.axis.integer(0, 5))
    a.fill(np.array([0, 1, 1, 4]))
    b.fill(np.array([1, 2]))
    c = a + b
    np.testing.assert_array_equal(c.values(), [1, 3, 1, 0, 1])
    np.testing.assert_array_equal(a.values(), [1, 2, 0, 0, 1])
    np.testing.assert_array_equal(b.values(), [0, 1, 1, 0, 0])


def mismatches():
    r = tally.axis.regular(10, 0, 1)
    edges = r.edges.copy()
    edges[4] = np.nextafter(edges[4], 1)
    return [
        (tally.Histogram(tally.axis.regular(11, 0, 1)), "axis 0 differs"),
        (tally.Histogram(tally.axis.regular(10, 0, 1, "f32")), "axis 0 differs"),
        (tally.Histogram(tally.axis.variable(edges)), "axis 0 differs"),
        (tally.Histogram(tally.axis.variable(r.edges)), "axis 0 differs"),
        (tally.Histogram(tally.axis.integer(0, 10)), "axis 0 differs"),
        (tally.Histogram([r, tally.axis.integer(0, 2)]), "1 axes against 2"),
        (tally.Histogram(r, count_bits=32), "u64 counts against u32 counts"),
        (tally.Histogram(r, weighted=True), "u64 counts against f64 sums of weights"),
        (tally.Histogram(r, flow=True), "flow counters off against on"),
        (tally.Histogram(r, channels=2), "a plain histogram against 2 channels"),
    ]


@pytest.mark.parametrize("case", range(len(mismatches())))
def test_mismatched_axes_or_options_raise_and_change_nothing(case):
    other, message = mismatches()[case]
    h = tally.Histogram(tally.axis.regular(10, 0, 1))
    h.fill(np.random.default_rng(5).uniform(0, 1, 100))
    before = h.copy()
    with pytest.raises(ValueError, match=message):
        h += other
    with pytest.raises(ValueError, match=message):
        h + other
    assert h == before
    assert not h == other


def test_channel_merge_is_all_or_nothing():
    a = tally.Histogram([tally.axis.integer(0, 4), tally.axis.integer(0, 5)], channels=2)
    b = tally.Histogram([tally.axis.integer(0, 4), tally.axis.integer(0, 6)], channels=2)
    a.fill(np.array([[0, 1], [3, 4]], np.uint8))
    before = a.copy()
    with pytest.raises(ValueError, match="channel 1 differ"):
        a += b
    assert a == before


def _samples_at(raw):
    """Where samples() is in serialized bytes: after the magic, version, codes, names and threads."""
    at = 14 + 1 + raw[14]  # the backend's name
    return at + 1 + raw[at] + 4  # the strategy's name, threads


def with_count(blob, cell_bytes, count, samples_added):
    """Serialized bytes with the count at cell_bytes (a slice) set and samples() raised by
    samples_added, as a fill of those samples would (deserialize checks samples() against the cells)."""
    raw = bytearray(blob)
    raw[cell_bytes] = count.to_bytes(len(raw[cell_bytes]), "little")
    at = _samples_at(raw)
    raw[at:at + 8] = (int.from_bytes(raw[at:at + 8], "little") + samples_added).to_bytes(8, "little")
    return bytes(raw)


def test_channel_merge_that_would_overflow_changes_no_channel():
    a = tally.Histogram(tally.axis.integer(0, 3), channels=2, count_bits=32)
    a.fill(np.array([[0, 1], [2, 1]], np.uint8))
    state = a.__getstate__()
    # Channel 1, cell 1 (2 pixels there); each channel saw the same pixels (channel 0's in no bin).
    added = 2**32 - 4
    state["histograms"][1] = with_count(state["histograms"][1], slice(-8, -4), 2**32 - 2, added)
    state["histograms"][0] = with_count(state["histograms"][0], slice(-4, None), 1, added)
    full = tally.Histogram.__new__(tally.Histogram)
    full.__setstate__(state)
    before = full.copy()
    with pytest.raises(ValueError, match="bin 1 would overflow"):
        full += a  # channel 0 would fit; channel 1 does not
    assert full == before


def test_merge_with_something_else_is_a_type_error():
    h = tally.Histogram(tally.axis.integer(0, 4))
    with pytest.raises(TypeError):
        h + 1
    with pytest.raises(TypeError):
        h += np.zeros(4)
    assert (h == 3) is False


def test_u32_merge_overflow_raises_and_changes_nothing():
    h = tally.Histogram(tally.axis.integer(0, 3), count_bits=32)
    h.fill(np.array([0, 1, 1, 2]))
    # A histogram with a count near 2^32: its bytes, with one cell replaced.
    state = h.__getstate__()
    state["histograms"] = [with_count(state["histograms"][0], slice(-8, -4), 2**32 - 2, 2**32 - 4)]  # cell 1
    full = tally.Histogram.__new__(tally.Histogram)
    full.__setstate__(state)
    np.testing.assert_array_equal(full.values(), [1, 2**32 - 2, 1])
    before = full.copy()
    with pytest.raises(ValueError, match="bin 1 would overflow its 32-bit count"):
        full += h
    assert full == before


def test_copies_are_equal_and_independent():
    for name, axis, type_name, lo, hi in every_axis_kind():
        h = tally.Histogram(axis, flow=True, count_bits=32)
        h.fill(samples(np.random.default_rng(7), type_name, 500, "uniform", lo, hi))
        for c in (h.copy(), copy.copy(h), copy.deepcopy(h)):
            assert c == h and c is not h
            c.fill(samples(np.random.default_rng(8), type_name, 10, "uniform", lo, hi))
            assert c != h
            assert h.samples == 500


@pytest.mark.parametrize("kind", KIND_NAMES)
@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_pickle_round_trip(rng, kind, protocol):
    name, axis, type_name, lo, hi = kind_named(kind)
    x = samples(rng, type_name, 2000, "skewed", lo, hi)
    made = [tally.Histogram(axis, flow=True), tally.Histogram(axis, count_bits=32),
            tally.Histogram(axis, weighted=True, flow=True), tally.Histogram([axis, tally.axis.integer(0, 3)])]
    y = rng.integers(-1, 4, x.size).astype(x.dtype)
    w = rng.standard_normal(x.size)

    def fill(h):
        if h.ndim == 2:
            h.fill(x, y)
        elif h._hists[0].weighted:
            h.fill(x, weight=w)
        else:
            h.fill(x)

    for h in made:
        fill(h)
        back = pickle.loads(pickle.dumps(h, protocol=protocol))
        assert back == h
        assert_same_array(back.values(), h.values())
        assert back.samples == h.samples
        assert [a.edges.tobytes() for a in back.axes] == [a.edges.tobytes() for a in h.axes]
        fill(back)  # it still fills
        fill(h)
        assert back == h


def test_pickle_keeps_the_device_choice():
    for device in ("cpu", None):
        h = tally.Histogram(tally.axis.integer(0, 4), device=device)
        h.fill(np.array([1, 2, 2]))
        back = pickle.loads(pickle.dumps(h))
        assert back._backend == h._backend and back == h
    cuda_usable = any(b["name"] == "cuda" and b["usable"] for b in tally.backends())
    h = tally.Histogram(tally.axis.integer(0, 4), device="cuda")
    back = pickle.loads(pickle.dumps(h))
    # Where CUDA is usable the histogram stays on it; elsewhere it fills where its samples are.
    assert back._backend == ("cuda" if cuda_usable else "auto")
    back.fill(np.array([0, 3]))
    np.testing.assert_array_equal(back.values(), [1, 0, 0, 1])


def test_corrupt_pickle_state_is_a_clear_error():
    h = tally.Histogram(tally.axis.integer(0, 4))
    state = h.__getstate__()
    for bad, message in [(state["histograms"][0][:-1], "truncated input"), (b"TALL", "truncated input"),
                         (b"X" * 200, "wrong magic")]:
        s = dict(state, histograms=[bad])
        with pytest.raises(ValueError, match="deserialize: .*" + message):
            tally.Histogram.__new__(tally.Histogram).__setstate__(s)
    with pytest.raises(ValueError, match="unknown pickle format"):
        tally.Histogram.__new__(tally.Histogram).__setstate__(dict(state, format=9))


def _loads(state):
    h = tally.Histogram.__new__(tally.Histogram)
    h.__setstate__(state)
    return h


def test_pickle_state_is_checked_whole():
    # A loaded histogram is the one saved or an error, never a histogram with a wrong channel
    # count, device or flow option.
    h = tally.Histogram(tally.axis.integer(0, 4), flow=True)
    h.fill(np.array([1, 2, 2, 9]))
    state = h.__getstate__()
    back = _loads(dict(state, device=None))
    assert back == h and back._backend == "auto"
    c = tally.Histogram([tally.axis.integer(0, 4), tally.axis.regular(3, 0, 1)], channels=2)
    c.fill(np.array([[1, 0.5], [3, 0.1]]))
    cs = c.__getstate__()
    assert _loads(dict(cs, channels=np.int64(2))) == c
    other = tally.Histogram(tally.axis.integer(0, 4), channels=2)
    other.fill(np.array([[1, 1]]))
    bad = [
        ([1, 2], TypeError, "must be a dict"),
        (dict(state, extra=1), ValueError, "keys must be"),
        ({k: v for k, v in state.items() if k != "flow"}, ValueError, "keys must be"),
        (dict(state, device=3), TypeError, "device must be a str or None"),
        (dict(state, device="gpu"), ValueError, "device must be 'auto', 'cpu', 'cuda' or None"),
        # The device is the backend the histogram's bytes name: another would load as neither.
        (dict(state, device="cpu"), ValueError, "the pickle state's device is cpu, its histogram's bytes name "
                                                "backend auto"),
        (dict(state, histograms=tally.Histogram(tally.axis.integer(0, 4), flow=True, device="cpu").__getstate__()
              ["histograms"]), ValueError, "device is auto, its histogram's bytes name backend cpu"),
        (dict(state, flow="yes"), TypeError, "flow must be a bool"),
        (dict(state, flow=False), ValueError, "flow=False differs from its histograms'"),
        (dict(state, channels="2"), TypeError, "channels must be an int or None"),
        (dict(state, channels=1.0), TypeError, "channels must be an int or None"),
        (dict(state, channels=0), ValueError, "channels must be >= 1, got 0"),
        (dict(state, channels=-3), ValueError, "channels must be >= 1, got -3"),
        (dict(state, channels=2), ValueError, "1 histograms in the pickle state for 2 channels"),
        (dict(cs, channels=None), ValueError, "2 histograms in the pickle state for a plain histogram"),
        (dict(cs, channels=3), ValueError, "2 histograms in the pickle state for 3 channels"),
        (dict(state, histograms=state["histograms"][0]), TypeError, "must be a list of bytes"),
        (dict(state, histograms=[bytearray(state["histograms"][0])]), TypeError, "must be a list of bytes"),
        # Channels as the constructor makes them: 1-D counts of one width, the same pixels each.
        (dict(cs, histograms=[cs["histograms"][0], tally.Histogram([tally.axis.integer(0, 2)] * 2).__getstate__()
                              ["histograms"][0]]), ValueError, "channel 1 of the pickle state is not a 1-D"),
        (dict(cs, histograms=[tally.Histogram(tally.axis.integer(0, 2), weighted=True).__getstate__()
                              ["histograms"][0], cs["histograms"][1]]), ValueError, "channel 0 of the pickle"),
        (dict(cs, histograms=[cs["histograms"][0], tally.Histogram(tally.axis.integer(0, 2), count_bits=32)
                              .__getstate__()["histograms"][0]]), ValueError, "count width or samples"),
        (dict(cs, histograms=[cs["histograms"][0], other.__getstate__()["histograms"][1]]), ValueError,
         "count width or samples"),
    ]
    for s, error, message in bad:
        with pytest.raises(error, match=message):
            _loads(s)


def test_pickled_bytes_must_match_their_cells():
    h = tally.Histogram(tally.axis.integer(0, 3), flow=True)
    h.fill(np.array([0, 1, 1, 7]))
    blob = h.__getstate__()["histograms"][0]
    at = _samples_at(blob)
    load = lambda b: _loads(dict(h.__getstate__(), histograms=[b]))
    assert load(blob) == h
    # A count the cells and samples() agree on, but of 2^63: numpy's int64 would show it negative.
    near = with_count(blob, slice(-16, -8), 2**63 - 1, 2**63 - 3)
    assert load(near).values()[1] == 2**63 - 1
    with pytest.raises(ValueError, match="cell 1's count 9223372036854775808 is 2\\^63 or more"):
        load(with_count(blob, slice(-16, -8), 2**63, 2**63 - 2))
    # A name that is not ASCII: tally's message, which quotes no raw byte (it would not decode).
    with pytest.raises(ValueError, match="the backend name holds byte 255 at 0, not printable ASCII"):
        load(blob[:15] + b"\xff" + blob[16:])
    # samples() that is not the cells' counts plus the dropped samples.
    with pytest.raises(ValueError, match="samples\\(\\) 5 is not the cells' 3 counts plus the 1 dropped"):
        load(blob[:at] + (5).to_bytes(8, "little") + blob[at + 8:])


def test_bytes_of_many_axes_of_many_bins_are_rejected_quickly():
    # 1 MiB of 17,241 close-edged regular axes of 124,984 bins: each alone fits the bytes left, and
    # was built (2 * 10^9 edge checks, 3 s); their cells together are refused at the second axis.
    axis = (b"\0" + (124984).to_bytes(8, "little") + np.array([1e15, 1e15 + 0.5 * 124984]).tobytes()
            + b"\3f64")
    head = b"TALLYHST" + (1).to_bytes(4, "little") + b"\1\0\3cpu\x09automatic" + (1).to_bytes(4, "little")
    blob = head + bytes(32) + (17241).to_bytes(4, "little") + axis * 17241
    blob += bytes((1 << 20) - len(blob))
    h = tally.Histogram(tally.axis.integer(0, 3))
    start = time.perf_counter()
    with pytest.raises(ValueError, match="axis 1 of 17241 \\(124984 bins\\) makes more cells than the"):
        _loads(dict(h.__getstate__(), histograms=[blob]))
    assert time.perf_counter() - start < 1.0  # a denial-of-service guard: about 1 ms


def test_concurrent_merges_in_both_directions_do_not_deadlock():
    a = tally.Histogram(tally.axis.integer(0, 64))
    b = tally.Histogram(tally.axis.integer(0, 64))
    a.fill(np.arange(64))
    b.fill(np.arange(64))
    errors = []

    def work(x, y):
        try:
            for _ in range(15):  # 45 merges that at most double: far from 2^64
                x += y
                x.fill(np.arange(64))
                assert x == x
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=p) for p in ((a, b), (b, a), (a, a))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert not errors
    # Every count is the same in every bin: the merges and fills added whole histograms.
    for h in (a, b):
        v = h.values()
        assert (v == v[0]).all() and v[0] > 1

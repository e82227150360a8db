"""Differential fuzz of tally's numpy functions against numpy itself (hypothesis).

Every public function (histogram, histogram_bin_edges, histogram2d, histogramdd, bincount; histc
against a numpy model of torch.histc) with every sample dtype tally takes (bool where numpy takes
it), 64-bit integers near their limits, subnormal, huge and narrow float ranges, mixed-dtype N-D
columns, array-likes (lists, tuples, masked arrays, memoryviews, strided and big-endian views,
__array__ and __array_function__ objects), positional and keyword calls, weights of several
dtypes, density, ranges and bins (counts, edges with repeats and infinities, estimators).

Where numpy raises, tally raises the same class; else the results are numpy's exact type and
dtype, counts and edges bit for bit, and weighted sums bit for bit where docs/exactness.md promises
numpy's bits (bincount; histogram on equal bins), else within the rounding of another summation
order. Where numpy fails in its own arithmetic, tally's answer is checked otherwise:
- IndexError of 64-bit integers beyond 2^53 in a range numpy's float64 cannot resolve, and
  OverflowError of a Python-int range beyond int64 (numpy converts it to int64): tally counts
  exactly the samples in the range (uint64 samples: as numpy with uint64 scalars; float samples:
  as numpy with the range as floats);
- float16 samples on equal bins, equal bins narrower than their type's smallest normal number
  (linspace's subnormal step moves the edges off numpy's estimate), and IndexError of
  float16/float32 ranges whose width overflows the type: tally counts by the edges numpy
  returns (edges that overflow to NaN: ValueError);
- the sign of an end edge from data whose minimum or maximum is a zero held as both 0.0 and
  -0.0: numpy's depends on the layout it reduces (a stacked copy in histogramdd) and its SIMD
  width;
- an estimator's estimate of no bins: numpy.histogram fails, tally answers no bins;
- histogramdd/histogram2d: an empty edges array (IndexError) is no bins; numpy's MemoryError for
  its (bins + 2) ** D cells, tally's answer where its own cells fit; int64 samples with uint64
  edges (or the reverse) beyond 2^53, which numpy searches in float64 but tests the last edge
  exactly, are not compared;
- edges arrays with weights: numpy subtracts cumulative sums, which turn NaN after a non-finite
  or overflowing weight; only numpy's finite bins are compared there.

Every case is a JSON-able dict, so failures become files in fuzz_corpus/numpy/ ({"note": ...,
"case": ...}; an "xfail" key marks a known bug, with its reason), replayed every run. The short
run is part of the test suite (conftest's "tally-ci" hypothesis profile: derandomized, no
database). The long run goes in processes of 100,000 cases under a memory limit, so that a case
that would take the machine's memory is a MemoryError the comparison sees, not a process the
system kills:

    for i in $(seq 10); do (ulimit -v 10000000; TALLY_FUZZ_EXAMPLES=100000 PYTHONPATH=build/python \\
        .venv/bin/python -m pytest -q -p no:cacheprovider python/tests/test_fuzz.py); done

runs about TALLY_FUZZ_EXAMPLES cases over this file's tests a process (random seeds unless
--hypothesis-seed=N; the same variable scales test_fuzz_bytes.py and test_fuzz_cli.py).
TALLY_FUZZ_COLLECT=FILE appends each failing case to FILE (JSON lines, ready for the corpus)
instead of stopping at the first."""

import json
import math
import os
import pathlib
import warnings

import numpy as np
import pytest

pytest.importorskip("hypothesis")
from hypothesis import assume, given, settings  # noqa: E402  (after the skip: needs hypothesis)
from hypothesis import note as _hypothesis_note  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.control import currently_in_test_context  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import tally  # noqa: E402

FUZZ_EXAMPLES = int(os.environ.get("TALLY_FUZZ_EXAMPLES", "0"))
COLLECT = os.environ.get("TALLY_FUZZ_COLLECT")
CORPUS = pathlib.Path(__file__).with_name("fuzz_corpus")


def fuzz_settings(short, share):
    """`short` examples in the test suite; `share` of TALLY_FUZZ_EXAMPLES in a long run."""
    return settings(max_examples=max(short, int(FUZZ_EXAMPLES * share)) if FUZZ_EXAMPLES else short)


def note(text):
    """hypothesis' note, where a hypothesis test runs (the corpus tests are plain tests)."""
    if currently_in_test_context():
        _hypothesis_note(text)


def corpus_cases(kind):
    """fuzz_corpus/<kind>/*.json as pytest params, xfail where the file says so."""
    params = []
    for path in sorted((CORPUS / kind).glob("*.json")):
        entry = json.loads(path.read_text())
        marks = [pytest.mark.xfail(reason=entry["xfail"], strict=True)] if entry.get("xfail") else []
        params.append(pytest.param(entry, id=path.stem, marks=marks))
    return params


INTS = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64"]
FLOATS = ["float16", "float32", "float64"]
DTYPES = INTS + FLOATS + ["bool"]
ESTIMATORS = ["auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt"]


# ---- cases as JSON: tagged values, floats by repr (NaN, inf and -0.0 survive) ----

def enc(v):
    if isinstance(v, np.ma.MaskedArray):
        return {"masked": enc(np.asarray(v)), "mask": np.ma.getmaskarray(v).ravel().tolist()}
    if isinstance(v, np.ndarray):
        values = v.ravel().tolist()
        if v.dtype.kind == "c":
            values = [[z.real, z.imag] for z in values]
        elif v.dtype.kind == "O":
            values = [enc(x) for x in values]
        return {"array": v.dtype.str, "shape": list(v.shape), "values": values}
    if isinstance(v, np.generic):
        return {"scalar": v.dtype.str, "value": v.item()}
    if isinstance(v, tuple):
        return {"tuple": [enc(x) for x in v]}
    if isinstance(v, list):
        return [enc(x) for x in v]
    if isinstance(v, complex):
        return {"complex": [v.real, v.imag]}
    if isinstance(v, dict):
        return {"dict": {k: enc(x) for k, x in v.items()}}
    assert v is None or isinstance(v, (bool, int, float, str)), type(v)
    return v


def dec(v):
    if isinstance(v, list):
        return [dec(x) for x in v]
    if not isinstance(v, dict):
        return v
    if "masked" in v:
        a = dec(v["masked"])
        return np.ma.masked_array(a, np.array(v["mask"], bool).reshape(a.shape))
    if "array" in v:
        dt = np.dtype(v["array"])
        if dt.kind == "O":
            out = np.empty(len(v["values"]), object)
            out[:] = [dec(x) for x in v["values"]]
            return out.reshape(v["shape"])
        values = [complex(*z) for z in v["values"]] if dt.kind == "c" else v["values"]
        with np.errstate(all="ignore"):
            return np.array(values, dtype=np.float64 if dt.kind == "f" else dt).astype(dt).reshape(v["shape"])
    if "scalar" in v:
        return np.dtype(v["scalar"]).type(v["value"])
    if "tuple" in v:
        return tuple(dec(x) for x in v["tuple"])
    if "complex" in v:
        return complex(*v["complex"])
    if "dict" in v:
        return {k: dec(x) for k, x in v["dict"].items()}
    raise ValueError(v)


class ArrayLike:
    """An object numpy reads through __array__ (with a length, as numpy's bincount looks for)."""

    def __init__(self, a):
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a if dtype is None else self._a.astype(dtype)

    def __len__(self):
        return len(self._a)


class Dispatched:
    """An object that overrides numpy's functions: both must hand the call to it."""

    def __array_function__(self, func, types, args, kwargs):
        return "dispatched", func.__name__


def as_like(a, like):
    """The array `a` passed as another array-like (numpy reads each the same way)."""
    if like == "list":
        return a.tolist()
    if like == "tuple":
        return tuple(a.tolist()) if a.ndim == 1 else a.tolist()
    if like == "memoryview":
        return memoryview(np.ascontiguousarray(a))
    if like == "masked":  # numpy reads the data, mask or not
        return np.ma.masked_array(a, (np.arange(a.size) % 3 == 0).reshape(a.shape))
    if like == "array":
        return ArrayLike(a)
    if like == "strided":
        wide = np.repeat(a, 2, axis=0)
        return wide[::2]
    if like == "bigendian":
        return a.astype(a.dtype.newbyteorder(">")) if a.dtype.itemsize > 1 else a
    if like == "dispatch":
        return Dispatched()
    return a


# ---- samples ----

def _pool(dt):
    if dt.kind == "b":
        return [False, True]
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = int(info.min), int(info.max)
        vals = {0, 1, 2, 3, 7, lo, lo + 1, lo + 2, hi, hi - 1, hi - 2, hi // 2, lo // 2, 2**53, 2**53 + 1,
                2**53 - 1, -2**53, -2**53 - 1, 2**62, -2**62, 2**63}
        return sorted(v for v in vals if lo <= v <= hi)
    fi = np.finfo(dt)
    return [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 3.0, 2.0**53, 2.0**53 + 2, float(fi.max), -float(fi.max),
            float(fi.tiny), float(fi.smallest_subnormal), -float(fi.smallest_subnormal), float(fi.eps),
            1.0 + float(fi.eps), math.inf, -math.inf, math.nan]


def _cluster(dt, n, seed, where, spread, scale, specials):
    """Values around one point (the old numpy-RNG fuzz's generator): integers near either limit
    or inside, floats of scales 1e-310 .. 1e300 with a few inf and NaN."""
    rng = np.random.default_rng(seed)
    if dt.kind == "b":
        return rng.random(n) < 0.5
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = int(info.min), int(info.max)
        centre = [hi, lo, 0, int(rng.integers(lo // 2, hi // 2 + 1))][where]
        d = rng.integers(-spread, spread + 1, n)
        return np.array([min(hi, max(lo, centre + int(v))) for v in d], dt)
    scales = [1e-310, 1e-30, 1.0, 1e5, 1e300] if dt == np.float64 else [1e-5, 1.0, 100.0, 3e4]
    s = scales[scale % len(scales)]
    x = rng.normal(size=n) * s + [0.0, 3 * s, -3 * s, 1.0][where] * (s if where < 3 else 1)
    if specials:
        x[rng.random(n) < 0.03] = np.inf
        x[rng.random(n) < 0.03] = -np.inf
        x[rng.random(n) < 0.03] = np.nan
    with np.errstate(over="ignore"):
        return x.astype(dt)


@st.composite
def sample_arrays(draw, dtype, n=None, max_n=300):
    dt = np.dtype(dtype)
    mode = draw(st.sampled_from(["cluster", "cluster", "elements", "pool"]))
    if n is None:
        n = draw(st.integers(0, max_n if mode == "cluster" else 24))
    if mode == "cluster":
        return _cluster(dt, n, draw(st.integers(0, 2**32 - 1)), draw(st.integers(0, 3)),
                        draw(st.sampled_from([0, 3, 10, 1000, 2**20, 2**40])), draw(st.integers(0, 4)),
                        draw(st.booleans()))
    if mode == "pool":
        with np.errstate(over="ignore"):
            return np.array(draw(st.lists(st.sampled_from(_pool(dt)), min_size=n, max_size=n)),
                            np.float64 if dt.kind == "f" else object).astype(dt)
    return draw(hnp.arrays(dt, n, elements=hnp.from_dtype(dt)))


def _finite(a):
    a = np.asarray(a)
    if a.dtype == bool:
        a = a.astype(np.uint8)
    return a[np.isfinite(a)] if a.dtype.kind == "f" else a


@st.composite
def edges_for(draw, a):
    """An edges array: picks among the samples (repeats, values on edges), maybe infinite ends,
    maybe of another dtype; rarely unsorted, too short or 2-D."""
    f = _finite(a).ravel()
    k = draw(st.integers(0, 12))
    if f.size:
        e = f[draw(st.lists(st.integers(0, f.size - 1), min_size=k, max_size=k))]
    else:
        e = np.array(draw(st.lists(st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0]), min_size=k, max_size=k)))
    e = np.sort(e)
    dtype = draw(st.sampled_from(["same", "same", "float64", "float32", "int64", "uint64", "int8", "float16"]))
    if dtype != "same":
        if np.dtype(dtype).kind in "iu":
            info = np.iinfo(dtype)
            vals = (np.floor(e.astype(np.float64)) if e.dtype.kind == "f" else e).tolist()
            e = np.array(sorted(min(max(int(x), int(info.min)), int(info.max)) for x in vals), dtype)
        else:
            with np.errstate(over="ignore"):
                e = np.sort(e.astype(dtype))
    if e.dtype.kind == "f" and draw(st.booleans()):
        e = np.concatenate([[-np.inf] if draw(st.booleans()) else [], e, [np.inf] if draw(st.booleans()) else []]
                           ).astype(e.dtype)
    odd = draw(st.integers(0, 19))
    if odd == 0 and e.size > 1:
        e = e[::-1].copy()
    elif odd == 1:
        e = np.stack([e, e])
    elif odd == 2 and e.dtype.kind == "f":
        e = np.append(e, np.nan).astype(e.dtype)
    return e


def _estimate_ok(a, name, range_):
    """Whether numpy's estimator gives a sane number of bins (numpy would allocate billions)."""
    from numpy.lib import _histograms_impl as impl
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = np.asarray(a).ravel()
            x = x.astype(np.uint8) if x.dtype == bool else x
            first, last = impl._get_outer_edges(x, range_)
            if range_ is not None:
                x = x[(x >= first) & (x <= last)]
            if x.size == 0:
                return True
            width = impl._hist_bin_selectors[name](x, (first, last))
            return not width or impl._unsigned_subtract(last, first) / width < 20000
    except Exception:
        return True


@st.composite
def bins_for(draw, a):
    kind = draw(st.sampled_from(["int", "int", "int", "edges", "edges", "estimator", "odd"]))
    if kind == "int":
        return draw(st.one_of(st.integers(1, 300), st.integers(1, 3), st.integers(301, 5000)))
    if kind == "estimator":
        return draw(st.sampled_from(ESTIMATORS))
    if kind == "edges":
        return draw(edges_for(a))
    return draw(st.sampled_from([0, -1, 2.5, np.int8(3), np.uint64(4), np.int64(7), True, "3", "bogus",
                                 np.array(5), [], [1.0], np.float64(4.0), 10**19]))


@st.composite
def range_for(draw, a):
    kind = draw(st.sampled_from(["none", "none", "data", "data", "inner", "reversed", "equal", "nonfinite",
                                 "wide", "short"]))
    if kind == "none":
        return None
    f = _finite(a).ravel()
    if f.size == 0:
        lo, hi = 0, 1
    else:
        lo, hi = f.min(), f.max()
    if kind == "inner" and f.size:
        lo, hi = np.sort(f[draw(st.lists(st.integers(0, f.size - 1), min_size=2, max_size=2))])
    elif kind == "reversed":
        with np.errstate(all="ignore"):
            lo, hi = hi, (lo if lo != hi else lo - 1)
    elif kind == "equal":
        hi = lo
    elif kind == "nonfinite":
        lo, hi = draw(st.sampled_from([(math.nan, 1.0), (-math.inf, 1.0), (0.0, math.inf), (math.nan, math.nan)]))
    elif kind == "wide":
        lo, hi = draw(st.sampled_from([(-2**63, 2**63 - 1), (0, 2**64 - 1), (-1e308, 1e308), (-2**64, 2**64),
                                       (-65504.0, 65504.0), (-1, 2**63)]))
    elif kind == "short":
        return draw(st.sampled_from([(1,), (), (0, 1, 2)]))
    kinds = ["py", "py", "np_same", "float64", "float32", "int64", "uint64", "0-d"]
    as_type = draw(st.sampled_from(kinds))

    def conv(v):
        if as_type == "py":
            return v.item() if isinstance(v, np.generic) else v
        if as_type == "0-d":
            return np.array(v)
        t = np.asarray(a).dtype if as_type == "np_same" else np.dtype(as_type)
        t = np.dtype(np.uint8) if t == bool else t
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if t.kind in "iu":
                if not math.isfinite(float(v)):
                    return v
                info = np.iinfo(t)
                return t.type(min(max(int(v), int(info.min)), int(info.max)))
            return t.type(v)
    r = (conv(lo), conv(hi))
    container = draw(st.sampled_from(["tuple", "tuple", "list", "array"]))
    return list(r) if container == "list" else np.array(r) if container == "array" and \
        len({type(x) for x in r}) == 1 else r


@st.composite
def weights_for(draw, n):
    dtype = draw(st.sampled_from(["float64", "float64", "float32", "int64", "int32", "uint8", "bool", "float16",
                                  "complex128", "uint64", "object"]))
    mode = draw(st.sampled_from(["int", "int", "float", "float", "special", "huge"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    size = n if draw(st.integers(0, 29)) else n + 1
    if mode == "int":
        w = rng.integers(-5, 6, size).astype(np.float64)
    else:
        w = rng.uniform(1, 2, size) * 2.0 ** rng.integers(-30, 31, size) * rng.choice([-1.0, 1.0], size)
    if mode == "special" and size:
        w[rng.integers(0, size, 3)] = [np.inf, -np.inf, np.nan][: min(3, size)] if size >= 3 else np.inf
    if mode == "huge":
        with np.errstate(over="ignore"):
            w = w * (1e300 if dtype.startswith("float64") else 2.0**30)
    dt = np.dtype(dtype)
    with np.errstate(all="ignore"):
        if dt.kind in "iu":
            w = np.nan_to_num(w, posinf=0, neginf=0)
            w = np.abs(w) if dt.kind == "u" else w
            cap = min(2**40, int(np.iinfo(dt).max) // (size + 1))  # sums that fit the dtype: no wrap-around
            w = np.clip(np.trunc(w), -cap, cap).astype(dt)
        else:
            w = w.astype(dt)
    like = draw(st.sampled_from(["ndarray"] * 6 + ["list", "masked"]))
    if like == "masked":
        return np.ma.masked_array(w, rng.random(w.shape) < 0.3)
    return w.tolist() if like == "list" else w


LIKES = ["ndarray"] * 8 + ["list", "tuple", "masked", "memoryview", "array", "strided", "bigendian", "dispatch"]


def _call(params, values, positional):
    """Arguments of a call: the first `positional` params by position (defaults filled in),
    the others by keyword where given."""
    args, kwargs = [], {}
    for i, (name, default) in enumerate(params):
        if i < positional:
            args.append(values.get(name, default))
        elif name in values:
            kwargs[name] = values[name]
    return args, kwargs


# ---- cases ----

@st.composite
def histogram_cases(draw, fn="histogram"):
    dtype = draw(st.sampled_from(DTYPES))
    a = draw(sample_arrays(dtype))
    values = {"a": a, "bins": draw(bins_for(a))}
    if draw(st.integers(0, 5)) == 0:
        del values["bins"]
    values["range"] = draw(range_for(a))
    if fn == "histogram":
        values["density"] = draw(st.sampled_from([None, False, True, None]))
    if draw(st.booleans()):
        values["weights"] = draw(weights_for(a.size))
    if values.get("weights") is not None and isinstance(values.get("bins"), str):
        assume(draw(st.integers(0, 9)) == 0)  # numpy's TypeError, now and then
    if isinstance(values.get("bins"), str) and values["bins"] in ESTIMATORS:
        assume(_estimate_ok(a, values["bins"], values["range"]))
    like = draw(st.sampled_from(LIKES))
    names = ["a", "bins", "range"] + (["density"] if fn == "histogram" else []) + ["weights"]
    for k in [k for k, v in values.items() if v is None and draw(st.booleans())]:
        del values[k]
    return {"fn": fn, "values": enc(values), "like": like, "positional": draw(st.integers(1, len(names))),
            "names": names}


@st.composite
def dd_cases(draw, fn="histogramdd"):
    many = fn == "histogramdd" and draw(st.integers(0, 19)) == 0  # up to numpy's 64 dimensions and beyond
    d = 2 if fn == "histogram2d" else draw(st.integers(5, 70)) if many else draw(st.integers(1, 4))
    n = draw(st.integers(0, 10 if many else 200))
    mixed = draw(st.booleans())
    first = draw(st.sampled_from(DTYPES[:-1]))
    dtypes = [draw(st.sampled_from(DTYPES[:-1])) if mixed else first for _ in range(d)]
    cols = [draw(sample_arrays(t, n=n)) for t in dtypes]
    layout = draw(st.sampled_from(["columns", "stacked", "stacked"] if fn == "histogramdd" else ["columns"]))
    values = {}
    if fn == "histogram2d":
        values["x"], values["y"] = cols
    else:
        values["sample"] = np.stack(cols, axis=1) if layout == "stacked" else cols
    form = draw(st.sampled_from(["int", "each", "each", "edges"] if fn == "histogramdd"
                                else ["int", "pair", "edges", "pair_edges", "mixed"]))
    common = np.stack(cols, axis=1) if d else np.empty((0, 0))
    top = 3 if many else 20
    if form == "int":
        values["bins"] = draw(st.integers(1, top)) if draw(st.integers(0, 9)) else draw(st.sampled_from([0, -2, 2.5]))
    elif form in ("each", "pair"):
        values["bins"] = [draw(st.integers(1, min(top, 12))) for _ in range(d)]
    elif form == "edges":
        e = draw(edges_for(cols[0]))
        values["bins"] = e if fn == "histogram2d" else [draw(edges_for(c)) for c in cols]
    else:
        values["bins"] = [draw(edges_for(cols[0])), draw(st.integers(1, 12)) if form == "mixed"
                          else draw(edges_for(cols[1]))]
    # numpy counts into (bins + 2) ** D cells: a few million, or so many that no allocation is
    # tried (between, numpy and tally would fill this machine's memory).
    cells = _numpy_cells(fn, values["bins"], d)
    assume(cells <= 1e7 or cells >= 1e13)
    if draw(st.booleans()):
        values["range"] = [draw(range_for(common[:, i] if n else cols[i])) for i in range(d)]
        if draw(st.integers(0, 9)) == 0:
            values["range"] = values["range"][:-1]
    values["density"] = draw(st.sampled_from([None, False, True]))
    if draw(st.booleans()):
        values["weights"] = draw(weights_for(n))
    like = draw(st.sampled_from(["ndarray"] * 6 + ["list", "masked", "array", "strided", "dispatch"]))
    names = (["x", "y"] if fn == "histogram2d" else ["sample"]) + ["bins", "range", "density", "weights"]
    return {"fn": fn, "values": enc(values), "like": like, "positional": draw(st.integers(1, len(names))),
            "names": names}


def _numpy_cells(fn, bins, d):
    """The cells of numpy's histogramdd for these bins, its outlier bins included."""
    each = _each_bins(fn, bins) or [bins] * d
    cells = 1
    for b in each:
        try:
            cells *= int(b) + 2 if np.ndim(b) == 0 else len(b) + 1
        except (TypeError, ValueError, OverflowError):
            pass
    return cells


@st.composite
def bincount_cases(draw):
    dtype = draw(st.sampled_from(INTS + ["bool", "float64", "int64", "int32", "uint8"]))
    dt = np.dtype(dtype)
    n = draw(st.integers(0, 300))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    top = draw(st.sampled_from([1, 5, 100, 5000, 70000]))
    x = rng.integers(0, top, n)
    kind = draw(st.integers(0, 9))
    if dt.kind in "iu":
        x = np.minimum(x, min(int(np.iinfo(dt).max), 2**62))
    if kind == 0 and n and dt.kind != "u":
        x[rng.integers(0, n)] = -1  # negative: numpy's ValueError
    x = x.astype(dt) if dt != bool else x % 2 == 1
    if kind == 2:
        x = x.reshape(1, -1)
    values = {"x": x}
    if draw(st.booleans()):
        values["weights"] = draw(weights_for(n))
    minlength = draw(st.sampled_from([None, 0, 0, 3, 100, 70000, -1, True, np.int64(5), 2.0, "absent"]))
    if minlength != "absent":
        values["minlength"] = minlength
    like = draw(st.sampled_from(LIKES))
    positional = draw(st.integers(0, 3))  # 0: x by keyword, which numpy refuses (positional-only)
    return {"fn": "bincount", "values": enc(values), "like": like, "positional": positional,
            "names": ["x", "weights", "minlength"]}


@st.composite
def histc_cases(draw):
    dtype = draw(st.sampled_from(DTYPES))
    a = draw(sample_arrays(dtype))
    values = {"input": a, "bins": draw(st.one_of(st.integers(1, 200), st.sampled_from([0, -3])))}
    lo, hi = draw(st.sampled_from([(0, 0), (0, 0), (-1.0, 1.0), (0, 100), (5.0, 5.0), (3, 1), (-math.inf, 0.0),
                                   (-1e30, 1e30), (0.25, 0.75)]))
    values["min"], values["max"] = lo, hi
    return {"fn": "histc", "values": enc(values), "like": draw(st.sampled_from(["ndarray"] * 4 + ["list"])),
            "positional": draw(st.integers(1, 4)), "names": ["input", "bins", "min", "max"]}


# ---- running a case ----

def arguments(case):
    """The call's (args, kwargs), decoded afresh (each call gets its own objects)."""
    values = dec(case["values"])
    first = case["names"][0]
    if first in values and case["like"] != "ndarray":
        if case["fn"] == "histogramdd" and isinstance(values[first], list):
            values[first] = [as_like(c, case["like"]) for c in values[first]]
        else:
            values[first] = as_like(values[first], case["like"])
        if case["fn"] == "histogram2d":
            values["y"] = as_like(values["y"], case["like"])
    defaults = {"bins": 10, "range": None, "density": None, "weights": None, "minlength": 0, "min": 0, "max": 0}
    if case["fn"] == "histc":
        defaults["bins"] = 100
    params = [(name, defaults.get(name)) for name in case["names"]]
    return _call(params, values, case["positional"])


def outcome(function, args, kwargs):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return function(*args, **kwargs), None
        except Exception as e:  # noqa: BLE001 (the class is compared)
            return None, e


def survey(case, check, *args):
    """check(case, *args); with TALLY_FUZZ_COLLECT=FILE, a failure is appended to FILE (a JSON
    line with the case, ready for the corpus) instead of raised, to survey a long run."""
    try:
        check(case, *args)
    except Exception as e:
        if not COLLECT:
            raise
        with open(COLLECT, "a") as f:
            f.write(json.dumps({"error": f"{type(e).__name__}: {str(e)[:400]}", "case": case}) + "\n")


def run_case(case):
    note(json.dumps(case))
    survey(case, _run_case)


def _run_case(case):
    got, error = outcome(getattr(tally, case["fn"]), *arguments(case))
    reference = histc_model if case["fn"] == "histc" else getattr(np, case["fn"])
    want, want_error = outcome(reference, *arguments(case))
    if want_error is not None:
        check = numpys_own_failure(case, want_error)
        if check is not None:
            return check(got, error)
        assert error is not None, f"numpy raised {want_error!r}, tally answered {got!r}"
        assert type(error) is type(want_error), f"numpy raised {want_error!r}, tally {error!r}"
        return
    if error is not None and _overflowing_edges(case, want):
        assert isinstance(error, ValueError), error
        return
    assert error is None, f"numpy answered {want!r}, tally raised {error!r}"
    if isinstance(want, tuple) and want and isinstance(want[0], str):  # dispatched to an override
        assert got == want
        return
    with np.errstate(all="ignore"), warnings.catch_warnings():  # (numpy's, computing references)
        warnings.simplefilter("ignore")
        compare(case, got, want)


def histc_model(input, bins=100, min=0, max=0):
    """torch.histc's semantics in numpy: equal bins over [min, max] (the data's, widened by 1
    if equal), edges in the input's float type (float32 for integers and bool), NaN and samples
    outside dropped, float counts."""
    x = np.asarray(input)
    x = x.astype(np.uint8) if x.dtype == bool else x
    out = x.dtype if x.dtype.kind == "f" else np.dtype(np.float32)
    if np.ndim(bins) != 0 or isinstance(bins, float):
        raise TypeError("bins must be an integer")
    if bins < 1:
        raise ValueError("bins must be > 0")
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError("range is not finite")
    if not lo < hi:
        raise ValueError("max must be larger than min")
    edges = np.linspace(lo, hi, bins + 1).astype(out if x.dtype.kind == "f" else np.float64)
    if np.any(edges[1:] <= edges[:-1]) or not np.isfinite(edges).all():
        raise ValueError("too many bins for the range (tally's rule; torch would answer)")
    counts, _ = np.histogram(x.ravel().astype(np.float64), edges.astype(np.float64))
    return counts.astype(out)


def _overflowing_edges(case, want):
    """numpy's linspace overflows to NaN edges (a range wider than the float type holds):
    tally's histogram and histogram_bin_edges raise ValueError instead."""
    if case["fn"] not in ("histogram", "histogram_bin_edges"):
        return False
    edges = want[1] if case["fn"] == "histogram" else want
    return edges.dtype.kind == "f" and bool(np.isnan(edges).any())


def _float_compared_integers(case, want_edges):
    """numpy's histogramdd searches 64-bit integer samples among integer edges of the other
    signedness in float64 but tests the last edge exactly: beyond 2^53 it drops samples that
    round onto the last edge (tally compares in float64 throughout): not compared."""
    v = dec(case["values"])
    args, kwargs = arguments(case)
    given = dict(zip(case["names"], args), **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if case["fn"] == "histogram2d":
            columns = np.asarray([np.asarray(given["x"]), np.asarray(given["y"])])
        else:
            s = given["sample"]
            columns = np.asarray(s) if hasattr(s, "shape") else np.atleast_2d(np.asarray(s)).T
    each = _each_bins(case["fn"], v.get("bins", 10)) or []
    if columns.dtype.kind not in "iu" or columns.dtype.itemsize != 8:
        return False
    for b in each:
        b = np.asarray(b)
        if b.ndim == 1 and b.dtype.kind in "iu" and np.result_type(b.dtype, columns.dtype).kind == "f":
            big = [abs(int(x)) >= 2**53 for x in b.tolist() + columns.ravel().tolist()]
            if any(big):
                return True
    return False


def _with(case, **values):
    """The case with some argument values replaced."""
    v = dec(case["values"])
    v.update(values)
    return dict(case, values=enc(v))


def numpys_own_failure(case, error):
    """For numpy's own failures that tally answers (the module docstring): a check of tally's
    outcome (result, error), else None."""
    if case["like"] == "dispatch" or case["fn"] not in ("histogram", "histogram_bin_edges", "histogramdd",
                                                          "histogram2d"):
        return None
    v = dec(case["values"])
    bins = v.get("bins", 10)
    if case["fn"] in ("histogramdd", "histogram2d"):
        # numpy's IndexError for an empty edges array; tally answers as numpy.histogram: no bins.
        each = _each_bins(case["fn"], bins)
        if isinstance(error, IndexError) and each and any(_is_empty_edges(b) for b in each):
            return lambda got, e: _check_no_bins(got, e, each, v.get("weights"))
        if isinstance(error, MemoryError):
            # numpy's own counts with an outlier bin each side per dimension ((bins + 2) ** D
            # cells), or a dimension's edges, do not fit: tally answers where its own cells fit,
            # or raises the error numpy raises for the same call with bins that fit (numpy ran
            # out of memory before checking a later dimension's range).
            check = answered(lambda got: _check_inside_all(case, got))

            def judged(got, e):
                if isinstance(e, MemoryError):
                    return None
                if e is not None:
                    _, fits = outcome(getattr(np, case["fn"]), *arguments(_with_bins_that_fit(case, each)))
                    if fits is not None and type(fits) is type(e):
                        return None
                return check(got, e)
            return judged
        return None
    w = v.get("weights")
    if np.ndim(bins) != 0 or (w is not None and np.asarray(w).dtype.kind in "bcO"):
        return None  # (numpy itself answers such weights in tally, with its own errors)
    a = np.asarray(v[case["names"][0]])
    a = a.astype(np.uint8) if a.dtype == bool else a
    r = v.get("range")
    estimated = isinstance(bins, str)
    # float samples with a Python-int range beyond int64: below, as numpy answers the floats
    floats_beyond_int64 = isinstance(error, OverflowError) and _beyond_int64(r) and a.dtype.kind == "f"
    if estimated and not floats_beyond_int64:
        edges, e = outcome(np.histogram_bin_edges, (v["a"], bins, r), {})
        if e is not None:
            return None  # numpy's estimator fails: tally's (numpy's) does too
        if edges.size < 2 and case["fn"] == "histogram" and w is None and isinstance(error, (IndexError, ValueError)):
            # an estimate of no bins: numpy.histogram fails on it, tally answers no bins
            return answered(lambda got: (same_bits(got[1], edges, "edges"), _assert_empty(got[0])))
    if a.dtype.kind == "f" and isinstance(error, IndexError) and case["fn"] == "histogram":
        # numpy's float16/float32 arithmetic overflows its own index: tally counts by numpy's edges
        # (or refuses edges that overflow to NaN).
        edges, e = outcome(np.histogram_bin_edges, (v["a"], bins, r), {})
        if e is not None:
            return None
        if np.isnan(edges).any():
            return lambda got, error: _refused(error)
        return answered(lambda got: compare(case, got, (None, edges), by_edges=True))
    if floats_beyond_int64:
        # numpy's own conversion of a Python int beyond int64: as numpy answers the floats (or,
        # where numpy fails on those too, as its failure on them is judged).
        fixed = _with(case, range=tuple(float(x) for x in r))
        want, e = outcome(getattr(np, case["fn"]), *arguments(fixed))
        return numpys_own_failure(fixed, e) if e is not None else answered(lambda got: compare(fixed, got, want))
    if a.dtype.kind not in "iu" or not isinstance(error, (IndexError, OverflowError)):
        return None
    if isinstance(error, IndexError) and a.dtype.itemsize != 8:
        return None
    if isinstance(error, OverflowError):
        if not _beyond_int64(r):
            return None
        if a.dtype == np.uint64 and all(0 <= x < 2**64 for x in r) and not estimated:  # as numpy with uint64 scalars
            fixed = _with(case, range=tuple(np.uint64(x) for x in r))
            want, e = outcome(getattr(np, case["fn"]), *arguments(fixed))
            if e is None:
                return answered(lambda got: compare(fixed, got, want))
    return answered(lambda got: _check_exact_inside(case, got))


def _assert_empty(hist):
    assert isinstance(hist, np.ndarray) and hist.size == 0


def _beyond_int64(r):
    """A range of Python ints, one beyond int64 (numpy's own OverflowError converting it)."""
    return r is not None and len(r) == 2 and all(type(x) is int for x in r) and \
        not all(-2**63 <= x < 2**63 for x in r)


def _refused(error):
    assert isinstance(error, ValueError), f"edges that overflow to NaN: tally raises ValueError, not {error!r}"


def answered(check):
    def checked(got, error):
        assert error is None, f"numpy's own failure, documented as answered; tally raised {error!r}"
        check(got)
    return checked


def _with_bins_that_fit(case, each):
    """The case with every number of bins above 1000 made 1000 (edges arrays kept)."""
    bins = dec(case["values"]).get("bins", 10)
    small = lambda b: min(int(b), 1000) if np.ndim(b) == 0 and not isinstance(b, str) else b  # noqa: E731
    return _with(case, bins=small(bins) if each is None else [small(b) for b in each])


def _each_bins(fn, bins):
    """histogram2d's and histogramdd's bins, one entry per dimension, as numpy reads them."""
    try:
        n = len(bins)
    except TypeError:
        return None
    if fn == "histogram2d" and n not in (1, 2):
        return [bins, bins]
    return list(bins)


def _is_empty_edges(b):
    try:
        return np.ndim(b) == 1 and np.size(b) == 0
    except ValueError:
        return False


def _check_no_bins(got, error, each, weights):
    if isinstance(error, IndexError):  # NaN edges elsewhere: numpy itself answers, with its IndexError
        return
    if isinstance(error, ValueError) and ("invalid dims" in str(error) or "too big" in str(error)):
        return  # numpy's ValueError for (bins + 2) ** D cells beyond intp, which tally raises first
    if isinstance(error, ValueError) and weights is not None and "length" in str(error):
        return  # weights of another length, refused first
    if error is not None:  # weights numpy's bincount would refuse, refused first
        assert weights is not None and np.asarray(weights).dtype.kind in "cO" and isinstance(error, TypeError), error
        return
    hist, edges = (got[0], list(got[1:])) if len(got) == 3 else got
    assert hist.dtype == np.float64 and hist.size == 0
    for b, e in zip(each, edges):
        if _is_empty_edges(b):
            assert e.size == 0


def _check_inside_all(case, got):
    """The count is that of the samples inside every dimension's edges."""
    hist, edges = (got[0], list(got[1:])) if case["fn"] == "histogram2d" else got
    assert hist.shape == tuple(e.size - 1 for e in edges)
    v = dec(case["values"])
    if v.get("weights") is not None or v.get("density"):
        return
    args, kwargs = arguments(case)  # the sample as passed, read as numpy reads it
    given = dict(zip(case["names"], args), **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if case["fn"] == "histogram2d":
            columns = [np.asarray(given["x"]), np.asarray(given["y"])]
        else:
            s = given["sample"]
            columns = list((np.asarray(s) if np.ndim(s) == 2 and hasattr(s, "shape") else np.atleast_2d(s).T).T)
        inside = np.ones(columns[0].size, bool)
        for c, e in zip(columns, edges):
            inside &= (c >= e[0]) & (c <= e[-1])
    assert hist.sum() == inside.sum()


def _check_exact_inside(case, got):
    """numpy failed on a 64-bit range; tally keeps exactly the samples in it."""
    v = dec(case["values"])
    a = np.asarray(v[case["names"][0]]).ravel()
    a = a.astype(np.uint8) if a.dtype == bool else a
    r = v.get("range")
    lo, hi = (int(a.min()), int(a.max())) if r is None else (int(r[0]), int(r[1]))
    inside = sum(1 for x in a.tolist() if lo <= x <= hi)
    bins = v.get("bins", 10)
    if isinstance(bins, str):
        edges, e = outcome(np.histogram_bin_edges, (a, bins, r), {})
        bins = None if e is not None else edges.size - 1
    if case["fn"] == "histogram":
        hist, edges = got
        if bins == 0:  # an estimate of no bins: none, as numpy's edges
            assert hist.size == 0 and edges.size == 1
            return
        if v.get("weights") is None and not v.get("density"):
            assert hist.dtype == np.int64 and int(hist.sum()) == inside
        assert edges.dtype == np.float64 and bins is None or edges.size == bins + 1
    else:
        assert got.dtype == np.float64 and bins is None or got.size == bins + 1


def same_edges(got, want, column, ranged, what):
    """Edges bit for bit, but for the sign of an end edge from data holding both 0.0 and -0.0
    as its minimum or maximum (numpy's sign there depends on the layout it reduces; docs/exactness.md)."""
    c = np.asarray(column)
    if not ranged and c.dtype.kind == "f" and np.asarray(want).dtype.kind == "f" and np.size(got) == np.size(want) > 0:
        zeros = np.signbit(c[c == 0])
        if zeros.any() and not zeros.all():
            got = got.copy()
            for end in (0, -1):
                if got[end] == 0 and want[end] == 0:
                    got[end] = want[end]
    same_bits(got, want, what)


def same_bits(got, want, what):
    assert type(got) is type(want), (what, type(got), type(want))
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.dtype.char == want.dtype.char, (what, got.dtype.char, want.dtype.char)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if want.dtype.kind == "O":
        got, want = got.astype(np.complex128), want.astype(np.complex128)
    if want.dtype.kind in "fc":
        gn, wn = np.isnan(got), np.isnan(want)
        ok = np.array_equal(gn, wn) and np.array_equal(got[~gn].view(np.uint8), want[~wn].view(np.uint8)) \
            if got.size else True
        assert ok, f"{what}: {got!r} != {want!r}"
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def close(got, want, bound, what):
    """got within `bound` (per element) of want; NaN and infinities where numpy has them."""
    assert type(got) is type(want) and got.dtype == want.dtype and got.dtype.char == want.dtype.char, \
        (what, got.dtype, want.dtype)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    g, w = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64), want.astype(
        np.complex128 if want.dtype.kind == "c" else np.float64)
    bound = np.broadcast_to(bound, w.shape)
    with np.errstate(all="ignore"):
        finite = np.isfinite(w) & np.isfinite(bound)
        bad = finite & ~(np.abs(g - w) <= bound)
        exact = ~np.isfinite(w) & np.isfinite(bound)  # numpy's inf/NaN where no sum overflows: the same
        bad |= exact & ~((g == w) | (np.isnan(g) & np.isnan(w)))
    assert not bad.any(), f"{what}: got {g[bad][:5]}, numpy {w[bad][:5]}, bound {bound[bad][:5]}"


def _eps(dtype):
    dtype = np.dtype(dtype)
    return float(np.finfo(dtype).eps) if dtype.kind in "fc" else 0.0


def compare(case, got, want, by_edges=False):
    fn = case["fn"]
    if fn in ("bincount", "histogram_bin_edges", "histc"):
        same_bits(got, want, fn)
        return
    v = dec(case["values"])
    weights = v.get("weights")
    density = v.get("density")
    if fn == "histogram":
        (hist, edges), (want_hist, want_edges) = got, want
        a = np.asarray(v["a"]).ravel()
        a = a.astype(np.uint8) if a.dtype == bool else a
        same_edges(edges, want_edges, a, v.get("range") is not None, "edges")
        regular = np.ndim(v.get("bins", 10)) == 0
        if by_edges and want_edges.size < 2:
            want_hist = np.zeros(0, np.int64 if weights is None else np.asarray(weights).dtype)
        if (a.dtype == np.float16 or by_edges or _subnormal_step(want_edges)) and regular and (
                want_edges.size > 1 and (weights is None or np.asarray(weights).dtype.kind not in "bcO")):
            # numpy's float16 estimate may put a sample a bin off its own edges, and any estimate
            # where linspace's rounded subnormal step moves the edges off the line (docs/exactness.md).
            w_ = None if weights is None else np.asarray(weights)
            want_hist = np.histogram(a.astype(np.float64), want_edges.astype(np.float64), weights=w_)[0]
            if density:  # numpy's: the widths in the edges' own type
                want_hist = want_hist / np.array(np.diff(want_edges), float) / want_hist.sum()
            regular = False
        compare_values(hist, want_hist, a[None] if a.ndim == 1 else a, [want_edges], weights, density, regular)
        return
    if fn == "histogram2d":
        hist, *edges = got
        want_hist, *want_edges = want
    else:
        (hist, edges), (want_hist, want_edges) = got, want
        assert type(edges) is type(want_edges) and len(edges) == len(want_edges)
    if fn == "histogram2d":
        sample = np.stack([np.asarray(v["x"]), np.asarray(v["y"])])
    else:
        s = v["sample"]
        sample = np.atleast_2d(np.asarray(s)).T if not isinstance(s, np.ndarray) else np.asarray(s).T
        sample = sample.reshape(len(want_edges), -1)
    ranges = v.get("range")
    for i, (e, we) in enumerate(zip(edges, want_edges)):
        same_edges(e, we, sample[i], ranges is not None and ranges[i] is not None, f"edges[{i}]")
    if _float_compared_integers(case, want_edges):
        assert hist.shape == want_hist.shape and hist.dtype == want_hist.dtype
        return
    compare_values(hist, want_hist, sample, want_edges, weights, density, False, dd=True)


def _subnormal_step(edges):
    """Whether equal bins are narrower than their float type's smallest normal number."""
    if edges.dtype.kind != "f" or edges.size < 2:
        return False
    step = (float(edges[-1]) - float(edges[0])) / (edges.size - 1)
    return 0 < abs(step) < np.finfo(edges.dtype).tiny


def compare_values(got, want, columns, edges, weights, density, regular, dd=False):
    """Counts exactly; sums bit for bit where promised (equal bins, real weights), else within
    the rounding of another order of the same sums; densities within an ulp of those."""
    if weights is None:
        if density:
            close(got, want, 2 * _eps(np.float64) * np.abs(want), "density")
        else:
            same_bits(got, want, "counts")
        return
    w = np.asarray(weights).ravel()
    if w.dtype.kind in "bcO":  # summed by numpy itself (docs/exactness.md)
        same_bits(got, want, "numpy's sums")
        return
    if regular and not dd and not density:
        same_bits(got, want, "sums on equal bins")
        return
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            bound, sums = _sum_bounds(columns, edges, w, regular, dd, want)
        except ValueError:  # numpy's own edges are not monotonic (NaN): no bound to check against
            return
        if density:
            widths = np.ones(sums.shape)
            for i, e in enumerate(edges):
                shape = [1] * sums.ndim
                shape[i] = e.size - 1
                widths = widths * np.diff(np.asarray(e, np.float64)).reshape(shape)
            total, total_bound = float(sums.sum()), float(bound.sum())
            if not np.isfinite(total) or not abs(total) > 4 * total_bound:  # (NaN bounds too)
                bound = np.full(sums.shape, np.inf)  # cancelled to about nothing: any density is rounding
            else:
                rel = total_bound / abs(total) + 4 * _eps(np.float64)
                bound = (bound / np.abs(widths) / abs(total) + np.abs(want) * rel) * 1.01  # (no overflow)
    close(got, want, bound, "sums")


def _sum_bounds(columns, edges, w, regular, dd, want):
    """Per bin: how far another order's sum may be from numpy's (m terms: m * eps * sum |w|;
    numpy sums edges arrays as differences of one cumulative sum in the weights' dtype, so there
    every bin carries the total's rounding), and numpy's sums (float64) by its edges."""
    absw, w64 = np.abs(w.astype(np.float64)), w.astype(np.float64)
    if dd:
        s_abs, m = (np.histogramdd(columns.T, list(edges), weights=x)[0] for x in (absw, None))
        sums = np.histogramdd(columns.T, list(edges), weights=w64)[0]
    else:
        s_abs, m, sums = (np.histogram(columns.ravel(), edges[0], weights=x)[0].astype(np.float64)
                          for x in (absw, None, w64))
    total_abs = float(absw.sum())
    if w.dtype.kind in "iu" and total_abs < 2**52:
        return np.zeros(m.shape), sums  # integer sums are exact in any order
    if dd or regular:
        return (m + 2) * _eps(np.float64) * s_abs, sums
    bound = np.full(m.shape, (w.size + 2) * max(_eps(w.dtype), _eps(np.float64)) * total_abs)
    if not np.isfinite(w64).all() or not np.isfinite(total_abs):
        bound = np.where(np.isfinite(want), np.inf, bound)  # numpy's NaN after the cumulative's inf
    return bound, sums


# ---- the tests ----

@fuzz_settings(1500, 0.35)
@given(histogram_cases())
def test_histogram(case):
    run_case(case)


@fuzz_settings(300, 0.1)
@given(histogram_cases("histogram_bin_edges"))
def test_histogram_bin_edges(case):
    run_case(case)


@fuzz_settings(500, 0.15)
@given(dd_cases("histogram2d"))
def test_histogram2d(case):
    run_case(case)


@fuzz_settings(500, 0.15)
@given(dd_cases())
def test_histogramdd(case):
    run_case(case)


@fuzz_settings(600, 0.2)
@given(bincount_cases())
def test_bincount(case):
    run_case(case)


@fuzz_settings(200, 0.05)
@given(histc_cases())
def test_histc(case):
    run_case(case)


@pytest.mark.parametrize("entry", corpus_cases("numpy"))
def test_corpus(entry):
    note(json.dumps(entry["case"]))
    _run_case(entry["case"])

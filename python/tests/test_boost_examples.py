"""The boost-histogram scripts of examples/boost run on tally by changing their import: each runs
as written (``import tally as bh``) and with that line changed to ``import boost_histogram as bh``,
and the two print the same, line for line. Also tally.axis's boost-histogram API that the scripts
use (Axis.bin, AxesTuple, ArrayTuple) and tally.accumulators' views, each compared with
boost-histogram on random data."""

import difflib
import os
import pathlib
import pickle
import re
import subprocess
import sys

import numpy as np
import pytest

import tally
from conftest import DISTRIBUTIONS, samples

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "boost"
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py"))
TALLY_IMPORT = "import tally as bh"
BOOST_IMPORT = "import boost_histogram as bh"

# Scripts that use boost-histogram's API where tally.Histogram lacks it, with the gaps. Each is an
# xfail that must fail (strict): once the gaps are closed, take the script out of here.
GAPS = {
    name: "tally.Histogram lacks Histogram(ax0, ax1, ...), shape, storage_type, empty(), reset() returning "
          "the histogram, h[sum, :] and bh.sum, h.axes as an AxesTuple, view() as boost's views"
    for name in ()
}


def _run(source, tmp_path, name):
    """Run a script's source in a fresh interpreter that imports this tally; its stdout."""
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    env = dict(os.environ)
    package_dir = str(pathlib.Path(tally.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_dir, env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=300)
    assert done.returncode == 0, f"{name} failed:\n{done.stderr[-4000:]}"
    return done.stdout


def _source(name):
    return (EXAMPLES / name).read_text(encoding="utf-8")


def _as_boost(source):
    lines = source.split("\n")
    assert lines[0] == TALLY_IMPORT
    return "\n".join([BOOST_IMPORT] + lines[1:])


def test_every_script_is_listed_in_the_readme():
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    assert len(SCRIPTS) == 3
    for name in SCRIPTS:
        assert f"[{name}]({name})" in readme, name


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_imports_only_tally_as_bh(name):
    # The one line the comparison changes; any other import of either library would defeat it.
    lines = _source(name).split("\n")
    assert lines[0] == TALLY_IMPORT
    assert not any(re.match(r"\s*(import|from)\s+(tally|boost_histogram|hist)\b", line) for line in lines[1:])


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=GAPS[n], strict=True))
                                  if n in GAPS else n for n in SCRIPTS])
def test_script_prints_what_boost_histogram_prints(name, tmp_path):
    got = _run(_source(name), tmp_path, "with_tally.py")
    assert len(got.splitlines()) >= 30 and re.search(r"\d\.\d{6}", got), got
    pytest.importorskip("boost_histogram")
    want = _run(_as_boost(_source(name)), tmp_path, "with_boost.py")
    diff = "\n".join(difflib.unified_diff(want.splitlines(), got.splitlines(), "boost_histogram", "tally",
                                          lineterm=""))
    assert got == want, f"{name}: tally prints otherwise than boost-histogram:\n{diff}"


@pytest.mark.parametrize("name", SCRIPTS)
def test_script_output_follows_its_data(name, tmp_path):
    # The printing is fine enough that other data show: with its seed changed, most of what a
    # script prints changes (the rest is edges and other constants of its axes).
    pytest.importorskip("boost_histogram")
    source = _as_boost(_source(name))
    reseeded, n = re.subn(r"default_rng\((\d+)\)", lambda m: f"default_rng({int(m.group(1)) + 1})", source)
    assert n == 1
    # What each print() printed: a line and the lines of its array that wrap.
    a, b = (re.split(r"\n(?=\S)", _run(s, tmp_path, "run.py")) for s in (source, reseeded))
    assert len(a) == len(b) >= 25
    changed = sum(x != y for x, y in zip(a, b))
    assert changed > len(a) // 2, (changed, len(a))


# ---- tally.axis: Axis.bin, Integer/Boolean.value, AxesTuple, ArrayTuple, against boost-histogram ----

def _axis_pairs(bh):
    """The same axes of tally and boost-histogram."""
    return [
        (tally.axis.Regular(7, -2.0, 5.0), bh.axis.Regular(7, -2.0, 5.0)),
        (tally.axis.Regular(3, 1.0, 1000.0, transform=tally.axis.transform.sqrt),
         bh.axis.Regular(3, 1.0, 1000.0, transform=bh.axis.transform.sqrt)),
        (tally.axis.Variable([-1.0, 0.5, 2.0, 10.0]), bh.axis.Variable([-1.0, 0.5, 2.0, 10.0])),
        (tally.axis.Regular(4, 0.0, 1.0, underflow=False), bh.axis.Regular(4, 0.0, 1.0, underflow=False)),
        (tally.axis.Integer(-3, 4), bh.axis.Integer(-3, 4)),
        (tally.axis.Integer(0, 5, overflow=False), bh.axis.Integer(0, 5, overflow=False)),
        (tally.axis.IntCategory([7, -2, 40]), bh.axis.IntCategory([7, -2, 40])),
        (tally.axis.StrCategory(["b", "a", "c"]), bh.axis.StrCategory(["b", "a", "c"])),
        (tally.axis.Boolean(), bh.axis.Boolean()),
    ]


def test_axis_bin_and_value_as_boost_histograms():
    bh = pytest.importorskip("boost_histogram")
    for ours, theirs in _axis_pairs(bh):
        for i in range(-2, len(theirs) + 2):
            try:
                want = theirs.bin(i)
            except IndexError:
                with pytest.raises(IndexError):
                    ours.bin(i)
                continue
            got = ours.bin(i)
            assert type(got) is type(want), (ours, i, got, want)
            if isinstance(want, tuple):  # boost-histogram's regular edges are off by an ulp or so
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.ptp(ours.edges),
                                           err_msg=f"{ours!r} bin {i}")
            else:
                assert got == want, (ours, i, got, want)
        if ours.kind in ("integer", "boolean", "category"):
            for i in range(len(theirs)):
                assert ours.value(i) == theirs.value(i) and type(ours.value(i)) is type(theirs.value(i)), (ours, i)


def test_axis_bin_refuses_bins_beyond_the_flow_bins():
    with pytest.raises(IndexError, match="bin 5 of an axis of 4 bins"):
        tally.axis.Regular(4, 0, 1).bin(5)
    with pytest.raises(IndexError, match="underflow False"):
        tally.axis.Regular(4, 0, 1, underflow=False).bin(-1)
    with pytest.raises(IndexError, match="bin -1 of a category axis"):
        tally.axis.StrCategory(["a"]).bin(-1)
    with pytest.raises(IndexError, match="Boolean"):
        tally.axis.Boolean().value(3)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_axes_tuple_as_boost_histograms(rng, distribution):
    bh = pytest.importorskip("boost_histogram")
    edges = np.unique(np.round(samples(rng, "f64", 6, distribution, 0.0, 50.0), 3))
    edges = np.union1d(edges, [0.0, 60.0])
    ours = tally.axis.AxesTuple([tally.axis.Regular(5, -1.0, 4.0), tally.axis.Variable(edges),
                                 tally.axis.Integer(2, 6)])
    theirs = bh.Histogram(bh.axis.Regular(5, -1.0, 4.0), bh.axis.Variable(edges), bh.axis.Integer(2, 6)).axes
    assert ours.size == theirs.size and ours.extent == theirs.extent and len(ours) == 3
    for what in ("edges", "centers", "widths"):
        got, want = getattr(ours, what), getattr(theirs, what)
        assert isinstance(got, tally.axis.ArrayTuple) and len(got) == 3
        for g, w in zip(got, want):
            assert g.shape == w.shape, what
            np.testing.assert_allclose(g, w, rtol=1e-14, err_msg=what)
        # The sparse grids broadcast to the cells' shape, as boost's.
        assert [b.shape for b in got.broadcast()] == [b.shape for b in want.broadcast()]
        np.testing.assert_allclose(got.sum(), want.sum(), rtol=1e-12)
    x = (rng.uniform(-1, 4), rng.choice(edges[:-1]) + 0.25 * np.min(np.diff(edges)), int(rng.integers(2, 6)))
    assert ours.index(*x) == theirs.index(*x)
    i = tuple(int(v) for v in ours.index(*x))
    assert ours.value(*i) == pytest.approx(theirs.value(*i), rel=1e-14)
    assert ours.bin(*i)[2] == theirs.bin(*i)[2] and ours.bin(*i)[1] == pytest.approx(theirs.bin(*i)[1])
    assert isinstance(ours[1:], tally.axis.AxesTuple) and ours[1:].size == theirs[1:].size
    assert isinstance(ours[0], tally.axis.Regular)
    with pytest.raises(IndexError, match="one argument per axis"):
        ours.index(1.0)


def test_axes_tuple_attributes_are_each_axis():
    axes = tally.axis.AxesTuple([tally.axis.Regular(2, 0, 1, label="x"), tally.axis.StrCategory(["a"], name="ds")])
    assert axes.label == ("x", "ds") and axes.name == ("", "ds") and axes.kind == ("regular", "category")
    axes.label = ("pT", "dataset")
    assert axes[0].label == "pT" and axes[1].label == "dataset"
    with pytest.raises(ValueError, match="one value per axis"):
        axes.label = ("only one",)
    with pytest.raises(TypeError, match="tally.axis axes expected, got int"):
        tally.axis.AxesTuple([tally.axis.Boolean(), 3])
    again = pickle.loads(pickle.dumps(axes))
    assert isinstance(again, tally.axis.AxesTuple) and list(again) == list(axes)


@pytest.mark.parametrize("growth", [False, True])
@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_a_scalar_int_category_fills_as_boost_histograms(rng, distribution, growth):
    # h.fill(variation, x): one integer category for every sample, known or not.
    bh = pytest.importorskip("boost_histogram")
    ours = tally.Histogram([tally.axis.IntCategory([4, 1], growth=growth), tally.axis.Regular(5, 0.0, 1.0)])
    theirs = bh.Histogram(bh.axis.IntCategory([4, 1], growth=growth), bh.axis.Regular(5, 0.0, 1.0),
                          storage=bh.storage.Int64())
    for category in (1, np.int64(4), 7, np.int32(1), 2):
        x = samples(rng, "f64", int(rng.integers(1, 200)), distribution, 0.0, 0.999)
        ours.fill(category, x)
        theirs.fill(category, x)
    assert ours.axes[0].categories == list(theirs.axes[0])
    np.testing.assert_array_equal(ours.values(), theirs.values())


# ---- tally.accumulators' views, against boost-histogram's ----

def _filled(lib, storage, x, y, s, w):
    axes = [lib.axis.Regular(6, 0.0, 3.0), lib.axis.Integer(0, 3)]
    h = lib.Histogram(axes, storage=storage) if lib is tally else lib.Histogram(*axes, storage=storage)
    kwargs = {"weight": w} if w is not None else {}
    if s is not None:
        kwargs["sample"] = s
    return h.fill(x, y, **kwargs)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
@pytest.mark.parametrize("storage", ["Weight", "Mean", "WeightedMean"])
def test_views_as_boost_histograms(rng, distribution, storage):
    bh = pytest.importorskip("boost_histogram")
    n = 3000
    x = samples(rng, "f64", n, distribution, 0.0, 2.999)
    y = rng.integers(0, 3, n)
    s = rng.normal(5.0, 2.0, n) if "Mean" in storage else None
    w = rng.uniform(0.25, 2.0, n) if storage != "Mean" else None
    ours = tally.accumulators._view_of(_filled(tally, getattr(tally.storage, storage)(), x, y, s, w).view())
    theirs = _filled(bh, getattr(bh.storage, storage)(), x, y, s, w).view()
    assert type(ours).__name__ == type(theirs).__name__
    fields = [f for f in theirs.dtype.names if not f.startswith("_")]
    fields += ["variance"] if "Mean" in storage else []
    # A WeightedMean cell of one sample has a variance of rounding errors over 0 in either library
    # (test_a_weighted_mean_cell_of_one_sample_has_no_spread): compared where two or more are.
    several = np.histogram2d(x, y, (6, 3), ((0.0, 3.0), (0, 3)))[0] > 1
    for f in fields:
        got, want = getattr(ours, f), getattr(theirs, f)
        assert type(got) is np.ndarray and got.shape == want.shape, f
        if f == "variance" and storage == "WeightedMean":
            got, want = got[several], want[several]
        np.testing.assert_allclose(got, want, rtol=1e-9, err_msg=f)
        if f != "variance":
            np.testing.assert_array_equal(got, ours[f])
    # One cell (the fullest): its accumulator, as boost's.
    i = np.unravel_index(np.argmax(theirs[theirs.dtype.names[0]]), theirs.shape)
    got, want = ours[i], theirs[i]
    assert type(got).__name__ == type(want).__name__
    for f in want._fields if hasattr(want, "_fields") else ("value", "variance"):
        assert getattr(got, f) == pytest.approx(getattr(want, f), rel=1e-9), f
    assert type(ours[1:3]) is type(ours) and ours[1:3].shape == (2, 3)


@pytest.mark.parametrize("distribution", DISTRIBUTIONS)
def test_a_weighted_mean_cell_of_one_sample_has_no_spread(rng, distribution):
    # boost-histogram's updates leave the same rounding error there (its variance is NaN, inf or
    # -inf): it is the reference for the other cells only.
    bh = pytest.importorskip("boost_histogram")
    n = 100  # into 400 bins: most filled cells hold one sample
    x, s, w = samples(rng, "f64", n, distribution, 0.0, 1.0), rng.normal(5.0, 2.0, n), rng.uniform(0.25, 2.0, n)
    ours = tally.Histogram(tally.axis.Regular(400, 0.0, 1.0), storage="weighted_mean").fill(x, sample=s, weight=w)
    theirs = bh.Histogram(bh.axis.Regular(400, 0.0, 1.0), storage=bh.storage.WeightedMean())
    theirs.fill(x, sample=s, weight=w)
    got, want = tally.accumulators._view_of(ours.view()), theirs.view()
    filled = np.histogram(x, 400, (0.0, 1.0))[0]
    one, more = filled == 1, filled > 1
    assert one.sum() >= 3
    np.testing.assert_array_equal(got["_sum_of_weighted_deltas_squared"][one], 0.0)
    assert np.isnan(got.variance[one]).all() and np.isnan(ours.variances()[one]).all()
    np.testing.assert_allclose(got.variance[more], want.variance[more], rtol=1e-9)
    assert all(np.isnan(ours[int(i)].variance) for i in np.flatnonzero(one))


def test_a_view_of_counts_stays_an_array():
    h = tally.Histogram(tally.axis.Integer(0, 3)).fill(np.array([0, 2, 2]))
    v = tally.accumulators._view_of(h.view())
    assert type(v) is np.ndarray and v.tolist() == [1, 0, 2]
    with pytest.raises(AttributeError, match="no attribute 'count'"):
        tally.accumulators._view_of(tally.Histogram(tally.axis.Integer(0, 1), storage="weight").view()).count

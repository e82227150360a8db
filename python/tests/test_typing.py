"""The package's type information (py.typed, the extension's stub _tally.pyi) checked by mypy.

mypy runs in this process (mypy.api.run) and finds tally where this test imported it from: the
directory above the package is on sys.path (PYTHONPATH=<build>/python), which mypy searches as
it searches site-packages, so tally is read as an installed package: it needs its py.typed, and
its modules' own errors are not the user's. Each run is in a temporary directory of its own, as
its working directory (where mypy also looks for modules and config files) holding only what it
checks.

- A user's program, as docs/python.md shows the API, type-checks clean with mypy's defaults (and
  runs, so that it is the API as it is).
- A program with type errors against the extension's stub gets them reported, naming the calls.
- The package itself type-checks clean (``-p tally``) with PACKAGE_CONFIG: its Python modules are
  typed by their source, and mostly not annotated, so mypy checks their module and class levels.
- The stub has every public name of the built extension (stubgen's output goes stale when a
  binding is added; docs/python.md says how to regenerate it).
"""

import ast
import os
import pathlib
import runpy
import site
import sys

import pytest

import tally

mypy_api = pytest.importorskip("mypy.api")

PACKAGE = pathlib.Path(tally.__file__).resolve().parent

# The configuration the package type-checks clean under, and why each line is there (the modules
# are not changed for mypy's sake).
PACKAGE_CONFIG = """\
[mypy]
# torch (tally.distributed) and cupy are imported where they are installed, not needed here.
ignore_missing_imports = True
# The modules' caches start as empty, unannotated dicts, lists and sets.
disable_error_code = var-annotated

[mypy-tally._histogram]
# Histogram's `__hash__ = None` (mutable, unhashable), which mypy reads as a bad assignment.
disable_error_code = var-annotated, assignment

[mypy-dask.*,distributed.*,pandas.*]
# Not tally's to check (and tally.dask's functions, not annotated, are not checked against them):
# skipped, which halves the run.
follow_imports = skip
"""

USER_PROGRAM = '''\
"""A user's program, as docs/python.md shows the API."""
import numpy as np
import numpy.typing as npt

import tally


def main() -> None:
    x: npt.NDArray[np.float32] = np.random.default_rng(0).normal(size=1000).astype(np.float32)
    hist, edges = tally.histogram(x, bins=64, range=(-4, 4))
    assert np.array_equal(hist, np.histogram(x, 64, (-4, 4))[0]) and edges.dtype == np.float32
    counts = tally.bincount(np.array([0, 1, 1, 3]), minlength=5)
    H, (xe, ye) = tally.histogramdd(np.c_[x, x * x], bins=(16, 8))
    print(tally.histogram2d(x, x, bins=8)[0].shape, tally.histc(x, bins=100, min=-4, max=4).dtype)
    print(tally.histogram_bin_edges(x, bins="auto").size, counts.sum(), H.shape, xe.size, ye.size)

    axis = tally.axis.regular(64, -4, 4, np.float32)
    h = tally.Histogram(axis)
    for chunk in np.array_split(x, 10):
        h.fill(chunk)
    assert np.array_equal(h.values(), hist) and h.edges.dtype == np.float64
    h2 = tally.Histogram([tally.axis.variable([0.0, 1.0, 4.0]), tally.axis.integer(0, 3)], weighted=True)
    h2.fill(x, x.astype(np.int64) % 3, weight=x)
    print(h2.values().shape, h2.density().sum())

    # The axes, typed by their annotations.
    ax: tally.axis.Axis = tally.axis.Regular(8, 0.0, 1.0, edge_type="f32", label="x")
    widths: npt.NDArray[np.float64] = ax.widths
    n: int = ax.bins + len(ax)
    bins = [b for b in ax]
    print(ax == axis, ax.traits.discrete, ax.edges[0], widths.sum(), n, bins[0])

    plan = tally.plan(x, bins=64)
    print(plan["backend"], plan["strategy"], [s["name"] for s in tally.strategies()], tally.STRATEGIES)
    print([b["name"] for b in tally.backends() if b["usable"]], len(tally.caches()))
    tally.clear_caches()
    version: str = tally.__version__
    print(version, tally.patterns.relu(x).dtype, tally.sigmoid(x).dtype)


if __name__ == "__main__":
    main()
'''

# Type errors against the stub, each on its line: a str for an int, a missing argument, a wrong
# result type, a bad method argument.
WRONG_PROGRAM = '''\
import numpy as np

import tally

ax = tally.axis.Regular("64", 0.0, 1.0)
tally.axis.Integer(0)
name: int = tally._tally.sample_type(np.zeros(3))
ax.widths(2)
'''
WRONG = [(5, '"Regular"'), (6, '"Integer"'), (7, "variable has type \"int\""),
         (8, 'not callable')]


def mypy(directory, cache_dir, *args):
    """mypy's (exit status, report lines) for `args`, run in `directory`; tally is found on sys.path."""
    # mypy searches sys.path but its first entry (the script's directory, unless -P), and site-packages.
    search = [os.path.abspath(p) for p in sys.path[0 if sys.flags.safe_path else 1:]] + site.getsitepackages()
    assert str(PACKAGE.parent) in search, (
        f"mypy would not find the tally imported here ({PACKAGE}): its directory is not in {search}")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.chdir(directory)
        out, err, status = mypy_api.run(["--cache-dir", str(cache_dir), "--no-error-summary", "--show-error-codes",
                                         "--no-color-output", *args])
    assert not err, err
    return status, out.splitlines()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    """One mypy cache for the module's runs (numpy's stubs are read once)."""
    return tmp_path_factory.mktemp("mypy_cache")


@pytest.fixture(scope="module")
def programs(tmp_path_factory, cache_dir):
    """The user's program and the wrong one, checked in one run of mypy with its defaults (a run
    costs seconds: mypy reads numpy's stubs): its error lines by file name."""
    directory = tmp_path_factory.mktemp("programs")
    (directory / "user.py").write_text(USER_PROGRAM)
    (directory / "wrong.py").write_text(WRONG_PROGRAM)
    status, lines = mypy(directory, cache_dir, "--config-file=", "user.py", "wrong.py")
    assert status in (0, 1), "\n".join(lines)
    found = {"user.py": [], "wrong.py": []}
    for line in lines:
        name = line.split(":", 1)[0]
        assert name in found, "\n".join(lines)  # no errors elsewhere (tally's modules, numpy)
        if ": error: " in line:
            found[name].append(line)
    return directory, found


def test_user_program_type_checks(programs, capsys):
    directory, found = programs
    assert found["user.py"] == []
    runpy.run_path(str(directory / "user.py"), run_name="__main__")  # it is the API as it is
    capsys.readouterr()


def test_type_errors_against_the_stub_are_reported(programs):
    _, found = programs
    errors = found["wrong.py"]
    assert len(errors) > 0
    for line, words in WRONG:
        assert any(f"wrong.py:{line}: error: " in e and words in e for e in errors), (line, words, errors)
    assert len(errors) == len(WRONG), "\n".join(errors)


def test_package_type_checks(tmp_path, cache_dir):
    (tmp_path / "mypy.ini").write_text(PACKAGE_CONFIG)
    status, lines = mypy(tmp_path, cache_dir, "--config-file", "mypy.ini", "-p", "tally")
    assert (status, lines) == (0, []), "\n".join(lines)


def defined(node):
    """The name a stub's statement defines (a function, an annotated value), or None."""
    if isinstance(node, ast.FunctionDef):
        return node.name
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def test_stub_names_the_extensions_names():
    text = (PACKAGE / "_tally.pyi").read_text()
    assert text.startswith("# Generated by nanobind.stubgen")
    names = {}  # name -> the names its class defines (None for functions and values)
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = {defined(n) for n in node.body}
        else:
            names[defined(node)] = None
    missing = []
    for name, value in vars(tally._tally).items():
        if name.startswith("_"):
            continue
        if name not in names:
            missing.append(name)
        elif isinstance(value, type):
            missing += [f"{name}.{m}" for m in vars(value) if not m.startswith("_") and m not in names[name]]
    assert not missing, (f"python/src/tally/_tally.pyi lacks {missing}: regenerate it as its first line "
                         "says (docs/python.md)")

"""The public API's docstrings: numpydoc sections on every public function, class and method of
the package's top level (the patterns and user kernels are documented elsewhere), and their
Examples run as doctests on the CPU, their shown output compared (NORMALIZE_WHITESPACE and
ELLIPSIS)."""

import contextlib
import doctest
import importlib.util
import inspect
import io
import re

import pytest

import tally
import tally._caches
import tally._functions
import tally._histogram
import tally._locators
import tally.accumulators
import tally.axis

MODULES = [tally._functions, tally._histogram, tally.axis, tally, tally._caches, tally.accumulators,
           tally._locators]

PUBLIC = {
    "histogram": tally.histogram, "histogram_bin_edges": tally.histogram_bin_edges,
    "histogram2d": tally.histogram2d, "histogramdd": tally.histogramdd,
    "bincount": tally.bincount, "histc": tally.histc, "plan": tally.plan,
    "axis.regular": tally.axis.regular, "axis.variable": tally.axis.variable,
    "axis.integer": tally.axis.integer, "strategies": tally.strategies,
    **{f"axis.{c}": getattr(tally.axis, c) for c in ("Regular", "Variable", "Integer", "IntCategory",
                                                        "StrCategory", "Boolean")},
    "backends": tally.backends, "caches": tally.caches, "clear_caches": tally.clear_caches,
    "Histogram": tally.Histogram,
}
PUBLIC.update({f"Histogram.{name}": member for name, member in vars(tally.Histogram).items()
               if not name.startswith("_")})
if importlib.util.find_spec("dask") is not None:  # tally.dask needs dask, a test extra
    import tally.dask

    MODULES.append(tally.dask)
    PUBLIC["dask.fill"] = tally.dask.fill

FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
# Examples that need a package that is a test extra: run where it is installed.
NEEDS = {"boost_histogram": ("Histogram.to_boost", "Histogram.from_boost"),
         "hist": ("Histogram.to_hist", "Histogram.from_hist"),
         "matplotlib": ("Histogram.plot", "Histogram.plot2d")}
MISSING = tuple(name for package, names in NEEDS.items() if importlib.util.find_spec(package) is None
                for name in names)


def _sections(doc):
    """The numpydoc section titles of a docstring: a line followed by a line of dashes."""
    lines = inspect.cleandoc(doc).splitlines()
    return {a.strip() for a, b in zip(lines, lines[1:])
            if re.fullmatch(r"-{3,}", b.strip()) and len(b.strip()) == len(a.strip())}


def _takes_parameters(member):
    function = member.fget if isinstance(member, property) else member
    if isinstance(function, (classmethod, staticmethod)):
        function = function.__func__
    if inspect.isclass(function):
        function = function.__init__
    params = list(inspect.signature(function).parameters.values())
    return any(p.name not in ("self", "cls") for p in params)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_numpydoc_sections(name):
    member = PUBLIC[name]
    assert member.__doc__, f"{name}: no docstring"
    lines = inspect.cleandoc(member.__doc__).splitlines()
    assert lines[0].strip() and (len(lines) == 1 or not lines[1].strip()), \
        f"{name}: the summary is not one line"
    indent = 8 if name.startswith("Histogram.") else 4  # a method's, a function's or class's
    widths = [indent + 3 + len(lines[0])] + [indent + len(line) for line in lines[1:]]
    assert max(widths) <= 100, f"{name}: a source line over 100 characters"
    sections = _sections(member.__doc__)
    want = {"Examples"}
    if _takes_parameters(member):
        want.add("Parameters")
    if not inspect.isclass(member):  # a class documents its constructor's parameters
        want.add("Returns")
    assert want <= sections, f"{name}: missing {sorted(want - sections)}"
    assert ">>> " in member.__doc__, f"{name}: Examples without a doctest"


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_doctests(module):
    """doctest.testmod's run of the module, less the examples whose package (NEEDS) is
    missing; every failure's report in the assertion."""
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for test in finder.find(module, module.__name__, globs=vars(module).copy()):
            if MISSING and test.name.endswith(MISSING):
                continue
            runner.run(test, out=out.write)
        failed, attempted = runner.summarize(verbose=False)
    assert attempted > 0, f"{module.__name__}: no doctests ran"
    assert failed == 0, f"{module.__name__}: {failed} of {attempted} failed\n{out.getvalue()}"

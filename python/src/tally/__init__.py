"""tally: histograms with numpy's exact results on GPUs and CPUs.

Functions with numpy's and torch's names and arguments (histogram, histogram2d, histogramdd,
bincount, histc) that read numpy, torch (CPU and CUDA) and cupy arrays in place and answer in the
same library on the same device; a streaming Histogram object; plan(), the planner's choice; and
the parallel patterns (activations, broadcasting arithmetic, reductions, matmul, and user-defined
kernels: ElementwiseKernel, ReductionKernel, RawKernel, RawModule) in kind, which live in
tally.patterns and are exported here too.
"""

from . import _tally, accumulators, axis, distributed, patterns, storage
from ._caches import caches, clear_caches
from ._locators import loc, overflow, rebin, underflow
from ._functions import bincount, histc, histogram, histogram2d, histogram_bin_edges, histogramdd, plan
from ._histogram import Histogram, WeightedSum
from .patterns import (ElementwiseKernel, RawKernel, RawModule, ReductionKernel, add, div, gelu, matmul, max, mean,
                       min, mul, relu, sigmoid, silu, sub, sum, tanh)

__version__ = _tally.version()


def strategies():
    """The named strategies a call may ask for, from the registry tally::strategies().

    Name one with ``strategy=`` in :func:`histogram` and the other functions, or in
    :class:`Histogram`; ``tally.STRATEGIES`` holds the names.

    Returns
    -------
    list of dict
        One dict per strategy: 'name'; 'backend' ('cpu', 'cuda', or 'auto' for
        'automatic'); 'technique' (the classic pattern it implements); 'applies' (the fills
        it takes when asked for); 'chosen_when' (when the planner picks it unasked, and the
        measurement behind that).

    See Also
    --------
    plan : The strategy the planner picks for a call.
    backends : The backends and whether each is usable.

    Examples
    --------
    >>> import tally
    >>> rows = tally.strategies()
    >>> [(r["name"], r["backend"]) for r in rows[:3]]
    [('automatic', 'auto'), ('cpu_private', 'cpu'), ('global_atomic', 'cuda')]
    >>> tuple(r["name"] for r in rows) == tally.STRATEGIES
    True
    """
    return _tally.strategies()


STRATEGIES = tuple(row["name"] for row in _tally.strategies())


def backends():
    """The backends, whether each is compiled in, and whether each is usable here.

    Returns
    -------
    list of dict
        One dict per backend ('cpu', then 'cuda'): 'name'; 'compiled' (bool); 'usable'
        (bool); 'detail' (the CPU's hardware threads, the CUDA devices, or why a backend is
        not usable).

    See Also
    --------
    strategies : The strategies of each backend.

    Examples
    --------
    >>> import tally
    >>> [b["name"] for b in tally.backends()]
    ['cpu', 'cuda']
    >>> cpu = tally.backends()[0]
    >>> cpu["compiled"], cpu["usable"]
    (True, True)
    """
    return [dict(name=n, compiled=c, usable=u, detail=d) for n, c, u, d in _tally.backends()]


__all__ = ["Histogram", "WeightedSum", "axis", "backends", "bincount", "distributed", "histc", "histogram", "histogram2d",
           "histogram_bin_edges", "histogramdd", "patterns", "plan", "strategies", "STRATEGIES", "__version__", "caches", "clear_caches",
           "loc", "rebin", "underflow", "overflow", "storage", "accumulators",
           *patterns.__all__]

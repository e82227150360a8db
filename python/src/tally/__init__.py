"""tally: histograms with numpy's exact results on GPUs and CPUs.

Functions with numpy's and torch's names and arguments (histogram, histogram2d, histogramdd,
bincount, histc) that read numpy, torch (CPU and CUDA) and cupy arrays in place and answer in the
same library on the same device; a streaming Histogram object; plan(), the planner's choice; and
the parallel patterns (activations, broadcasting arithmetic, reductions, matmul, and user-defined
kernels: ElementwiseKernel, ReductionKernel) in kind, which live in tally.patterns and are
exported here too.
"""

from . import _tally, axis, distributed, patterns
from ._caches import caches, clear_caches
from ._functions import bincount, histc, histogram, histogram2d, histogram_bin_edges, histogramdd, plan
from ._histogram import Histogram
from .patterns import (ElementwiseKernel, ReductionKernel, add, div, gelu, matmul, max, mean, min, mul, relu,
                       sigmoid, silu, sub, sum, tanh)

__version__ = _tally.version()


def strategies():
    """The named strategies, as a list of dicts (the registry tally::strategies()): name,
    backend ('cpu', 'cuda', or 'auto' for automatic), technique (the classic pattern it
    implements), applies (the fills it takes when asked for) and chosen_when (when the planner
    picks it unasked, and the measurement behind that). Name one with ``strategy=``."""
    return _tally.strategies()


STRATEGIES = tuple(row["name"] for row in _tally.strategies())


def backends():
    """The backends compiled in and whether each is usable here, as a list of dicts."""
    return [dict(name=n, compiled=c, usable=u, detail=d) for n, c, u, d in _tally.backends()]


__all__ = ["Histogram", "axis", "backends", "bincount", "distributed", "histc", "histogram", "histogram2d",
           "histogram_bin_edges", "histogramdd", "patterns", "plan", "strategies", "STRATEGIES", "__version__", "caches", "clear_caches",
           *patterns.__all__]

"""tally: histograms with numpy's exact results on GPUs and CPUs.

Functions with numpy's and torch's names and arguments (histogram, histogram2d, histogramdd,
bincount, histc) that read numpy, torch (CPU and CUDA) and cupy arrays in place and answer in the
same library on the same device; a streaming Histogram object; and plan(), the planner's choice.
"""

from . import _tally, axis
from ._functions import bincount, histc, histogram, histogram2d, histogramdd, plan
from ._histogram import Histogram

__version__ = _tally.version()
STRATEGIES = tuple(_tally.strategy_names())


def backends():
    """The backends compiled in and whether each is usable here, as a list of dicts."""
    return [dict(name=n, compiled=c, usable=u, detail=d) for n, c, u, d in _tally.backends()]


__all__ = ["Histogram", "axis", "backends", "bincount", "histc", "histogram", "histogram2d",
           "histogramdd", "plan", "STRATEGIES", "__version__"]

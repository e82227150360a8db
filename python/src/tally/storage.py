"""Storages with boost-histogram's names, for ``tally.Histogram(axes, storage=...)``.

``Int64()``: counts (the default); ``Double()``: sums of weights (``weighted=True``);
``Weight()``: sums of weights and of their squares (``storage="weight"``); ``Mean()`` and
``WeightedMean()``: profiles, the mean and variance of `sample=` in each cell.
"""

import typing


class _Storage:
    _kind: typing.Optional[str] = None  # the Histogram's storage argument this stands for

    def __repr__(self):
        return f"tally.storage.{type(self).__name__}()"

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self).__name__)


class Int64(_Storage):
    """Counts, 64 bits a cell."""


class Double(_Storage):
    """Sums of weights in float64."""

    _kind = "double"


class Weight(_Storage):
    """Sums of weights and of their squares in float64 (variances)."""

    _kind = "weight"


class Mean(_Storage):
    """A profile: each cell's count, and the mean and variance of the samples' `sample=`."""

    _kind = "mean"


class WeightedMean(_Storage):
    """A weighted profile: each cell's sums of weights and of their squares, and the weighted
    mean and variance of the samples' `sample=`."""

    _kind = "weighted_mean"

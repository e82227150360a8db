"""What a cell of a histogram of means holds, and what its sum() gives, with boost-histogram's
names: Mean (count, value, variance) and WeightedMean (sum_of_weights, sum_of_weights_squared,
value, variance); WeightedSum for Weight storage."""

import typing


class WeightedSum(typing.NamedTuple):
    """The total of a Weight histogram (``Histogram.sum``), as boost-histogram's.

    ``value``: the sum of the weights; ``variance``: the sum of their squares.

    Examples
    --------
    >>> import numpy as np, tally
    >>> h = tally.Histogram(tally.axis.regular(2, 0, 1), storage="weight")
    >>> h.fill(np.array([0.2, 0.7]), weight=np.array([2.0, 3.0])).sum()
    WeightedSum(value=5.0, variance=13.0)
    """

    value: float
    variance: float


class Mean(typing.NamedTuple):
    """A cell of Mean storage: the samples counted, their mean and their variance (n - 1)."""

    count: float  # type: ignore[assignment]  # boost-histogram's name, over tuple.count
    value: float
    variance: float


class WeightedMean(typing.NamedTuple):
    """A cell of WeightedMean storage: the sums of the weights and of their squares, the weighted
    mean and the weighted variance (sum w (x - mean)^2 / (sum w - sum w^2 / sum w))."""

    sum_of_weights: float
    sum_of_weights_squared: float
    value: float
    variance: float

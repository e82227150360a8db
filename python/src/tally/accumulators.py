"""What a cell of a histogram of means holds, and what its sum() gives, with boost-histogram's
names: Mean (count, value, variance) and WeightedMean (sum_of_weights, sum_of_weights_squared,
value, variance); WeightedSum for Weight storage; and the structured arrays of those cells that
``Histogram.view()`` gives (WeightedSumView, MeanView, WeightedMeanView), whose fields read as
attributes (``h.view().value``), as boost-histogram's views."""

import typing

import numpy as np


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


class _View(np.ndarray):
    """A structured array of a storage's cells: a field reads as an attribute, and an index that
    picks one cell gives its accumulator (boost-histogram's views)."""

    _FIELDS: typing.ClassVar[typing.Tuple[str, ...]] = ()

    def __getitem__(self, index):
        out = super().__getitem__(index)
        if isinstance(index, str) or getattr(out, "dtype", self.dtype) != self.dtype:
            return np.asarray(out)  # a field: a plain array
        if not getattr(out, "shape", ()):
            return self._cell(*(float(out[f]) for f in self._FIELDS))
        return out

    def __getattr__(self, name):
        if name in type(self)._FIELDS:
            return np.asarray(self[name])
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __setattr__(self, name, value):
        if name in type(self)._FIELDS:
            self[name] = value
        else:
            super().__setattr__(name, value)

    @staticmethod
    def _cell(*fields):
        raise NotImplementedError


class WeightedSumView(_View):
    """Weight storage's cells (``Histogram.view()``): fields ``value`` (the sums of the weights)
    and ``variance`` (the sums of their squares).

    Examples
    --------
    >>> import numpy as np, tally
    >>> h = tally.Histogram(tally.axis.Integer(0, 2), storage=tally.storage.Weight())
    >>> cells = h.fill(np.array([0, 0, 1]), weight=np.array([1.0, 2.0, 0.5])).view()
    >>> v = cells.view(tally.accumulators.WeightedSumView)  # what view() gives
    >>> v.value, v.variance, v[0]
    (array([3. , 0.5]), array([5.  , 0.25]), WeightedSum(value=3.0, variance=5.0))
    """

    _FIELDS = ("value", "variance")

    @staticmethod
    def _cell(value, variance):
        return WeightedSum(value, variance)


class MeanView(_View):
    """Mean storage's cells (``Histogram.view()``): fields ``count``, ``value`` (the mean) and
    ``_sum_of_deltas_squared``; ``variance`` is the samples' variance (n - 1).

    Examples
    --------
    >>> import numpy as np, tally
    >>> h = tally.Histogram(tally.axis.Integer(0, 2), storage=tally.storage.Mean())
    >>> cells = h.fill(np.array([0, 0, 1]), sample=np.array([1.0, 3.0, 5.0])).view()
    >>> v = cells.view(tally.accumulators.MeanView)  # what view() gives
    >>> v.count, v.value, v.variance, v[0]
    (array([2., 1.]), array([2., 5.]), array([ 2., nan]), Mean(count=2.0, value=2.0, variance=2.0))
    """

    _FIELDS = ("count", "value", "_sum_of_deltas_squared")

    @property
    def variance(self):
        return np.asarray(_mean_variance(self["count"], self["_sum_of_deltas_squared"]))

    @staticmethod
    def _cell(count, value, deltas):
        return Mean(count, value, float(_mean_variance(np.float64(count), np.float64(deltas))))


class WeightedMeanView(_View):
    """WeightedMean storage's cells (``Histogram.view()``): fields ``sum_of_weights``,
    ``sum_of_weights_squared``, ``value`` (the weighted mean) and
    ``_sum_of_weighted_deltas_squared``; ``variance`` is the weighted variance.

    Examples
    --------
    >>> import numpy as np, tally
    >>> h = tally.Histogram(tally.axis.Integer(0, 1), storage=tally.storage.WeightedMean())
    >>> cells = h.fill(np.array([0, 0]), sample=np.array([1.0, 4.0]), weight=np.array([2.0, 1.0])).view()
    >>> v = cells.view(tally.accumulators.WeightedMeanView)  # what view() gives
    >>> v.sum_of_weights, v.value, v.variance
    (array([3.]), array([2.]), array([4.5]))
    """

    _FIELDS = ("sum_of_weights", "sum_of_weights_squared", "value", "_sum_of_weighted_deltas_squared")

    @property
    def variance(self):
        return np.asarray(_weighted_variance(self["sum_of_weights"], self["sum_of_weights_squared"],
                                             self["_sum_of_weighted_deltas_squared"]))

    @staticmethod
    def _cell(w, w2, value, deltas):
        return WeightedMean(w, w2, value, float(_weighted_variance(np.float64(w), np.float64(w2), np.float64(deltas))))


def _mean_variance(count, deltas):
    """deltas / (count - 1), as boost-histogram's (NaN or inf where count <= 1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return deltas / (count - 1)


def _weighted_variance(w, w2, deltas):
    """deltas / (sum w - sum w^2 / sum w), as boost-histogram's, and NaN for a cell of one sample
    (sum(w)^2 == sum(w^2), which holds for one sample only), where the denominator is 0 but
    rounds to either side of it."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(w * w == w2, np.nan, deltas / (w - w2 / w))


def _view_of(cells):
    """A structured array of cells as its storage's view class (by its fields); others as they are."""
    for cls in (WeightedSumView, MeanView, WeightedMeanView):
        if cells.dtype.names == cls._FIELDS:
            return cells.view(cls)
    return cells

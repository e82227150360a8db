"""UHI's locators and rebinning, with boost-histogram's names: ``h[tally.loc(x)]``,
``h[::tally.rebin(2)]``, ``h[tally.underflow:tally.overflow]``."""


class loc:
    """The bin of a value on the axis it indexes, plus `offset` bins (UHI's ``loc``).

    Parameters
    ----------
    value : object
        A value on the axis (a number, or a category).
    offset : int, optional
        Bins to move from there (default 0).

    Examples
    --------
    >>> import numpy as np, tally
    >>> h = tally.Histogram(tally.axis.Regular(4, 0, 1)).fill(np.array([0.1, 0.6, 0.7]))
    >>> h[tally.loc(0.65)], h[tally.loc(0.65, -2)]
    (2, 1)
    """

    def __init__(self, value, offset=0):
        self.value, self.offset = value, int(offset)

    def __call__(self, axis):
        return axis.index(self.value) + self.offset

    def __repr__(self):
        return f"tally.loc({self.value!r}" + (f", {self.offset}" if self.offset else "") + ")"


class rebin:
    """A slice step that merges `factor` bins into one (UHI's ``rebin``).

    Parameters
    ----------
    factor : int
        Bins per merged bin, at least 1.

    Examples
    --------
    >>> import numpy as np, tally
    >>> h = tally.Histogram(tally.axis.Regular(4, 0, 1)).fill(np.array([0.1, 0.6, 0.7]))
    >>> h[::tally.rebin(2)].values()
    array([1, 2])
    """

    def __init__(self, factor):
        self.factor = int(factor)
        if self.factor < 1:
            raise ValueError(f"tally.rebin: a factor of at least 1, got {factor}")

    def __repr__(self):
        return f"tally.rebin({self.factor})"


def underflow(axis):
    """The underflow position of an axis, as a slice end: ``h[tally.underflow:3]``."""
    return -1


def overflow(axis):
    """The overflow position of an axis, as a slice end: ``h[2:tally.overflow]``."""
    return axis.bins

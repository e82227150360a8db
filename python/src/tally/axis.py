"""Axes for tally.Histogram: each maps a sample to a bin under tally's one bin rule (bins are
[e_k, e_k+1), the last one also holds its right edge; values outside and NaN are dropped)."""

import numpy as np

from . import _tally
from ._arrays import int64_arg, to_host

Axis = _tally.Axis


def regular(bins, lo, hi, edge_type="f64"):
    """An axis of `bins` equal bins over [lo, hi].

    The edges are ``numpy.linspace(lo, hi, bins + 1)`` rounded to `edge_type`: the edges
    numpy.histogram uses for samples of that type with ``range=(lo, hi)``. Bins are
    [e_k, e_k+1), the last one also holds its right edge; samples outside and NaN are dropped.

    Parameters
    ----------
    bins : int
        The number of bins, at least 1.
    lo, hi : float
        The first and last edge, finite, ``lo < hi``.
    edge_type : str or numpy float type, optional
        The type the edges are rounded to: 'f64' (default), 'f32', 'f16', 'bf16', or a numpy
        float type such as numpy.float32.

    Returns
    -------
    Axis
        The axis, for :class:`tally.Histogram`.

    Raises
    ------
    ValueError
        `bins` below 1; `lo` not below `hi`; a range that is not finite; another edge type.
    TypeError
        `bins` not an integer.
    OverflowError
        `bins` beyond int64.

    See Also
    --------
    numpy.histogram_bin_edges : The same edges, for ``range=(lo, hi)``.

    Examples
    --------
    >>> import numpy as np, tally
    >>> tally.axis.regular(4, 0, 1).edges
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    >>> x = np.array([0.05, 0.1, 0.2], np.float32)
    >>> edges = tally.axis.regular(3, 0, 0.3, np.float32).edges
    >>> np.array_equal(edges, np.histogram_bin_edges(x, 3, range=(0, 0.3)))
    True
    """
    if not isinstance(edge_type, str):
        edge_type = np.dtype(edge_type).name
    return _tally.Axis.regular(int64_arg(bins, "bins"), float(lo), float(hi), edge_type)


def variable(edges):
    """An axis of arbitrary edges: at least two, non-decreasing, not NaN.

    Bins are [e_k, e_k+1), the last one also holds its right edge; samples outside and NaN are
    dropped, as numpy.histogram bins them with these edges.

    Parameters
    ----------
    edges : array_like, 1-D
        The edges, read as float64 from an array of any library and device: at least two,
        non-decreasing, not NaN (the outer ones may be infinite).

    Returns
    -------
    Axis
        The axis, for :class:`tally.Histogram`.

    Raises
    ------
    ValueError
        Edges not 1-D, fewer than two, decreasing, or NaN.

    See Also
    --------
    numpy.histogram : The same bins, with `bins` an array of edges.

    Examples
    --------
    >>> import numpy as np, tally
    >>> axis = tally.axis.variable([0, 1, 10, np.inf])
    >>> axis.bins, axis.edges
    (3, array([ 0.,  1., 10., inf]))
    >>> h = tally.Histogram(axis)
    >>> h.fill(np.array([0.5, 1.0, 99.0, -1.0])).values()
    array([1, 1, 1])
    """
    e = np.ascontiguousarray(to_host(edges), dtype=np.float64)
    if e.ndim != 1:
        raise ValueError("variable axis: edges must be 1-D")
    return _tally.Axis.variable(e)


def integer(lo, hi):
    """An axis of one bin per integer in [lo, hi), as numpy.bincount's bins (integer(0, n)).

    Samples outside [lo, hi) and NaN are dropped.

    Parameters
    ----------
    lo : int
        The first integer with a bin.
    hi : int
        One past the last integer with a bin; ``lo < hi``.

    Returns
    -------
    Axis
        The axis of ``hi - lo`` bins, for :class:`tally.Histogram`.

    Raises
    ------
    ValueError
        `lo` not below `hi`.
    TypeError
        `lo` or `hi` not an integer.
    OverflowError
        `lo` or `hi` beyond int64.

    See Also
    --------
    numpy.bincount : The same bins for ``integer(0, n)``.

    Examples
    --------
    >>> import numpy as np, tally
    >>> x = np.array([0, 1, 1, 4])
    >>> h = tally.Histogram(tally.axis.integer(0, 5))
    >>> h.fill(x).values(), np.bincount(x)
    (array([1, 2, 0, 0, 1]), array([1, 2, 0, 0, 1]))
    """
    return _tally.Axis.integer(int64_arg(lo, "lo"), int64_arg(hi, "hi"))

"""Conversions between tally.Histogram and boost-histogram's Histogram (boost_histogram is
imported only when one is asked for).

Axes: a regular axis with float64 edges is boost's Regular of the same bins and range (each
library computes its edges its own way; they agree to within rounding), one with narrower edges
is a Variable axis of its exact edges; variable axes are Variable; integer axes are Integer.
Storage: counts are Int64 (or AtomicInt64 from boost), sums of weights are Double. Flow:
boost keeps flow bins along each axis, tally a total per reason (each dropped sample counted
once, under the first axis that rejects it), so boost's flow bins convert to tally's counters,
and tally's counters to boost's only for a 1-D histogram of counts (NaN into the overflow bin,
where boost puts NaN)."""

import numpy as np

from . import axis as tally_axis


def _boost():
    try:
        import boost_histogram
    except ImportError as e:
        raise ImportError("tally: to_boost/from_boost need the boost-histogram package") from e
    return boost_histogram


def _to_boost_axis(bh, a, d, flow_bins):
    flow = dict(underflow=flow_bins, overflow=flow_bins)
    if a.kind == "integer":
        return bh.axis.Integer(int(a.lo), int(a.hi), **flow)
    if a.kind == "regular" and a.edge_type == "f64":
        return bh.axis.Regular(a.bins, a.lo, a.hi, **flow)
    try:
        return bh.axis.Variable(a.edges, **flow)
    except ValueError as e:
        raise ValueError(f"to_boost: axis {d} ({a.kind}, {a.bins} bins) has edges boost-histogram's "
                         f"Variable axis does not take: {e}") from None


def to_boost(h, flow):
    bh = _boost()
    if h._channels is not None:
        raise ValueError("to_boost: a channel histogram is one histogram per channel; boost-histogram has "
                         "no such kind")
    weighted, weight = h._hists[0].weighted, h._squares is not None
    axes = h.axes
    if flow and h._flow and (weighted or len(axes) > 1):
        raise ValueError("to_boost: tally's flow counters are totals of dropped samples, which boost-histogram's "
                         "per-axis flow bins of " + ("sums of weights" if weighted else "an N-D histogram") +
                         " cannot hold; pass flow=False to convert without them")
    flow_bins = bool(flow and h._flow)
    out = bh.Histogram(*[_to_boost_axis(bh, a, d, flow_bins) for d, a in enumerate(axes)],
                       storage=bh.storage.Weight() if weight else bh.storage.Double() if weighted
                       else bh.storage.Int64())
    view = out.view(flow=True)
    if weight:
        view.value, view.variance = h.values(), h.variances()
    elif flow_bins:
        dropped = h.flow
        view[1:-1] = h.values()
        view[0] = dropped["underflow"]
        view[-1] = dropped["overflow"] + dropped["nan"]
    else:
        view[...] = h.values()
    return out


def _from_boost_axis(bh, ax, d):
    if ax.traits.circular:
        raise ValueError(f"from_boost: axis {d} is circular; tally's axes do not wrap around")
    if isinstance(ax, bh.axis.Integer):
        return tally_axis.integer(int(ax.edges[0]), int(ax.edges[-1]))
    if isinstance(ax, bh.axis.Boolean):
        return tally_axis.integer(0, 2)
    if isinstance(ax, bh.axis.Regular) and ax.transform is None:
        return tally_axis.regular(len(ax), ax.edges[0], ax.edges[-1])
    if isinstance(ax, (bh.axis.Regular, bh.axis.Variable)):
        return tally_axis.variable(ax.edges)
    raise ValueError(f"from_boost: axis {d} is a {type(ax).__name__}, which has no tally axis "
                     "(Regular, Variable, Integer and Boolean do)")


def _split_flow(bh_hist, full=None):
    """(inner cells, underflow total, overflow total) of `full` (default: the histogram's view
    with flow bins): each cell in a flow bin of some axis goes to the reason of the first axis
    (in axis order) on whose flow bin it lies, as tally counts."""
    full = np.asarray(bh_hist.view(flow=True) if full is None else full)
    remaining = np.ones(full.shape, bool)
    under = over = full.dtype.type(0)
    inner = []
    for d, ax in enumerate(bh_hist.axes):
        reason = np.zeros(full.shape[d], np.int8)
        if ax.traits.underflow:
            reason[0] = 1
        if ax.traits.overflow:
            reason[-1] = 2
        reason = reason.reshape([-1 if i == d else 1 for i in range(full.ndim)])
        under += full[remaining & (reason == 1)].sum()
        over += full[remaining & (reason == 2)].sum()
        remaining &= reason == 0
        inner.append(slice(1 if ax.traits.underflow else 0, -1 if ax.traits.overflow else None))
    return full[tuple(inner)], under, over


def from_boost(cls, bh_hist, flow, **options):
    bh = _boost()
    if not isinstance(bh_hist, bh.Histogram):
        raise TypeError(f"from_boost: expected a boost_histogram.Histogram, got {type(bh_hist).__name__}")
    storage = bh_hist.storage_type
    if storage in (bh.storage.Int64, bh.storage.AtomicInt64):
        weighted = False
    elif storage in (bh.storage.Double, bh.storage.Weight):
        weighted = True
    else:
        raise ValueError(f"from_boost: {storage.__name__} storage has no tally equivalent: tally stores counts "
                         "(Int64, AtomicInt64), sums of weights (Double) or sums of weights and of their "
                         "squares (Weight), not means")
    axes = [_from_boost_axis(bh, ax, d) for d, ax in enumerate(bh_hist.axes)]
    cells, under, over = _split_flow(bh_hist, bh_hist.values(flow=True))
    if weighted and flow and (under != 0 or over != 0):
        raise ValueError("from_boost: the flow bins hold sums of weights, and tally's flow counters count "
                         "samples; pass flow=False to convert without them")
    keep_flow = bool(flow and not weighted and any(ax.traits.underflow or ax.traits.overflow
                                                   for ax in bh_hist.axes))
    weight = storage is bh.storage.Weight
    h = cls(axes, storage="weight" if weight else None, weighted=weighted, flow=keep_flow, **options)
    if weighted:
        parts = [cells] + ([_split_flow(bh_hist, bh_hist.variances(flow=True))[0]] if weight else [])
        for part, c in zip(h._parts(), parts):
            part.assign(np.ascontiguousarray(c, np.float64).ravel(), (0, 0, 0), 0)
        return h
    if (cells < 0).any() or under < 0 or over < 0:
        raise ValueError("from_boost: negative counts")
    dropped = (int(under), int(over), 0) if keep_flow else (0, 0, 0)
    samples = int(cells.sum(dtype=np.uint64)) + dropped[0] + dropped[1]
    h._hists[0].assign(np.ascontiguousarray(cells, np.uint64).ravel(), dropped, samples)
    return h

"""Conversions between tally.Histogram and boost-histogram's Histogram (boost_histogram is
imported only when one is asked for).

Axes: a regular axis with float64 edges is boost's Regular of the same bins and range (each
library computes its edges its own way; they agree to within rounding), transform and circularity
included, one with narrower edges is a Variable axis of its exact edges; variable axes are
Variable; integer axes are Integer; IntCategory, StrCategory and Boolean are boost's own. Labels
and metadata go along (boost keeps the label, and the name, in the axis' __dict__).
Storage: counts are Int64 (or AtomicInt64 from boost), sums of weights are Double. Flow:
boost keeps flow bins along each axis, tally a total per reason (each dropped sample counted
once, under the first axis that rejects it), so boost's flow bins convert to tally's counters,
and tally's counters to boost's only for a 1-D histogram of counts (NaN into the overflow bin,
where boost puts NaN)."""

import numpy as np

from . import _histogram
from . import axis as tally_axis


def _boost():
    try:
        import boost_histogram
    except ImportError as e:
        raise ImportError("tally: to_boost/from_boost need the boost-histogram package") from e
    return boost_histogram


def _to_boost_axis(bh, a, d, flow_bins):
    out = _boost_axis(bh, a, d, flow_bins)
    if a.metadata is not None:
        out.metadata = a.metadata
    if a.label:
        out.label = a.label
    if a.name:
        out.name = a.name
    return out


def _boost_transform(bh, t, d):
    if t is None:
        return None
    if isinstance(t, tally_axis.Pow):
        return bh.axis.transform.Pow(t.power)
    if t == tally_axis.transform.log or t == tally_axis.transform.sqrt:
        return bh.axis.transform.log if t == tally_axis.transform.log else bh.axis.transform.sqrt
    raise ValueError(f"to_boost: axis {d} has a transform of Python functions, which boost-histogram takes "
                     "only as compiled functions")


def _boost_axis(bh, a, d, flow_bins):
    circular, growth = a.traits.circular, a.traits.growth
    flow = dict(underflow=flow_bins, overflow=flow_bins)  # circular axes: boost's own (an overflow bin)
    if a.kind == "boolean":
        return bh.axis.Boolean()
    if a.kind == "category":
        cls = bh.axis.StrCategory if isinstance(a, tally_axis.StrCategory) else bh.axis.IntCategory
        return cls(a.categories, growth=growth, overflow=flow_bins and not growth)
    if a.kind == "integer":
        return bh.axis.Integer(int(a.lo), int(a.hi), growth=growth, circular=circular,
                               **(flow if not circular else {}))
    if a.kind == "regular" and a.edge_type == "f64":
        transform = _boost_transform(bh, getattr(a, "transform", None), d)
        if transform is not None:  # boost's transformed axes keep both flow bins and do not wrap
            return bh.axis.Regular(a.bins, a.lo, a.hi, transform=transform)
        return bh.axis.Regular(a.bins, a.lo, a.hi, **(dict(circular=True) if circular else flow))
    try:
        return bh.axis.Variable(a.edges, **(dict(circular=True) if circular else flow))
    except ValueError as e:
        raise ValueError(f"to_boost: axis {d} ({a.kind}, {a.bins} bins) has edges boost-histogram's "
                         f"Variable axis does not take: {e}") from None


def to_boost(h, flow):
    bh = _boost()
    if h._channels is not None:
        raise ValueError("to_boost: a channel histogram is one histogram per channel; boost-histogram has "
                         "no such kind")
    weighted, storage = h._hists[0].weighted, h._storage
    axes = h.axes
    if flow and h._flow and (weighted or (len(axes) > 1 and not h._flow_bins)):
        raise ValueError("to_boost: tally's flow counters are totals of dropped samples, which boost-histogram's "
                         "per-axis flow bins of " + ("sums of weights" if weighted else "an N-D histogram") +
                         " cannot hold; pass flow=False to convert without them")
    flow_bins = bool(flow and h._flow)
    kinds = {"int64": bh.storage.Int64, "double": bh.storage.Double, "weight": bh.storage.Weight,
             "mean": bh.storage.Mean, "weighted_mean": bh.storage.WeightedMean}
    out = bh.Histogram(*[_to_boost_axis(bh, a, d, flow_bins) for d, a in enumerate(axes)], storage=kinds[storage]())
    inner = out.view(flow=False)  # axes may keep flow bins all the same (transformed ones must)
    if storage in ("weight", "mean", "weighted_mean"):
        view = h.view()
        for field in view.dtype.names:
            inner[field] = view[field]
    elif flow_bins:
        kept = h.values(flow=True)  # the flow bins the axes keep
        if kept.sum() != h._extended(visible=False).sum():
            raise ValueError("to_boost: the flow counters hold samples for a flow bin the boost-histogram axis "
                             "lacks; pass flow=False to convert without them")
        out.view(flow=True)[...] = kept
    else:
        inner[...] = h.values()
    if h.metadata is not None:
        out.metadata = h.metadata
    for key in ("label", "name"):
        if getattr(h, key):
            setattr(out, key, getattr(h, key))
    return out


def _from_boost_axis(bh, ax, d):
    extras = ax.__dict__
    deco = dict(label=extras.get("label", ""), name=extras.get("name", ""), metadata=extras.get("metadata"))
    traits = ax.traits
    flow = dict(underflow=traits.underflow, overflow=traits.overflow)
    if isinstance(ax, bh.axis.Boolean):
        return tally_axis.Boolean(**deco)
    if isinstance(ax, (bh.axis.IntCategory, bh.axis.StrCategory)):
        cls = tally_axis.StrCategory if isinstance(ax, bh.axis.StrCategory) else tally_axis.IntCategory
        return cls(list(ax), growth=traits.growth, overflow=traits.overflow, **deco)
    if isinstance(ax, bh.axis.Integer):
        return tally_axis.Integer(int(ax.edges[0]), int(ax.edges[-1]), growth=traits.growth,
                                  circular=traits.circular, **flow, **deco)
    if isinstance(ax, bh.axis.Regular) and traits.growth:
        raise ValueError(f"from_boost: axis {d} is a growing Regular axis; tally's Regular axes do not grow")
    if isinstance(ax, bh.axis.Regular):
        t = ax.transform
        if t is None or isinstance(t, bh.axis.transform.Pow) or repr(t) in ("log", "sqrt"):
            transform = (None if t is None else tally_axis.Pow(t.power) if isinstance(t, bh.axis.transform.Pow)
                         else getattr(tally_axis.transform, repr(t)))
            return tally_axis.Regular(len(ax), ax.edges[0], ax.edges[-1], transform=transform,
                                      circular=traits.circular, **flow, **deco)
    if isinstance(ax, (bh.axis.Regular, bh.axis.Variable)):
        return tally_axis.Variable(ax.edges, circular=traits.circular, **flow, **deco)
    raise ValueError(f"from_boost: axis {d} is a {type(ax).__name__}, which has no tally axis "
                     "(Regular, Variable, Integer, IntCategory, StrCategory and Boolean do)")


def _inner(bh_hist):
    """The index of a boost histogram's view(flow=True) that leaves its flow bins out."""
    return tuple(slice(1 if ax.traits.underflow else 0, -1 if ax.traits.overflow else None) for ax in bh_hist.axes)


def _split_flow(bh_hist, full=None):
    """(inner cells, underflow total, overflow total) of `full` (default: the histogram's view
    with flow bins): each cell in a flow bin of some axis goes to the reason of the first axis
    (in axis order) on whose flow bin it lies, as tally counts."""
    full = np.asarray(bh_hist.view(flow=True) if full is None else full)
    remaining = np.ones(full.shape, bool)
    under = over = full.dtype.type(0)
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
    return full[_inner(bh_hist)], under, over


def from_boost(cls, bh_hist, flow, **options):
    bh = _boost()
    if not isinstance(bh_hist, bh.Histogram):
        raise TypeError(f"from_boost: expected a boost_histogram.Histogram, got {type(bh_hist).__name__}")
    storage = bh_hist.storage_type
    kinds = {bh.storage.Int64: None, bh.storage.AtomicInt64: None, bh.storage.Double: "double",
             bh.storage.Weight: "weight", bh.storage.Mean: "mean", bh.storage.WeightedMean: "weighted_mean"}
    if storage not in kinds:
        raise ValueError(f"from_boost: {storage.__name__} storage has no tally equivalent: tally stores counts "
                         "(Int64, AtomicInt64), sums of weights (Double, Weight) and means (Mean, WeightedMean)")
    kind = kinds[storage]
    weighted = kind is not None
    axes = [_from_boost_axis(bh, ax, d) for d, ax in enumerate(bh_hist.axes)]
    cells, under, over = _split_flow(bh_hist, bh_hist.values(flow=True))
    if weighted and flow and (under != 0 or over != 0):
        held = "means" if kind in ("mean", "weighted_mean") else "sums of weights"
        raise ValueError(f"from_boost: the flow bins hold {held}, and tally's flow counters count "
                         "samples; pass flow=False to convert without them")
    keep_flow = bool(flow and not weighted and any(ax.traits.underflow or ax.traits.overflow
                                                   for ax in bh_hist.axes))
    deco = dict(label=bh_hist.__dict__.get("label", ""), name=bh_hist.__dict__.get("name", ""),
                metadata=bh_hist.__dict__.get("metadata"))
    h = cls(axes, storage=kind, weighted=weighted, flow=keep_flow, **options, **deco)
    if kind in ("weight", "mean", "weighted_mean"):
        # The cells' fields (flow bins left out), as tally's raw sums.
        view = np.asarray(bh_hist.view(flow=True))[_inner(bh_hist)]
        fields = [view[f] for f in view.dtype.names]
        if kind != "weight":  # boost keeps the sum of squared deviations; tally the variance
            m = {name: view[name] for name in view.dtype.names}
            fields[-1] = _histogram._variance(kind, m)
        value = np.stack([np.asarray(f, np.float64) for f in fields], axis=-1)
        h._assign(list(_histogram._raw_of(kind, value)), (0, 0, 0), 0)
        return h
    if weighted:
        h._assign([cells], (0, 0, 0), 0)
        return h
    if (cells < 0).any() or under < 0 or over < 0:
        raise ValueError("from_boost: negative counts")
    if h._flow_bins:  # N-D: boost's flow bins where tally's are, a flow bin its axis lacks empty
        ext = np.asarray(bh_hist.values(flow=True)).astype(np.int64)
        for d, ax in enumerate(bh_hist.axes):
            e = np.moveaxis(ext, d, 0)
            none = np.zeros((1,) + e.shape[1:], np.int64)
            under_bin, over_bin = int(ax.traits.underflow), int(ax.traits.overflow)
            e = np.concatenate([e[:1] if under_bin else none, e[under_bin:len(e) - over_bin],
                                e[-1:] if over_bin else none, none])
            ext = np.moveaxis(e, 0, d)
        h._assign_extended(ext, int(ext.sum()))
        return h
    dropped = (int(under), int(over), 0) if keep_flow else (0, 0, 0)
    samples = int(cells.sum(dtype=np.uint64)) + dropped[0] + dropped[1]
    h._hists[0].assign(np.ascontiguousarray(h._kept(cells), np.uint64).ravel(), dropped, samples)
    return h

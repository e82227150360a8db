"""tally.Histogram: axes x storage, filled chunk by chunk, read at the end (tally::histogram)."""

import contextlib
import copy as _copy
import numbers
import operator
import threading

import numpy as np

from . import _boost, _tally
from . import accumulators
from .accumulators import WeightedSum
from . import axis as tally_axis
from . import patterns as _patterns
from . import storage as tally_storage
from ._arrays import Source, backend_for, same_device, strategy_arg, to_host
from ._devices import _cupy, device_of
from ._functions import Plan, _in_layout, fill_into

_STREAM_ABOVE = 64 << 20  # host bytes above which a CUDA histogram's fill streams (fill_streamed)
_ONE_CELL = _tally.Axis.integer(0, 1)  # the core axis of a 0-D histogram's one cell
_INNER = (slice(1, -2),)  # an axis' bins among its flow bins (underflow, bins, overflow, NaN)
_NO_LOCK = contextlib.nullcontext()


class Histogram:
    """A histogram over one or more axes, filled chunk by chunk, read at the end.

    The C++ ``tally::histogram`` over ``tally.axis`` axes (boost-histogram's: Regular, with
    transforms, Variable, Integer, IntCategory, StrCategory, Boolean; circular and growing
    where boost's are), filled from arrays of any library and device, with its cells on the
    host.

    - 1-D: ``Histogram(axis)``; ``fill(x)`` takes samples of any shape (all of them count).
    - N-D: ``Histogram([ax0, ax1, ...])`` or, as boost-histogram, ``Histogram(ax0, ax1, ...)``;
      ``fill(x0, x1, ...)`` or ``fill(sample)`` with an (N, D) sample; cells row-major as
      numpy.histogramdd.
    - Channels: ``Histogram(axis, channels=3)`` (or one axis per channel) histograms each
      channel of interleaved pixels; ``fill(pixels)`` takes (..., C) arrays; ``values()`` has
      one row per channel.

    Every method is safe to call from any thread at once (one lock per histogram).

    Merging and saving: ``h1 + h2`` and ``h1 += h2`` add histograms of the same axes and
    options (growing axes that grew apart merge into their union, as boost-histogram's: the
    left one's bins first, then the right one's new bins in their order; counts exactly, a
    32-bit count that would overflow raises and changes nothing;
    sums of weights in float64, exact sums exactly; exact and plain sums do not mix); ``==``
    compares axes, options, cells (sums bit for bit), flow counts and samples; ``copy()``,
    ``copy.copy`` and ``copy.deepcopy`` copy; pickle saves everything, `device` included (a
    CUDA histogram unpickled where CUDA is not usable fills on the device its samples are on,
    as ``device=None``; its cells are on the host either way).

    Plotting: the histogram is a UHI PlottableHistogram (`kind`, `values`, `variances`,
    `counts`, `axes`), so hist and mplhep plot it; see `from_boost` and `to_boost` for
    boost-histogram.

    Parameters
    ----------
    *axes : Axis or sequence of Axis
        One axis (1-D), a list or tuple of axes (N-D), or the axes one by one (as
        boost-histogram's ``Histogram(ax0, ax1)``), from ``tally.axis``; an empty list
        makes a 0-D histogram of one cell, whose ``fill(weight=...)`` adds one sample. With
        `channels`: one axis shared by the channels, or one axis per channel (Regular
        without transform, Variable, Integer; none circular or growing).
    weighted : bool, optional
        Keyword only. Store float64 sums of the weights of ``fill(..., weight=w)`` in place
        of counts (default False): boost-histogram's Double storage.
    storage : {None, 'double', 'weight'} or tally.storage, optional
        Keyword only. 'weight' keeps, beside each cell's sum of weights, the sum of their
        squares (boost-histogram's Weight storage): `variances` gives them and `counts` the
        effective counts. The squares are taken in float64 where the weights are (exact for
        float32 weights) and filled as a second weighted fill. 'double' is ``weighted=True``;
        None (default) follows `weighted`. ``tally.storage.Int64()``, ``Double()`` and
        ``Weight()`` (boost-histogram's names) stand for None, 'double' and 'weight'.
    channels : int, optional
        Keyword only. Histogram each of this many channels of interleaved pixels (counts
        only); None (default): a plain histogram.
    flow : bool, optional
        Keyword only. Count the samples dropped as underflow, overflow and NaN (see `flow`).
    count_bits : {64, 32}, optional
        Keyword only. Store 64-bit (default) or 32-bit counts; a fill that would overflow a
        32-bit count raises.
    strategy : str, optional
        Keyword only, as in :func:`tally.histogram`.
    device : {None, 'auto', 'cpu', 'cuda'}, optional
        Keyword only. None or 'auto' (default None): each fill counts where its samples
        are; 'cpu' or 'cuda' insist on that backend.
    threads : int, optional
        Keyword only. The most CPU threads a fill uses; 0 (default): as many as OpenMP
        would start (``OMP_NUM_THREADS``, or threadpoolctl's limit), at most the hardware
        threads (the planner takes fewer for few samples).
    exact_sums : bool, optional
        Keyword only, with ``weighted=True``. Each cell keeps its sum exactly (fixed-point
        words, 280 bytes a cell) and `values` its one correctly rounded float64 (math.fsum's),
        so fills of parts of the data on any device, merged in any order, equal one fill bit
        for bit (not with `fill_streamed`).
    label, name : str, optional
        Keyword only. The histogram's label and name (kept, copied, pickled, given to
        boost-histogram).
    metadata : object, optional
        Keyword only. Anything, kept with the histogram.

    Raises
    ------
    ValueError
        `count_bits` not 32 or 64; an unknown `storage`; `channels` with ``weighted=True`` or
        a storage, or a number of axes
        that is neither one nor `channels`; `exact_sums` without ``weighted=True``; an
        unknown strategy or device.
    TypeError
        An axis that is not a ``tally.axis`` axis.

    See Also
    --------
    histogram : The one-shot 1-D histogram.
    histogramdd : The one-shot N-D histogram.
    tally.axis.regular, tally.axis.variable, tally.axis.integer : The axes.

    Examples
    --------
    >>> import numpy as np, tally
    >>> x = np.random.default_rng(0).normal(size=10_000).astype(np.float32)
    >>> h = tally.Histogram(tally.axis.regular(64, -4, 4, np.float32))
    >>> for chunk in np.array_split(x, 10):
    ...     _ = h.fill(chunk)
    >>> np.array_equal(h.values(), np.histogram(x, 64, range=(-4, 4))[0])
    True

    Two dimensions, and a merge:

    >>> a = tally.Histogram([tally.axis.regular(2, 0, 1), tally.axis.integer(0, 3)])
    >>> b = a.copy()
    >>> a.fill(np.array([0.1, 0.6]), np.array([0, 2]))
    tally.Histogram([tally.axis.Regular(2, 0.0, 1.0), tally.axis.Integer(0, 3)])  # samples 2, sum 2
    >>> b.fill(np.array([[0.7, 2]]))
    tally.Histogram([tally.axis.Regular(2, 0.0, 1.0), tally.axis.Integer(0, 3)])  # samples 1, sum 1
    >>> (a + b).values()
    array([[1, 0, 0],
           [0, 0, 2]])
    """

    def __init__(self, *axes, weighted=False, storage=None, channels=None, flow=False, count_bits=64,
                 strategy="automatic", device=None, threads=0, exact_sums=False, label="", name="",
                 metadata=None):
        if len(axes) == 1:  # one axis, or a list or tuple of them (none: 0-D, as Histogram())
            axes = list(axes[0]) if isinstance(axes[0], (list, tuple)) else [axes[0]]
        axes = list(axes)
        if count_bits not in (32, 64):
            raise ValueError(f"count_bits must be 32 or 64, got {count_bits}")
        axes = [tally_axis._of(a) for a in axes]
        if isinstance(storage, tally_storage._Storage):
            storage = storage._kind
        if storage not in _MOMENTS:
            raise ValueError("Histogram: storage must be None, 'double', 'weight', 'mean', 'weighted_mean' or a "
                             f"tally.storage, got {storage!r}")
        weighted = weighted or storage is not None
        storage = storage or ("double" if weighted else "int64")
        if storage in ("mean", "weighted_mean") and flow:
            raise ValueError("Histogram: a Mean storage counts no flow (its cells are means of samples)")
        threads = operator.index(threads)
        strategy = strategy_arg(strategy)
        self._backend = backend_for(device, None)
        if exact_sums and any(a.traits.growth for a in axes):
            raise ValueError("Histogram: exact sums do not go with growing axes")
        self._options = (weighted, strategy, count_bits == 32, threads, exact_sums)
        self._channels, self._flow = channels, flow
        # The sums beside the first histogram's (no flow counters): Weight's sum of squared weights,
        # the Mean storages' sums of the samples and of their squares (see _MOMENTS).
        self._storage = storage
        # N-D counts with flow=True keep boost-histogram's per-axis flow bins in the engine
        # (options::flow_bins); 1-D ones keep the counters, which are its flow bins.
        self._flow_bins = bool(flow) and channels is None and storage == "int64" and len(axes) >= 2
        self._moments = [self._made(axes, False) for _ in _MOMENTS[storage]] if channels is None else []
        if channels is None:
            self._hists = [self._made(axes)]
        else:
            if weighted:
                raise ValueError("Histogram: channels are counted, not weighted")
            self._storage = "int64"
            if len(axes) == 1:
                axes = axes * channels
            if len(axes) != channels:
                raise ValueError(f"Histogram: {channels} channels need one axis or {channels} axes, "
                                 f"got {len(axes)}")
            if not all(a._plain for a in axes):
                raise ValueError("Histogram: channels take Regular (without transform), Variable and Integer "
                                 "axes that neither grow nor wrap around")
            self._hists = [self._made([a]) for a in axes]
        self._axes = axes
        self._plain_axes = all(a._plain for a in axes)  # every axis bins its samples as given
        self.label, self.name, self.metadata = str(label or name or ""), str(name or ""), metadata
        # Held across the calls that touch several C++ histograms or read and write back cells
        # (Weight storage's two fills, setting cells), so no other call sees them half done.
        self._lock = threading.RLock()

    def _made(self, axes, flow=None):
        """A C++ histogram of this one's options over `axes` (flow counters as this one's)."""
        weighted, strategy, counts32, threads, exact_sums = self._options
        flow = self._flow if flow is None else flow
        return _tally.Hist([a._core for a in axes] or [_ONE_CELL], weighted, strategy, self._backend, flow, counts32,
                           threads, exact_sums, flow_bins=flow and self._flow_bins)

    @property
    def axes(self):
        """The histogram's axes (one per channel for channels).

        Returns
        -------
        tally.axis.AxesTuple
            The ``tally.axis`` axes, in order (a tuple); each has ``kind``, ``bins``, and
            ``edges``, ``centers`` and ``widths`` as float64 arrays. As boost-histogram's,
            ``h.axes.edges`` (centers, widths) are sparse grids that broadcast against the
            cells, and other attributes are tuples of each axis' (``h.axes.size``).

        Examples
        --------
        >>> import tally
        >>> h = tally.Histogram([tally.axis.regular(4, 0, 1), tally.axis.integer(0, 3)])
        >>> [(a.kind, a.bins) for a in h.axes], h.axes.size
        ([('regular', 4), ('integer', 3)], (4, 3))
        """
        return tally_axis.AxesTuple(self._axes)

    @property
    def exact_sums(self):
        """Whether the sums of weights are kept exactly (``exact_sums=True``).

        Returns
        -------
        bool
            True for a histogram made with ``exact_sums=True``.

        Examples
        --------
        >>> import tally
        >>> tally.Histogram(tally.axis.integer(0, 3), weighted=True, exact_sums=True).exact_sums
        True
        """
        return self._hists[0].exact_sums

    @property
    def ndim(self):
        """The number of dimensions: the number of axes, 1 for a channel histogram.

        Returns
        -------
        int
            The dimensions of `values` (for channels, of each channel's row).

        Examples
        --------
        >>> import tally
        >>> tally.Histogram([tally.axis.regular(4, 0, 1), tally.axis.integer(0, 3)]).ndim
        2
        """
        return 1 if self._channels is not None else len(self._axes)

    @property
    def shape(self):
        """The bins of each axis: the shape of `values` (of each channel's row).

        Returns
        -------
        tuple of int
            One entry per axis, as boost-histogram's ``shape`` (the bins alone, without flow bins).

        Examples
        --------
        >>> import tally
        >>> tally.Histogram(tally.axis.regular(4, 0, 1), tally.axis.integer(0, 3)).shape
        (4, 3)
        """
        return tuple(a.bins for a in self._axes[:1 if self._channels is not None else None])

    @property
    def storage_type(self):
        """The storage's class, from ``tally.storage`` (boost-histogram's ``storage_type``).

        Returns
        -------
        type
            ``tally.storage.Int64``, ``Double``, ``Weight``, ``Mean`` or ``WeightedMean``.

        Examples
        --------
        >>> import tally
        >>> tally.Histogram(tally.axis.regular(4, 0, 1), storage="weight").storage_type
        <class 'tally.storage.Weight'>
        """
        return _STORAGE_TYPES[self._storage]

    def empty(self, flow=False):
        """Whether every cell is zero (boost-histogram's ``empty``).

        Parameters
        ----------
        flow : bool, optional
            Also look at the flow counters (a histogram made with ``flow=True``).

        Returns
        -------
        bool
            True where nothing was counted (or every weight added up to zero).

        Examples
        --------
        >>> import numpy as np, tally
        >>> h = tally.Histogram(tally.axis.regular(4, 0, 1), flow=True)
        >>> h.empty(), h.fill(np.array([2.0])).empty(), h.empty(flow=True)
        (True, True, False)
        """
        with self._lock:
            if flow and self._flow and any(any(h.flow()) for h in self._hists):
                return False
            return not any(np.any(h.values()) for h in self._parts())

    def fill(self, *samples, weight=None, sample=None):
        """Add samples (and their weights, for a weighted histogram) to the cells.

        The samples may be arrays of any library and device; the histogram's `device` says
        where they are counted. On a CUDA histogram (``device="cuda"``), host arrays of more
        than 64 MiB stream through the GPU as :meth:`fill_streamed` streams them (not those
        keeping exact sums: they fill directly).

        Parameters
        ----------
        *samples : array_like
            1-D: one array of any shape (all of its samples count). N-D: one array per axis,
            all of one shape, or one (N, D) array. Channels: one (..., C) array of interleaved
            pixels. Samples outside the axes and NaN are dropped (counted by `flow`).
        weight : array_like, optional
            Keyword only, for a weighted histogram: one weight per sample.
        sample : array_like, optional
            Keyword only, for the Mean storages: the value whose mean each cell keeps, one per
            sample.

        Returns
        -------
        Histogram
            This histogram, its cells changed in place (so calls chain, as boost-histogram's).

        Raises
        ------
        TypeError
            No samples.
        ValueError
            Not one array per axis or one (N, D) array; arrays of different shapes; weights
            of another number, or given to an unweighted or channel histogram; samples and
            weights on different devices.

        Examples
        --------
        >>> import numpy as np, tally
        >>> h = tally.Histogram(tally.axis.regular(2, 0, 2), weighted=True)
        >>> h.fill(np.array([0.5, 1.5, 1.2]), weight=np.array([2.0, 0.5, 0.25])).values()
        array([2.  , 0.75])
        >>> c = tally.Histogram(tally.axis.integer(0, 4), channels=3)
        >>> c.fill(np.array([[0, 1, 3], [1, 1, 2]], np.uint8))  # two RGB pixels
        tally.Histogram(tally.axis.Integer(0, 4), channels=3)  # samples 2, sum [2, 2, 2]
        >>> c.values()
        array([[1, 1, 0, 0],
               [0, 2, 0, 0],
               [0, 0, 1, 1]])
        """
        if not samples and self._axes:
            raise TypeError("fill() needs samples")
        if self._channels is not None:
            if sample is not None:
                raise ValueError("fill: sample= is for the Mean storages")
            self._fill_channels(samples, weight)
            return self
        # With a growing axis, the samples are mapped and the axes grown under the lock: a fill counts
        # the codes of the axes it counts into.
        with self._lock if self._grows() else _NO_LOCK:
            src, columns, w = self._fill_args(samples, weight)
            stream = (self._backend == "cuda" and not src.on_cuda and not self.exact_sums and not self._flow_bins
                      and _host_bytes(columns, w) > _STREAM_ABOVE)
            targets = self._targets(w, self._sample_arg(sample, src, columns[0].size))
            with self._lock:
                for h, weights in targets:
                    if stream:
                        self._stream(h, columns, weights, _STREAM_ABOVE, 3)
                    else:
                        fill_into(h, columns, weights, src)
        return self

    def _grows(self):
        return not self._plain_axes and any(a._growth for a in self._axes)

    def _sample_arg(self, sample, src, n):
        """The Mean storages' samples as float64 where the fill's samples are; None elsewhere."""
        if not self._moments or self._storage == "weight":
            if sample is not None:
                raise ValueError("fill: sample= is for the Mean storages (storage='mean' or 'weighted_mean')")
            return None
        if sample is None:
            raise ValueError(f"fill: a {self._storage} histogram needs sample=, the values to average")
        s = _broadcast_scalar(Source(sample, "sample"), src)
        same_device(src, s, "sample")
        if s.size != n:
            raise ValueError(f"fill: {n} samples need as many sample= values, got {s.size}")
        return s.converted(np.float64, "sample=")

    def _targets(self, w, s=None):
        """The histograms a fill adds to, each with its weights (all made before anything is
        added): the sums of weights (or the counts), then the storage's moments (_MOMENTS), each
        a product of the weights and the Mean storages' samples taken in float64 in their
        library and on their device."""
        if not self._moments:
            return [(self._hists[0], w)]
        one = None if w is None else w.converted(np.float64, "the weights").obj
        x = None if s is None else s.obj
        products = {"w2": lambda: None if one is None else one * one, "s": lambda: x if one is None else one * x,
                    "s2": lambda: x * x if one is None else one * x * x}
        out = [(self._hists[0], w)]
        for h, name in zip(self._moments, _MOMENTS[self._storage]):
            weights = products[name]()
            out.append((h, None if weights is None else Source(weights, "weight")))
        return out

    def fill_streamed(self, *samples, weight=None, sample=None, buffer_bytes=64 << 20, buffers=3):
        """Fill from host arrays streamed through the current CUDA device.

        :meth:`fill` of host arrays, numpy's memory maps of files larger than the GPU's memory
        included, streamed through the current CUDA device in rounds, each round's copy
        overlapped with the previous round's count. Uses the GPU whatever the histogram's
        `device`; counts equal fill()'s, sums of weights are the rounds' sums added in
        float64. Not for channel histograms or samples already on a GPU (use fill).

        Parameters
        ----------
        *samples : array_like
            Host arrays, as :meth:`fill` takes them.
        weight, sample : array_like, optional
            Keyword only, as in :meth:`fill`.
        buffer_bytes : int, optional
            Keyword only. The bytes of each buffer (default 64 MiB).
        buffers : int, optional
            Keyword only. The number of pinned host buffers, and of device buffers (2 or
            more; default 3).

        Returns
        -------
        Histogram
            This histogram, its cells changed in place (so calls chain, as boost-histogram's).

        Raises
        ------
        TypeError
            No samples.
        ValueError
            A channel histogram; samples in CUDA memory; no usable CUDA device; arguments
            :meth:`fill` refuses.

        Examples
        --------
        Needs a CUDA device:

        >>> import numpy as np, tally
        >>> h = tally.Histogram(tally.axis.regular(64, -4, 4, np.float32))
        >>> x = np.memmap("samples.f32", np.float32, mode="r")  # doctest: +SKIP
        >>> h.fill_streamed(x, buffer_bytes=256 << 20)  # doctest: +SKIP
        """
        if self._channels is not None:
            raise ValueError("fill_streamed: a channel histogram fills with fill()")
        if not samples:
            raise TypeError("fill_streamed() needs samples")
        with self._lock if self._grows() else _NO_LOCK:
            src, columns, w = self._fill_args(samples, weight)
            if src.on_cuda:
                raise ValueError(f"fill_streamed: the samples are in CUDA memory ({src.where()}); use fill()")
            targets = self._targets(w, self._sample_arg(sample, src, columns[0].size))
            with self._lock:
                for h, weights in targets:
                    self._stream(h, columns, weights, operator.index(buffer_bytes), operator.index(buffers))
        return self

    def _fill_args(self, samples, weight):
        """The fill's first Source, its column Sources and its weights Source (or None)."""
        d = self.ndim
        strings = [isinstance(a, tally_axis.StrCategory) for a in self._axes]  # mapped from the given objects
        if d == 0:
            if samples:
                raise TypeError("fill: a 0-D histogram takes no samples: fill() adds one (with weight= or sample=)")
            samples, strings = (np.zeros((), np.uint8),), [False]  # the one cell's one sample
        if len(samples) == 1 and d > 1:
            if any(strings):
                raise TypeError("fill: a histogram with a StrCategory axis takes one array per axis")
            src = Source(samples[0], "sample")
            if src.ndim != 2 or src.shape[1] != d:
                raise ValueError(f"fill: a {d}-D histogram takes {d} arrays or one (N, {d}) array, "
                                 f"got shape {src.shape}")
            columns = [src.column(i) for i in range(d)]
        else:
            if len(samples) != max(d, 1):
                raise ValueError(f"fill: a {d}-D histogram takes {d} arrays, got {len(samples)}")
            columns = [x if s else Source(x, "sample").bool_as_u8() for x, s in zip(samples, strings)]
        columns = _broadcast(self._mapped(columns), strings)
        src = columns[0]
        for c in columns[1:]:
            same_device(src, c, "other columns")
            if c.shape != src.shape:
                raise ValueError("fill: the sample arrays differ in shape")
        w = None
        if weight is not None:
            if not self._hists[0].weighted or self._storage == "mean":
                raise ValueError("fill: weights given to an unweighted histogram; make it with weighted=True "
                                 "(or storage='weighted_mean' for weighted means)")
            w = _broadcast_scalar(Source(weight, "weight"), src)
            same_device(src, w)
            if w.size != columns[0].size:
                raise ValueError(f"fill: {columns[0].size} samples need as many weights, got {w.size}")
            w = w.as_weights()
        return src, columns, w

    def _mapped(self, columns):
        """The columns as the axes' cores bin them (categories as codes, transformed, wrapped
        around), each growing axis grown first to hold its column."""
        if self._plain_axes:  # the common case: the columns as given
            return columns
        out = []
        for d, (ax, column) in enumerate(zip(self._axes, columns)):
            column, grown = ax._grown(column)
            if grown is not None:
                self._grow(d, grown)
            out.append(column)
        return out

    def _grow(self, d, grown):
        """Axis d replaced by `grown`, which holds all its bins (where _places says): the cells,
        flow counters and samples carried over."""
        old = self._axes[d]
        places = _places(old, grown)
        flow, samples = self._hists[0].flow() if self._flow else (0, 0, 0), self.samples
        if self._flow_bins:  # the counts with their flow bins, the grown axis' bins moved to their places
            e = np.moveaxis(self._extended(visible=False), d, 0)
            ext = np.zeros((grown.bins + 3,) + e.shape[1:], np.int64)
            ext[0], ext[-2:] = e[0], e[-2:]
            ext[1:-2][places] = e[1:-2]
            self._axes = self._axes[:d] + [grown] + self._axes[d + 1:]
            self._hists = [self._made(self._axes)]
            self._assign_extended(np.moveaxis(ext, 0, d), samples)
            return
        parts = []
        for cells in self._cells():
            shape = list(cells.shape)
            shape[d] = grown.bins
            out = np.zeros(shape, cells.dtype)
            out[(slice(None),) * d + (places,)] = cells
            parts.append(out)
        self._axes = self._axes[:d] + [grown] + self._axes[d + 1:]
        self._hists = [self._made(self._axes)]
        self._moments = [self._made(self._axes, False) for _ in self._moments]
        self._assign(parts, flow, samples)

    @staticmethod
    def _stream(h, columns, w, buffer_bytes, buffers):
        _in_layout(lambda cols, wt: h.fill_streamed(cols, wt, buffer_bytes, buffers), columns, w)

    def _fill_channels(self, samples, weight):
        if len(samples) != 1 or weight is not None:
            raise ValueError("fill: a channel histogram takes one array of interleaved pixels")
        src = Source(samples[0], "pixels").bool_as_u8()
        with device_of(src, wait=True):
            try:
                _tally.fill_channels(self._hists, src.obj, self._channels)
            except _tally.LayoutError:
                _tally.fill_channels(self._hists, src.contiguous().obj, self._channels)

    def values(self, flow=False):
        """The cells: counts or sums of weights, shaped by the axes.

        Parameters
        ----------
        flow : bool, optional
            With the flow bins boost-histogram keeps (default False), for a histogram of counts
            made with ``flow=True``: each axis' underflow bin before its bins and its overflow
            bin (NaN included) after them, where the axis keeps them (its ``underflow=`` and
            ``overflow=``). Histograms of sums keep no per-axis flow bins (see `flow`).

        Returns
        -------
        numpy.ndarray or list of numpy.ndarray
            int64 counts, or float64 sums for a weighted histogram, of shape ``(bins of axis
            0, bins of axis 1, ...)``; for channels, one row per channel (a list where the
            channels' axes differ in bins).

        Raises
        ------
        ValueError
            ``flow=True`` for a histogram without flow counters, of more than one axis, of
            sums, or of channels.

        Examples
        --------
        >>> import numpy as np, tally
        >>> h = tally.Histogram(tally.axis.integer(0, 5))
        >>> h.fill(np.array([0, 1, 1, 4, 5, -1])).values()
        array([1, 2, 0, 0, 1])
        """
        if flow:
            return self._with_flow_bins("values")
        if self._storage in ("mean", "weighted_mean"):
            return _moments_of(self._storage, self._cells())["value"]
        if self._flow_bins:
            return self._cells()[0]
        return self._per_channel([self._seen(h.values()) for h in self._hists])

    def _extended(self, visible=True):
        """The counts with every axis' flow bins: (underflow, bins..., overflow, NaN) an axis,
        from the engine's flow bins (N-D) or the flow counters (1-D). `visible`: the flow bins an
        axis does not keep (its traits, as boost-histogram's axis would drop those samples) zero."""
        with self._lock:
            if self._flow_bins:
                out = self._seen(self._hists[0].values(), extended=True)
            else:
                cells, (under, over, nan) = self._seen(self._hists[0].values()), self._hists[0].flow()
                out = np.concatenate([[under], cells, [over, nan]]).astype(np.int64)
        for d, ax in enumerate(self._axes if visible else ()):
            e = np.moveaxis(out, d, 0)
            if not ax.traits.underflow:
                e[0] = 0
            if not ax.traits.overflow:
                e[-2:] = 0
        return out

    def _with_flow_bins(self, what):
        """The counts with boost-histogram's flow bins: each axis' underflow and overflow (NaN
        added to it) where the axis keeps them (its traits)."""
        if self._channels is not None or self._storage != "int64" or not self._flow or not (
                self.ndim == 1 or self._flow_bins):
            raise ValueError(f"{what}(flow=True): flow bins are kept for histograms of counts made with flow=True "
                             "(not of sums, channels, or N-D ones saved by an older tally)")
        out = self._extended()
        for d, ax in enumerate(self._axes):
            out = np.moveaxis(out, d, 0)
            out = np.concatenate([out[:1] if ax.traits.underflow else out[:0], out[1:-2],
                                  out[-2:-1] + out[-1:] if ax.traits.overflow else out[:0]])
            out = np.moveaxis(out, 0, d)
        return np.ascontiguousarray(out, np.int64)

    def view(self, flow=False):
        """The cells as an array, as boost-histogram's ``view`` of its Int64 and Double storages.

        Parameters
        ----------
        flow : bool, optional
            As :meth:`values`'s.

        Returns
        -------
        numpy.ndarray or list of numpy.ndarray
            The same array as :meth:`values`; for Weight storage a structured array of fields
            ``value`` and ``variance`` (float64), for Mean ``count``, ``value`` and
            ``_sum_of_deltas_squared``, for WeightedMean ``sum_of_weights``,
            ``sum_of_weights_squared``, ``value`` and ``_sum_of_weighted_deltas_squared``, as
            boost-histogram's (a copy): a ``tally.accumulators`` WeightedSumView, MeanView or
            WeightedMeanView, whose fields read as attributes (``h.view().value``; the Mean
            views' ``variance`` is the samples' variance) and whose cells are accumulators.

        Raises
        ------
        ValueError
            ``flow=True`` where :meth:`values` refuses it.

        Examples
        --------
        >>> import numpy as np, tally
        >>> h = tally.Histogram(tally.axis.integer(0, 3), flow=True).fill(np.array([0, 2, 2, 7]))
        >>> h.view(), np.asarray(h), h.view(flow=True)
        (array([1, 0, 2]), array([1, 0, 2]), array([0, 1, 0, 2, 1]))
        """
        if flow:
            return self._with_flow_bins("view")
        if not self._moments:
            return self.values()
        return accumulators._view_of(_moments_of(self._storage, self._cells()))

    # numpy reads the histogram as an array (np.asarray) but leaves arithmetic to it: a numpy
    # scalar or array on the left of an operator defers to the histogram's own operators.
    __array_ufunc__ = None

    def __array__(self, dtype=None, copy=None):
        values = self.view()
        if isinstance(values, list):
            raise ValueError("a channel histogram whose channels differ in bins is not one array")
        return np.asarray(values, dtype) if copy is None else np.array(values, dtype, copy=copy)

    def sum(self, flow=False):
        """The total of the cells: the samples counted, or the sum of their weights.

        Parameters
        ----------
        flow : bool, optional
            Add the samples dropped from the bins (``flow=True`` histograms of counts only).

        Returns
        -------
        int or float or WeightedSum or Mean or WeightedMean or numpy.ndarray
            An int for counts, a float for sums of weights, ``WeightedSum(value, variance)``
            for Weight storage, ``tally.accumulators.Mean`` or ``WeightedMean`` for the Mean
            storages; for channels, one per channel.

        Raises
        ------
        ValueError
            ``flow=True`` on a histogram without flow counters, or on sums of weights (the
            flow counters count samples, not weights).

        Examples
        --------
        >>> import numpy as np, tally
        >>> h = tally.Histogram(tally.axis.regular(4, 0, 1), flow=True)
        >>> h.fill(np.array([0.1, 0.2, 0.9, 5.0])).sum(), h.sum(flow=True)
        (3, 4)
        """
        if self._moments and not flow:
            return _accumulated(self._storage, [c.sum() for c in self._cells()])
        if self._flow_bins:  # the engine's cells hold the flow bins too
            total = self._hists[0].values() if flow else self._cells()[0]
            return int(total.sum())
        totals = [h.values().sum() for h in self._hists]
        if flow:
            if not self._flow:
                raise ValueError("sum(flow=True): construct the Histogram with flow=True")
            if self._hists[0].weighted:
                raise ValueError("sum(flow=True): the flow counters count samples, not the sums of their weights "
                                 "or means")
            totals = [t + sum(h.flow()) for t, h in zip(totals, self._hists)]
        totals = [t.item() if isinstance(t, np.generic) else t for t in totals]
        return totals[0] if self._channels is None else np.array(totals)

    def density(self):
        """numpy's density: the values over the bin volumes and the total.

        Returns
        -------
        numpy.ndarray or list of numpy.ndarray
            float64 ``values / bin volume / total``, shaped as `values` (for channels, one
            row per channel).

        Examples
        --------
        >>> import numpy as np, tally
        >>> x = np.array([0.5, 1.5, 1.5, 2.5, 3.0])
        >>> h = tally.Histogram(tally.axis.regular(4, 0, 4))
        >>> h.fill(x).density()
        array([0.2, 0.4, 0.2, 0.2])
        >>> np.array_equal(h.density(), np.histogram(x, 4, range=(0, 4), density=True)[0])
        True
        """
        if self._flow_bins:  # numpy.histogramdd's density of the bins (the engine's has flow bins)
            cells = self._cells()[0].astype(np.float64)
            volume = np.ones(cells.shape)
            for d, ax in enumerate(self._axes):
                volume = volume * np.diff(ax.edges).reshape([-1 if k == d else 1 for k in range(cells.ndim)])
            return cells / volume / cells.sum()
        return self._per_channel([self._seen(h.density()) for h in self._hists])

    def _per_channel(self, arrays):
        if self._channels is None:
            return arrays[0] if self._axes else arrays[0].reshape(())
        same = all(a.shape == arrays[0].shape for a in arrays)
        return np.stack(arrays) if same else arrays

    @property
    def edges(self):
        """The bin edges of the axes.

        Returns
        -------
        numpy.ndarray or list of numpy.ndarray
            float64 edges: one array for a 1-D histogram, else one per axis (or channel).

        Examples
        --------
        >>> import tally
        >>> tally.Histogram(tally.axis.regular(4, 0, 1)).edges
        array([0.  , 0.25, 0.5 , 0.75, 1.  ])
        """
        edges = [a.edges for a in self.axes]
        return edges[0] if len(edges) == 1 else edges

    @property
    def flow(self):
        """Samples dropped from the bins, by reason (with ``flow=True``).

        For N-D, a dropped sample is counted once, under the reason of the first axis that
        drops it; for channels, the channels' counts are added.

        Returns
        -------
        dict
            ``{'underflow': int, 'overflow': int, 'nan': int}``.

        Raises
        ------
        ValueError
            The histogram was made without ``flow=True``.

        Examples
        --------
        >>> import numpy as np, tally
        >>> h = tally.Histogram(tally.axis.regular(4, 0, 4), flow=True)
        >>> h.fill(np.array([-1.0, 0.5, 5.0, np.nan, 2.0])).flow
        {'underflow': 1, 'overflow': 1, 'nan': 1}
        """
        if not self._flow:
            raise ValueError("flow: construct the Histogram with flow=True")
        counts = [h.flow() for h in self._hists]
        return {k: sum(c[i] for c in counts) for i, k in enumerate(("underflow", "overflow", "nan"))}

    @property
    def samples(self):
        """Samples passed to fill since construction or reset (per channel for channels).

        Returns
        -------
        int
            Every sample filled, dropped ones included (for channels, the pixels).

        Examples
        --------
        >>> import numpy as np, tally
        >>> h = tally.Histogram(tally.axis.regular(2, 0, 1))
        >>> h.fill(np.array([0.2, 0.7, 3.0])).samples
        3
        """
        return self._hists[0].samples

    def reset(self):
        """Empty the histogram: cells, flow counts and samples back to zero.

        Returns
        -------
        Histogram
            This histogram, emptied in place (its axes and options stay), so calls chain, as
            boost-histogram's.

        Examples
        --------
        >>> import numpy as np, tally
        >>> h = tally.Histogram(tally.axis.regular(2, 0, 1))
        >>> h.fill(np.array([0.2, 0.7])).reset().values(), h.samples
        (array([0, 0]), 0)
        """
        with self._lock:
            for h in self._parts():
                h.reset()
        return self

    def _parts(self):
        """Every C++ histogram this one keeps: one per channel, or the sums and the storage's
        moments."""
        return self._hists + self._moments

    def plan(self, dtype, n):
        """The planner's choice for a fill of n contiguous samples of `dtype`.

        A histogram whose `device` is None or 'auto' is planned for the CPU.

        Parameters
        ----------
        dtype : str or dtype
            The samples' type: a tally type name such as 'f32' or a numpy type such as
            numpy.float32.
        n : int
            The number of samples.

        Returns
        -------
        Plan
            As :func:`tally.plan`'s: a dict of 'backend', 'strategy', the launch shape, 'reasons'
            and 'description' (its repr).

        Examples
        --------
        >>> import numpy as np, tally
        >>> p = tally.Histogram(tally.axis.regular(64, 0, 1)).plan(np.float32, 10**6)
        >>> p["backend"], p["strategy"]
        ('cpu', 'cpu_private')
        """
        if not isinstance(dtype, str):
            dtype = np.dtype(dtype).name
        return Plan(self._hists[0].plan(dtype, int(n)))

    # ---- UHI PlottableHistogram (hist, mplhep) ----

    @property
    def kind(self):
        """UHI: the kind of the cells, "COUNT" (counts, sums of weights) or "MEAN" (profiles).

        A channel histogram has none: it is one histogram per channel, which a plotter would
        misread as one (its axes are the channels'), so UHI does not take it for a
        PlottableHistogram; :meth:`channel` gives each channel's.

        Returns
        -------
        str
            "COUNT", or "MEAN" for the Mean storages.

        Raises
        ------
        AttributeError
            A channel histogram.

        Examples
        --------
        >>> import tally
        >>> tally.Histogram(tally.axis.integer(0, 3)).kind
        'COUNT'
        """
        if self._channels is not None:
            raise AttributeError("kind: a channel histogram is one histogram per channel; plot h.channel(c)")
        return "MEAN" if self._storage in ("mean", "weighted_mean") else "COUNT"

    def channel(self, c):
        """Channel c of a channel histogram, as a 1-D histogram of its own (a copy).

        Parameters
        ----------
        c : int
            The channel, 0 to channels - 1 (negative from the end).

        Returns
        -------
        Histogram
            Its axis, counts, flow counters and samples.

        Raises
        ------
        ValueError
            Not a channel histogram.
        IndexError
            No channel c.

        Examples
        --------
        >>> import numpy as np, tally
        >>> rgb = tally.Histogram(tally.axis.integer(0, 4), channels=3)
        >>> rgb.fill(np.array([[0, 1, 3], [1, 1, 2]], np.uint8)).channel(2).values()
        array([0, 0, 1, 1])
        """
        if self._channels is None:
            raise ValueError("channel: not a channel histogram")
        k = operator.index(c)
        if not -self._channels <= k < self._channels:
            raise IndexError(f"channel {c} of a histogram of {self._channels} channels")
        with self._lock:
            h = self._hists[k]
            out = Histogram(self._axes[k], flow=self._flow, count_bits=32 if h.counts32 else 64,
                            device=self._backend)
            out._assign([h.values()], h.flow() if self._flow else (0, 0, 0), h.samples)
        return out

    def counts(self, flow=False):
        """UHI: the counts of an unweighted histogram, the effective counts of a Weight one.

        A Weight histogram's effective counts are UHI's ``sum(w)**2 / sum(w**2)`` (0 where
        nothing was filled); a plain weighted one (Double) has none.

        Parameters
        ----------
        flow : bool, optional
            As :meth:`values`'s.

        Returns
        -------
        numpy.ndarray or None
            `values` of an unweighted histogram, float64 effective counts of a Weight one,
            else None.

        Examples
        --------
        >>> import numpy as np, tally
        >>> h = tally.Histogram(tally.axis.integer(0, 3))
        >>> h.fill(np.array([0, 1, 1])).counts()
        array([1, 2, 0])
        >>> print(tally.Histogram(tally.axis.integer(0, 3), weighted=True).counts())
        None
        """
        if flow:
            return self._with_flow_bins("counts")
        if self._storage == "mean":
            return self._cells()[0]
        if self._storage in ("weight", "weighted_mean"):
            # UHI's effective counts, sum(w)^2 / sum(w^2) (0 where no weight was filled). boost-
            # histogram's Weight storage answers its sums of weights here.
            w, w2 = self._cells()[:2]
            return np.divide(w * w, w2, out=np.zeros_like(w), where=w2 != 0)
        return None if self._hists[0].weighted else self.values()

    def variances(self, flow=False):
        """UHI: the variances of the cells.

        The counts of an unweighted histogram (Poisson variances), the sums of squared weights
        of a Weight one; None for a plain weighted one (Double keeps no squares).

        Parameters
        ----------
        flow : bool, optional
            As :meth:`values`'s.

        Returns
        -------
        numpy.ndarray or None
            The counts, or float64 sums of squared weights, else None.

        Examples
        --------
        >>> import numpy as np, tally
        >>> h = tally.Histogram(tally.axis.integer(0, 3))
        >>> h.fill(np.array([0, 1, 1])).variances()
        array([1, 2, 0])
        """
        if flow:
            return self._with_flow_bins("variances")
        if self._storage == "weight":
            return self._cells()[1]
        if self._storage in ("mean", "weighted_mean"):
            # The variance of each cell's mean, as boost-histogram's: the samples' variance over
            # the count (Mean) or over the sum of weights (WeightedMean); NaN where undefined.
            m = _moments_of(self._storage, self._cells())
            count = m["count" if self._storage == "mean" else "sum_of_weights"]
            with np.errstate(divide="ignore", invalid="ignore"):
                return _variance(self._storage, m) / count
        return self.counts()

    # ---- boost-histogram ----

    def to_boost(self, *, flow=True):
        """This histogram as a boost_histogram.Histogram (needs the boost-histogram package).

        Int64 storage for counts, Double for sums of weights, Weight for Weight storage (sums
        of weights and of their squares); regular axes (float64 edges) as
        Regular, other edges as Variable, integer axes as Integer. A histogram of counts made
        with ``flow=True`` fills the underflow and overflow bins (NaN into overflow, where
        boost-histogram puts it); a histogram without flow counters, or ``to_boost(flow=False)``,
        makes axes without flow bins.

        Parameters
        ----------
        flow : bool, optional
            Keyword only. Convert the flow counters into flow bins (default True); False
            makes axes without flow bins.

        Returns
        -------
        boost_histogram.Histogram
            The same axes and cells.

        Raises
        ------
        ValueError
            Flow counters of a histogram of sums (they count samples) with ``flow=True``; flow
            bins an axis does not keep (``underflow=False``) holding samples; a channel
            histogram; edges boost-histogram's Variable axis refuses.
        ImportError
            boost-histogram is not installed.

        See Also
        --------
        from_boost : The conversion back.

        Examples
        --------
        >>> import numpy as np, tally
        >>> h = tally.Histogram(tally.axis.regular(4, 0, 4), flow=True)
        >>> b = h.fill(np.array([0.5, 1.5, -1.0, 9.0, np.nan])).to_boost()
        >>> b.values(flow=True).tolist()  # underflow, 4 bins, overflow (NaN included)
        [1, 1, 1, 0, 0, 2]
        """
        return _boost.to_boost(self, flow)

    @classmethod
    def from_boost(cls, h, *, flow=True, count_bits=64, strategy="automatic", device=None, threads=0):
        """A tally.Histogram of a boost_histogram.Histogram's cells.

        Int64/AtomicInt64 storage as counts, Double as sums of weights, Weight as Weight
        storage (its variances the sums of squared weights); Regular (without
        transform) as regular, Variable and transformed Regular as variable (their edges),
        Integer and Boolean as integer axes. The flow bins become tally's flow counters (each
        cell under the first axis whose flow bin it is in; `samples` is every entry, flow
        included; 0 for Double and Weight, which count none); their flow bins hold weights,
        so non-zero ones raise unless ``flow=False``, which leaves them out.

        Parameters
        ----------
        h : boost_histogram.Histogram
            The histogram to convert.
        flow : bool, optional
            Keyword only. Keep the flow bins as flow counters (default True); False leaves
            them out.
        count_bits, strategy, device, threads : optional
            Keyword only, as in :class:`Histogram`.

        Returns
        -------
        Histogram
            The same cells, flow counts and samples.

        Raises
        ------
        ValueError
            Other storages and axes (circular ones included); non-zero flow bins of a Double
            histogram with ``flow=True``; negative counts.
        TypeError
            `h` is not a boost_histogram.Histogram.
        ImportError
            boost-histogram is not installed.

        See Also
        --------
        to_boost : The conversion the other way.

        Examples
        --------
        >>> import numpy as np, tally
        >>> import boost_histogram as bh
        >>> b = bh.Histogram(bh.axis.Regular(4, 0.0, 4.0), storage=bh.storage.Int64())
        >>> _ = b.fill(np.array([0.5, 1.5, 1.7, 9.0]))
        >>> h = tally.Histogram.from_boost(b)
        >>> h.values(), h.flow, h.samples
        (array([1, 2, 0, 0]), {'underflow': 0, 'overflow': 1, 'nan': 0}, 4)
        """
        return _boost.from_boost(cls, h, flow, count_bits=count_bits, strategy=strategy, device=device,
                                 threads=threads)

    def to_hist(self, *, flow=True):
        """This histogram as a hist.Hist (scikit-hep's hist; needs the hist package).

        :meth:`to_boost`'s conversion, as hist's own class: names and labels of the axes carry
        over, so ``h.to_hist().plot()`` labels its axes.

        Parameters
        ----------
        flow : bool, optional
            Keyword only, as in :meth:`to_boost`.

        Returns
        -------
        hist.Hist
            The same axes and cells.

        Raises
        ------
        ImportError
            hist is not installed.
        ValueError
            As :meth:`to_boost`.

        Examples
        --------
        >>> import numpy as np, tally
        >>> h = tally.Histogram(tally.axis.Regular(4, 0, 1, name="x")).fill(np.array([0.1, 0.6]))
        >>> t = h.to_hist()
        >>> t.axes[0].name, t.values().tolist(), tally.Histogram.from_hist(t) == h
        ('x', [1, 0, 1, 0], True)
        """
        try:
            import hist
        except ImportError as e:
            raise ImportError("tally: to_hist needs the hist package") from e
        return hist.Hist(self.to_boost(flow=flow))

    @classmethod
    def from_hist(cls, h, **options):
        """A tally.Histogram of a hist.Hist (hist's histograms are boost-histogram's).

        Parameters
        ----------
        h : hist.Hist
            The histogram to convert.
        **options
            Keyword only, as in :meth:`from_boost`.

        Returns
        -------
        Histogram
            The same axes (names and labels included) and cells.

        Examples
        --------
        >>> import hist, tally
        >>> t = hist.Hist.new.StrCat(["a", "b"], name="ds").Int64().fill(ds=["a", "b", "b"])
        >>> tally.Histogram.from_hist(t).values()
        array([1, 2])
        """
        return cls.from_boost(h, **options)

    # ---- UHI indexing: selecting, slicing, rebinning, summing, projecting ----

    def __getitem__(self, key):
        """UHI indexing, as boost-histogram's: one entry per axis (a tuple, a dict of axis
        numbers, ``...``). An integer (negative from the end) or a locator such as
        ``bh.loc(x)`` selects a bin and removes the axis; a slice ``a:b`` keeps bins a..b-1,
        with step ``bh.rebin(k)`` or ``kj`` merging k bins and ``sum`` summing them away; ``sum``
        alone sums its axis away (``tally.sum`` stands for ``sum`` here, as ``bh.sum`` does).
        Removing every axis gives the cell's value (a ``WeightedSum`` for Weight storage).

        A histogram of counts with ``flow=True`` has boost-histogram's flow bins: ``::sum`` adds
        them, ``bh.underflow`` and ``bh.overflow`` select them, and what a slice leaves out joins
        the axis' underflow or overflow. Histograms of sums keep flow counters: ``::sum`` sums the
        bins only and a locator of a flow bin raises IndexError. A slice or rebin of a regular axis
        gives a variable axis over the same edges; sums come back as float64 (exact sums as
        their rounded values).
        """
        if self._channels is not None:
            raise TypeError("a channel histogram is one histogram per channel; index its values() instead")
        axes = self.axes
        entries = _index_entries(key, len(axes))
        if self._flow_bins:
            return self._getitem_extended(entries)
        parts = self._cells()
        counting = not self._hists[0].weighted
        moved = [0, 0]  # counts a selection or slice leaves out: below, above
        kept = []
        d = 0  # the axis of `parts` that stands for axes[k]

        def leave_out(first, end, n):
            """Counts outside bins first..end-1 of axis d join the flow counters (counts, flow=True)."""
            if counting and self._flow:
                moved[0] += int(np.take(parts[0], range(0, first), axis=d).sum())
                moved[1] += int(np.take(parts[0], range(end, n), axis=d).sum())

        for axis_number, (ax, entry) in enumerate(zip(axes, entries)):
            n = ax.bins
            if _is_sum(entry):  # h[sum, :], as boost-histogram's: the axis summed away
                entry = slice(None, None, sum)
            if not isinstance(entry, slice):
                i = _bin_of(entry, ax)
                leave_out(i, i + 1, n)
                parts = [np.take(p, i, axis=d) for p in parts]
                continue
            a, b = _slice_end(entry.start, ax, 0), _slice_end(entry.stop, ax, n)
            b = max(a, b)
            if _is_sum(entry.step):
                leave_out(a, b, n)
                parts = [np.take(p, range(a, b), axis=d).sum(axis=d) for p in parts]
                continue
            k = _rebin_factor(entry.step)
            groups = _groups(entry, a, b, k, axis_number)
            end = a + groups * k  # bins past the last whole group are left out, as boost's
            leave_out(a, end, n)
            parts = [np.take(p, range(a, end), axis=d) for p in parts]
            parts = [p.reshape(p.shape[:d] + (groups, k) + p.shape[d + 1:]).sum(axis=d + 1) for p in parts]
            kept.append(ax._sliced(a, end, k))
            d += 1
        if not kept:
            if self._moments:
                return _accumulated(self._storage, parts)
            return parts[0].item()
        return self._with_cells(kept, parts, moved)

    def __setitem__(self, key, value):
        """Set cells, as boost-histogram's: integers, locators and plain slices (no rebin or
        sum) pick the cells; `value` broadcasts over them. Counts take non-negative integers,
        sums of weights floats, Weight storage (value, variance) pairs in a last axis of 2.
        The flow counters and samples stay as they are."""
        if self._channels is not None:
            raise TypeError("a channel histogram is one histogram per channel; set cells through assign")
        axes = self.axes
        index = []
        for ax, entry in zip(axes, _index_entries(key, len(axes))):
            if not isinstance(entry, slice):
                index.append(_bin_of(entry, ax))
            elif entry.step is not None:
                raise IndexError("setting cells takes integers, locators and slices without a step")
            else:
                index.append(slice(_slice_end(entry.start, ax, 0), _slice_end(entry.stop, ax, ax.bins)))
        with self._lock:
            self._set_cells(tuple(index), value)

    def _set_cells(self, index, value):
        value = np.asarray(value)
        parts = self._cells()
        if self._moments:
            fields = _FIELDS[self._storage]
            if value.shape[-1:] != (len(fields),):
                raise ValueError(f"{self._storage} storage takes ({', '.join(fields)}) tuples: a last axis of "
                                 f"{len(fields)}")
            for part, cells in zip(parts, _raw_of(self._storage, np.asarray(value, np.float64))):
                part[index] = cells
        elif self._hists[0].weighted:
            parts[0][index] = value
        else:
            exact = np.issubdtype(value.dtype, np.integer) or (np.issubdtype(value.dtype, np.floating)
                                                                and np.all(np.isfinite(value))
                                                                and np.all(np.mod(value, 1) == 0))
            if not exact:
                raise ValueError("counts take integers")
            if value.size and (np.min(value) < 0 or np.max(value) >= 2.0**64):
                raise ValueError("counts take non-negative integers below 2^64")
            cells = parts[0].view(np.uint64)
            cells[index] = value.astype(np.uint64)
        self._assign(parts, self._hists[0].flow() if self._flow else (0, 0, 0), self.samples)

    def _assign(self, parts, dropped, samples):
        """The cells of a plain histogram set to `parts` (values, and Weight storage's squares):
        counts as uint64, sums as float64; `dropped` is the values' flow counters."""
        if self._flow_bins:  # the bins set among the flow bins the histogram holds
            ext = self._extended(visible=False)
            ext[_INNER * len(self._axes)] = parts[0]
            return self._assign_extended(ext, samples)
        for part, cells in zip(self._parts(), parts):
            cells = self._kept(np.asarray(cells, np.float64 if part.weighted else np.int64))
            cells = np.ascontiguousarray(cells) if part.weighted else np.ascontiguousarray(cells).view(np.uint64)
            part.assign(cells.ravel(), dropped if part is self._hists[0] else (0, 0, 0), samples)

    def _assign_extended(self, ext, samples):
        """The counts of a histogram with flow bins set to `ext`, every axis' flow bins included."""
        ext = self._kept(np.asarray(ext, np.int64), extended=True)
        self._hists[0].assign(np.ascontiguousarray(ext).view(np.uint64).ravel(), (0, 0, 0), samples)

    def _from_extended(self, axes, ext):
        """A histogram of counts of this one's options over `axes` holding `ext` (the counts with
        every axis' underflow, overflow and NaN bins): flow bins for N-D, counters for 1-D."""
        out = Histogram(axes, flow=True, count_bits=32 if self._hists[0].counts32 else 64, device=self._backend,
                        label=self.label, name=self.name, metadata=self.metadata)
        samples = int(ext.sum())
        if out._flow_bins:
            out._assign_extended(ext, samples)
        elif not axes:  # 0-D: the total
            out._hists[0].assign(np.array([samples], np.uint64), (0, 0, 0), samples)
        else:
            out._hists[0].assign(np.ascontiguousarray(out._kept(ext[1:-2]), np.int64).view(np.uint64),
                                 (int(ext[0]), int(ext[-2]), int(ext[-1])), samples)
        return out

    def _getitem_extended(self, entries):
        """__getitem__ of a histogram with flow bins, as boost-histogram's: a selected bin (or flow
        bin, by tally.underflow / overflow), slices whose cut-off bins join the axis' underflow
        and overflow, ``::sum`` over the flow bins too (``a:b:sum`` over bins a..b-1 only)."""
        ext = self._extended()
        kept, d = [], 0
        for axis_number, (ax, entry) in enumerate(zip(self._axes, entries)):
            n = ax.bins
            if _is_sum(entry):
                entry = slice(None, None, sum)
            if not isinstance(entry, slice):
                i = operator.index(entry(ax)) if callable(entry) and not isinstance(entry, type) else _bin_of(entry, ax)
                if (i < 0 and not ax.traits.underflow) or (i >= n and not ax.traits.overflow):
                    raise IndexError(f"the axis keeps no {'underflow' if i < 0 else 'overflow'} bin (flow bins as "
                                     "its underflow= and overflow= say)")
                ext = (np.take(ext, 0, axis=d) if i < 0 else np.take(ext, i + 1, axis=d) if i < n
                       else np.take(ext, n + 1, axis=d) + np.take(ext, n + 2, axis=d))
                continue
            a, b = _slice_end(entry.start, ax, 0), _slice_end(entry.stop, ax, n)
            b = max(a, b)
            if _is_sum(entry.step):
                whole = entry.start is None and entry.stop is None
                ext = ext.sum(axis=d) if whole else np.take(ext, range(1 + a, 1 + b), axis=d).sum(axis=d)
                continue
            k = _rebin_factor(entry.step)
            groups = _groups(entry, a, b, k, axis_number)
            end = a + groups * k
            e = np.moveaxis(ext, d, 0)
            inner = e[1 + a:1 + end]
            inner = inner.reshape((groups, k) + inner.shape[1:]).sum(axis=1)
            e = np.concatenate([e[:1] + e[1:1 + a].sum(axis=0, keepdims=True), inner,
                                e[n + 1:n + 2] + e[1 + end:1 + n].sum(axis=0, keepdims=True), e[n + 2:]])
            ext = np.moveaxis(e, 0, d)
            kept.append(ax._sliced(a, end, k))
            d += 1
        return int(ext) if not kept else self._from_extended(kept, ext)

    def _with_cells(self, axes, parts, moved=(0, 0)):
        """A histogram of this one's storage and device over `axes`, holding `parts` (values,
        and the squares of Weight storage); counts keep the flow counters (plus `moved`) and the
        samples; sums keep neither exactness nor flow counters."""
        counting = not self._hists[0].weighted
        out = Histogram(axes, storage=None if counting else self._storage, flow=counting and self._flow, count_bits=32 if self._hists[0].counts32 else 64,
                        device=self._backend, label=self.label, name=self.name, metadata=self.metadata)
        f = self._hists[0].flow() if out._flow else (0, 0, 0)
        out._assign(parts, (f[0] + moved[0], f[1] + moved[1], f[2]), self.samples)
        return out

    def project(self, *axes):
        """The histogram summed over every axis but `axes`, in the order given.

        Parameters
        ----------
        *axes : int
            The axes to keep (each once); none: a 0-D histogram of the total.

        Returns
        -------
        Histogram
            Over the kept axes, in that order; counts keep the flow counters and samples.

        Examples
        --------
        >>> import numpy as np, tally
        >>> h = tally.Histogram([tally.axis.integer(0, 2), tally.axis.integer(0, 3)])
        >>> h.fill(np.array([0, 1, 1]), np.array([2, 2, 0])).project(1).values()
        array([1, 0, 2])
        """
        if self._channels is not None:
            raise TypeError("a channel histogram is one histogram per channel; it has no axes to project")
        n = len(self.axes)
        keep = [operator.index(a) for a in axes]
        if len(set(keep)) != len(keep) or any(not 0 <= a < n for a in keep):
            raise ValueError(f"project: distinct axes of 0..{n - 1} expected, got {axes}")
        if self._flow_bins:  # the other axes summed with their flow bins, as boost-histogram's
            ext = self._extended().sum(axis=tuple(a for a in range(n) if a not in keep))
            if not keep:
                return self._from_extended([], ext)
            ext = np.transpose(ext, [sorted(keep).index(a) for a in keep])
            return self._from_extended([self._axes[a] for a in keep], ext)
        if not keep:  # everything summed: a 0-D histogram, as boost-histogram's
            return self._with_cells([], [np.asarray(p.sum()) for p in self._cells()])
        summed = self[{a: slice(None, None, sum) for a in range(n) if a not in keep}]
        order = sorted(keep)
        if keep == order:
            return summed
        perm = [order.index(a) for a in keep]
        parts = [np.transpose(p, perm) for p in summed._cells()]
        return summed._with_cells([summed.axes[i] for i in perm], parts)

    def _cells(self):
        """The sums (counts) and the storage's moments, read together (a plain histogram's)."""
        with self._lock:
            if self._flow_bins:
                return [self._seen(self._hists[0].values(), extended=True)[_INNER * len(self._axes)]]
            return [self._seen(h.values()).reshape(self._shape) for h in self._hists[:1] + self._moments]

    @property
    def _shape(self):
        return tuple(a.bins for a in self._axes)

    # An axis of no bins (a category axis without categories, as boost-histogram's StrCategory([],
    # growth=True)) has an engine axis of one placeholder bin that no sample reaches: these two move
    # cells between the engine's layout and this histogram's, leaving that bin out and putting it back.
    @property
    def _hollow(self):
        """The axes of no bins (none in the common case)."""
        return [d for d, a in enumerate(self._axes) if not a.bins]

    def _seen(self, cells, extended=False):
        """The engine's cells without the placeholder bins (`extended`: cells with every axis'
        flow bins, the underflow bin first)."""
        for d in self._hollow:
            cells = np.delete(cells, int(extended), axis=d)
        return cells

    def _kept(self, cells, extended=False):
        """Cells as the engine keeps them: a zero placeholder bin put in for each axis of no bins."""
        for d in self._hollow:
            cells = np.insert(cells, int(extended), 0, axis=d)
        return cells

    # ---- merging, comparing, copying, pickling ----

    def _same_kind(self, other):
        if self._channels != other._channels:
            describe = lambda c: "a plain histogram" if c is None else f"{c} channels"
            raise ValueError(f"merge: {describe(self._channels)} against {describe(other._channels)}")
        if self._storage != other._storage and (self._moments or other._moments):  # else the engine's message
            raise ValueError(f"merge: a histogram of {self._storage} storage and one of {other._storage}")

    def __iadd__(self, other):
        if not isinstance(other, Histogram):
            return NotImplemented
        self._same_kind(other)
        first, second = sorted((self, other), key=id)  # locks in one order: a += b beside b += a
        with first._lock, second._lock:
            other = self._grown_alike(other)
            for d, (a, b) in enumerate(zip(self._axes, other._axes)):  # the cores' differences: the engine's message
                if a._core == b._core and a != b:
                    raise ValueError(f"merge: axis {d} differs: {a!r} against {b!r}")
            _tally.merge(self._parts(), other._parts())
        return self

    def _grown_alike(self, other):
        """Where growing axes of this histogram and `other` grew apart (other categories, another
        integer range) and every other axis is the same: this histogram grown to their unions (its
        bins first, then other's new ones, as boost-histogram merges them) and `other`, or a copy of
        it laid out on the unions. Otherwise `other` as given (the merge then says what differs).
        A merge the engine then refuses (other options) leaves this histogram grown, its cells as
        they were."""
        if len(self._axes) != len(other._axes):
            return other
        unions = {d: _union(a, b) for d, (a, b) in enumerate(zip(self._axes, other._axes)) if a != b}
        if not unions or None in unions.values():
            return other
        out = other
        for d, union in unions.items():
            if union != self._axes[d]:
                self._grow(d, union)
            if union != out._axes[d]:
                out = out.copy() if out is other else out
                out._grow(d, union)
        return out

    def __add__(self, other):
        if not isinstance(other, Histogram):
            return NotImplemented
        self._same_kind(other)
        out = self.copy()
        out += other
        return out

    def __radd__(self, other):
        # sum([h1, h2, ...]) starts from 0.
        if isinstance(other, numbers.Integral) and not isinstance(other, (bool, np.bool_)) and other == 0:
            return self.copy()
        return NotImplemented

    # ---- arithmetic, as boost-histogram defines it for its Int64, Double and Weight storages ----
    # Counts times a non-negative integer stay counts (flow counters and samples scaled too);
    # every other product, quotient and difference is a Double histogram (weighted=True) of the
    # float64 values, which, as boost-histogram's Double, has no flow counters and counts no
    # samples. Weight storage scales by scalars (the variances by their squares) and adds, as
    # boost-histogram's. Exact sums enter as their correctly rounded values.

    def _same_axes(self, other, op):
        self._same_kind(other)
        if len(self.axes) != len(other.axes) or not all(a == b for a, b in zip(self.axes, other.axes)):
            raise ValueError(f"{op}: the histograms' axes differ")

    def _as_double(self, values, op, variances=None):
        """A Double histogram of `values` on these axes and device (Weight with `variances`)."""
        if self._channels is not None:
            raise ValueError(f"{op}: a channel histogram holds counts; it scales only by a non-negative integer")
        out = Histogram(self.axes, storage="double" if variances is None else "weight", device=self._backend)
        out._assign([values, variances], (0, 0, 0), 0)
        return out

    def _counts_times(self, k):
        out = self.copy()
        for h in out._hists:
            cells = h.values().view(np.uint64)
            if k and int(cells.max(initial=0)) > (2**64 - 1) // k:
                raise OverflowError(f"multiply: a count times {k} exceeds 64 bits")
            dropped = tuple(int(v) * k for v in h.flow()) if self._flow else (0, 0, 0)
            h.assign(np.ascontiguousarray(cells * np.uint64(k)).ravel(), dropped, h.samples * k)
        return out

    @staticmethod
    def _scalar(x):
        return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))

    def _binary(self, other, op, f):
        if self._storage in ("mean", "weighted_mean"):
            if isinstance(other, Histogram) or self._scalar(other):
                raise TypeError(f"{op}: a histogram of means adds to another (merging), and nothing else")
            return NotImplemented
        if self._moments:
            if not self._scalar(other) or op == "subtract":
                if isinstance(other, Histogram):
                    raise TypeError(f"{op}: Weight storage scales by scalars and adds, as boost-histogram's")
                return NotImplemented
            k = float(other)
            w, w2 = self._cells()
            return self._as_double(f(w, k), op, f(f(w2, k), k))
        if isinstance(other, Histogram):
            self._same_axes(other, op)
            a, b = other.values(), self.values()
        elif self._scalar(other):
            a, b = other, self.values()
        else:
            return NotImplemented
        # x / 0 is inf or nan, with numpy's warning, as in boost-histogram.
        return self._as_double(f(np.asarray(b, np.float64), np.asarray(a, np.float64)), op)

    def __mul__(self, other):
        if self._scalar(other) and isinstance(other, numbers.Integral) and not self._hists[0].weighted:
            if other < 0:
                raise ValueError(f"multiply: counts are unsigned; multiply by {float(other)} for a Double histogram")
            return self._counts_times(int(other))
        return self._binary(other, "multiply", np.multiply)

    __rmul__ = __mul__

    def __truediv__(self, other):
        return self._binary(other, "divide", np.true_divide)

    def __sub__(self, other):
        if not isinstance(other, Histogram):
            return NotImplemented
        return self._binary(other, "subtract", np.subtract)

    def __eq__(self, other):
        if not isinstance(other, Histogram):
            return NotImplemented
        return (self._channels == other._channels and self._storage == other._storage
                and self._axes == other._axes and _tally.equal(self._parts(), other._parts()))

    __hash__ = None  # mutable: equal histograms stop being equal after a fill

    def copy(self):
        """An independent copy (cells, options, device).

        Returns
        -------
        Histogram
            A copy equal to this histogram, filled apart from it.

        Examples
        --------
        >>> import numpy as np, tally
        >>> h = tally.Histogram(tally.axis.integer(0, 3))
        >>> c = h.fill(np.array([0, 1, 1])).copy()
        >>> c == h
        True
        >>> c.fill(np.array([2])) == h, h.samples, c.samples
        (False, 3, 4)
        """
        out = object.__new__(type(self))
        out._backend, out._channels, out._flow = self._backend, self._channels, self._flow
        out._options, out.label, out.name, out._storage = self._options, self.label, self.name, self._storage
        out.metadata = _copy.copy(self.metadata)
        out._lock = threading.RLock()
        with self._lock:
            out._axes = [_copy.copy(a) for a in self._axes]
            out._plain_axes, out._flow_bins = self._plain_axes, self._flow_bins
            parts = _tally.copy(self._parts())
        out._hists, out._moments = parts[:len(self._hists)], parts[len(self._hists):]
        return out

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __getstate__(self):
        with self._lock:
            return self._state()

    def _state(self):
        return {"format": 3, "device": self._backend, "channels": self._channels, "flow": self._flow,
                "histograms": [h.to_bytes() for h in self._hists], "storage": self._storage,
                "moments": [h.to_bytes() for h in self._moments],
                "axes": [(type(a).__name__, a._extras()) for a in self._axes],
                "meta": {"label": self.label, "name": self.name, "metadata": self.metadata}}

    def __setstate__(self, state):
        # The whole state is checked before anything is set: the histogram saved, or an error.
        if not isinstance(state, dict):
            raise TypeError(f"tally.Histogram: the pickle state must be a dict, got {type(state).__name__}")
        keys = _STATE_KEYS.get(state.get("format")) if type(state.get("format")) is int else None
        if keys is None:
            raise ValueError(f"tally.Histogram: unknown pickle format {state.get('format')!r}")
        if state.keys() != keys:
            raise ValueError(f"tally.Histogram: the pickle state's keys must be {sorted(keys)}, "
                             f"got {sorted(map(str, state))}")
        # Format 2 kept Weight storage's squares as "squares"; format 3 keeps the storage and its moments.
        squares = state.get("squares")
        moments = state["moments"] if "moments" in state else [] if squares is None else [squares]
        if not isinstance(moments, (list, tuple)) or not all(isinstance(b, bytes) for b in moments) or (
                moments and state["channels"] is not None):
            raise TypeError("tally.Histogram: the pickle state's moments must be a list of bytes (none with channels)")
        device, channels, flow, blobs = state["device"], state["channels"], state["flow"], state["histograms"]
        if device is not None and not isinstance(device, str):
            raise TypeError(f"tally.Histogram: the pickle state's device must be a str or None, got "
                            f"{type(device).__name__}")
        if device not in (None, "auto", "cpu", "cuda"):
            raise ValueError(f"tally.Histogram: the pickle state's device must be 'auto', 'cpu', 'cuda' or None, "
                             f"got {device!r}")
        if not isinstance(flow, (bool, np.bool_)):
            raise TypeError(f"tally.Histogram: the pickle state's flow must be a bool, got {type(flow).__name__}")
        if channels is not None:
            try:
                channels = operator.index(channels)
            except TypeError:
                raise TypeError(f"tally.Histogram: the pickle state's channels must be an int or None, got "
                                f"{type(channels).__name__}") from None
            if channels < 1:
                raise ValueError(f"tally.Histogram: the pickle state's channels must be >= 1, got {channels}")
        if not isinstance(blobs, (list, tuple)) or not all(isinstance(b, bytes) for b in blobs):
            raise TypeError("tally.Histogram: the pickle state's histograms must be a list of bytes")
        if len(blobs) != (1 if channels is None else channels):
            raise ValueError(f"tally.Histogram: {len(blobs)} histograms in the pickle state for "
                             + ("a plain histogram" if channels is None else f"{channels} channels"))
        saved = "auto" if device is None else device
        backend = saved
        if backend != "auto" and not any(n == backend and u for n, _, u, _ in _tally.backends()):
            backend = "auto"  # a CUDA histogram where CUDA is not usable: fill where the samples are
        hists = [_tally.Hist.from_bytes(b, backend, saved) for b in blobs]
        if any(h.flow_counters != bool(flow) for h in hists):
            raise ValueError(f"tally.Histogram: the pickle state's flow={bool(flow)} differs from its histograms'")
        if channels is not None:
            _check_channels(hists)
        storage = state.get("storage", "weight" if moments else "double" if hists[0].weighted else "int64")
        if storage not in _MOMENTS or storage in (None, "weight", "mean", "weighted_mean") and not hists[0].weighted \
                or storage == "int64" and hists[0].weighted or len(moments) != len(_MOMENTS[storage]) \
                or channels is not None and storage != "int64":
            raise ValueError(f"tally.Histogram: the pickle state's storage {storage!r} does not match its histograms")
        moments = [_tally.Hist.from_bytes(b, backend, saved) for b in moments]
        if any(not (m.weighted and m.shape == hists[0].shape and m.exact_sums == hists[0].exact_sums
                    and not m.flow_counters) for m in moments):
            raise ValueError("tally.Histogram: the pickle state's moments do not match its sums of weights")
        cores = hists[0].axes if channels is None else [h.axes[0] for h in hists]
        decorations = state.get("axes", [None] * len(cores))
        if decorations == [] and channels is None and list(cores) == [_ONE_CELL]:
            cores = []  # a 0-D histogram: its one cell's core axis stands for no axis
        if not isinstance(decorations, (list, tuple)) or len(decorations) != len(cores):
            raise ValueError("tally.Histogram: the pickle state's axes do not match its histograms'")
        axes = [tally_axis._of(core) if d is None else _decorated_axis(d, core)
                for core, d in zip(cores, decorations)]
        meta = state.get("meta", {})
        if not isinstance(meta, dict) or not all(isinstance(meta.get(k, ""), str) for k in ("label", "name")):
            raise ValueError("tally.Histogram: the pickle state's meta must be a dict of a label and a name")
        self._backend, self._channels, self._flow = backend, channels, bool(flow)
        self._options = (hists[0].weighted, "automatic", hists[0].counts32, 0, hists[0].exact_sums)
        self._lock = threading.RLock()
        self._hists, self._moments, self._axes, self._storage = hists, moments, axes, storage
        self._plain_axes = all(a._plain for a in axes)
        self._flow_bins = hists[0].flow_bins
        self.label, self.name, self.metadata = meta.get("label", ""), meta.get("name", ""), meta.get("metadata")

    # ---- looking at it: repr, text bars, a notebook's SVG, matplotlib ----

    def __repr__(self):
        # The call that makes an empty histogram like this one, then what it holds.
        axes = self.axes
        shared = self._channels is not None and all(a == axes[0] for a in axes)
        args = [repr(axes[0]) if len(axes) == 1 or shared else "[" + ", ".join(map(repr, axes)) + "]"]
        if self._moments:
            args.append(f"storage={self._storage!r}")
        elif self._hists[0].weighted:
            args.append("weighted=True")
        for text, on in ((f"channels={self._channels}", self._channels is not None), ("flow=True", self._flow),
                         ("count_bits=32", self._hists[0].counts32), ("exact_sums=True", self.exact_sums),
                         (f"device={self._backend!r}", self._backend != "auto")):
            if on:
                args.append(text)
        total = self.sum()
        total = (total.value if isinstance(total, WeightedSum) else total.tolist() if isinstance(total, np.ndarray)
                 else total)
        return f"tally.Histogram({', '.join(args)})  # samples {self.samples}, sum {total}"

    def __str__(self):
        """The repr, then for a 1-D histogram one line a bin: its edges, its value and a bar."""
        if self.ndim != 1 or self._channels is not None:
            return repr(self)
        values, axis = self.values(), self._axes[0]
        edges = axis.edges
        if axis.kind in ("category", "boolean"):
            labels = [str(c) for c in axis]
        else:
            labels = [f"[{edges[k]:.6g}, {edges[k + 1]:.6g}{']' if k == len(values) - 1 else ')'}"
                      for k in range(len(values))]
        numbers = [f"{v:.6g}" for v in values.tolist()]
        finite = values[np.isfinite(values)] if values.dtype.kind == "f" else values
        top = max(float(np.max(finite, initial=0)), 0.0)
        bars = ["\u2588" * int(round(40 * (v / top))) if top > 0 and 0 < v < np.inf else ""
                for v in values.tolist()]
        width, digits = max(map(len, labels), default=0), max(map(len, numbers), default=0)
        return "\n".join([repr(self)] + [f"{lab:<{width}} {num:>{digits}} {bar}".rstrip()
                                          for lab, num, bar in zip(labels, numbers, bars)])

    def _repr_html_(self):
        """A notebook's view: an SVG of the bars (1-D) or a heat map (2-D) beside the repr."""
        text = repr(self).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        svg = _svg(self) if self._channels is None and self.ndim in (1, 2) else ""
        return (f'<div style="display:flex;align-items:center;gap:1em">{svg}'
                f'<pre style="white-space:pre-wrap">{text}</pre></div>')

    def plot(self, ax=None, **kwargs):
        """Draw a 1-D histogram with matplotlib: its values as steps over the edges.

        With mplhep installed, mplhep.histplot draws it (error bars from `variances` where it
        draws them); else matplotlib's ``stairs``.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (default: the current axes).
        **kwargs
            Passed on to ``mplhep.histplot`` or ``Axes.stairs``.

        Returns
        -------
        object
            What mplhep.histplot or Axes.stairs returns.

        Raises
        ------
        ValueError
            Not a 1-D histogram.
        ImportError
            matplotlib is not installed.

        Examples
        --------
        >>> import numpy as np, tally
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> h = tally.Histogram(tally.axis.regular(4, 0, 1)).fill(np.array([0.1, 0.3, 0.35]))
        >>> h.plot().get_data().values
        array([1., 2., 0., 0.])
        """
        if self.ndim != 1 or self._channels is not None:
            raise ValueError("plot: a 1-D histogram (plot2d draws two dimensions)")
        ax = _matplotlib_axes(ax)
        try:
            import mplhep
        except ImportError:
            mplhep = None
        _label_axes(ax, self._axes)
        if mplhep is not None:
            return mplhep.histplot(self, ax=ax, **kwargs)
        return ax.stairs(np.asarray(self.values(), np.float64), self.axes[0].edges, **kwargs)

    def plot2d(self, ax=None, **kwargs):
        """Draw a 2-D histogram with matplotlib as a heat map (``pcolormesh``), axis 0 across.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw (default: the current axes).
        **kwargs
            Passed on to ``Axes.pcolormesh``.

        Returns
        -------
        matplotlib.collections.QuadMesh
            The mesh.

        Raises
        ------
        ValueError
            Not a 2-D histogram.
        ImportError
            matplotlib is not installed.

        Examples
        --------
        >>> import numpy as np, tally
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> h = tally.Histogram([tally.axis.integer(0, 2), tally.axis.integer(0, 3)])
        >>> h.fill(np.array([0, 1, 1]), np.array([2, 2, 0])).plot2d().get_array().reshape(3, 2)
        masked_array(
          data=[[0., 1.],
                [0., 0.],
                [1., 1.]],
          mask=False,
          fill_value=1e+20)
        """
        if self.ndim != 2 or self._channels is not None:
            raise ValueError("plot2d: a 2-D histogram (plot draws one dimension)")
        ax = _matplotlib_axes(ax)
        _label_axes(ax, self._axes)
        x, y = (a.edges for a in self.axes)
        return ax.pcolormesh(x, y, np.asarray(self.values(), np.float64).T, **kwargs)


# The pickle state's keys by format: 2 added Weight storage's squares; 3 the storage and its moments
# (in place of the squares), the Python side of the axes (their classes, labels, metadata, categories,
# transforms) and the histogram's label, name and metadata.
_STATE_KEYS = {1: {"format", "device", "channels", "flow", "histograms"},
               2: {"format", "device", "channels", "flow", "histograms", "squares"},
               3: {"format", "device", "channels", "flow", "histograms", "storage", "moments", "axes", "meta"}}

# Each storage's sums beside the first histogram's (counts for int64 and mean, else the sums of
# weights w), each a weighted histogram of these weights: w2, the squared weights; s and s2, the
# Mean storages' samples and their squares, times the weights for weighted_mean. The cells add
# as sums, so merging, slicing and projecting add them as they add counts.
_MOMENTS = {None: (), "int64": (), "double": (), "weight": ("w2",), "mean": ("s", "s2"),
            "weighted_mean": ("w2", "s", "s2")}
# The fields of a cell, as boost-histogram's views name them (and __setitem__ takes them).
_FIELDS = {"weight": ("value", "variance"),
           "mean": ("count", "value", "variance"),
           "weighted_mean": ("sum_of_weights", "sum_of_weights_squared", "value", "variance")}


_STORAGE_TYPES = {"int64": tally_storage.Int64, "double": tally_storage.Double, "weight": tally_storage.Weight,
                  "mean": tally_storage.Mean, "weighted_mean": tally_storage.WeightedMean}


def _moments_of(storage, cells):
    """The structured view (boost-histogram's fields) of a storage's raw sums."""
    if storage == "weight":
        out = np.empty(cells[0].shape, [("value", np.float64), ("variance", np.float64)])
        out["value"], out["variance"] = cells
        return out
    w, rest = cells[0], cells[1:]
    w2, s1, s2 = rest if storage == "weighted_mean" else (None, *rest)
    value = np.divide(s1, w, out=np.zeros_like(s1), where=w != 0)
    # The sum of squared deviations from the mean, sum(w s^2) - (sum w s)^2 / sum(w); never below 0.
    deltas = np.maximum(s2 - np.divide(s1 * s1, w, out=np.zeros_like(s1), where=w != 0), 0.0)
    if w2 is not None:
        # A cell of one sample has no spread: no squared deviations, a variance of 0/0 (NaN), where
        # the sums leave a rounding error of either sign (so do boost-histogram's updates: its
        # variance there is NaN, inf or -inf). sum(w)^2 == sum(w^2) holds for one sample only.
        deltas = np.where(w * w == w2, 0.0, deltas)
    if storage == "mean":
        out = np.empty(w.shape, [("count", np.float64), ("value", np.float64), ("_sum_of_deltas_squared", np.float64)])
        out["count"], out["value"], out["_sum_of_deltas_squared"] = w, value, deltas
        return out
    out = np.empty(w.shape, [("sum_of_weights", np.float64), ("sum_of_weights_squared", np.float64),
                             ("value", np.float64), ("_sum_of_weighted_deltas_squared", np.float64)])
    out["sum_of_weights"], out["sum_of_weights_squared"], out["value"] = w, w2, value
    out["_sum_of_weighted_deltas_squared"] = deltas
    return out


def _variance(storage, m):
    """The samples' variance in each cell of a Mean storage's view (NaN where undefined), as
    boost-histogram's: deltas / (n - 1), or deltas / (sum w - sum w^2 / sum w) weighted."""
    if storage == "mean":
        return accumulators._mean_variance(m["count"], m["_sum_of_deltas_squared"])
    return accumulators._weighted_variance(m["sum_of_weights"], m["sum_of_weights_squared"],
                                           m["_sum_of_weighted_deltas_squared"])


def _raw_of(storage, value):
    """A storage's raw sums for cells given as boost-histogram's fields (a last axis of them)."""
    if storage == "weight":
        return value[..., 0], value[..., 1]
    if storage == "mean":
        n, mean, var = value[..., 0], value[..., 1], value[..., 2]
        return n, n * mean, np.where(n > 1, var * (n - 1), 0.0) + n * mean * mean
    w, w2, mean, var = (value[..., k] for k in range(4))
    effective = np.divide(w2, w, out=np.zeros_like(w), where=w != 0)
    return w, w2, w * mean, np.where(w - effective > 0, var * (w - effective), 0.0) + w * mean * mean


def _accumulated(storage, sums):
    """One cell's (or a total's) accumulator from its raw sums."""
    sums = [np.asarray(x, np.float64) for x in sums]
    if storage == "weight":
        return WeightedSum(float(sums[0]), float(sums[1]))
    m = _moments_of(storage, [x.reshape(1) for x in sums])
    var = float(_variance(storage, m)[0])
    if storage == "mean":
        return accumulators.Mean(float(m["count"][0]), float(m["value"][0]), var)
    return accumulators.WeightedMean(float(m["sum_of_weights"][0]), float(m["sum_of_weights_squared"][0]),
                                     float(m["value"][0]), var)


def _union(a, b):
    """The axis holding the bins of two growing axes that differ only in what they grew to
    (categories: a's, then b's others in b's order; Integer: both ranges), else None."""
    if type(a) is not type(b) or not (a.traits.growth and b.traits.growth):
        return None

    def rest(ax):  # all but what growth changes (the flow-bin flags are not compared by ==)
        return {k: v for k, v in ax._extras().items() if k not in ("_categories", "_underflow", "_overflow")}
    if rest(a) != rest(b):
        return None
    if isinstance(a, tally_axis._Category):
        known = set(a.categories)
        return a._with_categories(a.categories + [c for c in b.categories if c not in known])
    if a.kind == "integer":
        return a._rebuilt(_tally.Axis.integer(min(int(a.lo), int(b.lo)), max(int(a.hi), int(b.hi))))
    return None


def _places(old, grown):
    """Where the bins of axis `old` are among those of `grown`, which holds them all: a slice
    (an Integer axis grown at either end, categories appended), or each category's bin."""
    if isinstance(old, tally_axis._Category) and grown.categories[:old.bins] != old.categories:
        index = {c: k for k, c in enumerate(grown.categories)}
        return np.array([index[c] for c in old.categories], np.intp)
    at = int(old.lo) - int(grown.lo) if old.kind == "integer" else 0
    return slice(at, at + old.bins)


def _decorated_axis(decoration, core):
    """A pickle's axis: its (class name, extras) over the core its histogram restored."""
    if not isinstance(decoration, (list, tuple)) or len(decoration) != 2:
        raise ValueError("tally.Histogram: the pickle state's axes must be (class, extras) pairs")
    try:
        return tally_axis._decorated(decoration[0], core, decoration[1])
    except ValueError as e:
        raise ValueError(f"tally.Histogram: the pickle state's axes: {e}") from None


def _check_channels(hists):
    """A pickle's channel histograms as the constructor and fills make them: 1-D counts of one
    count width, each channel filled with the same pixels."""
    for c, h in enumerate(hists):
        if len(h.shape) != 1 or h.weighted:
            raise ValueError(f"tally.Histogram: channel {c} of the pickle state is not a 1-D histogram of counts")
        if h.counts32 != hists[0].counts32 or h.samples != hists[0].samples:
            raise ValueError(f"tally.Histogram: channel {c} of the pickle state differs from channel 0 in its "
                             "count width or samples")


def _broadcast(columns, strings):
    """The mapped columns of an N-D fill in one shape, on one device: scalars (0-d) broadcast,
    without a copy per sample, to the shape of the first array column not of strings
    (boost-histogram's ``fill("ttbar", pt, eta)``), and a StrCategory's codes (mapped on the
    host) moved to that column's device."""
    arrays = [c for c, s in zip(columns, strings) if c.ndim]
    ref = next((c for c, s in zip(columns, strings) if c.ndim and not s), arrays[0] if arrays else None)
    if ref is None:
        return columns
    return [c if c is ref else _broadcast_scalar(c, ref) if c.ndim == 0 else _placed_like(c, ref) if s else c
            for c, s in zip(columns, strings)]


def _broadcast_scalar(s, ref):
    """Source s broadcast to ref's shape where s is 0-d and ref is not; else s."""
    return _placed_like(s, ref) if s.ndim == 0 and ref.ndim else s


def _placed_like(s, ref):
    """Source s (a 0-d scalar, or a host array of ref's shape) in ref's library and on ref's
    device, a scalar as a view of stride 0 in ref's shape; unchanged where ref's library is not
    numpy, torch or cupy, or s is on a device and ref on the host (the fill then names both)."""
    here = (s.lib, s.device, s.index) == (ref.lib, ref.device, ref.index)
    if (s.ndim and here) or ref.lib not in ("numpy", "torch", "cupy") or (s.on_cuda and not ref.on_cuda):
        return s
    x = s.obj if here else ref.result(to_host(s.obj))
    if s.ndim:
        return Source(x, "sample")
    broadcast = {"torch": lambda: x.expand(ref.shape), "cupy": lambda: _cupy().broadcast_to(x, ref.shape),
                 "numpy": lambda: np.broadcast_to(x, ref.shape)}[ref.lib]
    return Source(broadcast(), "sample")


def _host_bytes(columns, weights):
    return sum(c.size * c.np_dtype.itemsize for c in columns + ([weights] if weights is not None else [])
               if c.np_dtype is not None)


def _is_sum(entry):
    """Whether an index entry or slice step is UHI's sum: Python's, or tally.sum (boost-histogram
    users write bh.sum, which is Python's)."""
    return entry is sum or entry is _patterns.sum


def _index_entries(key, n):
    """A UHI key as one entry per axis: slice(None) for the axes it leaves out."""
    if isinstance(key, dict):
        entries = [slice(None)] * n
        for d, e in key.items():
            if not 0 <= operator.index(d) < n:
                raise IndexError(f"axis {d} of a {n}-D histogram")
            entries[operator.index(d)] = e
        return entries
    key = list(key) if isinstance(key, tuple) else [key]
    if sum(e is Ellipsis for e in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key[at:at + 1] = [slice(None)] * (n - len(key) + 1)
    if len(key) > n:
        raise IndexError(f"too many indices for a {n}-D histogram: {len(key)}")
    return key + [slice(None)] * (n - len(key))


def _located(entry, ax):
    """An integer entry as given, or a locator's (callable on the axis, as bh.loc) answer."""
    if callable(entry) and not isinstance(entry, type):
        i = entry(ax)
        if i < 0 or i >= ax.bins:
            raise IndexError("tally keeps flow counters, not flow bins: no bin at index "
                             f"{i} of an axis of {ax.bins} bins")
        return operator.index(i)
    return operator.index(entry)


def _bin_of(entry, ax):
    i = _located(entry, ax)
    j = i + ax.bins if i < 0 and not callable(entry) else i
    if not 0 <= j < ax.bins:
        raise IndexError(f"bin {i} of an axis of {ax.bins} bins")
    return j


def _slice_end(entry, ax, default):
    if entry is None:
        return default
    if callable(entry) and not isinstance(entry, type):
        return min(max(operator.index(entry(ax)), 0), ax.bins)  # underflow and overflow: the ends
    i = operator.index(entry)
    return min(max(i + ax.bins if i < 0 else i, 0), ax.bins)


def _groups(entry, a, b, k, axis_number):
    """The groups of k bins that slice `entry` of bins a..b-1 keeps: at least one, as boost-histogram's
    axes have bins (IndexError), but the whole of an axis of no bins, ``:``, keeps its none."""
    groups = (b - a) // k
    if groups == 0 and entry != slice(None):
        raise IndexError(f"the slice {entry.start}:{entry.stop} of axis {axis_number} keeps no bins" +
                         (f" (merged {k} at a time)" if k > 1 else ""))
    return groups


def _rebin_factor(step):
    if step is None:
        return 1
    if isinstance(step, complex) and step.real == 0 and step.imag >= 1 and step.imag == int(step.imag):
        return int(step.imag)
    factor = getattr(step, "factor", None)
    if factor is not None and operator.index(factor) >= 1:
        return operator.index(factor)
    raise IndexError("a slice's step must be sum, a rebin (bh.rebin(k), or kj), or none; "
                     f"got {step!r}")


def _svg(h, width=240, height=150):
    """An SVG of a 1-D histogram's bars or a 2-D one's heat map (darker: more), bins placed
    by their edges where those are finite, else one unit each."""
    def places(axis):
        e = axis.edges
        e = e if np.isfinite(e).all() and e[-1] > e[0] else np.arange(axis.bins + 1, dtype=np.float64)
        return (e - e[0]) / ((e[-1] - e[0]) or 1.0)  # an axis of no bins: one edge, at 0
    values = np.asarray(h.values(), np.float64)
    values = np.where(np.isfinite(values), values, 0.0)  # inf and NaN cells drawn empty
    top = float(np.max(np.abs(values), initial=0.0)) or 1.0
    shapes = []
    if h.ndim == 1:
        x = places(h.axes[0]) * width
        for k, v in enumerate(values.tolist()):
            bar = abs(v) / top * (height - 10)
            shapes.append(f'<rect x="{x[k]:.2f}" y="{height - bar:.2f}" width="{max(x[k + 1] - x[k], 0.5):.2f}" '
                          f'height="{bar:.2f}" fill="#3b6ea8" stroke="white" stroke-width="0.5"/>')
    else:
        x, y = places(h.axes[0]) * width, places(h.axes[1]) * height
        for i in range(values.shape[0]):
            for j in range(values.shape[1]):
                shade = 1 - abs(values[i, j]) / top
                color = "#%02x%02x%02x" % (int(255 * shade), int(255 * shade), 255)
                shapes.append(f'<rect x="{x[i]:.2f}" y="{height - y[j + 1]:.2f}" width="{max(x[i + 1] - x[i], 0.5):.2f}" '
                              f'height="{max(y[j + 1] - y[j], 0.5):.2f}" fill="{color}"/>')
    frame = f'<rect x="0" y="0" width="{width}" height="{height}" fill="none" stroke="#888"/>'
    e = h.axes[0].edges  # axis 0's range under the frame
    text = (f'<text x="0" y="{height + 13}" font-size="11" font-family="sans-serif">{e[0]:.6g}</text>'
            f'<text x="{width}" y="{height + 13}" font-size="11" font-family="sans-serif" '
            f'text-anchor="end">{e[-1]:.6g}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 16}" '
            f'viewBox="0 0 {width} {height + 16}">{"".join(shapes)}{frame}{text}</svg>')


def _label_axes(ax, axes):
    """The plot's x (and y) labels from the axes' labels, category names as tick labels."""
    for axis, set_label, set_ticks, set_scale in zip(axes, (ax.set_xlabel, ax.set_ylabel),
                                                     (ax.set_xticks, ax.set_yticks), (ax.set_xscale, ax.set_yscale)):
        if getattr(axis, "transform", None) == tally_axis.transform.log:
            set_scale("log")
        if axis.label:
            set_label(axis.label)
        if axis.kind in ("category", "boolean"):
            set_ticks(axis.centers, [str(c) for c in axis])


def _matplotlib_axes(ax):
    """`ax`, or matplotlib's current axes (matplotlib imported only when a plot is drawn)."""
    import matplotlib.pyplot as plt
    return plt.gca() if ax is None else ax

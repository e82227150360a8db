"""Axes for tally.Histogram, with boost-histogram's names: Regular, Variable, Integer,
IntCategory, StrCategory and Boolean, each with a label, a name and metadata.

Each axis maps a sample to a bin under tally's one bin rule (bins are [e_k, e_k+1), the last one
also holds its right edge; values outside and NaN are dropped), through a C++ axis of the engine:
a category axis bins the codes of its categories (0, 1, ...), a transformed Regular axis bins
the transformed samples, a circular axis the samples wrapped into its range. The samples are
mapped in their own library and on their own device (numpy, torch, cupy), strings on the host.
The lower-case constructors (regular, variable, integer) make the same axes.
"""

import math
import operator
import types
import typing

import numpy as np

from . import _tally
from ._arrays import Source, int64_arg, to_host
from ._types import FLOAT_TYPES
from ._devices import _cupy, _torch


def _library(src, what):
    """The array module of a Source's library: numpy, torch or cupy."""
    if src.lib == "numpy":
        return np
    if src.lib == "torch":
        return _torch()
    if src.lib == "cupy":
        return _cupy()
    raise TypeError(f"tally.axis: {what} maps samples in numpy, torch or cupy; got {type(src.obj).__name__}")


# ---- transforms of a Regular axis ----

class _Transform:
    """A transform of a Regular axis: its bins are equal in forward(x)."""

    def forward(self, xp, x):
        raise NotImplementedError

    def inverse(self, y):
        raise NotImplementedError

    def __eq__(self, other):
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self):
        return hash((type(self).__name__, self._key()))

    def _key(self):
        return ()


class _Log(_Transform):
    def forward(self, xp, x):
        return xp.log(x)

    def inverse(self, y):
        return np.exp(y)

    def __repr__(self):
        return "tally.axis.transform.log"


class _Sqrt(_Transform):
    def forward(self, xp, x):
        return xp.sqrt(x)

    def inverse(self, y):
        return np.square(y)

    def __repr__(self):
        return "tally.axis.transform.sqrt"


class Pow(_Transform):
    """The transform x -> x**power (power not 0)."""

    def __init__(self, power):
        self.power = float(power)
        if self.power == 0 or not math.isfinite(self.power):
            raise ValueError(f"tally.axis.transform.Pow: a finite power other than 0, got {power}")

    def forward(self, xp, x):
        return xp.pow(x, self.power) if xp is not np and hasattr(xp, "pow") else xp.power(x, self.power)

    def inverse(self, y):
        return np.power(y, 1.0 / self.power)

    def _key(self):
        return (self.power,)

    def __repr__(self):
        return f"tally.axis.transform.Pow({self.power!r})"


class Function(_Transform):
    """A transform by two functions of numpy arrays, forward and its inverse (applied on the
    host: samples on a GPU are copied to the host first)."""

    def __init__(self, forward, inverse):
        if not callable(forward) or not callable(inverse):
            raise TypeError("tally.axis.transform.Function: forward and inverse must be callables")
        self._forward, self._inverse = forward, inverse

    def forward(self, xp, x):
        return np.asarray(self._forward(to_host(x)), np.float64)

    def inverse(self, y):
        return np.asarray(self._inverse(y), np.float64)

    def _key(self):
        return (self._forward, self._inverse)

    def __repr__(self):
        return f"tally.axis.transform.Function({self._forward!r}, {self._inverse!r})"


transform = types.SimpleNamespace(log=_Log(), sqrt=_Sqrt(), Pow=Pow, Function=Function)


# ---- the axes ----

class Traits(typing.NamedTuple):
    """An axis' traits, as boost-histogram's (and UHI's `discrete`)."""

    underflow: bool = False
    overflow: bool = False
    circular: bool = False
    growth: bool = False
    continuous: bool = False
    ordered: bool = False

    @property
    def discrete(self):
        return not self.continuous


class Axis:
    """The base of tally's axes: the engine's C++ axis (`_core`) and what the Python side adds
    to it (label, name, metadata, traits, the mapping of samples to what the core bins)."""

    _circular_ok = False

    def __init__(self, core, *, label="", name="", metadata=None, underflow=True, overflow=True, growth=False,
                 circular=False):
        if circular and not self._circular_ok:
            raise ValueError(f"tally.axis.{type(self).__name__}: cannot be circular")
        self._core = core
        self.label, self.name, self.metadata = str(label or name or ""), str(name or ""), metadata
        self._underflow, self._overflow = bool(underflow) and not circular, bool(overflow) and not circular
        self._growth, self._circular = bool(growth), bool(circular)

    # What the core says: bins, edges, the bin of a value.
    @property
    def kind(self) -> str:
        """'regular', 'variable', 'integer', 'category' or 'boolean'."""
        return self._core.kind

    @property
    def bins(self) -> int:
        """The number of bins."""
        return self._core.bins

    @property
    def size(self) -> int:
        """The number of bins (boost-histogram's name)."""
        return self.bins

    @property
    def extent(self) -> int:
        """The bins, with the flow bins boost-histogram's axis would keep."""
        return self.bins + self._underflow + self._overflow

    @property
    def edges(self) -> np.ndarray:
        """The edges, float64 (a category axis': 0, 1, ..., bins)."""
        return self._core.edges

    @property
    def centers(self) -> np.ndarray:
        """The bins' midpoints, float64."""
        return self._core.centers

    @property
    def widths(self) -> np.ndarray:
        """The bins' widths, float64."""
        return self._core.widths

    @property
    def lo(self) -> float:
        """The first edge."""
        return self._core.lo

    @property
    def hi(self) -> float:
        """The last edge."""
        return self._core.hi

    @property
    def edge_type(self) -> str:
        """The type the edges are rounded to."""
        return self._core.edge_type

    @property
    def traits(self):
        """The axis' traits (boost-histogram's names; UHI's `circular` and `discrete`)."""
        return Traits(underflow=self._underflow, overflow=self._overflow, circular=self._circular,
                      growth=self._growth, continuous=self.kind in ("regular", "variable"),
                      ordered=self.kind not in ("category",))

    def index(self, value):
        """The bin of `value` (-1 below the first edge, `bins` from the last edge on), as
        boost-histogram's (``bh.loc`` calls it)."""
        return self._core.index(float(value))

    def value(self, i):
        """The lower edge of bin i (i may be `bins`: the upper edge of the last bin)."""
        return float(self.edges[operator.index(i)])

    def bin(self, i):
        """Bin i as boost-histogram's ``bin``: its (lower, upper) edges on a Regular or Variable
        axis, its integer on an Integer axis, its category on a category axis.

        Parameters
        ----------
        i : int
            The bin, 0 to ``bins - 1``; -1 and `bins` stand for the flow bins boost-histogram's
            axis would keep (the range below the first edge, above the last).

        Returns
        -------
        tuple of float or int or str or None
            (lower, upper), the bin's integer or category (None for a category axis' overflow).

        Raises
        ------
        IndexError
            A bin outside the axis and its flow bins.

        Examples
        --------
        >>> import tally
        >>> tally.axis.Variable([0, 1, 3]).bin(1), tally.axis.Regular(2, 0, 1).bin(2)
        ((1.0, 3.0), (1.0, inf))
        >>> tally.axis.Integer(-2, 3).bin(0), tally.axis.StrCategory(["a", "b"]).bin(1)
        (-2, 'b')
        """
        i = self._flow_index(i)
        e = self.edges
        below = -math.inf if self._transform is None else self._outside(-math.inf)
        above = math.inf if self._transform is None else self._outside(math.inf)
        return (float(e[i]) if i >= 0 else below), (float(e[i + 1]) if i < self.bins else above)

    def _outside(self, y):
        """The end of a transformed axis' flow bin: the inverse of an infinite transformed value."""
        with np.errstate(all="ignore"):
            return float(self._transform.inverse(np.float64(y)))

    def _flow_index(self, i):
        """Bin i checked against the bins and the flow bins boost-histogram's axis keeps."""
        i = operator.index(i)
        low = -1 if self._underflow else 0
        high = self.bins + 1 if self._overflow else self.bins
        if not low <= i < high:
            raise IndexError(f"bin {i} of an axis of {self.bins} bins (flow bins: underflow {self._underflow}, "
                             f"overflow {self._overflow})")
        return i

    def __len__(self):
        return self.bins

    def __getitem__(self, i):
        return self._core[i]

    def __iter__(self):
        return iter(self._core)

    def __eq__(self, other):
        # The flow-bin flags only shape to_boost's axes (tally counts flow per histogram): not compared.
        def compared(a):
            return {k: v for k, v in a._extras().items() if k not in ("_underflow", "_overflow")}
        return (isinstance(other, Axis) and type(self) is type(other) and self._core == other._core
                and compared(self) == compared(other))

    __hash__ = None  # type: ignore[assignment]  # mutable: labels and metadata may change

    def _extras(self):
        """Everything but the core (compared by ==, saved by pickle)."""
        return {k: v for k, v in self.__dict__.items() if k != "_core"}

    def _options(self):
        """The constructor's keywords that differ from their defaults, for repr."""
        out = []
        if self._circular:
            out.append("circular=True")
        if self._growth:
            out.append("growth=True")
        for flag, on in (("underflow", self._underflow), ("overflow", self._overflow)):
            if not on and not self._circular and self.kind not in ("boolean", "category"):
                out.append(f"{flag}=False")
        for key in ("label", "name"):
            if getattr(self, key) and not (key == "label" and self.label == self.name):
                out.append(f"{key}={getattr(self, key)!r}")
        if self.metadata is not None:
            out.append(f"metadata={self.metadata!r}")
        return out

    def __repr__(self):
        # The core's call (tally.axis.regular(...)) under this class's name, plus the options.
        text, _, comment = repr(self._core).partition("  # ")
        head, _, args = text.partition("(")
        args = args[:-1]
        extra = self._options()
        return (f"tally.axis.{type(self).__name__}(" + ", ".join(([args] if args else []) + extra) + ")"
                + (f"  # {comment}" if comment else ""))

    # The samples as the core bins them (a Source in, a Source out), and how a fill grows the axis.
    def _encode(self, src):
        if not self._circular:
            return src
        xp = _library(src, "a circular axis")
        lo, width = self.lo, self.hi - self.lo
        return Source(lo + xp.remainder(_float(src) - lo, width))

    @property
    def _plain(self):
        """Whether the core bins the samples as they are (no codes, transform, wrap or growth)."""
        return self._bins_as_given and not (self._circular or self._growth or self._transform)

    _bins_as_given = True  # categories and Boolean map their samples to codes
    _transform: typing.Optional["_Transform"] = None

    def _grown(self, src):
        """(the samples as the core bins them, this axis grown to hold them or None)."""
        return self._encode(src), None

    def _rebuilt(self, core):
        """This axis' kind, options and decoration over another core (a slice of it)."""
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        out._core = core
        return out

    def _sliced(self, a, end, k):
        """The axis of bins a..end-1 merged k at a time."""
        if a == 0 and end == self.bins and k == 1:
            return self
        edges = self.edges[a:end + 1:k]
        return Variable(edges, **self._decoration())

    def _decoration(self):
        return dict(label=self.label, name=self.name, metadata=self.metadata)

    def __copy__(self):
        return self._rebuilt(self._core)

    # pickle: the class, the core (through the engine's serialization of a histogram over it) and
    # the extras.
    def __reduce__(self):
        return (_restore, (type(self).__name__, _tally.Hist([self._core]).to_bytes(), self._extras()))


def _restore(cls_name, blob, extras):
    return _decorated(cls_name, _tally.Hist.from_bytes(blob, "auto", "auto").axes[0], extras)


# The extras an axis keeps beyond its core, with their types (pickles are checked against them).
_EXTRAS = {"label": str, "name": str, "metadata": object, "_underflow": bool, "_overflow": bool, "_growth": bool,
           "_circular": bool, "_transform": _Transform, "_range": tuple, "_categories": tuple}


def _decorated(cls_name, core, extras):
    """An axis of class `cls_name` (one of this module's) over `core`, with `extras`."""
    cls = _CLASSES.get(cls_name) if isinstance(cls_name, str) else None
    if cls is None or not isinstance(extras, dict):
        raise ValueError(f"tally.axis: cannot restore an axis of class {cls_name!r}")
    for key, value in extras.items():
        if key not in _EXTRAS or not isinstance(value, _EXTRAS[key]):
            raise ValueError(f"tally.axis: cannot restore an axis with {key!r} = {type(value).__name__}")
    kinds = {Regular: "regular", Variable: "variable"}
    if kinds.get(cls, "integer") != core.kind or ("_categories" in extras) != issubclass(cls, _Category):
        raise ValueError(f"tally.axis: cannot restore a {cls_name} over a {core.kind} axis")
    if issubclass(cls, _Category) and (core != _category_core(len(extras["_categories"])) or any(
            not isinstance(c, str if cls is StrCategory else int) for c in extras["_categories"])):
        raise ValueError(f"tally.axis: the categories of a {cls_name} do not match its axis")
    out = object.__new__(cls)
    out.__dict__.update(extras)
    out._core = core
    return out


class Regular(Axis):
    """An axis of `bins` equal bins over [start, stop].

    The edges are ``numpy.linspace(start, stop, bins + 1)`` rounded to `edge_type`: the edges
    numpy.histogram uses for samples of that type with ``range=(start, stop)``. Bins are
    [e_k, e_k+1), the last one also holds its right edge; samples outside and NaN are dropped
    (counted by the histogram's flow counters). With a `transform`, the bins are equal in the
    transformed values (``transform.log``: equal in log x), and the edges are given back in x.

    Parameters
    ----------
    bins : int
        The number of bins, at least 1.
    start, stop : float
        The first and last edge, finite, ``start < stop``.
    label, name : str, optional
        Keyword only. The axis' label (for plots; defaults to the name) and name.
    metadata : object, optional
        Keyword only. Anything, kept with the axis (compared by ``==``, pickled).
    underflow, overflow : bool, optional
        Keyword only. Whether boost-histogram's axis would keep these flow bins (to_boost
        makes them); tally counts the dropped samples in the histogram's flow counters.
    circular : bool, optional
        Keyword only. Wrap samples around into [start, stop) (angles, for instance).
    transform : optional
        Keyword only. ``tally.axis.transform.log``, ``.sqrt``, ``.Pow(p)`` or
        ``.Function(forward, inverse)``: bins equal in forward(x).
    edge_type : str or numpy float type, optional
        Keyword only. The type the edges are rounded to: 'f64' (default), 'f32', 'f16',
        'bf16', or a numpy float type such as numpy.float32.

    Raises
    ------
    ValueError
        `bins` below 1; `start` not below `stop`; a range that is not finite (also after the
        transform); another edge type; growth (Regular axes do not grow).
    TypeError
        `bins` not an integer.
    OverflowError
        `bins` beyond int64.

    See Also
    --------
    numpy.histogram_bin_edges : The same edges, for ``range=(start, stop)``.

    Examples
    --------
    >>> import numpy as np, tally
    >>> tally.axis.Regular(4, 0, 1, label="x").edges
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    >>> tally.axis.Regular(2, 1, 100, transform=tally.axis.transform.log).edges
    array([  1.,  10., 100.])
    """

    _circular_ok = True

    def __init__(self, bins: int, start: float, stop: float, *, label: str = "", name: str = "",
                 metadata: typing.Any = None, underflow: bool = True, overflow: bool = True, growth: bool = False,
                 circular: bool = False, transform: typing.Optional["_Transform"] = None,
                 edge_type: typing.Any = "f64") -> None:
        if growth:
            raise ValueError("tally.axis.Regular: growth is for Integer and category axes")
        if transform is not None and not isinstance(transform, _Transform):
            raise TypeError("tally.axis.Regular: transform must be one of tally.axis.transform's")
        if transform is not None and circular:
            raise ValueError("tally.axis.Regular: a transformed axis does not wrap around")
        if not isinstance(edge_type, str):
            edge_type = np.dtype(edge_type).name
        if transform is not None:
            self._transform, self._range = transform, (float(start), float(stop))
        lo, hi = float(start), float(stop)
        if transform is not None:
            with np.errstate(all="ignore"):
                lo, hi = (float(transform.forward(np, np.float64(v))) for v in (lo, hi))
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise ValueError(f"tally.axis.Regular: the transformed range ({lo}, {hi}) is not finite")
        core = _tally.Axis.regular(int64_arg(bins, "bins"), lo, hi, edge_type)
        super().__init__(core, label=label, name=name, metadata=metadata, underflow=underflow, overflow=overflow,
                         circular=circular)

    @property
    def transform(self) -> typing.Optional[_Transform]:
        """The transform (None: bins equal in x)."""
        return self._transform

    @property
    def edges(self) -> np.ndarray:
        e = self._core.edges
        if self._transform is None:
            return e
        e = self._transform.inverse(e)
        e[0], e[-1] = self._range  # the ends as given, not as the inverse rounds them
        return e

    @property
    def centers(self) -> np.ndarray:
        c = self._core.centers
        return c if self._transform is None else self._transform.inverse(c)

    @property
    def widths(self) -> np.ndarray:
        return self._core.widths if self._transform is None else np.diff(self.edges)

    @property
    def lo(self) -> float:
        return float(self.edges[0])

    @property
    def hi(self) -> float:
        return float(self.edges[-1])

    def index(self, value):
        if self._transform is not None:
            value = float(self._transform.forward(np, np.float64(value)))
        return self._core.index(float(value))

    def __getitem__(self, i):
        if self._transform is None:
            return self._core[i]
        e = self.edges
        i = operator.index(i)
        i = i + self.bins if i < 0 else i
        if not 0 <= i < self.bins:
            raise IndexError(f"axis index out of range for {self.bins} bins")
        return float(e[i]), float(e[i + 1])

    def __iter__(self):
        return (self[i] for i in range(self.bins))

    def _options(self):
        return super()._options() + ([f"transform={self._transform!r}"] if self._transform is not None else [])

    def __repr__(self):
        if self._transform is None:
            return super().__repr__()
        args = [str(self.bins), repr(float(self.edges[0])), repr(float(self.edges[-1]))] + self._options()
        return f"tally.axis.Regular({', '.join(args)})"

    def _encode(self, src):
        if self._transform is not None:  # samples outside the transform's domain become NaN: dropped
            with np.errstate(all="ignore"):
                src = Source(self._transform.forward(_library(src, "a transform"), _float(src)))
        return super()._encode(src)


def _float(src):
    """The samples as floats (integers as float64), in their library."""
    return src.obj if src.type in FLOAT_TYPES else src.converted(np.float64, "the samples").obj


class Variable(Axis):
    """An axis of arbitrary edges: at least two, non-decreasing, not NaN.

    Bins are [e_k, e_k+1), the last one also holds its right edge; samples outside and NaN are
    dropped, as numpy.histogram bins them with these edges.

    Parameters
    ----------
    edges : array_like, 1-D
        The edges, read as float64 from an array of any library and device: at least two,
        non-decreasing, not NaN (the outer ones may be infinite).
    label, name, metadata, underflow, overflow, circular : optional
        Keyword only, as for :class:`Regular`.

    Raises
    ------
    ValueError
        Edges not 1-D, fewer than two, decreasing, or NaN; growth.

    See Also
    --------
    numpy.histogram : The same bins, with `bins` an array of edges.

    Examples
    --------
    >>> import numpy as np, tally
    >>> axis = tally.axis.Variable([0, 1, 10, np.inf])
    >>> axis.bins, axis.edges
    (3, array([ 0.,  1., 10., inf]))
    """

    _circular_ok = True

    def __init__(self, edges: typing.Any, *, label: str = "", name: str = "", metadata: typing.Any = None,
                 underflow: bool = True, overflow: bool = True, growth: bool = False, circular: bool = False) -> None:
        if growth:
            raise ValueError("tally.axis.Variable: growth is for Integer and category axes")
        e = np.ascontiguousarray(to_host(edges), dtype=np.float64)
        if e.ndim != 1:
            raise ValueError("variable axis: edges must be 1-D")
        super().__init__(_tally.Axis.variable(e), label=label, name=name, metadata=metadata, underflow=underflow,
                         overflow=overflow, circular=circular)


class Integer(Axis):
    """An axis of one bin per integer in [start, stop), as numpy.bincount's bins (0, n).

    Samples outside [start, stop) and NaN are dropped; with ``growth=True`` the axis grows to
    hold every integer a fill brings (NaN still dropped).

    Parameters
    ----------
    start : int
        The first integer with a bin.
    stop : int
        One past the last integer with a bin; ``start < stop``.
    label, name, metadata, underflow, overflow, circular : optional
        Keyword only, as for :class:`Regular`.
    growth : bool, optional
        Keyword only. Grow to hold the samples of each fill.

    Raises
    ------
    ValueError
        `start` not below `stop`.
    TypeError
        `start` or `stop` not an integer.
    OverflowError
        `start` or `stop` beyond int64.

    See Also
    --------
    numpy.bincount : The same bins for ``Integer(0, n)``.

    Examples
    --------
    >>> import numpy as np, tally
    >>> h = tally.Histogram(tally.axis.Integer(0, 2, growth=True))
    >>> h.fill(np.array([0, 1, 1, 4])).values(), h.axes[0]
    (array([1, 2, 0, 0, 1]), tally.axis.Integer(0, 5, growth=True))
    """

    _circular_ok = True

    def __init__(self, start: int, stop: int, *, label: str = "", name: str = "", metadata: typing.Any = None,
                 underflow: bool = True, overflow: bool = True, growth: bool = False, circular: bool = False) -> None:
        core = _tally.Axis.integer(int64_arg(start, "start"), int64_arg(stop, "stop"))
        super().__init__(core, label=label, name=name, metadata=metadata, underflow=underflow, overflow=overflow,
                         growth=growth, circular=circular)

    def index(self, value):
        return self._core.index(float(value))

    def value(self, i):
        """The integer of bin i (i may be -1 or `bins`), as boost-histogram's."""
        return int(self.lo) + operator.index(i)

    def bin(self, i):
        return int(self.lo) + self._flow_index(i)

    def _sliced(self, a, end, k):
        if k == 1 and (a, end) != (0, self.bins):
            return self._rebuilt(_tally.Axis.integer(int(self.lo) + a, int(self.lo) + end))
        return super()._sliced(a, end, k)

    def _grown(self, src):
        src = self._encode(src)
        if not self._growth or src.size == 0:
            return src, None
        xp = _library(src, "a growing axis")
        x = src.obj
        floating = x.is_floating_point() if src.lib == "torch" else x.dtype.kind == "f"
        if floating:
            x = x[~xp.isnan(x)]
            if x.shape[0] == 0:
                return src, None
            x = xp.floor(x)
        lo, hi = int(x.min()), int(x.max()) + 1
        if lo >= self.lo and hi <= self.hi:
            return src, None
        return src, self._rebuilt(_tally.Axis.integer(min(lo, int(self.lo)), max(hi, int(self.hi))))


def _category_core(n):
    """The core of a category axis of n categories: their codes 0..n-1. An axis of none (boost-
    histogram's ``StrCategory([], growth=True)``) has a core of one code no sample gets, as the
    engine's axes have bins: the histogram keeps that placeholder bin empty and out of sight."""
    return _tally.Axis.integer(0, max(n, 1))


class _Category(Axis):
    """A category axis: bin k holds the samples equal to categories[k]; others are dropped
    (counted as overflow, the core's code `bins`, or for an axis of no categories the code
    after its placeholder) or, with growth, appended in the order a fill meets them."""

    _bins_as_given = False
    _categories: tuple

    @staticmethod
    def _checked(categories) -> list:
        """The categories as a list, checked for the class' type."""
        raise NotImplementedError

    @property
    def kind(self) -> str:
        return "category"

    @property
    def bins(self) -> int:
        return len(self._categories)

    @property
    def hi(self) -> float:
        return float(len(self._categories))

    @property
    def _missing(self) -> int:
        """The code of a sample of no category: one past the core's bins (the engine drops it)."""
        return self._core.bins

    @property
    def edges(self) -> np.ndarray:
        return np.arange(len(self._categories) + 1, dtype=np.float64)

    @property
    def centers(self) -> np.ndarray:
        return np.arange(len(self._categories), dtype=np.float64) + 0.5

    @property
    def widths(self) -> np.ndarray:
        return np.ones(len(self._categories))

    def __init__(self, categories: typing.Any, *, label: str = "", name: str = "", metadata: typing.Any = None,
                 growth: bool = False, overflow: bool = True) -> None:
        cats = self._checked(categories)
        if len(set(cats)) != len(cats):
            raise ValueError(f"tally.axis.{type(self).__name__}: categories must be distinct")
        self._categories = tuple(cats)
        super().__init__(_category_core(len(cats)), label=label, name=name, metadata=metadata,
                         underflow=False, overflow=overflow and not growth, growth=growth)

    @property
    def categories(self) -> list:
        """The categories, bin by bin."""
        return list(self._categories)

    def index(self, value):
        try:
            return self._categories.index(self._checked([value])[0])
        except (ValueError, TypeError):
            return len(self._categories)

    def value(self, i):
        return self._categories[operator.index(i)]

    def bin(self, i):
        i = operator.index(i)
        if i == self.bins and self._overflow:
            return None  # boost-histogram's overflow bin holds no category
        if not 0 <= i < self.bins:
            raise IndexError(f"bin {i} of a category axis of {self.bins} categories")
        return self._categories[i]

    def __getitem__(self, i):
        return self._categories[i]

    def __iter__(self):
        return iter(self._categories)

    def __repr__(self):
        return f"tally.axis.{type(self).__name__}([{', '.join(map(repr, self._categories))}]" + \
            "".join(", " + o for o in self._options() if not o.startswith("overflow")) + ")"

    def _with_categories(self, cats):
        out = self._rebuilt(_category_core(len(cats)))
        out._categories = tuple(cats)
        return out

    def _sliced(self, a, end, k):
        if k != 1:
            raise IndexError("a category axis cannot be rebinned")
        return self if (a, end) == (0, self.bins) else self._with_categories(self._categories[a:end])

class IntCategory(_Category):
    """An axis of integer categories, in the order given.

    Bin k counts the samples equal to categories[k]; other samples are dropped (counted as
    overflow), or with ``growth=True`` appended as new categories in the order a fill meets
    them.

    The samples are mapped to their categories' bins in their own library and on their own
    device; a growing fill reads the new categories back to the host.

    Parameters
    ----------
    categories : sequence of int
        The categories, distinct; none makes an axis of no bins (boost-histogram's
        ``IntCategory([], growth=True)``, which the first fill grows; without growth every
        sample is overflow).
    label, name, metadata : optional
        Keyword only, as for :class:`Regular`.
    growth : bool, optional
        Keyword only. Add the categories a fill brings.
    overflow : bool, optional
        Keyword only. Whether boost-histogram's axis would keep an overflow bin (to_boost).

    Examples
    --------
    >>> import numpy as np, tally
    >>> h = tally.Histogram(tally.axis.IntCategory([10, 3], growth=True))
    >>> h.fill(np.array([3, 3, 7, 10])).values(), h.axes[0].categories
    (array([1, 2, 1]), [10, 3, 7])
    """

    @staticmethod
    def _checked(categories):
        cats = np.asarray(to_host(categories)).ravel()
        if cats.size and cats.dtype.kind not in "iub":
            raise TypeError(f"tally.axis.IntCategory: categories must be integers, got {cats.dtype}")
        return [int(c) for c in cats.tolist()]

    def _grown(self, src):
        xp = _library(src, "an IntCategory axis")
        x, n = src.obj, len(self._categories)
        found = None  # with no categories, no sample is of one
        if n:
            cats = np.asarray(self._categories, np.int64)
            order = np.argsort(cats, kind="stable")
            if src.lib == "torch":  # searchsorted takes one dtype: int64, or float64 for float samples
                dtype = xp.float64 if x.is_floating_point() else xp.int64
                x = x.to(dtype)
                ordered, positions = (xp.as_tensor(a, device=x.device) for a in (cats[order].astype(np.float64 if
                                      dtype == xp.float64 else np.int64), order))
                pos = xp.searchsorted(ordered, x).clamp_(0, n - 1)
            else:
                ordered, positions = xp.asarray(cats[order]), xp.asarray(order)
                pos = xp.clip(xp.searchsorted(ordered, x), 0, n - 1)
            found = ordered[pos] == x
        if self._growth:
            missing = to_host(x if found is None else x[~found]).ravel()
            if missing.dtype.kind == "f":  # only integers become categories
                missing = missing[np.isfinite(missing) & (missing == np.floor(missing))]
            if missing.size:
                grown = self._with_categories(self._categories + tuple(int(v) for v in _first_seen(missing)))
                return grown._grown(src)[0], grown
        if found is None:
            return Source(xp.full_like(x, self._missing, dtype=xp.int64)), None
        codes = xp.where(found, positions[pos], n)  # an array for 0-D samples too (a scalar category)
        return Source(codes), None


_COMPARED_CATEGORIES = 32  # up to this many, StrCategory maps strings by comparisons, not a sort


def _first_seen(values):
    """The distinct values, in the order they first appear."""
    uniq, first = np.unique(values, return_index=True)
    return uniq[np.argsort(first, kind="stable")].tolist()


class StrCategory(_Category):
    """An axis of string categories, in the order given.

    Bin k counts the samples equal to categories[k]; other samples are dropped (counted as
    overflow), or with ``growth=True`` appended in the order a fill meets them. The strings
    are mapped to their bins on the host, once per fill; the bins' codes are counted where the
    histogram counts.

    Parameters
    ----------
    categories : str or sequence of str
        The categories, distinct; none makes an axis of no bins, as for :class:`IntCategory`.
    label, name, metadata, growth, overflow : optional
        Keyword only, as for :class:`IntCategory`.

    Examples
    --------
    >>> import tally
    >>> h = tally.Histogram(tally.axis.StrCategory(["mc", "data"]), flow=True)
    >>> h.fill(["data", "mc", "data", "other"]).values(), h.flow
    (array([1, 2]), {'underflow': 0, 'overflow': 1, 'nan': 0})
    """

    @staticmethod
    def _checked(categories):
        cats = [categories] if isinstance(categories, str) else list(categories)
        if any(not isinstance(c, str) for c in cats):
            raise TypeError("tally.axis.StrCategory: categories must be strings")
        return cats

    def index(self, value):
        return self._categories.index(value) if value in self._categories else len(self._categories)

    def _grown(self, src):
        given = np.asarray(src.obj if isinstance(src, Source) else src)
        values = given.ravel()
        if values.size and values.dtype.kind not in "UO":
            raise TypeError(f"tally.axis.StrCategory: samples must be strings, got {values.dtype}")
        values = values.astype(str, copy=False)
        lookup = {c: k for k, c in enumerate(self._categories)}
        n = len(lookup)
        codes = unknown = None
        if n <= _COMPARED_CATEGORIES:  # a comparison pass a category: cheaper than sorting the strings
            codes = np.full(values.shape, n, np.int32)
            for c, k in lookup.items():
                codes[values == c] = k
            unknown = np.flatnonzero(codes == n)
        rest = values if unknown is None else values[unknown]
        # One sort of the rest: its distinct strings, where each first appears (growth's order).
        uniq, first, inverse = np.unique(rest, return_index=True, return_inverse=True)
        grown = None
        if self._growth:
            new = [v for v in uniq[np.argsort(first, kind="stable")].tolist() if v not in lookup]
            if new:
                grown = self._with_categories(self._categories + tuple(new))
                lookup = {c: k for k, c in enumerate(grown._categories)}
        missing = (grown or self)._missing
        rest_codes = np.array([lookup.get(u, missing) for u in uniq.tolist()], np.int32)[inverse.ravel()]
        if codes is None:
            codes = rest_codes
        else:
            codes[unknown] = rest_codes
        return Source(codes.reshape(given.shape), "sample"), grown


class Boolean(Axis):
    """An axis of two bins, False and True.

    A sample counts as ``bool(x)`` (NaN as True, as Python's bool).

    Parameters
    ----------
    label, name, metadata : optional
        Keyword only, as for :class:`Regular`.

    Examples
    --------
    >>> import numpy as np, tally
    >>> tally.Histogram(tally.axis.Boolean()).fill(np.array([True, False, True])).values()
    array([1, 2])
    """

    _bins_as_given = False

    @property
    def kind(self) -> str:
        return "boolean"

    def __init__(self, *, label: str = "", name: str = "", metadata: typing.Any = None) -> None:
        super().__init__(_tally.Axis.integer(0, 2), label=label, name=name, metadata=metadata, underflow=False,
                         overflow=False)

    def index(self, value):
        return int(bool(value))

    def value(self, i):
        """0 or 1, bin i's value (2: the upper edge), as boost-histogram's."""
        i = operator.index(i)
        if i not in (0, 1, 2):
            raise IndexError(f"value {i} of a Boolean axis (bins 0 and 1)")
        return i

    def bin(self, i):
        i = operator.index(i)
        if i not in (0, 1):
            raise IndexError(f"bin {i} of a Boolean axis (bins 0 and 1)")
        return i

    def __getitem__(self, i):
        return bool(self._core[i])

    def __iter__(self):
        return iter((False, True))

    def __repr__(self):
        return "tally.axis.Boolean(" + ", ".join(self._options()) + ")"

    def _sliced(self, a, end, k):
        if (a, end, k) == (0, 2, 1):
            return self
        return Integer(a, end, **self._decoration())

    def _encode(self, src):
        return (src if src.type == "bool" else Source(src.obj != 0, "sample")).bool_as_u8()


class ArrayTuple(tuple):
    """A tuple of arrays, one per axis (boost-histogram's): an attribute or a call applies to each.

    Examples
    --------
    >>> import numpy as np, tally
    >>> t = tally.axis.ArrayTuple([np.array([1.0, 2.0]), np.array([[3.0], [4.0]])])
    >>> t.shape, float(t.sum())  # the sum over both broadcast to (2, 2)
    (((2,), (2, 1)), 20.0)
    """

    __slots__ = ()
    _REDUCTIONS = frozenset(("sum", "any", "all", "min", "max", "prod"))

    def __getattr__(self, name):
        if name.startswith("__"):  # numpy's and copy's protocol probes are not per-array attributes
            raise AttributeError(name)
        if name in self._REDUCTIONS:  # over the arrays broadcast together, as numpy's reductions
            return lambda *args, **kwargs: getattr(np, name)(np.broadcast_arrays(*self), *args, **kwargs)
        return type(self)(getattr(a, name) for a in self)

    def __call__(self, *args, **kwargs):
        return type(self)(a(*args, **kwargs) for a in self)

    def broadcast(self):
        """The arrays broadcast to the histogram's full shape.

        Returns
        -------
        ArrayTuple
            One full array per axis (the sparse grids expanded).

        Examples
        --------
        >>> import tally
        >>> axes = tally.axis.AxesTuple([tally.axis.Regular(2, 0, 1), tally.axis.Integer(0, 3)])
        >>> [c.shape for c in axes.centers.broadcast()]
        [(2, 3), (2, 3)]
        """
        return type(self)(np.broadcast_arrays(*self))


class AxesTuple(tuple):
    """A histogram's axes (``Histogram.axes``), as boost-histogram's AxesTuple: a tuple of axes
    whose `edges`, `centers` and `widths` are sparse grids (``numpy.meshgrid(..., sparse=True,
    indexing="ij")``) that broadcast against the cells, and whose other attributes are tuples
    of each axis' (``h.axes.size``, ``h.axes.label``; setting one sets each axis').

    Parameters
    ----------
    axes : iterable of Axis
        The axes.

    Raises
    ------
    TypeError
        An item that is not a ``tally.axis`` axis.

    Examples
    --------
    >>> import tally
    >>> axes = tally.axis.AxesTuple([tally.axis.Regular(2, 0, 1, label="x"), tally.axis.Integer(0, 3)])
    >>> axes.size, axes.label
    ((2, 3), ('x', ''))
    >>> x, y = axes.centers
    >>> x.shape, y.shape, (x * y).shape
    ((2, 1), (1, 3), (2, 3))
    >>> axes.index(0.7, 2), axes.bin(0, 1)
    ((1, 2), ((0.0, 0.5), 1))
    """

    __slots__ = ()

    def __new__(cls, axes=()):
        out = super().__new__(cls, axes)
        for a in out:
            if not isinstance(a, Axis):
                raise TypeError(f"AxesTuple: tally.axis axes expected, got {type(a).__name__}")
        return out

    def __init__(self, axes=()):  # tuple's __new__ took the axes; this gives the class its signature
        super().__init__()

    def __getnewargs__(self):
        return (tuple(self),)

    @property
    def size(self):
        """The bins of each axis."""
        return tuple(a.size for a in self)

    @property
    def extent(self):
        """The bins of each axis, with the flow bins boost-histogram's would keep."""
        return tuple(a.extent for a in self)

    def _grid(self, what):
        return ArrayTuple(np.meshgrid(*(getattr(a, what) for a in self), sparse=True, indexing="ij"))

    @property
    def edges(self):
        """Each axis' edges, as a sparse grid."""
        return self._grid("edges")

    @property
    def centers(self):
        """Each axis' bin centers, as a sparse grid."""
        return self._grid("centers")

    @property
    def widths(self):
        """Each axis' bin widths, as a sparse grid."""
        return self._grid("widths")

    def _each(self, what, args):
        if len(args) != len(self):
            raise IndexError(f"AxesTuple.{what}: one argument per axis ({len(self)}), got {len(args)}")
        return tuple(getattr(a, what)(x) for a, x in zip(self, args))

    def index(self, *values):
        """The bin of each value on its axis.

        Parameters
        ----------
        *values : object
            One value per axis.

        Returns
        -------
        tuple of int
            As each axis' `index`.

        Examples
        --------
        >>> import tally
        >>> axes = tally.axis.AxesTuple([tally.axis.Regular(4, 0, 1), tally.axis.StrCategory(["a", "b"])])
        >>> axes.index(0.3, "b")
        (1, 1)
        """
        return self._each("index", values)

    def value(self, *indexes):
        """Each axis' `value` of its bin.

        Parameters
        ----------
        *indexes : int
            One bin per axis.

        Returns
        -------
        tuple
            As each axis' `value`.

        Examples
        --------
        >>> import tally
        >>> tally.axis.AxesTuple([tally.axis.Regular(4, 0, 1), tally.axis.Integer(5, 9)]).value(1, 2)
        (0.25, 7)
        """
        return self._each("value", indexes)

    def bin(self, *indexes):
        """Each axis' `bin`.

        Parameters
        ----------
        *indexes : int
            One bin per axis.

        Returns
        -------
        tuple
            As each axis' `bin`.

        Examples
        --------
        >>> import tally
        >>> tally.axis.AxesTuple([tally.axis.Regular(4, 0, 1), tally.axis.Integer(5, 9)]).bin(1, 2)
        ((0.25, 0.5), 7)
        """
        return self._each("bin", indexes)

    def __getitem__(self, item):
        out = super().__getitem__(item)
        return type(self)(out) if isinstance(out, tuple) else out

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return tuple(getattr(a, name) for a in self)

    def __setattr__(self, name, values):
        values = list(values)
        if len(values) != len(self):
            raise ValueError(f"AxesTuple.{name}: one value per axis ({len(self)}), got {len(values)}")
        for a, v in zip(self, values):
            setattr(a, name, v)


def _of(axis):
    """A tally axis of `axis`: itself, or a C++ axis of the engine under its kind's class."""
    if isinstance(axis, Axis):
        return axis
    if not isinstance(axis, _tally.Axis):
        raise TypeError("Histogram: axes must be tally.axis axes (Regular, Variable, Integer, IntCategory, "
                        f"StrCategory, Boolean), got {type(axis).__name__}")
    cls = {"regular": Regular, "variable": Variable, "integer": Integer}[axis.kind]
    out = object.__new__(cls)
    Axis.__init__(out, axis)
    return out


# ---- the lower-case constructors of tally 0.1, the same axes ----

def regular(bins, lo, hi, edge_type="f64"):
    """``Regular(bins, lo, hi, edge_type=edge_type)``: `bins` equal bins over [lo, hi].

    Parameters
    ----------
    bins, lo, hi, edge_type
        As :class:`Regular`'s `bins`, `start`, `stop` and `edge_type`.

    Returns
    -------
    Regular
        The axis.

    Examples
    --------
    >>> import numpy as np, tally
    >>> x = np.array([0.05, 0.1, 0.2], np.float32)
    >>> edges = tally.axis.regular(3, 0, 0.3, np.float32).edges
    >>> np.array_equal(edges, np.histogram_bin_edges(x, 3, range=(0, 0.3)))
    True
    """
    return Regular(bins, lo, hi, edge_type=edge_type)


def variable(edges):
    """``Variable(edges)``: bins between arbitrary edges.

    Parameters
    ----------
    edges : array_like, 1-D
        As :class:`Variable`'s.

    Returns
    -------
    Variable
        The axis.

    Examples
    --------
    >>> import numpy as np, tally
    >>> h = tally.Histogram(tally.axis.variable([0, 1, 10, np.inf]))
    >>> h.fill(np.array([0.5, 1.0, 99.0, -1.0])).values()
    array([1, 1, 1])
    """
    return Variable(edges)


def integer(lo, hi):
    """``Integer(lo, hi)``: one bin per integer in [lo, hi), as numpy.bincount's.

    Parameters
    ----------
    lo, hi : int
        As :class:`Integer`'s `start` and `stop`.

    Returns
    -------
    Integer
        The axis.

    Examples
    --------
    >>> import numpy as np, tally
    >>> x = np.array([0, 1, 1, 4])
    >>> h = tally.Histogram(tally.axis.integer(0, 5))
    >>> h.fill(x).values(), np.bincount(x)
    (array([1, 2, 0, 0, 1]), array([1, 2, 0, 0, 1]))
    """
    return Integer(lo, hi)


_CLASSES = {c.__name__: c for c in (Regular, Variable, Integer, IntCategory, StrCategory, Boolean)}

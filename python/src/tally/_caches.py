"""The package's caches, listed in one place: what each keeps, by which key, how many at most and
how it is emptied when full. tally.caches() describes them with their sizes now;
tally.clear_caches() empties them all (later calls make again what they need). The C++ side's
kept tables and edges of each CUDA device (up to 64 MiB a device, for the process's lifetime)
are not among them."""

_caches = []


def register(name, keeps, key, bound, size, clear):
    """Adds a cache: `size()` its entries now, `clear()` empties it."""
    _caches.append((name, keeps, key, bound, size, clear))


def caches():
    """The package's caches, described with their sizes now.

    What each keeps, by which key, how many at most and how it is emptied when full. The C++
    side's kept tables and edges of each CUDA device (up to 64 MiB a device, for the process's
    lifetime) are not among them.

    Returns
    -------
    list of dict
        One dict per cache: 'name', 'keeps' (what), 'key', 'bound' (and eviction) and
        'size' (entries now).

    See Also
    --------
    clear_caches : Empty them all.

    Examples
    --------
    >>> import tally
    >>> sorted(tally.caches()[0])
    ['bound', 'keeps', 'key', 'name', 'size']
    >>> "regular edges" in [c["name"] for c in tally.caches()]
    True
    """
    return [dict(name=name, keeps=keeps, key=key, bound=bound, size=size())
            for name, keeps, key, bound, size, _ in _caches]


def clear_caches():
    """Empty every cache of the package (:func:`caches` lists them).

    Later calls make again what they need.

    Returns
    -------
    None

    See Also
    --------
    caches : The caches and their sizes.

    Examples
    --------
    >>> import numpy as np, tally
    >>> _ = tally.histogram(np.array([1.0, 2.0, 4.0]), 3)
    >>> tally.clear_caches()
    >>> {c["name"]: c["size"] for c in tally.caches()}["regular edges"]
    0
    >>> _ = tally.histogram(np.array([1.0, 2.0, 4.0]), 3)
    >>> {c["name"]: c["size"] for c in tally.caches()}["regular edges"]
    1
    """
    for *_, clear in _caches:
        clear()

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
    """The package's caches as a list of dicts: name, keeps (what), key, bound (and eviction),
    size (entries now)."""
    return [dict(name=name, keeps=keeps, key=key, bound=bound, size=size())
            for name, keeps, key, bound, size, _ in _caches]


def clear_caches():
    """Empties every cache of the package (tally.caches() lists them)."""
    for *_, clear in _caches:
        clear()

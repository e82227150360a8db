"""Shared by the Dask test files with cupy chunks: a record of the array types of every chunk
tally.dask fills, and dask arrays of cupy chunks. Imported after the files' Dask skips.

The tasks are pickled even on an in-process cluster; a module-level function pickles by
reference, so the one the worker calls is this module's and appends to its list."""

import dask.array as da
import numpy as np
import pytest

import tally.dask as td

_SEEN = []
_fill_chunk = td._fill_chunk


def _recording_fill_chunk(*args):
    # (what the chunk fills, two flags, then the chunk's blocks), whichever fill made the task
    _SEEN.extend(type(b).__module__.split(".")[0] for b in args[3:])
    return _fill_chunk(*args)


@pytest.fixture
def on_gpu(monkeypatch):
    """The module names of the array types of every chunk that tally.dask fills during the test."""
    _SEEN.clear()
    monkeypatch.setattr(td, "_fill_chunk", _recording_fill_chunk)
    return _SEEN


def gpu_chunks(cupy, a, rng, pieces):
    """A dask array of cupy chunks of random, uneven sizes holding `a`."""
    cuts = np.sort(rng.integers(0, a.size + 1, pieces - 1))
    sizes = tuple(int(s) for s in np.diff(np.concatenate([[0], cuts, [a.size]])))
    return da.from_array(cupy.asarray(a), chunks=(sizes,), asarray=False)

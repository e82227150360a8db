"""tally's type names (u8 .. f64, bf16, bool) against numpy's, torch's and cupy's dtypes: the
package's view of the core's one table of sample types (tally::sample_types), which the modules
share (it imports nothing of the package but the extension)."""

import numpy as np

from . import _caches, _tally

_TABLE = _tally.sample_types()  # (tally name, numpy name, bytes, floating)
# tally's sample type names by numpy dtype name (bool is read as u8 where numpy allows it).
_NAMES = {numpy_name: name for name, numpy_name, _, _ in _TABLE}
_NAMES["bool"] = "bool"
# Bytes of each type (bool's one byte included).
SIZES = {name: size for name, _, size, _ in _TABLE}
SIZES["bool"] = 1
# The same by native numpy dtype (a dtype hashes faster than its name is built).
_NATIVE = {np.dtype(name): t for name, t in _NAMES.items() if name != "bfloat16"}
FLOAT_TYPES = tuple(name for name, _, _, floating in _TABLE if floating)
# The types whose minimum and maximum tally's reduction finds (tally::reduce: all but f64).
EXTREME_TYPES = ("u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "bf16", "f32")
# numpy dtype names by tally sample type (the inverse of _NAMES).
NUMPY_NAMES = {t: name for name, t in _NAMES.items()}


_BY_DTYPE = {}  # torch, numpy and cupy dtype objects -> tally's type name (or None)
_caches.register("dtype names", "tally's type name of each dtype object seen", "a torch, numpy or cupy dtype",
                 "one a dtype", lambda: len(_BY_DTYPE), _BY_DTYPE.clear)


def type_of_dtype(dtype):
    """tally's type name of a torch dtype or a numpy (cupy) dtype object, or None; kept per
    dtype object (building its name costs more than the look-up)."""
    try:
        return _BY_DTYPE[dtype]
    except KeyError:
        t = _BY_DTYPE[dtype] = _NAMES.get(str(dtype).replace("torch.", ""))
        return t

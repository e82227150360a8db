"""tally's type names (u8 .. f64, bf16, bool) against numpy's, torch's and cupy's dtypes: the one
table that the package's modules share (it imports nothing of the package)."""

import numpy as np

# tally's sample type names by numpy dtype name (bool is read as u8 where numpy allows it).
_NAMES = {
    "uint8": "u8", "int8": "i8", "uint16": "u16", "int16": "i16", "uint32": "u32",
    "int32": "i32", "uint64": "u64", "int64": "i64", "float16": "f16", "bfloat16": "bf16",
    "float32": "f32", "float64": "f64", "bool": "bool",
}
# The same by native numpy dtype (a dtype hashes faster than its name is built).
_NATIVE = {np.dtype(name): t for name, t in _NAMES.items() if name != "bfloat16"}
FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
# The types whose minimum and maximum tally's reduction finds (tally::reduce: all but f64).
EXTREME_TYPES = ("u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "bf16", "f32")
# numpy dtype names by tally sample type (the inverse of _NAMES).
NUMPY_NAMES = {t: name for name, t in _NAMES.items()}


_BY_DTYPE = {}  # torch, numpy and cupy dtype objects -> tally's type name (or None)


def type_of_dtype(dtype):
    """tally's type name of a torch dtype or a numpy (cupy) dtype object, or None; kept per
    dtype object (building its name costs more than the look-up)."""
    try:
        return _BY_DTYPE[dtype]
    except KeyError:
        t = _BY_DTYPE[dtype] = _NAMES.get(str(dtype).replace("torch.", ""))
        return t

"""tally.ElementwiseKernel and tally.ReductionKernel: kernels written by the user as CuPy's are,
compiled at run time with NVRTC for the input's device and launched on the caller's current
torch/cupy stream; and tally.RawKernel and tally.RawModule (raw): the user's whole CUDA source,
launched with the user's grid, block and arguments. A Python callable in place of the C source is evaluated with numpy instead
(the host fallback). The supported subset of CuPy's API is in docs/patterns.md ("User-defined
kernels"); everything else raises a clear error.

How a call runs: the parameters were parsed when the kernel was made (parse); the call binds the
arguments to them (bind: type placeholders such as T from the arrays, then from Python
scalars), broadcasts the non-raw arrays, allocates the missing outputs in the inputs' library,
merges the dimensions that every array walks the same way, generates the CUDA source for the
bound types (codegen, prelude.cuh in front), and launches it (launch). Sources are kept per
bound signature by each kernel and compiled once per architecture by the extension. What a call
launches, as far as its arguments' types, shapes and strides decide it, is kept too (launch.Plan,
by launch.layout_key): a later call with arguments alike binds nothing and only reads its
arrays' addresses. elementwise and reduction hold the two kernel classes.
"""

from .bind import Bound, merge_dims  # noqa: F401 (the tests read them)
from .elementwise import ElementwiseKernel
from .parse import reads_before_writing  # noqa: F401 (the tests read it)
from .raw import RawKernel, RawModule
from .reduction import ReductionKernel

__all__ = ["ElementwiseKernel", "RawKernel", "RawModule", "ReductionKernel"]

#!/usr/bin/env python3
"""The Python overhead of a user-defined kernel's call, on any machine (no GPU needed): calls of
tally.ElementwiseKernel and tally.ReductionKernel on the tests' stand-in for cupy arrays
(python/tests/cupy_stand_in.py: numpy memory), with the extension's compile and launch entry
points replaced, timed back to back and then profiled. What it leaves out is the GPU side: the
allocator, the stream, the launch itself.

    PYTHONPATH=build-cpu/python python3 bench/user_kernels_overhead.py [--calls 2000] [--top 12]
"""

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python" / "tests"))
import cupy_stand_in  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--top", type=int, default=12)
    args = p.parse_args()
    allocator = cupy_stand_in.Allocator()
    sys.modules["cupy"] = cupy_stand_in.module(allocator)
    import tally
    from tally import _tally, _user_kernels
    cupy_stand_in.stub_runtime(setattr, _user_kernels, _tally, [])
    _tally.runtime_launch = lambda *a: None  # record nothing: only the package's own work is timed

    squared_diff = tally.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")
    l2norm = tally.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    rng = np.random.default_rng(1)
    x, y = (cupy_stand_in.StandInArray(rng.random(1 << 20).astype(np.float32)) for _ in range(2))
    # Each call's new arrays come from the stand-in's cache (as from cupy's memory pool).
    for name, call in [("ElementwiseKernel squared_diff(x, y)", lambda: (allocator.new_call(), squared_diff(x, y))),
                       ("ReductionKernel l2norm(x)", lambda: (allocator.new_call(), l2norm(x)))]:
        for _ in range(50):
            call()
        t = time.perf_counter()
        for _ in range(args.calls):
            call()
        print(f"{name}: {(time.perf_counter() - t) / args.calls * 1e6:.1f} us a call (Python alone)")
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.calls):
            call()
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()

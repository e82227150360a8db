#!/usr/bin/env python3
"""Where the fixed cost of a small call goes: cProfile over back-to-back calls of tally's
functions on a 16-sample CUDA tensor (and torch's own calls beside them for scale); then, without
a profile, the same calls on cupy arrays, the patterns' sigmoid and a user-defined kernel against
torch's and cupy's.

    python3 bench/call_profile.py [--calls 2000] [--top 25]

Prints microseconds a call (wall clock, the stream synchronised at the end), the extension's
one-shot fill alone (its axis made once: the C++ floor of a call, nanobind's conversions
included) and, per call, the functions that take the most time of their own."""

import argparse
import cProfile
import pstats
import time

import numpy as np
import torch

import tally
from tally import _tally


def per_call_us(fn, calls):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / calls * 1e6


def other_calls(x):
    """The patterns' sigmoid and a user-defined kernel on x (torch), and the histogram calls and
    the same kernel on cupy arrays where cupy is installed, each beside its library's own."""
    squared_diff = ("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")
    ours = tally.ElementwiseKernel(*squared_diff)
    f32 = x.float()
    calls = [("tally.sigmoid(x_f32)", lambda: tally.sigmoid(f32)),
             ("torch.sigmoid(x_f32)", lambda: torch.sigmoid(f32)),
             ("tally.ElementwiseKernel squared_diff(x_f32, x_f32)", lambda: ours(f32, f32))]
    try:
        import cupy
    except ImportError:
        return calls
    c, ci = cupy.asarray(x.cpu().numpy()), cupy.arange(16) % 5
    c32 = c.astype(cupy.float32)
    theirs = cupy.ElementwiseKernel(*squared_diff)
    return calls + [
        ("cupy: tally.histogram(c, 16, (0, 1))", lambda: tally.histogram(c, 16, (0, 1))),
        ("cupy.histogram(c, 16, (0, 1))", lambda: cupy.histogram(c, 16, (0, 1))),
        ("cupy: tally.bincount(ci)", lambda: tally.bincount(ci)),
        ("cupy.bincount(ci)", lambda: cupy.bincount(ci)),
        ("cupy: tally.ElementwiseKernel squared_diff", lambda: ours(c32, c32)),
        ("cupy.ElementwiseKernel squared_diff", lambda: theirs(c32, c32))]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args()
    x = torch.from_numpy(np.random.default_rng(2).random(16)).cuda()
    xi = torch.from_numpy(np.arange(16, dtype=np.int64) % 5).cuda()
    axis = tally.axis.regular(16, 0, 1)
    stream = torch.cuda.current_stream().cuda_stream
    calls = [("tally.histogram(x, 16, (0, 1))", lambda: tally.histogram(x, 16, (0, 1))),
             ("tally.histc(x, 16, 0, 1)", lambda: tally.histc(x, 16, 0, 1)),
             ("tally.bincount(xi)", lambda: tally.bincount(xi)),
             ("tally.bincount(xi, minlength=16)", lambda: tally.bincount(xi, minlength=16)),
             ("torch.histc(x, 16, 0, 1)", lambda: torch.histc(x, 16, 0, 1)),
             ("torch.bincount(xi)", lambda: torch.bincount(xi)),
             ("_tally.fill_on_stream alone (C++ floor, DLPack input)",
              lambda: _tally.fill_on_stream([axis], [x], None, "automatic", stream, x.device.index, False)),
             ("_tally.fill_address alone (C++ floor, address input)",
              lambda: _tally.fill_address([axis], x.data_ptr(), 16, "f64", "automatic", stream, x.device.index))]
    calls += other_calls(x)
    for name, fn in calls:
        print(f"{name}: {per_call_us(fn, args.calls):.1f} us a call")
    for name, fn in calls[:4]:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.calls):
            fn()
        torch.cuda.synchronize()
        profile.disable()
        print(f"\n==== {name}: the {args.top} functions with the most time of their own ({args.calls} calls)")
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Where the fixed cost of a small call goes: cProfile over back-to-back calls of tally's
functions on a 16-sample CUDA tensor (and torch's own calls beside them for scale), the same calls
on cupy arrays, the patterns' sigmoid and a user-defined kernel against torch's and cupy's; then
the torch and extension operations those calls are made of, each alone.

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
    """The patterns' sigmoid and sum and a user-defined kernel on x (torch), and the histogram calls and
    the same kernel on cupy arrays where cupy is installed, each beside its library's own."""
    squared_diff = ("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")
    ours = tally.ElementwiseKernel(*squared_diff)
    f32 = x.float()
    calls = [("tally.sigmoid(x_f32)", lambda: tally.sigmoid(f32)),
             ("torch.sigmoid(x_f32)", lambda: torch.sigmoid(f32)),
             ("tally.sum(x_f32)", lambda: tally.sum(f32)),
             ("torch.sum(x_f32)", lambda: torch.sum(f32)),
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


def primitives(x):
    """The torch and extension operations a small call is made of, each timed alone."""
    f32, xi = x.float(), x.long()
    device, kind = x.device, {"dtype": torch.float32, "device": torch.device("cuda", x.device.index)}
    stream = torch._C._cuda_getCurrentRawStream(x.device.index)
    address = f32.data_ptr()
    axis = tally.axis.regular(16, 0, 1)._core  # the extension takes the core axis
    capsule_fill = lambda: _tally.fill_on_stream([axis], [x], None, "automatic", stream, device.index, False)
    return [
        ("torch.empty(16, dtype=, device='cuda:0')", lambda: torch.empty(16, dtype=torch.float32, device=f"cuda:{device.index}")),
        ("torch.empty(16, dtype=, device=torch.device)", lambda: torch.empty(16, **kind)),
        ("torch.empty_like(x)", lambda: torch.empty_like(f32)),
        ("torch.empty_like(x, memory_format=torch.contiguous_format)",
         lambda: torch.empty_like(f32, memory_format=torch.contiguous_format)),
        ("torch.zeros(16, dtype=int64, device=)", lambda: torch.zeros(16, dtype=torch.int64, device=device)),
        ("x.clone()", lambda: f32.clone()),
        ("counts.to(float32)", lambda: xi.to(torch.float32)),
        ("torch.from_dlpack(the extension's fill)", lambda: torch.from_dlpack(capsule_fill())),
        ("x.data_ptr() + numel() + is_contiguous() + dtype + get_device()",
         lambda: (f32.data_ptr(), f32.numel(), f32.is_contiguous(), f32.dtype, f32.get_device())),
        ("torch._C._cuda_getDevice() + _cuda_getCurrentRawStream()",
         lambda: (torch._C._cuda_getDevice(), torch._C._cuda_getCurrentRawStream(device.index))),
        ("_tally.unary_address('sigmoid', 16 f32) alone", lambda: _tally.unary_address("sigmoid", "f32", address, address, 16, stream)),
    ]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args()
    x = torch.from_numpy(np.random.default_rng(2).random(16)).cuda()
    xi = torch.from_numpy(np.arange(16, dtype=np.int64) % 5).cuda()
    axis = tally.axis.regular(16, 0, 1)._core  # the extension takes the core axis
    stream = torch.cuda.current_stream().cuda_stream

    def allocate(n, type_name):  # the package's allocator: a torch array and its address
        out = torch.empty(n, dtype=torch.int64, device=x.device)
        return out, out.data_ptr()

    calls = [("tally.histogram(x, 16, (0, 1))", lambda: tally.histogram(x, 16, (0, 1))),
             ("tally.histc(x, 16, 0, 1)", lambda: tally.histc(x, 16, 0, 1)),
             ("tally.bincount(xi)", lambda: tally.bincount(xi)),
             ("tally.bincount(xi, minlength=16)", lambda: tally.bincount(xi, minlength=16)),
             ("torch.histc(x, 16, 0, 1)", lambda: torch.histc(x, 16, 0, 1)),
             ("torch.bincount(xi)", lambda: torch.bincount(xi)),
             ("_tally.fill_on_stream alone (C++ floor, DLPack input)",
              lambda: _tally.fill_on_stream([axis], [x], None, "automatic", stream, x.device.index, False)),
             ("_tally.fill_once alone (C++ floor, address input)",
              lambda: _tally.fill_once([axis], x.data_ptr(), 16, "f64", "automatic", stream, x.device.index, False, 0,
                                       "", "i64", allocate, torch.from_dlpack))]
    others = other_calls(x)
    calls += others
    for name, fn in calls:
        print(f"{name}: {per_call_us(fn, args.calls):.1f} us a call")
    print("\n==== the operations a call is made of, each alone")
    for name, fn in primitives(x):
        print(f"{name}: {per_call_us(fn, args.calls):.1f} us a call")
    for name, fn in calls[:4] + [others[0], others[2], others[4]]:
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

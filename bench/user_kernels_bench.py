"""User-defined kernels: tally.ElementwiseKernel and tally.ReductionKernel against the same
kernels in cupy (CUDA events after warm-up), on cupy arrays. Prints GB/s (bytes the kernel must
move over the median time) and writes JSON.

    python bench/user_kernels_bench.py --log2n 24 28 --out bench/results/user-kernels.json
"""

import argparse
import json
import platform
import statistics
import sys

import numpy as np

ELEMENTWISE = ("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")
REDUCTION = ("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--log2n", type=int, nargs="+", default=[20, 24, 28], help="element counts, as powers of two")
    p.add_argument("--dtype", choices=["float16", "float32", "float64"], default="float32")
    p.add_argument("--repeats", type=int, default=20, help="timed calls per case (the median is reported)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--out", help="JSON file for the results")
    args = p.parse_args(argv)
    if any(k < 1 or k > 31 for k in args.log2n) or args.repeats < 1 or args.warmup < 0:
        p.error("--log2n takes 1..31, --repeats >= 1, --warmup >= 0")
    return args


def time_ms(cupy, call, repeats, warmup):
    """The median of `repeats` timings (CUDA events on the current stream) after `warmup` calls."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        call()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def main(argv=None):
    args = parse_args(argv)
    import cupy
    import tally

    kernels = {
        "elementwise squared_diff": (tally.ElementwiseKernel(*ELEMENTWISE), cupy.ElementwiseKernel(*ELEMENTWISE), 3),
        "reduction l2norm": (tally.ReductionKernel(*REDUCTION), cupy.ReductionKernel(*REDUCTION), 1),
    }
    itemsize = np.dtype(args.dtype).itemsize
    rng = np.random.default_rng(1)
    rows = []
    for log2n in args.log2n:
        n = 1 << log2n
        x = cupy.asarray(rng.uniform(-1, 1, n).astype(args.dtype))
        y = cupy.asarray(rng.uniform(-1, 1, n).astype(args.dtype))
        for case, (ours, theirs, arrays) in kernels.items():
            inputs = (x, y) if arrays == 3 else (x,)
            # The elementwise kernel reads two arrays and writes one; the reduction reads one.
            nbytes = arrays * n * itemsize
            row = {"case": case, "dtype": args.dtype, "n": n}
            for who, kernel in (("tally", ours), ("cupy", theirs)):
                ms = time_ms(cupy, lambda: kernel(*inputs), args.repeats, args.warmup)
                row[f"{who}_ms"] = ms
                row[f"{who}_gbps"] = nbytes / ms / 1e6
            row["tally_over_cupy"] = row["cupy_ms"] / row["tally_ms"]
            rows.append(row)
            print(f"{case:26s} {args.dtype} 2^{log2n}: tally {row['tally_gbps']:8.1f} GB/s  "
                  f"cupy {row['cupy_gbps']:8.1f} GB/s  ({row['tally_over_cupy']:.2f}x)")
    if args.out:
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        with open(args.out, "w") as f:
            json.dump({"device": props["name"].decode(), "python": platform.python_version(),
                       "tally": tally.__version__, "cupy": cupy.__version__, "results": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

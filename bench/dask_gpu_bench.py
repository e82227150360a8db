#!/usr/bin/env python3
"""tally.dask on a GPU worker: data in cupy chunks persisted on one Dask worker (one process for
the GPU, tasks on its threads, as dask-cuda runs it), histogrammed by tally.dask and by
dask.array.histogram (which calls cupy.histogram on each chunk), and by one tally call on the
whole cupy array: what the scheduler's chunk cost adds on top of tally's own speed.

Times are medians of --repeats computations after a warm-up (wall clock: a Dask computation ends
on the host). Writes JSON (argv[1]) and prints G samples/s and each row's fraction of the one-call
speed.

usage: PYTHONPATH=build-gpu/python python bench/dask_gpu_bench.py out.json [--samples 2**28] [--chunk 2**24]
needs: cupy, dask, distributed
"""
import argparse
import json

from dask_bench import timed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--samples", type=lambda s: int(eval(s, {})), default=2**28)
    parser.add_argument("--chunk", type=lambda s: int(eval(s, {})), default=2**24)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import cupy
    import dask.array as da
    import distributed

    import tally
    import tally.dask as td

    n = args.samples
    sync = cupy.cuda.runtime.deviceSynchronize
    rng = cupy.random.default_rng(1)
    x_all = rng.random(n, dtype=cupy.float32)
    w_all = rng.random(n, dtype=cupy.float32)
    k_all = rng.integers(0, 4096, n, dtype=cupy.int32)
    rows = []

    def row(workload, who, seconds):
        rows.append({"workload": workload, "who": who, "ms": seconds * 1e3, "gsamples_per_s": n / seconds / 1e9})

    with distributed.LocalCluster(n_workers=1, threads_per_worker=4, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        x = da.from_array(x_all, chunks=args.chunk, asarray=False).persist()
        w = da.from_array(w_all, chunks=args.chunk, asarray=False).persist()
        k = da.from_array(k_all, chunks=args.chunk, asarray=False).persist()
        distributed.wait([x, w, k])

        name = "f32, 256 bins, range (0, 1)"
        row(name, "tally.histogram (one call)",
            timed(lambda: tally.histogram(x_all, bins=256, range=(0, 1)), args.repeats, sync))
        row(name, "tally.dask.histogram",
            timed(lambda: td.histogram(x, bins=256, range=(0, 1))[0].compute(), args.repeats, sync))
        row(name, "dask.array.histogram (cupy chunks)",
            timed(lambda: da.histogram(x, bins=256, range=(0, 1))[0].compute(), args.repeats, sync))

        name = "f32 + f32 weights, 256 bins"
        row(name, "tally.histogram (one call)",
            timed(lambda: tally.histogram(x_all, bins=256, range=(0, 1), weights=w_all), args.repeats, sync))
        row(name, "tally.dask.histogram",
            timed(lambda: td.histogram(x, bins=256, range=(0, 1), weights=w)[0].compute(), args.repeats, sync))

        name = "i32 bincount, 4096 bins"
        row(name, "tally.bincount (one call)",
            timed(lambda: tally.bincount(k_all, minlength=4096), args.repeats, sync))
        row(name, "tally.dask.bincount",
            timed(lambda: td.bincount(k, minlength=4096).compute(), args.repeats, sync))

    one_call = {}
    for r in rows:
        one_call.setdefault(r["workload"], r["gsamples_per_s"])
        r["of_one_call"] = r["gsamples_per_s"] / one_call[r["workload"]]
        print(f'{r["workload"]:30} {r["who"]:38} {r["ms"]:9.2f} ms {r["gsamples_per_s"]:8.2f} G samples/s '
              f'{r["of_one_call"]:6.2f} of one call')
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    with open(args.out, "w") as f:
        json.dump({"device": device, "samples": n, "chunk": args.chunk, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""tally.dask against dask-histogram (boost-histogram) and dask.array.histogram on one
process-based LocalCluster (one single-threaded worker a core), and tally alone in one process on
the same data in memory: what the scheduler's chunk cost adds on top of tally's own speed.

Each case runs after a warm-up on data persisted in the workers' memory; the time is the median of
--repeats computations. Writes JSON (argv[1]) and prints a table with samples/s per core and each
row's ratio to dask-histogram (the target: tally >= 3x per core).

usage: PYTHONPATH=build/python python bench/dask_bench.py out.json [--samples 2**26] [--chunk 2**22]
needs: dask, distributed, dask-histogram (pip install dask-histogram distributed)
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import time

import numpy as np


def timed(fn, repeats, sync=lambda: None):
    """The median wall time of fn() over `repeats` runs after a warm-up (the first import of
    everything on the workers); sync() waits for work fn() left on a device."""
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--samples", type=lambda s: int(eval(s, {})), default=2**26)
    parser.add_argument("--chunk", type=lambda s: int(eval(s, {})), default=2**22)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import dask
    import dask.array as da
    import dask_histogram
    import distributed

    import tally
    import tally.dask as td

    n, workers = args.samples, args.workers
    rows = []
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        x = da.random.default_rng(1).random(n, chunks=args.chunk).persist()
        w = da.random.default_rng(2).random(n, chunks=args.chunk).persist()
        y = da.random.default_rng(3).normal(0.5, 0.2, n, chunks=args.chunk).persist()
        distributed.wait([x, w, y])
        host = {"x": x.compute(), "w": w.compute(), "y": y.compute()}

        cases = {
            "f64, 256 bins": dict(tally=lambda: td.histogram(x, 256, (0, 1))[0],
                                  dh=lambda: dask_histogram.histogram(x, 256, (0, 1))[0],
                                  dask=lambda: da.histogram(x, 256, (0, 1))[0],
                                  alone=lambda: tally.histogram(host["x"], 256, (0, 1))[0]),
            "f64, 65536 bins": dict(tally=lambda: td.histogram(x, 65536, (0, 1))[0],
                                    dh=lambda: dask_histogram.histogram(x, 65536, (0, 1))[0],
                                    dask=lambda: da.histogram(x, 65536, (0, 1))[0],
                                    alone=lambda: tally.histogram(host["x"], 65536, (0, 1))[0]),
            "f64 + f64 weights, 256 bins": dict(
                tally=lambda: td.histogram(x, 256, (0, 1), weights=w)[0],
                dh=lambda: dask_histogram.histogram(x, 256, (0, 1), weights=w)[0],
                dask=lambda: da.histogram(x, 256, (0, 1), weights=w)[0],
                alone=lambda: tally.histogram(host["x"], 256, (0, 1), weights=host["w"])[0]),
            "2-D f64, 64 x 64 bins": dict(
                tally=lambda: td.histogram2d(x, y, 64, [(0, 1), (0, 1)])[0],
                dh=lambda: dask_histogram.histogramdd((x, y), (64, 64), [(0, 1), (0, 1)])[0],
                dask=lambda: da.histogramdd((x, y), (64, 64), [(0, 1), (0, 1)])[0],
                alone=lambda: tally.histogram2d(host["x"], host["y"], 64, [(0, 1), (0, 1)])[0]),
        }
        for case, makers in cases.items():
            want = None
            for who in ("tally", "dh", "dask", "alone"):
                make = makers[who]
                compute = (lambda: make()) if who == "alone" else (lambda: make().compute())
                got = np.asarray(compute())
                # Every contender counts the same samples: equal counts (sums within rounding).
                if want is None:
                    want = got
                elif not np.allclose(got, want, rtol=1e-9):
                    raise SystemExit(f"dask_bench: {who} disagrees with tally on {case}")
                seconds = timed(compute, args.repeats)
                rows.append(dict(case=case, who={"tally": "tally.dask", "dh": "dask-histogram",
                                                 "dask": "dask.array.histogram",
                                                 "alone": "tally, one process"}[who],
                                 seconds=seconds, samples_per_s=n / seconds,
                                 samples_per_s_per_core=n / seconds / workers))

    commit = os.environ.get("TALLY_COMMIT") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    meta = dict(date=datetime.date.today().isoformat(), commit=commit, machine=platform.node(),
                cpu=platform.processor() or platform.machine(), cores=os.cpu_count(), workers=workers,
                samples=n, chunk=args.chunk, versions=dict(
                    tally=tally.__version__, dask=dask.__version__, distributed=distributed.__version__,
                    dask_histogram=dask_histogram.__version__, numpy=np.__version__))
    print(f"{workers} workers x 1 thread, {n} samples in chunks of {args.chunk}; "
          "M samples/s per core, and the ratio to dask-histogram")
    print(f"{'case':30} {'who':24} {'ms':>9} {'M/s/core':>9} {'vs dh':>7}")
    for r in rows:
        dh = next(q for q in rows if q["case"] == r["case"] and q["who"] == "dask-histogram")
        r["vs_dask_histogram"] = dh["seconds"] / r["seconds"]
        print(f"{r['case']:30} {r['who']:24} {r['seconds'] * 1e3:9.1f} "
              f"{r['samples_per_s_per_core'] / 1e6:9.1f} {r['vs_dask_histogram']:6.2f}x")
    met = all(r["vs_dask_histogram"] >= 3 for r in rows if r["who"] == "tally.dask")
    print(f"target (tally.dask >= 3x dask-histogram per core on every case): {'met' if met else 'missed'}")
    with open(args.out, "w") as f:
        json.dump(dict(meta=meta, rows=rows, target_met=met), f, indent=1)


if __name__ == "__main__":
    main()

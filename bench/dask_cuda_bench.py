#!/usr/bin/env python3
"""tally.dask on dask_cuda.LocalCUDACluster: one worker a GPU, data made on the workers as cupy
chunks (persisted, so each GPU holds its share), histogrammed by tally.dask and by
dask.array.histogram (cupy.histogram on each chunk). Run with 1 worker (the first GPU) and with
one worker on every visible GPU: the ratio is what more GPUs give a Dask user.

Times are medians of --repeats computations after a warm-up (wall clock: a Dask computation ends
on the host). Writes JSON (argv[1]) and prints G samples/s and each row's speed-up over 1 GPU.

usage: PYTHONPATH=build-gpu/python python bench/dask_cuda_bench.py out.json [--samples 2**31] [--chunk 2**26]
needs: cupy, dask, distributed, dask_cuda; 2 or more GPUs for the scaling rows
"""
import argparse
import json

from dask_bench import timed


def tree_sum(level, split_every=8):
    """tally.dask's tree of additions, over delayed values."""
    import dask
    while len(level) > 1:
        level = [dask.delayed(sum)(level[i:i + split_every]) for i in range(0, len(level), split_every)]
    return level[0]


def measure(workers, args):
    """The rows of one cluster of `workers` GPUs (the first ones)."""
    import cupy
    import dask
    import dask.array as da
    import distributed
    from dask_cuda import LocalCUDACluster

    import tally.dask as td

    n = args.samples
    rows = []
    devices = ",".join(str(d) for d in range(workers))
    with LocalCUDACluster(CUDA_VISIBLE_DEVICES=devices, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        rs = da.random.RandomState(RandomState=cupy.random.RandomState)
        x = rs.random_sample(n, chunks=args.chunk).astype(cupy.float32).persist()
        distributed.wait(x)
        # Weights made from x where its chunks lie, so that a chunk and its weights share a GPU
        # (separately made arrays may land on different workers, whose fill then moves a chunk).
        w = (1 - x).persist()
        k = rs.randint(0, 4096, n, chunks=args.chunk, dtype=cupy.int32).persist()
        distributed.wait([x, w, k])
        # Every chunk on a GPU: the workers hold cupy arrays, spread over all of them.
        holders = client.run(lambda dask_worker: sum(
            type(v).__module__.startswith("cupy") for v in dask_worker.data.values()))
        assert sum(holders.values()) == 3 * x.numblocks[0] and min(holders.values()) > 0, holders

        def row(workload, who, fn):
            seconds = timed(fn, args.repeats)
            rows.append({"workload": workload, "who": who, "gpus": workers, "ms": seconds * 1e3,
                         "gsamples_per_s": n / seconds / 1e9})

        name = "f32, 256 bins, range (0, 1)"
        row(name, "tally.dask.histogram", lambda: td.histogram(x, bins=256, range=(0, 1))[0].compute())
        # The scheduler's floor: a task a chunk that returns at once, summed in the same tree.
        row(name, "Dask's floor (an empty task a chunk)", lambda: dask.compute(tree_sum(
            [dask.delayed(len)(b) for b in x.to_delayed().ravel()]))[0])
        row(name, "dask.array.histogram (cupy chunks)",
            lambda: da.histogram(x, bins=256, range=(0, 1))[0].compute())
        name = "f32 + f32 weights, 256 bins"
        row(name, "tally.dask.histogram",
            lambda: td.histogram(x, bins=256, range=(0, 1), weights=w)[0].compute())
        name = "i32 bincount, 4096 bins"
        row(name, "tally.dask.bincount", lambda: td.bincount(k, minlength=4096).compute())
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--samples", type=lambda s: int(eval(s, {})), default=2**31)
    parser.add_argument("--chunk", type=lambda s: int(eval(s, {})), default=2**26)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    import cupy

    gpus = cupy.cuda.runtime.getDeviceCount()
    rows = measure(1, args)
    if gpus > 1:
        rows += measure(gpus, args)
    one = {(r["workload"], r["who"]): r["gsamples_per_s"] for r in rows if r["gpus"] == 1}
    for r in rows:
        r["of_one_gpu"] = r["gsamples_per_s"] / one[(r["workload"], r["who"])]
        print(f'{r["workload"]:30} {r["who"]:36} {r["gpus"]} GPU {r["ms"]:9.2f} ms '
              f'{r["gsamples_per_s"]:8.2f} G samples/s {r["of_one_gpu"]:5.2f}x of 1 GPU')
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    with open(args.out, "w") as f:
        json.dump({"device": device, "gpus": gpus, "samples": args.samples, "chunk": args.chunk, "rows": rows},
                  f, indent=1)


if __name__ == "__main__":
    main()

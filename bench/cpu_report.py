#!/usr/bin/env python3
"""CPU report: times numpy on the ANCHORS.md CPU cases in this run, reads tally_cpu_bench's JSON,
and writes bench/results/<date>-cpu-<commit>.{json,md} with Melem/s and the ratios.

usage: build/bench/tally_cpu_bench --benchmark_repetitions=3 --benchmark_out=build/cpu_bench.json
       python3 bench/cpu_report.py build/cpu_bench.json
"""
import datetime
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

N = 1 << 26
SPREADS = ["uniform", "hotspot", "skewed80"]


def samples(spread, hi, dtype, rng):
    x = rng.uniform(0, hi, N)
    hot = hi * 0.3
    if spread == "hotspot":
        x[:] = hot
    elif spread == "skewed80":
        x[rng.uniform(0, 1, N) < 0.8] = hot
    return x.astype(dtype)


def best_of(f, repeat=5):
    f()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def numpy_rows():
    rng = np.random.default_rng(42)
    edges = np.sort(np.random.default_rng(7).uniform(0, 1, 257))
    edges[0], edges[-1] = 0.0, 1.0
    rows = {}
    for spread in SPREADS:
        for bins in (256, 65536):
            x = samples(spread, bins, np.int64, rng)
            rows[("bincount_i64", bins, spread)] = N / best_of(lambda: np.bincount(x, minlength=bins))
        x = samples(spread, 1.0, np.float32, rng)
        rows[("histogram_f32_even", 256, spread)] = N / best_of(
            lambda: np.histogram(x, bins=256, range=(0.0, 1.0)))
        rows[("histogram_f32_edges", 256, spread)] = N / best_of(
            lambda: np.histogram(x, bins=edges), repeat=3)
    return rows


def bench_rows(path):
    with open(path) as f:
        data = json.load(f)
    rows = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b["name"].split("/")[0]
        args = dict(p.split(":") for p in b["name"].split("/")[1:] if ":" in p)
        who, case = name.split("_", 1)
        threads = int(args.get("threads", 1))
        rows[(who, case, int(args["bins"]), SPREADS[int(args["spread"])], threads)] = b["items_per_second"]
    return data.get("context", {}), rows


def main():
    context, tally = bench_rows(sys.argv[1])
    numpy_rate = numpy_rows()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    date = datetime.date.today().isoformat()
    table = []
    for (who, case, bins, spread, threads), rate in sorted(tally.items()):
        if who != "tally" or threads != 0:
            continue
        scalar = tally.get(("scalar", case, bins, spread, 1))
        one = tally.get(("tally", case, bins, spread, 1))
        npy = numpy_rate.get((case, bins, spread))
        table.append({
            "case": case, "bins": bins, "spread": spread,
            "tally_all_threads_Melem_s": rate / 1e6,
            "tally_1_thread_Melem_s": one / 1e6 if one else None,
            "scalar_loop_Melem_s": scalar / 1e6 if scalar else None,
            "numpy_Melem_s": npy / 1e6 if npy else None,
            "vs_numpy": rate / npy if npy else None,
        })
    meta = {
        "date": date, "commit": commit, "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(), "numpy": np.__version__, "elements": N,
        "bench_context": {k: context.get(k) for k in ("num_cpus", "mhz_per_cpu", "library_build_type")},
    }
    stem = os.path.join(os.path.dirname(__file__), "results", f"{date}-cpu-{commit}")
    with open(stem + ".json", "w") as f:
        json.dump({"meta": meta, "rows": table}, f, indent=1)
    with open(stem + ".md", "w") as f:
        f.write(f"# CPU backend, {date}, commit {commit}, {meta['cpus']} CPUs, numpy {np.__version__}\n\n")
        f.write("2^26 samples; Melem/s (median of 3 repetitions); tally with all threads and with 1; the "
                "scalar loop and numpy timed in the same run (numpy: median of 5 after a warm-up).\n\n")
        f.write("| case | bins | spread | tally | tally 1 thread | scalar loop | numpy | tally / numpy |\n")
        f.write("|---|---|---|---|---|---|---|---|\n")
        fmt = lambda v: "-" if v is None else f"{v:.0f}"
        ratio = lambda v: "-" if v is None else f"{v:.2f}x"
        for r in table:
            f.write(f"| {r['case']} | {r['bins']} | {r['spread']} | {fmt(r['tally_all_threads_Melem_s'])} | "
                    f"{fmt(r['tally_1_thread_Melem_s'])} | {fmt(r['scalar_loop_Melem_s'])} | "
                    f"{fmt(r['numpy_Melem_s'])} | {ratio(r['vs_numpy'])} |\n")
    print(open(stem + ".md").read())


if __name__ == "__main__":
    main()

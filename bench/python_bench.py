#!/usr/bin/env python3
"""The Python package against what a Python user would otherwise call, on the matrix of
bench/gpu_bench.cu: u8, i32 and f32 samples, 16..2^20 bins, its four spreads (uniform, one hot bin,
80% in one bin, a bell), regular ranges, integer ranges and variable edges, f32 and f64 weights, and
2-D histogramdd, on torch CUDA tensors (2^28 samples as there: 2^30 u8, 2^27 weighted pairs;
CUDA-event timing after warm-up, the lower median of two rounds of repeats over each workload's
calls) beside torch.bincount, torch.histc and cupy's
histogram and bincount; numpy on the CPU; the fixed cost of small calls (16, 1000 and 10^5 samples)
against torch's and cupy's, in interleaved rounds.

    python3 bench/python_bench.py OUT.json [--cpp GPU_BENCH.json] [--n 28] [--cpu-n 24] [--repeats 10]

writes OUT.json and OUT.md. With --cpp (the same run's bench/gpu_bench.cu results) each call whose
workload has a C++ row is also set against `tally device_histogram` of the same workload and spread
(`tally automatic` where the C++ bench has no stream-ordered row). The targets (issue 19) are
printed as met or missed: every call given its bins within 10% of that C++ row, every workload's
slowest tally call at least 1.5x the best of torch and cupy, each small call no slower than its
library's own, and histogramdd at least 10x numpy on a CPU copy. Rows whose library or device is
missing are skipped and say why, so it runs on CPU-only machines too."""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import tally

from cuda_timing import median_ms

SPREADS = ("uniform", "hotspot", "skewed80", "normal")
I32_BINS = (16, 256, 4096, 65536, 1 << 18, 1 << 20)
F32_BINS = (16, 256, 4096, 65536, 1 << 20)
WEIGHTED_BINS = (256, 4096, 65536, 1 << 20)
CPU_BINS = (16, 256, 4096, 65536, 1 << 20)
SMALL_SIZES = (16, 1000, 100000)
# A peer's call slow enough (one hot bin in its global atomics) is timed fewer times: about this
# many milliseconds of repeats, at least 3.
BUDGET_MS = 400
# Rounds over a workload's calls on the GPU; a call's time is its lowest median.
ROUNDS = 2
# Bytes a sample of each kind of workload reads (the C++ rows give GB/s).
SAMPLE_BYTES = {"u8": 1, "i32": 4, "f32": 4, "edges": 4, "w32": 8, "w64": 12}


def optional(name):
    try:
        return __import__(name)
    except Exception:
        return None


def gpu_libraries():
    torch, cupy = optional("torch"), optional("cupy")
    if torch is not None and not torch.cuda.is_available():
        torch = None
    if cupy is not None:
        try:
            if cupy.cuda.runtime.getDeviceCount() < 1:
                cupy = None
        except Exception:
            cupy = None
    return torch, cupy


def time_cpu(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def workloads(n):
    """(name, kind, bins, samples) in bench/gpu_bench.cu's names and sizes (1 GiB of samples;
    weighted: 2^27 pairs), f32 even bins at every bin count beside its 256."""
    yield "u8, 256 bins", "u8", 256, 4 * n
    for b in I32_BINS:
        yield f"i32, {b} bins", "i32", b, n
    for b in F32_BINS:
        yield f"f32, {b} even bins", "f32", b, n
    yield "f32, 256 edges", "edges", 256, n
    for b in WEIGHTED_BINS:
        yield f"i32+f32 w, {b}", "w32", b, n // 2
    yield "i32+f64 w, 256", "w64", 256, n // 2


def bin_indices(torch, gen, n, bins, spread):
    """Bin k of each of n samples as bench/gpu_bench.cu's bin_for draws it: uniform; all in
    bins // 3 (hotspot); 80% there, the rest uniform (skewed80); or the mean of four uniform
    16-bit draws scaled to the bins (normal, a bell)."""
    hot = bins // 3
    if spread == "hotspot":
        return torch.full((n,), hot, dtype=torch.int32, device="cuda")
    if spread == "normal":
        s = sum(torch.randint(0, 1 << 16, (n,), device="cuda", generator=gen, dtype=torch.int32) for _ in range(4))
        return ((s.to(torch.int64) * bins) >> 18).clamp_(max=bins - 1).to(torch.int32)
    k = torch.randint(0, bins, (n,), device="cuda", generator=gen, dtype=torch.int32)
    if spread == "skewed80":
        k = torch.where(torch.rand(n, device="cuda", generator=gen) < 0.8, hot, k)
    return k


def quadratic_edges(bins):
    """bench/gpu_bench.cu's uneven edges, k / bins x (0.5 + 0.5 k / bins) in f32 arithmetic."""
    k = np.arange(bins + 1, dtype=np.float32)
    b = np.float32(bins)
    return k / b * (np.float32(0.5) + np.float32(0.5) * k / b)


# The calls whose bins come from the data form workloads of their own, named so, with the peers'
# calls that also find them (torch.histc with min == max, bincount without minlength).
FROM_DATA = {"range": ", range from the data", "length": ", length from the data"}


def calls(torch, cupy, kind, bins, x, w):
    """(group, library, fn, given) for one workload's samples x (and weights w) on a torch CUDA
    tensor, tally's calls first; `group`: "" or a FROM_DATA key, where the bins come from the
    data; `given`: the call is told its bins (a C++ row does the same work)."""
    xc = cupy.asarray(x) if cupy is not None else None  # zero-copy over the same memory
    wc = cupy.asarray(w) if cupy is not None and w is not None else None
    out = []
    if kind in ("u8", "i32"):
        out += [("", "tally.histogram", lambda: tally.histogram(x, bins, (0, bins)), True),
                ("", "tally.bincount", lambda: tally.bincount(x, minlength=bins), True),
                ("length", "tally.bincount", lambda: tally.bincount(x), False),
                ("", "torch.bincount", lambda: torch.bincount(x, minlength=bins), False),
                ("length", "torch.bincount", lambda: torch.bincount(x), False)]
        if cupy is not None:
            out += [("", "cupy.bincount", lambda: cupy.bincount(xc, minlength=bins), False),
                    ("length", "cupy.bincount", lambda: cupy.bincount(xc), False)]
    elif kind == "f32":
        out += [("", "tally.histogram", lambda: tally.histogram(x, bins, (0, 1)), True),
                ("", "tally.histc", lambda: tally.histc(x, bins, 0, 1), True),
                ("range", "tally.histogram", lambda: tally.histogram(x, bins), False),
                ("range", "tally.histc", lambda: tally.histc(x, bins), False),
                ("", "torch.histc", lambda: torch.histc(x, bins, 0, 1), False),
                ("range", "torch.histc", lambda: torch.histc(x, bins), False)]
        if cupy is not None:
            out += [("", "cupy.histogram", lambda: cupy.histogram(xc, bins, (0, 1)), False),
                    ("range", "cupy.histogram", lambda: cupy.histogram(xc, bins), False)]
    elif kind == "edges":
        edges = quadratic_edges(bins).astype(np.float64)
        et = torch.from_numpy(edges).to(device="cuda", dtype=torch.float32)
        # torch has no histogram on CUDA: a torch user buckets, then counts.
        out += [("", "tally.histogram", lambda: tally.histogram(x, edges), True),
                ("", "torch.bucketize + bincount",
                 lambda: torch.bincount(torch.bucketize(x, et, right=True), minlength=bins + 2), False)]
        if cupy is not None:
            ec = cupy.asarray(edges)
            out.append(("", "cupy.histogram", lambda: cupy.histogram(xc, ec), False))
    else:
        out += [("", "tally.histogram", lambda: tally.histogram(x, bins, (0, bins), weights=w), True),
                ("", "tally.bincount", lambda: tally.bincount(x, w, minlength=bins), True),
                ("", "torch.bincount", lambda: torch.bincount(x, weights=w, minlength=bins), False)]
        if cupy is not None:
            out.append(("", "cupy.bincount", lambda: cupy.bincount(xc, weights=wc, minlength=bins), False))
    return out


def samples_of(torch, gen, kind, bins, n, spread):
    """A workload's samples (and weights) as gpu_bench.cu generates them: integers are the bin,
    floats the bin's centre (even bins over [0, 1), or between the edges); weights (k + 0.5) / 1024
    for uniform k < 1024."""
    k = bin_indices(torch, gen, n, bins, spread)
    w = None
    if kind == "u8":
        x = k.to(torch.uint8)
    elif kind == "f32":
        x = ((k.to(torch.float64) + 0.5) / bins).to(torch.float32)
    elif kind == "edges":
        e = torch.from_numpy(quadratic_edges(bins)).cuda()
        x = 0.5 * (e[k.long()] + e[k.long() + 1])
    else:
        x = k
        if kind in ("w32", "w64"):
            w = (torch.randint(0, 1024, (n,), device="cuda", generator=gen, dtype=torch.int32) + 0.5) / 1024
            w = w.to(torch.float32 if kind == "w32" else torch.float64)
    return x, w


def gpu_rows(torch, cupy, n, repeats):
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(1)
    for spread in SPREADS:
        for workload, kind, bins, count in workloads(n):
            x, w = samples_of(torch, gen, kind, bins, count, spread)
            # Two rounds over the workload's calls, each call's time the lower of its two
            # medians: a call right after the data's generation (or after a peer's long call)
            # ran up to 15% slower than the same call a moment later (bench/PERFORMANCE.md,
            # "Python call path"), a state of the GPU that a round later has passed.
            cases = calls(torch, cupy, kind, bins, x, w)
            times = [[] for _ in cases]
            for _ in range(ROUNDS):
                for k, (_, _, fn, _) in enumerate(cases):
                    times[k].append(median_ms(torch, fn, repeats, budget_ms=BUDGET_MS))
            for (group, library, _, given), ms in zip(cases, times):
                r = row(workload + FROM_DATA.get(group, ""), spread, library, "cuda", bins, count, min(ms),
                        kind=kind, given=given)
                r["rounds_ms"] = ms  # each round's median, the first one alone as a single round gives it
                rows.append(r)
            del x, w
            torch.cuda.empty_cache()
    # 2-D: histogramdd of n/2 (x, y) f32 pairs over (0, 1)^2, sqrt(bins) x sqrt(bins) bins, against
    # cupy and against numpy on a copy in host memory (the copy timed with it, on 2^22 pairs).
    xy = torch.rand(n // 2, 2, device="cuda", generator=gen)
    xyc = cupy.asarray(xy) if cupy is not None else None
    small = xy[: 1 << 22]
    for bins in (256, 4096, 65536):
        side = int(bins ** 0.5)
        workload = f"histogramdd f32 2-D, {side}^2 bins over (0, 1)^2"
        cases = [("tally.histogramdd", lambda: tally.histogramdd(xy, (side, side), [(0, 1), (0, 1)]))]
        if cupy is not None:
            cases.append(("cupy.histogramdd", lambda: cupy.histogramdd(xyc, (side, side), [(0, 1), (0, 1)])))
        for library, fn in cases:
            rows.append(row(workload, "uniform", library, "cuda", bins, n // 2,
                            median_ms(torch, fn, repeats, budget_ms=BUDGET_MS), kind="2d"))
        ms = time_cpu(lambda: np.histogramdd(small.cpu().numpy(), (side, side), [(0, 1), (0, 1)]), 3)
        rows.append(row(workload, "uniform", "numpy.histogramdd of a CPU copy", "cpu copy", bins,
                        small.shape[0], ms, kind="2d"))
    return rows


def cpu_rows(n, repeats):
    rng = np.random.default_rng(1)
    f = rng.random(n, dtype=np.float32)
    rows = []
    for bins in CPU_BINS:
        i = rng.integers(0, bins, n, dtype=np.int32)
        for workload, library, fn in [
            (f"i32, {bins} bins", "tally.bincount", lambda: tally.bincount(i, minlength=bins)),
            (f"i32, {bins} bins", "numpy.bincount", lambda: np.bincount(i, minlength=bins)),
            (f"f32, {bins} even bins", "tally.histogram", lambda: tally.histogram(f, bins, (0, 1))),
            (f"f32, {bins} even bins", "numpy.histogram", lambda: np.histogram(f, bins, (0, 1))),
        ]:
            rows.append(row(workload, "uniform", library, "cpu", bins, n, time_cpu(fn, repeats)))
    return rows


def row(workload, spread, library, device, bins, n, ms, kind=None, given=False):
    return dict(workload=workload, spread=spread, library=library, device=device, bins=bins, n=n,
                median_ms=ms, gsamples_per_s=n / ms / 1e6, kind=kind, given=given)


def cpp_rates(path):
    """G samples/s of each C++ workload and spread: `tally device_histogram`, else `tally
    automatic` (the weighted rows' names lose their "(N Gs/s)")."""
    rates = {}
    if not path:
        return rates
    for r in json.loads(Path(path).read_text())["rows"]:
        if "gbs" not in r or r["who"] not in ("tally device_histogram", "tally automatic"):
            continue
        key = (re.sub(r" \(\d+ Gs/s\)$", "", r["workload"]), r["spread"])
        if r["who"] == "tally automatic" and key in rates:
            continue
        rates[key] = r
    return rates


def with_cpp(rows, path):
    """Each given CUDA call's ratio to its C++ row (rows gain `cpp_gsamples_per_s`, `of_cpp`)."""
    rates = cpp_rates(path)
    for r in rows:
        c = rates.get((r["workload"], r["spread"]))
        if r["device"] != "cuda" or not r["given"] or c is None:
            continue
        r["cpp_who"] = c["who"]
        r["cpp_gsamples_per_s"] = c["gbs"] / SAMPLE_BYTES[r["kind"]]
        r["of_cpp"] = r["gsamples_per_s"] / r["cpp_gsamples_per_s"]
    return rows


def overhead_us(fns, sync, rounds=7, calls=300):
    """Microseconds a call of each fn() on a tiny input: rounds of `calls` back-to-back calls of
    one fn then the next (so that a slower stretch of the host touches each), the median round."""
    for fn in fns:
        for _ in range(50):
            fn()
    sync()
    times = [[] for _ in fns]
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            t = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            times[k].append((time.perf_counter() - t) / calls * 1e6)
    return [statistics.median(t) for t in times]


def small_calls(lib, n, torch, cupy):
    """(call, peer call, tally's fn, peer's fn) on n samples of one library's CUDA arrays: f64 in
    [0, 1) and i64 in [0, 5)."""
    rng = np.random.default_rng(2)
    x, xi = rng.random(n), np.arange(n, dtype=np.int64) % 5
    if lib == "torch":
        t, ti = torch.from_numpy(x).cuda(), torch.from_numpy(xi).cuda()
        return [(f"tally.histc({n} f64, bins=16, min=0, max=1)", "torch.histc",
                 lambda: tally.histc(t, 16, 0, 1), lambda: torch.histc(t, 16, 0, 1)),
                # torch has no histogram on CUDA: torch.histc is what its users call.
                (f"tally.histogram({n} f64, bins=16, range=(0, 1))", "torch.histc",
                 lambda: tally.histogram(t, 16, (0, 1)), lambda: torch.histc(t, 16, 0, 1)),
                (f"tally.bincount({n} i64)", "torch.bincount", lambda: tally.bincount(ti), lambda: torch.bincount(ti)),
                (f"tally.bincount({n} i64, minlength=16)", "torch.bincount",
                 lambda: tally.bincount(ti, minlength=16), lambda: torch.bincount(ti, minlength=16))]
    c, ci = cupy.asarray(x), cupy.asarray(xi)
    return [(f"tally.histogram({n} f64 cupy, bins=16, range=(0, 1))", "cupy.histogram",
             lambda: tally.histogram(c, 16, (0, 1)), lambda: cupy.histogram(c, 16, (0, 1))),
            (f"tally.bincount({n} i64 cupy)", "cupy.bincount", lambda: tally.bincount(ci), lambda: cupy.bincount(ci))]


def overheads(torch, cupy):
    """Small calls: on the CPU beside numpy (16 samples), and on CUDA arrays beside the array's
    library, each pair in the same rounds."""
    out = []
    x = np.random.default_rng(2).random(16)
    xi = np.arange(16, dtype=np.int64) % 5
    sparse = np.array([2**26])
    cpu = [("tally.histogram(16 f64, bins=16, range=(0, 1))", "numpy.histogram",
            lambda: tally.histogram(x, 16, (0, 1)), lambda: np.histogram(x, 16, (0, 1))),
           ("tally.bincount(16 i64)", "numpy.bincount", lambda: tally.bincount(xi), lambda: np.bincount(xi)),
           # One sample of 2^26: 2^26 + 1 cells that cost only the pages written (numpy's calloc).
           ("tally.bincount([2**26])", "numpy.bincount", lambda: tally.bincount(sparse), lambda: np.bincount(sparse))]
    groups = [("cpu", 16, cpu, lambda: None)]
    for lib, present in (("torch", torch), ("cupy", cupy)):
        if present is None or torch is None:
            continue
        sync = torch.cuda.synchronize if lib == "torch" else cupy.cuda.get_current_stream().synchronize
        groups += [(lib, n, small_calls(lib, n, torch, cupy), sync) for n in SMALL_SIZES]
    for lib, n, pairs, sync in groups:
        fns = [f for _, _, ours, theirs in pairs for f in (ours, theirs)]
        us = overhead_us(fns, sync)
        for k, (call, peer, _, _) in enumerate(pairs):
            # The targets: on CUDA arrays no slower than the library's own call (torch's histc for
            # tally.histogram has no edges to return: not a target).
            target = lib == "cupy" or (lib == "torch" and "histogram" not in call)
            out.append(dict(call=call, device="cpu" if lib == "cpu" else "cuda", library=lib, n=n, us=us[2 * k],
                            peer=peer, peer_us=us[2 * k + 1], target=target))
    return out


def targets(rows, overhead):
    """Issue 19's targets, each met or missed: kind engine (a given call / its C++ row >= 0.9),
    peers (a workload's slowest tally call / the best of torch and cupy >= 1.5), small (tally's
    microseconds <= its library's own), numpy (histogramdd >= 10x numpy on a CPU copy)."""
    out = []
    cuda = [r for r in rows if r["device"] in ("cuda", "cpu copy")]
    for r in cuda:
        if "of_cpp" in r:
            out.append(dict(kind="engine", workload=r["workload"], spread=r["spread"], call=r["library"],
                            value=r["of_cpp"], target=0.9, met=r["of_cpp"] >= 0.9))
    for key in dict.fromkeys((r["workload"], r["spread"]) for r in cuda):
        mine = [r for r in cuda if (r["workload"], r["spread"]) == key]
        ours = [r for r in mine if r["library"].startswith("tally.")]
        peers = [r for r in mine if r["library"].startswith(("torch.", "cupy."))]
        if not ours:
            continue
        slow = min(ours, key=lambda r: r["gsamples_per_s"])
        if peers:
            best = max(peers, key=lambda r: r["gsamples_per_s"])
            ratio = slow["gsamples_per_s"] / best["gsamples_per_s"]
            out.append(dict(kind="peers", workload=key[0], spread=key[1], call=slow["library"], value=ratio,
                            target=1.5, peer=best["library"], met=ratio >= 1.5))
        for cpu in (r for r in mine if r["device"] == "cpu copy"):
            ratio = slow["gsamples_per_s"] / cpu["gsamples_per_s"]
            out.append(dict(kind="numpy", workload=key[0], spread=key[1],
                            call=slow["library"], value=ratio, target=10, peer=cpu["library"], met=ratio >= 10))
    for o in overhead:
        if o["target"]:
            out.append(dict(kind="small", workload=o["call"], spread="-", call=o["call"], value=o["us"],
                            target=o["peer_us"], peer=o["peer"], met=o["us"] <= o["peer_us"]))
    return out


def markdown(result):
    lines = [f"# Python package benchmark ({result['commit']}, {result['date']})", "",
             f"GPU: {result['gpu']}; CPU: {result['cpu']}; tally {result['tally']}, numpy "
             f"{result['numpy']}, torch {result['torch']}, cupy {result['cupy']}.", ""]
    for note in result["skipped"]:
        lines.append(f"- skipped: {note}")
    rows = result["rows"]
    cuda = [r for r in rows if r["device"] in ("cuda", "cpu copy")]
    if cuda:
        lines += ["", f"## cuda: G samples/s, the lower of {ROUNDS} rounds' medians of {result['repeats']} (CUDA "
                  f"events; fewer for calls over "
                  f"{BUDGET_MS // result['repeats']} ms), torch CUDA tensors; x C++: against the same run's C++ row", "",
                  "| workload | call | " + " | ".join(SPREADS) + " | x C++ (slowest spread) |",
                  "|---|---|" + "---|" * (len(SPREADS) + 1)]
        for workload, library in dict.fromkeys((r["workload"], r["library"]) for r in cuda):
            got = {r["spread"]: r for r in cuda if (r["workload"], r["library"]) == (workload, library)}
            cells = [f"{got[s]['gsamples_per_s']:.1f}" if s in got else "-" for s in SPREADS]
            ratios = [r["of_cpp"] for r in got.values() if "of_cpp" in r]
            cells.append(f"{min(ratios):.2f}" if ratios else "-")
            lines.append(f"| {workload} | {library} | " + " | ".join(cells) + " |")
    cpu = [r for r in rows if r["device"] == "cpu"]
    if cpu:
        lines += ["", f"## cpu: G samples/s, median of {max(3, result['repeats'] // 3)} (wall clock), "
                  f"n = 2^{int(np.log2(cpu[0]['n']))}", "",
                  "| workload | library | G samples/s |", "|---|---|---|"]
        lines += [f"| {r['workload']} | {r['library']} | {r['gsamples_per_s']:.2f} |" for r in cpu]
    lines += ["", "## Small calls, microseconds a call (interleaved rounds, the median round)", "",
              "| call | us | peer | peer us |", "|---|---|---|---|"]
    lines += [f"| {o['call']} | {o['us']:.1f} | {o['peer']} | {o['peer_us']:.1f} |" for o in result["overhead"]]
    got = result["targets"]
    met = sum(t["met"] for t in got)
    lines += ["", f"## Targets: {met} of {len(got)} met", ""]
    names = {"engine": "tally call / C++ row >= 0.9", "peers": "slowest tally call / best of torch and cupy >= 1.5",
             "numpy": "histogramdd / numpy on a CPU copy >= 10", "small": "tally's microseconds <= its peer's"}
    for kind, name in names.items():
        mine = [t for t in got if t["kind"] == kind]
        if not mine:
            continue
        lines += [f"- {name}: {sum(t['met'] for t in mine)} of {len(mine)} met"]
        lines += [f"  - missed: {t['workload']}, {t['spread']}, {t['call']}: {t['value']:.2f}"
                  + (f" ({t['peer']} {t['target']:.2f})" if kind == "small" else f" (target {t['target']})")
                  + (f" against {t['peer']}" if kind == "peers" else "")
                  for t in mine if not t["met"]]
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="JSON path; the markdown table goes beside it with .md")
    p.add_argument("--md", help="the markdown table's path instead")
    p.add_argument("--cpp", help="the same run's bench/gpu_bench.cu JSON: each call against its C++ row")
    p.add_argument("--n", type=int, default=28, help="log2 of the GPU sample count (28)")
    p.add_argument("--cpu-n", type=int, default=24, help="log2 of the CPU sample count (24)")
    p.add_argument("--repeats", type=int, default=10)
    args = p.parse_args()

    torch, cupy = gpu_libraries()
    skipped = []
    if torch is None:
        skipped.append("GPU rows: torch with a CUDA device not found")
    elif not any(b["name"] == "cuda" and b["usable"] for b in tally.backends()):
        skipped.append("GPU rows: tally's CUDA backend is not usable here")
        torch = None
    if torch is not None and cupy is None:
        skipped.append("cupy rows: cupy with a CUDA device not found")
    commit = os.environ.get("TALLY_COMMIT") or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).parent).stdout.strip() or "unknown"
    rows = with_cpp(gpu_rows(torch, cupy, 1 << args.n, args.repeats) if torch is not None else [], args.cpp)
    rows += cpu_rows(1 << args.cpu_n, max(3, args.repeats // 3))
    overhead = overheads(torch, cupy)
    result = dict(commit=commit, date=time.strftime("%Y-%m-%d"), tally=tally.__version__,
                  numpy=np.__version__, torch=getattr(torch, "__version__", None),
                  cupy=getattr(cupy, "__version__", None),
                  gpu=torch.cuda.get_device_name() if torch is not None else None,
                  cpu=f"{platform.processor() or platform.machine()}, {tally.backends()[0]['detail']}",
                  repeats=args.repeats, skipped=skipped, rows=rows, overhead=overhead,
                  targets=targets(rows, overhead))
    out = Path(args.out)
    out.write_text(json.dumps(result, indent=1) + "\n")
    Path(args.md or out.with_suffix(".md")).write_text(markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

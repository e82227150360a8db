#!/usr/bin/env python3
"""The Python package against what a Python user would otherwise call: torch.bincount,
torch.histc, cupy.histogram and cupy.bincount on the GPU (2^28 samples, bins 16..65536, CUDA-event
timing after warm-up, median of repeats), numpy on the CPU, and the call overhead for tiny inputs.

    python3 bench/python_bench.py OUT.json [--n 28] [--cpu-n 24] [--repeats 10]

writes OUT.json and OUT.md (a markdown table). Rows whose library or device is missing are
skipped and say why, so it runs on CPU-only machines too."""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import tally

from cuda_timing import median_ms

BINS = [16, 256, 4096, 65536, 1 << 20]


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


def overhead_us(fn, sync, calls=2000):
    """Mean microseconds per call of fn() on a tiny input, calls back to back."""
    for _ in range(50):
        fn()
    sync()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - t) / calls * 1e6


def gpu_rows(torch, cupy, n, repeats):
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(1)
    f = torch.rand(n, device="cuda", generator=gen)
    fc = cupy.asarray(f) if cupy is not None else None  # zero-copy over the same memory
    w = torch.rand(n, device="cuda", generator=gen)
    wc = cupy.asarray(w) if cupy is not None else None
    for bins in BINS:
        i = torch.randint(0, bins, (n,), device="cuda", generator=gen, dtype=torch.int32)
        ic = cupy.asarray(i) if cupy is not None else None
        cases = [
            ("bincount i32", "tally.bincount", lambda: tally.bincount(i, minlength=bins)),
            ("bincount i32", "tally.bincount minlength=0", lambda: tally.bincount(i)),
            ("bincount i32", "torch.bincount", lambda: torch.bincount(i, minlength=bins)),
            # Integer samples over the integer range (0, bins): numpy's unit edges, the integer rule.
            ("histogram i32, range=(0, bins)", "tally.histogram", lambda: tally.histogram(i, bins, (0, bins))),
            ("histogram i32, range=(0, bins)", "torch.bincount", lambda: torch.bincount(i, minlength=bins)),
            ("histogram i32 + f32 weights, range=(0, bins)", "tally.histogram",
             lambda: tally.histogram(i, bins, (0, bins), weights=w)),
            ("histogram i32 + f32 weights, range=(0, bins)", "torch.bincount",
             lambda: torch.bincount(i, weights=w, minlength=bins)),
            ("histogram f32, range=(0, 1)", "tally.histogram", lambda: tally.histogram(f, bins, (0, 1))),
            ("histogram f32, range=(0, 1)", "tally.histc", lambda: tally.histc(f, bins, 0, 1)),
            ("histogram f32, range=(0, 1)", "torch.histc", lambda: torch.histc(f, bins, 0, 1)),
            ("histogram f32, range=None", "tally.histogram", lambda: tally.histogram(f, bins)),
        ]
        if cupy is not None:
            cases += [
                ("bincount i32", "cupy.bincount", lambda: cupy.bincount(ic, minlength=bins)),
                ("histogram i32, range=(0, bins)", "cupy.bincount", lambda: cupy.bincount(ic, minlength=bins)),
                ("histogram i32 + f32 weights, range=(0, bins)", "cupy.bincount",
                 lambda: cupy.bincount(ic, weights=wc, minlength=bins)),
                ("histogram f32, range=(0, 1)", "cupy.histogram", lambda: cupy.histogram(fc, bins, (0, 1))),
                ("histogram f32, range=None", "cupy.histogram", lambda: cupy.histogram(fc, bins)),
            ]
        for workload, library, fn in cases:
            rows.append(row(workload, library, "cuda", bins, n, median_ms(torch, fn, repeats)))
        del i, ic
    # 2-D: histogramdd of n/2 (x, y) f32 pairs over (0, 1)^2, sqrt(bins) x sqrt(bins) bins.
    xy = torch.rand(n // 2, 2, device="cuda", generator=gen)
    xyc = cupy.asarray(xy) if cupy is not None else None
    for bins in (256, 4096, 65536):
        side = int(bins ** 0.5)
        cases = [("histogramdd f32 2-D, range=(0, 1)^2", "tally.histogramdd",
                  lambda: tally.histogramdd(xy, (side, side), [(0, 1), (0, 1)]))]
        if cupy is not None:
            cases.append(("histogramdd f32 2-D, range=(0, 1)^2", "cupy.histogramdd",
                          lambda: cupy.histogramdd(xyc, (side, side), [(0, 1), (0, 1)])))
        for workload, library, fn in cases:
            rows.append(row(workload, library, "cuda", bins, n // 2, median_ms(torch, fn, repeats)))
    return rows


def cpu_rows(n, repeats):
    rng = np.random.default_rng(1)
    f = rng.random(n, dtype=np.float32)
    rows = []
    for bins in BINS:
        i = rng.integers(0, bins, n, dtype=np.int32)
        for workload, library, fn in [
            ("bincount i32", "tally.bincount", lambda: tally.bincount(i, minlength=bins)),
            ("bincount i32", "numpy.bincount", lambda: np.bincount(i, minlength=bins)),
            ("histogram f32, range=(0, 1)", "tally.histogram", lambda: tally.histogram(f, bins, (0, 1))),
            ("histogram f32, range=(0, 1)", "numpy.histogram", lambda: np.histogram(f, bins, (0, 1))),
        ]:
            rows.append(row(workload, library, "cpu", bins, n, time_cpu(fn, repeats)))
    return rows


def row(workload, library, device, bins, n, ms):
    return dict(workload=workload, library=library, device=device, bins=bins, n=n, median_ms=ms,
                gsamples_per_s=n / ms / 1e6)


def overheads(torch, cupy):
    out = []
    x = np.random.default_rng(2).random(16)
    xi = np.arange(16, dtype=np.int64) % 5
    nothing = lambda: None
    out.append(dict(call="tally.histogram(16 f64, bins=16, range=(0, 1))", device="cpu",
                    us=overhead_us(lambda: tally.histogram(x, 16, (0, 1)), nothing)))
    out.append(dict(call="numpy.histogram(16 f64, bins=16, range=(0, 1))", device="cpu",
                    us=overhead_us(lambda: np.histogram(x, 16, (0, 1)), nothing)))
    out.append(dict(call="tally.bincount(16 i64)", device="cpu", us=overhead_us(lambda: tally.bincount(xi), nothing)))
    out.append(dict(call="numpy.bincount(16 i64)", device="cpu", us=overhead_us(lambda: np.bincount(xi), nothing)))
    if torch is not None:
        sync = torch.cuda.synchronize
        t = torch.from_numpy(x).cuda()
        ti = torch.from_numpy(xi).cuda()
        for call, fn in [("tally.histogram(16 f64, bins=16, range=(0, 1))", lambda: tally.histogram(t, 16, (0, 1))),
                         ("tally.histc(16 f64, bins=16, min=0, max=1)", lambda: tally.histc(t, 16, 0, 1)),
                         ("torch.histc(16 f64, bins=16, min=0, max=1)", lambda: torch.histc(t, 16, 0, 1)),
                         ("tally.bincount(16 i64)", lambda: tally.bincount(ti)),
                         ("torch.bincount(16 i64)", lambda: torch.bincount(ti))]:
            out.append(dict(call=call, device="cuda", us=overhead_us(fn, sync)))
    if torch is not None and cupy is not None:
        c, ci = cupy.asarray(x), cupy.asarray(xi)
        sync = cupy.cuda.get_current_stream().synchronize
        for call, fn in [("tally.histogram(16 f64 cupy, bins=16, range=(0, 1))", lambda: tally.histogram(c, 16, (0, 1))),
                         ("cupy.histogram(16 f64, bins=16, range=(0, 1))", lambda: cupy.histogram(c, 16, (0, 1))),
                         ("tally.bincount(16 i64 cupy)", lambda: tally.bincount(ci)),
                         ("cupy.bincount(16 i64)", lambda: cupy.bincount(ci))]:
            out.append(dict(call=call, device="cuda", us=overhead_us(fn, sync)))
    return out


def markdown(result):
    lines = [f"# Python package benchmark ({result['commit']}, {result['date']})", "",
             f"GPU: {result['gpu']}; CPU: {result['cpu']}; tally {result['tally']}, numpy "
             f"{result['numpy']}, torch {result['torch']}, cupy {result['cupy']}.", ""]
    for note in result["skipped"]:
        lines.append(f"- skipped: {note}")
    rows = result["rows"]
    for device in ("cuda", "cpu"):
        mine = [r for r in rows if r["device"] == device]
        if not mine:
            continue
        n = mine[0]["n"]
        lines += ["", f"## {device}: G samples/s, median of {result['repeats']} "
                  f"({'CUDA events' if device == 'cuda' else 'wall clock'}), n = 2^{int(np.log2(n))}", "",
                  "| workload | library | " + " | ".join(f"{b} bins" for b in BINS) + " |",
                  "|---|---|" + "---|" * len(BINS)]
        keys = []
        for r in mine:
            if (r["workload"], r["library"]) not in keys:
                keys.append((r["workload"], r["library"]))
        for workload, library in keys:
            cells = []
            for b in BINS:
                hit = [r for r in mine if (r["workload"], r["library"], r["bins"]) == (workload, library, b)]
                cells.append(f"{hit[0]['gsamples_per_s']:.2f}" if hit else "-")
            lines.append(f"| {workload} | {library} | " + " | ".join(cells) + " |")
    lines += ["", "## Call overhead, tiny inputs (16 samples), microseconds per call (target: tally < 10)", "",
              "| call | device | us |", "|---|---|---|"]
    lines += [f"| {o['call']} | {o['device']} | {o['us']:.1f} |" for o in result["overhead"]]
    lines += ["", "## Targets: tally >= 1.5x the best of torch and cupy on every CUDA workload", "",
              "| workload | bins | tally | best peer | ratio | state |", "|---|---|---|---|---|---|"]
    lines += [f"| {t['workload']} | {t['bins']} | {t['tally']:.1f} | {t['peer']:.1f} ({t['peer_library']}) | "
              f"{t['ratio']:.2f} | {'met' if t['met'] else 'missed'} |" for t in targets(rows)]
    return "\n".join(lines) + "\n"


def targets(rows):
    """Per CUDA workload and bin count: tally's slowest call of it against the fastest peer."""
    out = []
    cuda = [r for r in rows if r["device"] == "cuda"]
    for workload, bins in dict.fromkeys((r["workload"], r["bins"]) for r in cuda):
        mine = [r for r in cuda if (r["workload"], r["bins"]) == (workload, bins)]
        ours = [r for r in mine if r["library"].startswith("tally.")]
        peers = [r for r in mine if not r["library"].startswith("tally.")]
        if not ours or not peers:
            continue
        slow = min(ours, key=lambda r: r["gsamples_per_s"])
        best = max(peers, key=lambda r: r["gsamples_per_s"])
        ratio = slow["gsamples_per_s"] / best["gsamples_per_s"]
        out.append(dict(workload=workload, bins=bins, tally=slow["gsamples_per_s"], tally_library=slow["library"],
                        peer=best["gsamples_per_s"], peer_library=best["library"], ratio=ratio, met=ratio >= 1.5))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="JSON path; the markdown table goes beside it with .md")
    p.add_argument("--md", help="the markdown table's path instead")
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
    rows = (gpu_rows(torch, cupy, 1 << args.n, args.repeats) if torch is not None else [])
    rows += cpu_rows(1 << args.cpu_n, max(3, args.repeats // 3))
    result = dict(commit=commit, date=time.strftime("%Y-%m-%d"), tally=tally.__version__,
                  numpy=np.__version__, torch=getattr(torch, "__version__", None),
                  cupy=getattr(cupy, "__version__", None),
                  gpu=torch.cuda.get_device_name() if torch is not None else None,
                  cpu=f"{platform.processor() or platform.machine()}, {tally.backends()[0]['detail']}",
                  repeats=args.repeats, skipped=skipped, rows=rows, overhead=overheads(torch, cupy),
                  targets=targets(rows))
    out = Path(args.out)
    out.write_text(json.dumps(result, indent=1) + "\n")
    Path(args.md or out.with_suffix(".md")).write_text(markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

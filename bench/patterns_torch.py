"""torch anchors for bench/patterns_bench.cu, and the issue's targets checked against both.

Times torch.sigmoid (f32, f16 over 2^28; f32 over 1024^2 and 4096^2), a + b[:, None] (f32, 16384^2)
and torch.sum (f32, 2^28) like the C++ benchmark (CUDA events after warm-up, median of 15), adds
the rows to the benchmark's JSON file (same run, same machine), and prints tally beside torch with
each target met or missed. Run after the C++ benchmark (scripts/gpu_check does both):
    python3 bench/patterns_torch.py build-gpu/out/patterns_bench.json
"""
import json
import sys

import torch

from cuda_timing import median_ms


def torch_rows():
    rows = []
    for dtype, name in ((torch.float32, "f32"), (torch.float16, "f16")):
        x = torch.rand(1 << 28, device="cuda", dtype=dtype) * 8 - 4
        y = torch.empty_like(x)
        ms = median_ms(torch, lambda: torch.sigmoid(x, out=y))
        rows.append({"workload": f"sigmoid {name} 2^28", "who": "torch.sigmoid", "ms": ms,
                     "gbs": 2 * x.numel() * x.element_size() / ms / 1e6})
        del x, y
    for side in (1024, 4096):
        x = torch.rand(side, side, device="cuda") * 8 - 4
        y = torch.empty_like(x)
        ms = median_ms(torch, lambda: torch.sigmoid(x, out=y))
        rows.append({"workload": f"sigmoid f32 {side}^2", "who": "torch.sigmoid", "ms": ms, "us": ms * 1e3})
        del x, y
    side = 16384
    a = torch.rand(side, side, device="cuda")
    b = torch.rand(side, device="cuda")
    out = torch.empty_like(a)
    ms = median_ms(torch, lambda: torch.add(a, b[:, None], out=out))
    rows.append({"workload": "a + b[:, None] f32 16384^2", "who": "torch.add", "ms": ms,
                 "gbs": (2 * a.numel() + side) * 4 / ms / 1e6})
    del a, b, out
    x = torch.rand(1 << 28, device="cuda")
    for workload, who, fn in (("sum f32 2^28", "torch.sum", torch.sum), ("min f32 2^28", "torch.amin", torch.amin),
                              ("max f32 2^28", "torch.amax", torch.amax), ("mean f32 2^28", "torch.mean", torch.mean),
                              ("sum rows f32 16384^2", "torch.sum(dim=1)",
                               lambda t: torch.sum(t.view(16384, 16384), dim=1))):
        ms = median_ms(torch, lambda: fn(x))
        rows.append({"workload": workload, "who": who, "ms": ms, "gbs": x.numel() * 4 / ms / 1e6})
    return rows


def value(rows, workload, who):
    for r in rows:
        if r["workload"] == workload and r["who"] == who:
            return r.get("gbs", r.get("us", r.get("tflops")))
    return None


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "patterns_bench.json"
    with open(path) as f:
        bench = json.load(f)
    rows = torch_rows()
    bench["torch"] = torch.__version__
    # Each GB/s as a fraction of its limit: reading only for the sum, reading and writing otherwise.
    for r in rows:
        if "gbs" in r:
            reads = r["workload"].split()[0] in ("sum", "min", "max", "mean")
            r["of_bandwidth"] = r["gbs"] / bench["read_gbs" if reads else "copy_gbs"]
    bench["rows"] += rows
    with open(path, "w") as f:
        json.dump(bench, f, indent=1)
    all_rows = bench["rows"]

    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}, timed after the C++ benchmark")
    for r in rows:
        unit = "GB/s" if "gbs" in r else "us"
        print(f"{r['workload']:<28} {r['who']:<26} {r['ms']:10.4f} {value(rows, r['workload'], r['who']):8.2f} {unit}")

    # The targets: (workload, tally's row, unit, higher is better, bound from the anchors).
    def torch_of(w):
        return next(value(rows, w, r["who"]) for r in rows if r["workload"] == w)

    targets = []
    for w in ("sigmoid f32 2^28", "sigmoid f16 2^28"):
        targets.append((w, "tally::sigmoid", "GB/s", True, max(torch_of(w), 2900.0), ">= torch and >= 2900"))
    for w in ("sigmoid f32 1024^2", "sigmoid f32 4096^2"):
        targets.append((w, "tally::sigmoid", "us", False, torch_of(w), "<= torch"))
    targets.append(("a + b[:, None] f32 16384^2", "tally::add", "GB/s", True, 2800.0, ">= 2800"))
    # Reductions: >= 2950 GB/s and >= CUB's same reduction in the run (the mean: CUB's sum).
    for w, who, cub_w in (("sum f32 2^28", "tally::reduce f32", "sum f32 2^28"),
                          ("min f32 2^28", "tally::reduce", "min f32 2^28"),
                          ("max f32 2^28", "tally::reduce", "max f32 2^28"),
                          ("mean f32 2^28", "tally::reduce", "sum f32 2^28"),
                          ("sum rows f32 16384^2", "tally::reduce_rows", "sum rows f32 16384^2")):
        cub = value(all_rows, cub_w, "cub")
        targets.append((w, who, "GB/s", True, max(2950.0, cub) if cub else None, ">= 2950 and >= CUB"))
    for size in (4096, 8192):
        w = f"sgemm {size}^3"
        cublas = value(all_rows, w, "cublas (fp32, TF32 off)")
        targets.append((w, "tally warptiled", "TFLOP/s", True, 0.9 * cublas if cublas else None, ">= 90% of cuBLAS"))
    print("targets:")
    missed = 0
    for w, who, unit, higher, bound, rule in targets:
        got = value(all_rows, w, who)
        ok = got is not None and bound is not None and (got >= bound if higher else got <= bound)
        missed += not ok
        got_s = "missing" if got is None else f"{got:.2f}"
        bound_s = "?" if bound is None else f"{bound:.2f}"
        print(f"  {'met   ' if ok else 'MISSED'} {w:<28} {who:<18} {got_s:>9} {unit:<7} (target {rule}: {bound_s})")
    print(f"targets met: {len(targets) - missed} of {len(targets)}")


if __name__ == "__main__":
    main()

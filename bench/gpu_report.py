#!/usr/bin/env python3
"""GPU report: turns one scripts/gpu_check run into bench/results/<date>-h100-gpu-<commit>.{json,md}.

The markdown holds the run's full table (as tally_gpu_bench printed it) and the issue's targets
against tally automatic and tally device_histogram, per distribution; the notes on why a target is
missed are written by hand below the generated part.

usage: python3 bench/gpu_report.py RUN_DIRS COMMIT [DATE]
       (RUN_DIRS: gpu_check's $OUT of the tests and the bench stage, comma-separated; the JSON of
       the Python and patterns benchmarks is copied beside the GPU benchmark's)
"""
import datetime
import json
import os
import re
import shutil
import sys

SPREADS = ["uniform", "hotspot", "skewed80", "normal"]
# workload -> (target in GB/s, or G samples/s for the weighted row)
TARGETS = {
    "u8, 256 bins": 2800,
    "RGBA u8, 3 x 256": 2800,
    "i32, 16 bins": 2800,
    "i32, 256 bins": 2800,
    "i32, 4096 bins": 2000,
    "i32, 65536 bins": 1000,
    "i32, 1048576 bins": 600,
    "f32, 256 even bins": 2900,
    "f32, 256 edges": 2000,
}
WEIGHTED = re.compile(r"i32\+f32 w, (\d+) \((\d+) Gs/s\)")
# bins -> target in G samples/s: 1.5x the best of torch and cupy's bincount (issue 19) beyond 256
WEIGHTED_TARGETS = {256: 300, 4096: 160, 65536: 83, 1048576: 97}


def figures(rows, workload, who):
    """GB/s per spread (G samples/s for the weighted rows), '-' where the run has none."""
    out = []
    for spread in SPREADS:
        value = "-"
        for r in rows:
            if r.get("spread") != spread or r["who"] != who:
                continue
            m = WEIGHTED.fullmatch(r["workload"])
            if m and workload == f"weighted {m.group(1)}":
                value = m.group(2)
            elif r["workload"] == workload:
                value = f"{r['gbs']:.0f}"
        out.append(value)
    return " / ".join(out)


def state(rows, workload, target):
    cub = {r["spread"]: r["gbs"] for r in rows if r["workload"] == workload and r["who"] == "cub"}
    best = {}
    for r in rows:
        if r["workload"] == workload and r["who"] in ("tally automatic", "tally device_histogram"):
            best[r["spread"]] = max(best.get(r["spread"], 0), r["gbs"])
    low = min(best.values())
    short = 100 * (1 - low / target)
    words = "met" if low >= target else f"missed by up to {short:.{0 if short >= 1 else 1}f}%"
    if cub:
        ratios = [best[s] / cub[s] for s in cub if s in best]
        words += f"; {min(ratios):.2f}-{max(ratios):.2f}x CUB"
    return words


def main():
    runs, commit = sys.argv[1].split(","), sys.argv[2]
    date = sys.argv[3] if len(sys.argv) > 3 else datetime.date.today().isoformat()

    def find(name):
        return next(os.path.join(r, name) for r in runs if os.path.exists(os.path.join(r, name)))

    data = json.load(open(find("gpu_bench.json")))
    rows = data["rows"]
    text = open(find("gpu_bench.txt")).read().splitlines()
    table = [line for line in text if not line.startswith("measured ")]
    start = next(i for i, line in enumerate(table) if line.startswith("device "))
    table = table[start:]
    ctest = open(find("ctest.log")).read()
    tests = re.findall(r"\d+% tests passed.*out of \d+", ctest)
    sanitizer = open(find("sanitizer.log")).read()
    pytest = ["pytest: " + p for p in re.findall(r"^=* ?(\d+ (?:passed|failed).*?)=*$", ctest, re.M)]
    sanitizers = re.findall(r"(?:ERROR SUMMARY|RACECHECK SUMMARY): .*", sanitizer)
    fixed = {r["who"]: r["ms"] * 1e3 for r in rows if r["workload"].startswith("fixed cost")}

    base = f"bench/results/{date}-h100-gpu-{commit}"
    shutil.copyfile(find("gpu_bench.json"), base + ".json")
    for other in ("python", "patterns"):
        try:
            shutil.copyfile(find(f"{other}_bench.json"), f"bench/results/{date}-h100-{other}-{commit}.json")
        except StopIteration:
            pass
    md = [f"# GPU benchmark, {data['device']}, {date}, commit {commit}", ""]
    md.append("bench/gpu_bench.cu via scripts/gpu_check; tables by bench/gpu_report.py. 1 GiB "
              "device-resident input generated on the GPU, CUDA events, median of 15 runs after "
              "warm-up (3 where one run takes over 20 ms). `tally automatic` is the synchronous "
              "API (each fill waits for the device; the counts stay there until read); `tally "
              "automatic + read` reads them after every fill; `tally device_histogram` is the "
              "stream-ordered API. CUB DeviceHistogram on the same data in the same run.")
    md.append("")
    md.append("Tests and sanitizers: " + "; ".join(tests + pytest[-1:] + sanitizers) + ". Fixed cost of a fill of one sample: " +
              ", ".join(f"{who} {us:.1f} us" for who, us in fixed.items()) + ".")
    md += ["", "## Against the targets (uniform / hotspot / skewed80 / normal)", "",
           "| workload | CUB GB/s | tally automatic | tally automatic + read | tally device_histogram | target | state |",
           "|---|---|---|---|---|---|---|"]
    for workload, target in TARGETS.items():
        md.append(f"| {workload} | {figures(rows, workload, 'cub')} | "
                  f"{figures(rows, workload, 'tally automatic')} | "
                  f"{figures(rows, workload, 'tally automatic + read')} | "
                  f"{figures(rows, workload, 'tally device_histogram')} | >= {target} | "
                  f"{state(rows, workload, target)} |")
    for bins, target in WEIGHTED_TARGETS.items():
        md.append(f"| i32 + f32 weight, {bins} bins (G samples/s) | none | "
                  f"{figures(rows, f'weighted {bins}', 'tally automatic')} | "
                  f"{figures(rows, f'weighted {bins}', 'tally automatic + read')} | "
                  f"{figures(rows, f'weighted {bins}', 'tally device_histogram')} | >= {target} | bit-reproducible |")
    md += ["", "## The synchronous call against device_histogram (issue 19: within 5%)", "",
           "| workload | slowest spread's tally automatic / device_histogram | within 5% |", "|---|---|---|"]
    for workload in list(TARGETS) + [f"weighted {bins}" for bins in WEIGHTED_TARGETS]:
        pairs = []
        for spread in SPREADS:
            got = {}
            for r in rows:
                m = WEIGHTED.fullmatch(r["workload"])
                name = f"weighted {m.group(1)}" if m else r["workload"]
                if name == workload and r.get("spread") == spread:
                    got[r["who"]] = r["ms"]
            if "tally automatic" in got and "tally device_histogram" in got:
                pairs.append(got["tally device_histogram"] / got["tally automatic"])
        if pairs:
            md.append(f"| {workload} | {min(pairs):.3f} | {'yes' if min(pairs) >= 0.95 else 'no'} |")
    md += ["", "## The run's table", "", "```"] + table + ["```", ""]
    open(base + ".md", "w").write("\n".join(md))
    print(base + ".md")


if __name__ == "__main__":
    main()

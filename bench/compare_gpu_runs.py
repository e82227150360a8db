#!/usr/bin/env python3
"""Compares two tally_gpu_bench runs of one machine, row by row: a before/after check of a change
that should not move speed (issue 39's restructure).

    python3 bench/compare_gpu_runs.py BEFORE.json AFTER.json --before-rev REV --after-rev REV \
        --device "NVIDIA H200" --out bench/results/<date>-<kind>-<after>.json

Writes the rows both runs have (workload, spread, who, before and after ms, after / before) and
prints a summary: per side (tally's rows, CUB's), the median ratio and how many rows lie within 3%,
then every tally row outside it. CUB's rows are the same code in both builds, so their spread is
the two runs' own noise."""

import argparse
import datetime
import json
import statistics


def summary(rows):
    out = {}
    for side, pick in (("tally", lambda r: r["who"] != "cub"), ("cub", lambda r: r["who"] == "cub")):
        ratios = [r["ratio"] for r in rows if pick(r)]
        out[side] = {"rows": len(ratios), "median": statistics.median(ratios) if ratios else None,
                     "within_3pct": sum(abs(x - 1) <= 0.03 for x in ratios),
                     "min": min(ratios, default=None), "max": max(ratios, default=None)}
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--before-rev", required=True)
    p.add_argument("--after-rev", required=True)
    p.add_argument("--device", required=True)
    p.add_argument("--date", default=datetime.date.today().isoformat())
    p.add_argument("--out")
    args = p.parse_args()
    runs = [json.load(open(path, encoding="utf-8")) for path in (args.before, args.after)]
    keyed = [{(r["workload"], r.get("spread"), r["who"]): r["ms"] for r in run["rows"]} for run in runs]
    rows = [{"workload": w, "spread": s, "who": who, "before_ms": ms, "after_ms": keyed[1][(w, s, who)],
             "ratio": keyed[1][(w, s, who)] / ms}
            for (w, s, who), ms in keyed[0].items() if (w, s, who) in keyed[1] and ms > 0]
    result = {"date": args.date, "device": args.device, "before": args.before_rev, "after": args.after_rev,
              "read_gbs": [runs[0].get("read_gbs"), runs[1].get("read_gbs")], "summary": summary(rows), "rows": rows}
    for side, s in result["summary"].items():
        if s["rows"]:
            print(f"{side}: {s['rows']} rows, median after/before {s['median']:.3f}, {s['within_3pct']} within 3%, "
                  f"{s['min']:.3f}..{s['max']:.3f}")
    for r in sorted(rows, key=lambda r: r["ratio"]):
        if r["who"] != "cub" and abs(r["ratio"] - 1) > 0.03:
            print(f"  {r['ratio']:.3f}  {r['workload']} / {r['spread']} / {r['who']}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()

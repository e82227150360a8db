#!/usr/bin/env python3
"""A HEP-style fill (issue 40): 10^8 events of five datasets into tally.Histogram on the GPU and
the CPU, against boost-histogram, hist and cuda-histogram on the same host and arrays.

Two histograms, filled the way an analysis fills them, one call per dataset with its name as a
scalar, ``h.fill("ttbar", pt, eta, weight=w)``:

- weight: StrCategory(5 datasets) x Regular(100, pt in [0, 500)) x Regular(50, eta in [-2.5,
  2.5)), Weight storage; its input is pt, eta and weight (12 bytes an event);
- profile: StrCategory(5) x Regular(100, pt), Mean storage of a mass (``sample=``); its input is
  pt and mass (8 bytes an event).

The events (float32): pt an exponential above 3 GeV, its slope by dataset, some beyond 500; eta
normal (sigma 1.6: about 12% beyond 2.5), 10^-4 of it NaN; weight 1 for data, around 1 (sigma
0.25, 5% negative, as NLO generators give them) elsewhere, in steps of 2^-10; mass about 91 GeV
rising with pt, in steps of 2^-4. The steps make every partial sum of weights, of their squares
and of masses and their squares exact in float64 (and the squares of the weights exact in
float32), so the sums are the same bits in any order: tally on the GPU and the CPU, boost-
histogram threaded or not, and cuda-histogram must all agree bit for bit, and the run checks
that. A sample on a bin edge (within 10^-9 of a bin width) moves 10^-4 of a bin width up:
boost-histogram bins by (x - lo) / (hi - lo) * bins, tally by comparing with numpy's edges, and
on an edge the two may differ (x == stop is tally's last bin, as numpy's, and boost's
overflow). The events of a dataset are contiguous, as they come from that dataset's files.

Rows (a row times the whole fill of the five datasets into a new histogram, from arrays already
on their device, as a user calls it): tally on torch CUDA tensors, on cupy arrays (over the same
memory), on numpy with all host threads and with one; boost-histogram with ``threads=`` all host
threads and 1 (its Mean storage does not fill threaded: one thread only); hist (all threads for
Weight, one for Mean); cuda-histogram on the cupy arrays (Weight only: it has no Mean storage).
GPU rows: CUDA events, the median of --repeats after warm-up (bench/cuda_timing.py); CPU rows:
time.perf_counter, the median of --cpu-repeats after one warm-up call. The first call of each
row gives the histogram the checks compare.

Checks, all in the same run: tally on numpy equals boost-histogram bit for bit (Weight: sums of
weights and of their squares; Mean: the counts), its means and variances within the rounding
boost's sample-by-sample updates allow (see `profile_tolerance`); tally with one thread, on
torch and on cupy equals tally on numpy bit for bit (docs/cpp.md: the GPU's sums of f32 weights
are correctly rounded, of f64 ones in a fixed order, both the CPU's bits wherever its partial
sums are exact, as they are here); boost-histogram threaded, hist and cuda-histogram equal
boost-histogram with one thread bit for bit. The run exits 1 when a check fails or a call
raises (the other rows still run, and the JSON lists the error).

Targets (issue 40): tally's GPU fill at >= 40% of the device's read rate for its input bytes
(the rate torch.sum reads 1 GiB of float32 at, measured in the run), >= 10x cuda-histogram and
>= 50x boost-histogram with all host threads; tally's one-thread CPU fill >= boost-histogram's.

    python3 bench/hep_bench.py --out results.json [--events N] [--quick] [--device cpu]

On the device machine (no network), install the peers from the wheels in .whl/hep first:

    pip install --no-index --find-links .whl/hep boost-histogram hist cuda-histogram

Missing libraries (torch, cupy, boost_histogram, hist, cuda_histogram) skip their rows, each
with a note in the JSON."""

import argparse
import collections
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

sys.path.insert(0, str(Path(__file__).resolve().parent))  # also where a test imports this file
from cuda_timing import median_ms  # noqa: E402

# name -> (share of the events, pt slope in GeV); data weigh 1, simulated datasets carry weights.
DATASETS = {"data": (0.30, 30.0), "ttbar": (0.25, 60.0), "wjets": (0.20, 35.0), "zjets": (0.15, 30.0),
            "diboson": (0.10, 45.0)}
PT = (100, 0.0, 500.0)
ETA = (50, -2.5, 2.5)
PT_OFFSET = 3.0
ETA_SIGMA = 1.6
NAN_SHARE = 1e-4
NEGATIVE_SHARE = 0.05
WEIGHT_STEP = 2.0 ** -10  # |w| < 4 in these steps: 12 significant bits, squares exact in float32
MASS_STEP = 2.0 ** -4
# The histograms, and the bytes of input an event's fill reads.
HISTOGRAMS = {"weight": "StrCategory(5) x Regular(100, pt) x Regular(50, eta), Weight storage",
              "profile": "StrCategory(5) x Regular(100, pt), Mean storage of the mass"}
INPUT_BYTES = {"weight": 12, "profile": 8}
TARGETS = {"of_read": 0.4, "vs_cuda_histogram": 10.0, "vs_boost_all_threads": 50.0, "cpu_vs_boost_1_thread": 1.0}
GPU_BUDGET_MS = 3000  # a GPU row slow enough is timed fewer times (bench/cuda_timing.py)


def optional(name):
    try:
        return __import__(name)
    except Exception:
        return None


# ---- the events ----

def off_edges(x, bins, lo, hi):
    """Moves the samples within 10^-9 of a bin width of an edge (stop included) 10^-4 of a bin
    width above it, in place, where every library puts them in the bin above; returns how many."""
    width = (hi - lo) / bins
    edges = np.linspace(lo, hi, bins + 1)
    k = np.clip(np.nan_to_num(np.rint((x.astype(np.float64) - lo) / width), nan=0.0), 0, bins).astype(np.intp)
    near = np.abs(x - edges[k]) < 1e-9 * width
    x[near] = (edges[k[near]] + 1e-4 * width).astype(np.float32)
    return int(near.sum())


def by_dataset(columns, counts):
    """{dataset: {variable: array}}: each dataset's contiguous slice of the columns (any library's
    arrays), the datasets in DATASETS' order with `counts` events each."""
    out, start = {}, 0
    for name, count in zip(DATASETS, counts):
        out[name] = {k: v[start:start + count] for k, v in columns.items()}
        start += count
    return out


def events(n, seed=1):
    """(columns, counts, moved): n events as {"pt", "eta", "weight", "mass"} float32 numpy arrays,
    each dataset's events contiguous in DATASETS' order; the events of each dataset (their shares
    drawn); the number of samples moved off bin edges."""
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(n, [share for share, _ in DATASETS.values()]).tolist()
    columns = {name: np.empty(n, np.float32) for name in ("pt", "eta", "weight", "mass")}
    moved = 0
    for (name, (_, slope)), c in zip(DATASETS.items(), by_dataset(columns, counts).values()):
        pt, eta, w, mass = c["pt"], c["eta"], c["weight"], c["mass"]
        count = pt.size
        rng.standard_exponential(out=pt, dtype=np.float32)
        pt *= slope
        pt += PT_OFFSET
        rng.standard_normal(out=eta, dtype=np.float32)
        eta *= ETA_SIGMA
        eta[rng.integers(0, count, int(count * NAN_SHARE))] = np.nan
        if name == "data":
            w.fill(1.0)
        else:
            rng.standard_normal(out=w, dtype=np.float32)
            w *= 0.25
            w += 1.0
            w[rng.integers(0, count, int(count * NEGATIVE_SHARE))] *= -1
            np.clip(w, -3.99, 3.99, out=w)
            np.rint(w / np.float32(WEIGHT_STEP), out=w)
            w *= np.float32(WEIGHT_STEP)
        rng.standard_normal(out=mass, dtype=np.float32)
        mass *= 2.5
        mass += np.float32(91.1876) + np.float32(0.05) * (pt - np.float32(PT_OFFSET))
        np.clip(mass, 0.0, 255.0, out=mass)
        np.rint(mass / np.float32(MASS_STEP), out=mass)
        mass *= np.float32(MASS_STEP)
        moved += off_edges(pt, *PT) + off_edges(eta, *ETA)
    return columns, counts, moved


def inputs(columns, kind):
    """The positional and keyword arrays of one dataset's fill of a histogram of `kind`."""
    if kind == "weight":
        return (columns["pt"], columns["eta"]), {"weight": columns["weight"]}
    return (columns["pt"],), {"sample": columns["mass"]}


def fill_datasets(h, data, kind, **options):
    """h filled as an analysis fills it: one call per dataset, the dataset's name a scalar."""
    for name, columns in data.items():
        args, kwargs = inputs(columns, kind)
        h.fill(name, *args, **kwargs, **options)
    return h


# ---- one function per library, each giving its rows' Cases ----

# A row to time: the histogram's kind, who fills, from which arrays, where, with how many host
# threads (0: all), the call (None: the library cannot, `note` says why).
Case = collections.namedtuple("Case", "kind library arrays device threads fill note")


def tally_cases(data, arrays, device, threads):
    """tally.Histogram, with boost-histogram's names for the axes and storages."""
    def make(kind):
        axes = [tally.axis.StrCategory(list(DATASETS)), tally.axis.Regular(*PT)]
        if kind == "weight":
            return tally.Histogram(axes + [tally.axis.Regular(*ETA)], storage=tally.storage.Weight(), threads=threads)
        return tally.Histogram(axes, storage=tally.storage.Mean(), threads=threads)
    for kind in HISTOGRAMS:
        yield Case(kind, "tally", arrays, device, threads, lambda kind=kind: fill_datasets(make(kind), data, kind), "")


def boost_cases(bh, data, threads, library="boost-histogram"):
    """boost_histogram.Histogram, or hist.Hist (boost-histogram's engine) for library="hist";
    `threads` 0: all host threads. Its Mean storage does not fill threaded: no threaded row."""
    make_histogram = bh.Hist if library == "hist" else bh.Histogram
    count = threads or os.cpu_count()

    def make(kind):
        axes = [bh.axis.StrCategory(list(DATASETS)), bh.axis.Regular(*PT)]
        if kind == "weight":
            return make_histogram(*axes, bh.axis.Regular(*ETA), storage=bh.storage.Weight())
        return make_histogram(*axes, storage=bh.storage.Mean())
    for kind in HISTOGRAMS:
        fill = None if kind == "profile" and count > 1 else (
            lambda kind=kind: fill_datasets(make(kind), data, kind, threads=count))
        yield Case(kind, library, "numpy", "cpu", threads, fill,
                   "Mean storage does not fill threaded" if fill is None else "")


def hist_cases(hist, data):
    """hist.Hist: one row per histogram, with all host threads where its storage fills threaded
    (Weight), else with one (Mean)."""
    threaded = {c.kind: c for c in boost_cases(hist, data, 0, "hist")}
    single = {c.kind: c for c in boost_cases(hist, data, 1, "hist")}
    for kind in HISTOGRAMS:
        yield threaded[kind] if threaded[kind].fill is not None else single[kind]._replace(
            note="hist's Mean storage does not fill threaded: one thread")


def cuda_histogram_cases(cuda_histogram, data):
    """cuda_histogram.Hist on cupy arrays: StrCategory (sparse: a dense array per category) x
    Regular x Regular, weighted (it keeps the sums of squares too); it has no Mean storage."""
    ax = cuda_histogram.axis

    def fill():
        h = cuda_histogram.Hist(ax.StrCategory(list(DATASETS)), ax.Regular(*PT), ax.Regular(*ETA))
        return fill_datasets(h, data, "weight")
    yield Case("weight", "cuda-histogram", "cupy", "cuda", 0, fill, "")
    yield Case("profile", "cuda-histogram", "cupy", "cuda", 0, None, "no Mean storage")


# ---- timing, rows ----

def measure(fill, torch, repeats):
    """(seconds, histogram): the histogram of a first call, then the median of `repeats` calls
    timed with CUDA events after warm-up (torch given) or with time.perf_counter."""
    h = fill()
    if torch is not None:
        torch.cuda.synchronize()
        return median_ms(torch, fill, repeats, budget_ms=GPU_BUDGET_MS) / 1e3, h
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fill()
        times.append(time.perf_counter() - start)
    return statistics.median(times), h


def label(case):
    """A row's name: library, arrays, threads."""
    if case.device == "cuda":
        return f"{case.library} ({case.arrays})"
    if case.threads == 0:
        return f"{case.library} ({case.arrays}, all {os.cpu_count()} threads)"
    return f"{case.library} ({case.arrays}, {case.threads} thread{'s' if case.threads > 1 else ''})"


def run_cases(cases, n, torch, repeats, read_gbs, skipped, errors, results):
    """Times each case into a row; results[(kind, row label)] keeps its case and histogram for the
    checks. A call that raises is an error (the run fails), the other rows still run."""
    rows = []
    for case in cases:
        name = label(case)
        if case.fill is None:
            skipped.append(f"{case.kind} histogram, {name}: {case.note}")
            continue
        try:
            seconds, h = measure(case.fill, torch if case.device == "cuda" else None, repeats)
        except Exception as e:
            errors.append(f"{case.kind} histogram, {name}: {type(e).__name__}: {e}")
            print(f"  {case.kind:<8} {name:<40} failed: {errors[-1]}", file=sys.stderr, flush=True)
            continue
        results[(case.kind, name)] = case, h
        in_bytes = INPUT_BYTES[case.kind] * n
        row = dict(histogram=case.kind, row=name, library=case.library, arrays=case.arrays, device=case.device,
                   threads=(case.threads or os.cpu_count()) if case.device == "cpu" else None,
                   all_threads=case.device == "cpu" and case.threads == 0,
                   seconds=seconds, events_per_s=n / seconds, input_bytes=in_bytes, gbs=in_bytes / seconds / 1e9,
                   timing="CUDA events, median after warm-up" if case.device == "cuda"
                   else "perf_counter, median after one warm-up call", note=case.note)
        if case.device == "cuda":
            row["of_read"] = row["gbs"] / read_gbs
        rows.append(row)
        print(f"  {case.kind:<8} {name:<40} {seconds:9.4f} s", file=sys.stderr, flush=True)
    return rows


def read_rate_gbs(torch):
    """The device's read rate: torch.sum over 1 GiB of float32, CUDA events (the Python benchmarks'
    stand-in for bench/gpu_bench.cu's CUB DeviceReduce over 1 GiB)."""
    x = torch.rand(1 << 28, device="cuda")
    ms = median_ms(torch, lambda: x.sum())
    del x
    torch.cuda.empty_cache()
    return (1 << 30) / ms / 1e6


# ---- checks ----

def cells(h, kind):
    """A histogram's cells as numpy arrays: Weight "value" (sum of weights) and "variance" (sum
    of squared weights); Mean "count", "value" (the mean) and "variance" (of the mean, UHI's)."""
    if type(h).__module__.startswith("cuda_histogram"):
        import cupy
        return {"value": cupy.asnumpy(h.values()), "variance": cupy.asnumpy(h.variance())}
    view = h.view()
    if kind == "weight":
        return {"value": np.asarray(view["value"]), "variance": np.asarray(view["variance"])}
    return {"count": np.asarray(view["count"]), "value": np.asarray(view["value"]),
            "variance": np.asarray(h.variances())}


def same_bits(got, want):
    """(passed, detail): every field equal, NaN to NaN."""
    shapes = {f: (got[f].shape, want[f].shape) for f in want if got[f].shape != want[f].shape}
    if shapes:
        return False, f"shapes differ: {shapes}"
    bad = [f for f in want if not np.array_equal(got[f], want[f], equal_nan=True)]
    if not bad:
        return True, "equal bit for bit"
    return False, "; ".join(f"{f}: {int(np.sum(~np.isclose(got[f], want[f], rtol=0, atol=0, equal_nan=True)))} "
                            f"cells differ, largest {np.nanmax(np.abs(got[f] - want[f])):.3g}" for f in bad)


def profile_tolerance(want):
    """Per cell, how far boost-histogram's mean and variance of the mean may be from the exact
    ones tally computes from exact sums. boost updates the mean once a sample (mean += (x - mean)
    / n): each update rounds, so after n samples its mean is within about n roundings, n eps
    |mean|; its sum of squared deltas takes those means' errors too, n eps (1 + |mean| / sigma)
    relative. tally's variance, sum(s^2) - sum(s)^2 / n of exact sums, loses about mean^2 /
    sigma^2 roundings. Four times these bounds (they are worst cases: the errors are random)."""
    eps = np.finfo(np.float64).eps
    n, mean = want["count"], np.abs(want["value"])
    with np.errstate(divide="ignore", invalid="ignore"):
        sigma = np.sqrt(want["variance"] * n)
        ratio = np.where(sigma > 0, mean / sigma, 0.0)
    return 4 * eps * n * mean, 4 * eps * (n * (1 + ratio) + ratio * ratio) * np.abs(want["variance"])


def within(got, want):
    """(passed, detail): Mean cells, counts equal, means and variances within profile_tolerance."""
    if not np.array_equal(got["count"], want["count"]):
        return False, "the counts differ"
    mean_tol, var_tol = profile_tolerance(want)
    filled, spread = want["count"] > 0, want["count"] > 1
    d_mean = np.abs(got["value"] - want["value"])
    d_var = np.abs(got["variance"] - want["variance"])
    ok = bool(np.all(d_mean[filled] <= mean_tol[filled]) and np.all(d_var[spread] <= var_tol[spread]))
    return ok, (f"counts equal; means within {relative(d_mean, want['value'], filled):.2g} relative (bound "
                f"{relative(mean_tol, want['value'], filled):.2g}), variances within "
                f"{relative(d_var, want['variance'], spread):.2g} (bound "
                f"{relative(var_tol, want['variance'], spread):.2g})")


def relative(d, want, where):
    """The largest d / |want| over the cells `where` whose want is not 0."""
    where = where & (want != 0)
    return float(np.max(d[where] / np.abs(want[where]), initial=0.0))


def checks(results):
    """Each histogram against its reference: tally's against tally on numpy (all threads), and
    that against boost-histogram (1 thread), the peers against boost-histogram (1 thread)."""
    out = []
    for kind in HISTOGRAMS:
        mine = {name: (case, h) for (k, name), (case, h) in results.items() if k == kind}

        def find(library, threads):
            return next((name for name, (c, _) in mine.items()
                         if (c.library, c.device, c.threads) == (library, "cpu", threads)), None)
        tally_ref, boost_ref = find("tally", 0), find("boost-histogram", 1)
        got = {name: cells(h, kind) for name, (_, h) in mine.items()}
        if tally_ref and boost_ref:
            passed, detail = (same_bits if kind == "weight" else within)(got[tally_ref], got[boost_ref])
            out.append(dict(histogram=kind, row=tally_ref, against=boost_ref, passed=passed, detail=detail))
        for name in got:
            ref = tally_ref if mine[name][0].library == "tally" else boost_ref
            if ref is None or name in (tally_ref, boost_ref):
                continue
            passed, detail = same_bits({f: got[name][f] for f in got[ref]}, got[ref])
            out.append(dict(histogram=kind, row=name, against=ref, passed=passed, detail=detail))
    return out


# ---- targets, report ----

def targets(rows):
    """Issue 40's targets, each met or not: per histogram and tally GPU row, the fraction of the read
    rate, the speed over cuda-histogram and over boost-histogram with all host threads (its fastest
    row where it has none: Mean does not fill threaded); tally's one-thread CPU row over
    boost-histogram's."""
    out = []
    for kind in HISTOGRAMS:
        mine = [r for r in rows if r["histogram"] == kind]

        def find(library, device=None, threads=None):
            return [r for r in mine if r["library"] == library and (device is None or r["device"] == device)
                    and (threads is None or (r["threads"] == threads and not r["all_threads"]))]
        cuda_histogram = find("cuda-histogram")
        boost = next((r for r in find("boost-histogram") if r["all_threads"]), None) or max(
            find("boost-histogram"), key=lambda r: r["events_per_s"], default=None)
        for r in find("tally", "cuda"):
            out.append(dict(histogram=kind, row=r["row"], target="of_read", value=r["of_read"]))
            for peer, key in ((cuda_histogram[0] if cuda_histogram else None, "vs_cuda_histogram"),
                              (boost, "vs_boost_all_threads")):
                if peer is not None:
                    out.append(dict(histogram=kind, row=r["row"], target=key, peer=peer["row"],
                                    value=r["events_per_s"] / peer["events_per_s"]))
        ours, theirs = find("tally", "cpu", 1), find("boost-histogram", "cpu", 1)
        if ours and theirs:
            out.append(dict(histogram=kind, row=ours[0]["row"], target="cpu_vs_boost_1_thread", peer=theirs[0]["row"],
                            value=ours[0]["events_per_s"] / theirs[0]["events_per_s"]))
    for t in out:
        t["goal"] = TARGETS[t["target"]]
        t["met"] = t["value"] >= t["goal"]
    return out


def table(result):
    """The rows, the targets and the checks as text."""
    lines = [f"{result['meta']['events']:,} events on {result['meta']['device']}; read rate "
             + (f"{result['read_gbs']:.0f} GB/s" if result["read_gbs"] else "not measured (no GPU)"), ""]
    lines.append(f"{'histogram':<8} {'row':<40} {'s':>9} {'M events/s':>11} {'GB/s':>8} {'of read':>8}")
    for r in result["rows"]:
        of = f"{r['of_read']:.2f}" if "of_read" in r else "-"
        lines.append(f"{r['histogram']:<8} {r['row']:<40} {r['seconds']:9.4f} {r['events_per_s'] / 1e6:11.1f} "
                     f"{r['gbs']:8.2f} {of:>8}")
    lines += ["", "targets:"]
    lines += [f"  {'met   ' if t['met'] else 'MISSED'} {t['histogram']:<8} {t['row']:<24} {t['target']:<22} "
              f"{t['value']:8.2f} (>= {t['goal']:g}{', against ' + t['peer'] if 'peer' in t else ''})"
              for t in result["targets"]]
    lines += ["", "checks:"]
    lines += [f"  {'ok    ' if c['passed'] else 'FAILED'} {c['histogram']:<8} {c['row']} against {c['against']}: "
              f"{c['detail']}" for c in result["checks"]]
    lines += [f"skipped: {s}" for s in result["skipped"]] + [f"ERROR: {e}" for e in result["errors"]]
    return "\n".join(lines)


def versions(modules):
    return {name: getattr(m, "__version__", None) for name, m in modules.items() if m is not None}


def gpu_libraries():
    """torch and cupy where they find a CUDA device and tally's CUDA backend is usable."""
    torch, cupy = optional("torch"), optional("cupy")
    if torch is not None and not torch.cuda.is_available():
        torch = None
    try:
        if cupy is not None and cupy.cuda.runtime.getDeviceCount() < 1:
            cupy = None
    except Exception:
        cupy = None
    usable = any(b["name"] == "cuda" and b["usable"] for b in tally.backends())
    return (torch, cupy) if usable else (None, None)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", help="the JSON results' path")
    p.add_argument("--events", type=int, help="events in all (10^8; --quick: 10^6)")
    p.add_argument("--quick", action="store_true", help="a small run: 10^6 events, few repeats")
    p.add_argument("--device", choices=("all", "cpu"), default="all", help="cpu: the rows on numpy arrays only")
    p.add_argument("--repeats", type=int, help="GPU repeats (10; --quick: 3)")
    p.add_argument("--cpu-repeats", type=int, help="CPU repeats after the warm-up call (3; --quick: 1)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    n = args.events or (10**6 if args.quick else 10**8)
    repeats = args.repeats or (3 if args.quick else 10)
    cpu_repeats = args.cpu_repeats or (1 if args.quick else 3)

    skipped, errors = [], []
    torch, cupy = gpu_libraries() if args.device == "all" else (None, None)
    if args.device == "cpu":
        skipped.append("GPU rows: --device cpu")
    elif torch is None:
        skipped.append("GPU rows: torch with a CUDA device and tally's CUDA backend are needed (CUDA-event timing)")
    elif cupy is None:
        skipped.append("cupy rows (tally on cupy, cuda-histogram): cupy with a CUDA device not found")
    bh, hist = optional("boost_histogram"), optional("hist")
    cuda_histogram = optional("cuda_histogram") if cupy is not None else None
    for name, module in (("boost-histogram", bh), ("hist", hist)):
        if module is None:
            skipped.append(f"{name} rows: {name} is not installed")
    if cupy is not None and cuda_histogram is None:
        skipped.append("cuda-histogram rows: cuda_histogram is not installed (pip install cuda-histogram)")

    start = time.perf_counter()
    columns, counts, moved = events(n, args.seed)
    host = by_dataset(columns, counts)
    print(f"{n:,} events made in {time.perf_counter() - start:.1f} s ({moved} samples moved off bin edges)",
          file=sys.stderr, flush=True)
    cpus, results, rows, read_gbs = os.cpu_count(), {}, [], None
    if torch is not None:
        read_gbs = read_rate_gbs(torch)
        on_torch = by_dataset({k: torch.from_numpy(v).cuda() for k, v in columns.items()}, counts)
        cases = list(tally_cases(on_torch, "torch", "cuda", 0))
        if cupy is not None:
            on_cupy = {name: {k: cupy.asarray(v) for k, v in c.items()} for name, c in on_torch.items()}
            cases += tally_cases(on_cupy, "cupy", "cuda", 0)
            if cuda_histogram is not None:
                cases += cuda_histogram_cases(cuda_histogram, on_cupy)
        rows += run_cases(cases, n, torch, repeats, read_gbs, skipped, errors, results)
    cases = list(tally_cases(host, "numpy", "cpu", 0)) + list(tally_cases(host, "numpy", "cpu", 1))
    if bh is not None:
        cases += list(boost_cases(bh, host, 0)) + list(boost_cases(bh, host, 1))
    if hist is not None:
        cases += hist_cases(hist, host)
    rows += run_cases(cases, n, None, cpu_repeats, read_gbs, skipped, errors, results)

    git = ["git", "rev-parse", "--short", "HEAD"]
    commit = os.environ.get("TALLY_COMMIT") or subprocess.run(git, capture_output=True, text=True,
                                                              cwd=Path(__file__).parent).stdout.strip()
    meta = dict(date=time.strftime("%Y-%m-%d"), commit=commit or "unknown",
                device=torch.cuda.get_device_name() if torch is not None else f"CPU only ({platform.machine()})",
                cpus=cpus, cpu=platform.processor() or platform.machine(), python=platform.python_version(),
                versions=versions(dict(tally=tally, numpy=np, torch=torch, cupy=cupy, boost_histogram=bh, hist=hist,
                                       cuda_histogram=cuda_histogram,
                                       awkward=optional("awkward") if cuda_histogram is not None else None)),
                events=n, datasets=dict(zip(DATASETS, counts)), seed=args.seed,
                moved_off_edges=moved, repeats=repeats, cpu_repeats=cpu_repeats, histograms=HISTOGRAMS,
                input_bytes_per_event=INPUT_BYTES)
    found = checks(results)
    result = dict(meta=meta, read_gbs=read_gbs, rows=rows, targets=targets(rows), checks=found,
                  checks_passed=all(c["passed"] for c in found) and not errors, errors=errors, skipped=skipped)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(table(result))
    return 0 if result["checks_passed"] else 1


if __name__ == "__main__":
    sys.exit(main())

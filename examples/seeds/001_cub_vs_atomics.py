"""Seed 001, CUB against atomicAdd against warp/shared-private counters, reproduced with tally.

The seed counts int32 samples in [0, bins) three ways: histogram_atomic (one global atomicAdd per
sample), CUB's DeviceHistogram::HistogramEven (num_levels = bins + 1 over [0, bins): block-private
counts merged at the end) and histogram_warp_shared (per-thread counters in registers, summed
across the warp with shuffles, then shared and global atomics), on uniform data, one hot bin
(every sample 0) and skewed data (80% in bin 0), with 100 samples and 10 bins. Here the same
counts are tally.histogram(x, bins, range=(0, bins)) with every tally strategy by name:

  the seed's kernel        tally strategy      technique
  histogram_atomic         global_atomic       one device-memory atomic per sample
  CUB HistogramEven        shared              a block-private copy in shared memory, merged at the end
  histogram_warp_shared    register            per-lane counters in registers (<= 29 bins)
  -                        warp_aggregated     lanes with the same bin add once (__match_any_sync)
  -                        global_atomic_vec   16-byte loads, runs of equal bins added once
  -                        shared_replicated   up to 32 interleaved shared copies a block
  -                        cluster, partitioned   Hopper's distributed shared memory; sorted tiles
  -                        automatic           the planner's choice

beside, in the same run on the same samples: cupy.bincount(x, minlength=bins), which calls CUB's
HistogramEven with the seed's num_levels = bins + 1 over [0, bins) where CUPY_ACCELERATORS holds
cub (set here before cupy is imported) in the cupy versions whose bincount calls CUB (the script
reads this cupy's source and says), cupy.histogram (CUB's HistogramRange over its edges, so),
torch.histc and torch.bincount. Sizes 100 (the seed's) to 2^28 (--quick: to
2^24), 10, 256 and 4096 bins. Without a CUDA device the seed's 100-sample example and its
num_levels lesson run on tally's CPU backend, and the timing is skipped.

    python examples/seeds/001_cub_vs_atomics.py [--quick] [--out FILE.json]
"""

import inspect
import os

# cupy reads CUPY_ACCELERATORS when it is imported: CUB for its histogram routines, as the seed.
_accelerators = [a for a in os.environ.get("CUPY_ACCELERATORS", "").split(",") if a]
if "cub" not in _accelerators:
    os.environ["CUPY_ACCELERATORS"] = ",".join(["cub", *_accelerators])

import numpy as np  # noqa: E402

import tally  # noqa: E402
from _timing import histc_input, main, plan_note  # noqa: E402

DISTRIBUTIONS = ("uniform", "hotspot", "skewed")
BINS = (10, 256, 4096)
# (strategy, the seed's kernel it stands for, or "")
STRATEGIES = (("global_atomic", "histogram_atomic"), ("warp_aggregated", ""), ("global_atomic_vec", ""),
              ("shared", "as CUB's block-private counts"), ("shared_replicated", ""),
              ("register", "histogram_warp_shared"), ("cluster", ""), ("partitioned", ""), ("automatic", ""))


def host_samples(rng, n, bins, distribution):
    """The seed's generators: uniform in [0, bins); all 0 (hotspot); skewed: a uniform draw t,
    0 where t < 0.8 bins (80%), else t."""
    if distribution == "hotspot":
        return np.zeros(n, np.int32)
    t = rng.integers(0, bins, n, dtype=np.int32)
    return np.where(t < (8 * bins) // 10, 0, t).astype(np.int32) if distribution == "skewed" else t


def seed_example(report, torch):
    """The seed's run: 100 samples, 10 bins, each distribution, printed as the seed prints them
    (on the CPU backend, with or without a GPU)."""
    rng = np.random.default_rng(0)
    print("\n== the seed's example: 100 int32 samples, 10 bins, tally.histogram(x, 10, range=(0, 10)), CPU")
    for distribution in DISTRIBUTIONS:
        x = host_samples(rng, 100, 10, distribution)
        counts, _ = tally.histogram(x, bins=10, range=(0, 10))
        want = np.bincount(x, minlength=10)
        report.check("seed example, 100 samples", f"{distribution}", counts, want, n=x.size,
                     show=" ".join(str(int(c)) for c in counts))
    # The seed's num_levels lesson: 10 unit bins need 11 levels; 10 levels make 9 bins of 1.111.
    x = host_samples(rng, 100, 10, "uniform")
    print("  num_levels: CUB's num_levels is bins + 1; tally and numpy take the bins:")
    for bins, cub_levels in ((10, 11), (9, 10)):
        counts, edges = tally.histogram(x, bins=bins, range=(0, 10))
        want, want_edges = np.histogram(x, bins=bins, range=(0, 10))
        report.check("num_levels", f"bins={bins} (CUB num_levels={cub_levels}), counts", counts, want, n=x.size)
        report.check("num_levels", f"bins={bins} (CUB num_levels={cub_levels}), edges", edges, want_edges, n=x.size,
                     show=", ".join(f"{e:.4g}" for e in edges[:4]) + ", ...")


def cupy_with_cub():
    """cupy (None where it is missing or finds no device), and for its bincount and histogram
    whether they call CUB here: True, False, or None where this cupy does not tell."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None, {}
    except Exception:  # no cupy, or no device: cupy raises its own error types
        return None, {}
    try:
        from cupy._core import _accelerator  # cupy's own record of the accelerators it read
        on = _accelerator.ACCELERATOR_CUB in _accelerator.get_routine_accelerators()
    except Exception:  # another cupy layout: unknown
        on = None
    cub = {}
    for name in ("bincount", "histogram"):
        try:  # this cupy's function calls CUB's DeviceHistogram where CUB is on
            calls = "device_histogram" in inspect.getsource(getattr(cupy, name))
        except (OSError, TypeError):
            calls = None
        cub[name] = False if on is False else None if on is None or calls is None else calls
    return cupy, cub


def timing(report, torch):
    cupy, cub = cupy_with_cub()
    report.cupy = cupy
    cub_label = {True: "CUB", False: "no CUB", None: "CUB unknown"}
    if cupy is None:
        print("cupy: not installed or no device; its rows are left out")
    else:
        print(f"cupy {cupy.__version__}, CUPY_ACCELERATORS={os.environ['CUPY_ACCELERATORS']}: bincount "
              f"{cub_label[cub['bincount']]}, histogram {cub_label[cub['histogram']]}")
    sizes = [100, 10_000, 1_000_000, 1 << 24] + ([] if report.quick else [1 << 26, 1 << 28])
    gen = torch.Generator(device="cuda").manual_seed(1)
    for bins in BINS:
        report.section(f"int32, {bins} bins: tally strategies against CUB, torch",
                       "tally.histogram(x, bins, range=(0, bins), strategy=...); n/a: tally refuses "
                       "the strategy for this fill")
        for distribution in DISTRIBUTIONS:
            for n in sizes:
                if distribution == "hotspot":
                    x = torch.zeros(n, dtype=torch.int32, device="cuda")
                else:
                    x = torch.randint(0, bins, (n,), dtype=torch.int32, device="cuda", generator=gen)
                    if distribution == "skewed":
                        x = torch.where(x < (8 * bins) // 10, 0, x).to(torch.int32)
                want = np.bincount(x.cpu().numpy(), minlength=bins)
                common = dict(n=n, bins=bins, distribution=distribution, nbytes=4 * n)
                exp = f"int32, {bins} bins"
                for strategy, kernel in STRATEGIES:
                    name = f"tally {strategy}" + (f" ({kernel})" if kernel else "")
                    report.timed(exp, name,
                                 lambda s=strategy: tally.histogram(x, bins, range=(0, bins), strategy=s)[0],
                                 want, strategy=strategy, **common,
                                 note=plan_note(x, strategy, bins=bins, range=(0, bins)))
                if cupy is not None:
                    xc = cupy.asarray(x)  # the same memory
                    report.timed(exp, f"cupy.bincount(x, minlength) [{cub_label[cub['bincount']]}]",
                                 lambda: cupy.bincount(xc, minlength=bins), want, kind="peer", lib="cupy", **common,
                                 note="HistogramEven, num_levels = bins + 1" if cub["bincount"] else "")
                    report.timed(exp, f"cupy.histogram(x, bins, range) [{cub_label[cub['histogram']]}]",
                                 lambda: cupy.histogram(xc, bins, range=(0, bins))[0], want, kind="peer",
                                 lib="cupy", **common, note="HistogramRange" if cub["histogram"] else "")
                xh, label, note = histc_input(torch, x, bins)
                report.timed(exp, label, lambda: torch.histc(xh, bins=bins, min=0, max=bins), want, kind="peer",
                             **common, note=note)
                report.timed(exp, "torch.bincount(x, minlength=bins)",
                             lambda: torch.bincount(x, minlength=bins), want, kind="peer", **common)


if __name__ == "__main__":
    main(__doc__, "001", "CUB vs atomicAdd vs warp/shared-private histograms", seed_example, timing)

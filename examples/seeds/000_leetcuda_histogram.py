"""Seed 000, LeetCUDA's histogram kernels, reproduced with tally.

LeetCUDA's histogram.py counts a torch int32 CUDA tensor with two kernels of its extension,
histogram_i32 (one sample a thread, one global atomicAdd each) and histogram_i32x4 (an int4 load of
4 samples a thread, 4 global atomicAdds), into max(a) + 1 int32 bins, and prints its example:
[0..9] repeated 1000 times, 1000 in each bin. Here the same calls are tally.bincount(a) (numpy's
bincount: max(a) + 1 bins, from the data as LeetCUDA's torch::max) with the tally strategy that is
each kernel's technique:

  LeetCUDA kernel     tally strategy       what both do
  histogram_i32       global_atomic        one device-memory atomic per sample, one sample a thread
  histogram_i32x4     global_atomic_vec    16-byte loads of several samples a thread, device atomics
                                           (tally adds a run of equal bins with one atomic)
  -                   automatic            the planner's choice (shared-memory copies for these bins)

and, timed in the same run on the same tensors, torch.bincount and torch.histc. Without a CUDA
device the example runs on tally's CPU backend (numpy input) and the timing is skipped.

    python examples/seeds/000_leetcuda_histogram.py [--quick] [--out FILE.json]
"""

import numpy as np

import tally
from _timing import histc_input, main

# LeetCUDA's kernels and the tally strategy that is each one's technique.
KERNELS = (("histogram_i32", "global_atomic"), ("histogram_i32x4", "global_atomic_vec"))


def example(report, torch):
    """The seed's example: a = [0..9] x 1000 (int32), every bin 1000."""
    a = np.array(list(range(10)) * 1000, dtype=np.int32)
    want = np.bincount(a)
    assert want.tolist() == [1000] * 10  # the seed's expected output, by numpy
    print("\n== LeetCUDA's example: a = [0..9] x 1000, int32; bins = max(a) + 1")
    ok = report.check("[0..9] x 1000", "tally.bincount(a), CPU backend", tally.bincount(a), want, n=a.size)
    if torch is None:
        print(f"[0..9] x 1000 -> 1000 each: {'ok' if ok else 'FAIL'} (CPU)")
        return
    a_cuda = torch.tensor(list(range(10)) * 1000, dtype=torch.int32).cuda()  # the seed's own line
    for kernel, strategy in KERNELS:
        h = tally.bincount(a_cuda, strategy=strategy)
        print("-" * 80)
        for i, count in enumerate(h.tolist()):  # the seed's printout, h_i32 i: count
            print(f"h_{kernel.removeprefix('histogram_')} {i}: {count}")
        ok &= report.check("[0..9] x 1000", f"tally.bincount(a, strategy='{strategy}') for {kernel}", h, want, n=a.size)
    print("-" * 80)
    print(f"[0..9] x 1000 -> 1000 each: {'ok' if ok else 'FAIL'} (CPU and CUDA)")


def samples(torch, gen, n, bins, distribution):
    """n int32 samples in [0, bins): the seed's pattern ([0..bins-1] repeated) or uniform."""
    if distribution == "seed pattern":
        return (torch.arange(n, device="cuda", dtype=torch.int64) % bins).to(torch.int32)
    return torch.randint(0, bins, (n,), device="cuda", dtype=torch.int32, generator=gen)


def timing(report, torch):
    sizes = [1 << 20, 1 << 22] if report.quick else [1 << 20, 1 << 24, 1 << 28]
    gen = torch.Generator(device="cuda").manual_seed(0)
    for bins in (10, 256):
        report.section(f"LeetCUDA's kernels as tally strategies, int32, {bins} bins",
                       "bincount(x): max(x) + 1 bins from the data (a host read of the max, as LeetCUDA's "
                       "torch::max); minlength=bins: given, one pass")
        for distribution in ("seed pattern", "uniform"):
            for n in sizes:
                x = samples(torch, gen, n, bins, distribution)
                want = np.bincount(x.cpu().numpy(), minlength=bins)
                nbytes = 4 * n
                common = dict(n=n, bins=bins, distribution=distribution, nbytes=nbytes)
                exp = f"int32, {bins} bins"
                for kernel, strategy in KERNELS:
                    report.timed(exp, f"{kernel} -> tally {strategy}",
                                 lambda s=strategy: tally.bincount(x, strategy=s), want,
                                 strategy=strategy, **common)
                report.timed(exp, "tally automatic", lambda: tally.bincount(x), want,
                             strategy="automatic", **common)
                report.timed(exp, "tally automatic, minlength=bins", lambda: tally.bincount(x, minlength=bins),
                             want, strategy="automatic", **common)
                report.timed(exp, "torch.bincount(x)", lambda: torch.bincount(x), want, kind="peer", **common)
                xh, label, note = histc_input(torch, x, bins)
                report.timed(exp, label, lambda: torch.histc(xh, bins=bins, min=0, max=bins), want,
                             kind="peer", **common, note=note)


if __name__ == "__main__":
    main(__doc__, "000", "LeetCUDA's histogram i32 / i32x4 kernels", example, timing)

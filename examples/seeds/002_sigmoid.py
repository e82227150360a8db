"""Seed 002, LeetCUDA's sigmoid kernels, reproduced with tally.

LeetCUDA's sigmoid.py times six kernels of its extension against torch.sigmoid on (S, K) tensors,
S and K in {1024, 2048, 4096}, each writing into a given output: f32 and f32x4 on float32,
f16, f16x2, f16x8 and f16x8_pack on float16 (randn values). Here each kernel is
tally.sigmoid(x, out=y, strategy=...) with the tally strategy of its technique, beside the other
strategies, tally's automatic choice and torch.sigmoid(x, out=y), timed in the same run:

  LeetCUDA kernel      tally strategy   the seed's kernel / tally's, as each reads and computes
  sigmoid_f32          scalar           one float a thread / the same, 256-thread blocks
  sigmoid_f32x4        packed128        one float4 (16 B) load and store, 4 a thread / 16-byte
                                        loads of 4 floats, two vectors a thread in flight
                       x4               (the same 4 floats a thread, but four 4-byte loads)
  sigmoid_f16          scalar           one half a thread, computed in half (hexp) / one a
                                        thread, computed in f32 and rounded once
  sigmoid_f16x2        x2               one half2 (4 B) load, 2 a thread / 2 a thread as two
                                        2-byte loads: tally has no half2 load
  sigmoid_f16x8        x8               four half2 loads, 8 a thread / 8 a thread as eight
                                        2-byte loads: no half2 loads either
  sigmoid_f16x8_pack   packed128        one 128-bit load of 8 halves / 16-byte loads of 8
                                        halves, two a thread, results rounded two at a time
  -                    x2 / x8 (f32), x4 (f16), packed128_resident (a grid of the resident
                       blocks, each striding), automatic (= packed128)

LeetCUDA compiles with --use_fast_math and clamps its inputs (to +-88.4 in f32, [-9.70, 11.09]
in f16); tally computes in f32 within 1.5 ulp of the exact sigmoid, and its f16 results are the
rounding of such a value (docs/patterns.md): every row is checked within that bound of a float64
sigmoid of a host copy of x before it is timed, and its bits compared with tally's CPU backend
and with torch.sigmoid. GB/s: bytes read + written (2 x 4 or 2 x 2 an element). Without a CUDA
device the seed's smallest shape runs on tally's CPU backend and the timing is skipped.

    python examples/seeds/002_sigmoid.py [--quick] [--out FILE.json]
"""

import numpy as np

import tally
from _timing import SigmoidReference, main, with_bits

SHAPES = [(s, k) for s in (1024, 2048, 4096) for k in (1024, 2048, 4096)]  # the seed's SKs
QUICK_SHAPES = [(1024, 1024), (4096, 4096)]
# dtype -> (the seed's tag for its output, the LeetCUDA kernel or "", tally strategy, how it loads)
LADDER = {
    "f32": (("f32", "sigmoid_f32", "scalar", "one a thread"),
            ("f32x4", "sigmoid_f32x4", "packed128", "16-byte loads, as float4"),
            ("f32x4", "sigmoid_f32x4", "x4", "4 a thread, 4-byte loads"),
            ("", "", "x2", "2 a thread"), ("", "", "x8", "8 a thread"),
            ("", "", "packed128_resident", "resident grid, striding"),
            ("", "", "automatic", "tally.sigmoid's choice")),
    "f16": (("f16", "sigmoid_f16", "scalar", "one a thread, f32 math"),
            ("f16x2", "sigmoid_f16x2", "x2", "2-byte loads: no half2"),
            ("f16x8", "sigmoid_f16x8", "x8", "2-byte loads: no half2"),
            ("f16x8pack", "sigmoid_f16x8_pack", "packed128", "16-byte loads of 8 halves"),
            ("", "", "x4", "4 a thread"),
            ("", "", "packed128_resident", "resident grid, striding"),
            ("", "", "automatic", "tally.sigmoid's choice")),
}
NUMPY = {"f32": np.float32, "f16": np.float16}


def row_name(tag, kernel, strategy):
    return f"{tag} ({kernel}): tally {strategy}" if kernel else f"tally {strategy}"


def checks(report, torch):
    """The ladder's strategies are tally's; the seed's smallest shape on the CPU backend, printed
    as the seed prints its outputs (the first two values)."""
    used = sorted({s for ladder in LADDER.values() for *_, s, _ in ladder})
    print("\n== tally's map strategies: " + ", ".join(tally.patterns.UNARY_STRATEGIES))
    report.check("strategies", "the ladder's strategies are tally's", np.array([s in tally.patterns.UNARY_STRATEGIES
                                                                               for s in used]),
                 np.ones(len(used), bool), show=", ".join(used))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1024, 1024)).astype(np.float32)
    print("\n== S=1024, K=1024 (randn) on tally's CPU backend, against a float64 sigmoid")
    for dtype in ("f32", "f16"):
        xs = x.astype(NUMPY[dtype])
        y = tally.sigmoid(xs)
        report.check(dtype, f"{dtype}: tally.sigmoid(x), CPU backend", y, None, n=x.size,
                     compare=SigmoidReference(xs), show=f"out_{dtype}: {[round(float(v), 8) for v in y.ravel()[:2]]}")


def timing(report, torch):
    gen = torch.Generator(device="cuda").manual_seed(0)
    for s, k in (QUICK_SHAPES if report.quick else SHAPES):
        x = torch.randn((s, k), device="cuda", generator=gen)  # the seed's randn, drawn on the device
        for dtype, xs in (("f32", x), ("f16", x.half())):
            ys = torch.zeros_like(xs)
            host_x = xs.cpu().numpy()
            reference = SigmoidReference(host_x)
            cpu = tally.sigmoid(host_x)  # the CPU backend's bits, which the CUDA backend's should equal
            th = torch.sigmoid(xs).cpu().numpy()
            report.section(f"S={s}, K={k}, {dtype}: LeetCUDA's kernels as tally strategies, beside torch.sigmoid",
                           "tally.sigmoid(x, out=y, strategy=...); check: within docs/patterns.md's bound of a float64 "
                           "sigmoid; GB/s: bytes read + written", columns=("", "S x K"))
            common = dict(n=s * k, bins=None, distribution=f"{s}x{k}", nbytes=2 * xs.numel() * xs.element_size(),
                          reference="the float64 sigmoid by more than 1.5 ulp")
            ms = {}
            for tag, kernel, strategy, how in LADDER[dtype]:
                ys.zero_()  # as the seed's run_benchmark: a row that writes nothing cannot pass
                row = report.timed(dtype, row_name(tag, kernel, strategy),
                                   lambda st=strategy: tally.sigmoid(xs, out=ys, strategy=st), None,
                                   strategy=strategy, note=how,
                                   compare=with_bits(reference, {"the CPU backend": cpu, "torch": th}), **common)
                ms[strategy] = row and row["ms"]
            ys.zero_()
            row = report.timed(dtype, f"{dtype}_th: torch.sigmoid(x, out=y)", lambda: torch.sigmoid(xs, out=ys),
                               None, kind="peer", compare=with_bits(reference, {"tally": cpu}), **common)
            if row and ms["automatic"]:
                print(f"  tally automatic against torch.sigmoid: {row['ms'] / ms['automatic']:.2f}x the speed")


if __name__ == "__main__":
    main(__doc__, "002", "LeetCUDA's sigmoid f32 / f32x4 / f16 / f16x2 / f16x8 / f16x8_pack", checks, timing,
         verdict="are within docs/patterns.md's bound of the float64 sigmoid")

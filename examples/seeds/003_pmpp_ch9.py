"""Seed 003, PMPP chapter 9 (parallel histograms), reproduced with tally.

The chapter counts the letters of "programming massively parallel processors" in the groups a-d,
e-h, ..., y-z, then climbs a ladder of kernels on a 1920x1080 gray image (256 bins) -- naive global
atomics, shared-memory privatization, thread coarsening, warp aggregation -- and extends the
histogram to RGB images, weights and two dimensions. Here each step is tally's Python API, each
kernel the tally strategy of its technique:

  PMPP's kernel                      tally strategy      note
  histogram_atomic (naive)           global_atomic       one device atomic per sample
  histogram_privatized               shared              one block-private copy in shared memory
  histogram_coarsened                shared              tally's kernel on one contiguous column
                                                         already loads 16 bytes a thread: PMPP's
                                                         steps 2 and 3 are one tally kernel (the
                                                         plan's loads are printed beside the row)
  histogram_aggregated (match_any)   warp_aggregated     __match_any_sync aggregation, device atomics
  -                                  shared_replicated   up to 32 shared copies a block: a hot bin
                                                         spread over copies instead of aggregated
  histogram_register (< 16 bins)     register            per-lane counts in registers, <= 29 bins
  -                                  automatic           the planner's choice

The letters (and, with numpy inputs, the RGB, weighted and 2-D histograms) are checked on tally's
CPU backend everywhere; with a CUDA device every step runs on torch CUDA tensors, timed beside
torch's own call for the same count.

    python examples/seeds/003_pmpp_ch9.py [--quick] [--out FILE.json]
"""

import numpy as np

import tally
from _timing import host, main, plan_note

TEXT = "programming massively parallel processors"
GROUPS = ("a-d", "e-h", "i-l", "m-p", "q-t", "u-x", "y-z")
# The groups' edges on byte codes: a-d is [97, 101), ..., y-z [121, 123] (numpy's last bin is
# closed: byte 123, '{', would join y-z; the texts here hold none).
EDGES = np.array([97, 101, 105, 109, 113, 117, 121, 123])
HEIGHT, WIDTH = 1080, 1920
GRAY = ("random", "realistic", "black")
LADDER = (("global_atomic", "1 naive global atomics"), ("shared", "2+3 privatized, coarsened"),
          ("warp_aggregated", "4 warp aggregation"), ("shared_replicated", "replicated privatization"),
          ("global_atomic_vec", "vectorized global atomics"), ("automatic", "the planner's choice"))
LETTER_STRATEGIES = ("global_atomic", "shared", "warp_aggregated", "shared_replicated", "register", "automatic")
IMAGE_STRATEGIES = ("global_atomic", "warp_aggregated", "shared", "shared_replicated", "automatic")
WEIGHTED_STRATEGIES = ("global_atomic", "shared", "automatic")  # those that sum f32 weights exactly


def brute_force_letters(text):
    """PMPP's rule, one character at a time: c - 'a' in [0, 26) counts in group (c - 'a') / 4."""
    counts = [0] * len(GROUPS)
    for ch in text:
        position = ord(ch) - ord("a")
        if 0 <= position < 26:
            counts[position // 4] += 1
    return np.array(counts)


def letters(report, torch):
    """The chapter's text histogram, two ways with tally, against the brute-force count."""
    want = brute_force_letters(TEXT)
    assert "{" not in TEXT  # byte 123 would join y-z under numpy's closed last bin
    codes = np.frombuffer(TEXT.encode(), np.uint8)
    print(f'\n== PMPP\'s text histogram: "{TEXT}", letters in groups of 4')
    # (a) letters mapped to group codes, counted by bincount
    letter_codes = codes[(codes >= 97) & (codes <= 122)]
    report.check("letters", "group codes, tally.bincount", tally.bincount((letter_codes - 97) // 4, minlength=7), want,
                 n=codes.size)
    # (b) a variable axis over the byte codes
    report.check("letters", "byte codes, tally.histogram(bins=edges)", tally.histogram(codes, bins=EDGES)[0], want,
                 n=codes.size)
    if torch is not None:
        t = torch.tensor(list(TEXT.encode()), dtype=torch.uint8, device="cuda")
        for s in LETTER_STRATEGIES:
            report.check_call("letters", f"CUDA, strategy={s}",
                              lambda s=s: tally.histogram(t, bins=EDGES, strategy=s)[0], want, n=codes.size)
    print("PMPP letters: " + ", ".join(f"{g} {int(c)}" for g, c in zip(GROUPS, want)))


def gray_frame(rng, kind):
    """A 1920x1080 u8 image: uniform noise, a smooth gradient plus noise, or all black."""
    if kind == "random":
        return rng.integers(0, 256, (HEIGHT, WIDTH), dtype=np.uint8)
    if kind == "black":
        return np.zeros((HEIGHT, WIDTH), np.uint8)
    yy, xx = np.mgrid[0:HEIGHT, 0:WIDTH]
    base = 40 + 150 * (xx / (WIDTH - 1)) * (0.6 + 0.4 * np.sin(np.pi * yy / HEIGHT))
    return np.clip(base + rng.normal(0, 6, base.shape), 0, 255).astype(np.uint8)


def rgb_frame(rng, kind):
    """A 1920x1080x3 interleaved u8 image: uniform noise, or three gradients plus noise."""
    if kind == "random":
        return rng.integers(0, 256, (HEIGHT, WIDTH, 3), dtype=np.uint8)
    yy, xx = np.mgrid[0:HEIGHT, 0:WIDTH]
    planes = [255 * xx / (WIDTH - 1), 255 * yy / (HEIGHT - 1), 128 + 60 * np.sin(xx / 200 + yy / 150)]
    return np.stack([np.clip(p + rng.normal(0, 8, p.shape), 0, 255) for p in planes], -1).astype(np.uint8)


def dyadic_weights(rng, shape):
    """float32 weights (k + 0.5) / 1024: their sums are exact in float64, so numpy's float64
    bincount rounded once to float32 is the correctly rounded sum tally returns."""
    return ((rng.integers(0, 1024, shape) + 0.5) / 1024).astype(np.float32)


# ---- the references, on the host, for numpy inputs and for host copies of CUDA ones ----
def gray_counts(img):
    return np.bincount(host(img).ravel(), minlength=256)


def rgb_counts(img):
    pixels = host(img).reshape(-1, 3)
    return np.stack([np.bincount(pixels[:, c], minlength=256) for c in range(3)])


def weighted_sums(img, w):
    return np.bincount(host(img).ravel(), weights=host(w).ravel().astype(np.float64), minlength=256).astype(np.float32)


def rg_counts(img):
    pixels = host(img).reshape(-1, 3)
    return np.histogram2d(pixels[:, 0], pixels[:, 1], 64, [[0, 256], [0, 256]])[0]


# ---- tally's calls, the same for numpy and torch inputs ----
def rgb_call(img, strategy="automatic"):
    return tally.Histogram(tally.axis.integer(0, 256), channels=3, strategy=strategy).fill(img)


def weighted_call(img, w, strategy="automatic"):
    return tally.histogram(img, bins=256, range=(0, 256), weights=w, strategy=strategy)[0]


def rg_call(img, strategy="automatic"):
    pixels = img.reshape(-1, 3)  # a view: R and G are strided columns, read in place
    return tally.histogram2d(pixels[:, 0], pixels[:, 1], bins=64, range=[[0, 256], [0, 256]], strategy=strategy)[0]


def cpu_images(report):
    """RGB, weighted and 2-D histograms of one 1920x1080 frame on tally's CPU backend."""
    rng = np.random.default_rng(3)
    print("\n== RGB (channels=3), weighted and 2-D histograms of a 1920x1080 frame, numpy inputs (CPU)")
    gray, rgb = gray_frame(rng, "realistic"), rgb_frame(rng, "realistic")
    w = dyadic_weights(rng, gray.shape)
    report.check("gray", "gray, tally.histogram(img, 256, (0, 256))",
                 tally.histogram(gray, bins=256, range=(0, 256))[0], gray_counts(gray), n=gray.size)
    report.check("rgb", "RGB, tally.Histogram(..., channels=3)", rgb_call(rgb), rgb_counts(rgb), n=gray.size)
    report.check("weighted", "weighted, float32 sums", weighted_call(gray, w), weighted_sums(gray, w), n=gray.size)
    report.check("2-D", "R x G, tally.histogram2d, 64 x 64 bins", rg_call(rgb), rg_counts(rgb), n=gray.size)


def timed_letters(report, torch):
    n = (1 << 22) if report.quick else (1 << 26)
    line = (TEXT + " ").encode()
    text = np.frombuffer((line * (n // len(line) + 1))[:n], np.uint8)
    x = torch.from_numpy(text.copy()).cuda()
    want = np.histogram(text, EDGES)[0]
    report.section(f"letters of a {n >> 20} MiB text in PMPP's 7 groups",
                   "tally.histogram(x, bins=edges on byte codes, strategy=...)")
    common = dict(n=n, bins=7, distribution="text", nbytes=n)
    for s in LETTER_STRATEGIES:
        report.timed("letters", f"tally {s}", lambda s=s: tally.histogram(x, bins=EDGES, strategy=s)[0], want,
                     strategy=s, **common, note=plan_note(x, s, bins=EDGES))
    e = torch.tensor(EDGES, dtype=x.dtype, device="cuda")
    report.timed("letters", "torch.bucketize + bincount",
                 lambda: torch.bincount(torch.bucketize(x, e, right=True), minlength=9)[1:8], want,
                 kind="peer", **common)


def ladder(report, torch, frames):
    """PMPP's ladder on a gray image of `frames` 1920x1080 frames, each kind of image."""
    rng = np.random.default_rng(9)
    for kind in GRAY:
        frame = torch.from_numpy(gray_frame(rng, kind)).cuda()
        img = frame.expand(frames, HEIGHT, WIDTH).contiguous()
        n = img.numel()
        want = gray_counts(frame) * frames
        common = dict(n=n, bins=256, distribution=kind, nbytes=n)
        ms = {}
        for s, step in LADDER:
            row = report.timed("ladder", f"{step}: tally {s}",
                               lambda s=s: tally.histogram(img, bins=256, range=(0, 256), strategy=s)[0], want,
                               strategy=s, **common, note=plan_note(img, s, bins=256, range=(0, 256)))
            ms[s] = row and row["ms"]
        row = report.timed("ladder", "torch.bincount(img.view(-1), minlength=256)",
                           lambda: torch.bincount(img.view(-1), minlength=256), want, kind="peer", **common)
        ms["torch.bincount"] = row and row["ms"]
        first = ms.pop("global_atomic")
        if first:
            print("  speed-up over step 1 (global_atomic), as PMPP's table: "
                  + ", ".join(f"{k} {first / v:.1f}x" for k, v in ms.items() if v))


def images(report, torch, frames):
    """RGB, weighted and 2-D histograms of `frames` frames, tally's strategies beside torch."""
    rng = np.random.default_rng(10)
    for kind in ("random", "realistic"):
        rgb1, gray1 = rgb_frame(rng, kind), gray_frame(rng, kind)
        rgb = torch.from_numpy(rgb1).cuda().expand(frames, HEIGHT, WIDTH, 3).contiguous()
        gray = torch.from_numpy(gray1).cuda().expand(frames, HEIGHT, WIDTH).contiguous()
        w = torch.from_numpy(dyadic_weights(rng, (frames, HEIGHT, WIDTH))).cuda()
        n = gray.numel()
        # The frames are copies of one: its counts times frames (the weights differ frame to frame).
        want_rgb, want_rg = rgb_counts(rgb1) * frames, rg_counts(rgb1) * frames
        want_w = weighted_sums(gray, w)
        rgb_bytes = dict(n=n, distribution=kind, nbytes=3 * n)
        for s in IMAGE_STRATEGIES:
            report.timed("rgb", f"RGB channels=3: tally {s}", lambda s=s: rgb_call(rgb, s), want_rgb,
                         strategy=s, bins=3 * 256, **rgb_bytes)
        report.timed("rgb", "RGB: torch.bincount of each channel",
                     lambda: torch.stack([torch.bincount(rgb[..., c].reshape(-1), minlength=256) for c in range(3)]),
                     want_rgb, kind="peer", bins=3 * 256, **rgb_bytes)
        for s in WEIGHTED_STRATEGIES:
            report.timed("weighted", f"weighted f32: tally {s}", lambda s=s: weighted_call(gray, w, s), want_w,
                         strategy=s, n=n, bins=256, distribution=kind, nbytes=5 * n)
        report.timed("weighted", "weighted: torch.bincount(weights=)",
                     lambda: torch.bincount(gray.view(-1), weights=w.view(-1), minlength=256), want_w,
                     kind="peer", n=n, bins=256, distribution=kind, nbytes=5 * n)
        for s in IMAGE_STRATEGIES:
            report.timed("2-D", f"R x G 64x64: tally {s}", lambda s=s: rg_call(rgb, s), want_rg,
                         strategy=s, bins=64 * 64, **rgb_bytes)
        report.timed("2-D", "R x G: torch.bincount(r/4 * 64 + g/4)",
                     lambda: torch.bincount(((rgb[..., 0].long() >> 2) * 64 + (rgb[..., 1].long() >> 2)).view(-1),
                                            minlength=64 * 64).view(64, 64),
                     want_rg, kind="peer", bins=64 * 64, **rgb_bytes)


def checks(report, torch):
    letters(report, torch)
    cpu_images(report)


def timing(report, torch):
    timed_letters(report, torch)
    for frames in ((1, 8) if report.quick else (1, 64)):
        report.section(f"PMPP's ladder, gray u8 image of {frames} x 1920x1080, 256 bins",
                       "step: PMPP's kernel; note: tally.plan's loads (16 B loads = coarsened) and copies")
        ladder(report, torch, frames)
        report.section(f"RGB, weighted and 2-D, {frames} x 1920x1080",
                       "GB/s: bytes of the image read (3 a pixel for RGB and R x G; 1 + 4 weighted)")
        images(report, torch, frames)


if __name__ == "__main__":
    main(__doc__, "003", "PMPP chapter 9: parallel histograms", checks, timing)

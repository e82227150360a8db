"""What the seed scripts share: their options, the CUDA-event timer, the copy bandwidth they are
measured against, the checks against numpy and the report (a table on stdout, rows in JSON).

A timed row is checked first: its result, read back to the host, must equal numpy's on a host
copy of the same samples. A tally row that differs prints FAIL and makes the script exit 1; a
peer's difference (torch.histc's float32 counts, say) is printed as a note, not a failure.
Where a result is a rounded float (the patterns' seeds, 002 and 004), `compare=` checks it
against a float64 reference within a bound instead (`SigmoidReference`, `within`, `close`).
"""

import argparse
import json
import platform
import statistics
import sys
import traceback

import numpy as np

import tally


def parse_args(doc):
    p = argparse.ArgumentParser(description=doc.strip().split("\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="small sizes and few repetitions (the whole script under a minute on an H200)")
    p.add_argument("--out", metavar="FILE.json", help="also write the rows as JSON")
    p.add_argument("--reps", type=int, default=None, help="timed calls a row (default 20, --quick 5)")
    return p.parse_args()


def gpu():
    """(torch, None) where torch and tally's CUDA backend both find a device, else (None, why)."""
    try:
        import torch
    except ImportError:
        return None, "torch is not installed"
    if not torch.cuda.is_available():
        return None, "torch finds no CUDA device"
    cuda = next((b for b in tally.backends() if b["name"] == "cuda"), None)
    if cuda is None or not cuda["usable"]:
        return None, "tally's CUDA backend is not usable: " + (cuda["detail"] if cuda else "not compiled in")
    return torch, None


def host(x):
    """A result as a numpy array on the host (torch, cupy, numpy, or a tally.Histogram's cells)."""
    if isinstance(x, tally.Histogram):
        return x.values()
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    if hasattr(x, "get") and not isinstance(x, np.ndarray):
        return x.get()
    return np.asarray(x)


def same(got, want, peer=False):
    """Equal shape and values: tally's exactly as numpy's (counts, float sums as numbers); a
    peer's after rounding to numpy's dtype (torch's float64 sums where numpy gives float32)."""
    got, want = host(got), np.asarray(want)
    if peer and got.dtype != want.dtype:
        got = got.astype(want.dtype)
    return got.shape == want.shape and np.array_equal(got, want)


def histc_input(torch, x, bins):
    """torch.histc's input, row name and note: the integer samples where torch counts them
    (its CUDA histc does), else a float32 copy (its CPU histc has no integer kernel)."""
    try:
        torch.histc(x[:16], bins=bins, min=0, max=bins)
        return x, "torch.histc(x, bins, 0, bins)", ""
    except RuntimeError:
        return x.float(), "torch.histc(x.float(), bins, 0, bins)", "a float32 copy: 4 bytes a sample too"


def compared(got, want, compare=None, peer=False):
    """(ok, detail): same() where compare is None, else compare(host(got), want), which gives a
    bool or (bool, detail): a bound's check, its detail what the row's note shows (max ulps...)."""
    if compare is None:
        return same(got, want, peer), ""
    result = compare(host(got), want)
    return (bool(result[0]), result[1]) if isinstance(result, tuple) else (bool(result), "")


def joined(*notes):
    return "; ".join(n for n in notes if n)


# ---- float references with a bound (002 and 004: results rounded, not counted) ----
EPS32 = 2.0 ** -24  # float32's unit roundoff


def ulp32(r):
    """The spacing of float32 values at float64 values r (as tests/patterns measures ulps)."""
    e = np.frexp(np.maximum(np.abs(np.asarray(r, np.float64)), 2.0 ** -126))[1]
    return np.ldexp(1.0, e - 24)


def sigmoid64(x):
    """1 / (1 + exp(-x)) in float64, the reference of every sigmoid row."""
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-np.asarray(x, np.float64)))


class SigmoidReference:
    """The float64 sigmoid of a host copy of x (float32 or float16) and the bound docs/patterns.md
    gives tally.sigmoid: float32 within 1.5 ulp; float16 the rounding of a float32 value within
    it. Called as a compare= of the report: (within the bound, detail); the detail is the largest
    error in float32 ulps (float32) or the share of correctly rounded elements (float16)."""
    ULPS = 1.5

    def __init__(self, x):
        x = np.asarray(x)
        self.dtype = x.dtype
        self.exact = sigmoid64(x)
        self.ulp = ulp32(self.exact)
        tol = self.ULPS * self.ulp
        if self.dtype == np.float32:
            self.lo, self.hi = self.exact - tol, self.exact + tol
        else:  # rounding is monotonic: the float16 values of [exact - tol, exact + tol]
            self.lo, self.hi = (self.exact - tol).astype(self.dtype), (self.exact + tol).astype(self.dtype)
            self.rounded = self.exact.astype(self.dtype)

    def __call__(self, got, want=None):
        got = np.asarray(got)
        if got.shape != self.exact.shape or got.dtype != self.dtype:
            return False, f"{got.dtype} {got.shape}, expected {self.dtype} {self.exact.shape}"
        ok = bool(np.all((self.lo <= got) & (got <= self.hi)))  # NaN fails
        if self.dtype == np.float32:
            return ok, f"max {np.max(np.abs(got.astype(np.float64) - self.exact) / self.ulp):.2f} ulp"
        return ok, f"{np.mean(got == self.rounded):.2%} correctly rounded"


def with_bits(compare, others):
    """compare= (a bound's check) that also says whether the result has the bits of each array
    of `others` (label -> array): tally's CPU backend, a peer's result."""
    def both(got, want):
        ok, detail = compared(got, want, compare)
        for label, bits in others.items():
            if np.shape(got) != np.shape(bits):
                detail = joined(detail, f"not {label}'s shape")
                continue
            differ = np.count_nonzero(np.asarray(got) != bits)
            detail = joined(detail, f"{label}'s bits" if not differ else
                            f"{differ / np.size(got):.3%} differ from {label}")
        return ok, detail
    return both


def within(tolerance, what="|got - want| <= bound"):
    """A compare= that holds where |got - want| <= tolerance elementwise (want and tolerance
    float64, as arrays or numbers); the detail: the largest |got - want| over the bound."""
    def compare(got, want):
        got = np.asarray(got, np.float64)
        if got.shape != np.shape(want):
            return False, f"shape {got.shape}, expected {np.shape(want)}"
        error = np.abs(got - want)
        ok = bool(np.all(error <= tolerance))  # NaN fails
        worst = np.max(error / np.maximum(tolerance, np.finfo(np.float64).tiny))
        return ok, f"{worst:.2g} of the bound {what}"
    return compare


def close(rtol=1e-5, atol=0.0):
    """A compare= of numpy.allclose(got, want, rtol, atol) (the CuPy seed's own checks); the
    detail: the largest error in float32 ulps of want."""
    def compare(got, want):
        got = np.asarray(got)
        if got.shape != np.shape(want):
            return False, f"shape {got.shape}, expected {np.shape(want)}"
        ulps = np.max(np.abs(got.astype(np.float64) - want) / ulp32(want))
        return bool(np.allclose(got, want, rtol=rtol, atol=atol)), f"max {ulps:.3g} ulp"
    return compare


def sum_bound(x):
    """docs/patterns.md's bound on a float32 sum of x: (n + 1) eps sum |x|."""
    x = np.asarray(x, np.float64)
    return (x.size + 1) * EPS32 * np.abs(x).sum()


def import_cupy():
    """cupy, where it is installed and finds a device; else None."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:  # no cupy, or no device: cupy raises its own error types
        return None
    return cupy


def shown(a):
    """A short text of a result: its values, or its shape and total where they are many."""
    a = host(a)
    if a.size > 16:
        return f"{' x '.join(map(str, a.shape))} cells, total {a.sum():.10g}"
    return np.array2string(a, threshold=16)


def plan_note(x, strategy, **kw):
    """The plan's loads and copies for this fill (which shows coarsening), or '' if refused."""
    try:
        p = tally.plan(x, strategy=strategy, **kw)
    except Exception:  # a refused strategy (the row says why) or a planner error: no note
        return ""
    loads = f"{p['vector_bytes']} B loads x{p['unroll']}" if p["vector_bytes"] else "one sample a load"
    cluster = f", clusters of {p['cluster_blocks']} blocks" if p["cluster_blocks"] else ""
    return f"{p['strategy']}: {loads}, {p['replicas']} cop{'y' if p['replicas'] == 1 else 'ies'}{cluster}"

def not_applicable(error):
    """tally refuses a strategy that does not apply to a fill with a ValueError naming it."""
    return isinstance(error, ValueError) and "strategy" in str(error)


class Report:
    """The rows of one seed script: checked, timed, printed as they come and written as JSON."""

    def __init__(self, seed, title, args, verdict="equal numpy's (or the brute-force) results"):
        self.seed, self.title, self.args, self.verdict = seed, title, args, verdict
        self.quick = args.quick
        self.reps = args.reps or (5 if args.quick else 20)
        self.warm_ms = 5.0 if args.quick else 20.0      # warm-up time before a row's timed calls
        self.budget_ms = 100.0 if args.quick else 400.0  # a slow row is timed fewer times (>= 3)
        self.rows, self.failures = [], []
        self.torch, self.cupy, self.skipped = None, None, None
        self.copy_gbps = None
        self.device = f"cpu ({platform.machine()})"
        print(f"seed {seed}: {title}")
        print(f"tally {tally.__version__}, numpy {np.__version__}, python {platform.python_version()}"
              + (", --quick" if args.quick else ""))

    # ---- checks without timing (the CPU parts, and the seeds' small examples) ----
    def check(self, experiment, name, got, want, *, n=None, show=None, compare=None):
        """A tally result against numpy's or a brute-force count (or, with compare=, within a
        bound of a float64 reference); prints ok or FAIL."""
        ok, detail = compared(got, want, compare)
        if not ok:
            self.failures.append(f"{experiment}: {name}" + (f" ({detail})" if detail else ""))
        text = show if show is not None else shown(got)
        print(f"  {'ok  ' if ok else 'FAIL'} {name}: {text}" + (f" ({detail})" if detail else "")
              + ("" if ok or compare else f"\n       numpy / brute force: {shown(want)}"))
        device = "cuda" if getattr(got, "is_cuda", False) else "cpu"
        bins = None if compare else np.asarray(want).size
        self.rows.append(self._row(experiment, name, n, bins, None, None, None, ok, "tally",
                                   None, joined("checked, not timed", detail), device))
        return ok

    def check_call(self, experiment, name, call, want, *, n=None, show=None, compare=None):
        """check() of call()'s result; a strategy tally refuses for this fill prints n/a, any
        other error FAIL."""
        try:
            got = call()
        except Exception as e:  # a refusal is n/a; anything else fails the row
            if not_applicable(e):
                print(f"  n/a  {name}: {e}")
                self.rows.append(self._row(experiment, name, n, None, None, None, None, None, "tally", None,
                                           f"n/a: {e}", "cuda"))
                return True
            self.failures.append(f"{experiment}: {name}: {type(e).__name__}: {e}")
            print(f"  FAIL {name}: {type(e).__name__}: {e}")
            return False
        return self.check(experiment, name, got, want, n=n, show=show, compare=compare)

    # ---- the GPU ----
    def start_gpu(self, torch):
        """Note the device and measure the copy bandwidth the rows are compared with."""
        self.torch = torch
        self.device = torch.cuda.get_device_name()
        nbytes = (256 if self.quick else 1024) << 20
        src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        ms = self.median_ms(lambda: dst.copy_(src))
        # A device-to-device copy reads and writes every byte: both count, as a histogram's read
        # of its samples is set against the memory's whole rate.
        self.copy_gbps = 2 * nbytes / ms / 1e6
        print(f"device {self.device}, torch {torch.__version__}, CUDA {torch.version.cuda}")
        print(f"copy bandwidth: {self.copy_gbps:.0f} GB/s (device-to-device copy of {nbytes >> 20} MiB, "
              "bytes read + written, median of the same run)")

    def median_ms(self, fn, lib="torch"):
        """Median milliseconds of fn() between CUDA events on the current stream, after warm-up
        calls (at least 2, and warm_ms of GPU time or 100 calls: the rows follow each other, so
        the clocks are up after the first); a slow call is timed fewer times (at least 3)."""
        if lib == "cupy":  # cupy's events on cupy's current stream
            cp = self.cupy
            event, record, elapsed = cp.cuda.Event, (lambda e: e.record()), cp.cuda.get_elapsed_time
        else:  # the stream fetched once: record() would make a Stream object a call
            torch, stream = self.torch, self.torch.cuda.current_stream()
            event, record = (lambda: torch.cuda.Event(enable_timing=True)), (lambda e: e.record(stream))
            elapsed = (lambda start, end: start.elapsed_time(end))

        def timed():
            start, end = event(), event()
            record(start)
            fn()
            record(end)
            end.synchronize()
            return elapsed(start, end)
        self.torch.cuda.synchronize()
        warm, done = 0.0, 0
        while done < 2 or (warm < self.warm_ms and done < 100):
            warm += timed()
            done += 1
        reps = max(3, min(self.reps, int(self.budget_ms * done / max(warm, 1e-3))))
        return statistics.median(timed() for _ in range(reps))

    def section(self, title, note=None, columns=("bins", "distribution")):
        """A table's title, its note and its header; `columns` names the two middle columns
        (the rows' bins and distribution)."""
        print(f"\n== {title}")
        if note:
            print(f"   {note}")
        print(f"  {'row':<52} {'n':>11} {columns[0]:>6}  {columns[1]:<12} {'ms':>9} {'GB/s':>8} "
              f"{'of copy':>7}  check")

    def timed(self, experiment, name, call, want, *, n, bins, distribution, nbytes, kind="tally",
              strategy=None, lib="torch", note="", compare=None, reference="numpy", extra=None):
        """Check call() against `want` (numpy's counts; with compare=, compare(result, want)
        within a bound of `reference`), then time it; print and keep the row. A strategy tally
        refuses for this fill is a row marked n/a; any other error a FAIL. `extra`: more fields
        of the row, each a function of its median ms (TFLOP/s, say)."""
        try:
            got = call()
        except Exception as e:  # a refused strategy is n/a; anything else is reported below
            if kind == "tally" and not_applicable(e):
                self._print(name, n, bins, distribution, None, None, None, "n/a", str(e).split(";")[0][:90])
                self.rows.append(self._row(experiment, name, n, bins, distribution, None, None, None, kind,
                                           strategy, "n/a: " + str(e)))
                return None
            got = e
        error = ""
        if isinstance(got, Exception):
            error = f"{type(got).__name__}: {(str(got).strip().splitlines() or [''])[0]}"
        ok, detail = (False, "") if error else compared(got, want, compare, peer=kind != "tally")
        if not ok and kind == "tally":
            why = error or joined(f"differs from {reference}", detail)
            self.failures.append(f"{experiment}: {name} (n {n}, bins {bins}, {distribution}): {why}")
            self._print(name, n, bins, distribution, None, None, None, "FAIL", why)
            self.rows.append(self._row(experiment, name, n, bins, distribution, None, None, False, kind,
                                       strategy, why))
            return None
        if error:  # a peer that cannot do it: said, not timed
            self._print(name, n, bins, distribution, None, None, None, "-", error[:90])
            self.rows.append(self._row(experiment, name, n, bins, distribution, None, None, None, kind,
                                       strategy, error))
            return None
        note = joined("" if ok else f"differs from {reference}", detail, note)
        ms = self.median_ms(call, lib)
        gbps = nbytes / ms / 1e6
        more = {k: f(ms) for k, f in (extra or {}).items()}
        note = joined(note, ", ".join(f"{v:.4g} {k}" for k, v in more.items()))
        self._print(name, n, bins, distribution, ms, gbps, gbps / self.copy_gbps, "ok" if ok else "differs", note)
        row = self._row(experiment, name, n, bins, distribution, ms, gbps, ok, kind, strategy, note)
        row.update(more)
        self.rows.append(row)
        return row

    def _print(self, name, n, bins, distribution, ms, gbps, fraction, check, note=""):
        num = (lambda v, f: f"{v:{f}}" if v is not None else "-")
        print(f"  {name:<52} {num(n, ''):>11} {num(bins, ''):>6}  {distribution or '-':<12} {num(ms, '9.4f'):>9} "
              f"{num(gbps, '8.4g'):>8} {num(fraction, '7.3g'):>7}  {check}" + (f"  ({note})" if note else ""))

    def _row(self, experiment, name, n, bins, distribution, ms, gbps, ok, kind, strategy, note="", device="cuda"):
        """One row of --out: ok is None where nothing was checked (n/a, a peer that failed)."""
        return {"seed": self.seed, "experiment": experiment, "row": name, "kind": kind, "strategy": strategy,
                "device": device, "n": n, "bins": bins, "distribution": distribution, "ms": ms, "gbps": gbps,
                "fraction": None if gbps is None else gbps / self.copy_gbps, "ok": ok, "note": note}

    # ---- the end ----
    def skip(self, why):
        self.skipped = why
        print(f"\nskipped: no CUDA device ({why}); the CPU checks above ran")

    def finish(self):
        """Write --out, print the verdict; the exit status: 1 if a tally row failed, else 0."""
        if self.args.out:
            result = {"seed": self.seed, "title": self.title, "quick": self.quick, "device": self.device,
                      "tally": tally.__version__, "numpy": np.__version__,
                      "torch": getattr(self.torch, "__version__", None),
                      "cupy": getattr(self.cupy, "__version__", None),
                      "copy_gbps": self.copy_gbps, "skipped": self.skipped, "failures": self.failures,
                      "rows": self.rows}
            with open(self.args.out, "w") as f:
                json.dump(result, f, indent=1)
            print(f"rows written to {self.args.out}")
        if self.failures:
            print(f"\nFAIL: {len(self.failures)} failures (tally rows that differ from numpy or raised):")
            for f in self.failures:
                print(f"  {f}")
            return 1
        checked = sum(r["ok"] is not None and r["kind"] == "tally" for r in self.rows)
        print(f"\nok: all {checked} checked tally rows {self.verdict}")
        return 0


def main(doc, seed, title, checks, timing, **report):
    """Parse the options; run checks(report, torch) (the seed's examples: on the CPU, and on the
    GPU where torch is not None), then timing(report, torch) where there is a GPU, else say it
    was skipped; exit with the report's status. `report`: Report's options (verdict=)."""
    args = parse_args(doc)
    report = Report(seed, title, args, **report)
    torch, why = gpu()
    try:
        checks(report, torch)
        if torch is None:
            report.skip(why)
        else:
            report.start_gpu(torch)
            timing(report, torch)
    except Exception as e:  # keep the rows so far (--out) and fail, with the traceback above
        traceback.print_exc()
        report.failures.append(f"the run stopped: {type(e).__name__}: {e}")
    sys.exit(report.finish())

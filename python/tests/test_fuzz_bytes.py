"""Fuzz of tally's deserialization: serialized histograms (tally::deserialize through
Hist.from_bytes), pickles of tally.Histogram (read by an unpickler that finds no class but
Histogram's) and pickle states given to Histogram.__setstate__, mutated (bit flips, inserted,
deleted, repeated and spliced bytes, length and count fields set to huge values, states with
missing, extra and mistyped keys and mutated blobs), loaded in a worker process under a memory
limit (RLIMIT_AS) and a time limit. Each load is either an error of tally's own kinds
(ValueError, MemoryError or TypeError, exactly; for a broken pickle stream the pickle module's
own errors, of any kind but SystemError) or a histogram that saves to exactly the bytes or state
loaded (threads above this machine's load as this machine's, and version 2 without exact sums as
version 1, as serialize.hpp says; device None as "auto"); never a crash or a hang, and loading
takes time linear in the input's size (within 1 s + 1 s per MiB, also on crafted inputs of
0.25, 1 and 4 MiB built to make a reader work hard).

Past failures live in fuzz_corpus/serialized/*.json ({"case": {"kind": "R" (bytes), "P" (a
pickle) or "S" (a pickled state), "hex": ...}}, "xfail" for a known bug), replayed every run. The short run
is part of the test suite; the long run:

    TALLY_FUZZ_EXAMPLES=100000 PYTHONPATH=build/python .venv/bin/python -m pytest -q \\
        -p no:cacheprovider python/tests/test_fuzz_bytes.py
"""

import json
import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tally
from tally import _tally
from test_fuzz import corpus_cases, fuzz_settings, note, survey

MEMORY_LIMIT = 1 << 30  # bytes the worker may map beyond what it has after importing tally
HANG_SECONDS = 60  # a load that takes longer is a hang
SECONDS_PER_MIB = 1.0  # rejection (or loading) within 1 s + this per MiB of input (a busy machine's)


# ---- the format's fields (tally/serialize.hpp), to aim mutations at lengths and counts ----

def fields(blob):
    """[(offset, width, name)] of the integer fields of a serialized histogram, as far as the
    bytes parse; lengths and counts are what mutations set to huge values."""
    out, at = [], 8

    def take(width, name):
        nonlocal at
        if at + width > len(blob):
            raise IndexError(name)
        out.append((at, width, name))
        at += width
        return int.from_bytes(blob[at - width:at], "little")

    try:
        take(4, "version")
        take(1, "storage")
        take(1, "flow")
        for name in ("backend", "strategy"):
            n = take(1, name + " length")
            at += n
        take(4, "threads")
        for name in ("samples", "underflow", "overflow", "nan"):
            take(8, name)
        storage = blob[12]
        for _ in range(min(take(4, "axes"), 64)):
            tag = take(1, "tag")
            if tag == 0:
                take(8, "bins")
                at += 16
                n = take(1, "edge type length")
                at += n
            elif tag == 1:
                take(8, "bins")
                for end in ("lo", "hi"):
                    take(1, end + " sign")
                    take(8, end + " magnitude")
            elif tag in (2, 3, 4):
                n = take(8, "edges")
                at += 8 * min(n, len(blob))
            elif tag == 5:
                take(8, "integer lo")
                take(8, "integer hi")
            else:
                return out
        take(8, "cells")
        out.append((at, 8 if storage != 1 else 4, "first cell"))
    except IndexError:
        pass
    return out


BIG_VALUES = [0, 1, 2, 3, 7, 255, 2**16, 2**31 - 1, 2**31, 2**32 - 1, 2**53, 2**62, 2**63 - 1, 2**63,
              2**64 - 1, "size", "size/8", "+1", "-1"]


def set_field(blob, offset, width, value):
    old = int.from_bytes(blob[offset:offset + width], "little")
    value = {"size": len(blob), "size/8": len(blob) // 8, "+1": old + 1, "-1": old - 1}.get(value, value)
    blob[offset:offset + width] = (value % (1 << (8 * width))).to_bytes(width, "little")


def threads_offset(blob):
    for offset, _, name in fields(blob):
        if name == "threads":
            return offset
    return None


# ---- base histograms: every axis kind, storage, flow, options ----

def _filled(axes, **options):
    h = tally.Histogram(axes, **options)
    rng = np.random.default_rng(len(axes) * 7 + len(options))
    n = 300
    samples = []
    for a in ([axes] if not isinstance(axes, list) else axes):
        e = a.edges
        lo, hi = (float(e[0]), float(e[-1])) if np.isfinite(e[[0, -1]]).all() else (-5.0, 5.0)
        x = rng.uniform(lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo), n)
        if a.kind == "integer":
            samples.append(np.floor(x).astype(np.int64))
        else:
            x[::37] = np.nan
            samples.append(x)
    if options.get("channels"):
        h.fill(rng.integers(0, 256, (n, options["channels"])).astype(np.uint8))
    elif options.get("weighted") or options.get("storage"):
        w = rng.normal(size=n) * 2.0 ** rng.integers(-40, 40, n)
        w[5] = np.inf
        h.fill(*samples, weight=w)
    else:
        h.fill(*samples)
    return h


def base_histograms():
    A = _tally.Axis
    return [
        _filled(tally.axis.regular(10, -3, 7)),
        _filled(tally.axis.regular(7, 0, 1, "f32"), flow=True),
        _filled(tally.axis.regular(5, -2, 2, "f16"), flow=True, count_bits=32),
        _filled(tally.axis.regular(6, -1, 1, "bf16")),
        _filled(A.regular_exact(4, True, 2**63, False, 2**63 - 1), flow=True),
        _filled(tally.axis.variable([-np.inf, -1, 0, 0, 2.5, np.inf]), flow=True),
        _filled(A.variable_integers(np.array([-5, 0, 0, 3, 2**40], np.int64))),
        _filled(A.variable_integers(np.array([0, 7, 2**63, 2**64 - 1], np.uint64)), flow=True),
        _filled(tally.axis.integer(-3, 9), count_bits=32),
        _filled([tally.axis.regular(3, 0, 1), tally.axis.integer(0, 4)], flow=True),
        _filled([tally.axis.regular(2, -1, 1), tally.axis.variable([0, 1, 3]), tally.axis.integer(-2, 1)],
                weighted=True),
        _filled(tally.axis.regular(4, -1, 1), weighted=True, flow=True),
        _filled(tally.axis.regular(3, -1, 1), weighted=True, exact_sums=True, flow=True),
        _filled(tally.axis.regular(5, -1, 1), storage="weight", flow=True),
        _filled(tally.axis.integer(0, 3), storage="weight", exact_sums=True),
        _filled(tally.axis.regular(8, 0, 256), channels=3, flow=True),
        tally.Histogram(tally.axis.regular(2, 0, 1), strategy="cpu_private", device="cpu", threads=1),
        _filled(tally.axis.integer(0, 2000)),
    ]


BASES = base_histograms()
BLOBS = sorted({h._hists[i].to_bytes() for h in BASES for i in range(len(h._hists))}, key=len)
PICKLES = [pickle.dumps(h, protocol=p) for h in BASES[::3] + BASES[-3:] for p in (2, 4, 5)]
STATES = [h.__getstate__() for h in BASES]


# ---- the worker: loads under a memory limit, answers one JSON line per input ----

WORKER = r"""
import copy, io, json, pickle, resource, sys, time, traceback
from tally import _tally
from tally._histogram import Histogram

cap, limit = int(sys.argv[1]), int(sys.argv[2])
with open("/proc/self/status") as f:
    vm = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (vm + limit, resource.getrlimit(resource.RLIMIT_AS)[1]))

def threads_normalized(blob):
    # What the loaded histogram saves: threads at most this machine's, and format version 1
    # unless it keeps exact sums (storage 3), as serialize.hpp says.
    if len(blob) > 12 and blob[8:12] == b"\x02\0\0\0" and blob[12] != 3:
        blob = blob[:8] + b"\x01\0\0\0" + blob[12:]
    offset = 14  # the threads follow the backend's and the strategy's names
    for _ in range(2):
        offset += 1 + (blob[offset] if offset < len(blob) else 0)
    if offset + 4 > len(blob):
        return blob
    t = int.from_bytes(blob[offset:offset + 4], "little")
    return blob[:offset] + min(t, cap).to_bytes(4, "little") + blob[offset + 4:] if t <= 2**31 - 1 else blob

def backend_of(blob):
    n = blob[14] if len(blob) > 14 else 0
    name = blob[15:15 + n].decode("ascii", "replace")
    return name if name in ("auto", "cpu", "cuda") else "auto"

class Recording(Histogram):
    def __setstate__(self, state):
        self.given = copy.deepcopy(state)
        super().__setstate__(state)

class Loader(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) == ("tally._histogram", "Histogram"):
            return Recording
        if (module, name) in (("copyreg", "_reconstructor"), ("builtins", "object"), ("_codecs", "encode")):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed here")

def renamed(blob, backend):
    n = blob[14]
    return blob[:14] + bytes([len(backend)]) + backend.encode() + blob[15 + n:]

def same_state(h, given):
    # "" where the state saved again is the state given (numpy's and pickle's forms of the same
    # values; device None as "auto", a CUDA histogram where CUDA is not usable as "auto", threads
    # capped), else what differs.
    out = h.__getstate__()
    usable = {n for n, _, u, _ in _tally.backends() if u}
    device = given["device"] if given["device"] in usable or given["device"] == "auto" else "auto"
    # A storage's moments compare as more histograms (format 2 kept Weight's as "squares", 1 none).
    squares = given.get("squares")
    moments = list(given.get("moments", [squares] if squares is not None else []))
    blobs = [threads_normalized(b) for b in list(given["histograms"]) + moments]
    want = (device, given["channels"], bool(given["flow"]), 3)
    if (out["device"], out["channels"], out["flow"], out["format"]) != want:
        return f"options {out['device'], out['channels'], out['flow']} for {want[:3]}"
    saved = out["histograms"] + out["moments"]
    if saved == blobs:
        return ""
    if saved == [renamed(b, out["device"]) for b in blobs]:
        return "device-vs-backend"
    return "histograms " + " ".join(b.hex() for b in saved)[:600]

def in_setstate(e):
    return any(f.name in ("__setstate__", "_check_channels") for f in traceback.extract_tb(e.__traceback__))

for line in sys.stdin:
    request = json.loads(line)
    kind, data = request["kind"], bytes.fromhex(request["hex"])
    started = time.perf_counter()
    reply = {}
    try:
        if kind == "R":
            h = _tally.Hist.from_bytes(data, backend_of(data))
            reply["secs"] = time.perf_counter() - started
            out = h.to_bytes()
            reply["same"] = out == threads_normalized(data)
            if not reply["same"]:
                reply["out"] = out.hex()
        else:
            if kind == "P":
                h = Loader(io.BytesIO(data)).load()
            else:
                h = Recording.__new__(Recording)
                h.__setstate__(pickle.loads(data))
            reply["secs"] = time.perf_counter() - started
            reply["loaded"] = type(h).__name__
            if isinstance(h, Recording) and hasattr(h, "given"):  # (a stream may skip __setstate__)
                reply["diff"] = same_state(h, h.given)
                reply["same"] = not reply["diff"]
    except BaseException as e:
        reply.update(error=type(e).__name__, message=str(e)[:300], secs=time.perf_counter() - started,
                     setstate=in_setstate(e), bases=[c.__name__ for c in type(e).__mro__])
    print(json.dumps(reply), flush=True)
"""


class Worker:
    """One worker process; restarted after it dies or hangs."""

    def __init__(self, cap):
        self.cap, self.proc = cap, None

    def start(self):
        here = os.path.dirname(os.path.dirname(tally.__file__))  # the worker imports this tally
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join([here] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER, str(self.cap), str(MEMORY_LIMIT)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, env=env)

    def load(self, kind, data):
        """The worker's reply, or {"crash": ...} / {"hang": ...}."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        request = json.dumps({"kind": kind, "hex": data.hex()}) + "\n"
        try:
            self.proc.stdin.write(request.encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            return self._died()
        ready, _, _ = select.select([self.proc.stdout], [], [], HANG_SECONDS + len(data) / 2**20 * 10)
        if not ready:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            return {"hang": f"no answer in {HANG_SECONDS} s"}
        line = self.proc.stdout.readline()
        if not line:
            return self._died()
        return json.loads(line)

    def _died(self):
        code = self.proc.wait()
        self.stderr.seek(0)
        err = self.stderr.read().decode(errors="replace")[-2000:]
        self.proc = None
        return {"crash": f"worker exited with {code}", "stderr": err}

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def _threads_cap():
    """The thread count a histogram saved with 2^31 - 1 threads loads with here."""
    blob = bytearray(tally.Histogram(tally.axis.regular(2, 0, 1))._hists[0].to_bytes())  # backend "auto"
    offset = threads_offset(blob)
    blob[offset:offset + 4] = (2**31 - 1).to_bytes(4, "little")
    out = _tally.Hist.from_bytes(bytes(blob), "auto").to_bytes()
    return int.from_bytes(out[offset:offset + 4], "little")


@pytest.fixture(scope="module")
def worker():
    w = Worker(_threads_cap())
    yield w
    w.close()


ALLOWED = ("ValueError", "MemoryError", "TypeError")

# Outcomes of known bugs, reported and kept in the corpus as xfail: (test of a reply, the bug).
# The random runs pass over them. (Found and since fixed: names that are not UTF-8 raised
# UnicodeDecodeError; a pickle state's device that differs from its bytes' backend loaded.)
KNOWN_BUGS = []


def check_reply(kind, data, reply, known=True):
    """The load's outcome is one the module docstring allows (or, with `known`, a known bug's)."""
    if known and any(test(reply) for test, _ in KNOWN_BUGS) and (kind != "P" or reply.get("setstate") or
                                                                 "diff" in reply):
        return
    assert "crash" not in reply, reply
    assert "hang" not in reply, reply
    mib = len(data) / 2**20
    assert reply["secs"] <= 1 + SECONDS_PER_MIB * mib, f"{reply['secs']:.2f} s for {mib:.2f} MiB"
    if "error" in reply:
        if kind == "P" and not reply["setstate"]:  # the pickle module's own errors, of any kind but these
            assert "Exception" in reply["bases"] and reply["error"] != "SystemError", reply
        else:
            assert reply["error"] in ALLOWED, reply
        return
    if "same" in reply:
        assert reply["same"], f"loaded, but saved again as other bytes: {reply.get('out') or reply.get('diff')}"


def load_and_check(worker, kind, data, known=True):
    def check(case):
        reply = worker.load(kind, data)
        note(f"{kind} {data.hex()} -> {reply}")
        check_reply(kind, data, reply, known)
    if known:
        survey({"kind": kind, "hex": data.hex()}, check)
    else:  # the corpus: no survey, so that its xfails stay strict
        check(None)


# ---- mutations ----

@st.composite
def mutated(draw, sources):
    blob = bytearray(draw(st.sampled_from(sources)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "flip", "set", "insert", "delete", "splice", "field", "field",
                                   "truncate", "repeat"]))
        n = len(blob)
        at = draw(st.integers(0, max(n - 1, 0)))
        if op == "flip" and n:
            blob[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and n:
            blob[at] = draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF]))
        elif op == "insert":
            blob[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del blob[at:at + draw(st.integers(1, 16))]
        elif op == "splice":
            other = draw(st.sampled_from(sources))
            blob = blob[:at] + other[draw(st.integers(0, max(len(other) - 1, 0))):]
        elif op == "field":
            fs = fields(bytes(blob)) if sources is BLOBS else []
            if fs:
                offset, width, _ = fs[draw(st.integers(0, len(fs) - 1))]
                set_field(blob, offset, width, draw(st.sampled_from(BIG_VALUES)))
            elif n >= 8:  # a pickle: a window of 1, 4 or 8 bytes set to a huge value
                width = draw(st.sampled_from([1, 4, 8]))
                set_field(blob, min(at, n - width), width, draw(st.sampled_from(BIG_VALUES)))
        elif op == "truncate":
            del blob[at:]
        elif op == "repeat" and n:
            end = min(n, at + draw(st.integers(1, 64)))
            blob[end:end] = blob[at:end] * draw(st.integers(1, 8))
    return bytes(blob)


@fuzz_settings(1500, 0.5)
@given(data=mutated(BLOBS))
def test_mutated_serialized_histograms(worker, data):
    load_and_check(worker, "R", data)


@fuzz_settings(500, 0.2)
@given(data=mutated(PICKLES))
def test_mutated_pickles(worker, data):
    load_and_check(worker, "P", data)


STATE_VALUES = [None, True, False, 0, 1, -1, 2, 3, 4, 2**63, 1.0, float("nan"), "cpu", "cuda", "auto", "gpu", "",
                b"x", [], (), {}, np.int64(3), np.bool_(True), np.float64(1.0), "histograms"]


@st.composite
def states(draw):
    state = dict(draw(st.sampled_from(STATES)))
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(["format", "device", "channels", "flow", "histograms", "extra"]))
        what = draw(st.sampled_from(["value", "value", "blobs", "drop"]))
        if what == "drop":
            state.pop(key, None)
        elif what == "blobs" or key == "histograms":
            blobs = draw(st.lists(st.one_of(st.sampled_from(BLOBS), mutated(BLOBS)), max_size=4))
            state["histograms"] = blobs if draw(st.booleans()) else tuple(blobs)
        else:
            state[key] = draw(st.sampled_from(STATE_VALUES))
    return state


@fuzz_settings(500, 0.2)
@given(state=states())
def test_mutated_pickle_states(worker, state):
    load_and_check(worker, "S", pickle.dumps(state))


# ---- crafted large inputs: rejection (or loading) in time linear in the size ----

def header(storage=0, flow=0, dims=1, samples=0, threads=0):
    out = b"TALLYHST" + struct.pack("<IBB", 1 if storage < 3 else 2, storage, flow)
    out += b"\x04auto\x09automatic" + struct.pack("<I", threads) + struct.pack("<4Q", samples, 0, 0, 0)
    return out + struct.pack("<I", dims)


def regular_axis(bins, lo=0.0, hi=1.0):
    return b"\x00" + struct.pack("<qdd", bins, lo, hi) + b"\x03f64"


def crafted(name, size):
    """An input of about `size` bytes built to make a reader work hard."""
    if name == "many_wide_regular_axes":  # the 17,241 axes of 124,984 bins per MiB
        dims = size // 29 // 2
        return header(dims=dims) + regular_axis(124984) * dims + bytes(size // 2)
    if name == "many_one_bin_axes":
        dims = (size - 100) // 29
        return header(dims=dims, samples=0) + regular_axis(1) * dims + struct.pack("<Q", 1) + bytes(8)
    if name == "many_variable_axes":
        axis = b"\x02" + struct.pack("<Q", 2) + struct.pack("<2d", 0.0, 1.0)
        dims = (size - 100) // len(axis)
        return header(dims=dims) + axis * dims + struct.pack("<Q", 1) + bytes(8)
    if name == "one_long_variable_axis":
        n = (size - 100) // 16
        edges = np.linspace(0, 1, n + 1).tobytes()
        return header() + b"\x02" + struct.pack("<Q", n + 1) + edges + struct.pack("<Q", n) + bytes(8 * n)
    if name == "huge_counts_claimed":
        return header(dims=2**32 - 1) + regular_axis(2**62) + bytes(size)
    if name == "valid_large":
        n = (size - 200) // 8
        counts = np.arange(n, dtype=np.uint64)
        return header(samples=int(counts.sum())) + regular_axis(n) + struct.pack("<Q", n) + counts.tobytes()
    if name == "exact_sums_many_cells":
        n = (size - 200) // 280
        return header(storage=3) + regular_axis(n) + struct.pack("<Q", n) + bytes(280 * n)
    if name == "many_regular_exact_axes":
        axis = b"\x01" + struct.pack("<qBQBQ", 3, 1, 2**63, 0, 2**63 - 1)
        dims = size // len(axis) // 2
        return header(dims=dims) + axis * dims + bytes(size // 2)
    raise ValueError(name)


CRAFTED = ["many_wide_regular_axes", "many_one_bin_axes", "many_variable_axes", "one_long_variable_axis",
           "huge_counts_claimed", "valid_large", "exact_sums_many_cells", "many_regular_exact_axes"]


@pytest.mark.parametrize("name", CRAFTED)
def test_crafted_inputs_take_linear_time(worker, name):
    for size in (2**18, 2**20, 2**22):
        data = crafted(name, size)
        reply = worker.load("R", data)
        check_reply("R", data, reply)
        if name == "valid_large":
            assert reply.get("same"), reply


@pytest.mark.parametrize("entry", corpus_cases("serialized"))
def test_corpus(worker, entry):
    load_and_check(worker, entry["case"]["kind"], bytes.fromhex(entry["case"]["hex"]), known=False)


def test_bases_load_as_saved(worker):
    """The unmutated inputs: each loads as exactly what was saved."""
    for blob in BLOBS:
        reply = worker.load("R", blob)
        assert reply.get("same"), reply
    for data in PICKLES:
        reply = worker.load("P", data)
        assert reply.get("same"), reply

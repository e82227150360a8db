"""Fuzz of the command-line tool (build/cli/tally): random and mutated arguments over small
input files (.npy, raw, PNG, JPEG-like bytes, weights; intact or mutated; FIFOs, device nodes,
symlinks and directories where a path is expected), each run in a fresh directory under a
memory limit and a timeout. Every run exits 0, or nonzero (1 or 2) with one clear
"tally: error: ..." line on stderr; never a signal, a hang, a traceback or "terminate called";
it writes only the outputs it was asked for (none when it fails, no temporary files), changes
no input and writes nothing outside its directory.

Past failures live in fuzz_corpus/cli/*.json ({"case": {"files": {name: hex}, "special": [...],
"args": [...]}}, "xfail" for a known bug), replayed every run. The short run is part of the test
suite; the long run:

    TALLY_FUZZ_EXAMPLES=100000 PYTHONPATH=build/python .venv/bin/python -m pytest -q \\
        -p no:cacheprovider python/tests/test_fuzz_cli.py

The tool is found beside the tally package's build directory (build/python -> build/cli/tally)
or at $TALLY_CLI; without it the tests are skipped."""

import hashlib
import json
import os
import pathlib
import resource
import shutil
import stat
import struct
import subprocess
import tempfile
import time
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tally
from test_fuzz import corpus_cases, fuzz_settings, note, survey

CLI = pathlib.Path(os.environ.get("TALLY_CLI") or pathlib.Path(tally.__file__).resolve().parents[2] / "cli" / "tally")
TIMEOUT = 30
MEMORY = 4 << 30  # RLIMIT_AS of a run
FILE_SIZE = 256 << 20  # RLIMIT_FSIZE of a run

pytestmark = pytest.mark.skipif(not CLI.is_file(), reason=f"the command-line tool is not built ({CLI})")


# ---- input files ----

def png(width, height, channels, depth, seed, compress=True):
    """A PNG as the format says: IHDR, one IDAT (filter 0 rows), IEND, each with its CRC."""
    rng = np.random.default_rng(seed)
    color = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    pixels = rng.integers(0, 2**depth, (height, width * channels)).astype(">u2" if depth == 16 else np.uint8)
    rows = b"".join(b"\0" + row.tobytes() for row in pixels)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows) if compress else rows) + chunk(b"IEND", b""))


def npy(dtype, shape, seed, fortran=False):
    rng = np.random.default_rng(seed)
    a = (rng.normal(size=shape) * 100).astype(dtype) if np.dtype(dtype).kind != "b" else rng.random(shape) < 0.5
    f = tempfile.TemporaryFile()
    np.save(f, np.asfortranarray(a) if fortran else a)
    f.seek(0)
    return f.read()


NPY_TYPES = ["<u1", "<i1", "<u2", "<i2", "<u4", "<i4", "<u8", "<i8", "<f2", "<f4", "<f8", ">f8", ">i4", "|b1",
             "<c16", "<U3"]


@st.composite
def mutations(draw, data):
    data = bytearray(data)
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "delete"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del data[at:]
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:
            del data[at:at + draw(st.integers(1, 8))]
    return bytes(data)


@st.composite
def input_files(draw):
    """{name: bytes}: a sample file of each kind, weights, an empty file."""
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(0, 300))
    cols = draw(st.sampled_from([None, None, 1, 2, 3, 4]))
    shape = (n,) if cols is None else (n, cols)
    files = {
        "a.npy": npy(draw(st.sampled_from(NPY_TYPES)), shape, seed, fortran=draw(st.integers(0, 9)) == 0),
        "r.bin": draw(st.binary(max_size=64)) if draw(st.booleans()) else np.random.default_rng(seed).bytes(8 * n),
        "p.png": png(draw(st.integers(1, 9)), draw(st.integers(1, 9)), draw(st.integers(1, 4)),
                     draw(st.sampled_from([8, 8, 16])), seed, compress=draw(st.integers(0, 9)) > 0),
        "j.jpg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + draw(st.binary(max_size=64)),
        "w.npy": npy(draw(st.sampled_from(["<f4", "<f8", "<i4", "<f8"])), (n + draw(st.sampled_from([0, 0, 0, 1])),),
                     seed + 1),
        "w.bin": np.random.default_rng(seed + 2).random(n).astype(draw(st.sampled_from(["<f4", "<f8"]))).tobytes(),
        "e.bin": b"",
    }
    for name in draw(st.lists(st.sampled_from(sorted(files)), max_size=2, unique=True)):
        files[name] = draw(mutations(files[name]))
    return files


# ---- arguments ----

PATHS = ["a.npy", "r.bin", "p.png", "j.jpg", "w.npy", "w.bin", "e.bin", "dir", "fifo", "missing.npy", "link.npy",
         "", "dev.csv"]
OUTPUTS = ["out.csv", "out.json", "out.txt", "plot.png", "plot.svg", "plot.jpg", "dir", "a.npy", "link.csv",
           "dev.csv", "", "sub/none.csv", "out.csv"]
VALUES = {  # option: (good values, bad values)
    "--dtype": (["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "bf16", "f32", "f64"],
                ["f128", "", "U8", "float32"]),
    "--bins": (["1", "2", "7", "64", "256", "1000", "3,5", "2,2,2", "65536", "010", "auto", "fd", "doane", "rice",
                "scott", "sqrt", "stone", "sturges"],
               ["0", "-3", "", "0x10", "1e1", "4,", "99999999999999999999", " 5", "1,0", "1000000000000", "Auto",
                "auto,fd", "fd,2"]),
    "--range": (["0,1", "-1,1", "0,256", "-5,5,0,3", "0,1,0,2", "-1e308,1e308", "1e-320,1e-310", "-9e18,9e18"],
                ["1,0", "0,0", "nan,1", "0,inf", "5", "0,1,2", "", "a,b", "0.5,3", "0,4611686018427387904"]),
    "--edges": (["0,1,2", "0,0,0", "-inf,0,inf", "0,0.5,1,100", "-1e308,1e308",
                 "0," + ",".join(str(i) for i in range(2, 200))], ["2,1", "nan", "", "1", "0,nan,1"]),
    "--channels": (["1", "2", "3", "4"], ["0", "65537", "-1", "x", ""]),
    "--chunk-mb": (["64", "1e-6", "0.001", "1048576"], ["0", "nan", "inf", "-1", "1048577", "", "1e7"]),
    "--backend": (["auto", "cpu"], ["cuda", "gpu", ""]),
    "--strategy": (["auto", "automatic", "cpu_private", "global_atomic"], ["shared", "register", "fastest", ""]),
    "--threads": (["0", "1", "2", "3", "1000"], ["-1", "2147483648", "x", ""]),
    "--counts": (["32", "64"], ["16", ""]),
}
FLAGS = ["--integer", "--nd", "--gray", "--flow", "--no-bars"]
JUNK = ["--", "-", "--bins=5", "--range=0,1", "-h", "--help", "--version", "\u00fc", "x" * 5000, "--bogus", "-x",
        "--out=out.csv", "--bins", "--no-bars=1"]
PLAN = {
    "--bins": ["1", "10", "0", "-1", "100000000", "x", ""],
    "--dtype": ["u8", "f32", "f64", "bf16", "x", ""],
    "--n": ["0", "1", "1000000", "-1", "99999999999999999999", "1e6", ""],
    "--weights": ["f64", "f32", "u8", "x"],
    "--kind": ["regular", "variable", "integer", "x"],
    "--channels": ["1", "3", "0", "65537"],
    "--dims": ["1", "2", "32", "33", "0"],
    "--backend": ["auto", "cpu", "cuda", "x"],
    "--strategy": ["auto", "cpu_private", "x"],
    "--threads": ["0", "1", "1000", "-1"],
    "--counts": ["32", "64", "8"],
}


@st.composite
def hist_args(draw):
    args = ["hist"]
    if draw(st.integers(0, 9)):
        args.append(draw(st.sampled_from(PATHS[:5] * 3 + PATHS)))
    used = set()
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["value"] * 6 + ["flag", "flag", "out", "plot", "weights", "junk"]))
        if kind == "value":
            option = draw(st.sampled_from(sorted(VALUES)))
            if option in used and draw(st.integers(0, 9)):  # repeated options, now and then
                continue
            used.add(option)
            good, bad = VALUES[option]
            args += [option, draw(st.sampled_from(good if draw(st.integers(0, 4)) else bad))]
        elif kind == "flag":
            args.append(draw(st.sampled_from(FLAGS)))
        elif kind in ("out", "plot", "weights"):
            if kind in used and draw(st.integers(0, 9)):
                continue
            used.add(kind)
            args += ["--" + kind, draw(st.sampled_from(
                (["out.csv", "out.json"] if kind == "out" else ["plot.png", "plot.svg"] if kind == "plot"
                 else ["w.npy", "w.bin"]) * 3 + (OUTPUTS if kind != "weights" else PATHS)))]
        elif draw(st.integers(0, 3)) == 0:
            args.append(draw(st.sampled_from(JUNK)))
    if draw(st.integers(0, 3)) == 0:
        args.append("--no-bars")
    return args


@st.composite
def plan_args(draw):
    args = ["plan"]
    for _ in range(draw(st.integers(0, 5))):
        option = draw(st.sampled_from(sorted(PLAN) + ["--weights"]))
        if option == "--weights" and draw(st.booleans()):
            args.append("--weights" if draw(st.booleans()) else "--weights=" + draw(st.sampled_from(PLAN["--weights"])))
        else:
            args += [option, draw(st.sampled_from(PLAN[option]))]
    return args


@st.composite
def cases(draw):
    which = draw(st.sampled_from(["hist"] * 8 + ["plan", "other"]))
    if which == "hist":
        args = draw(hist_args())
    elif which == "plan":
        args = draw(plan_args())
    else:
        args = draw(st.sampled_from([[], ["info"], ["bogus"], ["info", "--x"], ["--version"], ["--help"],
                                     ["hist", "-h"], ["plan", "--help"], [""], ["hist", "hist"]]))
    special = draw(st.lists(st.sampled_from(["fifo", "dir", "link", "dev"]), unique=True))
    return {"files": {k: v.hex() for k, v in draw(input_files()).items()}, "special": special, "args": args}


# ---- running one case ----

def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE, FILE_SIZE))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _run(args, work, home):
    """The CLI run on args in work, with a bare environment, the limits and the timeout."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LC_ALL": "C", "TMPDIR": str(work)}
    if "LD_LIBRARY_PATH" in os.environ:  # where the CLI's libraries are unpacked (the GPU machine's)
        env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
    try:
        return subprocess.run([str(CLI)] + args, cwd=work, env=env, capture_output=True, timeout=TIMEOUT,
                              preexec_fn=_limits, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"no answer in {TIMEOUT} s: {args}") from None


def _snapshot(root):
    """Every path under root: its kind and, for regular files, a hash of the contents."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st_ = os.lstat(path)
            if stat.S_ISREG(st_.st_mode):
                with open(path, "rb") as f:
                    kind = "file " + hashlib.sha256(f.read()).hexdigest()
            elif stat.S_ISLNK(st_.st_mode):
                kind = "link " + os.readlink(path)
            else:
                kind = stat.filemode(st_.st_mode)[0]
            out[os.path.relpath(path, root)] = kind
    return out


def _outputs(args):
    """The paths the run was asked to write (--out, --plot)."""
    out = set()
    for i, a in enumerate(args):
        for option in ("--out", "--plot"):
            if a == option and i + 1 < len(args):
                out.add(args[i + 1])
            elif a.startswith(option + "="):
                out.add(a[len(option) + 1:])
    return out


def run_case(case, sandbox):
    """Runs the tool as the case says in a fresh directory of `sandbox`; asserts the docstring."""
    root = pathlib.Path(tempfile.mkdtemp(dir=sandbox))
    work, home = root / "work", root / "home"
    work.mkdir()
    home.mkdir()
    try:
        for name, data in case["files"].items():
            (work / name).write_bytes(bytes.fromhex(data))
        if "fifo" in case["special"]:
            os.mkfifo(work / "fifo")
        if "dir" in case["special"]:
            (work / "dir").mkdir()
        if "link" in case["special"]:
            os.symlink("a.npy", work / "link.npy")
            os.symlink("p.png", work / "link.csv")
        if "dev" in case["special"]:
            try:
                os.mknod(work / "dev.csv", 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
            except PermissionError:
                pass
        before = _snapshot(root)
        note(json.dumps(case["args"]))
        p = _run(case["args"], work, home)
        out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
        note(f"exit {p.returncode}\nstderr: {err[:2000]}")
        assert p.returncode >= 0, f"killed by signal {-p.returncode}: {err[-2000:]}"
        for bad in ("Traceback", "terminate called", "what():", "Segmentation fault", "Aborted", "libgomp",
                    "AddressSanitizer", "runtime error:"):
            assert bad not in out + err, f"{bad!r} in the output: {err[-2000:]}"
        if p.returncode != 0:
            assert p.returncode in (1, 2), p.returncode
            assert err.startswith("tally: error: ") and err.count("\n") == 1, err[:2000]
            assert len(err) < 1000 + sum(map(len, case["args"])), err[:2000]  # brief, but for what it quotes
        after = _snapshot(root)
        asked = {os.path.normpath(o) for o in _outputs(case["args"]) if o}
        for o in list(asked):  # a symlinked output is written through to what it names
            if os.path.islink(work / o):  # (False for names too long to be any)
                asked.add(os.path.normpath(os.readlink(work / o)))
        for path, kind in before.items():
            if path.startswith("work/") and path[5:] in asked and p.returncode == 0 and kind.startswith("file"):
                continue  # an earlier file replaced by an output
            assert after.get(path) == kind, f"{path} changed: {kind} -> {after.get(path)}"
        new = {path for path in after if path not in before}
        allowed = {"work/" + o for o in asked} if p.returncode == 0 else set()
        assert new <= allowed, f"files the run was not asked for: {sorted(new - allowed)} (exit {p.returncode})"
        assert os.listdir(sandbox) == [root.name], f"written beside its directory: {os.listdir(sandbox)}"
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """The directory the cases run in, once `tally info` has answered under the limits: a machine
    where the tool cannot start in time (its CUDA driver, say) fails once here, not every case."""
    root = tmp_path_factory.mktemp("cli_fuzz")
    start = time.monotonic()
    p = _run(["info"], root, root)
    assert p.returncode == 0, p.stderr.decode(errors="replace")[-2000:]
    note(f"tally info under the limits: {time.monotonic() - start:.2f} s")
    return root


@fuzz_settings(400, 0.5)
@given(case=cases())
def test_cli(sandbox, case):
    survey(case, run_case, sandbox)


@pytest.mark.parametrize("entry", corpus_cases("cli"))
def test_corpus(sandbox, entry):
    run_case(entry["case"], sandbox)

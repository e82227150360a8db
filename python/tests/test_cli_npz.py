"""`tally hist` on .npz archives as numpy writes them (numpy.savez: stored members,
numpy.savez_compressed: deflated ones, both with zip64 fields): every array by --key, the only
one without it, counts equal to numpy.histogram's, and one clear error for archives that are
damaged or hold several arrays with no --key.

The tool is found as test_fuzz_cli.py finds it (build/python -> build/cli/tally, or $TALLY_CLI);
without it the tests are skipped."""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import tally

CLI = pathlib.Path(os.environ.get("TALLY_CLI") or pathlib.Path(tally.__file__).resolve().parents[2] / "cli" / "tally")
pytestmark = pytest.mark.skipif(not CLI.is_file(), reason=f"the command-line tool is not built ({CLI})")


def run(*args, stdin=None):
    with open(stdin, "rb") if stdin else open(os.devnull, "rb") as given:
        return subprocess.run([str(CLI), "hist", *map(str, args)], capture_output=True, text=True, stdin=given,
                              timeout=60)


def counts(tmp_path, *args, stdin=None):
    out = tmp_path / "out.json"
    p = run(*args, "--out", out, "--no-bars", stdin=stdin)
    assert p.returncode == 0, p.stderr
    return np.array(json.loads(out.read_text())["histograms"][0]["counts"]), p.stdout


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_every_array_by_key_equals_numpy(tmp_path, save):
    rng = np.random.default_rng(5)
    arrays = {"normal": rng.normal(size=20_000).astype(np.float32), "ints": rng.integers(-50, 50, 7_000),
              "hot": np.full(3_000, 2.5)}
    path = tmp_path / "a.npz"
    save(path, **arrays)
    for key, a in arrays.items():
        got, report = counts(tmp_path, path, "--key", key, "--bins", "16", "--range", "-60,60")
        np.testing.assert_array_equal(got, np.histogram(a, 16, (-60, 60))[0])
        assert f"a.npz[{key}]" in report
    # Piped, as a file.
    got, _ = counts(tmp_path, "-", "--key", "hot", "--bins", "4", "--range", "0,4", stdin=path)
    np.testing.assert_array_equal(got, [0, 0, 3000, 0])


def test_the_only_array_needs_no_key(tmp_path):
    a = np.random.default_rng(6).integers(0, 5, 500)
    np.savez_compressed(tmp_path / "one.npz", a)
    got, report = counts(tmp_path, tmp_path / "one.npz", "--bins", "5", "--range", "0,5")
    np.testing.assert_array_equal(got, np.bincount(a, minlength=5))
    assert "one.npz[arr_0]" in report


def test_errors_are_one_line(tmp_path):
    path = tmp_path / "two.npz"
    np.savez(path, x=np.arange(10.0), y=np.arange(3.0))
    for args, code, says in [((path,), 2, "holds 2 arrays (x, y); give --key NAME"),
                             ((path, "--key", "z"), 2, "--key z"),
                             ((tmp_path / "two.npz", "--key", "x", "--column", "0"), 2, "--column")]:
        p = run(*args)
        assert p.returncode == code and says in p.stderr and p.stderr.count("\n") == 1, p.stderr
    # Damaged: the directory cut off, and a deflated member's bytes corrupted.
    data = path.read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[: len(data) - 30])
    p = run(tmp_path / "cut.npz", "--key", "x")
    assert p.returncode == 1 and "damaged .npz" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    np.savez_compressed(tmp_path / "c.npz", x=np.random.default_rng(7).normal(size=5000))
    bad = bytearray((tmp_path / "c.npz").read_bytes())
    for i in range(200, 400):
        bad[i] ^= 0x5A
    (tmp_path / "bad.npz").write_bytes(bytes(bad))
    p = run(tmp_path / "bad.npz")
    assert p.returncode == 1 and p.stderr.startswith("tally: error: ") and p.stderr.count("\n") == 1, p.stderr

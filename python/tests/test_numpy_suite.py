"""numpy's own tests of the functions tally answers, run against tally: test_histograms.py
(histogram, histogram_bin_edges, histogramdd), TestBincount of test_function_base.py and
TestHistogram2d of test_twodim_base.py, each copied from the installed numpy at test time (never
committed) with numpy's function swapped for tally's. Every test passes, with no documented
difference needed (the list in docs/exactness.md is empty). A numpy whose test files no longer name the
functions as expected fails this test loudly rather than testing numpy against itself."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(np.__file__).parent / "lib" / "tests"


def _swap_histograms(text):
    return re.subn(r"^from numpy import (histogram, histogram_bin_edges, histogramdd)$",
                   r"from tally import \1", text, flags=re.M)


def _swap_bincount(text):
    text, found = re.subn(r"\bnp\.bincount\(", "tally.bincount(", text)
    return "import tally\n" + text, found


def _swap_histogram2d(text):
    text, found = re.subn(r"^    histogram2d,\n", "", text, count=1, flags=re.M)
    return text + "\nfrom tally import histogram2d  # noqa: E402\n", found


@pytest.mark.parametrize("name, swap, select, least", [
    ("test_histograms.py", _swap_histograms, None, 1),
    ("test_function_base.py", _swap_bincount, "TestBincount", 10),
    ("test_twodim_base.py", _swap_histogram2d, "TestHistogram2d", 1),
])
def test_numpys_tests_pass_against_tally(tmp_path, name, swap, select, least):
    source = TESTS / name
    if not source.exists():
        pytest.skip(f"this numpy ({np.__version__}) ships no {name}")
    text, found = swap(source.read_text())
    assert found >= least, f"{source} no longer names the functions as this test expects"
    target = tmp_path / f"test_numpy_{name.removeprefix('test_')}"
    target.write_text(text)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(target)]
    if select:
        command += ["-k", select]
    run = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert re.search(r"\d+ passed", run.stdout), run.stdout[-2000:]

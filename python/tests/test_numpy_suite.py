"""numpy's own histogram tests (numpy/lib/tests/test_histograms.py from the installed numpy, copied
here at test time, never committed) run against tally.histogram, histogram_bin_edges and
histogramdd: every test passes, with no documented difference needed (the README's list is
empty). A numpy whose test file no longer imports the functions as expected fails this test
loudly rather than testing numpy against itself."""

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

IMPORT = re.compile(r"^from numpy import (histogram, histogram_bin_edges, histogramdd)$", re.M)


def test_numpys_histogram_tests_pass_against_tally(tmp_path):
    source = Path(np.__file__).parent / "lib" / "tests" / "test_histograms.py"
    if not source.exists():
        pytest.skip(f"this numpy ({np.__version__}) ships no {source.name}")
    text, found = IMPORT.subn(r"from tally import \1", source.read_text())
    assert found == 1, f"{source} no longer imports numpy's histogram functions in one line"
    target = tmp_path / "test_numpy_histograms.py"
    target.write_text(text)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(target)],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert re.search(r"\d+ passed", run.stdout), run.stdout[-2000:]

"""The docs' generated parts are current: docs/performance.md's tables are what
scripts/docs_performance.py writes from bench/results/ (after new results, run
``python3 scripts/docs_performance.py``), and docs/api.md's reference (MkDocs with mkdocstrings,
scripts/docs_build) has a ``::: tally.NAME`` entry for every name in ``tally.__all__``."""

import pathlib
import re
import subprocess
import sys

import tally

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_performance_page_matches_the_results():
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "docs_performance.py"), "--check"],
                         capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_api_page_documents_every_export():
    entries = set(re.findall(r"^::: tally\.(\w+)\s*$", (ROOT / "docs" / "api.md").read_text(encoding="utf-8"), re.M))
    # A module's entry documents the names of its __all__ that the top level exports again.
    covered = {name for module in entries if hasattr(getattr(tally, module, None), "__all__")
               for name in getattr(tally, module).__all__}
    missing = sorted(set(tally.__all__) - entries - covered - {"__version__"})
    assert not missing, f"docs/api.md has no '::: tally.NAME' entry for {missing}"

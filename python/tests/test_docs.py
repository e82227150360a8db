"""The examples of README.md and docs/*.md run as tests, and the pages' relative links resolve.

How the pages mark their code blocks (this test reads them so, and checks the marks):

- ```python blocks run as scripts: each in a fresh namespace (``__name__ == "__main__"``), in a
  pytest tmp_path as the working directory. A block that raises fails.
- ```pycon blocks (``>>> `` prompts) run with doctest, and the output they show must match
  (NORMALIZE_WHITESPACE and ELLIPSIS; ``...`` only where the output truly varies, such as timings
  or addresses).
- ```console blocks: each ``$ build/cli/tally ...`` line runs the built tool from the repository
  root, and the lines after it must equal its standard output. Files it writes (``--plot``,
  ``--out``) go to tmp_path instead of the path shown; where docs/ holds a file of the same name
  (a plot the pages show), the file written must equal it byte for byte. After the comment line
  ``<!-- output: not compared -->`` only the exit status (0) is checked.
- An HTML comment line right above a block says what it needs: ``<!-- needs: cuda, torch -->``.
  ``cuda`` is tally's CUDA backend with torch or cupy finding a device; other names are modules
  to import (KNOWN_NEEDS). The block is skipped where one is missing, never passed.
  ``<!-- not run: REASON -->`` marks a block that cannot run as a test (NOT_RUN counts them).
- ```sh, ```cpp and ```cmake blocks are not run (setup and build commands, C++ sources).

The tool is found beside the tally package's build directory (build/python -> build/cli/tally)
or at $TALLY_CLI, as test_fuzz_cli.py finds it; without it the console blocks are skipped."""

import doctest
import importlib
import os
import pathlib
import re
import shlex
import subprocess
from dataclasses import dataclass, field

import pytest

import tally

ROOT = pathlib.Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CLI = pathlib.Path(os.environ.get("TALLY_CLI") or pathlib.Path(tally.__file__).resolve().parents[2] / "cli" / "tally")

RUN = {"python", "pycon", "console"}  # the block languages this test runs
SHOWN = {"sh", "cpp", "cmake"}        # shown only
KNOWN_NEEDS = {"cuda", "torch", "cupy", "dask", "distributed", "pandas", "boost_histogram"}
NOT_RUN = 1  # blocks marked "not run"; keep them rare: tally.distributed.all_reduce under torchrun
SETUP = ("scripts/setup && cmake --preset default && cmake --build --preset default && "
         "build/cli/tally hist data/sample.png --plot build/sample-hist.svg\n"
         "scripts/setup && cmake --workflow --preset default\n")

FENCE = re.compile(r"^```(.*)$")
NOTE = re.compile(r"^<!--\s*(needs|not run|output)\s*:\s*(.*?)\s*-->$")


@dataclass
class Block:
    page: pathlib.Path
    line: int  # of the block's first line of code, 1-based
    lang: str
    text: str
    notes: list = field(default_factory=list)  # (kind, value) of the comment lines above it

    @property
    def id(self):
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def note(self, kind):
        return next((value for k, value in self.notes if k == kind), None)

    @property
    def needs(self):
        value = self.note("needs")
        return [n.strip() for n in value.split(",") if n.strip()] if value else []


def parse(page):
    """The page's fenced blocks, and the problems of its marks (notes above no block, unclosed
    fences)."""
    lines = page.read_text(encoding="utf-8").split("\n")
    blocks, problems, notes = [], [], []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), None)
            if end is None:
                problems.append(f"{page.name}:{i + 1}: a code block that is never closed")
                break
            blocks.append(Block(page, i + 2, fence.group(1).strip(), "\n".join(lines[i + 1:end]) + "\n", notes))
            notes, i = [], end + 1
            continue
        stripped = lines[i].strip()
        note = NOTE.match(stripped)
        if note:
            notes.append((note.group(1), note.group(2)))
        elif stripped.startswith("<!--") and re.search(r"needs|not run|output", stripped):
            problems.append(f"{page.name}:{i + 1}: a mark this test does not read: {stripped}")
        elif stripped and notes:
            problems.append(f"{page.name}:{i + 1}: {notes} stands above text, not above a code block")
            notes = []
        i += 1
    return blocks, problems


PARSED = {page: parse(page) for page in PAGES}
BLOCKS = [b for blocks, _ in PARSED.values() for b in blocks]
RUNNABLE = [b for b in BLOCKS if b.lang in RUN]


def test_pages_and_marks():
    assert (ROOT / "README.md").is_file() and len(PAGES) > 1, PAGES
    problems = [p for _, found in PARSED.values() for p in found]
    for b in BLOCKS:
        if b.lang not in RUN | SHOWN:
            problems.append(f"{b.id}: a block of language {b.lang!r}; use one of {sorted(RUN | SHOWN)}")
        if b.notes and b.lang not in RUN:
            problems.append(f"{b.id}: marks {b.notes} above a {b.lang} block, which does not run")
        if b.lang == "python" and re.search(r"^>>> ", b.text, re.M):
            problems.append(f"{b.id}: '>>>' prompts in a python block: mark it pycon")
        if b.lang == "pycon" and not b.text.startswith(">>> "):
            problems.append(f"{b.id}: a pycon block that does not start with '>>> '")
        if b.lang == "console" and not b.text.startswith("$ "):
            problems.append(f"{b.id}: a console block that does not start with '$ '")
        unknown = set(b.needs) - KNOWN_NEEDS
        if unknown:
            problems.append(f"{b.id}: needs {sorted(unknown)}, not in KNOWN_NEEDS {sorted(KNOWN_NEEDS)}")
        if b.note("output") not in (None, "not compared") or (b.note("output") and b.lang != "console"):
            problems.append(f"{b.id}: 'output: {b.note('output')}' (only 'not compared', on console blocks)")
    assert not problems, "\n".join(problems)


def test_readme_starts_with_the_setup_commands():
    """CI and users run the README's first two commands: the first code block, unchanged."""
    first = PARSED[ROOT / "README.md"][0][0]
    assert (first.lang, first.text) == ("sh", SETUP)


def test_not_run_blocks_say_why():
    not_run = [b for b in BLOCKS if b.note("not run") is not None]
    assert all(b.note("not run") for b in not_run), [b.id for b in not_run if not b.note("not run")]
    assert len(not_run) == NOT_RUN, (f"{len(not_run)} blocks marked 'not run', NOT_RUN says {NOT_RUN}: "
                                     + ", ".join(f"{b.id} ({b.note('not run')})" for b in not_run))


def _cuda():
    """tally's CUDA backend is usable, and torch or cupy finds a device."""
    if not any(b["name"] == "cuda" and b["usable"] for b in tally.backends()):
        return False
    try:
        import torch
        if torch.cuda.is_available():
            return True
    except ImportError:
        pass
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no cupy, or no device: cupy raises its own CUDARuntimeError
        return False


def _require(block):
    if block.note("not run") is not None:
        pytest.skip(f"not run: {block.note('not run')}")
    for need in block.needs:
        if need == "cuda":
            if not _cuda():
                pytest.skip("needs a CUDA GPU")
        else:
            try:
                importlib.import_module(need)
            except ImportError:
                pytest.skip(f"needs {need}")


def _run_python(block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # Blank lines in front, so a traceback gives the page's line numbers.
    code = compile("\n" * (block.line - 1) + block.text, str(block.page), "exec")
    exec(code, {"__name__": "__main__"})


def _run_pycon(block, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    test = doctest.DocTestParser().get_doctest(block.text, {"__name__": "__main__"}, block.id,
                                               str(block.page), block.line - 1)
    assert test.examples, f"{block.id}: no '>>>' examples"
    runner = doctest.DocTestRunner(verbose=False,
                                   optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    report = []
    result = runner.run(test, out=report.append)
    assert result.failed == 0, "".join(report)


def _commands(block):
    """(command, expected stdout lines) of each '$ ' line of a console block."""
    commands = []
    for line in block.text.rstrip("\n").split("\n"):
        if line.startswith("$ "):
            commands.append((line[2:], []))
        else:
            commands[-1][1].append(line)
    return commands


def _run_console(block, tmp_path):
    if not CLI.is_file():
        pytest.skip(f"the command-line tool is not built ({CLI})")
    for command, expected in _commands(block):
        args = shlex.split(command)
        assert args[0] == "build/cli/tally", f"{block.id}: only build/cli/tally runs here: {command}"
        args[0] = str(CLI)
        written = []  # (the path shown, where the test writes it)
        for k, arg in enumerate(args):
            option, eq, value = arg.partition("=")
            if option in ("--plot", "--out"):
                if eq:
                    shown, target = value, tmp_path / pathlib.Path(value).name
                    args[k] = f"{option}={target}"
                else:
                    shown, target = args[k + 1], tmp_path / pathlib.Path(args[k + 1]).name
                    args[k + 1] = str(target)
                written.append((shown, target))
        run = subprocess.run(args, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             encoding="utf-8", timeout=120)
        if run.returncode != 0 and "built without cairo" in run.stderr:  # cli/plot_unavailable.cpp
            pytest.skip(f"{block.id}: {run.stderr.strip()}")
        assert run.returncode == 0, f"{block.id}: {command}: exit {run.returncode}\n{run.stderr}"
        if block.note("output") != "not compared":
            assert run.stdout.rstrip("\n").split("\n") == expected, f"{block.id}: {command}\n{run.stdout}"
        for shown, target in written:
            assert target.is_file() and target.stat().st_size > 0, f"{block.id}: {shown} not written"
            copy = ROOT / "docs" / target.name
            if copy.is_file():
                assert copy.read_bytes() == target.read_bytes(), \
                    f"{block.id}: docs/{target.name} is not what '{command}' writes to {shown}"


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_example(block, tmp_path, monkeypatch):
    _require(block)
    if block.lang == "python":
        _run_python(block, tmp_path, monkeypatch)
    elif block.lang == "pycon":
        _run_pycon(block, tmp_path, monkeypatch)
    else:
        _run_console(block, tmp_path)


# [text](target) and ![alt](target), outside code blocks and code spans.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]*)(?:\s+\"[^\"]*\")?\)")


def _prose(page):
    text = re.sub(r"^```.*?^```[^\n]*$", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def test_relative_links_point_to_files():
    broken = []
    for page in PAGES:
        for target in LINK.findall(_prose(page)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http(s), mailto: not checked
                continue
            if not target or "#" in target:
                broken.append(f"{page.relative_to(ROOT)}: ({target}): give a file's path, with no anchor")
            elif not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: ({target}): no such file")
    assert not broken, "\n".join(broken)

"""Every Python code block of README.md and docs/*.md runs (issue 36), and so do the examples
they point to; CI builds the API reference with warnings as errors (``make docs``)."""
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from subproc import checkout_env

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
_FENCE = re.compile(r"^```(\S*)\n(.*?)^```$", re.M | re.S)


def _blocks(lang=None):
    for page in PAGES:
        text = page.read_text()
        for m in _FENCE.finditer(text):
            if lang is None or m[1] == lang:
                line = text.count("\n", 0, m.start()) + 1
                yield pytest.param(m[1], m[2], id=f"{page.relative_to(ROOT)}:{line}")


def _run(args, tmp_path):
    env = checkout_env()   # this checkout's clgrad, from any folder
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env=env)


@pytest.mark.parametrize("lang,code", list(_blocks()))
def test_every_code_block_says_its_language(lang, code):
    """```python blocks run below; ```sh (commands) and ```text (output) are shown only."""
    assert lang in ("python", "sh", "text"), f"a code block needs a language, got {lang!r}"
    if lang != "python":
        assert "import clgrad" not in code, "Python code in a block that is not run"


@pytest.mark.parametrize("lang,code", list(_blocks("python")))
def test_python_block_runs(lang, code, tmp_path):
    if "clgrad.distributed" in code and importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed (pip install 'clgrad[distributed]')")
    r = _run(["-c", code], tmp_path)
    assert r.returncode == 0, f"{code}\n--- stderr:\n{r.stderr}"


def test_capture_example_replays_bit_for_bit(tmp_path):
    r = _run([str(ROOT / "examples" / "capture.py")], tmp_path)
    assert r.returncode == 0, r.stderr
    rows = [ln.split()[1:] for ln in r.stdout.splitlines()]
    assert len(rows) == 3 and len(rows[0]) == 6 and rows[0] == rows[1] == rows[2], r.stdout
    losses = [float(v) for v in rows[0]]
    assert all(0.5 < v < 3.0 for v in losses)   # cross entropy of 4 classes starts near log 4


def test_changelog_names_the_current_version():
    """Keep a Changelog: [Unreleased] first, then the version being released (pyproject's and
    clgrad.__version__, which tests/test_first_run.py keeps equal), each with a link."""
    import clgrad
    text = (ROOT / "CHANGELOG.md").read_text()
    heads = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, re.M)
    assert heads[0] == ("Unreleased", "") and heads[1][0] == clgrad.__version__, heads
    assert all(date for _, date in heads[1:]), heads
    for name, _ in heads:
        assert re.search(rf"^\[{re.escape(name)}\]: https://", text, re.M), name

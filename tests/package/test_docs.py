"""The manual cannot drift from the code: every ```python block in docs/
(and in the README) runs, page by page in one namespace per page, against
an httpbench.Server the harness provides as `server`, unless the line
before the block is `<!-- no-run -->`. The README stays a quick start."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

import httpbench

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md")) + [ROOT / "README.md"] if DOCS.is_dir() else []
NO_RUN = "<!-- no-run -->"
FENCE = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def runnable_blocks(text: str) -> list[tuple[int, str]]:
    """(line, code) of each ```python block not marked no-run."""
    blocks = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        if before.strip() != NO_RUN:
            blocks.append((text.count("\n", 0, m.start()) + 2, m.group(1)))
    return blocks


def test_the_harness_finds_blocks_and_honours_no_run():
    text = "a\n```python\nx = 1\n```\n<!-- no-run -->\n```python\ny = 2\n```\n"
    assert runnable_blocks(text) == [(3, "x = 1\n")]


@pytest.mark.skipif(not PAGES, reason="not in a source tree")
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_python_block_of_the_page_runs(page, server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # files an example writes land here
    monkeypatch.setenv("MPLBACKEND", "Agg")  # plots draw, nothing opens a window
    namespace = {"__name__": "__docs__", "httpbench": httpbench, "server": server}
    for line, code in runnable_blocks(page.read_text()):
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"{page.name}:{line}", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"{page.name}, the block at line {line}: {e!r}") from e


def test_the_readme_stays_a_quick_start():
    """Under 10,000 bytes, so the manual, not the README, regrows."""
    readme = ROOT / "README.md"
    if not readme.exists():
        pytest.skip("not in a source tree")
    assert len(readme.read_bytes()) < 10_000


def test_every_page_is_in_the_manuals_nav():
    if not (ROOT / "mkdocs.yml").exists():
        pytest.skip("not in a source tree")
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in DOCS.glob("*.md"):
        assert f": {page.name}" in nav, page.name

"""The scripts in benchmarks/ run from the repository's root."""

from __future__ import annotations

from pathlib import Path
import re
import subprocess
import sys

import pytest



def test_benchmarks_run_from_the_repository_root(tmp_path):
    """Packaging: a child `python -c` run from the root imported the source
    tree's httpbench, which has no built _core."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "benchmarks" / "single_connection.py").exists():
        pytest.skip("no benchmarks here")
    r = subprocess.run([sys.executable, "benchmarks/single_connection.py", "--requests", "300",
                        "--rounds", "1"], capture_output=True, text=True, cwd=root, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert re.search(r"embedded +httpbench.Connection +[\d,]+", r.stdout), r.stdout


ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("script", SCRIPTS)
def test_each_benchmark_script_imports_and_says_its_options(script):
    """A script imports what another defines (instructions.py takes
    http2.py's points and cipher option): a name changed in one would break
    the other only when someone next measured. --help imports the script
    and everything it imports, and runs nothing."""
    r = subprocess.run([sys.executable, f"benchmarks/{script}", "--help"], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage:"), r.stdout

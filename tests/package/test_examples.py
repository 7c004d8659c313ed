"""The examples a user starts from: the notebook executed (never committed
with outputs) and the script run."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_notebook_is_committed_without_outputs():
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(EXAMPLES / "tour.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None


def test_every_cell_has_an_id_as_committed():
    """nbformat 4.5 wants an id on each cell (a missing one is a
    MissingIDFieldWarning, and "will become a hard error"); read as the
    file is, not through nbformat, which would fill them in."""
    import json
    cells = json.loads((EXAMPLES / "tour.ipynb").read_text())["cells"]
    assert cells and all(isinstance(c.get("id"), str) and c["id"] for c in cells)
    assert len({c["id"] for c in cells}) == len(cells)


def test_notebook_executes(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(EXAMPLES / "tour.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("httpbench-result" in h for h in html)       # the run's summary
    assert any("x fastest" in h for h in html)              # the comparison
    assert any("Aggregated" in h for h in html)             # the scenario's table
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 3                                  # percentiles, timeline, clients


def test_tour_script(tmp_path):
    pytest.importorskip("matplotlib")
    run = subprocess.run([sys.executable, str(EXAMPLES / "tour.py"), str(tmp_path)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "Requests per second:" in run.stdout and "x fastest" in run.stdout
    for name in ("run-percentiles", "run-histogram", "run-timeline", "clients"):
        assert (tmp_path / f"{name}.png").stat().st_size > 5000
    assert "Requests by name" in run.stdout  # the scenario's table


def test_tour_script_writes_no_pictures_into_the_current_directory(tmp_path):
    """With no OUTDIR the PNGs go to a new temporary folder, named on the
    last line, not into wherever the user stood."""
    pytest.importorskip("matplotlib")
    here = tmp_path / "here"
    here.mkdir()
    run = subprocess.run([sys.executable, str(EXAMPLES / "tour.py")], capture_output=True,
                         text=True, timeout=300, cwd=here)
    assert run.returncode == 0, run.stderr
    assert list(here.iterdir()) == []
    where = Path(run.stdout.strip().splitlines()[-1].removeprefix("plots written to "))
    try:
        assert where.is_dir() and where != here
        assert sorted(p.name for p in where.glob("*.png")) == [
            "clients.png", "run-histogram.png", "run-percentiles.png", "run-timeline.png"]
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_fetch_script(tmp_path):
    run = subprocess.run([sys.executable, str(EXAMPLES / "fetch.py")], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "HTTP/1.1 200 OK" in run.stdout and "50000 more requests" in run.stdout


def test_four_documents_script(tmp_path):
    run = subprocess.run([sys.executable, str(EXAMPLES / "four_documents.py"), "50"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    for name in ("/docs/", "/docs/mod/quickreference.html", "/docs/misc/perf-tuning.html",
                 "/docs/platform/windows.html"):
        assert f"GET {name} (" in out
    assert out.count("run() (the C loop)") == 4 and out.count("http.client") >= 4
    assert "failed" not in out


@pytest.mark.builds
def test_the_tour_runs_with_the_notebook_extra_alone(tmp_path, monkeypatch):
    """`pip install 'httpbench[notebook]'` into a fresh venv, nothing else:
    the tour executes there (its kernel the venv's Python), every cell,
    and its comparison names the clients it left out and the extra that
    brings them."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    import json

    from test_package import installed_alone
    venv, names = installed_alone(tmp_path, "notebook")
    assert not names & {"urllib3", "requests", "httpx", "pycurl", "aiohttp", "nbclient"}
    # A kernel that is the venv's Python, found by this process's nbclient.
    spec = tmp_path / "jupyter" / "kernels" / "tourvenv"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f",
                 "{connection_file}"],
        "display_name": "the [notebook] extra alone", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    nb = nbformat.read(EXAMPLES / "tour.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import sys; print(sys.prefix)"))
    nbclient.NotebookClient(nb, timeout=300, kernel_name="tourvenv",
                            resources={"metadata": {"path": str(run_dir)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"], \
        [o for o in outputs if o.output_type == "error"]
    assert nb.cells[-1].outputs[0]["text"].strip() == str(venv)  # (the venv's kernel ran it)
    html = "\n".join(o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {}))
    assert "httpbench-result" in html and "x fastest" in html
    assert "pip install &#x27;httpbench[agents]&#x27;" in html or \
        "pip install 'httpbench[agents]'" in html

"""What a notebook shows: HTML and text reprs, plots, DataFrames, progress."""

from __future__ import annotations

import builtins
import io
import math
import re
import socket
import subprocess
import sys

import pytest

import httpbench


@pytest.fixture(scope="module")
def result():
    with httpbench.Server() as srv:
        yield httpbench.run(srv.url("/rnd?c=2048"), duration=2.2, concurrency=4, progress=False)


@pytest.fixture(scope="module")
def failing():
    with httpbench.Server() as srv:
        port = srv.port
    return httpbench.run(f"http://127.0.0.1:{port}/", requests=5, progress=False)


def test_html_repr(result, failing):
    page = result._repr_html_()
    assert "<script" not in page.lower()
    assert f"{result.rps:,.2f}" in page and "every request completed" in page
    for cls in ("connect", "receive", "length", "exceptions", "timeout"):
        assert f"<th>{cls}</th>" in page
    for p in ("50%", "99%", "99.99%", "100%"):
        assert f"<th>{p}</th>" in page
    bad = failing._repr_html_()
    assert "5 failed" in bad and '<td data-key="failed" data-value="5">5</td>' in bad
    cmp = httpbench.compare(agents=["httpbench"], scenarios=["get"], requests=20)
    assert "<table>" in cmp._repr_html_()


def test_pretty_repr(result):
    pretty = pytest.importorskip("IPython.lib.pretty")
    assert pretty.pretty(result) == result.report()
    cmp = httpbench.compare(agents=["httpbench"], scenarios=["get"], requests=20)
    assert pretty.pretty(cmp).startswith(cmp.table())


def test_timeline_is_recorded_per_second(result):
    seconds = [x.t for x in result.timeline]
    assert seconds[:3] == [0, 1, 2]
    assert sum(x.complete for x in result.timeline) == result.complete
    assert all(0 < x.p50 <= x.p99 for x in result.timeline if x.complete)
    back = httpbench.Result.from_json(result.to_json())
    assert back.timeline == result.timeline


@pytest.mark.parametrize("kind", ["percentiles", "histogram", "timeline"])
def test_plots_render(result, kind, tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    ax = result.plot(kind)
    ax.figure.savefig(tmp_path / f"{kind}.png")
    assert (tmp_path / f"{kind}.png").stat().st_size > 5000
    assert ax.get_title().startswith("GET /rnd?c=2048")
    if kind == "percentiles":
        assert ax.get_xscale() == "log" and ax.get_ylabel() == "latency (ms)"
        assert "99.99%" in [t.get_text() for t in ax.get_xticklabels()]
    matplotlib.pyplot.close("all")


def test_plot_errors(result, monkeypatch):
    with pytest.raises(ValueError, match="kind must be"):
        result.plot("pie")
    agent = httpbench.agents.run_agent  # a Python agent records no timeline
    with httpbench.Server() as srv:
        r = agent("http.client", srv.url("/rnd?c=5"), requests=10)
    pytest.importorskip("matplotlib")
    with pytest.raises(ValueError, match="no timeline"):
        r.plot("timeline")


def test_plot_without_matplotlib_says_what_to_install(result, monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(ImportError, match=re.escape("pip install 'httpbench[plot]'")):
        result.plot()


def test_to_pandas(result):
    pd = pytest.importorskip("pandas")
    df = result.to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == 1
    assert df["complete"][0] == result.complete and df["p99"][0] == result.latency.p99
    hist = result.latency.to_pandas()
    assert list(hist.columns) == ["lower", "upper", "count"]
    assert hist["count"].sum() == result.latency.count
    # Nothing timed: NaN, not the empty histogram's 0 (in a frame of runs
    # a dead server's read as the fastest).
    with socket.socket() as s0:
        s0.bind(("127.0.0.1", 0))  # bound, never listening: refused
        dead = httpbench.run(f"http://127.0.0.1:{s0.getsockname()[1]}/", requests=3,
                             progress=False)
    row = dead.to_pandas().iloc[0]
    assert row["complete"] == 0 and row["failed"] == 3
    assert all(math.isnan(row[k]) for k in ("p50", "p90", "p99", "p99.9", "latency_mean"))
    # The notebook's key figures (and the report's) say "-", where they
    # said 0.000 ms.
    shown = dead._repr_html_()
    for key in ("latency.mean", "latency.percentiles.50", "latency.percentiles.99"):
        assert f'<td data-key="{key}" data-value="null">-</td>' in shown, key


def test_tqdm_progress_on_a_terminal(monkeypatch):
    pytest.importorskip("tqdm")

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    with httpbench.Server() as srv:
        httpbench.run(srv.url("/delay?ms=5"), requests=150, concurrency=2, stream=stream)
    text = stream.getvalue()
    assert "150/150" in text and "req" in text
    # The rate and the count once each on the bar's line (the rate was
    # tqdm's and a postfix rps=, the count tqdm's and a postfix done=).
    last = text.rstrip().split("\r")[-1]
    assert last.count("req/s") == 1 and last.count("150") == 2, last  # 150/150
    assert "rps=" not in text and "done=" not in text and "0 failed" in last


def test_tqdm_shows_the_planned_seconds_of_a_duration_run():
    """A run by duration alone has no request total: the bar counts its
    seconds (it showed an open-ended count before)."""
    pytest.importorskip("tqdm")

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Tty()
    with httpbench.Server() as srv:
        httpbench.run(srv.url("/rnd?c=10"), duration=1.0, concurrency=2, stream=stream)
    text = stream.getvalue()
    last = text.rstrip().split("\r")[-1]
    assert "1.0/1.0 s" in last and " done, " in last, text[-300:]
    assert last.count("req/s") == 1 and "rps=" not in text, last


def test_import_of_httpbench_does_not_import_the_optional_libraries():
    code = ("import sys, httpbench; bad = [m for m in ('pandas', 'matplotlib', 'tqdm', "
            "'IPython', 'aiohttp', 'httpx', 'requests', 'pycurl') if m in sys.modules]; "
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd="/").stdout.strip()
    assert out == "[]"


def test_the_timeline_leaves_a_partial_last_second_out_and_draws_the_target():
    """A last second of 8 requests in 0.0002 s drew as a collapse to zero;
    a stages run drew no target. The partial second is left out of the rate
    line (its requests stay in the totals), the x label says so, and the
    target shape is drawn over the achieved rate."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    with httpbench.Server() as srv:
        r = httpbench.run(srv.url("/rnd?c=10"), stages=[(1.0, 200), (1.4, 200)],
                          concurrency=2, progress=False)
    assert len(r.timeline) == 3 and r.time_taken >= 2.4
    ax = r.plot("timeline")
    done = next(line for line in ax.lines if line.get_label() == "requests completed")
    assert list(done.get_xdata()) == [0.5, 1.5]  # the third second, 0.4 s, left out
    assert "not drawn: less than a whole second" in ax.get_xlabel()
    target = next(line for line in ax.lines if line.get_label() == "target rate")
    assert list(target.get_xdata()) == [0.0, 1.0, 2.4] and list(target.get_ydata()) == [
        0.0, 200.0, 200.0]
    assert sum(x.complete for x in r.timeline) == r.complete  # the totals keep them
    matplotlib.pyplot.close("all")


def test_the_html_summary_says_complete_but_non_2xx():
    """It said "every request completed" over 366 responses of 503."""
    with httpbench.Server() as srv:
        r = httpbench.run(srv.url("/status/503"), requests=12, progress=False)
    assert r.ok and r.non_2xx == 12
    assert "every request complete, but 12 non-2xx" in r._repr_html_()

"""httpbench.compare and the agents: every installed client through the
seed's scenarios on the embedded server, measured into the same Histogram."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time

import pytest
from helpers import wait_for_requests

import httpbench
from httpbench import agents as agents_mod
from httpbench.agents import AGENTS, run_agent

INSTALLED = httpbench.available_agents()


@pytest.mark.parametrize("agent", INSTALLED)
@pytest.mark.parametrize("scenario", ["get", "post"])
def test_every_installed_agent_exact_counts(server, agent, scenario):
    from httpbench.compare import SCENARIOS

    method, path, body = SCENARIOS[scenario]
    r = run_agent(agent, server.url(path), method, body, requests=300, concurrency=3,
                  check_echo=True)
    assert (r.issued, r.complete, r.failed) == (300, 300, 0), r.first_error
    assert r.document_length == 2048 and r.body_bytes == 300 * 2048
    assert r.latency.count == 300 and r.latency.p99 > 0
    assert r.agent == agent and r.agent_version and r.python_version
    # Every response kept its connection alive, each connection's first
    # too (as the core and ab count them; complete - connects read 297).
    assert r.connects == 3 and r.reconnects == 0 and r.keepalive_requests == 300


def test_all_agents_are_known_and_installed_in_ci():
    assert list(AGENTS) == ["httpbench", "http.client", "urllib3", "requests", "httpx", "pycurl",
                            "aiohttp"]
    assert {"httpbench", "http.client"} <= set(INSTALLED)


def test_echo_is_checked(scripted):
    wrong = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nnope"
    srv = scripted([("recv",), ("send", wrong), ("recv",), ("send", wrong)])
    r = run_agent("http.client", f"http://127.0.0.1:{srv.port}/echo", "POST", b"abcd",
                  requests=2, check_echo=True)
    assert r.complete == 0 and r.failures["exceptions"] == 2
    assert "echo differs" in r.first_error


def test_comparison_report_and_table(server):
    cmp = httpbench.compare(server.url("/rnd?c=2048"), agents=["httpbench", "http.client"],
                            scenarios=["get"], requests=200)
    text = str(cmp)
    assert text == cmp.report()
    assert re.search(r"== httpbench \S+, get \(Python", text)
    assert re.search(r"== http.client \S+, get \(Python", text)
    assert text.count("Complete requests:      200") == 2
    assert "== Side by side" in text and "x fastest" in text
    rows = cmp.rows()
    assert {r["agent"] for r in rows} == {"httpbench", "http.client"}
    assert max(r["of_fastest"] for r in rows) == 1.0
    assert cmp.results["http.client", "get"].latency.p99 > 0


def test_against_the_embedded_server_by_default():
    cmp = httpbench.compare(agents=["httpbench", "urllib3"], requests=100)
    assert set(cmp.results) == {("httpbench", "get"), ("httpbench", "post"), ("urllib3", "get"),
                                ("urllib3", "post")}
    assert all(r.ok for r in cmp.results.values()) and not cmp.notes


def test_missing_agent_is_left_out_with_a_note(monkeypatch):
    monkeypatch.setattr(AGENTS["urllib3"], "module", "no_such_module_here")
    assert "urllib3" not in httpbench.available_agents()
    cmp = httpbench.compare(agents=["httpbench", "urllib3"], scenarios=["get"], requests=50)
    assert list(cmp.results) == [("httpbench", "get")]
    assert any("urllib3 is not installed" in n for n in cmp.notes)
    assert "note: urllib3 is not installed" in cmp.report()


def test_unknown_agent_names_the_available_ones():
    with pytest.raises(ValueError, match=r"unknown agent.*'nope'.*available here: httpbench"):
        httpbench.compare(agents=["nope"])
    with pytest.raises(ValueError, match="unknown agent"):
        run_agent("nope", "http://127.0.0.1:1/")


def test_no_agent_or_one_named_twice_is_refused_before_anything_runs():
    # An empty list ran nothing and returned an empty comparison; None is
    # the way to ask for every agent.
    with pytest.raises(ValueError, match="agents: no agent named"):
        httpbench.compare(agents=[])
    with pytest.raises(ValueError, match="agents: 'httpbench' named twice"):
        httpbench.compare(agents=["httpbench", "http.client", "httpbench"])
    with pytest.raises(TypeError, match="not a string"):
        httpbench.compare(agents="httpbench")


def test_ctrl_c_between_two_runs_ends_the_comparison_with_what_ran(monkeypatch):
    """Ctrl-C in a run comes back as that run's interrupted result, and the
    comparison stops there; Ctrl-C between two runs (an agent's library
    importing, its threads starting) left compare() as a KeyboardInterrupt
    and lost what had run. (The signal's moment is stood in for by a
    run_agent that raises it on the second run.)"""
    compare_mod = sys.modules["httpbench.compare"]  # (the name is the function)
    calls = []

    def second_raises(*args, **kwargs):
        calls.append(args[0])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return run_agent(*args, **kwargs)
    monkeypatch.setattr(compare_mod, "run_agent", second_raises)
    try:
        cmp = httpbench.compare(agents=["httpbench", "http.client"], scenarios=["get"],
                                requests=50)
    except KeyboardInterrupt:
        pytest.fail("the KeyboardInterrupt left compare(): the runs before it are lost")
    assert cmp.interrupted and list(cmp.results) == [("httpbench", "get")]
    assert cmp.results["httpbench", "get"].complete == 50
    assert any("interrupted (Ctrl-C) between two runs" in n for n in cmp.notes)
    back = httpbench.Comparison.from_dict(json.loads(json.dumps(cmp.to_dict())))
    assert back.interrupted and list(back.results) == [("httpbench", "get")]
    assert not httpbench.Comparison.from_dict({**cmp.to_dict(), "interrupted": False}).interrupted


def test_sigterm_in_a_run_ends_the_command_with_the_runs_so_far(tmp_path):
    """timeout(1)'s SIGTERM (or Ctrl-C) in the first agent's run: the
    comparison stops there, prints what ran, writes --json marked
    interrupted, exit 1."""
    with httpbench.Server() as srv:
        proc = subprocess.Popen([sys.executable, "-m", "httpbench", "compare", "--agents",
                                 "httpbench,http.client", "-t", "20", "-q", "--json", "c.json",
                                 srv.url("/rnd?c=100")], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=tmp_path)
        try:
            wait_for_requests(srv, 200, proc)
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=30)
        finally:
            proc.kill()
    assert time.monotonic() - t0 < 5 and proc.returncode == 1, (out, err)
    assert "Traceback" not in err and out.startswith("== Side by side")
    d = json.loads((tmp_path / "c.json").read_text())
    assert d["interrupted"] is True and list(d["results"]) == ["httpbench get"]
    assert d["results"]["httpbench get"]["interrupted"] is True


def test_agent_raising_mid_run_counts_its_own_failures(monkeypatch, server):
    real = agents_mod.HttpClientAgent.request
    calls = [0]

    def flaky(self, *args):
        calls[0] += 1
        if calls[0] % 3 == 0:
            raise RuntimeError("agent blew up")
        return real(self, *args)

    monkeypatch.setattr(agents_mod.HttpClientAgent, "request", flaky)
    cmp = httpbench.compare(agents=["http.client", "httpbench"], scenarios=["get"], requests=30)
    hc = cmp.results["http.client", "get"]
    assert (hc.issued, hc.complete, hc.failures["exceptions"]) == (30, 20, 10)
    assert "agent blew up" in hc.first_error
    assert cmp.results["httpbench", "get"].complete == 30


def test_a_python_agents_head_keeps_its_connection_as_rfc_9112_says():
    """Section 9.3: a `close` option ends the connection; HTTP/1.0 keeps it
    only with `keep-alive`. The size is the head as sent."""
    from httpbench.agents.base import _head

    cases = [([], False, True), ([("Connection", "close")], False, False),
             ([("connection", "Upgrade, Close")], False, False),
             ([("Connection", "keep-alive")], False, True), ([], True, False),
             ([("Connection", "Keep-Alive")], True, True),
             ([("Connection", "keep-alive, close")], True, False)]
    for fields, http10, kept in cases:
        head = _head(200, "OK", fields, http10)
        assert head.kept is kept, (fields, http10)
        assert head.size == len("HTTP/1.1 200 OK\r\n") + sum(len(f"{k}: {v}\r\n")
                                                             for k, v in fields) + 2


def test_server_closing_connections_shows_as_reconnects():
    # The embedded server honours Connection: close; every agent must then
    # reconnect, and the comparison shows it; no response kept its
    # connection alive (ab's Keep-Alive requests: 0).
    with httpbench.Server() as srv:
        r = run_agent("http.client", srv.url("/rnd?c=10"), requests=20)
        assert r.reconnects == 0 and r.keepalive_requests == 20
    ok = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
    from helpers import ScriptedServer

    scripted = ScriptedServer([[("recv",), ("send", ok), ("close",)]] * 10)
    try:
        for agent in INSTALLED:
            scripted.scripts = [[("recv",), ("send", ok), ("close",)]] * 10
            scripted.connections = 0
            r = run_agent(agent, f"http://127.0.0.1:{scripted.port}/", requests=5)
            assert (r.complete, r.failed) == (5, 0), (agent, r.first_error)
            assert r.connects == 5 and r.reconnects == 4, agent
            assert r.keepalive_requests == 0, agent
    finally:
        scripted.close()


def test_a_comparison_that_completed_nothing_shows_no_latency_and_counts_every_socket():
    """Against a port that refuses, the table read `mean ms 0.000, p99 ms
    0.000, x fastest 0.00` for every agent (no latency was measured and no
    agent was fastest), and http.client counted 0 connects where urllib3
    and the core counted 50 (it counted a socket only once a request went
    out on it). Now "-" in the text, the Markdown and the HTML, None in the
    rows, and each agent counts each socket it opened."""
    with socket.socket() as s0:
        s0.bind(("127.0.0.1", 0))  # bound, never listening: refused
        url = f"http://127.0.0.1:{s0.getsockname()[1]}/"
        agents = [a for a in ("httpbench", "http.client", "urllib3") if a in INSTALLED]
        cmp = httpbench.compare(url, agents=agents, requests=20)
    for row in cmp.rows():
        assert (row["mean_ms"], row["p99_ms"], row["of_fastest"]) == (None, None, None), row
    for agent in agents:
        r = cmp.results[agent, "get"]
        assert (r.failures["connect"], r.connects, r.reconnects) == (20, 20, 19), agent
    for line in cmp.table().splitlines()[2:]:
        cells = line.split()
        assert cells[5:7] == ["-", "-"] and cells[-1] == "-", line
    for line in cmp.to_markdown().splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[5:7] == ["-", "-"] and cells[-1] == "-", line
    html = cmp._repr_html_()
    assert '<td data-key="of_fastest" data-value="null">-</td>' in html
    assert '<td data-key="latency.percentiles.99" data-value="null">-</td>' in html


def test_to_markdown(server):
    cmp = httpbench.compare(agents=["httpbench", "http.client"], requests=50)
    md = cmp.to_markdown().splitlines()
    assert md[0].startswith("| agent | version | scenario |") and md[1].startswith("|---")
    assert len(md) == 2 + 4


def test_to_pandas_and_plot(tmp_path):
    pd = pytest.importorskip("pandas")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    cmp = httpbench.compare(agents=["httpbench", "http.client"], requests=50)
    df = cmp.to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == 4
    assert set(df["agent"]) == {"httpbench", "http.client"}
    ax = cmp.plot()
    ax.figure.savefig(tmp_path / "cmp.png")
    assert (tmp_path / "cmp.png").stat().st_size > 5000
    assert [t.get_text() for t in ax.get_xticklabels()] == ["httpbench", "http.client"]
    # The p99 axis in units a person reads (it showed 6x10^-1), its points
    # beside the bars, not on the ratio labels inside them.
    from httpbench.render.plots import _latency_label

    assert [_latency_label(v) for v in (0.6, 1.5, 2000)] == ["600 us", "1.5 ms", "2 s"]
    p99 = ax.get_shared_x_axes().get_siblings(ax)
    twin = next(a for a in ax.figure.axes if a is not ax)
    ticks = [twin.yaxis.get_major_formatter()(v, 0) for v in twin.get_yticks()]
    assert all(t.endswith(("us", "ms", " s")) for t in ticks), ticks
    assert p99 and all(not t.get_text().startswith("$") for t in twin.get_yticklabels())


def test_report_is_text_to_print_and_says_so():
    """report() returns the text (a bare value at a REPL shows it quoted,
    its newlines escaped): print(cmp) prints it, and the docstring says to
    print it."""
    cmp = httpbench.compare(agents=["httpbench"], requests=20, scenarios=["get"])
    assert str(cmp) == cmp.report() and isinstance(cmp.report(reports=False), str)
    assert "print" in " ".join(httpbench.Comparison.report.__doc__.split())


def test_html_repr():
    cmp = httpbench.compare(agents=["httpbench"], requests=20, scenarios=["get"])
    html = cmp._repr_html_()
    assert html.startswith("<table>") and "<td>httpbench</td>" in html


def hb(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "httpbench", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_cli_compare(tmp_path, server):
    r = hb("compare", "--agents", "httpbench,http.client", "-n", "100", "-q",
           "--markdown", str(tmp_path / "t.md"), server.url("/rnd?c=2048"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # The table alone by default; each agent's ab report with --reports.
    assert r.stdout.startswith("== Side by side") and "Complete requests" not in r.stdout
    assert (tmp_path / "t.md").read_text().startswith("| agent |")
    r = hb("compare", "--agents", "httpbench,http.client", "-n", "100", "-q", "--reports",
           server.url("/rnd?c=2048"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    # (Against a URL the one request it describes: a GET, each agent once.)
    assert r.stdout.count("Complete requests:      100") == 2
    assert r.stdout.index("Complete requests") < r.stdout.index("== Side by side")
    r = hb("compare", "--agents", "httpbench,wget", cwd=tmp_path)
    assert r.returncode == 2 and "unknown agent(s) 'wget'" in r.stderr
    # An empty --agents ran every agent (read as the flag left out).
    for value, said in (("", "--agents: no agent named"), (" , ", "--agents: no agent named"),
                        ("httpbench,httpbench", "--agents: 'httpbench' named twice")):
        r = hb("compare", "--agents", value, "-n", "10", cwd=tmp_path)
        assert r.returncode == 2 and said in r.stderr, (value, r.stderr)
        assert "Comparing" not in r.stderr


def test_main_job_compares_every_installed_agent(tmp_path):
    r = hb("-q", "-n", "100", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "== Side by side" and len(lines) < 40  # the table, not 600 lines
    for agent in INSTALLED:
        assert re.search(rf"^{re.escape(agent)} +\S+ +get ", r.stdout, re.M), agent
        assert re.search(rf"^{re.escape(agent)} +\S+ +post ", r.stdout, re.M), agent


def test_pinning_is_restored():
    import os

    before = os.sched_getaffinity(0)
    httpbench.compare(agents=["httpbench"], scenarios=["get"], requests=50)
    assert os.sched_getaffinity(0) == before
    httpbench.compare(agents=["httpbench"], scenarios=["get"], requests=50, pin=False)
    assert os.sched_getaffinity(0) == before


def test_no_agent_reads_a_proxy_from_the_environment(monkeypatch, server):
    # A proxy that refuses everything: an agent that read it would fail.
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                 "ALL_PROXY"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    cmp = httpbench.compare(server.url("/rnd?c=2048"), scenarios=["get"], requests=30,
                            duration=2)
    assert set(INSTALLED) <= {a for a, _ in cmp.results}
    for (agent, _), r in cmp.results.items():
        assert (r.complete, r.failed) == (30, 0), (agent, r.first_error)


def test_against_a_url_it_sends_the_request_described_not_the_seeds_pair(server, tmp_path):
    """`httpbench compare URL` always sent POSTs too (7 notes and 405s
    against a static server). Against a URL it sends GET unless -m or -p
    say otherwise; the seed's pair stays the default on the embedded one."""
    before = server.stats()["requests"]
    cmp = httpbench.compare(server.url("/rnd?c=100"), agents=["httpbench", "http.client"],
                            requests=40)
    assert cmp.scenarios == ["get"] and set(cmp.results) == {("httpbench", "get"),
                                                             ("http.client", "get")}
    assert not cmp.notes and all(r.status_counts == {200: 40} for r in cmp.results.values())
    assert server.stats()["requests"] - before == 80
    posted = httpbench.compare(server.url("/echo"), agents=["httpbench"], requests=20,
                               body=b"b" * 100)
    assert posted.scenarios == ["post"]
    assert posted.results["httpbench", "post"].body_bytes == 20 * 100
    put = httpbench.compare(server.url("/echo"), agents=["httpbench"], requests=10,
                            method="put", body=b"x")
    assert put.scenarios == ["put"] and put.results["httpbench", "put"].complete == 10
    for kwargs, said in ((dict(method="GET"), "url given"),
                         (dict(url=server.url("/"), method="GET", scenarios=["get"]),
                          "scenarios or method"),
                         (dict(url=server.url("/"), method="G T"), "method must be")):
        with pytest.raises(ValueError, match=said):
            httpbench.compare(agents=["httpbench"], requests=1, **kwargs)
    (tmp_path / "body").write_bytes(b"p" * 64)
    for args, scenario in ((["-m", "HEAD"], "head"), (["-p", "body"], "post"), ([], "get")):
        url = server.url("/echo" if args[:1] == ["-p"] else "/rnd?c=10")
        out = subprocess.run([sys.executable, "-m", "httpbench", "compare", *args, "-n", "10",
                              "--agents", "httpbench,http.client", "-q", "--json", "c.json",
                              url], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        d = json.loads((tmp_path / "c.json").read_text())
        assert d["scenarios"] == [scenario] and not d["notes"], d["notes"]
    out = subprocess.run([sys.executable, "-m", "httpbench", "compare", "-m", "PUT", "-q"],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 2 and "describe the request sent to a URL" in out.stderr

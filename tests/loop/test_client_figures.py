"""The client's own figures (Result.client, httpbench.bound): when the
client rather than the server limited a run, and every due request of an
open loop counted, sent or not."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import burner, exact, free_port, listening, pinned

import httpbench
from httpbench import ClientFigures
from httpbench.bound import BUSY_BOUND, merge_client

TWO_CPUS = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                              reason="needs two CPUs: the server on one, the client on the other")


@pytest.fixture(scope="module")
def srv() -> Iterator[httpbench.Server]:
    with httpbench.Server(threads=2) as s:
        yield s


@contextlib.contextmanager
def served_on(cpu: int) -> Iterator[int]:
    """The embedded server in a process of its own, on `cpu`; yields its
    port."""
    port = free_port()
    with listening(pinned(cpu, [sys.executable, "-m", "httpbench", "serve", "--port", str(port),
                                "--threads", "1"]), port):
        yield port


_CLIENT = """
    import json, httpbench
    r = httpbench.run("http://127.0.0.1:{port}/rnd?c=100", duration={seconds}, concurrency=200,
                      threads=1, progress=False)
    print(json.dumps(r.to_dict()))
"""


def _client_run(port: int, tmp_path: Path, seconds: float = 2.0) -> httpbench.Result:
    """A closed-loop run from a child pinned to CPU 0, 200 connections:
    enough that when the loop gets its CPU back from the burner it always
    has answers to read. Measured here with the burner: at 10 and at 50
    connections the loop sent its requests after each slice and then waited
    5-15% of the run for the answers (the server's CPU, idle meanwhile, is
    slow to wake in this VM), though the burner halved its req/s; at 200,
    busy 0.988-0.996 in every run."""
    out = subprocess.run(pinned(0, [sys.executable, "-c", _CLIENT.replace("\n    ", "\n")
                                    .format(port=port, seconds=seconds)]),
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    return httpbench.Result.from_json(out.stdout.strip().splitlines()[-1])


@TWO_CPUS
@pytest.mark.timing
def test_a_client_sharing_its_cpu_with_a_burner_is_bound_by_cpu(tmp_path):
    """The client's loop on CPU 0 beside a busy loop, the server alone on
    CPU 1: the loop never waits for the server (it computes or waits for
    the CPU the burner holds), so it is `bound`, reason "cpu", and the
    report says so after ab's block."""
    with served_on(1) as port, burner(0):
        r = _client_run(port, tmp_path)
    c = r.client
    assert c is not None and r.complete > 0
    assert c.busy_max >= BUSY_BOUND and c.bound and c.reason == "cpu", c
    text = r.report()
    assert "Client:                 CPU " in text
    assert "Warning: the client was the bottleneck: a loop thread was busy" in text
    assert text.index("Client:") > text.index("Percentage of the requests")


@TWO_CPUS
@pytest.mark.timing
def test_an_open_loop_that_keeps_up_is_not_bound(tmp_path):
    """At a rate well inside what both can do, on CPUs of their own (the
    client's child pinned to CPU 0, the server to CPU 1): not bound, on
    schedule, nothing unsent. 4,000 sends, so that the 99th percentile of
    their lateness is the 40th latest: at 500 a second (1,000 sends) it was
    the 10th, and three wake-ups a few ms late on a shared runner once made
    the run "schedule"-bound, truly but not for this test's reason. 100
    connections, each due every 50 ms: with 10 (every 5 ms) a full run saw
    94 requests fall due on a connection still busy (the server's answers
    up to 12 ms late in this VM), "connections", truly but not this
    test's reason either: an open loop meant to keep its schedule has
    connections to spare."""
    code = """
import json, httpbench
r = httpbench.run("http://127.0.0.1:{port}/rnd?c=100", duration=2, rate=2000,
                  concurrency=100, threads=1, progress=False)
print(json.dumps(r.to_dict()))
"""
    with served_on(1) as port:
        out = subprocess.run(pinned(0, [sys.executable, "-c", code.format(port=port)]),
                             capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    r = httpbench.Result.from_json(out.stdout.strip().splitlines()[-1])
    c = r.client
    assert c is not None and not c.bound and c.reason == "" and c.unsent == 0, c
    assert c.busy_max < BUSY_BOUND and c.late_p99 is not None and c.late_p99 < 0.002
    assert ", on schedule (late p50" in r.report() and "Warning" not in r.report()


def test_an_open_loop_slower_than_its_rate_counts_every_due_request(srv):
    """20 ms a request on 4 connections is 200 a second at most; asked for
    1,000 a second for 2 s, 2,000 were due: those never sent are counted
    in client.unsent (due less issued, exactly), the report says what the
    percentiles cover and the rate reached against the target, and the
    client is bound by its connections."""
    r = httpbench.run(srv.url("/delay?ms=20"), duration=2.0, rate=1000, concurrency=4,
                      progress=False)
    exact(r)
    c = r.client
    assert c is not None
    due = 2000  # 500 slots on each of the 4 connections before 2 s
    assert c.unsent == due - r.issued and c.unsent > 1000
    assert c.bound and c.reason == "connections" and c.late_busy > 0
    text = r.report()
    assert (f"({c.unsent:,} due requests were never sent: all 4 connections were busy; "
            f"the percentiles cover the {r.issued:,} sent)") in text
    assert "Rate reached:           " in text and "of 1,000.00 asked" in text
    # A count: every request asked for is sent, late or not.
    n = httpbench.run(srv.url("/delay?ms=20"), requests=100, rate=1000, concurrency=4,
                      progress=False)
    assert n.client is not None and n.client.unsent == 0 and n.issued == 100
    # A shape: its due requests by the shape's own rule.
    s = httpbench.run(srv.url("/delay?ms=20"), stages=[(1.0, 1000)], concurrency=2,
                      progress=False)
    assert s.client is not None and s.client.unsent > 0
    assert abs(s.client.unsent + s.issued - 500) <= 2  # a ramp from 0 to 1,000 over 1 s


def test_a_closed_loop_has_no_schedule_to_be_late_on(srv):
    r = httpbench.run(srv.url("/rnd?c=10"), requests=2000, concurrency=4, progress=False)
    c = r.client
    assert c is not None and c.late_p99 is None and c.unsent == 0 and c.late_busy == 0
    assert 0 < c.busy <= c.busy_max <= 1 and 0 < c.cpu <= 1
    assert "Client:                 CPU " in r.report() and "schedule" not in r.report()


def test_the_figures_travel_in_json_html_and_metrics(srv, tmp_path):
    r = httpbench.run(srv.url("/delay?ms=20"), duration=1.0, rate=500, concurrency=2,
                      progress=False)
    d = r.to_dict()
    assert d["schema"] >= 13 and d["client"]["unsent"] == r.client.unsent > 0
    back = httpbench.Result.from_dict(d)
    assert back.client == r.client and isinstance(back.client, ClientFigures)
    old = dict(d, schema=12)
    del old["client"]
    assert httpbench.Result.from_dict(old).client is None
    html = r.to_html()
    assert 'data-key="client.unsent"' in html and "the client was the bottleneck" in html
    assert "the client was the bottleneck" in r._repr_html_()
    with pytest.raises(ValueError, match="client.busy"):
        httpbench.Result.from_dict(dict(d, client=dict(d["client"], busy="x")))


def test_a_cluster_s_client_figures_say_which_worker_was_bound():
    calm = ClientFigures(busy=0.2, busy_max=0.3, cpu=0.1, late_p99=0.0001, unsent=0)
    busy = ClientFigures(busy=0.97, busy_max=0.99, cpu=0.9, late_p99=0.004, unsent=7,
                         bound=True, reason="cpu")
    m = merge_client([("tcp://a:1", calm), ("tcp://b:2", busy), ("tcp://c:3", None)])
    assert m is not None and m.bound and m.reason == "cpu"
    assert m.workers_bound == ("tcp://b:2",) and m.unsent == 7
    assert m.busy_max == 0.99 and m.busy == pytest.approx((0.2 + 0.97) / 2)
    assert m.late_p99 == 0.004
    assert "(workers tcp://b:2)" in m.warning()
    assert merge_client([("x", None)]) is None

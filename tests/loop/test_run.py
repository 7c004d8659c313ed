"""httpbench.run and its Result: exact accounting, every failure class,
latency that is right, the ab layout and the JSON round trip."""

from __future__ import annotations

import errno
import json
import re
import resource
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import helpers
import pytest

import httpbench


def served(srv: httpbench.Server) -> int:
    return srv.stats()["requests"]


def exact(r: httpbench.Result) -> None:
    assert r.complete + r.failed == r.issued
    assert r.failed == sum(r.failures.values())


@pytest.mark.parametrize("n,c,threads", [(1000, 7, 2), (3, 10, 2), (1, 1, 1), (997, 50, 1),
                                         (500, 2, 4)])
def test_exactly_n_requests(server, n, c, threads):
    before = served(server)
    r = httpbench.run(server.url("/rnd?c=2048"), requests=n, concurrency=c, threads=threads,
                      progress=False)
    exact(r)
    assert (r.issued, r.complete, r.failed) == (n, n, 0)
    assert served(server) - before == n  # never more, whatever the concurrency
    assert r.document_length == 2048 and r.body_bytes == 2048 * n
    assert r.status_counts == {200: n}
    # A connection opens with its first request; on one CPU a thread may
    # find the tickets gone before it runs, so fewer may open, never more.
    assert r.keepalive_requests == n and r.connects <= min(n, c) and r.reconnects == 0
    assert r.latency.count == n and r.ok
    assert r.server_software == f"httpbench/{httpbench.__version__}"
    assert r.bytes_sent == n * len(b"GET /rnd?c=2048 HTTP/1.1\r\nUser-Agent: httpbench/%s\r\n"
                                   b"Accept: */*\r\nHost: 127.0.0.1:%d\r\n\r\n"
                                   % (httpbench.__version__.encode(), server.port))


def test_duration(server):
    before = served(server)
    t0 = time.monotonic()
    r = httpbench.run(server.url("/rnd?c=100"), duration=0.5, concurrency=4, progress=False)
    assert 0.45 < time.monotonic() - t0 < 2
    exact(r)
    assert r.requests is None and r.complete > 100 and r.failed == 0
    assert served(server) - before == r.issued
    assert 0.45 < r.time_taken < 1.0


def test_rate_is_open_loop_and_corrected(server):
    r = httpbench.run(server.url("/rnd?c=10"), rate=200, duration=1.0, concurrency=4,
                      progress=False)
    exact(r)
    assert 170 <= r.issued <= 215
    assert r.latency.count == r.latency_uncorrected.count == r.complete
    assert r.latency.mean >= r.latency_uncorrected.mean
    assert "corrected" in r.report() and "uncorrected" in r.report()


def test_a_rate_runs_length_is_its_schedules(server, tmp_path):
    """Under a rate or a shape, time_taken is max(the schedule's length,
    the last outcome): one request a second for 1 s is 1 req/s, not
    1 / latency (it read 4,006 req/s); 50 at 100/s take 0.5 s. Each
    judged against the last outcome the run's log recorded, not against
    the wall clock: on a loaded machine the last answer of 50 at 100/s
    came after 0.6 s."""
    log = tmp_path / "log.csv"

    def run(url: str, **kw: object) -> tuple[httpbench.Result, float]:
        r = httpbench.run(url, progress=False, log=str(log), **kw)
        return r, max(x.start + x.latency for x in httpbench.read_log(str(log)))
    r, last = run(server.url("/rnd?c=10"), rate=1, duration=1.0)
    assert r.complete == 1 and r.time_taken == pytest.approx(max(1.0, last), abs=1e-6)
    assert r.rps == pytest.approx(1 / r.time_taken)
    r, last = run(server.url("/rnd?c=10"), rate=100, requests=50)
    assert r.complete == 50 and r.time_taken == pytest.approx(max(0.5, last), abs=1e-6)
    assert r.rps == pytest.approx(50 / r.time_taken)
    r, last = run(server.url("/rnd?c=10"), stages=[(0.4, 0), (0.1, 20)])
    assert r.complete == 1 and r.time_taken == pytest.approx(max(0.5, last), abs=1e-6)
    # A closed loop keeps the time to its last outcome.
    r, last = run(server.url("/rnd?c=10"), requests=1)
    assert r.time_taken == pytest.approx(last, abs=1e-6)
    # A scenario's parts share the run's length.
    s = httpbench.Scenario([httpbench.Request("GET", "/rnd?c=1", name="a")])
    r, last = run(server.url("/"), scenario=s, rate=2, duration=1.0)
    assert r.time_taken == r.by_name["a"].time_taken == pytest.approx(max(1.0, last), abs=1e-6)


def test_an_open_loops_report_has_no_closed_loop_time_per_request(server):
    """ab's concurrency x time / requests assumes each connection waits for
    its answers; under a rate it printed 49.996 ms beside a 0.077 ms mean."""
    for kwargs in (dict(rate=50, duration=0.5), dict(stages=[(0.5, 50)])):
        text = httpbench.run(server.url("/rnd?c=10"), concurrency=5, progress=False,
                             **kwargs).report()
        lines = [x for x in text.splitlines() if x.startswith("Time per request:")]
        assert lines[0] == "Time per request:       n/a (open loop: see the latency table)"
        assert "(mean, across all concurrent requests)" in lines[1]
    closed = httpbench.run(server.url("/rnd?c=10"), requests=20, progress=False).report()
    assert "n/a" not in closed and "[ms] (mean)\n" in closed


def test_time_per_request_counts_what_is_in_flight_not_the_connections(server):
    """ab's line is concurrency x time / requests, its concurrency the
    requests in flight at once: with 10 streams it printed 0.400 ms beside
    a mean latency of 3.989 ms, with a pipeline of 10, 0.058 against
    0.551. With more than one in flight per connection the line uses them
    and says so; with one, it is ab's exactly."""
    url = server.url("/delay?ms=2")
    for kwargs, flying in ((dict(http2=True, streams=10), 10), (dict(pipeline=10), 10),
                           (dict(http2=True, streams=10, concurrency=3), 30)):
        r = httpbench.run(url, requests=600, progress=False, **kwargs)
        line = next(x for x in r.report().splitlines() if x.startswith("Time per request:"))
        assert line.endswith(f"[ms] (mean, {flying} in flight)"), line
        shown = float(line.split()[3]) / 1e3
        assert line.split()[3] == f"{r.time_taken / r.complete * flying * 1e3:.3f}"
        if "streams" in kwargs:
            # Streams keep as many in flight all the while, so by Little's
            # law it is the mean latency, near enough (a pipeline's batch
            # empties before the next is written: fewer on average).
            assert shown == pytest.approx(r.latency.mean, rel=0.3), (shown, r.latency.mean)
    for kwargs in (dict(), dict(http2=True), dict(concurrency=4)):
        r = httpbench.run(url, requests=100, progress=False, **kwargs)
        line = next(x for x in r.report().splitlines() if x.startswith("Time per request:"))
        per = r.time_taken / r.complete * r.concurrency * 1e3
        assert line == f"Time per request:       {per:.3f} [ms] (mean)"


def test_fewer_requests_than_connections_count_the_requests_in_flight(server):
    """`httpbench -n 5 -c 50` (ab refuses -c over -n) opens 5 connections,
    yet the report said `Concurrency Level: 50` and ab's concurrency x
    time / requests with 50: 7.276 ms a request, where each took 0.1-0.3.
    The line counts the requests that could be in flight: no more than
    were issued; the concurrency line says so."""
    url = server.url("/delay?ms=2")
    for kwargs in (dict(concurrency=50), dict(concurrency=2, http2=True, streams=10)):
        r = httpbench.run(url, requests=5, progress=False, **kwargs)
        assert r.connects <= 5 and r.complete == 5
        lines = r.report().splitlines()
        per = next(x for x in lines if x.startswith("Time per request:"))
        assert per == f"Time per request:       {r.time_taken / 5 * 5 * 1e3:.3f} [ms] (mean, 5 in flight)"
        # Five at once for 2 ms each: about 2 ms, not ten times it.
        assert float(per.split()[3]) < 10 * r.latency.mean * 1e3
        level = next(x for x in lines if x.startswith("Concurrency Level:"))
        note = " (at most 5 at once: 5 requests)" if r.concurrency > 5 else ""
        assert level == f"Concurrency Level:      {r.concurrency}{note}"


def test_a_run_whose_every_request_failed_prints_no_percentile_figures():
    with socket.socket() as s0:
        s0.bind(("127.0.0.1", 0))  # bound, never listening: refused
        for kwargs in (dict(), dict(rate=20)):
            r = httpbench.run(f"http://127.0.0.1:{s0.getsockname()[1]}/", requests=5,
                              progress=False, **kwargs)
            assert r.failed == 5 and r.complete == 0
            text = r.report()
            table = text[text.index("Percentage of the requests"):].split("\n\n")[0]
            rows = [x for x in table.splitlines()[1:] if "%" in x]
            assert len(rows) == 11 and "0.000" not in "\n".join(rows), text
            assert all(x.split()[1:] in (["-"], ["-", "-"], ["-", "(longest", "request)"],
                                         ["-", "-", "(longest", "request)"]) for x in rows), rows


@pytest.mark.timing
def test_rate_starts_on_time(server):
    """Each connection starts every 7/600 s = 11.67 ms, out of step with the
    loop's 5 ms tick: a request started at the next tick instead of at its
    intended start would carry up to 5 ms of the client's own lateness into
    the corrected figure (2.5 ms at the median). The server answers in tens
    of microseconds, so the corrected median must stay well under that."""
    r = httpbench.run(server.url("/rnd?c=10"), rate=600, duration=1.0, concurrency=7,
                      progress=False)
    exact(r)
    assert r.failed == 0 and 540 <= r.issued <= 610
    assert r.latency.p50 < 0.001, r.latency
    assert r.latency.p50 - r.latency_uncorrected.p50 < 0.0008, (r.latency, r.latency_uncorrected)


def test_coordinated_omission_is_corrected(server):
    """At 100/s on one connection against 50 ms responses, requests queue:
    measured from their intended start, latency grows far past 50 ms, while
    the uncorrected figure stays near it (wrk2's point)."""
    r = httpbench.run(server.url("/delay?ms=50"), rate=100, duration=1.0, concurrency=1,
                      progress=False)
    exact(r)
    assert 0.049 < r.latency_uncorrected.p50 < 0.06
    assert r.latency.max > 0.3


def test_keepalive_off_connects_every_time(server):
    conns = server.stats()["connections"]
    r = httpbench.run(server.url("/rnd?c=10"), requests=200, concurrency=4, keepalive=False,
                      progress=False)
    exact(r)
    assert r.complete == 200 and r.connects == 200 and r.keepalive_requests == 0
    assert server.stats()["connections"] - conns == 200
    assert r.connect_time.max > 0 and r.connect_time.count == 200


@pytest.mark.parametrize("how", [{}, {"keepalive": False}, {"http2": True, "streams": 3}],
                         ids=["keep-alive", "close", "http2"])
def test_each_connection_times_its_first_byte_from_its_connect(server, how):
    """conn_first_byte: one a connect, from its start to the first byte of
    its first response (h2load's time to 1st byte), so never under that
    request's connect and wait; here the server answers after 30 ms."""
    r = httpbench.run(server.url("/delay?ms=30"), requests=6, concurrency=2, progress=False,
                      **how)
    assert r.complete == 6 and r.failed == 0
    first = r.conn_first_byte
    assert first.count == r.connects == (6 if how.get("keepalive") is False else 2)
    assert first.min >= 0.030 and first.min >= r.connect_time.max * 0.996
    assert first.max <= r.latency.max * 1.004
    # conn_connect: one a connect too, to the connection made (h2load's
    # time for connect), within each request's connect, which over HTTP/2
    # with streams waits on for the server's SETTINGS.
    made = r.conn_connect
    assert made.count == r.connects and 0 < made.max <= r.connect_time.max * 1.004


@pytest.mark.parametrize("how", [{}, {"keepalive": False}, {"http2": True, "streams": 3}],
                         ids=["keep-alive", "close", "http2"])
def test_waiting_is_from_the_send_as_abs_not_from_the_connect(how):
    """Waiting (ab's row; hey's resp wait) runs from the request's send to
    its answer's first byte, so a request that connected does not count
    its connect there: ab's Waiting is never above its Processing (total
    less connect). It once ran from the connect's start, and without
    keep-alive was the whole Total. A TLS handshake makes each connect
    last; the server answers after 30 ms."""
    with httpbench.Server(tls=True) as srv:
        r = httpbench.run(srv.url("/delay?ms=30"), requests=6, concurrency=2, verify=False,
                          progress=False, **how)
    assert r.complete == 6 and r.connects == (6 if how.get("keepalive") is False else 2)
    assert r.connect_time.max > 0.0005  # (the handshake's; the slack below is 0.4% of 30 ms)
    # Each request's waiting is within its processing: so are their means
    # and maxima (within the histogram's 0.4%).
    assert r.waiting.max <= r.processing.max * 1.004
    assert r.waiting.mean <= r.processing.mean * 1.004
    assert r.waiting.min >= 0.030
    # And connect, then waiting, are within the total.
    assert r.connect_time.mean + r.waiting.mean <= r.latency_uncorrected.mean * 1.004


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_each_connection_times_its_connect_though_none_of_its_requests_completes(tls):
    """conn_connect counts a connection none of whose requests was answered
    (h2load's time for connect counts such a client; the requests' connect
    times, ab's Connect row, have none to show), a TLS handshake included.
    (A server of its own: the answers come after the run.)"""
    with httpbench.Server(tls=tls) as srv:
        r = httpbench.run(srv.url("/delay?ms=3000"), duration=0.3, concurrency=2, grace=0,
                          verify=False, progress=False)
    assert (r.complete, r.failed, r.cancelled, r.connects) == (0, 0, 2, 2)
    assert r.connect_time.count == 0 and r.conn_first_byte.count == 0
    assert r.conn_connect.count == 2 and r.conn_connect.min > 0
    if tls:
        assert r.tls_handshake.count == 2
        assert r.conn_connect.min >= r.tls_handshake.min * 0.996


@pytest.mark.timing
def test_known_delay_is_reported_as_that_delay(server):
    r = httpbench.run(server.url("/delay?ms=50"), requests=20, concurrency=1, progress=False)
    assert r.complete == 20
    # The histogram reads within 0.4%; the loopback round trip adds a little.
    assert 0.050 <= r.latency.min
    assert r.latency.p50 <= 0.050 * 1.004 + 0.0005


@pytest.mark.parametrize("how", [{"requests": 300, "warmup": 3000},
                                 {"duration": 0.3, "warmup": 0.3, "http2": True, "streams": 4}],
                         ids=["requests", "seconds-http2"])
def test_a_warmup_is_left_out_of_each_connections_figures(server, how, tmp_path):
    """Each connection's req/s is of the measured part alone, over its own
    time from the measured part's start for a connection the warmup opened:
    to the run's end for a duration (their sum over the connections is then
    the run's exactly); under requests=N to its last exchange's end (each
    connection's recomputed from the log: on a loaded machine one took
    most of the requests and the other ended early, so no sum over the
    run's length holds). A connection the warmup opened has no connect and
    no first byte timed (as h2load times none its warmup opened)."""
    log = tmp_path / "log.csv"
    r = httpbench.run(server.url("/rnd?c=10"), concurrency=2, progress=False, log=str(log),
                      **how)
    assert r.complete > 0 and r.failed == 0 and r.connects == 0
    if "duration" in how:
        assert r.conn_rps_mean * 2 * r.time_taken == pytest.approx(r.complete, rel=1e-9)
    else:
        ends: dict[int, list[float]] = {}
        for x in httpbench.read_log(str(log)):
            ends.setdefault(x.connection, []).append(x.start + x.latency)
        rates = [len(e) / max(e) for e in ends.values()] + [0.0] * (2 - len(ends))
        assert r.conn_rps_mean == pytest.approx(sum(rates) / 2, rel=1e-3), (rates, r)
        assert r.conn_rps_max == pytest.approx(max(rates), rel=1e-3), (rates, r)
    assert r.conn_rps_max * r.time_taken <= r.complete * (1 + 1e-9) or "duration" not in how
    assert r.conn_first_byte.count == r.conn_connect.count == 0


def test_warmup_is_left_out(server):
    before = served(server)
    r = httpbench.run(server.url("/rnd?c=1"), requests=50, warmup=100, concurrency=2,
                      progress=False)
    assert r.issued == r.complete == 50
    assert served(server) - before == 150
    r = httpbench.run(server.url("/rnd?c=1"), requests=10, warmup=0.2, concurrency=2,
                      progress=False)
    assert r.issued == 10


def test_non_2xx_counted_apart(server):
    r = httpbench.run(server.url("/status/503"), requests=30, concurrency=3, progress=False)
    exact(r)
    assert (r.complete, r.failed, r.non_2xx, r.status_counts) == (30, 0, 30, {503: 30})
    assert "Non-2xx responses:      30" in r.report()


def test_post_body(server):
    body = bytes(range(256)) * 8
    r = httpbench.run(server.url("/echo"), "POST", body, {"Content-Type": "x/y"}, requests=100,
                      concurrency=5, progress=False)
    assert r.complete == 100 and r.document_length == 2048


def test_connect_failures():
    with httpbench.Server() as srv:
        port = srv.port
    r = httpbench.run(f"http://127.0.0.1:{port}/", requests=40, concurrency=4, progress=False)
    exact(r)
    assert (r.issued, r.complete, r.failures["connect"], r.counts["unopened"]) == (40, 0, 40, 40)
    assert "refused" in r.first_error and not r.ok


def test_receive_failures(scripted):
    partial = [("recv",), ("send", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), ("close",)]
    srv = scripted(*[partial] * 6)
    r = httpbench.run(f"http://127.0.0.1:{srv.port}/", requests=6, concurrency=2, progress=False)
    exact(r)
    assert r.failures["receive"] == 6 and r.complete == 0
    assert r.counts["unopened"] == 0  # (each request was sent: its connection opened)


def test_length_failures(scripted):
    def resp(body: bytes) -> list[tuple]:
        return [("recv",), ("send", b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))]

    script = resp(b"aaaa") + resp(b"bbbbb") + resp(b"cccc") + resp(b"dddddd")
    srv = scripted(script, script)
    r = httpbench.run(f"http://127.0.0.1:{srv.port}/", requests=4, concurrency=1, progress=False)
    exact(r)
    assert (r.complete, r.failures["length"], r.document_length) == (2, 2, 4)
    r = httpbench.run(f"http://127.0.0.1:{srv.port}/", requests=4, concurrency=1,
                      lengths_vary=True, progress=False)
    assert (r.complete, r.failed) == (4, 0)


def test_exception_failures(scripted):
    bad = [("recv",), ("send", b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab")]
    srv = scripted(*[bad] * 5)
    r = httpbench.run(f"http://127.0.0.1:{srv.port}/", requests=5, concurrency=1, progress=False)
    exact(r)
    assert r.failures["exceptions"] == 5 and "conflicting Content-Length" in r.first_error


def test_timeout_failures(scripted):
    stall = [("recv",), ("sleep", 5)]
    srv = scripted(stall, stall, stall)
    t0 = time.monotonic()
    r = httpbench.run(f"http://127.0.0.1:{srv.port}/", requests=3, concurrency=3, timeout=0.3,
                      progress=False)
    assert time.monotonic() - t0 < 2
    exact(r)
    assert r.failures["timeout"] == 3


def test_stale_keepalive_is_reconnected_not_failed(scripted):
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    # Each connection answers twice, then drops the third request unanswered.
    script = [("recv",), ("send", ok), ("recv",), ("send", ok), ("recv",), ("close",)]
    srv = scripted(*[script] * 10)
    r = httpbench.run(f"http://127.0.0.1:{srv.port}/", requests=8, concurrency=1, progress=False)
    exact(r)
    assert (r.complete, r.failed) == (8, 0)
    assert r.reconnects == 3 and r.counts["retries"] == 3  # each stale request sent again


def test_server_dies_and_returns_mid_run():
    srv = httpbench.Server()
    port = srv.port
    out = {}

    def load() -> None:
        out["r"] = httpbench.run(f"http://127.0.0.1:{port}/rnd?c=100", duration=2.0,
                                 concurrency=4, timeout=1.0, progress=False)

    t = threading.Thread(target=load)
    t.start()
    time.sleep(0.5)
    srv.close()
    time.sleep(0.5)
    srv = httpbench.Server(port=port)
    t.join(10)
    srv.close()
    r = out["r"]
    exact(r)
    assert r.complete > 100
    assert r.failures["connect"] + r.failures["receive"] > 0
    assert r.reconnects > 0


REPORT_ORDER = [
    "Server Software:", "Server Hostname:", "Server Port:", "Document Path:", "Document Length:",
    "Concurrency Level:", "Time taken for tests:", "Complete requests:", "Failed requests:",
    "Keep-Alive requests:", "Total transferred:", "HTML transferred:", "Requests per second:",
    "Time per request:", "Time per request:", "Transfer rate:", "Client CPU per request:",
    "Connection Times (ms)", "Connect:", "Processing:", "Waiting:", "Total:",
    "Percentage of the requests served within a certain time (ms)",
]


def test_report_has_abs_fields_in_abs_order(server):
    r = httpbench.run(server.url("/rnd?c=2048"), requests=500, concurrency=5, progress=False)
    lines = str(r).splitlines()
    assert str(r) == r.report()
    positions = []
    for label in REPORT_ORDER:
        start = positions[-1] + 1 if positions else 0
        idx = next(i for i in range(start, len(lines)) if lines[i].lstrip().startswith(label))
        positions.append(idx)
    assert "Document Length:        2048 bytes" in lines
    assert "Complete requests:      500" in lines
    for p in ("50%", "99%", "99.9%", "99.99%", "100%"):
        assert any(line.strip().startswith(p) for line in lines), p
    # Sub-millisecond figures where ab prints 0.
    assert any(line.startswith("Total:") and "0.0" in line for line in lines)


def test_the_cpu_split_is_shown_only_with_cpu_time_enough_to_tell(server):
    """The kernel splits a thread's CPU time into user and system by its
    ticks: a run of a few milliseconds read "user 16.09 + system 0.00".
    Under 0.2 s of CPU the line gives the total alone and says why."""
    from dataclasses import replace

    from httpbench.render.text import SPLIT_MIN_CPU
    r = httpbench.run(server.url("/rnd?c=2048"), requests=50, progress=False)
    assert r.cpu_time < SPLIT_MIN_CPU
    line = next(x for x in r.report().splitlines() if x.startswith("Client CPU per request:"))
    assert f"{r.cpu_time / r.complete * 1e6:.2f} [us]" in line
    assert "user and system not told apart in" in line and "+ system" not in line
    enough = replace(r, cpu_user=0.05, cpu_sys=0.15)
    line = next(x for x in enough.report().splitlines()
                if x.startswith("Client CPU per request:"))
    per = 1e6 / r.complete
    assert line == (f"Client CPU per request: {0.2 * per:.2f} [us] (user {0.05 * per:.2f} + "
                    f"system {0.15 * per:.2f})")


def test_failed_breakdown_in_report():
    with httpbench.Server() as srv:
        port = srv.port
    r = httpbench.run(f"http://127.0.0.1:{port}/", requests=3, progress=False)
    assert "(Connect: 3, Receive: 0, Length: 0, Exceptions: 0, Timeout: 0)" in r.report()


def test_json_round_trip(server):
    r = httpbench.run(server.url("/rnd?c=300"), requests=300, concurrency=3, progress=False)
    back = httpbench.Result.from_json(r.to_json())
    assert back.to_dict() == r.to_dict()
    assert back.report() == r.report()
    d = json.loads(r.to_json())
    assert d["complete"] == 300 and d["failures"]["connect"] == 0 and d["rps"] > 0


@pytest.mark.parametrize(
    "kwargs,error",
    [
        (dict(url="ftp://x/"), "only http://"),
        (dict(url="http:///path"), "no host"),
        (dict(url="http://127.0.0.1:1/", requests=0), "requests must be"),
        (dict(url="http://127.0.0.1:1/", concurrency=0), "concurrency must be"),
        (dict(url="http://127.0.0.1:1/", concurrency=900_000), "open-file limit"),
        (dict(url="http://127.0.0.1:1/", duration=-1), "duration must be"),
        (dict(url="http://127.0.0.1:1/", rate=0), "rate must be"),
        (dict(url="http://127.0.0.1:1/", headers={"X": "a\r\nb"}), "header value contains CR"),
    ],
)
def test_bad_arguments(kwargs, error):
    with pytest.raises(ValueError, match=error):
        httpbench.run(**kwargs, progress=False)


def test_threads_count_against_the_open_file_limit():
    """Each thread holds an epoll and a timerfd beside its share of the
    sockets: a concurrency that fits on its own does not with many threads."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft > 1 << 20:
        pytest.skip("no finite open-file limit")
    with pytest.raises(ValueError, match="over 64 threads needs .* open-file limit"):
        httpbench.run("http://127.0.0.1:1/", concurrency=soft - 20, threads=64, progress=False)


def test_loop_files_past_the_limit_raise_emfile_and_leave_stdin_open(tmp_path):
    """A thread's epoll or timerfd refused by the open-file limit: the run
    does not start, the error is the kernel's (EMFILE, not a guessed
    ENOMEM), and what was set up is freed without a crash (under ASan in
    CI too). The threads not yet set up once had descriptors 0 from calloc,
    and the cleanup closed the process's standard input once for each
    (issue 10, item 3). Checked in a child, as the limit is lowered for good
    there."""
    code = textwrap.dedent("""
        import os, resource
        from httpbench import _core
        n = len(os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (n + 2, n + 2))
        try:
            _core._Bench(dict(host="127.0.0.1", port=1,
                              request=b"GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n",
                              requests=10, duration=0.0, concurrency=8, threads=8,
                              keepalive=True, timeout=1.0))
        except OSError as e:
            print("errno", e.errno)
        os.fstat(0)
        print("stdin open")
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["errno", str(errno.EMFILE), "stdin", "open"], run.stdout


def test_progress_lines_off_a_terminal(server, tmp_path):
    with open(tmp_path / "err", "w+") as stream:
        httpbench.run(server.url("/rnd?c=1"), requests=1000, concurrency=2, stream=stream)
        stream.seek(0)
        text = stream.read()
    assert "Completed 1000 requests" in text and "Finished 1000 requests" in text


def test_progress_to_a_function(server):
    """A function for progress gets (complete, failed) as the run goes and
    once as it ends, with the run's counts; anything else that is not
    True, False or "auto" is refused by name before anything is sent."""
    seen: list[tuple[int, int]] = []
    r = httpbench.run(server.url("/delay?ms=2"), duration=0.8, concurrency=2,
                      progress=lambda complete, failed: seen.append((complete, failed)))
    assert len(seen) >= 3 and seen == sorted(seen), seen
    assert seen[-1] == (r.complete, r.failed) and 0 < seen[0][0] < r.complete
    before = server.stats()["requests"]
    for bad in ("yes", 1, 0.5, None):
        with pytest.raises(ValueError, match="progress"):
            httpbench.run(server.url("/"), requests=1, progress=bad)  # type: ignore[arg-type]
    assert server.stats()["requests"] == before


class Watch:
    """A progress function with an `opened` method: what it was told, in
    order."""

    def __init__(self) -> None:
        self.told: list[tuple[object, ...]] = []

    def __call__(self, complete: int, failed: int) -> None:
        self.told.append(("counts", complete, failed))

    def opened(self, tls_protocol: str, tls_temp_key: str) -> None:
        self.told.append(("opened", tls_protocol, tls_temp_key))


def test_a_progress_function_is_told_when_the_first_connection_opens(server, pki):
    """Its `opened` is called once, before the counts that follow the first
    connection's opening (a run past the first progress call, and one that
    ends before it), with the first handshake's TLS figures over TLS (as
    Result has them), empty strings over plain TCP; never when nothing
    opened (no server on the port)."""
    with httpbench.Server(tls=True, certfile=pki["server"], keyfile=pki["server_key"]) as tls:
        for url, how in ((server.url("/delay?ms=2"), dict(duration=0.6)),
                         (server.url("/rnd?c=1"), dict(requests=5)),
                         (tls.url("/delay?ms=2"), dict(duration=0.6, http2=True))):
            watch = Watch()
            r = httpbench.run(url, concurrency=2, progress=watch, verify=False, **how)
            opened = [told for told in watch.told if told[0] == "opened"]
            assert opened == [("opened", r.tls_protocol, r.tls_temp_key)], watch.told
            assert watch.told.index(opened[0]) < next(
                i for i, told in enumerate(watch.told) if told[0] == "counts" and told[1] > 0)
            assert (r.tls_protocol.startswith("TLSv1.3,") and "X25519" in r.tls_temp_key) \
                == url.startswith("https:"), r.tls_protocol
    watch = Watch()
    r = httpbench.run(f"http://127.0.0.1:{helpers.free_port()}/", requests=5, progress=watch)
    assert r.failures["connect"] == 5 and watch.told[-1] == ("counts", 0, 5), watch.told
    assert all(told[0] == "counts" for told in watch.told), watch.told


def test_byte_counts_are_the_wire_bytes(scripted):
    """Total transferred is every response byte read, heads included, as ab
    counts it; HTML transferred the bodies; bytes sent every request byte."""
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nServer: s/1\r\n\r\n"
               b"4\r\nabcd\r\n6;x=y\r\nefghij\r\n0\r\nT: 1\r\n\r\n")
    length = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nServer: s/1\r\n\r\n0123456789"
    script = [step for raw in (chunked, length, chunked) for step in (("recv",), ("send", raw))]
    srv = scripted(script)
    r = httpbench.run(f"http://127.0.0.1:{srv.port}/x", requests=3, concurrency=1,
                      progress=False)
    exact(r)
    assert r.complete == 3
    assert r.bytes_received == 2 * len(chunked) + len(length)
    assert r.body_bytes == 30 and r.document_length == 10
    assert r.bytes_sent == sum(len(q) for q in srv.requests)
    assert r.server_software == "s/1"


def test_byte_counts_equal_abs_against_nginx():
    """The same server, the same URL: Total and HTML transferred as ab counts
    them (nginx answers ab's HTTP/1.0 keep-alive and our HTTP/1.1 alike)."""
    if shutil.which("ab") is None:
        pytest.skip("ab is not installed (apt-get install apache2-utils)")
    with helpers.nginx() as server:
        if server is None:
            pytest.skip("nginx is not installed (apt-get install nginx-light)")
        url = f"http://127.0.0.1:{server[0]}/rnd?c=2048"
        out = subprocess.run(["ab", "-q", "-k", "-n", "1000", "-c", "4", url], capture_output=True,
                             text=True, check=True, env=helpers.tool_env()).stdout
        r = httpbench.run(url, requests=1000, concurrency=4, progress=False)
    total = int(re.search(r"Total transferred:\s+(\d+) bytes", out).group(1))
    html = int(re.search(r"HTML transferred:\s+(\d+) bytes", out).group(1))
    doc = int(re.search(r"Document Length:\s+(\d+) bytes", out).group(1))
    assert (r.bytes_received, r.body_bytes, r.document_length) == (total, html, doc)
    assert r.complete == 1000 and r.keepalive_requests == 1000


def time_wait(port: int) -> tuple[int, int]:
    """TIME_WAIT sockets on loopback to and from port: (the client's side,
    the server's side), from /proc/net/tcp and tcp6."""
    client = server_side = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "06":
                continue
            local, remote = (int(f.rsplit(":", 1)[1], 16) for f in fields[1:3])
            client += remote == port
            server_side += local == port
    return client, server_side


@pytest.mark.parametrize("concurrency", [1, 4])
def test_no_keepalive_says_close_so_the_server_closes_first_and_bytes_equal_abs(concurrency):
    """Without keep-alive each request says Connection: close (RFC 9112
    section 9.6), as ab's HTTP/1.0 does by default: nginx answers without
    its keep-alive field, so the byte totals equal ab's without -k; and the
    client waits for the server's FIN before closing, so TIME_WAIT stays on
    the server's side and the client's ephemeral ports are not used up."""
    if shutil.which("ab") is None:
        pytest.skip("ab is not installed (apt-get install apache2-utils)")
    with helpers.nginx() as server:
        if server is None:
            pytest.skip("nginx is not installed (apt-get install nginx-light)")
        port = server[0]
        url = f"http://127.0.0.1:{port}/rnd?c=2048"
        out = subprocess.run(["ab", "-q", "-n", "1000", "-c", str(concurrency), url],
                             capture_output=True, text=True, check=True,
                             env=helpers.tool_env()).stdout
        before = time_wait(port)
        r = httpbench.run(url, requests=1000, concurrency=concurrency, keepalive=False,
                          progress=False)
        after = time_wait(port)
    exact(r)
    total = int(re.search(r"Total transferred:\s+(\d+) bytes", out).group(1))
    html = int(re.search(r"HTML transferred:\s+(\d+) bytes", out).group(1))
    assert (r.complete, r.connects, r.keepalive_requests) == (1000, 1000, 0)
    assert (r.bytes_received, r.body_bytes) == (total, html)
    # Before: every one of the 1,000 on the client's side. A FIN that takes
    # longer than the loop's tick (50 ms) to come is closed from this side.
    assert after[0] - before[0] <= 10, (before, after)


# A response the client does not reuse on its own account (RFC 9112
# section 6.3, item 3: Content-Length beside Transfer-Encoding), from a
# server that keeps the socket open for more.
_BOTH = (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
         b"3\r\nabc\r\n0\r\n\r\n")


def test_a_response_not_reused_by_the_clients_choice_is_closed_at_once(tmp_path):
    """The client closes a connection it will not reuse at once when the
    server did not say it closes: nothing more is owed, and waiting for a
    FIN that never came held each request until the next tick (50 ms: 18
    req/s on one connection; at 40/s on two, 26 of 80 left unsent and a
    corrected p99 of 1.65 s for a server that answers at once). The log's
    gap between an answer and its lane's next request is the connect's."""
    with helpers.answering(_BOTH) as url:
        log = tmp_path / "log.csv"
        r = httpbench.run(url, requests=200, concurrency=1, log=str(log), progress=False)
        exact(r)
        assert (r.complete, r.connects, r.body_bytes) == (200, 200, 600)
        records = sorted(httpbench.read_log(str(log)), key=lambda x: x.start)
        gaps = sorted(b.start - (a.start + a.latency) for a, b in zip(records, records[1:], strict=False))
        assert gaps[len(gaps) // 2] < 0.001, gaps[len(gaps) // 2]  # a tick each: 0.05
        paced = httpbench.run(url, rate=40, concurrency=2, duration=2, progress=False)
    exact(paced)
    c = paced.client
    assert c is not None and c.unsent == 0 and paced.complete == 80
    assert paced.latency.p99 < 0.5, paced.latency


def test_no_keepalive_keeps_a_users_connection_field(scripted):
    srv = scripted([("recv",), ("send", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"),
                    ("close",)])
    r = httpbench.run(f"http://127.0.0.1:{srv.port}/", requests=1, keepalive=False,
                      headers={"connection": "keep-alive"}, progress=False)
    assert r.complete == 1
    assert b"\r\nconnection: keep-alive\r\n" in srv.requests[0]
    assert b"close" not in srv.requests[0].lower()


def test_many_connections(server):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 2 * 400 + 64  # both ends live in this process
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            pytest.skip(f"the open-file limit ({hard}) is below {need}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    r = httpbench.run(server.url("/rnd?c=512"), requests=4000, concurrency=400, threads=2,
                      progress=False)
    exact(r)
    assert (r.complete, r.failed, r.reconnects) == (4000, 0, 0)
    # A connection opens with its first request. On one CPU (taskset -c 0)
    # the first thread may take every ticket before the second has run, so
    # not every connection need have opened; none opened twice.
    assert r.connects <= 400 and r.keepalive_requests == 4000


def test_responses_that_end_keep_alive_are_counted_by_the_loops_own_table(server, scripted):
    """A counter without a Result field of its own (closing_responses, from
    bench.h's list) reaches Result.counts and the JSON, and sums exactly
    over threads, scenario names and a merge."""
    kept = httpbench.run(server.url("/rnd?c=10"), requests=200, concurrency=4, progress=False)
    assert kept.counts == {"closing_responses": 0, "retries": 0, "late_busy": 0, "unopened": 0}
    closed = httpbench.run(server.url("/rnd?c=10"), requests=200, concurrency=4, threads=2,
                           keepalive=False, progress=False)
    assert closed.counts == {"closing_responses": 200, "retries": 0, "late_busy": 0,
                             "unopened": 0}
    assert closed.complete == 200
    assert httpbench.Result.from_json(closed.to_json()).counts == closed.counts
    # A server that closes after every second answer, saying so.
    close = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    srv = scripted(*[[("recv",), ("send", helpers.OK), ("recv",), ("send", close)]] * 3)
    r = httpbench.run(f"http://127.0.0.1:{srv.port}/", requests=6, progress=False)
    assert (r.complete, r.counts["closing_responses"]) == (6, 3)
    from httpbench.distributed import merge
    assert merge([closed, r]).counts == {"closing_responses": 203, "retries": 0,
                                         "late_busy": 0, "unopened": 0}

"""Scenarios run by the C loop: picks, variants, checks and the figures
per request name, against the embedded server and servers that record what
they were sent."""

from __future__ import annotations

import collections
import json
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import httpbench
from helpers import exact
from httpbench import Request, Scenario
from httpbench.render.text import by_name_rows
from httpbench.reqlog import iter_log
from httpbench.result import FAILURE_CLASSES

COUNTS = ("issued", "complete", "failed", "cancelled", "non_2xx", "bytes_received",
          "body_bytes", "bytes_sent", "keepalive_requests", "connects", "reconnects")


class _Recorder(BaseHTTPRequestHandler):
    """Answers every request 200 with the target as the body, keeping the
    connection, and records (connection, method, target, headers, body)."""

    protocol_version = "HTTP/1.1"
    # One write per response, sent at once: a head and a body written
    # apart would wait on the client's delayed ACK (40 ms a request).
    wbufsize = 65536
    disable_nagle_algorithm = True
    seen: list[tuple[int, str, str, dict[str, str], bytes]]

    def _answer(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        self.server.seen.append((id(self.connection), self.command, self.path,  # type: ignore
                                 dict(self.headers), body))
        if self.path == "/close":  # closed before any response byte
            self.close_connection = True
            return
        if self.path == "/malformed":
            self.wfile.write(b"HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n")
            self.close_connection = True
            return
        out = self.path.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_HEAD = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[ThreadingHTTPServer]:
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    srv.daemon_threads = True
    srv.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def assert_exact_merge(r: httpbench.Result) -> None:
    """The whole Result is the exact sum of its requests', and each keeps
    issued == complete + failed + cancelled."""
    parts = list(r.by_name.values())
    assert parts
    for x in [r, *parts]:
        exact(x)
        assert x.failed == sum(x.failures.values()), x
        # Non-2xx responses are complete ones that were not 2xx.
        assert x.non_2xx <= x.complete, x
    for name in COUNTS:
        assert getattr(r, name) == sum(getattr(x, name) for x in parts), name
    for cls in FAILURE_CLASSES:
        assert r.failures[cls] == sum(x.failures[cls] for x in parts), cls
    merged: collections.Counter[int] = collections.Counter()
    for x in parts:
        merged.update(x.status_counts)
    assert dict(merged) == r.status_counts
    for lat in ("latency", "latency_uncorrected", "connect_time", "waiting", "processing"):
        assert getattr(r, lat).count == sum(getattr(x, lat).count for x in parts), lat
    if r.latency.count:
        assert r.latency.max == max(x.latency.max for x in parts if x.latency.count)


def test_weighted_picks_follow_the_weights_and_the_seed():
    reqs = [Request("GET", "/rnd?c=10", name="a", weight=8),
            Request("GET", "/rnd?c=20", name="b", weight=4),
            Request("GET", "/rnd?c=30", name="c", weight=1)]
    with httpbench.Server() as srv:
        r = httpbench.run(srv.url("/"), scenario=Scenario(reqs, seed=7), requests=100_000,
                          concurrency=8, threads=2, progress=False)
        assert r.ok and r.complete == 100_000
        for req in reqs:
            share = r.by_name[req.name].complete / r.complete
            assert abs(share - req.weight / 13) <= 0.02 * req.weight / 13, (req.name, share)
        assert r.by_name["b"].body_bytes == 20 * r.by_name["b"].complete
        assert_exact_merge(r)
        # One thread and one connection: the picks are the seed's alone.
        counts = []
        for seed in (5, 5, 6):
            one = httpbench.run(srv.url("/"), scenario=Scenario(reqs, seed=seed), requests=3000,
                                progress=False)
            counts.append([one.by_name[x.name].complete for x in reqs])
        assert counts[0] == counts[1] and counts[0] != counts[2], counts


def test_variants_are_cycled_exactly(recorder):
    url = f"http://127.0.0.1:{recorder.server_port}"
    targets = [f"/item/{i}" for i in range(7)]
    bodies = [f"body {i}".encode() for i in range(7)]
    s = Scenario([Request("PUT", targets, body=bodies, name="put"),
                  Request("GET", "/list", name="list", weight=2)], seed=1)
    r = httpbench.run(url, scenario=s, requests=1500, concurrency=4, threads=2, progress=False)
    assert r.ok, r.first_error
    puts = [(path, body) for _, method, path, _, body in recorder.seen if method == "PUT"]
    assert len(puts) == r.by_name["put"].complete
    per = collections.Counter(puts)
    # The n-th use sends variant n mod 7: each pair, zipped, N/7 times (+-1).
    assert set(per) == {(t, b) for t, b in zip(targets, bodies, strict=True)}
    assert max(per.values()) - min(per.values()) <= 1, per
    assert r.by_name["put"].path == "7 variants" and r.by_name["list"].path == "/list"


def test_random_variants_are_drawn(recorder):
    url = f"http://127.0.0.1:{recorder.server_port}"
    s = Scenario([Request("GET", [f"/r/{i}" for i in range(4)], variants="random")])
    r = httpbench.run(url, scenario=s, requests=2000, concurrency=2, progress=False)
    assert r.ok
    per = collections.Counter(path for _, _, path, _, _ in recorder.seen)
    assert set(per) == {f"/r/{i}" for i in range(4)}
    assert max(per.values()) - min(per.values()) > 1  # drawn, not cycled
    assert all(abs(n - 500) < 150 for n in per.values()), per


def test_sequence_walks_the_list_per_connection(recorder):
    url = f"http://127.0.0.1:{recorder.server_port}"
    journey = ["/login", "/list", "/item/1", "/buy"]
    s = Scenario([Request("GET", t) for t in journey[:3]] + [Request("POST", "/buy", body=b"1")],
                 order="sequence")
    r = httpbench.run(url, scenario=s, requests=4 * 3 * 25, concurrency=3, progress=False)
    assert r.ok and r.connects == 3
    by_conn: dict[int, list[str]] = collections.defaultdict(list)
    for conn, _, path, _, _ in recorder.seen:
        by_conn[conn].append(path)
    assert len(by_conn) == 3
    for paths in by_conn.values():
        assert paths == journey * (len(paths) // 4) + journey[:len(paths) % 4], paths[:12]
    # Each connection has walked its journey some times and is part-way
    # through the next: a step is taken at most once more than the next.
    steps = [r.by_name[n].complete for n in ("GET /login", "GET /list", "GET /item/1",
                                             "POST /buy")]
    assert sum(steps) == 300 and steps == sorted(steps, reverse=True), steps
    assert steps[0] - steps[-1] <= 3, steps


def test_a_sequence_over_http2_walks_each_stream_slot_as_a_journey(tmp_path):
    """Over HTTP/2 each stream slot is a lane: it walks the sequence in
    order, its next step chosen when its last one ended, never beside it.
    Two slots on one connection both begin at the first step (300 ms),
    and no second step starts before a first has ended (with the step
    taken at the ticket, the second went out beside the first at once).
    order="turns" is that other rule, h2load's."""
    s = Scenario([Request("GET", "/delay?ms=300", name="slow"),
                  Request("GET", "/rnd?c=10", name="next")], order="sequence")
    log = tmp_path / "log.csv"
    with httpbench.Server() as srv:
        r = httpbench.run(srv.url("/"), scenario=s, requests=4, concurrency=1, http2=True,
                          streams=2, progress=False, log=log)
    exact(r)
    assert r.ok and r.by_name["slow"].complete == 2 and r.by_name["next"].complete == 2
    rows = list(iter_log(log))
    slow = [x for x in rows if x.name == "slow"]
    first_end = min(x.start + x.latency for x in slow)
    assert max(x.start for x in slow) - min(x.start for x in slow) < 0.2, rows
    assert all(x.start >= first_end - 0.001 for x in rows if x.name == "next"), rows
    # In turns (h2load's URIs) a connection's streams share its turns: its
    # first two requests are the two steps, at once.
    turns = Scenario(s.requests, order="turns")
    with httpbench.Server() as srv:
        r = httpbench.run(srv.url("/"), scenario=turns, requests=2, concurrency=1, http2=True,
                          streams=2, progress=False, log=log)
    exact(r)
    rows = list(iter_log(log))
    assert sorted(x.name for x in rows) == ["next", "slow"], rows
    assert max(x.start for x in rows) - min(x.start for x in rows) < 0.2, rows


def test_headers_of_the_run_apply_under_the_requests_own(recorder):
    url = f"http://127.0.0.1:{recorder.server_port}"
    s = Scenario([Request("GET", "/a", headers={"X-Who": "request"}),
                  Request("GET", f"{url}/b"),  # a URL of the same origin
                  Request("HEAD", "/c")], order="sequence")
    r = httpbench.run(url + "/ignored", scenario=s, requests=6, progress=False,
                      headers={"X-Who": "run", "X-Run": "1"})
    assert r.ok and r.by_name["HEAD /c"].body_bytes == 0
    seen = {(path, h.get("X-Who"), h.get("X-Run")) for _, _, path, h, _ in recorder.seen}
    assert seen == {("/a", "request", "1"), ("/b", "run", "1"), ("/c", "run", "1")}
    assert r.by_name[f"GET {url}/b"].document_length == 2


def test_another_origin_and_wrong_arguments_are_refused():
    s = Scenario([Request("GET", "http://elsewhere.example:8080/x")])
    with pytest.raises(ValueError, match="one origin"):
        httpbench.run("http://127.0.0.1:9", scenario=s, requests=1, progress=False)
    ok = Scenario([Request("GET", "/")])
    for kwargs, match in ((dict(method="POST"), "method"), (dict(body=b"x"), "body"),
                          (dict(pipeline=2), "pipeline")):
        with pytest.raises(ValueError, match=match):
            httpbench.run("http://127.0.0.1:9", scenario=ok, requests=1, progress=False,
                          **kwargs)
    with pytest.raises(ValueError, match="Scenario"):
        httpbench.run("http://127.0.0.1:9", scenario=[Request()], requests=1)  # type: ignore


def test_equal_weights_split_evenly_whatever_their_size():
    """Two weights of 5e-324 (the smallest subnormal) split 25/75: the C
    pick scaled a fraction by a subnormal total. Normalised in Python first,
    equal weights are equal, however small or large."""
    with httpbench.Server() as srv:
        for w in (5e-324, 1e-310, 1.0, 1e6):
            s = Scenario([Request("GET", "/rnd?c=1", name="a", weight=w),
                          Request("GET", "/rnd?c=2", name="b", weight=w)], seed=1)
            r = httpbench.run(srv.url("/"), scenario=s, requests=20_000, concurrency=2,
                              progress=False)
            share = r.by_name["a"].complete / r.complete
            assert abs(share - 0.5) < 0.02, (w, share)
    from httpbench.scenario import normal_weights

    assert normal_weights([5e-324, 5e-324]) == [0.5, 0.5]
    assert normal_weights([1, 3]) == [0.25, 0.75]
    with pytest.raises(ValueError, match="too small beside"):
        normal_weights([5e-324, 1e6])


def test_checks_and_exact_accounting_under_every_failure_class():
    with httpbench.Server() as srv:
        s = Scenario([
            Request("GET", "/rnd?c=64", name="ok", expect_status=200, expect_length=64),
            Request("GET", "/status/404", name="missing"),  # non-2xx, not a failure
            Request("GET", "/status/503", name="unwanted", expect_status={200, 201}),
            Request("POST", "/echo", body=b"needle in the body", name="found",
                    expect_body=b"needle"),
            Request("POST", "/echo", body=b"hay only", name="not found", expect_body=b"needle"),
            Request("GET", "/rnd?c=10", name="short", expect_length=11),
            Request("GET", "/delay?ms=400", name="slow", weight=0.2),
        ], seed=3)
        r = httpbench.run(srv.url("/"), scenario=s, requests=3000, concurrency=6, threads=2,
                          timeout=0.2, progress=False)
    n = r.by_name
    assert n["ok"].complete == n["ok"].issued > 0 and n["ok"].failed == 0
    assert n["missing"].complete == n["missing"].non_2xx == n["missing"].status_counts[404] > 0
    assert n["unwanted"].failed == n["unwanted"].failures["check"] == n["unwanted"].issued > 0
    assert n["unwanted"].status_counts == {503: n["unwanted"].issued}
    assert n["found"].complete == n["found"].issued > 0
    assert n["not found"].failures["check"] == n["not found"].issued > 0
    assert n["short"].failures["length"] == n["short"].issued > 0
    assert n["slow"].failures["timeout"] == n["slow"].issued > 0
    assert r.failures["check"] == n["unwanted"].issued + n["not found"].issued
    assert "Check: " in r.report() and "Requests by name" in r.report()
    assert_exact_merge(r)


def test_a_response_failing_its_check_is_failed_not_non_2xx():
    """One definition: non_2xx counts complete responses that were not 2xx,
    so non_2xx <= complete. A 404 that fails expect_status=200 is failed in
    `check`; its status is still in status_counts."""
    with httpbench.Server() as srv:
        r = httpbench.run(srv.url("/"), scenario=Scenario([
            Request("GET", "/status/404", expect_status=200)]), requests=10, progress=False)
        text = r.report()
        assert (r.complete, r.non_2xx, r.failures["check"]) == (0, 0, 10)
        assert r.status_counts == {404: 10}
        assert "Complete requests:      0" in text and "Non-2xx" not in text
        mixed = httpbench.run(srv.url("/"), scenario=Scenario([
            Request("GET", "/status/404", name="checked", expect_status=200),
            Request("GET", "/status/404", name="plain")], order="sequence"), requests=10,
            progress=False)
    assert (mixed.complete, mixed.non_2xx, mixed.failures["check"]) == (5, 5, 5)
    assert mixed.status_counts == {404: 10}
    assert_exact_merge(mixed)
    line = next(x for x in mixed.report().splitlines() if x.startswith("Non-2xx"))
    assert line.split(":", 1)[1].split()[0] == "5", line


def test_exact_accounting_per_name_when_the_server_fails(recorder):
    url = f"http://127.0.0.1:{recorder.server_port}"
    s = Scenario([Request("GET", "/fine"), Request("GET", "/close"),
                  Request("GET", "/malformed")], seed=2)
    r = httpbench.run(url, scenario=s, requests=600, concurrency=3, progress=False)
    n = r.by_name
    assert n["GET /fine"].complete == n["GET /fine"].issued > 150
    assert n["GET /close"].failures["receive"] == n["GET /close"].issued > 150
    assert n["GET /malformed"].failures["exceptions"] == n["GET /malformed"].issued > 150
    assert r.issued == 600 and r.reconnects > 0
    assert_exact_merge(r)


def test_exact_accounting_per_name_for_connect_tls_and_cancelled():
    s = Scenario([Request("GET", "/rnd?c=1"), Request("GET", "/rnd?c=2", weight=2)])
    with socket.socket() as s0:
        s0.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        r = httpbench.run(f"http://127.0.0.1:{s0.getsockname()[1]}", scenario=s, requests=90,
                          concurrency=3, progress=False)
    assert r.failures["connect"] == r.failed == 90 and all(x.issued for x in r.by_name.values())
    assert_exact_merge(r)
    with httpbench.Server(tls=True) as srv:  # its certificate is not in the system's CAs
        r = httpbench.run(srv.url("/"), scenario=s, requests=60, concurrency=2, progress=False)
    assert r.failures["tls"] == r.failed == 60
    assert_exact_merge(r)
    slow = Scenario([Request("GET", "/rnd?c=3", name="quick"),
                     Request("GET", "/delay?ms=5000", name="slow", weight=0.05)], seed=4)
    with httpbench.Server(threads=2) as srv:
        r = httpbench.run(srv.url("/"), scenario=slow, duration=1.0, concurrency=4,
                          progress=False)
    assert r.by_name["slow"].cancelled == r.cancelled >= 1 and r.by_name["quick"].complete > 0
    assert_exact_merge(r)


def _trickling_server(body: bytes, chunked: bool) -> tuple[socket.socket, threading.Thread]:
    """A server whose responses arrive a byte per segment: the body's check
    sees every split of it."""
    lsock = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = lsock.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with conn:
            buf = b""
            while True:
                while b"\r\n\r\n" not in buf:
                    got = conn.recv(4096)
                    if not got:
                        return
                    buf += got
                buf = buf.split(b"\r\n\r\n", 1)[1]
                if chunked:
                    # Two chunks split inside the needle: data runs apart.
                    half = len(body) // 2
                    wire = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                            b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (half, body[:half],
                                                                  len(body) - half, body[half:]))
                else:
                    wire = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
                for i in range(len(wire)):
                    conn.sendall(wire[i:i + 1])

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return lsock, t


@pytest.mark.parametrize("chunked", [False, True])
def test_expect_body_across_one_byte_reads(chunked):
    body = b"aaab" * 8 + b"aaaaabaaac" + b"aaab" * 4
    for needle, found in ((b"aaaaabaaac", True), (b"aaac", True), (b"aaaaaa", False),
                          (body, True), (body + b"x", False)):
        lsock, t = _trickling_server(body, chunked)
        with lsock:
            s = Scenario([Request("GET", "/", expect_body=needle)])
            r = httpbench.run(f"http://127.0.0.1:{lsock.getsockname()[1]}", scenario=s,
                              requests=3, progress=False)
        t.join(5)
        assert r.issued == 3 and r.body_bytes == 3 * len(body), r.first_error
        assert (r.complete, r.failures["check"]) == ((3, 0) if found else (0, 3)), needle


def test_the_result_in_json_html_and_pandas():
    s = Scenario([Request("GET", "/rnd?c=5", name="five"),
                  Request("GET", [f"/rnd?c={i}" for i in (1, 2)], name="small", weight=2)])
    with httpbench.Server() as srv:
        r = httpbench.run(srv.url("/"), scenario=s, requests=300, concurrency=2,
                          progress=False)
    d = json.loads(r.to_json())
    assert d["schema"] == httpbench.result.SCHEMA and set(d["by_name"]) == {"five", "small"}
    assert d["by_name"]["small"]["path"] == "2 variants"
    back = httpbench.Result.from_json(r.to_json())
    assert back.by_name["small"].complete == r.by_name["small"].complete
    assert back.report() == r.report()
    text = r.report()
    table = text[text.index("Requests by name"):].splitlines()
    assert table[1].split() == ["Name", "Method", "Target", "Count", "Failed", "Req/s", "Mean",
                                "p50", "p99", "Max"]
    assert table[2].split()[:4] == ["five", "GET", "/rnd?c=5", str(r.by_name["five"].complete)]
    assert table[-1].split()[:2] == ["Aggregated", "300"]
    html = r._repr_html_()
    assert "Requests by name" in html and "2 variants" in html
    pd = pytest.importorskip("pandas")
    df = r.to_pandas(by_name=True)
    assert isinstance(df, pd.DataFrame)
    assert list(df.index) == ["five", "small", "Aggregated"]
    assert df.loc["Aggregated", "count"] == 300
    assert df.loc["small", "count"] == r.by_name["small"].complete


def test_the_table_times_failed_checks_and_its_rows_add_up():
    """A request whose check failed every time showed 0.00 req/s and no
    latency, and the aggregated req/s was not the count over the time: a
    response that arrived has its latency, check or no check, and every
    row's req/s is its count over the run's time."""
    s = Scenario([Request("GET", "/rnd?c=5", name="fine"),
                  Request("GET", "/rnd?c=5", name="never", expect_status=[404])],
                 order="sequence")
    with httpbench.Server() as srv:
        r = httpbench.run(srv.url("/"), scenario=s, requests=400, concurrency=2,
                          progress=False)
    never = r.by_name["never"]
    assert never.failures["check"] == never.failed == never.issued > 150
    assert never.complete == 0
    assert never.latency.count == never.issued and never.latency.p99 > 0
    assert r.latency.count == r.issued == 400
    rows = {x["name"]: x for x in by_name_rows(r)}
    assert rows["never"]["p99"] == never.latency.p99 and rows["never"]["rps"] > 0
    assert rows["Aggregated"]["rps"] == pytest.approx(400 / r.time_taken)
    assert rows["fine"]["rps"] + rows["never"]["rps"] == pytest.approx(
        rows["Aggregated"]["rps"])
    text = r.report()
    line = next(x for x in text[text.index("Requests by name"):].splitlines()
                if x.startswith("never"))
    assert line.split()[5] != "0.00" and line.split()[6] != "-", line


def test_a_scenario_through_the_relay_and_over_tls():
    s = Scenario([Request("GET", "/rnd?c=7", name="seven"),
                  Request("POST", "/echo", body=b"hello", name="echo", expect_body=b"hello")])
    with httpbench.Server() as origin, httpbench.Server(proxy=True) as relay:
        r = httpbench.run(origin.url("/"), scenario=s, requests=200, concurrency=2,
                          proxy=f"http://127.0.0.1:{relay.port}", progress=False)
    assert r.ok and r.by_name["seven"].body_bytes == 7 * r.by_name["seven"].complete
    assert relay.stats()["relayed"] == 200
    with httpbench.Server(tls=True) as srv:
        r = httpbench.run(srv.url("/"), scenario=s, requests=200, concurrency=2,
                          cafile=srv.cafile, progress=False)
    assert r.ok and r.tls_protocol and r.by_name["echo"].complete > 0


def _cli(tmp_path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "httpbench", *argv], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)


def test_the_command_line_takes_several_urls_and_a_scenario_file(tmp_path):
    (tmp_path / "shop.py").write_text(
        "import httpbench\n"
        "scenario = httpbench.Scenario([\n"
        "    httpbench.Request('GET', '/rnd?c=10', name='ten', weight=3),\n"
        "    httpbench.Request('POST', '/echo', body=b'abc', name='echo', expect_body=b'abc'),\n"
        "])\n")
    (tmp_path / "broken.py").write_text("scenario = httpbench.Scenario([])\n")
    (tmp_path / "nothing.py").write_text("x = 1\n")
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(3)\n")  # (exit 3, silent)
    with httpbench.Server() as srv:
        u = srv.url("/")
        p = _cli(tmp_path, "-n", "900", "-c", "3", "-q", "--json", "r.json", u + "rnd?c=5",
                 u + "rnd?c=6", u + "status/404")
        assert p.returncode == 0, p.stderr  # a 404 is counted apart, as for one URL
        d = json.loads((tmp_path / "r.json").read_text())
        assert set(d["by_name"]) == {"GET /rnd?c=5", "GET /rnd?c=6", "GET /status/404"}
        assert d["complete"] == 900 and d["non_2xx"] == d["by_name"]["GET /status/404"]["complete"]
        assert all(250 <= x["complete"] <= 350 for x in d["by_name"].values())
        assert "Requests by name" in p.stdout and "Aggregated" in p.stdout
        p = _cli(tmp_path, "-n", "400", "-c", "2", "-q", "--scenario", "shop.py", u)
        assert p.returncode == 0, p.stderr
        assert "\nten " in p.stdout and "\necho " in p.stdout
        for argv, message in (
                ([u, "http://127.0.0.1:1/"], "one origin"),
                (["--scenario", "missing.py", u], "no such file"),
                (["--scenario", "broken.py", u], "NameError"),
                (["--scenario", "nothing.py", u], "must define `scenario`"),
                (["--scenario", "exits.py", u], "exits.py called sys.exit(3) while loading"),
                (["--scenario", "shop.py"], "give the server's URL"),
                (["--scenario", "shop.py", "-p", "shop.py", u], "-p"),
                (["--pipeline", "2", u, u + "x"], "pipeline")):
            p = _cli(tmp_path, "-n", "5", "-q", *argv)
            assert p.returncode == 2 and message in p.stderr, (argv, p.stderr)


def test_the_capacity_of_a_scenario(tmp_path):
    # Two requests of 20 ms and 40 ms, equal weights, on 4 connections:
    # 4 / 0.030 s = 133 req/s is the most the mix can take.
    with httpbench.Server() as srv:
        s = Scenario([Request("GET", srv.url("/delay?ms=20")),
                      Request("GET", srv.url("/delay?ms=40"))])
        c = httpbench.capacity(s, slo="p99<200ms", start=60, stage_s=1.5, concurrency=4)
        assert 100 <= c.rate <= 140, c.report()
        with pytest.raises(ValueError, match="paths"):
            httpbench.capacity(Scenario([Request("GET", "/")]))
        # The command line's search, on a mix whose limit is the server's
        # (2 connections of 10 and 20 ms: 2 / 0.015 s = 133 req/s), far below
        # what the client can send on any machine: with instant answers the
        # search climbed to tens of thousands a second, where a slow client
        # (a sanitizer build on a shared CPU) is the limit, and says so with
        # status 1.
        (tmp_path / "mix.py").write_text(
            "import httpbench\n"
            "scenario = httpbench.Scenario([httpbench.Request('GET', '/delay?ms=10'),\n"
            "                               httpbench.Request('GET', '/delay?ms=20')])\n")
        p = _cli(tmp_path, "capacity", srv.url("/"), "--scenario", "mix.py", "--slo", "p99<1s",
                 "--start", "50", "--stage", "0.3", "--step", "10", "-c", "2",
                 "--max-error-rate", "0.5")
    assert p.returncode == 0 and "capacity:" in p.stdout, p.stdout + p.stderr
    found = re.search(r"capacity: ([\d,]+) req/s", p.stdout)
    assert found and 90 <= int(found.group(1).replace(",", "")) <= 180, p.stdout

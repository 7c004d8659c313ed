"""What a new user meets in the first ten minutes (issue 11): the habits of
ab, wrk, wrk2 and hey on the command line, defaults, the JSON and hgrm
outputs, and what a second look at the client and the loop found."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import httpbench

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


@pytest.fixture(scope="module")
def server():
    with httpbench.Server(threads=2) as srv:
        yield srv


def hb(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "httpbench", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout)


# ------------------------------------------------ the command line's habits


@pytest.mark.parametrize("args,seconds", [
    (["-t", "1s"], 1.0), (["-t", "0.8"], 0.8), (["-d", "1s"], 1.0), (["--duration", "900ms"], 0.9),
    (["-z", "1"], 1.0),
])
def test_durations_take_units_by_every_letter(tmp_path, server, args, seconds):
    t0 = time.monotonic()
    r = hb(*args, "-q", "-c", "2", "--json", "r.json", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["requests"] is None and d["complete"] > 50
    assert seconds * 0.9 < d["time_taken"] < seconds + 1.2
    assert time.monotonic() - t0 < seconds + 10


def test_a_bare_small_t_with_c_and_no_n_warns_about_threads(tmp_path, server):
    """wrk's -t4 is four threads; here -t keeps ab's meaning and says so."""
    r = hb("-t1", "-c2", "-q", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "-t 1 is ab's time limit, 1 s; for 1 threads, as in wrk, use --threads 1" in r.stderr
    r = hb("-t", "1s", "-c2", "-q", server.url("/rnd?c=10"), cwd=tmp_path)
    assert "--threads" not in r.stderr


def test_d_no_longer_swallows_its_value_as_the_url(tmp_path, server):
    r = hb("-d", "10s", "-c", "1", "-n", "20", "-q", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Complete requests:      20" in r.stdout  # -n ended it first


def test_wrk2_rate_and_wrk_latency_are_accepted(tmp_path, server):
    r = hb("-R", "200", "-d", "1s", "-c", "4", "--latency", "-q", "--json", "-",
           server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["rate"] == 200 and 170 <= d["issued"] <= 215
    assert "Target rate:" in r.stderr  # the report went to stderr


def test_mixing_t_and_d_with_different_values_is_a_usage_error(tmp_path):
    r = hb("-t", "1", "-d", "2s", "http://127.0.0.1:1/", cwd=tmp_path)
    assert r.returncode == 2 and "the same time limit" in r.stderr


def test_i_sends_head_and_reports_document_length_0(tmp_path, server):
    """Item 8: a HEAD run's document length is 0, not None."""
    r = hb("-i", "-n", "30", "-q", "--json", "r.json", server.url("/rnd?c=100"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["method"] == "HEAD" and d["document_length"] == 0 and d["body_bytes"] == 0
    res = httpbench.run(server.url("/rnd?c=100"), "HEAD", requests=10, progress=False)
    assert res.document_length == 0


def test_basic_auth_cookies_and_default_content_type_reach_the_server(tmp_path, scripted):
    post = tmp_path / "body"
    post.write_bytes(b"abc")
    srv = scripted([("recv",), ("send", OK)])
    r = hb("-n", "1", "-q", "-A", "alice:s3cret", "-C", "a=1", "-C", "b=2", "-p", str(post),
           f"http://127.0.0.1:{srv.port}/x", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (raw,) = srv.requests
    head = raw.split(b"\r\n\r\n")[0].decode().split("\r\n")
    assert head[0] == "POST /x HTTP/1.1"
    assert f"Authorization: Basic {base64.b64encode(b'alice:s3cret').decode()}" in head
    assert "Cookie: a=1; b=2" in head
    assert "Content-Type: text/plain" in head  # ab's default for -p
    assert f"User-Agent: httpbench/{httpbench.__version__}" in head and "Accept: */*" in head


def test_run_sends_user_agent_and_accept_unless_given(scripted):
    srv = scripted([("recv",), ("send", OK)], [("recv",), ("send", OK)])
    url = f"http://127.0.0.1:{srv.port}/"
    httpbench.run(url, requests=1, progress=False)
    httpbench.run(url, headers={"user-agent": "x/1", "ACCEPT": "text/html"}, requests=1,
                  progress=False)
    first, second = (raw.split(b"\r\n\r\n")[0].split(b"\r\n")[1:] for raw in srv.requests)
    agent = b"User-Agent: httpbench/" + httpbench.__version__.encode()
    assert sorted(first) == sorted([agent, b"Accept: */*", b"Host: 127.0.0.1:%d" % srv.port])
    assert sorted(second) == sorted([b"user-agent: x/1", b"ACCEPT: text/html",
                                     b"Host: 127.0.0.1:%d" % srv.port])


def test_credentials_in_the_url_become_basic_auth(scripted):
    srv = scripted([("recv",), ("send", OK)])
    r = httpbench.run(f"http://bob:p%40ss@127.0.0.1:{srv.port}/", requests=1, progress=False)
    assert r.complete == 1 and "p%40ss" not in r.url and "***" in r.url
    (raw,) = srv.requests
    assert f"Authorization: Basic {base64.b64encode(b'bob:p@ss').decode()}".encode() in raw


def test_v2_prints_the_first_response_head(tmp_path, server):
    r = hb("-v", "2", "-n", "5", "-q", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("LOG: header received:\nHTTP/1.1 200 OK\n")
    assert "Content-Length: 10\n" in r.stdout


def test_defaults_are_concurrency_1(tmp_path, server):
    r = httpbench.run(server.url("/rnd?c=10"), requests=50, progress=False)
    assert r.concurrency == 1 and r.connects == 1
    cli = hb("-n", "50", "-q", "--json", "-", server.url("/rnd?c=10"), cwd=tmp_path)
    assert json.loads(cli.stdout)["concurrency"] == 1


def test_non_2xx_broken_down_and_fail_on_non_2xx(tmp_path, server):
    r = hb("-n", "20", "-q", server.url("/status/503"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Non-2xx responses:      20 (503: 20)" in r.stdout
    r = hb("-n", "20", "-q", "--fail-on-non-2xx", server.url("/status/503"), cwd=tmp_path)
    assert r.returncode == 1


def test_compare_says_when_every_answer_was_non_2xx(server):
    cmp = httpbench.compare(server.url("/status/404"), agents=["httpbench", "http.client"],
                            scenarios=["get"], requests=50)
    assert "non-2xx" in cmp.table()
    assert any("every response was non-2xx (404: 50)" in n for n in cmp.warnings())
    assert "every response was non-2xx" in cmp.report(reports=False)


def test_help_names_compare_serve_and_the_habits(tmp_path):
    out = hb("--help", cwd=tmp_path).stdout
    for words in ("httpbench compare", "httpbench serve", "with no URL", "wrk:", "hey:",
                  "ab:", "-d TIME, --duration TIME, -z TIME", "-R RATE, --rate RATE"):
        assert words in out, words


# ------------------------------------------------------------- the JSON


def test_json_has_a_schema_a_start_time_named_seconds_and_plain_histograms(server):
    r = httpbench.run(server.url("/rnd?c=10"), duration=1.2, concurrency=2, progress=False)
    d = json.loads(r.to_json())
    # 3: the tls class and tls_* figures; 4 unix_socket; 5 stages; 6 the check
    # class and by_name; 7 workers and not_run; 8 time_taken and non_2xx anew
    assert d["schema"] == httpbench.result.SCHEMA
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", d["start_time"])
    sec = d["timeline"][0]
    assert set(sec) == {"t", "complete", "failed", "rps", "p50", "p99"} and sec["t"] == 0
    assert 0 < sec["p50"] <= sec["p99"] < 1  # seconds
    pairs = d["latency"]["histogram"]
    assert sum(n for _, n in pairs) == r.complete
    assert all(0 < v < 1 for v, _ in pairs) and pairs == sorted(pairs)
    assert json.loads(httpbench.Result.from_json(r.to_json()).to_json()) == d


def test_json_saved_by_the_previous_layout_still_loads(server):
    r = httpbench.run(server.url("/rnd?c=10"), requests=100, progress=False)
    old = r.to_dict()
    for name in ("schema", "start_time", "cancelled", "tls_protocol", "tls_temp_key",
                 "tls_server_name", "tls_full_handshakes", "tls_resumed_handshakes",
                 "tls_handshake", "unix_socket", "pipeline", "proxy"):
        del old[name]
    del old["failures"]["tls"]
    old["timeline"] = [[x["t"], x["complete"], x["failed"], x["p99"]] for x in old["timeline"]]
    back = httpbench.Result.from_dict(old)
    assert back.complete == 100 and back.cancelled == 0 and back.start_time is None
    assert back.timeline[0].p50 is None
    assert back.failures["tls"] == 0 and back.tls_handshake.count == 0
    assert "Failed requests:        0" in back.report() and "SSL/TLS" not in back.report()


# What each schema added, so a file of schema k lacks what came after it.
ADDED_BY = {3: ("tls_protocol", "tls_temp_key", "tls_server_name", "tls_full_handshakes",
                "tls_resumed_handshakes", "tls_handshake"),
            4: ("unix_socket", "pipeline", "proxy"), 5: ("stages", "concurrency_stages"),
            6: (), 7: ("not_run",), 8: ()}


@pytest.mark.parametrize("schema", range(httpbench.result.OLDEST_SCHEMA,
                                         httpbench.result.SCHEMA + 1))
def test_every_schema_from_2_to_the_current_one_reads_back(server, schema):
    r = httpbench.run(server.url("/rnd?c=10"), requests=50, progress=False)
    d = r.to_dict()
    d["schema"] = schema
    for later in range(schema + 1, httpbench.result.SCHEMA + 1):
        for name in ADDED_BY.get(later, ()):
            d.pop(name, None)
    back = httpbench.Result.from_dict(d)
    assert (back.complete, back.issued, back.body_bytes) == (50, 50, 500)
    assert back.latency.count == 50 and back.report().startswith("Server Software:")
    if schema < 3:
        assert back.tls_handshake.count == 0 and back.tls_protocol == ""


@pytest.mark.parametrize("schema", [1, 0, httpbench.result.SCHEMA + 1, "8", None, True])
def test_a_schema_this_version_cannot_read_is_refused_by_name(server, schema):
    d = httpbench.run(server.url("/rnd?c=10"), requests=1, progress=False).to_dict()
    d["schema"] = schema
    with pytest.raises(ValueError, match=f"schema {schema!r}: this httpbench reads schemas 2 to"):
        httpbench.Result.from_dict(d)


def test_hgrm_is_hdrhistograms_percentile_distribution(tmp_path, server):
    r = hb("-n", "2000", "-c", "2", "-q", "--hgrm", "out.hgrm", server.url("/rnd?c=10"),
           cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "out.hgrm").read_text().splitlines()
    assert lines[0].split() == ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
    rows = [line.split() for line in lines[2:] if line and not line.startswith("#")]
    values = [float(x[0]) for x in rows]
    percentiles = [float(x[1]) for x in rows]
    counts = [int(x[2]) for x in rows]
    assert values == sorted(values) and percentiles == sorted(percentiles)
    assert percentiles[0] == 0.0 and percentiles[-1] == 1.0 and counts[-1] == 2000
    assert percentiles[1:6] == [0.1, 0.2, 0.3, 0.4, 0.5] and percentiles[6] == 0.55
    assert lines[-3].startswith("#[Mean    =") and lines[-2].startswith("#[Max     =")
    assert "Total count    =         2000]" in lines[-2]
    assert values[-1] < 100  # milliseconds, as wrk2 prints


# --------------------------------------------------- the client and the loop


def test_a_tls_or_ssh_answer_is_an_error_at_once_not_a_timeout(scripted):
    """Item 3: the client waited for a blank line that never came."""
    for answer in (b"\x16\x03\x03\x00\x02\x02\x28", b"SSH-2.0-OpenSSH_9.2p1\r\n"):
        script = [("recv",), ("send", answer), ("sleep", 10)]
        srv = scripted(script, script)
        t0 = time.monotonic()
        with httpbench.Connection("127.0.0.1", srv.port, timeout=10) as conn:
            with pytest.raises(httpbench.ProtocolError, match="TLS|does not begin with HTTP/"):
                conn.request("GET", "/")
        assert time.monotonic() - t0 < 2
        r = httpbench.run(f"http://127.0.0.1:{srv.port}/", requests=1, timeout=10,
                          progress=False)
        assert r.failures["exceptions"] == 1 and ("TLS" in r.first_error or "SSH" in r.first_error)


@pytest.mark.parametrize("mode", ["epoll", "threads"])
def test_a_tls_client_hello_gets_400_at_once(mode):
    """Item 3, the server's side: not after the header deadline."""
    with httpbench.Server(mode=mode, header_timeout=10) as srv:
        with socket.create_connection(("127.0.0.1", srv.port)) as s:
            s.settimeout(5)
            t0 = time.monotonic()
            s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
            answer = b""
            while chunk := s.recv(4096):
                answer += chunk
        assert time.monotonic() - t0 < 2
        assert answer.startswith(b"HTTP/1.1 400 ") and b"TLS (0x16) sent to a plain HTTP" in answer


def test_bare_lf_response_heads_are_read(scripted):
    """Item 4: as curl and http.client read them (RFC 9112 section 2.2)."""
    srv = scripted([("recv",), ("send", b"HTTP/1.1 200 OK\nContent-Length: 2\nX-A: b\n  c\n\nok"),
                    ("recv",), ("send", OK)])
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        r = conn.request("GET", "/")
        assert (r.status, r.body, r.header("x-a")) == (200, b"ok", "b c")
        assert conn.request("GET", "/").body == b"ok" and conn.connects == 1


@pytest.mark.parametrize("leftover", [b"", b"garbage"])
def test_an_idle_socket_the_server_closed_is_not_reused(scripted, leftover):
    """Item 5: a non-idempotent request (no retry allowed) sent into a socket
    whose server had closed it, or had sent more than the response, was
    lost. Idle past a millisecond, the socket is looked at first."""
    first = [("recv",), ("send", OK + leftover), ("sleep", 0.05), ("close",)]
    srv = scripted(first, [("recv",), ("send", OK)])
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        assert conn.request("POST", "/", body=b"1").body == b"ok"
        time.sleep(0.3)
        assert conn.request("POST", "/", body=b"2").body == b"ok"
        assert (conn.connects, conn.retries) == (2, 0)


@pytest.mark.parametrize("concurrency", [1, 10, 50])
def test_rate_is_the_whole_runs_rate_at_any_concurrency(server, concurrency):
    """Item 6: every connection started its schedule at once, so 100
    requests at 200/s over 50 connections took 0.25 s and read 398 req/s."""
    r = httpbench.run(server.url("/rnd?c=10"), requests=100, rate=200, concurrency=concurrency,
                      progress=False)
    assert r.complete == 100
    assert 0.45 < r.time_taken < 0.6, r.time_taken
    assert 170 < r.rps < 225, r.rps


def test_threads_default_to_the_cpus_this_process_may_use(tmp_path, server):
    """Item 7: os.cpu_count() ignored taskset."""
    if shutil.which("taskset") is None:
        pytest.skip("taskset is not installed")
    code = ("import httpbench, sys; r = httpbench.run(sys.argv[1], requests=100, concurrency=8,"
            " progress=False); print(r.threads)")
    out = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", code,
                          server.url("/rnd?c=10")], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1"]
    assert httpbench.run(server.url("/rnd?c=10"), requests=20, concurrency=8,
                         progress=False).threads == min(8, len(os.sched_getaffinity(0)))


# ------------------------------------------------------------- benchmarks


def test_benchmarks_run_from_the_repository_root(tmp_path):
    """Packaging: a child `python -c` run from the root imported the source
    tree's httpbench, which has no built _core."""
    root = Path(__file__).resolve().parent.parent
    if not (root / "benchmarks" / "single_connection.py").exists():
        pytest.skip("no benchmarks here")
    r = subprocess.run([sys.executable, "benchmarks/single_connection.py", "--requests", "300",
                        "--rounds", "1"], capture_output=True, text=True, cwd=root, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert re.search(r"embedded +httpbench.Connection +[\d,]+", r.stdout), r.stdout

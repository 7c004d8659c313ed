"""Unix sockets: the client (Connection, run(), the command line, compare)
and the embedded server, against each other and against peers no one here
wrote (nginx listening on a Unix socket, curl --unix-socket)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import full_backlog, nginx, read_head, tool_env
from test_bad_responses import INCOMPLETE, MALFORMED, OK

import httpbench

CURL = "/usr/bin/curl"


@pytest.fixture
def sock_path() -> Iterator[str]:
    # Short: a sockaddr_un holds 107 bytes, and pytest's tmp_path may not fit.
    with tempfile.TemporaryDirectory(prefix="hb-") as d:
        yield os.path.join(d, "s.sock")


@pytest.fixture(params=["epoll", "threads"])
def unix_server(request, sock_path) -> Iterator[httpbench.Server]:
    with httpbench.Server(unix_socket=sock_path, mode=request.param) as srv:
        yield srv


def hb(*args: str, cwd: Path | str = "/") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "httpbench", *args], capture_output=True,
                          text=True, timeout=60, cwd=cwd)


# --------------------------------------------------------------- the server


def test_server_on_a_unix_socket(unix_server, sock_path):
    assert unix_server.port is None and unix_server.unix_socket == sock_path
    assert unix_server.url("/rnd?c=5") == "http://localhost/rnd?c=5"
    assert unix_server.url("x") == "http://localhost/x"
    assert sock_path in repr(unix_server)
    # Python's own socket, as a client no one here wrote.
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(sock_path)
        s.sendall(b"GET /rnd?c=7 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 200 OK\r\n") and data.endswith(b"\r\n\r\n" + data[-7:])
    assert unix_server.stats()["requests"] == 1


def test_the_socket_file_is_removed_at_close(sock_path):
    srv = httpbench.Server(unix_socket=sock_path)
    assert os.path.exists(sock_path)
    srv.close()
    assert not os.path.exists(sock_path)


def test_a_stale_socket_is_replaced_and_anything_else_refused(sock_path):
    # A socket file no one listens on: what a server that died leaves.
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(sock_path)
    with httpbench.Server(unix_socket=sock_path):
        with httpbench.Connection("localhost", 80, unix_socket=sock_path) as conn:
            assert conn.request("GET", "/rnd?c=3").status == 200
        # One listening: a second server is refused, and the first goes on.
        with pytest.raises(OSError, match="a server is listening there"):
            httpbench.Server(unix_socket=sock_path)
        with httpbench.Connection("localhost", 80, unix_socket=sock_path) as conn:
            assert conn.request("GET", "/rnd?c=3").status == 200
    Path(sock_path).write_text("not a socket")
    with pytest.raises(OSError, match="it exists and is not a socket"):
        httpbench.Server(unix_socket=sock_path)
    assert Path(sock_path).read_text() == "not a socket"  # left as it was


def test_server_arguments_are_checked(sock_path):
    with pytest.raises(ValueError, match="port and unix_socket"):
        httpbench.Server(port=8080, unix_socket=sock_path)
    with pytest.raises(ValueError, match="unix_socket must be a path of 1 to 107 bytes"):
        httpbench.Server(unix_socket="/tmp/" + "x" * 120)
    with pytest.raises(ValueError, match="unix_socket must be a path of 1 to 107 bytes"):
        httpbench.Server(unix_socket="")
    with pytest.raises(ValueError, match="without NUL"):
        httpbench.Server(unix_socket="/tmp/a\0b")
    with pytest.raises(ValueError, match="unix_socket must be a path"):
        httpbench.Server(unix_socket=3)  # type: ignore[arg-type]
    with pytest.raises(OSError, match="No such file or directory"):
        httpbench.Server(unix_socket="/nonexistent-dir/s.sock")


def test_tls_over_a_unix_socket(sock_path):
    with httpbench.Server(unix_socket=sock_path, tls=True) as srv:
        assert srv.url("/") == "https://localhost/"
        with httpbench.Connection.from_url(srv.url(), unix_socket=sock_path,
                                           cafile=srv.cafile) as conn:
            assert conn.request("GET", "/rnd?c=9").body.__len__() == 9
            assert conn.tls_info["protocol"].startswith("TLSv1.3,")
        r = httpbench.run(srv.url("/rnd?c=100"), requests=200, concurrency=2, keepalive=False,
                          unix_socket=sock_path, cafile=srv.cafile, progress=False)
        assert (r.complete, r.failed) == (200, 0), r.first_error
        assert r.tls_full_handshakes + r.tls_resumed_handshakes == 200


# --------------------------------------------------------------- the client


def test_connection_over_a_unix_socket(unix_server, sock_path):
    with httpbench.Connection("localhost", 80, unix_socket=Path(sock_path)) as conn:
        assert conn.unix_socket == sock_path
        for n in (0, 10, 100_000):
            r = conn.request("GET", f"/rnd?c={n}")
            assert r.status == 200 and len(r.body) == n
        r = conn.request("POST", "/echo", body=b"z" * 70_000)
        assert r.body == b"z" * 70_000
        assert conn.connects == 1 and conn.requests == 4
    with httpbench.Connection("127.0.0.1", 8080) as conn:
        assert conn.unix_socket is None


def test_from_url_keeps_the_urls_host_for_host(sock_path, scripted):
    srv = scripted([("recv",), ("send", OK)], unix=sock_path)
    with httpbench.Connection.from_url("http://example.test:8080/",
                                       unix_socket=sock_path) as conn:
        assert conn.request("GET", "/x").body == b"ok"
    assert srv.requests[0].startswith(b"GET /x HTTP/1.1\r\nHost: example.test:8080\r\n")


def test_connection_errors_name_the_socket(sock_path):
    with httpbench.Connection("localhost", 80, unix_socket=sock_path, timeout=5) as conn:
        with pytest.raises(httpbench.ConnectError,
                           match=f"cannot connect to {re.escape(sock_path)}: No such file"):
            conn.request("GET", "/")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(sock_path)  # a socket file, no one listening
        with httpbench.Connection("localhost", 80, unix_socket=sock_path) as conn:
            with pytest.raises(httpbench.ConnectError, match="Connection refused"):
                conn.request("GET", "/")
    with pytest.raises(ValueError, match="unix_socket: a Unix socket's path is 1 to 107 bytes"):
        httpbench.Connection("localhost", 80, unix_socket="/" + "x" * 200)
    with pytest.raises(ValueError, match="null"):
        httpbench.Connection("localhost", 80, unix_socket="/a\0b")
    with pytest.raises(TypeError):
        httpbench.Connection("localhost", 80, unix_socket=3)  # type: ignore[arg-type]


CLOSING = [c for c in INCOMPLETE if c[1] != "reset"]  # no RST on a Unix socket


@pytest.mark.parametrize("raw,how,why", CLOSING, ids=[c[2] for c in CLOSING])
def test_incomplete_responses_over_a_unix_socket(scripted, sock_path, raw, how, why):
    scripted([("recv",), ("send", raw), ("sleep", 0.05), (how,)], [("recv",), ("send", OK)],
             unix=sock_path)
    with httpbench.Connection("localhost", 80, unix_socket=sock_path, timeout=5) as conn:
        with pytest.raises(httpbench.IncompleteResponse, match=why):
            conn.request("GET", "/")
        assert conn.request("GET", "/").body == b"ok"


@pytest.mark.parametrize("raw,words", MALFORMED[:4], ids=[c[1] for c in MALFORMED[:4]])
def test_malformed_responses_over_a_unix_socket(scripted, sock_path, raw, words):
    scripted([("recv",), ("send", raw)], unix=sock_path)
    with httpbench.Connection("localhost", 80, unix_socket=sock_path, timeout=5) as conn:
        with pytest.raises(httpbench.ProtocolError, match=re.escape(words)):
            conn.request("GET", "/")


def test_run_over_a_unix_socket_counts_exactly(unix_server, sock_path):
    r = httpbench.run(unix_server.url("/rnd?c=2048"), requests=3001, concurrency=7,
                      unix_socket=sock_path, progress=False)
    assert (r.issued, r.complete, r.failed) == (3001, 3001, 0), r.first_error
    assert r.body_bytes == 3001 * 2048 and r.connects == 7 and r.unix_socket == sock_path
    assert r.host == "localhost" and r.port == 80
    report = r.report()
    assert f"Unix Socket:            {sock_path}" in report
    assert f"<th>Unix socket</th><td class=\"text\">{sock_path}</td>" in r._repr_html_()
    back = httpbench.Result.from_json(r.to_json())
    assert back.unix_socket == sock_path and json.loads(r.to_json())["schema"] == httpbench.result.SCHEMA
    r = httpbench.run(unix_server.url("/echo"), "POST", b"p" * 999, requests=500, concurrency=3,
                      keepalive=False, unix_socket=sock_path, progress=False)
    assert (r.complete, r.failed, r.connects) == (500, 0, 500)
    assert unix_server.stats()["requests"] == 3501


def test_run_over_a_missing_socket_fails_in_the_connect_class(sock_path):
    r = httpbench.run("http://localhost/", requests=5, unix_socket=sock_path, progress=False)
    assert r.failures["connect"] == r.failed == 5 and r.complete == 0
    with pytest.raises(ValueError, match="unix_socket must be a path"):
        httpbench.run("http://localhost/", requests=5, unix_socket="", progress=False)


def test_a_server_closing_mid_run_over_a_unix_socket(scripted, sock_path):
    cut = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"
    scripted([("recv",), ("send", OK), ("recv",), ("send", cut), ("close",)],
             [("recv",), ("send", OK), ("close",)], unix=sock_path)
    r = httpbench.run("http://localhost/", requests=3, unix_socket=sock_path, progress=False,
                      timeout=5)
    assert (r.issued, r.complete, r.failed) == (3, 2, 1)
    assert r.failures["receive"] == 1
    assert r.first_error == "connection closed before the response was complete"


# ------------------------------------------------------------- real peers


@pytest.mark.skipif(not os.path.exists(CURL), reason="curl is not installed")
def test_curl_against_the_embedded_server(unix_server, sock_path):
    out = subprocess.run([CURL, "-s", "--unix-socket", sock_path, unix_server.url("/rnd?c=1000"),
                          unix_server.url("/rnd?c=10")], capture_output=True, env=tool_env(),
                         timeout=10)
    assert out.returncode == 0 and len(out.stdout) == 1010
    out = subprocess.run([CURL, "-s", "--unix-socket", sock_path, "--data-binary", "@-",
                          unix_server.url("/echo")], input=b"q" * 300_000, capture_output=True,
                         env=tool_env(), timeout=10)
    assert out.stdout == b"q" * 300_000


def test_nginx_on_a_unix_socket(sock_path):
    with nginx(unix_socket=sock_path) as peer:
        if peer is None:
            pytest.skip("nginx is not installed")
        with httpbench.Connection("localhost", 80, unix_socket=sock_path) as conn:
            r = conn.request("GET", "/rnd")
            assert r.status == 200 and len(r.body) == 2048
            assert r.header("server").startswith("nginx")
        r = httpbench.run("http://localhost/rnd", requests=2000, concurrency=5,
                          unix_socket=sock_path, progress=False)
        assert (r.complete, r.failed, r.connects) == (2000, 0, 5), r.first_error
        assert r.server_software.startswith("nginx") and r.document_length == 2048
        r = httpbench.run("http://localhost/missing", requests=10, unix_socket=sock_path,
                          progress=False)
        assert r.status_counts == {404: 10}


# ------------------------------------------------------- the command line


def test_command_line_over_a_unix_socket(unix_server, sock_path, tmp_path):
    out = hb("-n", "300", "-c", "3", "-q", "--unix-socket", sock_path, "--json", "r.json",
             unix_server.url("/rnd?c=20"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "Complete requests:      300" in out.stdout and f"Unix Socket:            {sock_path}" \
        in out.stdout
    assert json.loads((tmp_path / "r.json").read_text())["unix_socket"] == sock_path
    out = hb("-n", "5", "-q", "--unix-socket", sock_path + ".missing", "http://localhost/")
    assert out.returncode == 1 and "Failed requests:        5" in out.stdout


def test_serve_on_a_unix_socket_for_curl(sock_path):
    proc = subprocess.Popen([sys.executable, "-m", "httpbench", "serve", "--unix-socket",
                             sock_path], stdout=subprocess.PIPE, text=True, cwd="/")
    try:
        banner = proc.stdout.readline()
        assert f"serving http://localhost/ on {sock_path}" in banner, banner
        hint = proc.stdout.readline().strip()
        assert hint == f"curl --unix-socket {sock_path} http://localhost/rnd?c=2048"
        example = proc.stdout.readline().strip()  # (a route that answers 200, issue 37)
        assert example == (f"try: httpbench -n 10000 -c 10 --unix-socket {sock_path} "
                           "http://localhost/rnd?c=2048"), example
        if os.path.exists(CURL):
            out = subprocess.run([CURL, "-s", "--unix-socket", sock_path,
                                  "http://localhost/rnd?c=33"], capture_output=True,
                                 env=tool_env(), timeout=10)
            assert len(out.stdout) == 33
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=10)
        assert proc.returncode == 0 and "served" in rest
    finally:
        proc.kill()
    assert not os.path.exists(sock_path)
    out = hb("serve", "--port", "8080", "--unix-socket", sock_path)
    assert out.returncode == 2 and "--port and --unix-socket" in out.stderr


# ------------------------------------------------------- the comparison


def test_compare_over_a_unix_socket(sock_path):
    # (duration only bounds a hang: httpx under a sanitizer on a shared CPU
    # made 102 of the 200 in 2 s.)
    cmp = httpbench.compare(unix_socket=sock_path, requests=200, duration=60)
    assert not os.path.exists(sock_path)  # the embedded server's, removed at close
    for name in ("http.client", "urllib3", "requests"):
        if name in httpbench.available_agents():
            assert f"{name} cannot connect to a Unix socket; left out" in cmp.notes
    assert {"httpbench"} <= {a for a, _ in cmp.results}
    for (agent, scenario), r in cmp.results.items():
        assert (r.complete, r.failed) == (200, 0), (agent, scenario, r.first_error)
        assert r.connects == 1 and r.unix_socket == sock_path, (agent, scenario)


def test_agents_that_cannot_reach_a_unix_socket_say_so(sock_path):
    from httpbench.agents import run_agent
    with pytest.raises(ValueError, match="http.client cannot connect to a Unix socket"):
        run_agent("http.client", "http://localhost/", unix_socket=sock_path)


def test_compare_command_over_a_unix_socket(unix_server, sock_path):
    out = hb("compare", "-q", "-n", "50", "-t", "2", "--agents", "httpbench,http.client",
             "--unix-socket", sock_path, unix_server.url("/rnd?c=2048"))
    assert out.returncode == 0, out.stderr
    assert "http.client cannot connect to a Unix socket; left out" in out.stdout
    assert re.search(r"httpbench\s+\S+\s+get\s+50\b", out.stdout), out.stdout


def test_a_pipeline_cut_short_over_a_unix_socket(scripted, sock_path):
    # A Unix socket connects at once: the resend starts its write in the
    # same call that read the last answer, and must read afresh.
    close = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    srv = scripted([("recv_pipeline", 4), ("send", OK + close), ("close",)],
                   [("recv_pipeline", 2), ("send", OK + OK)], unix=sock_path)
    r = httpbench.run("http://localhost/", requests=4, pipeline=4, unix_socket=sock_path,
                      progress=False, timeout=5)
    assert (r.issued, r.complete, r.failed) == (4, 4, 0), r.first_error
    assert r.reconnects == 1 and srv.connections == 2


def test_a_pipeline_cut_short_discards_what_the_old_socket_held(scripted, sock_path):
    """After an answer saying close, answers the server sent after it on
    that socket belong to no one: the resend's answers come on the new
    socket. They were parsed as its answers ({200: 10, 404: 30} counted for
    requests that all got 200)."""
    close = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    stray = b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno"
    srv = scripted([("recv_pipeline", 4), ("send", close + stray * 3), ("close",)],
                   [("recv_pipeline", 3), ("send", OK * 3)], unix=sock_path)
    r = httpbench.run("http://localhost/", requests=4, pipeline=4, unix_socket=sock_path,
                      progress=False, timeout=5)
    assert (r.issued, r.complete, r.failed) == (4, 4, 0), r.first_error
    assert r.status_counts == {200: 4} and r.non_2xx == 0
    assert srv.connections == 2


def _slow_accepter(path: str, stop: threading.Event) -> socket.socket:
    """A Unix server with a backlog of 1 that accepts a connection every
    2 ms, answers its one request and closes: momentarily behind, never
    down."""
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(path)
    lsock.listen(1)
    lsock.settimeout(0.2)

    def answer(conn: socket.socket) -> None:
        with conn:
            if read_head(conn) is not None:
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n"
                             b"\r\nok")

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = lsock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=answer, args=(conn,), daemon=True).start()
            time.sleep(0.002)

    threading.Thread(target=serve, daemon=True).start()
    return lsock


@pytest.mark.parametrize("concurrency", [1, 32])
def test_a_full_backlog_is_waited_out_not_counted_a_connect_failure(sock_path, concurrency):
    """connect(2) to a Unix socket whose backlog is full fails with EAGAIN
    (TCP would queue the SYN): 314 of 320 requests "failed" against a
    server only behind on accept(). Connected again shortly, all complete."""
    stop = threading.Event()
    lsock = _slow_accepter(sock_path, stop)
    try:
        r = httpbench.run("http://localhost/", requests=320, concurrency=concurrency,
                          unix_socket=sock_path, keepalive=False, timeout=10, progress=False)
    finally:
        stop.set()
        lsock.close()
    assert (r.complete, r.failed) == (320, 0), (r.failures, r.first_error)
    assert r.connects == 320


def test_a_backlog_that_stays_full_ends_in_the_timeout(sock_path):
    with full_backlog(sock_path):
        t0 = time.monotonic()
        r = httpbench.run("http://localhost/", requests=3, concurrency=3, unix_socket=sock_path,
                          timeout=0.3, progress=False)
        assert time.monotonic() - t0 < 3
        assert (r.failed, r.failures["timeout"]) == (3, 3), r.failures


@pytest.mark.parametrize("mode", ["epoll", "threads"])
def test_a_live_server_with_a_full_backlog_is_seen_without_a_hang(sock_path, mode):
    """Server(unix_socket=) probed the path with a blocking connect(2): a
    live server whose backlog was full made it wait for ever."""
    with full_backlog(sock_path):
        t0 = time.monotonic()
        with pytest.raises(OSError, match="a server is listening there"):
            httpbench.Server(unix_socket=sock_path, mode=mode)
        assert time.monotonic() - t0 < 2

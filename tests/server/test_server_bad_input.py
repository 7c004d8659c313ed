"""The embedded server against malformed and hostile clients, over raw
sockets; after each case the server must still answer."""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

import httpbench

from helpers import answers_at_speed, read_message
from test_server import closed_by_peer

MODES = ["epoll", "threads"]


@pytest.fixture(scope="module", params=MODES)
def server(request, tmp_path_factory) -> Iterator[httpbench.Server]:
    root = tmp_path_factory.mktemp("bad")
    static = root / "static"
    static.mkdir()
    (static / "inside.txt").write_bytes(b"inside")
    (root / "secret.txt").write_bytes(b"SECRET")
    (static / "escape").symlink_to(root / "secret.txt")
    (static / "escape_dir").symlink_to(root)
    (static / "ok_link").symlink_to("inside.txt")  # relative: absolute ones are refused
    with httpbench.Server(mode=request.param, static_dir=static, max_body=100_000,
                          header_timeout=0.5, send_timeout=0.5) as srv:
        yield srv


def still_answers(srv: httpbench.Server) -> None:
    with httpbench.Connection("127.0.0.1", srv.port, timeout=5) as conn:
        assert conn.request("GET", "/rnd?c=3").status == 200


def exchange(srv: httpbench.Server, raw: bytes) -> tuple[int, bytes, bool]:
    """Sends raw, returns (status, whole response, whether the server closed)."""
    with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
        s.sendall(raw)
        resp = read_message(s)
        closed = closed_by_peer(s, 2.0)
    status = int(resp.split(b" ", 2)[1]) if resp else 0
    return status, resp, closed


HOST = b"Host: x\r\n"

BAD_REQUESTS = [
    (b"GARBAGE\r\n\r\n", 400, b"invalid method"),
    (b"GET /\r\n" + HOST + b"\r\n", 400, b"invalid request target"),
    (b"GET  / HTTP/1.1\r\n" + HOST + b"\r\n", 400, b"invalid request target"),
    (b"GET / HTTP/1.1 extra\r\n" + HOST + b"\r\n", 400, b"invalid"),
    (b"G@T / HTTP/1.1\r\n" + HOST + b"\r\n", 400, b"invalid method"),
    (b"GET / HTTP/1.1\n" + HOST + b"\r\n", 400, b"bare LF"),
    (b"GET /rnd?c=1 HTTP/1.1\r\nHost : x\r\n\r\n", 400, b"whitespace before colon"),
    (b"GET /rnd?c=1 HTTP/1.1\r\n" + HOST + b"X: a\x00b\r\n\r\n", 400, b"NUL in header value"),
    (b"GET /rnd?c=1 HTTP/1.1\r\n" + HOST + b"X\x00: b\r\n\r\n", 400, b"NUL in header name"),
    (b"GET /rnd?c=1 HTTP/1.1\r\n" + HOST + b"X: a\r\n b\r\n\r\n", 400, b"obsolete line folding"),
    (b"GET /rnd?c=1 HTTP/1.1\r\n\r\n", 400, b"without Host"),
    (b"GET /rnd?c=1 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, b"more than one Host"),
    (b"POST /echo HTTP/1.1\r\n" + HOST + b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
     400, b"both Content-Length and Transfer-Encoding"),
    (b"POST /echo HTTP/1.1\r\n" + HOST + b"Content-Length: 3x\r\n\r\nabc", 400, b"invalid Content-Length"),
    (b"POST /echo HTTP/1.1\r\n" + HOST + b"Content-Length: -3\r\n\r\nabc", 400, b"invalid Content-Length"),
    (b"POST /echo HTTP/1.1\r\n" + HOST + b"Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400,
     b"conflicting Content-Length"),
    (b"POST /echo HTTP/1.1\r\n" + HOST + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n", 400, b"invalid chunk size"),
    (b"POST /echo HTTP/1.1\r\n" + HOST + b"Transfer-Encoding: chunked\r\n\r\n10000000000000000\r\n", 400,
     b"more than 16 hex digits"),
    (b"POST /echo HTTP/1.1\r\n" + HOST + b"Transfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n", 400,
     b"chunk data not followed by CRLF"),
    (b"POST /echo HTTP/1.1\r\n" + HOST + b"Transfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n", 400,
     b"bare LF in chunk line"),
    (b"GET /" + b"a" * 8200 + b" HTTP/1.1\r\n" + HOST + b"\r\n", 414, b"request line longer"),
    (b"GET / HTTP/1.1\r\n" + HOST + b"X: " + b"v" * 8200 + b"\r\n\r\n", 431, b"header line longer"),
    (b"GET / HTTP/1.1\r\n" + HOST + b"".join(b"X%d: v\r\n" % i for i in range(120)) + b"\r\n", 431,
     b"more than 100 header fields"),
    (b"GET / HTTP/1.1\r\n" + HOST + b"".join(b"X%d: %s\r\n" % (i, b"v" * 8000) for i in range(9)) + b"\r\n",
     431, b"header section longer"),
    (b"POST /echo HTTP/1.1\r\n" + HOST + b"Transfer-Encoding: gzip\r\n\r\n", 501, b"unsupported transfer coding"),
    (b"POST /echo HTTP/1.1\r\n" + HOST + b"Transfer-Encoding: gzip, chunked\r\n\r\n", 501,
     b"unsupported transfer coding"),
    (b"GET / HTTP/2.0\r\n" + HOST + b"\r\n", 505, b"unsupported HTTP version"),
    (b"GET / HTTP/3.1\r\n" + HOST + b"\r\n", 505, b"unsupported HTTP version"),
    (b"POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
     b"Transfer-Encoding in an HTTP/1.0 request"),
]


@pytest.mark.parametrize("raw,status,why", BAD_REQUESTS, ids=[w.decode() + f"-{i}" for i, (_, _, w) in enumerate(BAD_REQUESTS)])
def test_bad_request_gets_the_right_status_and_close(server, raw, status, why):
    before = server.stats()["rejected"]
    got, resp, closed = exchange(server, raw)
    assert got == status, resp[:300]
    assert why in resp and b"Connection: close" in resp
    assert closed
    assert server.stats()["rejected"] == before + 1
    still_answers(server)


@pytest.mark.parametrize("raw,status,why", BAD_REQUESTS[:12], ids=[w.decode() for _, _, w in BAD_REQUESTS[:12]])
def test_bad_request_trickled(server, raw, status, why):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            for i in range(len(raw)):
                s.send(raw[i:i + 1])
        except OSError:
            pass  # the server may answer and close before the last byte
        resp = read_message(s)
    assert resp.startswith(b"HTTP/1.1 %d " % status) and why in resp
    still_answers(server)


def test_body_over_max_is_413_without_reading_it(server):
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n\r\nstart")
        resp = read_message(s)
    assert resp.startswith(b"HTTP/1.1 413 ") and time.monotonic() - t0 < 1
    still_answers(server)


def test_chunked_body_over_max_is_413(server):
    chunk = b"8000\r\n" + b"z" * 0x8000 + b"\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        try:
            for _ in range(10):  # 320 KiB against a 100 KB limit
                s.sendall(chunk)
        except OSError:
            pass
        resp = read_message(s)
    assert resp.startswith(b"HTTP/1.1 413 ")
    still_answers(server)


def test_body_under_max_is_echoed(server):
    body = os.urandom(99_000)
    with httpbench.Connection("127.0.0.1", server.port) as conn:
        assert conn.request("POST", "/echo", body=body).body == body


TRAVERSALS = [
    "/static/../secret.txt",
    "/static/%2e%2e/secret.txt",
    "/static/%2E%2E/secret.txt",
    "/static/.%2e/secret.txt",
    "/static/sub/../../secret.txt",
    "/static/..%2fsecret.txt",
    "/static/%2e%2e%2fsecret.txt",
    "/static/..%5csecret.txt",
    "/static/inside.txt%00.png",
    "/static/escape",
    "/static/escape_dir/secret.txt",
    "/static//etc/passwd",
    "/static/./inside.txt",
    "/static/%",
    "/static/%zz",
]


@pytest.mark.parametrize("target", TRAVERSALS)
def test_static_never_leaves_its_directory(server, target):
    with httpbench.Connection("127.0.0.1", server.port) as conn:
        r = conn.request("GET", target)
    assert r.status in (400, 403, 404), (target, r.status)
    assert b"SECRET" not in r.body and b"root:" not in r.body
    still_answers(server)


def test_static_symlink_inside_is_served(server):
    with httpbench.Connection("127.0.0.1", server.port) as conn:
        assert conn.request("GET", "/static/ok_link").body == b"inside"
        assert conn.request("GET", "/static/inside.txt").body == b"inside"


def test_slowloris_is_cut_off_and_delays_no_one(server):
    """One header byte every 50 ms: cut off at the 0.5 s header deadline,
    while another client is answered at full speed meanwhile."""
    before = server.stats()["timeouts"]
    cut = []

    def slowloris() -> None:
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
            t0 = time.monotonic()
            try:
                for b in b"GET /rnd?c=1 HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
                    s.send(bytes([b]))
                    time.sleep(0.05)
            except OSError:
                pass  # cut off while still sending: what the test wants
            cut.append(closed_by_peer(s, 3) and time.monotonic() - t0)

    t = threading.Thread(target=slowloris)
    t.start()
    time.sleep(0.1)
    answers_at_speed(server.port, "/rnd?c=10", 300)
    t.join()
    assert cut and cut[0] and 0.4 < cut[0] < 2.0, cut
    assert server.stats()["timeouts"] > before
    still_answers(server)


@pytest.mark.timing
def test_client_that_stops_reading_is_cut_off(server):
    """A 64 MiB response the client never reads: cut off after 0.5 s with no
    progress, without the server's memory growing."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    before = server.stats()["timeouts"]
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"GET /rnd?c=67108864 HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(1.5)
        got = 0
        s.settimeout(5)
        try:
            while chunk := s.recv(1 << 20):
                got += len(chunk)
        except ConnectionResetError:
            pass
    assert got < 64 * 1024 * 1024
    assert server.stats()["timeouts"] == before + 1
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 32 * 1024
    still_answers(server)


def test_idle_connection_is_closed():
    with httpbench.Server(idle_timeout=0.3) as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
            t0 = time.monotonic()
            assert closed_by_peer(s, 3)
            assert 0.2 < time.monotonic() - t0 < 1.5


def test_garbage_and_resets_do_not_hurt(server):
    for i in range(20):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        s.sendall(os.urandom(i * 37 + 1))
        if i % 2:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()
    still_answers(server)


SIGPIPE_SERVER = """
import signal, sys, threading, httpbench
signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # as a C program has it
srv = httpbench.Server(mode=sys.argv[1])
print(srv.port, flush=True)
threading.Event().wait()
"""


@pytest.mark.parametrize("mode", MODES)
def test_sigpipe_never_kills_the_process(tmp_path, mode):
    proc = subprocess.Popen([sys.executable, "-c", SIGPIPE_SERVER, mode], cwd=tmp_path,
                            stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET /rnd?c=33554432 HTTP/1.1\r\nHost: x\r\n\r\n")
            s.recv(1000)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()  # RST while the server writes
        time.sleep(0.3)
        assert proc.poll() is None, f"server died: {proc.returncode}"
        with httpbench.Connection("127.0.0.1", port) as conn:
            assert conn.request("GET", "/rnd?c=3").status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(5)

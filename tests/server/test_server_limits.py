"""The embedded server's bounds: bodies held past max_buffered, its memory,
transfer codings that are not plain chunked, a FIFO under static_dir, the
header deadline, and `httpbench serve` on SIGTERM and SIGHUP."""

from __future__ import annotations

from pathlib import Path
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import httpbench


def _post_unread(port: int, size: int, chunked: bool = False) -> socket.socket:
    """Sends a POST of size bytes to /echo and reads nothing back (with a
    small receive buffer, so the echo stays with the server)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    if chunked:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        data = b"%x\r\n%s\r\n0\r\n\r\n" % (size, b"x" * size)
    else:
        data = b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (size, b"x" * size)
    try:
        s.sendall(data)
    except OSError:
        pass  # refused and closed part way: the caller reads what came back
    return s


def _status_of(s: socket.socket) -> bytes:
    s.settimeout(5)
    return s.recv(64).split(b"\r\n")[0]


def _rss_kib(pid: int, field: str) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"{field}:\s+(\d+) kB", text).group(1))


@pytest.mark.parametrize("chunked", [False, True])
def test_bodies_held_past_max_buffered_are_refused_with_503(chunked):
    """Item 14: max_body bounded one connection, nothing bounded the sum."""
    # Bodies larger than the kernel's socket buffers (4 MiB here) take, so
    # that an echo to a client that does not read stays in the server.
    size = 6 << 20
    with httpbench.Server(max_buffered=8 << 20) as srv:
        first = _post_unread(srv.port, size)
        time.sleep(0.3)  # held: the echo cannot go out to a client that does not read
        second = _post_unread(srv.port, size, chunked)
        assert _status_of(second) == b"HTTP/1.1 503 Service Unavailable"
        assert srv.stats()["rejected"] == 1
        second.close()
        first.close()  # the echo fails, and its budget is given back
        deadline = time.monotonic() + 5
        while True:
            with httpbench.Connection("127.0.0.1", srv.port) as conn:
                status = conn.request("POST", "/echo", body=b"y" * size).status
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert status == 200


@pytest.mark.timing
def test_server_memory_stays_under_max_buffered(tmp_path):
    """Item 14: eight clients POSTing large bodies to /echo and never
    reading the answers grew the server without bound (563 MB for 8 x 60
    MB). The server runs in a process of its own, whose peak RSS is read."""
    p = subprocess.Popen([sys.executable, "-m", "httpbench", "serve", "--port", "0",
                          "--max-buffered", "64M"], cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        port = int(re.search(r":(\d+)/", p.stdout.readline()).group(1))
        base = _rss_kib(p.pid, "VmRSS")
        socks: list[socket.socket] = []
        threads = [threading.Thread(target=lambda: socks.append(_post_unread(port, 30 << 20)))
                   for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        statuses = [_status_of(s) if s.fileno() >= 0 else b"" for s in socks]
        peak = _rss_kib(p.pid, "VmHWM")
        for s in socks:
            s.close()
    finally:
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=20)
    refused = statuses.count(b"HTTP/1.1 503 Service Unavailable")
    assert refused >= 6, statuses  # 64 MiB holds two bodies of 30 MiB
    assert (peak - base) * 1024 < (64 << 20) + (16 << 20), (base, peak)


def test_transfer_codings_with_parameters_or_junk_are_never_chunked():
    """Item 15: only the word before ';' or a space was read, so
    "chunked;q=1" and "chunked foo" were taken as chunked, which a proxy in
    front may read otherwise (a smuggling seam)."""
    with httpbench.Server() as srv:
        for te, status, why in ((b"chunked;q=1", 400, b"chunked transfer coding with parameters"),
                                (b"chunked foo", 400, b"invalid Transfer-Encoding"),
                                (b"chunked ;", 400, b"invalid Transfer-Encoding"),
                                (b"gzip;level=1, chunked", 501, b"unsupported transfer coding")):
            with socket.create_connection(("127.0.0.1", srv.port)) as s:
                s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + te +
                          b"\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
                s.settimeout(5)
                answer = b""
                while chunk := s.recv(4096):
                    answer += chunk
            assert answer.startswith(b"HTTP/1.1 %d " % status), (te, answer)
            assert why in answer and answer.count(b"HTTP/1.1") == 1, (te, answer)


def test_a_response_chunked_with_parameters_is_a_protocol_error(scripted):
    srv = scripted([("recv",), ("send", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;q=1"
                                       b"\r\n\r\n2\r\nok\r\n0\r\n\r\n")])
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        with pytest.raises(httpbench.ProtocolError, match="chunked transfer coding with parameters"):
            conn.request("GET", "/")


@pytest.mark.parametrize("mode", ["epoll", "threads"])
def test_a_fifo_under_static_dir_neither_blocks_nor_is_served(tmp_path, mode):
    """Item 9: opening a FIFO blocked until a writer came: in epoll mode that
    loop served no one, and close() hung."""
    (tmp_path / "file.txt").write_text("hello")
    os.mkfifo(tmp_path / "pipe")
    t0 = time.monotonic()
    srv = httpbench.Server(mode=mode, static_dir=tmp_path)
    try:
        with httpbench.Connection("127.0.0.1", srv.port, timeout=5) as conn:
            r = conn.request("GET", "/static/pipe")
            assert r.status == 404 and b"not a file" in r.body
            assert conn.request("GET", "/static/file.txt").body == b"hello"
    finally:
        srv.close()
    assert time.monotonic() - t0 < 3


@pytest.mark.parametrize("mode", ["epoll", "threads"])
def test_empty_lines_before_a_request_count_toward_the_header_deadline(mode):
    """Item 10: each CRLF restarted the idle clock, so a client sending one
    a second held a connection (in threads mode a thread) for ever."""
    with httpbench.Server(mode=mode, header_timeout=0.5) as srv:
        s = socket.create_connection(("127.0.0.1", srv.port))
        s.settimeout(0.2)
        t0, closed = time.monotonic(), False
        while time.monotonic() - t0 < 4 and not closed:
            try:
                s.sendall(b"\r\n")
                closed = s.recv(100) == b""
            except TimeoutError:
                continue
            except OSError:
                closed = True
        s.close()
        assert closed and time.monotonic() - t0 < 2.5
        assert srv.stats()["timeouts"] == 1


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_serve_closes_and_exits_0_on_sigterm_and_sighup(tmp_path, sig):
    """Item 17: the default handlers killed it (no summary, exit -15)."""
    p = subprocess.Popen([sys.executable, "-m", "httpbench", "serve", "--port", "0"],
                         cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        port = int(re.search(r":(\d+)/", p.stdout.readline()).group(1))
        with httpbench.Connection("127.0.0.1", port) as conn:
            assert conn.request("GET", "/rnd?c=5").status == 200
        p.send_signal(sig)
        out, err = p.communicate(timeout=10)
    finally:
        p.kill()
    assert p.returncode == 0, err
    assert "served 1 requests on 1 connections" in out

"""The embedded server as a forward proxy (the seed's rabbit): absolute-form
requests and CONNECT tunnels relayed to loopback, by splice or by copying,
in both server modes; through it curl, ab and httpbench itself (no one here
wrote the first two), to the embedded server and to nginx; and each bad
input the relay must refuse or survive, with scripted upstreams and raw
sockets."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from helpers import ScriptedServer, nginx, read_head, read_message, serve_one, tool_env

import httpbench

MODES = [("epoll", True), ("epoll", False), ("threads", True), ("threads", False)]
IDS = ["epoll-splice", "epoll-copy", "threads-splice", "threads-copy"]
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


@pytest.fixture(scope="module")
def target():
    with httpbench.Server() as plain, httpbench.Server(tls=True) as tls:
        yield plain, tls


@pytest.fixture(params=MODES, ids=IDS)
def relay(request):
    mode, zero_copy = request.param
    with httpbench.Server(proxy=True, mode=mode, zero_copy=zero_copy) as srv:
        yield srv


def curl(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    return subprocess.run(["curl", "-sS", *args], capture_output=True, timeout=timeout,
                          env=tool_env())


def ask(port: int, data: bytes, timeout: float = 10) -> bytes:
    """Sends raw bytes to the relay and reads one response."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        return read_message(s)


def status(response: bytes) -> int:
    return int(response.split(b" ", 2)[1])


def direct(url: str, cafile: str | None = None) -> bytes:
    return curl(*(["--cacert", cafile] if cafile else []), url).stdout


# ------------------------------------------------------------ real clients


@pytest.mark.parametrize("size", [0, 2048, 100_000, 1 << 20])
def test_curl_through_the_relay_gets_the_same_bytes(relay, target, size):
    plain, _ = target
    url = plain.url(f"/rnd?c={size}")
    run = curl("-x", relay.url(), url)
    assert run.returncode == 0, run.stderr
    assert len(run.stdout) == size and run.stdout == direct(url)
    assert relay.stats()["relayed"] == 1


def test_curl_posts_a_large_body_through_the_relay(relay, target, tmp_path):
    plain, _ = target
    body = os.urandom(3 << 20)
    (tmp_path / "body").write_bytes(body)
    run = curl("-x", relay.url(), "--data-binary", f"@{tmp_path / 'body'}", plain.url("/echo"))
    assert run.returncode == 0, run.stderr
    assert hashlib.sha256(run.stdout).digest() == hashlib.sha256(body).digest()


def test_expect_100_continue_and_a_chunked_request_body(relay, target):
    plain, _ = target
    run = curl("-x", relay.url(), "-H", "Expect: 100-continue", "-H",
               "Transfer-Encoding: chunked", "--data-binary", "x" * 70000, plain.url("/echo"))
    assert run.returncode == 0, run.stderr
    assert run.stdout == b"x" * 70000


def test_chunked_responses_pass_through_to_http11(relay, target):
    plain, _ = target
    run = curl("-x", relay.url(), "-D", "-", plain.url("/chunked?c=100000"))
    assert run.returncode == 0, run.stderr
    head, _, body = run.stdout.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head.lower()
    assert body == direct(plain.url("/rnd?c=100000"))


def test_a_chunked_response_reaches_http10_clients_as_data_until_close(relay, target):
    plain, _ = target
    with socket.create_connection(("127.0.0.1", relay.port), timeout=10) as s:
        s.sendall(f"GET {plain.url('/chunked?c=70000')} HTTP/1.0\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    assert b"transfer-encoding" not in head.lower() and b"Connection: close" in head
    assert body == direct(plain.url("/rnd?c=70000"))


def test_curl_tunnels_https_through_connect(relay, target):
    _, tls = target
    url = tls.url("/rnd?c=300000")
    run = curl("-p", "-x", relay.url(), "--cacert", tls.cafile, url)
    assert run.returncode == 0, run.stderr
    assert run.stdout == direct(url, tls.cafile)
    assert relay.stats()["tunnels"] == 1


def test_ab_through_the_relay_counts_as_directly(relay, target):
    if shutil.which("ab") is None:
        pytest.skip("ab is not installed")
    plain, _ = target
    url = plain.url("/rnd?c=2048")
    out = subprocess.run(["ab", "-n", "2000", "-c", "8", "-k", "-X", relay.url()[7:-1], url],
                         capture_output=True, text=True, timeout=60, env=tool_env()).stdout
    assert re.search(r"Complete requests:\s+2000\n", out), out
    assert re.search(r"Failed requests:\s+0\n", out), out
    assert re.search(r"Keep-Alive requests:\s+2000\n", out), out
    assert re.search(r"Document Length:\s+2048 bytes", out), out
    assert relay.stats()["relayed"] == 2000
    # Keep-alive both ways: a client's connection keeps its upstream.
    assert relay.stats()["connections"] == 8


def test_httpbench_through_the_relay_counts_every_request(relay, target):
    plain, tls = target
    before = plain.stats()["connections"]
    r = httpbench.run(plain.url("/rnd?c=2048"), requests=3001, concurrency=3, proxy=relay.url())
    assert (r.complete, r.failed) == (3001, 0)
    assert r.body_bytes == 3001 * 2048
    assert plain.stats()["connections"] - before == 3
    r = httpbench.run(tls.url("/rnd?c=4096"), requests=500, concurrency=2, proxy=relay.url(),
                      cafile=tls.cafile)
    assert (r.complete, r.failed) == (500, 0)
    assert (relay.stats()["relayed"], relay.stats()["tunnels"]) == (3001, 2)
    r = httpbench.run(plain.url("/echo"), requests=400, concurrency=2, proxy=relay.url(),
                      method="POST", body=b"p" * 2048, keepalive=False)
    assert (r.complete, r.failed) == (400, 0)


def test_nginx_as_the_upstream(relay):
    with nginx(size=50_000) as ng:
        if ng is None:
            pytest.skip("nginx is not installed")
        port, root = ng
        url = f"http://127.0.0.1:{port}/rnd"
        run = curl("-x", relay.url(), url)
        assert run.returncode == 0 and run.stdout == (root / "rnd").read_bytes()
        r = httpbench.run(url, requests=2000, concurrency=4, proxy=relay.url())
        assert (r.complete, r.failed) == (2000, 0)


# ------------------------------------------------------------- rewriting


def test_hop_by_hop_fields_stay_behind_and_via_is_added():
    up = ScriptedServer([[("recv",), ("send", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                                               b"Connection: keep-alive, X-Up-Hop\r\n"
                                               b"Keep-Alive: timeout=5\r\nX-Up-Hop: 1\r\n"
                                               b"X-End: 2\r\n\r\nok")]])
    try:
        with httpbench.Server(proxy=True) as relay:
            answer = ask(relay.port, (
                f"GET http://127.0.0.1:{up.port}/p?q=1 HTTP/1.1\r\nHost: wrong.example\r\n"
                "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eDp5\r\n"
                "Connection: X-Hop\r\nX-Hop: 1\r\nX-End: 1\r\n\r\n").encode())
        sent = up.requests[0].decode()
        assert sent.startswith("GET /p?q=1 HTTP/1.1\r\n")
        assert f"Host: 127.0.0.1:{up.port}\r\n" in sent and "wrong.example" not in sent
        for gone in ("Proxy-", "X-Hop", "Connection"):
            assert gone not in sent
        assert "X-End: 1\r\n" in sent and re.search(r"Via: 1\.1 httpbench-[0-9a-f]{8}\r\n", sent)
        assert status(answer) == 200 and answer.endswith(b"ok")
        for gone in (b"X-Up-Hop", b"Keep-Alive", b"Connection"):
            assert gone not in answer
        assert b"X-End: 2\r\n" in answer and b"Via: 1.1 httpbench-" in answer
    finally:
        up.close()


def test_an_upstream_that_closed_its_kept_connection_is_dialled_again():
    up = ScriptedServer([[("recv",), ("send", OK), ("close",)], [("recv",), ("send", OK)]])
    try:
        with httpbench.Server(proxy=True) as relay, \
                socket.create_connection(("127.0.0.1", relay.port), timeout=10) as s:
            for _ in range(2):
                s.sendall(f"GET http://127.0.0.1:{up.port}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                assert status(read_message(s)) == 200
                time.sleep(0.2)  # the upstream's close lands meanwhile
        assert up.connections == 2
    finally:
        up.close()


# --------------------------------------------------------------- refusals


@pytest.mark.parametrize("mode", ["epoll", "threads"])
def test_other_destinations_are_refused_with_403_and_never_dialled(mode):
    with httpbench.Server(proxy=True, mode=mode) as relay:
        for target in ("http://192.0.2.1/", "http://example.invalid/", "http://10.0.0.1:80/x"):
            answer = ask(relay.port, f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            assert status(answer) == 403, answer
        answer = ask(relay.port, b"CONNECT 192.0.2.1:443 HTTP/1.1\r\nHost: x\r\n\r\n")
        assert status(answer) == 403
        assert relay.stats()["rejected"] == 4 and relay.stats()["relayed"] == 0


def _outward_address() -> str | None:
    """An address of this machine that is not loopback, if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent
        except OSError:
            return None
        ip = s.getsockname()[0]
    return None if ip.startswith("127.") or ip == "0.0.0.0" else ip


def test_allow_lets_a_named_destination_through():
    ip = _outward_address()
    if ip is None:
        pytest.skip("this machine has no address besides loopback")
    with httpbench.Server(host="0.0.0.0") as far:
        url = f"http://{ip}:{far.port}/rnd?c=10"
        request = f"GET {url} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        with httpbench.Server(proxy=True) as relay:
            assert status(ask(relay.port, request)) == 403
        with httpbench.Server(proxy=True, allow=[f"{ip}:{far.port}"]) as relay:
            assert status(ask(relay.port, request)) == 200
            other = f"GET http://{ip}:{far.port + 1}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode()
            assert status(ask(relay.port, other)) == 403
        with httpbench.Server(proxy=True, allow=[ip]) as relay:
            assert status(ask(relay.port, request)) == 200


@pytest.mark.parametrize("mode", ["epoll", "threads"])
def test_a_refusing_port_is_502(mode):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # bound, never listening: refuses
        with httpbench.Server(proxy=True, mode=mode) as relay:
            answer = ask(relay.port, f"CONNECT 127.0.0.1:{closed} HTTP/1.1\r\nHost: x\r\n\r\n"
                         .encode())
            assert status(answer) == 502 and b"refused" in answer
            answer = ask(relay.port, f"GET http://localhost:{closed}/ HTTP/1.1\r\nHost: x\r\n\r\n"
                         .encode())
            assert status(answer) == 502


@pytest.mark.parametrize("mode", ["epoll", "threads"])
def test_an_upstream_that_stalls_is_cut_off_with_504(mode):
    up = ScriptedServer([[("recv",), ("sleep", 10)]])
    try:
        with httpbench.Server(proxy=True, mode=mode, upstream_timeout=0.5) as relay:
            t0 = time.monotonic()
            answer = ask(relay.port, f"GET http://127.0.0.1:{up.port}/ HTTP/1.1\r\nHost: x\r\n\r\n"
                         .encode())
            waited = time.monotonic() - t0
            assert status(answer) == 504, answer
            assert 0.45 < waited < 5
            assert relay.stats()["timeouts"] == 1
    finally:
        up.close()


def test_an_upstream_that_stalls_mid_body_cuts_the_client_off():
    up = ScriptedServer([[("recv",), ("send", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"
                                               b"abc"), ("sleep", 10)]])
    try:
        with httpbench.Server(proxy=True, upstream_timeout=0.5) as relay, \
                socket.create_connection(("127.0.0.1", relay.port), timeout=10) as s:
            s.sendall(f"GET http://127.0.0.1:{up.port}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            t0, answer = time.monotonic(), b""
            with pytest.raises(ConnectionResetError):  # a reset: the response is incomplete
                while chunk := s.recv(65536):
                    answer += chunk
            assert 0.45 < time.monotonic() - t0 < 5
            assert status(answer) == 200 and answer.endswith(b"\r\n\r\nabc")
            assert relay.stats()["timeouts"] == 1
    finally:
        up.close()


@pytest.mark.parametrize("script, why", [
    ([("recv",), ("send", b"HTTP/1.1 20x OK\r\n\r\n")], b"malformed"),
    ([("recv",), ("close",)], b"closed"),
    ([("recv",), ("reset",)], b"reset"),
    ([("recv",), ("send", b"HTTP/1.1 101 Switching Protocols\r\n\r\n")], b"switched"),
])
def test_a_broken_upstream_is_502_naming_why(script, why):
    up = ScriptedServer([script])
    try:
        with httpbench.Server(proxy=True) as relay:
            answer = ask(relay.port, f"GET http://127.0.0.1:{up.port}/ HTTP/1.1\r\nHost: x\r\n\r\n"
                         .encode())
            assert status(answer) == 502 and why in answer, answer
    finally:
        up.close()


@pytest.mark.parametrize("mode", ["epoll", "threads"])
def test_content_length_with_transfer_encoding_is_refused_before_forwarding(mode):
    up = ScriptedServer([[("recv",), ("send", OK)]])
    try:
        with httpbench.Server(proxy=True, mode=mode) as relay:
            smuggled = (f"POST http://127.0.0.1:{up.port}/echo HTTP/1.1\r\nHost: x\r\n"
                        "Content-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                        f"GET http://127.0.0.1:{up.port}/admin HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = ask(relay.port, smuggled.encode())
            assert status(answer) == 400 and b"Content-Length and Transfer-Encoding" in answer
            time.sleep(0.1)
        assert up.connections == 0
    finally:
        up.close()


@pytest.mark.parametrize("request_line, code", [
    ("GET https://127.0.0.1:1/ HTTP/1.1", 400),
    ("GET ftp://127.0.0.1/ HTTP/1.1", 400),
    ("GET http://user@127.0.0.1/ HTTP/1.1", 400),
    ("GET http://127.0.0.1:99999/ HTTP/1.1", 400),
    ("CONNECT 127.0.0.1 HTTP/1.1", 400),
    ("GET http:/// HTTP/1.1", 400),
])
def test_targets_that_are_not_a_proxys_are_400(request_line, code):
    with httpbench.Server(proxy=True) as relay:
        answer = ask(relay.port, f"{request_line}\r\nHost: x\r\n\r\n".encode())
        assert status(answer) == code, answer


def test_a_request_that_comes_round_again_is_508(target):
    plain, _ = target
    with httpbench.Server(proxy=True) as relay:
        first = ask(relay.port, f"GET {plain.url('/rnd?c=1')} HTTP/1.1\r\nHost: x\r\n\r\n"
                    .encode())
        via = re.search(rb"Via: (1\.1 httpbench-[0-9a-f]{8})\r\n", first).group(1).decode()
        answer = ask(relay.port, f"GET {plain.url('/rnd?c=1')} HTTP/1.1\r\nHost: x\r\n"
                     f"Via: 1.0 elsewhere, {via}\r\n\r\n".encode())
        assert status(answer) == 508
        # Relayed to itself, a request arrives in origin form: its own
        # paths are answered as ever, so the relay never feeds itself.
        answer = ask(relay.port, f"GET {relay.url('/rnd?c=1')} HTTP/1.1\r\nHost: x\r\n\r\n"
                     .encode())
        assert status(answer) == 200 and relay.stats()["requests"] == 2


def _rss_kb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.mark.parametrize("zero_copy", [True, False], ids=["splice", "copy"])
def test_a_client_that_stops_reading_holds_a_window_not_the_body(target, zero_copy):
    plain, _ = target
    with httpbench.Server(proxy=True, zero_copy=zero_copy, send_timeout=1.0) as relay:
        before = _rss_kb()
        with socket.create_connection(("127.0.0.1", relay.port), timeout=10) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(f"GET {plain.url('/rnd?c=500000000')} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            time.sleep(2.5)  # not reading: past the relay's send_timeout
            grown = _rss_kb() - before
            got = 0
            try:
                while chunk := s.recv(1 << 20):
                    got += len(chunk)
            except ConnectionResetError:
                pass
        assert grown < 16 * 1024, f"RSS grew {grown} KB"
        assert got < 50_000_000  # cut off, not given the 500 MB
        assert relay.stats()["timeouts"] == 1


# ------------------------------------------------------- the user's side


def test_arguments_are_checked():
    for bad in (float("nan"), -1, 0, float("inf"), 1e12):
        with pytest.raises(ValueError, match="upstream_timeout"):
            httpbench.Server(proxy=True, upstream_timeout=bad)
    with pytest.raises(ValueError, match="proxy=True"):
        httpbench.Server(allow=["127.0.0.1"])
    with pytest.raises(ValueError, match="cannot resolve"):
        httpbench.Server(proxy=True, allow=["no-such-host.invalid"])
    for bad_entry in ("", "a b", "host:port", "host:0", "[::1", 5):
        with pytest.raises(ValueError, match="allow"):
            httpbench.Server(proxy=True, allow=[bad_entry])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="allow"):
        httpbench.Server(proxy=True, allow="127.0.0.1")


def test_serve_proxy_on_the_command_line(target, tmp_path):
    plain, _ = target
    proc = subprocess.Popen([sys.executable, "-m", "httpbench", "serve", "--proxy", "--port", "0",
                             "--no-zero-copy"], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        banner = proc.stdout.readline() + proc.stdout.readline()
        assert "forward proxy (read/write)" in banner, banner
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", banner).group(1))
        run = curl("-x", f"127.0.0.1:{port}", plain.url("/rnd?c=5000"))
        assert run.returncode == 0 and len(run.stdout) == 5000
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=10)
        assert "relayed 1 responses and 0 tunnels" in out
    finally:
        proc.kill()
        proc.wait()
    bad = subprocess.run([sys.executable, "-m", "httpbench", "serve", "--allow", "x"],
                         capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert bad.returncode == 2 and "--proxy" in bad.stderr
    bad = subprocess.run([sys.executable, "-m", "httpbench", "serve", "--upstream-timeout", "10"],
                         capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert bad.returncode == 2 and "--proxy" in bad.stderr  # the default named is refused too


def test_a_tls_relay_is_an_https_proxy(target):
    plain, _ = target
    with httpbench.Server(proxy=True, tls=True) as relay:
        run = curl("--proxy", relay.url(), "--proxy-cacert", relay.cafile,
                   plain.url("/rnd?c=70000"))
        assert run.returncode == 0, run.stderr
        assert run.stdout == direct(plain.url("/rnd?c=70000"))


def test_fd_and_memory_do_not_leak_over_many_relayed_connections(target):
    plain, _ = target
    with httpbench.Server(proxy=True) as relay:
        fds = len(os.listdir("/proc/self/fd"))
        r = httpbench.run(plain.url("/rnd?c=100"), requests=3000, concurrency=4,
                          proxy=relay.url(), keepalive=False)
        assert (r.complete, r.failed) == (3000, 0)
        time.sleep(0.2)
        assert len(os.listdir("/proc/self/fd")) - fds < 8


def test_a_relay_on_a_unix_socket(target, tmp_path):
    plain, _ = target
    path = str(tmp_path / "relay.sock")
    with httpbench.Server(proxy=True, unix_socket=path) as relay:
        for _ in range(2):  # the second on the kept upstream
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(10)
                s.connect(path)
                s.sendall(f"GET {plain.url('/rnd?c=300000')} HTTP/1.1\r\nHost: x\r\n\r\n"
                          .encode())
                answer = read_message(s)
            assert status(answer) == 200
            assert answer.partition(b"\r\n\r\n")[2] == direct(plain.url("/rnd?c=300000"))
        assert relay.stats()["relayed"] == 2


def test_a_head_the_relay_would_take_past_the_limits_is_refused():
    # 100 fields is what the parsers take; the relay adds Host and Via.
    fields = "".join(f"X-F{i}: {i}\r\n" for i in range(99))
    up = ScriptedServer([[("recv",), ("send", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                                               + fields.encode() + b"\r\nok")]])
    try:
        with httpbench.Server(proxy=True) as relay:
            request = f"GET http://127.0.0.1:{up.port}/ HTTP/1.1\r\nHost: x\r\n{fields}\r\n"
            assert status(ask(relay.port, request.encode())) == 431
            time.sleep(0.1)
            assert up.connections == 0  # refused before anything was dialled
            short = f"GET http://127.0.0.1:{up.port}/ HTTP/1.1\r\nHost: x\r\n\r\n"
            answer = ask(relay.port, short.encode())
            assert status(answer) == 502 and b"100 fields" in answer
    finally:
        up.close()


# ------------------------------------------------------- framing (RFC 9112 6.3)


@pytest.mark.parametrize("mode", ["epoll", "threads"])
@pytest.mark.parametrize("connection", ["Content-Length", "close, Transfer-Encoding",
                                        "keep-alive,content-length"])
def test_a_request_whose_connection_names_a_framing_field_is_refused(mode, connection):
    """Dropped as hop-by-hop, Content-Length left the body unframed, and the
    upstream read it as a second request (a POST carrying GET /status/418
    made the target count 2). Framing fields are never hop-by-hop; such a
    request is refused before anything is dialled."""
    up = ScriptedServer([[("recv",), ("send", OK)]])
    try:
        with httpbench.Server(proxy=True, mode=mode) as relay:
            inner = b"GET /status/418 HTTP/1.1\r\nHost: x\r\n\r\n"
            framed = (b"Content-Length: %d\r\n" % len(inner)) if "ength" in connection.lower() \
                else b"Transfer-Encoding: chunked\r\n"
            body = inner if b"Content-Length" in framed else b"%x\r\n%s\r\n0\r\n\r\n" % (
                len(inner), inner)
            answer = ask(relay.port, f"POST http://127.0.0.1:{up.port}/echo HTTP/1.1\r\n"
                         f"Host: x\r\nConnection: {connection}\r\n".encode() + framed + b"\r\n"
                         + body)
            assert status(answer) == 400 and b"frames the body" in answer, answer
            time.sleep(0.1)
        assert up.connections == 0
    finally:
        up.close()


def test_a_framing_field_a_connection_field_names_is_kept_on_the_way_on():
    """The relay's own parser never lets such a request through (400); a
    response keeps its Content-Length however its Connection field reads,
    so a kept-alive client can find the response's end (it had to wait for a
    close that never came)."""
    up = ScriptedServer([[("recv",), ("send", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                                               b"Connection: Content-Length\r\n\r\nok"),
                          ("recv",), ("send", OK)]])
    try:
        with httpbench.Server(proxy=True) as relay, \
                socket.create_connection(("127.0.0.1", relay.port), timeout=5) as s:
            for _ in range(2):
                s.sendall(f"GET http://127.0.0.1:{up.port}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                answer = read_message(s)
                assert status(answer) == 200 and answer.endswith(b"\r\n\r\nok"), answer
                assert b"\r\nContent-Length: 2\r\n" in answer
    finally:
        up.close()


@pytest.mark.parametrize("dechunk", [False, True])
def test_a_response_with_length_and_chunked_loses_its_length(dechunk):
    """RFC 9112 section 6.3: Transfer-Encoding overrides Content-Length, and
    an intermediary must remove the Content-Length; it relayed both."""
    body = b"4\r\nabcd\r\n0\r\n\r\n"
    up = ScriptedServer([[("recv",), ("send", b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n"
                                               b"Transfer-Encoding: chunked\r\n\r\n" + body)]])
    try:
        with httpbench.Server(proxy=True) as relay, \
                socket.create_connection(("127.0.0.1", relay.port), timeout=5) as s:
            version = "1.0" if dechunk else "1.1"
            s.sendall(f"GET http://127.0.0.1:{up.port}/ HTTP/{version}\r\nHost: x\r\n\r\n"
                      .encode())
            data = b""
            while not data.endswith(b"0\r\n\r\n" if not dechunk else b"abcd"):
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        head = data.split(b"\r\n\r\n", 1)[0].lower()
        assert status(data) == 200 and b"content-length" not in head, data
        if dechunk:
            assert b"transfer-encoding" not in head and data.endswith(b"\r\n\r\nabcd")
        else:
            assert b"transfer-encoding: chunked" in head and data.endswith(body)
    finally:
        up.close()


def test_an_obs_fold_in_a_response_is_replaced_by_a_space():
    """RFC 9112 section 5.2: a proxy replaces each obs-fold with SP before
    forwarding (it was copied to the client verbatim)."""
    up = ScriptedServer([[("recv",), ("send", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                                               b"X-Folded: one\r\n \t two\r\n\tthree\r\n\r\nok")]])
    try:
        with httpbench.Server(proxy=True) as relay:
            answer = ask(relay.port, f"GET http://127.0.0.1:{up.port}/ HTTP/1.1\r\nHost: x\r\n\r\n"
                         .encode())
        assert status(answer) == 200 and answer.endswith(b"ok")
        assert b"\r\nX-Folded: one two three\r\n" in answer, answer
    finally:
        up.close()


@pytest.mark.parametrize("mode", ["epoll", "threads"])
def test_a_connect_to_the_relay_itself_is_508_and_nothing_nests(mode):
    """150 CONNECTs to the relay's own port over one connection held 902
    descriptors until EMFILE. A CONNECT to any of its own addresses is 508;
    a tunnel ends the client's connection's requests, so it holds one."""
    before = len(os.listdir("/proc/self/fd"))
    with httpbench.Server(proxy=True, mode=mode) as relay:
        for host in ("127.0.0.1", "localhost"):
            answer = ask(relay.port, f"CONNECT {host}:{relay.port} HTTP/1.1\r\nHost: x\r\n\r\n"
                         .encode())
            assert status(answer) == 508 and b"itself" in answer, answer
        with socket.create_connection(("127.0.0.1", relay.port), timeout=5) as s:
            for _ in range(150):
                s.sendall(f"CONNECT 127.0.0.1:{relay.port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            s.settimeout(5)
            first = read_message(s)
        assert status(first) == 508
        assert relay.stats()["tunnels"] == 0
        # An honest client is served as ever.
        assert status(ask(relay.port, f"GET {relay.url('/rnd?c=1')} HTTP/1.1\r\nHost: x\r\n\r\n"
                          .encode())) == 200
    assert len(os.listdir("/proc/self/fd")) <= before + 2


def test_a_connect_to_the_relay_on_every_address_is_508():
    with httpbench.Server("0.0.0.0", proxy=True) as relay:
        answer = ask(relay.port, f"CONNECT 127.0.0.1:{relay.port} HTTP/1.1\r\nHost: x\r\n\r\n"
                     .encode())
        assert status(answer) == 508
        # Another port of this host is a tunnel as before.
        with httpbench.Server() as other:
            answer = ask(relay.port, f"CONNECT 127.0.0.1:{other.port} HTTP/1.1\r\nHost: x\r\n"
                         "\r\n".encode())
            assert status(answer) == 200


def _early_answerer(answer: bytes) -> tuple[socket.socket, list[bytes]]:
    """An upstream that reads a request's head only, answers at once and
    closes, its body unread (so its kernel resets the connection)."""
    heads: list[bytes] = []

    def handle(conn: socket.socket) -> None:
        head = read_head(conn)
        if head is not None:
            heads.append(head)
            conn.sendall(answer)

    lsock = serve_one(handle)
    return lsock, heads


@pytest.mark.parametrize("mode,zero_copy", MODES, ids=IDS)
def test_an_upstreams_early_answer_is_relayed_not_replaced_by_502(mode, zero_copy):
    """An upstream that answers 413 from the head and closes: the relay read
    no answer until it had written the whole body, so once the body outgrew
    what the upstream drained it answered its own 502. It reads while it
    sends now, relays the 413 and closes the client's connection after it."""
    lsock, heads = _early_answerer(b"HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\n"
                                   b"Connection: close\r\n\r\ntoo big\n")
    size = 32 << 20
    try:
        with httpbench.Server(proxy=True, mode=mode, zero_copy=zero_copy) as relay, \
                socket.create_connection(("127.0.0.1", relay.port), timeout=10) as s:
            port = lsock.getsockname()[1]
            s.sendall(f"POST http://127.0.0.1:{port}/upload HTTP/1.1\r\nHost: x\r\n"
                      f"Content-Length: {size}\r\n\r\n".encode())

            def send_body() -> None:
                try:
                    s.sendall(b"x" * size)
                except OSError:
                    pass  # the relay closed after the answer: expected

            sender = threading.Thread(target=send_body, daemon=True)
            sender.start()
            answer = read_message(s)
            sender.join(10)
        assert status(answer) == 413 and answer.endswith(b"too big\n"), answer[:300]
        assert b"Connection: close" in answer and heads
    finally:
        lsock.close()

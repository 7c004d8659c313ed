"""The embedded server's endpoints, fetched by clients no one here wrote
(http.client, urllib3, curl) and by httpbench.Connection, in both modes."""

from __future__ import annotations

import http.client
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import httpbench
from helpers import tool_env
from helpers import answers_at_speed, read_message

MODES = ["epoll", "threads"]
CURL = shutil.which("curl")


@pytest.fixture(scope="module")
def static_dir(tmp_path_factory: pytest.TempPathFactory):
    d = tmp_path_factory.mktemp("static")
    (d / "hello.txt").write_bytes(b"hello, static\n")
    (d / "big.bin").write_bytes(os.urandom(3_000_001))
    (d / "sub").mkdir()
    (d / "sub" / "page.html").write_bytes(b"<p>page</p>")
    (d / "empty.json").write_bytes(b"")
    return d


@pytest.fixture(scope="module", params=MODES)
def server(request, static_dir) -> Iterator[httpbench.Server]:
    with httpbench.Server(mode=request.param, static_dir=static_dir) as srv:
        yield srv


@pytest.fixture(scope="module")
def server_copy_mode(static_dir) -> Iterator[httpbench.Server]:
    with httpbench.Server(static_dir=static_dir, zero_copy=False) as srv:
        yield srv


def get(srv: httpbench.Server, target: str, method: str = "GET", **kw) -> httpbench.Response:
    with httpbench.Connection("127.0.0.1", srv.port, timeout=10) as conn:
        return conn.request(method, target, **kw)


# ---------------------------------------------------------------- /rnd


@pytest.mark.parametrize("n", [0, 1, 2048, 65536, 3 * 1024 * 1024 + 7])
def test_rnd_sizes(server, n):
    r = get(server, f"/rnd?c={n}")
    assert r.status == 200 and len(r.body) == n
    assert r.header("content-length") == str(n)
    assert all(33 <= b <= 126 for b in r.body[:100_000])
    assert r.header("server") == f"httpbench/{httpbench.__version__}"
    assert r.header("date", "").endswith(" GMT")


def test_rnd_content_is_generated_once_and_reused(server):
    # Pseudo-random, so not constant; the same block, so the same bytes twice.
    a, b = get(server, "/rnd?c=4096").body, get(server, "/rnd?c=4096").body
    assert a == b and len(set(a)) > 50


def test_rnd_head(server):
    r = get(server, "/rnd?c=2048", "HEAD")
    assert (r.status, r.header("content-length"), r.body) == (200, "2048", b"")


@pytest.mark.parametrize("query", ["", "?c=", "?c=-1", "?c=abc", "?c=1073741825", "?x=1",
                                   "?c=99999999999999999999"])
def test_rnd_bad_count_is_400(server, query):
    r = get(server, "/rnd" + query)
    assert r.status == 400 and b"whole number" in r.body


def test_rnd_by_http_client(server):
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    for _ in range(3):
        c.request("GET", "/rnd?c=2048")
        r = c.getresponse()
        assert r.status == 200 and len(r.read()) == 2048
    c.close()


def test_rnd_by_urllib3(server):
    urllib3 = pytest.importorskip("urllib3")
    with urllib3.PoolManager() as pool:
        for _ in range(3):
            r = pool.request("GET", server.url("/rnd?c=5000"))
            assert r.status == 200 and len(r.data) == 5000
        assert pool.connection_from_url(server.url()).num_connections == 1


@pytest.mark.skipif(CURL is None, reason="curl is not installed (apt-get install curl)")
def test_every_endpoint_by_curl(server, tmp_path):
    def curl(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([CURL, "-sS", *args], capture_output=True, timeout=30, env=tool_env())

    assert len(curl(server.url("/rnd?c=2048")).stdout) == 2048
    out = curl("-X", "POST", "--data-binary", "@-", "-H", "Content-Type: text/x-test",
               "-D", "-", server.url("/echo")).stdout
    assert b"Content-Type: text/x-test" in out
    body = os.urandom(100_000)
    (tmp_path / "in").write_bytes(body)
    echoed = curl("-X", "PUT", "--data-binary", f"@{tmp_path / 'in'}",
                  "-H", "Transfer-Encoding: chunked", server.url("/echo")).stdout
    assert echoed == body
    assert curl(server.url("/static/hello.txt")).stdout == b"hello, static\n"
    assert curl("-o", "/dev/null", "-w", "%{http_code}", server.url("/status/503")).stdout == b"503"
    assert len(curl(server.url("/chunked?c=30000")).stdout) == 30000
    assert curl("-o", "/dev/null", "-w", "%{http_code}", server.url("/delay?ms=10")).stdout == b"200"
    many = curl(server.url("/rnd?c=10"), server.url("/rnd?c=20"), server.url("/rnd?c=30"),
                "-w", "%{num_connects}\n")
    assert many.stdout.count(b"\n") == 3 and many.stdout.endswith(b"0\n")  # reused
    # RFC 9112 section 3.2.2: the absolute-form is accepted, its path the
    # resource, whatever the authority and Host say.
    target = "http://elsewhere.example:81/static/hello.txt"
    assert curl("--request-target", target, server.url("/")).stdout == b"hello, static\n"


@pytest.mark.parametrize("target, status, body", [
    (b"http://127.0.0.1/rnd?c=3", 200, 3),
    (b"HTTPS://other.example:8443/chunked?c=5", 200, 5),
    (b"http://u@h/status/503", 503, 0),
    (b"http://h", 404, None),
    (b"http://h?c=3", 404, None),
    (b"ftp://h/rnd?c=3", 404, None),
])
def test_absolute_form_targets(server, target, status, body):
    with httpbench.Connection("127.0.0.1", server.port, timeout=10) as conn:
        r = conn.request("GET", target.decode(), headers={"Host": "not.this.server"})
    assert r.status == status
    if body is not None:
        assert r.body == get(server, "/rnd?c=%d" % body).body


# ---------------------------------------------------------------- /echo


@pytest.mark.parametrize("method", ["POST", "PUT"])
@pytest.mark.parametrize("size", [0, 1, 2048, 1_000_000])
def test_echo_content_length(server, method, size):
    body = os.urandom(size)
    r = get(server, "/echo", method, headers={"Content-Type": "application/x-test"}, body=body)
    assert r.status == 200 and r.body == body
    assert r.header("content-type") == "application/x-test"


def test_echo_default_content_type(server):
    r = get(server, "/echo", "POST", body=b"x")
    assert r.header("content-type") == "application/octet-stream"


def test_echo_chunked_by_http_client(server):
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    pieces = [b"alpha", b"", b"beta" * 1000, b"gamma"]
    c.request("POST", "/echo", body=iter(pieces), encode_chunked=True,
              headers={"Content-Type": "text/plain"})
    r = c.getresponse()
    assert r.status == 200 and r.read() == b"".join(pieces)
    assert r.getheader("Content-Type") == "text/plain"
    c.close()


def test_echo_rejects_get(server):
    r = get(server, "/echo")
    assert (r.status, r.header("allow")) == (405, "POST, PUT")


def test_expect_100_continue(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        assert s.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        s.sendall(b"hello")
        assert read_message(s).endswith(b"\r\n\r\nhello")


def test_no_100_continue_to_http10(server):
    """RFC 9110 sections 10.1.1 and 15.2: an HTTP/1.0 request's expectation
    is ignored and it gets no 1xx: the server waits for the body."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(b"POST /echo HTTP/1.0\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        s.settimeout(0.3)
        with pytest.raises(TimeoutError):
            s.recv(100)
        s.settimeout(5)
        s.sendall(b"hello")
        data = read_all(s)
    assert data.startswith(b"HTTP/1.1 200 OK\r\n") and data.endswith(b"\r\n\r\nhello")
    assert b" 100 " not in data


# -------------------------------------------------------------- /static


def test_static_files(server, static_dir):
    r = get(server, "/static/hello.txt")
    assert (r.status, r.body, r.header("content-type")) == (200, b"hello, static\n", "text/plain")
    assert get(server, "/static/sub/page.html").header("content-type") == "text/html"
    assert get(server, "/static/big.bin").body == (static_dir / "big.bin").read_bytes()
    assert get(server, "/static/empty.json").body == b""
    r = get(server, "/static/big.bin", "HEAD")
    assert (r.header("content-length"), r.body) == ("3000001", b"")
    assert get(server, "/static/hello.txt?v=1").body == b"hello, static\n"
    assert get(server, "/static/sub%2Fpage.html").status == 400
    assert get(server, "/static/%68ello.txt").body == b"hello, static\n"


def test_static_files_by_read_write(server_copy_mode, static_dir):
    assert not server_copy_mode.zero_copy
    assert get(server_copy_mode, "/static/big.bin").body == (static_dir / "big.bin").read_bytes()
    assert get(server_copy_mode, "/static/hello.txt").body == b"hello, static\n"


def test_static_missing_and_directories(server):
    assert get(server, "/static/nope").status == 404
    assert get(server, "/static/sub").status == 404
    assert get(server, "/static/sub/").status == 404
    assert get(server, "/static/").status == 404


def test_no_static_dir_is_404():
    with httpbench.Server() as srv:
        assert get(srv, "/static/anything").status == 404


# ------------------------------------------ /status, /delay, /chunked, 404


@pytest.mark.parametrize("code", [200, 201, 204, 301, 304, 404, 418, 500, 503, 599])
def test_status(server, code):
    with httpbench.Connection("127.0.0.1", server.port) as conn:
        r = conn.request("GET", f"/status/{code}")
        assert r.status == code and r.body == b""
        if code in (204, 304):
            assert r.header("content-length") is None
        assert conn.request("GET", "/rnd?c=3").body.__len__() == 3  # still in step
        assert conn.connects == 1


@pytest.mark.parametrize("target", ["/status/99", "/status/600", "/status/abc", "/status/1000",
                                    "/status/", "/status/20x", "/status/0200", "/status/199"])
def test_status_bad_code(server, target):
    """Any code after /status/ that is not 200 to 599 is refused as that
    (400, saying so); two digits, four or none were once "no such
    endpoint" (404)."""
    r = get(server, target)
    assert (r.status, r.body) == (400, b"status must be from 200 to 599\n")


def test_delay_is_the_delay(server):
    with httpbench.Connection("127.0.0.1", server.port) as conn:
        for ms in (0, 20, 150):
            t0 = time.perf_counter()
            assert conn.request("GET", f"/delay?ms={ms}").status == 200
            elapsed = (time.perf_counter() - t0) * 1000
            assert ms <= elapsed < ms + 50


def test_delay_stalls_no_other_connection(server):
    done = []

    def slow() -> None:
        done.append(get(server, "/delay?ms=1000").status)

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.05)
    answers_at_speed(server.port, "/rnd?c=100", 200)
    t.join()
    assert done == [200]


def test_delay_bad_values(server):
    for q in ("", "?ms=-1", "?ms=60001", "?ms=x"):
        assert get(server, "/delay" + q).status == 400


@pytest.mark.parametrize("n", [0, 1, 8192, 8193, 1_048_577])
def test_chunked(server, n):
    r = get(server, f"/chunked?c={n}")
    assert r.status == 200 and len(r.body) == n
    assert r.header("transfer-encoding") == "chunked"
    assert r.body == get(server, f"/rnd?c={n}").body


def test_unknown_path_and_method(server):
    assert get(server, "/nope").status == 404
    r = get(server, "/rnd?c=1", "DELETE")
    assert (r.status, r.header("allow")) == (405, "GET, HEAD")


# ------------------------------------------------------ connection reuse


def closed_by_peer(s: socket.socket, timeout: float = 5.0) -> bool:
    s.settimeout(timeout)
    try:
        while True:
            if not s.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_keep_alive_and_close(server):
    with httpbench.Connection("127.0.0.1", server.port) as conn:
        for _ in range(100):
            conn.request("GET", "/rnd?c=10")
        assert conn.connects == 1
        r = conn.request("GET", "/rnd?c=10", headers={"Connection": "close"})
        assert r.header("connection") == "close"
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(b"GET /rnd?c=2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert read_message(s).endswith(b"\r\n\r\n" + get(server, "/rnd?c=2").body)
        assert closed_by_peer(s)


def test_http10(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(b"GET /rnd?c=2 HTTP/1.0\r\n\r\n")
        assert read_message(s).startswith(b"HTTP/1.1 200 OK")
        assert closed_by_peer(s)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        for _ in range(3):
            s.sendall(b"GET /rnd?c=2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            assert b"Connection: keep-alive" in read_message(s)
        assert not closed_by_peer(s, 0.2)


@pytest.mark.parametrize("method", ["GET", "HEAD"])
@pytest.mark.parametrize("keep_alive", [False, True])
def test_chunked_reaches_http10_as_data_until_close(server, method, keep_alive):
    """RFC 9112 section 6.1: no Transfer-Encoding in an answer to HTTP/1.0,
    which has no chunks; /chunked's body goes as it is and the close ends
    it (section 6.3), as nginx and the relay answer such a client, though
    it asked to keep the connection."""
    asked = b"Connection: keep-alive\r\n" if keep_alive else b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(f"{method} /chunked?c=70000 HTTP/1.0\r\n".encode() + asked + b"\r\n")
        head, _, body = read_all(s).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"\r\nConnection: close" in head
    assert b"Transfer-Encoding" not in head and b"Content-Length" not in head
    assert body == (b"" if method == "HEAD" else get(server, "/rnd?c=70000").body)
    # An HTTP/1.1 client still gets chunks; a refusal after the plan
    # (a body too large) its length.
    assert get(server, "/chunked?c=10").header("transfer-encoding") == "chunked"
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(b"GET /chunked?c=10 HTTP/1.0\r\nContent-Length: 999999999999\r\n\r\n")
        assert re.match(rb"HTTP/1.1 413 .*\r\nContent-Length: \d+\r\n", read_all(s), re.S)


PIPELINE = (
    b"GET /rnd?c=5 HTTP/1.1\r\nHost: x\r\n\r\n"
    b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
    b"PUT /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nde\r\n1\r\nf\r\n0\r\n\r\n"
    b"GET /status/204 HTTP/1.1\r\nHost: x\r\n\r\n"
    b"HEAD /rnd?c=9 HTTP/1.1\r\nHost: x\r\n\r\n"
    b"GET /delay?ms=1 HTTP/1.1\r\nHost: x\r\n\r\n"
    b"GET /rnd?c=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
)


def read_all(s: socket.socket) -> bytes:
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    return data


def split_responses(data: bytes) -> list[tuple[int, bytes]]:
    out = []
    while data:
        head, _, data = data.partition(b"\r\n\r\n")
        status = int(head.split(b" ")[1])
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length" and b"HEAD" not in head:
                length = int(value)
        if b"Content-Length: 9" in head:
            length = 0  # the HEAD response
        out.append((status, data[:length]))
        data = data[length:]
    return out


def test_pipelined_requests_in_one_write(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(PIPELINE)
        responses = split_responses(read_all(s))
    assert [st for st, _ in responses] == [200, 200, 200, 204, 200, 200, 200]
    assert [b for _, b in responses][1:3] == [b"abc", b"def"]


def test_pipelined_requests_split_at_every_byte(server):
    whole = None
    for at in range(1, len(PIPELINE)):
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.sendall(PIPELINE[:at])
            time.sleep(0.001)
            s.sendall(PIPELINE[at:])
            got = [st for st, _ in split_responses(read_all(s))]
        whole = whole or got
        assert got == whole == [200, 200, 200, 204, 200, 200, 200], at


def test_server_lifecycle():
    srv = httpbench.Server(mode="threads")
    port = srv.port
    assert srv.running and get(srv, "/rnd?c=1").status == 200
    srv.close()
    srv.close()
    assert not srv.running
    with pytest.raises(httpbench.ConnectError):
        get_port(port)
    assert srv.stats()["requests"] == 1


def test_stats_are_one_mapping_of_the_c_servers_counters():
    """stats() is the C server's one list of counters (csrc/server.h's
    HB_SRV_COUNTS), by name in its order, before, during and after the
    server; the manual's table is made from the same list."""
    names = [name for name, _ in httpbench.Server.COUNTS]
    assert names[:4] == ["connections", "requests", "rejected", "timeouts"] and len(names) >= 9
    assert all(what for _, what in httpbench.Server.COUNTS)
    srv = httpbench.Server()
    assert list(srv.stats()) == names and set(srv.stats().values()) == {0}
    get(srv, "/rnd?c=1")
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nBad field\r\n\r\n")  # (a malformed head)
        assert read_message(sock).startswith(b"HTTP/1.1 400 ")
    during = srv.stats()
    srv.close()
    after = srv.stats()
    assert list(after) == names and after == during
    assert after["connections"] >= 1 and after["requests"] == 2 and after["rejected"] == 1
    table = "\n".join(["  | `stats()` key | what it counts |", "  |---|---|",
                       *(f"  | `{name}` | {what} |" for name, what in httpbench.Server.COUNTS)])
    page = (Path(__file__).parents[2] / "docs" / "server.md").read_text()
    assert table in page, table


def test_the_server_core_takes_one_mapping_of_settings():
    """_ServerCore's settings are one dict read by the table reader the
    loop's go through: an unknown or missing name is a TypeError naming
    it, a number out of range a ValueError naming it."""
    from httpbench import _core
    base = {"host": "127.0.0.1", "port": 0, "threads": 1, "max_body": 1, "max_buffered": 1,
            "header_timeout": 1.0, "send_timeout": 1.0, "idle_timeout": 1.0, "version": "t"}
    with pytest.raises(TypeError, match="no setting 'nope'"):
        _core._ServerCore({**base, "nope": 1})
    for name in ("host", "max_body", "idle_timeout"):
        with pytest.raises(TypeError, match=f"{name} is needed"):
            _core._ServerCore({k: v for k, v in base.items() if k != name})
    for name, bad in (("max_streams", 0), ("upstream_timeout", float("nan")),
                      ("max_buffered", 0), ("port", -1), ("send_timeout", float("inf"))):
        with pytest.raises(ValueError, match=name):
            _core._ServerCore({**base, name: bad})
    with pytest.raises(TypeError, match="dict"):
        _core._ServerCore([("host", "127.0.0.1")])
    core = _core._ServerCore({**base, "max_streams": 7, "threaded": True})
    try:
        assert core.port and list(core.stats()) == [n for n, _ in _core.SERVER_COUNTS]
    finally:
        core.stop()


def get_port(port: int) -> None:
    with httpbench.Connection("127.0.0.1", port, timeout=2) as conn:
        conn.request("GET", "/")


def test_close_cuts_delays_short():
    srv = httpbench.Server(mode="threads")
    errors = []

    def slow() -> None:
        try:
            get(srv, "/delay?ms=30000")
        except httpbench.HttpbenchError as e:
            errors.append(e)

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.2)
    t0 = time.monotonic()
    srv.close()
    assert time.monotonic() - t0 < 2
    t.join(5)
    assert errors


@pytest.mark.parametrize(
    "kwargs,exc",
    [
        (dict(mode="nope"), ValueError),
        (dict(threads=0), ValueError),
        (dict(port=70000), ValueError),
        (dict(static_dir="/no/such/dir"), NotADirectoryError),
        (dict(header_timeout=0), ValueError),
        (dict(host="no-such-host.invalid"), OSError),
    ],
)
def test_bad_server_arguments(kwargs, exc):
    with pytest.raises(exc):
        httpbench.Server(**kwargs)


def test_port_in_use():
    with httpbench.Server() as a:
        with pytest.raises(OSError, match="cannot listen"):
            httpbench.Server(port=a.port)


def test_many_event_loops():
    with httpbench.Server(threads=4) as srv:
        conns = [httpbench.Connection("127.0.0.1", srv.port) for _ in range(20)]
        for _ in range(5):
            for c in conns:
                assert c.request("GET", "/rnd?c=7").status == 200
        for c in conns:
            c.close()
        assert srv.stats()["connections"] == 20


ENDPOINTS = [
    ("GET", "/rnd?c=2048", None, 200, 2048),
    ("HEAD", "/rnd?c=2048", None, 200, 0),
    ("POST", "/echo", b"x" * 2048, 200, 2048),
    ("PUT", "/echo", b"y" * 10, 200, 10),
    ("GET", "/static/hello.txt", None, 200, 14),
    ("HEAD", "/static/big.bin", None, 200, 0),
    ("GET", "/status/503", None, 503, 0),
    ("GET", "/delay?ms=5", None, 200, 0),
    ("GET", "/chunked?c=10000", None, 200, 10000),
]


@pytest.mark.parametrize("method,target,body,status,length", ENDPOINTS)
def test_every_endpoint_by_http_client(server, method, target, body, status, length):
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    for _ in range(2):  # and again on the same connection
        c.request(method, target, body=body)
        r = c.getresponse()
        data = r.read()
        assert (r.status, len(data)) == (status, length)
        if body:
            assert data == body
    c.close()


@pytest.mark.parametrize("method,target,body,status,length", ENDPOINTS)
def test_every_endpoint_by_urllib3(server, method, target, body, status, length):
    urllib3 = pytest.importorskip("urllib3")
    with urllib3.HTTPConnectionPool("127.0.0.1", server.port, retries=False) as pool:
        for _ in range(2):
            r = pool.request(method, target, body=body)
            assert (r.status, len(r.data)) == (status, length)
        assert pool.num_connections == 1


@pytest.mark.parametrize("method,target,body,status,length", ENDPOINTS)
def test_every_endpoint_by_connection(server, method, target, body, status, length):
    with httpbench.Connection("127.0.0.1", server.port) as conn:
        for _ in range(2):
            r = conn.request(method, target, body=body)
            assert (r.status, len(r.body)) == (status, length)
        assert conn.connects == 1

"""The client against servers no one here wrote: Python's http.server and,
where Debian's nginx is installed, nginx."""

from __future__ import annotations

import gzip
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import httpbench

import helpers


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.startswith("/rnd?c="):
            n = int(self.path.split("=", 1)[1])
            body = bytes(33 + i % 94 for i in range(n))
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in (b"alpha", b"beta", b"gamma" * 1000):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_error(404)

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "12345")
        self.end_headers()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", self.headers.get("Content-Type", "application/octet-stream"))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def stdlib_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_stdlib_server_keep_alive(stdlib_server):
    with httpbench.Connection("127.0.0.1", stdlib_server) as conn:
        for n in (0, 1, 2048, 100_000):
            r = conn.request("GET", f"/rnd?c={n}")
            assert r.status == 200
            assert r.body == bytes(33 + i % 94 for i in range(n))
        assert conn.connects == 1


def test_stdlib_server_chunked_head_post_404(stdlib_server):
    with httpbench.Connection("127.0.0.1", stdlib_server) as conn:
        assert conn.request("GET", "/chunked").body == b"alphabeta" + b"gamma" * 1000
        r = conn.request("HEAD", "/anything")
        assert (r.status, r.header("Content-Length"), r.body) == (200, "12345", b"")
        payload = os.urandom(2048)
        r = conn.request("POST", "/echo", headers={"Content-Type": "application/x-test"}, body=payload)
        assert (r.body, r.header("content-type")) == (payload, "application/x-test")
        r = conn.request("GET", "/missing")
        assert r.status == 404 and b"404" in r.body
        assert conn.connects == 1


def test_stdlib_http10_server_closes_every_time(tmp_path):
    (tmp_path / "f.txt").write_bytes(b"file body")

    class Plain(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    def handler(*args: object) -> Plain:
        return Plain(*args, directory=str(tmp_path))  # type: ignore[arg-type]

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with httpbench.Connection("127.0.0.1", server.server_address[1]) as conn:
            for _ in range(3):
                r = conn.request("GET", "/f.txt")
                assert (r.version, r.body) == ("HTTP/1.0", b"file body")
            assert (conn.connects, conn.retries) == (3, 0)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def nginx() -> Iterator[tuple[int, Path]]:
    # keepalive_requests 5: nginx says close on every fifth response.
    with helpers.nginx(keepalive_requests=5,
                        extra="gzip on; gzip_types text/plain; gzip_min_length 0;") as server:
        if server is None:
            pytest.skip("nginx is not installed (apt-get install nginx-light)")
        yield server


def test_nginx_static_files_and_keepalive_limit(nginx):
    port, www = nginx
    body = os.urandom(2048)
    (www / "rnd").write_bytes(body)
    with httpbench.Connection("127.0.0.1", port) as conn:
        for _ in range(20):
            r = conn.request("GET", "/rnd")
            assert r.status == 200 and r.body == body
            assert r.header("server", "").startswith("nginx")
        assert (conn.requests, conn.connects, conn.retries) == (20, 4, 0)


def test_nginx_chunked_gzip(nginx):
    port, www = nginx
    text = b"the quick brown fox\n" * 5000
    (www / "big.txt").write_bytes(text)
    with httpbench.Connection("127.0.0.1", port) as conn:
        r = conn.request("GET", "/big.txt", headers={"Accept-Encoding": "gzip"})
        assert r.header("transfer-encoding") == "chunked"
        assert r.header("content-encoding") == "gzip"
        assert gzip.decompress(r.body) == text


def test_nginx_head_404_and_304(nginx):
    port, www = nginx
    (www / "h.txt").write_bytes(b"x" * 777)
    with httpbench.Connection("127.0.0.1", port) as conn:
        r = conn.request("HEAD", "/h.txt")
        assert (r.status, r.header("content-length"), r.body) == (200, "777", b"")
        etag = conn.request("GET", "/h.txt", headers={"Accept-Encoding": "identity"}).header("etag")
        r = conn.request("GET", "/h.txt", headers={"If-None-Match": etag})
        assert (r.status, r.body) == (304, b"")
        r = conn.request("GET", "/nope")
        assert r.status == 404 and b"nginx" in r.body
        assert conn.connects == 1

"""The embedded server's HTTP/2, against clients no one here wrote (curl,
h2load, the h2 package as a strict peer) and scripted hostile ones: rapid
reset, CONTINUATION floods, HPACK bombs, PING, SETTINGS and empty-DATA
floods, a client that never reads, more streams than allowed, a bad HPACK
block. Each attack ends in the right answer, with other clients served
meanwhile, in both modes."""

from __future__ import annotations

import os
import re
import select
import shutil
import socket
import struct
import subprocess
import time
from typing import Any

import h2.config
import h2.connection
import h2.events
import hpack
import pytest
from h2peer import PREFACE, frame
from helpers import tool_env

import httpbench

CURL = shutil.which("curl")
H2LOAD = shutil.which("h2load")

ENHANCE_YOUR_CALM, PROTOCOL_ERROR, COMPRESSION_ERROR, REFUSED_STREAM = 0xB, 0x1, 0x9, 0x7


@pytest.fixture(params=["epoll", "threads"])
def server(request: Any) -> Any:
    with httpbench.Server(mode=request.param, send_timeout=1.0) as srv:
        yield srv


class Raw:
    """A client that writes frames of its own making (the attacks), after
    the preface and an empty SETTINGS, and reads the server's frames."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.sendall(PREFACE + frame(4, 0, 0, b""))
        self.buf = b""
        self.enc = hpack.Encoder()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def headers(self, path: str, method: str = "GET") -> bytes:
        return self.enc.encode([(":method", method), (":path", path), (":scheme", "http"),
                                (":authority", "x")])

    def frames(self, within: float = 2.0) -> list[tuple[int, int, int, bytes]] | None:
        """Frames until the server closes (the list then ends with None as
        its last item's stand-in: returned as is) or `within` passes."""
        out: list[Any] = []
        end = time.monotonic() + within
        while time.monotonic() < end:
            self.sock.settimeout(max(0.01, end - time.monotonic()))
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                break
            except ConnectionResetError:
                out.append(None)
                break
            if not chunk:
                out.append(None)
                break
            self.buf += chunk
            while len(self.buf) >= 9:
                size = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) < 9 + size:
                    break
                out.append((self.buf[3], self.buf[4],
                            int.from_bytes(self.buf[5:9], "big") & 0x7FFFFFFF,
                            self.buf[9:9 + size]))
                self.buf = self.buf[9 + size:]
        return out

    def goaway(self, within: float = 3.0) -> tuple[int, bool]:
        """The GOAWAY's error code, and whether the server then closed."""
        got = self.frames(within)
        codes = [struct.unpack(">II", f[3][:8])[1] for f in got if f and f[0] == 7]
        assert codes, got
        return codes[0], got[-1] is None

    def close(self) -> None:
        self.sock.close()


def still_serves(srv: httpbench.Server) -> None:
    """Another client, meanwhile, is answered."""
    c = httpbench.Connection("127.0.0.1", srv.port, http2=True, timeout=5)
    assert c.request("GET", "/rnd?c=100").status == 200


# ---- peers no one here wrote

@pytest.mark.skipif(CURL is None, reason="curl is not installed")
def test_curl_speaks_h2_to_both_ports(server: httpbench.Server) -> None:
    out = subprocess.run([CURL, "-sS", "-w", "%{http_version}", "--http2-prior-knowledge",
                          server.url("/rnd?c=1000")], capture_output=True, env=tool_env(),
                         timeout=10)
    assert out.returncode == 0 and out.stdout.endswith(b"2") and len(out.stdout) == 1001
    echo = subprocess.run([CURL, "-sS", "--http2-prior-knowledge", "--data-binary", "@-",
                           server.url("/echo")], input=b"z" * 100_000, capture_output=True,
                          env=tool_env(), timeout=10)
    assert echo.stdout == b"z" * 100_000
    with httpbench.Server(mode=server.mode, tls=True) as tls:
        out = subprocess.run([CURL, "-sSv", "--http2", "--cacert", tls.cafile,
                              tls.url("/chunked?c=5000")], capture_output=True,
                             env=tool_env(), timeout=10)
        assert out.returncode == 0 and len(out.stdout) == 5000
        assert "ALPN: server accepted h2" in out.stderr.decode()
        assert tls.stats()["h2_connections"] == 1


@pytest.mark.skipif(H2LOAD is None, reason="h2load: apt-get install nghttp2-client")
def test_h2loads_counts_equal_the_servers(server: httpbench.Server) -> None:
    out = subprocess.run([H2LOAD, "-n", "5000", "-c", "4", "-m", "10",
                          server.url("/rnd?c=2048")], capture_output=True, text=True,
                         env=tool_env(), timeout=60)
    assert "5000 succeeded, 0 failed" in out.stdout, out.stdout
    st = server.stats()
    assert st["requests"] == st["h2_streams"] == 5000 and st["h2_connections"] == 4
    # h2load's count of DATA bytes is the bodies'.
    assert int(re.search(r"\((\d+)\) data", out.stdout).group(1)) == 5000 * 2048


def test_a_strict_peer_gets_every_route(server: httpbench.Server) -> None:
    """The h2 package as the client, its validation on: every route, and a
    /delay that holds its own stream and no other."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    paths = {1: ("GET", "/delay?ms=300"), 3: ("GET", "/rnd?c=5000"), 5: ("POST", "/echo"),
             7: ("GET", "/chunked?c=3000"), 9: ("HEAD", "/rnd?c=10"), 11: ("GET", "/status/418")}
    for sid, (method, path) in paths.items():
        conn.send_headers(sid, [(":method", method), (":path", path), (":scheme", "http"),
                                (":authority", "x")], end_stream=method != "POST")
    conn.send_data(5, b"abc" * 100, end_stream=True)
    sock.sendall(conn.data_to_send())
    bodies: dict[int, bytes] = {}
    status: dict[int, str] = {}
    order: list[int] = []
    t0 = time.monotonic()
    while len(order) < len(paths):
        for ev in conn.receive_data(sock.recv(65536)):
            if isinstance(ev, h2.events.ResponseReceived):
                status[ev.stream_id] = dict(ev.headers)[b":status"].decode()
            elif isinstance(ev, h2.events.DataReceived):
                bodies[ev.stream_id] = bodies.get(ev.stream_id, b"") + ev.data
                conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                order.append(ev.stream_id)
        sock.sendall(conn.data_to_send())
    took = time.monotonic() - t0
    sock.close()
    assert order[-1] == 1 and took >= 0.3  # the delay came last, the others did not wait
    assert status == {1: "200", 3: "200", 5: "200", 7: "200", 9: "200", 11: "418"}
    assert len(bodies[3]) == 5000 and bodies[5] == b"abc" * 100 and len(bodies[7]) == 3000
    assert 9 not in bodies


def test_http2_off_is_http1_only() -> None:
    with httpbench.Server(http2=False) as srv:
        c = httpbench.Connection("127.0.0.1", srv.port, http2=True)
        with pytest.raises(httpbench.ProtocolError, match="preface in HTTP/1"):
            c.request("GET", "/rnd?c=10")
        assert srv.stats()["h2_connections"] == 0
    for bad in (0, -1, 10**6, 1.5):
        with pytest.raises(ValueError, match="max_streams"):
            httpbench.Server(max_streams=bad)


# ---- attacks

def test_rapid_reset_is_calmed(server: httpbench.Server) -> None:
    """CVE-2023-44487: streams opened and reset at once, in a flood."""
    raw = Raw(server.port)
    block = raw.headers("/delay?ms=1000")
    burst = b"".join(frame(1, 4, sid, block) + frame(3, 0, sid, struct.pack(">I", 8))
                     for sid in range(1, 2 * 150, 2))
    raw.send(burst)
    assert raw.goaway() == (ENHANCE_YOUR_CALM, True)
    raw.close()
    still_serves(server)
    assert server.stats()["h2_calmed"] == 1


@pytest.mark.parametrize("kind", ["ping", "settings", "empty_data"])
def test_frame_floods_are_calmed(server: httpbench.Server, kind: str) -> None:
    raw = Raw(server.port)
    if kind == "ping":
        flood = frame(6, 0, 0, b"12345678") * 150
    elif kind == "settings":
        flood = frame(4, 0, 0, b"") * 150
    else:
        flood = frame(1, 4, 1, raw.headers("/echo", "POST")) + frame(0, 0, 1, b"") * 150
    raw.send(flood)
    assert raw.goaway() == (ENHANCE_YOUR_CALM, True)
    raw.close()
    still_serves(server)


@pytest.mark.parametrize("how", ["bytes", "frames"])
def test_a_continuation_flood_is_calmed(server: httpbench.Server, how: str) -> None:
    """A header block that never ends (the CVE-2024-27316 family): past
    64 KiB, or past 100 CONTINUATION frames, however few bytes."""
    raw = Raw(server.port)
    raw.send(frame(1, 0, 1, raw.headers("/rnd?c=1")))  # no END_HEADERS
    piece = b"\x00\x01a\x01b" * 1000 if how == "bytes" else b""  # "a: b", literal
    count = 20 if how == "bytes" else 150
    try:
        for _ in range(count):
            raw.send(frame(9, 0, 1, piece))
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert raw.goaway() == (ENHANCE_YOUR_CALM, True)
    raw.close()
    still_serves(server)


def test_an_hpack_bomb_is_answered_431_and_kept_no_more(server: httpbench.Server) -> None:
    """A small block that decodes huge: a 4000-byte value put in the dynamic
    table once, then named by its index 20 times (one byte each)."""
    raw = Raw(server.port)
    base = raw.headers("/rnd?c=5")
    # (One encoder for both, as the server's decoder follows its table.)
    insert = raw.enc.encode([("x", "v" * 4000)], huffman=False)
    # The inserted field is the newest of the dynamic table: index 62 (static
    # table 61 + 1), after what base put in it.
    raw.send(frame(1, 5, 1, base + insert + bytes([0x80 | 62]) * 20))
    got = raw.frames(2.0)
    heads = [f for f in got if f and f[0] == 1 and f[2] == 1]
    assert heads, got
    assert hpack.Decoder().decode(heads[0][3])[0] == (":status", "431")
    raw.close()
    still_serves(server)


def test_a_bad_hpack_block_is_a_compression_error(server: httpbench.Server) -> None:
    raw = Raw(server.port)
    raw.send(frame(1, 5, 1, b"\xff\xff\xff\xff\x0f"))
    assert raw.goaway() == (COMPRESSION_ERROR, True)
    raw.close()
    still_serves(server)


def test_streams_beyond_the_limit_are_refused_alone() -> None:
    """Server(max_streams=2): the third and fourth streams get RST_STREAM
    REFUSED_STREAM (RFC 9113 section 5.1.2), the first two are answered."""
    for mode in ("epoll", "threads"):
        with httpbench.Server(mode=mode, max_streams=2) as srv:
            raw = Raw(srv.port)
            raw.frames(0.2)
            raw.send(frame(4, 1, 0, b""))  # our ack of its SETTINGS
            block = raw.headers("/delay?ms=200")
            raw.send(b"".join(frame(1, 5, sid, block) for sid in (1, 3, 5, 7)))
            got = [f for f in raw.frames(1.0) if f]
            resets = {f[2]: struct.unpack(">I", f[3])[0] for f in got if f[0] == 3}
            answered = {f[2] for f in got if f[0] == 1}
            assert resets == {5: REFUSED_STREAM, 7: REFUSED_STREAM}, got
            assert answered == {1, 3}
            raw.close()
            r = httpbench.run(srv.url("/delay?ms=10"), requests=40, concurrency=1,
                              http2=True, streams=10, progress=False)
            assert r.complete == 40 and r.streams_allowed == 2 and r.streams_max_used == 2


def test_a_client_that_never_reads_is_cut_off(server: httpbench.Server) -> None:
    """Window exhaustion on our side: it asks for a gigabyte and reads
    nothing. The server stages what one budget holds, then closes after
    send_timeout (1 s here); the others are served meanwhile."""
    raw = Raw(server.port)
    # Its windows wide open, so only the socket holds the server back.
    raw.send(frame(4, 0, 0, struct.pack(">HI", 4, 2**31 - 1)) +
             frame(8, 0, 0, struct.pack(">I", 2**31 - 1 - 65535)))
    raw.send(frame(1, 5, 1, raw.headers("/rnd?c=1073741824")))
    still_serves(server)
    # Nothing read: the server's send deadline (1 s) passes and it counts
    # the timeout; waited for as that event, not for a fixed time.
    deadline = time.monotonic() + 10
    while server.stats()["timeouts"] < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.stats()["timeouts"] >= 1
    # Then what it had staged drains, and the socket is gone.
    drained, gone = 0, False
    deadline = time.monotonic() + 10
    while not gone and time.monotonic() < deadline:
        readable, _, _ = select.select([raw.sock], [], [], 0.5)
        if not readable:
            continue
        try:
            chunk = raw.sock.recv(1 << 20)
        except ConnectionResetError:
            chunk = b""
        gone = not chunk
        drained += len(chunk)
    raw.close()
    assert gone and drained < 64 << 20
    still_serves(server)


def test_a_loop_run_against_our_own_server_is_exact(server: httpbench.Server) -> None:
    r = httpbench.run(server.url("/rnd?c=2048"), requests=5000, concurrency=4, http2=True,
                      streams=16, progress=False)
    assert r.complete == 5000 and r.failed == 0
    assert server.stats()["requests"] == 5000 and r.streams_allowed == 100
    posted = httpbench.run(server.url("/echo"), method="POST", body=b"p" * 2048, requests=2000,
                           concurrency=2, http2=True, streams=8, progress=False)
    assert posted.complete == 2000 and posted.body_bytes == 2000 * 2048


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.mark.timing
def test_no_leak_over_ten_thousand_connections_with_streams() -> None:
    """10,000 HTTP/2 connections (keep-alive off: one stream each, the
    client's sessions and the server's made and freed each time), then
    1,000 connections' worth of streams: the process's RSS and descriptors
    end where they began (LeakSanitizer is off in the sanitizer run, so
    this bound is the check)."""
    with httpbench.Server() as srv:
        url = srv.url("/rnd?c=512")
        httpbench.run(url, requests=1000, concurrency=10, http2=True, keepalive=False,
                      progress=False)
        fds, rss = len(os.listdir('/proc/self/fd')), _rss_kib()
        r = httpbench.run(url, requests=10_000, concurrency=10, http2=True, keepalive=False,
                          progress=False)
        assert r.complete == 10_000 and r.connects == 10_000, r.first_error
        many = httpbench.run(url, requests=20_000, concurrency=100, http2=True, streams=10,
                             progress=False)
        assert many.complete == 20_000
        assert srv.stats()["h2_connections"] == 1000 + 10_000 + 100
    assert len(os.listdir('/proc/self/fd')) <= fds
    assert _rss_kib() - rss < 8 * 1024, (rss, _rss_kib())

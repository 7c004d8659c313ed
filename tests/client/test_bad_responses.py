"""A broken or hostile server gets a clear exception, never a crash, a hang
past the timeout, or unbounded memory; the next request starts afresh."""

import re
import resource
import signal
import socket
import subprocess
import sys
import threading
import time

import helpers
import pytest

import httpbench
from helpers import exact

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

# (response, words the ProtocolError must contain)
MALFORMED = [
    (b"HTTP/1.1 200 OK\rContent-Length: 0\r\n\r\n", "bare CR in reason phrase"),
    (b"HTTP/1.1 200 OK\r\nX: y\rz\n\r\n", "bare CR in header value"),
    (b"HTTP/2.0 200 OK\r\n\r\n", "unsupported HTTP version"),
    (b"HTTP/1.x 200 OK\r\n\r\n", "invalid HTTP version"),
    (b"ICY 200 OK\r\n\r\n", "does not begin with HTTP/: got \"I"),
    (b"\x16\x03\x03\x00\x02\x02\x28", "the server answered with TLS (a 0x16 handshake record): is the URL https?"),
    (b"\x15\x03\x03\x00\x02\x02\x46", "the server answered with TLS (a 0x15 alert record): is the URL https?"),
    (b"SSH-2.0-OpenSSH_9.2p1\r\n", "does not begin with HTTP/: got \"S"),
    (b"HTTP/1.1 2x0 OK\r\n\r\n", "invalid status code"),
    (b"HTTP/1.1 099 Low\r\n\r\n", "invalid status code"),
    (b"HTTP/1.1 200 O\x00K\r\n\r\n", "NUL in reason phrase"),
    (b"HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n", "NUL in header value"),
    (b"HTTP/1.1 200 OK\r\nX\x00: ab\r\n\r\n", "NUL in header name"),
    (b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", "bare CR in header value"),
    (b"HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok", "whitespace before colon"),
    (b"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", "header line without colon"),
    (b"HTTP/1.1 200 OK\r\n X: y\r\n\r\n", "whitespace before the first header field"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok!", "conflicting Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nok!", "conflicting Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 0x2\r\n\r\nok", "invalid Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "invalid Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", "invalid Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2.0\r\n\r\nok", "invalid Content-Length"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 123456789012345678901\r\n\r\n", "Content-Length value too large"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", "more than once"),
    (CHUNKED + b"xyz\r\n", "invalid chunk size"),
    (CHUNKED + b"2\nok\r\n0\r\n\r\n", "bare LF in chunk line"),
    (CHUNKED + b"2;ext\nok\r\n0\r\n\r\n", "bare LF in chunk line"),
    (CHUNKED + b"2\rok\r\n0\r\n\r\n", "bare CR in chunk line"),
    (CHUNKED + b"10000000000000000\r\n", "more than 16 hex digits"),
    (CHUNKED + b"2\r\nokay\r\n0\r\n\r\n", "chunk data not followed by CRLF"),
    (CHUNKED + b"2\r\nok\n0\r\n\r\n", "chunk data not followed by CRLF"),
    (CHUNKED + b"0\r\nBad(Trailer): x\r\n\r\n", "invalid character in trailer field name"),
    (CHUNKED + b"0\r\nX: y\n\r\n", "bare LF in trailer section"),
    (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", "101 Switching Protocols is not supported"),
    (b"HTTP/1.1 200 " + b"r" * 8200 + b"\r\n\r\n", "status line longer than 8192 bytes"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"v" * 8200 + b"\r\n\r\n", "header line longer than 8192 bytes"),
    (b"HTTP/1.1 200 OK\r\n" + b"".join(b"H%d: v\r\n" % i for i in range(101)) + b"\r\n", "more than 100 header fields"),
    (b"HTTP/1.1 200 OK\r\n" + b"".join(b"H%d: %s\r\n" % (i, b"v" * 8000) for i in range(9)) + b"\r\n", "header section longer than 65536 bytes"),
]


def ids(cases):
    return [why.replace(" ", "-") + f"-{i}" for i, (_, why) in enumerate(cases)]


@pytest.mark.parametrize("raw,why", MALFORMED, ids=ids(MALFORMED))
def test_malformed_response_raises_and_next_request_reconnects(scripted, raw, why):
    srv = scripted([("recv",), ("send", raw)], [("recv",), ("send", OK)])
    with httpbench.Connection("127.0.0.1", srv.port, timeout=5) as conn:
        with pytest.raises(httpbench.ProtocolError, match=re.escape(why)) as info:
            conn.request("GET", "/")
        assert not isinstance(info.value, httpbench.IncompleteResponse)
        assert not conn.is_open
        assert conn.request("GET", "/").body == b"ok"
        assert conn.connects == 2


SHORT = [c for c in MALFORMED if len(c[0]) < 200]


@pytest.mark.parametrize("raw,why", SHORT, ids=ids(SHORT))
def test_malformed_response_trickled(scripted, raw, why):
    srv = scripted([("recv",), ("trickle", raw)])
    with httpbench.Connection("127.0.0.1", srv.port, timeout=5) as conn:
        with pytest.raises(httpbench.ProtocolError, match=re.escape(why)):
            conn.request("GET", "/")


INCOMPLETE = [
    (b"", "close", "connection closed before any response byte"),
    (b"", "reset", "connection reset before any response byte"),
    (b"HTTP/1.1 200 OK\r\nContent-", "close", "closed after 25 bytes of the response head"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "close", "got 3 of 10 body bytes"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "reset", "connection reset: got 3 of 10 body bytes"),
    (CHUNKED + b"5\r\nhello\r\n", "close", "inside the chunked body, after 5 body bytes"),
    (CHUNKED + b"5\r\nhel", "reset", "reset inside the chunked body"),
    (CHUNKED + b"0\r\nX: 1\r\n", "close", "inside the chunked body"),
    (b"HTTP/1.1 200 OK\r\n\r\npartial", "reset", "reset before the end of the body"),
]


INCOMPLETE += [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcd", "half_close", "closed: got 4 of 10 body bytes"),
    (CHUNKED + b"5\r\nhello\r\n", "half_close", "closed inside the chunked body"),
]


@pytest.mark.parametrize("raw,how,why", INCOMPLETE, ids=[c[2] for c in INCOMPLETE])
def test_incomplete_response(scripted, raw, how, why):
    srv = scripted([("recv",), ("send", raw), ("sleep", 0.05), (how,)], [("recv",), ("send", OK)])
    with httpbench.Connection("127.0.0.1", srv.port, timeout=5) as conn:
        with pytest.raises(httpbench.IncompleteResponse, match=why):
            conn.request("GET", "/")
        assert conn.request("GET", "/").body == b"ok"


@pytest.mark.parametrize(
    "script",
    [
        [("recv",), ("sleep", 10)],
        [("recv",), ("send", b"HTTP/1.1 200 OK\r\n"), ("sleep", 10)],
        [("recv",), ("send", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"), ("sleep", 10)],
        # A byte every 50 ms would keep a per-read timeout waiting forever.
        [("recv",)] + [("send", b"HTTP/1.1 200 OK\r\nX: "[i : i + 1]) for i in range(20)]
        + [step for _ in range(200) for step in (("sleep", 0.05), ("send", b"x"))],
    ],
    ids=["silent", "stalled-head", "stalled-body", "dribble"],
)
def test_timeout_bounds_the_whole_request(scripted, script):
    srv = scripted(script, [("recv",), ("send", OK)])
    with httpbench.Connection("127.0.0.1", srv.port, timeout=0.5) as conn:
        t0 = time.monotonic()
        with pytest.raises(httpbench.Timeout, match="timed out after 0.500 s"):
            conn.request("GET", "/")
        elapsed = time.monotonic() - t0
        assert 0.45 < elapsed < 2.0
        assert conn.request("GET", "/").body == b"ok"


def test_timeout_is_a_timeouterror(scripted):
    srv = scripted([("recv",), ("sleep", 5)])
    with httpbench.Connection("127.0.0.1", srv.port, timeout=0.2) as conn:
        with pytest.raises(TimeoutError):
            conn.request("GET", "/")


def test_connect_refused():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: refused
        with httpbench.Connection("127.0.0.1", port) as conn:
            with pytest.raises(httpbench.ConnectError, match="Connection refused") as info:
                conn.request("GET", "/")
    assert isinstance(info.value, ConnectionError)


def test_unresolvable_host():
    with httpbench.Connection("no-such-host.invalid", 80, timeout=5) as conn:
        with pytest.raises(httpbench.ConnectError, match="cannot resolve no-such-host.invalid"):
            conn.request("GET", "/")


def test_connect_timeout():
    # A listener whose accept queue is full drops further SYNs, so connect
    # hangs as it would against a silent host.
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(0)
    port = lst.getsockname()[1]
    fillers = []
    try:
        for _ in range(8):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex(("127.0.0.1", port))
            fillers.append(s)
        time.sleep(0.1)
        conn = httpbench.Connection("127.0.0.1", port, timeout=0.5)
        t0 = time.monotonic()
        with pytest.raises(httpbench.Timeout, match="connecting"):
            conn.request("GET", "/")
        assert 0.45 < time.monotonic() - t0 < 2.0
    finally:
        for s in fillers:
            s.close()
        lst.close()


def test_body_over_max_body_is_refused_without_reading_it(scripted):
    srv = scripted(
        [("recv",), ("send", b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n")],
        [("recv",), ("send", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                              + b"400\r\n" + b"x" * 1024 + b"\r\n" + b"400\r\n" + b"y" * 1024 + b"\r\n0\r\n\r\n")],
        [("recv",), ("send", b"HTTP/1.1 200 OK\r\n\r\n" + b"z" * 5000), ("close",)],
    )
    with httpbench.Connection("127.0.0.1", srv.port, max_body=1500) as conn:
        with pytest.raises(httpbench.ProtocolError, match="Content-Length 1000000000 exceeds max_body 1500"):
            conn.request("GET", "/")
        with pytest.raises(httpbench.ProtocolError, match="response body exceeds max_body 1500"):
            conn.request("GET", "/")
        with pytest.raises(httpbench.ProtocolError, match="response body exceeds max_body 1500"):
            conn.request("GET", "/")


@pytest.mark.timing
def test_endless_header_stops_at_the_limit(scripted):
    # 1 MiB of header bytes: the client gives up at 64 KiB.
    endless = b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"v" * 1000) for i in range(1000))
    srv = scripted([("recv",), ("send", endless)])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with httpbench.Connection("127.0.0.1", srv.port, timeout=5) as conn:
        with pytest.raises(httpbench.ProtocolError, match="more than 100 header fields|longer than 65536"):
            conn.request("GET", "/")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 16 * 1024


class Interrupted(Exception):
    pass


def test_signal_interrupts_a_blocked_request_promptly(scripted):
    srv = scripted([("recv",), ("sleep", 10)], [("recv",), ("send", OK)])

    def handler(signum, frame):
        raise Interrupted()

    old = signal.signal(signal.SIGALRM, handler)
    try:
        with httpbench.Connection("127.0.0.1", srv.port, timeout=30) as conn:
            signal.setitimer(signal.ITIMER_REAL, 0.2)
            t0 = time.monotonic()
            with pytest.raises(Interrupted):
                conn.request("GET", "/")
            assert time.monotonic() - t0 < 1.0
            assert not conn.is_open
            assert conn.request("GET", "/").body == b"ok"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_signal_whose_handler_returns_does_not_interrupt(scripted):
    srv = scripted([("recv",), ("sleep", 0.4), ("send", OK)])
    calls = []
    old = signal.signal(signal.SIGALRM, lambda *a: calls.append(1))
    try:
        with httpbench.Connection("127.0.0.1", srv.port, timeout=30) as conn:
            signal.setitimer(signal.ITIMER_REAL, 0.1, 0.1)
            assert conn.request("GET", "/").body == b"ok"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert calls


def test_gil_is_released_during_a_request(scripted):
    srv = scripted([("recv",), ("sleep", 0.5), ("send", OK)])
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.01)

    t = threading.Thread(target=count)
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        t.start()
        try:
            conn.request("GET", "/")
        finally:
            stop.set()
            t.join()
    assert len(ticks) > 20


def test_one_connection_is_not_used_by_two_threads_at_once(scripted):
    srv = scripted([("recv",), ("sleep", 0.5), ("send", OK)])
    errors = []
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        t = threading.Thread(target=conn.request, args=("GET", "/"))
        t.start()
        time.sleep(0.1)
        try:
            conn.request("GET", "/")
        except RuntimeError as e:
            errors.append(e)
        with pytest.raises(RuntimeError, match="in use"):
            conn.close()
        t.join()
    assert errors and "in use by another thread" in str(errors[0])


CTRL_C = """
import socket, sys, httpbench
port = int(sys.argv[1])
conn = httpbench.Connection("127.0.0.1", port, timeout=60)
print("ready", flush=True)
try:
    conn.request("GET", "/")
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
"""


def test_ctrl_c_interrupts_a_blocked_request(scripted, tmp_path):
    srv = scripted([("recv",), ("sleep", 30)])
    proc = subprocess.Popen([sys.executable, "-c", CTRL_C, str(srv.port)], cwd=tmp_path,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        while not srv.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        assert srv.requests, "the request never arrived"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=5)
        assert time.monotonic() - t0 < 1.0
        assert out.strip() == "KeyboardInterrupt"
    finally:
        proc.kill()


def _flooder() -> tuple[socket.socket, threading.Event]:
    """A server that reads a request and then keeps the socket full of 1xx
    heads, for ever (until stopped)."""
    stop = threading.Event()

    def handle(conn: socket.socket) -> None:
        conn.recv(65536)
        flood = b"HTTP/1.1 100 Continue\r\n\r\n" * 4096
        while not stop.is_set():
            try:
                conn.sendall(flood)
            except OSError:
                return

    lsock = helpers.serve_one(handle)
    return lsock, stop


@pytest.mark.parametrize("concurrency", [1, 2])
def test_a_socket_kept_full_does_not_hold_the_run_past_its_duration(concurrency):
    """The loop read on while reads came back full, never looking at the
    clock: a flood of 1xx heads kept duration=0.5 going 2-20 s. Bounded per
    wake-up, the run ends within its duration and grace, the request
    cancelled."""
    lsock, stop = _flooder()
    try:
        t0 = time.monotonic()
        r = httpbench.run(f"http://127.0.0.1:{lsock.getsockname()[1]}/", duration=0.5,
                          concurrency=concurrency, progress=False)
        took = time.monotonic() - t0
    finally:
        stop.set()
        lsock.close()
    assert took < 3.0, took  # 0.5 s, then the 1 s grace
    exact(r)
    assert r.cancelled >= 1


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_timeout_under_the_loops_tick_is_enforced(concurrency):
    """30 ms answers all completed under timeout=0.01: the deadline was
    checked every 50 ms tick only. An answer past its deadline is a timeout
    now, and the tick runs at a quarter of a short timeout."""
    with httpbench.Server() as srv:
        r = httpbench.run(srv.url("/delay?ms=30"), requests=8, concurrency=concurrency,
                          timeout=0.01, progress=False)
        assert (r.complete, r.failures["timeout"]) == (0, 8), r.failures
        ok = httpbench.run(srv.url("/delay?ms=5"), requests=8, concurrency=concurrency,
                           timeout=0.2, progress=False)
        assert (ok.complete, ok.failed) == (8, 0)

"""Response framing and connection reuse, over real sockets.

Each response is played whole and trickled one byte per segment, so the
client's incremental parsing is exercised as a slow server would.
"""

import pytest

import httpbench

SEND_MODES = ["send", "trickle"]


def reply(raw: bytes, mode: str = "send") -> list[tuple]:
    return [("recv",), (mode, raw)]


@pytest.mark.parametrize("mode", SEND_MODES)
def test_content_length(scripted, mode):
    srv = scripted(reply(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello", mode))
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        r = conn.request("GET", "/x")
    assert (r.status, r.reason, r.version, r.body) == (200, "OK", "HTTP/1.1", b"hello")
    assert r.headers == [("Content-Length", "5"), ("X-A", "1")]
    assert r.header("content-length") == "5"
    assert r.header("CONTENT-LENGTH") == "5"
    assert r.header("missing") is None
    assert r.header("missing", "d") == "d"


@pytest.mark.parametrize("mode", SEND_MODES)
def test_chunked_with_extensions_and_trailers(scripted, mode):
    raw = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;name=value\r\nhello\r\n6 ; q=\"x\"\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n"
    )
    srv = scripted(reply(raw, mode) + reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        assert conn.request("GET", "/").body == b"hello world"
        assert conn.request("GET", "/").body == b"ok"
        assert conn.connects == 1


@pytest.mark.parametrize("mode", SEND_MODES)
def test_read_until_close(scripted, mode):
    srv = scripted(
        reply(b"HTTP/1.1 200 OK\r\nServer: t\r\n\r\nall of this", mode) + [("close",)],
        reply(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n2"),
    )
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        assert conn.request("GET", "/").body == b"all of this"
        assert conn.request("GET", "/").body == b"2"
        assert conn.connects == 2
        assert conn.retries == 0


def test_head_has_no_body(scripted):
    srv = scripted(
        reply(b"HTTP/1.1 200 OK\r\nContent-Length: 2048\r\n\r\n")
        + reply(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")
    )
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        r = conn.request("HEAD", "/")
        assert (r.status, r.body, r.header("content-length")) == (200, b"", "2048")
        assert conn.request("GET", "/").body == b"abc"
        assert conn.connects == 1


@pytest.mark.parametrize("status", [204, 304])
def test_no_body_statuses(scripted, status):
    srv = scripted(
        reply(b"HTTP/1.1 %d X\r\nContent-Length: 10\r\n\r\n" % status)
        + reply(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")
    )
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        assert conn.request("GET", "/").body == b""
        assert conn.request("GET", "/").body == b"abc"
        assert conn.connects == 1


@pytest.mark.parametrize("mode", SEND_MODES)
def test_interim_responses_are_skipped(scripted, mode):
    raw = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
        b"HTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone"
    )
    srv = scripted(reply(raw, mode))
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        r = conn.request("POST", "/", body=b"x")
    assert (r.status, r.reason, r.body) == (201, "Created", b"done")


def test_keep_alive_reuses_one_socket(scripted):
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    srv = scripted(reply(ok) * 50)
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        for _ in range(50):
            assert conn.request("GET", "/").body == b"ok"
        assert (conn.requests, conn.connects, conn.retries) == (50, 1, 0)
        assert conn.bytes_received == 50 * len(ok)
    assert srv.connections == 1 and len(srv.requests) == 50


def test_server_connection_close_is_honoured(scripted):
    srv = scripted(
        reply(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\na"),
        reply(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb"),
    )
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        assert conn.request("GET", "/").body == b"a"
        assert not conn.is_open
        assert conn.request("GET", "/").body == b"b"
        assert (conn.connects, conn.retries) == (2, 0)


def test_http10_closes_unless_keep_alive(scripted):
    srv = scripted(
        reply(b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\na"),
        reply(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nb")
        + reply(b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nc"),
    )
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        r = conn.request("GET", "/")
        assert (r.version, r.body) == ("HTTP/1.0", b"a")
        assert conn.request("GET", "/").body == b"b"
        assert conn.request("GET", "/").body == b"c"
        assert conn.connects == 2


def test_client_connection_close_is_honoured(scripted):
    # The server keeps the socket open; the client must not reuse it.
    srv = scripted(
        reply(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na"),
        reply(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb"),
    )
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        assert conn.request("GET", "/", headers={"Connection": "close"}).body == b"a"
        assert conn.request("GET", "/").body == b"b"
        assert conn.connects == 2
    assert b"Connection: close" in srv.requests[0]


@pytest.mark.parametrize("mode", SEND_MODES)
def test_content_length_and_chunked_decodes_chunked_and_closes(scripted, mode):
    raw = (
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3\r\nabc\r\n0\r\n\r\n"
    )
    srv = scripted(reply(raw, mode), reply(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz"))
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        assert conn.request("GET", "/").body == b"abc"
        assert not conn.is_open
        assert conn.request("GET", "/").body == b"z"
        assert conn.connects == 2


def test_more_body_than_content_length(scripted):
    srv = scripted(
        reply(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef"),
        reply(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz"),
    )
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        assert conn.request("GET", "/").body == b"abc"
        assert not conn.is_open
        assert conn.request("GET", "/").body == b"z"
        assert conn.connects == 2


@pytest.mark.parametrize("how", ["close", "reset"])
def test_stale_keep_alive_is_retried_once_for_get(scripted, how):
    # The server answers, keeps the connection looking alive, then drops it
    # when the next request arrives, before any response byte.
    srv = scripted(
        reply(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na") + [("recv",), (how,)],
        reply(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb"),
    )
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        assert conn.request("GET", "/").body == b"a"
        assert conn.request("GET", "/").body == b"b"
        assert (conn.requests, conn.connects, conn.retries) == (2, 2, 1)


@pytest.mark.parametrize("how", ["close", "reset"])
def test_stale_keep_alive_is_not_retried_for_post(scripted, how):
    srv = scripted(
        reply(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na") + [("recv",), (how,)],
        reply(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb"),
    )
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        assert conn.request("POST", "/", body=b"1").body == b"a"
        with pytest.raises(httpbench.IncompleteResponse, match="before any response byte"):
            conn.request("POST", "/", body=b"2")
        assert conn.retries == 0
        assert conn.request("POST", "/", body=b"3").body == b"b"


def test_fresh_connection_closed_is_not_retried(scripted):
    srv = scripted([("recv",), ("close",)], reply(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        with pytest.raises(httpbench.IncompleteResponse, match="closed before any response byte"):
            conn.request("GET", "/")
        assert conn.retries == 0
        assert conn.request("GET", "/").status == 200


def test_stale_connection_dropped_twice_fails(scripted):
    # One transparent retry, not a loop.
    srv = scripted(
        reply(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na") + [("recv",), ("close",)],
        [("recv",), ("close",)],
    )
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        conn.request("GET", "/")
        with pytest.raises(httpbench.IncompleteResponse):
            conn.request("GET", "/")
        assert conn.retries == 1
    assert srv.connections == 2


@pytest.mark.parametrize("size", [0, 1, 16383, 16384, 65537, 5_000_000])
def test_large_content_length_body(scripted, size):
    body = bytes(i % 251 for i in range(size))
    srv = scripted(reply(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size + body) * 2)
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        assert conn.request("GET", "/").body == body
        assert conn.request("GET", "/").body == body
        assert conn.connects == 1


def test_large_chunked_body(scripted):
    pieces = [bytes([65 + i % 26]) * (i * 37 % 5000 + 1) for i in range(400)]
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    raw += b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
    srv = scripted(reply(raw) * 2)
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        assert conn.request("GET", "/").body == b"".join(pieces)
        assert conn.request("GET", "/").body == b"".join(pieces)


def test_obs_fold_is_replaced_by_a_space(scripted):
    srv = scripted(reply(b"HTTP/1.1 200 OK\r\nX-Folded: one\r\n  two\r\n\tthree\r\nContent-Length: 0\r\n\r\n"))
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        r = conn.request("GET", "/")
    assert r.header("x-folded") == "one two three"
    assert r.headers[0] == ("X-Folded", "one two three")


def test_repeated_fields_are_joined(scripted):
    srv = scripted(reply(b"HTTP/1.1 200 OK\r\nVary: a\r\nvary: b\r\nContent-Length: 0\r\n\r\n"))
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        r = conn.request("GET", "/")
    assert r.header("Vary") == "a, b"
    assert r.headers == [("Vary", "a"), ("vary", "b"), ("Content-Length", "0")]


def test_latin1_field_values(scripted):
    srv = scripted(reply(b"HTTP/1.1 200 Caf\xe9\r\nX: caf\xe9\r\nContent-Length: 0\r\n\r\n"))
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        r = conn.request("GET", "/")
    assert (r.reason, r.header("x")) == ("Caf\u00e9", "caf\u00e9")


def test_half_close_ends_a_body_delimited_by_close(scripted):
    srv = scripted(reply(b"HTTP/1.1 200 OK\r\n\r\nto the end") + [("half_close",)])
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        assert conn.request("GET", "/").body == b"to the end"
        assert not conn.is_open

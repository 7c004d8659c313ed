"""What Connection.request puts on the wire, and what it refuses to send."""

import pytest

import httpbench

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def one_request(scripted, *args, **kwargs) -> bytes:
    srv = scripted([("recv",), ("send", OK)])
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        assert conn.request(*args, **kwargs).body == b"ok"
    (raw,) = srv.requests
    return raw


def split(raw: bytes) -> tuple[bytes, list[bytes], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    line, *fields = head.split(b"\r\n")
    return line, fields, body


def test_get_adds_host_only(scripted):
    """Connection sends what it must; run() and the command line add
    User-Agent and Accept as ab does (tests/test_first_contact.py)."""
    line, fields, body = split(one_request(scripted, "GET", "/rnd?c=2048"))
    assert line == b"GET /rnd?c=2048 HTTP/1.1"
    assert fields[0].startswith(b"Host: 127.0.0.1:")
    assert len(fields) == 1 and body == b""


def test_given_host_and_length_are_not_added_again(scripted):
    raw = one_request(scripted, "POST", "/echo", headers={"host": "example", "content-length": "3"}, body=b"abc")
    _, fields, body = split(raw)
    assert fields == [b"host: example", b"content-length: 3"]
    assert body == b"abc"


@pytest.mark.parametrize(
    "body,sent",
    [
        (b"hello", b"hello"),
        (bytearray(b"hello"), b"hello"),
        (memoryview(b"xhellox")[1:6], b"hello"),
        ("h\u00e9llo", "h\u00e9llo".encode()),
        (b"", b""),
    ],
)
def test_body_types_and_content_length(scripted, body, sent):
    _, fields, got = split(one_request(scripted, "POST", "/echo", body=body))
    assert b"Content-Length: %d" % len(sent) in fields
    assert got == sent


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH"])
def test_methods_with_a_body_send_zero_length_when_none(scripted, method):
    _, fields, _ = split(one_request(scripted, method, "/"))
    assert b"Content-Length: 0" in fields


def test_given_content_length_that_matches_is_sent_once(scripted):
    raw = one_request(scripted, "POST", "/", headers={"Content-Length": "3"}, body=b"abc")
    _, fields, body = split(raw)
    assert [f for f in fields if f.lower().startswith(b"content-length")] == [b"Content-Length: 3"]
    assert body == b"abc"


def test_large_body_is_sent_whole(scripted):
    body = bytes(range(256)) * 4096  # 1 MiB, past the copy threshold
    _, _, got = split(one_request(scripted, "PUT", "/big", body=body))
    assert got == body


def test_ipv6_literal_is_bracketed_in_host(scripted):
    try:
        srv = scripted([("recv",), ("send", OK)], host="::1")
    except OSError as e:
        pytest.skip(f"no IPv6 loopback here: {e}")
    with httpbench.Connection("::1", srv.port) as conn:
        conn.request("GET", "/")
    _, fields, _ = split(srv.requests[0])
    assert fields[0] == b"Host: [::1]:%d" % srv.port


def test_localhost_tries_each_address(scripted):
    # "localhost" may resolve to ::1 first; the server is on 127.0.0.1 only.
    srv = scripted([("recv",), ("send", OK), ("recv",), ("send", OK)])
    with httpbench.Connection("localhost", srv.port) as conn:
        assert conn.request("GET", "/").body == b"ok"
        assert conn.request("GET", "/").body == b"ok"
    _, fields, _ = split(srv.requests[0])
    assert fields[0] == b"Host: localhost:%d" % srv.port


@pytest.mark.parametrize(
    "kwargs,error",
    [
        (dict(method="GET\r\n", target="/"), "method contains CR"),
        (dict(method="GE T", target="/"), "method contains a space"),
        (dict(method="G\x00T", target="/"), "method contains NUL"),
        (dict(method="", target="/"), "method must not be empty"),
        (dict(method="GET", target="/a\r\nX: y"), "target contains CR"),
        (dict(method="GET", target="/a\nb"), "target contains LF"),
        (dict(method="GET", target="/\x00"), "target contains NUL"),
        (dict(method="GET", target="/a b"), "target contains a space"),
        (dict(method="GET", target=""), "target must not be empty"),
        (dict(method="GET", target="/caf\u00e9"), "target must be ASCII"),
        (dict(method="GET", target="/", headers={"X-A\r\n": "v"}), "header name contains CR"),
        (dict(method="GET", target="/", headers={"X A": "v"}), "header name contains a space"),
        (dict(method="GET", target="/", headers={"X:A": "v"}), "header name contains a character"),
        (dict(method="GET", target="/", headers={"": "v"}), "header name must not be empty"),
        (dict(method="GET", target="/", headers={"X": "a\r\nInjected: 1"}), "header value contains CR"),
        (dict(method="GET", target="/", headers={"X": "a\nb"}), "header value contains LF"),
        (dict(method="GET", target="/", headers=[("X", "a\x00b")]), "header value contains NUL"),
        (dict(method="GET", target="/", headers=[("X", b"\r")]), "header value contains CR"),
        (dict(method="GET", target="/", headers={"X": "\u20ac"}), "header value must be Latin-1"),
        (dict(method="GET", target="/", headers=[("X", "1", "2")]), "pair"),
    ],
)
def test_bad_request_parts_raise_before_anything_is_sent(scripted, kwargs, error):
    srv = scripted()
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        with pytest.raises(ValueError, match=error):
            conn.request(**kwargs)
        assert conn.connects == 0 and conn.bytes_sent == 0
    assert srv.connections == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(method=1, target="/"),
        dict(method="GET", target=None),
        dict(method="GET", target="/", headers=5),
        dict(method="GET", target="/", headers={"X": 1}),
        dict(method="GET", target="/", body=5),
    ],
)
def test_wrong_types_raise_typeerror(scripted, kwargs):
    srv = scripted()
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        with pytest.raises(TypeError):
            conn.request(**kwargs)
    assert srv.connections == 0


def test_request_argument_errors(scripted):
    conn = httpbench.Connection("127.0.0.1", 1)
    with pytest.raises(TypeError):
        conn.request("GET")
    with pytest.raises(TypeError):
        conn.request("GET", "/", None, None, None)
    with pytest.raises(TypeError):
        conn.request("GET", "/", nope=1)
    with pytest.raises(TypeError):
        conn.request("GET", target="/", method="GET")


@pytest.mark.parametrize(
    "args,kwargs,exc",
    [
        (("127.0.0.1", 0), {}, ValueError),
        (("127.0.0.1", 65536), {}, ValueError),
        (("127.0.0.1", 80), {"timeout": 0}, ValueError),
        (("127.0.0.1", 80), {"timeout": -1}, ValueError),
        (("127.0.0.1", 80), {"timeout": float("nan")}, ValueError),
        # True is an int to Python; as a port, timeout or max_body, a slip.
        (("127.0.0.1", True), {}, ValueError),
        (("127.0.0.1", 80), {"timeout": True}, ValueError),
        (("127.0.0.1", 80), {"max_body": True}, ValueError),
        (("", 80), {}, ValueError),
        (("a b", 80), {}, ValueError),
        ((b"127.0.0.1", 80), {}, TypeError),
    ],
)
def test_bad_constructor_arguments(args, kwargs, exc):
    with pytest.raises(exc):
        httpbench.Connection(*args, **kwargs)


def test_timeout_none_means_no_deadline():
    assert httpbench.Connection("127.0.0.1", 80, timeout=None).timeout is None
    assert httpbench.Connection("127.0.0.1", 80).timeout == 30.0


def test_through_a_proxy_a_path_goes_in_absolute_form_with_the_proxys_credentials(scripted):
    """The scripted server stands as the proxy: Connection(proxy=) has the
    request builder write the absolute form (RFC 9112 section 3.2.2) and
    add Proxy-Authorization, unless the caller's headers give one."""
    srv = scripted([("recv",), ("send", OK)], [("recv",), ("send", OK)])
    proxy = f"http://user:pw@127.0.0.1:{srv.port}"
    with httpbench.Connection("example.test", 8080, proxy=proxy) as conn:
        conn.request("GET", "/a?b=1")
    with httpbench.Connection("example.test", 80, proxy=proxy) as conn:
        conn.request("OPTIONS", "*", headers={"proxy-authorization": "Basic mine"})
    first, second = srv.requests
    line, fields, _ = split(first)
    assert line == b"GET http://example.test:8080/a?b=1 HTTP/1.1"
    assert b"Proxy-Authorization: Basic dXNlcjpwdw==" in fields and b"Host: example.test:8080" in fields
    line, fields, _ = split(second)
    assert line == b"OPTIONS * HTTP/1.1"  # not a path: no origin before it
    assert [f for f in fields if f.lower().startswith(b"proxy-authorization")] == [
        b"proxy-authorization: Basic mine"]


def test_the_run_builds_through_the_same_builder():
    raw, _ = httpbench._core.build_request("GET", "/x", None, None, b"h:1", origin=b"http://h:1",
                                           proxy_auth=b"Basic abc")
    assert raw == b"GET http://h:1/x HTTP/1.1\r\nHost: h:1\r\nProxy-Authorization: Basic abc\r\n\r\n"
    with pytest.raises(ValueError, match="header value contains CR"):
        httpbench._core.build_request("GET", "/x", None, None, b"h", proxy_auth=b"a\rb")

"""A peer that speaks something else, or HTTP loosely: a TLS or SSH answer
to plain HTTP is an error at once, a ClientHello to the plain server a 400
at once, bare-LF heads are read, a socket the server closed is not reused."""

from __future__ import annotations

import socket
import time

import pytest

import httpbench
from helpers import OK


def test_a_tls_or_ssh_answer_is_an_error_at_once_not_a_timeout(scripted):
    """Item 3: the client waited for a blank line that never came."""
    for answer in (b"\x16\x03\x03\x00\x02\x02\x28", b"SSH-2.0-OpenSSH_9.2p1\r\n"):
        script = [("recv",), ("send", answer), ("sleep", 10)]
        srv = scripted(script, script)
        t0 = time.monotonic()
        with httpbench.Connection("127.0.0.1", srv.port, timeout=10) as conn:
            with pytest.raises(httpbench.ProtocolError, match="TLS|does not begin with HTTP/"):
                conn.request("GET", "/")
        assert time.monotonic() - t0 < 2
        r = httpbench.run(f"http://127.0.0.1:{srv.port}/", requests=1, timeout=10,
                          progress=False)
        assert r.failures["exceptions"] == 1 and ("TLS" in r.first_error or "SSH" in r.first_error)


@pytest.mark.parametrize("mode", ["epoll", "threads"])
def test_a_tls_client_hello_gets_400_at_once(mode):
    """Item 3, the server's side: not after the header deadline."""
    with httpbench.Server(mode=mode, header_timeout=10) as srv:
        with socket.create_connection(("127.0.0.1", srv.port)) as s:
            s.settimeout(5)
            t0 = time.monotonic()
            s.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
            answer = b""
            while chunk := s.recv(4096):
                answer += chunk
        assert time.monotonic() - t0 < 2
        assert answer.startswith(b"HTTP/1.1 400 ") and b"TLS (0x16) sent to a plain HTTP" in answer


def test_bare_lf_response_heads_are_read(scripted):
    """Item 4: as curl and http.client read them (RFC 9112 section 2.2)."""
    srv = scripted([("recv",), ("send", b"HTTP/1.1 200 OK\nContent-Length: 2\nX-A: b\n  c\n\nok"),
                    ("recv",), ("send", OK)])
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        r = conn.request("GET", "/")
        assert (r.status, r.body, r.header("x-a")) == (200, b"ok", "b c")
        assert conn.request("GET", "/").body == b"ok" and conn.connects == 1


@pytest.mark.parametrize("leftover", [b"", b"garbage"])
def test_an_idle_socket_the_server_closed_is_not_reused(scripted, leftover):
    """Item 5: a non-idempotent request (no retry allowed) sent into a socket
    whose server had closed it, or had sent more than the response, was
    lost. Idle past a millisecond, the socket is looked at first."""
    first = [("recv",), ("send", OK + leftover), ("sleep", 0.05), ("close",)]
    srv = scripted(first, [("recv",), ("send", OK)])
    with httpbench.Connection("127.0.0.1", srv.port) as conn:
        assert conn.request("POST", "/", body=b"1").body == b"ok"
        time.sleep(0.3)
        assert conn.request("POST", "/", body=b"2").body == b"ok"
        assert (conn.connects, conn.retries) == (2, 0)

"""Malformed HTTP/2 responses (RFC 9113 section 8), each from a raw peer:
the client checks a response's rules itself (csrc/h2msg.c, nghttp2's HTTP
messaging off to save its cost), so each defect is named here, through a
Connection (ProtocolError) and through run() (a failure counted exactly,
the connection kept for the next stream), and the well-formed neighbours
of each (1xx before the head, trailers, HEAD, 204 and 304 with a length)
still complete."""

from __future__ import annotations

from collections.abc import Callable

import hpack
import pytest
from h2peer import H2Server, frame
from helpers import exact

import httpbench

OK = [(":status", "200")]


def head(sid: int, fields: list[tuple[str, str]], end: bool = True) -> bytes:
    """One HEADERS frame, END_HEADERS (and END_STREAM when end); names and
    values as given (hpack's encoder checks nothing), as literals."""
    return frame(1, 0x4 | (1 if end else 0), sid, hpack.Encoder().encode(fields, huffman=False))


def data(sid: int, body: bytes, end: bool = True) -> bytes:
    return frame(0, 1 if end else 0, sid, body)


MALFORMED: dict[str, tuple[Callable[[int], bytes], str]] = {
    "body short of its length": (
        lambda s: head(s, OK + [("content-length", "10")], False) + data(s, b"hello"),
        "less body than its content-length"),
    "body over its length": (
        lambda s: head(s, OK + [("content-length", "3")], False) + data(s, b"hello"),
        "more body than its content-length"),
    "a length that is no number": (
        lambda s: head(s, OK + [("content-length", "x5")], False) + data(s, b"hello"),
        "content-length that is no number"),
    "two lengths": (
        lambda s: head(s, OK + [("content-length", "5"), ("content-length", "6")], False)
        + data(s, b"hello"), "a second content-length"),
    "no :status": (lambda s: head(s, [("x-a", "1")]), "head without :status"),
    ":status after a field": (lambda s: head(s, [("x-a", "1"), (":status", "200")]),
                              r"pseudo-header field out of place \(:status\)"),
    ":status twice": (lambda s: head(s, OK + [(":status", "200")]), "out of place"),
    ":path in a response": (lambda s: head(s, OK + [(":path", "/")]),
                            r"pseudo-header field a response does not have \(:path\)"),
    "connection": (lambda s: head(s, OK + [("connection", "close")]),
                   r"connection-specific field \(connection\)"),
    "transfer-encoding": (lambda s: head(s, OK + [("transfer-encoding", "chunked")]),
                          r"connection-specific field \(transfer-encoding\)"),
    "te other than trailers": (lambda s: head(s, OK + [("te", "gzip")]),
                               r"connection-specific field \(te\)"),
    "upgrade": (lambda s: head(s, OK + [("upgrade", "h2c")]), "connection-specific"),
    "keep-alive": (lambda s: head(s, OK + [("keep-alive", "5")]), "connection-specific"),
    "a 1xx that ends the stream": (lambda s: head(s, [(":status", "100")]),
                                   "1xx response that ended the stream"),
    "a length in a 1xx": (
        lambda s: head(s, [(":status", "100"), ("content-length", "0")], False) + head(s, OK),
        "content-length in a 1xx"),
    "trailers without END_STREAM": (
        lambda s: head(s, OK, False) + data(s, b"hi", False) + head(s, [("x-t", "1")], False)
        + data(s, b"x"), "header block after the head without END_STREAM"),
    "trailers with :status": (
        lambda s: head(s, OK, False) + data(s, b"hi", False) + head(s, [(":status", "200")]),
        "out of place"),
    "LF in a value": (lambda s: head(s, OK + [("x-a", "a\nb")]), r"field value .* \(x-a\)"),
    "NUL in a value": (lambda s: head(s, OK + [("x-a", "a\x00b")]), "field value"),
    "a value with a space at its ends": (lambda s: head(s, OK + [("x-a", " ab ")]),
                                         "whitespace at an end"),
    "a capital in a name": (lambda s: head(s, OK + [("X-A", "1")]),
                            r"not a lowercase token \(X-A\)"),
    "a space in a name": (lambda s: head(s, OK + [("x a", "1")]), "not a lowercase token"),
    "204 with a length": (lambda s: head(s, [(":status", "204"), ("content-length", "5")]),
                          "content-length in a 204"),
    "204 with a body": (lambda s: head(s, [(":status", "204")], False) + data(s, b"hello"),
                        "a body in a response that has none"),
    "304 with a body": (lambda s: head(s, [(":status", "304")], False) + data(s, b"hello"),
                        "a body in a response that has none"),
    "HEAD answered with a body": (
        lambda s: head(s, OK + [("content-length", "5")], False) + data(s, b"hello"),
        "a body in a response that has none"),
}

WELL_FORMED: dict[str, tuple[Callable[[int], bytes], int, bytes]] = {
    "a length and its body": (
        lambda s: head(s, OK + [("content-length", "5")], False) + data(s, b"hel", False)
        + data(s, b"lo"), 200, b"hello"),
    "no length": (lambda s: head(s, OK, False) + data(s, b"hello"), 200, b"hello"),
    "te: trailers": (lambda s: head(s, OK + [("te", "trailers")]), 200, b""),
    "a 103 before the head": (
        lambda s: head(s, [(":status", "103"), ("link", "</a>")], False) + head(s, OK), 200, b""),
    "trailers": (lambda s: head(s, OK, False) + data(s, b"hi", False) + head(s, [("x-t", "1")]),
                 200, b"hi"),
    "204 with length 0": (lambda s: head(s, [(":status", "204"), ("content-length", "0")]),
                          204, b""),
    "304 with a length": (lambda s: head(s, [(":status", "304"), ("content-length", "100")]),
                          304, b""),
    "HEAD with a length": (lambda s: head(s, OK + [("content-length", "100")]), 200, b""),
    "a value with obs-text and a tab": (lambda s: head(s, OK + [("x-a", "caf\xe9\tau lait")]),
                                        200, b""),
}


def _method(name: str) -> str:
    return "HEAD" if name.startswith("HEAD") else "GET"


@pytest.mark.parametrize("name", list(MALFORMED))
def test_a_malformed_response_is_named_and_counted(name: str) -> None:
    answer, words = MALFORMED[name]
    with H2Server("answer", answer=answer) as s:
        c = httpbench.Connection("127.0.0.1", s.port, http2=True, timeout=10)
        with pytest.raises(httpbench.ProtocolError, match=words):
            c.request(_method(name), "/x")
        r = httpbench.run(s.url + "/x", method=_method(name), requests=6, concurrency=2,
                          http2=True, streams=2, progress=False, timeout=10)
    exact(r)
    assert r.failed == r.failures["exceptions"] == 6 and r.complete == 0, r.failures
    assert r.status_counts == {} and "malformed HTTP/2 response" in r.first_error, r.first_error
    # One connection each: a stream's defect resets the stream, not the
    # connection.
    assert s.accepted == 3


@pytest.mark.parametrize("name", list(WELL_FORMED))
def test_its_well_formed_neighbours_complete(name: str) -> None:
    answer, status, body = WELL_FORMED[name]
    with H2Server("answer", answer=answer) as s:
        c = httpbench.Connection("127.0.0.1", s.port, http2=True, timeout=10)
        got = c.request(_method(name), "/x")
        assert (got.status, got.body) == (status, body)
        r = httpbench.run(s.url + "/x", method=_method(name), requests=6, concurrency=2,
                          http2=True, streams=2, progress=False, timeout=10)
    exact(r)
    assert r.complete == 6 and r.status_counts == {status: 6}, (r.failures, r.first_error)

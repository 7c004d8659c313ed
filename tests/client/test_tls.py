"""TLS: the client, the loop and the server on OpenSSL, against peers no one
here wrote (nginx with ssl, curl, Python's ssl), with certificates made by
the openssl command (the pki fixture) or by the embedded server."""

from __future__ import annotations

import contextlib
import http.client
import http.server
import itertools
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from helpers import exact, nginx, server_context, tool_env
from test_bad_responses import CHUNKED, INCOMPLETE, OK

import httpbench
from httpbench import _core

CURL = "/usr/bin/curl"


def hb(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    # From a directory of no importance: the source tree has no built _core.
    return subprocess.run([sys.executable, "-m", "httpbench", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=tempfile.gettempdir())


@pytest.fixture(params=["epoll", "threads"])
def tls_server(request):
    with httpbench.Server(mode=request.param, tls=True) as srv:
        yield srv


@pytest.fixture
def tls_srv():
    with httpbench.Server(tls=True) as srv:
        yield srv


# --------------------------------------------------- the embedded server


def test_connection_over_tls_to_the_embedded_server(tls_server):
    srv = tls_server
    assert srv.url("/x").startswith("https://127.0.0.1:") and os.path.isfile(srv.cafile)
    with httpbench.Connection("127.0.0.1", srv.port, tls=True, cafile=srv.cafile) as conn:
        assert conn.tls and "TLS" in repr(conn)
        for _ in range(3):
            r = conn.request("GET", "/rnd?c=70000")
            assert r.status == 200 and len(r.body) == 70000
        body = os.urandom(300_000)
        assert conn.request("POST", "/echo", body=body).body == body
        r = conn.request("GET", "/chunked?c=100000")
        assert len(r.body) == 100000
        info = conn.tls_info
        assert info["protocol"].startswith("TLSv1.3,") and info["resumed"] is False
        assert info["temp_key"] and info["server_name"] == ""  # no SNI for an address
        assert conn.connects == 1 and conn.requests == 5
    assert srv.stats()["requests"] == 5


def test_from_url_takes_tls_from_the_scheme(tls_srv):
    with httpbench.Connection.from_url(tls_srv.url(), cafile=tls_srv.cafile) as conn:
        assert conn.tls and conn.port == tls_srv.port
        assert conn.request("GET", "/rnd?c=5").status == 200
    with httpbench.Connection.from_url("http://127.0.0.1:1") as conn:
        assert not conn.tls
    with pytest.raises(TypeError, match="scheme"):
        httpbench.Connection.from_url(tls_srv.url(), tls=False)
    with pytest.raises(ValueError, match="only http:// and https://"):
        httpbench.Connection.from_url("ftp://x/")


def test_the_name_is_sent_and_checked(tls_srv):
    # localhost is in the self-signed certificate; SNI goes for a name.
    with httpbench.Connection("localhost", tls_srv.port, tls=True, cafile=tls_srv.cafile) as c:
        c.request("GET", "/")
        assert c.tls_info["server_name"] == "localhost"
    with httpbench.Connection("127.0.0.1", tls_srv.port, tls=True, cafile=tls_srv.cafile,
                              server_hostname="wrong.example") as c:
        with pytest.raises(httpbench.TLSError, match="certificate verify failed: hostname mismatch"):
            c.request("GET", "/")


def test_verification_is_on_by_default(tls_srv):
    with httpbench.Connection("127.0.0.1", tls_srv.port, tls=True) as conn:
        with pytest.raises(httpbench.TLSError,
                           match="TLS handshake with 127.0.0.1:.* failed: certificate verify "
                                 "failed: self-signed certificate") as info:
            conn.request("GET", "/")
        assert isinstance(info.value, httpbench.HttpbenchError) and not conn.is_open
    with httpbench.Connection("127.0.0.1", tls_srv.port, tls=True, verify=False) as conn:
        assert conn.request("GET", "/rnd?c=3").status == 200


def test_plain_http_to_the_tls_port_gets_nginxs_courtesy(tls_server):
    with httpbench.Connection("127.0.0.1", tls_server.port) as conn:
        r = conn.request("GET", "/")
        assert r.status == 400 and r.body == b"plain HTTP request sent to an HTTPS port\n"
    out = subprocess.run([CURL, "-s", f"http://127.0.0.1:{tls_server.port}/"],
                         capture_output=True, text=True, env=tool_env(), timeout=10)
    assert "plain HTTP request sent to an HTTPS port" in out.stdout


def test_https_to_a_plain_server_says_so():
    with httpbench.Server() as plain, httpbench.Connection("127.0.0.1", plain.port, tls=True,
                                                           verify=False) as conn:
        with pytest.raises(httpbench.TLSError,
                           match=r"answered in plain HTTP, not TLS: is the URL http://\?"):
            conn.request("GET", "/")


def test_curl_against_the_embedded_tls_server(tls_server):
    # --http1.1: the server's ALPN picks h2 when offered, as curl does by
    # default (test_http2_server.py has that side).
    out = subprocess.run([CURL, "-sv", "--http1.1", "--cacert", tls_server.cafile,
                          tls_server.url("/rnd?c=1000"), tls_server.url("/rnd?c=10")],
                         capture_output=True, env=tool_env(), timeout=10)
    assert out.returncode == 0, out.stderr
    assert len(out.stdout) == 1010
    err = out.stderr.decode()
    assert "ALPN: server accepted http/1.1" in err and "Re-using existing connection" in err
    body = subprocess.run([CURL, "-s", "--http1.1", "--cacert", tls_server.cafile,
                           "--data-binary", "@-", tls_server.url("/echo")], input=b"y" * 100_000,
                          capture_output=True, env=tool_env(), timeout=10)
    assert body.stdout == b"y" * 100_000


def test_python_ssl_clients_against_the_embedded_server(tls_srv):
    ctx = ssl.create_default_context(cafile=tls_srv.cafile)
    conn = http.client.HTTPSConnection("localhost", tls_srv.port, context=ctx, timeout=5)
    for n in (10, 50000):
        conn.request("GET", f"/rnd?c={n}")
        assert len(conn.getresponse().read()) == n
    conn.close()


def test_static_files_over_tls_go_by_read_and_write(tmp_path):
    data = os.urandom(3_000_000)
    (tmp_path / "f.bin").write_bytes(data)
    for zero_copy in (True, False):
        with httpbench.Server(static_dir=tmp_path, zero_copy=zero_copy, tls=True) as srv, \
                httpbench.Connection("127.0.0.1", srv.port, tls=True, cafile=srv.cafile) as c:
            assert c.request("GET", "/static/f.bin").body == data
            assert c.request("HEAD", "/static/f.bin").header("Content-Length") == str(len(data))


def test_server_certificate_from_files(pki):
    with httpbench.Server(tls=True, certfile=pki["server"], keyfile=pki["server_key"]) as srv:
        assert srv.cafile == str(pki["server"])
        with httpbench.Connection("localhost", srv.port, tls=True, cafile=pki["ca"]) as c:
            assert c.request("GET", "/rnd?c=4").status == 200
    with pytest.raises(FileNotFoundError):
        httpbench.Server(tls=True, certfile="/no/such.pem")
    with pytest.raises(httpbench.TLSError, match="cannot load the key"):
        httpbench.Server(tls=True, certfile=pki["server"], keyfile=pki["client_key"])
    with pytest.raises(ValueError, match="tls=True"):
        httpbench.Server(certfile=pki["server"])


def test_the_self_signed_file_is_removed_at_close():
    srv = httpbench.Server(tls=True)
    path = srv.cafile
    text = open(path).read()
    assert text.startswith("-----BEGIN CERTIFICATE-----")
    out = subprocess.run(["openssl", "x509", "-noout", "-text"], input=text, capture_output=True,
                         text=True, env=tool_env())
    assert "prime256v1" in out.stdout and "DNS:localhost" in out.stdout
    assert "IP Address:127.0.0.1" in out.stdout
    srv.close()
    assert not os.path.exists(path) and not os.path.exists(os.path.dirname(path))
    srv.close()  # again: nothing left to do


# ------------------------------------------ bad input to the TLS server


def _closed(s: socket.socket) -> float:
    """Reads until the server closes or resets; the seconds it took."""
    s.settimeout(5)
    t0 = time.monotonic()
    try:
        while s.recv(4096):
            pass  # an alert may come first
    except ConnectionResetError:
        pass  # a deadline's close is a reset, so nothing unsent trickles on
    return time.monotonic() - t0


def test_a_stalled_handshake_is_cut_off_by_the_header_deadline():
    with httpbench.Server(tls=True, header_timeout=0.3, idle_timeout=30) as srv:
        hello = _client_hello()
        with socket.create_connection(("127.0.0.1", srv.port)) as s:
            s.sendall(hello[: len(hello) // 2])
            assert 0.25 < _closed(s) < 2.0
        assert srv.stats()["timeouts"] == 1
        with socket.create_connection(("127.0.0.1", srv.port)) as s:  # silent from the start
            assert 0.25 < _closed(s) < 2.0
        assert srv.stats()["timeouts"] == 2


@pytest.mark.parametrize("garbage", [b"\x00\x01\x02\x03", b"\x80\x2e\x01\x03\x01", b"\x16\x03"
                                     b"\x01\x00\x05hello" + b"\x00" * 10, b"\x15\x03\x03\x00\x02\x02\x28"])
def test_garbage_instead_of_a_client_hello_is_closed_at_once(garbage):
    with httpbench.Server(tls=True, header_timeout=10) as srv:
        with socket.create_connection(("127.0.0.1", srv.port)) as s:
            s.sendall(garbage)
            assert _closed(s) < 1.0
        with httpbench.Connection("127.0.0.1", srv.port, tls=True, cafile=srv.cafile) as c:
            assert c.request("GET", "/rnd?c=1").status == 200


def test_bad_requests_over_tls_get_the_same_answers(tls_server):
    ctx = ssl.create_default_context(cafile=tls_server.cafile)
    for request, status in ((b"GET / HTTP/1.1\r\nHost: x\r\nBad header\r\n\r\n", 400),
                            (b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", 404),
                            (b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n",
                             413)):
        with socket.create_connection(("127.0.0.1", tls_server.port)) as raw, \
                ctx.wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(request)
            s.settimeout(5)
            assert s.recv(100).startswith(b"HTTP/1.1 %d " % status)


def _client_hello() -> bytes:
    """A real ClientHello's bytes, as Python's ssl sends them."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ssl.create_default_context().wrap_bio(inc, out, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    return out.read()


# ---------------------------------------------- bad responses over TLS


@pytest.fixture(scope="module")
def tls_context(tmp_path_factory):
    from helpers import make_pki
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    return server_context(pki["server"], pki["server_key"]), pki["ca"]


@pytest.mark.parametrize("raw,how,why", INCOMPLETE, ids=[c[2] for c in INCOMPLETE])
def test_incomplete_responses_over_tls_as_over_tcp(scripted, tls_context, raw, how, why):
    ctx, ca = tls_context
    srv = scripted([("recv",), ("send", raw), ("sleep", 0.05), (how,)], [("recv",), ("send", OK)],
                   tls=ctx)
    with httpbench.Connection("127.0.0.1", srv.port, timeout=5, tls=True, cafile=ca) as conn:
        with pytest.raises(httpbench.IncompleteResponse, match=why):
            conn.request("GET", "/")
        assert conn.request("GET", "/").body == b"ok"


@pytest.mark.parametrize("raw,why", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "closed: got 3 of 10 body bytes"),
    (CHUNKED + b"5\r\nhello\r\n", "closed inside the chunked body, after 5 body bytes"),
    (b"", "closed before any response byte"),
])
def test_close_notify_mid_body_is_a_close(scripted, tls_context, raw, why):
    ctx, ca = tls_context
    srv = scripted([("recv",), ("send", raw), ("close_notify",)], tls=ctx)
    with httpbench.Connection("127.0.0.1", srv.port, timeout=5, tls=True, cafile=ca) as conn:
        with pytest.raises(httpbench.IncompleteResponse, match=why):
            conn.request("GET", "/")


def test_a_record_cut_short_is_a_close(scripted, tls_context):
    ctx, ca = tls_context
    body = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcdefghij"
    head = body.index(b"\r\n\r\n") + 4
    srv = scripted([("recv",), ("send", body[:head]), ("send_cut", body[head:], 12)], tls=ctx)
    with httpbench.Connection("127.0.0.1", srv.port, timeout=5, tls=True, cafile=ca) as conn:
        with pytest.raises(httpbench.IncompleteResponse, match="closed: got 0 of 10 body bytes"):
            conn.request("GET", "/")


def test_a_failed_handshake_left_its_request_unsent_a_refused_record_did_not(scripted, pki):
    """Both fail in the tls class; only the requests whose connection never
    opened were never sent (`counts["unopened"]`, which the h2load mode
    counts not started), whichever carrier, over HTTP/1.1 and HTTP/2."""
    ctx, ca = server_context(pki["server"], pki["server_key"]), pki["ca"]
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    junk = b"\x17\x03\x03\x00\x10" + bytes(16)  # an application record no key sealed
    for http2 in (False, True):
        first = [("recv",)] if not http2 else [("sleep", 0.2)]  # (h2: the preface is sent)
        srv = scripted(*[[*first, ("send_plain", junk)]] * 3, tls=ctx)
        r = httpbench.run(f"https://127.0.0.1:{srv.port}/", requests=3, cafile=ca, http2=http2,
                          progress=False)
        exact(r)
        assert r.failures["tls"] == r.failed == 3 and r.tls_full_handshakes == 3, r.failures
        assert r.counts["unopened"] == 0 and r.tls_failed_handshakes == 0, r.counts
        # The certificate is not trusted (with streams, a socket opens before
        # its ticket: the ticket it takes on failing is unopened too).
        r = httpbench.run(f"https://127.0.0.1:{srv.port}/", requests=4, concurrency=2,
                          http2=http2, streams=4 if http2 else 1, progress=False)
        exact(r)
        assert r.failures["tls"] == r.failed == r.counts["unopened"] == 4, (r.failures, r.counts)
        assert (r.tls_failed_handshakes, r.tls_full_handshakes) == (4, 0)
        assert "certificate verify failed" in r.first_error


def test_the_close_notify_ending_a_close_delimited_body_completes_it(scripted, tls_context):
    ctx, ca = tls_context
    srv = scripted([("recv",), ("send", b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall"),
                    ("close_notify",)], tls=ctx)
    with httpbench.Connection("127.0.0.1", srv.port, timeout=5, tls=True, cafile=ca) as conn:
        assert conn.request("GET", "/").body == b"all"


def test_malformed_response_over_tls(scripted, tls_context):
    ctx, ca = tls_context
    srv = scripted([("recv",), ("send", b"HTTP/1.1 2x0 OK\r\n\r\n")], tls=ctx)
    with httpbench.Connection("127.0.0.1", srv.port, timeout=5, tls=True, cafile=ca) as conn:
        with pytest.raises(httpbench.ProtocolError, match="invalid status code"):
            conn.request("GET", "/")


def test_a_server_that_never_finishes_the_handshake_times_out():
    with socket.create_server(("127.0.0.1", 0)) as lst:
        port = lst.getsockname()[1]
        with httpbench.Connection("127.0.0.1", port, timeout=0.4, tls=True) as conn:
            t0 = time.monotonic()
            with pytest.raises(httpbench.Timeout, match="connecting"):
                conn.request("GET", "/")
            assert 0.35 < time.monotonic() - t0 < 2.0


# ------------------------------------------------------------- the loop


def test_run_over_tls_counts_exactly(tls_server):
    r = httpbench.run(tls_server.url("/rnd?c=2048"), requests=3000, concurrency=8, threads=2,
                      cafile=tls_server.cafile, progress=False)
    assert r.complete == 3000 and r.failed == 0 and r.issued == 3000
    assert r.body_bytes == 3000 * 2048 and r.tls_full_handshakes == 8
    assert r.tls_resumed_handshakes == 0 and r.tls_handshake.count == 8
    assert r.tls_protocol.startswith("TLSv1.3,TLS_") and r.tls_temp_key
    assert r.connect_time.max >= r.tls_handshake.min  # the Connect row includes it
    report = r.report()
    assert "SSL/TLS Protocol:       TLSv1.3," in report and "Server Temp Key:" in report
    assert "TLS handshakes:         8 (8 full, 0 resumed)" in report and "Handshake:" in report
    assert tls_server.stats()["requests"] == 3000


def test_the_connect_and_handshake_rows_say_what_they_average_over(tls_server):
    """Connect is per request (a kept-alive request's is 0, a new one's
    includes the handshake), Handshake per handshake: the two means differ
    by design, and each row says over how many it is."""
    r = httpbench.run(tls_server.url("/rnd?c=10"), requests=1234, concurrency=2,
                      cafile=tls_server.cafile, progress=False)
    rows = {x.split(":")[0]: x for x in r.report().splitlines()
            if x.startswith(("Connect:", "Handshake:"))}
    assert rows["Connect"].endswith("(per request, n=1,234)"), rows
    assert rows["Handshake"].endswith("(per handshake, n=2)"), rows
    # The figures themselves: Connect's mean is the handshakes' spread over
    # every request.
    assert r.connect_time.count == 1234 and r.tls_handshake.count == 2
    assert r.connect_time.mean * 1234 >= r.tls_handshake.mean * 2 * 0.99
    # Without TLS the Connect row is ab's, bare.
    with httpbench.Server() as srv:
        plain = httpbench.run(srv.url("/rnd?c=10"), requests=3, progress=False).report()
    assert "(per request, n=" not in plain and "Handshake:" not in plain


def test_keepalive_off_resumes_sessions_unless_told_not_to(tls_srv):
    url = tls_srv.url("/rnd?c=100")
    r = httpbench.run(url, requests=400, concurrency=4, keepalive=False, cafile=tls_srv.cafile,
                      progress=False)
    assert r.complete == 400 and r.connects == 400
    assert r.tls_full_handshakes + r.tls_resumed_handshakes == 400
    assert r.tls_full_handshakes <= 8 and r.tls_resumed_handshakes >= 392
    assert r.tls_handshake.count == 400
    r = httpbench.run(url, requests=200, concurrency=4, keepalive=False, cafile=tls_srv.cafile,
                      tls_resume=False, progress=False)
    assert r.complete == 200 and r.tls_full_handshakes == 200 and r.tls_resumed_handshakes == 0


class _Handshakes:
    """A TLS server (Python's ssl) answering each connection's request
    with 200 and Connection: close, that notes each handshake's name (SNI)
    and whether it resumed. Of each five connections the third is served
    the certificate for wrong.example, and the fifth is closed before its
    handshake."""

    def __init__(self, pki: dict[str, Path]) -> None:
        self.reused: list[bool] = []  # each handshake's, before its answer
        self.names: list[str | None] = []
        self.good = server_context(pki["server"], pki["server_key"])
        self.wrong = server_context(pki["wrong"], pki["wrong_key"])
        for ctx in (self.good, self.wrong):
            ctx.sni_callback = lambda sock, name, ctx: self.names.append(name)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        for k in itertools.count():
            try:
                raw, _ = self.sock.accept()
            except OSError:
                return
            if k % 5 == 4:
                raw.close()
                continue
            try:
                ctx = self.wrong if k % 5 == 2 else self.good
                with ctx.wrap_socket(raw, server_side=True) as s:
                    got = b""
                    while b"\r\n\r\n" not in got:
                        part = s.recv(4096)
                        if not part:
                            break
                        got += part
                    self.reused.append(s.session_reused)
                    s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                              b"Connection: close\r\n\r\nok")
            except (OSError, ssl.SSLError):
                raw.close()


def test_each_connection_sends_the_name_checks_it_and_offers_the_newest_session(pki):
    """A client keeps its last connection's TLS state for the next (cleared
    rather than made again, as h2load keeps its SSL): every new connection
    still sends the name (SNI), checks the certificate against it, and
    offers the newest session only when resuming; one that failed leaves
    the next to start afresh. 20 connections one after another, 4 closed
    before their handshake and 4 shown the wrong name's certificate."""
    srv = _Handshakes(pki)
    try:
        url = f"https://localhost:{srv.port}/"
        r = httpbench.run(url, requests=20, keepalive=False, cafile=pki["ca"], tls_resume=False,
                          progress=False)
        assert r.complete == 12 and r.failures["tls"] == 8, r.first_error
        assert "hostname mismatch" in r.first_error or "closed" in r.first_error
        assert r.tls_full_handshakes == 12 and r.tls_resumed_handshakes == 0
        assert srv.names == ["localhost"] * 16  # each ClientHello that came
        assert srv.reused == [False] * 12
        # Resuming: the first in full, then each resumes its newest ticket,
        # but for those shown the wrong certificate (a session is for its
        # server's, and the name check fails on a full handshake).
        del srv.reused[:], srv.names[:]
        r = httpbench.run(url, requests=20, keepalive=False, cafile=pki["ca"], progress=False)
        assert r.complete == 12 and r.failures["tls"] == 8, r.first_error
        assert "hostname mismatch" in r.first_error
        assert srv.names == ["localhost"] * 16
        assert srv.reused == [False] + [True] * 11
        assert r.tls_full_handshakes == 1 and r.tls_resumed_handshakes == 11
    finally:
        srv.sock.close()


def test_handshake_failures_are_their_own_class(tls_srv):
    r = httpbench.run(tls_srv.url("/"), requests=50, concurrency=5, progress=False)
    assert r.failed == 50 and r.failures["tls"] == 50 and r.complete == 0
    exact(r)
    assert r.first_error == "certificate verify failed: self-signed certificate"
    assert "TLS: 50)" in r.report() and r.tls_failed_handshakes == 50
    assert "TLS handshakes:         0 (0 full, 0 resumed, 50 failed)" in r.report()
    assert "0 full, 0 resumed, 50 failed, mean" in r._repr_html_()
    with httpbench.Server() as plain:
        r = httpbench.run(plain.url("/").replace("http:", "https:"), requests=3, verify=False,
                          progress=False)
        assert r.failures["tls"] == 3 and "plain HTTP, not TLS" in r.first_error
        assert r.counts["unopened"] == 3  # (never sent: h2load's not started)


def test_a_duration_over_tls_ends_with_the_rule(tls_srv):
    r = httpbench.run(tls_srv.url("/delay?ms=20"), duration=1.0, concurrency=10,
                      keepalive=False, verify=False, progress=False)
    exact(r)
    assert r.failed == 0
    assert r.complete > 50


# OpenSSL reads ahead: one read() of the socket can take many records, and
# each SSL_read gives one. A loop that reads a connection a bounded number
# of times a wake-up must come back for what OpenSSL holds, since the
# socket, empty, raises no event for it.
PIECES = 40  # records in one burst, past the loop's reads a wake-up


def _burst_h1(ctx: ssl.SSLContext, scripted, stack: contextlib.ExitStack) -> str:
    body = [bytes([65 + i % 26]) * 5 for i in range(PIECES)]
    head = f"HTTP/1.1 200 OK\r\nContent-Length: {5 * PIECES}\r\n\r\n".encode()
    script = [("recv",), ("send_records", [head, *body])] * 4  # however the 4 fall to the 2
    srv = scripted(script, script, tls=ctx)
    return f"https://127.0.0.1:{srv.port}/"


def _burst_h2(ctx: ssl.SSLContext, scripted, stack: contextlib.ExitStack) -> str:
    import hpack
    from h2peer import H2Server, frame

    def answer(sid: int) -> bytes:
        head = hpack.Encoder().encode([(":status", "200"), ("content-length", str(5 * PIECES))])
        data = [frame(0, 1 if i == PIECES - 1 else 0, sid, b"x" * 5) for i in range(PIECES)]
        return frame(1, 0x4, sid, head) + b"".join(data)
    srv = stack.enter_context(H2Server("answer", answer=answer, context=ctx, records=True))
    return srv.url + "/"


@pytest.mark.parametrize("burst", [_burst_h1, _burst_h2], ids=["http1", "http2"])
def test_records_read_ahead_are_read_though_the_socket_is_empty(scripted, pki, burst):
    ctx = server_context(pki["server"], pki["server_key"])
    with contextlib.ExitStack() as stack:
        url = burst(ctx, scripted, stack)
        t0 = time.monotonic()
        r = httpbench.run(url, requests=4, concurrency=2, timeout=3, cafile=pki["ca"],
                          http2=burst is _burst_h2, progress=False)
    assert r.complete == 4 and r.failed == 0, r.first_error
    assert r.body_bytes == 4 * 5 * PIECES
    assert time.monotonic() - t0 < 2.5  # none waited for the timeout


def test_the_lone_connection_over_tls(tls_srv):
    # One connection in closed loop waits in a blocking read: over TLS too.
    r = httpbench.run(tls_srv.url("/rnd?c=30000"), requests=500, verify=False, progress=False)
    assert r.complete == 500 and r.body_bytes == 500 * 30000 and r.tls_full_handshakes == 1


def test_tls_arguments_are_checked(tls_srv, tmp_path):
    url = tls_srv.url("/")
    for kw, match in ((dict(tls_min="1.1"), "tls_min must be '1.2' or '1.3'"),
                      (dict(tls_max="SSLv3"), "tls_max must be"),
                      (dict(tls_min="1.3", tls_max="1.2"), "tls_min '1.3' is above tls_max"),
                      (dict(ciphers=""), "ciphers must be a non-empty str"),
                      (dict(server_hostname="a\0b"), "server_hostname must be")):
        with pytest.raises(ValueError, match=match):
            httpbench.run(url, requests=1, progress=False, **kw)
    with pytest.raises(FileNotFoundError, match="cafile: no such file"):
        httpbench.run(url, requests=1, cafile=tmp_path / "none.pem", progress=False)
    with pytest.raises(httpbench.TLSError, match="no cipher in the list"):
        httpbench.run(url, requests=1, ciphers="NOT-A-CIPHER", progress=False)
    with pytest.raises(ValueError, match="cafile is for https:// URLs"):
        httpbench.run("http://127.0.0.1:1/", requests=1, cafile=tls_srv.cafile, progress=False)
    with pytest.raises(ValueError, match="for TLS: pass tls=True"):
        httpbench.Connection("127.0.0.1", 1, cafile=tls_srv.cafile)
    with pytest.raises(FileNotFoundError):
        httpbench.Connection("127.0.0.1", 1, tls=True, cafile=tmp_path / "none.pem")
    with pytest.raises(ValueError, match="tls_min must be from"):
        _core._TLS(tls_min=0x0302)


@pytest.mark.timing
def test_ten_thousand_handshakes_leave_rss_flat(tls_srv):
    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    url = tls_srv.url("/rnd?c=100")
    httpbench.run(url, requests=2000, concurrency=4, keepalive=False, verify=False,
                  tls_resume=False, progress=False)
    before = rss()
    r = httpbench.run(url, requests=10_000, concurrency=4, keepalive=False, verify=False,
                      tls_resume=False, progress=False)
    assert r.complete == 10_000 and r.tls_full_handshakes == 10_000
    assert rss() - before < 4 << 20


# --------------------------------------------------- nginx with ssl


@pytest.fixture
def nginx_tls(pki):
    def start(cert: str = "server", extra: str = ""):
        return nginx(tls=f"ssl_certificate {pki[cert]}; ssl_certificate_key {pki[cert + '_key']};"
                         f" ssl_protocols TLSv1.2 TLSv1.3; {extra}")
    return start


@pytest.mark.parametrize("version", ["1.2", "1.3"])
def test_nginx_tls_versions(nginx_tls, pki, version):
    with nginx_tls() as peer:
        if peer is None:
            pytest.skip("nginx is not installed")
        port, _ = peer
        r = httpbench.run(f"https://localhost:{port}/rnd", requests=500, concurrency=4,
                          cafile=pki["ca"], tls_min=version, tls_max=version, progress=False)
        assert r.complete == 500 and r.failed == 0 and r.body_bytes == 500 * 2048
        assert r.tls_protocol.startswith(f"TLSv{version},")
        assert r.tls_server_name == "localhost" and r.server_software.startswith("nginx")
        with httpbench.Connection("localhost", port, tls=True, cafile=pki["ca"]) as c:
            assert len(c.request("GET", "/rnd").body) == 2048


@pytest.mark.parametrize("cert,host,why", [
    ("server", "localhost", None),
    ("server", "127.0.0.1", None),
    ("expired", "localhost", "certificate has expired"),
    ("wrong", "localhost", "hostname mismatch"),
])
def test_nginx_verification(nginx_tls, pki, cert, host, why):
    with nginx_tls(cert) as peer:
        if peer is None:
            pytest.skip("nginx is not installed")
        port, _ = peer
        with httpbench.Connection(host, port, tls=True, cafile=pki["ca"]) as conn:
            if why is None:
                assert conn.request("GET", "/rnd").status == 200
            else:
                with pytest.raises(httpbench.TLSError, match=f"certificate verify failed: {why}"):
                    conn.request("GET", "/rnd")
        # The system's CAs do not know the test CA.
        with httpbench.Connection(host, port, tls=True) as conn:
            with pytest.raises(httpbench.TLSError,
                               match="certificate verify failed: unable to get local issuer"):
                conn.request("GET", "/rnd")
        with httpbench.Connection(host, port, tls=True, verify=False) as conn:
            assert conn.request("GET", "/rnd").status == 200


def test_nginx_requires_a_client_certificate(nginx_tls, pki):
    extra = f"ssl_client_certificate {pki['ca']}; ssl_verify_client on;"
    with nginx_tls(extra=extra) as peer:
        if peer is None:
            pytest.skip("nginx is not installed")
        port, _ = peer
        url = f"https://localhost:{port}/rnd"
        with httpbench.Connection("localhost", port, tls=True, cafile=pki["ca"]) as conn:
            assert conn.request("GET", "/rnd").status == 400  # nginx: no certificate sent
        with httpbench.Connection("localhost", port, tls=True, cafile=pki["ca"],
                                  certfile=pki["client"], keyfile=pki["client_key"]) as conn:
            assert conn.request("GET", "/rnd").status == 200
        r = httpbench.run(url, requests=100, concurrency=2, cafile=pki["ca"],
                          certfile=pki["client"], keyfile=pki["client_key"], progress=False)
        assert r.complete == 100 and r.non_2xx == 0


def test_nginx_ciphers_and_suites(nginx_tls, pki):
    with nginx_tls() as peer:
        if peer is None:
            pytest.skip("nginx is not installed")
        port, _ = peer
        url = f"https://localhost:{port}/rnd"
        # By default browsers' order, AES-128 first (OpenSSL's own puts
        # AES-256 first); nginx takes the client's.
        r = httpbench.run(url, requests=10, cafile=pki["ca"], progress=False)
        assert r.tls_protocol == "TLSv1.3,TLS_AES_128_GCM_SHA256,256,128"  # as ab: key bits, then the cipher's
        r = httpbench.run(url, requests=10, cafile=pki["ca"], tls_max="1.2",
                          ciphers="ECDHE-ECDSA-CHACHA20-POLY1305", progress=False)
        assert r.tls_protocol.startswith("TLSv1.2,ECDHE-ECDSA-CHACHA20-POLY1305,256,256")
        r = httpbench.run(url, requests=10, cafile=pki["ca"],
                          ciphersuites="TLS_CHACHA20_POLY1305_SHA256", progress=False)
        assert r.tls_protocol.startswith("TLSv1.3,TLS_CHACHA20_POLY1305_SHA256,")
        # No cipher both take: the handshake fails, in its class, with the reason.
        r = httpbench.run(url, requests=4, cafile=pki["ca"], tls_max="1.2",
                          ciphers="ECDHE-RSA-AES128-GCM-SHA256", progress=False)
        assert r.failures["tls"] == 4 and "handshake failure" in r.first_error


@pytest.mark.skipif(not os.path.exists("/usr/bin/ab"), reason="ab is not installed")
def test_byte_counts_equal_abs_over_tls(nginx_tls, pki):
    with nginx_tls() as peer:
        if peer is None:
            pytest.skip("nginx is not installed")
        port, _ = peer
        url = f"https://localhost:{port}/rnd"
        out = subprocess.run(["/usr/bin/ab", "-q", "-k", "-n", "300", "-c", "3", url],
                             capture_output=True, text=True, env=tool_env(), timeout=60)
        assert out.returncode == 0, out.stderr
        total = int(re.search(r"Total transferred:\s+(\d+)", out.stdout).group(1))
        html = int(re.search(r"HTML transferred:\s+(\d+)", out.stdout).group(1))
        ab_proto = re.search(r"SSL/TLS Protocol:\s+(\S+)", out.stdout).group(1)
        r = httpbench.run(url, requests=300, concurrency=3, verify=False, progress=False)
        # Bytes as ab counts them over TLS too: what the records carried.
        assert (r.bytes_received, r.body_bytes) == (total, html)
        # ab takes OpenSSL's order of suites (AES-256 first); offered the
        # same, httpbench states the same line as ab does.
        assert ab_proto == "TLSv1.3,TLS_AES_256_GCM_SHA384,256,256"
        r = httpbench.run(url, requests=3, verify=False, ciphersuites="TLS_AES_256_GCM_SHA384",
                          progress=False)
        assert r.tls_protocol == ab_proto


# ---------------------------------------- Python's ssl-wrapped http.server


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b"p" * 1234
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_against_pythons_ssl_http_server(pki):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.socket = server_context(pki["server"], pki["server_key"]).wrap_socket(
        srv.socket, server_side=True)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        port = srv.server_address[1]
        with httpbench.Connection("localhost", port, tls=True, cafile=pki["ca"]) as conn:
            for _ in range(3):
                assert conn.request("GET", "/").body == b"p" * 1234
            assert conn.connects == 1
        r = httpbench.run(f"https://localhost:{port}/", requests=300, concurrency=3,
                          cafile=pki["ca"], progress=False)
        assert r.complete == 300 and r.body_bytes == 300 * 1234 and r.tls_full_handshakes == 3
    finally:
        srv.shutdown()
        srv.server_close()


# ------------------------------------------------- the command line


def test_command_line_over_tls(tls_srv, tmp_path):
    out = hb("-n", "200", "-c", "2", "-q", "--cacert", tls_srv.cafile, tls_srv.url("/rnd?c=10"))
    assert out.returncode == 0, out.stderr
    assert "SSL/TLS Protocol:       TLSv1.3," in out.stdout and "Complete requests:      200" in out.stdout
    out = hb("-n", "20", "-q", "-f", "TLS1.2", "--insecure", "--json", "-", tls_srv.url("/"))
    assert out.returncode == 0 and json.loads(out.stdout)["tls_protocol"].startswith("TLSv1.2,")
    out = hb("-n", "20", "-q", tls_srv.url("/"))  # not verified: failures, not a crash
    assert out.returncode == 1 and "Failed requests:        20" in out.stdout
    # (Nothing completed: the reason is the report's first line.)
    assert out.stdout.startswith("Nothing completed: all 20 requests failed (tls): "
                                 "certificate verify failed: self-signed certificate.")
    out = hb("-n", "20", "-q", "-Z", "NOT-A-CIPHER", "--insecure", tls_srv.url("/"))
    assert out.returncode == 2 and "no cipher in the list" in out.stderr
    out = hb("-n", "20", "-q", "-f", "SSL3", tls_srv.url("/"))
    assert out.returncode == 2 and "-f takes TLS1.2, TLS1.3 or ALL" in out.stderr
    out = hb("-n", "20", "-q", "--cacert", tls_srv.cafile, "http://127.0.0.1:1/")
    assert out.returncode == 2 and "--cacert: for https:// URLs" in out.stderr
    out = hb("-n", "20", "-q", "--cacert", str(tmp_path / "none.pem"), tls_srv.url("/"))
    assert out.returncode == 2 and "no such file" in out.stderr
    out = hb("-n", "40", "-q", "--no-keepalive", "--no-tls-resume", "--insecure",
             tls_srv.url("/"))
    assert out.returncode == 0 and "TLS handshakes:         40 (40 full, 0 resumed)" in out.stdout


def test_serve_tls_for_curl(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "httpbench", "serve", "--tls", "--port", "0"],
                            stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        banner = proc.stdout.readline()
        url = re.search(r"serving (https://\S+)", banner).group(1)
        cafile = re.search(r"--cacert (\S+)", proc.stdout.readline()).group(1)
        out = subprocess.run([CURL, "-s", "--cacert", cafile, url + "rnd?c=77"],
                             capture_output=True, env=tool_env(), timeout=10)
        assert out.returncode == 0 and len(out.stdout) == 77
    finally:
        proc.terminate()
        proc.wait(10)
    assert not os.path.exists(cafile)
    out = hb("serve", "--cert", "x.pem")
    assert out.returncode == 2 and "--cert and --key are for --tls" in out.stderr


# ------------------------------------------------------- the comparison


def test_compare_over_tls_gives_every_agent_the_certificate():
    cmp = httpbench.compare(tls=True, requests=60, duration=2)
    assert cmp.results, cmp.notes
    for (agent, scenario), r in cmp.results.items():
        assert r.failed == 0 and r.complete > 0, (agent, scenario, r.first_error)
        assert r.connects == 1, (agent, scenario)


def test_every_agent_classes_a_failed_verification_as_tls(tls_srv):
    cmp = httpbench.compare(tls_srv.url("/rnd?c=10"), scenarios=["get"], requests=3,
                            duration=2)
    for (agent, _), r in cmp.results.items():
        assert r.failures["tls"] == r.failed == 3, (agent, r.failures, r.first_error)
    cmp = httpbench.compare(tls_srv.url("/rnd?c=10"), scenarios=["get"], requests=20,
                            duration=60, verify=False)  # (a bound on a hang: all 20 are due)
    assert all(r.failed == 0 and r.complete == 20 for r in cmp.results.values())


def test_compare_command_with_tls():
    out = hb("compare", "--tls", "-n", "50", "--agents", "httpbench,http.client", "-q")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("\nhttpbench ") == 2 and out.stdout.count("\nhttp.client ") == 2

"""HTTP/2 in the client and the loop, against peers no one here wrote:
nginx with http2 (h2 over TLS, h2c by prior knowledge), nghttpd, and the
`h2` package scripted to misbehave (tests/h2peer.py). Every run's counts
are exact (helpers.exact)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from h2peer import H2Server
from helpers import exact, free_port, nginx, tool_env, wait_for_port

import httpbench

NGHTTPD = shutil.which("nghttpd")


@pytest.fixture(scope="module")
def nghttpd() -> Iterator[str]:
    """nghttpd (Debian's nghttp2-server) serving /rnd (2048 bytes) over
    h2c; yields its URL."""
    if NGHTTPD is None:
        pytest.skip("nghttpd: apt-get install nghttp2-server")
    with tempfile.TemporaryDirectory() as www:
        Path(www, "rnd").write_bytes(os.urandom(2048))
        port = free_port()
        proc = subprocess.Popen([NGHTTPD, "--no-tls", "-d", www, str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=tool_env())
        try:
            wait_for_port(port, proc)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(10)


@pytest.fixture(scope="module")
def nginx_h2(pki: dict[str, Path]) -> Iterator[dict[str, str]]:
    """nginx with http2 on a TLS port and, in a server block of its own
    (nginx's h2c port refuses HTTP/1.1), on a plain port."""
    plain = free_port()
    tls = f"ssl_certificate {pki['server']}; ssl_certificate_key {pki['server_key']};"
    with nginx(tls=tls, http2=True, h2c_port=plain) as got:
        if got is None:
            pytest.skip("nginx: apt-get install nginx-light")
        yield {"h2": f"https://127.0.0.1:{got[0]}", "h2c": f"http://127.0.0.1:{plain}",
               "ca": str(pki["ca"])}


# ---- Connection

def test_connection_speaks_h2c_by_prior_knowledge(nghttpd: str) -> None:
    c = httpbench.Connection.from_url(nghttpd, http2=True)
    assert c.http2
    for _ in range(3):
        r = c.request("GET", "/rnd")
        assert r.status == 200 and r.version == "HTTP/2" and len(r.body) == 2048
        assert r.header("server").startswith("nghttpd")
    assert c.connects == 1 and c.requests == 3
    missing = c.request("GET", "/nothere")
    assert missing.status == 404
    posted = c.request("POST", "/rnd", body=b"x" * 5000)
    assert posted.status == 200 and c.connects == 1


def test_connection_speaks_h2_by_alpn_and_h2c_to_nginx(nginx_h2: dict[str, str]) -> None:
    c = httpbench.Connection.from_url(nginx_h2["h2"], http2=True, cafile=nginx_h2["ca"])
    r = c.request("GET", "/rnd")
    assert r.status == 200 and r.version == "HTTP/2" and len(r.body) == 2048
    assert c.tls_info is not None
    c2 = httpbench.Connection.from_url(nginx_h2["h2c"], http2=True)
    r2 = c2.request("GET", "/rnd")
    assert r2.status == 200 and r2.version == "HTTP/2" and r2.body == r.body


def test_a_server_that_will_not_speak_h2_is_named_at_once() -> None:
    """An HTTP/1.1 answer to the preface, and ALPN choosing http/1.1: a
    ProtocolError in their own words, in well under a second."""
    with httpbench.Server(http2=False) as srv:
        c = httpbench.Connection("127.0.0.1", srv.port, http2=True, timeout=30)
        t = time.monotonic()
        with pytest.raises(httpbench.ProtocolError, match="preface in HTTP/1"):
            c.request("GET", "/rnd?c=10")
        assert time.monotonic() - t < 1
    with httpbench.Server(tls=True, http2=False) as srv:
        c = httpbench.Connection("127.0.0.1", srv.port, http2=True, tls=True, verify=False)
        with pytest.raises(httpbench.ProtocolError, match="ALPN chose"):
            c.request("GET", "/rnd?c=10")


@pytest.mark.parametrize("mode, kwargs, exc, words", [
    ("reset", {"every": 1, "code": 2}, httpbench.StreamReset, "RST_STREAM INTERNAL_ERROR"),
    ("badhpack", {}, httpbench.ProtocolError, "COMPRESSION_ERROR"),
    ("bigheaders", {"fields": 150}, httpbench.ProtocolError, "header list is over the limit"),
    ("bigheaders", {"value_len": 70000}, httpbench.ProtocolError, "header list is over"),
    ("nosettings", {}, httpbench.ProtocolError, "expected SETTINGS"),
    ("http1", {}, httpbench.ProtocolError, "preface in HTTP/1"),
    ("midframe", {}, httpbench.IncompleteResponse, "before the HTTP/2 stream ended"),
    ("zero", {}, httpbench.Timeout, "waiting for the server to allow a stream"),
    ("silent", {}, httpbench.Timeout, "timed out"),
])
def test_hostile_servers_raise_the_named_exception(mode: str, kwargs: dict, exc: type,
                                                   words: str) -> None:
    with H2Server(mode, **kwargs) as s:
        # (A peer in pure Python: 30 s, not 1, where an answer is due; the
        # 70 KB head goes without Huffman coding, which alone took 0.64 s.)
        c = httpbench.Connection("127.0.0.1", s.port, http2=True,
                                 timeout=1 if exc is httpbench.Timeout else 30)
        with pytest.raises(exc, match=words) as got:
            c.request("GET", "/x")
        if exc is httpbench.StreamReset:
            assert got.value.error_code == 2


def test_a_reset_stream_leaves_the_connection_open() -> None:
    with H2Server("reset", every=2, code=8) as s:
        c = httpbench.Connection("127.0.0.1", s.port, http2=True)
        assert c.request("GET", "/1").status == 200
        with pytest.raises(httpbench.StreamReset) as got:
            c.request("GET", "/2")
        assert got.value.error_code == 8
        assert c.request("GET", "/3").status == 200
        assert c.connects == 1


def test_refused_and_unsent_streams_are_sent_again() -> None:
    with H2Server("refuse", every=2) as s:
        c = httpbench.Connection("127.0.0.1", s.port, http2=True)
        assert [c.request("GET", "/").status for _ in range(4)] == [200] * 4
        assert c.connects == 1 and c.retries == 3  # streams 2, 4 and 6 refused
    with H2Server("goaway", every=2) as s:
        c = httpbench.Connection("127.0.0.1", s.port, http2=True)
        assert [c.request("GET", "/").status for _ in range(5)] == [200] * 5
        assert c.connects == 3


def test_a_window_never_granted_times_out_a_body() -> None:
    """The server's window stays 0 after its SETTINGS: a body cannot go, the
    request times out; a GET on the same connection still answers."""
    with H2Server("nowindow") as s:
        c = httpbench.Connection("127.0.0.1", s.port, http2=True, timeout=0.5)
        assert c.request("GET", "/").status == 200
        with pytest.raises(httpbench.Timeout):
            c.request("POST", "/", body=b"y" * 100)


def test_http2_with_a_proxy_goes_through_connect(nghttpd: str) -> None:
    from helpers import tinyproxy
    with tinyproxy() as proxy:
        if proxy is None:
            pytest.skip("tinyproxy: apt-get install tinyproxy")
        port = int(nghttpd.rsplit(":", 1)[1])
        proxy = f"127.0.0.1:{proxy}"
        c = httpbench.Connection("127.0.0.1", port, http2=True, proxy=proxy)
        assert c.request("GET", "/rnd").status == 200
        r = httpbench.run(nghttpd + "/rnd", requests=200, concurrency=2, http2=True, streams=4,
                          proxy=proxy, progress=False)
        exact(r)
        assert r.complete == 200, r.first_error


# ---- the loop

@pytest.mark.parametrize("concurrency, streams", [(1, 1), (3, 10), (2, 100)])
def test_run_over_h2c_is_exact_and_uses_its_streams(nghttpd: str, concurrency: int,
                                                    streams: int) -> None:
    r = httpbench.run(nghttpd + "/rnd", requests=3000, concurrency=concurrency, http2=True,
                      streams=streams, progress=False)
    exact(r)
    assert r.complete == 3000 and r.failed == 0, r.first_error
    assert r.http_version == "2" and r.streams == streams
    assert r.streams_allowed == 100  # nghttpd's SETTINGS_MAX_CONCURRENT_STREAMS
    assert r.streams_max_used == min(streams, 100)
    assert r.connects == concurrency
    assert r.body_bytes == 3000 * 2048 and r.document_length == 2048
    assert r.header_bytes_decoded > r.header_bytes_wire > 0
    assert r.bytes_received > r.body_bytes
    assert r.server_software.startswith("nghttpd")
    text = r.report()
    assert "Protocol:               h2c" in text and "space savings" in text


def test_run_over_h2_to_nginx_and_the_json_says_so(nginx_h2: dict[str, str]) -> None:
    r = httpbench.run(nginx_h2["h2"] + "/rnd", requests=2000, concurrency=4, http2=True,
                      streams=8, cafile=nginx_h2["ca"], progress=False)
    exact(r)
    assert r.complete == 2000, r.first_error
    assert r.tls_protocol and "h2 (TLS ALPN)" in r.report()
    assert r.streams_allowed == 128  # nginx's http2_max_concurrent_streams
    d = r.to_dict()
    assert d["schema"] == httpbench.result.SCHEMA and d["http_version"] == "2"
    assert d["streams"] == 8
    back = httpbench.Result.from_dict(d)
    assert back.streams_allowed == 128 and back.http_version == "2"
    r2 = httpbench.run(nginx_h2["h2c"] + "/rnd", requests=500, concurrency=2, http2=True,
                       streams=4, progress=False)
    exact(r2)
    assert r2.complete == 500, r2.first_error


def test_open_loop_over_streams_counts_from_intended_starts(nghttpd: str) -> None:
    r = httpbench.run(nghttpd + "/rnd", requests=1000, concurrency=2, http2=True, streams=10,
                      rate=2000, progress=False)
    exact(r)
    assert r.complete == 1000
    assert 0.45 < r.time_taken < 1.0
    assert r.latency.count == r.latency_uncorrected.count == 1000
    assert r.latency.p50 >= r.latency_uncorrected.p50
    assert "corrected" in r.report()


def test_a_request_due_while_every_stream_is_busy_waits_and_its_wait_counts() -> None:
    """One stream on one connection, a rate above what it can carry: the
    corrected latency grows with the backlog, the uncorrected does not."""
    with H2Server("ok", streams=1) as s:
        r = httpbench.run(s.url + "/", requests=300, concurrency=1, http2=True, streams=4,
                          rate=20000, progress=False)
    exact(r)
    assert r.complete == 300
    assert r.streams_allowed == 1 and r.streams_max_used == 1
    assert r.latency.p99 > 5 * r.latency_uncorrected.p50


def test_resets_refusals_and_goaway_are_counted_exactly() -> None:
    with H2Server("reset", every=3, code=2) as s:
        r = httpbench.run(s.url + "/", requests=300, concurrency=2, http2=True, streams=5,
                          progress=False)
    exact(r)
    assert r.failures["reset"] == r.failed > 0 and r.reset_codes == {"INTERNAL_ERROR": r.failed}
    assert r.complete + r.failures["reset"] == 300
    assert "RST_STREAM by code: INTERNAL_ERROR" in r.report()
    with H2Server("refuse", every=4) as s:
        r = httpbench.run(s.url + "/", requests=300, concurrency=2, http2=True, streams=5,
                          progress=False)
    exact(r)
    assert r.complete == 300 and r.refused > 0 and r.failed == 0
    with H2Server("goaway", every=7) as s:
        r = httpbench.run(s.url + "/", requests=300, concurrency=2, http2=True, streams=5,
                          progress=False)
    exact(r)
    assert r.complete == 300 and r.failed == 0, r.first_error
    assert r.reconnects > 0 and r.connects == s.accepted


def test_more_streams_than_a_connection_is_allowed_lose_no_request() -> None:
    """A server that processes seven streams a connection and then ends it
    (GOAWAY with the seventh's id), under twenty streams a connection: each
    GOAWAY leaves thirteen unprocessed, and they go again, first, on the
    next connection, as often as it takes: none fails (the three tries are
    for connections that processed nothing), and each connection serves its
    seven. Before, the stream in the last slot was sent last on each
    connection, left unprocessed three times and failed as reset."""
    with H2Server("goaway", every=7) as s:
        r = httpbench.run(s.url + "/", requests=700, concurrency=2, http2=True, streams=20,
                          progress=False)
    exact(r)
    assert r.complete == 700 and r.failed == 0, r.first_error
    assert r.connects == s.accepted and 100 <= r.connects <= 104, r.connects
    assert r.counts["retries"] > 0


def test_nginxs_keepalive_requests_under_more_streams_lose_no_request(tmp_path: Path) -> None:
    """nginx ends an HTTP/2 connection after keepalive_requests (10 here)
    streams, GOAWAY NO_ERROR, the streams above it unprocessed: a run with
    a hundred streams a connection completes every request, ten a
    connection, where h2load, which does not connect again, fails all but
    the first connection's ten."""
    with nginx(keepalive_requests=10, http2=True) as peer:
        if peer is None:
            pytest.skip("nginx: apt-get install nginx-light")
        port, _ = peer
        for c, m in ((1, 11), (1, 100), (4, 100)):
            r = httpbench.run(f"http://127.0.0.1:{port}/rnd", requests=1000, concurrency=c,
                              http2=True, streams=m, progress=False)
            exact(r)
            assert r.complete == 1000 and r.failed == 0, ((c, m), r.first_error)
            assert 100 <= r.connects <= 100 + c, ((c, m), r.connects)


@pytest.mark.parametrize("mode, kwargs, cls", [
    ("badhpack", {}, "exceptions"),
    ("bigheaders", {"fields": 150}, "exceptions"),
    ("nosettings", {}, "exceptions"),
    ("http1", {}, "exceptions"),
    ("midframe", {}, "receive"),
    ("zero", {}, "timeout"),
    ("silent", {}, "timeout"),
])
def test_hostile_servers_fail_a_run_in_the_right_class(mode: str, kwargs: dict, cls: str) -> None:
    with H2Server(mode, **kwargs) as s:
        t = time.monotonic()
        r = httpbench.run(s.url + "/", requests=20, concurrency=2, http2=True, streams=3,
                          timeout=0.5, progress=False)
    exact(r)
    assert r.failures[cls] == r.failed == 20, (r.failures, r.first_error)
    assert time.monotonic() - t < 15


def test_a_connection_the_server_is_slow_to_take_up_holds_no_ticket() -> None:
    """Issue 42: with many streams a connection takes a ticket only once the
    server's SETTINGS have come. The first connection's come 5 s late; the
    other three run the 300 requests, and the run ends without waiting for
    the late one (before, it took a ticket as it opened and held the run's
    tail for the 5 s, completing one request). The late socket held no
    ticket, so nothing of it is counted: no request lost, none failed."""
    with H2Server("slowfirst", delay=5.0) as s:
        t = time.monotonic()
        r = httpbench.run(s.url + "/", requests=300, concurrency=4, http2=True, streams=10,
                          threads=1, progress=False)
        took = time.monotonic() - t
    exact(r)
    assert r.complete == r.issued == 300 and r.failed == 0, r.first_error
    assert took < 4 and r.time_taken < 4, (took, r.time_taken)
    assert r.connects == 4


def test_a_first_request_counts_its_connect_and_the_wait_for_settings() -> None:
    """Its latency, ab's way, still runs from when its connection began:
    one connection whose SETTINGS come 0.3 s late makes one request whose
    total (and connect) time holds those 0.3 s."""
    with H2Server("slowfirst", delay=0.3) as s:
        r = httpbench.run(s.url + "/", requests=1, concurrency=1, http2=True, streams=10,
                          progress=False)
    exact(r)
    assert r.complete == 1
    assert 0.3 <= r.latency.max < 3 and r.connect_time.max >= 0.3, (r.latency, r.connect_time)


def test_a_never_granted_window_times_out_the_bodies_only() -> None:
    scenario = httpbench.Scenario([httpbench.Request("GET", "/", name="get"),
                                   httpbench.Request("POST", "/", body=b"y" * 10, name="post")],
                                  order="sequence")
    with H2Server("nowindow") as s:
        r = httpbench.run(s.url, requests=20, concurrency=1, http2=True, scenario=scenario,
                          timeout=0.3, progress=False)
    exact(r)
    assert r.by_name["get"].complete == 10
    assert r.by_name["post"].failures["timeout"] == 10


def test_keepalive_off_is_one_stream_per_connection(nghttpd: str) -> None:
    r = httpbench.run(nghttpd + "/rnd", requests=50, concurrency=2, http2=True, keepalive=False,
                      progress=False)
    exact(r)
    assert r.complete == 50 and r.connects == 50


def test_http2_combinations_refused_by_name() -> None:
    with pytest.raises(ValueError, match="pipeline with http2"):
        httpbench.run("http://127.0.0.1:1/", http2=True, pipeline=2)
    with pytest.raises(ValueError, match="streams is HTTP/2's"):
        httpbench.run("http://127.0.0.1:1/", streams=4)
    with pytest.raises(ValueError, match="window is HTTP/2's"):
        httpbench.run("http://127.0.0.1:1/", window=1000)
    for bad in (0, -1, 10**6, 1.5, float("nan"), True):
        with pytest.raises(ValueError, match="streams"):
            httpbench.run("http://127.0.0.1:1/", http2=True, streams=bad)
    for bad in (0, 2**31, -5, float("inf")):
        with pytest.raises(ValueError, match="window"):
            httpbench.run("http://127.0.0.1:1/", http2=True, window=bad)


def test_the_command_line_takes_curls_and_h2loads_words(nghttpd: str) -> None:
    from helpers import hb
    out = hb("-n", "500", "-c", "2", "--http2", "--streams", "5", "-q", nghttpd + "/rnd",
             cwd=tempfile.gettempdir())
    assert out.returncode == 0, out.stderr
    assert "Protocol:               h2c" in out.stdout
    assert "Complete requests:      500" in out.stdout
    assert "5 per connection asked, 100 allowed" in out.stdout
    bad = hb("-n", "5", "--streams", "5", nghttpd + "/rnd", cwd=tempfile.gettempdir())
    assert bad.returncode == 2 and "--streams is HTTP/2's" in bad.stderr


def test_compare_over_http2_runs_the_clients_that_speak_it() -> None:
    """httpx (through the h2 package) and pycurl speak HTTP/2 on the
    embedded server beside the C core, each counted exactly; the others
    are left out with a note; pycurl speaks HTTP/1.1 unless asked."""
    cmp = httpbench.compare(requests=300, http2=True, scenarios=("get", "post"))
    ran = {name for name, _ in cmp.results}
    assert "httpbench" in ran
    for name in ("http.client", "urllib3", "requests", "aiohttp"):
        assert any(f"{name} does not speak HTTP/2" in n for n in cmp.notes), cmp.notes
    for (name, scenario), r in cmp.results.items():
        exact(r)
        assert r.complete == 300 and r.failed == 0, (name, scenario, r.first_error)
        assert r.http_version == "2", name
    if "pycurl" in httpbench.available_agents():
        assert "pycurl" in ran
        with httpbench.Server() as srv:
            one = httpbench.compare(srv.url("/rnd?c=100"), ["pycurl"], ("get",), requests=50)
            assert one.results["pycurl", "get"].http_version == "1.1"
            assert srv.stats()["h2_connections"] == 0


def test_every_other_feature_runs_over_http2(tmp_path: Path) -> None:
    """Scenarios with checks and by_name, a warmup, a Unix socket, a shape
    of connections, capacity(): over HTTP/2 on the embedded server, exact."""
    with httpbench.Server() as srv:
        scenario = httpbench.Scenario([
            httpbench.Request("GET", "/rnd?c=100", name="small", expect_status=200,
                              expect_length=100, weight=3),
            httpbench.Request("POST", "/echo", body=b"abc", name="echo", expect_body=b"abc"),
        ], seed=7)
        r = httpbench.run(srv.url(), requests=2000, concurrency=3, http2=True, streams=8,
                          scenario=scenario, warmup=100, progress=False)
        exact(r)
        assert r.complete == 2000 and r.failed == 0, r.first_error
        assert r.by_name["small"].complete + r.by_name["echo"].complete == 2000
        shaped = httpbench.run(srv.url("/rnd?c=10"), http2=True, streams=4,
                               concurrency_stages=[(0.5, 2), (0.5, 4)], progress=False)
        exact(shaped)
        assert shaped.complete > 0 and shaped.failed == 0
        # (An SLO no load on this machine breaks at 500/s: the search is
        # what is tested here, over HTTP/2, not this server's capacity; at
        # p99<50ms a loaded machine broke the first stage.)
        c = httpbench.capacity(srv.url("/rnd?c=10"), slo="p99<2s", stage_s=0.3, step=4,
                               start=500, concurrency=2, http2=True, streams=4)
        assert c.met and c.rate >= 500 and c.steps[0].held, c.report()
        assert all(s.errors == 0 and s.timed for s in c.steps), c.report()
    path = str(tmp_path / "h2.sock")
    with httpbench.Server(unix_socket=path) as srv:
        r = httpbench.run(srv.url("/rnd?c=10"), unix_socket=path, requests=500, concurrency=2,
                          http2=True, streams=5, progress=False)
        exact(r)
        assert r.complete == 500 and srv.stats()["h2_connections"] == 2
        conn = httpbench.Connection("localhost", 80, http2=True, unix_socket=path)
        assert conn.request("GET", "/rnd?c=7").body.__len__() == 7


def test_tls_settings_hold_over_http2(pki: dict[str, Path]) -> None:
    """Verification, a wrong CA, resumption with keep-alive off."""
    with httpbench.Server(tls=True) as srv:
        ok = httpbench.run(srv.url("/rnd?c=10"), requests=200, concurrency=2, http2=True,
                           streams=4, cafile=srv.cafile, progress=False)
        assert ok.complete == 200 and ok.tls_full_handshakes == 2
        bad = httpbench.run(srv.url("/rnd?c=10"), requests=4, http2=True, cafile=pki["ca"],
                            progress=False)
        exact(bad)
        assert bad.failures["tls"] == 4 and "certificate verify failed" in bad.first_error
        resumed = httpbench.run(srv.url("/rnd?c=10"), requests=50, http2=True, keepalive=False,
                                cafile=srv.cafile, progress=False)
        assert resumed.complete == 50 and resumed.tls_resumed_handshakes >= 45


def test_connection_specific_fields_stay_home_and_names_are_lowercase() -> None:
    """RFC 9113 section 8.2.2: Connection, Keep-Alive, Proxy-Connection,
    Transfer-Encoding and Upgrade are not sent over HTTP/2 (nor the
    `Connection: close` keep-alive off adds over HTTP/1.1), Host becomes
    :authority, and every name is lowercase."""
    with H2Server("ok") as s:
        headers = [("Connection", "keep-alive"), ("Keep-Alive", "timeout=5"),
                   ("Proxy-Connection", "x"), ("Upgrade", "foo"), ("X-Custom", "Value")]
        httpbench.run(s.url + "/path?q=1", requests=3, headers=headers, http2=True,
                      keepalive=False, progress=False)
        c = httpbench.Connection("127.0.0.1", s.port, http2=True)
        c.request("GET", "/one", headers={"X-Other": "1", "Connection": "close"})
        assert len(s.seen) == 4
        for fields in s.seen:
            names = [k for k, _ in fields]
            assert names[:4] == [":method", ":scheme", ":authority", ":path"], names
            assert all(k == k.lower() for k in names)
            assert not {"connection", "keep-alive", "proxy-connection", "upgrade",
                        "transfer-encoding", "host"} & set(names), names
            assert dict(fields)[":authority"] == f"127.0.0.1:{s.port}"
        assert ("x-custom", "Value") in s.seen[0] and dict(s.seen[0])[":path"] == "/path?q=1"
        assert ("x-other", "1") in s.seen[3]


def test_stages_over_streams_follow_their_shape(tmp_path: Path) -> None:
    with httpbench.Server(static_dir=tmp_path) as srv:
        (tmp_path / "f.bin").write_bytes(b"s" * 70_000)
        r = httpbench.run(srv.url("/rnd?c=100"), http2=True, streams=10, concurrency=2,
                          stages=[(0.5, 400), (0.5, 1200)], progress=False)
        exact(r)
        # k6's stages ramp: 0 to 400 a second over 0.5 s, then to 1200 over
        # 0.5 s, 100 + 400 requests.
        assert r.failed == 0 and 480 <= r.complete <= 510
        assert r.latency.count == r.complete and r.rate == pytest.approx(500)
        static = httpbench.Connection("127.0.0.1", srv.port, http2=True)
        assert static.request("GET", "/static/f.bin").body == b"s" * 70_000
        assert static.request("HEAD", "/static/f.bin").header("content-length") == "70000"


def test_h2_over_tls_through_a_proxy_tunnel() -> None:
    from helpers import tinyproxy
    with tinyproxy() as proxy, httpbench.Server(tls=True) as srv:
        if proxy is None:
            pytest.skip("tinyproxy: apt-get install tinyproxy")
        r = httpbench.run(srv.url("/rnd?c=100"), requests=100, concurrency=2, http2=True,
                          streams=5, cafile=srv.cafile, proxy=f"127.0.0.1:{proxy}",
                          progress=False)
        exact(r)
        assert r.complete == 100, r.first_error
        assert srv.stats()["h2_connections"] == 2 and r.tls_protocol


# ---- what the adversarial pass found (issue 33)

def test_a_goaway_before_any_stream_is_three_tries_then_reset_and_paced() -> None:
    """A server that answers every connection with SETTINGS and GOAWAY
    (last stream 0): one request makes three connects, as Connection does,
    then fails as reset with the GOAWAY's code; the two resends are counted
    in retries. A second's run on such a server reconnects a few times a
    second, not thousands."""
    with H2Server("goaway0") as s:
        r = httpbench.run(s.url + "/", requests=1, http2=True, timeout=1, progress=False)
        exact(r)
        assert r.failures["reset"] == r.failed == 1 and r.reset_codes == {"NO_ERROR": 1}
        assert r.counts["retries"] == 2 and r.connects == 3
        assert "GOAWAY NO_ERROR" in r.first_error
        # The three connects are over by now (each was answered in full).
        assert s.accepted == 3
        c = httpbench.Connection("127.0.0.1", s.port, http2=True, timeout=1)
        with pytest.raises(httpbench.StreamReset, match="three times"):
            c.request("GET", "/")
        assert c.connects == 3 and c.retries == 2
        before = s.accepted
        r = httpbench.run(s.url + "/", duration=1.0, concurrency=2, http2=True, streams=4,
                          timeout=1, progress=False)
        exact(r)
        assert r.complete == 0 and r.failed == r.failures["reset"] + r.failures["timeout"]
        assert r.connects == s.accepted - before or r.connects == s.accepted - before + 1
        assert r.connects < 40, r.connects  # paced; unbounded, thousands
        assert r.counts["retries"] >= 2 * r.failures["reset"]


@contextlib.contextmanager
def _holding(shut: bool) -> Iterator[str]:
    """A server that accepts and says nothing: each connection kept open
    and never read until the block ends, its sending side shut at once
    when `shut`. Yields its URL."""
    lsock = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = lsock.accept()
            except OSError:
                return
            if shut:
                conn.shutdown(socket.SHUT_WR)
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{lsock.getsockname()[1]}/"
    finally:
        lsock.close()
        for conn in held:
            conn.close()


def test_a_silent_server_says_why_nothing_was_sent(tmp_path):
    """A server that accepts and never answers: with no SETTINGS there is no
    ticket to open a stream, so nothing was issued and nothing counted,
    and the report was all zeros with no line saying why (exit 1). Now
    its first line and Result.first_error say what happened."""
    with _holding(shut=False) as url:  # (never read, never answered, kept open)
        r = httpbench.run(url, duration=1.0, concurrency=2, http2=True, streams=10,
                          progress=False)
        exact(r)
        said = ("no server SETTINGS within 1.0 s on 2 connections: nothing could be sent; is "
                "it an HTTP/2 server?")
        assert (r.issued, r.connects, r.first_error) == (0, 2, said), r.first_error
        assert r.report().startswith(f"Nothing was sent: {said}\n"), r.report()[:300]
        cli = subprocess.run([sys.executable, "-m", "httpbench", "-d", "1", "-c", "2", "--http2",
                              "--streams", "10", url], capture_output=True, text=True,
                             timeout=60, cwd=tmp_path)
        assert cli.returncode == 1, cli.stderr
        assert cli.stdout.startswith("Nothing was sent: no server SETTINGS within 1.0 s on 2 "
                                     "connections"), cli.stdout[:300]


def test_a_server_that_ends_every_connection_at_once_fails_each_request_once() -> None:
    """A socket the server ended before it said anything (no SETTINGS, no
    GOAWAY) fails the streams waiting for it, as HTTP/1.1's request on a
    socket closed before any response byte does: one connect per request,
    not a reconnect without pause until the timeout (fuzz_loop found the
    streams that wait for the server's SETTINGS doing that)."""
    # Each connection's sending side shut at once; what comes is not read,
    # and the socket stays open until the test ends.
    with _holding(shut=True) as url:
        for streams in (1, 4):
            r = httpbench.run(url, requests=8, concurrency=2, http2=True, streams=streams,
                              timeout=3, progress=False)
            exact(r)
            assert r.failed == r.failures["receive"] == 8, (streams, r.failures, r.first_error)
            assert r.connects <= 8, (streams, r.connects)


def test_a_whole_response_then_rst_stream_no_error_is_complete() -> None:
    """RFC 9113 section 8.1: a server may answer before the request is
    whole (an early 413), then ask the client to stop sending with
    RST_STREAM(NO_ERROR); the response stands."""
    with H2Server("early", status="413") as s:
        r = httpbench.run(s.url + "/", method="POST", body=b"b" * 200_000, requests=10,
                          concurrency=1, http2=True, progress=False)
        exact(r)
        assert r.complete == 10 and r.failed == 0, r.first_error
        assert r.status_counts == {413: 10} and r.reset_codes == {}
        r = httpbench.run(s.url + "/", method="POST", body=b"b" * 200_000, requests=40,
                          concurrency=2, http2=True, streams=4, progress=False)
        exact(r)
        assert r.complete == 40 and r.status_counts == {413: 40}, r.first_error
        c = httpbench.Connection("127.0.0.1", s.port, http2=True)
        assert c.request("POST", "/", body=b"b" * 200_000).status == 413


def test_nginxs_early_413_counts_as_its_413(nginx_h2: dict[str, str]) -> None:
    """nginx refuses a body over client_max_body_size (1m) from its
    content-length, ends the stream, then resets it NO_ERROR."""
    body = b"n" * (2 << 20)
    for url, tls in ((nginx_h2["h2c"], {}), (nginx_h2["h2"], {"cafile": nginx_h2["ca"]})):
        r = httpbench.run(url + "/rnd", method="POST", body=body, requests=10, concurrency=1,
                          http2=True, progress=False, **tls)
        exact(r)
        assert r.complete == 10 and r.status_counts == {413: 10}, (r.failures, r.first_error)


@pytest.mark.parametrize("status", ["600", "999", "099", "000"])
def test_a_status_outside_100_to_599_is_an_exception_as_over_http1(status: str) -> None:
    with H2Server("status", status=status) as s:
        r = httpbench.run(s.url + "/", requests=6, concurrency=2, http2=True, streams=2,
                          progress=False)
        exact(r)
        assert r.failures["exceptions"] == r.failed == 6, (r.failures, r.status_counts)
        assert r.status_counts == {} and "invalid status code" in r.first_error
        c = httpbench.Connection("127.0.0.1", s.port, http2=True)
        with pytest.raises(httpbench.ProtocolError, match=f'invalid status code.*"{status}"'):
            c.request("GET", "/")
    with H2Server("status", status="599") as s:
        r = httpbench.run(s.url + "/", requests=4, http2=True, progress=False)
        assert r.complete == 4 and r.status_counts == {599: 4}


def test_a_server_that_sets_no_stream_limit_is_unlimited_not_a_sentinel() -> None:
    """SETTINGS without SETTINGS_MAX_CONCURRENT_STREAMS: no limit (RFC 9113
    section 6.5.2), said so in the Result, its JSON and the report."""
    with H2Server("status", status="200") as s:  # (its SETTINGS are empty)
        r = httpbench.run(s.url + "/", requests=20, concurrency=1, http2=True, streams=4,
                          progress=False)
    assert r.complete == 20, r.first_error
    assert r.streams_allowed is None and r.streams_unlimited
    assert "4 per connection asked, unlimited allowed" in r.report()
    assert "4294967295" not in r.report() + r.to_html()
    d = r.to_dict()
    assert d["streams_unlimited"] is True and d["streams_allowed"] is None
    assert d["schema"] == httpbench.result.SCHEMA >= 12
    assert httpbench.Result.from_dict(d).streams_unlimited
    old = dict(d, schema=11)
    del old["streams_unlimited"]
    assert not httpbench.Result.from_dict(old).streams_unlimited
    with H2Server("ok", streams=7) as s:
        r = httpbench.run(s.url + "/", requests=20, http2=True, streams=4, progress=False)
    assert r.streams_allowed == 7 and not r.streams_unlimited

"""Forward proxies on the client side: Connection, run() and the command
line through Debian's tinyproxy (no one here wrote it) for http:// targets
(absolute form) and https:// ones (CONNECT, then TLS inside), with and
without credentials; and scripted proxies for the failure paths."""

from __future__ import annotations

import base64
import subprocess
import sys

import pytest
from helpers import exact, tinyproxy

import httpbench

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


@pytest.fixture(scope="module")
def proxy():
    with tinyproxy() as port:
        if port is None:
            pytest.skip("tinyproxy is not installed")
        yield f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def auth_proxy():
    with tinyproxy(("alice", "s3cret")) as port:
        if port is None:
            pytest.skip("tinyproxy is not installed")
        yield f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def servers():
    with httpbench.Server() as plain, httpbench.Server(tls=True) as tls:
        yield plain, tls


# ----------------------------------------------------------- Connection


def test_connection_through_a_proxy_to_http(proxy, servers):
    plain, _ = servers
    before = plain.stats()["requests"]
    with httpbench.Connection("127.0.0.1", plain.port, proxy=proxy) as conn:
        assert conn.proxy == proxy
        r = conn.request("GET", "/rnd?c=100")
        assert r.status == 200 and len(r.body) == 100
        r = conn.request("GET", b"/rnd?c=7")  # tinyproxy closes each time: sent again
        assert len(r.body) == 7
    assert plain.stats()["requests"] - before == 2


def test_connection_through_a_proxy_to_https(proxy, servers):
    _, tls = servers
    with httpbench.Connection.from_url(tls.url(), proxy=f"http://{proxy}",
                                       cafile=tls.cafile) as conn:
        for n in (10, 100_000):
            assert len(conn.request("GET", f"/rnd?c={n}").body) == n
        assert conn.request("POST", "/echo", body=b"inside").body == b"inside"
        assert conn.connects == 1 and conn.tls_info["protocol"].startswith("TLSv1.3,")


def test_proxy_credentials(auth_proxy, servers):
    plain, tls = servers
    with httpbench.Connection.from_url(plain.url(), proxy=auth_proxy) as conn:
        r = conn.request("GET", "/rnd?c=5")
        assert r.status == 407  # the proxy's answer, as a response
    with httpbench.Connection.from_url(tls.url(), proxy=auth_proxy, cafile=tls.cafile) as conn:
        with pytest.raises(httpbench.ConnectError,
                           match="answered CONNECT with 407 Proxy Authentication Required"):
            conn.request("GET", "/rnd?c=5")
    good = f"http://alice:s3cret@{auth_proxy}"
    for srv, kw in ((plain, {}), (tls, {"cafile": tls.cafile})):
        with httpbench.Connection.from_url(srv.url(), proxy=good, **kw) as conn:
            assert conn.proxy == auth_proxy  # no password shown
            assert conn.request("GET", "/rnd?c=5").status == 200


def test_proxy_arguments_are_checked():
    for bad, words in (("https://p:1", "only http:// proxies"), ("p:0", "must be http://"),
                       ("http://p:1/x", "must be http://"), ("", "must be a URL"),
                       (3, "must be a URL")):
        with pytest.raises(ValueError, match=words):
            httpbench.Connection("h", 80, proxy=bad)
        with pytest.raises(ValueError, match=words):
            httpbench.run("http://h/", requests=1, proxy=bad, progress=False)
    with pytest.raises(ValueError, match="proxy and unix_socket"):
        httpbench.Connection("h", 80, proxy="p:1", unix_socket="/tmp/x.sock")


def test_a_proxy_that_refuses_or_closes(scripted):
    refused = httpbench.run("http://127.0.0.1:9/", requests=3, proxy="127.0.0.1:1",
                            progress=False)
    assert refused.failures["connect"] == 3
    # A proxy that closes on the CONNECT without a word: receive.
    srv = scripted([("recv",), ("close",)], [("recv",), ("close",)], [("recv",), ("close",)])
    r = httpbench.run("https://example.test/", requests=2, proxy=f"127.0.0.1:{srv.port}",
                      verify=False, progress=False, timeout=5)
    assert r.failures["receive"] == 2 and "before answering CONNECT" in r.first_error
    assert srv.requests[0].startswith(b"CONNECT example.test:443 HTTP/1.1\r\n"
                                      b"Host: example.test:443\r\n")
    # An answer that is not HTTP: exceptions.
    srv = scripted([("recv",), ("send", b"SSH-2.0-x\r\n"), ("close",)])
    r = httpbench.run("https://example.test/", requests=1, proxy=f"127.0.0.1:{srv.port}",
                      verify=False, progress=False, timeout=5)
    assert r.failures["exceptions"] == 1 and "CONNECT" in r.first_error
    with pytest.raises(httpbench.ConnectError, match="closed before answering CONNECT"):
        srv = scripted([("recv",), ("close",)])
        httpbench.Connection("example.test", 443, tls=True, verify=False,
                             proxy=f"127.0.0.1:{srv.port}", timeout=5).request("GET", "/")


def test_a_502_to_connect_is_a_response_with_its_status(scripted):
    page = b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 11\r\n\r\nbad gateway"
    srv = scripted(*[[("recv",), ("send", page)]] * 4)
    r = httpbench.run("https://example.test/", requests=4, concurrency=2,
                      proxy=f"127.0.0.1:{srv.port}", verify=False, progress=False, timeout=5)
    assert (r.complete, r.failed, r.status_counts) == (4, 0, {502: 4})
    assert r.non_2xx == 4 and r.connects == 4


# --------------------------------------------------------------- run()


def test_run_through_a_proxy_counts_exactly(proxy, servers):
    plain, tls = servers
    before = plain.stats()["requests"]
    r = httpbench.run(plain.url("/rnd?c=2048"), requests=1001, concurrency=4, proxy=proxy,
                      progress=False)
    assert (r.issued, r.complete, r.failed) == (1001, 1001, 0), r.first_error
    assert r.body_bytes == 1001 * 2048 and r.proxy == proxy
    assert plain.stats()["requests"] - before == 1001
    assert f"Proxy:                  {proxy}" in r.report()
    # (Fewer over TLS: tinyproxy's tunnel holds each answer about 40 ms.)
    r = httpbench.run(tls.url("/rnd?c=2048"), requests=201, concurrency=4, proxy=proxy,
                      cafile=tls.cafile, progress=False)
    assert (r.complete, r.failed, r.connects) == (201, 0, 4), r.first_error
    assert r.body_bytes == 201 * 2048
    assert r.connect_time.max > 0 and r.tls_full_handshakes == 4
    r = httpbench.run(tls.url("/echo"), "POST", b"b" * 5000, requests=60, concurrency=2,
                      keepalive=False, proxy=proxy, cafile=tls.cafile, progress=False)
    assert (r.complete, r.failed, r.connects) == (60, 0, 60), r.first_error
    assert r.tls_resumed_handshakes > 0


def test_run_with_proxy_credentials(auth_proxy, servers):
    plain, tls = servers
    for srv, kw in ((plain, {}), (tls, {"cafile": tls.cafile})):
        r = httpbench.run(srv.url("/rnd?c=10"), requests=20, concurrency=2, proxy=auth_proxy,
                          progress=False, **kw)
        assert (r.complete, r.failed, r.status_counts) == (20, 0, {407: 20})
        r = httpbench.run(srv.url("/rnd?c=10"), requests=20, concurrency=2,
                          proxy=f"http://alice:s3cret@{auth_proxy}", progress=False, **kw)
        assert (r.complete, r.failed, r.status_counts) == (20, 0, {200: 20}), r.first_error


def test_the_absolute_form_and_credentials_on_the_wire(scripted):
    srv = scripted([("recv",), ("send", OK)])
    r = httpbench.run("http://example.test:8080/a?b", requests=1,
                      proxy=f"http://u%40x:p%3A@127.0.0.1:{srv.port}", progress=False)
    assert r.complete == 1, r.first_error
    sent = srv.requests[0]
    assert sent.startswith(b"GET http://example.test:8080/a?b HTTP/1.1\r\n")
    assert b"\r\nHost: example.test:8080\r\n" in sent
    token = base64.b64encode(b"u@x:p:").decode()
    assert f"Proxy-Authorization: Basic {token}\r\n".encode() in sent


LONG_LABEL = "a" * 61  # a legal DNS label: at most 63 octets (RFC 1035 section 2.3.4)
REFUSED = b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n"


@pytest.mark.parametrize("host, wire", [
    (f"{LONG_LABEL}.example", f"{LONG_LABEL}.example"),
    ("b\u00fccher.example", "xn--bcher-kva.example"),
])
def test_long_labels_long_credentials_and_non_ascii_hosts_through_a_proxy(scripted, host, wire):
    """The host was encoded with the idna codec with its port glued on (a
    61-character label and a port made a label too long), and the whole
    CONNECT request through it (credentials past about 20 characters did
    the same): UnicodeError before any request. The host is encoded once,
    alone; the rest is ASCII."""
    user, password = "u" * 40, "p" * 40
    for scheme, first in (("https", f"CONNECT {wire}:8443 HTTP/1.1\r\n"),
                          ("http", f"GET http://{wire}:8443/x HTTP/1.1\r\n")):
        srv = scripted([("recv",), ("send", REFUSED)])
        r = httpbench.run(f"{scheme}://{host}:8443/x", requests=1, progress=False,
                          proxy=f"http://{user}:{password}@127.0.0.1:{srv.port}")
        assert (r.complete, r.status_counts) == (1, {407: 1}), r.first_error
        sent = srv.requests[0]
        assert sent.startswith(first.encode()), sent
        assert f"\r\nHost: {wire}:8443\r\n".encode() in sent
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        assert f"Proxy-Authorization: Basic {token}\r\n".encode() in sent


def test_a_long_label_goes_to_the_resolver_not_to_a_unicode_error():
    with pytest.raises(httpbench.ConnectError):
        httpbench.run(f"http://{LONG_LABEL}.invalid:8080/", requests=1, progress=False)
    from httpbench.runner import host_field

    assert host_field(f"{LONG_LABEL}.invalid", 8080) == f"{LONG_LABEL}.invalid:8080".encode()
    assert host_field("b\u00fccher.example", 80) == b"xn--bcher-kva.example"
    with pytest.raises(ValueError, match="no IDNA"):
        httpbench.run("http://" + "\u00fc" * 70 + ".example/", requests=1, progress=False)


# ------------------------------------------------------- the command line


def hb(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "httpbench", *args], capture_output=True,
                          text=True, timeout=60, cwd="/", env=env)


def test_command_line_x_and_p(auth_proxy, servers):
    plain, tls = servers
    out = hb("-n", "30", "-q", "-X", auth_proxy, "-P", "alice:s3cret", plain.url("/rnd?c=9"))
    assert out.returncode == 0, out.stderr
    assert "Complete requests:      30" in out.stdout and f"Proxy:                  {auth_proxy}" \
        in out.stdout
    out = hb("-n", "30", "-q", "-X", auth_proxy, "-P", "alice:s3cret", "--cacert", tls.cafile,
             tls.url("/rnd?c=9"))
    assert out.returncode == 0 and "Complete requests:      30" in out.stdout, out.stderr
    out = hb("-n", "3", "-P", "a:b", plain.url("/"))
    assert out.returncode == 2 and "-P" in out.stderr
    out = hb("-n", "3", "-X", "https://p:1", plain.url("/"))
    assert out.returncode == 2 and "only http:// proxies" in out.stderr


def test_proxy_from_env_only_when_asked(proxy, servers):
    import os
    plain, _ = servers
    env = {**os.environ, "http_proxy": "http://127.0.0.1:9", "no_proxy": ""}
    # Not asked: the environment's proxy (a refusing one) is not read.
    out = hb("-n", "5", "-q", plain.url("/rnd?c=3"), env=env)
    assert out.returncode == 0 and "Proxy:" not in out.stdout
    out = hb("-n", "5", "-q", "--proxy-from-env", plain.url("/rnd?c=3"), env=env)
    assert out.returncode == 1 and "Connect: 5" in out.stdout
    env["http_proxy"] = f"http://{proxy}"
    out = hb("-n", "5", "-q", "--proxy-from-env", plain.url("/rnd?c=3"), env=env)
    assert out.returncode == 0 and f"Proxy:                  {proxy}" in out.stdout
    env["no_proxy"] = "127.0.0.1"
    out = hb("-n", "5", "-q", "--proxy-from-env", plain.url("/rnd?c=3"), env=env)
    assert out.returncode == 0 and "Proxy:" not in out.stdout


# ------------------------------------------------------- the comparison


def test_compare_through_a_proxy_over_tls(proxy, auth_proxy):
    # Every agent tunnels (CONNECT) and verifies the embedded server inside.
    # Few requests: tinyproxy's tunnel holds each answer about 40 ms (a
    # request with a body 80: the same for every client and for nginx),
    # where the plain relay below takes under a millisecond.
    cmp = httpbench.compare(tls=True, requests=6, duration=5, proxy=proxy)
    assert set(httpbench.available_agents()) <= {a for a, _ in cmp.results}, cmp.notes
    for (agent, scenario), r in cmp.results.items():
        assert r.failed == 0 and r.complete > 0, (agent, scenario, r.first_error)
    cmp = httpbench.compare(tls=True, requests=10, duration=5, scenarios=["get"],
                            proxy=f"http://alice:s3cret@{auth_proxy}")
    for (agent, _), r in cmp.results.items():
        assert r.status_counts == {200: 10}, (agent, r.status_counts, r.first_error)
    cmp = httpbench.compare(tls=True, requests=5, duration=5, scenarios=["get"],
                            proxy=auth_proxy)
    for (agent, _), r in cmp.results.items():
        # Refused: the 407 to CONNECT, a response for the C core; the
        # Python clients raise it as an error of their own.
        assert r.complete + r.failed == 5 and (r.status_counts.get(407) or r.failed), agent


def test_compare_through_a_proxy_to_http(proxy):
    # tinyproxy closes each client connection after one answer without
    # saying so. httpbench sends again on a new socket (RFC 9112 section
    # 9.3.1) and pycurl does too: every request answered. The others reuse
    # the pooled socket when its FIN has not arrived yet, and then fail that
    # request in the receive class: http.client and aiohttp do every time;
    # urllib3 and requests (our agents set retries=False, so a failure is
    # counted, not hidden) and httpx look at whether the socket is readable
    # before reuse, and lose only when the next request goes before the
    # proxy's FIN arrives, which a loaded machine or one CPU shows (a POST
    # is not sent again, RFC 9110 section 9.2.2). No request is lost from
    # the count either way.
    cmp = httpbench.compare(requests=30, duration=5, proxy=proxy)
    for (agent, scenario), r in cmp.results.items():
        exact(r)
        assert r.failed == r.failures["receive"], (agent, scenario, r.failures)
        if agent in ("httpbench", "pycurl"):
            assert r.failed == 0 and r.complete == 30, (agent, scenario, r.first_error)
    with pytest.raises(ValueError, match="only http:// proxies"):
        httpbench.compare(proxy="https://p:1")

"""pycurl: a Curl handle per worker (libcurl, HTTP/2 through nghttp2)."""

from __future__ import annotations

import os
from typing import Any

from .._ledger import Head
from .base import SyncAgent, _Job, _kept


class _CurlSession:
    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.connects = 0


# libcurl's error codes by failure class (curl/curl.h): 35 SSL connect,
# 51 peer's name, 53/54 engine, 58/59 own certificate and cipher, 60 CA,
# 77 CA file, 80 shutdown, 83 issuer, 90/91 pinning and status.
_CURL_CLASSES = {28: "timeout", 6: "connect", 7: "connect", 18: "receive", 52: "receive",
                 55: "receive", 56: "receive",
                 **dict.fromkeys((35, 51, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91),
                                 "tls")}


class PycurlAgent(SyncAgent):
    name, module = "pycurl", "pycurl"
    unix_sockets = True
    http2 = True

    def speaks_http2(self) -> bool:
        """Its libcurl was built with HTTP/2 (nghttp2), as the wheel's is."""
        import pycurl
        return bool(pycurl.version_info()[4] & pycurl.VERSION_HTTP2)

    def version(self) -> str:
        import pycurl
        return str(pycurl.version.split()[0].split("/")[1])

    def classify(self, e: BaseException) -> str:
        import pycurl
        if isinstance(e, pycurl.error) and e.args and isinstance(e.args[0], int):
            return _CURL_CLASSES.get(e.args[0], "exceptions")
        return super().classify(e)

    def open(self, job: _Job) -> _CurlSession:
        import pycurl
        c = pycurl.Curl()
        c.setopt(pycurl.TIMEOUT_MS, int(job.timeout * 1000))
        # The protocol the comparison names, and no other: libcurl offers h2
        # by ALPN unless told, and over http:// HTTP/2 is prior knowledge.
        if not job.trust.http2:
            c.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
        elif job.tls:
            c.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_2_0)
        else:
            c.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
        # "" is libcurl's way to read no http_proxy from the environment.
        c.setopt(pycurl.PROXY, job.proxy_url or "")
        if job.proxy is not None and job.proxy.credentials is not None:
            c.setopt(pycurl.PROXYUSERPWD, ":".join(job.proxy.credentials))
        if job.unix_socket is not None:
            c.setopt(pycurl.UNIX_SOCKET_PATH, job.unix_socket)
        if job.tls:
            if not job.trust.verify:
                c.setopt(pycurl.SSL_VERIFYPEER, 0)
                c.setopt(pycurl.SSL_VERIFYHOST, 0)
            elif job.trust.cafile is not None:
                c.setopt(pycurl.CAINFO, os.fspath(job.trust.cafile))
        return _CurlSession(c)

    def request(self, session: Any, method: str, url: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes, Head]:
        import pycurl
        chunks: list[bytes] = []
        head = [0]
        # The last head's status line and Connection values (curl passes
        # every head, a 1xx's too, line by line), judged by _kept as the
        # other clients' heads are.
        version, connection = [b""], list[str]()

        def on_header(line: bytes) -> None:
            head[0] += len(line)
            if line.startswith(b"HTTP/"):
                version[0] = line.split(b" ", 1)[0]
                connection.clear()
            elif line[:11].lower() == b"connection:":
                connection.append(line[11:].decode("latin-1"))

        c = session.handle
        c.setopt(pycurl.URL, url)
        c.setopt(pycurl.WRITEFUNCTION, chunks.append)
        c.setopt(pycurl.HEADERFUNCTION, on_header)
        # No Expect: 100-continue, so every agent sends the same exchange.
        c.setopt(pycurl.HTTPHEADER, [f"{k}: {v}" for k, v in headers.items()] + ["Expect:"])
        if body is not None:
            c.setopt(pycurl.POSTFIELDS, body)
        else:
            c.setopt(pycurl.HTTPGET, 1)
        if method not in ("GET", "POST"):
            c.setopt(pycurl.CUSTOMREQUEST, method)
        c.perform()
        session.connects += c.getinfo(pycurl.NUM_CONNECTS)
        kept = _kept(connection, version[0] == b"HTTP/1.0")
        return c.getinfo(pycurl.RESPONSE_CODE), b"".join(chunks), Head(head[0], kept)

    def connections(self, session: Any) -> int:
        return int(session.connects)

    def close(self, session: Any) -> None:
        session.handle.close()

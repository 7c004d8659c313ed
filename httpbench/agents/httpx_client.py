"""httpx: a Client per worker, HTTP/2 through the h2 package."""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from .._ledger import Head
from .base import SyncAgent, _head, _Job


class _HttpxSession:
    def __init__(self, client: Any) -> None:
        self.client = client
        self.streams = 0
        self.last: Any = None


class HttpxAgent(SyncAgent):
    name, module = "httpx", "httpx"
    unix_sockets = True
    http2 = True

    def speaks_http2(self) -> bool:
        """httpx speaks HTTP/2 through the h2 package (httpx[http2])."""
        return importlib.util.find_spec("h2") is not None

    def error_types(self) -> dict[str, tuple[type[BaseException], ...]]:
        import httpx
        return {"timeout": (httpx.TimeoutException,), "connect": (httpx.ConnectError,),
                "receive": (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)}

    def open(self, job: _Job) -> _HttpxSession:
        import httpx
        verify: Any = job.trust.ssl_context() if job.tls else True
        # HTTP/2 alone when asked: over http:// that is prior knowledge (h2c).
        h1, h2 = not job.trust.http2, job.trust.http2
        if job.unix_socket is not None:
            transport = httpx.HTTPTransport(uds=job.unix_socket, verify=verify, http1=h1,
                                            http2=h2)
            return _HttpxSession(httpx.Client(timeout=job.timeout, transport=transport,
                                              trust_env=False, http1=h1, http2=h2))
        proxy: Any = None
        if job.proxy_url is not None:
            auth = {"Proxy-Authorization": job.proxy_auth} if job.proxy_auth else None
            proxy = httpx.Proxy(job.proxy_url, headers=auth)
        # No HTTP_PROXY, SSL_CERT_FILE or the like from the environment.
        return _HttpxSession(httpx.Client(timeout=job.timeout, verify=verify, trust_env=False,
                                          proxy=proxy, http1=h1, http2=h2))

    def request(self, session: Any, method: str, url: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes, Head]:
        r = session.client.request(method, url, content=body, headers=headers)
        data = r.content
        stream = r.extensions.get("network_stream")
        if stream is not session.last:
            session.streams += 1
            session.last = stream
        return r.status_code, data, _head(r.status_code, r.reason_phrase,
                                          list(r.headers.items()), r.http_version == "HTTP/1.0")

    def connections(self, session: Any) -> int:
        return int(session.streams)

    def close(self, session: Any) -> None:
        session.client.close()

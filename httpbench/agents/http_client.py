"""The standard library's http.client, one HTTPConnection per worker."""

from __future__ import annotations

import platform
from typing import Any

from .base import SyncAgent, _head_bytes, _Job


class _HttpClientSession:
    def __init__(self, conn: Any, prefix: str = "", extra: dict[str, str] | None = None) -> None:
        self.conn = conn
        # Each socket opened, as the other agents count them: one refused
        # too (counted from the socket's identity after a request, a
        # refused connect went uncounted: 0 connects where urllib3 and the
        # core counted 50).
        self.sockets = 0
        opens = conn.connect

        def connect() -> None:
            self.sockets += 1
            opens()
        conn.connect = connect
        # Through a proxy to an http:// server: the origin before each path
        # (absolute form) and the proxy's credentials.
        self.prefix, self.extra = prefix, extra or {}


class HttpClientAgent(SyncAgent):
    name, module = "http.client", "http.client"

    def version(self) -> str:
        return platform.python_version()

    def error_types(self) -> dict[str, tuple[type[BaseException], ...]]:
        import http.client
        return {"receive": (http.client.IncompleteRead, http.client.BadStatusLine)}

    def open(self, job: _Job) -> _HttpClientSession:
        import http.client
        auth = {"Proxy-Authorization": job.proxy_auth} if job.proxy_auth else {}
        host, port = (job.proxy.host, job.proxy.port) if job.proxy else (job.host, job.port)
        if job.tls:
            conn = http.client.HTTPSConnection(host, port, timeout=job.timeout,
                                               context=job.trust.ssl_context())
            if job.proxy:
                conn.set_tunnel(job.host, job.port, headers=auth)
            return _HttpClientSession(conn)
        plain = http.client.HTTPConnection(host, port, timeout=job.timeout)
        if job.proxy:
            origin = job.url[:len(job.url) - len(job.path)] if job.url.endswith(job.path) else ""
            return _HttpClientSession(plain, origin, auth)
        return _HttpClientSession(plain)

    def request(self, session: Any, method: str, url: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes, int]:
        conn = session.conn
        try:
            conn.request(method, session.prefix + path, body=body,
                         headers={**headers, **session.extra} if session.extra else headers)
            r = conn.getresponse()
            data = r.read()
        except BaseException:
            # http.client stays mid-request after a failure (the next
            # request would raise CannotSendRequest): start afresh.
            conn.close()
            raise
        return r.status, data, _head_bytes(r.status, r.reason, r.getheaders())

    def connections(self, session: Any) -> int:
        return int(session.sockets)

    def close(self, session: Any) -> None:
        session.conn.close()

"""The standard library's http.client, one HTTPConnection per worker."""

from __future__ import annotations

import platform
from typing import Any

from .._ledger import Head
from .base import SyncAgent, _head, _Job


class _HttpClientSession:
    def __init__(self, tls: bool) -> None:
        # Each socket opened, as the other agents count them, a refused one
        # too (counted from the socket's identity after a request, a
        # refused connect went uncounted: 0 connects where urllib3 and the
        # core counted 50). Counted in a class of ours, as _PoolSession's.
        import http.client
        session = self
        base: Any = http.client.HTTPSConnection if tls else http.client.HTTPConnection

        class CountingConnection(base):  # type: ignore[misc]
            def connect(self) -> None:
                session.sockets += 1
                super().connect()

        self.connection_class: Any = CountingConnection
        self.sockets = 0
        self.conn: Any = None
        # Through a proxy to an http:// server: the origin before each path
        # (absolute form) and the proxy's credentials.
        self.prefix, self.extra = "", dict[str, str]()


class HttpClientAgent(SyncAgent):
    name, module = "http.client", "http.client"

    def version(self) -> str:
        return platform.python_version()

    def error_types(self) -> dict[str, tuple[type[BaseException], ...]]:
        import http.client
        return {"receive": (http.client.IncompleteRead, http.client.BadStatusLine)}

    def open(self, job: _Job) -> _HttpClientSession:
        auth = {"Proxy-Authorization": job.proxy_auth} if job.proxy_auth else {}
        host, port = (job.proxy.host, job.proxy.port) if job.proxy else (job.host, job.port)
        session = _HttpClientSession(job.tls)
        if job.tls:
            session.conn = session.connection_class(host, port, timeout=job.timeout,
                                                    context=job.trust.ssl_context())
            if job.proxy:
                session.conn.set_tunnel(job.host, job.port, headers=auth)
            return session
        session.conn = session.connection_class(host, port, timeout=job.timeout)
        if job.proxy:
            session.prefix = job.url[:len(job.url) - len(job.path)] \
                if job.url.endswith(job.path) else ""
            session.extra = auth
        return session

    def request(self, session: Any, method: str, url: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes, Head]:
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
        return r.status, data, _head(r.status, r.reason, r.getheaders(), r.version == 10)

    def connections(self, session: Any) -> int:
        return int(session.sockets)

    def close(self, session: Any) -> None:
        session.conn.close()

"""urllib3: a pool of one connection per worker (or a ProxyManager)."""

from __future__ import annotations

from typing import Any

from .._ledger import Head
from .base import SyncAgent, Trust, _head, _Job, _PoolSession


def _urllib3_trust(trust: Trust) -> dict[str, Any]:
    """urllib3's arguments for trust. Unverified, its warning on every
    request is turned off (the caller asked for it, and a warning per
    request would cost what is being measured)."""
    if trust.verify:
        return {"cert_reqs": "CERT_REQUIRED", "ca_certs": trust.cafile}
    import urllib3
    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    return {"cert_reqs": "CERT_NONE", "assert_hostname": False}


def _urllib3_errors() -> dict[str, tuple[type[BaseException], ...]]:
    from urllib3 import exceptions as u
    return {"timeout": (u.TimeoutError,), "connect": (u.NewConnectionError,),
            "receive": (u.ProtocolError,), "tls": (u.SSLError,)}


class _Urllib3Session(_PoolSession):
    def __init__(self, job: _Job) -> None:
        super().__init__()
        tls = _urllib3_trust(job.trust) if job.tls else {}
        self.target = job.path
        if job.proxy_url is not None:
            import urllib3
            auth = {"Proxy-Authorization": job.proxy_auth} if job.proxy_auth else None
            # Its pools count their connects as the direct ones do.
            self.pool: Any = self.manager_class(urllib3.ProxyManager)(
                job.proxy_url, proxy_headers=auth, maxsize=1, retries=False, timeout=job.timeout,
                **tls)
            self.target = job.url  # a proxy manager takes whole URLs
            return
        self.pool = self.pool_class(job.tls)(job.host, job.port, maxsize=1, retries=False,
                                            timeout=job.timeout, **tls)


class Urllib3Agent(SyncAgent):
    name, module = "urllib3", "urllib3"

    def error_types(self) -> dict[str, tuple[type[BaseException], ...]]:
        return _urllib3_errors()

    def open(self, job: _Job) -> _Urllib3Session:
        return _Urllib3Session(job)

    def request(self, session: Any, method: str, url: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes, Head]:
        r = session.pool.request(method, session.target, body=body, headers=headers,
                                 retries=False)
        return r.status, r.data, _head(r.status, r.reason or "", list(r.headers.items()),
                                       r.version == 10)

    def connections(self, session: Any) -> int:
        return int(session.connects)

    def close(self, session: Any) -> None:
        if hasattr(session.pool, "close"):
            session.pool.close()
        else:
            session.pool.clear()  # a ProxyManager's pools

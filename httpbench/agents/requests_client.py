"""requests: a Session per worker over urllib3, its connects counted."""

from __future__ import annotations

import urllib.parse
from typing import Any

from .._ledger import Head
from .base import SyncAgent, _head, _Job, _PoolSession
from .urllib3_client import _urllib3_errors, _urllib3_trust


class _RequestsSession(_PoolSession):
    def __init__(self, job: _Job) -> None:
        super().__init__()
        import requests
        self.timeout = job.timeout
        self.session = requests.Session()
        # HTTP_PROXY and the like are not read, by this agent or any other:
        # a comparison never goes through a proxy by accident.
        self.session.trust_env = False
        # Given with each request: a Session's own verify loses to
        # REQUESTS_CA_BUNDLE in the environment, a request's does not.
        self.verify: bool | str = True
        if job.tls:
            _urllib3_trust(job.trust)  # the warning off when unverified
            self.verify = (job.trust.cafile or True) if job.trust.verify else False
        # requests' own extension point: an adapter of ours, whose pool
        # managers are the counting ones.
        self.session.mount("http://", _counting_adapter(self))
        self.session.mount("https://", _counting_adapter(self))
        if job.proxy is not None:
            creds = job.proxy.credentials
            quoted = "" if creds is None else (
                f"{urllib.parse.quote(creds[0], safe='')}:{urllib.parse.quote(creds[1], safe='')}@")
            proxy_url = f"http://{quoted}{job.proxy}"
            self.session.proxies = {"http": proxy_url, "https": proxy_url}


def _counting_adapter(session: _PoolSession) -> Any:
    """A requests HTTPAdapter whose pool manager, and proxy managers, are
    session.manager_class's (init_poolmanager and proxy_manager_for are
    the hooks requests documents for it)."""
    import requests.adapters
    import urllib3

    class CountingAdapter(requests.adapters.HTTPAdapter):
        def init_poolmanager(self, connections: int, maxsize: int, block: bool = False,
                             **pool_kwargs: Any) -> None:
            # The sizes, for the proxy managers too (as requests' own does).
            self.sizes = {"num_pools": connections, "maxsize": maxsize, "block": block}
            self.poolmanager = session.manager_class(urllib3.PoolManager)(
                **self.sizes, **pool_kwargs)

        def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
            if proxy not in self.proxy_manager:
                self.proxy_manager[proxy] = session.manager_class(urllib3.ProxyManager)(
                    proxy, proxy_headers=self.proxy_headers(proxy), **self.sizes,
                    **proxy_kwargs)
            return self.proxy_manager[proxy]

    return CountingAdapter()


class RequestsAgent(SyncAgent):
    name, module = "requests", "requests"

    def error_types(self) -> dict[str, tuple[type[BaseException], ...]]:
        import requests
        own = _urllib3_errors()
        own["timeout"] += (requests.exceptions.Timeout,)
        own["connect"] += (requests.exceptions.ConnectTimeout,)
        own["tls"] += (requests.exceptions.SSLError,)
        return own

    def open(self, job: _Job) -> _RequestsSession:
        return _RequestsSession(job)

    def request(self, session: Any, method: str, url: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes, Head]:
        r = session.session.request(method, url, data=body, headers=headers,
                                    timeout=session.timeout, verify=session.verify)
        return (r.status_code, r.content,
                _head(r.status_code, r.reason or "", list(r.headers.items()),
                      getattr(r.raw, "version", 11) == 10))

    def connections(self, session: Any) -> int:
        return int(session.connects)

    def close(self, session: Any) -> None:
        session.session.close()

"""httpbench.Connection: the C core's blocking keep-alive connection, with
the decisions that are not HTTP/1.1's wire made here, in Python, before the
call (a URL split into host, port and scheme; a forward proxy's route)."""

from __future__ import annotations

from typing import Any

from . import _check, _core
from ._url import proxy_route, split_url

__all__ = ["Connection"]


class Connection(_core.Connection):
    """One blocking keep-alive HTTP/1.1 connection to host:port (see
    docs/client.md), or with http2=True one HTTP/2 stream at a time (h2 by
    ALPN over TLS, h2c by prior knowledge over plain TCP).
    proxy="http://[user:pass@]host:port" goes through a forward proxy: an
    http:// server's HTTP/1.1 requests in absolute form with the proxy's
    credentials, an https:// server's (and HTTP/2) through a CONNECT
    tunnel."""

    __slots__ = ()
    __module__ = "httpbench"  # its public home, as the core's other types say

    def __init__(self, host: str, port: int, timeout: float | None = 30.0, *,
                 proxy: str | None = None, **options: Any) -> None:
        via = None
        for name in ("tls", "verify", "http2"):  # (the core takes any value's truth)
            if name in options:
                options[name] = _check.flag(name, options[name])
        # Wrong types go on to the core, which names them.
        if proxy is not None and isinstance(host, str) and isinstance(port, int):
            tunnel = bool(options.get("tls", False)) or bool(options.get("http2", False))
            via = proxy_route(proxy, host, port, tunnel)
        super().__init__(host, port, timeout, _via=via, **options)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Connection:
        """A Connection to the URL's host and port, over TLS for https://."""
        if "tls" in options:
            raise TypeError("from_url() takes tls from the URL's scheme")
        target = split_url(url)
        return cls(target.host, target.port, tls=target.tls, **options)

    def __repr__(self) -> str:
        where = self.unix_socket if self.unix_socket is not None else f"{self.host}:{self.port}"
        how = " ".join(w for w, on in (("TLS", self.tls), ("HTTP/2", self.http2)) if on)
        return f"<httpbench.Connection to {where!s}{f' ({how})' if how else ''}>"


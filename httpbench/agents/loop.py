"""httpbench's own C loop as an agent (httpbench.run)."""

from __future__ import annotations

from typing import Any

from .._url import split_url
from .._version import __version__
from ..result import Result
from ..runner import run
from .base import Agent, Trust


class HttpbenchAgent(Agent):
    """httpbench's own C loop (httpbench.run)."""

    name, module = "httpbench", "httpbench"
    unix_sockets = True
    http2 = True

    def version(self) -> str:
        return __version__

    def run(self, url: str, method: str, body: bytes | None, requests: int | None,
            duration: float | None, concurrency: int, timeout: float, lengths_vary: bool,
            check_echo: bool, trust: Trust, unix_socket: str | None = None,
            proxy: str | None = None) -> Result:
        tls: dict[str, Any] = {}
        if split_url(url).tls:
            tls = {"verify": trust.verify, "cafile": trust.cafile}
        r = run(url, method, body, None, requests, duration, concurrency, timeout=timeout,
                progress=False, lengths_vary=lengths_vary, unix_socket=unix_socket, proxy=proxy,
                http2=trust.http2, **tls)
        r.agent, r.agent_version = self.name, self.version()
        return r

"""aiohttp: one event loop, a task per worker."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from .._ledger import Tally, ThreadCPU
from ..result import Result
from .base import Agent, Trust, _head, _Job


class AiohttpAgent(Agent):
    """asyncio: one event loop for the run, on a thread of its own (a
    notebook's thread may already have a loop), one task per worker."""

    name, module = "aiohttp", "aiohttp"
    unix_sockets = True

    def error_types(self) -> dict[str, tuple[type[BaseException], ...]]:
        import aiohttp
        return {"timeout": (aiohttp.ServerTimeoutError,),
                "tls": (aiohttp.ClientSSLError, aiohttp.ClientConnectorCertificateError),
                "connect": (aiohttp.ClientConnectorError,),
                "receive": (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError,
                            aiohttp.ClientOSError)}

    def run(self, url: str, method: str, body: bytes | None, requests: int | None,
            duration: float | None, concurrency: int, timeout: float, lengths_vary: bool,
            check_echo: bool, trust: Trust, unix_socket: str | None = None,
            proxy: str | None = None) -> Result:
        job = _Job(url, method, body, requests, duration, concurrency, timeout, lengths_vary,
                       check_echo, trust, unix_socket, proxy)
        errors: list[BaseException] = []

        def target() -> None:
            cpu = ThreadCPU()
            try:
                asyncio.run(self._loop(job))
            except BaseException as e:  # noqa: BLE001 - raised again by measure()
                errors.append(e)
            cpu.done(job.tallies[0])

        return job.measure(self, [target], threads=1, errors=errors)

    async def _loop(self, job: _Job) -> None:
        import aiohttp
        created = [0]

        async def on_create(*_: Any) -> None:
            created[0] += 1

        trace = aiohttp.TraceConfig()
        trace.on_connection_create_end.append(on_create)
        ssl_arg: Any = job.trust.ssl_context() if job.tls else True
        proxy_headers = {"Proxy-Authorization": job.proxy_auth} if job.proxy_auth else None
        connector: aiohttp.BaseConnector
        if job.unix_socket is not None:
            connector = aiohttp.UnixConnector(job.unix_socket, limit=len(job.tallies))
        else:
            connector = aiohttp.TCPConnector(limit=len(job.tallies), ssl=ssl_arg)
        ledger = job.ledger
        async with aiohttp.ClientSession(connector=connector, trace_configs=[trace],
                                         timeout=aiohttp.ClientTimeout(total=job.timeout),
                                         auto_decompress=False) as session:

            async def worker(tally: Tally) -> None:
                while ledger.take(tally):
                    t0 = time.perf_counter_ns()
                    try:
                        async with session.request(job.method, job.url, data=ledger.body,
                                                   headers=job.headers, ssl=ssl_arg,
                                                   proxy=job.proxy_url,
                                                   proxy_headers=proxy_headers) as r:
                            data = await r.read()
                            head = _head(r.status, r.reason or "", list(r.headers.items()),
                                         r.version is not None and tuple(r.version) == (1, 0))
                            status = r.status
                    except Exception as e:  # noqa: BLE001 - counted in its class
                        ledger.fail(tally, self.classify(e), e)
                        continue
                    ledger.check(tally, status, data, head, t0)

            await asyncio.gather(*(worker(t) for t in job.tallies))
        job.tallies[0].connects = created[0]

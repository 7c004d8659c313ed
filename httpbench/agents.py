"""HTTP clients ("agents") driven through the same scenario and measured into
the same Histogram as the C loop, so every figure means the same thing.

Each agent keeps one connection alive per concurrent worker, reads the whole
body, checks the status (and the echo of a POST), and is timed per request
with time.perf_counter_ns. Header bytes are reconstructed from the parsed
fields for the Python agents (pycurl's are counted by curl); body bytes are
exact for all.
"""

from __future__ import annotations

import asyncio
import importlib
import platform
import resource
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from ._core import Histogram
from ._version import __version__
from .result import FAILURE_CLASSES, Latency, Result
from .runner import parse_url, run

__all__ = ["AGENTS", "available_agents", "run_agent"]


def _head_bytes(status: int, reason: str, headers: Sequence[tuple[str, str]]) -> int:
    """The size of a response head as sent: status line, fields, blank line."""
    return (len(f"HTTP/1.1 {status} {reason}\r\n") + sum(len(k) + len(v) + 4 for k, v in headers)
            + 2)


class Agent:
    """One HTTP client: its name, the module it needs, its version. How it
    runs depends on its kind: SyncAgent (a worker thread per connection),
    AiohttpAgent (one event loop) or HttpbenchAgent (the C loop)."""

    name = ""
    module = ""

    def version(self) -> str:
        mod = importlib.import_module(self.module)
        return str(getattr(mod, "__version__", getattr(mod, "version", platform.python_version())))

    def available(self) -> bool:
        try:
            importlib.import_module(self.module)
        except ImportError:
            return False
        return True


class SyncAgent(Agent, ABC):
    """A blocking client: a worker thread owns one session (one kept-alive
    connection) and sends its requests one after another."""

    @abstractmethod
    def open(self, host: str, port: int, timeout: float) -> Any:
        """A new session to host:port."""

    @abstractmethod
    def request(self, session: Any, method: str, url: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes, int]:
        """(status, body, head bytes) of one exchange."""

    @abstractmethod
    def connections(self, session: Any) -> int:
        """Sockets the session has opened so far."""

    @abstractmethod
    def close(self, session: Any) -> None:
        """Releases the session."""


class HttpClientAgent(SyncAgent):
    name, module = "http.client", "http.client"

    def version(self) -> str:
        return platform.python_version()

    def open(self, host: str, port: int, timeout: float) -> Any:
        import http.client
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        conn._hb_socks = 0  # type: ignore[attr-defined]
        conn._hb_last = None  # type: ignore[attr-defined]
        return conn

    def request(self, session: Any, method: str, url: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes, int]:
        session.request(method, path, body=body, headers=headers)
        if session.sock is not session._hb_last:
            session._hb_socks += 1
            session._hb_last = session.sock
        r = session.getresponse()
        data = r.read()
        return r.status, data, _head_bytes(r.status, r.reason, r.getheaders())

    def connections(self, session: Any) -> int:
        return int(session._hb_socks)

    def close(self, session: Any) -> None:
        session.close()


def _counting_pool(counter: list[int]) -> Any:
    """A urllib3 pool class whose connections count their connects: urllib3
    reopens a dropped socket on the same connection object, so the pool's
    num_connections does not see reconnects."""
    import urllib3
    from urllib3.connection import HTTPConnection

    class CountingConnection(HTTPConnection):
        def connect(self) -> None:
            counter[0] += 1
            super().connect()

    return type("CountingPool", (urllib3.HTTPConnectionPool,),
                {"ConnectionCls": CountingConnection})


class Urllib3Agent(SyncAgent):
    name, module = "urllib3", "urllib3"

    def open(self, host: str, port: int, timeout: float) -> Any:
        counter = [0]
        pool = _counting_pool(counter)(host, port, maxsize=1, retries=False, timeout=timeout)
        pool._hb_connects = counter
        return pool

    def request(self, session: Any, method: str, url: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes, int]:
        r = session.request(method, path, body=body, headers=headers, retries=False)
        return r.status, r.data, _head_bytes(r.status, r.reason or "", list(r.headers.items()))

    def connections(self, session: Any) -> int:
        return int(session._hb_connects[0])

    def close(self, session: Any) -> None:
        session.close()


class RequestsAgent(SyncAgent):
    name, module = "requests", "requests"

    def open(self, host: str, port: int, timeout: float) -> Any:
        import requests
        s = requests.Session()
        s._hb_timeout = timeout  # type: ignore[attr-defined]
        s._hb_connects = [0]  # type: ignore[attr-defined]
        manager = s.get_adapter("http://").poolmanager  # type: ignore[attr-defined]
        # A dict of its own: the default one is urllib3's module-wide table.
        manager.pool_classes_by_scheme = {**manager.pool_classes_by_scheme,
                                          "http": _counting_pool(s._hb_connects)}  # type: ignore[attr-defined]
        return s

    def request(self, session: Any, method: str, url: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes, int]:
        r = session.request(method, url, data=body, headers=headers, timeout=session._hb_timeout)
        return (r.status_code, r.content,
                _head_bytes(r.status_code, r.reason or "", list(r.headers.items())))

    def connections(self, session: Any) -> int:
        return int(session._hb_connects[0])

    def close(self, session: Any) -> None:
        session.close()


class HttpxAgent(SyncAgent):
    name, module = "httpx", "httpx"

    def open(self, host: str, port: int, timeout: float) -> Any:
        import httpx
        c = httpx.Client(timeout=timeout)
        c._hb_streams = 0  # type: ignore[attr-defined]
        c._hb_last = None  # type: ignore[attr-defined]
        return c

    def request(self, session: Any, method: str, url: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes, int]:
        r = session.request(method, url, content=body, headers=headers)
        data = r.content
        stream = r.extensions.get("network_stream")
        if stream is not session._hb_last:
            session._hb_streams += 1
            session._hb_last = stream
        return r.status_code, data, _head_bytes(r.status_code, r.reason_phrase, list(r.headers.items()))

    def connections(self, session: Any) -> int:
        return int(session._hb_streams)

    def close(self, session: Any) -> None:
        session.close()


class PycurlAgent(SyncAgent):
    name, module = "pycurl", "pycurl"

    def version(self) -> str:
        import pycurl
        return str(pycurl.version.split()[0].split("/")[1])

    def open(self, host: str, port: int, timeout: float) -> Any:
        import pycurl
        c = pycurl.Curl()
        c.setopt(pycurl.TIMEOUT_MS, int(timeout * 1000))
        c._hb_connects = 0
        return c

    def request(self, session: Any, method: str, url: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes, int]:
        import pycurl
        chunks: list[bytes] = []
        head = [0]

        def on_header(line: bytes) -> None:
            head[0] += len(line)

        c = session
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
        c._hb_connects += c.getinfo(pycurl.NUM_CONNECTS)
        return c.getinfo(pycurl.RESPONSE_CODE), b"".join(chunks), head[0]

    def connections(self, session: Any) -> int:
        return int(session._hb_connects)

    def close(self, session: Any) -> None:
        session.close()


class AiohttpAgent(Agent):
    """asyncio: one event loop for the run, one task per concurrent worker."""

    name, module = "aiohttp", "aiohttp"


class HttpbenchAgent(Agent):
    """httpbench's own C loop (httpbench.run)."""

    name, module = "httpbench", "httpbench"

    def version(self) -> str:
        return __version__


AGENTS: dict[str, Agent] = {a.name: a for a in (
    HttpbenchAgent(), HttpClientAgent(), Urllib3Agent(), RequestsAgent(), HttpxAgent(),
    PycurlAgent(), AiohttpAgent(),
)}


def available_agents() -> list[str]:
    """The agents importable here, in the order the comparison runs them."""
    return [name for name, agent in AGENTS.items() if agent.available()]


class _Tally:
    """One worker's figures; merged at the end."""

    def __init__(self) -> None:
        self.hist = Histogram()
        self.issued = self.complete = self.non_2xx = 0
        self.failures = dict.fromkeys(FAILURE_CLASSES, 0)
        self.status: dict[int, int] = {}
        self.body_bytes = self.head_bytes = 0
        self.connects = 0
        self.cpu_user = self.cpu_sys = 0.0
        self.first_error = ""
        self.doc_len: int | None = None

    def fail(self, cls: str, error: BaseException | str) -> None:
        self.failures[cls] += 1
        if not self.first_error:
            self.first_error = str(error) or type(error).__name__


def _classify(e: BaseException) -> str:
    text = f"{type(e).__name__} {e}".lower()
    if "timeout" in text or "timed out" in text or isinstance(e, TimeoutError):
        return "timeout"
    if "refused" in text or "connecterror" in text or "newconnectionerror" in text:
        return "connect"
    if isinstance(e, (ConnectionError, OSError, EOFError)) or "disconnect" in text or "reset" in text:
        return "receive"
    return "exceptions"


class _Plan:
    """The shared ticket counter and the checks every agent is held to."""

    def __init__(self, requests: int | None, duration: float | None, body: bytes | None,
                 echo: bytes | None, lengths_vary: bool) -> None:
        self.left = requests
        self.end = time.monotonic() + duration if duration else None
        self.body = body
        self.echo = echo
        self.lengths_vary = lengths_vary
        self.lock = threading.Lock()
        self.doc_len: int | None = None
        self.stop = False

    def take(self) -> bool:
        with self.lock:
            if self.stop or (self.end is not None and time.monotonic() >= self.end):
                return False
            if self.left is None:
                return True
            if self.left <= 0:
                return False
            self.left -= 1
            return True

    def check(self, tally: _Tally, status: int, data: bytes, head: int, t0: int) -> None:
        """Counts one answered request as complete or failed, as the C loop does."""
        elapsed = time.perf_counter_ns() - t0
        tally.status[status] = tally.status.get(status, 0) + 1
        tally.body_bytes += len(data)
        tally.head_bytes += head
        ok2xx = 200 <= status < 300
        if not ok2xx:
            tally.non_2xx += 1
        else:
            with self.lock:
                if self.doc_len is None:
                    self.doc_len = len(data)
                doc = self.doc_len
            if self.echo is not None and data != self.echo:
                tally.fail("length" if len(data) != len(self.echo) else "exceptions",
                           f"the echo differs from the {len(self.echo)} bytes sent")
                return
            if not self.lengths_vary and len(data) != doc:
                tally.fail("length", f"body of {len(data)} bytes, the first was {doc}")
                return
        tally.complete += 1
        tally.hist.record(elapsed)


class _ThreadCPU:
    """This thread's CPU time, user and system, from here to done()."""

    def __init__(self) -> None:
        self.start = resource.getrusage(resource.RUSAGE_THREAD)

    def done(self, tally: _Tally) -> None:
        end = resource.getrusage(resource.RUSAGE_THREAD)
        tally.cpu_user = end.ru_utime - self.start.ru_utime
        tally.cpu_sys = end.ru_stime - self.start.ru_stime


def _sync_worker(agent: SyncAgent, plan: _Plan, tally: _Tally, host: str, port: int, url: str,
                 path: str, method: str, headers: dict[str, str], timeout: float) -> None:
    cpu = _ThreadCPU()
    try:
        session = agent.open(host, port, timeout)
    except Exception as e:  # noqa: BLE001 - the agent could not even start
        tally.first_error = f"{agent.name} could not start: {e}"
        cpu.done(tally)
        return
    try:
        while plan.take():
            tally.issued += 1
            t0 = time.perf_counter_ns()
            try:
                status, data, head = agent.request(session, method, url, path, plan.body, headers)
            except Exception as e:  # noqa: BLE001 - each failure is counted in its class
                tally.fail(_classify(e), e)
                continue
            plan.check(tally, status, data, head, t0)
        tally.connects = agent.connections(session)
    except Exception as e:  # noqa: BLE001 - outside a request: reported, not lost
        tally.first_error = tally.first_error or f"{agent.name}: {e}"
    finally:
        agent.close(session)
        cpu.done(tally)


async def _aiohttp_run(plan: _Plan, tallies: list[_Tally], url: str, method: str,
                       headers: dict[str, str], timeout: float) -> None:
    import aiohttp
    created = [0]

    async def on_create(*_: Any) -> None:
        created[0] += 1

    trace = aiohttp.TraceConfig()
    trace.on_connection_create_end.append(on_create)
    connector = aiohttp.TCPConnector(limit=len(tallies))
    async with aiohttp.ClientSession(connector=connector, trace_configs=[trace],
                                     timeout=aiohttp.ClientTimeout(total=timeout),
                                     auto_decompress=False) as session:

        async def worker(tally: _Tally) -> None:
            while plan.take():
                tally.issued += 1
                t0 = time.perf_counter_ns()
                try:
                    async with session.request(method, url, data=plan.body, headers=headers) as r:
                        data = await r.read()
                        head = _head_bytes(r.status, r.reason or "", list(r.headers.items()))
                        status = r.status
                except Exception as e:  # noqa: BLE001 - counted in its class
                    tally.fail(_classify(e), e)
                    continue
                plan.check(tally, status, data, head, t0)

        await asyncio.gather(*(worker(t) for t in tallies))
    tallies[0].connects = created[0]


def run_agent(agent_name: str, url: str, method: str = "GET", body: bytes | None = None,
              requests: int | None = 20_000, duration: float | None = None,
              concurrency: int = 1, timeout: float = 30.0, lengths_vary: bool = False,
              check_echo: bool = False) -> Result:
    """One agent through one scenario, measured as httpbench.run measures.
    With check_echo the response body must be the request body (the C loop,
    which keeps no bodies, checks its length)."""
    if agent_name not in AGENTS:
        raise ValueError(f"unknown agent {agent_name!r}; available here: "
                         f"{', '.join(available_agents())}")
    agent = AGENTS[agent_name]
    if isinstance(agent, HttpbenchAgent):
        r = run(url, method, body, None, requests, duration, concurrency, timeout=timeout,
                progress=False, lengths_vary=lengths_vary)
        r.agent, r.agent_version = agent_name, agent.version()
        return r
    host, port, path = parse_url(url)
    headers = {"Content-Type": "application/octet-stream"} if body is not None else {}
    plan = _Plan(requests, duration, body, body if check_echo else None, lengths_vary)
    tallies = [_Tally() for _ in range(concurrency)]
    t0 = time.perf_counter()
    interrupted = False
    try:
        if isinstance(agent, AiohttpAgent):
            _in_thread(lambda: asyncio.run(_aiohttp_run(plan, tallies, url, method, headers,
                                                        timeout)), tallies[0])
        else:
            assert isinstance(agent, SyncAgent)
            threads = [threading.Thread(target=_sync_worker, args=(agent, plan, t, host, port, url,
                                                                  path, method, headers, timeout),
                                        daemon=True) for t in tallies]
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(0.25)
    except KeyboardInterrupt:
        interrupted = True
        plan.stop = True
    elapsed = time.perf_counter() - t0
    return _result(agent, url, method, host, port, path, requests, concurrency, plan, tallies,
                   elapsed, interrupted)


def _in_thread(fn: Callable[[], None], tally: _Tally) -> None:
    """Runs fn on a thread of its own (a notebook's thread may already have
    an event loop), counting that thread's CPU time."""
    errors: list[BaseException] = []

    def target() -> None:
        cpu = _ThreadCPU()
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)
        cpu.done(tally)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    while t.is_alive():
        t.join(0.25)
    if errors:
        raise errors[0]


def _result(agent: Agent, url: str, method: str, host: str, port: int, path: str,
            requests: int | None, concurrency: int, plan: _Plan, tallies: list[_Tally],
            elapsed: float, interrupted: bool) -> Result:
    hist = Histogram()
    status: dict[int, int] = {}
    failures = dict.fromkeys(FAILURE_CLASSES, 0)
    for t in tallies:
        hist.merge(t.hist)
        for code, n in t.status.items():
            status[code] = status.get(code, 0) + n
        for cls, n in t.failures.items():
            failures[cls] += n
    complete = sum(t.complete for t in tallies)
    connects = sum(t.connects for t in tallies)
    empty = Latency()
    r = Result(
        url=url, method=method, host=host, port=port, path=path, requests=requests,
        issued=sum(t.issued for t in tallies), complete=complete, failed=sum(failures.values()),
        failures=failures, non_2xx=sum(t.non_2xx for t in tallies), status_counts=status,
        time_taken=elapsed, bytes_received=sum(t.body_bytes + t.head_bytes for t in tallies),
        body_bytes=sum(t.body_bytes for t in tallies),
        bytes_sent=0, document_length=plan.doc_len, server_software="",
        keepalive_requests=max(0, complete - connects), connects=connects,
        reconnects=max(0, connects - concurrency), concurrency=concurrency,
        threads=1 if isinstance(agent, AiohttpAgent) else concurrency,
        cpu_user=sum(t.cpu_user for t in tallies), cpu_sys=sum(t.cpu_sys for t in tallies),
        rate=None, interrupted=interrupted,
        first_error=next((t.first_error for t in tallies if t.first_error), ""),
        latency=Latency(hist), latency_uncorrected=Latency(hist), connect_time=empty,
        processing=empty, waiting=empty,
    )
    r.agent, r.agent_version = agent.name, agent.version()
    return r

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
import datetime
import functools
import importlib
import math
import platform
import resource
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from . import _check
from ._core import Histogram
from ._version import __version__
from .result import FAILURE_CLASSES, Latency, Result
from .runner import parse_url, run

__all__ = ["AGENTS", "available_agents", "run_agent", "MAX_WORKERS"]

# After Ctrl-C or the end of a duration, how long requests in flight may take
# to finish before they are cancelled: the C loop's rule (bench.h).
GRACE_S = 1.0
# Concurrent workers for a Python agent: each is a thread (or a task).
MAX_WORKERS = 1000


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
        self.issued = self.complete = self.non_2xx = self.cancelled = 0
        self.inflight = False
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
    """The shared ticket counter, the checks every agent is held to, and
    the accounting rule: every request a worker takes ends complete, failed
    or, if still in flight when the run's accounting closes (finish()),
    cancelled. All of it under one lock, so an outcome that arrives after
    the close is not counted twice."""

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
        self.closed = False
        self.running = 0
        self.all_done = threading.Event()

    def take(self, tally: _Tally) -> bool:
        """A ticket for one request, which is then in flight in tally."""
        with self.lock:
            if self.stop or self.closed or (self.end is not None and
                                            time.monotonic() >= self.end):
                return False
            if self.left is not None:
                if self.left <= 0:
                    return False
                self.left -= 1
            tally.issued += 1
            tally.inflight = True
            return True

    def fail(self, tally: _Tally, cls: str, error: BaseException | str) -> None:
        """The request in flight in tally failed, in class cls."""
        with self.lock:
            if not self.closed:
                tally.inflight = False
                tally.fail(cls, error)

    def check(self, tally: _Tally, status: int, data: bytes, head: int, t0: int) -> None:
        """The request in flight in tally was answered: complete or failed,
        as the C loop counts it."""
        elapsed = time.perf_counter_ns() - t0
        with self.lock:
            if self.closed:
                return  # counted as cancelled already
            tally.inflight = False
            tally.status[status] = tally.status.get(status, 0) + 1
            tally.body_bytes += len(data)
            tally.head_bytes += head
            if not 200 <= status < 300:
                tally.non_2xx += 1
            else:
                if self.doc_len is None:
                    self.doc_len = len(data)
                if self.echo is not None and data != self.echo:
                    tally.fail("length" if len(data) != len(self.echo) else "exceptions",
                               f"the echo differs from the {len(self.echo)} bytes sent")
                    return
                if not self.lengths_vary and len(data) != self.doc_len:
                    tally.fail("length", f"body of {len(data)} bytes, the first was "
                                         f"{self.doc_len}")
                    return
            tally.complete += 1
            tally.hist.record(elapsed)

    def finish(self, tallies: Sequence[_Tally]) -> None:
        """Closes the accounting: no more tickets, and what is still in
        flight is cancelled."""
        with self.lock:
            self.closed = True
            for t in tallies:
                if t.inflight:
                    t.inflight = False
                    t.cancelled += 1

    def start(self, targets: Sequence[Callable[[], None]]) -> None:
        """Runs each target on a daemon thread of its own, counted until it
        returns."""

        def counted(target: Callable[[], None]) -> None:
            try:
                target()
            finally:
                with self.lock:
                    self.running -= 1
                    if self.running == 0:
                        self.all_done.set()

        self.running = len(targets)
        for target in targets:
            threading.Thread(target=counted, args=(target,), daemon=True).start()

    def wait(self) -> bool:
        """Waits for the workers. Once the duration has ended, or Ctrl-C has
        stopped the run (which is then reported), they get GRACE_S to
        finish what they have in flight; the caller then calls finish().
        Returns whether the run was interrupted. (An Event, not
        Thread.join: a join cut short by KeyboardInterrupt can leave a
        running thread marked as ended.)"""
        interrupted = False
        grace_end = None
        while not self.all_done.is_set():
            now = time.monotonic()
            if grace_end is None and self.end is not None and now >= self.end:
                grace_end = self.end + GRACE_S
            if grace_end is not None and now >= grace_end:
                break
            wake = min(x for x in (grace_end, self.end, now + 0.25) if x is not None)
            try:
                self.all_done.wait(max(0.001, wake - now))
            except KeyboardInterrupt:
                interrupted = True
                self.stop = True
                grace_end = min(grace_end or math.inf, time.monotonic() + GRACE_S)
        return interrupted


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
        while plan.take(tally):
            t0 = time.perf_counter_ns()
            try:
                status, data, head = agent.request(session, method, url, path, plan.body, headers)
            except Exception as e:  # noqa: BLE001 - each failure is counted in its class
                plan.fail(tally, _classify(e), e)
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
            while plan.take(tally):
                t0 = time.perf_counter_ns()
                try:
                    async with session.request(method, url, data=plan.body, headers=headers) as r:
                        data = await r.read()
                        head = _head_bytes(r.status, r.reason or "", list(r.headers.items()))
                        status = r.status
                except Exception as e:  # noqa: BLE001 - counted in its class
                    plan.fail(tally, _classify(e), e)
                    continue
                plan.check(tally, status, data, head, t0)

        await asyncio.gather(*(worker(t) for t in tallies))
    tallies[0].connects = created[0]


def run_agent(agent_name: str, url: str, method: str = "GET", body: bytes | None = None,
              requests: int | None = 20_000, duration: float | None = None,
              concurrency: int = 1, timeout: float = 30.0, lengths_vary: bool = False,
              check_echo: bool = False) -> Result:
    """One agent through one scenario, measured as httpbench.run measures,
    by the same accounting rule (issued == complete + failed + cancelled).
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
    if requests is not None:
        requests = _check.count("requests", requests)
    if duration is not None:
        duration = _check.seconds("duration", duration)
    concurrency = _check.count("concurrency", concurrency, 1, MAX_WORKERS)
    timeout = _check.seconds("timeout", timeout)
    headers = {"Content-Type": "application/octet-stream"} if body is not None else {}
    plan = _Plan(requests, duration, body, body if check_echo else None, lengths_vary)
    tallies = [_Tally() for _ in range(concurrency)]
    errors: list[BaseException] = []
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
    t0 = time.perf_counter()
    if isinstance(agent, AiohttpAgent):
        targets = [_on_a_thread(lambda: asyncio.run(_aiohttp_run(plan, tallies, url, method,
                                                                 headers, timeout)),
                                tallies[0], errors)]
    else:
        sync = agent
        assert isinstance(sync, SyncAgent)
        targets = [functools.partial(_sync_worker, sync, plan, t, host, port, url, path, method,
                                     headers, timeout) for t in tallies]
    plan.start(targets)
    interrupted = plan.wait()
    plan.finish(tallies)
    elapsed = time.perf_counter() - t0
    if errors and not interrupted:
        raise errors[0]
    return _result(agent, url, method, host, port, path, requests, concurrency, plan, tallies,
                   elapsed, interrupted, started)


def _on_a_thread(fn: Callable[[], None], tally: _Tally,
                 errors: list[BaseException]) -> Callable[[], None]:
    """fn as a thread's target (it runs on a thread of its own: a
    notebook's thread may already have an event loop), counting its CPU
    time in tally; what it raises goes to errors."""

    def target() -> None:
        cpu = _ThreadCPU()
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - re-raised by the caller
            errors.append(e)
        cpu.done(tally)

    return target


def _result(agent: Agent, url: str, method: str, host: str, port: int, path: str,
            requests: int | None, concurrency: int, plan: _Plan, tallies: list[_Tally],
            elapsed: float, interrupted: bool, started: str) -> Result:
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
        url=url, method=method, start_time=started, host=host, port=port, path=path,
        requests=requests, issued=sum(t.issued for t in tallies), complete=complete, failed=sum(failures.values()),
        cancelled=sum(t.cancelled for t in tallies), failures=failures, non_2xx=sum(t.non_2xx for t in tallies), status_counts=status,
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

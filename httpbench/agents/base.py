"""What every agent shares: the Agent and SyncAgent bases, how an https://
server is trusted, a Python agent's job (its checks, its ledger, its
measured result) and the connection-counting pool urllib3 and requests use;
how a failure is classed by its exception's type."""

from __future__ import annotations

import dataclasses
import datetime
import errno
import functools
import importlib
import importlib.util
import platform
import socket
import ssl
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .. import _check
from .._ledger import Head, Ledger, Tally, ThreadCPU, agent_result
from .._url import Proxy, split_proxy, split_url
from ..result import Result
from ..runner import basic_auth

# Concurrent workers for a Python agent: each is a thread (or a task).
MAX_WORKERS = 1000


def _kept(connection: Sequence[str], http10: bool) -> bool:
    """Whether a response with these Connection field values kept its
    connection alive: no `close` option, and over HTTP/1.0 a `keep-alive`
    one (RFC 9112 section 9.3). (As complete minus connects, each
    connection's first response went uncounted: 498 of 500 where the core
    counted 500.)"""
    tokens = {t.strip().lower() for v in connection for t in v.split(",")}
    return "close" not in tokens and (not http10 or "keep-alive" in tokens)


def _head(status: int, reason: str, headers: Sequence[tuple[str, str]],
          http10: bool = False) -> Head:
    """A response head: its size as sent (status line, fields, blank line),
    and whether it kept the connection alive (_kept). Inside the request's
    time: one pass over the fields."""
    size = len(f"HTTP/1.1 {status} {reason}\r\n") + 2
    connection = []
    for k, v in headers:
        size += len(k) + len(v) + 4
        if len(k) == 10 and k.lower() == "connection":
            connection.append(v)
    return Head(size, _kept(connection, http10))


def _causes(e: BaseException) -> Iterator[BaseException]:
    """e and what it wraps: libraries wrap a socket's error once or twice
    (requests in urllib3's MaxRetryError, that in a NewConnectionError)."""
    seen: set[int] = set()
    todo = [e]
    while todo:
        x = todo.pop(0)
        if id(x) in seen or len(seen) > 16:
            continue
        seen.add(id(x))
        yield x
        reason = getattr(x, "reason", None)
        inner = [reason] if isinstance(reason, BaseException) else []
        inner += [a for a in getattr(x, "args", ()) if isinstance(a, BaseException)]
        inner += [c for c in (x.__cause__, x.__context__) if c is not None]
        todo.extend(inner)


@dataclasses.dataclass(frozen=True)
class Trust:
    """How every agent checks an https:// server: verify its certificate
    and name or not, against the CAs in cafile (None: the system's); and
    the protocol the comparison names, which every agent speaks (http2:
    HTTP/2, h2 by ALPN over TLS, h2c by prior knowledge; else HTTP/1.1)."""

    verify: bool = True
    cafile: str | None = None
    http2: bool = False

    def ssl_context(self) -> ssl.SSLContext:
        """An ssl context for the Python clients, offering by ALPN the one
        protocol the comparison names."""
        ctx = ssl.create_default_context(cafile=self.cafile)
        if not self.verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2" if self.http2 else "http/1.1"])
        return ctx


# errno values that mean the connection could not be made.
_CONNECT_ERRNOS = {errno.ECONNREFUSED, errno.ENETUNREACH, errno.EHOSTUNREACH,
                   errno.EADDRNOTAVAIL, errno.ECONNABORTED}


class Agent(ABC):
    """One HTTP client: its name, the module it needs, its version, how it
    runs a scenario, and how its exceptions map to the failure classes."""

    name = ""
    module = ""
    # Whether it can reach a server over a Unix socket (http.client, urllib3
    # and requests have no way to, short of a socket of one's own making).
    unix_sockets = False
    # Whether it can speak HTTP/2 (httpx through the h2 package, pycurl
    # through libcurl's nghttp2, the C core); the others are left out of a
    # comparison over HTTP/2.
    http2 = False

    def speaks_http2(self) -> bool:
        return self.http2

    def version(self) -> str:
        mod = importlib.import_module(self.module)
        return str(getattr(mod, "__version__", getattr(mod, "version", platform.python_version())))

    def available(self) -> bool:
        try:
            importlib.import_module(self.module)
        except ImportError:
            return False
        return True

    @abstractmethod
    def run(self, url: str, method: str, body: bytes | None, requests: int | None,
            duration: float | None, concurrency: int, timeout: float, lengths_vary: bool,
            check_echo: bool, trust: Trust, unix_socket: str | None = None,
            proxy: str | None = None) -> Result:
        """The scenario through this client, measured as httpbench.run is;
        over the Unix socket at unix_socket if given (unix_sockets), through
        the forward proxy if given ("http://[user:pass@]host:port")."""

    def error_types(self) -> dict[str, tuple[type[BaseException], ...]]:
        """The library's own exception types by failure class (timeout,
        connect, receive), beside the standard library's."""
        return {}

    def classify(self, e: BaseException) -> str:
        """The failure class of an exception, by its type (or the type of
        what it wraps): tls, timeout, connect, receive, or exceptions."""
        own = self.error_types()
        # An end of stream inside TLS is the connection closing (receive),
        # as over TCP; any other TLS error is the tls class, even wrapped in
        # a library's connect error (httpx's ConnectError). Connect before
        # timeout: urllib3's NewConnectionError is also a (connect)
        # TimeoutError of its own, for compatibility.
        classes: list[tuple[str, tuple[type[BaseException], ...]]] = [
            ("receive", (ssl.SSLEOFError, ssl.SSLZeroReturnError)),
            ("tls", (ssl.SSLError,) + own.get("tls", ())),
            ("connect", (ConnectionRefusedError, socket.gaierror) + own.get("connect", ())),
            ("timeout", (TimeoutError,) + own.get("timeout", ())),
            ("receive", (ConnectionError, EOFError) + own.get("receive", ())),
        ]
        chain = list(_causes(e))
        for cls, types in classes:
            if any(isinstance(x, types) for x in chain):
                return cls
        if any(isinstance(x, OSError) and x.errno in _CONNECT_ERRNOS for x in chain):
            return "connect"
        return "exceptions"



class _Job:
    """What a Python agent's run needs, checked once."""

    def __init__(self, url: str, method: str, body: bytes | None, requests: int | None,
                 duration: float | None, concurrency: int, timeout: float, lengths_vary: bool,
                 check_echo: bool, trust: Trust, unix_socket: str | None = None,
                 proxy: str | None = None) -> None:
        self.url, self.method, self.body, self.trust = url, method, body, trust
        self.unix_socket = unix_socket
        target = split_url(url)
        self.tls, self.host, self.port = target.tls, target.host, target.port
        # Through a forward proxy: its URL without credentials, and these
        # as a Proxy-Authorization value, for each library's own way.
        self.proxy: Proxy | None = None if proxy is None else split_proxy(proxy)
        self.proxy_url = None if self.proxy is None else f"http://{self.proxy}"
        self.proxy_auth = None
        if self.proxy is not None and self.proxy.credentials is not None:
            self.proxy_auth = basic_auth(*self.proxy.credentials)
        self.path = target.path
        self.requests = None if requests is None else _check.count("requests", requests)
        self.duration = None if duration is None else _check.seconds("duration", duration)
        self.concurrency = _check.count("concurrency", concurrency, 1, MAX_WORKERS)
        self.timeout = _check.seconds("timeout", timeout)
        self.headers = {"Content-Type": "application/octet-stream"} if body is not None else {}
        self.ledger = Ledger(self.requests, self.duration, body, body if check_echo else None,
                         lengths_vary)
        self.tallies = [Tally() for _ in range(self.concurrency)]

    def measure(self, agent: Agent, targets: Sequence[Callable[[], None]], threads: int,
                errors: Sequence[BaseException] = ()) -> Result:
        """Runs the workers, waits (with the grace after a stop or the
        duration), closes the accounting and adds up the result."""
        started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
        t0 = time.perf_counter()
        self.ledger.start(targets)
        interrupted = self.ledger.wait()
        self.ledger.finish(self.tallies)
        elapsed = time.perf_counter() - t0
        if errors and not interrupted:
            raise errors[0]
        r = agent_result(agent.name, agent.version(), self.url, self.method, self.host,
                         self.port, self.path, self.requests, self.concurrency, threads,
                         self.ledger, self.tallies, elapsed, interrupted, started)
        r.unix_socket = self.unix_socket or ""
        r.http_version = "2" if self.trust.http2 else "1.1"
        return r


class SyncAgent(Agent):
    """A blocking client: a worker thread owns one session (one kept-alive
    connection) and sends its requests one after another."""

    @abstractmethod
    def open(self, job: _Job) -> Any:
        """A new session to the scenario's server (job.host, job.port, or
        job.unix_socket when set; over TLS when job.tls, checked as job.trust
        says; job.timeout per request): an object of the agent's own."""

    @abstractmethod
    def request(self, session: Any, method: str, url: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes, Head]:
        """(status, body, head) of one exchange."""

    @abstractmethod
    def connections(self, session: Any) -> int:
        """Sockets the session has opened so far."""

    @abstractmethod
    def close(self, session: Any) -> None:
        """Releases the session."""

    def run(self, url: str, method: str, body: bytes | None, requests: int | None,
            duration: float | None, concurrency: int, timeout: float, lengths_vary: bool,
            check_echo: bool, trust: Trust, unix_socket: str | None = None,
            proxy: str | None = None) -> Result:
        job = _Job(url, method, body, requests, duration, concurrency, timeout, lengths_vary,
                       check_echo, trust, unix_socket, proxy)
        targets = [functools.partial(self._worker, job, t) for t in job.tallies]
        return job.measure(self, targets, threads=job.concurrency)

    def _worker(self, job: _Job, tally: Tally) -> None:
        cpu = ThreadCPU()
        ledger = job.ledger
        try:
            session = self.open(job)
        except Exception as e:  # noqa: BLE001 - the agent could not even start
            tally.first_error = f"{self.name} could not start: {e}"
            cpu.done(tally)
            return
        try:
            while ledger.take(tally):
                t0 = time.perf_counter_ns()
                try:
                    status, data, head = self.request(session, job.method, job.url, job.path,
                                                      ledger.body, job.headers)
                except Exception as e:  # noqa: BLE001 - each failure is counted in its class
                    ledger.fail(tally, self.classify(e), e)
                    continue
                ledger.check(tally, status, data, head, t0)
            tally.connects = self.connections(session)
        except Exception as e:  # noqa: BLE001 - outside a request: reported, not lost
            tally.first_error = tally.first_error or f"{self.name}: {e}"
        finally:
            self.close(session)
            cpu.done(tally)



class _PoolSession:
    """A urllib3 pool (of one connection) that counts its connects: urllib3
    reopens a dropped socket on the same connection object, so the pool's
    num_connections does not see reconnects."""

    def __init__(self) -> None:
        self.connects = 0

    def pool_class(self, tls: bool = False) -> Any:
        import urllib3
        from urllib3.connection import HTTPConnection, HTTPSConnection

        session = self
        base: Any = HTTPSConnection if tls else HTTPConnection

        class CountingConnection(base):  # type: ignore[misc]
            def connect(self) -> None:
                session.connects += 1
                super().connect()

        pool = urllib3.HTTPSConnectionPool if tls else urllib3.HTTPConnectionPool
        return type("CountingPool", (pool,), {"ConnectionCls": CountingConnection})

    def manager_class(self, base: Any) -> Any:
        """A subclass of urllib3's PoolManager or ProxyManager (base) whose
        pools are pool_class's: the counting is in classes of ours, never
        an attribute set on the library's own objects."""
        session = self

        class CountingManager(base):  # type: ignore[misc]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                # Its own table: the default is urllib3's module-wide one.
                self.pool_classes_by_scheme = {"http": session.pool_class(False),
                                               "https": session.pool_class(True)}

        return CountingManager

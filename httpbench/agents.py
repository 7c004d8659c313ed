"""HTTP clients ("agents") driven through the same scenario and measured into
the same Histogram as the C loop, so every figure means the same thing.

Each agent runs itself (`Agent.run`): httpbench's own C loop, a worker
thread per connection for the blocking clients, one event loop for aiohttp.
Each keeps one connection alive per concurrent worker, reads the whole
body, checks the status (and the echo of a POST), and is timed per request
with time.perf_counter_ns; the accounting is the C loop's (httpbench/_ledger.py).
A worker's connection and its counters live in a session object of the
agent's own, never in attributes set on another library's objects; a
failure is classed by the exception's type. Header bytes are reconstructed
from the parsed fields for the Python agents (pycurl's are counted by curl);
body bytes are exact for all.

Over https:// every agent is given the same Trust: verify or not, and the
CA file to verify against (a test server's self-signed certificate).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import errno
import functools
import importlib
import importlib.util
import os
import platform
import socket
import ssl
import time
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from . import _check
from ._ledger import Ledger, Tally, ThreadCPU, agent_result
from ._version import __version__
from .result import Result
from ._url import Proxy, split_proxy, split_url
from .runner import basic_auth, run

__all__ = ["AGENTS", "available_agents", "run_agent", "MAX_WORKERS", "Agent", "Trust"]

# Concurrent workers for a Python agent: each is a thread (or a task).
MAX_WORKERS = 1000


def _head_bytes(status: int, reason: str, headers: Sequence[tuple[str, str]]) -> int:
    """The size of a response head as sent: status line, fields, blank line."""
    return (len(f"HTTP/1.1 {status} {reason}\r\n") + sum(len(k) + len(v) + 4 for k, v in headers)
            + 2)


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
                headers: dict[str, str]) -> tuple[int, bytes, int]:
        """(status, body, head bytes) of one exchange."""

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


class _HttpClientSession:
    def __init__(self, conn: Any, prefix: str = "", extra: dict[str, str] | None = None) -> None:
        self.conn = conn
        self.sockets = 0
        self.last: Any = None
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
            if conn.sock is not session.last:
                session.sockets += 1
                session.last = conn.sock
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
                headers: dict[str, str]) -> tuple[int, bytes, int]:
        r = session.pool.request(method, session.target, body=body, headers=headers,
                                 retries=False)
        return r.status, r.data, _head_bytes(r.status, r.reason or "", list(r.headers.items()))

    def connections(self, session: Any) -> int:
        return int(session.connects)

    def close(self, session: Any) -> None:
        if hasattr(session.pool, "close"):
            session.pool.close()
        else:
            session.pool.clear()  # a ProxyManager's pools


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
                headers: dict[str, str]) -> tuple[int, bytes, int]:
        r = session.session.request(method, url, data=body, headers=headers,
                                    timeout=session.timeout, verify=session.verify)
        return (r.status_code, r.content,
                _head_bytes(r.status_code, r.reason or "", list(r.headers.items())))

    def connections(self, session: Any) -> int:
        return int(session.connects)

    def close(self, session: Any) -> None:
        session.session.close()


class _HttpxSession:
    def __init__(self, client: Any) -> None:
        self.client = client
        self.streams = 0
        self.last: Any = None


class HttpxAgent(SyncAgent):
    name, module = "httpx", "httpx"
    unix_sockets = True
    http2 = True

    def speaks_http2(self) -> bool:
        """httpx speaks HTTP/2 through the h2 package (httpx[http2])."""
        return importlib.util.find_spec("h2") is not None

    def error_types(self) -> dict[str, tuple[type[BaseException], ...]]:
        import httpx
        return {"timeout": (httpx.TimeoutException,), "connect": (httpx.ConnectError,),
                "receive": (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)}

    def open(self, job: _Job) -> _HttpxSession:
        import httpx
        verify: Any = job.trust.ssl_context() if job.tls else True
        # HTTP/2 alone when asked: over http:// that is prior knowledge (h2c).
        h1, h2 = not job.trust.http2, job.trust.http2
        if job.unix_socket is not None:
            transport = httpx.HTTPTransport(uds=job.unix_socket, verify=verify, http1=h1,
                                            http2=h2)
            return _HttpxSession(httpx.Client(timeout=job.timeout, transport=transport,
                                              trust_env=False, http1=h1, http2=h2))
        proxy: Any = None
        if job.proxy_url is not None:
            auth = {"Proxy-Authorization": job.proxy_auth} if job.proxy_auth else None
            proxy = httpx.Proxy(job.proxy_url, headers=auth)
        # No HTTP_PROXY, SSL_CERT_FILE or the like from the environment.
        return _HttpxSession(httpx.Client(timeout=job.timeout, verify=verify, trust_env=False,
                                          proxy=proxy, http1=h1, http2=h2))

    def request(self, session: Any, method: str, url: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes, int]:
        r = session.client.request(method, url, content=body, headers=headers)
        data = r.content
        stream = r.extensions.get("network_stream")
        if stream is not session.last:
            session.streams += 1
            session.last = stream
        return r.status_code, data, _head_bytes(r.status_code, r.reason_phrase,
                                                list(r.headers.items()))

    def connections(self, session: Any) -> int:
        return int(session.streams)

    def close(self, session: Any) -> None:
        session.client.close()


class _CurlSession:
    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.connects = 0


# libcurl's error codes by failure class (curl/curl.h): 35 SSL connect,
# 51 peer's name, 53/54 engine, 58/59 own certificate and cipher, 60 CA,
# 77 CA file, 80 shutdown, 83 issuer, 90/91 pinning and status.
_CURL_CLASSES = {28: "timeout", 6: "connect", 7: "connect", 18: "receive", 52: "receive",
                 55: "receive", 56: "receive",
                 **dict.fromkeys((35, 51, 53, 54, 58, 59, 60, 64, 66, 77, 80, 82, 83, 90, 91),
                                 "tls")}


class PycurlAgent(SyncAgent):
    name, module = "pycurl", "pycurl"
    unix_sockets = True
    http2 = True

    def speaks_http2(self) -> bool:
        """Its libcurl was built with HTTP/2 (nghttp2), as the wheel's is."""
        import pycurl
        return bool(pycurl.version_info()[4] & pycurl.VERSION_HTTP2)

    def version(self) -> str:
        import pycurl
        return str(pycurl.version.split()[0].split("/")[1])

    def classify(self, e: BaseException) -> str:
        import pycurl
        if isinstance(e, pycurl.error) and e.args and isinstance(e.args[0], int):
            return _CURL_CLASSES.get(e.args[0], "exceptions")
        return super().classify(e)

    def open(self, job: _Job) -> _CurlSession:
        import pycurl
        c = pycurl.Curl()
        c.setopt(pycurl.TIMEOUT_MS, int(job.timeout * 1000))
        # The protocol the comparison names, and no other: libcurl offers h2
        # by ALPN unless told, and over http:// HTTP/2 is prior knowledge.
        if not job.trust.http2:
            c.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_1_1)
        elif job.tls:
            c.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_2_0)
        else:
            c.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE)
        # "" is libcurl's way to read no http_proxy from the environment.
        c.setopt(pycurl.PROXY, job.proxy_url or "")
        if job.proxy is not None and job.proxy.credentials is not None:
            c.setopt(pycurl.PROXYUSERPWD, ":".join(job.proxy.credentials))
        if job.unix_socket is not None:
            c.setopt(pycurl.UNIX_SOCKET_PATH, job.unix_socket)
        if job.tls:
            if not job.trust.verify:
                c.setopt(pycurl.SSL_VERIFYPEER, 0)
                c.setopt(pycurl.SSL_VERIFYHOST, 0)
            elif job.trust.cafile is not None:
                c.setopt(pycurl.CAINFO, os.fspath(job.trust.cafile))
        return _CurlSession(c)

    def request(self, session: Any, method: str, url: str, path: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[int, bytes, int]:
        import pycurl
        chunks: list[bytes] = []
        head = [0]

        def on_header(line: bytes) -> None:
            head[0] += len(line)

        c = session.handle
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
        session.connects += c.getinfo(pycurl.NUM_CONNECTS)
        return c.getinfo(pycurl.RESPONSE_CODE), b"".join(chunks), head[0]

    def connections(self, session: Any) -> int:
        return int(session.connects)

    def close(self, session: Any) -> None:
        session.handle.close()


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
                            head = _head_bytes(r.status, r.reason or "", list(r.headers.items()))
                            status = r.status
                    except Exception as e:  # noqa: BLE001 - counted in its class
                        ledger.fail(tally, self.classify(e), e)
                        continue
                    ledger.check(tally, status, data, head, t0)

            await asyncio.gather(*(worker(t) for t in job.tallies))
        job.tallies[0].connects = created[0]


AGENTS: dict[str, Agent] = {a.name: a for a in (
    HttpbenchAgent(), HttpClientAgent(), Urllib3Agent(), RequestsAgent(), HttpxAgent(),
    PycurlAgent(), AiohttpAgent(),
)}


def available_agents() -> list[str]:
    """The agents importable here, in the order the comparison runs them."""
    return [name for name, agent in AGENTS.items() if agent.available()]


def run_agent(agent_name: str, url: str, method: str = "GET", body: bytes | None = None,
              requests: int | None = 20_000, duration: float | None = None,
              concurrency: int = 1, timeout: float = 30.0, lengths_vary: bool = False,
              check_echo: bool = False, verify: bool = True,
              cafile: str | os.PathLike[str] | None = None,
              unix_socket: str | os.PathLike[str] | None = None,
              proxy: str | None = None, http2: bool = False) -> Result:
    """One agent through one scenario, measured as httpbench.run measures,
    by the same accounting rule (issued == complete + failed + cancelled).
    With check_echo the response body must be the request body (the C loop,
    which keeps no bodies, checks its length). Over https:// the server is
    verified (against cafile, else the system's CAs) unless verify=False.
    unix_socket: the server's Unix socket, for the agents that can reach
    one (Agent.unix_sockets); the URL still gives Host and the path.
    proxy: a forward proxy, "http://[user:pass@]host:port", that every
    agent goes through in its own way (absolute form, CONNECT for https).
    http2: over HTTP/2 (h2 by ALPN, h2c by prior knowledge), for the agents
    that speak it (Agent.speaks_http2)."""
    if agent_name not in AGENTS:
        raise ValueError(f"unknown agent {agent_name!r}; available here: "
                         f"{', '.join(available_agents())}")
    agent = AGENTS[agent_name]
    path = _check.unix_socket("unix_socket", unix_socket)
    if proxy is not None:
        split_proxy(proxy)  # checked once, before any agent starts
        if path is not None:
            raise ValueError("proxy and unix_socket are two ways to the server: give one")
    if path is not None and not agent.unix_sockets:
        raise ValueError(f"{agent_name} cannot connect to a Unix socket (the agents that can: "
                         f"{', '.join(a.name for a in AGENTS.values() if a.unix_sockets)})")
    if http2 and not agent.speaks_http2():
        raise ValueError(f"{agent_name} does not speak HTTP/2 here (the agents that do: "
                         f"{', '.join(a.name for a in AGENTS.values() if a.speaks_http2())})")
    trust = Trust(bool(verify), None if cafile is None else os.fspath(cafile), bool(http2))
    return agent.run(url, method, body, requests, duration, concurrency, timeout, lengths_vary,
                     check_echo, trust, path, proxy)

"""Types of the C extension httpbench._core."""

import os
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypedDict, TypeVar, final, overload


MAX_LINE: int
MAX_HEAD: int
MAX_HEADERS: int
RND_MAX: int
REQ_HEAD: int
DELAY_MAX_MS: int
TLS_1_2: int
TLS_1_3: int
MAX_REQUESTS: int
MAX_CONCURRENCY: int
MAX_THREADS: int
MAX_PIPELINE: int
MAX_STREAMS: int
MAX_WINDOW: int
MAX_SOCKET_BUFFER: int
MAX_SCENARIO: int
MAX_BYTES: int
MAX_SECONDS: float
MAX_RATE: float
GRACE_SECONDS: float
OPENSSL_VERSION: str
# CONTINUATION frames an HTTP/2 header block may take on the client's and
# the server's sessions as built: 100 where the library's limit was set, its
# own default (8) where it was not, 0 where the library has no such limit
# (the server then counts its own 100).
H2_MAX_CONTINUATIONS: int
__version__: str

_T = TypeVar("_T")
_Text = str | bytes
_Headers = Mapping[str, _Text] | Mapping[bytes, _Text] | Iterable[tuple[_Text, _Text]]
_Path = str | bytes | os.PathLike[str] | os.PathLike[bytes]

class TLSInfo(TypedDict):
    protocol: str
    temp_key: str
    server_name: str
    resumed: bool

@final
class _TLS:
    """A TLS context for a run or the server; use httpbench.run and httpbench.Server."""

    def __init__(
        self,
        server: bool = False,
        *,
        verify: bool = True,
        cafile: _Path | None = None,
        certfile: _Path | None = None,
        keyfile: _Path | None = None,
        server_hostname: str | None = None,
        cert_host: str | None = None,
        tls_min: int | None = None,
        tls_max: int | None = None,
        ciphers: str | None = None,
        ciphersuites: str | None = None,
        resume: bool = True,
        http2: bool = False,
    ) -> None: ...
    def cert_pem(self) -> str | None: ...

@final
class Response:
    """An HTTP response read by Connection.request."""

    @property
    def status(self) -> int: ...
    @property
    def reason(self) -> str: ...
    @property
    def version(self) -> str:
        """'HTTP/1.1' or 'HTTP/1.0'."""
    @property
    def headers(self) -> list[tuple[str, str]]:
        """The header fields in order, as (name, value) pairs."""
    @property
    def body(self) -> bytes: ...
    @overload
    def header(self, name: str) -> str | None: ...
    @overload
    def header(self, name: str, default: _T) -> str | _T: ...

class Connection:
    """One blocking keep-alive HTTP/1.1 connection (httpbench.Connection
    subclasses it, deciding a proxy's plan and a URL's parts in Python)."""

    def __init__(
        self,
        host: str,
        port: int,
        timeout: float | None = 30.0,
        *,
        max_body: int = 2**30,
        tls: bool = False,
        verify: bool = True,
        cafile: _Path | None = None,
        server_hostname: str | None = None,
        certfile: _Path | None = None,
        keyfile: _Path | None = None,
        unix_socket: _Path | None = None,
        http2: bool = False,
        _via: tuple[str, int, bytes | None, str | None, str | None, str] | None = None,
    ) -> None: ...
    @property
    def tls(self) -> bool: ...
    @property
    def http2(self) -> bool:
        """Whether it speaks HTTP/2 (one stream at a time)."""
    @property
    def proxy(self) -> str | None:
        """The forward proxy's host:port it goes through, or None."""
    @property
    def unix_socket(self) -> str | None:
        """The Unix socket's path it connects to, or None (TCP)."""
    @property
    def tls_info(self) -> TLSInfo | None:
        """What the open socket's handshake agreed on, or None."""
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def timeout(self) -> float | None: ...
    @property
    def is_open(self) -> bool: ...
    @property
    def requests(self) -> int: ...
    @property
    def connects(self) -> int: ...
    @property
    def retries(self) -> int: ...
    @property
    def bytes_sent(self) -> int: ...
    @property
    def bytes_received(self) -> int: ...
    def request(
        self,
        method: _Text,
        target: _Text,
        headers: _Headers | None = None,
        body: bytes | bytearray | memoryview | str | None = None,
    ) -> Response: ...
    def close(self) -> None: ...
    def __enter__(self) -> Connection: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

@final
class _ServerCore:
    """The embedded server's C half; use httpbench.Server."""

    def __init__(self, settings: Mapping[str, object]) -> None:
        """settings: hb_srv_config's fields by name. Needed: host, port,
        threads, max_body, max_buffered, header_timeout, send_timeout,
        idle_timeout, version; optional: threaded, static_dir, zero_copy,
        tls (a _TLS), unix_socket, proxy, allow ((name, port, address)
        tuples), upstream_timeout (10.0), http2, max_streams (100). A
        number out of range is a ValueError naming it; an unknown or
        missing name a TypeError."""
    @property
    def port(self) -> int | None: ...
    def stats(self) -> dict[str, int]:
        """The counts so far, by the names of SERVER_COUNTS, in its order."""
    def stop(self) -> None: ...

class Histogram:
    """A log-linear latency histogram in nanoseconds (1 ns to 36 min, within
    0.4%), merged exactly."""

    def __init__(self) -> None: ...
    @property
    def count(self) -> int: ...
    @property
    def min(self) -> int: ...
    @property
    def max(self) -> int: ...
    @property
    def mean(self) -> float: ...
    @property
    def stdev(self) -> float: ...
    @property
    def clamped(self) -> int: ...
    def record(self, ns: int, /) -> None: ...
    def merge(self, other: Histogram, /) -> None: ...
    def percentile(self, p: float, /) -> int: ...
    def buckets(self) -> list[tuple[int, int, int]]: ...
    def state(self) -> tuple[int, int, int, float, float, int, list[tuple[int, int]]]: ...
    def restore(
        self, state: tuple[int, int, int, float, float, int, list[tuple[int, int]]], /
    ) -> None: ...

@final
class _Bench:
    """A run of the C timing loop; use httpbench.run."""

    def __init__(self, settings: dict[str, Any], /) -> None:
        """settings: hb_bench_config's fields by name (csrc/py_bench.c's
        table): host, port, request (bytes) needed; requests, duration,
        concurrency, threads, timeout needed; head, keepalive, rate,
        lengths_vary, pipeline, idempotent, sequence, turns, seed, prepared,
        warmup_requests, warmup_seconds, tls, unix_socket, tunnel, stages,
        vus, scenario, http2, streams, window, publish (figures published
        each second for snapshot()), log ((fd, format, names, sample,
        seed, delay_ns, ring_records): the per-request log) optional."""
    def wait(self, seconds: float, /) -> bool: ...
    def stop(self) -> None: ...
    def progress(self) -> tuple[int, int, int]: ...
    def opened(self) -> tuple[str, str] | None: ...
    def prepared(self) -> bool: ...
    def go(self, start: float, /) -> None: ...
    def result(self) -> dict[str, Any]: ...
    def snapshot(self) -> dict[str, Any]:
        """The figures the loop threads last published (publish=True), as
        result() gives them, without the timeline, CPU time and
        per-connection rates."""
    def log_status(self) -> tuple[int, int, int]:
        """(written, dropped, errno) of the per-request log, once the run
        has ended."""

BENCH_SETTINGS: tuple[str, ...]
RESULT_COUNTS: tuple[str, ...]
#: The server's counters: (name, what it counts), in the order stats() gives them.
SERVER_COUNTS: tuple[tuple[str, str], ...]
RESULT_SECONDS: tuple[str, ...]
RESULT_HISTOGRAMS: tuple[str, ...]
RESULT_TEXTS: tuple[str, ...]

def timeline_percentiles(pairs: Sequence[tuple[int, int]], /) -> tuple[int, int]: ...
def build_request(
    method: _Text,
    target: _Text,
    headers: _Headers | None,
    body: bytes | bytearray | memoryview | str | None,
    host: bytes,
    *,
    origin: bytes = b"",
    proxy_auth: bytes = b"",
) -> tuple[bytes, int]: ...

"""The embedded target server: a C HTTP/1.1 server on its own threads.

    with httpbench.Server() as srv:
        srv.url("/rnd?c=2048")      # "http://127.0.0.1:PORT/rnd?c=2048"

    with httpbench.Server(tls=True) as srv:   # a fresh self-signed certificate
        srv.url("/")                # "https://127.0.0.1:PORT/"
        srv.cafile                  # a PEM file a client verifies it with

Endpoints: GET|HEAD /rnd?c=N (N printable pseudo-random bytes, up to
RND_MAX), POST|PUT /echo (the body back, Content-Type echoed), GET|HEAD
/static/PATH (a file under static_dir), GET /status/CODE, GET /delay?ms=N
(an empty 200 after N ms, stalling no other connection), GET /chunked?c=N.

    with httpbench.Server(proxy=True) as relay:   # also a forward proxy
        httpbench.run(target.url("/rnd?c=2048"), proxy=relay.url())
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterable
from types import TracebackType
from typing import Literal

from . import _check, _core
from ._version import __version__

__all__ = ["Server", "RND_MAX", "DELAY_MAX_MS"]

RND_MAX: int = _core.RND_MAX
DELAY_MAX_MS: int = _core.DELAY_MAX_MS

Mode = Literal["epoll", "threads"]


class Server:
    """The embedded target server, serving from the moment it is made.

    mode="epoll": `threads` event loops over non-blocking sockets.
    mode="threads": a blocking thread per connection (`threads` is unused).
    Binds 127.0.0.1 unless told otherwise; port=0 picks a free port.
    unix_socket="/path" listens on a Unix socket instead (port is then
    None): the file is made at start and removed at close; a stale socket
    left by a server that died is replaced, anything else there is an
    OSError.

    Limits: request bodies over `max_body` get 413 without being read; the
    request bodies held at once, over all connections, are at most
    `max_buffered` bytes (past it a body is refused with 503); a request
    head must arrive within `header_timeout` seconds of its first byte
    (slowloris; empty lines before it count); a client that stops reading
    is cut off after `send_timeout` seconds without progress; an idle
    kept-alive connection is closed after `idle_timeout` seconds.

    tls=True serves HTTPS (both modes, the same session code) with
    `certfile` and `keyfile` (PEM; the key may be in certfile), or with none
    given a fresh self-signed certificate (EC P-256, for `host`,
    "localhost", 127.0.0.1 and ::1, valid for a day), made in memory.
    `cafile` then names a PEM file of the certificate a client can verify
    against (a temporary file, removed at close); with certfile given it is
    certfile. Static files go by read and write over TLS (no sendfile:
    kernel TLS is not used). A client's handshake must be done, and its
    first request head in, within `header_timeout`; a plain HTTP request
    on the TLS port gets a 400 saying so.

    http2=True (the default: an HTTP/1.1 client never sends the preface)
    serves HTTP/2 too: on a plain port a connection that opens with the
    HTTP/2 preface (prior knowledge, h2c), over TLS one whose client picks
    h2 by ALPN. The same routes, a /delay holding its own stream only, at
    most `max_streams` streams open on a connection
    (SETTINGS_MAX_CONCURRENT_STREAMS; more are refused), and floods of
    RST_STREAM, PING, SETTINGS or empty DATA frames (over 100 a second),
    header blocks past 64 KiB however many CONTINUATION frames carry them,
    answered with GOAWAY ENHANCE_YOUR_CALM and a close. The relay stays
    HTTP/1.1.

    proxy=True makes it a forward proxy too (the seed's rabbit): requests
    in absolute form (`GET http://host:port/path`) are relayed to that
    server and CONNECT opens a tunnel, as ab -X and curl -x use them;
    requests for its own paths are answered as ever. It relays to loopback
    only, and to what `allow` names ("host" or "host:port" strings, each
    resolved now); any other destination is 403. zero_copy keeps its
    meaning: the kernel moves the bytes where it can, here splice(2)
    through a pipe for Content-Length bodies, bodies read until close and
    tunnels (chunked bodies are copied); zero_copy=False reads and writes
    through a buffer. A direction never holds more than 256 KiB (its pipe or buffer):
    a client that stops reading stops the upstream being read. A CONNECT
    to a port that refuses is 502, an upstream that does not answer within
    `upstream_timeout` seconds 504 (a stall after the response began cuts
    the client off), a request that comes round again 508. A request with
    both Content-Length and Transfer-Encoding is refused with 400 before a
    byte is forwarded. stats() then counts `relayed` responses and
    `tunnels`.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        mode: Mode = "epoll",
        threads: int = 1,
        static_dir: str | os.PathLike[str] | None = None,
        zero_copy: bool = True,
        *,
        max_body: int = 64 * 1024 * 1024,
        max_buffered: int = 256 * 1024 * 1024,
        header_timeout: float = 10.0,
        send_timeout: float = 10.0,
        idle_timeout: float = 60.0,
        tls: bool = False,
        certfile: str | os.PathLike[str] | None = None,
        keyfile: str | os.PathLike[str] | None = None,
        unix_socket: str | os.PathLike[str] | None = None,
        proxy: bool = False,
        allow: Iterable[str] | None = None,
        upstream_timeout: float = 10.0,
        http2: bool = True,
        max_streams: int = 100,
    ) -> None:
        if mode not in ("epoll", "threads"):
            raise ValueError(f"mode must be 'epoll' or 'threads', not {mode!r}")
        threads = _check.count("threads", threads, 1, _check.MAX_THREADS)
        port = _check.port("port", port, lo=0)
        unix_path = _check.unix_socket("unix_socket", unix_socket)
        if unix_path is not None and port != 0:
            raise ValueError("port and unix_socket are two places to listen: give one")
        max_body = _check.count("max_body", max_body, 0, _check.MAX_BYTES)
        max_buffered = _check.count("max_buffered", max_buffered, 1, _check.MAX_BYTES)
        header_timeout = _check.seconds("header_timeout", header_timeout)
        send_timeout = _check.seconds("send_timeout", send_timeout)
        idle_timeout = _check.seconds("idle_timeout", idle_timeout)
        upstream_timeout = _check.seconds("upstream_timeout", upstream_timeout)
        max_streams = _check.count("max_streams", max_streams, 1, _check.MAX_STREAMS)
        zero_copy, tls = _check.flag("zero_copy", zero_copy), _check.flag("tls", tls)
        proxy, http2 = _check.flag("proxy", proxy), _check.flag("http2", http2)
        if not proxy and allow is not None:
            raise ValueError("allow is the relay's list: it needs proxy=True")
        allowed = _check.allow(allow)
        directory = None
        if static_dir is not None:
            directory = os.fspath(static_dir)
            if not os.path.isdir(directory):
                raise NotADirectoryError(f"static_dir is not a directory: {directory}")
        self.host = host
        self.mode: Mode = mode
        self.threads = threads
        self.static_dir = directory
        self.zero_copy = zero_copy
        self.max_buffered = max_buffered
        if not tls and (certfile is not None or keyfile is not None):
            raise ValueError("certfile and keyfile are for tls=True")
        self.tls = bool(tls)
        self.proxy = bool(proxy)
        self.upstream_timeout = upstream_timeout
        self.http2 = bool(http2)
        self.max_streams = max_streams
        self.cafile: str | None = None
        self._tempdir: str | None = None
        context = None
        if tls:
            context = _core._TLS(server=True, certfile=certfile, keyfile=keyfile, cert_host=host,
                                 http2=self.http2)
        self._core: _core._ServerCore | None = _core._ServerCore({
            "host": host, "port": port, "threaded": mode == "threads", "threads": threads,
            "static_dir": directory, "zero_copy": zero_copy, "max_body": max_body,
            "header_timeout": header_timeout, "send_timeout": send_timeout,
            "idle_timeout": idle_timeout, "version": __version__, "max_buffered": max_buffered,
            "tls": context, "unix_socket": unix_path, "proxy": self.proxy, "allow": allowed,
            "upstream_timeout": upstream_timeout, "http2": self.http2,
            "max_streams": max_streams,
        })
        self.unix_socket = unix_path
        # On a Unix socket there is no port; URLs name "localhost" (for Host).
        self.port: int | None = None if unix_path is not None else self._core.port
        if context is not None:
            self.cafile = os.fspath(certfile) if certfile is not None else self._write_cafile(
                context.cert_pem() or "")

    def _write_cafile(self, pem: str) -> str:
        """The self-signed certificate in a file of a directory of its own,
        which close() removes."""
        self._tempdir = tempfile.mkdtemp(prefix="httpbench-tls-")
        path = os.path.join(self._tempdir, "cert.pem")
        with open(path, "w") as f:
            f.write(pem)
        return path

    @property
    def running(self) -> bool:
        return self._core is not None

    def url(self, path: str = "/") -> str:
        """The URL of `path` on this server: on a Unix socket
        http://localhost/path, to be reached with unix_socket= (curl's
        --unix-socket)."""
        path = path if path.startswith("/") else "/" + path
        scheme = "https" if self.tls else "http"
        if self.unix_socket is not None:
            return f"{scheme}://localhost{path}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}{path}"

    def stats(self) -> dict[str, int]:
        """Counts so far, by name: each of `httpbench.Server.COUNTS` (the
        manual's table says what each counts): connections accepted,
        responses sent, of those the answers to bad requests (rejected),
        connections cut off by a deadline (timeouts), and as a proxy,
        responses relayed from upstreams (relayed, not among `requests`)
        and CONNECT tunnels opened (tunnels); of the connections, those
        that spoke HTTP/2 (h2_connections), the streams their clients
        opened (h2_streams) and the connections ended for a flood
        (h2_calmed: GOAWAY ENHANCE_YOUR_CALM). After close(), the last
        counts."""
        core = self._core
        return dict(core.stats() if core is not None else self._final)

    def close(self) -> None:
        """Stops serving: every connection is closed, every thread ends."""
        core, self._core = self._core, None
        if core is not None:
            self._final = core.stats()
            core.stop()
        tempdir, self._tempdir = self._tempdir, None
        if tempdir is not None:
            for name in os.listdir(tempdir):
                os.unlink(os.path.join(tempdir, name))
            os.rmdir(tempdir)

    def serve_forever(self) -> None:
        """Blocks until Ctrl-C (KeyboardInterrupt propagates), then closes."""
        try:
            threading.Event().wait()
        finally:
            self.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self.url() if self.unix_socket is None else f"{self.url()} on {self.unix_socket}"
        state = "serving " + where if self.running else "closed"
        return f"<httpbench.Server {self.mode}, {state}>"

    #: The names stats() gives, in its order, each with what it counts
    #: (the C server's one list of counters, csrc/server.h).
    COUNTS: tuple[tuple[str, str], ...] = _core.SERVER_COUNTS
    _final: dict[str, int] = dict.fromkeys((name for name, _ in _core.SERVER_COUNTS), 0)
    _core: _core._ServerCore | None = None  # until __init__ starts one
    _tempdir: str | None = None

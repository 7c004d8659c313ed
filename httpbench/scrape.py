"""The HTTP side of /metrics: a small server for scrapers, bounded against
clients that are not (httpbench.metrics makes what it serves).

One thread serves every connection from a selector, so a slow client holds
a descriptor, never a thread. A request head must be whole within
HEAD_SECONDS of its first byte (of the connection's accept, for its first
request); a kept-alive connection may wait IDLE_SECONDS between requests;
a response not taken within HEAD_SECONDS is dropped with its connection.
At most MAX_CONNECTIONS are open at once: one more closes the one that has
waited longest without a request under way. The listen backlog is
BACKLOG, not http.server's 5. close() closes the listener and every
connection it accepted.

What is served is negotiated by the Accept header, as prometheus_client's
choose_encoder does: the OpenMetrics text when the scraper asks for
application/openmetrics-text (Prometheus does), else Prometheus's classic
text format 0.0.4 (curl, promtool, older scrapers)."""

from __future__ import annotations

import errno
import selectors
import socket
import threading
import time
from collections.abc import Callable

__all__ = ["MetricsServer", "OPENMETRICS", "CLASSIC", "wants_openmetrics", "HEAD_SECONDS",
           "IDLE_SECONDS", "MAX_CONNECTIONS", "BACKLOG"]

OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
CLASSIC = "text/plain; version=0.0.4; charset=utf-8"
HEAD_SECONDS = 3.0
IDLE_SECONDS = 30.0
MAX_CONNECTIONS = 16
BACKLOG = 128
MAX_HEAD = 8192
# The select's wake-up, so deadlines and close() are seen within it.
_POLL_SECONDS = 0.1


def wants_openmetrics(accept: str | None) -> bool:
    """Whether an Accept header asks for the OpenMetrics text: one of its
    media ranges is application/openmetrics-text (any parameters)."""
    return any(part.split(";", 1)[0].strip().lower() == "application/openmetrics-text"
               for part in (accept or "").split(","))


class _Conn:
    """One accepted connection: what it sent, what it is sent, and until
    when it may take (deadline)."""

    def __init__(self, sock: socket.socket, now: float) -> None:
        self.sock = sock
        self.rx = b""
        self.tx = b""
        self.close_after = False
        self.deadline = now + HEAD_SECONDS
        self.waiting = True  # no request under way: the one to close for room
        self.since = now


class MetricsServer:
    """Serves text(openmetrics) at http://HOST:PORT/metrics from a thread of
    its own, from start() to close(). The address is bound at once, so a
    port in use is an OSError before the run begins."""

    def __init__(self, address: tuple[str, int], text: Callable[[bool], str]) -> None:
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.listener = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.listener.bind(address)
            self.listener.listen(BACKLOG)
            self.listener.setblocking(False)
        except OSError:
            self.listener.close()
            raise
        self.text = text
        self.conns: dict[socket.socket, _Conn] = {}
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, name="httpbench-metrics", daemon=True)

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    def set(self, text: Callable[[bool], str]) -> None:
        """What is served from now on."""
        self.text = text

    def start(self) -> MetricsServer:
        self.thread.start()
        return self

    def linger(self, seconds: float) -> None:
        """Keeps serving for `seconds` (Ctrl-C ends it early)."""
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                time.sleep(min(0.1, max(0.0, end - time.monotonic())))
        except KeyboardInterrupt:
            pass

    def close(self) -> None:
        """Stops serving: the listener and every connection are closed."""
        self.stopping = True
        if self.thread.is_alive():
            self.thread.join()
        for conn in list(self.conns.values()):
            self._drop(conn)
        self.selector.close()
        self.listener.close()

    # ---- the loop

    def _serve(self) -> None:
        while not self.stopping:
            for key, events in self.selector.select(_POLL_SECONDS):
                if key.fileobj is self.listener:
                    self._accept()
                else:
                    conn = self.conns.get(key.fileobj)  # type: ignore[call-overload]
                    if conn is not None:
                        self._on_event(conn, events)
            now = time.monotonic()
            for conn in [c for c in self.conns.values() if now >= c.deadline]:
                self._drop(conn)

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except BlockingIOError:
                return
            except OSError as e:
                if e.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    return  # (the backlog holds it until a descriptor is free)
                continue
            if len(self.conns) >= MAX_CONNECTIONS:
                idle = [c for c in self.conns.values() if c.waiting] or list(self.conns.values())
                self._drop(min(idle, key=lambda c: c.since))
            sock.setblocking(False)
            conn = _Conn(sock, time.monotonic())
            self.conns[sock] = conn
            self.selector.register(sock, selectors.EVENT_READ)

    def _drop(self, conn: _Conn) -> None:
        self.conns.pop(conn.sock, None)
        try:
            self.selector.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        conn.sock.close()

    def _on_event(self, conn: _Conn, events: int) -> None:
        if events & selectors.EVENT_WRITE:
            self._write(conn)
            return
        try:
            chunk = conn.sock.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(conn)
            return
        if not conn.rx and conn.waiting and conn.deadline - time.monotonic() > HEAD_SECONDS:
            conn.deadline = time.monotonic() + HEAD_SECONDS  # a kept-alive one's next head
        conn.rx += chunk
        end = conn.rx.find(b"\r\n\r\n")
        if end < 0:
            if len(conn.rx) > MAX_HEAD:
                self._respond(conn, 431, "text/plain", b"request head too large\n", close=True)
            return
        head, conn.rx = conn.rx[:end].decode("latin-1"), conn.rx[end + 4:]
        self._request(conn, head)

    def _request(self, conn: _Conn, head: str) -> None:
        lines = head.split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            self._respond(conn, 400, "text/plain", b"bad request line\n", close=True)
            return
        method, target, version = parts
        fields: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                self._respond(conn, 400, "text/plain", b"bad header field\n", close=True)
                return
            fields[name.strip().lower()] = value.strip()
        close = version == "HTTP/1.0" or fields.get("connection", "").lower() == "close"
        if fields.get("content-length", "0") != "0" or "transfer-encoding" in fields:
            # (No body is read here: the connection could not be reused.)
            self._respond(conn, 400, "text/plain", b"no request body is taken\n", close=True)
        elif method not in ("GET", "HEAD"):
            self._respond(conn, 405, "text/plain", b"GET or HEAD only\n", close=close,
                          extra="Allow: GET, HEAD\r\n")
        elif target.split("?", 1)[0] != "/metrics":
            self._respond(conn, 404, "text/plain",
                          b"not found: the metrics are at /metrics\n", close=close,
                          head_only=method == "HEAD")
        else:
            om = wants_openmetrics(fields.get("accept"))
            try:
                body = self.text(om).encode()
            except Exception as e:  # the snapshot failed: say so, do not hang
                self._respond(conn, 500, "text/plain",
                              f"httpbench: the figures could not be read: {e}\n".encode(),
                              close=close)
                return
            self._respond(conn, 200, OPENMETRICS if om else CLASSIC, body, close=close,
                          head_only=method == "HEAD")

    def _respond(self, conn: _Conn, status: int, ctype: str, body: bytes, close: bool,
                 extra: str = "", head_only: bool = False) -> None:
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
                  431: "Request Header Fields Too Large", 500: "Internal Server Error"}[status]
        if ctype == "text/plain":
            ctype = "text/plain; charset=utf-8"
        head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(body)}\r\n{extra}"
                f"{'Connection: close' + chr(13) + chr(10) if close else ''}\r\n")
        conn.tx += head.encode() + (b"" if head_only else body)
        conn.close_after = close
        conn.waiting = False
        conn.deadline = time.monotonic() + HEAD_SECONDS  # to take it
        self._write(conn)

    def _write(self, conn: _Conn) -> None:
        try:
            n = conn.sock.send(conn.tx)
        except BlockingIOError:
            n = 0
        except OSError:
            self._drop(conn)
            return
        conn.tx = conn.tx[n:]
        if conn.tx:
            self.selector.modify(conn.sock, selectors.EVENT_WRITE)
            return
        if conn.close_after:
            self._drop(conn)
            return
        self.selector.modify(conn.sock, selectors.EVENT_READ)
        now = time.monotonic()
        conn.waiting, conn.since = True, now
        conn.deadline = now + (HEAD_SECONDS if conn.rx else IDLE_SECONDS)
        if conn.rx:  # a pipelined request came with the last
            end = conn.rx.find(b"\r\n\r\n")
            if end >= 0:
                head, conn.rx = conn.rx[:end].decode("latin-1"), conn.rx[end + 4:]
                self._request(conn, head)

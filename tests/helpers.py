"""Helpers the tests share (and the benchmarks borrow): a scripted
raw-socket server (over TLS too), reading one HTTP message off a raw
socket, nginx as a peer, certificates made with the openssl command, and
the environment for programs not built here.

The scripted server plays exact byte sequences, one script per accepted
connection, so every framing and bad-input case is a real exchange over a
real socket (as urllib3's test_socketlevel.py does it).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import httpbench

__all__ = ["Step", "answers_at_speed", "read_message", "ScriptedServer", "tool_env", "pinned",
           "free_port", "wait_for_port", "find_nginx", "nginx", "make_pki", "server_context",
           "tinyproxy", "read_messages", "OK", "exact", "python", "hb", "side_by_side",
           "grep_each", "wait_for_requests"]

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def exact(r: httpbench.Result) -> None:
    """The one accounting rule (docs/design.md)."""
    assert r.issued == r.complete + r.failed + r.cancelled, r.to_dict()
    assert r.failed == sum(r.failures.values())


def python(code: str, cwd: Path, timeout: float = 60, **kw: Any) -> subprocess.CompletedProcess[str]:
    """Runs code in a child Python (a signal, a lowered limit or a crash
    stays there)."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout, **kw)


def hb(*args: str, cwd: Path | str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """The command line, in a child Python."""
    return subprocess.run([sys.executable, "-m", "httpbench", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout)


def within_a_second(run: Callable[[], subprocess.CompletedProcess[str]]
                    ) -> subprocess.CompletedProcess[str]:
    """run(), again from the start of the next second while it spanned a
    wall-clock second's end (up to four tries; none more for a run that
    took a second or longer, which cannot fit): a server's Date changes
    there, and over HTTP/2 HPACK sends the new one once on each connection,
    so a run across it reads some 23 bytes a connection more than one
    within a second (h2load's and httpbench's totals differed by 46 so)."""
    for _ in range(4):
        t0 = time.time()
        done = run()
        t1 = time.time()
        if int(t1) == int(t0) or t1 - t0 >= 1.0:
            break
        # (Not a wait for something to happen: the next try starts as a
        # second begins, so it has the whole second to finish in.)
        time.sleep(1.0 - time.time() % 1.0)
    return done


def side_by_side(tool: str, args: Sequence[str], url: str, cwd: Path | str,
                 ours_ok: tuple[int, ...] = (0,), one_second: bool = False
                 ) -> tuple[str, str]:
    """The same command line through the real tool and through `httpbench
    TOOL`: their standard outputs (the real tool exits 0, httpbench with a
    status in ours_ok). one_second: each run within a wall-clock second
    (within_a_second), for byte counts that a server's Date would move."""
    binary = shutil.which(tool)
    assert binary is not None, tool
    again = within_a_second if one_second else (lambda run: run())
    real = again(lambda: subprocess.run([binary, *args, url], capture_output=True, text=True,
                                        cwd=cwd, env=tool_env(), timeout=120))
    ours = again(lambda: hb(tool, *args, url, cwd=cwd, timeout=120))
    assert real.returncode == 0, real.stderr
    assert ours.returncode in ours_ok, ours.stderr
    return real.stdout, ours.stdout


def grep_each(patterns: dict[str, str], out: str) -> dict[str, tuple[str | Any, ...]]:
    """Each pattern's groups in out (a line each, re.M); each must match."""
    found = {}
    for name, pattern in patterns.items():
        m = re.search(pattern, out, re.M)
        assert m is not None, (name, out)
        found[name] = m.groups()
    return found


def tool_env() -> dict[str, str]:
    """The environment for programs not built here: without the ASan
    runtime that a sanitizer test run preloads (curl hangs under it)."""
    return {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}


def env_of(argv: Sequence[str]) -> dict[str, str] | None:
    """The environment to run argv in: tool_env() for a program not built
    here; None (this one's, the sanitizer runtime kept, which a sanitized
    core needs first) for this Python running httpbench."""
    return None if argv[0] == sys.executable else tool_env()


# A test of two processes each on a CPU of its own (the server on one,
# the client on the other): skipped where this process has one CPU.
TWO_CPUS = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                              reason="needs two CPUs: the server on one, the client on the other")


def pinned(cpu: int | None, argv: list[str]) -> list[str]:
    """argv run on one CPU, when taskset exists and the CPU does."""
    if cpu is None or shutil.which("taskset") is None or cpu >= (os.cpu_count() or 1):
        return argv
    return ["taskset", "-c", str(cpu), *argv]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int | str, proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Waits until something accepts on 127.0.0.1:port, or on the Unix
    socket at port when it is a path."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            if isinstance(port, str):
                with socket.socket(socket.AF_UNIX) as s:
                    s.settimeout(0.5)
                    s.connect(port)
            else:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


Step = tuple[Any, ...]


def answers_at_speed(port: int, path: str, count: int, within: float = 0.5) -> None:
    """Asserts that `count` keep-alive GETs of `path` complete within
    `within` seconds: what a stalled or slow connection beside them must not
    hold up."""
    t0 = time.monotonic()
    with httpbench.Connection("127.0.0.1", port) as conn:
        for _ in range(count):
            assert conn.request("GET", path).status == 200
    assert time.monotonic() - t0 < within


def _until_head_end(sock: socket.socket) -> tuple[bytes, bool]:
    """What a raw socket gives until a head's blank line is in, and whether
    it is (False: the peer closed first)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data, False
        data += chunk
    return data, True


def read_message(sock: socket.socket) -> bytes:
    """Reads one request or response (head and Content-Length body) from a
    raw socket; what came before EOF if it closed first."""
    data, whole = _until_head_end(sock)
    if not whole:
        return data
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return head + b"\r\n\r\n" + rest


def read_head(sock: socket.socket) -> bytes | None:
    """Reads until a head's end; the head (without its blank line), or None
    if the peer closed first. What came after it is dropped."""
    data, whole = _until_head_end(sock)
    return data.split(b"\r\n\r\n")[0] if whole else None


def serve_one(handle: Any) -> socket.socket:
    """A listening socket on 127.0.0.1 whose first connection a thread hands
    to handle(conn), closing it after; the caller closes the listener."""
    lsock = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        try:
            conn, _ = lsock.accept()
        except OSError:
            return
        with conn:
            handle(conn)

    threading.Thread(target=serve, daemon=True).start()
    return lsock


@contextmanager
def full_backlog(path: str) -> Iterator[socket.socket]:
    """A Unix socket at path that listens and never accepts, its backlog
    filled by connections held open: a live server far behind."""
    lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    lsock.bind(path)
    lsock.listen(0)
    held = []
    try:
        for _ in range(4):
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.setblocking(False)
            try:
                c.connect(path)
            except BlockingIOError:
                pass
            held.append(c)
        yield lsock
    finally:
        for c in held:
            c.close()
        lsock.close()


def read_messages(sock: socket.socket, count: int) -> list[bytes]:
    """Reads `count` requests (heads and Content-Length bodies) that may
    have come together, as pipelined ones do; fewer if it closed first."""
    data, out = b"", []
    while len(out) < count:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if len(rest) >= length:
                out.append(head + sep + rest[:length])
                data = rest[length:]
                continue
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return out


class TLSStream:
    """A server side of TLS over a raw socket through memory BIOs, so that a
    script decides exactly which encrypted bytes leave: a record can be cut
    short, close_notify sent mid-body, or the socket closed without it."""

    def __init__(self, raw: socket.socket, context: ssl.SSLContext) -> None:
        self.raw, self.inc, self.out = raw, ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.inc, self.out, server_side=True)
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                if not self._pull():
                    raise ConnectionError("the client left during the handshake") from None
        self.flush()  # the last flight and TLS 1.3's tickets

    def _pull(self) -> bool:
        self.flush()
        data = self.raw.recv(65536)
        if data:
            self.inc.write(data)
        return bool(data)

    def flush(self) -> None:
        data = self.out.read()
        if data:
            self.raw.sendall(data)

    def recv(self, n: int) -> bytes:
        while True:
            try:
                return self.tls.read(n)
            except ssl.SSLWantReadError:
                if not self._pull():
                    return b""
            except ssl.SSLZeroReturnError:
                return b""

    def sendall(self, data: bytes) -> None:
        self.tls.write(data)
        self.flush()

    def sealed(self, data: bytes) -> bytes:
        """data as the records that would carry it, not sent."""
        self.tls.write(data)
        return self.out.read()

    def close_notify(self) -> None:
        try:
            self.tls.unwrap()
        except ssl.SSLWantReadError:
            pass  # sent; the client's own close_notify is not awaited
        self.flush()


@contextmanager
def answering(reply: bytes, delay: Callable[[int], float] = lambda _: 0.0) -> Iterator[str]:
    """A server on 127.0.0.1 answering every request of its k-th connection
    (from 0) with `reply` after delay(k) seconds, never closing first.
    Yields its URL."""
    lsock = socket.create_server(("127.0.0.1", 0))

    def serve(conn: socket.socket, wait: float) -> None:
        with conn:
            while True:
                try:
                    if not read_message(conn):
                        return
                    if wait:
                        time.sleep(wait)
                    conn.sendall(reply)
                except OSError:
                    return

    def accept() -> None:
        index = 0
        while True:
            try:
                conn, _ = lsock.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn, delay(index)), daemon=True).start()
            index += 1

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{lsock.getsockname()[1]}/"
    finally:
        lsock.close()


class ScriptedServer:
    """Accepts connections on 127.0.0.1 and runs one script on each.

    A script is a list of steps:
      ("recv",)            read one request (recorded in `requests`)
      ("recv_pipeline", n) read n requests that may come together
      ("send", data)       send data at once
      ("trickle", data)    send data one byte per segment
      ("sleep", seconds)
      ("close",)           close (FIN; over TLS without close_notify)
      ("half_close",)      shut down the sending side, keep reading
      ("reset",)           close with RST (SO_LINGER 0)
    On a Unix socket when `unix` names a path (port is then None).
    And over TLS (tls= a server SSLContext, the handshake done first):
      ("close_notify",)    send TLS's close_notify, then close
      ("send_cut", data, n)  the records carrying data, only their first n
                           bytes (a record cut short), then close
      ("send_records", chunks)  each chunk in a record of its own, all the
                           records in one write (so they arrive together)
      ("send_plain", data)  data on the socket as it is, outside any record
                           (a record the client's TLS refuses)
    After its last step a script waits for the client to close. Connections
    beyond the scripts are closed at once.
    """

    def __init__(self, scripts: Sequence[Sequence[Step]], host: str = "127.0.0.1",
                 tls: ssl.SSLContext | None = None, unix: str | None = None) -> None:
        self.tls = tls
        self.scripts = list(scripts)
        self.requests: list[bytes] = []
        self.connections = 0
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self.port: int | None = None
        if unix is not None:
            self._sock = socket.socket(socket.AF_UNIX)
            self._sock.bind(unix)
            self._sock.listen()
        else:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            self._sock = socket.create_server((host, 0), family=family)
            self.port = self._sock.getsockname()[1]
        self._sock.settimeout(0.05)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            index = self.connections
            self.connections += 1
            script = self.scripts[index] if index < len(self.scripts) else [("close",)]
            threading.Thread(target=self._run, args=(conn, script), daemon=True).start()

    def _run(self, conn: socket.socket, script: Sequence[Step]) -> None:
        if conn.family != socket.AF_UNIX:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            io: Any = conn if self.tls is None else TLSStream(conn, self.tls)
            for step in script:
                kind = step[0]
                if kind == "recv":
                    self.requests.append(read_message(io))
                elif kind == "recv_pipeline":
                    self.requests.extend(read_messages(io, step[1]))
                elif kind == "send":
                    io.sendall(step[1])
                elif kind == "trickle":
                    for i in range(len(step[1])):
                        io.sendall(step[1][i : i + 1])
                        time.sleep(0.0005)
                elif kind == "close_notify":
                    io.close_notify()
                    conn.close()
                    return
                elif kind == "send_records":
                    conn.sendall(b"".join(io.sealed(chunk) for chunk in step[1]))
                elif kind == "send_plain":
                    conn.sendall(step[1])
                elif kind == "send_cut":
                    conn.sendall(io.sealed(step[1])[: step[2]])
                    conn.close()
                    return
                elif kind == "sleep":
                    self._stop.wait(step[1])
                elif kind == "half_close":
                    conn.shutdown(socket.SHUT_WR)
                elif kind == "close":
                    conn.close()
                    return
                elif kind == "reset":
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    conn.close()
                    return
                else:
                    raise ValueError(f"unknown step {kind!r}")
            conn.settimeout(0.05)
            while not self._stop.is_set():
                try:
                    if not conn.recv(65536):
                        break
                except TimeoutError:
                    continue
        except OSError:
            pass  # the client went away; what it saw is the test's business
        except BaseException as e:  # noqa: BLE001 - reported by close()
            self.errors.append(e)
        finally:
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        self._thread.join(5)
        assert not self.errors, self.errors


NGINX_CONF = """
{user}
worker_processes 1;
daemon off;
error_log {tmp}/error.log;
pid {tmp}/nginx.pid;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    keepalive_requests {keepalive_requests};
    types {{ text/plain txt; }}
    {extra}
    server {{
        listen 127.0.0.1:{port}{listen};
        {unix}
        root {tmp}/www;
        {server}
    }}
}}
"""


def make_pki(directory: Path) -> dict[str, Path]:
    """Certificates made with the openssl command (EC P-256, a test CA's):
    ca (the CA), server (localhost and 127.0.0.1, with server_key), wrong
    (for wrong.example only), expired (localhost, ended in 2020), client
    (a client certificate, with client_key). Paths by name."""
    d = Path(directory)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True,
                       env=tool_env())

    def key_and_csr(name: str, cn: str, san: str | None) -> None:
        extra = ["-addext", f"subjectAltName={san}"] if san else []
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", f"{name}_key.pem", "-out", f"{name}.csr", "-subj", f"/CN={cn}",
                *extra)

    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca_key.pem", "-out", "ca.pem", "-days", "2", "-subj",
            "/CN=httpbench test CA")
    # `openssl ca` (not x509 -req) for its -startdate/-enddate: an expired
    # certificate is made, not waited for.
    (d / "ca.cnf").write_text(
        "[ca]\ndefault_ca = own\n[own]\ndatabase = index.txt\nnew_certs_dir = .\n"
        "serial = serial\ndefault_md = sha256\npolicy = any\ncopy_extensions = copy\n"
        "unique_subject = no\n[any]\ncommonName = supplied\n")
    (d / "index.txt").write_text("")
    (d / "serial").write_text("01\n")
    for name, cn, san, dates in (
            ("server", "localhost", "DNS:localhost,IP:127.0.0.1", ["-days", "2"]),
            ("wrong", "wrong.example", "DNS:wrong.example", ["-days", "2"]),
            ("expired", "localhost", "DNS:localhost,IP:127.0.0.1",
             ["-startdate", "20200101000000Z", "-enddate", "20200102000000Z"]),
            ("client", "httpbench client", None, ["-days", "2"])):
        key_and_csr(name, cn, san)
        openssl("ca", "-batch", "-config", "ca.cnf", "-cert", "ca.pem", "-keyfile", "ca_key.pem",
                "-in", f"{name}.csr", "-out", f"{name}.pem", "-notext", *dates)
    return {name: d / f"{name}.pem" for name in ("ca", "server", "wrong", "expired", "client")} | {
        f"{name}_key": d / f"{name}_key.pem" for name in ("server", "wrong", "expired", "client")}


def server_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A Python ssl server context for cert and key."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx


@contextmanager
def recording() -> Iterator[tuple[str, list[tuple[str, dict[str, str], bytes]]]]:
    """An HTTP/1.1 server on 127.0.0.1 that answers every request, of any
    method, 200 with "ok", and records each: its method, its fields (by
    name as sent) and its body. Yields its URL and the list."""
    import http.server
    seen: list[tuple[str, dict[str, str], bytes]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def __getattr__(self, name: str) -> Any:
            if not name.startswith("do_"):
                raise AttributeError(name)
            return self._answer

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            seen.append((self.command, dict(self.headers), body))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def find_nginx() -> str | None:
    return shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)


@contextmanager
def nginx(cpu: int | None = None, size: int = 2048, keepalive_requests: int = 100_000_000,
          extra: str = "", tls: str = "", unix_socket: str | None = None,
          http2: bool = False, h2c_port: int | None = None) -> Iterator[tuple[int, Path] | None]:
    """nginx with one worker and no access log, serving /rnd (any query) as
    `size` random printable bytes from its root. Yields (port, root), or
    None if nginx is not installed; `extra` is added to the http block. With
    `tls` (ssl_* directives: at least ssl_certificate and its key) it
    listens with ssl. With `unix_socket` (a path) it listens there too.
    With http2 the port speaks HTTP/2 (h2 by ALPN beside ssl, else h2c by
    prior knowledge, when it refuses HTTP/1.1); h2c_port (a free port) adds
    a server block of its own speaking h2c there, from the same root."""
    binary = find_nginx()
    if binary is None:
        print("nginx: skipped (apt-get install nginx-light)", file=sys.stderr)
        yield None
        return
    with tempfile.TemporaryDirectory() as tmp:
        # As root nginx's workers drop to nobody, who must read the root.
        os.chmod(tmp, 0o755)
        www = Path(tmp) / "www"
        www.mkdir()
        (www / "rnd").write_bytes(bytes(33 + b % 94 for b in os.urandom(size)))
        port = free_port()
        unix = f"listen unix:{unix_socket}{' ssl' if tls else ''};" if unix_socket else ""
        user = "user root;" if os.geteuid() == 0 else ""
        conf = Path(tmp) / "nginx.conf"
        if h2c_port is not None:
            extra += f"\nserver {{ listen 127.0.0.1:{h2c_port} http2; root {tmp}/www; }}\n"
        conf.write_text(NGINX_CONF.format(tmp=tmp, port=port, unix=unix, user=user, extra=extra,
                                          keepalive_requests=keepalive_requests,
                                          listen=(" ssl" if tls else "") +
                                          (" http2" if http2 else ""), server=tls))
        proc = subprocess.Popen(pinned(cpu, [binary, "-p", tmp, "-c", str(conf)]),
                                stderr=subprocess.DEVNULL, env=tool_env())
        try:
            wait_for_port(port, proc)
            if unix_socket is not None:
                wait_for_port(unix_socket, proc)
            if h2c_port is not None:
                wait_for_port(h2c_port, proc)
            yield port, www
        finally:
            proc.terminate()
            proc.wait(10)


@contextmanager
def tinyproxy(auth: tuple[str, str] | None = None,
              cpu: int | None = None) -> Iterator[int | None]:
    """Debian's tinyproxy, a forward proxy no one here wrote, on a free port
    of 127.0.0.1 (with Basic credentials when `auth`, pinned to `cpu` when
    given); yields its port, or None if it is not installed."""
    binary = shutil.which("tinyproxy") or (
        "/usr/bin/tinyproxy" if os.path.exists("/usr/bin/tinyproxy") else None)
    if binary is None:
        print("tinyproxy: skipped (apt-get install tinyproxy)", file=sys.stderr)
        yield None
        return
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        conf = Path(tmp) / "tinyproxy.conf"
        lines = [f"Port {port}", "Listen 127.0.0.1", "Timeout 30", "MaxClients 500",
                 "Allow 127.0.0.1", "LogLevel Critical", "DisableViaHeader Yes"]
        if auth is not None:
            lines.append(f"BasicAuth {auth[0]} {auth[1]}")
        if os.geteuid() == 0:
            lines += ["User root", "Group root"]
        conf.write_text("\n".join(lines) + "\n")
        with listening(pinned(cpu, [binary, "-d", "-c", str(conf)]), port, tool_env()):
            yield port


@contextmanager
def listening(argv: list[str], port: int, env: dict[str, str] | None = None
              ) -> Iterator[subprocess.Popen]:
    """A server process (argv) until its port takes connections; stopped
    (SIGTERM) when the block ends."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, cwd="/")
    try:
        wait_for_port(port, proc)
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def burner(cpu: int) -> Iterator[None]:
    """A Python busy loop of the tests' own on `cpu` (stopped by its PID):
    the other work on a machine that is not the run's own."""
    proc = subprocess.Popen(pinned(cpu, [sys.executable, "-c", "while True: pass"]))
    try:
        yield
    finally:
        proc.kill()
        proc.wait(10)


def wait_for_requests(srv: Any, n: int, proc: subprocess.Popen) -> None:
    """Until a run's requests reach the server srv (httpbench.Server: a
    start can be slow under one CPU or a sanitizer), or the run ended by
    itself."""
    deadline = time.monotonic() + 20
    while srv.stats()["requests"] < n and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)

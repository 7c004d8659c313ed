"""Helpers the benchmark scripts share: pinning, the floor, nginx.

See ../shared/bench/README.md: one connection pins client and server to the
same CPU; ratios between programs measured in the same run are what count.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("HTTPBENCH_SHARED", ROOT.parent / "shared"))


def tool_env() -> dict[str, str]:
    """The environment for programs not built here: without the ASan
    runtime that a sanitizer test run preloads (curl hangs under it)."""
    return {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}


def pinned(cpu: int | None, argv: list[str]) -> list[str]:
    """argv run on one CPU, when taskset exists and the CPU does."""
    if cpu is None or shutil.which("taskset") is None or cpu >= (os.cpu_count() or 1):
        return argv
    return ["taskset", "-c", str(cpu), *argv]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def python_child(code: str, *args: str) -> list[str]:
    """argv for a child Python running code. Run it with cwd="/" (as
    CHILD_CWD): from the repository's root, `python -c` would import the
    source tree's httpbench, which has no built _core."""
    return [sys.executable, "-c", code, *args]


CHILD_CWD = "/"


def build_floor(workdir: Path, name: str = "floor") -> Path | None:
    """Compiles ../shared/bench/NAME.c (floor.c or floor_many.c); None, with
    a skip line, if it cannot."""
    src = SHARED / "bench" / f"{name}.c"
    cc = shutil.which("cc") or shutil.which("gcc")
    if not src.exists() or cc is None:
        print(f"{name}: skipped ({src} or a C compiler is missing)", file=sys.stderr)
        return None
    out = workdir / name
    subprocess.run([cc, "-O2", "-o", str(out), str(src)], check=True)
    return out


def run_floor_many(floor_many: Path, cpu: int | None, port: int, target: str, conns: int,
                   count: int) -> tuple[float, float]:
    """(req/s, CPU us per request) of one floor_many.c run."""
    out = subprocess.run(pinned(cpu, [str(floor_many), "127.0.0.1", str(port), target,
                                      str(conns), str(count)]),
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"= (\d+) req/s, CPU ([\d.]+) us/req", out)
    if m is None:
        raise RuntimeError(f"unexpected floor_many output: {out!r}")
    return float(m.group(1)), float(m.group(2))


def run_floor(floor: Path, cpu: int | None, port: int, target: str, count: int) -> float:
    """req/s of one floor.c run."""
    out = subprocess.run(pinned(cpu, [str(floor), "127.0.0.1", str(port), target, str(count)]),
                         check=True, capture_output=True, text=True).stdout
    m = re.search(r"= (\d+) req/s", out)
    if m is None:
        raise RuntimeError(f"unexpected floor output: {out!r}")
    return float(m.group(1))


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
        listen 127.0.0.1:{port};
        root {tmp}/www;
    }}
}}
"""


def find_nginx() -> str | None:
    return shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)


@contextmanager
def nginx(cpu: int | None = None, size: int = 2048, keepalive_requests: int = 100_000_000,
          extra: str = "") -> Iterator[tuple[int, Path] | None]:
    """nginx with one worker and no access log, serving /rnd (any query) as
    `size` random printable bytes from its root. Yields (port, root), or
    None if nginx is not installed; `extra` is added to the http block."""
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
        user = "user root;" if os.geteuid() == 0 else ""
        conf = Path(tmp) / "nginx.conf"
        conf.write_text(NGINX_CONF.format(tmp=tmp, port=port, user=user, extra=extra,
                                          keepalive_requests=keepalive_requests))
        proc = subprocess.Popen(pinned(cpu, [binary, "-p", tmp, "-c", str(conf)]),
                                stderr=subprocess.DEVNULL, env=tool_env())
        try:
            wait_for_port(port, proc)
            yield port, www
        finally:
            proc.terminate()
            proc.wait(10)


@contextmanager
def embedded(cpu: int | None, *options: str) -> Iterator[int]:
    """`httpbench serve` on a free port, pinned to cpu, with extra options."""
    port = free_port()
    argv = [sys.executable, "-m", "httpbench", "serve", "--port", str(port), *options]
    proc = subprocess.Popen(pinned(cpu, argv), stdout=subprocess.DEVNULL, cwd="/")
    try:
        wait_for_port(port, proc)
        yield port
    finally:
        proc.terminate()
        proc.wait(10)

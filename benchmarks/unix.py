"""The same client over TCP loopback and over a Unix socket, in one run.

    python benchmarks/unix.py [--requests N] [--rounds R]

nginx (one worker, access_log off) listening on a port and on a Unix socket
at once, and the embedded server (a port, then a Unix socket), each serving
GET /rnd?c=2048; httpbench's loop against each way in, in interleaved
rounds:
- one connection, client and server on CPU 1 (benchmarks/README.md);
- 50 connections, client on CPU 0, server on CPU 1: req/s, and the loop
  threads' CPU per request.
Each figure is the median of the rounds; the ratio unix/tcp is the median
of the rounds' own ratios. (ab, wrk and h2load cannot reach a Unix socket;
curl can, but one request per process measures its start-up.)
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from _support import arguments, embedded, nginx
from peers import measure

TARGET = "/rnd?c=2048"


def loop(n: int, conns: int, cpu: int, tmp: str, url: str,
         unix_socket: str | None) -> tuple[float, float]:
    """(req/s, CPU us per request) of one httpbench run."""
    argv = [sys.executable, "-m", "httpbench", "-q", "-n", str(n), "-c", str(conns),
            "--threads", "1", "--json", f"{tmp}/hb.json", url]
    if unix_socket is not None:
        argv[3:3] = ["--unix-socket", unix_socket]
    measure(argv, cpu, tmp)
    d = json.loads(Path(f"{tmp}/hb.json").read_text())
    if d["failed"] or d["complete"] != n:
        raise RuntimeError(f"{d['failed']} failed: {d['first_error']}")
    return d["rps"], (d["cpu_user"] + d["cpu_sys"]) / d["complete"] * 1e6


@contextmanager
def nginx_both(sock: str) -> Iterator[tuple[str, str] | None]:
    with nginx(1, unix_socket=sock) as peer:
        yield None if peer is None else (f"http://127.0.0.1:{peer[0]}{TARGET}", sock)


@contextmanager
def embedded_both(sock: str) -> Iterator[tuple[str, str] | None]:
    with embedded(1) as port, embedded(1, "--unix-socket", sock):
        yield f"http://127.0.0.1:{port}{TARGET}", sock


def main() -> int:
    ap = arguments(__doc__)
    args = ap.parse_args()
    n = args.requests
    servers: list[tuple[str, Callable[[str], AbstractContextManager[tuple[str, str] | None]]]] = [
        ("nginx", nginx_both), ("embedded", embedded_both)]
    with tempfile.TemporaryDirectory(prefix="hb-") as tmp:
        for server, start in servers:
            rows: dict[str, list[tuple[float, float]]] = {}
            with start(f"{tmp}/s.sock") as ways:
                if ways is None:
                    print(f"{server}: skipped", file=sys.stderr)
                    continue
                url, sock = ways
                unix_url = f"http://localhost{TARGET}"
                for _ in range(args.rounds):
                    for conns, cpu in ((1, 1), (50, 0)):
                        rows.setdefault(f"tcp {conns}", []).append(
                            loop(n, conns, cpu, tmp, url, None))
                        rows.setdefault(f"unix {conns}", []).append(
                            loop(n, conns, cpu, tmp, unix_url, sock))
            print(f"\n== {server}, GET {TARGET}, medians of {args.rounds} interleaved rounds")
            for conns, where in ((1, "client and server on CPU 1"),
                                 (50, "client on CPU 0, server on CPU 1")):
                print(f"{conns} connection{'s' * (conns > 1)}, {where}:")
                tcp, unix = rows[f"tcp {conns}"], rows[f"unix {conns}"]
                for name, runs in (("tcp", tcp), ("unix", unix)):
                    rps = statistics.median(r[0] for r in runs)
                    us = statistics.median(r[1] for r in runs)
                    print(f"  {name:<6}{rps:>10,.0f} req/s{us:>8.2f} us CPU/request")
                rate = statistics.median(u[0] / t[0] for t, u in zip(tcp, unix, strict=True))
                cpu = statistics.median(u[1] / t[1] for t, u in zip(tcp, unix, strict=True))
                print(f"  unix/tcp: {rate:.2f}x the req/s, {cpu:.2f}x the CPU per request")
    return 0


if __name__ == "__main__":
    sys.exit(main())

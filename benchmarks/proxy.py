"""The seed's proxy experiment: a forward proxy relaying by splice (zero
copy) against the same relay copying, and against tinyproxy.

    python benchmarks/proxy.py [--requests N] [--rounds R] [--sizes 2048,65536,...]

The embedded server (`httpbench serve --static`) serves a file of SIZE
bytes by sendfile; httpbench's loop asks for it through a forward proxy
(ab's -X), 50 keep-alive connections; three proxies take turns, each
round in the same order:
- relay splice:  `httpbench serve --proxy` (splice(2) through a pipe),
- relay copy:    `httpbench serve --proxy --no-zero-copy` (read and write),
- tinyproxy:     Debian's tinyproxy (which closes every connection after
                 one request: its rows are that, keep-alive or not).
The proxy has CPU 0 to itself; the client and the target share CPU 1
(two cores here: the proxy is the part measured, and the target sends by
sendfile to leave the client as much of CPU 1 as it can). Printed per
size: req/s and the proxy's CPU per request (its threads' run time, from
/proc),
medians of the rounds; then the ratios, each the median of the rounds' own
ratios. The seed found zero copy 35% ahead of copying at large bodies.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from typing import Any
from contextlib import contextmanager
from pathlib import Path

from _support import (CHILD_CWD, arguments, embedded, free_port, pinned, tool_env,
                      wait_for_port)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers import tinyproxy  # noqa: E402

PROXY_CPU, CLIENT_CPU = 0, 1
TINYPROXY_PORT = [0]  # set once tinyproxy runs


def cpu_seconds(pids: list[int], threads_stay: bool) -> float:
    """CPU time of the processes so far, in seconds. When their threads
    stay (the relay's event loop), at the scheduler's nanosecond resolution
    (/proc/PID/task/TID/schedstat); else (tinyproxy's thread per
    connection, whose time leaves with the thread) from /proc/PID/stat,
    which keeps the ended threads' time, in clock ticks."""
    total = 0.0
    for pid in pids:
        if not threads_stay:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            continue
        for tid in os.listdir(f"/proc/{pid}/task"):
            total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0]) / 1e9
    return total


def pids_named(name: str) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/comm").read_text().strip() == name:
                    out.append(int(entry))
            except OSError:
                pass
    return out


@contextmanager
def relay(*options: str) -> Iterator[tuple[int, list[int]]]:
    port = free_port()
    argv = [sys.executable, "-m", "httpbench", "serve", "--proxy", "--port", str(port), *options]
    proc = subprocess.Popen(pinned(PROXY_CPU, argv), stdout=subprocess.DEVNULL, cwd=CHILD_CWD)
    try:
        wait_for_port(port, proc)
        yield port, [proc.pid]
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def tiny() -> Iterator[tuple[int, list[int]] | None]:
    with tinyproxy(cpu=PROXY_CPU) as port:
        TINYPROXY_PORT[0] = port or 0
        yield None if port is None else (port, pids_named("tinyproxy"))


def through(url: str, proxy_port: int, pids: list[int], n: int, conns: int,
            tmp: str) -> tuple[float, float]:
    """(req/s, the proxy's CPU us per request) of one run through it."""
    argv = [sys.executable, "-m", "httpbench", "-q", "-n", str(n), "-c", str(conns),
            "--threads", "1", "--json", f"{tmp}/hb.json", "-X", f"127.0.0.1:{proxy_port}", url]
    exact = proxy_port != TINYPROXY_PORT[0]
    before = cpu_seconds(pids, exact)
    subprocess.run(pinned(CLIENT_CPU, argv), stdout=subprocess.DEVNULL, check=False,
                   cwd=CHILD_CWD, env=tool_env())
    used = cpu_seconds(pids, exact) - before
    d = json.loads(Path(f"{tmp}/hb.json").read_text())
    if d["failed"] or d["complete"] != n:
        raise RuntimeError(f"through {proxy_port}: {d['failed']} failed: {d['first_error']}")
    return d["rps"], used / n * 1e6


def main() -> int:
    ap = arguments(__doc__, requests=20_000)
    ap.add_argument("--sizes", default="2048,65536,262144,1048576",
                    help="body sizes in bytes, comma-separated")
    ap.add_argument("--connections", type=int, default=50)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if shutil.which("tinyproxy") is None and not os.path.exists("/usr/bin/tinyproxy"):
        print("tinyproxy: skipped (apt-get install tinyproxy)", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="hb-") as tmp:
        files = Path(tmp) / "www"
        files.mkdir()
        for size in sizes:
            (files / f"b{size}").write_bytes(bytes(33 + b % 94 for b in os.urandom(size)))
        with embedded(CLIENT_CPU, "--static", str(files)) as target, relay() as zc, \
                relay("--no-zero-copy") as copy, tiny() as tp:
            run(args, sizes, tmp, target, zc, copy, tp)
    return 0


def run(args: Any, sizes: list[int], tmp: str, target: int, zc: tuple[int, list[int]],
        copy: tuple[int, list[int]], tp: tuple[int, list[int]] | None) -> None:
    """The rounds, then the table."""
    proxies = {"relay splice": zc, "relay copy": copy}
    if tp is not None:
        proxies["tinyproxy"] = tp
    rows: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for size in sizes:
        # About the same bytes per run at every size, at least 2,000.
        n = max(2000, min(args.requests, args.requests * 2048 // size * 8))
        url = f"http://127.0.0.1:{target}/static/b{size}"
        for _ in range(args.rounds):
            for name, (port, pids) in proxies.items():
                rows.setdefault((size, name), []).append(
                    through(url, port, pids, n, args.connections, tmp))
    print(f"\n== GET a file of SIZE bytes through a forward proxy, {args.connections} "
          f"connections, medians of {args.rounds} rounds (proxy on CPU {PROXY_CPU}, client "
          f"and target on CPU {CLIENT_CPU})")
    print(f"{'size':>9}  {'proxy':<13}{'req/s':>10}{'proxy us/req':>14}")
    for size in sizes:
        for name in proxies:
            runs = rows[(size, name)]
            rps = statistics.median(r[0] for r in runs)
            us = statistics.median(r[1] for r in runs)
            print(f"{size:>9}  {name:<13}{rps:>10,.0f}{us:>14.1f}")
        zc_runs, copy_runs = rows[(size, "relay splice")], rows[(size, "relay copy")]
        rate = statistics.median(z[0] / c[0] for z, c in zip(zc_runs, copy_runs, strict=True))
        cpu = statistics.median(z[1] / c[1] for z, c in zip(zc_runs, copy_runs, strict=True))
        line = f"{'':>11}splice/copy: {rate:.2f}x the req/s, {cpu:.2f}x the CPU per request"
        if "tinyproxy" in proxies:
            tps = rows[(size, "tinyproxy")]
            over = [statistics.median(r[0] / t[0] for r, t in zip(runs, tps, strict=True))
                    for runs in (zc_runs, copy_runs)]
            line += f"; over tinyproxy: splice {over[0]:.2f}x, copy {over[1]:.2f}x the req/s"
        print(line)


if __name__ == "__main__":
    sys.exit(main())

"""One keep-alive connection, client and server on the same CPU: the req/s of
../shared/bench/floor.c, of a Python loop over httpbench.Connection.request,
and of http.client's loop, measured in one run, printed as ratios to the floor.

    python benchmarks/single_connection.py [--requests N] [--rounds R] [--cpu C]

The servers are the embedded one (httpbench serve, epoll, one loop) and nginx
(one worker, access_log off, serving 2 KiB at /rnd) where installed. Each
client runs in its own process, pinned with the server; the rounds are
interleaved and each figure is the best of its rounds.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _support import (CHILD_CWD, arguments, build_floor, embedded, nginx, pinned, python_child,
                      run_floor)

TARGET = "/rnd?c=2048"

LOOPS = {
    "httpbench.Connection": """
import httpbench
conn = httpbench.Connection(HOST, PORT)
def one():
    conn.request("GET", TARGET)
""",
    "http.client": """
import http.client
conn = http.client.HTTPConnection(HOST, PORT)
def one():
    conn.request("GET", TARGET)
    conn.getresponse().read()
""",
}

TIMER = """
import sys, time
HOST, PORT, TARGET, N = "127.0.0.1", int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
{setup}
for _ in range(min(N, 2000)):
    one()
t0 = time.perf_counter()
for _ in range(N):
    one()
print(N / (time.perf_counter() - t0))
"""


def run_loop(name: str, cpu: int | None, port: int, n: int) -> float:
    code = TIMER.format(setup=LOOPS[name])
    out = subprocess.run(pinned(cpu, python_child(code, str(port), TARGET, str(n))),
                         check=True, capture_output=True, text=True, cwd=CHILD_CWD).stdout
    return float(out)


@contextmanager
def nginx_port(cpu: int | None) -> Iterator[int | None]:
    with nginx(cpu) as server:
        yield server[0] if server else None


def main() -> int:
    ap = arguments(__doc__)
    ap.add_argument("--cpu", type=int, default=1)
    args = ap.parse_args()

    best: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        floor = build_floor(Path(tmp))
        for _ in range(args.rounds):
            for server, start in (("embedded", embedded), ("nginx", nginx_port)):
                with start(args.cpu) as port:
                    if port is None:
                        continue
                    if floor is not None:
                        rps = run_floor(floor, args.cpu, port, TARGET, args.requests)
                        best[server, "floor.c"] = max(best.get((server, "floor.c"), 0.0), rps)
                    for name in LOOPS:
                        n = args.requests if name.startswith("httpbench") else args.requests // 4
                        rps = run_loop(name, args.cpu, port, n)
                        best[server, name] = max(best.get((server, name), 0.0), rps)

    print(f"one connection, GET {TARGET}, client and server on CPU {args.cpu}, "
          f"best of {args.rounds}")
    print(f"{'server':<10}{'client':<24}{'req/s':>10}{'of floor':>10}")
    for (server, name), rps in best.items():
        base = best.get((server, "floor.c"))
        ratio = f"{rps / base:.2f}" if base else "-"
        print(f"{server:<10}{name:<24}{rps:>10,.0f}{ratio:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

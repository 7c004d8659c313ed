"""One keep-alive connection, client and server on the same CPU: the req/s of
../shared/bench/floor.c, of a Python loop over httpbench.Connection.request,
and of http.client's loop, measured in one run, printed as ratios to the floor.

    python benchmarks/single_connection.py [--requests N] [--rounds R] [--cpu C]

The server is nginx (one worker, access_log off) serving 2 KiB at /rnd. Each
client runs in its own process, pinned with the server; the rounds are
interleaved and each figure is the best of its rounds.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from _support import build_floor, nginx, pinned, run_floor

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
    out = subprocess.run(pinned(cpu, [sys.executable, "-c", code, str(port), TARGET, str(n)]),
                         check=True, capture_output=True, text=True).stdout
    return float(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=1)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp, nginx(args.cpu) as server:
        if server is None:
            return 0
        port = server[0]
        floor = build_floor(Path(tmp))
        best: dict[str, float] = {}
        for _ in range(args.rounds):
            if floor is not None:
                best["floor.c"] = max(best.get("floor.c", 0.0),
                                      run_floor(floor, args.cpu, port, TARGET, args.requests))
            for name in LOOPS:
                n = args.requests if name.startswith("httpbench") else args.requests // 4
                best[name] = max(best.get(name, 0.0), run_loop(name, args.cpu, port, n))

    base = best.get("floor.c")
    print(f"one connection, GET {TARGET} from nginx, client and server on CPU {args.cpu}, "
          f"best of {args.rounds}")
    print(f"{'client':<24}{'req/s':>10}{'of floor':>10}")
    for name, rps in best.items():
        ratio = f"{rps / base:.2f}" if base else "-"
        print(f"{name:<24}{rps:>10,.0f}{ratio:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

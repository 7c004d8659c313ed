"""How many loop threads by default: the same run with --threads 1, 2 (and
each count up to this machine's CPUs) and ab, the server beside the client
on the same CPUs, as people run a benchmark on one machine.

    python benchmarks/threads.py [--rounds 5] [--seconds 2] [--conns 1,10,50,1000]

Against nginx (one worker) and the embedded server over TCP, and the
embedded server over a Unix socket (no ab there: it has none), at each
connection count: each variant's req/s, as medians of --rounds
interleaved rounds (each round runs every variant once, so drift hits
each alike), then each variant's median over the best variant's, the
default's (httpbench.spec.default_threads) named, and its ratio to ab's.
Nothing is pinned: the scheduler places client and server, as on a
user's machine. The goal: the default at least 0.97 of the best and of ab.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable

from _support import arguments, embedded, nginx, server_port

import httpbench
from httpbench.spec import default_threads

TARGET = "/rnd?c=2048"


def ab(url: str, conns: int, seconds: float) -> float:
    out = subprocess.run(["ab", "-q", "-k", "-t", f"{seconds:g}", "-n", "50000000", "-c",
                          str(conns), url], capture_output=True, text=True, check=True).stdout
    m = re.search(r"Requests per second:\s+([\d.]+)", out)
    if m is None:
        raise RuntimeError(f"ab said: {out[-500:]}")
    return float(m.group(1))


def loop(url: str, conns: int, seconds: float, threads: int | None,
         unix: str | None = None) -> float:
    r = httpbench.run(url, duration=seconds, concurrency=conns, threads=threads,
                      unix_socket=unix, progress=False)
    if r.failed:
        raise RuntimeError(f"{r.failed} failed: {r.first_error}")
    return r.rps


def measure(name: str, url: str, conns_list: list[int], rounds: int, seconds: float,
            unix: str | None = None) -> None:
    cpus = len(os.sched_getaffinity(0))
    for conns in conns_list:
        variants: dict[str, Callable[[], float]] = {
            f"--threads {k}": (lambda k=k, c=conns: loop(url, c, seconds, k, unix))
            for k in range(1, min(cpus, conns) + 1)}
        if unix is None and conns <= 20000:
            variants["ab -k"] = lambda c=conns: ab(url, c, seconds)
        got: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(rounds):
            for v, f in variants.items():
                got[v].append(f())
        med = {v: statistics.median(x) for v, x in got.items()}
        ours = {v: m for v, m in med.items() if v.startswith("--threads")}
        best = max(ours.values())
        chosen = default_threads(conns, cpus, local=True)
        default = med[f"--threads {chosen}"]
        cells = "  ".join(f"{v} {m:,.0f} ({m / best:.2f})" for v, m in ours.items())
        vs_ab = f", {default / med['ab -k']:.2f} of ab's {med['ab -k']:,.0f}" \
            if "ab -k" in med else ""
        print(f"{name:<22} c={conns:<5} {cells}  default ({chosen}) {default / best:.2f} of the "
              f"best{vs_ab}", flush=True)


def main() -> None:
    ap = arguments(__doc__, rounds=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--conns", default="1,10,50,1000")
    args = ap.parse_args()
    conns = [int(c) for c in args.conns.split(",")]
    with server_port("nginx", lambda: nginx(None)) as port:
        if port is not None:
            measure("nginx, TCP", f"http://127.0.0.1:{port}{TARGET}", conns, args.rounds,
                    args.seconds)
    with embedded(None) as port:
        measure("embedded, TCP", f"http://127.0.0.1:{port}{TARGET}", conns, args.rounds,
                args.seconds)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "s.sock")
        with embedded(None, "--unix-socket", path):
            measure("embedded, Unix socket", f"http://localhost{TARGET}", conns, args.rounds,
                    args.seconds, unix=path)


if __name__ == "__main__":
    if not any(os.access(os.path.join(p, "ab"), os.X_OK) for p in os.environ["PATH"].split(":")):
        sys.exit("ab: apt-get install apache2-utils")
    main()

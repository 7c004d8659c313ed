"""Two builds of httpbench side by side, in interleaved rounds: does a change
to the inside move a figure?

    python benchmarks/builds.py OLD NEW [--requests N] [--rounds R]

OLD and NEW are source trees, each with its core built in place
(`python setup.py build_ext --inplace`; a `git worktree` of the commit
before a change serves as OLD). Each point runs the OLD build's client and
then the NEW's in every round, the order alternating round by round, on the
same server; a point's figure is the median over the rounds of NEW/OLD, with
the rounds' lowest and highest. A point is slower by the change when that
median is above 1.02 (CPU per request) or below 0.98 (req/s) and the rounds'
range stays on that side of 1. The points are those of benchmarks/peers.py,
http2.py, tls.py and pipeline.py that the loop's every path runs through:

- HTTP/1.1 over one connection, client and server on CPU 1 (as peers.py
  and ../shared/bench/floor.c pin it): req/s;
- HTTP/1.1 over 50 connections, pipelined 10 deep over 10, HTTP/2 (h2c)
  at (10, 10) and (50, 100) streams, TLS over 10 connections, and a
  scenario of three requests in sequence (no values carried: a journey's
  path through the picks and the exchange's events) over 50 connections:
  client on CPU 0, server on CPU 1: req/s and the loop threads' CPU per
  request.

Servers: the embedded server (the NEW build's, the same for both clients)
and, where installed, nginx (one worker, access_log off).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _support import embedded, free_port, nginx, pinned, server_port

TARGET = "/rnd?c=2048"
# Three steps, walked in order on each connection: what a journey does
# without carrying values.
SEQUENCE = """import httpbench
scenario = httpbench.Scenario([httpbench.Request("GET", "/rnd?c=2048"),
                               httpbench.Request("GET", "/rnd?c=512"),
                               httpbench.Request("POST", "/echo", body=b"x" * 2048)],
                              order="sequence")
"""


def run(tree: Path, url: str, n: int, cpu: int, tmp: str, *flags: str) -> tuple[float, float]:
    """(req/s, loop CPU us per request) of one run of the build in tree."""
    out = f"{tmp}/hb.json"
    env = dict(os.environ, PYTHONPATH=str(tree))
    argv = [sys.executable, "-m", "httpbench", "-q", "--insecure", "-n", str(n), "--threads",
            "1", "--json", out, *flags, url]
    subprocess.run(pinned(cpu, argv), check=True, env=env, cwd="/",
                   stdout=subprocess.DEVNULL)
    d = json.loads(Path(out).read_text())
    if d["complete"] != n:
        raise RuntimeError(f"{tree}: completed {d['complete']} of {n}: {d['first_error']}")
    return d["rps"], (d["cpu_user"] + d["cpu_sys"]) / n * 1e6


def point(name: str, old: Path, new: Path, url: str, n: int, cpu: int, rounds: int, tmp: str,
          *flags: str) -> None:
    rps: list[float] = []
    us: list[float] = []
    for r in range(rounds):
        order = (old, new) if r % 2 == 0 else (new, old)
        got = {tree: run(tree, url, n, cpu, tmp, *flags) for tree in order}
        rps.append(got[new][0] / got[old][0])
        us.append(got[new][1] / got[old][1])
    slower = (statistics.median(rps) < 0.98 and max(rps) < 1) or \
             (statistics.median(us) > 1.02 and min(us) > 1)
    print(f"  {name:<34}{statistics.median(rps):>7.3f} ({min(rps):.3f}-{max(rps):.3f})"
          f"{statistics.median(us):>8.3f} ({min(us):.3f}-{max(us):.3f})"
          f"{'  SLOWER' if slower else ''}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--requests", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args()
    old, new, n, rounds = a.old.resolve(), a.new.resolve(), a.requests, a.rounds
    print(f"NEW/OLD, medians of {rounds} interleaved rounds (lowest-highest): "
          f"req/s, then loop CPU per request")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PYTHONPATH"] = str(new)  # (the embedded server: the NEW build's)
        with embedded(1) as port:
            url = f"http://127.0.0.1:{port}{TARGET}"
            print("embedded server")
            point("HTTP/1.1, 1 connection (CPU 1)", old, new, url, n // 2, 1, rounds, tmp,
                  "-c", "1")
            point("HTTP/1.1, 50 connections", old, new, url, n, 0, rounds, tmp, "-c", "50")
            point("HTTP/1.1, 10 x pipeline 10", old, new, url, n, 0, rounds, tmp, "-c", "10",
                  "--pipeline", "10")
            point("HTTP/2 (10, 10)", old, new, url, n, 0, rounds, tmp, "-c", "10", "--http2",
                  "--streams", "10")
            point("HTTP/2 (50, 100)", old, new, url, n, 0, rounds, tmp, "-c", "50", "--http2",
                  "--streams", "100")
            steps = Path(tmp) / "steps.py"
            steps.write_text(SEQUENCE)
            point("a scenario in sequence, 50 conn.", old, new, url, n, 0, rounds, tmp, "-c",
                  "50", "--scenario", str(steps))
        with embedded(1, "--tls") as port:
            url = f"https://127.0.0.1:{port}{TARGET}"
            point("TLS HTTP/1.1, 10 connections", old, new, url, n // 2, 0, rounds, tmp,
                  "-c", "10")
            point("TLS HTTP/2 (10, 10)", old, new, url, n // 2, 0, rounds, tmp, "-c", "10",
                  "--http2", "--streams", "10")
        plain = free_port()
        with server_port("nginx", lambda: nginx(1, h2c_port=plain)) as port:
            if port is not None:
                print("nginx")
                point("HTTP/1.1, 50 connections", old, new,
                      f"http://127.0.0.1:{port}{TARGET}", n, 0, rounds, tmp, "-c", "50")
                point("HTTP/2 (10, 10)", old, new, f"http://127.0.0.1:{plain}{TARGET}", n, 0,
                      rounds, tmp, "-c", "10", "--http2", "--streams", "10")


if __name__ == "__main__":
    main()

"""httpbench's timing loop against ab, wrk, h2load and hey, in one run.

    python benchmarks/peers.py [--requests N] [--rounds R]

As benchmarks/README.md says:
- one connection, client and server on the same CPU: req/s as a fraction of
  ../shared/bench/floor.c;
- 50 connections, client on CPU 0, server on CPU 1: req/s, and the client's
  CPU time per request (user + system, from wait4), each as a ratio to ab's,
  and the CPU as a multiple of ../shared/bench/floor_many.c's (the least a
  client can spend per request over 50 connections), all in the same run.
  The rounds are interleaved; each ratio is the median of the rounds' own
  ratios (a round's clients share that round's machine state);
- 1,000 connections: the client's peak RSS growth over one connection.
Servers: nginx (one worker, access_log off) where installed, and the embedded
server. Peers that are not installed are skipped with a note.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _support import (CHILD_CWD, arguments, build_floor, embedded, nginx, pinned, run_floor,
                      run_floor_many)

TARGET = "/rnd?c=2048"


def measure(argv: list[str], cpu: int | None, tmp: str) -> tuple[str, float, int]:
    """Runs argv under GNU time; returns (stdout, its CPU seconds, its peak
    RSS in KiB). GNU time forks the client itself, so the peak is the
    client's, not that of this Python process it would be forked from."""
    stats = f"{tmp}/time.out"
    timed = ["/usr/bin/time", "-o", stats, "-f", "%U %S %M", *argv]
    run = subprocess.run(pinned(cpu, timed), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True, cwd=CHILD_CWD)
    if run.returncode not in (0, 1):
        raise RuntimeError(f"{argv[0]} exited with {run.returncode}: {run.stdout[-500:]}")
    user, system, rss = Path(stats).read_text().split()[-3:]
    return run.stdout, float(user) + float(system), int(rss)


def clients(url: str, n: int, c: int, threads: int, tmp: str) -> dict[str, list[str]]:
    """The command line of each installed client for n requests over c connections."""
    out = {
        "httpbench": [sys.executable, "-m", "httpbench", "-q", "-n", str(n), "-c", str(c),
                      "--threads", str(threads), "--json", f"{tmp}/hb.json", url],
    }
    if shutil.which("ab"):
        out["ab -k"] = ["ab", "-q", "-k", "-n", str(n), "-c", str(c), url]
    if shutil.which("wrk"):
        # wrk runs for a time: long enough for about n requests at these rates.
        secs = max(2, n // (60_000 if c == 1 else 100_000))
        out["wrk"] = ["wrk", f"-t{threads}", f"-c{c}", f"-d{secs}s", url]
    if shutil.which("h2load"):
        out["h2load --h1"] = ["h2load", "--h1", "-n", str(n), "-c", str(c), "-t", str(threads), url]
    if shutil.which("hey"):
        out["hey"] = ["hey", "-n", str(n), "-c", str(c), url]
    return out


def parse_rps(name: str, out: str, tmp: str) -> tuple[float, int]:
    """(req/s, requests done) from a client's output."""
    if name == "httpbench":
        d = json.loads(Path(f"{tmp}/hb.json").read_text())
        return d["rps"], d["complete"]
    patterns = {
        "ab -k": (r"Requests per second:\s+([\d.]+)", r"Complete requests:\s+(\d+)"),
        "wrk": (r"Requests/sec:\s+([\d.]+)", r"(\d+) requests in"),
        "h2load --h1": (r"finished in [\d.]+m?s, ([\d.]+) req/s", r"(\d+) succeeded"),
        "hey": (r"Requests/sec:\s+([\d.]+)", r"\[200\]\s+(\d+) responses"),
    }
    rps_re, done_re = patterns[name]
    rps, done = re.search(rps_re, out), re.search(done_re, out)
    if rps is None or done is None:
        raise RuntimeError(f"cannot read {name}'s output:\n{out[-800:]}")
    return float(rps.group(1)), int(done.group(1))


def main() -> int:
    ap = arguments(__doc__)
    args = ap.parse_args()
    n = args.requests
    with tempfile.TemporaryDirectory() as tmp:
        floor = build_floor(Path(tmp))
        floor_many = build_floor(Path(tmp), "floor_many")
        for server, start in (("nginx", lambda: nginx(1)), ("embedded", lambda: embedded(1))):
            one: dict[str, float] = {}
            # Per round: name -> (req/s, CPU us per request).
            rounds: list[dict[str, tuple[float, float]]] = []
            rss: dict[str, int] = {}
            with start() as handle:
                if handle is None:
                    continue
                port = handle[0] if isinstance(handle, tuple) else handle
                url = f"http://127.0.0.1:{port}{TARGET}"
                for _ in range(args.rounds):
                    many: dict[str, tuple[float, float]] = {}
                    rounds.append(many)
                    if floor is not None:
                        one["floor.c"] = max(one.get("floor.c", 0.0),
                                             run_floor(floor, 1, port, TARGET, n))
                    for name, argv in clients(url, n, 1, 1, tmp).items():
                        out, _, _ = measure(argv, 1, tmp)
                        one[name] = max(one.get(name, 0.0), parse_rps(name, out, tmp)[0])
                    if floor_many is not None:
                        many["floor_many.c"] = run_floor_many(floor_many, 0, port, TARGET, 50, n)
                    for name, argv in clients(url, n, 50, 1, tmp).items():
                        out, cpu, _ = measure(argv, 0, tmp)
                        rps, done = parse_rps(name, out, tmp)
                        if name == "httpbench":
                            # The loop's own CPU, not the interpreter's start-up.
                            d = json.loads(Path(f"{tmp}/hb.json").read_text())
                            cpu = d["cpu_user"] + d["cpu_sys"]
                        many[name] = (rps, cpu / done * 1e6)
                for name in ("httpbench", "wrk"):
                    small = clients(url, 2000, 1, 1, tmp).get(name)
                    big = clients(url, 20000, 1000, 1, tmp).get(name)
                    if small and big:
                        rss[name] = measure(big, 0, tmp)[2] - measure(small, 0, tmp)[2]
            print(f"\n== {server}, GET {TARGET}, best of {args.rounds}")
            base = one.get("floor.c")
            print("one connection, client and server on CPU 1:")
            for name, rps in one.items():
                print(f"  {name:<14}{rps:>10,.0f} req/s{rps / base if base else 0:>8.2f} of floor")
            print(f"50 connections, client on CPU 0, server on CPU 1, medians of {args.rounds} "
                  "interleaved rounds:")
            for name in rounds[0] if rounds else []:
                rps = statistics.median(r[name][0] for r in rounds)
                us = statistics.median(r[name][1] for r in rounds)
                rel = ""
                if all("ab -k" in r for r in rounds):
                    rel += (f"{statistics.median(r[name][0] / r['ab -k'][0] for r in rounds):>5.2f}"
                            f" of ab's req/s, "
                            f"{statistics.median(r[name][1] / r['ab -k'][1] for r in rounds):.2f}"
                            " of its CPU")
                if all("floor_many.c" in r for r in rounds):
                    ratios = [r[name][1] / r["floor_many.c"][1] for r in rounds]
                    rel += (f", {statistics.median(ratios):.2f}x floor_many's CPU (rounds "
                            f"{', '.join(f'{x:.2f}' for x in ratios)})")
                print(f"  {name:<14}{rps:>10,.0f} req/s{us:>8.2f} us CPU/request  {rel}")
            print("1,000 connections, peak RSS growth over one connection:")
            for name, kib in rss.items():
                print(f"  {name:<14}{kib / 1024:>8.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

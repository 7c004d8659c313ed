"""What the outputs cost: the client's CPU per request with no outputs, with
live metrics scraped every second, and with a full per-request log.

    python benchmarks/outputs.py [--requests N] [--rounds R]

50 connections against the embedded server (`httpbench serve`, on CPU 1),
the client on CPU 0 with one loop thread. Each round runs the three in
turn (interleaved, so drift hits each alike); each figure is the median
of R rounds. The CPU is the whole client process's (getrusage
RUSAGE_SELF around run(), in a child process): the loop thread, the log's
writer thread and the metrics endpoint's thread together. The metrics
are scraped once a second from this (another) process, as Prometheus
would; the log is a CSV on tmpfs (/dev/shm). The goal: each within 5% of
none.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import urllib.request

from _support import CHILD_CWD, arguments, embedded, free_port, pinned, python_child

TARGET = "/rnd?c=2048"
CHILD = """
import json, resource, sys, httpbench
url, n, mode, where = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
kw = {}
if mode == "metrics":
    kw["metrics"] = where
elif mode == "log":
    kw["log"] = where
t0 = resource.getrusage(resource.RUSAGE_SELF)
r = httpbench.run(url, requests=n, concurrency=50, threads=1, progress=False, **kw)
t1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = (t1.ru_utime - t0.ru_utime) + (t1.ru_stime - t0.ru_stime)
print(json.dumps({"complete": r.complete, "failed": r.failed, "rps": r.rps, "cpu": cpu,
                  "loop_cpu": r.cpu_time, "log_records": r.log_records,
                  "log_dropped": r.log_dropped}))
"""
MODES = ("none", "metrics", "log")


def scrape_every_second(port: int, stop: threading.Event, count: list[int]) -> None:
    while not stop.wait(1.0):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                r.read()
            count[0] += 1
        except OSError:
            pass


def one(url: str, n: int, mode: str, tmp: str) -> dict[str, float]:
    where = ""
    stop = threading.Event()
    scrapes = [0]
    scraper = None
    if mode == "metrics":
        port = free_port()
        where = f"127.0.0.1:{port}"
        scraper = threading.Thread(target=scrape_every_second, args=(port, stop, scrapes))
        scraper.start()
    elif mode == "log":
        where = os.path.join(tmp, "requests.csv")
    try:
        out = subprocess.run(pinned(0, python_child(CHILD, url, str(n), mode, where)),
                             capture_output=True, text=True, cwd=CHILD_CWD, check=True).stdout
    finally:
        stop.set()
        if scraper is not None:
            scraper.join()
    d = json.loads(out.strip().splitlines()[-1])
    if d["failed"] or d["complete"] != n:
        raise RuntimeError(f"{mode}: {d['failed']} failed")
    if mode == "log" and d["log_records"] + d["log_dropped"] != n:
        raise RuntimeError(f"log: {d['log_records']} + {d['log_dropped']} records for {n}")
    if mode == "metrics" and scrapes[0] == 0 and d["complete"] / d["rps"] > 1.5:
        raise RuntimeError("metrics: never scraped")
    d["scrapes"] = scrapes[0]
    return d


def main() -> int:
    args = arguments(__doc__, requests=500_000, rounds=3).parse_args()
    n = args.requests
    # tmpfs, so the log's writes cost CPU and not a disk's waits.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(dir=shm) as tmp, embedded(1) as port:
        url = f"http://127.0.0.1:{port}{TARGET}"
        rows: dict[str, list[dict[str, float]]] = {m: [] for m in MODES}
        for _ in range(args.rounds):
            for mode in MODES:
                rows[mode].append(one(url, n, mode, tmp))
    base = statistics.median(x["cpu"] / x["complete"] for x in rows["none"]) * 1e6
    print(f"{n:,} requests, 50 connections, one loop thread on CPU 0, the embedded server on "
          f"CPU 1; medians of {args.rounds} rounds")
    print(f"{'outputs':<32}{'req/s':>10}{'CPU us/req':>12}{'x none':>8}{'goal':>7}")
    for mode, label in (("none", "none"), ("metrics", "metrics, scraped every 1 s"),
                        ("log", "per-request log (CSV, tmpfs)")):
        rps = statistics.median(x["rps"] for x in rows[mode])
        cpu = statistics.median(x["cpu"] / x["complete"] for x in rows[mode]) * 1e6
        ratio = cpu / base
        goal = "-" if mode == "none" else ("met" if ratio <= 1.05 else "MISSED")
        extra = ""
        if mode == "log":
            extra = f"  ({int(statistics.median(x['log_dropped'] for x in rows[mode])):,} dropped)"
        if mode == "metrics":
            extra = f"  ({int(statistics.median(x['scrapes'] for x in rows[mode]))} scrapes)"
        print(f"{label:<32}{rps:>10,.0f}{cpu:>12.2f}{ratio:>8.3f}{goal:>7}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

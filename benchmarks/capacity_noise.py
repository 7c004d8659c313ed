"""A capacity search on a machine that is not its own: the same search
with busy loops beside it, or with one stage stalled, several times, with
breaches confirmed (the default) and with one measurement a stage
(confirm=False).

    python benchmarks/capacity_noise.py [--rounds N] [--quiet-too] [--burners CPUS] [--stall]

The server's service time is known: /delay?ms=20 on 8 connections is 400
requests a second at most (8 / 0.020 s), so the SLO p99<60ms holds up to
about 400 and breaks above. Each search: capacity(URL/delay?ms=20,
slo="p99<60ms", concurrency=8, start=50, stage_s=1) against `httpbench
serve` in a process of its own, with a Python busy loop pinned to each
CPU of --burners (1 unless given: the other CPU) for the whole search;
--stall also stops the server's process for 150 ms (SIGSTOP, SIGCONT)
2.5 s in, inside the third stage: the stall a loaded machine puts in one
stage, made on purpose. --quiet-too runs the same first with neither.
Prints each search's capacity, its ratio to 400, its stages (repeats
included) and its time; the goal: within 15% of 400, every time, with
confirmation.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import threading
import time

from _support import arguments, free_port, wait_for_port

import httpbench

KNOWN = 400.0


def search(confirm: bool, stall: bool) -> tuple[float, int, float, str | None]:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "httpbench", "serve", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/")
    try:
        wait_for_port(port, server)

        def stop_once() -> None:
            time.sleep(2.5)
            os.kill(server.pid, signal.SIGSTOP)
            time.sleep(0.15)
            os.kill(server.pid, signal.SIGCONT)
        staller = threading.Thread(target=stop_once) if stall else None
        if staller is not None:
            staller.start()
        t = time.monotonic()
        c = httpbench.capacity(f"http://127.0.0.1:{port}/delay?ms=20", slo="p99<60ms",
                               concurrency=8, start=50, stage_s=1, confirm=confirm)
        took = time.monotonic() - t
        if staller is not None:
            staller.join()
        return c.rate, len(c.steps), took, c.limited_by
    finally:
        server.terminate()
        server.wait()


def series(label: str, rounds: int, confirm: bool, burn: list[int], stall: bool) -> None:
    found = []
    for i in range(rounds):
        burners = [subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c",
                                     "while True: pass"]) for cpu in burn]
        try:
            rate, stages, took, limited = search(confirm, stall)
        finally:
            for b in burners:
                b.kill()
                b.wait()
        found.append(rate)
        print(f"{label} {i + 1}: {rate:6.0f} req/s, {rate / KNOWN:.2f}x of {KNOWN:.0f}, "
              f"{stages} stages in {took:.0f} s, limited by {limited}", flush=True)
    within = sum(abs(r / KNOWN - 1) <= 0.15 for r in found)
    print(f"{label}: median {statistics.median(found):.0f} req/s, {within} of {rounds} within "
          f"15% of {KNOWN:.0f}", flush=True)


def main() -> None:
    ap = arguments(__doc__, rounds=5)
    ap.add_argument("--quiet-too", action="store_true",
                    help="the same searches with no busy loop and no stall first")
    ap.add_argument("--burners", default="1",
                    help="the CPUs a busy loop each is pinned to, comma-separated (default 1)")
    ap.add_argument("--stall", action="store_true",
                    help="stop the server for 150 ms in the third stage of each search")
    args = ap.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        sys.exit("needs two CPUs: the busy loop takes the second")
    burn = [int(c) for c in args.burners.split(",") if c]
    if args.quiet_too:
        series("quiet, confirm", args.rounds, True, [], False)
    what = f"burners on {args.burners}" + (", a stall" if args.stall else "")
    series(f"{what}, confirm", args.rounds, True, burn, args.stall)
    series(f"{what}, no confirm", args.rounds, False, burn, args.stall)


if __name__ == "__main__":
    main()

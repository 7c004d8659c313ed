"""What going through Dask costs: one direct run against the embedded
server, and the same run split over two local Dask worker processes, in
one run of this script.

    python benchmarks/distributed.py [--requests N] [--rounds R]

Both sides are pinned alike: the direct run's process may use CPUs 0 and
1 and runs two loop threads; each Dask worker is pinned to one of the two
CPUs and runs one loop thread; the embedded server (one epoll thread)
shares CPU 1. GET /rnd?c=2048 over 50 connections. For each side: the
total client CPU per request (the whole client process's CPU, Dask's own
threads included: getrusage over the run, on every worker for Dask), the
req/s, and the fixed cost (the call's wall time less the measured part's,
time_taken): for Dask the barrier, the lead before the common start, the
reports and the collection of results. Medians of R interleaved rounds.
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import time

import httpbench

TARGET = "/rnd?c=2048"


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _pin(cpu: int) -> None:
    os.sched_setaffinity(0, {cpu})


def direct(url: str, n: int) -> tuple[float, float, float]:
    cpu0, t0 = _cpu(), time.monotonic()
    r = httpbench.run(url, requests=n, concurrency=50, threads=2, progress=False)
    wall, cpu = time.monotonic() - t0, _cpu() - cpu0
    assert r.complete == n and r.failed == 0, r.first_error
    return cpu / n * 1e6, r.rps, wall - r.time_taken


def over_dask(client: object, url: str, n: int) -> tuple[float, float, float]:
    before = client.run(_cpu)  # type: ignore[attr-defined]
    t0 = time.monotonic()
    r = httpbench.run(url, requests=n, concurrency=50, cluster=client, progress=False)
    wall = time.monotonic() - t0
    after = client.run(_cpu)  # type: ignore[attr-defined]
    assert r.complete == n and r.failed == 0, r.first_error
    cpu = sum(after[w] - before[w] for w in after)
    return cpu / n * 1e6, r.rps, wall - r.time_taken


def main() -> int:
    # Here, not at the top: Dask's worker processes import this file again
    # (as __mp_main__), with the search path that is left below.
    from _support import arguments, embedded

    # This file's name is Dask's package's: `import distributed` (here and
    # in httpbench) must find that one, not this script's directory.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    args = arguments(__doc__, requests=1_000_000).parse_args()
    try:
        import distributed
    except ImportError:
        print("Dask: skipped (pip install 'httpbench[dask]')", file=sys.stderr)
        return 0
    os.sched_setaffinity(0, {0, 1})
    with embedded(1) as port, distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0") as lc, \
            distributed.Client(lc) as client:
        for i, w in enumerate(sorted(client.scheduler_info()["workers"])):
            client.run(_pin, i, workers=[w])
        url = f"http://127.0.0.1:{port}{TARGET}"
        rows: dict[str, list[tuple[float, float, float]]] = {"direct": [], "dask": []}
        for _ in range(args.rounds):
            rows["direct"].append(direct(url, args.requests))
            rows["dask"].append(over_dask(client, url, args.requests))
    print(f"\n== embedded server on CPU 1, {args.requests:,} GETs of {TARGET}, 50 connections, "
          f"medians of {args.rounds} interleaved rounds")
    for name, got in rows.items():
        print(f"  {name:<7} {statistics.median(g[1] for g in got):>9,.0f} req/s "
              f"{statistics.median(g[0] for g in got):>6.2f} us client CPU/request, fixed cost "
              f"{statistics.median(g[2] for g in got):.2f} s")
    ratio = statistics.median(d[0] / x[0] for d, x in zip(rows["dask"], rows["direct"],
                                                          strict=True))
    print(f"  through Dask: {ratio:.3f}x the client CPU per request, "
          f"{statistics.median(g[2] for g in rows['dask']):.2f} s of fixed cost per run")
    return 0


if __name__ == "__main__":
    sys.exit(main())

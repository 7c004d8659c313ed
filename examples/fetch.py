"""Fetch a URL many times over one keep-alive connection and show what came back.

    python examples/fetch.py                          # from the embedded server it starts
    python examples/fetch.py HOST PORT TARGET         # e.g. 127.0.0.1 8080 /rnd?c=2048
"""

from __future__ import annotations

import sys
import time

import httpbench


def main(host: str, port: int, target: str, count: int = 50_000) -> None:
    with httpbench.Connection(host, port, timeout=10.0) as conn:
        r = conn.request("GET", target, headers={"Accept": "*/*"})
        print(r.version, r.status, r.reason)
        for name, value in r.headers:
            print(f"{name}: {value}")
        print(f"({len(r.body)} body bytes)")
        t0 = time.perf_counter()
        for _ in range(count):
            conn.request("GET", target)
        dt = time.perf_counter() - t0
        print(f"{count} more requests in {dt:.3f} s: {count / dt:,.0f} req/s, "
              f"{conn.connects} connection(s), {conn.retries} retried")


if __name__ == "__main__":
    if len(sys.argv) == 4:
        main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
    elif len(sys.argv) == 1:
        with httpbench.Server() as srv:
            assert srv.port is not None  # None only on a Unix socket
            print(f"(the embedded server at {srv.url()})")
            main("127.0.0.1", srv.port, "/rnd?c=2048")
    else:
        sys.exit(__doc__)

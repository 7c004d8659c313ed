"""What a scenario costs the client: a three-request weighted scenario
with 1,000 variants each against one URL, at 50 connections, in one run.

    python benchmarks/scenario.py [--requests N] [--rounds R]

nginx (one worker, access_log off) and the embedded server, each serving
2 KiB bodies; 50 connections, client on CPU 0 with one loop thread, server
on CPU 1 (benchmarks/README.md). The scenario's requests are GETs of
/rnd?c=2048&v=I (weights 8, 4 and 1, their variants cycled), so the server
does the same work either way and the difference is the client's: picking
a request by weight, cycling its variant, keeping its figures apart. Each
figure is the median of R interleaved rounds: req/s and the client's CPU
per request (its loop threads'), with floor_many.c's on the same server as
the denominator.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

from _support import arguments, build_floor, embedded, nginx, run_floor_many, server_port
from peers import measure

TARGET = "/rnd?c=2048"
SCENARIO = """\
import httpbench
scenario = httpbench.Scenario([
    httpbench.Request("GET", [f"/rnd?c=2048&v={i}" for i in range(1000)], name="a", weight=8),
    httpbench.Request("GET", [f"/rnd?c=2048&w={i}" for i in range(1000)], name="b", weight=4),
    httpbench.Request("GET", [f"/rnd?c=2048&x={i}" for i in range(1000)], name="c", weight=1),
])
"""


def httpbench_run(url: str, n: int, tmp: str, *extra: str) -> tuple[float, float]:
    argv = [sys.executable, "-m", "httpbench", "-q", "-n", str(n), "-c", "50", "--threads", "1",
            "--json", f"{tmp}/hb.json", *extra, url]
    measure(argv, 0, tmp)
    d = json.loads(Path(f"{tmp}/hb.json").read_text())
    if d["failed"] or d["complete"] != n or d["body_bytes"] != 2048 * n:
        raise RuntimeError(f"httpbench: {d['failed']} failed: {d['first_error']}")
    return d["rps"], (d["cpu_user"] + d["cpu_sys"]) / d["complete"] * 1e6


def over_floor(got: list[tuple[float, float]], floor: list[tuple[float, float]]) -> float:
    """The median, over rounds, of CPU per request as a multiple of the floor's."""
    return statistics.median(g[1] / f[1] for g, f in zip(got, floor, strict=True))


def main() -> int:
    args = arguments(__doc__).parse_args()
    n = args.requests
    with tempfile.TemporaryDirectory() as tmp:
        Path(f"{tmp}/mix.py").write_text(SCENARIO)
        floor_many = build_floor(Path(tmp), "floor_many")
        for server, start in (("nginx", lambda: nginx(1)), ("embedded", lambda: embedded(1))):
            rows: dict[str, list[tuple[float, float]]] = {}
            with server_port(server, start) as port:
                if port is None:
                    continue
                base = f"http://127.0.0.1:{port}"
                for _ in range(args.rounds):
                    if floor_many is not None:
                        rows.setdefault("floor_many", []).append(
                            run_floor_many(floor_many, 0, port, TARGET, 50, n))
                    rows.setdefault("one URL", []).append(httpbench_run(base + TARGET, n, tmp))
                    rows.setdefault("scenario", []).append(
                        httpbench_run(base + "/", n, tmp, "--scenario", f"{tmp}/mix.py"))
            print(f"\n== {server}, 2 KiB GETs, 50 connections, client on CPU 0, server on CPU 1,"
                  f" medians of {args.rounds} interleaved rounds")
            for name, got in rows.items():
                print(f"  {name:<10} {statistics.median(r[0] for r in got):>9,.0f} req/s "
                      f"{statistics.median(r[1] for r in got):>6.2f} us CPU/request")
            one, mix = rows["one URL"], rows["scenario"]
            cpu = statistics.median(m[1] / o[1] for m, o in zip(mix, one, strict=True))
            rps = statistics.median(m[0] / o[0] for m, o in zip(mix, one, strict=True))
            line = (f"  scenario / one URL: {cpu:.3f}x the client CPU per request, "
                    f"{rps:.3f}x the req/s")
            if "floor_many" in rows:
                fl = rows["floor_many"]

                line += (f"; CPU per request against floor_many: one URL "
                         f"{over_floor(one, fl):.2f}x, scenario {over_floor(mix, fl):.2f}x")
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""HTTP/1.1 pipelining: httpbench's loop and wrk (with its pipeline script)
at depths 1, 4 and 16, in one run.

    python benchmarks/pipeline.py [--requests N] [--rounds R]

nginx (one worker, access_log off, keepalive_requests high enough that no
connection closes) and the embedded server, each serving GET /rnd?c=2048;
50 connections, client on CPU 0, server on CPU 1 (benchmarks/README.md).
Each figure is the median of R interleaved rounds: req/s and the client's
CPU per request (httpbench: its loop threads'; wrk: user + system from
wait4). wrk's pipeline script is the one its repository ships (a depth of
requests written as one): its Lua is Debian's wrk's.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _support import arguments, embedded, nginx, server_port
from peers import measure, parse_rps

TARGET = "/rnd?c=2048"
DEPTHS = (1, 4, 16)

# wrk's scripts/pipeline.lua, as its repository has it.
PIPELINE_LUA = """\
init = function(args)
   local r = {}
   local depth = tonumber(args[1]) or 1
   for i = 1, depth do
      r[i] = wrk.format()
   end
   req = table.concat(r)
end

request = function()
   return req
end
"""


def httpbench_run(url: str, n: int, depth: int, tmp: str) -> tuple[float, float]:
    argv = [sys.executable, "-m", "httpbench", "-q", "-n", str(n), "-c", "50", "--threads", "1",
            "--pipeline", str(depth), "--json", f"{tmp}/hb.json", url]
    measure(argv, 0, tmp)
    d = json.loads(Path(f"{tmp}/hb.json").read_text())
    if d["failed"] or d["complete"] != n:
        raise RuntimeError(f"httpbench: {d['failed']} failed: {d['first_error']}")
    return d["rps"], (d["cpu_user"] + d["cpu_sys"]) / d["complete"] * 1e6


def wrk_run(url: str, seconds: int, depth: int, tmp: str) -> tuple[float, float]:
    script = Path(tmp) / "pipeline.lua"
    script.write_text(PIPELINE_LUA)
    argv = ["wrk", "-t1", "-c50", f"-d{seconds}s", "-s", str(script), url, "--", str(depth)]
    out, cpu, _ = measure(argv, 0, tmp)
    rps, done = parse_rps("wrk", out, tmp)
    return rps, cpu / done * 1e6


def main() -> int:
    args = arguments(__doc__).parse_args()
    n = args.requests
    have_wrk = shutil.which("wrk") is not None
    if not have_wrk:
        print("wrk: skipped (apt-get install wrk)", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        for server, start in (("nginx", lambda: nginx(1)), ("embedded", lambda: embedded(1))):
            rows: dict[str, list[tuple[float, float]]] = {}
            with server_port(server, start) as port:
                if port is None:
                    continue
                url = f"http://127.0.0.1:{port}{TARGET}"
                for _ in range(args.rounds):
                    for depth in DEPTHS:
                        rows.setdefault(f"httpbench {depth}", []).append(
                            httpbench_run(url, n * depth, depth, tmp))
                        if have_wrk:
                            rows.setdefault(f"wrk {depth}", []).append(
                                wrk_run(url, max(2, n * depth // 150_000), depth, tmp))
            print(f"\n== {server}, GET {TARGET}, 50 connections, client on CPU 0, server on "
                  f"CPU 1, medians of {args.rounds} interleaved rounds")
            for depth in DEPTHS:
                hb = rows[f"httpbench {depth}"]
                rps = statistics.median(r[0] for r in hb)
                line = (f"  depth {depth:>2}: httpbench {rps:>9,.0f} req/s "
                        f"{statistics.median(r[1] for r in hb):>6.2f} us CPU/request")
                wrk = rows.get(f"wrk {depth}")
                if wrk:
                    rate = statistics.median(h[0] / w[0] for h, w in zip(hb, wrk, strict=True))
                    cpus = [h[1] / w[1] for h, w in zip(hb, wrk, strict=True)]
                    line += (f"; wrk {statistics.median(r[0] for r in wrk):>9,.0f} req/s "
                             f"{statistics.median(r[1] for r in wrk):>6.2f} us; httpbench "
                             f"{rate:.2f}x wrk's req/s at {statistics.median(cpus):.2f}x its CPU "
                             f"(rounds {', '.join(f'{c:.2f}' for c in cpus)})")
                print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

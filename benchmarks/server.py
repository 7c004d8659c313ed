"""The embedded server against nginx, loaded by wrk (or ab) in one run.

    python benchmarks/server.py [--duration S] [--connections C] [--rounds R]

Pinned as benchmarks/README.md says for many connections: the load
generator on CPU 0, the server on CPU 1. Prints req/s for /rnd?c=2048 and for
a static file, for httpbench.Server in epoll and threads modes (static files
with zero_copy on and off) and for nginx (one worker, access_log off,
sendfile on), as ratios to nginx. Each figure is the best of its rounds.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _support import embedded, nginx, pinned

STATIC_SIZE = 256 * 1024
SERVER_CPU, CLIENT_CPU = 1, 0


def load(tool: str, url: str, connections: int, duration: float) -> float:
    """req/s that wrk or ab reached against url."""
    if tool == "wrk":
        argv = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(duration))}s", url]
        pattern = r"Requests/sec:\s+([\d.]+)"
    else:
        argv = ["ab", "-q", "-k", "-c", str(connections), "-t", str(duration), "-n", "100000000",
                url]
        pattern = r"Requests per second:\s+([\d.]+)"
    out = subprocess.run(pinned(CLIENT_CPU, argv), capture_output=True, text=True,
                         check=True).stdout
    m = re.search(pattern, out)
    if m is None:
        raise RuntimeError(f"no figure in {tool}'s output:\n{out}")
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)|Socket errors: .*", out)
    if errors:
        raise RuntimeError(f"{tool} saw errors:\n{out}")
    return float(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    tool = "wrk" if shutil.which("wrk") else "ab" if shutil.which("ab") else None
    if tool is None:
        print("neither wrk nor ab is installed (apt-get install wrk apache2-utils): nothing to do")
        return 0

    best: dict[tuple[str, str], float] = {}

    def record(name: str, what: str, port: int, path: str) -> None:
        rps = load(tool, f"http://127.0.0.1:{port}{path}", args.connections, args.duration)
        best[name, what] = max(best.get((name, what), 0.0), rps)

    with tempfile.TemporaryDirectory() as tmp:
        static = Path(tmp)
        os.chmod(tmp, 0o755)
        (static / "file.bin").write_bytes(os.urandom(STATIC_SIZE))
        for _ in range(args.rounds):
            with nginx(SERVER_CPU, extra="sendfile on; tcp_nopush on;") as server:
                if server is not None:
                    port, www = server
                    (www / "file.bin").write_bytes((static / "file.bin").read_bytes())
                    record("nginx", "rnd", port, "/rnd?c=2048")
                    record("nginx", "static", port, "/file.bin")
            for mode in ("epoll", "threads"):
                with embedded(SERVER_CPU, "--mode", mode, "--static", str(static)) as port:
                    record(f"httpbench {mode}", "rnd", port, "/rnd?c=2048")
                    record(f"httpbench {mode}", "static", port, "/static/file.bin")
                with embedded(SERVER_CPU, "--mode", mode, "--static", str(static),
                              "--no-zero-copy") as port:
                    record(f"httpbench {mode}", "static copy", port, "/static/file.bin")

    print(f"{tool} -c{args.connections} on CPU {CLIENT_CPU}, server on CPU {SERVER_CPU}, "
          f"{args.duration:g} s runs, best of {args.rounds}")
    print(f"{'server':<20}{'/rnd?c=2048':>14}{'x nginx':>9}{'static 256K':>14}{'x nginx':>9}"
          f"{'static r/w':>14}{'x nginx':>9}")
    names = sorted({n for n, _ in best}, key=lambda n: (n != "nginx", n))
    for name in names:
        row = f"{name:<20}"
        for what, base_what in (("rnd", "rnd"), ("static", "static"), ("static copy", "static")):
            rps = best.get((name, what))
            base = best.get(("nginx", base_what))
            row += f"{rps:>14,.0f}" if rps else f"{'-':>14}"
            row += f"{rps / base:>9.2f}" if rps and base else f"{'-':>9}"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""httpbench over TLS against ab, wrk and h2load, in one run.

    python benchmarks/tls.py [--requests N] [--handshakes H] [--rounds R]

Servers: nginx with TLS (one worker, access_log off, the same 2 KiB file,
an EC P-256 certificate made by the openssl command) and the embedded TLS
server (its self-signed EC P-256 certificate); client on CPU 0, server on
CPU 1. Nobody verifies (ab, wrk and h2load cannot): httpbench runs with
--insecure, so every client does the same work. Each figure is the median
of R interleaved rounds.
- keep-alive, 50 connections: req/s and the client's CPU per request
  (user + system, from wait4; httpbench's loop threads' own);
- a new connection per request: handshakes a second and the client's CPU
  per handshake. httpbench with full handshakes (--no-tls-resume, what ab
  does; "full 256" offers ab's TLS 1.3 suite, AES-256, OpenSSL's first,
  where httpbench offers AES-128 first as browsers do) and with resumption
  (its default, and what wrk and h2load do when the server closes: each
  keeps its connection's session and resumes it, as nginx's
  $ssl_session_reused shows);
- the embedded TLS server against nginx's under wrk -c50;
- the comparison over https (every Python client and the C core, on the
  embedded server) beside the same over plain HTTP: each client's ratio to
  the C core in each, and how much TLS narrowed it.
Peers that are not installed are skipped with a note.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _support import ROOT, arguments, embedded, nginx, server_port
from peers import measure, parse_rps

sys.path.insert(0, str(ROOT / "tests"))
from helpers import make_pki  # noqa: E402

TARGET = "/rnd?c=2048"


def keepalive_clients(url: str, n: int, tmp: str) -> dict[str, list[str]]:
    """Each installed client for n keep-alive requests over 50 connections."""
    out = {"httpbench": [sys.executable, "-m", "httpbench", "-q", "--insecure", "-n", str(n),
                         "-c", "50", "--threads", "1", "--json", f"{tmp}/hb.json", url]}
    if shutil.which("ab"):
        out["ab -k"] = ["ab", "-q", "-k", "-n", str(n), "-c", "50", url]
    if shutil.which("wrk"):
        out["wrk"] = ["wrk", "-t1", "-c50", f"-d{max(2, n // 40_000)}s", url]
    if shutil.which("h2load"):
        out["h2load --h1"] = ["h2load", "--h1", "-n", str(n), "-c", "50", "-t", "1", url]
    return out


def handshake_clients(url: str, n: int, tmp: str) -> dict[str, list[str]]:
    """Each installed client for n requests, a new connection (and a
    handshake) for each, over 50 connections at a time."""
    hb = [sys.executable, "-m", "httpbench", "-q", "--insecure", "--no-keepalive", "-n", str(n),
          "-c", "50", "--threads", "1", "--json", f"{tmp}/hb.json"]
    out = {"httpbench full": [*hb, "--no-tls-resume", url],
           # ab's suite (OpenSSL's first), beside httpbench's default (AES-128 first).
           "httpbench full 256": [*hb, "--no-tls-resume", "--tls13-ciphers",
                                  "TLS_AES_256_GCM_SHA384", url],
           "httpbench resumed": [*hb, url]}
    if shutil.which("ab"):
        out["ab (full)"] = ["ab", "-q", "-n", str(n), "-c", "50", url]
    # wrk and h2load open a new connection when the server closes one.
    if shutil.which("wrk"):
        out["wrk (resumed)"] = ["wrk", "-t1", "-c50", f"-d{max(2, n // 4_000)}s", "-H",
                                "Connection: close", url]
    if shutil.which("h2load"):
        out["h2load (resumed)"] = ["h2load", "--h1", "-n", str(n), "-c", "50", "-t", "1", "-H",
                                   "Connection: close", url]
    return out


# The name each client's output is read by (peers.parse_rps).
READ_AS = {"httpbench full": "httpbench", "httpbench full 256": "httpbench",
           "httpbench resumed": "httpbench", "ab (full)": "ab -k",
           "wrk (resumed)": "wrk", "h2load (resumed)": "h2load --h1"}


def one(name: str, argv: list[str], tmp: str) -> tuple[float, float]:
    """(req/s, client CPU us per request) of one client run, client on CPU 0."""
    out, cpu, _ = measure(argv, 0, tmp)
    # Read as peers.py reads each program (ab prints alike with -k or not).
    rps, done = parse_rps(READ_AS.get(name, name), out, tmp)
    if name.startswith("httpbench"):
        d = json.loads(Path(f"{tmp}/hb.json").read_text())
        cpu = d["cpu_user"] + d["cpu_sys"]  # the loop's own, not the interpreter's start-up
        if d["failed"]:
            raise RuntimeError(f"{name}: {d['failed']} failed: {d['first_error']}")
    return rps, cpu / done * 1e6


def table(title: str, rounds: list[dict[str, tuple[float, float]]], unit: str) -> None:
    print(title)
    base = "ab -k" if "ab -k" in rounds[0] else "ab (full)"
    for name in rounds[0]:
        rps = statistics.median(r[name][0] for r in rounds)
        us = statistics.median(r[name][1] for r in rounds)
        rel = ""
        if all(base in r for r in rounds):
            rel = (f"{statistics.median(r[name][0] / r[base][0] for r in rounds):>6.2f} of "
                   f"{base}'s rate, "
                   f"{statistics.median(r[name][1] / r[base][1] for r in rounds):.2f} of its CPU")
        print(f"  {name:<18}{rps:>10,.0f} {unit}/s{us:>9.1f} us CPU/{unit}  {rel}")


def comparison(requests: int) -> None:
    """compare() over plain HTTP and over TLS, on the embedded server."""
    import httpbench
    ratios = {}
    for tls in (False, True):
        cmp = httpbench.compare(requests=requests, duration=3.0, tls=tls, pin=False)
        for row in cmp.rows():
            core = cmp.results["httpbench", row["scenario"]].rps
            ratios[tls, row["agent"], row["scenario"]] = row["rps"] / core if core else 0.0
    print("\n== the comparison, embedded server, one connection: each client's req/s as a "
          "fraction of the C core's")
    print(f"  {'agent':<14}{'scenario':<10}{'http':>8}{'https':>8}{'narrowed':>10}")
    for (tls, agent, scenario), ratio in ratios.items():
        if tls or agent == "httpbench":
            continue
        over_tls = ratios.get((True, agent, scenario), 0.0)
        print(f"  {agent:<14}{scenario:<10}{ratio:>8.3f}{over_tls:>8.3f}"
              f"{over_tls / ratio if ratio else 0:>9.2f}x")


def main() -> int:
    ap = arguments(__doc__)
    ap.add_argument("--handshakes", type=int, default=10_000)
    ap.add_argument("--no-compare", dest="compare", action="store_false")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        pki = make_pki(Path(tmp))
        tls = (f"ssl_certificate {pki['server']}; ssl_certificate_key {pki['server_key']}; "
               "ssl_protocols TLSv1.2 TLSv1.3; ssl_session_tickets on;")
        wrk_on: dict[str, list[float]] = {}
        for server, start in (("nginx", lambda: nginx(1, tls=tls)),
                              ("embedded", lambda: embedded(1, "--tls"))):
            kept: list[dict[str, tuple[float, float]]] = []
            fresh: list[dict[str, tuple[float, float]]] = []
            with server_port(server, start) as port:
                if port is None:
                    continue
                url = f"https://127.0.0.1:{port}{TARGET}"
                for _ in range(args.rounds):
                    kept.append({name: one(name, argv, tmp) for name, argv
                                 in keepalive_clients(url, args.requests, tmp).items()})
                    fresh.append({name: one(name, argv, tmp) for name, argv
                                  in handshake_clients(url, args.handshakes, tmp).items()})
                    if "wrk" in kept[-1]:
                        wrk_on.setdefault(server, []).append(kept[-1]["wrk"][0])
            print(f"\n== {server} over TLS 1.3, GET {TARGET}, client on CPU 0, server on CPU 1, "
                  f"medians of {args.rounds} interleaved rounds")
            table("keep-alive, 50 connections:", kept, "req")
            table("a new connection per request, 50 at a time:", fresh, "handshake")
        if len(wrk_on) == 2:
            ratios = [e / n for e, n in zip(wrk_on["embedded"], wrk_on["nginx"], strict=False)]
            print(f"\n== wrk -c50 over TLS: the embedded server {statistics.median(ratios):.2f}x "
                  f"nginx's req/s (rounds {', '.join(f'{x:.2f}' for x in ratios)})")
    if args.compare:
        comparison(min(args.requests, 20_000))
    return 0


if __name__ == "__main__":
    sys.exit(main())

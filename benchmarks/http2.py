"""httpbench over HTTP/2 against h2load, the embedded server against nginx,
and HTTP/2 against HTTP/1.1, in one run.

    python benchmarks/http2.py [--requests N] [--rounds R] [--compare]

Client on CPU 0, server on CPU 1; each figure the median of R interleaved
rounds. Servers: nginx with http2 (one worker, access_log off, the same
2 KiB file) over TLS (h2 by ALPN) and on a plain port (h2c by prior
knowledge), and the embedded server over both (its own certificate).
- httpbench against h2load (-t 1) at (connections, streams) = (1, 1),
  (10, 10), (50, 100): req/s and the client's CPU per request (h2load's
  from wait4, the whole process; httpbench's loop threads' own, from its
  JSON), and their ratio; under each point, every round's pair of ratios
  (CPU, req/s), in order. The goal (issue 42): httpbench's CPU per
  request at most 0.8 of h2load's, at h2load's req/s or more, at every
  point. Both send the same requests: h2load is given httpbench's Accept
  field (-H "accept: */*"), which a server decodes and checks at a cost.
  Over TLS both clients use one cipher: h2load's own choice (its
  `Cipher:` line, AES-128-GCM here), given to httpbench with -Z (TLS 1.2)
  or --tls13-ciphers (TLS 1.3), and checked in its JSON; httpbench's TLS
  1.2 default is OpenSSL's list, AES-256 first, which nginx (TLS 1.2 here)
  takes, and AES-256 costs the client 1.4x the decryption of AES-128.
- The embedded server against nginx under h2load -c50 -m10: req/s.
- HTTP/2 against HTTP/1.1 for the same client and server (the embedded
  one): 10 connections keep-alive, pipelined 10 deep, and HTTP/2 with 10
  streams each: req/s and CPU per request.
- Uploads: 300 POSTs of 1 MiB to the embedded server's /echo over h2c at
  (1, 1), (2, 10) and (10, 10), h2load -d against httpbench -p: req/s and
  its ratio.
- With --compare: the comparison over HTTP/2 (httpbench compare --http2)
  on the embedded server: each Python client's ratio to the C core.
- With --stall (alone): issue 42's stall, ten short runs each of httpbench
  and h2load at (50, 100) against nginx h2c (one worker, multi_accept off,
  as nginx has it unless told), 22,000 requests: each run's req/s and the
  fewest requests a connection completed (counted from the run's
  per-request log), the runs where some connection completed exactly one (a
  connection that took a ticket before the server took it up, and held
  the run's tail), and the median req/s against h2load's.
h2load missing: its rows are skipped with a note.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from _support import CHILD_CWD, ROOT, arguments, embedded, free_port, nginx, server_port
from peers import measure

from httpbench import read_log

sys.path.insert(0, str(ROOT / "tests"))
from helpers import make_pki  # noqa: E402

TARGET = "/rnd?c=2048"
POINTS = ((1, 1), (10, 10), (50, 100))
# The field httpbench's requests carry and h2load's do not (h2load sends
# the four pseudo-fields and user-agent; httpbench adds Accept, as ab
# does): given to h2load, so both send the same requests and the server
# does the same work for each. The sixth field costs a server: the
# embedded one under h2load at (10, 10) spent 4.47 us of CPU a request
# with it to 4.27 without (nghttp2's header checks and callbacks; 5
# interleaved rounds), and served 224k req/s to 233k, a lead h2load had
# over httpbench wherever the server was the limit.
SAME_FIELDS = ("-H", "accept: */*")


def h2load(url: str, n: int, c: int, m: int, tmp: str, *flags: str) -> tuple[float, float]:
    """(req/s, CPU us per request) of one h2load run on CPU 0, its requests
    httpbench's fields (SAME_FIELDS)."""
    out, cpu, _ = measure(["h2load", "-n", str(n), "-c", str(c), "-m", str(m), "-t", "1",
                           *SAME_FIELDS, *flags, url], 0, tmp)
    rps = re.search(r"finished in [\d.]+m?s, ([\d.]+) req/s", out)
    done = re.search(r"(\d+) succeeded", out)
    if rps is None or done is None or int(done.group(1)) != n:
        raise RuntimeError(f"h2load did not finish its requests:\n{out[-800:]}")
    return float(rps.group(1)), cpu / n * 1e6


def h2load_cipher(url: str, tmp: str) -> tuple[str, str] | None:
    """The TLS protocol and cipher h2load negotiates with url's server
    (None over http or without h2load)."""
    if not url.startswith("https:") or not shutil.which("h2load"):
        return None
    out = subprocess.run(["h2load", "-n", "10", "-c", "1", url], capture_output=True, text=True,
                         cwd=tmp, timeout=60).stdout
    proto = re.search(r"TLS Protocol: (\S+)", out)
    cipher = re.search(r"Cipher: (\S+)", out)
    if proto is None or cipher is None:
        raise RuntimeError(f"h2load printed no TLS protocol and cipher:\n{out[-800:]}")
    return proto.group(1), cipher.group(1)


def cipher_option(tls: tuple[str, str] | None) -> tuple[str, ...]:
    """httpbench's option for the (protocol, cipher) h2load_cipher found
    (nothing over http): over TLS 1.2 nginx takes the client's first, and
    httpbench's default (OpenSSL's list, AES-256 first) is not h2load's."""
    if tls is None:
        return ()
    return ("--tls13-ciphers" if tls[0] == "TLSv1.3" else "-Z", tls[1])


def hb(url: str, n: int, c: int, tmp: str, *flags: str, cipher: str | None = None
       ) -> tuple[float, float]:
    """(req/s, CPU us per request of its loop threads) of one httpbench run
    on CPU 0; cipher: the one its handshakes must have negotiated."""
    out = f"{tmp}/hb.json"
    measure([sys.executable, "-m", "httpbench", "-q", "--insecure", "-n", str(n), "-c", str(c),
             "--threads", "1", "--json", out, *flags, url], 0, tmp)
    d = json.loads(Path(out).read_text())
    if d["complete"] != n:
        raise RuntimeError(f"httpbench completed {d['complete']} of {n}: {d['first_error']}")
    if cipher is not None and cipher not in d["tls_protocol"].split(","):
        raise RuntimeError(f"httpbench negotiated {d['tls_protocol']}, not {cipher}")
    return d["rps"], (d["cpu_user"] + d["cpu_sys"]) / n * 1e6


def med(values: list[float]) -> float:
    return statistics.median(values)


def against_h2load(name: str, url: str, n: int, rounds: int, tmp: str) -> None:
    print(f"\n{name}: httpbench --http2 against h2load -t1 (client on CPU 0), medians of "
          f"{rounds} rounds")
    tls = h2load_cipher(url, tmp)
    same = cipher_option(tls)
    if tls is not None:
        print(f"  both clients over {tls[0]} with {tls[1]} (h2load's choice; httpbench {same[0]})")
    print(f"  {'(c, m)':<10}{'h2load req/s':>14}{'us/req':>8}{'httpbench req/s':>17}{'us/req':>8}"
          f"{'CPU ratio':>11}{'req/s ratio':>13}")
    for c, m in POINTS:
        count = n if c > 1 else n // 2
        peer: list[tuple[float, float]] = []
        ours: list[tuple[float, float]] = []
        for _ in range(rounds):
            if shutil.which("h2load"):
                peer.append(h2load(url, count, c, m, tmp))
            ours.append(hb(url, count, c, tmp, "--http2", "--streams", str(m), *same,
                           cipher=tls[1] if tls else None))
        o_rps, o_cpu = med([x[0] for x in ours]), med([x[1] for x in ours])
        if not peer:
            print(f"  ({c}, {m}){'':<4}{'(h2load missing)':>22}{o_rps:>17,.0f}{o_cpu:>8.2f}")
            continue
        p_rps, p_cpu = med([x[0] for x in peer]), med([x[1] for x in peer])
        print(f"  {f'({c}, {m})':<10}{p_rps:>14,.0f}{p_cpu:>8.2f}{o_rps:>17,.0f}{o_cpu:>8.2f}"
              f"{o_cpu / p_cpu:>11.2f}{o_rps / p_rps:>13.2f}")
        each = "  ".join(f"{o[1] / p[1]:.2f}/{o[0] / p[0]:.2f}"
                         for o, p in zip(ours, peer, strict=True))
        print(f"  {'':<10}rounds (CPU/req/s ratios): {each}")
        # How much of its CPU each client kept busy (its CPU a request times
        # its req/s): a client near 1.00 never waits for an answer, so its
        # CPU a request is its floor, where one that waits pays for waking.
        print(f"  {'':<10}busy (share of the client's CPU, median): h2load "
              f"{med([x[0] * x[1] / 1e6 for x in peer]):.2f}, httpbench "
              f"{med([x[0] * x[1] / 1e6 for x in ours]):.2f}")


def servers_under_h2load(n: int, rounds: int, tmp: str) -> None:
    if not shutil.which("h2load"):
        print("\nservers: skipped (h2load: apt-get install nghttp2-client)")
        return
    got: dict[str, list[float]] = {"nginx": [], "embedded": []}
    plain = free_port()
    with nginx(1, http2=True, h2c_port=plain) as ng, embedded(1) as port:
        if ng is None:
            print("\nservers: skipped (nginx missing)")
            return
        for _ in range(rounds):
            got["nginx"].append(h2load(f"http://127.0.0.1:{plain}{TARGET}", n, 50, 10, tmp)[0])
            got["embedded"].append(h2load(f"http://127.0.0.1:{port}{TARGET}", n, 50, 10, tmp)[0])
    a, b = med(got["embedded"]), med(got["nginx"])
    print(f"\nservers under h2load -c50 -m10 -t1 (h2c, server on CPU 1): embedded {a:,.0f} "
          f"req/s, nginx {b:,.0f} req/s: {a / b:.2f}x")


def multiplexing(n: int, rounds: int, tmp: str) -> None:
    rows = {"HTTP/1.1 keep-alive": (), "HTTP/1.1 pipelined 10": ("--pipeline", "10"),
            "HTTP/2, 10 streams": ("--http2", "--streams", "10")}
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in rows}
    with embedded(1) as port:
        url = f"http://127.0.0.1:{port}{TARGET}"
        for _ in range(rounds):
            for name, flags in rows.items():
                got[name].append(hb(url, n, 10, tmp, *flags))
    print("\nHTTP/2 against HTTP/1.1: httpbench -c 10 on the embedded server")
    base = med([x[1] for x in got["HTTP/1.1 keep-alive"]])
    for name, runs in got.items():
        rps, cpu = med([x[0] for x in runs]), med([x[1] for x in runs])
        print(f"  {name:<24}{rps:>12,.0f} req/s{cpu:>8.2f} us/req ({cpu / base:.2f}x "
              "keep-alive's CPU)")


def uploads(rounds: int, tmp: str) -> None:
    """1 MiB bodies POSTed to the embedded server's /echo over h2c, where
    the server's window and the socket hold the body back again and again
    within an answer's time (the loop does not nap while a body is going
    out: docs/http2.md)."""
    if not shutil.which("h2load"):
        print("\nuploads: skipped (h2load: apt-get install nghttp2-client)")
        return
    body = Path(tmp) / "body"
    body.write_bytes(bytes(33 + b % 94 for b in range(1 << 20)))
    n = 300
    print(f"\nuploads: {n} POSTs of 1 MiB each to the embedded server's /echo over h2c, "
          f"medians of {rounds} rounds")
    print(f"  {'(c, m)':<10}{'h2load req/s':>14}{'httpbench req/s':>17}{'req/s ratio':>13}")
    with embedded(1) as port:
        url = f"http://127.0.0.1:{port}/echo"
        for c, m in ((1, 1), (2, 10), (10, 10)):
            peer = [h2load(url, n, c, m, tmp, "-d", str(body))[0] for _ in range(rounds)]
            ours = [hb(url, n, c, tmp, "--http2", "--streams", str(m), "-p", str(body))[0]
                    for _ in range(rounds)]
            print(f"  {f'({c}, {m})':<10}{med(peer):>14,.0f}{med(ours):>17,.0f}"
                  f"{med(ours) / med(peer):>13.2f}")


def compare_http2(n: int) -> None:
    # Its own embedded server, in process, pinned with the clients (as the
    # seed's single-connection comparison runs).
    run = subprocess.run([sys.executable, "-m", "httpbench", "compare", "--http2", "-q",
                          "-n", str(n)], capture_output=True, text=True, cwd=CHILD_CWD,
                         timeout=900)
    print("\ncompare --http2 on the embedded server:")
    print(run.stdout if run.returncode == 0 else run.stderr)


def stall(runs: int, tmp: str) -> None:
    if not shutil.which("h2load"):
        print("stall: skipped (h2load: apt-get install nghttp2-client)")
        return
    n, plain = 22_000, free_port()
    ours: list[float] = []
    peer: list[float] = []
    ones = 0
    with nginx(1, http2=True, h2c_port=plain) as ng:
        if ng is None:
            print("stall: skipped (nginx missing)")
            return
        url = f"http://127.0.0.1:{plain}{TARGET}"
        print(f"the stall: {runs} runs each at (50, 100) against nginx h2c, {n:,} requests")
        for i in range(runs):
            peer.append(h2load(url, n, 50, 100, tmp)[0])
            out, log = f"{tmp}/stall.json", f"{tmp}/stall.csv"
            measure([sys.executable, "-m", "httpbench", "-q", "--http2", "--streams", "100",
                     "-n", str(n), "-c", "50", "--threads", "1", "--json", out, "--log", log,
                     url], 0, tmp)
            d = json.loads(Path(out).read_text())
            done = Counter(x.connection for x in read_log(log) if not x.failure)
            fewest = min(done.get(k, 0) for k in range(50))
            ones += fewest == 1
            ours.append(d["rps"])
            print(f"  run {i + 1}: h2load {peer[-1]:,.0f} req/s, httpbench {d['rps']:,.0f} req/s "
                  f"({d['complete']:,} complete, {d['failed']} failed), fewest by a connection "
                  f"{fewest}")
    print(f"  runs with a connection that completed one request: {ones} of {runs}; median "
          f"req/s {med(ours):,.0f} against h2load's {med(peer):,.0f}: {med(ours) / med(peer):.3f}")


def main() -> int:
    ap = arguments(__doc__, requests=200_000)
    ap.add_argument("--compare", action="store_true", help="the comparison over HTTP/2 too")
    ap.add_argument("--stall", action="store_true", help="issue 42's stall alone")
    args = ap.parse_args()
    n, rounds = args.requests, args.rounds
    if args.stall:
        with tempfile.TemporaryDirectory() as tmp:
            stall(10, tmp)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        pki = make_pki(Path(tmp))
        tls = f"ssl_certificate {pki['server']}; ssl_certificate_key {pki['server_key']};"
        plain = free_port()
        with server_port("nginx", lambda: nginx(1, tls=tls, http2=True, h2c_port=plain)) as port:
            if port is not None:
                against_h2load("nginx h2 (TLS)", f"https://127.0.0.1:{port}{TARGET}", n, rounds,
                               tmp)
                against_h2load("nginx h2c", f"http://127.0.0.1:{plain}{TARGET}", n, rounds, tmp)
        with embedded(1, "--tls", "--cert", pki["server"], "--key", pki["server_key"]) as port:
            against_h2load("embedded h2 (TLS)", f"https://127.0.0.1:{port}{TARGET}", n, rounds,
                           tmp)
        with embedded(1) as port:
            against_h2load("embedded h2c", f"http://127.0.0.1:{port}{TARGET}", n, rounds, tmp)
        servers_under_h2load(n, rounds, tmp)
        multiplexing(n // 2, rounds, tmp)
        uploads(rounds, tmp)
        if args.compare:
            compare_http2(min(n, 20_000))
    return 0


if __name__ == "__main__":
    sys.exit(main())

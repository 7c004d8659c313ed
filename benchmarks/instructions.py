"""Instructions a request in user space, httpbench beside h2load, by library.

    python benchmarks/instructions.py [--requests N] [--only WORD]

valgrind's callgrind counts the instructions each client runs, which hold
on a busy machine where its timings do not: the figures that say where
issue 42's CPU goes and which part of it is the same work for both clients.
Each client runs twice at each point, N/10 and N + N/10 requests, and the
difference is divided by N, so start-up and the first connections fall
out. httpbench's count is its loop thread's (`--toggle-collect=hb_bl_run`,
as its CPU figure is the loop threads'), h2load's its whole process.

Points: h2c and TLS at (1, 1), (10, 10) and (50, 100), as http2.py, against
the embedded server and nginx (both on CPU 1, the client on CPU 0; both
clients on h2load's cipher and with the same fields); and resumed TLS
handshakes, as tls.py (keep-alive off against `h2load --h1 -H "Connection:
close"`), N/10 of them. Each row: instructions a request by library, the
total, and the shared part (libcrypto, libssl, libnghttp2: the same library
calls for the same requests) as a share of h2load's total, which bounds
from below the user-space ratio any client driving those libraries can
reach. The kernel's part is not counted here (valgrind runs in user space):
http2.py's CPU figures hold it.

Needs valgrind (`apt-get install -y valgrind`) and h2load; a point without
a peer is skipped. Under valgrind a run is about fifty times slower: the
whole table took ten minutes here at the default N.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from _support import ROOT, arguments, embedded, free_port, nginx, pinned, server_port
from http2 import POINTS, SAME_FIELDS, TARGET, cipher_option, h2load_cipher

sys.path.insert(0, str(ROOT / "tests"))
from helpers import make_pki  # noqa: E402

# Libraries both clients call for the same requests; each client's own
# code, its allocator and the C library are the rest. glibc's memcpy has
# its own group: above about 8 KiB it copies with `rep movsb`, which
# valgrind counts by the byte (a 16 KiB copy 16,367 instructions, an 8 KiB
# one 794), so its count says little of its CPU.
SHARED = ("libcrypto", "libssl", "libnghttp2")
# (group, a part of the object's name, a part of the function's).
GROUPS = (("libcrypto", "libcrypto", ""), ("libssl", "libssl", ""),
          ("libnghttp2", "libnghttp2", ""), ("memcpy", "libc.so", "memmove-vec"),
          ("libc", "libc.so", ""), ("jemalloc", "libjemalloc", ""), ("httpbench", "_core.", ""),
          ("python", "libpython", ""), ("h2load", "h2load", ""), ("libev", "libev", ""))
# A line of callgrind_annotate's: count, share, file:function [object].
ANNOTATED = re.compile(r"^\s*([\d,]+)\s+\([^)]*\)\s+(.*)\[(.+)\]\s*$")

Argv = Callable[[int], list[str]]


def counted(argv: list[str], tmp: str, *flags: str) -> dict[str, int]:
    """Instructions by "object*function" of one run of argv under callgrind,
    client on CPU 0 (exclusive counts, as callgrind_annotate prints them)."""
    out = f"{tmp}/callgrind.out"
    run = subprocess.run(pinned(0, ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                                    *flags, *argv]),
                         capture_output=True, text=True, cwd="/")
    if run.returncode not in (0, 1):
        raise RuntimeError(f"{argv[0]} under callgrind exited {run.returncode}:\n"
                           f"{run.stdout[-600:]}{run.stderr[-600:]}")
    annotated = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", out],
                               capture_output=True, text=True, check=True).stdout
    by_object: dict[str, int] = defaultdict(int)
    for line in annotated.splitlines():
        m = ANNOTATED.match(line)
        if m is not None:
            where = f"{os.path.basename(m.group(3))}*{m.group(2).strip()}"
            by_object[where] += int(m.group(1).replace(",", ""))
    os.unlink(out)
    return by_object


def per_request(argv: Argv, n: int, tmp: str, *flags: str) -> dict[str, float]:
    """Instructions a request by group: the run of n + n/10 less the run of n/10."""
    small, large = counted(argv(n // 10), tmp, *flags), counted(argv(n + n // 10), tmp, *flags)
    groups: dict[str, float] = defaultdict(float)
    for where in set(small) | set(large):
        obj, _, function = where.partition("*")
        name = next((g for g, o, f in GROUPS if o in obj and f in function), "other")
        groups[name] += (large.get(where, 0) - small.get(where, 0)) / n
    return groups


def row(label: str, ours: dict[str, float], peer: dict[str, float]) -> None:
    names = [g for g, _, _ in GROUPS if ours.get(g, 0) >= 50 or peer.get(g, 0) >= 50] + ["other"]
    o_total, p_total = sum(ours.values()), sum(peer.values())
    shared = sum(ours.get(g, 0) for g in SHARED)
    print(f"\n{label}: instructions a request (httpbench / h2load)")
    print("  " + "  ".join(f"{g} {ours.get(g, 0):,.0f}/{peer.get(g, 0):,.0f}" for g in names))
    print(f"  total {o_total:,.0f}/{p_total:,.0f} = {o_total / p_total:.3f}; shared libraries "
          f"{shared:,.0f} in httpbench = {shared / p_total:.3f} of h2load's total")


def hb_argv(url: str, c: int, *flags: str) -> Argv:
    return lambda n: [sys.executable, "-m", "httpbench", "-q", "--insecure", "-n", str(n),
                      "-c", str(c), "--threads", "1", *flags, url]


def http2_points(name: str, url: str, n: int, tmp: str, only: str) -> None:
    same = cipher_option(h2load_cipher(url, tmp))
    for c, m in POINTS:
        label = f"{name} ({c}, {m})"
        if only not in label:
            continue
        ours = per_request(hb_argv(url, c, "--http2", "--streams", str(m), *same), n, tmp,
                           "--toggle-collect=hb_bl_run")
        peer = per_request(lambda k, c=c, m=m: ["h2load", "-n", str(k), "-c", str(c), "-m", str(m),
                                                "-t", "1", *SAME_FIELDS, url], n, tmp)
        row(label, ours, peer)


def handshakes(name: str, url: str, n: int, tmp: str, only: str) -> None:
    label = f"{name} resumed handshakes"
    if only not in label:
        return
    same = cipher_option(h2load_cipher(url, tmp))
    ours = per_request(hb_argv(url, 50, "--no-keepalive", *same), n, tmp,
                       "--toggle-collect=hb_bl_run")
    peer = per_request(lambda k: ["h2load", "--h1", "-n", str(k), "-c", "50", "-t", "1", "-H",
                                  "Connection: close", url], n, tmp)
    row(label, ours, peer)


def main() -> int:
    ap = arguments(__doc__, requests=20_000, rounds=None)
    ap.add_argument("--only", default="", help="the points whose label holds this word")
    args = ap.parse_args()
    # The difference cancels each connection's set-up (its full handshake)
    # only when the smaller run already opens all 50: the handshakes' N/100.
    if args.requests < 5_000:
        ap.error("--requests must be at least 5,000 (the handshakes' smaller run, N/100, "
                 "must open all 50 connections)")
    missing = [tool for tool in ("valgrind", "callgrind_annotate", "h2load")
               if shutil.which(tool) is None]
    if missing:
        print(f"skipped: {', '.join(missing)} missing (apt-get install -y valgrind "
              "nghttp2-client)")
        return 0
    n = args.requests
    with tempfile.TemporaryDirectory() as tmp:
        pki = make_pki(Path(tmp))
        cert = ("--cert", pki["server"], "--key", pki["server_key"])
        with embedded(1, "--tls", *cert) as port:
            url = f"https://127.0.0.1:{port}{TARGET}"
            http2_points("embedded TLS", url, n, tmp, args.only)
            handshakes("embedded", url, n // 10, tmp, args.only)
        with embedded(1) as port:
            http2_points("embedded h2c", f"http://127.0.0.1:{port}{TARGET}", n, tmp, args.only)
        tls = f"ssl_certificate {pki['server']}; ssl_certificate_key {pki['server_key']};"
        plain = free_port()
        with server_port("nginx", lambda: nginx(1, tls=tls, http2=True, h2c_port=plain)) as port:
            if port is not None:
                url = f"https://127.0.0.1:{port}{TARGET}"
                http2_points("nginx TLS", url, n, tmp, args.only)
                http2_points("nginx h2c", f"http://127.0.0.1:{plain}{TARGET}", n, tmp, args.only)
                handshakes("nginx", url, n // 10, tmp, args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())

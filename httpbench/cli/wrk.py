"""`httpbench wrk ...`: wrk 4.1's command line (its flags, defaults and
units, as `wrk` and its README give them) and wrk2's -R/--rate (from
wrk2's README; wrk2 is not in Debian), and wrk's report layout. A flag
wrk has that cannot be honoured is refused, never read as something
else."""

from __future__ import annotations

import argparse
import errno
import os
import re
import socket
import sys
from collections.abc import Sequence
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

from .. import _check
from .._url import split_url
from .._version import __version__
from ..render.wrk import header, wrk_report
from ..result import Result
from .common import UsageError, parse_headers, parse_time, without_added
from .execute import execute_mode, output_options
from .flags import Flag, checked, mode_parser

PROG = "httpbench wrk"
# The settings httpbench's advice may name, in wrk's letters (httpbench.hints).
WORDS = {"concurrency": "-c", "threads": "-t", "timeout": "--timeout"}

FLAGS: tuple[Flag, ...] = (
    Flag(("-c", "--connections"), "<N>", "Connections to keep open",
         "concurrency=N (default 10; at least -t)", default="10"),
    Flag(("-d", "--duration"), "<T>", "Duration of test",
         "duration=T (default 10s; 2s, 2m, 2h, and 500ms too)", default="10s"),
    Flag(("-t", "--threads"), "<N>", "Number of threads to use",
         "threads=N (default 2)", default="2"),
    Flag(("-s", "--script"), "<S>", "Load Lua script file",
         "no Lua here: write the requests as a Python httpbench.Scenario and run it with "
         "httpbench --scenario FILE.py", refused=True),
    Flag(("-H", "--header"), "<H>", "Add header to request", "headers=[...]", repeat=True),
    Flag(("-L", "--latency"), "", "Print latency statistics",
         "the Latency Distribution table (50, 75, 90, 99%)"),
    Flag(("--timeout",), "<T>", "Socket/request timeout", "timeout=T (default 2s, as wrk's)",
         default="2s"),
    Flag(("-v", "--version"), "", "Print version details", "prints httpbench's version"),
    Flag(("-R", "--rate"), "<T>", "wrk2: work rate (throughput) in requests/sec (total)",
         "rate=R: an open loop, latency from each request's intended start (wrk2's "
         "correction)"),
    Flag(("-h", "--help"), "", "Print this help", "this help"),
)

EXAMPLES = """\
as wrk (and wrk2's -R), one word changed:
  httpbench wrk -t2 -c50 -d10s --latency http://127.0.0.1:8080/rnd?c=2048
  httpbench wrk -t2 -c100 -d30s -R2000 http://127.0.0.1:8080/rnd?c=2048
  httpbench wrk -c10 -d5s -H 'Accept: text/html' --timeout 5s http://127.0.0.1:8080/rnd?c=2048
with what wrk does not have:
  httpbench wrk -t2 -c50 -d10s --json result.json --log requests.csv URL

Numeric arguments may include a SI unit (1k, 1M, 1G); time arguments a time
unit (2s, 2m, 2h). The report is wrk's; httpbench's own figures follow it
after a blank line. Exit status: 0 when no request failed, 1 when some did
(wrk exits 0 even then), 2 for bad usage (nothing was sent).
"""

_METRIC = {"": 1, "k": 1000, "m": 1000 ** 2, "g": 1000 ** 3}


def wrk_parser() -> argparse.ArgumentParser:
    return mode_parser(PROG, "wrk 4.1's command line and report (and wrk2's -R), with "
                             "httpbench's C loop underneath.", EXAMPLES, FLAGS,
                       "<url>")


def _metric(flag: str, text: str, low: int, high: int) -> int:
    """wrk's scan_metric: a whole number, with k, M or G after it."""
    m = re.fullmatch(r"(\d+)([kmg]?)", text.strip().lower())
    if m is None:
        raise UsageError(f"{flag} takes a whole number, with k, M or G after it if you like "
                         f"(1k), not {text!r}")
    return _check.count(flag, int(m.group(1)) * _METRIC[m.group(2)], low, high)


def _settings(args: argparse.Namespace) -> tuple[dict[str, Any], float, int, int]:
    """run()'s arguments from wrk's flags, and the duration, threads and
    connections its header names."""
    if args.url is None:
        raise UsageError("give the URL")
    threads = _metric("-t", args.opt_threads, 1, _check.MAX_THREADS)
    connections = _metric("-c", args.opt_connections, 1, _check.MAX_CONCURRENCY)
    if connections < threads:
        raise UsageError(f"number of connections must be >= threads (-c {connections}, "
                         f"-t {threads})")
    duration = parse_time("-d", args.opt_duration)
    rate = None
    if args.opt_rate is not None:
        rate = _check.rate(float(_metric("-R", args.opt_rate, 1, int(_check.MAX_RATE))),
                           connections)
    kwargs: dict[str, Any] = dict(
        # wrk's requests carry Host alone (and -H's).
        headers=without_added(parse_headers(args.opt_header), "User-Agent", "Accept"),
        duration=duration, concurrency=connections,
        threads=threads, keepalive=True, rate=rate, timeout=parse_time("--timeout",
                                                                      args.opt_timeout),
        # wrk stops its threads at the duration's end: what is in flight
        # then is not counted, and the run lasts the duration.
        grace=0.0, progress=False, verify=False, **output_options(args))
    return kwargs, duration, threads, connections


def reachable(url: str, timeout: float) -> str | None:
    """wrk's look before its run (wrk.resolve in wrk.lua): resolve the URL's
    host and service (the port as written, else the scheme), connect to each
    address and close; None when one connected, else wrk's line for stderr
    (it exits 1 with it, nothing run). wrk's connect waits as long as the
    kernel does; here at most the --timeout. A URL httpbench refuses is left
    to the run's own error."""
    try:
        split_url(url)
        parts = urlsplit(url)
        service = str(parts.port) if parts.port is not None else parts.scheme
    except ValueError:
        return None
    host = parts.netloc.rpartition("@")[2]  # (as written: wrk keeps its case)
    host = host[1:host.index("]")] if host.startswith("[") else host.partition(":")[0]
    try:
        addrs = socket.getaddrinfo(host, service, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        return f"unable to resolve {host}:{service} {e.strerror}"
    err = 0
    for family, kind, proto, _, addr in reversed(addrs):  # (wrk.lua's order)
        with socket.socket(family, kind, proto) as s:
            s.settimeout(timeout)
            try:
                s.connect(addr)
                return None
            except TimeoutError:
                err = errno.ETIMEDOUT  # (a socket timeout's TimeoutError has no errno)
            except OSError as e:
                err = e.errno or 0
    return f"unable to connect to {host}:{service} {os.strerror(err)}"


def without_userinfo(url: str) -> str:
    """The URL with no user:password@ before its host: wrk sends no
    credentials the URL holds (no Authorization; its Host is host:port)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def wrk_main(argv: Sequence[str]) -> int:
    args = wrk_parser().parse_args(argv)
    if args.opt_version:
        print(f"httpbench {__version__}, in wrk 4.1's mode (httpbench wrk)")
        if args.url is None:
            return 0
    settings = checked(PROG, args, FLAGS, lambda: _settings(args))
    if isinstance(settings, int):
        return settings
    kwargs, duration, threads, connections = settings
    unreachable = reachable(args.url, kwargs["timeout"])
    if unreachable is not None:
        print(unreachable, file=sys.stderr)
        return 1
    def banner(out: IO[str]) -> bool:
        out.write(header(args.url, duration, threads, connections))
        return False

    def write_report(r: Result, out: IO[str]) -> None:
        out.write(wrk_report(r, duration, threads, connections, args.opt_latency, WORDS))

    return execute_mode(PROG, without_userinfo(args.url), kwargs, args, write_report,
                        banner=banner)

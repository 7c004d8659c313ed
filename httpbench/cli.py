"""The httpbench command line.

    httpbench                                   the comparison on the embedded server
    httpbench compare [--agents a,b] [-n N] [-c C] [URL]
    httpbench [-n N] [-c C] [-t SECONDS] [-k] [-p POSTFILE] [-u PUTFILE] [-T TYPE]
              [-H 'Name: value']... [-m METHOD] [-s TIMEOUT] [-q] [-l] [-e CSVFILE]
              [--json FILE] [--rate R] [--threads T] [--warmup N|Ss] [URL]
    httpbench serve [--host H] [--port P] [--mode epoll|threads] [--threads T] [--static DIR]

As ab: the same letters, the same report. Keep-alive is on unless
--no-keepalive (-k is accepted from habit). With no URL, the seed's client
comparison runs on the embedded server (`httpbench compare`). Exit status 0
only when every request completed without failure; 2 for bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from collections.abc import Iterable, Iterator, Sequence
from types import FrameType
from typing import IO

from . import _check
from ._version import __version__
from .agents import AGENTS, MAX_WORKERS, available_agents
from .compare import compare
from .exceptions import HttpbenchError
from .result import Result
from .runner import parse_url, run
from .server import Server

__all__ = ["main"]


def serve_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="httpbench serve",
        description="Run the embedded target server until Ctrl-C.",
        epilog="Endpoints: GET|HEAD /rnd?c=N, POST|PUT /echo, GET|HEAD /static/PATH, "
               "GET /status/CODE, GET /delay?ms=N, GET /chunked?c=N.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080; 0: any free port)")
    p.add_argument("--mode", choices=("epoll", "threads"), default="epoll",
                   help="event loops, or a thread per connection (default epoll)")
    p.add_argument("--threads", type=int, default=1, help="event loops in epoll mode (default 1)")
    p.add_argument("--static", metavar="DIR", help="serve DIR under /static/")
    p.add_argument("--no-zero-copy", dest="zero_copy", action="store_false",
                   help="send static files with read/write instead of sendfile")
    p.add_argument("--max-buffered", metavar="SIZE", default="256M",
                   help="request bodies held at once, over all connections; past it a body "
                        "gets 503 (bytes, or like 256M; default 256M)")
    return p


class _Stop(Exception):
    """SIGTERM or SIGHUP: end as Ctrl-C does."""


def _on_stop_signal(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def serve(argv: Sequence[str]) -> int:
    args = serve_parser().parse_args(argv)
    try:
        max_buffered = _check.byte_size("--max-buffered", args.max_buffered)
        srv = Server(args.host, args.port, args.mode, args.threads, args.static, args.zero_copy,
                     max_buffered=max_buffered)
    except (OSError, ValueError) as e:
        print(f"httpbench serve: {e}", file=sys.stderr)
        return 2
    threads = f", {args.threads} thread{'s' * (args.threads > 1)}" if args.mode == "epoll" else ""
    print(f"httpbench {__version__} serving {srv.url()} ({args.mode}{threads}); Ctrl-C to stop",
          flush=True)
    # A service manager's stop (SIGTERM) and a closed terminal (SIGHUP) end
    # it as Ctrl-C does: the server closes and the summary is printed.
    previous = {sig: signal.signal(sig, _on_stop_signal) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        srv.serve_forever()
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        srv.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    st = srv.stats()
    print(f"served {st['requests']} requests on {st['connections']} connections", flush=True)
    return 0


def bench_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="httpbench",
        description="Benchmark an HTTP server, ab-style; with no URL, run the seed's scenario "
                    "on the embedded server. `httpbench serve` runs that server.",
    )
    p.add_argument("url", nargs="?", metavar="URL", help="http://host[:port]/path")
    p.add_argument("-n", dest="requests", type=int, help="requests to perform")
    p.add_argument("-c", dest="concurrency", type=int,
                   help="requests at a time: connections (default 1, as in ab)")
    p.add_argument("-t", dest="timelimit", type=float, help="seconds to run for")
    p.add_argument("-k", dest="keepalive", action="store_true", default=True,
                   help="keep-alive (the default; accepted from habit)")
    p.add_argument("--no-keepalive", dest="keepalive", action="store_false",
                   help="a new connection per request")
    p.add_argument("-p", dest="postfile", help="file to POST")
    p.add_argument("-u", dest="putfile", help="file to PUT")
    p.add_argument("-T", dest="content_type", help="Content-Type of the body")
    p.add_argument("-H", dest="headers", action="append", default=[], metavar="'Name: value'",
                   help="extra header (repeatable)")
    p.add_argument("-m", dest="method", help="method (default GET, POST with -p, PUT with -u)")
    p.add_argument("-s", dest="timeout", type=float, default=30.0,
                   help="seconds each request may take (default 30)")
    p.add_argument("-q", dest="quiet", action="store_true", help="no progress")
    p.add_argument("-l", dest="lengths_vary", action="store_true",
                   help="do not count a body length unlike the first as a failure")
    p.add_argument("-e", dest="csv", help="write the percentiles as CSV to this file")
    p.add_argument("--json", dest="json", help="write the whole result as JSON to this file")
    p.add_argument("--rate", type=float, help="open loop at this many requests a second")
    p.add_argument("--threads", type=int, help="OS threads (default: CPUs, capped by -c)")
    p.add_argument("--warmup", help="requests (N) or seconds (Ns) to run first, uncounted")
    p.add_argument("-V", "--version", action="version", version=f"httpbench {__version__}")
    return p


class UsageError(Exception):
    pass


def _warmup(text: str | None) -> int | float | None:
    if text is None:
        return None
    try:
        value: int | float = float(text[:-1]) if text.endswith("s") else int(text)
    except ValueError:
        raise UsageError(f"--warmup takes a count or seconds like 2s, not {text!r}") from None
    try:
        return _check.warmup(value)
    except ValueError as e:
        raise UsageError(f"--{e}") from None


def _headers(lines: list[str]) -> list[tuple[str, str]]:
    out = []
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"-H takes 'Name: value', not {line!r}")
        out.append((name.strip(), value.strip()))
    return out


def write_csv(result: Result, f: IO[str]) -> None:
    """ab's -e file: the time in ms within which each percentage was served."""
    f.write("Percentage served,Time in ms\n")
    for p in range(101):
        f.write(f"{p},{result.latency.percentile(p) * 1e3:.3f}\n")


class _Outputs:
    """Output files, opened before the run so that a bad path is a usage
    error at once, not a traceback after a long run. A file the run never
    wrote to is removed again if it did not exist before."""

    def __init__(self, paths: dict[str, str | None]) -> None:
        self.files: dict[str, tuple[str, IO[str], bool]] = {}
        for flag, path in paths.items():
            if path is None:
                continue
            existed = os.path.exists(path)
            try:
                f = open(path, "a")
            except OSError as e:
                self.discard()
                raise UsageError(f"{flag}: cannot write {path}: {e.strerror}") from None
            self.files[flag] = (path, f, existed)

    def get(self, flag: str) -> IO[str] | None:
        """The file for flag, emptied for writing; None when not asked for."""
        if flag not in self.files:
            return None
        _, f, _ = self.files[flag]
        f.seek(0)
        f.truncate()
        return f

    def close(self) -> None:
        for _, f, _ in self.files.values():
            f.close()

    def discard(self) -> None:
        for path, f, existed in self.files.values():
            f.close()
            if not existed:
                os.unlink(path)
        self.files = {}


def _one_line(prog: str, e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return f"{prog}: {text}"


def bench(argv: Sequence[str]) -> int:
    parser = bench_parser()
    args = parser.parse_args(argv)
    try:
        if args.requests is not None:
            args.requests = _check.count("-n", args.requests)
        if args.concurrency is None:
            args.concurrency = 1
        args.concurrency = _check.count("-c", args.concurrency, 1, _check.MAX_CONCURRENCY)
        if args.timelimit is not None:
            args.timelimit = _check.seconds("-t", args.timelimit)
        if args.threads is not None:
            args.threads = _check.count("--threads", args.threads, 1, _check.MAX_THREADS)
        if args.rate is not None:
            args.rate = _check.rate(args.rate, args.concurrency)
        timeout = _check.seconds("-s", args.timeout)
        warmup = _warmup(args.warmup)
        headers = _headers(args.headers)
        body = None
        method = args.method
        for flag, path, verb in (("-p", args.postfile, "POST"), ("-u", args.putfile, "PUT")):
            if path is not None:
                try:
                    with open(path, "rb") as f:
                        body = f.read()
                except OSError as e:
                    raise UsageError(f"{flag}: {e}") from None
                method = method or verb
        if args.content_type:
            headers.append(("Content-Type", args.content_type))
        if args.url is not None:
            parse_url(args.url)
    except (UsageError, ValueError) as e:
        print(f"httpbench: {e}", file=sys.stderr)
        return 2
    common = dict(concurrency=args.concurrency, threads=args.threads, keepalive=args.keepalive,
                  rate=args.rate, timeout=timeout, warmup=warmup,
                  progress=not args.quiet and "auto", lengths_vary=args.lengths_vary)
    if args.url is None:
        # The main job: the comparison on the embedded server.
        rest = ["-n", str(args.requests)] if args.requests else []
        rest += ["-c", str(args.concurrency)] + (["-q"] if args.quiet else [])
        rest += ["-t", str(args.timelimit)] if args.timelimit else []
        return compare_main(rest)
    try:
        outputs = _Outputs({"-e": args.csv, "--json": args.json})
    except UsageError as e:
        print(f"httpbench: {e}", file=sys.stderr)
        return 2
    try:
        r = run(args.url, method or "GET", body, headers, args.requests, args.timelimit,
                stream=sys.stderr, **common)
    except ValueError as e:
        outputs.discard()
        print(_one_line("httpbench", e), file=sys.stderr)
        return 2
    except (HttpbenchError, OSError) as e:
        # Nothing ran: the name did not resolve, or the system refused the
        # run its threads or descriptors.
        outputs.discard()
        print(_one_line("httpbench", e), file=sys.stderr)
        return 1
    sys.stdout.write(r.report())
    if r.first_error and r.failed:
        print(f"First failure: {r.first_error}")
    sys.stdout.flush()
    csv = outputs.get("-e")
    if csv is not None:
        write_csv(r, csv)
    out = outputs.get("--json")
    if out is not None:
        out.write(r.to_json())
    outputs.close()
    return 0 if r.ok else 1


def compare_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="httpbench compare",
        description="The same scenario through httpbench's C loop and Python's HTTP clients, "
                    "each reported as ab reports, then side by side. With no URL: the "
                    "embedded server, GET /rnd?c=2048 and POST 2 KiB to /echo.",
    )
    p.add_argument("url", nargs="?", metavar="URL", help="another server (the scenario's "
                   "method is sent to this URL)")
    p.add_argument("--agents", help=f"comma-separated, of: {', '.join(AGENTS)} "
                   "(default: every one installed)")
    p.add_argument("-n", dest="requests", type=int, help="requests per agent and scenario "
                   "(default 20,000, 200,000 with --full)")
    p.add_argument("-c", dest="concurrency", type=int, default=1,
                   help="connections per agent (default 1)")
    p.add_argument("-t", dest="duration", type=float,
                   help="seconds each run may take at most (default 3; none with --full)")
    p.add_argument("--full", action="store_true",
                   help="the seed's full 200,000 requests per agent and scenario, no time cap")
    p.add_argument("--no-pin", dest="pin", action="store_false",
                   help="do not run on one CPU (with the embedded server and -c 1, server and "
                        "clients share one CPU, as in the seed's runs)")
    p.add_argument("-q", dest="quiet", action="store_true", help="no progress lines")
    p.add_argument("--json", help="write every result as JSON to this file")
    p.add_argument("--markdown", help="write the side-by-side table as Markdown to this file")
    return p


def compare_main(argv: Sequence[str]) -> int:
    args = compare_parser().parse_args(argv)
    agents = None
    try:
        if args.agents:
            agents = [a.strip() for a in args.agents.split(",") if a.strip()]
            unknown = [a for a in agents if a not in AGENTS]
            if unknown:
                raise UsageError(f"unknown agent(s) {', '.join(unknown)}; available here: "
                                 f"{', '.join(available_agents())}")
        if args.requests is not None:
            args.requests = _check.count("-n", args.requests)
        args.concurrency = _check.count("-c", args.concurrency, 1, MAX_WORKERS)
        if args.duration is not None:
            args.duration = _check.seconds("-t", args.duration)
        if args.url is not None:
            parse_url(args.url)
        outputs = _Outputs({"--json": args.json, "--markdown": args.markdown})
    except (UsageError, ValueError) as e:
        print(f"httpbench compare: {e}", file=sys.stderr)
        return 2
    requests = args.requests or (200_000 if args.full else 20_000)
    duration = args.duration if args.duration is not None else (None if args.full else 3.0)
    pin = None if args.pin else False
    if args.pin and args.url is None and args.concurrency == 1 and not args.quiet:
        print(f"(on CPU {max(os.sched_getaffinity(0))}, server and clients together; --no-pin "
              "to leave the scheduler alone)", file=sys.stderr)
    if not args.quiet:
        cap = f", at most {duration:g} s each" if duration else ""
        print(f"Comparing {', '.join(agents or available_agents())}: {requests} requests per "
              f"agent and scenario{cap}, {args.concurrency} connection(s)", file=sys.stderr)
    try:
        cmp = compare(args.url, agents, requests=requests, concurrency=args.concurrency,
                      duration=duration, progress=not args.quiet, pin=pin)
    except (ValueError, HttpbenchError, OSError) as e:
        outputs.discard()
        print(_one_line("httpbench compare", e), file=sys.stderr)
        return 2 if isinstance(e, ValueError) else 1
    sys.stdout.write(cmp.report())
    out = outputs.get("--json")
    if out is not None:
        json.dump({f"{a} {s}": r.to_dict() for (a, s), r in cmp.results.items()}, out, indent=2)
    out = outputs.get("--markdown")
    if out is not None:
        out.write(cmp.to_markdown())
    outputs.close()
    return 0 if all(r.ok for r in cmp.results.values()) else 1


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args and args[0] == "serve":
            return serve(args[1:])
        if args and args[0] == "compare":
            return compare_main(args[1:])
        return bench(args)
    except KeyboardInterrupt:
        # Ctrl-C outside a run (a run reports what it measured): no
        # traceback, the shell's status for SIGINT.
        print("httpbench: interrupted", file=sys.stderr)
        return 130

"""The httpbench command line.

    httpbench [-n N] [-c C] [-t SECONDS] [-k] [-p POSTFILE] [-u PUTFILE] [-T TYPE]
              [-H 'Name: value']... [-m METHOD] [-s TIMEOUT] [-q] [-l] [-e CSVFILE]
              [--json FILE] [--rate R] [--threads T] [--warmup N|Ss] [URL]
    httpbench serve [--host H] [--port P] [--mode epoll|threads] [--threads T] [--static DIR]

As ab: the same letters, the same report. Keep-alive is on unless
--no-keepalive (-k is accepted from habit). With no URL, the seed's scenario
runs on the embedded server: 200,000 keep-alive GETs of /rnd?c=2048 and
200,000 POSTs of 2048 bytes to /echo. Exit status 0 only when every request
completed without failure; 2 for bad usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator, Sequence

from ._version import __version__
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
    return p


def serve(argv: Sequence[str]) -> int:
    args = serve_parser().parse_args(argv)
    try:
        srv = Server(args.host, args.port, args.mode, args.threads, args.static, args.zero_copy)
    except (OSError, ValueError) as e:
        print(f"httpbench serve: {e}", file=sys.stderr)
        return 2
    threads = f", {args.threads} thread{'s' * (args.threads > 1)}" if args.mode == "epoll" else ""
    print(f"httpbench {__version__} serving {srv.url()} ({args.mode}{threads}); Ctrl-C to stop",
          flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
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
                   help="requests at a time: connections (default 1 as in ab; 50 for the "
                        "seed's scenario)")
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
    if value <= 0:
        raise UsageError("--warmup must be positive")
    return value


def _headers(lines: list[str]) -> list[tuple[str, str]]:
    out = []
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"-H takes 'Name: value', not {line!r}")
        out.append((name.strip(), value.strip()))
    return out


def write_csv(result: Result, path: str) -> None:
    """ab's -e file: the time in ms within which each percentage was served."""
    with open(path, "w") as f:
        f.write("Percentage served,Time in ms\n")
        for p in range(101):
            f.write(f"{p},{result.latency.percentile(p) * 1e3:.3f}\n")


def bench(argv: Sequence[str]) -> int:
    parser = bench_parser()
    args = parser.parse_args(argv)
    try:
        if args.requests is not None and args.requests < 1:
            raise UsageError("-n must be a positive number of requests")
        if args.concurrency is None:
            args.concurrency = 1 if args.url is not None else 50
        if args.concurrency < 1:
            raise UsageError("-c must be a positive number of connections")
        if args.timelimit is not None and args.timelimit <= 0:
            raise UsageError("-t must be a positive number of seconds")
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
                  rate=args.rate, timeout=args.timeout, warmup=warmup,
                  progress=not args.quiet and "auto", lengths_vary=args.lengths_vary)
    results: list[Result] = []
    try:
        if args.url is None:
            runs: Iterable[Result] = seed_scenario(args.requests, args.timelimit, common)
        else:
            runs = [run(args.url, method or "GET", body, headers, args.requests, args.timelimit,
                        stream=sys.stderr, **common)]
        for r in runs:
            results.append(r)
            sys.stdout.write(r.report())
            if r.first_error and r.failed:
                print(f"First failure: {r.first_error}")
            sys.stdout.flush()
    except ValueError as e:
        print(f"httpbench: {e}", file=sys.stderr)
        return 2
    last = results[-1]
    if args.csv:
        write_csv(last, args.csv)
    if args.json:
        with open(args.json, "w") as f:
            f.write(last.to_json() if len(results) == 1
                    else "[" + ",\n".join(r.to_json() for r in results) + "]")
    return 0 if all(r.ok for r in results) else 1


def seed_scenario(requests: int | None, duration: float | None,
                  common: dict[str, object]) -> Iterator[Result]:
    """The seed's scenario on the embedded server: keep-alive GETs of
    /rnd?c=2048, then POSTs of 2048 bytes to /echo (200,000 each unless
    told otherwise). Yields each result as its run ends."""
    n = requests if requests is not None or duration is not None else 200_000
    with Server() as srv:
        print(f"The seed's scenario on the embedded server at {srv.url()}", flush=True)
        for label, method, path, body in (
            ("GET /rnd?c=2048", "GET", "/rnd?c=2048", None),
            ("POST 2048 bytes to /echo", "POST", "/echo", bytes(33 + i % 94 for i in range(2048))),
        ):
            print(f"\n== {label}\n", flush=True)
            r = run(srv.url(path), method, body, None, n, duration, stream=sys.stderr,
                    **common)  # type: ignore[arg-type]
            yield r
            if r.interrupted:
                return


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "serve":
        return serve(args[1:])
    return bench(args)

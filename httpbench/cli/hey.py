"""`httpbench hey ...`: hey 0.1.4's command line as Debian's hey prints it
(Go's flags: single-dash long names, -h2 and -disable-keepalive), the
headers hey sends, and hey's report layout. A flag hey has that cannot be
honoured is refused, never read as something else."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Sequence
from typing import IO, Any

from .. import _check
from .._url import split_url
from ..render.hey import hey_report
from ..result import Result
from ..runner import basic_auth
from .common import UsageError, parse_headers, parse_time, read_body_file, without_added
from .execute import execute_mode, logged_records, output_options
from .flags import Flag, checked, mode_parser, rate_per, whole
from .tool_logs import hey_csv_lines

PROG = "httpbench hey"

FLAGS: tuple[Flag, ...] = (
    Flag(("-n",), "N", "Number of requests to run. Default is 200.",
         "requests=N (default 200; at least -c, as hey's)", default="200"),
    Flag(("-c",), "N", "Number of workers to run concurrently. Default is 50.",
         "concurrency=N connections (default 50)", default="50"),
    Flag(("-q",), "QPS", "Rate limit, in queries per second (QPS) per worker.",
         "rate=q x c over the run: an open loop, latency from each request's intended start"),
    Flag(("-z",), "DURATION", "Duration of application to send requests. If duration is "
         "specified, n is ignored. Examples: -z 10s -z 3m.",
         "duration=T (Go's durations: 10s, 3m, 1m30s, 500ms); -n is then ignored, as hey's"),
    Flag(("-o",), "csv", "Output type. \"csv\" is the only supported alternative.",
         "csv: hey's rows in place of the report, a response each, from httpbench's "
         "per-request log (--log FILE has every request's record); another value is refused "
         "(hey prints it as a Go template)"),
    Flag(("-m",), "METHOD", "HTTP method, one of GET, POST, PUT, DELETE, HEAD, OPTIONS.",
         "method=NAME (upper-cased, as hey's)"),
    Flag(("-H",), "HEADER", "Custom HTTP header. You can specify as many as needed by "
         "repeating the flag.", "headers=[...]", repeat=True),
    Flag(("-t",), "SECONDS", "Timeout for each request in seconds. Default is 20, use 0 for "
         "infinite.",
         "timeout=S (default 20; 0: none)", default="20"),
    Flag(("-A",), "ACCEPT", "HTTP Accept header.", "an Accept header"),
    Flag(("-d",), "BODY", "HTTP request body.", "body=the text"),
    Flag(("-D",), "FILE", "HTTP request body from file.", "body=the file's bytes"),
    Flag(("-T",), "TYPE", "Content-type, defaults to \"text/html\".",
         "a Content-Type header on every request (default text/html, as hey's)",
         default="text/html"),
    Flag(("-a",), "USER:PASS", "Basic authentication, username:password.",
         "an Authorization: Basic header"),
    Flag(("-x",), "HOST:PORT", "HTTP Proxy address as host:port.", "proxy=host:port"),
    Flag(("-h2",), "", "Enable HTTP/2.",
         "http2=True over https:// (h2 by ALPN), the -c workers as streams of one "
         "connection, as hey's Go client sends them; over http:// hey speaks HTTP/1.1 all "
         "the same, and so does this"),
    Flag(("-host",), "HOST", "HTTP Host header.", "a Host header"),
    Flag(("-disable-compression",), "", "Disable compression.",
         "no Accept-Encoding: gzip (hey's Go client sends it otherwise; httpbench never "
         "decompresses, so bodies are counted as sent)"),
    Flag(("-disable-keepalive",), "", "Disable keep-alive, prevents re-use of TCP connections "
         "between different HTTP requests", "keepalive=False"),
    Flag(("-disable-redirects",), "", "Disable following of HTTP redirects",
         "always so: httpbench never follows a redirect, it counts the 3xx"),
    Flag(("-cpus",), "N", "Number of used cpu cores.", "threads=N"),
)
# The settings httpbench's advice may name, in hey's letters (httpbench.hints).
WORDS = {"concurrency": "-c", "threads": "-cpus", "timeout": "-t", "http2": "-h2"}

EXAMPLES = """\
as hey, one word changed:
  httpbench hey -n 2000 -c 50 http://127.0.0.1:8080/rnd?c=2048
  httpbench hey -z 10s -c 20 -q 50 http://127.0.0.1:8080/rnd?c=2048
  httpbench hey -n 1000 -c 10 -m POST -D body.json -T application/json http://127.0.0.1:8080/echo
with what hey does not have:
  httpbench hey -n 2000 -c 50 --json result.json --log requests.csv URL

Go's flag syntax: single-dash long flags (-disable-keepalive, -h2, -host,
-cpus). hey follows redirects; httpbench never does (-disable-redirects
is always so). The report is hey's; httpbench's own figures follow it after
a blank line. Exit status: 0 when no request failed, 1 when some did (hey
exits 0 even then), 2 for bad usage (nothing was sent).
"""


def hey_parser() -> argparse.ArgumentParser:
    return mode_parser(PROG, "hey 0.1.4's command line and report, with httpbench's C loop "
                             "underneath.", EXAMPLES, FLAGS, "<url>")


def _settings(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The URL and run()'s arguments from hey's flags."""
    if args.url is None:
        raise UsageError("give the URL")
    url = args.url
    target = split_url(url)
    concurrency = whole("-c", args.opt_c, 1, _check.MAX_CONCURRENCY)
    requests: int | None = whole("-n", args.opt_n, 1, _check.MAX_REQUESTS)
    duration = None
    if args.opt_z is not None:
        # -z 0 is hey's own default, no duration: -n's requests are run.
        z = parse_time("-z", args.opt_z, checked=False)
        duration = _check.seconds("-z", z) if z != 0 else None
    if args.opt_o not in (None, "", "csv"):
        raise UsageError(f"-o: csv is the only output type (hey prints {args.opt_o!r} as a "
                         "template of its report)")
    if duration is not None:
        requests = None  # "If duration is specified, n is ignored."
    elif requests is not None and requests < concurrency:
        raise UsageError(f"-n cannot be less than -c ({requests} < {concurrency}), as in hey")
    elif requests is not None:
        # Each of hey's workers runs n / c requests ("Ignore the case where
        # b.N % b.C != 0"): -n 5 -c 2 is 4.
        requests = requests // concurrency * concurrency
    rate = rate_per("-q", args.opt_q, concurrency) if args.opt_q is not None else None
    seconds = whole("-t", args.opt_t, 0, int(_check.YEAR))
    if args.opt_d is not None and args.opt_D is not None:
        raise UsageError("-d and -D: give one body")
    body = args.opt_d.encode() if args.opt_d is not None else \
        read_body_file("-D", args.opt_D) if args.opt_D is not None else None
    # The headers hey's Go client sends, in its order, so the server answers
    # as it answers hey: Content-Type always, Accept, auth, then -H.
    headers = [("User-Agent", "hey/0.0.1"), ("Content-Type", args.opt_T)]
    if args.opt_A:
        headers.append(("Accept", args.opt_A))
    if args.opt_a:
        user, sep, password = args.opt_a.partition(":")
        if not sep:
            raise UsageError(f"-a takes username:password, not {args.opt_a!r}")
        headers.append(("Authorization", basic_auth(user, password)))
    given = parse_headers(args.opt_H)
    headers = [h for h in headers if h[0].lower() not in {k.lower() for k, _ in given}] + given
    if args.opt_host:
        headers = [h for h in headers if h[0].lower() != "host"] + [("Host", args.opt_host)]
    method = (args.opt_m or "GET").upper()
    # Go's client asks for gzip itself unless told not to, or asked for
    # an encoding or a range, or sending HEAD (net/http's transport.go).
    if not args.opt_disable_compression and method != "HEAD" and not any(
            k.lower() in ("accept-encoding", "range") for k, _ in headers):
        headers.append(("Accept-Encoding", "gzip"))
    headers = without_added(headers, "Accept")  # (hey's has none unless -A)
    threads = whole("-cpus", args.opt_cpus, 1, _check.MAX_THREADS) if args.opt_cpus else None
    http2 = bool(args.opt_h2) and target.tls
    # hey's workers share one Go client, whose HTTP/2 transport sends them
    # all over one connection, a stream each.
    connections, streams = concurrency, 1
    if http2 and not args.opt_disable_keepalive:
        connections, streams = 1, whole("-c", args.opt_c, 1, _check.MAX_STREAMS)
    kwargs: dict[str, Any] = dict(
        method=method, body=body, headers=headers, requests=requests,
        duration=duration, concurrency=connections, streams=streams, threads=threads,
        keepalive=not args.opt_disable_keepalive, rate=rate,
        timeout=float(seconds) if seconds else None,
        # hey's workers finish the request they are in when -z ends (its
        # client bounded by -t; -t 0 waits on): what is in flight gets
        # that long, not the loop's second.
        grace=min(float(seconds or _check.HOUR), _check.HOUR), progress=False,
        proxy=f"http://{args.opt_x}" if args.opt_x and "://" not in args.opt_x else args.opt_x,
        http2=http2, verify=False, **output_options(args))
    return url, kwargs


def hey_main(argv: Sequence[str]) -> int:
    args = hey_parser().parse_args(argv)
    settings = checked(PROG, args, FLAGS, lambda: _settings(args))
    if isinstance(settings, int):
        return settings
    url, kwargs = settings

    with logged_records(kwargs) if args.opt_o == "csv" else contextlib.nullcontext() as records:

        def write_report(r: Result, out: IO[str]) -> None:
            # -o csv: the rows alone, as hey prints them (httpbench's own
            # figures are in --json).
            if records is not None:
                out.writelines(hey_csv_lines(records()))
            else:
                out.write(hey_report(r, WORDS))

        return execute_mode(PROG, url, kwargs, args, write_report)


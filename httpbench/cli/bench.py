"""`httpbench [URL ...]`: a run, with ab's letters and wrk's, wrk2's and
hey's habits; with no URL, the comparison."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Sequence
from typing import IO

from .._version import __version__
from ..result import Result
from .._url import split_url
from ..scenario import Request, Scenario, join_target
from .common import (
    Parser,
    UsageError,
    add_common,
    add_tls_arguments,
    check_common,
    load_scenario,
    parse_time,
    proxy_option,
    request_parts,
    run_settings,
    tls_options,
)
from .compare import compare_main
from .execute import execute, output_paths


EXAMPLES = """\
examples (against `httpbench serve`, which listens on 127.0.0.1:8080):
  httpbench -n 100000 -c 50 http://127.0.0.1:8080/rnd?c=2048
  httpbench -d 30s -c 100 --threads 2 http://127.0.0.1:8080/rnd?c=2048
  httpbench -d 30s -c 100 -R 2000 http://127.0.0.1:8080/rnd?c=2048   (an open loop, as wrk2)
  httpbench -d 10s -c 50 -p body.json -T application/json http://127.0.0.1:8080/echo
  httpbench -n 10000 -c 10 --http2 --streams 10 http://127.0.0.1:8080/rnd?c=2048
  httpbench -n 10000 -c 10 http://127.0.0.1:8080/rnd?c=100 http://127.0.0.1:8080/rnd?c=2048
  httpbench -d 30s -c 50 --scenario shop.py http://127.0.0.1:8080   (as a locustfile)
  httpbench -n 10000 -c 10 --cacert ca.pem https://127.0.0.1:8443/rnd?c=2048   (serve --tls)

other commands:
  httpbench compare [URL]  one scenario through httpbench and Python's HTTP clients, side by side
  httpbench serve          the embedded target server (see httpbench serve --help)
  httpbench capacity URL   the highest rate URL takes within an SLO (--slo 'p99<5ms')
  httpbench report FILE... saved results (--json) as one standalone HTML report (-o FILE)
  httpbench                with no URL: that comparison on the embedded server (about 30 s)

exit status: 0 no request failed, 1 some failed (or non-2xx with --fail-on-non-2xx, or
the run was interrupted, or the name did not resolve), 2 bad usage (nothing was sent)
"""

MODES = """\
Benchmark an HTTP server with ab's letters and ab's report. Another tool's
command line, exactly, and its report's layout: `httpbench ab ...` (ab's
flags), `httpbench wrk ...` (wrk's and wrk2's -R), `httpbench hey ...`
and `httpbench h2load ...`. With no URL, compare httpbench and Python's
HTTP clients on the embedded server."""


def bench_parser() -> argparse.ArgumentParser:
    p = Parser(prog="httpbench", description=MODES, epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("url", nargs="*", metavar="URL",
                   help="http://[user:pass@]host[:port]/path (credentials become Basic auth); "
                        "several URLs of one server run as a scenario of equal weights, a table "
                        "per URL in the report (as h2load takes them)")
    p.add_argument("-V", "--version", action="version", version=f"httpbench {__version__}")

    send = p.add_argument_group("what to send")
    send.add_argument("--scenario", metavar="FILE.py",
                      help="run the httpbench.Scenario that FILE.py names `scenario` (as a "
                           "locustfile); the URL (or the file's `url`) gives the server")
    send.add_argument("-m", dest="method",
                      help="method (default GET, POST with -p, PUT with -u)")
    send.add_argument("-p", dest="postfile",
                      help="file to POST (Content-Type text/plain unless -T)")
    send.add_argument("-u", dest="putfile", help="file to PUT")
    send.add_argument("-T", dest="content_type", help="Content-Type of the body")
    send.add_argument("-i", dest="head", action="store_true", help="HEAD instead of GET")
    add_common(send, "headers")
    send.add_argument("-A", dest="auth", metavar="USER:PASS", help="HTTP Basic authentication")
    send.add_argument("-C", dest="cookies", action="append", default=[], metavar="NAME=VALUE",
                      help="a cookie (repeatable)")

    load = p.add_argument_group("how much load")
    add_common(load, "requests", "concurrency", "threads",
               requests={"help": "requests to perform (with neither -n nor a time limit the "
                                 "run lasts 10 s, as wrk's; ab's default of one request "
                                 "measures nothing)"},
               concurrency={"help": "requests at a time: connections (default 1, as in ab)"})
    load.add_argument("-t", dest="t_text", metavar="TIME",
                      help="time limit, as ab's -t: 10, 10s, 2m, 500ms (no request cap)")
    load.add_argument("-d", "--duration", "-z", dest="d_text", metavar="TIME",
                      help="the same time limit, by wrk's and hey's letters")
    add_common(load, "rate")
    load.add_argument("-k", dest="keepalive", action="store_true", default=True,
                      help="keep-alive (the default; accepted from habit)")
    add_common(load, "keepalive", keepalive={"help": "a new connection per request"})
    add_common(load, "pipeline", "warmup", "timeout", "grace", "lengths_vary")

    proto = p.add_argument_group("protocol, TLS, proxies")
    add_common(proto, "http2", "streams", "window", "socket_buffer", "unix_socket", "proxy")
    proto.add_argument("-P", dest="proxy_auth", metavar="USER:PASS",
                       help="as ab: the proxy's credentials (Proxy-Authorization, Basic)")
    proto.add_argument("--proxy-from-env", action="store_true",
                       help="take the proxy from http_proxy/https_proxy (and no_proxy), as "
                            "curl does; ab, and httpbench without this, read none")
    add_tls_arguments(proto)
    proto.add_argument("-f", dest="protocol", metavar="PROTOCOL",
                       help="as ab: TLS1.2, TLS1.3 or ALL (default ALL: 1.2 and up)")
    proto.add_argument("-Z", dest="ciphers", metavar="CIPHERSUITE",
                       help="as ab: OpenSSL's cipher list for TLS 1.2 (see openssl ciphers)")
    proto.add_argument("--tls13-ciphers", dest="ciphersuites", metavar="LIST",
                       help="as curl: TLS 1.3's cipher suites, in order (default, browsers' "
                            "order: TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                            "TLS_CHACHA20_POLY1305_SHA256)")
    proto.add_argument("--no-tls-resume", dest="tls_resume", action="store_false",
                       help="with --no-keepalive: a full handshake for every connection, as "
                            "ab does (default: resume the connection's last session, as wrk, "
                            "h2load and browsers do)")

    out = p.add_argument_group("outputs")
    add_common(out, "quiet", "json", "html", "log", "log_sample", "hgrm", "metrics",
               "metrics_run", "metrics_linger",
               json={"help": "write the whole result as JSON to FILE; '-': to standard output, "
                             "the report then going to standard error"})
    out.add_argument("-v", dest="verbosity", type=int, default=0, metavar="LEVEL",
                     help="as ab: 2 or more prints the first response's head")
    out.add_argument("-e", dest="csv", help="write the percentiles as CSV to this file")
    out.add_argument("--latency", action="store_true",
                     help="accepted from wrk (the percentiles are always printed)")
    out.add_argument("--fail-on-non-2xx", action="store_true",
                     help="exit 1 when any response was not 2xx")
    out.add_argument("--reports", action="store_true",
                     help="with no URL: each agent's ab report too, not only the table")
    out.add_argument("--no-pin", dest="pin", action="store_false",
                     help="with no URL: the comparison off one CPU (httpbench compare's "
                          "--no-pin)")

    cluster = p.add_argument_group("over a cluster")
    cluster.add_argument("--dask", metavar="ADDRESS",
                         help="spread the run over a Dask cluster's workers (its scheduler, "
                              "tcp://host:8786), merged into one result; see docs/cluster.md")
    cluster.add_argument("--workers", type=int, metavar="N",
                         help="with --dask: how many of its workers (default all)")
    return p


def _time_limit(args: argparse.Namespace) -> float | None:
    """-t (ab) or -d/--duration/-z (wrk, hey): one time limit (both at
    once is another tool's habit: _other_tool says which)."""
    for flag, text in (("-t", args.t_text), ("-d", args.d_text)):
        if text:
            return parse_time(flag, text)
    return None


def _suggest(argv: Sequence[str], mode: str = "", swap: dict[str, list[str]] | None = None
             ) -> str:
    """The command line as another mode, or with flags swapped: each
    argv word in `swap` replaced by its words (with its value)."""
    words: list[str] = []
    skip = False
    for i, word in enumerate(argv):
        if skip:
            skip = False
            continue
        key = next((k for k in swap or {} if word == k or (
            word.startswith(k) and not word.startswith("--") and len(word) > len(k))), None)
        if swap and key is not None:
            words += swap[key]
            skip = word == key and i + 1 < len(argv)  # (its value follows it)
            continue
        words.append(word)
    return shlex.join(["httpbench", *([mode] if mode else []), *words])


def _other_tool(argv: Sequence[str], args: argparse.Namespace) -> str:
    """Where a flag's value only makes sense for another tool, which one
    was probably meant and how to say it here; "" when none. Nothing is
    sent when this says something."""
    if args.t_text and args.d_text:
        if "-z" in argv or any(w.startswith("-z") for w in argv):
            return (f"-t {args.t_text} beside -z is hey's habit, where -t is each request's "
                    f"timeout (here -t is ab's time limit, the timeout -s): did you mean "
                    f"\"{_suggest(argv, 'hey')}\"?")
        return (f"-t {args.t_text} beside -d is wrk's habit, where -t is threads (here -t is "
                f"ab's time limit, threads --threads): did you mean "
                f"\"{_suggest(argv, 'wrk')}\"?")
    if args.method is not None and not re.fullmatch(r"[A-Za-z][A-Za-z-]*", args.method):
        if args.method.isdigit():
            return (f"-m {args.method} is not an HTTP method: h2load's -m is streams per "
                    f"connection (here --http2 --streams {args.method}): did you mean "
                    f"\"{_suggest(argv, 'h2load')}\"?")
        return f"-m {args.method!r} is not an HTTP method (GET, POST, PUT, ...)"
    if args.content_type is not None and "/" not in args.content_type:
        if re.fullmatch(r"\d+(\.\d+)?(ms|s|m)?", args.content_type):
            return (f"-T {args.content_type} is not a Content-Type (type/subtype): h2load's -T "
                    f"is a timeout: did you mean "
                    f"\"{_suggest(argv, swap={'-T': ['-s', args.content_type]})}\"?")
        return f"-T {args.content_type!r} is not a Content-Type (type/subtype)"
    q = _flag_after(argv, "-q")
    if q is not None and q.isdigit():
        rate = int(q) * (args.concurrency or 1)
        return (f"-q {q} is hey's habit, a rate limit per worker (here -q is ab's \"no "
                f"progress\", and {q} is not a URL; the run's rate is -R {rate}): did you "
                f"mean \"{_suggest(argv, 'hey')}\"?")
    return ""


def _flag_after(argv: Sequence[str], flag: str) -> str | None:
    """The word after a switch (-q 10), or None."""
    for i, word in enumerate(argv[:-1]):
        if word == flag:
            return argv[i + 1]
    return None


def _wrk_threads_habit(args: argparse.Namespace) -> str | None:
    """wrk's -t is threads: a bare small -t beside -c and no -n is likely
    that habit, so say what it means here."""
    t = (args.t_text or "").strip()
    if t.isdigit() and 0 < int(t) <= 256 and args.concurrency is not None and args.requests is None:
        return (f"httpbench: note: -t {t} is ab's time limit, {t} s; for {t} threads, as in "
                f"wrk, use --threads {t}")
    return None


def _scenario(args: argparse.Namespace, method: str,
              body: bytes | None) -> Scenario | None:
    """The scenario the command line asks for: --scenario's file, or one
    Request of equal weight per URL when several are given. Sets args.url
    to the one URL that gives the server."""
    urls: list[str] = args.url
    if args.scenario is not None:
        if len(urls) > 1:
            raise UsageError("--scenario takes one URL at most (the server)")
        given = [f for f, v in (("-p", args.postfile), ("-u", args.putfile), ("-m", args.method),
                                ("-i", args.head)) if v]
        if given:
            raise UsageError(f"{', '.join(given)}: a scenario's Requests give methods and bodies")
        scenario, url = load_scenario(args.scenario)
        args.url = urls[0] if urls else url
        if args.url is None:
            raise UsageError("--scenario: give the server's URL (or `url` in the file)")
        return scenario
    args.url = urls[0] if urls else None
    if len(urls) < 2:
        return None
    if args.pipeline != 1:
        raise UsageError("--pipeline with several URLs is not supported")
    # One origin, as h2load asks; each URL's path is a Request's target.
    return Scenario([Request(method, join_target(urls[0], split_url(u).path if u == urls[0]
                                                 else u), body=body) for u in urls])


def bench(argv: Sequence[str]) -> int:
    parser = bench_parser()
    if "-h2" in argv:
        # (argparse would read it as -h with a value and stop there.)
        said = shlex.join(["httpbench", *("--http2" if w == "-h2" else w for w in argv)])
        print(f"httpbench: -h2 is hey's flag (HTTP/2): did you mean \"{said}\"? (or "
              f"\"{shlex.join(['httpbench', 'hey', *argv])}\" with hey's flags)",
              file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    other = _other_tool(argv, args)
    if other:
        print(f"httpbench: {other}", file=sys.stderr)
        return 2
    try:
        habit = _wrk_threads_habit(args)
        if args.concurrency is None:
            args.concurrency = 1
        check_common(args)
        limit = _time_limit(args)
        method, body, headers = request_parts(args)
        scenario = _scenario(args, method, body)
        tls = tls_options(args)
        proxy = proxy_option(args)
        if args.url is not None and (args.reports or not args.pin):
            which = "--reports" if args.reports else "--no-pin"
            raise UsageError(f"{which} is the comparison's (httpbench with no URL, or httpbench "
                             "compare)")
        if args.url is not None and not split_url(args.url).tls:
            given = [flag for flag, v in (("--cacert", args.cacert), ("--cert", args.cert),
                                          ("--key", args.key), ("-f", args.protocol),
                                          ("-Z", args.ciphers),
                                          ("--tls13-ciphers", args.ciphersuites)) if v]
            if given:
                raise UsageError(f"{', '.join(given)}: for https:// URLs")
    except (UsageError, ValueError) as e:
        print(f"httpbench: {e}", file=sys.stderr)
        return 2
    if habit:
        print(habit, file=sys.stderr)
    if args.url is None:
        # The main job: the comparison on the embedded server.
        rest = ["-n", str(args.requests)] if args.requests else []
        rest += ["-c", str(args.concurrency)] + (["-q"] if args.quiet else [])
        rest += ["-t", str(limit)] if limit else []
        rest += ["--reports"] if args.reports else []
        rest += [] if args.pin else ["--no-pin"]
        return compare_main(rest)
    if scenario is not None:
        method, body = "GET", None  # the scenario's Requests give them
    kwargs = dict(run_settings(args), method=method, body=body, headers=headers,
                  duration=limit, progress=not args.quiet and "auto", stream=sys.stderr,
                  proxy=proxy, scenario=scenario, cluster=args.dask, workers=args.workers,
                  **tls)

    def write_report(r: Result, report: IO[str]) -> None:
        if args.verbosity >= 2 and r.first_head:
            report.write("LOG: header received:\n" + r.first_head.replace("\r\n", "\n"))
        report.write(r.report())
        if r.first_error and r.failed and r.complete:  # (else the first line said it)
            print(f"First failure: {r.first_error}", file=report)

    r = execute("httpbench", args.url, kwargs, output_paths(args, args.csv), write_report)
    if isinstance(r, int):
        return r
    if not r.ok:
        return 1
    return 1 if args.fail_on_non_2xx and r.non_2xx else 0

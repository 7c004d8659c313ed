"""`httpbench [URL ...]`: a run, with ab's letters and wrk's, wrk2's and
hey's habits; with no URL, the comparison."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import IO

from .. import _check
from .._version import __version__
from ..exceptions import HttpbenchError, TLSError
from ..reqlog import log_format
from ..result import Result
from .._url import split_url
from ..runner import basic_auth, run
from ..scenario import Request, Scenario, join_target
from .common import (
    Outputs,
    UsageError,
    add_common,
    add_tls_arguments,
    check_common,
    load_scenario,
    one_line,
    parse_time,
    parse_warmup,
    proxy_option,
    read_body_file,
    tls_options,
)
from .compare import compare_main


EXAMPLES = """\
examples (the habits of other tools work here):
  ab:    httpbench -n 100000 -c 50 -k http://127.0.0.1:8080/rnd?c=2048
  wrk:   httpbench -d 30s -c 100 --threads 4 --latency http://127.0.0.1:8080/
  wrk2:  httpbench -d 30s -c 100 -R 2000 http://127.0.0.1:8080/
  hey:   httpbench -z 10s -c 50 -m POST -p body.json -T application/json http://127.0.0.1:8080/
  TLS:   httpbench -n 10000 -c 10 --cacert ca.pem https://example.test/   (--insecure: no checks)
  mix:   httpbench -n 10000 -c 10 http://127.0.0.1:8080/a http://127.0.0.1:8080/b   (as h2load)
  file:  httpbench -d 30s -c 50 --scenario shop.py http://127.0.0.1:8080   (as a locustfile)
  dask:  httpbench -n 1000000 -c 400 --dask tcp://scheduler:8786 http://10.0.0.5:8080/

other commands:
  httpbench compare [URL]  one scenario through httpbench and Python's HTTP clients, side by side
  httpbench serve          the embedded target server (see httpbench serve --help)
  httpbench capacity URL   the highest rate URL takes within an SLO (--slo 'p99<5ms')
  httpbench                with no URL: that comparison on the embedded server (about 30 s)

exit status: 0 no request failed, 1 some failed (or non-2xx with --fail-on-non-2xx, or
the run was interrupted, or the name did not resolve), 2 bad usage (nothing was sent)
"""


def bench_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="httpbench",
        description="Benchmark an HTTP server as ab does (the same letters, the same report), "
                    "with wrk's, wrk2's and hey's habits understood. With no URL, compare "
                    "httpbench and Python's HTTP clients on the embedded server.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("url", nargs="*", metavar="URL",
                   help="http://[user:pass@]host[:port]/path (credentials become Basic auth); "
                        "several URLs of one server run as a scenario of equal weights, a table "
                        "per URL in the report (as h2load takes them)")
    p.add_argument("--scenario", metavar="FILE.py",
                   help="run the httpbench.Scenario that FILE.py names `scenario` (as a "
                        "locustfile); the URL (or the file's `url`) gives the server")


    add_common(p, "requests", "concurrency", "threads", "timeout", "headers", "quiet", "json",
               "html", "metrics", "metrics_run", "metrics_linger", "unix_socket", "proxy", "http2",
               "streams", "window",
               requests={"help": "requests to perform (with neither -n nor a time limit the run "
                                 "lasts 10 s, as wrk's; ab's default of one request measures "
                                 "nothing)"},
               concurrency={"help": "requests at a time: connections (default 1, as in ab)"},
               json={"help": "write the whole result as JSON to FILE; '-': to standard output, "
                             "the report then going to standard error"})
    p.add_argument("-t", dest="t_text", metavar="TIME",
                   help="time limit, as ab's -t: 10, 10s, 2m, 500ms (no request cap)")
    p.add_argument("-d", "--duration", "-z", dest="d_text", metavar="TIME",
                   help="the same time limit, by wrk's and hey's letters")
    p.add_argument("-k", dest="keepalive", action="store_true", default=True,
                   help="keep-alive (the default; accepted from habit)")
    p.add_argument("--no-keepalive", dest="keepalive", action="store_false",
                   help="a new connection per request")
    p.add_argument("-p", dest="postfile", help="file to POST (Content-Type text/plain unless -T)")
    p.add_argument("-u", dest="putfile", help="file to PUT")
    p.add_argument("-T", dest="content_type", help="Content-Type of the body")
    p.add_argument("-i", dest="head", action="store_true", help="HEAD instead of GET")

    p.add_argument("-A", dest="auth", metavar="USER:PASS", help="HTTP Basic authentication")
    p.add_argument("-C", dest="cookies", action="append", default=[], metavar="NAME=VALUE",
                   help="a cookie (repeatable)")
    p.add_argument("-m", dest="method", help="method (default GET, POST with -p, PUT with -u)")


    p.add_argument("-l", dest="lengths_vary", action="store_true",
                   help="do not count a body length unlike the first as a failure")
    p.add_argument("-v", dest="verbosity", type=int, default=0, metavar="LEVEL",
                   help="as ab: 2 or more prints the first response's head")
    p.add_argument("-e", dest="csv", help="write the percentiles as CSV to this file")

    p.add_argument("--log", metavar="FILE",
                   help="write a record per request to FILE: CSV, JSON lines or SQLite by its "
                        "extension (.csv, .jsonl, .db, .sqlite); httpbench.read_log reads it")
    p.add_argument("--log-sample", type=float, metavar="FRACTION",
                   help="with --log: log this fraction of the requests, at random (0.01: 1%%)")
    p.add_argument("--hgrm", metavar="FILE",
                   help="write HdrHistogram's percentile distribution (values in ms) to FILE "
                        "('-': standard output)")
    p.add_argument("-R", "--rate", type=float,
                   help="open loop at this many requests a second over the whole run (wrk2)")

    p.add_argument("--warmup", metavar="N|TIME",
                   help="requests (N) or a time (2s, 1m) to run first, uncounted")
    p.add_argument("--latency", action="store_true",
                   help="accepted from wrk (the percentiles are always printed)")
    p.add_argument("--fail-on-non-2xx", action="store_true",
                   help="exit 1 when any response was not 2xx")
    p.add_argument("--reports", action="store_true",
                   help="with no URL: each agent's ab report too, not only the table")
    add_tls_arguments(p)
    p.add_argument("-f", dest="protocol", metavar="PROTOCOL",
                   help="as ab: TLS1.2, TLS1.3 or ALL (default ALL: 1.2 and up)")
    p.add_argument("-Z", dest="ciphers", metavar="CIPHERSUITE",
                   help="as ab: OpenSSL's cipher list for TLS 1.2 (see openssl ciphers)")
    p.add_argument("--tls13-ciphers", dest="ciphersuites", metavar="LIST",
                   help="as curl: TLS 1.3's cipher suites, in order (default, browsers' order: "
                        "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                        "TLS_CHACHA20_POLY1305_SHA256)")
    p.add_argument("--no-tls-resume", dest="tls_resume", action="store_false",
                   help="with --no-keepalive: a full handshake for every connection, as ab "
                        "does (default: resume the connection's last session, as wrk, h2load "
                        "and browsers do)")


    p.add_argument("-P", dest="proxy_auth", metavar="USER:PASS",
                   help="as ab: the proxy's credentials (Proxy-Authorization, Basic)")
    p.add_argument("--proxy-from-env", action="store_true",
                   help="take the proxy from http_proxy/https_proxy (and no_proxy), as curl "
                        "does; ab, and httpbench without this, read none")
    p.add_argument("--pipeline", type=int, default=1, metavar="N",
                   help="up to N requests in flight per connection, written together and "
                        "answered in order (HTTP/1.1 pipelining; default 1)"),
    p.add_argument("--dask", metavar="ADDRESS",
                   help="spread the run over a Dask cluster's workers (its scheduler, "
                        "tcp://host:8786), merged into one result; see docs/cluster.md")
    p.add_argument("--workers", type=int, metavar="N",
                   help="with --dask: how many of its workers (default all)")
    p.add_argument("-V", "--version", action="version", version=f"httpbench {__version__}")
    return p


def _given(headers: list[tuple[str, str]], name: str) -> bool:
    return any(k.lower() == name.lower() for k, _ in headers)


def write_csv(result: Result, f: IO[str]) -> None:
    """ab's -e file: the time in ms within which each percentage was served."""
    f.write("Percentage served,Time in ms\n")
    for p in range(101):
        f.write(f"{p},{result.latency.percentile(p) * 1e3:.3f}\n")


def _time_limit(args: argparse.Namespace) -> float | None:
    """-t (ab), -d/--duration (wrk) and -z (hey) are one time limit."""
    limits = {flag: text for flag, text in (("-t", args.t_text), ("-d", args.d_text)) if text}
    if len(limits) > 1 and len({parse_time(f, t) for f, t in limits.items()}) > 1:
        raise UsageError("-t and -d/-z are the same time limit: give one")
    for flag, text in limits.items():
        return parse_time(flag, text)
    return None


def _wrk_threads_habit(args: argparse.Namespace) -> str | None:
    """wrk's -t is threads: a bare small -t beside -c and no -n is likely
    that habit, so say what it means here."""
    t = (args.t_text or "").strip()
    if t.isdigit() and 0 < int(t) <= 256 and args.concurrency is not None and args.requests is None:
        return (f"httpbench: note: -t {t} is ab's time limit, {t} s; for {t} threads, as in "
                f"wrk, use --threads {t}")
    return None


def _request_parts(args: argparse.Namespace) -> tuple[str, bytes | None, list[tuple[str, str]]]:
    """The method, body and headers the flags ask for."""
    headers = list(args.headers)
    body = None
    method = args.method
    if args.head:
        if args.postfile or args.putfile:
            raise UsageError("-i (HEAD) sends no body: not with -p or -u")
        method = method or "HEAD"
    for flag, path, verb in (("-p", args.postfile, "POST"), ("-u", args.putfile, "PUT")):
        if path is not None:
            body = read_body_file(flag, path)
            method = method or verb
    if args.content_type:
        headers.append(("Content-Type", args.content_type))
    elif body is not None and not _given(headers, "content-type"):
        headers.append(("Content-Type", "text/plain"))  # ab's default for -p and -u
    if args.auth is not None:
        user, sep, password = args.auth.partition(":")
        if not sep:
            raise UsageError(f"-A takes user:pass, not {args.auth!r}")
        headers.append(("Authorization", basic_auth(user, password)))
    if args.cookies:
        for c in args.cookies:
            if "=" not in c:
                raise UsageError(f"-C takes name=value, not {c!r}")
        headers.append(("Cookie", "; ".join(args.cookies)))
    return method or "GET", body, headers


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
    args = parser.parse_args(argv)
    try:
        habit = _wrk_threads_habit(args)
        if args.concurrency is None:
            args.concurrency = 1
        check_common(args)
        limit = _time_limit(args)
        if args.rate is not None:
            args.rate = _check.rate(args.rate, args.concurrency)
        timeout = args.timeout
        warmup = parse_warmup(args.warmup)
        method, body, headers = _request_parts(args)
        scenario = _scenario(args, method, body)
        tls = tls_options(args)
        proxy = proxy_option(args)
        if args.log is not None:
            log_format("--log", args.log)
            folder = os.path.dirname(os.path.abspath(args.log))
            if not os.access(folder, os.W_OK):
                raise UsageError(f"--log: cannot write {args.log} (no such folder, or not "
                                 "writable)")
        if args.log_sample is not None and args.log is None:
            raise UsageError("--log-sample samples the log: add --log FILE")
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
        return compare_main(rest)
    try:
        outputs = Outputs({"-e": args.csv, "--json": args.json, "--hgrm": args.hgrm,
                           "--html": args.html})
    except UsageError as e:
        print(f"httpbench: {e}", file=sys.stderr)
        return 2
    try:
        if scenario is not None:
            method, body = "GET", None  # the scenario's Requests give them
        r = run(args.url, method, body, headers, args.requests, limit, concurrency=args.concurrency,
                threads=args.threads, keepalive=args.keepalive, rate=args.rate, timeout=timeout,
                warmup=warmup, progress=not args.quiet and "auto",
                lengths_vary=args.lengths_vary, stream=sys.stderr, unix_socket=args.unix_socket,
                pipeline=args.pipeline, proxy=proxy, scenario=scenario, cluster=args.dask,
                workers=args.workers, http2=args.http2, streams=args.streams,
                window=args.window, metrics=args.metrics, metrics_run=args.metrics_run,
                metrics_linger=args.metrics_linger, log=args.log,
                log_sample=1.0 if args.log_sample is None else args.log_sample,
                **tls)  # type: ignore[arg-type]
    except (ValueError, FileNotFoundError, TLSError, ImportError) as e:
        # Settings nothing could run with: a file, a cipher list OpenSSL
        # does not know (a handshake's failure is counted, not raised).
        outputs.discard()
        print(one_line("httpbench", e), file=sys.stderr)
        return 2
    except (HttpbenchError, OSError) as e:
        # Nothing ran: the name did not resolve, or the system refused the
        # run its threads or descriptors.
        outputs.discard()
        print(one_line("httpbench", e), file=sys.stderr)
        return 1
    # With the JSON on standard output the report goes to standard error.
    report = sys.stderr if args.json == "-" else sys.stdout
    if args.verbosity >= 2 and r.first_head:
        report.write("LOG: header received:\n" + r.first_head.replace("\r\n", "\n"))
    report.write(r.report())
    if r.first_error and r.failed and r.complete:  # (else the first line said it)
        print(f"First failure: {r.first_error}", file=report)
    report.flush()
    for flag, text in (("-e", None), ("--json", r.to_json()),
                       ("--hgrm", r.latency.to_hgrm()),
                       ("--html", r.to_html() if args.html else "")):
        out = outputs.get(flag)
        if out is None:
            continue
        if text is None:
            write_csv(r, out)
        else:
            out.write(text if text.endswith("\n") else text + "\n")
    outputs.close()
    if not r.ok:
        return 1
    return 1 if args.fail_on_non_2xx and r.non_2xx else 0

"""`httpbench ab ...`: ApacheBench 2.3's command line, exactly (its
letters, defaults and units, as `ab -h` and its manual give them), and
its report's layout; httpbench's output files as long options ab does not
have. A flag ab has that cannot be honoured is refused, never read as
something else."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from typing import IO, Any

from .. import _check
from .._url import split_url
from .._version import __version__
from ..progress import Milestones
from ..render.ab import AbLayout, ab_report
from ..result import Result
from .common import (UsageError, parse_headers, proxy_option,
                     request_parts, tls_options)
from .execute import (execute_mode, logged_records, output_options, output_paths,
                      report_stream)
from .flags import Flag, checked, given_last, given_order, mode_parser, whole
from .tool_logs import ab_gnuplot_lines

PROG = "httpbench ab"

# ab's -t without -n: "This implies -n 50000" (ab.c's MAX_REQUESTS).
TIME_LIMIT_REQUESTS = 50000
# ab's largest -c (ab.c's MAX_CONCURRENCY).
MAX_CONCURRENCY = 20000
# What ab offers for TLS 1.3: OpenSSL's default suites, in OpenSSL's order
# (ab sets none; its -Z is TLS 1.2's list), not httpbench's AES-128 first.
AB_TLS13_SUITES = "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256"
# ab's methods as its flags set them, by flag, and the word its refusal
# names (ab.c: -i, -p and -u each refuse a method set before them).
METHOD_FLAGS = {"-i": "HEAD", "-p": "POST", "-u": "PUT", "-m": ""}
# The settings httpbench's advice may name, in ab's letters (httpbench.hints):
# ab has no flag for threads or a cluster, so its advice names none.
WORDS = {"concurrency": "-c", "timeout": "-s"}

FLAGS: tuple[Flag, ...] = (
    Flag(("-n",), "requests", "Number of requests to perform",
         "requests=N (default 1, as ab's)", default="1"),
    Flag(("-c",), "concurrency", "Number of multiple requests to make at a time",
         "concurrency=N connections (default 1; at most 20000 and at most -n, as ab's)",
         default="1"),
    Flag(("-t",), "timelimit", "Seconds to max. to spend on benchmarking. This implies -n 50000",
         "duration=S, with requests=50000 unless a later -n says otherwise (as ab reads "
         "them); whole seconds, or with an s"),
    Flag(("-s",), "timeout", "Seconds to max. wait for each response. Default is 30 seconds",
         "timeout=S (default 30)", default="30"),
    Flag(("-b",), "windowsize", "Size of TCP send/receive buffer, in bytes",
         "socket_buffer=N: SO_SNDBUF and SO_RCVBUF of each connection, set before it "
         "connects, as ab sets them"),
    Flag(("-B",), "address", "Address to bind to when making outgoing connections",
         "httpbench connects from the address the kernel chooses", refused=True),
    Flag(("-p",), "postfile", "File containing data to POST. Remember also to set -T",
         "body=the file's bytes, method POST"),
    Flag(("-u",), "putfile", "File containing data to PUT. Remember also to set -T",
         "body=the file's bytes, method PUT"),
    Flag(("-T",), "content-type", "Content-type header to use for POST/PUT data, eg. "
         "'application/x-www-form-urlencoded'. Default is 'text/plain'",
         "a Content-Type header (text/plain with -p or -u when not given)"),
    Flag(("-v",), "verbosity", "How much troubleshooting info to print",
         "2 or more: the first response's head, as ab prints each (--log FILE records every "
         "response's status and sizes)", default="0"),
    Flag(("-w",), "", "Print out results in HTML tables",
         "use --html FILE for a standalone HTML report", refused=True),
    Flag(("-i",), "", "Use HEAD instead of GET", "method HEAD"),
    Flag(("-x",), "attributes", "String to insert as table attributes",
         "-w's tables are not made: use --html FILE", refused=True),
    Flag(("-y",), "attributes", "String to insert as tr attributes",
         "-w's tables are not made: use --html FILE", refused=True),
    Flag(("-z",), "attributes", "String to insert as td or th attributes",
         "-w's tables are not made: use --html FILE", refused=True),
    Flag(("-C",), "attribute", "Add cookie, eg. 'Apache=1234'. (repeatable)",
         "a Cookie header: the last -C given, as ab sends (its help says repeatable, "
         "its code keeps the last)", repeat=True),
    Flag(("-H",), "attribute", "Add Arbitrary header line, eg. 'Accept-Encoding: gzip'. "
         "Inserted after all normal header lines. (repeatable)", "headers=[...]", repeat=True),
    Flag(("-A",), "attribute", "Add Basic WWW Authentication, the attributes are a colon "
         "separated username and password.", "an Authorization: Basic header"),
    Flag(("-P",), "attribute", "Add Basic Proxy Authentication, the attributes are a colon "
         "separated username and password.", "the proxy's credentials (Proxy-Authorization)"),
    Flag(("-X",), "proxy:port", "Proxyserver and port number to use", "proxy=host:port"),
    Flag(("-V",), "", "Print version number and exit", "prints httpbench's version"),
    Flag(("-k",), "", "Use HTTP KeepAlive feature",
         "keepalive=True (without it, a connection per request, as ab)"),
    Flag(("-d",), "", "Do not show percentiles served table.", "the table is left out"),
    Flag(("-S",), "", "Do not show confidence estimators and warnings.",
         "Connection Times shows min, avg and max only"),
    Flag(("-q",), "", "Do not show progress when doing more than 150 requests",
         "progress=False"),
    Flag(("-l",), "", "Accept variable document length (use this for dynamic pages)",
         "lengths_vary=True; Document Length reads Variable"),
    Flag(("-g",), "filename", "Output collected data to gnuplot format file.",
         "the same file: a line a complete request (its start, and its connect, processing, "
         "total and wait in ms), from httpbench's per-request log (--log FILE has every "
         "request's record, to the nanosecond)"),
    Flag(("-e",), "filename", "Output CSV file with percentages served",
         "the same CSV: the time in ms within which 0 to 100% were served"),
    Flag(("-r",), "", "Don't exit on socket receive errors.",
         "always so: a receive error is counted and the run goes on"),
    Flag(("-m",), "method", "Method name", "method=NAME"),
    Flag(("-h",), "", "Display usage information (this message)", "this help"),
    Flag(("-I",), "", "Disable TLS Server Name Indication (SNI) extension",
         "httpbench always sends the URL's host name (SNI)", refused=True),
    Flag(("-Z",), "ciphersuite", "Specify SSL/TLS cipher suite (See openssl ciphers)",
         "ciphers=LIST (TLS 1.2's; TLS 1.3's suites are OpenSSL's defaults in its order, as "
         "ab offers them)"),
    Flag(("-f",), "protocol", "Specify SSL/TLS protocol (SSL2, TLS1, TLS1.1, TLS1.2, TLS1.3 "
         "or ALL)", "TLS1.2, TLS1.3 or ALL (1.2 and up); SSL2, TLS1 and TLS1.1 are refused"),
    Flag(("-E",), "certfile", "Specify optional client certificate chain and private key",
         "certfile=FILE (the key in the same file, as ab's)"),
)

EXAMPLES = """\
as ab, one word changed:
  httpbench ab -n 10000 -c 10 -k http://127.0.0.1:8080/rnd?c=2048
  httpbench ab -t 5 -c 20 -k -q http://127.0.0.1:8080/rnd?c=2048
  httpbench ab -n 1000 -c 4 -p body.json -T application/json http://127.0.0.1:8080/echo
with what ab does not have:
  httpbench ab -n 10000 -c 10 -k --json result.json --log requests.csv URL

The report is ab's, line for line in ab's order; httpbench's own figures
follow it after a blank line. Exit status: 0 when no request failed, 1 when
some did (ab exits 0 even then), 2 for bad usage (nothing was sent).
"""


def ab_parser() -> argparse.ArgumentParser:
    p = mode_parser(PROG, "ApacheBench 2.3's command line and report, with httpbench's C "
                          "loop underneath.", EXAMPLES, FLAGS, "[http[s]://]hostname[:port]/path")
    own = p.add_argument_group("httpbench's own (ab has none of these)")
    own.add_argument("--tls-resume", dest="resume", action="store_true",
                     help="resume TLS sessions on new connections (ab makes a full handshake "
                          "on each, and so does this mode without it)")
    return p


def _method_order(args: argparse.Namespace) -> None:
    """ab's refusals of methods that do not mix (ab.c's getopt loop): -i,
    -p and -u each refuse a method any flag set before them (-m after
    them is taken: -i -m PUT sends PUT, -p FILE -m GET a GET with the
    file's body)."""
    seen = False
    for flag in given_order(args, tuple(METHOD_FLAGS)):
        if METHOD_FLAGS[flag] and seen:
            raise UsageError(f"{flag}: Cannot mix {METHOD_FLAGS[flag]} with other methods "
                             "(as ab: a method was set by an earlier -i, -p, -u or -m)")
        seen = True


def heartbeat(requests: int) -> Milestones:
    """ab's progress lines (its heartbeatres, ab.c's main): past 150
    requests, "Completed N requests" on stderr at every tenth of them, but
    never more often than every 100; the run's end adds "Finished N
    requests" (write_report)."""
    return Milestones(max(100, requests // 10), None, lambda n: f"Completed {n} requests",
                      sys.stderr)


def _seconds(flag: str, text: str) -> float:
    """ab reads -t and -s as whole seconds (atoi): 5, or 5s. Any other unit
    would be read by ab as that many seconds, so it is refused, not
    reinterpreted."""
    t = text.strip()
    digits = t[:-1] if t.lower().endswith("s") and not t.lower().endswith("ms") else t
    if not digits.isdigit():
        raise UsageError(f"{flag} takes whole seconds, as ab's (5, or 5s), not {text!r}")
    return _check.seconds(flag, float(int(digits)))


def _settings(args: argparse.Namespace) -> tuple[str, dict[str, Any], AbLayout]:
    """The URL, run()'s arguments and the report's layout from ab's flags."""
    if args.url is None:
        raise UsageError("give the URL: [http[s]://]hostname[:port]/path")
    url = args.url if "://" in args.url else f"http://{args.url}"
    target = split_url(url)
    requests: int | None = whole("-n", args.opt_n, 1, _check.MAX_REQUESTS)
    duration = None
    if args.opt_t is not None:
        duration = _seconds("-t", args.opt_t)
        if given_last(args, ("-n", "-t")) == "-t":
            requests = TIME_LIMIT_REQUESTS
    concurrency = whole("-c", args.opt_c, 1, MAX_CONCURRENCY)
    if requests is not None and concurrency > requests:
        raise UsageError(f"-c {concurrency}: ab cannot use a concurrency level greater than "
                         f"the total number of requests (-n {requests})")
    _method_order(args)
    method, body, headers = request_parts(argparse.Namespace(
        headers=parse_headers(args.opt_H), method=args.opt_m, head=args.opt_i,
        postfile=args.opt_p, putfile=args.opt_u, content_type=args.opt_T, auth=args.opt_A,
        cookies=args.opt_C[-1:]), type_alone=False)
    # ab never verifies the server; its -E file holds the key too; it
    # offers OpenSSL's TLS 1.3 suites and resumes no session.
    tls = tls_options(argparse.Namespace(
        protocol=args.opt_f, verify=False, cacert=None, cert=args.opt_E, key=None,
        ciphers=args.opt_Z, ciphersuites=AB_TLS13_SUITES if target.tls else None,
        tls_resume=args.resume))
    if not target.tls and (args.opt_f or args.opt_Z or args.opt_E):
        raise UsageError("-f, -Z and -E are for https:// URLs")
    proxy = proxy_option(argparse.Namespace(proxy=args.opt_X, proxy_from_env=False,
                                            proxy_auth=args.opt_P, url=url))
    verbosity = whole("-v", args.opt_v, 0, 10)
    kwargs: dict[str, Any] = dict(
        method=method, body=body, headers=headers, requests=requests,
        duration=duration, concurrency=concurrency, keepalive=args.opt_k,
        timeout=_seconds("-s", args.opt_s), lengths_vary=args.opt_l,
        socket_buffer=None if args.opt_b is None else whole("-b", args.opt_b, 1,
                                                            _check.MAX_SOCKET_BUFFER),
        # ab's progress: a line each tenth, past 150 requests, unless -q.
        progress=heartbeat(requests) if requests is not None and requests > 150 and not args.opt_q
        else False,
        proxy=proxy, **tls, **output_options(args))
    kwargs["_verbosity"] = verbosity
    layout = AbLayout(keepalive=args.opt_k, confidence=not args.opt_S,
                      percentiles=not args.opt_d, variable=args.opt_l, body=body is not None)
    return url, kwargs, layout


def ab_main(argv: Sequence[str]) -> int:
    args = ab_parser().parse_args(argv)
    if args.opt_V:
        print(f"This is httpbench {__version__}, in ApacheBench 2.3's mode (httpbench ab)")
        return 0
    settings = checked(PROG, args, FLAGS, lambda: _settings(args))
    if isinstance(settings, int):
        return settings
    url, kwargs, layout = settings
    verbosity = kwargs.pop("_verbosity")
    host = split_url(url).host
    through = f" [through {args.opt_X}]" if args.opt_X else ""
    with logged_records(kwargs) if args.opt_g else contextlib.nullcontext() as records:

        def write_gnuplot(r: Result, f: IO[str]) -> None:
            if records is not None and r.start_time is not None:
                f.writelines(ab_gnuplot_lines(records(), r.start_time))

        files = {"-g": (args.opt_g, write_gnuplot)}
        chat = report_stream(output_paths(args, args.opt_e, files))

        def banner(out: IO[str]) -> bool:
            # (Without progress lines the line stays open for ".....done".)
            print("This is httpbench, in ApacheBench 2.3's mode (httpbench ab)", file=out)
            print(f"Benchmarking {host}{through} (be patient)",
                  end="\n" if kwargs["progress"] else "", file=out)
            return not kwargs["progress"]

        def write_report(r: Result, out: IO[str]) -> None:
            if kwargs["progress"]:
                print(f"Finished {r.complete + r.failed} requests", file=sys.stderr, flush=True)
            else:
                print(".....done", file=chat, flush=True)
            if verbosity >= 2 and r.first_head:
                out.write("LOG: header received:\n" + r.first_head.replace("\r\n", "\n"))
            out.write("\n\n" + ab_report(r, layout, WORDS))

        return execute_mode(PROG, url, kwargs, args, write_report, csv=args.opt_e, files=files,
                            banner=banner)

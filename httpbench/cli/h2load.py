"""`httpbench h2load ...`: h2load 1.52's command line (nghttp2's getopt:
its letters and long names, `--name=value` too) and its report's layout.
A flag h2load has that cannot be honoured is refused, never read as
something else."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import socket
import ssl
import sys
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

from .. import _check
from .._url import split_url
from ..progress import Milestones
from ..render.h2load import app_info_lines, h2load_report
from ..result import Result
from ..scenario import Request, Scenario, join_target
from .common import UsageError, parse_headers, read_body_file, without_added
from .execute import (execute_mode, logged_records, output_options, output_paths,
                      report_stream)
from .flags import Flag, checked, mode_parser, rate_per, whole
from .tool_logs import h2load_log_lines

PROG = "httpbench h2load"
# The settings httpbench's advice may name, in h2load's letters
# (httpbench.hints): h2load has no per-request timeout.
WORDS = {"concurrency": "-c", "threads": "-t"}

_CONNECTION_TIMEOUT = ("httpbench keeps each connection while the run lasts; -s/--timeout in "
                       "the plain command line bounds each request")

# h2load's own cipher lists (its --help's defaults): Mozilla's intermediate
# TLS 1.2 list, AES-128-GCM first where httpbench's default is OpenSSL's
# (AES-256-GCM first), so a server that takes the client's first cipher
# does the work it does for h2load (nginx over TLS 1.2: 1.4x the AES
# rounds with AES-256).
H2LOAD_CIPHERS = ("ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                  "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                  "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
                  "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384")
H2LOAD_TLS13_CIPHERS = ("TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                        "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_CCM_SHA256")

FLAGS: tuple[Flag, ...] = (
    Flag(("-n", "--requests"), "<N>", "Number of  requests across all  clients.",
         "requests=N (default 1)", default="1"),
    Flag(("-c", "--clients"), "<N>", "Number  of concurrent  clients.",
         "concurrency=N connections (default 1; -n at least -c, as h2load's)", default="1"),
    Flag(("-t", "--threads"), "<N>", "Number of native threads.", "threads=N (default 1)",
         default="1"),
    Flag(("-i", "--input-file"), "<PATH>", "Path of a file with multiple URIs are separated "
         "by EOLs.", "give the URLs on the command line (several URLs of one server run in "
         "turn), or a Scenario (httpbench --scenario FILE.py)", refused=True),
    Flag(("-m", "--max-concurrent-streams"), "<N>", "Max  concurrent  streams  to issue  per "
         "session.", "streams=N over HTTP/2; over HTTP/1.1 (--h1) pipeline=N, as h2load "
         "pipelines (default 1)", default="1"),
    Flag(("-f", "--max-frame-size"), "<SIZE>", "Maximum frame size that the local endpoint "
         "is willing to receive.", "httpbench keeps nghttp2's default frame size",
         refused=True),
    Flag(("-w", "--window-bits"), "<N>", "Sets the stream level initial window size to "
         "(2**<N>)-1.", "use the plain command line's --http2 --window BYTES", refused=True),
    Flag(("-W", "--connection-window-bits"), "<N>", "Sets  the  connection  level   initial "
         "window size to (2**<N>)-1.", "use the plain command line's --http2 --window BYTES",
         refused=True),
    Flag(("-H", "--header"), "<HEADER>", "Add/Override a header to the requests.",
         "headers=[...]", repeat=True),
    Flag(("--ciphers",), "<SUITE>", "Set  allowed cipher  list  for TLSv1.2  or earlier.",
         "ciphers=SUITE (default h2load's list, AES-128-GCM first)"),
    Flag(("--tls13-ciphers",), "<SUITE>", "Set allowed cipher list for TLSv1.3.",
         "ciphersuites=SUITE (default h2load's list)"),
    Flag(("-p", "--no-tls-proto"), "<PROTOID>", "Specify ALPN identifier of the  protocol to "
         "be used when accessing http URI without SSL/TLS. (h2c and http/1.1; default h2c)",
         "h2c: HTTP/2 by prior knowledge; http/1.1: HTTP/1.1"),
    Flag(("-d", "--data"), "<PATH>", "Post FILE to  server.  The request method  is changed "
         "to POST.", "body=the file's bytes, method POST (over HTTP/1.1, one in flight a "
         "connection, as h2load)"),
    Flag(("-r", "--rate"), "<N>", "Specifies  the  fixed  rate  at  which  connections  are "
         "created.", "httpbench opens its connections at once; for a rate of requests use "
         "--rps", refused=True),
    Flag(("--rate-period",), "<DURATION>", "Specifies the time  period between creating "
         "connections.", "httpbench opens its connections at once", refused=True),
    Flag(("-D", "--duration"), "<DURATION>", "Specifies the main duration for the "
         "measurements in case of timing-based benchmarking.",
         "duration=T (-n is then ignored, as h2load's)"),
    Flag(("--warm-up-time",), "<DURATION>", "Specifies the  time  period  before  starting "
         "the actual measurements. Needs to provided along with -D option.",
         "warmup=T (with -D, as h2load's)"),
    Flag(("-T", "--connection-active-timeout"), "<DURATION>", "Specifies  the maximum  time "
         "that  h2load is  willing to keep a  connection open.", _CONNECTION_TIMEOUT,
         refused=True),
    Flag(("-N", "--connection-inactivity-timeout"), "<DURATION>", "Specifies the amount  of "
         "time  that  h2load is  willing  to wait to see activity on a given connection.",
         _CONNECTION_TIMEOUT, refused=True),
    Flag(("--timing-script-file",), "<PATH>", "Path of a file containing one or more lines "
         "separated by EOLs. Each script line is composed of two tab-separated fields.",
         "a load shape: run(stages=...) or a Scenario", refused=True),
    Flag(("-B", "--base-uri"), "(<URI>|unix:<PATH>)", "Specify URI from which the scheme, "
         "host and port will be used  for all requests.",
         "unix:PATH: unix_socket=PATH; a URI: the server the URL's path is sent to"),
    Flag(("--npn-list",), "<LIST>", "Comma delimited list of  ALPN protocol identifier "
         "sorted in the order of preference.", "--h1 says HTTP/1.1; without it, h2 and "
         "http/1.1 are offered, h2load's default, and the server's choice is run",
         refused=True),
    Flag(("--h1",), "", "Short hand for --npn-list=http/1.1 --no-tls-proto=http/1.1",
         "HTTP/1.1 over TLS and cleartext"),
    Flag(("--header-table-size",), "<SIZE>", "Specify decoder header table size.",
         "httpbench keeps nghttp2's default HPACK table", refused=True),
    Flag(("--encoder-header-table-size",), "<SIZE>", "Specify encoder header table size.",
         "httpbench keeps nghttp2's default HPACK table", refused=True),
    Flag(("--log-file",), "<PATH>", "Write per-request information to a file as "
         "tab-separated columns.", "h2load's three columns (the send in microseconds "
         "since the epoch, the status or -1, microseconds to the response's end), appended, "
         "from httpbench's per-request log (--log FILE, CSV, JSON lines or SQLite by its "
         "extension, which h2load's getopt would read as a prefix of --log-file)"),
    Flag(("--connect-to",), "<HOST>[:<PORT>]", "Host and port to connect instead of using "
         "the authority in <URI>.", "give that address in the URL and the name with "
         "-H 'Host: NAME'", refused=True),
    Flag(("--rps",), "<N>", "Specify request per second for each client.",
         "rate=N x c over the run: an open loop, latency from each request's intended start"),
    Flag(("-v", "--verbose"), "", "Output debug information.",
         "the first response's head"),
    Flag(("--version",), "", "Display version information and exit.",
         "prints httpbench's version"),
    Flag(("-h", "--help"), "", "Display this help and exit.", "this help"),
)

EXAMPLES = """\
as h2load, one word changed:
  httpbench h2load -n 10000 -c 10 -m 10 http://127.0.0.1:8080/rnd?c=2048
  httpbench h2load -D 10 -c 10 -m 10 --warm-up-time 2 http://127.0.0.1:8080/rnd?c=2048
  httpbench h2load -n 10000 -c 10 --h1 -m 4 http://127.0.0.1:8080/rnd?c=2048
with what h2load does not have:
  httpbench h2load -n 10000 -c 10 -m 10 --json result.json --log requests.csv URL

The report is h2load's; httpbench's own figures follow it after a blank
line. Exit status: 0 when no request failed, 1 when some did (h2load exits
0 even then), 2 for bad usage (nothing was sent).
"""


def h2load_parser() -> argparse.ArgumentParser:
    return mode_parser(PROG, "h2load 1.52's command line and report, with httpbench's C loop "
                             "underneath.", EXAMPLES, FLAGS, "<URI>", many=True)


def _split(total: int, threads: int) -> list[int]:
    """h2load's split of clients or requests among its threads: the
    remainder one each to the first."""
    return [total // threads + (i < total % threads) for i in range(threads)]


def progress_lines(requests: int, threads: int, out: IO[str]) -> Callable[[int, int], None]:
    """h2load's progress lines (Worker::report_progress): "progress: P%
    done" on stdout, not under -D, printed by its first thread for its own
    share of the requests (each tenth of it, each request below ten: 8%,
    16%, ... for 25). httpbench's threads share the requests, so the same
    lines are printed as the whole run reaches each share."""
    share = _split(requests, threads)[0]
    lines = Milestones(max(1, share // 10), share,
                       lambda n: f"progress: {n * 100 // share}% done", out)
    return lambda complete, failed: lines((complete + failed) * share // requests, 0)


_DURATION = re.compile(r"(\d+)(s|ms|m|h)?", re.IGNORECASE)
_DURATION_UNIT = {"s": 1.0, "ms": 0.001, "m": 60.0, "h": 3600.0}


def h2load_duration(flag: str, text: str) -> float:
    """h2load's <DURATION> (util::parse_duration_with_unit): a whole number
    of seconds, or with a unit, s, ms, m or h; "500ms", never "0.5" or
    "1m30s". h2load's own words when it is not one."""
    m = _DURATION.fullmatch(text)
    # h2load reads the number into an int64: past it, the same refusal.
    if m is None or len(m[1]) > 19 or int(m[1]) > 2**63 - 1:
        raise UsageError(f"{flag}: value error {text}")
    value = int(m[1]) * _DURATION_UNIT[(m[2] or "s").lower()]
    return 0.0 if value == 0 else _check.seconds(flag, value)


class Phases:
    """h2load's lines of a run as it goes, run()'s progress function: each
    thread's "spawning thread" line (its clients, as httpbench splits them
    too, and its share of -n, which httpbench's threads share); under -D
    "Warm-up started" and the first thread's "progress: P% of clients
    started"; the first connection's TLS and Application protocol lines
    as it opens (opened()); under -n the "progress: P% done" lines; under
    -D the warm-up's and the main duration's ends as the run's clock passes
    them (read by the progress calls, four a second; finish() prints what
    is left before the report)."""

    def __init__(self, clients: int, threads: int, requests: int | None,
                 duration: float | None, warmup: float | None, out: IO[str],
                 protocol: str = "h2c") -> None:
        self.threads, self.out, self.protocol = threads, out, protocol
        self.told = False
        self.lines = progress_lines(requests, threads, out) if duration is None and requests \
            else None
        self.ends = [] if duration is None else [warmup or 0.0, (warmup or 0.0) + duration]
        per, shares = _split(clients, threads), _split(requests or 0, threads)
        for i, n in enumerate(per):
            if duration is None:
                out.write(f"spawning thread #{i}: {n} total client(s). "
                          f"{shares[i]} total requests\n")
            else:
                out.write(f"spawning thread #{i}: {n} total client(s). Timing-based test with "
                          f"{warmup or 0:g}s of warm-up time and {duration:g}s of main "
                          f"duration for measurements.\n")
        if duration is not None:
            for i in range(threads):
                out.write(f"Warm-up started for thread #{i}.\n")
            every = max(1, per[0] // 10)
            for n in range(every, per[0] + 1, every):
                out.write(f"progress: {n * 100 // per[0]}% of clients started\n")
        out.flush()
        self.t0 = time.monotonic()

    def __call__(self, complete: int, failed: int) -> None:
        while self.ends and time.monotonic() - self.t0 >= self.ends[0]:
            self._next()
        if self.lines is not None:
            # Until a connection has opened, every failure is one that never
            # started, which h2load's "done" leaves out (none opened: no
            # progress line at all, as h2load's clients that cannot connect).
            self.lines(complete, failed if self.told else 0)

    def opened(self, tls_protocol: str, tls_temp_key: str) -> None:
        """h2load's lines as its first connection opens (print_app_info):
        over TLS the protocol, the cipher and the server's key exchange,
        then the application protocol (`protocol`: h2, h2c or http/1.1)."""
        self.out.write("".join(line + "\n" for line in app_info_lines(
            tls_protocol, tls_temp_key, self.protocol)))
        self.out.flush()
        self.told = True

    def finish(self) -> None:
        while self.ends:
            self._next()

    def _next(self) -> None:
        main = len(self.ends) == 2
        self.ends.pop(0)
        for i in range(self.threads):
            if main:
                self.out.write(f"Warm-up phase is over for thread #{i}.\n"
                               f"Main benchmark duration is started for thread #{i}.\n")
            else:
                self.out.write(f"Main benchmark duration is over for thread #{i}. "
                               f"Stopping all clients.\nStopped all clients for thread #{i}\n")
        self.out.flush()


def _settings(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The URL and run()'s arguments from h2load's flags. Several URIs are
    each client's requests in turn, as h2load sends them: a Scenario in
    order "turns", each URI's path on the first's server (h2load ignores
    the scheme, host and port of the others)."""
    if not args.url:
        raise UsageError("give the URI")
    url = args.url[0]
    unix = None
    if args.opt_base_uri:
        if args.opt_base_uri.startswith("unix:"):
            unix = args.opt_base_uri[len("unix:"):]
        else:
            base = split_url(args.opt_base_uri)
            path = split_url(url).path if "://" in url else url
            url = f"{base.scheme}://{base.host}:{base.port}{path}"
    target = split_url(url)
    targets = [target.path] + [split_url(u).path if "://" in u else join_target(url, u)
                               for u in args.url[1:]]
    requests: int | None = whole("-n", args.opt_requests, 1, _check.MAX_REQUESTS)
    clients = whole("-c", args.opt_clients, 1, _check.MAX_CONCURRENCY)
    threads = whole("-t", args.opt_threads, 1, _check.MAX_THREADS)
    # -D 0 is no duration, as h2load reads it: the run is -n's.
    duration = (h2load_duration("-D", args.opt_duration) or None) if args.opt_duration else None
    warmup = None
    if args.opt_warm_up_time:
        if duration is None:
            raise UsageError("--warm-up-time goes with -D, as in h2load")
        warmup = h2load_duration("--warm-up-time", args.opt_warm_up_time) or None
    if duration is not None:
        requests = None
    elif requests is not None and requests < clients:
        raise UsageError(f"-n: the number of requests must be greater than or equal to the "
                         f"clients ({requests} < -c {clients}), as in h2load")
    if clients < threads:
        raise UsageError(f"-c, -t: the number of clients must be greater than or equal to the "
                         f"number of threads ({clients} < -t {threads}), as in h2load")
    proto = args.opt_no_tls_proto or "h2c"
    if proto not in ("h2c", "http/1.1"):
        raise UsageError(f"-p takes h2c or http/1.1, not {proto!r}")
    http2 = not args.opt_h1 and (target.tls or proto == "h2c")
    streams = whole("-m", args.opt_max_concurrent_streams, 1, _check.MAX_STREAMS)
    body = read_body_file("-d", args.opt_data) if args.opt_data else None
    rate = rate_per("--rps", args.opt_rps, clients) if args.opt_rps is not None else None
    method = "POST" if body is not None else "GET"
    scenario = None
    if len(targets) > 1:
        if not http2 and body is None and streams > 1:
            raise UsageError("-m with --h1 pipelines, which is not supported with several URIs")
        scenario = Scenario([Request(method, t, body=body) for t in targets], order="turns")
        method, body = "GET", None  # (the scenario's Requests give them)
    kwargs: dict[str, Any] = dict(
        method=method, body=body, scenario=scenario,
        # h2load's carry a user-agent and no accept (and -H's).
        headers=without_added(parse_headers(args.opt_header), "Accept"),
        requests=requests, duration=duration,
        warmup=warmup, concurrency=clients,
        threads=threads, keepalive=True, rate=rate,
        # h2load -D stops its clients at the main duration's end: what is in
        # flight then is started, not done, and the run lasts the duration.
        grace=0.0, progress=False,
        http2=http2, streams=streams if http2 else 1,
        pipeline=1 if http2 or body is not None else streams, unix_socket=unix,
        verify=False, ciphers=args.opt_ciphers or (H2LOAD_CIPHERS if target.tls else None),
        ciphersuites=args.opt_tls13_ciphers or (H2LOAD_TLS13_CIPHERS if target.tls else None),
        **output_options(args))
    return url, kwargs


# h2load's default ALPN list less the drafts: it runs whichever the server
# chooses, HTTP/1.1 when the server chooses it or nothing.
_ALPN_OFFER = ["h2", "http/1.1"]
_ALPN_PROBE_TIMEOUT = 10.0


def server_alpn(url: str, unix: str | None, ciphers: str | None) -> tuple[bool, str | None]:
    """One TLS handshake with the server of url (over the Unix socket unix
    if given), offering h2 and http/1.1 by ALPN as h2load does, certificate
    unchecked: (whether it completed, the protocol the server chose, None
    for none). A handshake that fails is (False, None): the run then meets
    the same failure and reports it."""
    target = split_url(url)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(_ALPN_OFFER)
    try:
        if ciphers:
            ctx.set_ciphers(ciphers)
        # (Closed however it ends: wrap_socket takes the descriptor over, and
        # closing the socket it came from is then a no-op.)
        with (socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) if unix is not None else
              socket.create_connection((target.host, target.port), _ALPN_PROBE_TIMEOUT)) as sock:
            if unix is not None:
                sock.settimeout(_ALPN_PROBE_TIMEOUT)
                sock.connect(unix)
            # (The name for SNI goes by position: the ssl module's keyword is
            # also a run setting's name, whose places tests/loop/test_settings.py
            # counts.)
            with ctx.wrap_socket(sock, False, True, True, target.host) as tls:
                return True, tls.selected_alpn_protocol()
    except (OSError, ValueError):  # (ssl.SSLError is an OSError)
        return False, None


def h2load_main(argv: Sequence[str]) -> int:
    args = h2load_parser().parse_args(argv)
    if args.opt_version:
        from .._version import __version__
        print(f"httpbench {__version__}, in h2load 1.52's mode (httpbench h2load)")
        return 0
    settings = checked(PROG, args, FLAGS, lambda: _settings(args))
    if isinstance(settings, int):
        return settings
    url, kwargs = settings
    tls = split_url(url).tls
    if tls and kwargs["http2"]:
        # h2load offers h2 and http/1.1 and speaks what the server chooses:
        # a server of HTTP/1.1 alone is run over HTTP/1.1, as with --h1.
        done, chosen = server_alpn(url, kwargs["unix_socket"], kwargs["ciphers"])
        if done and chosen != "h2":
            depth = kwargs["streams"]
            scenario = kwargs["scenario"]
            posting = (scenario.requests[0].method if scenario is not None
                       else kwargs["method"]) == "POST"  # (-d: h2load does not pipeline)
            if scenario is not None and depth > 1 and not posting:
                print(f"{PROG}: the server chose HTTP/1.1, where -m pipelines, which is not "
                      "supported with several URIs", file=sys.stderr)
                return 2
            kwargs.update(http2=False, streams=1, pipeline=1 if posting else depth)

    if kwargs["threads"] > (os.cpu_count() or 1):
        print("-t: warning: the number of threads is greater than hardware cores.",
              file=sys.stderr)
    with logged_records(kwargs) if args.opt_log_file else contextlib.nullcontext() as records:

        def write_log(r: Result, f: IO[str]) -> None:
            if records is not None and r.start_time is not None:
                f.writelines(h2load_log_lines(records(), r.start_time))

        # (Opened before the run and added to, as h2load opens it.)
        files = {"--log-file": (args.opt_log_file, write_log)}
        chat = report_stream(output_paths(args, files=files))

        started: list[Phases] = []

        def banner(out: IO[str]) -> bool:
            # (The settings checked: h2load's lines from here on, the
            # threads' as they are spawned.)
            print("starting benchmark...", file=out)
            started.append(Phases(kwargs["concurrency"], kwargs["threads"], kwargs["requests"],
                                  kwargs["duration"], kwargs["warmup"], chat,
                                  ("h2" if tls else "h2c") if kwargs["http2"] else "http/1.1"))
            kwargs["progress"] = started[0]
            return False

        def write_report(r: Result, out: IO[str]) -> None:
            phases = started[0]
            phases.finish()
            if args.opt_verbose and r.first_head:
                out.write(r.first_head.replace("\r\n", "\n"))
            out.write(h2load_report(r, WORDS, app_info=not phases.told,
                                    warmup=kwargs["warmup"] or 0.0))

        return execute_mode(PROG, url, kwargs, args, write_report, files=files,
                            appended={"--log-file"}, banner=banner)

"""The httpbench command line.

    httpbench                                   the comparison on the embedded server
    httpbench compare [--agents a,b] [-n N] [-c C] [URL]
    httpbench [-n N] [-c C] [-t SECONDS] [-k] [-p POSTFILE] [-u PUTFILE] [-T TYPE]
              [-H 'Name: value']... [-m METHOD] [-s TIMEOUT] [-q] [-l] [-e CSVFILE]
              [--json FILE] [--rate R] [--threads T] [--warmup N|Ss] [URL [URL2 ...]]
    httpbench [-n N] [-c C] ... --scenario FILE.py [URL]
    httpbench capacity URL [--slo 'p99<5ms'] [--max-error-rate F] [--start R] [--stage S] [-c C]
    httpbench serve [--host H] [--port P] [--mode epoll|threads] [--threads T] [--static DIR]
                    [--tls [--cert FILE --key FILE]] [--unix-socket PATH]
                    [--proxy [--allow HOST[:PORT]]... [--upstream-timeout S]]

https:// URLs speak TLS, verifying the server unless --insecure (curl's
word; -k stays ab's keep-alive); --cacert, --cert, --key as curl's; ab's -f
PROTOCOL and -Z CIPHERSUITE.

As ab: the same letters, the same report. Keep-alive is on unless
--no-keepalive (-k is accepted from habit). With no URL, the seed's client
comparison runs on the embedded server (`httpbench compare`). Exit status 0
only when every request completed without failure; 2 for bad usage.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import runpy
import signal
import sys
import urllib.parse
import urllib.request
from collections.abc import Sequence
from types import FrameType
from typing import IO

from . import _check
from ._version import __version__
from .agents import AGENTS, MAX_WORKERS, available_agents
from .compare import compare
from .exceptions import HttpbenchError, TLSError
from .result import Result
from ._url import split_proxy, split_url
from .runner import basic_auth, parse_url, run
from .scenario import Request, Scenario, join_target
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
    p.add_argument("--port", type=int, help="port (default 8080; 0: any free port)")
    p.add_argument("--unix-socket", metavar="PATH",
                   help="listen on this Unix socket instead of a port (removed at exit)")
    p.add_argument("--mode", choices=("epoll", "threads"), default="epoll",
                   help="event loops, or a thread per connection (default epoll)")
    p.add_argument("--threads", type=int, default=1, help="event loops in epoll mode (default 1)")
    p.add_argument("--static", metavar="DIR", help="serve DIR under /static/")
    p.add_argument("--no-zero-copy", dest="zero_copy", action="store_false",
                   help="send static files with read/write instead of sendfile")
    p.add_argument("--max-buffered", metavar="SIZE", default="256M",
                   help="request bodies held at once, over all connections; past it a body "
                        "gets 503 (bytes, or like 256M; default 256M)")
    p.add_argument("--tls", action="store_true",
                   help="serve HTTPS: with --cert/--key, else a fresh self-signed certificate "
                        "(its file is printed, for curl --cacert)")
    add_cert_arguments(p, "with --tls: the server's certificate chain")
    p.add_argument("--proxy", action="store_true",
                   help="also a forward proxy: relay absolute-form requests and CONNECT tunnels "
                        "to loopback (as ab -X and curl -x send them); --no-zero-copy relays "
                        "by read/write instead of splice")
    p.add_argument("--allow", metavar="HOST[:PORT]", action="append",
                   help="with --proxy: a destination besides loopback to relay to (repeat for "
                        "more); any other is refused with 403")
    p.add_argument("--upstream-timeout", metavar="SECONDS", type=float,
                   help="with --proxy: an upstream silent this long gets the client a 504 "
                        "(default 10)")
    return p


class _Stop(Exception):
    """SIGTERM or SIGHUP: end as Ctrl-C does."""


def _on_stop_signal(signum: int, frame: FrameType | None) -> None:
    raise _Stop(signal.Signals(signum).name)


def serve(argv: Sequence[str]) -> int:
    args = serve_parser().parse_args(argv)
    try:
        if (args.cert or args.key) and not args.tls:
            raise ValueError("--cert and --key are for --tls")
        max_buffered = _check.byte_size("--max-buffered", args.max_buffered)
        if args.unix_socket is not None and args.port is not None:
            raise ValueError("--port and --unix-socket: give one")
        port = 0 if args.unix_socket is not None else 8080 if args.port is None else args.port
        if not args.proxy and (args.allow or args.upstream_timeout is not None):
            raise ValueError("--allow and --upstream-timeout are for --proxy")
        srv = Server(args.host, port, args.mode, args.threads, args.static, args.zero_copy,
                     max_buffered=max_buffered, tls=args.tls, certfile=args.cert,
                     keyfile=args.key, unix_socket=args.unix_socket, proxy=args.proxy,
                     allow=args.allow if args.proxy else None,
                     upstream_timeout=10.0 if args.upstream_timeout is None
                     else args.upstream_timeout)
    except (OSError, ValueError, HttpbenchError) as e:
        print(f"httpbench serve: {e}", file=sys.stderr)
        return 2
    # A service manager's stop (SIGTERM) and a closed terminal (SIGHUP) end
    # it as Ctrl-C does: the server closes and the summary is printed. The
    # handlers are in place before the banner, which says it is ready.
    previous = {sig: signal.signal(sig, _on_stop_signal) for sig in (signal.SIGTERM, signal.SIGHUP)}
    threads = f", {args.threads} thread{'s' * (args.threads > 1)}" if args.mode == "epoll" else ""
    try:
        where = srv.url() if srv.unix_socket is None else f"{srv.url()} on {srv.unix_socket}"
        print(f"httpbench {__version__} serving {where} ({args.mode}{threads}); Ctrl-C to "
              "stop", flush=True)
        curl = "curl" if srv.unix_socket is None else f"curl --unix-socket {srv.unix_socket}"
        if srv.tls and args.cert is None:
            print(f"self-signed certificate for {args.host} and localhost, a day: "
                  f"{curl} --cacert {srv.cafile} {srv.url()}", flush=True)
        elif srv.unix_socket is not None:
            print(f"{curl} {srv.url()}", flush=True)
        if srv.proxy and srv.unix_socket is None:
            copy = "splice" if srv.zero_copy else "read/write"
            print(f"forward proxy ({copy}): curl -x {srv.url()} http://127.0.0.1:PORT/..., "
                  f"or httpbench -X {srv.url()[len('http://'):].rstrip('/')} URL", flush=True)
        srv.serve_forever()
    except (KeyboardInterrupt, _Stop):
        pass
    finally:
        srv.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    st = srv.stats()
    relayed = (f"; relayed {st['relayed']} responses and {st['tunnels']} tunnels"
               if srv.proxy else "")
    print(f"served {st['requests']} requests on {st['connections']} connections{relayed}",
          flush=True)
    return 0


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
    p.add_argument("-n", dest="requests", type=int,
                   help="requests to perform (with neither -n nor a time limit the run lasts "
                        "10 s, as wrk's; ab's default of one request measures nothing)")
    p.add_argument("-c", dest="concurrency", type=int,
                   help="requests at a time: connections (default 1, as in ab)")
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
    p.add_argument("-H", dest="headers", action="append", default=[], metavar="'Name: value'",
                   help="extra header (repeatable)")
    p.add_argument("-A", dest="auth", metavar="USER:PASS", help="HTTP Basic authentication")
    p.add_argument("-C", dest="cookies", action="append", default=[], metavar="NAME=VALUE",
                   help="a cookie (repeatable)")
    p.add_argument("-m", dest="method", help="method (default GET, POST with -p, PUT with -u)")
    p.add_argument("-s", dest="timeout", default="30", metavar="TIME",
                   help="time each request may take (default 30s)")
    p.add_argument("-q", dest="quiet", action="store_true", help="no progress")
    p.add_argument("-l", dest="lengths_vary", action="store_true",
                   help="do not count a body length unlike the first as a failure")
    p.add_argument("-v", dest="verbosity", type=int, default=0, metavar="LEVEL",
                   help="as ab: 2 or more prints the first response's head")
    p.add_argument("-e", dest="csv", help="write the percentiles as CSV to this file")
    p.add_argument("--json", dest="json", metavar="FILE",
                   help="write the whole result as JSON to FILE; '-': to standard output, the "
                        "report then going to standard error")
    p.add_argument("--hgrm", metavar="FILE",
                   help="write HdrHistogram's percentile distribution (values in ms) to FILE "
                        "('-': standard output)")
    p.add_argument("-R", "--rate", type=float,
                   help="open loop at this many requests a second over the whole run (wrk2)")
    p.add_argument("--threads", type=int,
                   help="OS threads (default: the CPUs this process may use, capped by -c)")
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
    p.add_argument("--unix-socket", metavar="PATH",
                   help="as curl: connect to this Unix socket, not the URL's host and port (the "
                        "URL still gives Host and the path)")
    p.add_argument("-X", dest="proxy", metavar="PROXY",
                   help="as ab: through the forward proxy host:port (or http://host:port)")
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


def add_tls_arguments(p: argparse.ArgumentParser) -> None:
    """curl's words for how an https:// server is checked."""
    p.add_argument("--insecure", dest="verify", action="store_false",
                   help="do not verify the server's certificate or name (as curl -k; ab, wrk "
                        "and hey never verify)")
    p.add_argument("--cacert", metavar="FILE",
                   help="verify the server against the CA certificates in FILE (PEM), not the "
                        "system's")
    add_cert_arguments(p, "a client certificate")


def add_cert_arguments(p: argparse.ArgumentParser, what: str) -> None:
    """--cert and --key, curl's names, for the server's and the client's."""
    p.add_argument("--cert", metavar="FILE", help=f"{what} (PEM)")
    p.add_argument("--key", metavar="FILE",
                   help="its private key (PEM; default: in --cert's file)")


# ab's -f: TLS1.2 and TLS1.3 exactly, ALL what OpenSSL allows from 1.2 up.
_PROTOCOLS = {"TLS1.2": ("1.2", "1.2"), "TLS1.3": ("1.3", "1.3"), "ALL": ("1.2", None)}


class UsageError(Exception):
    pass


def _tls_options(args: argparse.Namespace) -> dict[str, object]:
    """run()'s TLS arguments from the flags."""
    protocol = (args.protocol or "ALL").upper().replace("TLSV", "TLS")
    if protocol not in _PROTOCOLS:
        raise UsageError(f"-f takes TLS1.2, TLS1.3 or ALL, not {args.protocol!r} (SSLv3, TLS 1.0 "
                         "and 1.1 are not offered)")
    lo, hi = _PROTOCOLS[protocol]
    opts: dict[str, object] = {"verify": args.verify, "cafile": args.cacert,
                               "certfile": args.cert, "keyfile": args.key, "ciphers": args.ciphers,
                               "ciphersuites": args.ciphersuites, "tls_resume": args.tls_resume}
    if args.protocol is not None:
        opts.update(tls_min=lo, tls_max=hi)
    return opts


def _proxy(args: argparse.Namespace) -> str | None:
    """run()'s proxy from -X, -P and --proxy-from-env."""
    proxy: str | None = args.proxy
    if proxy is None and args.proxy_from_env and args.url is not None:
        target = split_url(args.url)
        # As curl and urllib read them: http_proxy, https_proxy, no_proxy.
        proxies: dict[str, str] = urllib.request.getproxies()
        if not bool(urllib.request.proxy_bypass(target.host)):
            proxy = proxies.get(target.scheme)
    if args.proxy_auth is not None:
        if proxy is None:
            raise UsageError("-P: the proxy's credentials need a proxy (-X)")
        user, sep, password = args.proxy_auth.partition(":")
        if not sep:
            raise UsageError(f"-P takes user:password, not {args.proxy_auth!r}")
        via = split_proxy(proxy)
        quoted = f"{urllib.parse.quote(user, safe='')}:{urllib.parse.quote(password, safe='')}"
        proxy = f"http://{quoted}@{via}"
    if proxy is not None:
        split_proxy(proxy)  # a bad one is bad usage, before anything is sent
    return proxy


_UNIT_SECONDS = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_TIME_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h)")


def _duration(flag: str, text: str) -> float:
    """A time as people write it to ab, wrk and hey: seconds (10, 2.5), or
    with units (10s, 500ms, 2m, 1h, 1m30s)."""
    t = text.strip().lower()
    try:
        value = float(t)
    except ValueError:
        parts = _TIME_PART.findall(t)
        if not parts or "".join(n + u for n, u in parts) != t:
            raise UsageError(f"{flag} takes a time like 10, 10s, 500ms or 2m, "
                             f"not {text!r}") from None
        value = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    return _check.seconds(flag, value)


def _warmup(text: str | None) -> int | float | None:
    """N requests, or a time with a unit (2s, 500ms, 1m)."""
    if text is None:
        return None
    t = text.strip()
    if t.lstrip("+-").isdigit():
        try:
            return _check.warmup(int(t))
        except ValueError as e:
            raise UsageError(f"--{e}") from None
    if not t[-1:].isalpha():
        raise UsageError(f"--warmup takes a count or a time like 2s, not {text!r}")
    return _duration("--warmup", t)


def _headers(lines: list[str]) -> list[tuple[str, str]]:
    out = []
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"-H takes 'Name: value', not {line!r}")
        out.append((name.strip(), value.strip()))
    return out


def _given(headers: list[tuple[str, str]], name: str) -> bool:
    return any(k.lower() == name.lower() for k, _ in headers)


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
            if path == "-":
                self.files[flag] = (path, sys.stdout, True)
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
        path, f, _ = self.files[flag]
        if path != "-":
            f.seek(0)
            f.truncate()
        return f

    def close(self) -> None:
        for path, f, _ in self.files.values():
            if path == "-":
                f.flush()
            else:
                f.close()

    def discard(self) -> None:
        for path, f, existed in self.files.values():
            if path == "-":
                continue
            f.close()
            if not existed:
                os.unlink(path)
        self.files = {}


def _one_line(prog: str, e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return f"{prog}: {text}"


def _time_limit(args: argparse.Namespace) -> float | None:
    """-t (ab), -d/--duration (wrk) and -z (hey) are one time limit."""
    limits = {flag: text for flag, text in (("-t", args.t_text), ("-d", args.d_text)) if text}
    if len(limits) > 1 and len({_duration(f, t) for f, t in limits.items()}) > 1:
        raise UsageError("-t and -d/-z are the same time limit: give one")
    for flag, text in limits.items():
        return _duration(flag, text)
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
    headers = _headers(args.headers)
    body = None
    method = args.method
    if args.head:
        if args.postfile or args.putfile:
            raise UsageError("-i (HEAD) sends no body: not with -p or -u")
        method = method or "HEAD"
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


def load_scenario(path: str) -> tuple[Scenario, str | None]:
    """The Scenario a Python file names `scenario`, and its `url` if it
    gives one (run as a locustfile is: the file is the user's code)."""
    try:
        names = runpy.run_path(path, run_name="httpbench_scenario")
    except FileNotFoundError:
        raise UsageError(f"--scenario: no such file: {path}") from None
    except Exception as e:  # the file's own error (a SyntaxError, a ValueError): say so
        raise UsageError(f"--scenario: {path}: {type(e).__name__}: {e}") from None
    scenario, url = names.get("scenario"), names.get("url")
    if not isinstance(scenario, Scenario):
        raise UsageError(f"--scenario: {path} must define `scenario`, an httpbench.Scenario "
                         f"(found {type(scenario).__name__})")
    if url is not None and not isinstance(url, str):
        raise UsageError(f"--scenario: {path}'s `url` must be a string")
    return scenario, url


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
        if args.requests is not None:
            args.requests = _check.count("-n", args.requests)
        if args.concurrency is None:
            args.concurrency = 1
        args.concurrency = _check.count("-c", args.concurrency, 1, _check.MAX_CONCURRENCY)
        limit = _time_limit(args)
        if args.threads is not None:
            args.threads = _check.count("--threads", args.threads, 1, _check.MAX_THREADS)
        if args.rate is not None:
            args.rate = _check.rate(args.rate, args.concurrency)
        timeout = _duration("-s", args.timeout)
        warmup = _warmup(args.warmup)
        method, body, headers = _request_parts(args)
        scenario = _scenario(args, method, body)
        tls = _tls_options(args)
        proxy = _proxy(args)
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
        outputs = _Outputs({"-e": args.csv, "--json": args.json, "--hgrm": args.hgrm})
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
                workers=args.workers, **tls)  # type: ignore[arg-type]
    except (ValueError, FileNotFoundError, TLSError, ImportError) as e:
        # Settings nothing could run with: a file, a cipher list OpenSSL
        # does not know (a handshake's failure is counted, not raised).
        outputs.discard()
        print(_one_line("httpbench", e), file=sys.stderr)
        return 2
    except (HttpbenchError, OSError) as e:
        # Nothing ran: the name did not resolve, or the system refused the
        # run its threads or descriptors.
        outputs.discard()
        print(_one_line("httpbench", e), file=sys.stderr)
        return 1
    # With the JSON on standard output the report goes to standard error.
    report = sys.stderr if args.json == "-" else sys.stdout
    if args.verbosity >= 2 and r.first_head:
        report.write("LOG: header received:\n" + r.first_head.replace("\r\n", "\n"))
    report.write(r.report())
    if r.first_error and r.failed:
        print(f"First failure: {r.first_error}", file=report)
    report.flush()
    for flag, text in (("-e", None), ("--json", r.to_json()),
                       ("--hgrm", r.latency.to_hgrm())):
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


def compare_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="httpbench compare",
        description="The same scenario through httpbench's C loop and Python's HTTP clients, "
                    "side by side (each one's ab report with --reports). With no URL: the "
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
    p.add_argument("-t", "-d", "--duration", dest="duration", metavar="TIME",
                   help="time each run may take at most: 3, 3s, 500ms (default 3 s; none with "
                        "--full)")
    p.add_argument("--full", action="store_true",
                   help="the seed's full 200,000 requests per agent and scenario, no time cap")
    p.add_argument("--no-pin", dest="pin", action="store_false",
                   help="do not run on one CPU (with the embedded server and -c 1, server and "
                        "clients share one CPU, as in the seed's runs)")
    p.add_argument("-q", dest="quiet", action="store_true", help="no progress lines")
    p.add_argument("--reports", action="store_true",
                   help="each agent's ab report before the table (they are long)")
    p.add_argument("--json", help="write every result as JSON to this file")
    p.add_argument("--markdown", help="write the side-by-side table as Markdown to this file")
    p.add_argument("--tls", action="store_true",
                   help="with no URL: the embedded server over TLS (every agent verifies its "
                        "self-signed certificate)")
    p.add_argument("--insecure", dest="verify", action="store_false",
                   help="an https:// URL's server is not verified, by any agent")
    p.add_argument("--cacert", metavar="FILE",
                   help="every agent verifies an https:// URL's server against FILE (PEM)")
    p.add_argument("--unix-socket", metavar="PATH",
                   help="every agent connects to this Unix socket (with no URL the embedded "
                        "server listens on it); http.client, urllib3 and requests cannot")
    p.add_argument("-X", "--proxy", dest="proxy", metavar="PROXY",
                   help="every agent goes through this forward proxy, host:port or "
                        "http://[user:pass@]host:port")
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
            args.duration = _duration("-t", args.duration)
        if args.url is not None:
            parse_url(args.url)
            if args.tls:
                raise UsageError("--tls is for the embedded server: give an https:// URL instead")
        if args.proxy is not None:
            split_proxy(args.proxy)
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
                      duration=duration, progress=not args.quiet, pin=pin, verify=args.verify,
                      cafile=args.cacert, tls=args.tls, unix_socket=args.unix_socket,
                      proxy=args.proxy)
    except (ValueError, HttpbenchError, OSError) as e:
        outputs.discard()
        print(_one_line("httpbench compare", e), file=sys.stderr)
        return 2 if isinstance(e, ValueError) else 1
    sys.stdout.write(cmp.report(reports=args.reports))
    out = outputs.get("--json")
    if out is not None:
        json.dump({f"{a} {s}": r.to_dict() for (a, s), r in cmp.results.items()}, out, indent=2)
    out = outputs.get("--markdown")
    if out is not None:
        out.write(cmp.to_markdown())
    outputs.close()
    return 0 if all(r.ok for r in cmp.results.values()) else 1


def capacity_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="httpbench capacity",
        description="Find the highest arrival rate URL takes while an SLO holds: open-loop "
                    "stages, the rate raised until the SLO or the error rate breaks, then "
                    "bisected to within 5%.",
    )
    p.add_argument("url", metavar="URL",
                   help="the server and path to load, http:// or https:// (with --scenario, "
                        "the server its paths are taken on)")
    p.add_argument("--scenario", metavar="FILE.py",
                   help="the capacity of the httpbench.Scenario FILE.py names `scenario`")
    p.add_argument("--slo", default="p99<5ms",
                   help="STAT<NUMBER UNIT, comma-separated: STAT mean, p50, p75, p90, p95, p99 "
                        "or p999, UNIT us, ms or s (default p99<5ms)")
    p.add_argument("--max-error-rate", type=float, default=0.001,
                   help="failures and 5xx responses allowed, a fraction (default 0.001)")
    p.add_argument("--start", type=float,
                   help="the first stage's rate (default: a tenth of a one-second probe's)")
    p.add_argument("--step", type=float, default=1.25, help="rate factor per stage (1.25)")
    p.add_argument("--stage", type=float, default=5.0, metavar="SECONDS",
                   help="each stage's length (default 5)")
    p.add_argument("-c", "--concurrency", type=int, default=50,
                   help="connections (default 50, not 1 as for a run: one connection waits for "
                        "each answer, so it cannot reach most servers' capacity)")
    p.add_argument("--threads", type=int, help="loop threads (default: the CPUs, at most -c)")
    p.add_argument("-s", "--timeout", type=float, default=30.0, help="seconds per request")
    p.add_argument("-H", dest="headers", action="append", default=[], metavar="'Name: value'",
                   help="a header added to every request (repeatable)")
    p.add_argument("--json", metavar="FILE", help="write the stages as JSON")
    return p


def capacity_main(argv: Sequence[str]) -> int:
    from .capacity import capacity

    args = capacity_parser().parse_args(argv)
    try:
        scenario = load_scenario(args.scenario)[0] if args.scenario else None
        c = capacity(args.url, slo=args.slo, max_error_rate=args.max_error_rate,
                     start=args.start, step=args.step, stage_s=args.stage,
                     concurrency=args.concurrency, threads=args.threads, timeout=args.timeout,
                     headers=_headers(args.headers), scenario=scenario)
    except (ValueError, UsageError, HttpbenchError, OSError) as e:
        print(_one_line("httpbench capacity", e), file=sys.stderr)
        return 2 if isinstance(e, (ValueError, UsageError)) else 1
    print(c.report(), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"url": c.url, "slo": c.slo, "max_error_rate": c.max_error_rate,
                       "rate": c.rate, "met": c.met,
                       "steps": [{**dataclasses.asdict(s), "error_rate": s.error_rate}
                                 for s in c.steps]}, f, indent=2)
    # Not met even at the lowest rate: a failure, as a run's failed requests.
    return 0 if c.met else 1


def _as_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # SIGTERM (timeout(1), a service manager) and SIGHUP (a closed terminal)
    # end a run as Ctrl-C does: what was measured is printed and written,
    # and the status is a stopped run's (1). serve installs its own.
    stops = (signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.getsignal(sig) for sig in stops}
    try:
        if args and args[0] == "serve":
            return serve(args[1:])
        for sig in stops:
            signal.signal(sig, _as_interrupt)
        if args and args[0] == "capacity":
            return capacity_main(args[1:])
        if args and args[0] == "compare":
            return compare_main(args[1:])
        return bench(args)
    except KeyboardInterrupt:
        # Ctrl-C outside a run (a run reports what it measured): no
        # traceback, the shell's status for SIGINT.
        print("httpbench: interrupted", file=sys.stderr)
        return 130
    finally:
        for sig, handler in previous.items():
            if handler is not None:  # None: set from C, not ours to restore
                signal.signal(sig, handler)

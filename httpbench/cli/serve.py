"""`httpbench serve`: the embedded server until Ctrl-C, SIGTERM or SIGHUP."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from .. import _check
from .._version import __version__
from ..exceptions import HttpbenchError
from ..server import Server
from .common import Parser, UsageError, add_cert_arguments, parse_time


def serve_parser() -> argparse.ArgumentParser:
    p = Parser(
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
    p.add_argument("--upstream-timeout", metavar="TIME",
                   help="with --proxy: an upstream silent this long gets the client a 504: "
                        "10, 10s, 500ms (default 10 s)")
    p.add_argument("--no-http2", dest="http2", action="store_false",
                   help="HTTP/1.1 only (default: HTTP/2 too, by the preface on a plain port, "
                        "as curl --http2-prior-knowledge sends it, and by ALPN over --tls)")
    p.add_argument("--max-streams", type=int, default=100, metavar="N",
                   help="HTTP/2 streams a connection may have open "
                        "(SETTINGS_MAX_CONCURRENT_STREAMS; default 100)")
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
        # (Named by their flags here; Server's own errors name its arguments.)
        if args.static is not None and not os.path.isdir(args.static):
            raise ValueError(f"--static: not a directory: {args.static}")
        for flag, path in (("--cert", args.cert), ("--key", args.key)):
            if path is not None and not os.path.isfile(path):
                raise ValueError(f"{flag}: no such file: {path}")
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
                     else parse_time("--upstream-timeout", args.upstream_timeout),
                     http2=args.http2,
                     max_streams=_check.count("--max-streams", args.max_streams, 1,
                                              _check.MAX_STREAMS))
    except (OSError, ValueError, UsageError, HttpbenchError) as e:
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
                  f"{curl} --cacert {srv.cafile} {srv.url('/rnd?c=2048')}", flush=True)
        elif srv.unix_socket is not None:
            print(f"{curl} {srv.url('/rnd?c=2048')}", flush=True)
        if not srv.proxy:
            # An example that answers 200 (/ is 404, its body the routes).
            where = f" --unix-socket {srv.unix_socket}" if srv.unix_socket is not None else ""
            tls = f" --cacert {srv.cafile}" if srv.tls and args.cert is None else \
                " --insecure" if srv.tls else ""
            print(f"try: httpbench -n 10000 -c 10{where}{tls} {srv.url('/rnd?c=2048')}",
                  flush=True)
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
    h2 = f" ({st['h2_connections']} of them HTTP/2)" if st["h2_connections"] else ""
    print(f"served {st['requests']} requests on {st['connections']} connections{h2}{relayed}",
          flush=True)
    return 0

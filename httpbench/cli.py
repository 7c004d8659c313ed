"""The httpbench command line.

    httpbench serve [--host H] [--port P] [--mode epoll|threads] [--threads T] [--static DIR]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ._version import __version__
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


USAGE = """usage: httpbench serve [--host H] [--port P] [--mode epoll|threads] [--threads T] [--static DIR]

commands:
  serve    run the embedded target server until Ctrl-C
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "serve":
        return serve(args[1:])
    if args and args[0] in ("-V", "--version"):
        print(f"httpbench {__version__}")
        return 0
    print(USAGE, file=sys.stderr if args and args[0] not in ("-h", "--help") else sys.stdout)
    return 0 if args and args[0] in ("-h", "--help") else 2

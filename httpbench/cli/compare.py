"""`httpbench compare`: the C loop and Python's clients side by side."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from ..agents import AGENTS, MAX_WORKERS, available_agents, chosen_agents
from ..compare import compare
from ..exceptions import HttpbenchError
from .._url import split_proxy
from ..runner import parse_url
from .execute import report_stream
from .common import (Outputs, Parser, UsageError, add_common, check_common, one_line,
                     parse_time, read_body_file)


def compare_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="httpbench compare",
        description="The same scenario through httpbench's C loop and Python's HTTP clients, "
                    "side by side (each one's ab report with --reports). With no URL: the "
                    "embedded server, GET /rnd?c=2048 and POST 2 KiB to /echo.",
    )
    p.add_argument("url", nargs="?", metavar="URL", help="another server: every agent sends "
                   "it the request -m and -p describe (GET unless they say otherwise)")
    p.add_argument("-m", "--method", metavar="METHOD",
                   help="with a URL: the method (default GET, POST with -p)")
    p.add_argument("-p", "--post-file", dest="postfile", metavar="FILE",
                   help="with a URL: the body to send, from FILE (POST unless -m)")
    p.add_argument("--agents", help=f"comma-separated, of: {', '.join(AGENTS)} "
                   "(default: every one installed)")
    add_common(p, "requests", "concurrency", "quiet", "json", "html", "unix_socket", "proxy",
               "http2",
               http2={"help": "every agent speaks HTTP/2 (h2 by ALPN over https://, h2c by "
                              "prior knowledge): the C core, httpx and pycurl; the others are "
                              "left out with a note"},
               requests={"help": "requests per agent and scenario (default 20,000, 200,000 "
                                 "with --full)"},
               concurrency={"default": 1, "help": "connections per agent (default 1)"},
               json={"help": "write every result as JSON to FILE"},
               unix_socket={"help": "every agent connects to this Unix socket (with no URL the "
                                    "embedded server listens on it); http.client, urllib3 and "
                                    "requests cannot"},
               proxy={"help": "every agent goes through this forward proxy, host:port or "
                              "http://[user:pass@]host:port"})
    p.add_argument("-t", "-d", "--duration", dest="duration", metavar="TIME",
                   help="time each run may take at most: 3, 3s, 500ms (default 3 s; none with "
                        "--full)")
    p.add_argument("--full", action="store_true",
                   help="the seed's full 200,000 requests per agent and scenario, no time cap")
    p.add_argument("--no-pin", dest="pin", action="store_false",
                   help="do not run on one CPU (with the embedded server and -c 1, server and "
                        "clients share one CPU, as in the seed's runs)")
    p.add_argument("--reports", action="store_true",
                   help="each agent's ab report before the table (they are long)")
    p.add_argument("--markdown", help="write the side-by-side table as Markdown to this file")
    p.add_argument("--tls", action="store_true",
                   help="with no URL: the embedded server over TLS (every agent verifies its "
                        "self-signed certificate)")
    p.add_argument("--insecure", dest="verify", action="store_false",
                   help="an https:// URL's server is not verified, by any agent")
    p.add_argument("--cacert", metavar="FILE",
                   help="every agent verifies an https:// URL's server against FILE (PEM)")
    return p


def compare_main(argv: Sequence[str]) -> int:
    args = compare_parser().parse_args(argv)
    agents = None
    try:
        if args.agents is not None:
            agents = chosen_agents([a.strip() for a in args.agents.split(",") if a.strip()],
                                   "--agents")
        check_common(args, max_concurrency=MAX_WORKERS)
        if args.duration is not None:
            args.duration = parse_time("-t", args.duration)
        body = None
        if args.url is not None:
            parse_url(args.url)
            if args.tls:
                raise UsageError("--tls is for the embedded server: give an https:// URL instead")
            if args.postfile is not None:
                body = read_body_file("-p", args.postfile)
        elif args.method is not None or args.postfile is not None:
            raise UsageError("-m and -p describe the request sent to a URL given; the "
                             "embedded server runs the seed's GET and POST")
        if args.proxy is not None:
            split_proxy(args.proxy)
        outputs = Outputs({"--json": args.json, "--markdown": args.markdown,
                           "--html": args.html})
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
                      proxy=args.proxy, http2=args.http2, method=args.method, body=body)
    except (ValueError, HttpbenchError, OSError) as e:
        outputs.discard()
        print(one_line("httpbench compare", e), file=sys.stderr)
        return 2 if isinstance(e, ValueError) else 1
    # (To standard error when an output goes to standard output.)
    report_stream({"--json": args.json, "--markdown": args.markdown, "--html": args.html}).write(
        cmp.report(reports=args.reports))
    out = outputs.get("--json")
    if out is not None:
        json.dump(cmp.to_dict(), out, indent=2)
    out = outputs.get("--markdown")
    if out is not None:
        out.write(cmp.to_markdown())
    out = outputs.get("--html")
    if out is not None:
        out.write(cmp.to_html())
    outputs.close()
    return 0 if all(r.ok for r in cmp.results.values()) and not cmp.interrupted else 1

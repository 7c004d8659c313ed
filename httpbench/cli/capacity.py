"""`httpbench capacity URL`: the highest rate within an SLO."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence

from ..exceptions import HttpbenchError
from .common import UsageError, add_common, check_common, load_scenario, one_line


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
    add_common(p, "concurrency", "threads", "timeout", "headers", "json", "http2", "streams",
               "window",
               concurrency={"default": 50,
                            "help": "connections (default 50, not 1 as for a run: one "
                                    "connection waits for each answer, so it cannot reach most "
                                    "servers' capacity)"},
               threads={"help": "loop threads (default: the CPUs, at most -c)"},
               json={"help": "write the stages as JSON to FILE"})
    return p


def capacity_main(argv: Sequence[str]) -> int:
    from ..capacity import capacity

    args = capacity_parser().parse_args(argv)
    try:
        check_common(args)
        scenario = load_scenario(args.scenario)[0] if args.scenario else None
        c = capacity(args.url, slo=args.slo, max_error_rate=args.max_error_rate,
                     start=args.start, step=args.step, stage_s=args.stage,
                     concurrency=args.concurrency, threads=args.threads, timeout=args.timeout,
                     headers=args.headers, scenario=scenario, http2=args.http2,
                     streams=args.streams, window=args.window)
    except (ValueError, UsageError, HttpbenchError, OSError) as e:
        print(one_line("httpbench capacity", e), file=sys.stderr)
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

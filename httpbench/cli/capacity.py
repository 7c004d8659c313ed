"""`httpbench capacity URL`: the highest rate within an SLO."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .._settings import SettingError
from ..exceptions import HttpbenchError
from .common import (Outputs, Parser, UsageError, add_common, check_common, load_scenario,
                     one_line, parse_time)
from .execute import report_stream


def capacity_parser() -> argparse.ArgumentParser:
    p = Parser(
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
    p.add_argument("--stage", default="5", metavar="TIME",
                   help="each stage's length: 5, 5s, 500ms, 1m (default 5 s)")
    p.add_argument("--no-confirm", dest="confirm", action="store_false",
                   help="one measurement a stage (by default a breach is measured again, and "
                        "a third decides when the two disagree)")
    add_common(p, "concurrency", "threads", "timeout", "headers", "json", "html", "metrics",
               "metrics_run", "metrics_linger", "http2", "streams", "window",
               concurrency={"default": 50,
                            "help": "connections (default 50, not 1 as for a run: one "
                                    "connection waits for each answer, so it cannot reach most "
                                    "servers' capacity)"},
               threads={"help": "loop threads (default: the CPUs, at most -c)"},
               json={"help": "write the stages as JSON to FILE"},
               html={"help": "write a standalone HTML report (the knee plot and the stages) "
                             "to FILE"})
    return p


def capacity_main(argv: Sequence[str]) -> int:
    from ..capacity import capacity

    args = capacity_parser().parse_args(argv)
    outputs = None
    try:
        check_common(args)
        stage = parse_time("--stage", args.stage)
        scenario = load_scenario(args.scenario)[0] if args.scenario else None
        outputs = Outputs({"--json": args.json, "--html": args.html})
        c = capacity(args.url, slo=args.slo, max_error_rate=args.max_error_rate,
                     start=args.start, step=args.step, stage_s=stage, confirm=args.confirm,
                     concurrency=args.concurrency, threads=args.threads, timeout=args.timeout,
                     headers=args.headers, scenario=scenario, http2=args.http2,
                     streams=args.streams, window=args.window, metrics=args.metrics,
                     metrics_run=args.metrics_run, metrics_linger=args.metrics_linger)
    except SettingError as e:
        if outputs is not None:
            outputs.discard()
        print(f"httpbench capacity: {e.said({'stage_s': '--stage'})}", file=sys.stderr)
        return 2
    except (ValueError, UsageError, HttpbenchError, OSError) as e:
        if outputs is not None:
            outputs.discard()
        print(one_line("httpbench capacity", e), file=sys.stderr)
        return 2 if isinstance(e, (ValueError, UsageError)) else 1
    except KeyboardInterrupt:
        if outputs is not None:
            outputs.discard()
        raise
    print(c.report(), flush=True, file=report_stream({"--json": args.json, "--html": args.html}))
    for flag, text in (("--json", json.dumps(c.to_dict(), indent=2) + "\n"),
                       ("--html", c.to_html() if args.html else "")):
        out = outputs.get(flag)
        if out is not None:
            out.write(text)
    outputs.close()
    # Not met even at the lowest rate, the client could not keep up, or the
    # search was stopped (the server's capacity is not known): a failure, as
    # a run's failed requests or a stopped run.
    return 0 if c.found else 1
